"""The "Repeated cases" part of the terminal summary, the markdown summary and the JUnit
properties: each repeated case's pass rate with its interval, flaky / within noise /
inconclusive, its decision and its outputs' stability (docs/contract.md#repeat-runs).
"""

from __future__ import annotations

from collections.abc import Callable

from ..decide.outcomes import CaseResult, outcome_name
from ..decide.wording_noise import (
    decision_text,
    interval_text,
    repeat_properties,
    repeat_text,
    tags,
)
from .aggregate import Aggregate, SuiteSummary

__all__ = ["junit_properties", "markdown_lines", "repeated", "terminal_lines"]


def repeated(summary: SuiteSummary) -> list[CaseResult]:
    """The suite's cases that ran more than once, in file order."""
    return [r for r in summary.results if r.repeat is not None]


def terminal_lines(aggregate: Aggregate) -> list[tuple[str, dict[str, bool]]]:
    """One line per repeated case, after a heading; none without repeated cases."""
    cases = [r for s in aggregate.suites() for r in repeated(s)]
    if not cases:
        return []
    lines: list[tuple[str, dict[str, bool]]] = [("repeated cases:", {"bold": True})]
    for r in cases:
        assert r.repeat is not None
        words = tags(r.repeat)
        lines.append((f"  {r.nodeid} {outcome_name(r)}: {repeat_text(r.repeat)}",
                      {"yellow": bool(words)}))
    return lines


def markdown_lines(summary: SuiteSummary, cell: Callable[[str], str]) -> list[str]:
    """A table of the suite's repeated cases (none when it has none)."""
    cases = repeated(summary)
    if not cases:
        return []
    rows = ["### Repeated cases\n", "| case | outcome | pass rate | notes | decision |",
            "|---|---|---|---|---|"]
    for r in cases:
        record = r.repeat
        assert record is not None
        rows.append(f"| `{cell(r.case_id)}` | {outcome_name(r)} | {cell(interval_text(record))} | "
                    f"{cell(', '.join(tags(record)) or '—')} | {cell(decision_text(record))} |")
    return ["\n".join(rows) + "\n"]


def junit_properties(summary: SuiteSummary) -> dict[str, str]:
    """Suite properties ``case.<id>.<name>`` for each repeated case (a JUnit testcase has
    no properties of its own in junit-xml)."""
    found: dict[str, str] = {}
    for r in repeated(summary):
        assert r.repeat is not None
        for name, value in repeat_properties(r.repeat):
            found[f"case.{r.case_id}.{name.removeprefix('elizon_')}"] = value
    return found
