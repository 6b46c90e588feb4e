"""A case's outcome, decided here, once.

Owns the step from "the entry point answered and the checks said …" (a
:class:`~.running.CaseRun`) to the :class:`CaseResult` every report shows
(docs/contract.md#outcomes): the outcome (passed / failed / timeout / error),
including repeats (``minPassRate``), errors an assertion expected
(``errorContains``), setup errors, escaped exceptions and crashed xdist
workers. The records and their JSON are :mod:`.results_data`; the words are
:mod:`.wording`; both re-exported here for the modules that import them from
this one. Putting a result on pytest's report (and a report's terminal
category) is pytest glue, in :mod:`pytest_elizon_eval.plugin`. No pytest
import here.
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..run.assertions import AssertionResult
from ..run.calls import EntryCall, ErrorInfo, ToolCall, Usage
from ..text import NAME_KEPT, cap, named
from . import noise
from .results_data import ERROR as ERROR
from .results_data import FAILED as FAILED
from .results_data import INCONCLUSIVE as INCONCLUSIVE
from .results_data import OUTPUT_KEPT as OUTPUT_KEPT
from .results_data import PASSED as PASSED
from .results_data import TIMEOUT as TIMEOUT
from .results_data import WORKER_CRASH as WORKER_CRASH
from .results_data import CaseIdentity as CaseIdentity
from .results_data import CaseResult as CaseResult
from .results_data import (
    RunRecord,
    SecurityRecord,
    SnapshotRecord,
    ToolCallRecord,
    ToolCountRecord,
    TurnRecord,
    from_data,
)
from .results_data import SuiteInfo as SuiteInfo
from .results_data import encodable as encodable
from .wording import OUTPUT_SHOWN as OUTPUT_SHOWN
from .wording import REASON_PART as REASON_PART
from .wording import conversation_text as conversation_text
from .wording import display_reason as display_reason
from .wording import failure_message as failure_message
from .wording import outcome_name as outcome_name
from .wording import reason as reason
from .wording import usage_text as usage_text
from .wording_noise import repeat_properties as repeat_properties

if TYPE_CHECKING:  # types only: reports and elizon-eval read results without the run path
    from ..run.running import Attempt, CasePlan, CaseRun, TurnResult

__all__ = [
    "ERROR",
    "FAILED",
    "GATED_BY_COMPARISON",
    "HISTORY_KEY_ATTR",
    "INCONCLUSIVE",
    "OUTPUT_KEPT",
    "PASSED",
    "REPORT_ATTR",
    "TIMEOUT",
    "CaseIdentity",
    "CaseResult",
    "SuiteInfo",
    "attempt_outcome",
    "blocks",
    "call_outcome",
    "conversation_text",
    "crashed",
    "decide",
    "described",
    "display_reason",
    "encodable",
    "escaped",
    "failure_message",
    "inconclusive_passes",
    "outcome_name",
    "reason",
    "repeat_properties",
    "setup_error",
]

#: The report attribute that carries a case's result as plain data across xdist.
REPORT_ATTR = "elizon"
#: The report attribute carrying (case content SHA-256, entry identity) to the history
#: store's recorder (history/recorder.py).
HISTORY_KEY_ATTR = "elizon_history_key"
#: Characters of each run's (and turn's) output kept in its record.
RUN_OUTPUT_KEPT = 4096
#: A case's budget for the tools its answer called (docs/contract.md#results-json): the
#: calls kept of one answer (and of each turn's), and the characters of their arguments,
#: results and errors kept in all; past it a part keeps :data:`TOOL_PART_FLOOR`
#: characters. A record says what was cut: ``tool_calls_total``, ``<part>_length``.
TOOL_CALLS_KEPT = 100
TOOL_CHARS_KEPT = 1024 * 1024
TOOL_PART_FLOOR = 256


def described(exc: BaseException) -> str:
    """``exc``'s message, even when its ``__str__`` raises."""
    try:
        return str(exc)
    except Exception:  # the message itself is broken: say so rather than lose the case
        return f"<unprintable {type(exc).__name__}>"


