"""Issue 38: a terse default terminal. The default ``elizon eval`` section says one line per
suite and only what needs a person, then one summary line; ``-q`` prints the summary line
alone, ``-v`` (or ``--elizon-report=full``) every table. Also: a replayed run and a ``-k``
subset say so, identical setup errors are said once, and a failure shows the input the
entry point was given (docs/contract.md#terminal, #failure-message)."""

from __future__ import annotations

import re

import pytest

from pytest_elizon_eval.measures.rendering import terminal_lines
from pytest_elizon_eval.measures.suite import SuiteMeasures

from .conftest import Packages

APP = """
def answer(message):
    if "charged" in message:
        return "Billing will look at the charge today."
    return "Support will get back to you."
"""
MANIFEST = """
name: desk
entry: app:answer
evaluation:
  suites:
    - suite: ./eval/core.yaml
      gate: must-pass
      authorBaseline: {pass_rate: 1.0}
    - suite: ./eval/extra.yaml
      gate: advisory
"""
CORE = """
cases:
  - id: charge
    input: I was charged twice.
    expect: {contains: [billing]}
  - id: login
    input: I cannot log in.
    expect: {contains: [support]}
"""
EXTRA = """
cases:
  - id: refund
    input: A refund, please.
    expect: {contains: [support]}
"""
#: The outcome line pytest ends a session with (``==== 3 passed in 0.1s ====``; bare
#: under -q).
_FINAL = re.compile(r"^(=+ )?\d+ \w+.* in [\d.]+s( \([^)]*\))?( =+)?$")


@pytest.fixture
def desk(packages: Packages) -> Packages:
    packages.write("desk/elizon.yaml", MANIFEST)
    packages.write("desk/app.py", APP)
    packages.write("desk/eval/core.yaml", CORE)
    packages.write("desk/eval/extra.yaml", EXTRA)
    return packages


def added(result: pytest.RunResult) -> list[str]:
    """What the plugin printed: the lines between pytest's progress lines and its final
    outcome line (blank lines left out)."""
    lines = result.outlines
    start = max(i for i, line in enumerate(lines) if re.search(r"\[\s*\d+%\]$", line))
    # -qq prints no final line
    end = max((i for i, line in enumerate(lines) if _FINAL.match(line)), default=len(lines))
    return [line for line in lines[start + 1:end] if line.strip()]


def section(result: pytest.RunResult) -> list[str]:
    """The ``elizon eval`` section's lines, without its heading: up to its summary line."""
    lines = added(result)
    start = next(i for i, line in enumerate(lines) if " elizon eval " in line)
    end = next(i for i, line in enumerate(lines) if line.startswith("elizon: "))
    return lines[start + 1:end + 1]


