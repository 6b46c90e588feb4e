"""The markdown summary (``--elizon-markdown=PATH`` and ``$GITHUB_STEP_SUMMARY``).

What it holds is docs/contract.md#reports.

Per suite: a verdict line (✅ / ❌ / ⚠️ advisory), the baseline table (with a
warning above it when the author's baseline was measured on other cases), a table
of the cases that failed or timed out, and their outputs in collapsed
``<details>``. Every string a model or an entry point produced is escaped so
a table keeps its columns and nothing renders as HTML: table cells get
``|``, backticks, newlines and ``<>&`` escaped; outputs go in a code fence
longer than any backtick run inside them. The whole document stays under
GitHub's 1 MiB step-summary limit, with a note of what was left out.
"""

from __future__ import annotations

import html
import re

from ..decide.outcomes import PASSED, CaseResult, conversation_text, outcome_name, reason
from ..decide.wording import case_name
from ..measures.rendering import markdown_lines as measures_markdown
from ..text import cap, visible
from . import compliance, judges, repeats, security, snapshot_reports, variants
from .aggregate import Aggregate, SuiteSummary, format_delta, format_metric
from .escaping import cell
from .intervals import comparison_text, interval_cell, summary_sentences
from .regression import Regression, dataset_note, shown_verdict
from .regression import verdict as run_verdict
from .usage_text import usage_line

__all__ = ["LIMIT_BYTES", "cell", "render"]

#: GitHub drops a step summary over 1 MiB whole; stay well under it.
LIMIT_BYTES = 1024 * 1024 - 16 * 1024
#: Characters of one case's output shown in its <details>.
OUTPUT_SHOWN = 4000
_VERDICT = {"pass": "✅", "fail": "❌", "advisory": "⚠️"}


def _fence(text: str) -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"


def _baseline_table(summary: SuiteSummary) -> list[str]:
    rows = summary.baseline_rows()
    if not rows:
        return []
    lines = [f"| metric | author baseline | this run | {summary.confidence:.0%} interval | Δ "
             "| vs baseline |", "|---|---|---|---|---|---|"]
    for row in rows:
        delta = format_delta(row.delta, row.metric, "—")
        baseline = format_metric(row.baseline, row.metric, "—")
        run = format_metric(row.run, row.metric, "—")
        interval = interval_cell(row.interval, format_metric) or "—"
        lines.append(f"| {cell(row.metric)} | {baseline} | {run} | {interval} | {delta} | "
                     f"{cell(comparison_text(row.comparison, row.noise))} |")
    return lines


def _latency(result: CaseResult) -> str:
    return "—" if result.latency_ms is None else f"{result.latency_ms:.1f} ms"


def _usage(result: CaseResult) -> str:
    shown = usage_line(result.usage.to_data()) if result.usage is not None else None
    return "—" if shown is None else cell(shown)


def _details(result: CaseResult) -> str:
    if result.turns:  # a conversation: each turn's input, answer, tool calls and checks
        said, _ = cap(conversation_text(result), OUTPUT_SHOWN)
        title = html.escape(f"{case_name(result)}: {len(result.turns)} turns")
        return f"<details><summary>{title}</summary>\n\n{_fence(said)}\n\n</details>\n"
    shown, cut = cap(result.output or "", OUTPUT_SHOWN)
    note = f", first {len(shown):,} shown" if cut or result.output_length > len(shown) else ""
    summary = html.escape(f"{case_name(result)} output ({result.output_length:,} chars{note})")
    return f"<details><summary>{summary}</summary>\n\n{_fence(visible(shown))}\n\n</details>\n"


class _Budget:
    """Parts of the document, added only while they fit under the limit."""

    def __init__(self, limit: int) -> None:
        self.parts: list[str] = []
        self.left = limit
        self.dropped = 0

    def add(self, text: str, *, optional: bool = False) -> bool:
        size = len(text.encode("utf-8", "replace")) + 1
        if optional and size > self.left:
            self.dropped += 1
            return False
        self.parts.append(text)
        self.left -= size
        return True


