"""Issue 40: the variant comparison's statistics (decide/comparison.py), built from case
results as a run makes them, against statsmodels, scipy and numpy."""

from __future__ import annotations

import json
import math
import random
from typing import Any

import numpy as np
import pytest
import scipy.stats as scipy_stats
from jsonschema import Draft202012Validator
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from pytest_elizon_eval.decide.comparison import (
    SCHEMA,
    Comparison,
    VariantSummary,
    compare,
    percentile,
)
from pytest_elizon_eval.decide.results_data import CaseResult, RunRecord, SuiteInfo
from pytest_elizon_eval.run.calls import Usage

SUITE = SuiteInfo("helpdesk/eval/core.yaml", "helpdesk", "must-pass", False)
OTHER = SuiteInfo("helpdesk/eval/extra.yaml", "helpdesk", "must-pass", False)


def case(variant: str | None, case_id: str, outcome: str, suite: SuiteInfo = SUITE,
         **fields: Any) -> CaseResult:
    """A case result as the run records it: its node id carries the variant."""
    tail = f"[{variant}]" if variant else ""
    return CaseResult(nodeid=f"{suite.path}::{case_id}{tail}", case_id=case_id, line=1,
                      suite=suite, outcome=outcome, variant=variant, **fields)


def _pf(passed: bool) -> str:
    return "passed" if passed else "failed"


# 30 cases; large (the reference) fails c0 and c1. small fails c10–c21 too (12 down, none
# up): a real drop. mini passes c0 and fails c2–c4 (3 down, 1 up): noise. Judge scores:
# small's fall by about 0.1 on every case, mini's move either way.
N = 30
RNG = random.Random(40)
LARGE_SCORES = [round(RNG.uniform(0.6, 0.95), 3) for _ in range(N)]
SMALL_SCORES = [round(s - 0.1 + RNG.uniform(-0.03, 0.03), 3) for s in LARGE_SCORES]
MINI_SCORES = [round(s + RNG.uniform(-0.05, 0.05), 3) for s in LARGE_SCORES]
LARGE = [i not in (0, 1) for i in range(N)]
SMALL = [ok and not 10 <= i <= 21 for i, ok in enumerate(LARGE)]
MINI = [i == 0 or (ok and i not in (2, 3, 4)) for i, ok in enumerate(LARGE)]


def three_variants() -> list[CaseResult]:
    found = []
    for name, passes, scores, cost in (("large", LARGE, LARGE_SCORES, 0.004),
                                       ("small", SMALL, SMALL_SCORES, 0.001),
                                       ("mini", MINI, MINI_SCORES, 0.002)):
        for i in range(N):
            found.append(case(name, f"c{i}", _pf(passes[i]), judge_score=scores[i],
                              latency_ms=float(10 * (i + 1)),
                              usage=Usage(100 + i, 20, cost)))
    return found


def _table(reference: list[bool], variant: list[bool]) -> list[list[int]]:
    """statsmodels' 2×2 table: rows the reference pass/fail, columns the variant's."""
    pairs = list(zip(reference, variant, strict=True))
    return [[sum(r and v for r, v in pairs), sum(r and not v for r, v in pairs)],
            [sum(v and not r for r, v in pairs), sum(not r and not v for r, v in pairs)]]


def _t_interval(values: list[float], confidence: float) -> tuple[float, float]:
    low, high = scipy_stats.t.interval(confidence, len(values) - 1, loc=np.mean(values),
                                       scale=scipy_stats.sem(values))
    return float(low), float(high)


