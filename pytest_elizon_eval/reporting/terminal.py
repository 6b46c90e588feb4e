"""The ``elizon eval`` section of pytest's terminal summary (docs/contract.md#terminal).

Three levels of detail, as pytest's own ``-q``/``-v`` (:data:`DETAILS`):

* ``line`` (``-q``): the run's one summary line;
* ``short`` (the default): one line per suite (counts, pass rate with its interval, verdict),
  then only what needs a person — the cases that fail the run (identical reasons said
  once), timed-out, inconclusive and advisory cases, significant regressions, compromised
  probes, a non-compliant control — then the summary line;
* ``full`` (``-v``, ``--elizon-report=full``): under each suite its intervals, power,
  author-baseline table and task measures, then every list of the short report unabridged,
  the repeated cases, the run's security, judge and compliance sections.

``elizon-eval show`` prints a results file's full section (no run facts, no summary line).
The markdown, HTML and results JSON keep everything whatever the terminal shows.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
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
from ..measures.rendering import terminal_lines as measures_lines
from ..text import defuse, visible
from . import compliance, judges, repeats, security, variants
from .aggregate import Aggregate, SuiteSummary, format_delta, format_metric
from .intervals import CLUSTERED_RATE, comparison_text, interval_cell, summary_sentences

if TYPE_CHECKING:  # types only: a run without --elizon-baseline never loads regression
    from .regression import Regression

__all__ = ["DETAILS", "FULL", "LINE", "LISTED", "SHORT", "RunFacts", "render", "summary_line"]

Line = tuple[str, dict[str, bool]]

LINE, SHORT, FULL = "line", "short", "full"
#: ``--elizon-report``'s choices, least said first.
DETAILS = (LINE, SHORT, FULL)
#: Most rows the short report lists under one heading (each group of identical reasons is
#: one row); the full report lists every one.
LISTED = 10
#: The outcomes in the order the summary line counts them, as pytest names them.
_SUMMARY_ORDER = (PASSED, FAILED, ERROR, TIMEOUT, INCONCLUSIVE, "advisory_failed",
                  "advisory_timeout", "advisory_inconclusive")


@dataclass(frozen=True)
class RunFacts:
    """What the session knows that its results do not (docs/contract.md#terminal)."""

    #: The options that selected the cases (``-k``, ``-m``, ``--deselect``, ``--lf``, node
    #: ids), joined with ", "; empty when none did.
    how: str = ""
    #: Cases of the suites none of whose cases was selected (so not in the results).
    unselected: int = 0
    #: ``--elizon-replay``'s cassette, as given: every answer came from it.
    replay: str | None = None
    #: ``--elizon-baseline``'s results file, as given (the regression holds its full path).
    baseline: str | None = None


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
    if summary.teardown_errors:  # the cases' outcomes stay; the run failed all the same
        parts.append(f"{summary.teardown_errors} teardown error"
                     f"{'s' if summary.teardown_errors != 1 else ''}")
    return ", ".join(parts)


def _selected(ran: int, total: int, how: str) -> str:
    """``3 of 9 cases selected (-k)``; ``… ran`` when no option selected them (a run
    stopped by -x, a results file shown again)."""
    return f"{ran:,} of {total:,} cases " + (f"selected ({how})" if how else "ran")


def _partial(summary: SuiteSummary, how: str) -> str:
    """How many of the suite file's cases ran, when not all did (docs/contract.md#terminal)."""
    total = summary.info.item_count
    if total is None or len(summary.results) >= total:
        return ""
    return _selected(len(summary.results), total, how)


def _suite_line(summary: SuiteSummary, how: str) -> Line:
    """Path, package and gate, counts, the pass rate with its interval, how many of its
    cases ran when not all did, and the verdict."""
    info = summary.info
    strict = info.gate == "advisory" and not info.advisory
    gate = f"{info.gate}, counted as must-pass by --elizon-strict" if strict else info.gate
    parts = [_counts(summary)]
    rate = summary.intervals().get("pass_rate")
    if info.variants:  # one rate over every variant's runs says nothing: each has its line
        parts.append(f"under {len(info.variants)} variants (each on its line below)")
        rate = None
    if rate is not None:  # a repeated case's runs: the share of runs, as the interval is
        runs = " over runs" if rate.method == CLUSTERED_RATE else ""
        parts.append(f"pass rate{runs} {format_metric(rate.estimate, 'pass_rate')} "
                     f"{rate.text(format_metric)}")
    partial = _partial(summary, how)
    if partial:
        parts.append(partial)
    verdict, markup = _verdict(summary)
    return f"{info.path} [{info.package}, {gate}]: {', '.join(parts)} — {verdict}", markup


def _baseline_table(summary: SuiteSummary, how: str) -> list[Line]:
    rows = [(r.metric, format_metric(r.baseline, r.metric), format_metric(r.run, r.metric),
             interval_cell(r.interval, format_metric) or "-",
             format_delta(r.delta, r.metric), comparison_text(r.comparison, r.noise))
            for r in summary.baseline_rows() if r.metric in summary.info.baseline]
    if not rows:
        return []
    partial = _partial(summary, how)
    # a subset compared with a baseline of the whole file: said where the comparison is
    against = f"vs baseline — partial: {partial}" if partial else "vs baseline"
    head = ("metric", "author baseline", "this run", f"{summary.confidence:.0%} interval", "Δ",
            against)
    widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]
    return [("    " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip(),
             {"bold": row is head, "yellow": bool(partial) and row is head})
            for row in [head, *rows]]


