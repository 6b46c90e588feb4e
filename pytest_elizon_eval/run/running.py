"""Run one case from its plan: call the entry point under the deadline, check the assertions.

A :class:`CasePlan` is everything a case's run needs, fixed before it
starts (built in the case's setup, or ahead of its turn for concurrency);
:func:`run_case` returns only what happened — the :class:`Attempt` of each
run — and never raises. Deciding the outcome is :mod:`.outcomes`' job, and
who the case is (node id, suite, line) is joined there too. The judge, when
a case has one, runs after the entry point inside what is left of the same
time limit; so do Python checks, and one still running at the deadline makes
the run a timeout (its call marked so, the entry point's answer kept apart for
the cassette). With ``repeat: n`` each run has its own time limit. With a
cassette, the recorded calls answer instead of the entry point.

A conversation (``turns:``) calls the entry point once per turn, each time
with the conversation so far, under the case's one time limit; it stops at
the first turn that does not pass. The case's own ``expect`` then reads the
whole conversation: the last answer, every tool call, the summed latency
and usage (docs/contract.md#conversations). Usage that reports no cost is
priced from the user's prices. No pytest import here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..decide.outcomes import PASSED, call_outcome
from ..decide.results_data import JudgeRecord
from ..load.runtime import Case, Expect, JudgeExpect
from ..sequential import DEFAULT_CONFIDENCE, Sprt
from . import deadlines, slots
from .assertions import AssertionResult, check
from .calls import EntryCall, Rates, ToolCall, Usage
from .checks import CaseCopy, CheckFunction, grade_checks
from .concurrency import gate_for
from .grade_cache import GradeCache, cache_key, judge_identity
from .retrying import Tally
from .sequential_runs import until_decided
from .slots import SlotCall

if TYPE_CHECKING:  # the entries and judges are made by the binder, which imports them
    from ..bind.entries import Entry
    from ..bind.judging import Judge

__all__ = ["Attempt", "CasePlan", "CaseRun", "TurnResult", "run_ahead", "run_case",
           "run_without_first_call", "turn_failed"]


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
    #: Recorded calls that answer instead of the entry point (``--elizon-replay``): per
    #: run, the call of each turn (one for a single call).
    replay: tuple[tuple[EntryCall, ...], ...] | None = None
    #: US dollars per 1M input, output and cache tokens, by model name.
    prices: Mapping[str, Rates] = field(default_factory=dict)
    #: The functions of ``expect.checks``, by the name the suite gives them.
    checks: Mapping[str, CheckFunction] = field(default_factory=dict)
    #: Where judge grades are kept and reused (None: ``--elizon-cache=off``).
    grade_cache: GradeCache | None = None
    #: Why the judge's failures are advisory in this case (a must-pass suite whose judge is
    #: not aligned: docs/contract.md#judge-alignment), or None.
    judge_advisory: str | None = None
    #: The judge's alignment as measured, for the case's result (None: not measured).
    alignment: Mapping[str, Any] | None = None
    #: ``repeat: {until: decided}``: the stopping rule (``repeat`` is then its ``max``).
    sequential: Sprt | None = None
    #: Runs of one sequential case under way at once (``--elizon-concurrency``).
    run_width: int = 1
    #: The confidence of a repeated case's interval (ini ``elizon_confidence``).
    confidence: float = DEFAULT_CONFIDENCE
    #: ini ``elizon_inconclusive = pass``.
    inconclusive_passes: bool = False


@dataclass(frozen=True)
class TurnResult:
    """One turn of a conversation: what was said, the answer, and its checks."""

    input: object
    call: EntryCall
    assertions: tuple[AssertionResult, ...]
    judge_score: float | None = None
    judge_reasoning: str | None = None
    judge_usage: Usage | None = None
    #: The entry point's answer, when ``call`` is that answer marked timed out because a
    #: check ran out of the case's time: what a cassette keeps (:attr:`Attempt.entry_calls`).
    answered: EntryCall | None = field(default=None, compare=False)
    #: Each rubric's grade (docs/contract.md#judge-grades).
    judges: tuple[JudgeRecord, ...] = ()


def turn_failed(turn: TurnResult, expects_error: bool = False) -> bool:
    """Whether a turn ends its conversation: it did not pass, by the one pass rule."""
    return call_outcome(turn.call, turn.assertions, expects_error) != PASSED


@dataclass(frozen=True)
class Attempt:
    """One run of a case: the call and what the checks said of it. For a conversation,
    ``call`` is the whole conversation (last answer, every tool call, summed latency and
    usage), ``assertions`` the case's own, and ``turns`` each turn."""

    call: EntryCall
    assertions: tuple[AssertionResult, ...]
    judge_score: float | None = None
    judge_reasoning: str | None = None
    #: What grading cost (every judged turn's too), apart from the entry point's usage.
    judge_usage: Usage | None = None
    turns: tuple[TurnResult, ...] = ()
    #: The judge's retries after refusals (every turn's), the seconds it waited, and
    #: whether it was rate limited (docs/contract.md#retries).
    judge_retries: Tally = field(default_factory=Tally, compare=False)
    #: As :attr:`TurnResult.answered`, for a single call.
    answered: EntryCall | None = field(default=None, compare=False)
    #: Each rubric's grade, every turn's first (docs/contract.md#judge-grades).
    judges: tuple[JudgeRecord, ...] = ()

    @property
    def entry_calls(self) -> tuple[EntryCall, ...]:
        """What the entry point answered, turn by turn (one call for a single input), before
        any check ran out of time: what a cassette records (docs/contract.md#record-and-replay)."""
        if self.turns:
            return tuple(t.answered or t.call for t in self.turns)
        return (self.answered or self.call,)


