"""Which changes since an earlier run are real (``--elizon-baseline``;
docs/contract.md#significant-regressions).

Cases are paired by node id; a case in one run only is new or removed, never paired.
Per suite and metric: the pass rate by McNemar's exact test when every paired case ran
once on both sides, else by a paired t-test on per-case pass rates; a classification's
accuracy by McNemar's exact test on per-case correctness (one label per case: its first
run's); the judge score, the RAG means and the mean latency, cost and tokens by a paired
t-test on per-case differences. Holm's
correction across a suite's metrics keeps the chance of any false alarm in a suite at
``elizon_alpha``. Pure functions; the statistics are :mod:`pytest_elizon_eval.stats`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import stats
from ..decide.outcomes import PASSED, CaseResult

__all__ = ["MCNEMAR", "PAIRED_T", "TOO_FEW", "Paired", "SignificantChange", "decidable",
           "of_file", "of_result", "rows_tested", "suite_changes"]

MCNEMAR = "McNemar exact"
PAIRED_T = "paired t"

#: The RAG means (docs/contract.md#rag): one score per case, compared like the judge score.
_RAG = ("faithfulness", "answer_relevancy", "context_precision", "context_recall")
#: Metrics from 0 to 1, whose change lies within [−1, 1]: so does its interval.
_BOUNDED = ("pass_rate", "accuracy", "judge_score", *_RAG)
#: Metrics compared per case, with whether a rise is better.
_PER_CASE = (("judge_score", True), *((m, True) for m in _RAG), ("mean_latency_ms", False),
             ("mean_cost_usd", False), ("mean_tokens", False))


@dataclass(frozen=True)
class Paired:
    """What the tests need of one case of one run: each run's pass, and its numbers."""

    runs: tuple[bool, ...]
    values: Mapping[str, float | None]
    #: A labelled case (docs/contract.md#classification): whether its label was right.
    correct: bool | None = None


def of_result(result: CaseResult) -> Paired:
    usage = result.usage
    runs = tuple(r.outcome == PASSED for r in result.runs) or (result.outcome == PASSED,)
    label = result.label
    return Paired(runs, {
        "judge_score": result.judge_score, "mean_latency_ms": result.latency_ms,
        "mean_cost_usd": usage.cost_usd if usage else None,
        "mean_tokens": None if usage is None or usage.tokens is None else float(usage.tokens),
        **{m: None if result.rag is None else getattr(result.rag, m) for m in _RAG}},
        None if label is None else label.predicted == label.expected)


def _number(value: Any) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    return float(value) if ok and math.isfinite(value) else None


def of_file(case: Mapping[str, Any]) -> Paired:
    """A case of an earlier results file; what it lacks is not compared."""
    found = case.get("usage")
    usage: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    tokens = [usage.get(k) for k in ("input_tokens", "output_tokens")]
    known = [t for t in tokens if isinstance(t, int)]
    runs = tuple(r.get("outcome") == PASSED for r in case.get("runs") or ()
                 if isinstance(r, Mapping)) or (case.get("outcome") == PASSED,)
    found = case.get("rag")
    rag: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    label = case.get("label")
    correct = (label.get("predicted") == label.get("expected")
               if isinstance(label, Mapping) and isinstance(label.get("expected"), str) else None)
    return Paired(runs, {
        "judge_score": _number(case.get("judge_score")),
        "mean_latency_ms": _number(case.get("latency_ms")),
        "mean_cost_usd": _number(usage.get("cost_usd")),
        "mean_tokens": float(sum(known)) if known else None,
        **{m: _number(rag.get(m)) for m in _RAG}}, correct)


@dataclass(frozen=True)
class SignificantChange:
    """One metric of one suite, this run against the earlier one, over the paired cases."""

    suite: str
    metric: str
    #: ``McNemar exact`` or ``paired t``.
    test: str
    cases: int
    before: float
    after: float
    #: The interval of ``after − before`` at elizon_confidence.
    low: float
    high: float
    p_value: float
    #: Holm-adjusted across the suite's metrics; what "significant" is decided on.
    adjusted_p: float
    alpha: float
    #: Whether a rise is an improvement (pass rate, judge score) or a regression (the rest).
    higher_is_better: bool
    #: Whether any result of this many cases could be significant: McNemar's exact test on
    #: five cases or fewer cannot reach p < 0.05 even when every case flips one way, so
    #: its verdict is "too few cases to tell", never "within noise"
    #: (docs/contract.md#significant-regressions).
    decidable: bool = True

    @property
    def change(self) -> float:
        return self.after - self.before

    @property
    def significant(self) -> bool:
        return self.adjusted_p < self.alpha

    @property
    def regressed(self) -> bool:
        """A significant change for the worse."""
        worse = self.change < 0 if self.higher_is_better else self.change > 0
        return self.significant and worse

    @property
    def verdict(self) -> str:
        if not self.significant:
            return "within noise" if self.decidable else TOO_FEW
        return "significant regression" if self.regressed else "significant improvement"

    def to_data(self) -> dict[str, Any]:
        return {"suite": self.suite, "metric": self.metric, "test": self.test,
                "cases": self.cases, "before": self.before, "after": self.after,
                "change": self.change, "low": self.low, "high": self.high,
                "p_value": self.p_value, "adjusted_p": self.adjusted_p, "alpha": self.alpha,
                "significant": self.significant, "regressed": self.regressed,
                "verdict": self.verdict, "decidable": self.decidable}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> SignificantChange:
        """A row of a results file's ``regression.significance`` (schema-checked)."""
        return cls(data["suite"], data["metric"], data["test"], data["cases"], data["before"],
                   data["after"], data["low"], data["high"], data["p_value"],
                   data["adjusted_p"], data["alpha"],
                   dict(_PER_CASE).get(data["metric"], True),
                   data.get("decidable", True))  # absent from files written before it