def _dataset(summary: SuiteSummary) -> list[Line]:
    """A line when the author's baseline was measured on other cases (its datasetHash)."""
    if summary.info.baseline_dataset_hash is None:
        return []  # the manifest does not say: nothing to check
    from .regression import dataset_note  # deferred: only a baseline that names its dataset

    note = dataset_note(summary.info)
    return [(f"    {note}", {"yellow": True})] if note else []


def _suite_block(summary: SuiteSummary, detail: str, how: str) -> list[Line]:
    lines = [_suite_line(summary, how)]
    if detail != FULL:
        return lines
    lines.extend((f"    {text}", {}) for text in summary_sentences(
        summary.intervals(), summary.detectable_drop(), format_metric))
    lines.extend(_dataset(summary))
    lines.extend(_baseline_table(summary, how))
    lines.extend((text, {}) for text in measures_lines(summary.measures()))
    return lines


# -- the lists of cases -----------------------------------------------------------------------

def _why(result: CaseResult) -> str:
    error = result.teardown_error
    if error is not None and not blocks(replace(result, teardown_error=None)):
        return f"the teardown raised {error.type}: {error.message}"  # it alone fails the run
    return reason(result)


def _variant_why(result: CaseResult) -> str:
    """Why a group of one advisory variant's cases does not fail the run (their own
    failures differ: the variant's line says how it compares)."""
    return result.advisory or _why(result)


def _listed(title: str, results: list[CaseResult], limit: int | None,
            markup: dict[str, bool]) -> list[Line]:
    """``title`` and a row per case, but one per package for the cases that could not run
    for the same reason (a setup error of every case is said once: ``8 cases (… and 7
    more): ELIZON_…``); at most ``limit`` rows, then how many more."""
    if not results:
        return []
    groups: dict[tuple[str, str], list[CaseResult]] = {}
    for r in results:
        key = (r.suite.package, _why(r)) if r.outcome == ERROR else (r.nodeid, "")
        if limit is not None and r.variant is not None and r.advisory is not None \
                and r.advisory.startswith("variant "):
            # an advisory variant's cases are its comparison's to judge: a row per variant
            key = (f"{r.suite.path}[{r.variant}]", r.advisory)
        groups.setdefault(key, []).append(r)
    rows = [f"  {members[0].nodeid} — {_why(members[0])}" if len(members) == 1 else
            f"  {len(members):,} cases ({members[0].nodeid} and {len(members) - 1:,} more): "
            f"{_variant_why(members[0]) if members[0].outcome != ERROR else _why(members[0])}"
            for members in groups.values()]
    shown = rows if limit is None else rows[:limit]
    lines: list[Line] = [(title, markup), *((row, {}) for row in shown)]
    if len(shown) < len(rows):
        lines.append((f"  … and {len(rows) - len(shown):,} more (-v lists every one)", {}))
    return lines


def _probe(result: CaseResult) -> bool:
    return result.security is not None and result.security.probe is not None


