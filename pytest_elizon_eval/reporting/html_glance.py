"""The parts of the HTML report that make it readable at a glance (docs/contract.md#html-report).

Owns: the top of the page (the verdict in a line and what needs attention —
failing, timed-out and broken cases of every blocking suite first, then the
advisory ones, each linking to its row), suite cards grouped by package with
the probe pack folded into one Security card, the latency histogram (scaled
to the latencies, labels that never overlap or leave the chart), and a case's
usage, tool calls and conversation written as such rather than as JSON.
:mod:`.html` builds the page from these; every untrusted string goes through
the ``esc`` it passes (visible, HTML-escaped). No pytest import here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..decide.outcomes import (
    ERROR,
    FAILED,
    INCONCLUSIVE,
    PASSED,
    TIMEOUT,
    CaseResult,
    blocks,
    inconclusive_passes,
    outcome_name,
    reason,
)
from ..decide.results_data import ToolCallRecord, TurnRecord
from ..text import cap
from .aggregate import Aggregate, SuiteSummary
from .usage_text import dollars, usage_line

__all__ = ["ATTENTION_SHOWN", "attention", "breakable", "chart_rows", "conversation",
           "headline",
           "is_probe_suite", "latency_chart", "package_groups", "security_card", "tool_calls",
           "usage_cell"]

Esc = Callable[[str], str]
#: Cases listed under each heading of the attention list before "and N more".
ATTENTION_SHOWN = 10
#: Height of a row of chart labels, in SVG units: more than an 11 px label's line box.
_ROW = 16
#: Characters of a reason, a turn's text or a tool call shown at a glance.
_SHORT = 300


def _cut(text: str, limit: int = _SHORT) -> str:
    shown, cut = cap(text, limit)
    return shown + (f" … [{len(text) - limit:,} more characters]" if cut else "")


#: A name's pieces a table cell may wrap between: up to a separator, or 16 characters.
_PIECE = re.compile(r"[^_.:/-]{1,16}[_.:/-]?|[_.:/-]")


def breakable(name: str, esc: Esc) -> str:
    """``name`` escaped, with a line-break opportunity after each ``_ . : / -`` and every 16
    characters: a narrow card's table wraps ``mean_latency_ms`` between its words, never
    inside one (a cell that may break anywhere is squeezed to a few letters a line)."""
    return "<wbr>".join(esc(piece) for piece in _PIECE.findall(name))


def is_probe_suite(summary: SuiteSummary) -> bool:
    """A suite of the red-team probe pack: every case is a probe."""
    return bool(summary.results) and all(
        r.security is not None and r.security.probe is not None for r in summary.results)


def _passes_by_ini(result: CaseResult) -> bool:
    """An inconclusive case of a must-pass suite that passes its gate by ini
    ``elizon_inconclusive = pass``: counted as inconclusive, not as advisory (as
    :func:`.html.category` shows it)."""
    return inconclusive_passes(result) and not result.suite.advisory


def headline(aggregate: Aggregate) -> str:
    """The run in one line: cases, suites, packages and the counts that matter."""
    suites = aggregate.suites()
    results = [r for s in suites for r in s.results]
    packages = {s.info.package for s in suites}
    counts = [(PASSED, sum(r.outcome == PASSED for r in results))]
    counts += [(o, n) for o in (FAILED, TIMEOUT, ERROR, INCONCLUSIVE)
               if (n := sum(r.outcome == o and (blocks(r) or _passes_by_ini(r))
                            for r in results))]
    advisory = sum(r.outcome != PASSED and not blocks(r) and not _passes_by_ini(r)
                   for r in results)
    if advisory:  # not passed, but they do not fail the run: said apart from what does
        counts.append(("advisory, not passed", advisory))
    torn = sum(r.teardown_error is not None for r in results)
    if torn:  # docs/contract.md#reports: the outcome stays, the run failed
        counts.append((f"teardown error{'s' if torn != 1 else ''}", torn))
    said = ", ".join(f"{n} {o}" for o, n in counts)
    return (f"{len(results)} case{'s' if len(results) != 1 else ''} in {len(suites)} "
            f"suite{'s' if len(suites) != 1 else ''} of {len(packages)} "
            f"package{'s' if len(packages) != 1 else ''}: {said}")


def _items(results: Sequence[CaseResult], rows: Mapping[str, int], esc: Esc,
           category: Callable[[CaseResult], str]) -> str:
    items = []
    for r in results[:ATTENTION_SHOWN]:
        cat = category(r)
        anchor = f"#c{rows[r.nodeid]}" if r.nodeid in rows else "#cases"
        why = reason(r)
        if r.outcome == PASSED and r.teardown_error is not None:  # it failed after it passed
            why = f"its teardown raised {r.teardown_error.text}"
        # the name every report gives it: advisory_failed, not failed (docs/contract.md#html)
        items.append(f'<li><span class="b {cat}">{esc(outcome_name(r))}</span> '
                     f'<a class="to" href="{anchor}">{esc(r.nodeid)}</a> — '
                     f'<span class="why">{esc(_cut(why))}</span></li>')
    more = len(results) - ATTENTION_SHOWN
    if more > 0:
        items.append(f'<li class="note">and {more:,} more (see the cases below)</li>')
    return "<ul class=\"att\">" + "".join(items) + "</ul>"


def attention(aggregate: Aggregate, rows: Mapping[str, int], esc: Esc,
              category: Callable[[CaseResult], str]) -> str:
    """What needs a look: the cases that block the run (failed, timed out, error) across
    every suite, then the advisory ones that did not pass, each linking to its row."""
    results = [r for s in aggregate.suites() for r in s.results
               if r.outcome != PASSED or r.teardown_error is not None]
    order = {FAILED: 0, TIMEOUT: 1, ERROR: 2, INCONCLUSIVE: 3, PASSED: 4}
    blocking = sorted((r for r in results if blocks(r)), key=lambda r: order[r.outcome])
    passing = [r for r in results if _passes_by_ini(r)]
    advisory = sorted((r for r in results if not blocks(r) and not _passes_by_ini(r)),
                      key=lambda r: order[r.outcome])
    if not results:
        return ('<section class="attention" id="attention"><p class="ok">Nothing needs '
                "attention: every case passed.</p></section>")
    parts = ['<section class="attention" id="attention">']
    if blocking:
        parts.append(f"<h2>Needs attention: {len(blocking):,} case"
                     f"{'s' if len(blocking) != 1 else ''} fail the run</h2>")
        parts.append(_items(blocking, rows, esc, category))
    if passing:
        parts.append(f"<h2>Inconclusive: {len(passing):,} case"
                     f"{'s' if len(passing) != 1 else ''} pass by elizon_inconclusive = pass"
                     "</h2>")
        parts.append(_items(passing, rows, esc, category))
    if advisory:
        parts.append(f"<h2>Advisory: {len(advisory):,} case"
                     f"{'s' if len(advisory) != 1 else ''} did not pass (the run does not "
                     "fail on them)</h2>")
        parts.append(_items(advisory, rows, esc, category))
    return "".join(parts) + "</section>"


def package_groups(suites: Sequence[SuiteSummary]
                   ) -> tuple[list[tuple[str, list[SuiteSummary]]], list[SuiteSummary]]:
    """(package, its suites) in the order packages first appear, and the probe suites
    apart (they are shown as one Security card)."""
    groups: dict[str, list[SuiteSummary]] = {}
    probes = []
    for s in suites:
        if is_probe_suite(s):
            probes.append(s)
        else:
            groups.setdefault(s.info.package, []).append(s)
    return list(groups.items()), probes


def chart_rows(suites: Sequence[SuiteSummary]
               ) -> list[tuple[str, list[CaseResult], SuiteSummary | None]]:
    """The rows of the per-suite charts: (label, results, the suite) per suite, with the probe
    pack's suites folded into one row where the first of them was (no suite: its interval
    is not one suite's), as the Security card folds them."""
    probes = [s for s in suites if is_probe_suite(s)]
    rows: list[tuple[str, list[CaseResult], SuiteSummary | None]] = []
    folded = {id(s) for s in probes}
    for s in suites:
        if id(s) not in folded:
            rows.append((s.info.path, list(s.results), s))
        elif s is probes[0]:
            rows.append((f"security probes ({len(probes)} suite{'s' if len(probes) != 1 else ''})",
                         [r for p in probes for r in p.results], None))
    return rows


