"""How sure each suite number is: intervals, the test against the author's baseline, and
the smallest drop a suite can detect (docs/contract.md#intervals).

Pure functions of a suite's case results and the run's ``elizon_confidence`` /
``elizon_alpha``; every statistic is :mod:`pytest_elizon_eval.stats` (stdlib only).
:class:`~.aggregate.SuiteSummary` asks these, and every reporter renders what it answers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import stats
from ..decide.outcomes import ERROR, FAILED, INCONCLUSIVE, PASSED, TIMEOUT, CaseResult
from . import significance

__all__ = ["DetectableDrop", "MetricInterval", "baseline_test", "comparison_text",
           "detectable_drop", "interval_cell", "proportion_test", "suite_intervals",
           "summary_sentences", "task_intervals"]

WILSON = "wilson"
CLUSTERED_RATE = "clustered wilson"
CLUSTERED_MEAN = "clustered mean"
MEAN = "mean"
#: Means that cannot be below 0: their interval stops there.
_NOT_NEGATIVE = ("mean_latency_ms", "mean_cost_usd", "mean_tokens")
#: Scores from 0 to 1 (the judge's, the RAG means): their interval stays within them.
_SCORES = ("judge_score", "faithfulness", "answer_relevancy", "context_precision",
           "context_recall")


@dataclass(frozen=True)
class MetricInterval:
    """A suite metric's interval at ``confidence``: what it estimates, from what, how."""

    metric: str
    #: The value the interval is about: the metric itself, except a pass rate of repeated
    #: cases, which is the share of all runs that passed (the case-level rate cannot be
    #: clustered: each case is one pass or fail). A mean is the metric: over cases, each
    #: repeated case by the mean of its runs.
    estimate: float
    low: float
    high: float
    #: ``wilson``, ``clustered wilson``, ``clustered mean`` or ``mean``.
    method: str
    confidence: float
    #: Cases (clusters) and observations (runs) behind it.
    cases: int
    observations: int

    def to_data(self) -> dict[str, Any]:
        return {"estimate": self.estimate, "low": self.low, "high": self.high,
                "method": self.method, "confidence": self.confidence, "cases": self.cases,
                "observations": self.observations}

    def text(self, show: Callable[[float, str], str]) -> str:
        """``[low, high]``, each bound shown by ``show(value, metric)``."""
        return f"[{show(self.low, self.metric)}, {show(self.high, self.metric)}]"

    def described(self) -> str:
        """What the interval is, for a legend: ``95 % Wilson, 20 cases``."""
        level = f"{self.confidence * 100:g}%"
        if self.method == WILSON:
            return f"{level} Wilson, {_cases(self.cases)}"
        if self.method == CLUSTERED_RATE:
            return (f"{level} clustered by case, share of {self.observations} runs of "
                    f"{_cases(self.cases)}")
        if self.method == CLUSTERED_MEAN:
            return (f"{level} t, {_cases(self.cases)}, each the mean of its runs "
                    f"({self.observations} runs)")
        return f"{level} t, {_cases(self.cases)}"


def _cases(n: int) -> str:
    return f"{n} case{'s' if n != 1 else ''}"


def interval_cell(interval: MetricInterval | None,
                  show: Callable[[float, str], str]) -> str:
    """A table cell: ``[low, high]``, or empty where the metric has no interval. A pass
    rate of repeated cases says what it is about — the share of runs, which the row's
    share of cases is not (``0.000`` beside ``[0.133, 0.990]`` reads as a bug)."""
    if interval is None:
        return ""
    if interval.method == CLUSTERED_RATE:
        return f"{show(interval.estimate, interval.metric)} over runs {interval.text(show)}"
    return interval.text(show)


def comparison_text(comparison: str, noise: str) -> str:
    """The "vs baseline" cell: above/below/at, and for the pass rate whether that is noise."""
    return f"{comparison}, {noise}" if noise else comparison


def _repeated(results: Sequence[CaseResult]) -> bool:
    return any(len(r.runs) > 1 for r in results)


def _pass_runs(results: Sequence[CaseResult]) -> list[list[bool]]:
    return [[run.outcome == PASSED for run in r.runs] if r.runs else [r.outcome == PASSED]
            for r in results]


