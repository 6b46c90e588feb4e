"""Issue 11: Python checks (``expect.checks``), ``expect.path``, JSON written as text and the
new text assertions — the pure parts directly, the rest in two pytester runs."""

from __future__ import annotations

import asyncio
import time

import pytest

from pytest_elizon_eval.errors import ElizonError
from pytest_elizon_eval.load.model import Suite, validate
from pytest_elizon_eval.load.runtime import Case, Expect
from pytest_elizon_eval.run import answer_parts
from pytest_elizon_eval.run.assertions import check
from pytest_elizon_eval.run.calls import EntryCall
from pytest_elizon_eval.run.checks import fixture_checks, grade_checks, signature_problem

from .conftest import Packages

CHECKS_MODULE = '''
def mentions_input(output, input):
    return input["q"] in output

def never(output):
    return False, "the answer never says sorry"

def knows_its_case(case, answer, value):
    return case.id == "spec-case-and-answer" and answer.latency_ms is not None \\
        and value["summary"].startswith("Q:")
'''

CONFTEST = '''
import asyncio
import pytest

def polite(output):
    return "please" in output.lower()

def asserting(output):
    assert "zzz" in output

def score(value):
    return 0.7, "mostly fine"

async def async_ok(output):
    await asyncio.sleep(0)
    return bool(output)

def raising(output):
    return helper(output)

def helper(output):
    raise ValueError("cannot grade " + output[:6])

@pytest.fixture(scope="session")
def elizon_checks():
    return {"polite": polite, "asserting": asserting, "score": score, "async-ok": async_ok,
            "raising": raising}
'''

APP = '''
def answer(q):
    return {"summary": "Q: " + q + " please", "items": [{"title": "first"}, {"title": "Second"}],
            "text": '```json\\n{"k": 1}\\n```'}
'''

SUITE = '''
cases:
  - id: spec-passes
    input: {q: hello}
    expect: {checks: ["mychecks:mentions_input"]}
  - id: spec-fails-with-reason
    input: {q: hello}
    expect: {checks: ["mychecks:never"]}
  - id: spec-case-and-answer
    input: {q: hello}
    expect: {checks: ["mychecks:knows_its_case"]}
  - id: fixture-passes
    input: {q: hello}
    expect: {checks: [polite]}
  - id: assert-is-rewritten
    input: {q: hello}
    expect: {checks: [asserting]}
  - id: score-passes
    input: {q: hello}
    expect: {checks: [{check: score, threshold: 0.5}]}
  - id: score-fails
    input: {q: hello}
    expect: {checks: [{check: score, threshold: 0.9}]}
  - id: async-passes
    input: {q: hello}
    expect: {checks: [async-ok]}
  - id: raising-fails
    input: {q: hello}
    expect: {checks: [raising]}
  - id: path-into-lists
    input: {q: hello}
    expect:
      path: $.items[1].title
      equals: Second
      containsExact: [Sec]
      startsWith: Sec
  - id: path-missing
    input: {q: hello}
    expect: {path: "$.items[5].title", contains: [x]}
  - id: fenced-json-text
    input: {q: hello}
    expect: {path: $.text, isJson: true, jsonSchema: {type: object, required: [k]}}
'''