@dataclass(frozen=True)
class CaseRun:
    """Every run of a case, in order."""

    attempts: tuple[Attempt, ...]


def _no_grade(spec: JudgeExpect, identity: str, wanted: str, found: str, passed: bool | None,
              advisory: str | None, cached: int, calls: int) -> tuple[AssertionResult, JudgeRecord]:
    counted_as_advisory = passed is False and bool(advisory)
    if counted_as_advisory:
        found = f"{found} — counted as advisory: {advisory}"
    return (AssertionResult(spec.assertion, passed, wanted, found, counted_as_advisory),
            JudgeRecord(spec.assertion, identity, spec.threshold, tolerance=spec.tolerance,
                        cached=cached, calls=calls,
                        advisory=advisory if counted_as_advisory else None))


def _grade_rubric(plan: CasePlan, spec: JudgeExpect, judge: Judge, case_input: object,
                  call: EntryCall, deadline: float, retries: Tally, spent: list[Usage]
                  ) -> tuple[AssertionResult, JudgeRecord, str | None]:
    """One rubric's assertion and record: ``samples`` grades (each from the grade cache when
    it has it), their mean held against the threshold. A judge that fails or runs out of
    time fails the rubric; with ``plan.judge_advisory`` a failure is reported (the assertion
    fails, flagged ``advisory``), and no outcome counts it."""
    identity = judge_identity(judge)
    name = f"judge {judge.description}"
    wanted = f"a score of at least {spec.threshold:g} for the rubric {spec.rubric[:120]!r}"
    advisory = plan.judge_advisory
    if call.text is None:
        return (*_no_grade(spec, identity, wanted, "not checked: there is no output", None,
                           None, 0, 0), None)
    cache = plan.grade_cache
    scores: list[float] = []
    reasoning: str | None = None
    cached = calls = 0
    for sample in range(spec.samples):
        key = cache_key(identity, spec.rubric, case_input, call.text, sample) if cache else ""
        grade = cache.get(key) if cache is not None else None
        if grade is not None:
            cached += 1
        else:
            left = deadline - time.monotonic()
            if deadlines.passed(deadline):
                return (*_no_grade(spec, identity, wanted, f"{name}: no time left within the "
                                   "case's time limit", False, advisory, cached, calls), None)
            grade = judge.grade(spec.rubric, case_input, call.text, deadline=deadline)
            calls += 1
            retries.retries += grade.retries
            retries.waited_s += grade.waited_s
            retries.rate_limited = retries.rate_limited or grade.rate_limited
            if grade.usage is not None:
                spent.append(grade.usage)
            if grade.timed_out:
                return (*_no_grade(spec, identity, wanted, f"{name} gave no grade within the "
                                   f"{left:.1f} s left of the case's time limit", False,
                                   advisory, cached, calls), None)
            if grade.error is not None or grade.score is None:
                return (*_no_grade(spec, identity, wanted, f"{name} failed: {grade.error}",
                                   False, advisory, cached, calls), None)
            if cache is not None:
                cache.put(key, grade)
        assert grade.score is not None  # the cache keeps scores only
        scores.append(grade.score)
        reasoning = grade.reasoning if reasoning is None else reasoning
    from ..agreement import consistency  # deferred: only a judged case needs it

    spread = consistency(scores, spec.tolerance)
    found = f"score {spread.mean:.2f}"
    if spec.samples > 1:
        found += (f" (mean of {spec.samples} samples: sd {spread.std_dev:.2f}, range "
                  f"{spread.range:.2f} " + ("within" if spread.consistent else
                                            "OVER; INCONSISTENT:")
                  + f" tolerance {spec.tolerance:g})")
    if reasoning:
        found += f" — {reasoning}"
    if cached:
        found += " [cached grade]" if cached == spec.samples else \
            f" [{cached} of {spec.samples} grades cached]"
    passed = spread.mean >= spec.threshold
    counted_as_advisory = not passed and bool(advisory)
    if counted_as_advisory:  # failed, shown so; outcomes do not count it (decide says why)
        found = f"{found} — counted as advisory: {advisory}"
    several = spec.samples > 1
    record = JudgeRecord(
        spec.assertion, identity, spec.threshold, score=spread.mean, scores=tuple(scores),
        std_dev=spread.std_dev if several else None, min=spread.min if several else None,
        max=spread.max if several else None, range=spread.range if several else None,
        tolerance=spec.tolerance, consistent=spread.consistent if several else None,
        cached=cached, calls=calls, advisory=advisory if counted_as_advisory else None)
    return (AssertionResult(spec.assertion, passed, wanted, found, counted_as_advisory), record,
            reasoning)


