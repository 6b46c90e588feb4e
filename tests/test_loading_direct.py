"""Reading suite and manifest files, tested directly (no pytest run inside the test).

``loading.load_yaml``, ``packages.load_suite`` / ``load_manifest``, ``model.validate`` and
``documents.read_json``: the guards against hostile files, where problems are reported and
what the messages say.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_elizon_eval import errors
from pytest_elizon_eval.errors import ElizonError
from pytest_elizon_eval.load import loading
from pytest_elizon_eval.load.documents import LoadFailed, Problem, YamlMapping, read_json
from pytest_elizon_eval.load.loading import load_yaml
from pytest_elizon_eval.load.model import Suite, validate
from pytest_elizon_eval.load.packages import load_manifest, load_suite

NESTING = "YAML nesting is deeper than 100 levels"

LOADERS = [pytest.param(yaml.SafeLoader, id="pure-python")]
if hasattr(yaml, "CSafeLoader"):
    LOADERS.insert(0, pytest.param(yaml.CSafeLoader, id="libyaml"))


@pytest.fixture(params=LOADERS)
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run the test with libyaml and with PyYAML's pure-Python parser."""
    monkeypatch.setattr(loading, "_Loader", request.param)


def problems_of(text: str) -> list[tuple[int | None, str]]:
    with pytest.raises(LoadFailed) as info:
        load_yaml(textwrap.dedent(text).encode())
    return [(p.line, p.message) for p in info.value.problems]