def _mean(metric: str, values: list[float], observations: int, confidence: float
          ) -> MetricInterval | None:
    """The Student's t interval of the mean of ``values``, one per case (a repeated case's
    mean over its runs, as the metric is): the metric itself, one quantity with one interval
    (docs/contract.md#intervals). Kept within the metric's range: 0 and up, or 0 to 1."""
    mean, low, high = stats.clustered_mean_interval([[v] for v in values], confidence) \
        if values else (0.0, None, None)
    if low is None or high is None:
        return None
    method = CLUSTERED_MEAN if observations > len(values) else MEAN
    if metric in _NOT_NEGATIVE or metric in _SCORES:
        low = max(0.0, low)
    if metric in _SCORES:
        high = min(1.0, high)
    return MetricInterval(metric, mean, low, high, method, confidence, len(values),
                          observations)


def _rate(metric: str, hits: int, n: int, confidence: float) -> MetricInterval:
    low, high = stats.wilson_interval(hits, n, confidence)
    return MetricInterval(metric, hits / n, low, high, WILSON, confidence, n, n)


def suite_intervals(results: Sequence[CaseResult], confidence: float
                    ) -> dict[str, MetricInterval]:
    """An interval for every rate and mean metric the suite measured (none for counts,
    totals, percentiles and the maximum: they describe this run, they estimate nothing)."""
    n = len(results)
    if not n:
        return {}
    found: dict[str, MetricInterval] = {}
    if _repeated(results):
        passes = _pass_runs(results)
        rate, low, high = stats.clustered_rate_interval(passes, confidence)
        found["pass_rate"] = MetricInterval("pass_rate", rate, low, high, CLUSTERED_RATE,
                                            confidence, n, sum(map(len, passes)))
    else:
        found["pass_rate"] = _rate("pass_rate", sum(r.outcome == PASSED for r in results), n,
                                   confidence)
    found["fail_rate"] = _rate("fail_rate", sum(r.outcome in (FAILED, ERROR) for r in results),
                               n, confidence)
    found["timeout_rate"] = _rate("timeout_rate", sum(r.outcome == TIMEOUT for r in results), n,
                                  confidence)
    inconclusive = sum(r.outcome == INCONCLUSIVE for r in results)
    if inconclusive:  # its table row is shown only then (aggregate._SHOWN_WHEN_SET)
        found["inconclusive_rate"] = _rate("inconclusive_rate", inconclusive, n, confidence)
    # a case's latency and judge score are the means over its runs (what the metric
    # averages); its runs count as observations, the case as one
    for metric in ("mean_latency_ms", "judge_score"):
        field = "latency_ms" if metric == "mean_latency_ms" else metric
        values: list[float] = []
        observations = 0
        for r in results:
            value = getattr(r, field)
            if value is not None:
                values.append(float(value))
                observations += max(1, sum(getattr(run, field) is not None for run in r.runs))
        interval = _mean(metric, values, observations, confidence)
        if interval is not None:
            found[metric] = interval
    # usage is kept per case (every run's summed), so each case is one observation
    for metric, numbers in (
            ("mean_cost_usd", [float(r.usage.cost_usd) for r in results
                               if r.usage and r.usage.cost_usd is not None]),
            ("mean_tokens", [float(r.usage.tokens) for r in results
                             if r.usage and r.usage.tokens is not None])):
        interval = _mean(metric, numbers, len(numbers), confidence)
        if interval is not None:
            found[metric] = interval
    return found


def task_intervals(proportions: Mapping[str, tuple[int, int]],
                   samples: Mapping[str, Sequence[float]], confidence: float
                   ) -> dict[str, MetricInterval]:
    """Intervals of the task metrics (docs/contract.md#task-metrics): Wilson for each
    proportion (accuracy, per-label precision and recall, tool rates), a t interval for
    each RAG mean (one score per case), kept within 0 to 1."""
    found = {name: _rate(name, hits, n, confidence)
             for name, (hits, n) in proportions.items() if n > 0}
    for name, values in samples.items():
        interval = _mean(name, [float(v) for v in values], len(values), confidence)
        if interval is not None:
            found[name] = interval
    return found


def baseline_test(results: Sequence[CaseResult], baseline_rate: float, alpha: float
                  ) -> tuple[float, str] | None:
    """Whether the suite's pass rate is within noise of the author's ``pass_rate``: the exact
    two-sided binomial test of its passed cases against that rate. (p-value, words)."""
    return proportion_test(sum(r.outcome == PASSED for r in results), len(results),
                           baseline_rate, alpha)