def _judged(plan: CasePlan, expect: Expect, judge: Judge, case_input: object, call: EntryCall,
            deadline: float, retries: Tally
            ) -> tuple[list[AssertionResult], float | None, str | None, Usage | None,
                       tuple[JudgeRecord, ...]]:
    """Every rubric of ``expect``, one judge call (per sample) each, in order; the first
    rubric's score and reasoning are the case's ``judge_score`` / ``judge_reasoning``."""
    results: list[AssertionResult] = []
    records: list[JudgeRecord] = []
    spent: list[Usage] = []
    score = reasoning = None
    for index, spec in enumerate(expect.rubrics):
        result, record, said = _grade_rubric(plan, spec, judge, case_input, call, deadline,
                                             retries, spent)
        results.append(result)
        records.append(record)
        if index == 0:
            score, reasoning = record.score, said
    return results, score, reasoning, _total(spent), tuple(records)


#: What grading a call gives: the call (marked timed out when a check ran out of the
#: case's time), its assertions, the judge's score, reasoning and usage, each rubric's record.
_Graded = tuple[EntryCall, tuple[AssertionResult, ...], float | None, str | None, Usage | None,
                tuple[JudgeRecord, ...]]


def _checked(plan: CasePlan, expect: Expect | None, case_input: object, call: EntryCall,
             deadline: float, retries: Tally, case_copy: CaseCopy) -> _Graded:
    assertions = check(expect, call, plan.route_key)
    if not call.timed_out:  # Python checks run inside what is left of the time limit
        graded = grade_checks(expect, plan.checks, plan.case, case_input, call, deadline,
                              case_copy=case_copy)
        assertions += graded.results
        if graded.out_of_time:  # the limit is the case's wherever it is reached: a timeout
            call = replace(call, timed_out=True)
    score = reasoning = usage = None
    rubrics: tuple[JudgeRecord, ...] = ()
    if expect is not None and expect.judge is not None and plan.judge is not None \
            and not call.timed_out:
        results, score, reasoning, usage, rubrics = _judged(plan, expect, plan.judge,
                                                            case_input, call, deadline, retries)
        assertions += results
    if usage is not None:  # a judge's usage: its cost from the prices given
        from .answers import priced  # deferred: what answers are read with is bound per case

        usage = priced(usage, plan.prices)
    return call, tuple(assertions), score, reasoning, usage, rubrics


