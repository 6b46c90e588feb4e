"""The variant comparison as each report shows it (docs/contract.md#variant-comparison).

Renders a :class:`~..decide.comparison.Comparison`: the terminal's one line per variant
(with ``-v`` the differences and the disagreeing cases too), the markdown summary's
tables, and the HTML report's section (the per-variant table above a matrix of cases ×
variants coloured by outcome, disagreeing cases first). Variant names, case ids and
suite paths are user text: made :func:`~..text.visible` and escaped for each format
(docs/contract.md#untrusted-text). The HTML uses only the page's own classes (``.b`` and
its outcome colours, ``.n``, ``.note``): the page's Content-Security-Policy allows no
``style`` attribute, and :data:`CSS` is what this section adds to the page's style.

:mod:`.html` and :mod:`.markdown` may import this module, so it imports neither (a cycle):
their escaping and outcome-class rules are restated here, and
tests/test_variant_rendering.py checks that they agree. No pytest import here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..decide.comparison import (
    BETTER,
    TOO_FEW,
    WITHIN_NOISE,
    WORSE,
    Comparison,
    Difference,
    VariantSummary,
)
from ..decide.outcomes import CaseResult, outcome_name
from ..text import defuse, visible
from .escaping import category
from .escaping import cell as _cell
from .escaping import html_text as _esc
from .usage_text import dollars

__all__ = ["CSS", "MARKDOWN_DISAGREEMENTS", "MATRIX_ROWS", "TERMINAL_DISAGREEMENTS",
           "category", "html", "markdown", "terminal_lines"]

#: Disagreeing cases the terminal (``-v``) and the markdown summary list; the rest are
#: counted (the HTML matrix and the results JSON have them all).
TERMINAL_DISAGREEMENTS = 50
MARKDOWN_DISAGREEMENTS = 200
#: Rows of the HTML matrix (disagreeing cases first); the rest are counted in a note, as
#: the page keeps under its size limit (docs/contract.md#html-report).
MATRIX_ROWS = 2000
#: What the section adds to the HTML page's style sheet (hashed into its CSP with it).
CSS = ("table.variants-matrix tr.disagree td{background:#fff8e1}"
       "table.variants td,table.variants-matrix td{overflow-wrap:anywhere}"
       # a figure ("$0.0009", "0.1 ms", "[0.821, 0.946]") is read whole, never broken
       "table.variants td.n,table.variants-differences td.n{white-space:nowrap;"
       "overflow-wrap:normal}")

_NOT_RUN = "not run"
#: A verdict's badge class on the HTML page (the page's colours).
_BADGE = {BETTER: "passed", WORSE: "failed", WITHIN_NOISE: "within-noise", TOO_FEW: "zero"}


# -- words shared by every format --------------------------------------------------------------

def _share(value: float) -> str:
    return f"{value:.3f}"


def _interval(low: float | None, high: float | None) -> str:
    return "" if low is None or high is None else f"[{_share(low)}, {_share(high)}]"


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:,.1f} ms"


def _p(value: float) -> str:
    return f"{value:.3g}"


def _role(summary: VariantSummary) -> str:
    roles = [r for r, on in (("reference", summary.reference), ("advisory", summary.advisory))
             if on]
    return f" ({', '.join(roles)})" if roles else ""


def _passed(summary: VariantSummary) -> str:
    not_run = f", {summary.not_run} not run" if summary.not_run else ""
    if not summary.cases:
        return f"no case ran ({summary.not_run} not run)"
    return f"{summary.passed}/{summary.cases} passed{not_run}"


def _against(difference: Difference | None, reference: str) -> str:
    """``worse than large (p = 0.004, Holm)``: a difference's verdict in words."""
    if difference is None:
        return f"not compared with {reference}"
    p = f"(p = {_p(difference.adjusted_p)}, Holm)"
    if difference.verdict == BETTER:
        return f"better than {reference} {p}"
    if difference.verdict == WORSE:
        return f"worse than {reference} {p}"
    if difference.verdict == WITHIN_NOISE:
        return f"within noise of {reference} {p}"
    return f"{TOO_FEW} against {reference}"


def _of(comparison: Comparison, name: str, metric: str) -> Difference | None:
    return next((d for d in comparison.differences_of(name) if d.metric == metric), None)


def _legend(comparison: Comparison) -> str:
    tests = len(comparison.differences)
    return (f"reference {comparison.reference}; {comparison.confidence:.0%} intervals; "
            f"each variant against the reference on the cases both ran, Holm-corrected "
            f"across {tests} test{'s' if tests != 1 else ''} at α {comparison.alpha:g}")