# -- deciding -------------------------------------------------------------------------------

def call_outcome(call: EntryCall, assertions: Sequence[AssertionResult],
                 expects_error: bool) -> str:
    """The one pass rule of a call (a single run, a repeat's run, a conversation's turn):
    it timed out, or an error fails it unless ``errorContains`` expected one; an assertion
    that could not be checked (there was no output) fails nothing by itself, nor does a
    judge's failure counted as advisory (:func:`decide` then says so). A turn that does not
    pass ends its conversation (``running.turn_failed`` asks this)."""
    if call.timed_out:
        return TIMEOUT
    if any(a.passed is False and not a.advisory for a in assertions) \
            or (call.error and not expects_error):
        return FAILED
    return PASSED


def _failed_turn(attempt: Attempt, expects_error: bool) -> int | None:
    """The 1-based turn at which a conversation stopped without passing, if it did."""
    for number, turn in enumerate(attempt.turns, 1):
        if call_outcome(turn.call, turn.assertions, expects_error) != PASSED:
            return number
    return None


def _attempt_outcome(attempt: Attempt, expects_error: bool) -> str:
    failed = _failed_turn(attempt, expects_error)
    if failed is not None:
        turn = attempt.turns[failed - 1]
        return call_outcome(turn.call, turn.assertions, expects_error)
    return call_outcome(attempt.call, attempt.assertions, expects_error)


def attempt_outcome(attempt: Attempt, expects_error: bool) -> str:
    """One run's outcome (a conversation's: its first turn that did not pass, if any)."""
    return _attempt_outcome(attempt, expects_error)


class _ToolBudget:
    """What is left of a case's budget of tool-call text (:data:`TOOL_CHARS_KEPT`)."""

    def __init__(self) -> None:
        self.left = TOOL_CHARS_KEPT

    def records(self, calls: Sequence[ToolCall]) -> dict[str, Any]:
        """``tool_calls`` (the first :data:`TOOL_CALLS_KEPT`, each part within what is
        left) and ``tool_calls_total`` (how many there were, when some were not kept)."""
        kept = []
        for call in calls[:TOOL_CALLS_KEPT]:
            record = ToolCallRecord.of(call, max(TOOL_PART_FLOOR, min(OUTPUT_KEPT, self.left)))
            self.left -= sum(_size(getattr(record, part))
                             for part in ("arguments", "result", "error"))
            kept.append(record)
        return {"tool_calls": tuple(kept),
                "tool_calls_total": len(calls) if len(calls) > TOOL_CALLS_KEPT else None}


def _tool_counts(calls: Sequence[ToolCall]) -> dict[str, Any]:
    """``tool_counts`` of an answer whose calls were not all kept: every call, counted per
    tool (name as kept), the names past the first :data:`TOOL_CALLS_KEPT` together — so
    the agent metrics count what happened, not what was kept (docs/contract.md#agent-metrics)."""
    if len(calls) <= TOOL_CALLS_KEPT:
        return {}
    counts: dict[str | None, list[int]] = {}
    for call in calls:
        name: str | None = named(call.name)
        if name not in counts and len(counts) >= TOOL_CALLS_KEPT:
            name = None  # the rest: one entry, however many names an answer makes up
        slot = counts.setdefault(name, [0, 0])
        slot[0] += 1
        slot[1] += call.error is not None
    return {"tool_counts": tuple(ToolCountRecord(n, c, e) for n, (c, e) in counts.items())}


def _size(part: Any) -> int:
    """The characters a kept part of a tool call takes (as JSON text, a structure)."""
    if part is None or isinstance(part, (bool, int, float)):
        return 0
    if isinstance(part, str):
        return len(part)
    try:  # kept whole, so at most the part's limit
        return len(json.dumps(part, ensure_ascii=False, default=str))
    except (ValueError, RecursionError):
        return 0


