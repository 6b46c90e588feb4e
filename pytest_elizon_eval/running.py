"""Run one case: call the entry point under the case's deadline, check the assertions.

The whole of a case's life that is not pytest: the result is a plain
:class:`~.outcomes.CaseResult`, so cases can be run ahead of pytest's item
loop (concurrency) and reported from anywhere. The judge, when a case has
one, runs after the entry point inside what is left of the same time limit.
No pytest import here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from time import perf_counter
from typing import Any

from .assertions import AssertionResult, check
from .calling import EntryCall, call_with_deadline, invoke
from .judging import EndpointJudge, score_of
from .model import Case, JudgeExpect
from .outcomes import CaseResult, grade

__all__ = ["run_case"]


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


def run_case(
    case: Case,
    entry: Callable[..., Any],
    base: CaseResult,
    *,
    judge: Callable[..., Any] | None = None,
    judge_name: str = "the judge",
    route_key: str = "route",
) -> CaseResult:
    """Call ``entry`` with the case's input and grade it; ``base`` carries identity and limits."""
    started = perf_counter()
    call = invoke(entry, case.input, base.timeout_s)
    expect = case.expect
    assertions = check(expect, call, route_key)
    score = reasoning = None
    if expect is not None and expect.judge is not None and judge is not None \
            and not call.timed_out:
        remaining = base.timeout_s - (perf_counter() - started)
        result, score, reasoning = _judge(expect.judge, judge, judge_name, case, call, remaining)
        assertions.append(result)
    return grade(base, call, assertions,
                 expects_error=bool(expect and expect.error_contains is not None),
                 judge_score=score, judge_reasoning=reasoning)
