"""pytest_elizon_eval.stats against its references (scipy, statsmodels: test-only), on fixed
inputs and on inputs hypothesis generates."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
import scipy.stats as scipy_stats
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.regression.linear_model import OLS
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from pytest_elizon_eval import stats

#: Derandomized: the same examples every run, so a failure is reproducible, never flaky.
FAST = settings(max_examples=40, deadline=None, derandomize=True)


@pytest.mark.parametrize(("k", "n", "conf"), [(0, 1, 0.95), (3, 5, 0.95), (5, 5, 0.9),
                                              (17, 40, 0.99), (0, 30, 0.8)])
def test_wilson_matches_statsmodels(k: int, n: int, conf: float) -> None:
    low, high = proportion_confint(k, n, alpha=1 - conf, method="wilson")
    assert stats.wilson_interval(k, n, conf) == pytest.approx((low, high), abs=1e-12)


def _ols_cluster(clusters: list[list[float]]) -> tuple[float, float]:
    y = np.array([x for c in clusters for x in c], dtype=float)
    groups = np.array([i for i, c in enumerate(clusters) for _ in c])
    fit = OLS(y, np.ones(len(y))).fit(cov_type="cluster", cov_kwds={"groups": groups})
    return float(fit.params[0]), float(fit.bse[0])


def test_clustered_mean_matches_statsmodels_cluster_robust_se() -> None:
    clusters = [[1.0, 0.0, 1.0], [0.0, 0.0], [1.0, 1.0, 1.0, 1.0], [0.5]]
    mean, se = stats.clustered_mean(clusters)
    assert (mean, se) == pytest.approx(_ols_cluster(clusters), rel=1e-10)
    # Student's t with G − 1 degrees of freedom: the variance is estimated from 4 cases
    _, low, high = stats.clustered_mean_interval(clusters, 0.9)
    t = scipy_stats.t.ppf(0.95, 3)
    assert (low, high) == pytest.approx((mean - t * se, mean + t * se))


@FAST
@given(st.lists(st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=5), min_size=2,
                max_size=12))
def test_clustered_mean_property(clusters: list[list[float]]) -> None:
    mean, se = stats.clustered_mean(clusters)
    want_mean, want_se = _ols_cluster(clusters)
    assert mean == pytest.approx(want_mean, rel=1e-9, abs=1e-9)
    assert se == pytest.approx(want_se, rel=1e-6, abs=1e-9)


def test_clustered_mean_needs_two_clusters_for_an_error() -> None:
    assert stats.clustered_mean([[1.0, 2.0, 3.0]]) == (2.0, None)
    assert stats.clustered_mean_interval([[1.0, 2.0]]) == (1.5, None, None)
    with pytest.raises(ValueError, match="at least one observation"):
        stats.clustered_mean([])


def test_clustered_rate_is_wilson_for_single_runs_and_wider_when_cases_agree() -> None:
    single = [[True]] * 7 + [[False]] * 3
    rate, low, high = stats.clustered_rate_interval(single)
    assert (rate, low, high) == pytest.approx((0.7, *stats.wilson_interval(7, 10)))
    # 10 cases x 5 runs, each case always passing or always failing: the runs of a case
    # say one thing, so the interval is as wide as 10 single runs, not 50
    same = [[True] * 5] * 7 + [[False] * 5] * 3
    assert stats.clustered_rate_interval(same)[1:] == pytest.approx(stats.wilson_interval(7, 10))
    # runs that disagree within cases are worth more than one run per case
    mixed = [[True, True, True, False, True]] * 5 + [[True, False, True, False, False]] * 5
    rate, low, high = stats.clustered_rate_interval(mixed)
    assert rate == pytest.approx(0.6)
    assert high - low < stats.wilson_interval(6, 10)[1] - stats.wilson_interval(6, 10)[0]
    assert stats.clustered_rate_interval([[True] * 4] * 3) == (1.0, pytest.approx(
        stats.wilson_interval(3, 3)[0]), 1.0)


@pytest.mark.parametrize(("k", "n", "p"), [(0, 1, 0.5), (7, 10, 0.9), (45, 50, 0.8),
                                           (3, 3, 1.0), (0, 20, 0.0), (2, 20, 0.0),
                                           (33, 100, 0.33), (500, 1000, 0.47)])
def test_binomial_test_matches_scipy(k: int, n: int, p: float) -> None:
    assert stats.binomial_test(k, n, p) == pytest.approx(scipy_stats.binomtest(k, n, p).pvalue,
                                                         rel=1e-9, abs=1e-14)


@FAST
@given(st.integers(1, 300).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
       # scipy itself overflows on subnormal rates
       st.one_of(st.sampled_from([0.0, 1.0]), st.floats(1e-9, 1.0 - 1e-9)))
def test_binomial_test_property(kn: tuple[int, int], p: float) -> None:
    k, n = kn
    want = scipy_stats.binomtest(k, n, p).pvalue
    assert stats.binomial_test(k, n, p) == pytest.approx(want, rel=1e-7, abs=1e-12)


def test_binomial_test_says_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="at least one trial"):
        stats.binomial_test(0, 0, 0.5)
    with pytest.raises(ValueError, match="between 0 and 3"):
        stats.binomial_test(4, 3, 0.5)
    with pytest.raises(ValueError, match="p must be between"):
        stats.binomial_test(1, 3, 1.5)


@FAST
@given(st.integers(0, 80), st.integers(0, 80))
def test_mcnemar_exact_matches_statsmodels(b: int, c: int) -> None:
    want = mcnemar([[10, b], [c, 10]], exact=True).pvalue
    assert stats.mcnemar_exact(b, c) == pytest.approx(want, rel=1e-9, abs=1e-14)


@pytest.mark.parametrize("diffs", [[0.2, -0.1, 0.4, 0.0, 0.3], [-1.0, -0.8, -0.9],
                                   [0.0, 0.0, 0.5, -0.5, 0.25, 0.1, 0.9, -0.2]])
def test_paired_t_matches_scipy(diffs: list[float]) -> None:
    before = np.zeros(len(diffs))
    want = scipy_stats.ttest_rel(np.array(diffs), before)
    low, high = want.confidence_interval(0.95)
    assert stats.paired_t_test(diffs) == pytest.approx(
        (np.mean(diffs), low, high, want.pvalue), rel=1e-8)


@FAST
@given(st.lists(st.floats(-10, 10), min_size=2, max_size=40),
       st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_paired_t_property(diffs: list[float], confidence: float) -> None:
    if np.std(diffs) < 1e-6:  # no spread: scipy says nan, this module 0 or 1 (documented)
        return
    want = scipy_stats.ttest_rel(np.array(diffs), np.zeros(len(diffs)))
    low, high = want.confidence_interval(confidence)
    got = stats.paired_t_test(diffs, confidence)
    assert got[1:3] == pytest.approx((low, high), rel=1e-7, abs=1e-9)
    assert got[3] == pytest.approx(want.pvalue, rel=1e-7, abs=1e-12)


def test_paired_t_without_spread() -> None:
    assert stats.paired_t_test([0.0, 0.0, 0.0])[3] == 1.0
    assert stats.paired_t_test([-0.2, -0.2])[3] == 0.0
    with pytest.raises(ValueError, match="at least two paired cases"):
        stats.paired_t_test([0.3])


@pytest.mark.parametrize("df", [1, 2, 5, 30, 400])
def test_t_quantile_matches_scipy(df: int) -> None:
    assert stats.t_quantile(0.95, df) == pytest.approx(scipy_stats.t.ppf(0.975, df), rel=1e-10)


@FAST
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=15))
def test_holm_matches_statsmodels(pvalues: list[float]) -> None:
    # multipletests runs gc.collect() on every call: seconds late in a full test session
    with mock.patch("gc.collect", return_value=0):
        want = multipletests(pvalues, method="holm")[1]
    assert stats.holm(pvalues) == pytest.approx(list(want), abs=1e-12)


@pytest.mark.parametrize(("rate", "drop", "alpha"), [(0.9, 0.15, 0.05), (0.8, 0.3, 0.05),
                                                     (1.0, 0.2, 0.01), (0.5, 0.25, 0.1)])
def test_runs_needed_is_the_first_n_mcnemars_exact_power_reaches(rate: float, drop: float,
                                                                  alpha: float) -> None:
    # the power of the test --elizon-baseline runs, not the two-sample z test's formula
    n = stats.runs_needed(rate, drop, alpha)
    assert stats.mcnemar_power(n, rate, drop, alpha) >= 0.8
    assert all(stats.mcnemar_power(m, rate, drop, alpha) < 0.8 for m in range(1, n))


def test_detectable_drop_inverts_runs_needed() -> None:
    drop = stats.detectable_drop(50, 0.9)
    assert drop is not None
    assert stats.runs_needed(0.9, drop) <= 50 < stats.runs_needed(0.9, drop - 0.005)
    # 3 runs cannot tell a 50 % suite from one that always fails
    assert stats.detectable_drop(3, 0.5) is None
    assert stats.detectable_drop(0, 0.9) is None
    with pytest.raises(ValueError, match="0 < drop <= rate"):
        stats.runs_needed(0.5, 0.6)


@pytest.mark.parametrize("p", [1e-15, 1e-9, 1e-4, 0.025, 0.05, 0.2, 0.5, 0.6, 0.8, 0.9, 0.95,
                               0.975, 0.995, 1 - 1e-6, 1 - 1e-12])
def test_normal_ppf_is_the_standard_librarys(p: float) -> None:
    from statistics import NormalDist

    assert stats.normal_ppf(p) == pytest.approx(NormalDist().inv_cdf(p), rel=1e-13, abs=1e-13)


@pytest.mark.parametrize("p", [0.0, 1.0, -0.1, float("nan")])
def test_normal_ppf_refuses_what_is_not_a_probability(p: float) -> None:
    with pytest.raises(ValueError, match="p must be between 0 and 1"):
        stats.normal_ppf(p)