def test_every_check_form_in_one_run(packages: Packages, pytester: pytest.Pytester) -> None:
    root = packages.package(app=APP, suite=SUITE)
    packages.write("pkg/mychecks.py", CHECKS_MODULE)
    packages.write("pkg/conftest.py", CONFTEST)
    # a nested directory overrides the fixture, like elizon_entry
    packages.write("pkg/inner/conftest.py", '''
        import pytest

        @pytest.fixture(scope="session")
        def elizon_checks():
            return {"polite": lambda output: (False, "inner rules")}
    ''')
    packages.write("pkg/inner/elizon.yaml", "entry: app:answer\nevaluation:\n"
                   "  suite: ./s.yaml\n")
    packages.write("pkg/inner/app.py", APP)
    packages.write("pkg/inner/s.yaml", "cases:\n  - id: overridden\n    input: {q: hi}\n"
                   "    expect: {checks: [polite]}\n")
    assert root.is_dir()
    result = pytester.runpytest("-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=7, failed=6)
    text = result.stdout.str()
    for passed in ("spec-passes", "spec-case-and-answer", "fixture-passes", "score-passes",
                   "async-passes", "path-into-lists", "fenced-json-text"):
        assert f"PASSED pkg/eval/suite.yaml::{passed}" in text
    result.stdout.fnmatch_lines([
        "  ✗ checks.mychecks:never",
        "      found:    returned False — the answer never says sorry",
        "  ✗ checks.asserting",  # pytest's rewritten assert shows the values
        "      found:    AssertionError: assert 'zzz' in '{\"summary\": \"Q: hello please\"*"
        "(at */pkg/conftest.py:8 in asserting: assert \"zzz\" in output)",
        "  ✗ checks.score",
        "      found:    score 0.70 — mostly fine",
        "  ✗ checks.raising",  # the check's own frame, and where the error came from
        "      found:    the check raised ValueError: cannot grade {\"summ (at */pkg/conftest.py:18"
        " in raising: return helper(output) → */pkg/conftest.py:21 in helper: raise *)",
        "  ✗ path",
        "      found:    $.items[[]5[]] is missing: $.items has 2 items",
        "  ✗ checks.polite",
        "      found:    returned False — inner rules",
    ])


def test_a_check_that_cannot_be_used_is_a_collection_error(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    packages.package(app=APP, suite='''
        cases:
          - id: one
            input: {q: x}
            expect:
              checks:
                - nosuchmodule:check
                - mychecks:wants_too_much
    ''')
    packages.write("pkg/mychecks.py", "def wants_too_much(output, context):\n    return True\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([
        "EVALUATION_SUITE_INVALID: pkg/eval/suite.yaml:6: cases[[]0[]].expect.checks[[]0[]]: "
        "check 'nosuchmodule:check' cannot be used: cannot import 'nosuchmodule'*",
        "EVALUATION_SUITE_INVALID: pkg/eval/suite.yaml:7: cases[[]0[]].expect.checks[[]1[]]: "
        "check 'mychecks:wants_too_much' cannot be used: asks for 'context'; a check asks by "
        "name for any of: output, value, input, answer, case",
    ])


# -- direct: the pure parts -----------------------------------------------------------------

def _case(expect: dict[str, object]) -> Case:
    return Case.model_validate({"id": "c", "input": "hi", "expect": expect})


def _call(value: object) -> EntryCall:
    import json
    return EntryCall(value=value, text=value if isinstance(value, str) else json.dumps(value),
                     latency_ms=1.0)


def _checked(expect: dict[str, object], value: object) -> dict[str, tuple[bool | None, str]]:
    return {r.name: (r.passed, r.found) for r in check(Expect.model_validate(expect),
                                                       _call(value))}


def test_new_text_assertions() -> None:
    text = "Hello World, the answer is 42."
    assert _checked({"containsAny": ["WORLD", "mars"]}, text) == {
        "containsAny": (True, "found: 'WORLD'")}
    assert _checked({"containsAny": ["mars", "venus"]}, text)["containsAny"] == (
        False, "none found")
    assert _checked({"containsExact": ["Hello", "world"]}, text)["containsExact"] == (
        False, "missing: 'world'")
    assert _checked({"startsWith": "Hello"}, "  " + text)["startsWith"][0] is True
    assert _checked({"startsWith": "World"}, text)["startsWith"][0] is False


def test_json_text_plain_fenced_and_broken() -> None:
    assert answer_parts.json_from_text('  {"k": [1, 2]}\n').value == {"k": [1, 2]}
    fenced = 'Here you go:\n```json\n{"k": 1}\n```\nAnything else?'
    assert answer_parts.json_from_text(fenced).value == {"k": 1}
    two = fenced + "\n```json\n[]\n```"
    assert "2 fenced json blocks" in str(answer_parts.json_from_text(two).error)
    broken = answer_parts.json_from_text('{"k": 1,\n "j": }')
    assert broken.error == ("not JSON: Expecting value at line 2 column 7 (character 15)")
    assert "NaN is not JSON" in str(answer_parts.json_from_text("NaN").error)
    # the gaps the issue names: JSON as text passes a schema, prose never does
    assert _checked({"jsonSchema": {"type": "object"}}, '{"k": 1}')["jsonSchema"][0] is True
    assert _checked({"jsonSchema": {}}, "plain prose")["jsonSchema"] == (
        False, "not JSON: Expecting value at line 1 column 1 (character 0)")
    assert _checked({"isJson": True}, "plain prose")["isJson"][0] is False
    assert _checked({"isJson": False}, "plain prose")["isJson"][0] is True


def test_path_reads_nested_values_and_lists() -> None:
    value = {"a": {"b": [{"c": "deep"}, {"c": {"d": 1}}]}, "n": 3}
    assert answer_parts.select(value, "$.a.b[0].c") == "deep"
    assert answer_parts.select(value, "a.b.1.c") == {"d": 1}
    assert _checked({"path": "$.a.b[1].c", "jsonSchema": {"required": ["d"]},
                     "contains": ['"d": 1']}, value) == {
        "jsonSchema": (True, "valid"), "contains": (True, "all found")}
    missing = _checked({"path": "$.a.x.y", "equals": "q"}, value)
    assert missing == {"path": (False, "$.a.x is missing: no key 'x' at $.a (it has: b)"),
                       "equals": (None, "not checked: the path is missing")}
    assert "$.n is int, not a mapping" in _checked({"path": "$.n.k", "equals": "q"},
                                                   value)["path"][1]
    # a structured answer written as JSON text is read for the path too
    assert _checked({"path": "$.k", "equals": "v"}, '{"k": "v"}') == {"equals": (True, "equal")}


@pytest.mark.parametrize(("path", "problem"), [
    ("$", "names no part"), ("$.a..b", "stuck at '..b'"), ("a[x]", "stuck at '[x]'")])
def test_a_bad_path_is_a_suite_problem(path: str, problem: str) -> None:
    data = {"cases": [{"id": "c", "input": "x", "expect": {"path": path}}]}
    _, problems = validate(Suite, data)
    assert len(problems) == 1
    assert problem in problems[0].message
    assert problems[0].message.startswith("cases[0].expect.path: path ")


def test_a_bad_check_spec_is_a_suite_problem() -> None:
    _, problems = validate(Suite, {"cases": [{"id": "c", "input": "x", "expect": {
        "checks": [3, {"check": "s", "threshold": 2}, {"check": "s", "thresold": 1}]}}]})
    assert [p.message for p in problems] == [
        "cases[0].expect.checks[0]: expected a string, found the number 3",
        "cases[0].expect.checks[1].threshold: must be at most 1.0, found 2",
        "cases[0].expect.checks[2]: unknown key 'thresold' (did you mean 'threshold'?); "
        "allowed here: check, threshold",
    ]


def _run(functions: dict[str, object], expect: dict[str, object], deadline_s: float = 5.0
         ) -> list[tuple[bool | None, str]]:
    case = _case(expect)
    return [(r.passed, r.found) for r in grade_checks(
        case.expect, functions, case, "hi", _call("the output"),  # type: ignore[arg-type]
        time.monotonic() + deadline_s).results]


def test_check_results_directly() -> None:
    async def later(output: str) -> float:
        await asyncio.sleep(0)
        return 0.95

    functions = {"t": lambda: True, "none": lambda output: None, "bare": lambda value: 0.3,
                 "later": later, "passes-with-reason": lambda: (True, "fine")}
    assert _run(functions, {"checks": ["t", "passes-with-reason",
                                       {"check": "later", "threshold": 0.9}]}) == [
        (True, "returned True"), (True, "returned True — fine"), (True, "score 0.95")]
    none, bare = _run(functions, {"checks": ["none", "bare"]})
    # None from code without an assert is a forgotten return (docs/contract.md#checks)
    assert none == (False, "returned None without an assert (a forgotten return?): return "
                           "True/False, or assert")
    assert bare == (False, "returned the score 0.3, but no threshold is given: write "
                           "{check: <name>, threshold: 0.8}")


def test_a_hung_check_is_abandoned_at_the_deadline() -> None:
    def hangs() -> bool:
        time.sleep(2)
        return True

    [(passed, found)] = _run({"hangs": hangs}, {"checks": ["hangs"]}, deadline_s=0.05)
    assert passed is False
    assert found.startswith("gave no result within the 0.")


def test_a_check_without_output_is_not_checked() -> None:
    case = _case({"checks": ["t"]})
    [result] = grade_checks(case.expect, {"t": lambda: True}, case, "hi", EntryCall(),
                            time.monotonic() + 1).results
    assert result.passed is None


def test_signatures_and_fixture_names() -> None:
    assert signature_problem(lambda output, **rest: True) is None
    assert signature_problem(lambda output, extra=1: True) is None
    assert signature_problem("text") == "is str, not a function"
    case = _case({"checks": ["polite", "mod:fn"]})
    with pytest.raises(ElizonError) as info:
        fixture_checks(case, (), {"rude": lambda: True}, "the elizon_checks fixture (x.py:1)",
                       "s.yaml")
    assert str(info.value) == (
        "EVALUATION_SUITE_INVALID: s.yaml: case c: no check named 'polite' in the "
        "elizon_checks fixture (x.py:1) (it has: rude); name a check from the fixture or "
        "write 'module.path:function'")
    with pytest.raises(ElizonError, match="returned list, not a mapping"):
        fixture_checks(case, (), [], "the elizon_checks fixture", "s.yaml")
