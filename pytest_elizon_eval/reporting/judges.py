"""What the judges did, for every report: calls made and grades reused from the cache,
inconsistent and advisory grades, and each judge's alignment with human labels.

Read from the cases' :class:`~..decide.results_data.JudgeRecord` s and ``alignment``
records, so a results file shown again (``elizon-eval show``) says the same. The
terminal, markdown and HTML reporters each add these lines to their own. No pytest
import here.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

from ..decide.results_data import CaseResult
from .aggregate import Aggregate

__all__ = [
    "advisory_grades",
    "alignment_line",
    "alignments",
    "case_lines",
    "html_section",
    "inconsistent_grades",
    "markdown_lines",
    "terminal_lines",
    "usage_line",
]


def _cases(aggregate: Aggregate) -> list[CaseResult]:
    return [r for s in aggregate.suites() for r in s.results]


def usage_line(aggregate: Aggregate) -> str | None:
    """``judge: N calls, M grades reused from the cache`` (+ inconsistent, advisory), or None
    when nothing was judged."""
    records = [j for r in _cases(aggregate) for j in r.judges]
    if not records:
        return None
    calls = sum(j.calls for j in records)
    cached = sum(j.cached for j in records)
    line = f"judge: {calls} call{'s' * (calls != 1)}, {cached} grade{'s' * (cached != 1)} " \
           "reused from the cache"
    inconsistent = sum(1 for j in records if j.consistent is False)
    if inconsistent:
        line += f"; {inconsistent} inconsistent grade{'s' * (inconsistent != 1)}"
    advisory = sum(1 for j in records if j.advisory)
    if advisory:
        line += f"; {advisory} failing grade{'s' * (advisory != 1)} counted as advisory"
    return line


def alignments(aggregate: Aggregate) -> list[dict[str, Any]]:
    """Each distinct alignment record the cases carry, in the order first seen."""
    found: dict[str, dict[str, Any]] = {}
    for result in _cases(aggregate):
        if result.alignment is not None:
            found.setdefault(str(result.alignment.get("key")), result.alignment)
    return list(found.values())


def _number(value: object, form: str = ".2f") -> str:
    return format(value, form) if isinstance(value, (int, float)) else "n/a"


def alignment_line(record: dict[str, Any]) -> str:
    """One judge's alignment in a line, as every report shows it."""
    kappa = record.get("cohen_kappa")
    interval = record.get("kappa_interval")
    if isinstance(kappa, (int, float)):
        shown = f"κ {kappa:.2f}"
        if isinstance(interval, list) and len(interval) == 2:
            shown += f" [{_number(interval[0])}, {_number(interval[1])}]"
        shown += f" ({record.get('strength')})"
    else:
        shown = "κ undefined" + (f" ({record['note']})" if record.get("note") else "")
    minimum = record.get("min_kappa")
    if isinstance(minimum, (int, float)):
        shown += f", minKappa {minimum:.2f}"
    if "agreement_rate" in record:
        shown += (f", agreement {_number(record['agreement_rate'], '.0%')}, MAE "
                  f"{_number(record.get('mean_absolute_error'))}, r "
                  f"{_number(record.get('pearson'))}, TP {record.get('true_pos')} TN "
                  f"{record.get('true_neg')} FP {record.get('false_pos')} FN "
                  f"{record.get('false_neg')} (n={record.get('n')}, pass ≥ "
                  f"{_number(record.get('threshold'), 'g')})")
    ungraded = record.get("ungraded_count")
    if ungraded:
        shown += f"; {ungraded} labelled example{'s' * (ungraded != 1)} not graded"
    return f"{record.get('judge')} on {record.get('labels')}: {shown}"


def advisory_grades(aggregate: Aggregate) -> list[str]:
    """``nodeid — judge.NAME: score 0.20 < 0.50: judge not aligned: …`` for each failing
    grade counted as advisory (the case itself may have passed)."""
    found: list[str] = []
    for result in _cases(aggregate):
        for record in result.judges:
            if record.advisory:
                score = "no score" if record.score is None else \
                    f"score {record.score:.2f} < {record.threshold:g}"
                # which run and turn: a repeated case's runs are otherwise the same line
                at = ", ".join(f"{word} {number}" for word, number in (
                    ("run", record.run), ("turn", record.turn)) if number is not None)
                found.append(f"{result.nodeid}{f' ({at})' if at else ''} — {record.name}: "
                             f"{score}: {record.advisory}")
    return found


