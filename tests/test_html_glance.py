"""The HTML report read at a glance: the top of the page, suites by package, the Security
card, tokens and cost per case, conversations as turns, the latency chart's scale and
labels, costs in significant digits, pytest-html extras — directly. The page is also
checked in headless Chromium at two widths (test_html.py, sharing its browser), where no
element may overflow its card and no chart label may overlap another (measured from the
DOM, getBoundingClientRect)."""

from __future__ import annotations

import itertools
import re
from typing import Any

from pytest_elizon_eval.decide.outcomes import CaseResult, SuiteInfo
from pytest_elizon_eval.decide.results_data import (
    LabelRecord,
    ProbeRecord,
    RagRecord,
    SecurityRecord,
    ToolCallRecord,
    TurnRecord,
)
from pytest_elizon_eval.reporting import html as page
from pytest_elizon_eval.reporting import html_glance as glance
from pytest_elizon_eval.reporting.aggregate import Aggregate
from pytest_elizon_eval.reporting.usage_text import dollars
from pytest_elizon_eval.run.assertions import AssertionResult
from pytest_elizon_eval.run.calls import Usage

AGENT = SuiteInfo("support-agent/eval/agent-suite.yaml", "support-agent", "must-pass", False,
                  {"pass_rate": 1.0, "total_cost_usd": 0.0002, "mean_cost_usd": 0.00004,
                   "mean_tokens": 125.0, "p95_latency_ms": 50.0})
TRIAGE = SuiteInfo("triage/eval/triage.yaml", "triage", "must-pass", False,
                   {"pass_rate": 0.9})
# a long path of wide letters: its chart label must still fit the label column
TONE = SuiteInfo("triage/eval/noisy-model/mood/undecided.yaml", "triage", "advisory", True,
                 {})
PROBES = SuiteInfo("support-agent/elizon.yaml::redteam:injection", "support-agent",
                   "advisory", True, {})
_LINES = itertools.count(2)
LABELS = (*(f"queue-{n}" for n in range(11)), "refunds.and.chargebacks." * 8)
SLOW_LIMIT = AssertionResult("maxLatencyMs", True, "at most 60000 ms", "took 40.0 ms")
NEAR_LIMIT = AssertionResult("maxLatencyMs", True, "at most 45 ms", "took 40.0 ms")
MISSING = AssertionResult("contains", False, "every one of: 'refund'", "missing: 'refund'")


def case(suite: SuiteInfo, case_id: str, outcome: str = "passed", **fields: Any) -> CaseResult:
    fields.setdefault("latency_ms", 40.0)
    return CaseResult(nodeid=f"{suite.path}::{case_id}", case_id=case_id, line=next(_LINES),
                      suite=suite, outcome=outcome, output=fields.pop("output", "fine"),
                      output_length=4, timeout_s=30.0, timeout_source="the suite", **fields)


def probe(case_id: str, outcome: str = "passed") -> CaseResult:
    return case(PROBES, case_id, outcome, security=SecurityRecord(probe=ProbeRecord(
        "prompt-injection", "high", "redteam:injection", "support-agent/elizon.yaml", 9)))


TURNS = (TurnRecord(1, "weather in Paris?", "passed", "", 0, 31.0, (),
                    tool_calls=(ToolCallRecord("get_weather", {"city": "Paris"},
                                               {"temp_c": 21}, id="call_srv_1"),),
                    usage=Usage(50, 10, 4.89e-05, "gpt-4o-mini")),
         TurnRecord(2, "So?", "failed", "It is warm.", 11, 29.0, (MISSING,),
                    usage=Usage(150, 12, 0.000131, "gpt-4o-mini")))


def realistic() -> Aggregate:
    results = [
        case(AGENT, "searches", assertions=(SLOW_LIMIT,),
             usage=Usage(82, 17, 4.8899999999999996e-05, "gpt-4o-mini"),
             tool_calls=(ToolCallRecord("search_invoices", {"status": "overdue"},
                                        [{"id": "INV-1"}], id="call_abc"),)),
        case(AGENT, "refund-flow", "failed", assertions=(MISSING,), turns=TURNS, failed_turn=2,
             turn_count=2, usage=Usage(20000, 2200, 0.00018, "gpt-4o-mini"),
             latency_ms=60.0),  # the widest tokens · cost of a row: 22200 · $0.000180
        case(AGENT, "unpriced", usage=Usage(90, 10, None, "local-model"), latency_ms=35.0),
        # a router's classification of 13 labels, one as long as a label may be and
        # unbroken: its table and its heatmap (wider than a card at 700 px) must fit the card
        *[case(TRIAGE, f"route-{n}", assertions=(NEAR_LIMIT,), latency_ms=20.0 + n,
               label=LabelRecord(LABELS[n], LABELS[n + 6]))
          for n in range(6)],
        case(TRIAGE, "too-slow", "timeout", latency_ms=None, output=None,
             label=LabelRecord(LABELS[-1])),
        case(TONE, "friendly", "failed", assertions=(MISSING,),
             rag=RagRecord(0.8, 0.6, 1.0, 0.5, contexts=2, relevant=1)),
        *[probe(f"injection-{n}") for n in range(4)],
        probe("injection-leak", "failed"),
    ]
    aggregate = Aggregate()
    for r in results:
        aggregate.add(r.to_data())
    return aggregate