def _usage(usage: Usage | None) -> Usage | None:
    """``usage`` with its model's name kept within :data:`~..text.NAME_KEPT` characters."""
    return None if usage is None else _model_kept(usage)


def _model_kept(usage: Usage) -> Usage:
    if usage.model is None or len(usage.model) <= NAME_KEPT:
        return usage
    return replace(usage, model=named(usage.model))


def _turn_record(number: int, turn: TurnResult, expects_error: bool, budget: _ToolBudget
                 ) -> TurnRecord:
    call = turn.call
    return TurnRecord(
        turn=number, input=turn.input,
        outcome=call_outcome(call, turn.assertions, expects_error),
        output=cap(call.text, RUN_OUTPUT_KEPT)[0] if call.text is not None else None,
        output_length=len(call.text) if call.text is not None else 0,
        latency_ms=call.latency_ms, assertions=tuple(turn.assertions), error=call.error,
        **budget.records(call.tool_calls), usage=_usage(call.usage),
        judge_score=turn.judge_score)


def _identity_fields(identity: CaseIdentity, plan: CasePlan) -> dict[str, Any]:
    return {"nodeid": identity.nodeid, "case_id": identity.case_id, "line": identity.line,
            "suite": identity.suite, "variant": identity.variant, "timeout_s": plan.timeout_s,
            "timeout_source": plan.timeout_source, "entry": plan.entry_description,
            "input": plan.case.input,
            "turn_count": len(plan.case.inputs) if plan.case.conversation else 0}


def _retry_fields(attempts: Sequence[Attempt]) -> dict[str, Any]:
    """What retries cost over a case's runs (and turns): attempts, retries, waiting."""
    calls = [t.call for a in attempts for t in a.turns] or [a.call for a in attempts]
    made = sum(c.attempts for c in calls)
    judged = [a.judge_retries for a in attempts]
    return {"attempts": made,
            "retries": made - len(calls) + sum(j.retries for j in judged),
            "waited_s": sum(c.waited_s for c in calls) + sum(j.waited_s for j in judged),
            "rate_limited": any(c.rate_limited for c in calls)
            or any(j.rate_limited for j in judged)}


def _single(identity: CaseIdentity, plan: CasePlan, attempt: Attempt, outcome: str
            ) -> CaseResult:
    call = attempt.call
    output, _ = cap(call.text, OUTPUT_KEPT) if call.text is not None else (None, False)
    expects_error = bool(plan.case.expect and plan.case.expect.error_contains is not None)
    failed = _failed_turn(attempt, expects_error)
    assertions = attempt.assertions
    if failed is not None:  # the failing turn's checks are why the case did not pass
        assertions = attempt.turns[failed - 1].assertions
    budget = _ToolBudget()  # one per case: its calls, then each turn's
    return CaseResult(
        **budget.records(call.tool_calls), **_tool_counts(call.tool_calls),
        usage=_usage(call.usage),
        turns=tuple(_turn_record(n, t, expects_error, budget)
                    for n, t in enumerate(attempt.turns, 1)),
        failed_turn=failed,
        **_identity_fields(identity, plan), outcome=outcome, assertions=assertions,
        latency_ms=call.latency_ms, output=output,
        output_length=len(call.text) if call.text is not None else 0, error=call.error,
        judge_score=attempt.judge_score, judge_reasoning=attempt.judge_reasoning,
        judge_usage=_usage(attempt.judge_usage),
        replayed=call.replayed, **_retry_fields([attempt]), judges=attempt.judges,
        alignment=dict(plan.alignment) if plan.alignment is not None and attempt.judges
        else None)


def _run_record(attempt: Attempt, outcome: str) -> RunRecord:
    call = attempt.call
    output = cap(call.text, RUN_OUTPUT_KEPT)[0] if call.text is not None else None
    return RunRecord(outcome, call.latency_ms, tuple(attempt.assertions), output, call.error,
                     attempt.judge_score)