def proportion_test(hits: int, n: int, baseline_rate: float, alpha: float
                    ) -> tuple[float, str] | None:
    """Whether ``hits`` of ``n`` is within noise of the author's rate: the exact two-sided
    binomial test, for the pass rate and every task metric that is a proportion
    (``accuracy``, ``recall.<label>``…: docs/contract.md#within-noise-of-the-authors-baseline)."""
    if not n or not 0.0 <= baseline_rate <= 1.0:
        return None
    p = stats.binomial_test(hits, n, baseline_rate)
    if p >= alpha and min(stats.binomial_test(k, n, baseline_rate) for k in (0, n)) >= alpha:
        # no share of these cases could differ significantly: not evidence of no change
        return p, f"too few cases to tell (exact binomial p={p:.3g}; {n} case" \
                  f"{'s' if n != 1 else ''} cannot differ significantly from {baseline_rate:g})"
    if p >= alpha:
        return p, f"within noise (exact binomial p={p:.3g})"
    return p, f"significant (exact binomial p={p:.3g} < α {alpha:g})"


@dataclass(frozen=True)
class DetectableDrop:
    """The smallest pass-rate drop that a rerun of a suite's cases, compared with
    --elizon-baseline, calls a significant regression with 80 % power
    (:func:`pytest_elizon_eval.stats.detectable_drop`); ``drop`` None: none can be."""

    drop: float | None
    rate: float
    runs: int
    alpha: float
    power: float = stats.POWER
    cases: int = 0
    #: The test the comparison runs: ``McNemar exact`` or ``paired t``.
    test: str = significance.MCNEMAR
    #: The rows Holm's correction spans; the power is at α / tests, so at least ``power``.
    tests: int = 1

    def to_data(self) -> dict[str, Any]:
        return {"drop": self.drop, "rate": self.rate, "runs": self.runs, "alpha": self.alpha,
                "power": self.power}

    def text(self) -> str:
        """What the drop is about: a rerun, not the author's baseline (a one-sample test
        against a rate taken as exact, far more sensitive)."""
        if self.rate <= 0.0:
            return "a pass rate of 0 cannot drop"
        holm = f", Holm over {self.tests} metrics" if self.tests > 1 else ""
        runs = f", {self.runs} runs" if self.runs != self.cases else ""
        against = (f"against a rerun of its {_cases(self.cases)}{runs} ({self.test}, "
                   f"α {self.alpha:g}{holm})")
        if self.drop is None:
            few = "cases" if self.cases < 2 else "runs"  # a paired t-test needs two cases
            return f"too few {few} to detect any pass-rate drop {against}"
        least = "at least " if self.tests > 1 else ""
        return (f"detects a pass-rate drop of {self.drop:.3f} or more with {least}"
                f"{self.power:.0%} power {against}")


def detectable_drop(results: Sequence[CaseResult], alpha: float) -> DetectableDrop | None:
    """What a rerun of the suite's cases can detect, at its pass rate over every run, by
    the test --elizon-baseline runs (McNemar's exact test, or the paired t-test when cases
    repeat), at α over the Holm family's size (None: no cases)."""
    clusters = _pass_runs(results)
    runs = sum(map(len, clusters))
    if not runs:
        return None
    rate = sum(sum(c) for c in clusters) / runs
    cases = len(clusters)
    repeated = runs > cases
    # a case's difference of rates has variance ∝ 1/k: the harmonic mean of the runs
    repeats = cases / math.fsum(1.0 / len(c) for c in clusters) if repeated else 1.0
    tests = max(1, significance.rows_tested(results))
    drop = stats.detectable_drop(cases, rate, alpha / tests, repeats=repeats) \
        if rate > 0 else None
    return DetectableDrop(drop, rate, runs, alpha, cases=cases,
                          test=significance.PAIRED_T if repeated else significance.MCNEMAR,
                          tests=tests)


def summary_sentences(intervals: Mapping[str, MetricInterval], drop: DetectableDrop | None,
                      show: Callable[[float, str], str]) -> list[str]:
    """What every report says under a suite's counts: the pass rate's and the judge score's
    intervals, then the smallest drop the suite detects."""
    said = []
    for metric in ("pass_rate", "judge_score"):
        found = intervals.get(metric)
        if found is not None:
            runs = " over runs" if found.method == CLUSTERED_RATE else ""
            said.append(f"{metric}{runs} {show(found.estimate, metric)} {found.text(show)} "
                        f"({found.described()})")
    sentences = ["; ".join(said)] if said else []
    if drop is not None:
        sentences.append(drop.text())
    return sentences