@pytest.mark.parametrize("confidence", [0.9, 0.95])
def test_a_real_drop_is_worse_and_a_small_one_within_noise(confidence: float) -> None:
    comparison = compare(three_variants(), ["large", "small", "mini"], "large",
                         confidence=confidence, alpha=0.05)
    # per variant: Wilson over the cases, a t interval of the judge scores
    for name, passes, scores in (("large", LARGE, LARGE_SCORES), ("small", SMALL, SMALL_SCORES),
                                 ("mini", MINI, MINI_SCORES)):
        summary = comparison.summary(name)
        assert (summary.cases, summary.passed, summary.not_run) == (N, sum(passes), 0)
        assert summary.pass_rate == pytest.approx(sum(passes) / N)
        want = proportion_confint(sum(passes), N, alpha=1 - confidence, method="wilson")
        assert (summary.pass_low, summary.pass_high) == pytest.approx(want, rel=1e-9)
        assert summary.score_mean == pytest.approx(np.mean(scores))
        assert (summary.score_low, summary.score_high) == pytest.approx(
            _t_interval(scores, confidence), rel=1e-9)
        assert summary.scored_cases == N
    rows = {(d.variant, d.metric): d for d in comparison.differences}
    assert list(rows) == [("small", "pass_rate"), ("small", "judge_score"),
                          ("mini", "pass_rate"), ("mini", "judge_score")]
    z = scipy_stats.norm.ppf(0.5 + confidence / 2)
    for name, passes in (("small", SMALL), ("mini", MINI)):
        d = rows[(name, "pass_rate")]
        assert (d.test, d.cases) == ("McNemar exact", N)
        table = _table(LARGE, passes)
        assert d.p_value == pytest.approx(mcnemar(table, exact=True).pvalue, rel=1e-9)
        assert (d.reference_value, d.variant_value) == pytest.approx(
            (sum(LARGE) / N, sum(passes) / N))
        down, up = table[0][1], table[1][0]
        half = z * math.sqrt(down + up - (up - down) ** 2 / N) / N
        assert d.change == pytest.approx((up - down) / N)
        assert (d.low, d.high) == pytest.approx((d.change - half, d.change + half), rel=1e-9)
    for name, scores in (("small", SMALL_SCORES), ("mini", MINI_SCORES)):
        d = rows[(name, "judge_score")]
        assert (d.test, d.cases) == ("paired t", N)
        assert d.p_value == pytest.approx(scipy_stats.ttest_rel(scores, LARGE_SCORES).pvalue,
                                          rel=1e-7)
        differences = [v - r for v, r in zip(scores, LARGE_SCORES, strict=True)]
        assert d.change == pytest.approx(np.mean(differences))
        assert (d.low, d.high) == pytest.approx(_t_interval(differences, confidence),
                                                rel=1e-9)
    # Holm across every test of the comparison, not per variant
    raw = [d.p_value for d in comparison.differences]
    assert [d.adjusted_p for d in comparison.differences] == pytest.approx(
        list(multipletests(raw, method="holm")[1]), rel=1e-12, abs=0)
    per_variant = list(multipletests(raw[:2], method="holm")[1])
    assert rows[("small", "judge_score")].adjusted_p != pytest.approx(per_variant[1], abs=0)
    assert {k: d.verdict for k, d in rows.items()} == {
        ("small", "pass_rate"): "worse", ("small", "judge_score"): "worse",
        ("mini", "pass_rate"): "within noise", ("mini", "judge_score"): "within noise"}
    assert rows[("small", "pass_rate")].adjusted_p < 0.05 <= rows[("mini", "pass_rate")].adjusted_p


def test_a_rise_is_better() -> None:
    # the reference is the weaker one here: small against it rises
    comparison = compare(three_variants(), ["small", "large"], "small")
    rows = {d.metric: d.verdict for d in comparison.differences}
    assert rows == {"pass_rate": "better", "judge_score": "better"}


def test_too_few_cases_to_tell_when_no_result_could_be_significant() -> None:
    # 5 cases, every one passing under large and failing under small: McNemar's smallest
    # p on 5 pairs is 2 × 0.5⁵ = 0.0625, never below α 0.05
    results = [case("large", f"c{i}", "passed") for i in range(5)]
    results += [case("small", f"c{i}", "failed") for i in range(5)]
    (d,) = compare(results, ["large", "small"], "large").differences
    assert d.p_value == pytest.approx(mcnemar([[0, 5], [0, 0]], exact=True).pvalue)
    assert d.verdict == "too few cases to tell"
    # 6 such cases can be significant (p 0.031): the same drop is then a verdict
    results += [case("large", "c5", "passed"), case("small", "c5", "failed")]
    (d,) = compare(results, ["large", "small"], "large").differences
    assert d.verdict == "worse"
    # and no drop at all on 6 cases is within noise, not "too few"
    results = [case(v, f"c{i}", "passed") for v in ("large", "small") for i in range(6)]
    (d,) = compare(results, ["large", "small"], "large").differences
    assert (d.p_value, d.verdict) == (1.0, "within noise")