def test_costs_have_significant_digits_and_a_dash_when_unmeasured() -> None:
    assert [dollars(v) for v in (4.8899999999999996e-05, 0.0012, 1.5, 0, None)] == [
        "$0.0000489", "$0.00120", "$1.50", "$0", "—"]
    text = page.render(realistic())
    assert re.findall(r"\$0\.0+(?![0-9])", text) == []  # no cost rounded away
    assert ">$0.0000400</td>" in text  # the baseline's mean cost, in the card
    # the cost chart: a suite with no measured cost shows a dash, not $0.0000
    cost = text[text.index('class="chart-cost"'):]
    cost = cost[:cost.index("</figure>")]
    assert cost.count(">—</text>") == 3  # triage, tone, and the probe pack
    assert "$0.000229" in cost  # support-agent: the two priced cases


def test_the_top_says_the_verdict_and_what_needs_attention_first() -> None:
    text = page.render(realistic())
    top = text[text.index('id="verdict"'):text.index("<h2>Suites</h2>")]
    assert ("16 cases in 4 suites of 2 packages: 12 passed, 1 failed, 1 timeout, "
            "2 advisory, not passed") in top
    blocking = top[top.index("Needs attention"):top.index("Advisory:")]
    assert blocking.index("refund-flow") < blocking.index("too-slow")  # failures first
    assert "2 cases fail the run" in blocking
    advisory = top[top.index("Advisory:"):]
    assert "friendly" in advisory
    assert "injection-leak" in advisory
    assert "friendly" not in blocking
    assert 'href="#c' in blocking  # each links to its row
    calm = page.render(Aggregate())
    assert "Needs attention" not in calm


def test_suites_are_grouped_by_package_and_probes_fold_into_one_security_card() -> None:
    text = page.render(realistic())
    suites = text[text.index("<h2>Suites</h2>"):text.index("<h2>Charts</h2>")]
    assert suites.count('class="card security') == 1
    assert "5 probes in 1 suite" in suites
    assert "1 got through" in suites
    assert suites.index('package support-agent') < suites.index('package triage')
    triage = suites[suites.index('package triage'):]
    assert triage.count('<div class="card ') == 2  # triage.yaml and tone.yaml together
    assert "redteam:injection" not in suites.replace("redteam:injection</", "")
    for chart in ("chart-outcomes", "chart-cost"):  # the charts fold the pack alike
        shown = text[text.index(f'class="{chart}"'):]
        shown = shown[:shown.index("</figure>")]
        assert "security probes (1 suite)</text>" in shown
        assert "redteam" not in shown


def test_case_rows_carry_tokens_and_cost_and_conversations_read_as_turns() -> None:
    text = page.render(realistic())
    row = text[text.index('data-id="searches"'):]
    assert '<span class="n u">99 · $0.0000489</span>' in row[:row.index("</summary>")]
    unpriced = text[text.index('data-id="unpriced"'):]
    assert '<span class="n u">100 · —</span>' in unpriced[:unpriced.index("</summary>")]
    flow = text[text.index('data-id="refund-flow"'):]
    flow = flow[:flow.index("</details>")]
    assert '<ol class="conv">' in flow
    assert "<code>get_weather({&quot;city&quot;: &quot;Paris&quot;})</code> → " \
           "{&quot;temp_c&quot;: 21}" in flow
    assert "call_srv_1" in flow
    assert "turns</dt>" not in flow  # not dumped as JSON
    assert "60 tokens (50 in, 10 out), $0.0000489" in flow