def render(aggregate: Aggregate, regression: Regression | None = None,
           limit: int = LIMIT_BYTES) -> str:
    """The whole summary, at most ``limit`` bytes of UTF-8."""
    doc = _Budget(limit - 1024)  # room for the closing note
    passed, paragraph = run_verdict(aggregate, regression)
    mark = "✅" if passed else "❌"
    doc.add(f"# Elizon eval\n\n{mark} {cell(paragraph)}\n")
    note = aggregate.rate_limit_note()
    if note:
        doc.add(f"⏳ {cell(note)}\n")
    resumed = sum(1 for s in aggregate.suites() for r in s.results if r.resumed)
    if resumed:  # docs/contract.md#resume
        doc.add(f"⏯️ {resumed} case{'s' if resumed != 1 else ''} resumed from the history "
                "store's unfinished run (not run again).\n")
    for compared in aggregate.variant_comparisons():  # docs/contract.md#variant-comparison
        doc.add(variants.markdown(compared))
    for summary in aggregate.suites():
        info = summary.info
        gate = info.gate + (" (does not fail the run)" if summary.verdict == "advisory" else "")
        shown = ["passed", "failed", "timeout"] + (["error"] if summary.count("error") else [])
        shown += ["inconclusive"] if summary.count("inconclusive") else []
        counts = " · ".join(f"{summary.count(o)} {o}" for o in shown)
        if summary.teardown_errors:  # docs/contract.md#reports: the run failed all the same
            counts += (f" · {summary.teardown_errors} teardown error"
                       f"{'s' if summary.teardown_errors != 1 else ''}")
        doc.add(f"## {_VERDICT[summary.verdict]} {cell(info.path)}\n\n"
                f"Package **{cell(info.package)}**, gate **{gate}**: {counts}.\n")
        # one interval over every variant's runs says nothing: each variant has its row
        # in the comparison above (docs/contract.md#variant-comparison)
        said = [] if info.variants else summary_sentences(
            summary.intervals(), summary.detectable_drop(), format_metric)
        if said:
            doc.add(cell(" · ".join(said)) + "\n")
        elif info.variants:
            doc.add(f"Run under {len(info.variants)} variants: each is compared with "
                    f"{cell(info.variants[0])} in *Variants of package {cell(info.package)}*.\n")
        other_cases = dataset_note(info)
        if other_cases:  # docs/format.md#dataset-hash
            doc.add(f"⚠️ {cell(other_cases)}\n")
        table = _baseline_table(summary)
        if table:
            doc.add("\n".join(table) + "\n")
        for line in repeats.markdown_lines(summary, cell):
            doc.add(line, optional=True)
        measured = measures_markdown(summary.measures(), cell)
        if measured:  # docs/contract.md#task-metrics; left out past the size limit
            doc.add("\n".join(measured), optional=True)
        failing = [r for r in summary.results if r.outcome != PASSED]
        if not failing:
            continue
        rows = ["| case | outcome | failed assertions | latency | tokens, cost |",
                "|---|---|---|---|---|"]
        doc.add("### Cases that did not pass\n\n" + "\n".join(rows))
        for r in failing:
            doc.add(f"| `{cell(case_name(r))}` | {outcome_name(r)} | {cell(reason(r))} | "
                    f"{_latency(r)} | {_usage(r)} |", optional=True)
        doc.add("")
        for r in failing:
            if r.output is not None:
                doc.add(_details(r), optional=True)
    for line in security.markdown_lines(aggregate, cell):
        doc.add(line)
    for line in snapshot_reports.markdown_lines(aggregate, cell):
        doc.add(line, optional=line.startswith("<details>"))
    for line in judges.markdown_lines(aggregate, cell):
        doc.add(line)
    for line in compliance.markdown_lines(aggregate, cell):
        doc.add(line)
    if regression is not None:
        doc.add(f"## Changes since {cell(regression.baseline_file)}\n\n" + " · ".join(
            f"{n} {kind}" for kind, n in regression.counts().items()) + "\n")
        for path in regression.changed_suites:
            doc.add(f"- The suite file `{cell(path)}` changed since that run.")
        for m in regression.metric_changes:
            verdict = f"{'❌' if m.regressed else '✅'} {m.words}"
            doc.add(f"- {verdict}: `{cell(m.suite)}` {cell(m.metric)} "
                    f"{cell(format_metric(m.before, m.metric))} → "
                    f"{cell(format_metric(m.after, m.metric))}")
        if regression.significance:
            doc.add(f"\n| suite | metric | test | before | after | change "
                    f"[{aggregate.confidence:.0%} interval] | p (Holm) | verdict |\n"
                    "|---|---|---|---|---|---|---|---|")
            for row in regression.significance:
                mark = "❌ " if row.regressed else ("✅ " if row.significant else "")
                doc.add(f"| `{cell(row.suite)}` | {cell(row.metric)} | {row.test} | "
                        f"{format_metric(row.before, row.metric)} | "
                        f"{format_metric(row.after, row.metric)} | {row.change:+.3g} "
                        f"[{row.low:+.3g}, {row.high:+.3g}] | {row.p_value:.3g} "
                        f"({row.adjusted_p:.3g}) | {mark}{shown_verdict(row)} |", optional=True)
            doc.add("")
        if regression.fails_run:
            doc.add(f"❌ {cell(regression.verdict_note())}\n")
        moved = [c for c in regression.changes if c.change != "unchanged"]
        if moved:
            doc.add("\n| case | change | before | after |\n|---|---|---|---|")
            for c in moved:
                doc.add(f"| `{cell(c.nodeid)}` | {c.change} | {c.before or '—'} | "
                        f"{c.after or '—'} |", optional=True)
            doc.add("")
    if doc.dropped:
        doc.parts.append(f"\n> {doc.dropped} rows or outputs were left out to stay under "
                         "GitHub's 1 MiB summary limit; the results JSON has everything.\n")
    return "\n".join(doc.parts) + "\n"
