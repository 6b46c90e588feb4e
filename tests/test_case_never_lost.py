"""No case lost, no false green: whatever escapes a case's run, the case reaches every report.

The guarantee lives in one place (the case item turns any escaped exception into that
case's ``error``), so these tests force an escape the plugin cannot foresee — an inner
``conftest.py`` breaks a piece of the run path for one case — and read every report the
run writes: results JSON, JUnit XML, markdown, HTML, the verdict and ``elizon-eval
verify --require-pass``. Each report is written on its own, whatever another one raises.
"""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from pytest_elizon_eval import cli
from pytest_elizon_eval.decide.outcomes import (
    OUTPUT_KEPT,
    CaseIdentity,
    CaseResult,
    SuiteInfo,
    encodable,
    escaped,
    failure_message,
    reason,
)
from pytest_elizon_eval.decide.results_data import ToolCallRecord, TurnRecord, to_data
from pytest_elizon_eval.run.calls import EntryCall, ToolCall

from .conftest import ECHO_APP, Packages

SUITE = """
cases:
  - id: fine
    input: hello
    expect: {contains: [hello]}
  - id: doomed
    input: doom
    expect: {contains: [doom]}
  - id: also-fine
    input: world
    expect: {contains: [world]}
"""

REPORTS = ["--elizon-results=out/r.json", "--elizon-junit=out/j.xml",
           "--elizon-markdown=out/m.md", "--elizon-html=out/r.html"]


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text for you")


def _cases(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for s in results["suites"] for c in s["cases"]}


def _read(root: Path) -> tuple[dict[str, Any], ET.Element, str, str]:
    results = json.loads((root / "out/r.json").read_text(encoding="utf-8"))
    junit = ET.parse(root / "out/j.xml").getroot()
    return (results, junit, (root / "out/m.md").read_text(encoding="utf-8"),
            (root / "out/r.html").read_text(encoding="utf-8"))


def _break(packages: Packages, target: str, broken: str) -> None:
    """An inner conftest.py that replaces ``target`` (``module:attribute.path``) with the
    function ``broken`` its source defines (``original`` is the one replaced), as a bug or an
    unforeseen answer would. The inner runs are in-process: the patch is undone when the
    inner session ends."""
    module, _, path = target.partition(":")
    *owners, name = path.split(".")
    packages.write("conftest.py", f"""
import importlib

owner = importlib.import_module({module!r})
for part in {owners!r}:
    owner = getattr(owner, part)
original = getattr(owner, {name!r})

def pytest_unconfigure():
    setattr(owner, {name!r}, original)

{textwrap.dedent(broken).strip()}

setattr(owner, {name!r}, broken)
""")


# A piece of the run path raising for one case.
BREAK_DECIDE = """
class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no text for you")

def broken(identity, plan, run, **kw):
    if identity.case_id == "doomed":
        raise {error}
    return original(identity, plan, run, **kw)
"""


@pytest.mark.parametrize(("error", "shown"), [
    ("OverflowError('int too large to convert to float')",
     "OverflowError: the case's run raised an exception the plugin did not handle: int too "
     "large to convert to float"),
    ("Unprintable()", "Unprintable: the case's run raised an exception the plugin did not "
                      "handle: <unprintable Unprintable>"),
])
def test_an_escaped_exception_is_the_cases_error_in_every_report(
        packages: Packages, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str],
        error: str, shown: str) -> None:
    packages.package(suite=SUITE, app=ECHO_APP)
    _break(packages, "pytest_elizon_eval.decide.outcomes:decide", BREAK_DECIDE.format(error=error))
    result = pytester.runpytest("-p", "no:cacheprovider", *REPORTS)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([f"*doomed*{shown[:40]}*"])
    assert "INTERNALERROR" not in result.stdout.str()

    results, junit, markdown, html = _read(pytester.path)
    doomed = _cases(results)["doomed"]
    assert doomed["outcome"] == "error"
    assert doomed["error"]["type"] + ": " + doomed["error"]["message"] == shown
    assert set(_cases(results)) == {"fine", "doomed", "also-fine"}
    assert results["verdict"]["pass"] is False
    assert results["suites"][0]["verdict"] == "fail"
    failed = [c.get("name") for c in junit.iter("testcase")
              if c.find("failure") is not None or c.find("error") is not None]
    assert failed == ["doomed"]
    assert "doomed" in markdown
    assert "| `doomed` | error |" in markdown
    assert "doomed" in html
    assert "the plugin did not handle" in html

    capsys.readouterr()
    code = cli.main(["verify", str(pytester.path / "out/r.json"), "--require-pass"])
    assert code == cli.EXIT_NO
    assert capsys.readouterr().err.startswith("EVALUATION_GATE_FAILED: pkg/eval/suite.yaml")


