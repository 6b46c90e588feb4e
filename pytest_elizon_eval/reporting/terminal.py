"""The ``elizon eval`` section of pytest's terminal summary.

Per suite: gate, counts, verdict and the baseline table (metric · author
baseline · this run · Δ · at/above/below) for the metrics the author named
(the markdown summary and results JSON show every metric), with a line above it when
the baseline was measured on other cases than this run's; then the timed-out cases
(pytest's FAILURES section lists failures only), the advisory cases that did
not pass, each with its one-line reason, and the changes since an earlier
run (``--elizon-baseline``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..decide.outcomes import ERROR, FAILED, INCONCLUSIVE, PASSED, TIMEOUT, blocks, reason
from ..measures.rendering import terminal_lines as measures_lines
from ..text import defuse, visible
from . import compliance, judges, repeats, security
from .aggregate import Aggregate, SuiteSummary, format_metric
from .intervals import comparison_text, interval_cell, summary_sentences

if TYPE_CHECKING:  # types only: a run without --elizon-baseline never loads regression
    from .regression import Regression

__all__ = ["render"]

Line = tuple[str, dict[str, bool]]


def _verdict(summary: SuiteSummary) -> Line:
    if summary.verdict == "pass":  # inconclusive cases under elizon_inconclusive = pass too
        return "PASS", {"green": True}
    if summary.verdict == "advisory":
        return "ADVISORY: not passed (does not fail the run)", {"yellow": True}
    return "FAIL", {"red": True, "bold": True}


def _counts(summary: SuiteSummary) -> str:
    parts = [f"{summary.count(PASSED)} passed", f"{summary.count(FAILED)} failed",
             f"{summary.count(TIMEOUT)} timeout"]
    if summary.count(ERROR):
        parts.append(f"{summary.count(ERROR)} error")
    if summary.count(INCONCLUSIVE):
        parts.append(f"{summary.count(INCONCLUSIVE)} inconclusive")
    return ", ".join(parts)


def _baseline_table(summary: SuiteSummary) -> list[Line]:
    rows = [(r.metric, format_metric(r.baseline, r.metric), format_metric(r.run, r.metric),
             interval_cell(r.interval, format_metric) or "-",
             "-" if r.delta is None else f"{r.delta:+.3g}", comparison_text(r.comparison, r.noise))
            for r in summary.baseline_rows() if r.metric in summary.info.baseline]
    if not rows:
        return []
    head = ("metric", "author baseline", "this run", f"{summary.confidence:.0%} interval", "Δ",
            "vs baseline")
    widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]
    return [("    " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip(),
             {"bold": row is head}) for row in [head, *rows]]


def _dataset(summary: SuiteSummary) -> list[Line]:
    """A line when the author's baseline was measured on other cases (its datasetHash)."""
    if summary.info.baseline_dataset_hash is None:
        return []  # the manifest does not say: nothing to check
    from .regression import dataset_note  # deferred: only a baseline that names its dataset

    note = dataset_note(summary.info)
    return [(f"    {note}", {"yellow": True})] if note else []


def _regression(regression: Regression) -> list[Line]:
    from .regression import shown_verdict  # deferred: only a run with a baseline loads it

    counts = ", ".join(f"{n} {kind}" for kind, n in regression.counts().items())
    lines: list[Line] = [(f"since {regression.baseline_file}: {counts}", {"bold": True})]
    lines.extend((f"  suite file changed: {path}", {"yellow": True})
                 for path in regression.changed_suites)
    lines.extend((f"  {c.change}: {c.nodeid} ({c.before or '-'} -> {c.after or '-'})",
                  {"red": c.change == "regressed", "green": c.change == "improved"})
                 for c in regression.changes if c.change in ("regressed", "improved"))
    lines.extend((f"  {m.words}: {m.suite} "
                  f"{m.metric} {format_metric(m.before, m.metric)} -> "
                  f"{format_metric(m.after, m.metric)}",
                  {"red": m.regressed, "green": not m.regressed})
                 for m in regression.metric_changes)
    lines.extend((f"  {shown_verdict(c)}: {c.suite} {c.metric} "
                  f"{format_metric(c.before, c.metric)} -> "
                  f"{format_metric(c.after, c.metric)} ({c.change:+.3g} [{c.low:+.3g}, "
                  f"{c.high:+.3g}], {c.test}, p={c.p_value:.3g}, Holm p={c.adjusted_p:.3g})",
                  {"red": c.regressed, "green": c.significant and not c.regressed})
                 for c in regression.significance)
    if regression.fails_run:
        lines.append((regression.verdict_note(), {"red": True, "bold": True}))
    return lines


def render(aggregate: Aggregate, regression: Regression | None = None) -> list[Line]:
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
        lines.extend((f"    {text}", {}) for text in summary_sentences(
            summary.intervals(), summary.detectable_drop(), format_metric))
        lines.extend(_dataset(summary))
        lines.extend(_baseline_table(summary))
        lines.extend((text, {}) for text in measures_lines(summary.measures()))
    timeouts = [r for s in suites for r in s.results if r.outcome == TIMEOUT]
    if timeouts:
        lines.append(("timed out:", {"yellow": True}))
        lines.extend((f"  {r.nodeid} — {reason(r)}", {}) for r in timeouts)
    # apart like the timeouts: pytest's FAILURES section does not list them either
    undecided = [r for s in suites for r in s.results if r.outcome == INCONCLUSIVE]
    if undecided:
        lines.append(("inconclusive:", {"yellow": True}))
        lines.extend((f"  {r.nodeid} — {reason(r)}", {}) for r in undecided)
    advisory = [r for s in suites for r in s.not_passed if not blocks(r)
                if r.outcome not in (TIMEOUT, INCONCLUSIVE)]
    if advisory:
        lines.append(("advisory, not passed:", {"yellow": True}))
        lines.extend((f"  {r.nodeid} — {reason(r)}", {}) for r in advisory)
    lines.extend(repeats.terminal_lines(aggregate))
    note = aggregate.rate_limit_note()
    if note:  # results under a rate limit are read differently: always said
        lines.append((note, {"yellow": True}))
    if regression is not None:
        lines.extend(_regression(regression))
    lines.extend(security.terminal_lines(aggregate))
    lines.extend(judges.terminal_lines(aggregate))
    lines.extend(compliance.terminal_lines(aggregate))
    # Names, paths and node ids come from files (a manifest, an earlier results file):
    # shown as text, never as terminal escapes or workflow commands.
    return [(defuse(visible(text, keep_newlines=False)), markup) for text, markup in lines]
