"""A case's outcome: decided here, once, and described here, once.

Owns the step from "the entry point answered and the checks said …" (a
:class:`~.running.CaseRun`) to what pytest and every report show
(docs/contract.md#outcomes): the outcome (passed / failed / timeout /
error), including repeats (``minPassRate``), errors an assertion expected
(``errorContains``), setup errors and crashed xdist workers; the one-line
:func:`reason` every reporter prints; the full :func:`failure_message`; and
the terminal category of a report (``timeout`` ``T``, ``advisory_failed``
``a``, ``advisory_timeout`` ``t``), decided from the report's data alone so
the xdist controller can do it.

A :class:`CaseResult` converts to and from plain JSON-like data in which
every string can be encoded as UTF-8 (so it can cross xdist); that data
rides on the test report as the attribute :data:`REPORT_ATTR`. No pytest
import here.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .assertions import AssertionResult, calls_text
from .calls import EntryCall, ErrorInfo, ToolCall, Usage

if TYPE_CHECKING:  # types only: reports and elizon-eval read results without the run path
    from .running import Attempt, CasePlan, CaseRun, TurnResult
from .text import cap, defuse, visible

__all__ = [
    "ERROR",
    "FAILED",
    "OUTPUT_KEPT",
    "PASSED",
    "REPORT_ATTR",
    "TIMEOUT",
    "CaseIdentity",
    "CaseResult",
    "SuiteInfo",
    "annotate",
    "blocks",
    "conversation_text",
    "crashed",
    "decide",
    "described",
    "display_reason",
    "encodable",
    "escaped",
    "failure_message",
    "reason",
    "setup_error",
    "teststatus",
]

PASSED, FAILED, TIMEOUT, ERROR = "passed", "failed", "timeout", "error"
#: The report attribute that carries a case's result as plain data across xdist.
REPORT_ATTR = "elizon"
#: Characters of output kept on a report (the true length is kept too).
OUTPUT_KEPT = 64 * 1024
#: Characters of output shown in a failure message.
OUTPUT_SHOWN = 2000
#: Characters of each run's output kept in a repeat case's run list.
RUN_OUTPUT_KEPT = 4096
#: Characters of each part of a one-line reason.
REASON_PART = 200
#: The error type of a case whose xdist worker died.
WORKER_CRASH = "WorkerCrash"

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape_surrogate(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def encodable(value: Any) -> Any:
    """A copy of ``value`` as plain JSON data with every lone surrogate in its strings
    written as a visible ``\\udXXX``: such a string cannot be encoded as UTF-8, so it could
    not cross to the xdist controller (the case would vanish from the run) nor be written to
    a report. What JSON cannot hold (YAML gives dates in an input) becomes its text."""
    try:  # the common case, at C speed: nothing to escape, so a JSON round trip copies it
        text = json.dumps(value, ensure_ascii=False, default=str)
        text.encode("utf-8")
    except (UnicodeEncodeError, TypeError, ValueError):
        return json.loads(json.dumps(_escaped(value), default=str))
    return json.loads(text)


def _escaped(value: Any) -> Any:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return _LONE_SURROGATE.sub(_escape_surrogate, value)
    if isinstance(value, dict):
        return {_escaped(k): _escaped(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_escaped(v) for v in value]
    return value


def _tool_call_data(call: ToolCall) -> dict[str, Any]:
    """A tool call as reports keep it: an argument, result or error longer than
    :data:`OUTPUT_KEPT` characters (as JSON text) keeps its first ones as text, and
    ``<part>_length`` says how long it was — as an output does."""
    data = call.to_data()
    for part in ("arguments", "result", "error"):
        value = data[part]
        if value is None or isinstance(value, (bool, int, float)):
            continue
        try:
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                                   default=str)
        except (ValueError, RecursionError):  # not JSON data: kept as its length only
            data[part], data[f"{part}_length"] = "<not representable as JSON>", 0
            continue
        if len(text) > OUTPUT_KEPT:
            data[part], data[f"{part}_length"] = text[:OUTPUT_KEPT], len(text)
    return data


def described(exc: BaseException) -> str:
    """``exc``'s message, even when its ``__str__`` raises."""
    try:
        return str(exc)
    except Exception:  # the message itself is broken: say so rather than lose the case
        return f"<unprintable {type(exc).__name__}>"


