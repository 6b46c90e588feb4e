"""The pure modules, directly: outcomes, aggregate, regression and every renderer, fed
CaseResults built in Python (no pytest run inside)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from typing import Any

import pytest

from pytest_elizon_eval import plugin
from pytest_elizon_eval.decide import outcomes
from pytest_elizon_eval.decide.outcomes import CaseIdentity, CaseResult, SuiteInfo
from pytest_elizon_eval.load.runtime import Case
from pytest_elizon_eval.reporting import github, junit, markdown, results, terminal
from pytest_elizon_eval.reporting.aggregate import Aggregate
from pytest_elizon_eval.reporting.regression import compare
from pytest_elizon_eval.run.assertions import AssertionResult
from pytest_elizon_eval.run.calls import EntryCall, ErrorInfo
from pytest_elizon_eval.run.running import Attempt, CasePlan, CaseRun

from . import github_runner
from .conftest import validate_results

MUST = SuiteInfo("pkg/eval/core.yaml", "demo", "must-pass", False,
                 {"pass_rate": 1.0, "accuracy": 0.9}, "abc")
ADVISORY = SuiteInfo("pkg/eval/extra.yaml", "demo", "advisory", True)
FAILED_CHECK = AssertionResult("contains", False, "every one of: 'delta'", "missing: 'delta'")
PASSED_CHECK = AssertionResult("contains", True, "every one of: 'x'", "all found")


def result(case_id: str, outcome: str, suite: SuiteInfo = MUST, line: int = 2,
           **fields: Any) -> CaseResult:
    fields.setdefault("timeout_s", 0.5)
    fields.setdefault("timeout_source", "--elizon-timeout=0.5")
    return CaseResult(nodeid=f"{suite.path}::{case_id}", case_id=case_id, line=line,
                      suite=suite, outcome=outcome, **fields)


def aggregate_of(*results_: CaseResult) -> Aggregate:
    found = Aggregate()
    for r in results_:
        found.add(r.to_data())
    return found


def sample() -> Aggregate:
    return aggregate_of(
        result("ok-one", "passed", line=2, latency_ms=10.0, output="alpha",
               output_length=5, assertions=(PASSED_CHECK,)),
        result("wrong", "failed", line=5, latency_ms=30.0, output="gamma", output_length=5,
               assertions=(FAILED_CHECK,)),
        result("slow", "timeout", line=8),
        result("fine", "passed", ADVISORY, line=2, latency_ms=5.0),
        result("drifted", "failed", ADVISORY, line=4, latency_ms=5.0, output="x",
               output_length=1, assertions=(FAILED_CHECK,)),
    )


# -- outcomes -------------------------------------------------------------------------------

def plan(repeat: int = 1, rate: float = 1.0, expect: dict[str, Any] | None = None) -> CasePlan:
    case = Case.model_validate({"id": "c", "input": "x", **({"expect": expect} if expect
                                                             else {})})
    return CasePlan(case=case, entry=None, judge=None, entry_description="app:answer",
                    timeout_s=2.0, timeout_source="--elizon-timeout=2", repeat=repeat,
                    min_pass_rate=rate)


IDENTITY = CaseIdentity("pkg/eval/core.yaml::c", "c", 3, MUST)


def attempt(ok: bool | None = True, *, latency: float | None = 1.0, timed_out: bool = False,
            error: ErrorInfo | None = None) -> Attempt:
    call = EntryCall(value="out", text=None if timed_out or error else "out", error=error,
                     latency_ms=None if timed_out else latency, timed_out=timed_out)
    checks = () if ok is None else (PASSED_CHECK if ok else FAILED_CHECK,)
    return Attempt(call, checks)


def test_decide_a_single_run() -> None:
    assert outcomes.decide(IDENTITY, plan(), CaseRun((attempt(),))).outcome == "passed"
    assert outcomes.decide(IDENTITY, plan(), CaseRun((attempt(False),))).outcome == "failed"
    timed = outcomes.decide(IDENTITY, plan(), CaseRun((attempt(timed_out=True),)))
    assert (timed.outcome, timed.timeout_s, timed.timeout_source) == (
        "timeout", 2.0, "--elizon-timeout=2")
    assert outcomes.reason(timed) == "no answer within 2 s (--elizon-timeout=2)"
    raised = outcomes.decide(IDENTITY, plan(), CaseRun((attempt(None, error=ErrorInfo(
        "ValueError", "no")),)))
    assert raised.outcome == "failed"
    assert outcomes.reason(raised) == "ValueError: no"
    expected = outcomes.decide(IDENTITY, plan(expect={"errorContains": ["no"]}),
                               CaseRun((attempt(None, error=ErrorInfo("ValueError", "no")),)))
    assert expected.outcome == "passed"


def test_decide_repeats_against_the_min_pass_rate() -> None:
    runs = CaseRun((attempt(True, latency=1.0), attempt(False, latency=3.0),
                    attempt(True, latency=2.0), attempt(False, latency=6.0)))
    half = outcomes.decide(IDENTITY, plan(4, 0.5), runs)
    assert (half.outcome, half.passed_runs, half.latency_ms) == ("passed", 2, 3.0)
    strict = outcomes.decide(IDENTITY, plan(4, 0.75), runs)
    assert strict.outcome == "failed"
    assert [r.outcome for r in strict.runs] == ["passed", "failed", "passed", "failed"]
    assert strict.assertions == (FAILED_CHECK,)  # the first run that did not pass is shown
    assert outcomes.reason(strict) == ("2/4 runs passed (50%, 95% CI 15%–85%; flaky; within "
                                       "noise); first that did not: ✗ contains: "
                                       "missing: 'delta'")
    message = outcomes.failure_message(strict)
    assert "runs: 2/4 passed, minPassRate 0.75 needs 3\n  run 1: passed in 1.0 ms\n" \
        "  run 2: failed in 3.0 ms — ✗ contains" in message
    assert "latency: mean 3.0 ms" in message
    # 3 of 5 meets 0.6 despite floating point
    three = CaseRun(tuple(attempt(i < 3) for i in range(5)))
    assert outcomes.decide(IDENTITY, plan(5, 0.6), three).outcome == "passed"
    all_timeouts = CaseRun((attempt(timed_out=True), attempt(timed_out=True)))
    assert outcomes.decide(IDENTITY, plan(2, 1.0), all_timeouts).outcome == "timeout"


def test_reason_and_failure_message() -> None:
    crash = outcomes.crashed(IDENTITY, "the worker died\nmore")
    assert crash.crashed
    assert outcomes.reason(crash) == "crashed: the worker died"
    assert outcomes.failure_message(crash).startswith(
        "case 'c' crashed (must-pass suite pkg/eval/core.yaml:3): the worker died")
    setup = outcomes.setup_error(IDENTITY, (90.0, "the default"),
                                 ErrorInfo("ELIZON_ENTRY_UNBOUND", "no entry"))
    assert outcomes.reason(setup) == "ELIZON_ENTRY_UNBOUND: no entry"
    assert "could not run" in outcomes.failure_message(setup)
    long = result("l", "failed", assertions=(AssertionResult("equals", False, "y",
                                                             "z" * 500 + "\nline"),))
    assert outcomes.reason(long) == "✗ equals: " + "z" * 200
    hostile = result("h", "failed", output="::error::x\n\x1b[31m" + "o" * 3000,
                     output_length=3001 + 12, assertions=(FAILED_CHECK,))
    message = outcomes.failure_message(hostile)
    assert "\x1b" not in message
    assert github_runner.parse(message) == []
    assert "output (3,013 chars, first 2,000 shown):" in message
    shown = outcomes.display_reason(result("e", "failed", error=ErrorInfo("::error::pwned", "")))
    assert shown == ":\u200b:error::pwned"  # cannot start a workflow command


def test_blocks_and_teststatus() -> None:
    assert not outcomes.blocks(result("a", "passed"))
    assert outcomes.blocks(result("a", "failed"))
    assert not outcomes.blocks(result("a", "failed", ADVISORY))
    assert not outcomes.blocks(result("a", "timeout", ADVISORY))
    assert outcomes.blocks(result("a", "error", ADVISORY))
    status = {(o, s.advisory): plugin.teststatus(result("a", o, s).to_data(), "call")
              for o in ("passed", "failed", "timeout") for s in (MUST, ADVISORY)}
    assert status == {
        ("passed", False): None, ("passed", True): None, ("failed", False): None,
        ("failed", True): ("advisory_failed", "a", "ADVISORY FAILED"),
        ("timeout", False): ("timeout", "T", "TIMEOUT"),
        ("timeout", True): ("advisory_timeout", "t", "ADVISORY TIMEOUT")}
    assert plugin.teststatus(result("a", "timeout").to_data(), "setup") is None


def test_annotate_keeps_an_advisory_failure_as_a_passing_section() -> None:
    class Report:
        def __init__(self) -> None:
            self.outcome = "failed"
            self.sections: list[tuple[str, str]] = []

    report = Report()
    plugin.annotate(report, result("d", "failed", ADVISORY, assertions=(FAILED_CHECK,)),
                      {"suite": "demo:x", "case": "\ud800"})
    assert report.outcome == "passed"
    assert report.sections[0][0] == "elizon advisory failed"
    data = getattr(report, outcomes.REPORT_ATTR)
    assert data["recording"]["case"] == "\\ud800"
    assert CaseResult.from_data(data).case_id == "d"


def test_encodable_escapes_only_lone_surrogates() -> None:
    assert outcomes.encodable("plain é 😀") == "plain é 😀"
    assert outcomes.encodable("a\ud800b\udfff") == "a\\ud800b\\udfff"
    nested = outcomes.encodable({"k\udc80": ["x\ud83d", ("y",), 1, None]})
    assert nested == {"k\\udc80": ["x\\ud83d", ["y"], 1, None]}
    data = result("s", "failed", output="lone \ud800", output_length=6,
                  error=ErrorInfo("E", "\udcff")).to_data()
    json.dumps(data, ensure_ascii=False).encode("utf-8")  # would raise on a lone surrogate
    assert (data["output"], data["error"]["message"]) == ("lone \\ud800", "\\udcff")


# -- aggregate and regression ---------------------------------------------------------------

def test_aggregate_metrics_verdicts_and_paragraph() -> None:
    agg = sample()
    core, extra = agg.suites()
    assert [r.case_id for r in core.results] == ["ok-one", "wrong", "slow"]  # file order
    metrics = core.metrics()
    assert metrics["cases"] == 3
    assert metrics["pass_rate"] == pytest.approx(1 / 3)
    assert metrics["timeout_rate"] == pytest.approx(1 / 3)
    assert (metrics["p50_latency_ms"], metrics["max_latency_ms"]) == (10.0, 30.0)
    assert metrics["judge_score"] is None
    assert (core.verdict, extra.verdict, agg.passed) == ("fail", "advisory", False)
    rows = {r.metric: r for r in core.baseline_rows()}
    assert rows["pass_rate"].comparison == "below"
    assert rows["accuracy"].comparison == "not measured by this run"
    assert agg.paragraph() == (
        "The run failed: 2 suites, 5 cases. pkg/eval/core.yaml (must-pass) passed 1 of 3 "
        "(1 failed, 1 timeout). pkg/eval/extra.yaml (advisory) passed 1 of 2 (1 failed), "
        "which does not block.")
    assert aggregate_of(result("a", "passed", ADVISORY)).passed
    assert Aggregate().paragraph() == "No Elizon cases ran."


def test_regression_compare() -> None:
    before = results.build(sample())
    after = aggregate_of(
        result("ok-one", "failed", assertions=(FAILED_CHECK,)), result("wrong", "passed"),
        result("new", "passed"), result("fine", "passed", ADVISORY),
        result("drifted", "failed", ADVISORY))
    regression = compare(before, after, "before.json")
    assert regression.counts() == {"regressed": 1, "improved": 1, "new": 1, "removed": 1,
                                   "unchanged": 2}
    assert [(c.nodeid.rsplit(":", 1)[1], c.change) for c in regression.changes[:2]] == [
        ("ok-one", "regressed"), ("wrong", "improved")]


# -- renderers ------------------------------------------------------------------------------

def test_terminal_render() -> None:
    lines = [text for text, _ in terminal.render(sample())]
    assert lines == [
        "pkg/eval/core.yaml [demo, must-pass]: 1 passed, 1 failed, 1 timeout, pass rate 0.333 "
        "[0.061, 0.792] — FAIL",
        "    pass_rate 0.333 [0.061, 0.792] (95% Wilson, 3 cases)",
        "    too few runs to detect any pass-rate drop against a rerun of its 3 cases (McNemar "
        "exact, α 0.05, Holm over 2 metrics)",
        "    metric     author baseline  this run  95% interval    Δ       vs baseline",
        "    pass_rate  1.000            0.333     [0.061, 0.792]  -0.667  below, significant "
        "(exact binomial p=0 < α 0.05)",
        "    accuracy   0.900            -         -               -       not measured by this "
        "run",
        "pkg/eval/extra.yaml [demo, advisory]: 1 passed, 1 failed, 0 timeout, pass rate 0.500 "
        "[0.095, 0.905] — ADVISORY: not passed (does not fail the run)",
        "    pass_rate 0.500 [0.095, 0.905] (95% Wilson, 2 cases)",
        "    too few runs to detect any pass-rate drop against a rerun of its 2 cases (McNemar "
        "exact, α 0.05, Holm over 2 metrics)",
        "timed out:",
        "  pkg/eval/core.yaml::slow — no answer within 0.5 s (--elizon-timeout=0.5)",
        "advisory, not passed:",
        "  pkg/eval/extra.yaml::drifted — ✗ contains: missing: 'delta'",
    ]


def test_markdown_render() -> None:
    text = markdown.render(sample())
    assert "## ❌ pkg/eval/core.yaml" in text
    assert "## ⚠️ pkg/eval/extra.yaml" in text
    assert ("| pass_rate | 1.000 | 0.333 | [0.061, 0.792] | -0.667 | below, significant "
            "(exact binomial p=0 &lt; α 0.05) |") in text
    assert "| `wrong` | failed | ✗ contains: missing: 'delta' | 30.0 ms |" in text
    assert "| `slow` | timeout | no answer within 0.5 s (--elizon-timeout=0.5) | — |" in text
    assert "<details><summary>wrong output (5 chars)</summary>" in text
    assert markdown.cell("a|b`c<d>\n") == "a\\|b\\`c&lt;d&gt;\\\\n"


def test_junit_render() -> None:
    crash = outcomes.crashed(CaseIdentity("pkg/eval/core.yaml::boom", "boom", 11, MUST),
                             "worker died")
    agg = sample()
    agg.add(crash.to_data())
    root = ET.fromstring(junit.render(agg).encode())
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert (cases["wrong"].get("file"), cases["wrong"].get("line")) == ("pkg/eval/core.yaml", "5")
    failure = cases["wrong"].find("failure")
    assert failure is not None
    assert failure.get("message") == "✗ contains: missing: 'delta'"
    timeout = cases["slow"].find("error")
    assert timeout is not None
    assert timeout.get("type") == "timeout"
    assert timeout.get("message") == "timed out: no answer within 0.5 s (--elizon-timeout=0.5)"
    error = cases["boom"].find("error")
    assert error is not None
    assert (error.get("type"), error.get("message"), cases["boom"].get("line")) == (
        "error", "crashed: worker died", "11")
    skipped = cases["drifted"].find("skipped")
    assert skipped is not None
    assert (skipped.get("message") or "").startswith("advisory_failed, does not fail the run")
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["baseline.pass_rate"] == "1"


def test_github_annotations() -> None:
    lines = github.annotation_lines(sample())
    commands = github_runner.parse("\n".join(lines))
    assert [(c.name, c.properties["line"], c.properties["title"]) for c in commands] == [
        ("error", "5", "wrong: failed"), ("error", "8", "slow: timeout"),
        ("warning", "4", "drifted: advisory_failed")]
    assert commands[0].data.startswith("pkg/eval/core.yaml::wrong\ncase 'wrong' failed")
    many = aggregate_of(*[result(f"c{i:02d}", "failed", line=i, assertions=(FAILED_CHECK,))
                          for i in range(12)])
    names = [c.name for c in github_runner.parse("\n".join(github.annotation_lines(many)))]
    assert names == ["error"] * 10 + ["notice"]
    huge = aggregate_of(result("h", "failed", output="%" * 10_000, output_length=10_000,
                               assertions=(FAILED_CHECK,)))
    [line] = github.annotation_lines(huge)
    assert len(line.split("::", 2)[2]) <= github.MESSAGE_LIMIT
    guard = github.Guard.new()
    assert re.fullmatch(r"::stop-commands::[0-9a-f]{32}", guard.stop)
    assert guard.resume == f"::{guard.token}::"


def test_results_build_is_valid_and_carries_every_field() -> None:
    data = results.build(sample(), compare(results.build(sample()), sample(), "b.json"))
    validate_results(data)
    [slow] = [c for s in data["suites"] for c in s["cases"] if c["id"] == "slow"]
    assert (slow["timeout_s"], slow["timeout_source"]) == (0.5, "--elizon-timeout=0.5")
    assert data["regression"]["counts"]["unchanged"] == 5