def _mcnemar(pairs: Sequence[tuple[bool, bool]], confidence: float
             ) -> tuple[str, float, float, float, float, float]:
    """(test, before, after, low, high, p) of a share of paired yes/no cases."""
    n = len(pairs)
    down = sum(1 for b, a in pairs if b and not a)
    up = sum(1 for b, a in pairs if a and not b)
    was = sum(b for b, _ in pairs) / n
    change = (up - down) / n
    # the paired-proportions (Wald) interval of the change: the flips' own spread
    half = stats.normal_quantile(confidence) * math.sqrt(
        max(0.0, up + down - (up - down) ** 2 / n)) / n
    return MCNEMAR, was, was + change, change - half, change + half, \
        stats.mcnemar_exact(down, up)


def _pass_rate(pairs: Sequence[tuple[Paired, Paired]], confidence: float
               ) -> tuple[str, float, float, float, float, float] | None:
    """(test, before, after, low, high, p) of the pass rate over the paired cases."""
    before = [b.runs for b, _ in pairs]
    after = [a.runs for _, a in pairs]
    n = len(pairs)
    if all(len(b) == 1 and len(a) == 1 for b, a in zip(before, after, strict=True)):
        return _mcnemar([(b[0], a[0]) for b, a in zip(before, after, strict=True)], confidence)
    if n < 2:
        return None
    rates = [(sum(b) / len(b), sum(a) / len(a)) for b, a in zip(before, after, strict=True)]
    mean, low, high, p = stats.paired_t_test([a - b for b, a in rates], confidence)
    was = math.fsum(b for b, _ in rates) / n
    return PAIRED_T, was, was + mean, low, high, p


def suite_changes(suite: str, pairs: Sequence[tuple[Paired, Paired]],
                  confidence: float, alpha: float) -> list[SignificantChange]:
    """Every metric of ``suite`` its paired (before, after) cases can test, Holm-corrected."""
    found: list[tuple[str, str, int, float, float, float, float, float, bool]] = []
    if pairs:
        rate = _pass_rate(pairs, confidence)
        if rate is not None:
            test, before, after, low, high, p = rate
            found.append(("pass_rate", test, len(pairs), before, after, low, high, p, True))
    # accuracy over the cases labelled in both runs: each case is right or wrong once
    labelled = [(b.correct, a.correct) for b, a in pairs
                if isinstance(b.correct, bool) and isinstance(a.correct, bool)]
    if labelled:
        test, before, after, low, high, p = _mcnemar(labelled, confidence)
        found.append(("accuracy", test, len(labelled), before, after, low, high, p, True))
    for metric, better_up in _PER_CASE:
        paired = [(b, a) for b, a in ((b.values.get(metric), a.values.get(metric))
                                      for b, a in pairs) if b is not None and a is not None]
        if len(paired) < 2:
            continue
        mean, low, high, p = stats.paired_t_test([a - b for b, a in paired], confidence)
        before = math.fsum(b for b, _ in paired) / len(paired)
        found.append((metric, PAIRED_T, len(paired), before, before + mean, low, high, p,
                      better_up))
    adjusted = stats.holm([row[7] for row in found])
    # a normal or t interval knows nothing of a proportion's range: a change of one is
    # within [−1, 1] (docs/contract.md#significant-regressions)
    return [SignificantChange(suite, metric, test, n, before, after,
                              max(-1.0, low) if metric in _BOUNDED else low,
                              min(1.0, high) if metric in _BOUNDED else high, p, q, alpha,
                              better_up, test != MCNEMAR or decidable(n, alpha))
            for (metric, test, n, before, after, low, high, p, better_up), q
            in zip(found, adjusted, strict=True)]


#: The verdict of a change no result of its cases could have shown significant.
TOO_FEW = "too few cases to tell"


def decidable(cases: int, alpha: float) -> bool:
    """Whether McNemar's exact test on ``cases`` paired cases can be significant at
    ``alpha`` at all: its smallest p-value, every case flipping the same way, is
    2 × 0.5^cases (before Holm's correction, which only raises it)."""
    return stats.mcnemar_exact(0, cases) < alpha


def rows_tested(results: Sequence[CaseResult]) -> int:
    """How many rows a comparison of these cases with a rerun of them tests: Holm's family,
    which a suite's detectable drop is stated for (docs/contract.md#power). The rows
    :func:`suite_changes` would give, counted by its own conditions, not tested."""
    paired = [of_result(r) for r in results]
    if not paired:
        return 0
    single = all(len(p.runs) == 1 for p in paired)
    rows = int(single or len(paired) >= 2)  # the pass rate
    rows += any(isinstance(p.correct, bool) for p in paired)  # accuracy
    rows += sum(1 for metric, _ in _PER_CASE
                if sum(p.values.get(metric) is not None for p in paired) >= 2)
    return rows