def test_errored_and_missing_cases_are_not_paired_and_count_as_not_run() -> None:
    results = [case(v, f"c{i}", "passed", judge_score=0.5 + 0.01 * i)
               for v in ("large", "small") for i in range(8)]
    # c0 errored under small (never ran), c1 under large; c7 has no result under small
    results = [r for r in results if not (r.variant == "small" and r.case_id == "c7")]
    results = [case(r.variant, r.case_id, "error") if (r.variant, r.case_id) in
               (("small", "c0"), ("large", "c1")) else r for r in results]
    # a variant not compared, and a case of a package without variants: both left out
    results += [case("other", "c0", "failed"), case(None, "c0", "failed")]
    comparison = compare(results, ["large", "small"], "large")
    large, small = comparison.variants
    assert comparison.cases == 8
    assert (large.cases, large.not_run, large.passed) == (7, 1, 7)
    assert (small.cases, small.not_run, small.passed) == (6, 2, 6)
    # the judge score's scored cases are those that ran with a score
    assert (large.scored_cases, small.scored_cases) == (7, 6)
    assert {d.metric: d.cases for d in comparison.differences} == {
        "pass_rate": 5, "judge_score": 5}  # c2–c6 ran under both
    # an error is listed as a disagreement where the other passed; a missing result is None
    assert [(d.case_id, d.outcomes) for d in comparison.disagreements] == [
        ("c0", (("large", "passed"), ("small", "error"))),
        ("c1", (("large", "error"), ("small", "passed")))]


def test_a_variant_that_never_ran_has_no_rate_and_is_not_on_the_frontier() -> None:
    results = [case("large", f"c{i}", "passed") for i in range(3)]
    results += [case("broken", f"c{i}", "error") for i in range(3)]
    comparison = compare(results, ["large", "broken"], "large")
    broken = comparison.summary("broken")
    assert (broken.cases, broken.not_run, broken.pass_rate, broken.pass_low) == (0, 3, None,
                                                                                None)
    assert comparison.differences == ()  # nothing paired: nothing tested
    assert comparison.frontier == ("large",)
    assert [d.case_id for d in comparison.disagreements] == ["c0", "c1", "c2"]


def test_repeated_cases_are_compared_by_a_paired_t_test_on_per_case_pass_rates() -> None:
    large_runs = [(1, 1, 1, 1), (1, 1, 0, 1), (1, 1, 1, 1), (0, 1, 1, 1), (1, 1, 1, 0),
                  (1, 1, 1, 1)]
    small_runs = [(1, 0, 0, 1), (0, 1, 0, 0), (1, 1, 0, 1), (0, 0, 1, 0), (1, 0, 0, 0),
                  (1, 1, 1, 0)]
    results = []
    for name, runs in (("large", large_runs), ("small", small_runs)):
        for i, case_runs in enumerate(runs):
            records = tuple(RunRecord(_pf(bool(ok))) for ok in case_runs)
            results.append(case(name, f"c{i}", _pf(sum(case_runs) >= 3), runs=records))
    (d,) = compare(results, ["large", "small"], "large", confidence=0.9).differences
    large_rates = [sum(r) / 4 for r in large_runs]
    small_rates = [sum(r) / 4 for r in small_runs]
    assert (d.test, d.cases) == ("paired t", 6)
    assert d.p_value == pytest.approx(scipy_stats.ttest_rel(small_rates, large_rates).pvalue,
                                      rel=1e-7)
    differences = [s - g for s, g in zip(small_rates, large_rates, strict=True)]
    assert (d.low, d.high) == pytest.approx(_t_interval(differences, 0.9), rel=1e-9)
    assert (d.reference_value, d.variant_value) == pytest.approx(
        (np.mean(large_rates), np.mean(small_rates)))


@pytest.mark.parametrize("n", [*range(1, 41), 57, 100, 101, 999])
def test_latency_percentiles_are_nearest_rank_as_numpy_inverted_cdf(n: int) -> None:
    values = [random.Random(n).uniform(1, 500) for _ in range(n)]
    for share in (0.5, 0.95):
        assert percentile(values, share) == np.percentile(values, share * 100,
                                                          method="inverted_cdf")


def test_a_variants_latency_cost_and_tokens() -> None:
    comparison = compare(three_variants(), ["large", "small", "mini"], "large")
    latencies = [float(10 * (i + 1)) for i in range(N)]
    large = comparison.summary("large")
    assert large.latency_p50_ms == np.percentile(latencies, 50, method="inverted_cdf")
    assert large.latency_p95_ms == np.percentile(latencies, 95, method="inverted_cdf")
    assert large.cost_usd == pytest.approx(0.004 * N)
    assert large.cost_per_case_usd == pytest.approx(0.004)
    assert large.tokens == sum(120 + i for i in range(N))
    # no usage reported: no cost, no tokens (not 0); an error's latency is not counted
    results = [case("a", "c0", "passed", latency_ms=5.0),
               case("a", "c1", "error", latency_ms=900.0),
               case("a", "c2", "passed", usage=Usage(None, None, None))]
    only = compare(results, ["a"], "a").summary("a")
    assert (only.cost_usd, only.cost_per_case_usd, only.tokens) == (None, None, None)
    assert (only.latency_p50_ms, only.latency_p95_ms) == (5.0, 5.0)


