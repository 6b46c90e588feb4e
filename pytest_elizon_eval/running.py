"""Run one case from its plan: call the entry point under the deadline, check the assertions.

A :class:`CasePlan` is everything a case's run needs, fixed before it
starts (built in the case's setup, or ahead of its turn for concurrency);
:func:`run_case` returns only what happened — the :class:`Attempt` of each
run — and never raises. Deciding the outcome is :mod:`.outcomes`' job, and
who the case is (node id, suite, line) is joined there too. The judge, when
a case has one, runs after the entry point inside what is left of the same
time limit. With ``repeat: n`` each run has its own time limit. With a
cassette, the recorded calls answer instead of the entry point. No pytest
import here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from .assertions import AssertionResult, check
from .calls import EntryCall
from .entries import Entry
from .judging import Judge
from .model import Case, JudgeExpect

__all__ = ["Attempt", "CasePlan", "CaseRun", "run_case"]


@dataclass(frozen=True)
class CasePlan:
    """One case, ready to run: what to call, what to check, and the limits."""

    case: Case
    #: None when the cassette answers (no entry point is bound then).
    entry: Entry | None
    judge: Judge | None
    #: The entry point's description for reports ("cassette" when replayed).
    entry_description: str
    timeout_s: float
    timeout_source: str
    route_key: str = "route"
    repeat: int = 1
    min_pass_rate: float = 1.0
    #: Recorded calls that answer instead of the entry point (``--elizon-replay``).
    replay: tuple[EntryCall, ...] | None = None


@dataclass(frozen=True)
class Attempt:
    """One run of a case: the call and what the checks said of it."""

    call: EntryCall
    assertions: tuple[AssertionResult, ...]
    judge_score: float | None = None
    judge_reasoning: str | None = None


@dataclass(frozen=True)
class CaseRun:
    """Every run of a case, in order."""

    attempts: tuple[Attempt, ...]


def _judged(spec: JudgeExpect, judge: Judge, case: Case, call: EntryCall, deadline: float
            ) -> tuple[AssertionResult, float | None, str | None]:
    name = f"judge {judge.description}"
    wanted = f"a score of at least {spec.threshold:g} for the rubric {spec.rubric[:120]!r}"
    if call.text is None:
        return AssertionResult("judge", None, wanted, "not checked: there is no output"), \
            None, None
    left = deadline - time.monotonic()
    if left <= 0:
        return AssertionResult("judge", False, wanted, f"{name}: no time left within the "
                               "case's time limit"), None, None
    grade = judge.grade(spec.rubric, case.input, call.text, deadline=deadline)
    if grade.timed_out:
        return AssertionResult("judge", False, wanted, f"{name} gave no grade within the "
                               f"{left:.1f} s left of the case's time limit"), None, None
    if grade.error is not None or grade.score is None:
        return AssertionResult("judge", False, wanted, f"{name} failed: {grade.error}"), \
            None, None
    found = f"score {grade.score:.2f}" + (f" — {grade.reasoning}" if grade.reasoning else "")
    return (AssertionResult("judge", grade.score >= spec.threshold, wanted, found),
            grade.score, grade.reasoning)


def _attempt(plan: CasePlan, recorded: EntryCall | None) -> Attempt:
    deadline = time.monotonic() + plan.timeout_s
    if recorded is not None:
        call = recorded
    else:
        assert plan.entry is not None  # a plan has an entry or a replay
        call = plan.entry.run(plan.case.input, deadline=deadline)
    expect = plan.case.expect
    assertions = check(expect, call, plan.route_key)
    score = reasoning = None
    if expect is not None and expect.judge is not None and plan.judge is not None \
            and not call.timed_out:
        result, score, reasoning = _judged(expect.judge, plan.judge, plan.case, call, deadline)
        assertions.append(result)
    return Attempt(call, tuple(assertions), score, reasoning)


def run_case(plan: CasePlan) -> CaseRun:
    """Run the plan's case ``repeat`` times (or answer it from the replay)."""
    return CaseRun(tuple(
        _attempt(plan, plan.replay[index] if plan.replay is not None else None)
        for index in range(plan.repeat)))