def _title(comparison: Comparison) -> str:
    return f"Variants of package {comparison.package}" if comparison.package else "Variants"


# -- terminal ---------------------------------------------------------------------------------

def _term(text: str) -> str:
    """User text on one terminal line: no escape sequence, newline or workflow command."""
    return defuse(visible(text, keep_newlines=False))


def _variant_line(comparison: Comparison, summary: VariantSummary) -> str:
    reference = _term(comparison.reference)
    parts = [_passed(summary)]
    if summary.pass_rate is not None:
        parts.append(f"pass rate {_share(summary.pass_rate)} "
                     f"{_interval(summary.pass_low, summary.pass_high)}".rstrip())
        if not summary.reference:
            parts.append(_against(_of(comparison, summary.name, "pass_rate"), reference))
    if summary.score_mean is not None:
        judge = f"judge score {_share(summary.score_mean)}"
        interval = _interval(summary.score_low, summary.score_high)
        judge += f" {interval}" if interval else ""
        difference = _of(comparison, summary.name, "judge_score")
        if difference is not None:
            judge += f", {_against(difference, reference)}"
        parts.append(judge)
    if summary.cost_usd is not None:
        parts.append(dollars(summary.cost_usd))
    if summary.tokens is not None:
        parts.append(f"{summary.tokens:,} tokens")
    if summary.latency_p50_ms is not None:
        parts.append(f"p50 {_ms(summary.latency_p50_ms)}, p95 {_ms(summary.latency_p95_ms)}")
    frontier = " — frontier" if summary.on_frontier else ""
    # the package too: a run may compare the variants of several
    of = f" of {_term(comparison.package)}" if comparison.package else ""
    return f"variant {_term(summary.name)}{of}{_role(summary)}: {', '.join(parts)}{frontier}"


def _difference_line(comparison: Comparison, d: Difference) -> str:
    return (f"  {_term(d.variant)} vs {_term(comparison.reference)}, {d.metric} ({d.test}, "
            f"{d.cases} paired case{'s' if d.cases != 1 else ''}): "
            f"{_share(d.reference_value)} → {_share(d.variant_value)}, change "
            f"{d.change:+.3f} [{d.low:+.3f}, {d.high:+.3f}], p {_p(d.p_value)}, "
            f"Holm {_p(d.adjusted_p)}: {d.verdict}")


def _outcomes(outcomes: Sequence[tuple[str, str | None]]) -> str:
    return " · ".join(f"{_term(v)} {o or _NOT_RUN}" for v, o in outcomes)


def terminal_lines(comparison: Comparison, verbose: bool = False) -> list[str]:
    """One line per variant (``variant small: 31/40 passed, pass rate 0.775 [0.625, 0.877],
    worse than large (p = 0.004, Holm), $0.0123, p50 120.0 ms, p95 300.0 ms — frontier``);
    ``verbose`` adds a legend, every difference from the reference and the cases on which
    the variants disagree."""
    lines = [_variant_line(comparison, s) for s in comparison.variants]
    if not verbose:
        return lines
    lines.insert(0, f"{_term(_title(comparison))}: {_term(_legend(comparison))}")
    if comparison.differences:
        lines.append("differences from the reference:")
        lines += [_difference_line(comparison, d) for d in comparison.differences]
    found = comparison.disagreements
    if found:
        lines.append(f"cases on which the variants disagree ({len(found)}):")
        lines += [f"  {_term(d.suite)}::{_term(d.case_id)}  {_outcomes(d.outcomes)}"
                  for d in found[:TERMINAL_DISAGREEMENTS]]
        if len(found) > TERMINAL_DISAGREEMENTS:
            lines.append(f"  … and {len(found) - TERMINAL_DISAGREEMENTS} more (the HTML "
                         "report and the results JSON list them all)")
    return lines


# -- markdown ---------------------------------------------------------------------------------

def _said(comparison: Comparison, summary: VariantSummary,
          verdict: Callable[[Difference], str]) -> list[str]:
    """Each metric's verdict against the reference, ``verdict`` naming it, with its p."""
    said = []
    for metric in ("pass_rate", "judge_score"):
        d = _of(comparison, summary.name, metric)
        if d is not None:
            p = "" if d.verdict == TOO_FEW else f" (p = {_p(d.adjusted_p)})"
            said.append(f"{metric}{verdict(d)}{p}")
    return said


def _verdicts(comparison: Comparison, summary: VariantSummary) -> str:
    if summary.reference:
        return "—"
    return "; ".join(_said(comparison, summary, lambda d: f": {d.verdict}")) \
        or "not compared"