def _call(plan: CasePlan, case_input: object, deadline: float,
          recorded: EntryCall | None, messages: list[dict[str, object]] | None) -> EntryCall:
    if recorded is not None:
        return recorded
    assert plan.entry is not None  # a plan has an entry or a replay
    call = plan.entry.run(case_input, deadline=deadline, messages=messages)
    if call.usage is None:  # nothing to cost
        return call
    from .answers import priced  # deferred: as above

    usage = priced(call.usage, plan.prices)
    return call if usage is call.usage else replace(call, usage=usage)


def _total(usages: Sequence[Usage | None]) -> Usage | None:
    total: Usage | None = None
    for part in usages:
        if part is not None:
            total = part if total is None else total + part
    return total


def _whole(calls: Sequence[EntryCall]) -> EntryCall:
    """A conversation as one call: its last answer, every tool call, summed latency/usage."""
    last = calls[-1]
    latencies = [c.latency_ms for c in calls]
    return replace(last, latency_ms=None if any(v is None for v in latencies)
                   else sum(v for v in latencies if v is not None),
                   tool_calls=tuple(t for c in calls for t in c.tool_calls),
                   # a turn without usage is an unknown part, never a zero (contract.md#cost)
                   usage=_total([c.usage or Usage() for c in calls])
                   if any(c.usage is not None for c in calls) else None)


def unknown_tool_results(given: Mapping[str, Any] | None, calls: Sequence[ToolCall],
                         turn: int) -> AssertionResult | None:
    """A failed ``toolResults`` check when the turn names a tool or call id that the previous
    answer (turn number ``turn``, from 0) did not call: a misspelt key would otherwise send
    ``null`` for the call and fail later for a reason nobody wrote. Such a turn is not sent."""
    ids = [c.id or f"call_{turn}_{index}" for index, c in enumerate(calls)]
    unknown = [key for key in given or {} if key not in ids
               and key not in {c.name for c in calls}]
    if not unknown:
        return None
    called = ", ".join(f"{c.name} (id {ident})" for c, ident in zip(calls, ids, strict=True))
    return AssertionResult(
        "toolResults", False, "each key the tool name or call id of a call of the previous "
        "answer", f"no call {', '.join(map(repr, unknown))}; the previous answer called "
        f"{called or 'no tool'}")