def test_a_passing_run_adds_a_line_per_suite_and_one_summary_line(
        desk: Packages, pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("desk")
    assert result.ret == pytest.ExitCode.OK
    assert added(result) == [
        "=" * 33 + " elizon eval " + "=" * 34,
        "desk/eval/core.yaml [desk, must-pass]: 2 passed, 0 failed, 0 timeout, "
        "pass rate 1.000 [0.342, 1.000] — PASS",
        "desk/eval/extra.yaml [desk, advisory]: 1 passed, 0 failed, 0 timeout, "
        "pass rate 1.000 [0.207, 1.000] — PASS",
        "elizon: 3 cases in 2 suites: 3 passed — PASS"]


def test_q_prints_the_summary_line_alone(desk: Packages, pytester: pytest.Pytester) -> None:
    for quiet in ("-q", "-qq"):
        result = pytester.runpytest("desk", quiet)
        assert added(result) == ["elizon: 3 cases in 2 suites: 3 passed — PASS"], quiet


def test_v_and_the_option_show_every_table(desk: Packages, pytester: pytest.Pytester) -> None:
    verbose = section(pytester.runpytest("desk", "-v"))
    assert verbose[:5] == [
        "desk/eval/core.yaml [desk, must-pass]: 2 passed, 0 failed, 0 timeout, "
        "pass rate 1.000 [0.342, 1.000] — PASS",
        "    pass_rate 1.000 [0.342, 1.000] (95% Wilson, 2 cases)",
        "    too few runs to detect any pass-rate drop against a rerun of its 2 cases "
        "(McNemar exact, α 0.05, Holm over 2 metrics)",
        "    metric     author baseline  this run  95% interval    Δ   vs baseline",
        "    pass_rate  1.000            1.000     [0.342, 1.000]  +0  at, within noise "
        "(exact binomial p=1)"]
    assert verbose[-1] == "elizon: 3 cases in 2 suites: 3 passed — PASS"
    # the option says the same without pytest's -v (one line per case)
    assert section(pytester.runpytest("desk", "--elizon-report=full")) == verbose
    # and wins over -v: the one line
    assert added(pytester.runpytest("desk", "-v", "--elizon-report=line")) == [
        "elizon: 3 cases in 2 suites: 3 passed — PASS"]
    wrong = pytester.runpytest("desk", "--elizon-report=long")
    assert wrong.ret == pytest.ExitCode.USAGE_ERROR
    wrong.stderr.fnmatch_lines(["*argument --elizon-report: invalid choice: 'long' (choose "
                                "from 'line', 'short', 'full')*"])


def test_the_default_still_says_what_needs_a_person(desk: Packages,
                                                    pytester: pytest.Pytester) -> None:
    desk.write("desk/app.py", 'def answer(message):\n    return "Our sales team will call."\n')
    result = pytester.runpytest("desk")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert section(result) == [
        "desk/eval/core.yaml [desk, must-pass]: 0 passed, 2 failed, 0 timeout, "
        "pass rate 0.000 [0.000, 0.658] — FAIL",
        "desk/eval/extra.yaml [desk, advisory]: 0 passed, 1 failed, 0 timeout, "
        "pass rate 0.000 [0.000, 0.793] — ADVISORY: not passed (does not fail the run)",
        "failing the run:",
        "  desk/eval/core.yaml::charge — ✗ contains: missing: 'billing'",
        "  desk/eval/core.yaml::login — ✗ contains: missing: 'support'",
        "advisory, not passed:",
        "  desk/eval/extra.yaml::refund — ✗ contains: missing: 'support'",
        "elizon: 3 cases in 2 suites: 2 failed, 1 advisory_failed — FAIL"]
    # pytest's own short summary is as it was
    result.stdout.fnmatch_lines(["FAILED desk/eval/core.yaml::charge - ✗ contains: missing: "
                                 "'billing'"])


def test_identical_setup_errors_are_said_once_per_package(packages: Packages,
                                                          pytester: pytest.Pytester) -> None:
    packages.package(entry="nosuchmodule:answer", suite="cases:\n" + "".join(
        f"  - id: c{i}\n    input: hello {i}\n" for i in range(8)))
    result = pytester.runpytest("pkg")
    assert result.parseoutcomes() == {"errors": 8}
    said = [line for line in section(result) if "ELIZON_ENTRY_INVALID" in line]
    assert said == [
        "  8 cases (pkg/eval/suite.yaml::c0 and 7 more): ELIZON_ENTRY_INVALID: "
        "'nosuchmodule:answer' (entry: in pkg/elizon.yaml:2): cannot import 'nosuchmodule': "
        "ModuleNotFoundError: No module named 'nosuchmodule'"]
    assert section(result)[-1] == "elizon: 8 cases in 1 suite: 8 errors — FAIL"
    # each case's own error is pytest's, as before
    assert len(re.findall(r"^ERROR pkg/eval/suite\.yaml::c\d - ELIZON_ENTRY_INVALID",
                          result.stdout.str(), re.MULTILINE)) == 8


def test_a_replayed_run_says_so_in_its_summary_line(desk: Packages,
                                                    pytester: pytest.Pytester) -> None:
    recorded = pytester.runpytest("desk", "--elizon-record=tape.json")
    assert section(recorded)[-1] == "elizon: 3 cases in 2 suites: 3 passed — PASS"
    replayed = pytester.runpytest("desk", "-q", "--elizon-replay=tape.json")
    assert added(replayed) == ["elizon: 3 cases in 2 suites: 3 passed; answers replayed from "
                               "the cassette tape.json (3 of 3 cases) — PASS"]


def test_a_subset_says_how_many_cases_it_ran_and_labels_its_baseline_comparison(
        desk: Packages, pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("desk", "-k", "charge")
    assert result.ret == pytest.ExitCode.OK
    assert section(result) == [
        "desk/eval/core.yaml [desk, must-pass]: 1 passed, 0 failed, 0 timeout, "
        "pass rate 1.000 [0.207, 1.000], 1 of 2 cases selected (-k) — PASS",
        # the advisory suite, deselected whole, counts too
        "elizon: 1 case in 1 suite: 1 passed; 1 of 3 cases selected (-k) — PASS"]
    full = section(pytester.runpytest("desk", "-k", "charge", "-v"))
    assert "    metric     author baseline  this run  95% interval    Δ   vs baseline — " \
           "partial: 1 of 2 cases selected (-k)" in full
    by_id = section(pytester.runpytest("desk/eval/core.yaml::login", "desk/eval/extra.yaml"))
    assert by_id[0].endswith(", 1 of 2 cases selected (node ids) — PASS")
    assert by_id[-1] == "elizon: 2 cases in 2 suites: 2 passed; 2 of 3 cases selected " \
                        "(node ids) — PASS"


def test_only_significant_regressions_are_said_without_v(desk: Packages,
                                                         pytester: pytest.Pytester) -> None:
    assert pytester.runpytest("desk", "--elizon-results=before.json").ret == 0
    desk.write("desk/app.py", APP.replace("Billing", "Sales"))
    result = pytester.runpytest("desk", "--elizon-baseline=before.json")
    lines = section(result)
    assert "since before.json: 1 regressed, 0 improved, 0 new, 0 removed, 2 unchanged" in lines
    assert "  regressed: desk/eval/core.yaml::charge (passed -> failed)" in lines
    assert lines[-1] == "elizon: 3 cases in 2 suites: 2 passed, 1 failed; since before.json: " \
                        "1 regressed — FAIL"
    # one case is too few to be significant: the test's row is -v's
    assert not any("within noise:" in line or "too few cases to tell:" in line
                   for line in lines)
    assert any(line.startswith("  too few cases to tell: desk/eval/core.yaml pass_rate")
               or line.startswith("  within noise: desk/eval/core.yaml pass_rate")
               for line in section(pytester.runpytest("desk", "--elizon-baseline=before.json",
                                                      "-v")))


PROBE_APP = """
def weak(text):
    return f"Sure! {text}"

def robust(text):
    return "I cannot help with that request."
"""


def test_probes_and_controls_are_said_when_they_fail(packages: Packages,
                                                     pytester: pytest.Pytester) -> None:
    packages.write("pkg/app.py", PROBE_APP)
    packages.write("pkg/eval/suite.yaml", "cases:\n  - id: greets\n    input: hello\n")

    def manifest(entry: str) -> None:
        packages.write("pkg/elizon.yaml", f"""
            name: pkg
            entry: app:{entry}
            evaluation:
              suites:
                - suite: ./eval/suite.yaml
                - probes: [jailbreak, tool-misuse]
            """)

    manifest("robust")
    robust = section(pytester.runpytest("pkg"))
    assert not any(line.startswith(("security:", "compliance:")) for line in robust)
    full = section(pytester.runpytest("pkg", "--elizon-report=full"))
    assert "security: 16 probes, 0 compromised" in full
    assert any(line.startswith("compliance: compliant") for line in full)
    manifest("weak")
    weak = section(pytester.runpytest("pkg"))
    assert "security: 16 probes, 16 compromised" in weak
    compromised = [line for line in weak if line.startswith("  compromised [")]
    assert len(compromised) == 10  # the first ten, then how many more
    assert "  … and 6 more (-v lists every one)" in weak
    assert not any(line.startswith("  by category") for line in weak)
    assert any(line.startswith("compliance: NOT compliant") for line in weak)
    assert all("passed LLM" not in line for line in weak)  # only the failed controls
    assert any(line.startswith("  FAILED LLM01:") for line in weak)
    # the probes are the security section's: not listed again as failing the run
    assert "failing the run:" not in weak


def test_a_breakdown_with_nothing_to_say_is_never_printed() -> None:
    agents: dict[str, float | int | None] = {
        "tool_calls": 0, "tool_success_rate": None, "tool_calls_per_case": 0.0,
        "tool_calls_per_turn": 0.0, "turns_per_conversation": 3.0, "first_tool_rate": None}
    assert terminal_lines(SuiteMeasures(agents=agents)) == []
    assert terminal_lines(SuiteMeasures(rag={"faithfulness": None, "answer_relevancy": None,
                                             "context_precision": None,
                                             "context_recall": None}, rag_cases=0)) == []
    called = {**agents, "tool_calls": 2, "tool_success_rate": 1.0, "tool_calls.lookup": 2,
              "tool_error_rate.lookup": 0.0}
    assert terminal_lines(SuiteMeasures(agents=called)) == [
        "    agents: 2 tool calls, success 1.000, 0.000 per case, 0.000 per turn, "
        "3.000 turns per conversation", "      tools: lookup 2× (errors 0.000)"]


def test_a_failure_shows_the_input_the_entry_point_was_given(packages: Packages,
                                                             pytester: pytest.Pytester) -> None:
    # docs/format.md's CSV example (a named input) given to the tutorial's answer(message)
    packages.write("pkg/elizon.yaml", """
        name: pkg
        entry: app:answer
        secrets: [ZEBRA-7731]
        evaluation:
          suite: ./eval/suite.csv
        """)
    packages.write("pkg/app.py", APP)
    long = "a" * 1000
    packages.write("pkg/eval/suite.csv",
                   "id,input.question,expect.contains\n"
                   'refund-goes-to-billing,I was charged twice,"[""billing""]"\n'
                   'with-a-secret,my code is ZEBRA-7731 and I was charged,"[""billing""]"\n'
                   f'long,{long},"[""billing""]"\n')
    result = pytester.runpytest("pkg")
    assert result.parseoutcomes() == {"failed": 3}
    out = result.stdout.str()
    # the mapping reached answer(message) whole: the message says so
    assert "\ninput: {'question': 'I was charged twice'}\n" in out
    assert "\ninput: {'question': 'my code is ZE…31 and I was charged'}\n" in out
    assert "ZEBRA-7731" not in out
    shown = next(line for line in result.outlines if line.startswith("input: {'question': 'aaa"))
    assert shown == "input: {'question': '" + "a" * (300 - len("{'question': '")) + "…"
