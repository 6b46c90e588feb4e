"""This run next to an earlier results file (``--elizon-baseline=PATH``): per case, what
regressed, improved, stayed, appeared or went away; per suite, whether its file changed.
Also whether a suite's author baseline was measured on the cases this run ran
(:func:`dataset_note`, docs/format.md#dataset-hash)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..decide.outcomes import ERROR, PASSED, SuiteInfo, outcome_name
from ..measures.suite import RAG_METRICS, direction
from .aggregate import COST_METRICS, Aggregate

if TYPE_CHECKING:  # the significance tests run only when there is an earlier run to compare
    from .significance import SignificantChange

__all__ = ["CHANGES", "CaseChange", "MetricChange", "Regression", "compare", "dataset_note",
           "shown_verdict", "verdict"]

#: The metrics --elizon-fail-on-regression gates on: the answers' quality.
GATED = ("pass_rate", "judge_score", "accuracy", *RAG_METRICS)
#: The micro averages of a classification: each equals its accuracy.
_MICRO = ("micro_precision", "micro_recall", "micro_f1")
#: The kinds of change, most important first.
CHANGES = ("regressed", "not run", "improved", "new", "removed", "unchanged")
#: Kinds counted only when some case is one (files before them have no such key).
_COUNTED_WHEN_SEEN = frozenset({"not run"})


@dataclass(frozen=True)
class CaseChange:
    nodeid: str
    change: str
    before: str | None
    after: str | None


@dataclass(frozen=True)
class MetricChange:
    """A cost metric of a suite, before and after; a rise is a regression of the bill. Or a
    task metric (docs/contract.md#task-metrics): a fall is a regression (a rise, for an
    error rate)."""

    suite: str
    metric: str
    before: float
    after: float

    @property
    def regressed(self) -> bool:
        if direction(self.metric):
            return (self.after - self.before) * direction(self.metric) < 0
        return self.after > self.before

    @property
    def kind(self) -> str:
        """``cost`` for a cost metric, else ``metric`` (the words reports use)."""
        return "metric" if direction(self.metric) else "cost"

    @property
    def words(self) -> str:
        """``cost regressed``, ``metric improved``…: a task metric here is one no test covers
        (per-label, averaged and agent ones; accuracy and the RAG means are in the
        significance table), so its fall is said to be untested, not taken as real."""
        said = f"{self.kind} {'regressed' if self.regressed else 'improved'}"
        return f"{said} (untested)" if self.kind == "metric" else said


@dataclass(frozen=True)
class Regression:
    baseline_file: str
    changes: tuple[CaseChange, ...]
    #: Paths of suites whose file hash differs from the earlier run's.
    changed_suites: tuple[str, ...]
    #: Cost and token metrics that changed, per suite.
    metric_changes: tuple[MetricChange, ...] = ()
    #: Per suite and metric, whether the change over paired cases is significant
    #: (docs/contract.md#significant-regressions).
    significance: tuple[SignificantChange, ...] = ()
    #: Paths of the suites whose cases fail the run (must-pass, or advisory under --strict).
    must_pass: tuple[str, ...] = ()
    #: ``--elizon-fail-on-regression``: :meth:`blocking` changes fail the run.
    fail_on_regression: bool = False

    @property
    def fails_run(self) -> bool:
        return self.fail_on_regression and bool(self.blocking())

    def verdict_note(self) -> str:
        """The sentence that says the run failed on its regressions; else empty."""
        if not self.fails_run:
            return ""
        rows = self.blocking()
        named = ", ".join(f"{c.suite} {c.metric} {c.change:+.3g} (p={c.adjusted_p:.3g})"
                          for c in rows)
        return (f"--elizon-fail-on-regression fails the run: {len(rows)} significant "
                f"regression{'s' if len(rows) != 1 else ''} of must-pass suites since "
                f"{self.baseline_file}: {named}.")

    def blocking(self) -> list[SignificantChange]:
        """Significant regressions of must-pass suites' quality (pass rate, judge score,
        accuracy, the RAG means):
        what --elizon-fail-on-regression fails the run on. Latency, cost and tokens are
        reported, never gated: they move with the machine and the provider, not the answers."""
        return [c for c in self.significance if c.regressed and c.suite in self.must_pass
                and c.metric in GATED]

    def counts(self) -> dict[str, int]:
        found = Counter(c.change for c in self.changes)
        return {kind: found[kind] for kind in CHANGES
                if found[kind] or kind not in _COUNTED_WHEN_SEEN}

    def to_data(self) -> dict[str, Any]:
        return {
            "baseline_file": self.baseline_file,
            "changed_suites": list(self.changed_suites),
            "counts": self.counts(),
            "cases": [{"nodeid": c.nodeid, "change": c.change, "before": c.before,
                       "after": c.after} for c in self.changes],
            "metrics": [{"suite": m.suite, "metric": m.metric, "before": m.before,
                         "after": m.after, "regressed": m.regressed}
                        for m in self.metric_changes],
            "significance": [c.to_data() for c in self.significance],
            "blocking": len(self.blocking()),
            "fails_run": self.fails_run,
        }


def _change(before: str | None, after: str | None) -> str:
    if before is None:
        return "new"
    if after is None:
        return "removed"
    if after == ERROR and before != ERROR:  # it never ran: an error, not a worse answer
        return "not run"
    if (before == PASSED) == (after == PASSED):
        return "unchanged"
    return "improved" if after == PASSED else "regressed"


def shown_verdict(change: SignificantChange) -> str:
    """A significance row's verdict as reports word it: a significant change of a metric that
    never gates (latency, cost, tokens) says so, so a microsecond of latency does not read
    as a regression that failed anything."""
    if change.significant and change.metric not in GATED:
        return f"{change.verdict} (not gated)"
    return change.verdict


#: Hex digits of a content hash a report shows (the results JSON has all 64).
_HASH_SHOWN = 12


def _short_hash(value: str) -> str:
    algorithm, _, digest = value.partition(":")
    return f"{algorithm}:{digest[:_HASH_SHOWN]}…" if len(digest) > _HASH_SHOWN else value


def dataset_note(info: SuiteInfo) -> str | None:
    """The sentence every report puts beside a suite's author-baseline table when that
    baseline names the dataset it was measured on (``authorBaseline.datasetHash``) and this
    run's cases are not that dataset; None when they are, or when the manifest does not say
    (then the comparison is as it always was)."""
    measured_on, ran = info.baseline_dataset_hash, info.content_hash
    if measured_on is None or measured_on == ran:
        return None
    if ran is None:
        return (f"the author's baseline names dataset {_short_hash(measured_on)}, and this "
                "run's cases have no content hash to compare it with")
    return (f"the author's baseline was measured on other cases: dataset "
            f"{_short_hash(measured_on)} ≠ this run's {_short_hash(ran)}")


def verdict(aggregate: Aggregate, regression: Regression | None) -> tuple[bool, str]:
    """The run's verdict and paragraph, with --elizon-fail-on-regression's say."""
    note = regression.verdict_note() if regression is not None else ""
    if not note:
        return aggregate.passed, aggregate.paragraph()
    paragraph = aggregate.paragraph().replace("The run passed:", "The run's cases passed:", 1)
    return False, f"{paragraph} {note}"


def compare(previous: Mapping[str, Any], aggregate: Aggregate, source: str, *,
            fail_on_regression: bool = False) -> Regression:
    """Compare ``aggregate`` with ``previous``, a results file's data (already validated).

    "removed" means: in the earlier run, not in this one — deleted, or not selected now.
    """
    from .significance import of_file, of_result, suite_changes  # deferred: see above

    before = {c["nodeid"]: c["outcome"] for s in previous["suites"] for c in s["cases"]}
    old_hashes = {s["path"]: s["sha256"] for s in previous["suites"]}
    old_metrics = {s["path"]: s.get("metrics") or {} for s in previous["suites"]}
    earlier = {c["nodeid"]: c for s in previous["suites"] for c in s["cases"]}
    # a case that never ran (an error: its entry could not be bound, its fixture raised) or
    # never ran before says nothing of the answers: left out of the tests, not a drop
    significance = [row for summary in aggregate.suites() for row in suite_changes(
        summary.info.path, [(of_file(earlier[r.nodeid]), of_result(r)) for r in summary.results
                            if r.nodeid in earlier and r.outcome != ERROR
                            and earlier[r.nodeid].get("outcome") != ERROR],
        aggregate.confidence, aggregate.alpha)]
    # a task metric the significance table tests (accuracy, the RAG means) is shown there,
    # with its verdict, not again as a bare fall: one metric, one say; the micro averages
    # are accuracy (one label per case), so its verdict is theirs
    tested = {(c.suite, m) for c in significance
              for m in ((c.metric, *_MICRO) if c.metric == "accuracy" else (c.metric,))}
    metric_changes: list[MetricChange] = []
    after: dict[str, str] = {}
    changed: list[str] = []
    for summary in aggregate.suites():
        old = old_hashes.get(summary.info.path)
        if old and summary.info.sha256 and old != summary.info.sha256:
            changed.append(summary.info.path)
        # named as the results file names it (advisory_failed…), as the earlier file does
        after.update({r.nodeid: outcome_name(r) for r in summary.results})
        now = summary.metrics()
        # cost metrics, and the task metrics that have a better direction and no test: the
        # headline ones and those the author names (per-label and per-tool ones would swamp
        # the report, as in the baseline table)
        listed = {*summary.measures().headline, *summary.info.baseline}
        compared = [*COST_METRICS, *(m for m in now if direction(m) and m in listed
                                     and (summary.info.path, m) not in tested)]
        for metric in compared:
            was, is_now = old_metrics.get(summary.info.path, {}).get(metric), now.get(metric)
            if isinstance(was, (int, float)) and is_now is not None and was != is_now:
                metric_changes.append(MetricChange(summary.info.path, metric, float(was),
                                                   float(is_now)))
    changes = [CaseChange(n, _change(before.get(n), after.get(n)), before.get(n), after.get(n))
               for n in sorted(set(before) | set(after))]
    changes.sort(key=lambda c: (CHANGES.index(c.change), c.nodeid))
    must_pass = tuple(s.info.path for s in aggregate.suites() if not s.info.advisory)
    return Regression(source, tuple(changes), tuple(changed), tuple(metric_changes),
                      tuple(significance), must_pass, fail_on_regression)