def _value_cell(value: float | None, low: float | None, high: float | None) -> str:
    if value is None:
        return "—"
    interval = _interval(low, high)
    return f"{_share(value)} {interval}".rstrip()


def markdown(comparison: Comparison) -> str:
    """The comparison as markdown: a row per variant, the differences from the reference,
    then the cases on which the variants disagree."""
    reference = _cell(comparison.reference)
    level = f"{comparison.confidence:.0%}"
    lines = [f"## {_cell(_title(comparison))}", "",
             _cell(_legend(comparison)) + "; ★ on the cost/quality frontier.", "",
             f"| variant | passed | pass rate [{level} interval] | judge score [interval] "
             f"| cost | tokens | p50 / p95 latency | vs {reference} | frontier |",
             "|---|---|---|---|---|---|---|---|---|"]
    for s in comparison.variants:
        latency = ("—" if s.latency_p50_ms is None
                   else f"{_ms(s.latency_p50_ms)} / {_ms(s.latency_p95_ms)}")
        lines.append(
            f"| {_cell(s.name + _role(s))} | {_passed(s)} | "
            f"{_value_cell(s.pass_rate, s.pass_low, s.pass_high)} | "
            f"{_value_cell(s.score_mean, s.score_low, s.score_high)} | "
            f"{dollars(s.cost_usd)} | {'—' if s.tokens is None else f'{s.tokens:,}'} | "
            f"{latency} | {_cell(_verdicts(comparison, s))} | {'★' if s.on_frontier else ''} |")
    if comparison.differences:
        lines += ["", f"### Differences from {reference}", "",
                  f"| variant | metric | test | paired cases | {reference} | variant | "
                  "change [interval] | p | Holm p | verdict |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        lines += [f"| {_cell(d.variant)} | {d.metric} | {d.test} | {d.cases} | "
                  f"{_share(d.reference_value)} | {_share(d.variant_value)} | "
                  f"{d.change:+.3f} [{d.low:+.3f}, {d.high:+.3f}] | {_p(d.p_value)} | "
                  f"{_p(d.adjusted_p)} | {d.verdict} |" for d in comparison.differences]
    found = comparison.disagreements
    if found:
        names = [v.name for v in comparison.variants]
        lines += ["", f"### Cases on which the variants disagree ({len(found)})", "",
                  "| suite | case | " + " | ".join(map(_cell, names)) + " |",
                  "|---|---|" + "---|" * len(names)]
        for d in found[:MARKDOWN_DISAGREEMENTS]:
            outcome = dict(d.outcomes)
            lines.append(f"| {_cell(d.suite)} | {_cell(d.case_id)} | " + " | ".join(
                _cell(outcome.get(n) or _NOT_RUN) for n in names) + " |")
        if len(found) > MARKDOWN_DISAGREEMENTS:
            lines += ["", f"… and {len(found) - MARKDOWN_DISAGREEMENTS} more (the HTML report "
                      "and the results JSON list them all)."]
    return "\n".join(lines) + "\n"


# -- HTML -------------------------------------------------------------------------------------

def _badge(cls: str, text: str) -> str:
    return f'<span class="b {cls}">{_esc(text)}</span>'


def _html_verdicts(comparison: Comparison, summary: VariantSummary) -> str:
    if summary.reference:
        return "reference"
    return "<br>".join(_said(comparison, summary,
                             lambda d: f" {_badge(_BADGE[d.verdict], d.verdict)}")) \
        or "not compared"


def _summary_table(comparison: Comparison) -> str:
    level = f"{comparison.confidence:.0%}"
    rows = []
    for s in comparison.variants:
        rows.append(
            f'<tr data-variant="{_esc(s.name)}"><td><b>{_esc(s.name)}</b>{_esc(_role(s))}</td>'
            f"<td class=n>{s.cases}</td><td class=n>{s.not_run}</td><td class=n>{s.passed}</td>"
            f"<td class=n>{'—' if s.pass_rate is None else _share(s.pass_rate)}</td>"
            f"<td class=n>{_interval(s.pass_low, s.pass_high) or '—'}</td>"
            f"<td class=n>{'—' if s.score_mean is None else _share(s.score_mean)}</td>"
            f"<td class=n>{_interval(s.score_low, s.score_high) or '—'}</td>"
            f"<td class=n>{_esc(dollars(s.cost_usd))}</td>"
            f"<td class=n>{'—' if s.tokens is None else f'{s.tokens:,}'}</td>"
            f"<td class=n>{_ms(s.latency_p50_ms)}</td><td class=n>{_ms(s.latency_p95_ms)}</td>"
            f"<td>{_html_verdicts(comparison, s)}</td>"
            f"<td>{'★ frontier' if s.on_frontier else ''}</td></tr>")
    return ('<table class="variants"><tr><th>variant</th><th class=n>cases run</th>'
            '<th class=n>not run</th><th class=n>passed</th><th class=n>pass rate</th>'
            f'<th class=n>{level} interval</th><th class=n>judge score</th>'
            f'<th class=n>{level} interval</th><th class=n>cost</th><th class=n>tokens</th>'
            f'<th class=n>p50</th><th class=n>p95</th><th>vs {_esc(comparison.reference)}</th>'
            "<th>frontier</th></tr>" + "".join(rows) + "</table>")