def decide(identity: CaseIdentity, plan: CasePlan, run: CaseRun, *,
           also: tuple[AssertionResult, ...] = (),
           security: SecurityRecord | Mapping[str, Any] | None = None,
           snapshot: Mapping[str, Any] | None = None) -> CaseResult:
    """The result of a case that ran: one run as it went; ``repeat`` runs pass when at least
    ``minPassRate`` of them pass, and then show the first run that did not pass. ``also``
    are checks of the whole case (the probe pack's canary and secrets, read from every
    run): one that fails fails a case that would have passed. ``security`` may come as
    plain data (:func:`~.redteam.leak_checks` gives it so)."""
    result = _judge_advisory(identity, plan, run, _decided(identity, plan, run))
    if snapshot is not None:
        result = replace(result, snapshot=from_data(SnapshotRecord, snapshot))
    if not also and security is None:
        return result
    failed = any(a.passed is False for a in also)
    if isinstance(security, Mapping):
        security = from_data(SecurityRecord, security)
    return replace(result, assertions=(*result.assertions, *also), security=security,
                   outcome=FAILED if failed and result.outcome == PASSED else result.outcome,
                   advisory=None if failed else result.advisory)


def _trusting(run: CaseRun) -> CaseRun:
    """``run`` with every judge failure counted, advisory or not."""
    def counted(assertions: tuple[AssertionResult, ...]) -> tuple[AssertionResult, ...]:
        return tuple(replace(a, advisory=False) if a.advisory else a for a in assertions)

    return replace(run, attempts=tuple(
        replace(a, assertions=counted(a.assertions),
                turns=tuple(replace(t, assertions=counted(t.assertions)) for t in a.turns))
        for a in run.attempts))


def _judge_advisory(identity: CaseIdentity, plan: CasePlan, run: CaseRun, counted: CaseResult
                    ) -> CaseResult:
    """A case its unaligned judge failed (docs/contract.md#judge-alignment): when it passes
    only because that judge's failures are not counted, it did not pass — its result is the
    one the judge's grades give, marked ``advisory`` with the reason, which keeps it from
    failing the run (:func:`blocks`). A case that did not pass without them is ``counted``
    as it is: its outcome and reason are the gate's."""
    if plan.judge_advisory is None or not any(
            a.advisory for at in run.attempts
            for a in (*at.assertions, *(x for t in at.turns for x in t.assertions))):
        return counted
    if counted.outcome != PASSED:
        return counted  # the gate's outcome and reason: another check did not pass
    judged = _decided(identity, plan, _trusting(run))
    if judged.outcome == PASSED:
        return judged  # the runs as the judge graded them (a repeat's rate held even so)
    return replace(judged, advisory=plan.judge_advisory)


def _decided(identity: CaseIdentity, plan: CasePlan, run: CaseRun) -> CaseResult:
    expects_error = bool(plan.case.expect and plan.case.expect.error_contains is not None)
    outcomes = [_attempt_outcome(a, expects_error) for a in run.attempts]
    if len(outcomes) == 1 and plan.sequential is None:  # decided at run 1: still reported
        return _single(identity, plan, run.attempts[0], outcomes[0])
    passed = outcomes.count(PASSED)
    outcome, decision, decided_at = noise.repeat_outcome(plan, outcomes)
    repeat = noise.repeat_record(plan, outcomes, [a.call.text for a in run.attempts],
                                 decision, decided_at)
    across = noise.across_runs(plan, repeat)
    if any(a.passed is False for a in across) and outcome in (PASSED, INCONCLUSIVE):
        outcome = FAILED  # the runs' outputs broke deterministic / stable
    shown = len(outcomes) - 1
    if outcome != PASSED:
        shown = next((i for i, o in enumerate(outcomes) if o != PASSED), shown)
    latencies = [a.call.latency_ms for a in run.attempts if a.call.latency_ms is not None]
    scores = [a.judge_score for a in run.attempts if a.judge_score is not None]
    base = _single(identity, plan, run.attempts[shown], outcome)
    usage: Usage | None = None  # what the case cost is what every run cost
    for part in (_model_kept(a.call.usage) for a in run.attempts if a.call.usage is not None):
        usage = part if usage is None else usage + part
    return CaseResult(**{
        **base.__dict__,
        "usage": usage,
        "latency_ms": sum(latencies) / len(latencies) if latencies else None,
        "judge_score": sum(scores) / len(scores) if scores else None,
        "runs": tuple(_run_record(a, o) for a, o in zip(run.attempts, outcomes, strict=True)),
        "passed_runs": passed, "min_pass_rate": plan.min_pass_rate,
        "assertions": (*base.assertions, *across), "repeat": repeat,
        **_retry_fields(run.attempts),
        "judges": tuple(replace(r, run=number) for number, a in enumerate(run.attempts, 1)
                        for r in a.judges)})