def _attempt(plan: CasePlan, recorded: tuple[EntryCall, ...] | None) -> Attempt:
    deadline = time.monotonic() + plan.timeout_s
    case = plan.case
    judged = Tally()
    case_copy = CaseCopy(case)  # the checks of this run share one copy of the case
    if case.turns is None:
        answer = _call(plan, case.input, deadline, recorded[0] if recorded else None, None)
        call, assertions, score, reasoning, usage, graded = _checked(
            plan, case.expect, case.input, answer, deadline, judged, case_copy)
        return Attempt(call, assertions, score, reasoning, usage, judge_retries=judged,
                       answered=answer if call is not answer else None, judges=graded)
    expects_error = bool(case.expect and case.expect.error_contains is not None)
    turns: list[TurnResult] = []
    # Each message is built once: the conversation so far is kept, and each turn adds the
    # previous turn's answer and its own question to it (a rebuild per turn made long
    # conversations quadratic). Each turn gets a list of its own to keep or change.
    said: list[dict[str, Any]] = []
    previous: list[tuple[object, EntryCall]] = []
    for index, turn in enumerate(case.turns):
        if recorded is not None and index >= len(recorded):
            break  # a recorded run stops where its conversation stopped
        from .answers import conversation  # deferred: as above

        added = conversation(previous, turn.input, first=index - len(previous),
                             tool_results=turn.tool_results)
        unknown = unknown_tool_results(turn.tool_results, previous[-1][1].tool_calls
                                       if previous else (), index - 1)
        if unknown is not None:  # the turn fails unasked: its tool messages would be wrong
            turns.append(TurnResult(turn.input, EntryCall(latency_ms=0.0), (unknown,)))
            break
        if turn.tool_results and turns:  # the records keep the results the model was sent
            from .answers import with_tool_results  # deferred: as above

            last = turns[-1]
            turns[-1] = replace(last, call=with_tool_results(last.call, turn.tool_results,
                                                             index - 1),
                                answered=last.answered or last.call)
        said += added[:-1]
        answer = _call(plan, turn.input, deadline, recorded[index] if recorded else None,
                       [*said, added[-1]])
        call, assertions, score, reasoning, usage, graded = _checked(
            plan, turn.expect, turn.input, answer, deadline, judged, case_copy)
        done = TurnResult(turn.input, call, assertions, score, reasoning, usage,
                          answered=answer if call is not answer else None,
                          judges=tuple(replace(r, turn=index + 1) for r in graded))
        turns.append(done)
        previous = [(turn.input, answer)]
        if turn_failed(done, expects_error):
            break
    whole = _whole([t.call for t in turns])
    graded_usage = _total([t.judge_usage for t in turns])
    if len(turns) < len(case.turns) or turn_failed(turns[-1], expects_error):
        # the case's own checks are about the whole conversation, which did not happen
        return Attempt(whole, (), judge_usage=graded_usage, turns=tuple(turns),
                       judge_retries=judged, judges=_turn_judges(turns))
    call, assertions, score, reasoning, usage, graded = _checked(
        plan, case.expect, case.turns[-1].input, whole, deadline, judged, case_copy)
    return Attempt(call, assertions, score, reasoning, _total([graded_usage, usage]),
                   turns=tuple(turns), judge_retries=judged,
                   judges=_turn_judges(turns) + graded)


def _turn_judges(turns: Sequence[TurnResult]) -> tuple[JudgeRecord, ...]:
    return tuple(r for t in turns for r in t.judges)


def _gated(plan: CasePlan, recorded: tuple[EntryCall, ...] | None) -> Attempt:
    """One run, after waiting for room under the entry point's adaptive limit (with
    ``--elizon-concurrency=auto``): the wait comes before the time limit starts."""
    gate = gate_for(plan.entry.limit_key) \
        if plan.entry is not None and recorded is None else None
    if gate is None:
        return _attempt(plan, recorded)
    gate.acquire()
    refused = True  # an attempt that raised (it never does) must not widen the limit
    try:
        attempt = _attempt(plan, recorded)
        refused = attempt.call.rate_limited or attempt.call.timed_out
        return attempt
    finally:
        gate.release(refused=refused)


def run_ahead(plan: CasePlan) -> tuple[Callable[[], CaseRun], SlotCall | None]:
    """The case's run for a slot thread, and the first call that thread makes itself (a
    sync Python entry point's, when no adaptive limit gates it) or None (run/slots.py)."""
    entry = plan.entry
    # not a sequential case: its runs are made on threads of their own
    if entry is not None and getattr(entry, "sync", False) and plan.sequential is None \
            and gate_for(entry.limit_key) is None:
        call = SlotCall()
        return lambda: slots.running(call, lambda: run_case(plan)), call
    return lambda: run_case(plan), None


def run_without_first_call(plan: CasePlan) -> CaseRun:
    """The case's run when its first call, made on a slot thread, outlived its deadline:
    that call is taken as timed out, the rest runs here."""
    return slots.running(SlotCall(SlotCall.TIMED_OUT), lambda: run_case(plan))


def run_case(plan: CasePlan) -> CaseRun:
    """Run the plan's case ``repeat`` times (or answer it from the replay); with a
    sequential rule, only until it decides (docs/contract.md#repeat-runs)."""
    if plan.sequential is not None:
        return CaseRun(until_decided(plan, _gated))
    return CaseRun(tuple(
        _gated(plan, plan.replay[index] if plan.replay is not None else None)
        for index in range(plan.repeat)))
