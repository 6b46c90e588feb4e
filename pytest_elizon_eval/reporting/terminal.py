"""The ``elizon eval`` section of pytest's terminal summary.

Per suite: gate, counts and verdict; then the timed-out cases (pytest's
FAILURES section lists failures only) and the advisory cases that did not
pass, each with its one-line reason.
"""

from __future__ import annotations

from ..outcomes import ERROR, FAILED, PASSED, TIMEOUT, CaseResult
from ..text import visible
from .aggregate import Aggregate, SuiteSummary

__all__ = ["render"]

Line = tuple[str, dict[str, bool]]


def _verdict(summary: SuiteSummary) -> Line:
    if summary.passed:
        return "PASS", {"green": True}
    if summary.info.advisory:
        return "ADVISORY: not passed (does not fail the run)", {"yellow": True}
    return "FAIL", {"red": True, "bold": True}


def _counts(summary: SuiteSummary) -> str:
    parts = [f"{summary.count(PASSED)} passed", f"{summary.count(FAILED)} failed",
             f"{summary.count(TIMEOUT)} timeout"]
    if summary.count(ERROR):
        parts.append(f"{summary.count(ERROR)} error")
    return ", ".join(parts)


def reason(result: CaseResult) -> str:
    """Why a case did not pass, in one line."""
    if result.outcome == TIMEOUT:
        return f"no answer within {result.timeout_s:g} s ({result.timeout_source})"
    if result.error is not None:
        first = result.error.text.splitlines()[0] if result.error.text else result.error.type
        return visible(first, keep_newlines=False)[:200]
    failed = [a for a in result.assertions if a.passed is False]
    return "; ".join(visible(f"✗ {a.name}: {a.found}", keep_newlines=False)[:200]
                     for a in failed)


def render(aggregate: Aggregate) -> list[Line]:
    """The section's lines with their terminal markup."""
    lines: list[Line] = []
    suites = aggregate.suites()
    for summary in suites:
        info = summary.info
        strict = info.gate == "advisory" and not info.advisory
        gate = f"{info.gate}, counted as must-pass by --elizon-strict" if strict else info.gate
        verdict, markup = _verdict(summary)
        lines.append((f"{info.path} [{info.package}, {gate}]: {_counts(summary)} — {verdict}",
                      markup))
    timeouts = [r for s in suites for r in s.results if r.outcome == TIMEOUT]
    if timeouts:
        lines.append(("timed out:", {"yellow": True}))
        lines.extend((f"  {r.nodeid} — {reason(r)}", {}) for r in timeouts)
    advisory = [r for s in suites if s.info.advisory for r in s.not_passed
                if r.outcome != TIMEOUT]
    if advisory:
        lines.append(("advisory, not passed:", {"yellow": True}))
        lines.extend((f"  {r.nodeid} — {reason(r)}", {}) for r in advisory)
    return lines