@dataclass(frozen=True)
class SuiteInfo:
    """What every case of a suite shares, carried with each case so reports need no files."""

    path: str
    package: str
    gate: str
    #: Effective: gate advisory and not overridden by ``--elizon-strict``.
    advisory: bool
    baseline: dict[str, float] = field(default_factory=dict)
    sha256: str = ""
    #: How cassettes name the suite (see :func:`~.cassette.suite_key`); not in report data.
    key: str = ""

    def to_data(self) -> dict[str, Any]:
        return dict(self._data)

    @functools.cached_property
    def _data(self) -> dict[str, Any]:  # the same for every case of the suite: built once
        data: dict[str, Any] = encodable({
            "path": self.path, "package": self.package, "gate": self.gate,
            "advisory": self.advisory, "baseline": dict(self.baseline), "sha256": self.sha256})
        return data

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> SuiteInfo:
        return cls(data["path"], data["package"], data["gate"], data["advisory"],
                   dict(data.get("baseline") or {}), data.get("sha256", ""))


@dataclass(frozen=True)
class CaseIdentity:
    """Who a case is: joined to what happened when report data is built."""

    nodeid: str
    case_id: str
    #: 1-based line of the case's ``- id:`` in the suite file.
    line: int
    suite: SuiteInfo


@dataclass(frozen=True)
class CaseResult:
    """Everything known about one case of the run, as reports need it."""

    nodeid: str
    case_id: str
    line: int
    suite: SuiteInfo
    outcome: str
    assertions: tuple[AssertionResult, ...] = ()
    latency_ms: float | None = None
    output: str | None = None
    output_length: int = 0
    error: ErrorInfo | None = None
    timeout_s: float = 0.0
    timeout_source: str = ""
    entry: str = ""
    judge_score: float | None = None
    judge_reasoning: str | None = None
    #: Every run of a ``repeat`` case, as plain data; empty for a single run.
    runs: tuple[dict[str, Any], ...] = ()
    passed_runs: int | None = None
    min_pass_rate: float | None = None
    #: Answered from a cassette: the latency is the recorded one.
    replayed: bool = False
    #: The case's ``input`` as plain JSON-like data (for reports that show it), or None.
    input: Any = None
    #: The tools the entry point called (every turn's, for a conversation), as plain data.
    tool_calls: tuple[dict[str, Any], ...] = ()
    #: Tokens and cost of the entry point's answer(s), when reported; the judge's apart.
    usage: dict[str, Any] | None = None
    judge_usage: dict[str, Any] | None = None
    #: A conversation's turns as they went (input, answer, checks), and the 1-based number
    #: of the turn that did not pass, if one did.
    turns: tuple[dict[str, Any], ...] = ()
    failed_turn: int | None = None
    #: How many turns the conversation has (those that ran are in ``turns``); 0 for none.
    turn_count: int = 0
    #: The canary and secret checks (docs/contract.md#security): what leaked, masked, and
    #: for a probe its category, severity and where the manifest included it; or None.
    security: dict[str, Any] | None = None
    #: Calls made to the entry point (1 + its retries; every run's and turn's), retries
    #: after a refusal (the judge's included), seconds spent waiting between them, and
    #: whether a call was refused with a rate limit (docs/contract.md#retries).
    attempts: int = 1
    retries: int = 0
    waited_s: float = 0.0
    rate_limited: bool = False

    @property
    def crashed(self) -> bool:
        """The xdist worker running the case died (nothing the case did was seen)."""
        return self.error is not None and self.error.type == WORKER_CRASH

    @property
    def expected_error(self) -> bool:
        """The error, if any, is what an ``errorContains`` assertion looked for."""
        return any(a.name == "errorContains" for a in self.assertions)

    def to_data(self) -> dict[str, Any]:
        """Plain data; every string encodable (it crosses xdist and goes into files)."""
        data = {
            "nodeid": self.nodeid, "case_id": self.case_id, "line": self.line,
            "outcome": self.outcome,
            "assertions": [a.to_data() for a in self.assertions],
            "latency_ms": self.latency_ms, "output": self.output,
            "output_length": self.output_length,
            "error": self.error.to_data() if self.error else None,
            "timeout_s": self.timeout_s, "timeout_source": self.timeout_source,
            "entry": self.entry, "judge_score": self.judge_score,
            "judge_reasoning": self.judge_reasoning, "runs": list(self.runs),
            "passed_runs": self.passed_runs, "min_pass_rate": self.min_pass_rate,
            "replayed": self.replayed, "input": self.input,
            "tool_calls": list(self.tool_calls), "usage": self.usage,
            "judge_usage": self.judge_usage, "turns": list(self.turns),
            "failed_turn": self.failed_turn, "turn_count": self.turn_count,
            "attempts": self.attempts,
            "retries": self.retries, "waited_s": self.waited_s,
            "rate_limited": self.rate_limited,
        }
        if self.security is not None:  # only where checked: other results keep their shape
            data["security"] = self.security
        out: dict[str, Any] = encodable(data)
        out["suite"] = self.suite.to_data()
        return out

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> CaseResult:
        return cls(
            nodeid=data["nodeid"], case_id=data["case_id"], line=data["line"],
            suite=SuiteInfo.from_data(data["suite"]), outcome=data["outcome"],
            assertions=tuple(AssertionResult.from_data(a) for a in data["assertions"]),
            latency_ms=data["latency_ms"], output=data["output"],
            output_length=data["output_length"],
            error=ErrorInfo.from_data(data["error"]) if data["error"] else None,
            timeout_s=data["timeout_s"], timeout_source=data["timeout_source"],
            entry=data["entry"], judge_score=data.get("judge_score"),
            judge_reasoning=data.get("judge_reasoning"), runs=tuple(data.get("runs") or ()),
            passed_runs=data.get("passed_runs"), min_pass_rate=data.get("min_pass_rate"),
            replayed=bool(data.get("replayed")), input=data.get("input"),
            tool_calls=tuple(data.get("tool_calls") or ()), usage=data.get("usage"),
            judge_usage=data.get("judge_usage"), turns=tuple(data.get("turns") or ()),
            failed_turn=data.get("failed_turn"), turn_count=data.get("turn_count", 0),
            security=data.get("security"),
            attempts=data.get("attempts", 1), retries=data.get("retries", 0),
            waited_s=data.get("waited_s", 0.0), rate_limited=bool(data.get("rate_limited")),
        )


