"""A case's outcome: the plain-data :class:`CaseResult`, its message and its category.

Owns the step from "the entry point answered and the assertions said …" to
what pytest and every report show: the outcome (passed / failed / timeout /
error), the SPEC §2 failure message, and the terminal category of a report
(``timeout`` ``T``, ``advisory_failed`` ``a``, ``advisory_timeout`` ``t``),
decided from the report's data alone so the xdist controller can do it.

A :class:`CaseResult` converts to and from plain JSON-like data; that data
rides on the test report as the attribute :data:`REPORT_ATTR`. No pytest
import here.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .assertions import AssertionResult
from .calling import EntryCall, ErrorInfo
from .text import cap, defuse, visible

__all__ = [
    "ERROR",
    "FAILED",
    "OUTPUT_KEPT",
    "PASSED",
    "REPORT_ATTR",
    "TIMEOUT",
    "CaseResult",
    "SuiteInfo",
    "failure_message",
    "grade",
    "run_data",
    "teststatus",
]

PASSED, FAILED, TIMEOUT, ERROR = "passed", "failed", "timeout", "error"
#: The report attribute that carries a case's result as plain data across xdist.
REPORT_ATTR = "elizon"
#: Characters of output kept on a report (the true length is kept too).
OUTPUT_KEPT = 64 * 1024
#: Characters of output shown in a failure message.
OUTPUT_SHOWN = 2000


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

    def to_data(self) -> dict[str, Any]:
        return dict(self._data)

    @functools.cached_property
    def _data(self) -> dict[str, Any]:  # the same for every case of the suite: built once
        return {"path": self.path, "package": self.package, "gate": self.gate,
                "advisory": self.advisory, "baseline": dict(self.baseline),
                "sha256": self.sha256}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> SuiteInfo:
        return cls(data["path"], data["package"], data["gate"], data["advisory"],
                   dict(data.get("baseline") or {}), data.get("sha256", ""))


@dataclass(frozen=True)
class CaseResult:
    """Everything known about one case of the run, as reports need it."""

    nodeid: str
    case_id: str
    #: 1-based line of the case's ``- id:`` in the suite file.
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
    #: Every run of a ``repeat`` case, as :func:`run_data`; empty for a single run.
    runs: tuple[dict[str, Any], ...] = ()
    passed_runs: int | None = None
    min_pass_rate: float | None = None
    #: Answered from a cassette: the latency is the recorded one.
    replayed: bool = False

    def to_data(self) -> dict[str, Any]:
        return {
            "nodeid": self.nodeid, "case_id": self.case_id, "line": self.line,
            "suite": self.suite.to_data(), "outcome": self.outcome,
            "assertions": [a.to_data() for a in self.assertions],
            "latency_ms": self.latency_ms, "output": self.output,
            "output_length": self.output_length,
            "error": self.error.to_data() if self.error else None,
            "timeout_s": self.timeout_s, "timeout_source": self.timeout_source,
            "entry": self.entry, "judge_score": self.judge_score,
            "judge_reasoning": self.judge_reasoning, "runs": list(self.runs),
            "passed_runs": self.passed_runs, "min_pass_rate": self.min_pass_rate,
            "replayed": self.replayed,
        }

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
            replayed=bool(data.get("replayed")),
        )


def grade(
    base: CaseResult,
    call: EntryCall,
    assertions: Sequence[AssertionResult],
    *,
    expects_error: bool = False,
    judge_score: float | None = None,
    judge_reasoning: str | None = None,
    replayed: bool = False,
) -> CaseResult:
    """The result of a case whose entry point was called (``base`` carries the identity).

    An error fails the case unless ``errorContains`` expected one; an assertion that could
    not be checked (there was no output) fails nothing by itself.
    """
    if call.timed_out:
        outcome = TIMEOUT
    elif any(a.passed is False for a in assertions) or (call.error and not expects_error):
        outcome = FAILED
    else:
        outcome = PASSED
    output, _ = cap(call.text, OUTPUT_KEPT) if call.text is not None else (None, False)
    return replace(
        base, outcome=outcome, assertions=tuple(assertions), latency_ms=call.latency_ms,
        output=output, output_length=len(call.text) if call.text is not None else 0,
        error=call.error, judge_score=judge_score, judge_reasoning=judge_reasoning,
        replayed=replayed,
    )


#: Characters of each run's output kept in a repeat case's run list.
RUN_OUTPUT_KEPT = 4096


def run_data(run: CaseResult) -> dict[str, Any]:
    """One run of a ``repeat`` case, as plain data."""
    output = cap(run.output, RUN_OUTPUT_KEPT)[0] if run.output is not None else None
    return {"outcome": run.outcome, "latency_ms": run.latency_ms,
            "assertions": [a.to_data() for a in run.assertions], "output": output,
            "error": run.error.to_data() if run.error else None,
            "judge_score": run.judge_score}


def _runs_lines(result: CaseResult) -> list[str]:
    if not result.runs:
        return []
    n = len(result.runs)
    lines = [f"runs: {result.passed_runs}/{n} passed, minPassRate {result.min_pass_rate:g} "
             f"needs {math.ceil((result.min_pass_rate or 0) * n - 1e-9)}"]
    for index, run in enumerate(result.runs, 1):
        failed = [f"✗ {a['name']}" for a in run["assertions"] if a["passed"] is False]
        if run["error"]:
            failed.append(f"raised {run['error']['type']}")
        latency = "" if run["latency_ms"] is None else f" in {run['latency_ms']:.1f} ms"
        lines.append(f"  run {index}: {run['outcome']}{latency}"
                     + (f" — {', '.join(failed)}" if failed else ""))
    lines.append("the first run that did not pass:")
    return lines


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in text.splitlines()) if text else prefix


def failure_message(result: CaseResult) -> str:
    """The SPEC §2 message: the case, every assertion ✓/✗, latency, and the output."""
    where = f"{result.suite.gate} suite {result.suite.path}:{result.line}"
    if result.outcome == TIMEOUT and not result.runs:  # nothing untrusted in it
        return (f"case {result.case_id!r} timed out ({where}): no answer within "
                f"{result.timeout_s:g} s ({result.timeout_source}); the call was abandoned. "
                "A timeout is not an assertion failure.")
    if result.error is not None:
        head = (f"case {result.case_id!r} failed ({where}): the entry point raised "
                f"{visible(result.error.text, keep_newlines=False)}")
    else:
        verb = "timed out" if result.outcome == TIMEOUT else "failed"
        head = f"case {result.case_id!r} {verb} ({where})"
    lines = [head, *_runs_lines(result)]
    if result.error is not None and result.error.traceback:
        lines.append(_indent(visible(result.error.traceback), "    "))
    for a in result.assertions:
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
    if result.latency_ms is not None:
        replayed = " (recorded latency, replayed from the cassette)" if result.replayed else ""
        mean = "mean " if result.runs else ""
        lines.append(f"latency: {mean}{result.latency_ms:.1f} ms{replayed}")
    if result.output is not None:
        shown, cut = cap(result.output, OUTPUT_SHOWN)
        size = f"{result.output_length:,} chars"
        lines.append(f"output ({size}, first {len(shown):,} shown):" if cut
                     or result.output_length > len(result.output) else f"output ({size}):")
        lines.append(_indent(visible(shown), "  | "))
    return defuse("\n".join(lines))


def teststatus(data: Mapping[str, Any], when: str) -> tuple[str, str, str] | None:
    """pytest's (category, letter, word) for a report carrying case data, if not the default."""
    if when != "call":
        return None
    outcome = data["outcome"]
    advisory = data["suite"]["advisory"]
    runs = data.get("runs") or ()
    if runs and outcome in (PASSED, FAILED) and not (outcome == FAILED and advisory):
        ratio = f"{data['passed_runs']}/{len(runs)}"
        return (outcome, "." if outcome == PASSED else "F",
                f"{outcome.upper()} ({ratio} runs passed)")
    if outcome == TIMEOUT:
        return ("advisory_timeout", "t", "ADVISORY TIMEOUT") if advisory \
            else ("timeout", "T", "TIMEOUT")
    if outcome == FAILED and advisory:
        return "advisory_failed", "a", "ADVISORY FAILED"
    return None