def inconsistent_grades(aggregate: Aggregate) -> list[str]:
    """``nodeid — judge.NAME: scores 0.5, 0.9 (range 0.40 > tolerance 0.1)`` per flagged grade."""
    return [f"{r.nodeid} — {j.name}: scores {', '.join(f'{s:g}' for s in j.scores)} (range "
            f"{j.range or 0:.2f} > tolerance {j.tolerance:g})"
            for r in _cases(aggregate) for j in r.judges if j.consistent is False]


def case_lines(result: CaseResult) -> list[str]:
    """One line per rubric grade of a case: its score, samples, cache use, flags."""
    lines = []
    for j in result.judges:
        where = "".join(f" {k} {v}" for k, v in (("run", j.run), ("turn", j.turn)) if v)
        score = "no score" if j.score is None else f"score {j.score:.2f}"
        if len(j.scores) > 1:
            score += f" (mean of {len(j.scores)}, range {j.range or 0:.2f}" + (
                ", INCONSISTENT)" if j.consistent is False else ")")
        cached = " [cached grade]" if j.cached and not j.calls else (
            f" [{j.cached} of {j.cached + j.calls} grades cached]" if j.cached else "")
        advisory = f" — counted as advisory: {j.advisory}" if j.advisory else ""
        lines.append(f"{j.name}{where}: {score} (threshold {j.threshold:g}) by {j.judge}"
                     f"{cached}{advisory}")
    return lines


def terminal_lines(aggregate: Aggregate) -> list[tuple[str, dict[str, bool]]]:
    lines: list[tuple[str, dict[str, bool]]] = []
    usage = usage_line(aggregate)
    if usage:
        lines.append((usage, {}))
    for title, found in _flagged(aggregate):
        lines.append((f"{title[0].lower()}{title[1:]}:", {"yellow": True}))
        lines.extend((f"  {line}", {}) for line in found)
    records = alignments(aggregate)
    if records:
        lines.append(("judge alignment:", {"bold": True}))
        for record in records:
            low = _below(record)
            lines.append((f"  {alignment_line(record)}", {"yellow": low}))
    return lines


def _flagged(aggregate: Aggregate) -> list[tuple[str, list[str]]]:
    """The grade lists every report shows under a title, those with grades in them."""
    return [(title, found) for title, found in (
        ("Judge failures counted as advisory", advisory_grades(aggregate)),
        ("Inconsistent judge grades", inconsistent_grades(aggregate))) if found]


def _below(record: dict[str, Any]) -> bool:
    kappa, minimum = record.get("cohen_kappa"), record.get("min_kappa")
    return isinstance(minimum, (int, float)) and not (
        isinstance(kappa, (int, float)) and kappa >= minimum)


def markdown_lines(aggregate: Aggregate, cell: Callable[[str], str]) -> list[str]:
    lines: list[str] = []
    usage = usage_line(aggregate)
    records = alignments(aggregate)
    if not usage and not records:
        return lines
    lines.append("## Judge\n")
    if usage:
        lines.append(cell(usage) + "\n")
    for title, found in _flagged(aggregate):
        lines.append(f"### {title}\n")
        lines.extend(f"- {cell(line)}" for line in found)
        lines.append("")
    if records:
        lines.append("### Judge alignment\n")
        lines.extend(f"- {'⚠️ ' if _below(r) else ''}{cell(alignment_line(r))}" for r in records)
        lines.append("")
    return lines


def html_section(aggregate: Aggregate) -> str:
    usage = usage_line(aggregate)
    records = alignments(aggregate)
    if not usage and not records:
        return ""
    parts = ['<section class="judges"><h2>Judge</h2>']
    if usage:
        parts.append(f"<p>{html.escape(usage)}</p>")
    for title, found in _flagged(aggregate):
        parts.append(f"<h3>{title}</h3><ul>")
        parts.extend(f"<li>{html.escape(line)}</li>" for line in found)
        parts.append("</ul>")
    if records:
        parts.append("<h3>Judge alignment</h3><ul>")
        parts.extend(f"<li>{html.escape(alignment_line(r))}</li>" for r in records)
        parts.append("</ul>")
    parts.append("</section>")
    return "".join(parts)