# -- deciding -------------------------------------------------------------------------------

def _call_outcome(call: EntryCall, assertions: tuple[AssertionResult, ...],
                  expects_error: bool) -> str:
    """An error fails the run unless ``errorContains`` expected one; an assertion that could
    not be checked (there was no output) fails nothing by itself."""
    if call.timed_out:
        return TIMEOUT
    if any(a.passed is False for a in assertions) or (call.error and not expects_error):
        return FAILED
    return PASSED


def _failed_turn(attempt: Attempt, expects_error: bool) -> int | None:
    """The 1-based turn at which a conversation stopped without passing, if it did."""
    for number, turn in enumerate(attempt.turns, 1):
        from .running import turn_failed  # loaded already wherever cases run

        if turn_failed(turn, expects_error):
            return number
    return None


def _attempt_outcome(attempt: Attempt, expects_error: bool) -> str:
    failed = _failed_turn(attempt, expects_error)
    if failed is not None:
        turn = attempt.turns[failed - 1]
        return _call_outcome(turn.call, turn.assertions, expects_error)
    return _call_outcome(attempt.call, attempt.assertions, expects_error)


def _usage_data(call: EntryCall) -> dict[str, Any] | None:
    return call.usage.to_data() if call.usage else None


def _turn_data(number: int, turn: TurnResult, expects_error: bool) -> dict[str, Any]:
    call = turn.call
    return {
        "turn": number, "input": turn.input,
        "outcome": _call_outcome(call, turn.assertions, expects_error),
        "output": cap(call.text, RUN_OUTPUT_KEPT)[0] if call.text is not None else None,
        "output_length": len(call.text) if call.text is not None else 0,
        "latency_ms": call.latency_ms, "assertions": [a.to_data() for a in turn.assertions],
        "error": call.error.to_data() if call.error else None,
        "tool_calls": [_tool_call_data(c) for c in call.tool_calls],
        "usage": _usage_data(call),
        "judge_score": turn.judge_score,
    }