def test_a_result_that_cannot_be_serialised_still_reaches_the_reports(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite=SUITE, app=ECHO_APP)
    _break(packages, "pytest_elizon_eval.decide.outcomes:CaseResult.to_data", """
        def broken(self):
            if self.case_id == "doomed" and self.outcome != "error":
                raise RecursionError("maximum recursion depth exceeded")
            return original(self)
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", *REPORTS)
    result.assert_outcomes(passed=2, failed=1)
    results, junit, _, _ = _read(pytester.path)
    doomed = _cases(results)["doomed"]
    assert (doomed["outcome"], doomed["error"]["type"]) == ("error", "RecursionError")
    assert results["verdict"]["pass"] is False
    assert len(list(junit.iter("testcase"))) == 3


def test_a_report_that_raises_costs_only_itself(packages: Packages,
                                                 pytester: pytest.Pytester) -> None:
    packages.package(suite=SUITE, app=ECHO_APP)
    _break(packages, "pytest_elizon_eval.reporting.markdown:render", """
        def broken(*args, **kwargs):
            raise ValueError("Out of range float values are not JSON compliant")
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", *REPORTS)
    result.stdout.fnmatch_lines([
        "*cannot write the markdown summary */out/m.md: ValueError: Out of range float values*"])
    assert result.ret != 0  # a report asked for and not written fails the run
    assert not (pytester.path / "out/m.md").exists()
    results = json.loads((pytester.path / "out/r.json").read_text(encoding="utf-8"))
    assert set(_cases(results)) == {"fine", "doomed", "also-fine"}
    assert (pytester.path / "out/j.xml").is_file()
    assert (pytester.path / "out/r.html").is_file()


def test_a_signature_without_its_results_file_is_named_not_silently_skipped(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite=SUITE, app=ECHO_APP)
    assert cli.main(["keygen", str(pytester.path / "keys")]) == 0
    _break(packages, "pytest_elizon_eval.reporting.results:stream", """
        def broken(*args, **kwargs):
            raise ValueError("cannot build")
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "--elizon-results=out/r.json",
                                f"--elizon-sign-key={pytester.path / 'keys/elizon-eval.key'}")
    result.stdout.fnmatch_lines([
        "*cannot write the results JSON */out/r.json: ValueError: cannot build*",
        "*cannot write the results signature *: the results file it signs was not written*"])
    assert result.ret != 0


# -- pure pieces -----------------------------------------------------------------------------

INFO = SuiteInfo("pkg/eval/suite.yaml", "pkg", "must-pass", False)
IDENTITY = CaseIdentity("pkg/eval/suite.yaml::c", "c", 3, INFO)


def test_escaped_keeps_the_type_the_message_and_the_limits() -> None:
    try:
        raise LookupError("unknown encoding: rot13")
    except LookupError as exc:
        result = escaped(IDENTITY, (5.0, "the ini option"), exc)
    assert (result.outcome, result.timeout_s, result.timeout_source) == \
        ("error", 5.0, "the ini option")
    assert result.error is not None
    assert "LookupError" in result.error.traceback
    assert reason(result).startswith("LookupError: the case's run raised")
    assert "could not run" in failure_message(result)
    assert CaseResult.from_data(result.to_data()) == result


def test_turn_n_of_m_counts_every_turn_of_the_conversation() -> None:
    ran = tuple(TurnRecord(n, f"say {n}", outcome, "x")
                for n, outcome in ((1, "passed"), (2, "failed")))
    result = CaseResult(nodeid="n", case_id="c", line=3, suite=INFO, outcome="failed",
                        turns=ran, failed_turn=2, turn_count=3)
    assert reason(result).startswith("turn 2 of 3: ")
    assert " at turn 2 of 3 " in failure_message(result).splitlines()[0]
    assert CaseResult.from_data(result.to_data()) == result


def test_a_three_turn_conversation_failing_at_turn_two_says_2_of_3(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite="""
        cases:
          - id: chat
            turns:
              - input: one
                expect: {contains: [one]}
              - input: two
                expect: {contains: [nope]}
              - input: three
    """, app=ECHO_APP)
    result = pytester.runpytest("-p", "no:cacheprovider", "--elizon-results=out/r.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*chat*turn 2 of 3*"])
    case = _cases(json.loads((pytester.path / "out/r.json").read_text()))["chat"]
    assert (case["failed_turn"], case["turn_count"], len(case["turns"])) == (2, 3, 2)


def test_huge_tool_call_parts_are_capped_like_outputs() -> None:
    def _tool_call_data(call: ToolCall) -> dict[str, Any]:
        return to_data(ToolCallRecord.of(call))

    big = {"blob": "x" * (OUTPUT_KEPT * 2)}
    data = _tool_call_data(ToolCall("t", big, "y" * (OUTPUT_KEPT + 5), None))
    assert len(data["arguments"]) == OUTPUT_KEPT
    assert data["arguments_length"] == len(json.dumps(big))
    assert (len(data["result"]), data["result_length"]) == (OUTPUT_KEPT, OUTPUT_KEPT + 5)
    small = _tool_call_data(ToolCall("t", {"a": 1}, [1, 2], "boom"))
    assert small == {"name": "t", "arguments": {"a": 1}, "result": [1, 2], "error": "boom"}
    assert isinstance(EntryCall(tool_calls=(ToolCall("t"),)).to_data()["tool_calls"], list)


def test_a_megabyte_tool_argument_keeps_the_results_file_small(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite="cases:\n  - id: big\n    input: x\n", app="""
        from pytest_elizon_eval import Answer, ToolCall

        def answer(text):
            return Answer(text="ok", tool_calls=[ToolCall("upload", {"data": "z" * 1_000_000},
                                                          "r" * 3_000_000)])
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "--elizon-results=out/r.json")
    result.assert_outcomes(passed=1)
    path = pytester.path / "out/r.json"
    assert path.stat().st_size < 4 * OUTPUT_KEPT
    call = _cases(json.loads(path.read_text()))["big"]["tool_calls"][0]
    assert (call["arguments_length"], call["result_length"]) == (1_000_012, 3_000_000)


@pytest.mark.parametrize("value", [
    {date(2026, 12, 1): "a date key"}, {(1, 2): "a tuple key"}, 10 ** 5000,
    {"deep": 10 ** 5000, "nan": float("nan"), "lone": "\ud800"}],
    ids=["date-key", "tuple-key", "5000-digits", "mixed"])
def test_encodable_makes_json_of_whatever_an_input_or_a_recording_holds(value: object) -> None:
    text = json.dumps(encodable(value), allow_nan=False)  # JSON proper, as reports write it
    text.encode("utf-8")
    assert text != "null"


def test_encodable_names_an_integer_too_long_to_write() -> None:
    assert encodable([10 ** 5000]) == [f"<an integer of {(10 ** 5000).bit_length():,} bits>"]
