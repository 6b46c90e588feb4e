"""The HTML report (``--elizon-html=PATH``): one self-contained page a person looks at.

What it holds is docs/contract.md#html-report.

Owns the page: the run's verdict and what needs attention, a card per suite
grouped by package (gate, counts, pass rate, the author's baseline next to this
run; the probe pack as one Security card — those parts in :mod:`.html_glance`),
charts drawn as inline SVG (outcomes per suite, latency per suite with p50/p95
and ``maxLatencyMs`` lines, baseline against run for every named metric, the
changes since a ``--elizon-baseline``, cost per suite when cases carry usage),
and a table
of cases per suite that filters by outcome and text and expands to every
detail. Also :func:`fragment`, one case's details for pytest-html's extras.

The page never reaches the network: its only style and script are inline,
allowed by their SHA-256 in a Content-Security-Policy meta tag that forbids
everything else, so text that escaped by mistake still could not run. Every
string a model, an entry point or a suite file produced is made
:func:`~..text.visible` and HTML-escaped; what is shown is capped, with the
true length stated, and the page stays under :data:`LIMIT_BYTES` by leaving
out the details of passing cases first (a note says how many). The page
has no timestamp, so a run under xdist writes the same page as a serial run
apart from the latencies. No pytest import here.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ..decide.outcomes import (
    ERROR,
    FAILED,
    INCONCLUSIVE,
    PASSED,
    TIMEOUT,
    CaseResult,
    blocks,
    outcome_name,
    reason,
)
from ..decide.results_data import RepeatRecord
from ..decide.wording import case_name
from ..decide.wording_noise import repeat_text, tags
from ..measures.rendering import html_section as measures_html
from ..run.assertions import AssertionResult
from ..text import cap
from . import html_glance as glance
from . import judges, snapshot_reports, trend, variants
from .aggregate import Aggregate, BaselineRow, SuiteSummary, format_delta, format_metric
from .compliance import html_part as compliance_part
from .escaping import category
from .escaping import html_text as _esc
from .intervals import comparison_text, interval_cell, summary_sentences
from .regression import CHANGES, Regression, dataset_note
from .regression import verdict as run_verdict
from .usage_text import dollars, usage_line

if TYPE_CHECKING:  # types only: the history is queried by the recorder, not here
    from ..history.queries import History

__all__ = ["CATEGORIES", "LIMIT_BYTES", "category", "chunks", "fragment", "render"]

#: The page stays under 5 MB (the issue's bound for 10,000 cases), with room to spare.
LIMIT_BYTES = 4_800_000
#: Characters shown of an output, an input, an error's traceback or an extra field.
TEXT_SHOWN = 4000
#: Characters shown of an assertion's expected / found text, or a one-line reason.
LINE_SHOWN = 500
#: The filterable categories of a case, in the order of its outcome bars and filters.
CATEGORIES = (PASSED, FAILED, TIMEOUT, ERROR, "advisory", INCONCLUSIVE)
#: The order of the case table: what needs a look first.
_ORDER = {FAILED: 0, TIMEOUT: 1, ERROR: 2, "advisory": 3, PASSED: 4, INCONCLUSIVE: 1}
_COLOR = {PASSED: "#2e7d32", FAILED: "#c62828", TIMEOUT: "#ef6c00", ERROR: "#6a1b9a",
          "advisory": "#b58900", "regressed": "#c62828", "improved": "#2e7d32",
          "new": "#1565c0", "removed": "#757575", "unchanged": "#9e9e9e",
          "not run": "#6a1b9a",
          INCONCLUSIVE: "#00838f"}
_VERDICT = {"pass": "PASS", "fail": "FAIL", "advisory": "ADVISORY: not passed"}
#: The ``maxLatencyMs`` assertion's expected text (assertions.py), the limit in it.
_LIMIT = re.compile(r"^at most (\d+(?:\.\d+)?) ms")
#: What every case has; any other field of its data is shown as it is (usage, tool calls…).
_KNOWN = {"nodeid", "case_id", "line", "outcome", "assertions", "latency_ms", "output",
          "output_length", "error", "timeout_s", "timeout_source", "entry", "judge_score",
          "judge_reasoning", "runs", "passed_runs", "min_pass_rate", "replayed", "input",
          "suite", "usage", "tool_calls", "turns", "failed_turn", "turn_count", "attempts",
          "retries", "waited_s", "rate_limited", "repeat", "resumed", "tool_calls_total"}
_KNOWN |= {"snapshot"}  # its own item of the details (snapshot_reports.html_item)

_CSS = """
:root{--ok:#2e7d32;--ko:#c62828;--to:#ef6c00;--er:#6a1b9a;--ad:#b58900;--mu:#666;
--bg:#fafafa;--ln:#ddd}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
color:#222;background:var(--bg)}
main{max-width:1200px;margin:0 auto;padding:16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:24px 0 8px}
h3{font-size:15px;margin:12px 0 6px;overflow-wrap:anywhere}
.verdict{padding:14px 16px;border-radius:8px;color:#fff;margin-bottom:16px}
.verdict.pass{background:var(--ok)}.verdict.fail{background:var(--ko)}
.verdict p{margin:4px 0 0;overflow-wrap:anywhere}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,440px),1fr));
gap:12px}
.card{background:#fff;border:1px solid var(--ln);border-left:6px solid var(--ok);
border-radius:6px;padding:10px 12px;min-width:0}
.card.fail{border-left-color:var(--ko)}.card.advisory{border-left-color:var(--ad)}
.card h3{margin-top:0}.meta{color:var(--mu)}
.counts{display:flex;flex-wrap:wrap;gap:6px;margin:6px 0}
.b{display:inline-block;padding:0 6px;border-radius:9px;color:#fff;font-size:12px;
white-space:nowrap}
.b.passed{background:var(--ok)}.b.failed{background:var(--ko)}.b.timeout{background:var(--to)}
.b.inconclusive{background:#00838f}.b.flaky{background:#8d6e63}
.b.within-noise{background:#78909c}
.b.error{background:var(--er)}.b.advisory{background:var(--ad)}.b.zero{background:#bbb}
.card details summary{cursor:pointer;color:var(--mu);font-size:12px;margin-top:4px}
.card table td,.card table th{overflow-wrap:anywhere;font-size:12px;padding:2px 4px}
.pkg{font-size:15px;margin:14px 0 6px}
.headline{font-size:15px;margin:4px 0 0}
.verdict details summary{cursor:pointer;font-size:12px;margin-top:6px}
.attention{background:#fff;border:1px solid var(--ln);border-radius:6px;padding:4px 12px;
margin-bottom:12px}
.attention h2{font-size:15px;margin:8px 0 4px}
ul.att{margin:0 0 6px;padding-left:18px}ul.att li{overflow-wrap:anywhere;padding:1px 0}
a.to{color:#1565c0}
ol.conv{padding-left:20px;margin:0}ol.conv li.turn{margin-bottom:8px}
.msg{overflow-wrap:anywhere;white-space:pre-wrap;padding:2px 6px;border-radius:4px;margin:2px 0}
.msg.user{background:#eef3fb}.msg.assistant{background:#f4f4f4}
ul.calls{margin:2px 0;padding-left:18px}ul.calls li{overflow-wrap:anywhere}
.card table.baseline td,.card table.baseline th{font-size:12px}
/* a number never breaks; a metric wraps only where breakable() let it; an interval
   at its comma */
.card table.baseline td{overflow-wrap:normal}.card table.baseline td.n{white-space:nowrap}
.card table.baseline td.iv{white-space:normal}
.card .measures td+td{white-space:nowrap;overflow-wrap:normal}
table{border-collapse:collapse;width:100%}
td,th{border-bottom:1px solid var(--ln);padding:2px 6px;text-align:left;font-size:13px}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:12px}
figure{margin:0;background:#fff;border:1px solid var(--ln);border-radius:6px;padding:8px;
min-width:0}
figcaption{font-weight:600;margin-bottom:4px;overflow-wrap:anywhere}
svg{max-width:100%;height:auto;font:11px system-ui,sans-serif}
svg text{fill:#333}svg text.cnt{fill:#fff}
.filters{position:sticky;top:0;background:var(--bg);padding:8px 0;display:flex;
flex-wrap:wrap;gap:10px;align-items:center;z-index:1;border-bottom:1px solid var(--ln)}
.filters input[type=search]{flex:1;min-width:200px;padding:4px 8px}
#status{color:var(--mu);overflow-wrap:anywhere}
.suite{margin-top:14px}
.head,summary.row{display:grid;
grid-template-columns:minmax(0,2.2fr) 110px 90px 150px minmax(0,3fr) 56px;
gap:8px;padding:3px 6px;align-items:center}
@media (max-width:760px){.head,summary.row{
grid-template-columns:minmax(0,2fr) 96px 76px minmax(0,2fr) 48px}
.head>.u,summary.row>.u{display:none}}
.head{font-weight:600;border-bottom:2px solid var(--ln)}
details.case{border-bottom:1px solid var(--ln);background:#fff}
details.case[hidden]{display:none}
summary.row{cursor:pointer;list-style:none}
summary.row::-webkit-details-marker{display:none}
summary.row>span{overflow:hidden;text-overflow:ellipsis;white-space:nowrap;min-width:0}
summary.row .n{text-align:right;font-variant-numeric:tabular-nums}
details.case[open]>summary.row{background:#eef3fb}
a.cp{text-decoration:none;color:#1565c0}
.d{padding:6px 12px 12px;min-width:0}
.d dt{font-weight:600;margin-top:6px}.d dd{margin:2px 0 0 0;min-width:0}
pre{white-space:pre-wrap;overflow-wrap:anywhere;max-height:24em;overflow:auto;margin:0;
background:#f4f4f4;padding:6px;border-radius:4px;font:12px/1.4 ui-monospace,monospace}
code{overflow-wrap:anywhere;font:12px ui-monospace,monospace}
ul.as{list-style:none;padding:0;margin:0}ul.as li{overflow-wrap:anywhere;padding:1px 0}
.ok{color:var(--ok)}.ko{color:var(--ko)}.nc{color:var(--mu)}
.note{color:var(--mu);font-style:italic}
""" + variants.CSS

# Filters rows by outcome and text, and copies a node id. Written for old and new
# browsers alike; it reads the page's text through the DOM and never builds HTML.
_JS = """
(function(){
var q=document.getElementById('q'),st=document.getElementById('status');
var boxes=document.querySelectorAll('input[data-outcome]');
var rows=document.querySelectorAll('details.case');
function key(d){if(!d._k){d._k=(d.querySelector('summary').textContent+' '+nodeid(d))
.toLowerCase();}return d._k;}
function nodeid(d){return d.getAttribute('data-nodeid')||
(d.parentNode.getAttribute('data-path')+'::'+d.getAttribute('data-id'));}
function apply(){
var on={},i,t=q.value.trim().toLowerCase(),shown=0;
for(i=0;i<boxes.length;i++){on[boxes[i].getAttribute('data-outcome')]=boxes[i].checked;}
for(i=0;i<rows.length;i++){var d=rows[i];
var ok=on[d.getAttribute('data-outcome')]&&(!t||key(d).indexOf(t)>=0);
d.hidden=!ok;if(ok){shown++;}}
st.textContent=shown+' of '+rows.length+' cases shown';}
for(var i=0;i<boxes.length;i++){boxes[i].addEventListener('change',apply);}
q.addEventListener('input',apply);
document.addEventListener('click',function(e){
var a=e.target.closest?e.target.closest('a.cp'):null;if(!a){return;}
e.preventDefault();e.stopPropagation();
var n=nodeid(a.closest('details.case'));
function done(){st.textContent='copied: '+n;}
function show(){st.textContent='node id (copy it): '+n;}
try{navigator.clipboard.writeText(n).then(done,show);}catch(err){show();}
});
apply();
})();
"""


def _capped(text: str, limit: int) -> str:
    shown, cut = cap(text, limit)
    if not cut:
        return _esc(shown)
    return _esc(shown) + f" … [{len(text) - limit:,} more characters]"


def _pre(text: str, limit: int = TEXT_SHOWN) -> str:
    return f"<pre>{_capped(text, limit)}</pre>"


def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True, default=str)


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f} ms"


def _metric(value: float | int | None, metric: str, missing: str = "-") -> str:
    """A metric as the page shows it: costs in significant digits (``$0.0000489``, never
    ``$0.000049`` or ``$0.0000``), the rest as every report does."""
    if metric.endswith("_usd"):
        return dollars(value, missing)
    return format_metric(value, metric, missing)


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()


# -- one case --------------------------------------------------------------------------------

def _assertions(items: Iterable[AssertionResult]) -> str:
    lines = []
    for a in items:
        mark, cls = {True: ("✓", "ok"), False: ("✗", "ko"), None: ("·", "nc")}[a.passed]
        lines.append(f'<li class="{cls}">{mark} <b>{_esc(a.name)}</b>: '
                     f'expected {_capped(a.expected, LINE_SHOWN)} — found '
                     f'{_capped(a.found, LINE_SHOWN)}</li>')
    return '<ul class="as">' + "".join(lines) + "</ul>" if lines else ""


def _runs(result: CaseResult) -> str:
    rows = []
    for i, run in enumerate(result.runs, 1):
        failed = [a.name for a in run.assertions if a.passed is False]
        if run.error:
            failed.append(f"raised {run.error.type}")
        score = run.judge_score
        rows.append(f"<tr><td class=n>{i}</td><td>{_esc(run.outcome)}</td>"
                    f"<td class=n>{_ms(run.latency_ms)}</td>"
                    f"<td>{_capped(', '.join(failed), LINE_SHOWN)}</td>"
                    f"<td class=n>{'—' if score is None else f'{score:.3f}'}</td></tr>")
    need = math.ceil((result.min_pass_rate or 0) * len(result.runs) - 1e-9)
    rate = ""
    if result.repeat is not None:
        rate = f"<p>pass rate {_esc(repeat_text(result.repeat))}</p>{_interval(result.repeat)}"
        if result.repeat.rule == "sequential":
            need = 0
    needs = f"; minPassRate {result.min_pass_rate or 0:g} needs {need}" if need else ""
    return (f"{rate}<p>{result.passed_runs}/{len(result.runs)} runs passed{needs}</p>"
            "<table><tr><th class=n>run</th>"
            "<th>outcome</th><th class=n>latency</th><th>failed checks</th>"
            "<th class=n>judge</th></tr>" + "".join(rows) + "</table>")


def _interval(record: RepeatRecord) -> str:
    """The pass rate as a dot on a 0–100 % axis, its interval as an error bar, and the
    threshold as a red tick."""
    width, left, span = 320, 10, 300

    def x(value: float) -> float:
        return left + span * value

    label = (f"pass rate {record.pass_rate:.0%}, interval {record.low:.0%} to "
             f"{record.high:.0%}, minPassRate {record.min_pass_rate:g}")
    return _svg(width, 28, label, [
        f'<line x1="{left}" y1="14" x2="{left + span}" y2="14" stroke="#ccc"/>',
        f'<line class="interval" x1="{x(record.low):.1f}" y1="14" x2="{x(record.high):.1f}" '
        'y2="14" stroke="#1565c0" stroke-width="4"/>',
        f'<circle cx="{x(record.pass_rate):.1f}" cy="14" r="4" fill="#0d47a1"/>',
        f'<line class="threshold" x1="{x(record.min_pass_rate):.1f}" y1="4" '
        f'x2="{x(record.min_pass_rate):.1f}" y2="24" stroke="#c62828" stroke-width="2"/>'])


def _detail_items(result: CaseResult) -> list[tuple[str, str]]:
    """(title, HTML) pairs: everything known about the case, each part escaped and capped."""
    items: list[tuple[str, str]] = [("node id", f"<code>{_esc(result.nodeid)}</code>")]
    if result.input is not None:
        items.append(("input", _pre(_json_text(result.input))))
    if result.output is not None:
        shown = min(len(result.output), TEXT_SHOWN)
        note = (f", first {shown:,} shown" if shown < result.output_length else "")
        items.append((f"output ({result.output_length:,} characters{note})",
                      _pre(result.output[:TEXT_SHOWN], TEXT_SHOWN)))
    if result.error is not None:
        expected = " (expected by errorContains)" if result.expected_error else ""
        body = _pre(f"{result.error.type}: {result.error.message}", TEXT_SHOWN)
        if result.error.traceback:
            body += _pre(result.error.traceback)
        items.append((f"error{expected}", body))
    if result.assertions:
        items.append(("assertions", _assertions(result.assertions)))
    elif result.error is None:
        items.append(("assertions", '<span class="note">none: the case checks the run end '
                                    "to end</span>"))
    if result.judge_score is not None or result.judge_reasoning:
        score = "—" if result.judge_score is None else f"{result.judge_score:.3f}"
        body = f"score {score}"
        if result.judge_reasoning:
            body += _pre(result.judge_reasoning)
        items.append(("judge", body))
    if result.runs:
        items.append(("repeats", _runs(result)))
    if result.turns:
        items.append((f"conversation ({len(result.turns)} turns)",
                      glance.conversation(result.turns, _esc)))
    if result.tool_calls:
        items.append(("tool calls", glance.tool_calls(result.tool_calls, _esc,
                                                      result.tool_calls_total)))
    usage = result.usage
    if usage is not None and (used := usage_line(usage.to_data())) is not None:
        model = f" · model <code>{_esc(usage.model)}</code>" if usage.model else ""
        items.append(("usage", _esc(used) + model))
    limit = f"{result.timeout_s:g} s ({result.timeout_source})" if result.timeout_s else "—"
    run = f"time limit {_esc(limit)}; latency {_ms(result.latency_ms)}"
    if result.replayed:
        run += " (recorded, replayed from the cassette)"
    if result.resumed:
        run += " (resumed from the history store's unfinished run, not run again)"
    if result.entry:
        run += f"; entry <code>{_capped(result.entry, LINE_SHOWN)}</code>"
    if result.attempts > 1 or result.retries:
        run += (f"; {result.attempts} attempts, {result.retries} retries, waited "
                f"{result.waited_s:.1f} s" + (" (rate limited)" if result.rate_limited else ""))
    items.append(("run", run))
    snapshot = snapshot_reports.html_item(result, _esc, _pre)
    if snapshot is not None:
        items.append(snapshot)
    for name, value in result.to_data().items():
        if name not in _KNOWN and value not in (None, [], {}, ""):
            items.append((name.replace("_", " "), _pre(_json_text(value))))
    return items


def fragment(result: CaseResult) -> str:
    """One case's details as an HTML fragment of plain elements (for pytest-html's extras).
    It starts with the case's real outcome: pytest-html shows an advisory failure as a
    pass."""
    outcome = outcome_name(result)  # as every report names it (docs/contract.md#html)
    if result.outcome != PASSED and not blocks(result):
        outcome += " (does not fail the run)"
    body = f"<dt>outcome</dt><dd><b>{_esc(outcome)}</b></dd>" + "".join(
        f"<dt>{_esc(title)}</dt><dd>{value}</dd>" for title, value in _detail_items(result))
    return f'<div class="elizon"><dl>{body}</dl></div>'


def _summary_row(index: int, result: CaseResult, cat: str, flaky: bool = False) -> str:
    why = "" if result.outcome == PASSED else _capped(reason(result), LINE_SHOWN)
    if result.repeat is not None:
        why += "".join(f' <span class="b {word.replace(" ", "-")}">{_esc(word)}</span>'
                       for word in tags(result.repeat))
    mark = (' <span class="b flaky" title="its outcome changed back and forth across runs '
            'with the suite, entry point and case unchanged (elizon-eval history)">flaky '
            "across runs</span>") if flaky else ""
    return (f'<summary class="row"><span>{_esc(case_name(result))}{mark}</span>'
            f'<span><span class="b {cat}">{_esc(outcome_name(result))}</span></span>'
            f'<span class="n">{_ms(result.latency_ms)}</span>'
            f'<span class="n u">{glance.usage_cell(result)}</span><span>{why}</span>'
            f'<a class="cp" href="#c{index}" title="copy the node id (to paste after pytest)">'
            "copy id</a></summary>")


def _case(index: int, result: CaseResult, detail: str | None, flaky: bool = False) -> str:
    cat = category(result)
    # The node id is the suite's path and the case id unless pytest was started elsewhere.
    own = (f' data-nodeid="{_esc(result.nodeid)}"'
           if result.nodeid != f"{result.suite.path}::{case_name(result)}" else "")
    if detail is None:
        detail = _LEFT_OUT
    return (f'<details class="case" id="c{index}" data-outcome="{cat}" '
            f'data-id="{_esc(result.case_id)}"{own}>{_summary_row(index, result, cat, flaky)}'
            f'<div class="d">{detail}</div></details>')


#: A case whose details did not fit: short, as there may be thousands.
_LEFT_OUT = '<p class="note">details left out (page size limit; see the note below)</p>'


def _detail(result: CaseResult) -> str:
    return "<dl>" + "".join(f"<dt>{_esc(t)}</dt><dd>{v}</dd>"
                            for t, v in _detail_items(result)) + "</dl>"


# -- charts ----------------------------------------------------------------------------------

def _svg(width: int, height: int, label: str, body: Sequence[str]) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
            f'width="{width}" height="{height}" role="img" aria-label="{_esc(label)}">'
            + "".join(body) + "</svg>")


def _short(path: str, limit: int = 30) -> str:
    # 30 characters of 11 px text fit the charts' 194-unit label column, wide letters too
    return path if len(path) <= limit else "…" + path[-(limit - 1):]


def _outcome_chart(suites: Sequence[SuiteSummary]) -> str:
    """One stacked bar per suite, a segment per category with cases."""
    width, left, bar = 560, 200, 18
    rows = glance.chart_rows(suites)
    height = 24 + len(rows) * (bar + 10)
    body = []
    for i, (label, results, s) in enumerate(rows):
        y = 10 + i * (bar + 10)
        body.append(f'<g class="suite-bar"><text x="{left - 6}" y="{y + 13}" '
                    f'text-anchor="end">{_esc(_short(label))}</text>')
        counts = {c: sum(1 for r in results if category(r) == c) for c in CATEGORIES}
        total = max(1, len(results))
        x = float(left)
        counted = []  # drawn after the interval's whisker, each on a halo of its bar's colour
        for cat in CATEGORIES:
            if not counts[cat]:
                continue
            w = (width - left - 10) * counts[cat] / total
            body.append(f'<rect class="seg" data-outcome="{cat}" data-count="{counts[cat]}" '
                        f'x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar}" '
                        f'fill="{_COLOR[cat]}"><title>{counts[cat]} {cat}</title></rect>')
            if w > 24:
                counted.append(f'<text class="cnt" x="{x + w / 2:.1f}" y="{y + 13}" '
                               f'text-anchor="middle" stroke="{_COLOR[cat]}" stroke-width="4" '
                               f'paint-order="stroke">{counts[cat]}</text>')
            x += w
        found = s.intervals().get("pass_rate") if s is not None else None
        if found is not None:  # the pass rate's interval, on the bar's own 0..1 scale
            span = width - left - 10
            lo, hi = left + span * found.low, left + span * found.high
            body.append(f'<g class="errorbar" data-metric="pass_rate" data-low="{found.low:.4f}" '
                        f'data-high="{found.high:.4f}" stroke="#212121" stroke-width="1.5">'
                        f'<title>pass rate {found.text(format_metric)} ({found.described()})'
                        f'</title><line x1="{lo:.1f}" y1="{y + bar / 2}" x2="{hi:.1f}" '
                        f'y2="{y + bar / 2}"/><line x1="{lo:.1f}" y1="{y + 3}" x2="{lo:.1f}" '
                        f'y2="{y + bar - 3}"/><line x1="{hi:.1f}" y1="{y + 3}" x2="{hi:.1f}" '
                        f'y2="{y + bar - 3}"/></g>')
        body.extend(counted)
        body.append("</g>")
    legend = []
    for j, cat in enumerate(CATEGORIES):
        lx = 10 + j * 88  # from the left edge: six categories fit the chart's width
        legend.append(f'<rect x="{lx}" y="{height - 12}" width="10" height="10" '
                      f'fill="{_COLOR[cat]}"/><text x="{lx + 14}" y="{height - 3}">{cat}</text>')
    return _figure("Outcomes per suite", _svg(width, height + 6, "outcomes per suite",
                                              body + legend), "chart-outcomes")


def _limits(summary: SuiteSummary) -> list[float]:
    found = set()
    for r in summary.results:
        for a in r.assertions:
            m = _LIMIT.match(a.expected) if a.name == "maxLatencyMs" else None
            if m:
                found.add(float(m.group(1)))
    return sorted(found)


def _latency_chart(summary: SuiteSummary) -> str | None:
    """A histogram of the suite's latencies (drawn by :func:`.html_glance.latency_chart`)."""
    title = f"Latency: {_esc(_short(summary.info.path, 60))}"
    return glance.latency_chart(summary, _limits(summary), title, _figure)


def _metric_chart(summary: SuiteSummary) -> str | None:
    """Per metric the author named, the baseline's bar over this run's, each metric on its own
    scale (rates and milliseconds do not share an axis)."""
    rows = [r for r in summary.baseline_rows() if r.metric in summary.info.baseline]
    if not rows:
        return None
    width, left, bar = 560, 130, 12
    height = 10 + len(rows) * (2 * bar + 14)
    body = []
    for i, row in enumerate(rows):
        y = 8 + i * (2 * bar + 14)
        scale = max(abs(row.baseline or 0), abs(float(row.run or 0)),
                    abs(row.interval.high) if row.interval else 0.0) or 1.0
        body.append(f'<text x="{left - 6}" y="{y + bar + 4}" text-anchor="end">'
                    f'{_esc(_short(row.metric, 20))}</text>')
        for j, (cls, value, color) in enumerate((("base", row.baseline, "#9e9e9e"),
                                                 ("run", row.run, "#1565c0"))):
            yy = y + j * (bar + 1)
            if value is None:
                body.append(f'<text x="{left + 2}" y="{yy + 10}" class="{cls}-missing">'
                            f'{_esc(row.comparison)}</text>')
                continue
            w = max(1.0, (width - left - 110) * abs(float(value)) / scale)
            label = "author baseline" if cls == "base" else "this run"
            span = width - left - 110
            # the value is written after the bar and after its whisker, never across it
            end = max(w, span * row.interval.high / scale) if cls == "run" and \
                row.interval is not None else w
            body.append(f'<rect class="{cls}" data-metric="{_esc(row.metric)}" x="{left}" '
                        f'y="{yy}" width="{w:.1f}" height="{bar}" fill="{color}"><title>'
                        f'{label}: {_metric(value, row.metric)}</title></rect>'
                        f'<text x="{left + end + 4:.1f}" y="{yy + 10}">'
                        f'{_metric(value, row.metric)}</text>')
            if cls == "run" and row.interval is not None:
                lo = left + span * max(0.0, row.interval.low) / scale
                hi = left + span * row.interval.high / scale
                body.append(f'<g class="errorbar" data-metric="{_esc(row.metric)}" '
                            f'data-low="{row.interval.low:.6g}" '
                            f'data-high="{row.interval.high:.6g}" stroke="#212121">'
                            f'<title>{row.interval.text(_metric)} '
                            f'({row.interval.described()})</title>'
                            f'<line x1="{lo:.1f}" y1="{yy + bar / 2}" x2="{hi:.1f}" '
                            f'y2="{yy + bar / 2}"/><line x1="{lo:.1f}" y1="{yy + 2}" '
                            f'x2="{lo:.1f}" y2="{yy + bar - 2}"/><line x1="{hi:.1f}" '
                            f'y1="{yy + 2}" x2="{hi:.1f}" y2="{yy + bar - 2}"/></g>')
    title = f"Author baseline (grey) vs this run (blue): {_esc(_short(summary.info.path, 50))}"
    return _figure(title, _svg(width, height, "baseline against this run", body), "chart-metrics")


def _regression_chart(regression: Regression) -> str:
    counts = regression.counts()
    kinds = [kind for kind in CHANGES if kind in counts]  # "not run" only when some case is
    width, left, bar = 560, 90, 16
    height = 8 + len(kinds) * (bar + 6)
    peak = max(counts.values()) or 1
    body = []
    for i, kind in enumerate(kinds):
        y = 4 + i * (bar + 6)
        w = (width - left - 60) * counts[kind] / peak
        body.append(f'<text x="{left - 6}" y="{y + 12}" text-anchor="end">{kind}</text>'
                    f'<rect class="change" data-change="{kind}" data-count="{counts[kind]}" '
                    f'x="{left}" y="{y}" width="{w:.1f}" height="{bar}" fill="{_COLOR[kind]}"/>'
                    f'<text x="{left + w + 4:.1f}" y="{y + 12}">{counts[kind]}</text>')
    return _figure(f"Changes since {_esc(regression.baseline_file)}",
                   _svg(width, height, "changes since the baseline run", body),
                   "chart-regression")


def _cost(result: CaseResult) -> float | None:
    cost = result.usage.cost_usd if result.usage else None
    return float(cost) if isinstance(cost, (int, float)) else None


def _cost_chart(suites: Sequence[SuiteSummary]) -> str | None:
    """Cost per suite, when cases carry usage with a cost (agents' answers)."""
    totals = [(label, [c for c in map(_cost, results) if c is not None])
              for label, results, _ in glance.chart_rows(suites)]
    if not any(costs for _, costs in totals):
        return None
    width, left, bar = 560, 200, 16
    height = 8 + len(totals) * (bar + 6)
    peak = max(sum(c) for _, c in totals) or 1.0
    body = []
    for i, (label, costs) in enumerate(totals):
        y = 4 + i * (bar + 6)
        w = (width - left - 80) * sum(costs) / peak
        body.append(f'<text x="{left - 6}" y="{y + 12}" text-anchor="end">'
                    f'{_esc(_short(label))}</text><rect class="cost" x="{left}" y="{y}" '
                    f'width="{w:.1f}" height="{bar}" fill="#6d4c41"/>'
                    f'<text x="{left + w + 4:.1f}" y="{y + 12}">'
                    f'{dollars(sum(costs) if costs else None)}</text>')
    return _figure("Cost per suite (US$)", _svg(width, height, "cost per suite", body),
                   "chart-cost")


def _figure(title: str, svg: str, cls: str) -> str:
    return f'<figure class="{cls}"><figcaption>{title}</figcaption>{svg}</figure>'


# -- overview --------------------------------------------------------------------------------

def _baseline_table(rows: Sequence[BaselineRow]) -> str:
    if not rows:
        return ""
    body = "".join(
        f"<tr><td>{glance.breakable(r.metric, _esc)}</td><td class=n>"
        f"{_metric(r.baseline, r.metric, '—')}"
        f"</td><td class=n>{_metric(r.run, r.metric, '—')}</td><td class=\"n iv\">"
        f"{interval_cell(r.interval, _metric) or '—'}</td><td class=n>"
        f"{format_delta(r.delta, r.metric, '—')}</td>"
        f"<td>{_esc(comparison_text(r.comparison, r.noise))}</td></tr>"
        for r in rows)
    level = f"{rows[0].interval.confidence:.0%} " if rows[0].interval else ""
    return ('<table class="baseline"><tr><th>metric</th><th class=n>author baseline</th>'
            f'<th class=n>this run</th><th class=n>{level}interval</th><th class=n>Δ</th>'
            f"<th>vs baseline</th></tr>{body}</table>")


def _card(summary: SuiteSummary) -> str:
    info = summary.info
    counts = {c: sum(1 for r in summary.results if category(r) == c) for c in CATEGORIES}
    n = len(summary.results)
    rate = f"{counts[PASSED] / n:.1%}" if n else "—"
    gate = info.gate + (" (counted as must-pass)" if info.gate == "advisory"
                        and not info.advisory else "")
    badges = "".join(f'<span class="b {c if counts[c] else "zero"}">{counts[c]} {c}</span>'
                     for c in CATEGORIES)
    rows = summary.baseline_rows()
    named = [r for r in rows if r.metric in info.baseline]
    table = (_baseline_table(named) if named
             else '<p class="note">no author baseline for this suite</p>')
    table += f"<details><summary>all metrics</summary>{_baseline_table(rows)}</details>"
    other_cases = dataset_note(info)
    if other_cases:  # above the table it qualifies (docs/format.md#dataset-hash)
        table = f'<p class="ko dataset-mismatch">⚠️ {_esc(other_cases)}</p>' + table
    return (f'<div class="card {summary.verdict}" data-path="{_esc(info.path)}">'
            f'<h3>{_VERDICT[summary.verdict]} · {_esc(info.path)}</h3>'
            f'<div class="meta">package <b>{_esc(info.package or "—")}</b> · gate '
            f"<b>{_esc(gate)}</b> · {n} cases · pass rate <b>{rate}</b></div>"
            f'<div class="counts">{badges}</div>'
            + "".join(f'<p class="note interval">{_esc(said)}</p>' for said in summary_sentences(
                summary.intervals(), summary.detectable_drop(), _metric))
            + table + measures_html(summary.measures(), _esc,
                                    lambda name: glance.breakable(name, _esc)) + "</div>")


def _regression_list(regression: Regression) -> str:
    moved = [c for c in regression.changes if c.change in ("regressed", "not run", "improved")]
    badge = {"regressed": "failed", "not run": "error", "improved": "passed"}
    items = "".join(f'<tr><td><span class="b {badge[c.change]}"'
                    f'>{c.change}</span></td><td><code>{_esc(c.nodeid)}</code></td>'
                    f"<td>{_esc(c.before or '—')} → {_esc(c.after or '—')}</td></tr>"
                    for c in moved)
    changed = "".join(f"<li>The suite file <code>{_esc(p)}</code> changed since that run.</li>"
                      for p in regression.changed_suites)
    table = ("<table><tr><th>change</th><th>case</th><th>outcome then → now</th></tr>"
             f"{items}</table>") if items else "<p>No case regressed or improved.</p>"
    rows = "".join(
        f'<tr class="significance" data-verdict="{_esc(c.verdict)}"><td><code>'
        f"{_esc(c.suite)}</code></td><td>{_esc(c.metric)}</td><td>{c.test}</td>"
        f"<td class=n>{_metric(c.before, c.metric)}</td>"
        f"<td class=n>{_metric(c.after, c.metric)}</td><td class=n>{c.change:+.3g} "
        f"[{c.low:+.3g}, {c.high:+.3g}]</td><td class=n>{c.p_value:.3g} "
        f"({c.adjusted_p:.3g})</td><td><span class=\"b "
        f'{"failed" if c.regressed else "passed" if c.significant else "zero"}">'
        f"{_esc(c.verdict)}</span></td></tr>" for c in regression.significance)
    significance = ("<table><tr><th>suite</th><th>metric</th><th>test</th><th class=n>before"
                    "</th><th class=n>after</th><th class=n>change [interval]</th><th class=n>"
                    f"p (Holm)</th><th>verdict</th></tr>{rows}</table>") if rows else ""
    note = (f'<p class="note fails-run">{_esc(regression.verdict_note())}</p>'
            if regression.fails_run else "")
    return f'<div class="regression">{note}{table}{significance}<ul>{changed}</ul></div>'


# -- the page --------------------------------------------------------------------------------

def _sorted(results: Sequence[CaseResult]) -> list[CaseResult]:
    return sorted(results, key=lambda r: _ORDER[category(r)])  # stable: file order within


def render(aggregate: Aggregate, regression: Regression | None = None,
           limit: int = LIMIT_BYTES, history: History | None = None) -> str:
    """The whole page, at most about ``limit`` bytes of UTF-8 (:func:`chunks` joined)."""
    return "".join(chunks(aggregate, regression, limit, history))


def _compact(result: CaseResult, flaky: set[str]) -> bool:
    """A case that gets one line, not a row with details, on a page too big for every row
    (docs/contract.md#html-report): a pass, neither flaky across runs nor among its
    repeats."""
    return category(result) == PASSED and result.nodeid not in flaky \
        and not (result.repeat is not None and result.repeat.flaky)


def _compact_table(results: Sequence[CaseResult]) -> Iterator[str]:
    """A suite's passing cases, one line each: id, latency and (when any reported usage)
    tokens · cost. HTML's optional end tags left out: ~35 bytes and the id per case."""
    usage = any(r.usage is not None for r in results)
    yield (f'<details class="passing"><summary>{len(results):,} passing case'
           f'{"s" if len(results) != 1 else ""}, one line each</summary>'
           '<table class="compact"><tr><th>case<th class=n>latency (ms)'
           + ("<th class=n>tokens · cost" if usage else ""))
    for r in results:
        yield (f"<tr><td>{_esc(case_name(r))}<td class=n>"
               + ("—" if r.latency_ms is None else f"{r.latency_ms:.1f}")
               + (f"<td class=n>{glance.usage_cell(r)}" if usage else ""))
    yield "</table></details>"


def chunks(aggregate: Aggregate, regression: Regression | None = None,
           limit: int = LIMIT_BYTES, history: History | None = None) -> Iterator[str]:
    """The page piece by piece, one case's row at a time (a page of 100,000 cases is never
    one string in memory); with ``history`` (the history store's last runs) a trend strip
    per suite, and flaky cases marked. Where every case's row would not fit in ``limit``
    bytes, passing cases get one line each (:func:`_compact_table`) and the rest stays
    within about ``limit``."""
    suites = aggregate.suites()
    flaky = trend.flaky_nodeids(history)
    passed, paragraph = run_verdict(aggregate, regression)
    verdict = "PASS" if passed else "FAIL"
    ordered = [(s, _sorted(s.results)) for s in suites]
    rows = {r.nodeid: i for i, r in enumerate(r for _, rs in ordered for r in rs)}
    # The top says the verdict in a line and what needs a look; the paragraph naming every
    # suite is one click away.
    head = (f'<section class="verdict {"pass" if passed else "fail"}" id="verdict">'
            f"<h1>Elizon eval: {verdict}</h1>"
            f'<p class="headline">{_esc(glance.headline(aggregate))}</p>'
            + (f'<p class="cost">{_esc(spent)}</p>' if (spent := aggregate.cost_note()) else "")
            + (f"<p>{_esc(note)}</p>" if (note := aggregate.rate_limit_note()) else "")
            + (f"<p><strong>Must-pass gate: {_esc(aggregate.override_note)}</strong></p>"
               if aggregate.override_note else "")
            + f"<details><summary>the verdict, suite by suite</summary>"
              f"<p>{_esc(paragraph)}</p></details></section>")
    if suites:
        head += glance.attention(aggregate, rows, _esc, category)
    groups, probes = glance.package_groups(suites)
    cards = "<h2>Suites</h2>"
    if probes:
        cards += ('<div class="cards">' + glance.security_card(probes, rows, _esc)
                  + "</div>")
    for package, members in groups:
        cards += (f'<h3 class="pkg">package {_esc(package or "—")}</h3><div class="cards">'
                  + "".join(map(_card, members)) + "</div>")
    charts = [_outcome_chart(suites)] if suites else []
    charts += [c for s in suites if not glance.is_probe_suite(s)  # in the Security card
               for c in (_latency_chart(s), _metric_chart(s)) if c]
    cost = _cost_chart(suites)
    if cost:
        charts.append(cost)
    if regression is not None:
        charts.append(_regression_chart(regression))
    if history is not None:  # docs/contract.md#html-report: the suite's last runs
        charts += [trend.strip(s.info.path, history.trends[s.info.path], history.current)
                   for s in suites if history.trends.get(s.info.path)]
    chart_html = '<h2>Charts</h2><div class="charts">' + "".join(charts) + "</div>"
    changes = ("<h2>Changes since the baseline run</h2>" + _regression_list(regression)
               if regression is not None else "")
    filters = ('<div class="filters">' + "".join(
        f'<label><input type="checkbox" data-outcome="{c}" checked> '
        f'<span class="b {c}">{c}</span></label>' for c in CATEGORIES)
        + '<input type="search" id="q" placeholder="filter by text (id, outcome, reason)" '
        'aria-label="filter cases by text"><span id="status" role="status"></span></div>')

    # Every case's row is on the page; its details while they fit, failures' first.
    changes += compliance_part(aggregate, _esc)
    for compared in aggregate.variant_comparisons():  # docs/contract.md#variant-comparison
        changes += variants.html(compared, [r for s in suites if s.info.package ==
                                            compared.package for r in s.results])
    judged = judges.html_section(aggregate)
    fixed = [head, cards, chart_html, changes, judged, filters]
    used = sum(len(p.encode("utf-8")) for p in fixed) + len(_CSS) + len(_JS) + 4096

    def row_bytes(results: Iterable[CaseResult], stop: float = math.inf) -> int:
        """The rows' bytes (made and dropped one at a time), counted up to ``stop``."""
        total = 0
        for r in results:
            total += len(_case(rows[r.nodeid], r, None).encode("utf-8"))
            if total > stop:
                break
        return total

    compact = used + row_bytes((r for _, rs in ordered for r in rs), limit - used) > limit
    shown = [(s, [r for r in rs if not (compact and _compact(r, flaky))]) for s, rs in ordered]
    used += row_bytes(r for _, rs in shown for r in rs)
    details: dict[str, str] = {}
    left_out = 0
    for r in sorted((r for _, rs in shown for r in rs),
                    key=lambda r: (category(r) == PASSED, rows[r.nodeid])):
        text = _detail(r)
        size = len(text.encode("utf-8")) - len(_LEFT_OUT)
        if used + size > limit:
            left_out += 1
            continue
        details[r.nodeid] = text
        used += size
    csp = (f"default-src 'none'; style-src '{_sha256(_CSS)}'; script-src '{_sha256(_JS)}'; "
           "img-src 'none'; base-uri 'none'; form-action 'none'")
    yield from [
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>Elizon eval: {verdict}</title><style>{_CSS}</style></head><body><main>",
        head, cards, chart_html, changes, judged, '<h2 id="cases">Cases</h2>', filters]
    passing = sum(len(rs) for _, rs in ordered) - sum(len(rs) for _, rs in shown)
    if passing:
        yield (f'<p class="note" id="compact">This run has {len(rows):,} cases, too many for '
               f"a row with details each: the {passing:,} passing ones are listed one line "
               "each (id, latency) at the end of their suite's table, without details; the "
               "results JSON (--elizon-results) has everything.</p>")
    for (s, rs), (_, listed) in zip(ordered, shown, strict=True):
        yield (f'<section class="suite"><h3>{_esc(s.info.path)}</h3>'
               f'<div class="head"><span>case</span><span>outcome</span>'
               f'<span class="n">latency</span><span class="n u">tokens · cost</span>'
               f'<span>failed checks</span><span></span>'
               f'</div><div class="rows" data-path="{_esc(s.info.path)}">')
        for r in listed:
            yield _case(rows[r.nodeid], r, details.get(r.nodeid), r.nodeid in flaky)
        yield "</div>"
        if len(listed) < len(rs):
            yield from _compact_table([r for r in rs if _compact(r, flaky)])
        yield "</section>"
    if left_out:
        yield (f'<p class="note" id="left-out">The details of {left_out:,} cases were '
               "left out to keep this page under 5 MB; the results JSON "
               "(--elizon-results) has everything.</p>")
    if not suites:
        yield "<p>No Elizon cases ran.</p>"
    yield f"</main><script>{_JS}</script></body></html>\n"