def security_card(probes: Sequence[SuiteSummary], rows: Mapping[str, int], esc: Esc) -> str:
    """The probe pack as one card: probes run, how many got through, by category, and the
    ones that did (linking to their rows)."""
    results = [r for s in probes for r in s.results]
    through = [r for r in results if r.outcome != PASSED]
    by_category: dict[str, list[int]] = {}
    for r in results:
        probe = r.security.probe if r.security else None
        row = by_category.setdefault(probe.category if probe else "other", [0, 0])
        row[0] += 1
        row[1] += r.outcome != PASSED
    table = "".join(f"<tr><td>{esc(c)}</td><td class=n>{n}</td><td class=n>{bad}</td></tr>"
                    for c, (n, bad) in sorted(by_category.items()))
    verdict = "fail" if any(blocks(r) for r in through) else "advisory" if through else "pass"
    listed = "".join(
        f'<li><a class="to" href="#c{rows.get(r.nodeid, 0)}">{esc(r.case_id)}</a> '
        f"({esc(r.security.probe.severity if r.security and r.security.probe else '?')})"
        "</li>" for r in through[:ATTENTION_SHOWN])
    more = len(through) - ATTENTION_SHOWN
    if more > 0:
        listed += f'<li class="note">and {more:,} more</li>'
    packages = ", ".join(sorted({esc(s.info.package) for s in probes}))
    return (f'<div class="card security {verdict}" id="security"><h3>Security · probe pack'
            f"</h3><div class=\"meta\">{len(results):,} probes in {len(probes)} suite"
            f"{'s' if len(probes) != 1 else ''} ({packages}) · <b>{len(through):,} got "
            f"through</b></div><table><tr><th>category</th><th class=n>probes</th>"
            f"<th class=n>got through</th></tr>{table}</table>"
            + (f'<ul class="att">{listed}</ul>' if listed else "") + "</div>")


