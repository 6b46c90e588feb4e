"""Variants compared side by side on the same cases (docs/contract.md#variant-comparison).

Pure functions of one package's case results (each :class:`CaseResult` with its
``variant``): per variant its pass rate with a Wilson interval, its judge-score mean with
a Student's t interval, its cost, tokens and p50/p95 latency; each variant against the
reference, paired by (suite path, case id), by the tests ``--elizon-baseline`` runs on a
suite (:func:`..reporting.significance.suite_changes`: McNemar's exact test on the pass
rate, a paired t-test on per-case pass rates when cases repeat, a paired t-test on judge
scores), Holm-corrected across every (variant, metric) test of the comparison; the cases
on which variants disagree; and the cost/quality frontier. No pytest import here; the
statistics are :mod:`pytest_elizon_eval.stats`, checked against statsmodels and scipy.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from .. import stats
from ..reporting import significance
from .results_data import ERROR, PASSED, CaseResult

__all__ = ["BETTER", "METRICS", "SCHEMA", "TOO_FEW", "VERDICTS", "WITHIN_NOISE", "WORSE",
           "Comparison", "Difference", "Disagreement", "VariantSummary", "compare",
           "percentile"]

BETTER, WORSE, WITHIN_NOISE = "better", "worse", "within noise"
#: The verdict of a difference no result of its paired cases could have shown significant.
TOO_FEW = significance.TOO_FEW
VERDICTS = (BETTER, WORSE, WITHIN_NOISE, TOO_FEW)
#: The metrics each variant is tested on against the reference, in this order.
METRICS = ("pass_rate", "judge_score")

_Key = tuple[str, str]  # (suite path, case id): how a case pairs across variants


def percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile: the smallest value with at least ``share`` of the values
    at or below it (numpy ``percentile(method="inverted_cdf")``; the definition of the suite
    tables' p50/p95, reporting/aggregate.py)."""
    if not values:
        raise ValueError("a percentile needs at least one value")
    if not 0.0 < share <= 1.0:
        raise ValueError(f"share must be above 0 and at most 1, got {share!r}")
    ordered = sorted(values)
    rank = max(1, math.ceil(share * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


# -- the records ------------------------------------------------------------------------------

@dataclass(frozen=True)
class VariantSummary:
    """One variant over the cases it ran (an error is a case that did not run: its entry
    could not be bound, its fixture raised, its worker died)."""

    name: str
    reference: bool
    advisory: bool
    #: Cases that ran (the pass rate's denominator), and the comparison's cases that did
    #: not: an error, or no result under this variant.
    cases: int
    not_run: int
    passed: int
    #: ``passed / cases`` with its Wilson interval at the comparison's confidence; None
    #: when no case ran.
    pass_rate: float | None
    pass_low: float | None
    pass_high: float | None
    #: The mean judge score over the ``scored_cases`` that ran with one, and its Student's t
    #: interval (kept within 0–1; None for fewer than two scores).
    score_mean: float | None
    score_low: float | None
    score_high: float | None
    scored_cases: int
    #: The answers' cost (US$) and tokens over every case that reported them (the judge's
    #: apart); None when no case did. ``cost_per_case_usd`` is the cost over the cases with
    #: a cost, which the frontier compares.
    cost_usd: float | None
    cost_per_case_usd: float | None
    tokens: int | None
    #: Nearest-rank percentiles (:func:`percentile`) of the latencies of the cases that ran.
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    on_frontier: bool

    def to_data(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> VariantSummary:
        given: dict[str, Any] = {f.name: data.get(f.name) for f in fields(cls)}
        return cls(**given)


@dataclass(frozen=True)
class Difference:
    """One metric of one variant against the reference, over the cases both ran."""

    variant: str
    #: ``pass_rate`` or ``judge_score``.
    metric: str
    #: ``McNemar exact`` or ``paired t``.
    test: str
    #: Paired cases: ran under both (for the judge score, scored under both).
    cases: int
    reference_value: float
    variant_value: float
    #: ``variant_value − reference_value``, with its interval at the confidence (within
    #: [−1, 1]: both metrics are from 0 to 1).
    change: float
    low: float
    high: float
    p_value: float
    #: Holm-adjusted across every test of the comparison: what the verdict is decided on.
    adjusted_p: float
    #: ``better``, ``worse``, ``within noise`` or ``too few cases to tell``.
    verdict: str

    def to_data(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Difference:
        return cls(**{f.name: data[f.name] for f in fields(cls)})


@dataclass(frozen=True)
class Disagreement:
    """A case some variant passed and another did not: each variant's outcome, in the
    comparison's order (None: no result under that variant)."""

    suite: str
    case_id: str
    outcomes: tuple[tuple[str, str | None], ...]

    def to_data(self) -> dict[str, Any]:
        return {"suite": self.suite, "case_id": self.case_id,
                "outcomes": [{"variant": v, "outcome": o} for v, o in self.outcomes]}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Disagreement:
        return cls(data["suite"], data["case_id"],
                   tuple((o["variant"], o.get("outcome")) for o in data["outcomes"]))


@dataclass(frozen=True)
class Comparison:
    """A package's variants side by side (the results JSON's ``variants``)."""

    reference: str
    confidence: float
    alpha: float
    variants: tuple[VariantSummary, ...]
    differences: tuple[Difference, ...]
    #: Sorted by suite path, then case id.
    disagreements: tuple[Disagreement, ...]
    #: The variants on the cost/quality frontier, in the comparison's order.
    frontier: tuple[str, ...]
    #: The package the variants are of ("" when the cases are of several).
    package: str = ""
    #: Cases compared: every (suite, case id) any variant has a result for.
    cases: int = 0

    def summary(self, name: str) -> VariantSummary:
        """The summary of variant ``name``."""
        for found in self.variants:
            if found.name == name:
                return found
        raise KeyError(name)

    def differences_of(self, name: str) -> tuple[Difference, ...]:
        """Variant ``name``'s differences from the reference, in :data:`METRICS` order."""
        return tuple(d for d in self.differences if d.variant == name)

    def to_data(self) -> dict[str, Any]:
        return {"package": self.package, "reference": self.reference,
                "confidence": self.confidence, "alpha": self.alpha, "cases": self.cases,
                "variants": [v.to_data() for v in self.variants],
                "differences": [d.to_data() for d in self.differences],
                "disagreements": [d.to_data() for d in self.disagreements],
                "frontier": list(self.frontier)}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Comparison:
        """A results file's ``variants`` entry (checked against :data:`SCHEMA`)."""
        return cls(data["reference"], data["confidence"], data["alpha"],
                   tuple(VariantSummary.from_data(v) for v in data["variants"]),
                   tuple(Difference.from_data(d) for d in data["differences"]),
                   tuple(Disagreement.from_data(d) for d in data["disagreements"]),
                   tuple(data["frontier"]), data.get("package", ""), data.get("cases", 0))


# -- the statistics ---------------------------------------------------------------------------

def _ran(result: CaseResult | None) -> bool:
    """Whether the case ran: an error never did, and says nothing of the answers
    (as --elizon-baseline leaves it out: docs/contract.md#significant-regressions)."""
    return result is not None and result.outcome != ERROR


def _finite(value: float | int | None) -> float | None:
    if value is None or isinstance(value, bool) or not math.isfinite(value):
        return None
    return float(value)


def _summary(name: str, cases: Mapping[_Key, CaseResult], total: int, reference: bool,
             advisory: bool, confidence: float) -> VariantSummary:
    ran = [r for r in cases.values() if _ran(r)]
    passed = sum(r.outcome == PASSED for r in ran)
    rate = low = high = None
    if ran:
        rate = passed / len(ran)
        low, high = stats.wilson_interval(passed, len(ran), confidence)
    scores = [s for s in (_finite(r.judge_score) for r in ran) if s is not None]
    mean = score_low = score_high = None
    if scores:
        mean, score_low, score_high = stats.clustered_mean_interval([[s] for s in scores],
                                                                    confidence)
        # a judge score is from 0 to 1: so is its interval (docs/contract.md#intervals)
        score_low = None if score_low is None else max(0.0, score_low)
        score_high = None if score_high is None else min(1.0, score_high)
    # money was spent on every answer that reported it, a case that then errored too
    costs = [c for c in (_finite(r.usage.cost_usd) for r in cases.values() if r.usage)
             if c is not None]
    counts = [r.usage.tokens for r in cases.values() if r.usage and r.usage.tokens is not None]
    latencies = [x for x in (_finite(r.latency_ms) for r in ran) if x is not None]
    return VariantSummary(
        name=name, reference=reference, advisory=advisory, cases=len(ran),
        not_run=total - len(ran), passed=passed, pass_rate=rate, pass_low=low, pass_high=high,
        score_mean=mean, score_low=score_low, score_high=score_high, scored_cases=len(scores),
        cost_usd=math.fsum(costs) if costs else None,
        cost_per_case_usd=math.fsum(costs) / len(costs) if costs else None,
        tokens=sum(counts) if counts else None,
        latency_p50_ms=percentile(latencies, 0.5) if latencies else None,
        latency_p95_ms=percentile(latencies, 0.95) if latencies else None,
        on_frontier=False)


def _dominates(a: VariantSummary, b: VariantSummary) -> bool:
    """Whether ``a`` beats ``b`` on both pass rate and cost per case: at least as good on
    both, strictly better on one. Without a cost on either side, on the pass rate only."""
    assert a.pass_rate is not None
    assert b.pass_rate is not None
    if a.cost_per_case_usd is None or b.cost_per_case_usd is None:
        return a.pass_rate > b.pass_rate
    return (a.pass_rate >= b.pass_rate and a.cost_per_case_usd <= b.cost_per_case_usd
            and (a.pass_rate > b.pass_rate or a.cost_per_case_usd < b.cost_per_case_usd))


def _frontier(summaries: Sequence[VariantSummary]) -> tuple[str, ...]:
    """The variants no other beats (:func:`_dominates`); one with no case that ran has no
    pass rate to place it, so it is not on the frontier and beats none."""
    placed = [s for s in summaries if s.pass_rate is not None]
    return tuple(s.name for s in placed
                 if not any(_dominates(o, s) for o in placed if o is not s))


def _verdict(change: float, adjusted_p: float, alpha: float, decidable: bool) -> str:
    if adjusted_p < alpha:
        return BETTER if change > 0 else WORSE  # both metrics: higher is better
    return WITHIN_NOISE if decidable else TOO_FEW


def compare(results: Sequence[CaseResult], variants: Sequence[str], reference: str,
            advisory: Collection[str] = (), *, confidence: float = 0.95,
            alpha: float = 0.05, package: str | None = None) -> Comparison:
    """``variants`` (in their order; results of any other variant, or of none, are left
    out) compared side by side and against ``reference``. A case is its (suite path, case
    id); a variant's second result for one is ignored. ``package`` defaults to the cases'
    one package ("" for several)."""
    if not variants or len(set(variants)) != len(variants):
        raise ValueError(f"variants must be distinct names, at least one: {list(variants)!r}")
    if reference not in variants:
        raise ValueError(f"the reference {reference!r} is not among the variants "
                         f"{list(variants)!r}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be between 0 and 1 (exclusive), got {alpha!r}")
    stats.normal_quantile(confidence)  # the same check of ``confidence`` as every interval
    by_variant: dict[str, dict[_Key, CaseResult]] = {v: {} for v in variants}
    keys: dict[_Key, None] = {}  # every case, in the order results first name it
    packages: set[str] = set()
    for r in results:
        if r.variant in by_variant:
            key = (r.suite.path, r.case_id)
            by_variant[r.variant].setdefault(key, r)
            keys.setdefault(key)
            packages.add(r.suite.package)
    if package is None:
        package = packages.pop() if len(packages) == 1 else ""
    summaries = [_summary(v, by_variant[v], len(keys), v == reference, v in advisory,
                          confidence) for v in variants]
    frontier = _frontier(summaries)
    summaries = [dataclasses.replace(s, on_frontier=s.name in frontier) for s in summaries]

    # Each variant against the reference by the tests --elizon-baseline runs on a suite's
    # paired cases (one definition of them), then Holm across the whole comparison.
    base = by_variant[reference]
    rows: list[tuple[str, significance.SignificantChange]] = []
    for name in variants:
        if name == reference:
            continue
        own = by_variant[name]
        pairs = [(significance.of_result(base[k]), significance.of_result(own[k]))
                 for k in keys if _ran(base.get(k)) and _ran(own.get(k))]
        tested = {row.metric: row for row in significance.suite_changes(
            package, pairs, confidence, alpha)}
        rows += [(name, tested[m]) for m in METRICS if m in tested]
    adjusted = stats.holm([row.p_value for _, row in rows])
    differences = tuple(
        Difference(name, row.metric, row.test, row.cases, row.before, row.after, row.change,
                   row.low, row.high, row.p_value, q,
                   _verdict(row.change, q, alpha, row.decidable))
        for (name, row), q in zip(rows, adjusted, strict=True))

    disagreements = []
    for key in keys:
        found = [(v, by_variant[v].get(key)) for v in variants]
        # an error counts as not passed: a variant that crashed where another passed is
        # listed, though the case is never paired in the tests
        if len({r.outcome == PASSED for _, r in found if r is not None}) > 1:
            disagreements.append(Disagreement(
                key[0], key[1], tuple((v, None if r is None else r.outcome) for v, r in found)))
    disagreements.sort(key=lambda d: (d.suite, d.case_id))
    return Comparison(reference, confidence, alpha, tuple(summaries), differences,
                      tuple(disagreements), frontier, package, len(keys))


# -- the results JSON -------------------------------------------------------------------------

_NUMBER_OR_NULL: dict[str, Any] = {"type": ["number", "null"]}
_SHARE: dict[str, Any] = {"type": "number", "minimum": 0, "maximum": 1}
_SHARE_OR_NULL: dict[str, Any] = {"type": ["number", "null"], "minimum": 0, "maximum": 1}
_COUNT: dict[str, Any] = {"type": "integer", "minimum": 0}


def _record(properties: Mapping[str, Any], description: str) -> dict[str, Any]:
    return {"type": "object", "description": description, "required": list(properties),
            "additionalProperties": False, "properties": dict(properties)}


#: The JSON schema (draft 2020-12) of :meth:`Comparison.to_data`: the results JSON's
#: ``variants`` entry (docs/contract.md#variant-comparison). Self-contained (no ``$ref``).
SCHEMA: dict[str, Any] = _record({
    "package": {"type": "string"},
    "reference": {"type": "string"},
    "confidence": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
    "alpha": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
    "cases": _COUNT,
    "variants": {"type": "array", "items": _record({
        "name": {"type": "string"},
        "reference": {"type": "boolean"},
        "advisory": {"type": "boolean"},
        "cases": _COUNT, "not_run": _COUNT, "passed": _COUNT,
        "pass_rate": _SHARE_OR_NULL, "pass_low": _SHARE_OR_NULL, "pass_high": _SHARE_OR_NULL,
        "score_mean": _NUMBER_OR_NULL, "score_low": _NUMBER_OR_NULL,
        "score_high": _NUMBER_OR_NULL, "scored_cases": _COUNT,
        "cost_usd": _NUMBER_OR_NULL, "cost_per_case_usd": _NUMBER_OR_NULL,
        "tokens": {"type": ["integer", "null"], "minimum": 0},
        "latency_p50_ms": _NUMBER_OR_NULL, "latency_p95_ms": _NUMBER_OR_NULL,
        "on_frontier": {"type": "boolean"},
    }, "One variant over the cases it ran: pass rate with its Wilson interval, judge "
       "score mean with its t interval, cost, tokens, nearest-rank p50/p95 latency.")},
    "differences": {"type": "array", "items": _record({
        "variant": {"type": "string"},
        "metric": {"enum": list(METRICS)},
        "test": {"enum": [significance.MCNEMAR, significance.PAIRED_T]},
        "cases": {"type": "integer", "minimum": 1},
        "reference_value": {"type": "number"},
        "variant_value": {"type": "number"},
        "change": {"type": "number", "minimum": -1, "maximum": 1},
        "low": {"type": "number", "minimum": -1, "maximum": 1},
        "high": {"type": "number", "minimum": -1, "maximum": 1},
        "p_value": _SHARE,
        "adjusted_p": _SHARE,
        "verdict": {"enum": list(VERDICTS)},
    }, "A variant against the reference over the paired cases; adjusted_p is Holm's "
       "across every test of the comparison.")},
    "disagreements": {"type": "array", "items": _record({
        "suite": {"type": "string"},
        "case_id": {"type": "string"},
        "outcomes": {"type": "array", "items": _record({
            "variant": {"type": "string"},
            "outcome": {"type": ["string", "null"]},
        }, "A variant's outcome of the case; null: no result under it.")},
    }, "A case some variant passed and another did not.")},
    "frontier": {"type": "array", "items": {"type": "string"}},
}, "Variants compared on the same cases (docs/contract.md#variant-comparison).")