def _identity_fields(identity: CaseIdentity, plan: CasePlan) -> dict[str, Any]:
    return {"nodeid": identity.nodeid, "case_id": identity.case_id, "line": identity.line,
            "suite": identity.suite, "timeout_s": plan.timeout_s,
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
    return CaseResult(
        tool_calls=tuple(_tool_call_data(c) for c in call.tool_calls), usage=_usage_data(call),
        turns=tuple(_turn_data(n, t, expects_error) for n, t in enumerate(attempt.turns, 1)),
        failed_turn=failed,
        **_identity_fields(identity, plan), outcome=outcome, assertions=assertions,
        latency_ms=call.latency_ms, output=output,
        output_length=len(call.text) if call.text is not None else 0, error=call.error,
        judge_score=attempt.judge_score, judge_reasoning=attempt.judge_reasoning,
        judge_usage=attempt.judge_usage.to_data() if attempt.judge_usage else None,
        replayed=call.replayed, **_retry_fields([attempt]))


def _run_data(attempt: Attempt, outcome: str) -> dict[str, Any]:
    call = attempt.call
    output = cap(call.text, RUN_OUTPUT_KEPT)[0] if call.text is not None else None
    return {"outcome": outcome, "latency_ms": call.latency_ms,
            "assertions": [a.to_data() for a in attempt.assertions], "output": output,
            "error": call.error.to_data() if call.error else None,
            "judge_score": attempt.judge_score}


def decide(identity: CaseIdentity, plan: CasePlan, run: CaseRun, *,
           also: tuple[AssertionResult, ...] = (), security: dict[str, Any] | None = None
           ) -> CaseResult:
    """The result of a case that ran: one run as it went; ``repeat`` runs pass when at least
    ``minPassRate`` of them pass, and then show the first run that did not pass. ``also``
    are checks of the whole case (the probe pack's canary and secrets, read from every
    run): one that fails fails a case that would have passed."""
    result = _decided(identity, plan, run)
    if not also and security is None:
        return result
    failed = any(a.passed is False for a in also)
    return replace(result, assertions=(*result.assertions, *also), security=security,
                   outcome=FAILED if failed and result.outcome == PASSED else result.outcome)


def _decided(identity: CaseIdentity, plan: CasePlan, run: CaseRun) -> CaseResult:
    expects_error = bool(plan.case.expect and plan.case.expect.error_contains is not None)
    outcomes = [_attempt_outcome(a, expects_error) for a in run.attempts]
    if len(outcomes) == 1:
        return _single(identity, plan, run.attempts[0], outcomes[0])
    passed = outcomes.count(PASSED)
    if passed / len(outcomes) >= plan.min_pass_rate - 1e-9:  # 3/5 meets 0.6 despite rounding
        outcome = PASSED
    else:
        outcome = TIMEOUT if all(o == TIMEOUT for o in outcomes) else FAILED
    shown = len(outcomes) - 1
    if outcome != PASSED:
        shown = next(i for i, o in enumerate(outcomes) if o != PASSED)
    latencies = [a.call.latency_ms for a in run.attempts if a.call.latency_ms is not None]
    scores = [a.judge_score for a in run.attempts if a.judge_score is not None]
    base = _single(identity, plan, run.attempts[shown], outcome)
    usage: Usage | None = None  # what the case cost is what every run cost
    for part in (a.call.usage for a in run.attempts if a.call.usage is not None):
        usage = part if usage is None else usage + part
    return CaseResult(**{
        **base.__dict__,
        "usage": usage.to_data() if usage else None,
        "latency_ms": sum(latencies) / len(latencies) if latencies else None,
        "judge_score": sum(scores) / len(scores) if scores else None,
        "runs": tuple(_run_data(a, o) for a, o in zip(run.attempts, outcomes, strict=True)),
        "passed_runs": passed, "min_pass_rate": plan.min_pass_rate,
        **_retry_fields(run.attempts)})


def setup_error(identity: CaseIdentity, plan_limits: tuple[float, str], error: ErrorInfo
                ) -> CaseResult:
    """A case that could not start (its entry point could not be bound, …)."""
    timeout_s, source = plan_limits
    return CaseResult(nodeid=identity.nodeid, case_id=identity.case_id, line=identity.line,
                      suite=identity.suite, outcome=ERROR, error=error, timeout_s=timeout_s,
                      timeout_source=source)


def escaped(identity: CaseIdentity, plan_limits: tuple[float, str], exc: BaseException
            ) -> CaseResult:
    """A case whose run raised past the plugin's own handling (a bug, or an answer no
    parser foresaw): an error with the exception as its reason, so the case still reaches
    every report (docs/contract.md#outcomes) instead of vanishing from them."""
    import traceback  # only for the rare escaped exception

    try:
        trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    except Exception:  # a broken __str__ breaks the formatting too
        trace = ""
    timeout_s, source = plan_limits
    return CaseResult(nodeid=identity.nodeid, case_id=identity.case_id, line=identity.line,
                      suite=identity.suite, outcome=ERROR, timeout_s=timeout_s,
                      timeout_source=source,
                      error=ErrorInfo(type(exc).__name__,
                                      "the case's run raised an exception the plugin did not "
                                      f"handle: {described(exc)}", trace[-8000:]))


def crashed(identity: CaseIdentity, message: str) -> CaseResult:
    """A case whose xdist worker died while running it: an error, never silently missing."""
    return CaseResult(nodeid=identity.nodeid, case_id=identity.case_id, line=identity.line,
                      suite=identity.suite, outcome=ERROR,
                      error=ErrorInfo(WORKER_CRASH, message))


def blocks(result: CaseResult) -> bool:
    """Whether the case fails the run: anything but a pass in a must-pass suite; in an
    advisory suite only an error (the case could not run at all: a binding or a crash),
    as pytest's exit status says too."""
    if result.outcome == PASSED:
        return False
    return not result.suite.advisory or result.outcome == ERROR


# -- describing -----------------------------------------------------------------------------

def _first_line(text: str) -> str:
    return text.splitlines()[0] if text else ""


def _single_reason(result: CaseResult, limit: int) -> str:
    if result.outcome == TIMEOUT:
        tried = f", after {result.attempts} attempts" if result.retries else ""
        return f"no answer within {result.timeout_s:g} s ({result.timeout_source}{tried})"
    if result.crashed:
        assert result.error is not None
        return f"crashed: {cap(_first_line(result.error.message), limit)[0]}"
    if result.error is not None and not result.expected_error:
        return cap(_first_line(result.error.text) or result.error.type, limit)[0]
    failed = [f"✗ {a.name}: {cap(a.found, limit)[0]}"
              for a in result.assertions if a.passed is False]
    return "; ".join(failed) or f"case {result.case_id} did not pass"


def _turns_of(result: CaseResult) -> int:
    """The conversation's length, not only the turns that ran before it stopped."""
    return max(result.turn_count, len(result.turns))


def reason(result: CaseResult, limit: int = REASON_PART) -> str:
    """Why a case did not pass, in one line of raw text (each reporter escapes it for its
    medium); each part at most ``limit`` characters."""
    text = _single_reason(result, limit)
    if result.failed_turn is not None:
        text = f"turn {result.failed_turn} of {_turns_of(result)}: {text}"
    if result.runs:
        text = (f"{result.passed_runs}/{len(result.runs)} runs passed; first that did not: "
                + text)
    return text.replace("\r", " ").replace("\n", " ")


def display_reason(result: CaseResult) -> str:
    """:func:`reason`, safe to print on a terminal or in a CI log."""
    return defuse(visible(reason(result), keep_newlines=False))


def usage_text(usage: Mapping[str, Any]) -> str:
    """``1,234 tokens (1,000 in, 234 out), $0.00123`` — what is known of it."""
    parts = []
    tokens_in, tokens_out = usage.get("input_tokens"), usage.get("output_tokens")
    if tokens_in is not None or tokens_out is not None:
        parts.append(f"{(tokens_in or 0) + (tokens_out or 0):,} tokens ({tokens_in or 0:,} in, "
                     f"{tokens_out or 0:,} out)")
    cost = usage.get("cost_usd")
    parts.append(f"${cost:.6f}" if cost is not None else "cost unknown")
    if usage.get("model"):
        parts.append(f"model {usage['model']}")
    return visible(", ".join(parts), keep_newlines=False)


def _calls_line(calls: Sequence[Mapping[str, Any]]) -> str:
    return calls_text([ToolCall.from_data(c) for c in calls])


def _turn_lines(result: CaseResult) -> list[str]:
    """Each turn of a conversation: what was said, the answer, and its checks."""
    lines: list[str] = []
    for turn in result.turns:
        mark = {PASSED: "✓", FAILED: "✗", TIMEOUT: "⧗"}.get(turn["outcome"], "?")
        said = turn["input"] if isinstance(turn["input"], str) else json.dumps(turn["input"])
        lines.append(f"  turn {turn['turn']} {mark} {turn['outcome']}: "
                     f"{visible(cap(said, 200)[0], keep_newlines=False)}")
        if turn["output"] is not None:
            lines.append("      answer: " + visible(cap(turn["output"], 300)[0],
                                                     keep_newlines=False))
        if turn["error"]:
            error = turn["error"]
            lines.append("      raised: " + visible(f"{error['type']}: {error['message']}",
                                                     keep_newlines=False)[:300])
        if turn["tool_calls"]:
            lines.append("      tool " + visible(_calls_line(turn["tool_calls"]),
                                                  keep_newlines=False))
        for a in turn["assertions"]:
            check = {True: "✓", False: "✗", None: "·"}[a["passed"]]
            lines.append(f"      {check} {a['name']}: "
                         + visible(f"{a['expected']} — {a['found']}", keep_newlines=False))
    if result.turns and result.failed_turn is None:
        lines.append("the conversation's own checks:")
    return lines


def conversation_text(result: CaseResult) -> str:
    """A conversation's turns as lines of text, made visible (for any report)."""
    return "\n".join(_turn_lines(result))


def _run_line(index: int, run: Mapping[str, Any]) -> str:
    failed = [f"✗ {a['name']}" for a in run["assertions"] if a["passed"] is False]
    if run["error"]:
        failed.append(f"raised {run['error']['type']}")
    latency = "" if run["latency_ms"] is None else f" in {run['latency_ms']:.1f} ms"
    return f"  run {index}: {run['outcome']}{latency}" + (f" — {', '.join(failed)}"
                                                          if failed else "")


def _runs_lines(result: CaseResult) -> list[str]:
    if not result.runs:
        return []
    n = len(result.runs)
    lines = [f"runs: {result.passed_runs}/{n} passed, minPassRate {result.min_pass_rate:g} "
             f"needs {math.ceil((result.min_pass_rate or 0) * n - 1e-9)}"]
    lines.extend(_run_line(index, run) for index, run in enumerate(result.runs, 1))
    lines.append("the first run that did not pass:")
    return lines


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in text.splitlines()) if text else prefix