def _case_lists(suites: list[SuiteSummary], limit: int | None, *, failing: bool
                ) -> list[Line]:
    results = [r for s in suites for r in s.results]
    lines: list[Line] = []
    if failing:  # probes that got through are the security section's (with how)
        lines += _listed("failing the run:", [
            r for r in results if blocks(r) and r.outcome not in (TIMEOUT, INCONCLUSIVE)
            and not _probe(r)], limit, {"red": True, "bold": True})
    # pytest's short test summary lists failures only: timeouts and inconclusive cases here
    lines += _listed("timed out:", [r for r in results if r.outcome == TIMEOUT], limit,
                     {"yellow": True})
    lines += _listed("inconclusive:", [r for r in results if r.outcome == INCONCLUSIVE], limit,
                     {"yellow": True})
    lines += _listed("advisory, not passed:", [
        r for r in results if r.outcome not in (PASSED, TIMEOUT, INCONCLUSIVE)
        and not blocks(r)], limit, {"yellow": True})
    return lines


# -- the run's sections ------------------------------------------------------------------------

def _change_lines(regression: Regression, full: bool) -> list[Line]:
    # deferred: only a run with a baseline loads it. Without -v, a significant regression of
    # what the gate is about (pass rate, judge score, accuracy, RAG), not of latency or cost
    from .regression import GATED, shown_verdict

    lines: list[Line] = []
    if full:
        lines.extend((f"  suite file changed: {path}", {"yellow": True})
                     for path in regression.changed_suites)
    lines.extend((f"  {c.change}: {c.nodeid} ({c.before or '-'} -> {c.after or '-'})",
                  {"red": c.change == "regressed", "green": c.change == "improved"})
                 for c in regression.changes
                 if c.change == "regressed" or (full and c.change == "improved"))
    if full:
        lines.extend((f"  {m.words}: {m.suite} {m.metric} "
                      f"{format_metric(m.before, m.metric)} -> "
                      f"{format_metric(m.after, m.metric)}",
                      {"red": m.regressed, "green": not m.regressed})
                     for m in regression.metric_changes)
    lines.extend((f"  {shown_verdict(c)}: {c.suite} {c.metric} "
                  f"{format_metric(c.before, c.metric)} -> "
                  f"{format_metric(c.after, c.metric)} ({c.change:+.3g} [{c.low:+.3g}, "
                  f"{c.high:+.3g}], {c.test}, p={c.p_value:.3g}, Holm p={c.adjusted_p:.3g})",
                  {"red": c.regressed, "green": c.significant and not c.regressed})
                 for c in regression.significance
                 if full or (c.regressed and c.metric in GATED))
    return lines


def _regression(regression: Regression, full: bool, name: str) -> list[Line]:
    """The changes since ``--elizon-baseline`` (``name``): every one (full), or only the
    regressed cases and significant regressions (short; the summary line counts the rest)."""
    lines = _change_lines(regression, full)
    if not lines and not regression.fails_run and not full:
        return []
    counts = ", ".join(f"{n} {kind}" for kind, n in regression.counts().items())
    lines.insert(0, (f"since {name}: {counts}", {"bold": True}))
    if regression.fails_run:
        lines.append((regression.verdict_note(), {"red": True, "bold": True}))
    return lines


def _below(record: dict[str, Any]) -> bool:
    kappa, minimum = record.get("cohen_kappa"), record.get("min_kappa")
    return isinstance(minimum, (int, float)) and not (
        isinstance(kappa, (int, float)) and kappa >= minimum)


def _judge_lines(aggregate: Aggregate) -> list[Line]:
    """Short: the grades a person must look at, and each judge aligned below its minKappa
    (the call counts and the aligned judges are the full report's)."""
    lines: list[Line] = []
    for title, found in (("judge failures counted as advisory:",
                          judges.advisory_grades(aggregate)),
                         ("inconsistent judge grades:", judges.inconsistent_grades(aggregate))):
        if found:
            lines.append((title, {"yellow": True}))
            lines.extend((f"  {text}", {}) for text in found)
    low = [record for record in judges.alignments(aggregate) if _below(record)]
    if low:
        lines.append(("judge alignment:", {"bold": True}))
        lines.extend((f"  {judges.alignment_line(record)}", {"yellow": True}) for record in low)
    return lines


def _sections(aggregate: Aggregate, regression: Regression | None, full: bool,
              limit: int | None, run: RunFacts | None) -> list[Line]:
    lines: list[Line] = []
    if full:
        lines.extend(repeats.terminal_lines(aggregate))
    note = aggregate.rate_limit_note()
    if note:  # results under a rate limit are read differently: always said
        lines.append((note, {"yellow": True}))
    if regression is not None:
        shown = run.baseline if run is not None and run.baseline else None
        lines.extend(_regression(regression, full, shown or regression.baseline_file))
    lines.extend(security.terminal_lines(aggregate, full=full, limit=limit))
    lines.extend(judges.terminal_lines(aggregate) if full else _judge_lines(aggregate))
    lines.extend(compliance.terminal_lines(aggregate, full=full))
    return lines