def suite_errors(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "suite.yaml"
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    with pytest.raises(ElizonError) as info:
        load_suite(path, "suite.yaml")
    assert info.value.code == errors.EVALUATION_SUITE_INVALID
    return info.value.lines


# -- 1. nesting is bounded before anything recurses ------------------------------------

#: Each way to nest deeply (the flow and compact forms far beyond what libyaml's recursive
#: C composer survives; indentation costs bytes per level), and the line of the first level
#: too deep.
DEEP_FORMS = {
    "flow-sequences": ("cases: " + "[" * 50_000, 1),
    "flow-mappings": ("cases: " + "{a: " * 50_000, 1),
    "compact-block-sequences": ("cases:\n" + "- " * 50_000 + "x\n", 2),
    "block-indentation": ("cases:\n" + "".join(" " * i + "a:\n" for i in range(1, 3_000)), 101),
}

_NESTING_SCRIPT = """
import json, sys
import yaml
from pytest_elizon_eval.load import loading

forms = json.loads(sys.stdin.read())
found = {}
for name in ("CSafeLoader", "SafeLoader"):
    if not hasattr(yaml, name):
        continue
    loading._Loader = getattr(yaml, name)
    for form, (text, _) in forms.items():
        try:
            loading.load_yaml(text.encode())
            found[f"{name}/{form}"] = "loaded"
        except loading.LoadFailed as exc:
            found[f"{name}/{form}"] = [[p.line, p.message] for p in exc.problems]
print(json.dumps(found))
"""


@pytest.fixture(scope="module")
def deep_results() -> dict[str, Any]:
    # In a child process: if a parser ever crashes on these files again, one test fails
    # with the signal instead of the whole test run dying.
    done = subprocess.run([sys.executable, "-c", _NESTING_SCRIPT], input=json.dumps(DEEP_FORMS),
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"the loader died ({done.returncode}): {done.stderr[-2000:]}"
    results: dict[str, Any] = json.loads(done.stdout)
    return results


@pytest.mark.parametrize("loader", ["CSafeLoader", "SafeLoader"])
@pytest.mark.parametrize("form", list(DEEP_FORMS))
def test_deep_nesting_is_refused_with_its_line(
    deep_results: dict[str, Any], loader: str, form: str
) -> None:
    if loader == "CSafeLoader" and not hasattr(yaml, "CSafeLoader"):
        pytest.skip("PyYAML built without libyaml")
    assert deep_results[f"{loader}/{form}"] == [[DEEP_FORMS[form][1], NESTING]]


@pytest.mark.usefixtures("parser")
def test_nesting_up_to_the_limit_is_read() -> None:
    # The mapping is level 1: 99 lists inside it make 100 levels.
    value = load_yaml(("a: " + "[" * 99 + "x" + "]" * 99).encode())["a"]
    for _ in range(98):
        value = value[0]
    assert value == ["x"]
    assert problems_of("a: " + "[" * 100 + "x" + "]" * 100) == [(1, NESTING)]


@pytest.mark.usefixtures("parser")
def test_nesting_built_from_aliases_is_refused() -> None:
    lines = ["a0: &a0 [x]"] + [f"a{i}: &a{i} [*a{i - 1}]" for i in range(1, 120)]
    assert problems_of("\n".join(lines) + "\n") == [(100, NESTING)]


# -- 1. the guards of the composer ------------------------------------------------------

@pytest.mark.usefixtures("parser")
def test_an_alias_counts_the_full_size_of_what_it_repeats() -> None:
    # 101 aliases of a 1,000-item list expand to 101,101 nodes (pydantic and JSON would
    # expand them), even though each alias is one event in the file.
    text = "big: &big [" + ", ".join(["x"] * 1_000) + "]\nmany: [" + ", ".join(["*big"] * 101) \
        + "]\n"
    assert problems_of(text) == [
        (2, "YAML aliases expand to more than 100,000 nodes (an alias bomb?)")]


@pytest.mark.usefixtures("parser")
def test_an_alias_bomb_is_refused() -> None:
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    assert problems_of("\n".join(levels) + "\n")[-1][1] == \
        "YAML aliases expand to more than 100,000 nodes (an alias bomb?)"


@pytest.mark.usefixtures("parser")
def test_aliases_are_independent_copies_with_the_alias_line() -> None:
    data = load_yaml(b"a: &x {k: [1, 2]}\nb:\n  - *x\n  - *x\n")
    assert data["b"] == [{"k": [1, 2]}, {"k": [1, 2]}]
    assert data["b"].item_lines == [3, 4]
    assert data["b"][0] is not data["a"]
    assert data["b"][0]["k"] is not data["b"][1]["k"]


@pytest.mark.usefixtures("parser")
@pytest.mark.parametrize(("text", "expected"), [
    ("cases: &c\n  - id: a\n    input: *c\n", [(3, "recursive YAML alias (a node that "
                                                  "contains itself)")]),
    ("a: *nowhere\n", [(1, "not valid YAML: found undefined alias '*nowhere'")]),
    ("a: !!python/object/apply:os.system [echo]\n",
     [(1, "YAML tag 'tag:yaml.org,2002:python/object/apply:os.system' is not allowed")]),
    ("a: !!python/name:os.system x\n",
     [(1, "YAML tag 'tag:yaml.org,2002:python/name:os.system' is not allowed")]),
    ("a: !!set {x}\n", [(1, "YAML tag 'tag:yaml.org,2002:set' is not allowed")]),
    ("a: !!binary aGk=\n", [(1, "YAML tag 'tag:yaml.org,2002:binary' is not allowed")]),
    ("a: 1\n---\nb: 2\n", [(3, "file holds more than one YAML document (a second '---'); "
                               "an Elizon file is exactly one document")]),
    ("", [(None, "file is empty; expected a YAML mapping")]),
    ("# only a comment\n", [(None, "file is empty; expected a YAML mapping")]),
])
def test_fatal_problems(text: str, expected: list[tuple[int | None, str]]) -> None:
    with pytest.raises(LoadFailed) as info:
        load_yaml(text.encode())
    assert [(p.line, p.message) for p in info.value.problems] == expected
    assert not info.value.complete


@pytest.mark.usefixtures("parser")
@pytest.mark.parametrize(("text", "expected"), [
    ("a: 1\nb: 2\na: 3\n", [(3, "duplicate key 'a' (first at line 1)")]),
    ("? [k]\n: 1\n~: 2\n? {k: v}\n: 3\n", [(1, "mapping key must be a plain string"),
                                          (3, "mapping key must be a plain string"),
                                          (4, "mapping key must be a plain string")]),
    ("a: no\nb: 0123\nc: 1:30\nd: Yes\ne: 'no'\nf: true\ng: 12\n",
     [(1, "unquoted 'no' is read by YAML 1.1 as boolean false; quote it ('no') if you mean "
          "the text"),
      (2, "unquoted '0123' is read by YAML 1.1 as the number 83; quote it ('0123') if you "
          "mean the text"),
      (3, "unquoted '1:30' is read by YAML 1.1 as the number 90; quote it ('1:30') if you "
          "mean the text"),
      (4, "unquoted 'Yes' is read by YAML 1.1 as boolean true; quote it ('Yes') if you mean "
          "the text")]),
    ("a: &x 1\nb: &x 2\n", [(2, "duplicate YAML anchor '&x' (first at line 1)")]),
    ("a: {<<: 3}\n", [(1, "'<<' merge needs a mapping or a list of mappings")]),
    ("a: !!int twelve\n", [(1, "'twelve' is not a whole number ('tag:yaml.org,2002:int')")]),
])
def test_problems_that_still_let_the_document_be_read(
    text: str, expected: list[tuple[int | None, str]]
) -> None:
    with pytest.raises(LoadFailed) as info:
        load_yaml(text.encode())
    assert [(p.line, p.message) for p in info.value.problems] == expected
    assert info.value.complete
    assert isinstance(info.value.data, YamlMapping)


@pytest.mark.usefixtures("parser")
def test_values_and_lines() -> None:
    data = load_yaml(textwrap.dedent("""\
        text: plain words
        quoted: 'no'
        number: 12
        ratio: 0.5
        flag: true
        nothing: ~
        date: 2024-01-31
        list:
          - a
          - {b: 1}
        base: &base {x: 1, y: 2}
        merged:
          <<: *base
          y: 3
        "1": key text as written
        """).encode())
    assert data == {"text": "plain words", "quoted": "no", "number": 12, "ratio": 0.5,
                    "flag": True, "nothing": None, "date": "2024-01-31",
                    "list": ["a", {"b": 1}], "base": {"x": 1, "y": 2},
                    "merged": {"y": 3, "x": 1}, "1": "key text as written"}
    assert data.key_lines["list"] == 8
    assert data["list"].item_lines == [9, 10]
    assert data["list"].line == 9
    assert data["merged"].key_lines == {"y": 14, "x": 11}


# -- 2. a syntax error's line ------------------------------------------------------------

@pytest.mark.usefixtures("parser")
@pytest.mark.parametrize("quote", ['"', "'"])
def test_an_unterminated_quote_points_at_its_line(quote: str) -> None:
    text = f"cases:\n  - id: a\n    input: {quote}abc\n\n  - id: b\n    input: x\n"
    [(line, message)] = problems_of(text)
    assert line == 3
    assert message.startswith("not valid YAML: ")


@pytest.mark.usefixtures("parser")
def test_other_syntax_errors_point_at_the_problem() -> None:
    [(line, _)] = problems_of("cases: [1, 2\n")
    assert line == 2


# -- 3. the line of an error about a key --------------------------------------------------

def test_an_unknown_key_with_a_block_mapping_is_reported_at_the_key() -> None:
    data = load_yaml(b"cases:\n  - id: a\n    input: x\n    expected:\n      contains: [x]\n")
    _, problems = validate(Suite, data)
    assert [p.line for p in problems] == [4]
    assert problems[0].message.startswith("cases[0]: unknown key 'expected'")


def test_a_key_with_a_block_value_of_the_wrong_type_is_reported_at_the_key() -> None:
    data = load_yaml(b"cases:\n  - id: a\n    input: x\n    expect:\n      - contains\n")
    _, problems = validate(Suite, data)
    assert problems == [Problem(4, "cases[0].expect: expected a mapping, found a list")]


# -- 4. ids and tags match as a whole --------------------------------------------------

@pytest.mark.parametrize(("case", "line"), [
    ('id: "ok-id\\n"\n    input: x\n', 2),
    ('id: ok-id\n    input: x\n    tags: ["smoke\\n"]\n', 4),
])
def test_a_final_newline_does_not_pass_the_id_or_tag_rule(case: str, line: int) -> None:
    data = load_yaml(f"cases:\n  - {case}".encode())
    _, problems = validate(Suite, data)
    assert [p.line for p in problems] == [line]
    assert "must be" in problems[0].message


# -- 5. a manifest's root ----------------------------------------------------------------

def write_manifest(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pkg" / "elizon.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def manifest_errors(path: Path) -> list[str]:
    with pytest.raises(ElizonError) as info:
        load_manifest(path, "pkg/elizon.yaml")
    assert info.value.code == errors.ELIZON_MANIFEST_INVALID
    return info.value.lines


@pytest.mark.parametrize(("text", "where_found"), [
    ("- entry: app:answer\n", ":1: ... found a list"),
    ("just some words\n", ": ... found text"),  # a scalar has no line: the whole file
])
def test_a_manifest_that_is_not_a_mapping_is_described_as_a_manifest(
    tmp_path: Path, text: str, where_found: str
) -> None:
    where, found = where_found.split(" ... ")
    assert manifest_errors(write_manifest(tmp_path, text)) == [
        f"ELIZON_MANIFEST_INVALID: pkg/elizon.yaml{where} elizon.yaml must be a mapping (name, "
        f"entry, evaluation, …), {found}"]


# -- 6. every problem of a suite at once --------------------------------------------------

def without_allowed_keys(lines: list[str]) -> list[str]:
    """Messages without their list of allowed keys (it grows with the formats)."""
    return [line.split("; allowed here:")[0] for line in lines]


def test_yaml_ambiguities_are_reported_with_the_validation_problems(tmp_path: Path) -> None:
    assert without_allowed_keys(suite_errors(tmp_path, """
        cases:
          - id: Bad
            input: x
          - id: no
            input: y
          - id: fine
            input: z
            expected: {}
        """)) == [
        "EVALUATION_SUITE_INVALID: suite.yaml:2: cases[0].id: id 'Bad' must be lowercase words "
        "joined by hyphens (^[a-z0-9]+(-[a-z0-9]+)*$)",
        "EVALUATION_SUITE_INVALID: suite.yaml:4: unquoted 'no' is read by YAML 1.1 as boolean "
        "false; quote it ('no') if you mean the text",
        "EVALUATION_SUITE_INVALID: suite.yaml:4: cases[1].id: expected a string, found boolean "
        "false",
        "EVALUATION_SUITE_INVALID: suite.yaml:8: cases[2]: unknown key 'expected' (did you mean "
        "'expect'?)",
    ]


def test_a_yaml_ambiguity_fails_a_suite_that_validates(tmp_path: Path) -> None:
    # ``output`` accepts any value, so only the reading step can catch this one.
    assert suite_errors(tmp_path, """
        cases:
          - id: a
            input: x
            expect:
              output: no
        """) == ["EVALUATION_SUITE_INVALID: suite.yaml:5: unquoted 'no' is read by YAML 1.1 as "
                 "boolean false; quote it ('no') if you mean the text"]


def test_a_manifest_reports_its_ambiguities_with_its_other_problems(tmp_path: Path) -> None:
    path = write_manifest(tmp_path, "name: no\nentrypoint: app:answer\n")
    assert without_allowed_keys(manifest_errors(path)) == [
        "ELIZON_MANIFEST_INVALID: pkg/elizon.yaml:1: unquoted 'no' is read by YAML 1.1 as "
        "boolean false; quote it ('no') if you mean the text",
        "ELIZON_MANIFEST_INVALID: pkg/elizon.yaml:1: name: expected a string, found boolean "
        "false",
        "ELIZON_MANIFEST_INVALID: pkg/elizon.yaml:2: unknown key 'entrypoint' (did you mean "
        "'entry'?)",
    ]


# -- 7. a manifest's suite paths ----------------------------------------------------------

SECRET = "root:x:0:0:do-not-print-me"


def manifest_naming(tmp_path: Path, suite: str) -> Path:
    (tmp_path / "outside.yaml").write_text(SECRET + "\n", encoding="utf-8")
    return write_manifest(tmp_path, f"entry: app:answer\nevaluation:\n  suite: {suite}\n")


def symlink(link: Path, target: Path) -> None:
    try:
        link.symlink_to(target)
    except (OSError, NotImplementedError) as exc:  # pragma: no cover - e.g. Windows rights
        pytest.skip(f"cannot make symlinks here: {exc}")


@pytest.mark.parametrize("suite", ["../outside.yaml", "./eval/../../outside.yaml", "ABSOLUTE"])
def test_a_suite_outside_the_package_is_refused_unread(tmp_path: Path, suite: str) -> None:
    suite = suite.replace("ABSOLUTE", json.dumps(str(tmp_path / "outside.yaml")))
    [line] = manifest_errors(manifest_naming(tmp_path, suite))
    assert line.startswith("ELIZON_MANIFEST_INVALID: pkg/elizon.yaml:3: suite ")
    assert line.endswith(" is outside the package folder; a package's suites ship inside it")
    assert SECRET not in line


def test_a_symlink_out_of_the_package_is_refused(tmp_path: Path) -> None:
    manifest = manifest_naming(tmp_path, "./eval/suite.yaml")
    (tmp_path / "pkg" / "eval").mkdir()
    symlink(tmp_path / "pkg" / "eval" / "suite.yaml", tmp_path / "outside.yaml")
    assert manifest_errors(manifest) == [
        "ELIZON_MANIFEST_INVALID: pkg/elizon.yaml:3: suite './eval/suite.yaml' is outside the "
        "package folder; a package's suites ship inside it"]


def test_a_symlink_within_the_package_is_followed(tmp_path: Path) -> None:
    manifest = manifest_naming(tmp_path, "./suite.yaml")
    (tmp_path / "pkg" / "eval").mkdir()
    real = tmp_path / "pkg" / "eval" / "real.yaml"
    real.write_text("cases:\n  - id: a\n    input: x\n", encoding="utf-8")
    symlink(tmp_path / "pkg" / "suite.yaml", real)
    [spec] = load_manifest(manifest, "pkg/elizon.yaml").suites
    assert spec.path == real.resolve()


def test_a_symlink_loop_is_refused(tmp_path: Path) -> None:
    manifest = manifest_naming(tmp_path, "./loop.yaml")
    symlink(tmp_path / "pkg" / "loop.yaml", tmp_path / "pkg" / "loop.yaml")
    assert manifest_errors(manifest) == [
        "ELIZON_MANIFEST_INVALID: pkg/elizon.yaml:3: suite './loop.yaml' is a symlink loop"]


def test_a_nul_byte_is_refused(tmp_path: Path) -> None:
    manifest = manifest_naming(tmp_path, '"./a\\0b.yaml"')
    assert manifest_errors(manifest) == [
        "ELIZON_MANIFEST_INVALID: pkg/elizon.yaml:3: suite './a\\x00b.yaml' contains a NUL byte"]


def test_an_over_long_path_is_refused(tmp_path: Path) -> None:
    manifest = manifest_naming(tmp_path, "./" + "a" * 5_000 + ".yaml")
    [line] = manifest_errors(manifest)
    assert line.startswith("ELIZON_MANIFEST_INVALID: pkg/elizon.yaml:3: suite './aaaa")
    assert line.endswith(" is a path too long for this system")


def test_every_suite_path_problem_is_listed(tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path, """
        evaluation:
          suites:
            - suite: ../a.yaml
            - suite: ./b.yaml
            - suite: b.yaml
        """)
    assert manifest_errors(manifest) == [
        "ELIZON_MANIFEST_INVALID: pkg/elizon.yaml:3: suite '../a.yaml' is outside the package "
        "folder; a package's suites ship inside it",
        "ELIZON_MANIFEST_INVALID: pkg/elizon.yaml:5: suite 'b.yaml' is listed twice (first at "
        "line 4)",
    ]


def test_a_missing_suite_is_left_to_the_caller(tmp_path: Path) -> None:
    # collect.py reports it as EVALUATION_SUITE_MISSING; is_file() must not raise there.
    manifest = manifest_naming(tmp_path, "./eval/gone.yaml")
    [spec] = load_manifest(manifest, "pkg/elizon.yaml").suites
    assert spec.path == (tmp_path / "pkg" / "eval" / "gone.yaml").resolve()
    assert spec.declared_at == 3
    assert not spec.path.is_file()


@pytest.mark.parametrize(("text", "where_found"), [
    (SECRET + "\n", ": ... found text"), ("42\n", ": ... found a number"),
    ("- a\n", ":1: ... found a list"),
])
def test_a_suite_that_is_not_a_mapping_is_not_quoted(
    tmp_path: Path, text: str, where_found: str
) -> None:
    where, found = where_found.split(" ... ")
    assert suite_errors(tmp_path, text) == [
        f"EVALUATION_SUITE_INVALID: suite.yaml{where} the file must be a mapping with a 'cases' "
        f"list, {found}"]


# -- 8. deep JSON --------------------------------------------------------------------------

def test_deeply_nested_json_is_a_value_error(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(ValueError, match="nested too deeply"):
        read_json(path)


def test_json_errors_stay_value_errors(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text("{", encoding="utf-8")
    with pytest.raises(ValueError, match=r"^not JSON: "):
        read_json(path)
    with pytest.raises(ValueError, match=r"^cannot read it: "):
        read_json(tmp_path / "absent.json")