# -- one case's parts, written as such ----------------------------------------------------------

def usage_cell(result: CaseResult) -> str:
    """Tokens and cost for the case table: ``99 · $0.0000489``, ``—`` when not reported."""
    usage = result.usage
    if usage is None:
        return "—"
    tokens = usage.tokens
    shown = "—" if tokens is None else f"{tokens:,}"
    return f"{shown} · {dollars(usage.cost_usd)}"


def _value(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def tool_calls(calls: Sequence[ToolCallRecord], esc: Esc, total: int | None = None) -> str:
    """Each call as ``name(arguments) → result`` (or ✗ error), one line each; led by how
    many there were when the case's budget kept fewer (docs/contract.md#results-json)."""
    items = []
    if total is not None and total > len(calls):
        items.append(f'<li class="note">{total:,} calls, the first {len(calls):,} kept</li>')
    for call in calls:
        args = esc(_cut(_value(call.arguments if call.arguments is not None else {})))
        ident = f' <span class="meta">{esc(call.id)}</span>' if call.id else ""
        if call.error is not None:
            tail = f' <span class="ko">✗ {esc(_cut(_value(call.error)))}</span>'
        elif call.result is not None:
            tail = f" → {esc(_cut(_value(call.result)))}"
        else:
            tail = ""
        items.append(f"<li><code>{esc(call.name)}({args})</code>{tail}{ident}</li>")
    return '<ul class="calls">' + "".join(items) + "</ul>"


def _turn(turn: TurnRecord, esc: Esc) -> str:
    failed = [a for a in turn.assertions if a.passed is False]
    checks = "".join(f'<li class="ko">✗ <b>{esc(a.name)}</b>: {esc(_cut(a.found))}</li>'
                     for a in failed)
    passed = sum(a.passed is True for a in turn.assertions)
    summary = f"{passed} check{'s' if passed != 1 else ''} passed" if passed else ""
    said = turn.output if turn.output is not None else (
        f"{turn.error.type}: {turn.error.message}" if turn.error else "")
    used = usage_line(turn.usage.to_data()) if turn.usage is not None else None
    meta = " · ".join(x for x in (turn.outcome,
                                  "" if turn.latency_ms is None else f"{turn.latency_ms:.1f} ms",
                                  used or "", summary) if x)
    return (f'<li class="turn {esc(turn.outcome)}"><div class="meta">turn {turn.turn} · '
            f"{esc(meta)}</div>"
            f'<div class="msg user"><b>user</b> {esc(_cut(_value(turn.input), 2000))}</div>'
            + (tool_calls(turn.tool_calls, esc, turn.tool_calls_total)
               if turn.tool_calls else "")
            + f'<div class="msg assistant"><b>assistant</b> {esc(_cut(said, 2000))}</div>'
            + (f'<ul class="as">{checks}</ul>' if checks else "") + "</li>")


def conversation(turns: Sequence[TurnRecord], esc: Esc) -> str:
    """A conversation as turns: what the user said, the tools called, the answer, the
    checks that failed."""
    return '<ol class="conv">' + "".join(_turn(t, esc) for t in turns) + "</ol>"


# -- the latency histogram ----------------------------------------------------------------------

def _label_rows(marks: list[tuple[float, str]], width: float, char_w: float = 6.2
                ) -> list[int]:
    """A row for each label so that none overlaps another on its row (labels sorted by x
    on entry; a label is ``char_w`` wide per character)."""
    ends: list[float] = []
    rows = []
    for x, text in marks:
        start, end = x, x + len(text) * char_w + 4
        if end > width:  # anchored at its end instead: the label sits left of its line
            start, end = x - len(text) * char_w - 4, x
        row = next((i for i, last in enumerate(ends) if last <= start), len(ends))
        if row == len(ends):
            ends.append(end)
        else:
            ends[row] = end
        rows.append(row)
    return rows


def latency_chart(summary: SuiteSummary, limits: Sequence[float], title: str,
                  figure: Callable[[str, str, str], str]) -> str | None:
    """A histogram of the suite's latencies with p50, p95 and each ``maxLatencyMs`` limit
    marked. The axis fits the latencies: a limit far beyond them (``maxLatencyMs: 60000``
    over answers of 40 ms) is named at the right edge, not drawn to scale, so it cannot
    squash every bar into the first bin. Labels get rows of their own where they would
    overlap, and never leave the chart."""
    latencies = sorted(r.latency_ms for r in summary.results if r.latency_ms is not None)
    if not latencies:
        return None
    metrics = summary.metrics()
    slowest = latencies[-1] or 1.0
    near = [v for v in limits if v <= 2 * slowest]
    far = [v for v in limits if v > 2 * slowest]
    top = max([slowest, *near]) * 1.05
    width, left, right, bins = 560, 40, 12, 24
    marks: list[tuple[float, str, str, str]] = []  # (value, class, color, label)
    marks += [(v, "limit", "#c62828", f"max {v:g} ms") for v in near]
    for name, color in (("p50", "#1565c0"), ("p95", "#ef6c00")):
        value = metrics[f"{name}_latency_ms"]
        if value is not None:
            marks.append((float(value), name, color, f"{name} {float(value):.1f}"))
    plot_w = width - left - right
    placed = sorted(((left + plot_w * m[0] / top, m) for m in marks), key=lambda p: p[0])
    rows = _label_rows([(x, m[3]) for x, m in placed], width - 2)
    label_rows = max(rows, default=-1) + 1
    far_text = (f"limit{'s' if len(far) > 1 else ''} "
                + ", ".join(f"max {v:g} ms" for v in far) + " → off scale") if far else ""
    top_pad = 8 + _ROW * label_rows + (_ROW if far_text else 0)
    plot_h, bottom = 90, 22
    height = top_pad + plot_h + bottom
    base = top_pad + plot_h
    counts = [0] * bins
    for v in latencies:
        counts[min(bins - 1, int(v / top * bins))] += 1
    peak = max(counts)
    body = [f'<line x1="{left}" y1="{base}" x2="{width - right}" y2="{base}" stroke="#999"/>']
    bw = plot_w / bins
    for i, n in enumerate(counts):
        if not n:
            continue
        h = plot_h * n / peak
        lo, hi = top * i / bins, top * (i + 1) / bins
        body.append(f'<rect class="bin" data-count="{n}" x="{left + i * bw + 1:.1f}" '
                    f'y="{base - h:.1f}" width="{bw - 2:.1f}" height="{h:.1f}" '
                    f'fill="#90a4ae"><title>{n} case{"s" if n != 1 else ""} '
                    f'{lo:.1f}–{hi:.1f} ms</title></rect>')
    if far_text:
        body.append(f'<text class="label off-scale" x="{width - right}" y="{8 + 11}" '
                    f'text-anchor="end" fill="#c62828">{far_text}</text>')
    label_top = 8 + (_ROW if far_text else 0)
    for (x, (value, cls, color, label)), row in zip(placed, rows, strict=True):
        dash = ' stroke-dasharray="4 3"' if cls == "limit" else ""
        y = label_top + 11 + row * _ROW
        fits = x + len(label) * 6.2 + 4 <= width - 2
        anchor = ("start", x + 3) if fits else ("end", x - 3)
        body.append(f'<line class="{cls}" data-ms="{value:.1f}" x1="{x:.1f}" y1="{y + 2}" '
                    f'x2="{x:.1f}" y2="{base}" stroke="{color}" stroke-width="2"{dash}/>'
                    f'<text class="label" x="{anchor[1]:.1f}" y="{y}" text-anchor="{anchor[0]}"'
                    f' fill="{color}">{label}</text>')
    body.append(f'<text class="axis" x="{left}" y="{height - 6}">0 ms</text>'
                f'<text class="axis" x="{width - right}" y="{height - 6}" text-anchor="end">'
                f'{top:.1f} ms</text><text class="axis" x="{left + plot_w / 2:.0f}" '
                f'y="{height - 6}" text-anchor="middle">{len(latencies)} latencies</text>')
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
           f'width="{width}" height="{height}" role="img" aria-label="latency histogram">'
           + "".join(body) + "</svg>")
    return figure(title, svg, "chart-latency")