def test_the_latency_axis_fits_the_latencies_and_names_a_far_limit() -> None:
    text = page.render(realistic())
    agent = text[text.index("Latency: support-agent/eval"):]
    agent = agent[:agent.index("</figure>")]
    assert "max 60000 ms → off scale" in agent
    assert "Latency: support-agent/elizon.yaml" not in text  # probes: the Security card
    assert 'class="limit"' not in agent  # not drawn to scale
    assert ">63.0 ms</text>" in agent  # the axis: the slowest answer, 60 ms, and 5 %
    triage = text[text.index("Latency: triage/eval/triage.yaml"):]
    triage = triage[:triage.index("</figure>")]
    assert triage.count('class="limit"') == 1  # 45 ms: near the answers, drawn


def test_labels_that_would_collide_get_rows_of_their_own() -> None:
    rows = glance._label_rows([(100, "p50 40.0"), (104, "max 45 ms"), (300, "p95 41.0")],
                              560)
    assert rows == [0, 1, 0]
    assert glance._label_rows([(550, "max 60000 ms")], 560) == [0]  # anchored at its end


def test_pytest_html_extra_states_the_real_outcome_and_formats_usage() -> None:
    results = {r.case_id: r for s in realistic().suites() for r in s.results}
    friendly = page.fragment(results["friendly"])
    assert "<dt>outcome</dt><dd><b>advisory_failed (does not fail the run)</b>" in friendly
    searches = page.fragment(results["searches"])
    assert "99 tokens (82 in, 17 out), $0.0000489" in searches
    assert "4.8899999999999996e-05" not in searches


# -- for the browser test in test_html.py (it shares that module's Chromium) -----------------

WIDTHS = (1280, 700)

#: Every element inside a card that sticks out of the card (1 px for rounding).
OVERFLOWING = """
var out = [];
document.querySelectorAll('.card').forEach(function (card) {
  var box = card.getBoundingClientRect();
  card.querySelectorAll('*').forEach(function (el) {
    if (el.closest('details:not([open])') && el.closest('details') !== card) {
      if (el.tagName !== 'SUMMARY' && !el.closest('summary')) { return; }
    }
    var r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) { return; }
    if (r.left < box.left - 1 || r.right > box.right + 1) {
      out.push(card.getAttribute('data-path') + ': ' + el.tagName + ' '
               + (el.textContent || '').slice(0, 40) + ' ' + r.left + '-' + r.right
               + ' outside ' + box.left + '-' + box.right);
    }
  });
});
return out;
"""

#: Every word of a card's table that the browser broke across lines (a number, a metric name
#: between the breaks :func:`html_glance.breakable` allows), and every case row's cell cut
#: short (an ellipsis hides the end of "22200 · $0.000180").
BROKEN = """
var out = [];
document.querySelectorAll('.card td').forEach(function (td) {
  var walk = document.createTreeWalker(td, NodeFilter.SHOW_TEXT), node;
  while ((node = walk.nextNode())) {
    var words = /\\S+/g, m;
    while ((m = words.exec(node.data))) {
      var range = document.createRange();
      range.setStart(node, m.index);
      range.setEnd(node, m.index + m[0].length);
      if (range.getClientRects().length > 1) { out.push('broken: ' + m[0]); }
    }
  }
});
document.querySelectorAll('summary.row > span.u').forEach(function (cell) {
  if (cell.offsetParent !== null && cell.scrollWidth > cell.clientWidth) {
    out.push('cut short: ' + cell.textContent);
  }
});
return out;
"""

#: Every pair of text labels in one chart whose boxes overlap, labels outside the chart, and
#: labels an interval's whisker crosses (a count on its bar is drawn over it, on a halo).
COLLIDING = """
var out = [];
document.querySelectorAll('figure svg').forEach(function (svg) {
  var box = svg.getBoundingClientRect();
  var texts = Array.from(svg.querySelectorAll('text')).map(function (t) {
    return [t.textContent, t.getBoundingClientRect()];
  });
  svg.querySelectorAll('g.errorbar line').forEach(function (line) {
    var l = line.getBoundingClientRect();
    svg.querySelectorAll('text:not(.cnt)').forEach(function (t) {
      var r = t.getBoundingClientRect();
      if (r.left < l.right && l.left < r.right && r.top < l.bottom && l.top < r.bottom) {
        out.push('whisker across: ' + t.textContent);
      }
    });
  });
  texts.forEach(function (a, i) {
    var r = a[1];
    if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1) {
      out.push('outside: ' + a[0]);
    }
    texts.slice(i + 1).forEach(function (b) {
      var s = b[1];
      if (r.left < s.right && s.left < r.right && r.top < s.bottom && s.top < r.bottom) {
        out.push(a[0] + ' overlaps ' + b[0]);
      }
    });
  });
});
return out;
"""