def failure_message(result: CaseResult) -> str:
    """The full message: the case, every assertion ✓/✗, latency, and the output — made
    visible and defused, so it is safe on any terminal and in any CI log."""
    where = f"{result.suite.gate} suite {result.suite.path}:{result.line}"
    name = visible(result.case_id, keep_newlines=False)
    turn = (f" at turn {result.failed_turn} of {_turns_of(result)}"
            if result.failed_turn is not None else "")
    if result.outcome == TIMEOUT and not result.runs and not result.turns:
        return defuse(f"case {name!r} timed out ({where}): no answer within "
                      f"{result.timeout_s:g} s ({result.timeout_source}); the call was "
                      "abandoned. A timeout is not an assertion failure.")
    if result.crashed:
        assert result.error is not None
        return defuse(visible(f"case {name!r} crashed ({where}): {result.error.message}"))
    if result.error is not None and result.outcome == ERROR:
        return defuse(visible(f"case {name!r} could not run ({where}):\n{result.error.text}"))
    if result.error is not None and result.outcome != TIMEOUT:
        head = (f"case {name!r} failed{turn} ({where}): the entry point raised "
                f"{visible(result.error.text, keep_newlines=False)}")
    elif result.outcome == TIMEOUT:
        head = (f"case {name!r} timed out{turn} ({where}): no answer within "
                f"{result.timeout_s:g} s ({result.timeout_source}); a timeout is not an "
                "assertion failure")
    else:
        head = f"case {name!r} failed{turn} ({where})"
    lines = [head, *_runs_lines(result), *_turn_lines(result)]
    if result.error is not None and result.error.traceback:
        lines.append(_indent(visible(result.error.traceback), "    "))
    for a in () if result.failed_turn is not None else result.assertions:  # shown per turn
        mark = {True: "✓", False: "✗", None: "·"}[a.passed]
        if a.passed is False:
            lines.append(f"  {mark} {a.name}")
            lines.append(f"      expected: {visible(a.expected, keep_newlines=False)}")
            lines.append(f"      found:    {visible(a.found, keep_newlines=False)}")
        else:
            lines.append(f"  {mark} {a.name}: {visible(a.expected, keep_newlines=False)} — "
                         f"{visible(a.found, keep_newlines=False)}")
    if not result.assertions and result.error is None:
        lines.append("  (no assertions: the case checks the run end to end)")
    if result.tool_calls and not result.turns:
        lines.append("tool " + visible(_calls_line(result.tool_calls), keep_newlines=False))
    if result.usage:
        lines.append(f"usage: {usage_text(result.usage)}")
    if result.latency_ms is not None:
        replayed = " (recorded latency, replayed from the cassette)" if result.replayed else ""
        mean = "mean " if result.runs else ""
        lines.append(f"latency: {mean}{result.latency_ms:.1f} ms{replayed}")
    if result.retries or result.rate_limited:
        limited = ", rate limited" if result.rate_limited else ""
        retries = f"{result.retries} {'retry' if result.retries == 1 else 'retries'}"
        lines.append(f"attempts: {result.attempts} ({retries}, "
                     f"{result.waited_s:.2f} s waiting{limited})")
    if result.output is not None:
        shown, cut = cap(result.output, OUTPUT_SHOWN)
        size = f"{result.output_length:,} chars"
        lines.append(f"output ({size}, first {len(shown):,} shown):" if cut
                     or result.output_length > len(result.output) else f"output ({size}):")
        lines.append(_indent(visible(shown), "  | "))
    return defuse("\n".join(lines))


