"""The common forms validated without pydantic (load/common_forms.py), held to the models.

Whatever the common-form validation accepts, the model accepts too with no problem, and
gives the same runtime values (and the same case hashes resume keys on); whatever else,
it leaves to the model. Checked on the example packages, on documents written out here
and on documents hypothesis generates around the common form (every rule broken once),
plus a cold session of a common-form package that never imports pydantic.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_elizon_eval.history.resume import case_sha256
from pytest_elizon_eval.load import common_forms, model
from pytest_elizon_eval.load.loading import load_yaml
from pytest_elizon_eval.load.runtime import _Plain, from_model

from .conftest import imported_by_a_session

EXAMPLES = Path(__file__).resolve().parent.parent / "example_suites"


def _suite_both(text: str) -> tuple[Any, Any]:
    """(common-form cases or None, the model's cases or None when it found problems)."""
    data = load_yaml(text.encode())  # neither validation changes it
    fast = common_forms.suite_cases(data)
    validated, problems = model.validate(model.Suite, data, model.suite_checks)
    return fast, None if problems or validated is None else from_model(validated.cases)


def _manifest_both(text: str) -> tuple[Any, Any]:
    data = load_yaml(text.encode())
    fast = common_forms.manifest(data)
    validated, problems = model.validate(model.Manifest, data, model.manifest_shape)
    return fast, None if problems or validated is None else from_model(validated)


def _typed(value: Any) -> Any:
    """The value with the type of every part of it (1 is not 1.0, a YamlSequence not a list)."""
    if isinstance(value, _Plain):
        return type(value), tuple(_typed(getattr(value, name)) for name in value._FIELDS)
    if isinstance(value, (list, tuple)):
        return type(value), tuple(_typed(item) for item in value)
    if isinstance(value, dict):
        return type(value), tuple((_typed(k), _typed(v)) for k, v in value.items())
    return type(value), value


def _held_to_the_model(fast: Any, slow: Any) -> None:
    if fast is None:
        return  # the model's to decide, and to report
    assert slow is not None, "accepted what the model refuses"
    assert fast == slow
    assert _typed(fast) == _typed(slow)
    if isinstance(fast, list):
        assert [case_sha256(c) for c in fast] == [case_sha256(c) for c in slow]


def test_every_example_file_is_the_models_or_its_equal() -> None:
    accepted = 0
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        if "__snapshots__" in path.parts:
            continue
        text = path.read_text()
        fast, slow = _manifest_both(text) if path.name == "elizon.yaml" else _suite_both(text)
        _held_to_the_model(fast, slow)
        accepted += fast is not None
    assert accepted >= 4  # triage's manifest and extended suite, two more manifests


COMMON_SUITES = [
    "cases:\n  - id: a\n    input: hi\n",
    "cases:\n  - id: case-000001\n    description: Synthetic.\n    input:\n"
    "      request: Please look.\n    expect:\n      contains: [routine]\n"
    "      notContains: [immediate]\n",
    "cases:\n  - id: a\n    input: {q: x, n: 3, nested: [1, {b: null}]}\n    tags: [smoke, b_2]\n"
    "    repeat: 5\n    minPassRate: 1\n    expect:\n      equals: ''\n      startsWith: x\n"
    "      containsAny: []\n      containsExact: [A]\n      errorContains: [boom]\n"
    "      route: refuse.security\n      label: billing question\n      maxLatencyMs: 0\n"
    "      maxTokens: 12345678901234567890\n  - id: b\n    input: ''\n    expect: {}\n",
]

COMMON_MANIFESTS = [
    "name: bench\nentry: app:answer\nevaluation:\n  suite: ./eval/suite.yaml\n",
    "name: x\nversion: '1.0'\ndescription: d\nentry: a:b\njudge: j:g\noutput: json\n",
    "evaluation:\n  suite: s.yaml\n  gate: advisory\n  authorBaseline: {pass_rate: 1, p95: 2.5}\n",
    "evaluation:\n  suites:\n    - suite: a.yaml\n    - suite: b.yaml\n      gate: advisory\n"
    "      authorBaseline: {accuracy: 0.9}\n",
]


@pytest.mark.parametrize("text", COMMON_SUITES)
def test_common_suites_are_validated_without_the_model(text: str) -> None:
    fast, slow = _suite_both(text)
    assert fast is not None
    _held_to_the_model(fast, slow)


@pytest.mark.parametrize("text", COMMON_MANIFESTS)
def test_common_manifests_are_validated_without_the_model(text: str) -> None:
    fast, slow = _manifest_both(text)
    assert fast is not None
    _held_to_the_model(fast, slow)


#: Each breaks one rule of the common form (or leaves it), most of them a rule of the model.
NOT_COMMON_SUITES = [
    "- id: a\n",  # not a mapping
    "cases: []\n", "cases:\n  - id: a\n    input: hi\nother: 1\n",
    "cases:\n  - id: A\n    input: hi\n", "cases:\n  - id: 'a\n\n'\n    input: hi\n",
    "cases:\n  - id: a\n    input: hi\n  - id: a\n    input: ho\n",  # a duplicate id
    "cases:\n  - id: a\n", "cases:\n  - id: a\n    input:\n",
    "cases:\n  - id: a\n    input: [x]\n", "cases:\n  - id: a\n    input: 3\n",
    "cases:\n  - id: a\n    turns: [{input: hi}]\n",
    "cases:\n  - id: a\n    input: hi\n    description: 3\n",
    "cases:\n  - id: a\n    input: hi\n    tags: [skip]\n",
    "cases:\n  - id: a\n    input: hi\n    tags: [1a]\n",
    "cases:\n  - id: a\n    input: hi\n    repeat: 0\n",
    "cases:\n  - id: a\n    input: hi\n    repeat: 101\n",
    "cases:\n  - id: a\n    input: hi\n    repeat: true\n",
    "cases:\n  - id: a\n    input: hi\n    repeat: {max: 5, until: decided}\n",
    "cases:\n  - id: a\n    input: hi\n    minPassRate: 1.5\n",
    "cases:\n  - id: a\n    input: hi\n    minPassRate: .nan\n",
    "cases:\n  - id: a\n    input: hi\n    expect: {contains: hi}\n",
    "cases:\n  - id: a\n    input: hi\n    expect: {contains: [1]}\n",
    "cases:\n  - id: a\n    input: hi\n    expect: {route: ' x'}\n",
    "cases:\n  - id: a\n    input: hi\n    expect: {label: ''}\n",
    "cases:\n  - id: a\n    input: hi\n    expect: {maxLatencyMs: -1}\n",
    "cases:\n  - id: a\n    input: hi\n    expect: {maxTokens: 1.0}\n",
    "cases:\n  - id: a\n    input: hi\n    expect: {matches: [x]}\n",  # left to the model
]

NOT_COMMON_MANIFESTS = [
    "just text\n", "name: 3\n", "name:\n", "entry: {command: [python, app.py]}\n",
    "output: xml\n", "secrets: [ZEBRA-7731]\n", "evaluation:\n  gate: advisory\n",
    "evaluation:\n  suite: s.yaml\n  suites: [{suite: t.yaml}]\n",
    "evaluation:\n  suites: []\n", "evaluation:\n  suites: [{probes: all}]\n",
    "evaluation:\n  suite: s.yaml\n  gate: blocking\n",
    "evaluation:\n  suite: s.yaml\n  authorBaseline: {pass_rate: .inf}\n",
    "evaluation:\n  suite: s.yaml\n  authorBaseline: {pass_rate: true}\n",
    "evaluation:\n  suite: s.yaml\n  authorBaseline: {pass_rate: 1" + "0" * 400 + "}\n",
    "evaluation:\n  suite: s.yaml\n  repeat: 3\n",
]


@pytest.mark.parametrize("text", NOT_COMMON_SUITES)
def test_anything_else_in_a_suite_is_left_to_the_model(text: str) -> None:
    fast, slow = _suite_both(text)
    assert fast is None
    _held_to_the_model(fast, slow)


@pytest.mark.parametrize("text", NOT_COMMON_MANIFESTS)
def test_anything_else_in_a_manifest_is_left_to_the_model(text: str) -> None:
    assert _manifest_both(text)[0] is None


def test_a_label_the_model_refuses_for_its_characters_is_left_to_it() -> None:
    """PyYAML's pure-Python reader lets a lone surrogate ("\\ud800") into a string;
    pydantic's checked strings (route, label) refuse it."""
    for key in ("route", "label"):
        data = load_yaml(b"cases:\n  - id: a\n    input: hi\n    expect: {%s: x}\n"
                         % key.encode())
        assert common_forms.suite_cases(data) is not None
        data["cases"][0]["expect"][key] = "\ud800"
        assert common_forms.suite_cases(data) is None
        assert model.validate(model.Suite, data)[1]  # refused there too


# -- documents around the common form --------------------------------------------------
# A valid common-form document, then at most a few of its values replaced by one of many
# edge values (each rule of the form broken, and values of every other kind): the edge
# is where the form and the model could disagree.

_EDGES = st.sampled_from([
    None, True, False, 0, 1, -1, 2, 100, 101, 0.5, 1.5, -0.1, 2.5, math.nan, math.inf,
    10**400, 12345678901234567890, "", "x", " x", "x ", "a\nb", "A" * 200, "A" * 201,
    "skip", "1a", "b_2", "Case", "a--b", "a", "refuse.security", "advisory", "must-pass",
    "blocking", "json", "xml", "all", [], ["x"], [1], ["skip"], ["a", "a"], [None], {},
    {"q": "x"}, {"max": 5, "until": "decided"}, {"pass_rate": 1}, {"pass_rate": True},
    [{"input": "hi"}], [{"suite": "t.yaml"}], {"command": ["python", "a.py"]}, "case-1"])
_WORDS = st.sampled_from(["Routine", "x", "", "immediate", "a b"])
_VALID_EXPECT = st.fixed_dictionaries({}, optional={
    "contains": st.lists(_WORDS, max_size=3), "notContains": st.lists(_WORDS, max_size=2),
    "containsAny": st.lists(_WORDS, max_size=2), "containsExact": st.lists(_WORDS, max_size=2),
    "errorContains": st.lists(_WORDS, max_size=2), "equals": _WORDS, "startsWith": _WORDS,
    "route": st.sampled_from(["billing", "refuse.security", "A" * 200]),
    "label": st.sampled_from(["question", "a b"]),
    "maxLatencyMs": st.integers(0, 10**20), "maxTokens": st.integers(0, 5000)})
_VALID_CASE = st.fixed_dictionaries(
    {"input": st.one_of(_WORDS, st.just({"request": "x", "n": [1, None]}))},
    optional={"description": _WORDS, "expect": _VALID_EXPECT,
              "tags": st.lists(st.sampled_from(["smoke", "b_2", "x-y", "Z"]), max_size=3),
              "repeat": st.integers(1, 100),
              "minPassRate": st.one_of(st.sampled_from([0, 1]), st.floats(0, 1))})
_CASE_KEYS = ["id", "description", "input", "expect", "tags", "repeat", "minPassRate",
              "turns", "controls"]
_EXPECT_KEYS = ["contains", "notContains", "containsAny", "containsExact", "errorContains",
                "equals", "startsWith", "route", "label", "maxLatencyMs", "maxTokens",
                "matches", "output", "isJson", "judge"]


@st.composite
def _suites(draw: st.DrawFn) -> object:
    cases: list[dict[str, Any]] = draw(st.lists(_VALID_CASE, min_size=1, max_size=4))
    for index, each in enumerate(cases):
        each["id"] = f"case-{index}"
    suite: dict[str, Any] = {"cases": cases}
    for _ in range(draw(st.integers(0, 2))):
        where = draw(st.sampled_from(["root", "case", "expect"]))
        case = draw(st.sampled_from(cases))
        if where == "root":
            suite[draw(st.sampled_from(["cases", "extra"]))] = copy.deepcopy(draw(_EDGES))
        elif where == "case" or not isinstance(case.get("expect"), dict):
            case[draw(st.sampled_from(_CASE_KEYS))] = copy.deepcopy(draw(_EDGES))
        else:
            case["expect"][draw(st.sampled_from(_EXPECT_KEYS))] = copy.deepcopy(draw(_EDGES))
    return suite


_VALID_SET = st.fixed_dictionaries({"suite": st.sampled_from(["s.yaml", "./eval/x.yaml"])},
                                   optional={
    "gate": st.sampled_from(["advisory", "must-pass"]),
    "authorBaseline": st.dictionaries(st.sampled_from(["pass_rate", "p95", ""]),
                                      st.one_of(st.integers(-5, 10**30), st.floats(
                                          allow_nan=False, allow_infinity=False)),
                                      max_size=3)})
_SET_KEYS = ["suite", "gate", "authorBaseline", "repeat", "minPassRate", "probes",
             "inputName", "suites"]


@st.composite
def _manifests(draw: st.DrawFn) -> object:
    manifest: dict[str, Any] = draw(st.fixed_dictionaries({}, optional={
        "name": _WORDS, "version": st.just("1.0"), "description": _WORDS,
        "entry": st.just("app:answer"), "judge": st.just("j:grade"),
        "output": st.sampled_from(["text", "json", "openai", "answer"])}))
    sets = draw(st.lists(_VALID_SET, min_size=1, max_size=3))
    if draw(st.booleans()):
        manifest["evaluation"] = {"suites": sets}
    elif draw(st.booleans()):
        manifest["evaluation"] = sets[0]
    for _ in range(draw(st.integers(0, 2))):
        where = draw(st.sampled_from(["root", "set"]))
        if where == "root" or "evaluation" not in manifest:
            key = draw(st.sampled_from(["name", "entry", "judge", "output", "evaluation",
                                        "secrets", "prices", "version"]))
            manifest[key] = copy.deepcopy(draw(_EDGES))
        else:
            chosen: dict[str, Any] = draw(st.sampled_from(sets))
            chosen[draw(st.sampled_from(_SET_KEYS))] = copy.deepcopy(draw(_EDGES))
    return manifest


def _written(data: object) -> str:
    return yaml.safe_dump(data, sort_keys=False)


#: A common-form suite with every key of the form, and a manifest of each evaluation form.
_FULL_CASE = {"id": "case-0", "description": "d", "input": {"request": "x"},
              "tags": ["smoke"], "repeat": 3, "minPassRate": 0.5,
              "expect": {"contains": ["x"], "notContains": ["y"], "containsAny": ["x"],
                         "containsExact": ["x"], "errorContains": ["e"], "equals": "x",
                         "startsWith": "x", "route": "billing", "label": "q",
                         "maxLatencyMs": 10, "maxTokens": 10}}
_FULL_MANIFESTS: list[dict[str, Any]] = [
    {"name": "n", "version": "1", "description": "d", "entry": "a:b", "judge": "j:g",
     "output": "json", "evaluation": {"suite": "s.yaml", "gate": "advisory",
                                      "authorBaseline": {"pass_rate": 1}}},
    {"evaluation": {"suites": [{"suite": "s.yaml", "gate": "advisory",
                                "authorBaseline": {"pass_rate": 0.9}}, {"suite": "t.yaml"}]}},
]


def _one_edge_each(document: dict[str, Any], keys: dict[str, list[str]]) -> list[object]:
    """The document with one value replaced by one edge value, for every place and edge;
    ``keys`` names, by the path of a mapping in the document, the keys to set in it."""
    out: list[object] = []
    for path, names in keys.items():
        for name in names:
            for edge in _EDGES.elements:  # type: ignore[attr-defined]
                changed = copy.deepcopy(document)
                place: Any = changed
                for step in path.split("/") if path else ():
                    place = place[int(step)] if step.isdigit() else place[step]
                place[name] = copy.deepcopy(edge)
                out.append(changed)
    return out


def test_every_rule_of_the_common_form_is_the_models() -> None:
    suite = {"cases": [dict(_FULL_CASE), {**_FULL_CASE, "id": "case-1"}]}
    assert _suite_both(_written(suite))[0] is not None
    accepted = refused = 0
    for document in _one_edge_each(suite, {"": ["cases", "extra"],
                                           "cases/0": _CASE_KEYS,
                                           "cases/0/expect": _EXPECT_KEYS}):
        fast, slow = _suite_both(_written(document))
        _held_to_the_model(fast, slow)
        accepted += fast is not None
        refused += slow is None
    for manifest in _FULL_MANIFESTS:
        assert _manifest_both(_written(manifest))[0] is not None
        sets = {"evaluation": _SET_KEYS} if "suite" in manifest["evaluation"] \
            else {"evaluation/suites/0": _SET_KEYS}
        for document in _one_edge_each(manifest, {"": ["name", "entry", "judge", "output",
                                                       "evaluation", "secrets", "version"],
                                                  **sets}):
            fast, slow = _manifest_both(_written(document))
            _held_to_the_model(fast, slow)
            accepted += fast is not None
            refused += slow is None
    # both sides of every rule were reached
    assert accepted > 300
    assert refused > 300


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_suites())
def test_generated_suites_are_the_models_or_its_equal(data: object) -> None:
    _held_to_the_model(*_suite_both(_written(data)))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_manifests())
def test_generated_manifests_are_the_models_or_its_equal(data: object) -> None:
    _held_to_the_model(*_manifest_both(_written(data)))


# -- a session ---------------------------------------------------------------------------

def test_a_cold_session_of_common_files_never_imports_pydantic(
        pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", elizon="name: p\nentry: app:answer\nevaluation:\n"
                                      "  suite: suite.yaml\n")
    pytester.makefile(".yaml", suite="cases:\n  - id: one\n    input: hi\n"
                                     "    expect: {contains: [hi]}\n"
                                     "  - id: two\n    input: ho\n"
                                     "    expect: {contains: [hi]}\n")
    pytester.makepyfile(app="def answer(text):\n    return text\n")
    done, imported = imported_by_a_session(pytester.path, among=("pydantic", "pydantic_core",
                                                                 "pytest_elizon_eval.load.model"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 1 passed" in done.stdout  # validated, run and decided as ever
    assert imported == []
    # the cache was written from it: the next session reads both files back
    assert len(list((pytester.path / ".pytest_cache" / "d" / "elizon" / "suites")
                    .glob("*.pickle"))) == 2