# -- the summary line ----------------------------------------------------------------------------

def summary_line(aggregate: Aggregate, regression: Regression | None = None,
                 run: RunFacts | None = None) -> Line:
    """The run in one line (``-q`` prints it alone): its cases counted as pytest counts
    them, how many were selected, whether they were replayed, what they cost, what changed
    since ``--elizon-baseline``, and the verdict."""
    run = run or RunFacts()
    suites = aggregate.suites()
    results = [r for s in suites for r in s.results]
    counted = Counter(outcome_name(r) for r in results)
    # pytest's words for them: "8 errors" as its own last line says
    parts = [", ".join(f"{counted[o]:,} {o}{'s' if o == ERROR and counted[o] != 1 else ''}"
                       for o in _SUMMARY_ORDER if counted[o]) or "no case ran"]
    teardowns = sum(s.teardown_errors for s in suites)
    if teardowns:
        parts.append(f"{teardowns} teardown error{'s' if teardowns != 1 else ''}")
    known = [s for s in suites if s.info.item_count is not None]
    total = sum(s.info.item_count or 0 for s in known) + run.unselected
    ran = sum(len(s.results) for s in known)
    if ran < total:
        parts.append(_selected(ran, total, run.how))
    if run.replay is not None:
        replayed = sum(1 for r in results if r.replayed)
        parts.append(f"answers replayed from the cassette {run.replay} ({replayed:,} of "
                     f"{len(results):,} case{'s' if len(results) != 1 else ''})")
    cost = aggregate.cost_note()
    if cost:  # docs/contract.md#cost: what the whole run cost
        parts.append(cost)
    if regression is not None:
        changed = [f"{n} {kind}" for kind, n in regression.counts().items()
                   if n and kind != "unchanged"]
        parts.append(f"since {run.baseline or regression.baseline_file}: "
                     f"{', '.join(changed) if changed else 'no case changed'}")
    passed = aggregate.passed and not (regression is not None and regression.fails_run)
    verdict = "PASS" if passed else "FAIL"
    if aggregate.passed and not passed:
        verdict += " (--elizon-fail-on-regression)"
    text = (f"elizon: {len(results):,} case{'s' if len(results) != 1 else ''} in "
            f"{len(suites)} suite{'s' if len(suites) != 1 else ''}: {'; '.join(parts)} — "
            f"{verdict}")
    return _safe(text), {"green": passed, "red": not passed, "bold": True}


def _safe(text: str) -> str:
    # Names, paths and node ids come from files (a manifest, an earlier results file):
    # shown as text, never as terminal escapes or workflow commands.
    return defuse(visible(text, keep_newlines=False))


def render(aggregate: Aggregate, regression: Regression | None = None, *,
           detail: str = FULL, run: RunFacts | None = None) -> list[Line]:
    """The section's lines with their terminal markup, at ``detail`` (:data:`DETAILS`).

    ``run`` is the session's (the plugin's call): its lists then include the cases that
    fail the run and it ends with :func:`summary_line`, which holds the run's cost. Without
    it (``elizon-eval show``, which lists the failed cases and the verdict itself) the cost
    is a line of its own."""
    if detail == LINE:
        return [summary_line(aggregate, regression, run)] if run is not None else []
    full = detail == FULL
    limit = None if full else LISTED
    how = run.how if run is not None else ""
    lines: list[Line] = []
    suites = aggregate.suites()
    for summary in suites:
        lines.extend(_suite_block(summary, detail, how))
    for compared in aggregate.variant_comparisons():  # docs/contract.md#variant-comparison
        lines.extend((text, {}) for text in variants.terminal_lines(compared, verbose=full))
    if note := aggregate.variant_note():
        lines.append((note, {"red": True, "bold": True}))
    cost = aggregate.cost_note()
    if cost and run is None:  # docs/contract.md#terminal: what the whole run cost
        lines.append((cost, {}))
    lines.extend(_case_lists(suites, limit, failing=run is not None))
    lines.extend(_sections(aggregate, regression, full, limit, run))
    safe = [(_safe(text), markup) for text, markup in lines]
    if run is not None:
        safe.append(summary_line(aggregate, regression, run))
    return safe