def _variant(name: str, passed: int, cost: float | None, cases: int = 10) -> list[CaseResult]:
    usage = None if cost is None else Usage(10, 10, cost)
    return [case(name, f"c{i}", _pf(i < passed), usage=usage) for i in range(cases)]


def test_the_frontier_is_the_variants_no_other_beats_on_both_pass_rate_and_cost() -> None:
    results = (_variant("best", 9, 0.02) + _variant("cheap", 8, 0.01)
               + _variant("beaten", 7, 0.015)  # cheap: higher rate and cheaper
               + _variant("dearer", 9, 0.03)  # best: same rate, cheaper
               + _variant("twin", 9, 0.02)  # equal to best on both: neither beats the other
               + _variant("cheapest", 5, 0.001))
    names = ["best", "cheap", "beaten", "dearer", "twin", "cheapest"]
    comparison = compare(results, names, "best")
    assert comparison.frontier == ("best", "cheap", "twin", "cheapest")
    assert [s.on_frontier for s in comparison.variants] == [True, True, False, False, True,
                                                            True]
    # a variant without a cost is compared on pass rate only: a higher rate beats it, and
    # it beats a lower rate whatever that one costs
    results += _variant("free", 10, None) + _variant("unknown", 4, None)
    comparison = compare(results, [*names, "free", "unknown"], "best")
    assert comparison.frontier == ("free",)
    # without any cost, the frontier is the highest pass rate (ties all on it)
    plain = _variant("x", 6, None) + _variant("y", 6, None) + _variant("z", 3, None)
    assert compare(plain, ["x", "y", "z"], "z").frontier == ("x", "y")


def test_disagreements_are_cases_whose_pass_or_fail_differs_sorted_by_suite_and_id() -> None:
    results = [
        case("a", "zeta", "passed", OTHER), case("b", "zeta", "failed", OTHER),
        case("a", "beta", "passed"), case("b", "beta", "passed"),  # agree
        case("a", "gamma", "failed"), case("b", "gamma", "timeout"),  # agree: neither passed
        case("a", "alpha", "failed"), case("b", "alpha", "passed"),
        case("a", "delta", "passed"),  # under one variant only: nothing to disagree with
        case("a", "eps", "passed"), case("b", "eps", "passed"), case("c", "eps", "failed"),
    ]
    comparison = compare(results, ["a", "b", "c"], "a")
    assert [(d.suite, d.case_id, d.outcomes) for d in comparison.disagreements] == [
        (SUITE.path, "alpha", (("a", "failed"), ("b", "passed"), ("c", None))),
        (SUITE.path, "eps", (("a", "passed"), ("b", "passed"), ("c", "failed"))),
        (OTHER.path, "zeta", (("a", "passed"), ("b", "failed"), ("c", None)))]
    assert comparison.package == "helpdesk"


def test_to_data_is_json_the_schema_holds_and_from_data_gives_it_back() -> None:
    results = [*three_variants(), case("mini", "extra", "error")]
    comparison = compare(results, ["large", "small", "mini"], "large",
                         advisory={"mini"})
    data = json.loads(json.dumps(comparison.to_data(), allow_nan=False))
    Draft202012Validator.check_schema(SCHEMA)
    Draft202012Validator(SCHEMA).validate(data)
    assert Comparison.from_data(data) == comparison
    assert data["frontier"] == list(comparison.frontier)
    assert data["variants"][2]["advisory"] is True
    assert data["disagreements"][0]["case_id"] == "c0"  # large failed it, mini passed
    assert data["disagreements"][0]["outcomes"][0] == {"variant": "large", "outcome": "failed"}
    # "extra" ran under mini only (an error): not run there, and missing everywhere else
    assert [v["not_run"] for v in data["variants"]] == [1, 1, 1]
    # a summary with nothing measured (nulls) keeps to the schema too
    empty = compare([case("a", "c", "error")], ["a"], "a")
    Draft202012Validator(SCHEMA).validate(empty.to_data())
    assert Comparison.from_data(empty.to_data()) == empty
    assert VariantSummary.from_data(empty.to_data()["variants"][0]) == empty.variants[0]
    # the schema refuses what it must: an unknown verdict
    data["differences"][0]["verdict"] = "significant"
    assert not Draft202012Validator(SCHEMA).is_valid(data)


@pytest.mark.parametrize(("variants", "reference", "said"), [
    (["a", "b"], "c", "the reference 'c' is not among the variants"),
    (["a", "a"], "a", "variants must be distinct"),
    ([], "a", "variants must be distinct names, at least one"),
])
def test_bad_arguments_are_refused(variants: list[str], reference: str, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        compare([], variants, reference)