def setup_error(identity: CaseIdentity, plan_limits: tuple[float, str], error: ErrorInfo
                ) -> CaseResult:
    """A case that could not start (its entry point could not be bound, …)."""
    timeout_s, source = plan_limits
    return CaseResult(nodeid=identity.nodeid, case_id=identity.case_id, line=identity.line,
                      suite=identity.suite, variant=identity.variant, outcome=ERROR,
                      error=error, timeout_s=timeout_s, timeout_source=source)


def escaped(identity: CaseIdentity, plan_limits: tuple[float, str], exc: BaseException
            ) -> CaseResult:
    """A case whose run raised past the plugin's own handling (a bug, or an answer no
    parser foresaw): an error with the exception as its reason, so the case still reaches
    every report (docs/contract.md#outcomes) instead of vanishing from them."""
    try:
        trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    except Exception:  # a broken __str__ breaks the formatting too
        trace = ""
    timeout_s, source = plan_limits
    return CaseResult(nodeid=identity.nodeid, case_id=identity.case_id, line=identity.line,
                      suite=identity.suite, variant=identity.variant, outcome=ERROR,
                      timeout_s=timeout_s, timeout_source=source,
                      error=ErrorInfo(type(exc).__name__,
                                      "the case's run raised an exception the plugin did not "
                                      f"handle: {described(exc)}", trace[-8000:]))


def crashed(identity: CaseIdentity, message: str) -> CaseResult:
    """A case whose xdist worker died while running it: an error, never silently missing."""
    return CaseResult(nodeid=identity.nodeid, case_id=identity.case_id, line=identity.line,
                      suite=identity.suite, variant=identity.variant, outcome=ERROR,
                      error=ErrorInfo(WORKER_CRASH, message))


#: Why a failed case of a variant does not fail the run by itself under
#: ``--elizon-fail-on-regression``: its comparison with the reference gates it
#: (docs/contract.md#variant-comparison).
GATED_BY_COMPARISON = ("variant {variant} is gated by its comparison with the reference "
                       "(--elizon-fail-on-regression)")


def blocks(result: CaseResult) -> bool:
    """Whether the case fails the run: anything but a pass in a must-pass suite (unless
    only an unaligned judge failed it: ``advisory``); in an advisory suite only an error
    (the case could not run at all: a binding or a crash), as pytest's exit status says too;
    and in any suite a case whose fixture's teardown raised (pytest's ERROR at teardown)."""
    if result.teardown_error is not None:
        return True  # its outcome stays; pytest counts the error and fails the run
    if result.outcome == PASSED or inconclusive_passes(result):
        return False
    if result.advisory is not None and result.outcome != ERROR:
        return False  # only an unaligned judge failed it: docs/contract.md#judge-alignment
    return not result.suite.advisory or result.outcome == ERROR


def inconclusive_passes(result: CaseResult) -> bool:
    """An inconclusive case that passes its gate by ini ``elizon_inconclusive = pass``
    (docs/contract.md#repeat-runs): still counted as inconclusive, never as a failure."""
    return result.outcome == INCONCLUSIVE and result.repeat is not None \
        and bool(result.repeat.inconclusive_passes)
