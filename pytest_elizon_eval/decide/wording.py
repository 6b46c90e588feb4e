"""The words of a case's result: the one-line :func:`reason` every reporter prints, the
full :func:`failure_message`, and the usage and conversation lines they share.

:mod:`.outcomes` decides; this module only describes what it decided (and re-exported
from there, so importers need not know the split). No pytest import here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from ..reporting.usage_text import dollars
from ..run.assertions import calls_text
from ..run.calls import Usage
from ..text import cap, defuse, visible
from . import wording_noise as noise_words
from .results_data import (
    ERROR,
    FAILED,
    INCONCLUSIVE,
    PASSED,
    TIMEOUT,
    CaseResult,
    RunRecord,
    ToolCallRecord,
)

__all__ = ["ADVISORY_PREFIX", "OUTPUT_SHOWN", "REASON_PART", "conversation_text",
           "display_reason", "failure_message", "outcome_name", "reason", "usage_text"]

#: Characters of output shown in a failure message.
OUTPUT_SHOWN = 2000
#: Characters of each part of a one-line reason.
REASON_PART = 200
#: Characters of the input a failure message shows.
INPUT_SHOWN = 300
#: What an outcome that does not fail the run is named with (``advisory_failed``).
ADVISORY_PREFIX = "advisory_"


def case_name(result: CaseResult) -> str:
    """The case as reports name it: its id, and the variant it ran under as its node id
    writes it, ``id[variant]`` (docs/format.md#variants)."""
    return result.case_id if result.variant is None else f"{result.case_id}[{result.variant}]"


def outcome_name(result: CaseResult) -> str:
    """The case's outcome as every report names it, as pytest counts it
    (docs/contract.md#outcomes): a failed, timed-out or inconclusive case of an advisory
    suite, or one only an unaligned judge failed, is ``advisory_failed``
    (``advisory_timeout``, ``advisory_inconclusive``); any other is its outcome."""
    if result.outcome in (FAILED, TIMEOUT, INCONCLUSIVE) \
            and (result.suite.advisory or result.advisory is not None):
        return ADVISORY_PREFIX + result.outcome
    return result.outcome


# -- reasons --------------------------------------------------------------------------------

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
    if result.runs and result.repeat is not None:
        record = result.repeat
        words = "".join(f"; {w}" for w in noise_words.tags(record))
        rate = noise_words.interval_text(record).partition(" passed (")[2].rstrip(")")
        head = f"{record.passed}/{record.runs} runs passed ({rate}{words})"
        if result.outcome == INCONCLUSIVE:
            head = f"inconclusive after {record.runs} of max {record.max_runs} runs: {head}"
        failing = any(r.outcome != PASSED for r in result.runs)
        if failing:
            text = f"{head}; first that did not: {text}"
        else:  # every run passed: a check of the runs together (deterministic, stable) did not
            text = head if result.outcome in (PASSED, INCONCLUSIVE) \
                else f"{head}; a check of the whole case did not: {text}"
    elif result.runs:
        first = "first that did not: " if (result.passed_runs or 0) < len(result.runs) \
            else "a check of the whole case did not: "
        text = f"{result.passed_runs}/{len(result.runs)} runs passed; {first}" + text
    return text.replace("\r", " ").replace("\n", " ")


def display_reason(result: CaseResult) -> str:
    """:func:`reason`, safe to print on a terminal or in a CI log."""
    return defuse(visible(reason(result), keep_newlines=False))


def usage_text(usage: Usage) -> str:
    """``1,234 tokens (1,000 in, 234 out), $0.00123`` — what is known of it."""
    parts = []
    tokens_in, tokens_out = usage.input_tokens, usage.output_tokens
    if tokens_in is not None or tokens_out is not None:
        parts.append(f"{(tokens_in or 0) + (tokens_out or 0):,} tokens ({tokens_in or 0:,} in, "
                     f"{tokens_out or 0:,} out)")
    cost = usage.cost_usd
    parts.append(dollars(cost, "cost unknown"))  # as the -v line: never "$0.000000"
    if usage.model:
        parts.append(f"model {usage.model}")
    return visible(", ".join(parts), keep_newlines=False)


def _calls_line(calls: Sequence[ToolCallRecord], total: int | None = None) -> str:
    """The kept calls on one line, led by how many there were when not all were kept
    (a case's budget, docs/contract.md#results-json)."""
    text = calls_text([c.call for c in calls])
    if total is not None and total > len(calls):
        return f"{total:,} calls, the first {len(calls):,} kept — {text}"
    return text


def _turn_lines(result: CaseResult) -> list[str]:
    """Each turn of a conversation: what was said, the answer, and its checks."""
    lines: list[str] = []
    for turn in result.turns:
        mark = {PASSED: "✓", FAILED: "✗", TIMEOUT: "⧗"}.get(turn.outcome, "?")
        said = turn.input if isinstance(turn.input, str) else json.dumps(turn.input)
        lines.append(f"  turn {turn.turn} {mark} {turn.outcome}: "
                     f"{visible(cap(said, 200)[0], keep_newlines=False)}")
        if turn.output is not None:
            lines.append("      answer: " + visible(cap(turn.output, 300)[0],
                                                     keep_newlines=False))
        if turn.error:
            lines.append("      raised: " + visible(f"{turn.error.type}: {turn.error.message}",
                                                     keep_newlines=False)[:300])
        if turn.tool_calls:
            lines.append("      tool " + visible(_calls_line(turn.tool_calls,
                                                              turn.tool_calls_total),
                                                  keep_newlines=False))
        for a in turn.assertions:
            check = {True: "✓", False: "✗", None: "·"}[a.passed]
            lines.append(f"      {check} {a.name}: "
                         + visible(f"{a.expected} — {a.found}", keep_newlines=False))
    if result.turns and result.failed_turn is None:
        lines.append("the conversation's own checks:")
    return lines


def conversation_text(result: CaseResult) -> str:
    """A conversation's turns as lines of text, made visible (for any report)."""
    return "\n".join(_turn_lines(result))


def _run_line(index: int, run: RunRecord) -> str:
    failed = [f"✗ {a.name}" for a in run.assertions if a.passed is False]
    if run.error:
        failed.append(f"raised {run.error.type}")
    latency = "" if run.latency_ms is None else f" in {run.latency_ms:.1f} ms"
    return f"  run {index}: {run.outcome}{latency}" + (f" — {', '.join(failed)}"
                                                        if failed else "")


def _runs_lines(result: CaseResult) -> list[str]:
    if not result.runs:
        return []
    n = len(result.runs)
    lines = [f"runs: {result.passed_runs}/{n} passed, minPassRate {result.min_pass_rate:g} "
             f"needs {math.ceil((result.min_pass_rate or 0) * n - 1e-9)}"]
    if result.repeat is not None and result.repeat.rule == "sequential":
        lines = [f"runs: {result.passed_runs}/{n} passed"]  # the rule decides, not a count
    if result.repeat is not None:  # before the runs, which follow their count
        lines.insert(0, "pass rate: " + noise_words.repeat_text(result.repeat))
    lines.extend(_run_line(index, run) for index, run in enumerate(result.runs, 1))
    if any(run.outcome != PASSED for run in result.runs):
        lines.append("the first run that did not pass:")
    else:
        lines.append("every run passed; a check of the whole case did not:")
    return lines


def _input_line(result: CaseResult) -> list[str]:
    """What the entry point was given, as Python shows it and shortened: a mapping passed
    whole to ``answer(message)`` reads as the dict it is (docs/contract.md#failure-message).
    A conversation's turns each show their own."""
    if result.input is None or result.turns:
        return []
    shown, cut = cap(repr(result.input), INPUT_SHOWN)
    return [f"input: {visible(shown, keep_newlines=False)}{'…' if cut else ''}"]


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in text.splitlines()) if text else prefix