def _differences_table(comparison: Comparison) -> str:
    if not comparison.differences:
        return ""
    rows = "".join(
        f'<tr data-verdict="{_esc(d.verdict)}"><td>{_esc(d.variant)}</td><td>{d.metric}</td>'
        f"<td>{d.test}</td><td class=n>{d.cases}</td><td class=n>{_share(d.reference_value)}"
        f"</td><td class=n>{_share(d.variant_value)}</td><td class=n>{d.change:+.3f} "
        f"[{d.low:+.3f}, {d.high:+.3f}]</td><td class=n>{_p(d.p_value)} "
        f"({_p(d.adjusted_p)})</td><td>{_badge(_BADGE[d.verdict], d.verdict)}</td></tr>"
        for d in comparison.differences)
    return ('<table class="variants-differences"><tr><th>variant</th><th>metric</th>'
            f'<th>test</th><th class=n>paired cases</th><th class=n>'
            f'{_esc(comparison.reference)}</th><th class=n>variant</th>'
            '<th class=n>change [interval]</th><th class=n>p (Holm)</th><th>verdict</th></tr>'
            + rows + "</table>")


def _matrix(comparison: Comparison, cases: Sequence[CaseResult], limit: int) -> str:
    names = [v.name for v in comparison.variants]
    found: dict[tuple[str, str], dict[str, CaseResult]] = {}
    for r in cases:
        if r.variant in names:
            found.setdefault((r.suite.path, r.case_id), {}).setdefault(r.variant, r)
    disagreeing = [(d.suite, d.case_id) for d in comparison.disagreements]
    first = set(disagreeing)
    keys = [k for k in disagreeing if k in found] + [k for k in found if k not in first]
    rows = []
    for key in keys[:limit]:
        cells = []
        for name in names:
            got = found[key].get(name)
            cells.append("<td>" + (_badge("zero", _NOT_RUN) if got is None else
                                   f'<span class="b {category(got)}" title="{_esc(got.nodeid)}">'
                                   f"{_esc(outcome_name(got))}</span>") + "</td>")
        mark = ' class="disagree"' if key in first else ""
        rows.append(f"<tr{mark}><td>{_esc(key[0])}</td><td>{_esc(key[1])}</td>"
                    + "".join(cells) + "</tr>")
    left_out = len(keys) - len(rows)
    note = (f'<p class="note">{left_out:,} more cases are left out of this matrix to keep '
            "the page small; the cases table below and the results JSON have every one.</p>"
            if left_out else "")
    said = (f"{len(first):,} case{'s' if len(first) != 1 else ''} on which the variants "
            "disagree, first" if first else "every variant agrees on every case")
    return (f'<p class="note">Cases × variants ({_esc(said)}).</p>'
            '<table class="variants-matrix"><tr><th>suite</th><th>case</th>'
            + "".join(f"<th>{_esc(n)}</th>" for n in names) + "</tr>" + "".join(rows)
            + "</table>" + note)


def html(comparison: Comparison, cases: Sequence[CaseResult], limit: int = MATRIX_ROWS
         ) -> str:
    """The HTML report's section: the per-variant table, the differences from the
    reference, and the matrix of cases × variants (at most ``limit`` rows, disagreeing
    cases first), each cell an outcome badge in the page's colours."""
    title = _title(comparison)
    return (f'<section class="variants" id="variants"><h2>{_esc(title)}</h2>'
            f'<p class="note">{_esc(_legend(comparison))}; ★ on the cost/quality frontier '
            "(no other variant has a pass rate as high or higher at a cost per case as low "
            "or lower, and better on one).</p>"
            + _summary_table(comparison) + _differences_table(comparison)
            + _matrix(comparison, cases, limit) + "</section>")
