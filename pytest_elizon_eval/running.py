"""Run one case: call the entry point under the case's deadline, check the assertions.

The whole of a case's life that is not pytest: the result is a plain
:class:`~.outcomes.CaseResult`, so cases can be run ahead of pytest's item
loop (concurrency) and reported from anywhere. The judge, when a case has
one, runs after the entry point inside what is left of the same time limit.
A case with ``repeat: n`` runs n times, each run with its own time limit,
and passes when at least ``minPassRate`` of its runs pass. With a cassette,
the recorded calls answer instead of the entry point. No pytest import here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from time import perf_counter
from typing import Any

from .assertions import AssertionResult, check
from .calling import EntryCall, call_with_deadline, invoke
from .entries import DeadlineEntry
from .judging import EndpointJudge, score_of
from .model import Case, JudgeExpect
from .outcomes import FAILED, PASSED, TIMEOUT, CaseResult, grade, run_data

__all__ = ["CaseRun", "run_case"]

Entry = Callable[..., Any] | DeadlineEntry


@dataclass
class CaseRun:
    """A case's result, and the entry point's calls (what ``--elizon-record`` keeps)."""

    result: CaseResult
    calls: list[EntryCall] = field(default_factory=list)


def _as_grade(raw: object) -> tuple[Any, str | None]:
    return score_of(raw), None


def _judge(spec: JudgeExpect, judge: Callable[..., Any], name: str, case: Case, call: EntryCall,
           remaining_s: float) -> tuple[AssertionResult, float | None, str | None]:
    wanted = f"a score of at least {spec.threshold:g} for the rubric {spec.rubric[:120]!r}"
    if call.text is None:
        return AssertionResult("judge", None, wanted, "not checked: there is no output"), \
            None, None
    if remaining_s <= 0:
        return AssertionResult("judge", False, wanted, f"{name}: no time left within the "
                               "case's time limit"), None, None
    if isinstance(judge, EndpointJudge):  # its HTTP deadline is the case's remaining time
        judge = functools.partial(judge.grade, timeout_s=remaining_s)
    graded = call_with_deadline(judge, (spec.rubric, case.input, call.text), {}, remaining_s,
                                _as_grade)
    if graded.timed_out:
        return AssertionResult("judge", False, wanted, f"{name} gave no grade within the "
                               f"{remaining_s:.1f} s left of the case's time limit"), None, None
    if graded.error is not None:
        error = graded.error  # a JudgeError's message says it all; anything else needs its type
        reason = error.message if error.type == "JudgeError" else error.text
        return AssertionResult("judge", False, wanted, f"{name} failed: {reason}"), None, None
    score, reasoning = graded.value
    found = f"score {score:.2f}" + (f" — {reasoning}" if reasoning else "")
    return AssertionResult("judge", score >= spec.threshold, wanted, found), score, reasoning


def _call(entry: Entry, case: Case, timeout_s: float) -> EntryCall:
    if isinstance(entry, DeadlineEntry):
        return entry.run(case.input, timeout_s)
    return invoke(entry, case.input, timeout_s)


def _run_once(case: Case, call: EntryCall | None, entry: Entry | None, base: CaseResult,
              judge: Callable[..., Any] | None, judge_name: str, route_key: str
              ) -> tuple[CaseResult, EntryCall]:
    started = perf_counter()
    if call is None:
        assert entry is not None
        call = _call(entry, case, base.timeout_s)
    expect = case.expect
    assertions = check(expect, call, route_key)
    score = reasoning = None
    if expect is not None and expect.judge is not None and judge is not None \
            and not call.timed_out:
        remaining = base.timeout_s - (perf_counter() - started)
        result, score, reasoning = _judge(expect.judge, judge, judge_name, case, call, remaining)
        assertions.append(result)
    graded = grade(base, call, assertions,
                   expects_error=bool(expect and expect.error_contains is not None),
                   judge_score=score, judge_reasoning=reasoning, replayed=call.replayed)
    return graded, call


def run_case(
    case: Case,
    entry: Entry | None,
    base: CaseResult,
    *,
    judge: Callable[..., Any] | None = None,
    judge_name: str = "the judge",
    route_key: str = "route",
    repeat: int = 1,
    min_pass_rate: float = 1.0,
    replay: Sequence[EntryCall] | None = None,
) -> CaseRun:
    """Run ``case`` ``repeat`` times (with ``entry``, or answered by ``replay``) and grade it."""
    runs: list[CaseResult] = []
    calls: list[EntryCall] = []
    for index in range(repeat):
        recorded = replay[index] if replay is not None else None
        result, call = _run_once(case, recorded, entry, base, judge, judge_name, route_key)
        runs.append(result)
        calls.append(call)
    if repeat == 1:
        return CaseRun(runs[0], calls)
    passed = sum(r.outcome == PASSED for r in runs)
    if passed / repeat >= min_pass_rate - 1e-9:  # 3/5 meets 0.6 despite float rounding
        outcome = PASSED
    else:
        outcome = TIMEOUT if all(r.outcome == TIMEOUT for r in runs) else FAILED
    shown = next((r for r in runs if r.outcome != PASSED), runs[-1]) \
        if outcome != PASSED else runs[-1]
    latencies = [r.latency_ms for r in runs if r.latency_ms is not None]
    scores = [r.judge_score for r in runs if r.judge_score is not None]
    summary = replace(
        shown, outcome=outcome,
        latency_ms=sum(latencies) / len(latencies) if latencies else None,
        judge_score=sum(scores) / len(scores) if scores else None,
        runs=tuple(run_data(r) for r in runs), passed_runs=passed,
        min_pass_rate=min_pass_rate)
    return CaseRun(summary, calls)