def failure_message(result: CaseResult) -> str:
    """The full message: the case, every assertion ✓/✗, latency, and the output — made
    visible and defused, so it is safe on any terminal and in any CI log."""
    where = f"{result.suite.gate} suite {result.suite.path}:{result.line}"
    name = visible(result.case_id, keep_newlines=False)
    if result.variant is not None:  # which of its runs: docs/format.md#variants
        name = f"{name}[{result.variant}]"
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
    elif result.outcome == INCONCLUSIVE:
        head = (f"case {name!r} is inconclusive ({where}): its runs could not tell its pass "
                "rate from minPassRate within max runs")
    else:
        head = f"case {name!r} failed{turn} ({where})"
    if result.advisory is not None:  # a must-pass case only an unaligned judge failed
        head += (f"; counted as advisory, it does not fail the run: "
                 f"{visible(result.advisory, keep_newlines=False)}")
    lines = [head, *_input_line(result), *_runs_lines(result), *_turn_lines(result)]
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
    if result.snapshot is not None and result.snapshot.diff:
        lines.append("snapshot diff (- pinned, + this run):")
        lines.append(_indent(visible(result.snapshot.diff), "  "))
    if result.tool_calls and not result.turns:
        lines.append("tool " + visible(_calls_line(result.tool_calls, result.tool_calls_total),
                                       keep_newlines=False))
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