# -- on the report ---------------------------------------------------------------------------

def annotate(report: Any, result: CaseResult, recording: Mapping[str, Any] | None = None
             ) -> None:
    """Put ``result`` on a pytest test report as plain data; apply the advisory gate: an
    advisory case that did not pass never fails the run, and its message is kept as a
    section of the passing report (where tools show a passed test's details)."""
    try:
        data = result.to_data()
    except Exception as exc:  # a value no serialiser foresaw: the case is still reported
        result = escaped(CaseIdentity(result.nodeid, result.case_id, result.line, result.suite),
                         (result.timeout_s, result.timeout_source), exc)
        data = result.to_data()
        report.outcome, report.longrepr = "failed", failure_message(result)
    else:
        if recording is not None:  # the controller writes the one cassette
            data["recording"] = encodable(recording)
    setattr(report, REPORT_ATTR, data)
    if result.outcome in (FAILED, TIMEOUT) and result.suite.advisory:
        report.outcome = "passed"
        report.sections.append(("elizon advisory " + result.outcome, failure_message(result)))


def teststatus(data: Mapping[str, Any], when: str) -> tuple[str, str, str] | None:
    """pytest's (category, letter, word) for a report carrying case data, if not the default.
    The word stays pytest's own (``FAILED``), so summary lines keep their shape."""
    if when != "call":
        return None
    outcome = data["outcome"]
    advisory = data["suite"]["advisory"]
    if outcome == TIMEOUT:
        return ("advisory_timeout", "t", "ADVISORY TIMEOUT") if advisory \
            else ("timeout", "T", "TIMEOUT")
    if outcome == FAILED and advisory:
        return "advisory_failed", "a", "ADVISORY FAILED"
    return None
