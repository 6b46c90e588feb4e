"""Issue 37 items 19–24 and issue 38: every interval, power and table the reports state,
against its reference (statsmodels, scipy, brute-force enumeration) — one quantity, one
interval, within its range, and the power of the test that is actually run."""

from __future__ import annotations

import functools
import itertools
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.stats as scipy_stats
from statsmodels.regression.linear_model import OLS
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.inter_rater import cohens_kappa
from statsmodels.stats.weightstats import DescrStatsW

from pytest_elizon_eval import agreement, power, sequential, stats
from pytest_elizon_eval.reporting.aggregate import Aggregate
from pytest_elizon_eval.reporting.intervals import suite_intervals, task_intervals
from pytest_elizon_eval.reporting.significance import (
    Paired,
    of_result,
    rows_tested,
    suite_changes,
)

from .conftest import Packages
from .test_noise import _break, _case, _package, _results

DOCS = Path(__file__).resolve().parent.parent / "docs"


# -- 19: a mean's variance is estimated: Student's t -------------------------------------------

@pytest.mark.parametrize("values", [[0.2, 0.9], [0.1, 0.9, 0.5], [3.0, 5.5, 4.0, 10.0, 2.2]])
@pytest.mark.parametrize("confidence", [0.8, 0.95])
def test_a_mean_interval_is_students_t(values: list[float], confidence: float) -> None:
    want = DescrStatsW(np.array(values)).tconfint_mean(alpha=1 - confidence)
    _mean, low, high = stats.clustered_mean_interval([[v] for v in values], confidence)
    assert (low, high) == pytest.approx(want, rel=1e-9)
    # the cost and token means, one value per case, say the same (cost stops at 0)
    aggregate = Aggregate(confidence=confidence)
    for i, v in enumerate(values):
        aggregate.add(_case("p/eval/s.yaml", f"c{i}", "passed",
                            usage={"input_tokens": int(v * 100), "output_tokens": 0}))
    tokens = suite_intervals(aggregate.suites()[0].results, confidence)["mean_tokens"]
    want = DescrStatsW(np.array([float(int(v * 100)) for v in values])).tconfint_mean(
        alpha=1 - confidence)
    assert (tokens.low, tokens.high) == pytest.approx((max(0.0, want[0]), want[1]), rel=1e-9)


def test_a_clustered_mean_is_t_with_one_degree_fewer_than_cases() -> None:
    clusters = [[1.0, 0.0, 1.0], [0.0, 0.0], [1.0, 1.0, 1.0, 1.0], [0.5]]
    y = np.array([x for c in clusters for x in c])
    groups = np.array([i for i, c in enumerate(clusters) for _ in c])
    fit = OLS(y, np.ones(len(y))).fit(cov_type="cluster", cov_kwds={"groups": groups},
                                      use_t=True)
    assert stats.clustered_mean_interval(clusters, 0.9)[1:] == pytest.approx(
        tuple(fit.conf_int(0.1)[0]), rel=1e-9)


def test_rag_means_are_t_and_stay_within_0_and_1() -> None:
    found = task_intervals({}, {"faithfulness": [0.7, 0.8, 0.9, 0.75],
                                "context_recall": [0.1, 0.95]}, 0.95)
    want = DescrStatsW(np.array([0.7, 0.8, 0.9, 0.75])).tconfint_mean(0.05)
    assert (found["faithfulness"].low, found["faithfulness"].high) == pytest.approx(want)
    assert (found["context_recall"].low, found["context_recall"].high) == (0.0, 1.0)


# -- 20: one quantity, one interval; a score stays within [0, 1] ------------------------------

JUDGE = """
import pytest

def by_output(rubric, case_input, output):
    return float(output)

@pytest.fixture(scope="session")
def elizon_judge():
    return by_output
"""


def test_the_judge_score_interval_is_about_the_judge_score_shown(
        packages: Packages, pytester: pytest.Pytester) -> None:
    # 4 cases, 2 of them repeated 3 times: over cases 0.650, over runs 0.700
    lines = ["cases:"]
    for i, (score, runs) in enumerate([(0.5, 1), (0.6, 1), (0.7, 3), (0.8, 3)]):
        lines += [f"  - id: c{i}", f"    input: '{score}'",
                  "    expect: {judge: {rubric: Scores itself., threshold: 0.1}}"]
        lines += [f"    repeat: {runs}"] if runs > 1 else []
    packages.package(suite="\n".join(lines) + "\n", app="def answer(text):\n    return text\n",
                     baseline="judge_score: 0.6")
    pytester.makeconftest(JUDGE)
    result = pytester.runpytest("--elizon-results=r.json", "--elizon-report=full")
    assert result.ret == pytest.ExitCode.OK
    low, high = DescrStatsW(np.array([0.5, 0.6, 0.7, 0.8])).tconfint_mean(0.05)
    result.stdout.fnmatch_lines([
        f"*judge_score 0.650 [[]{low:.3f}, {high:.3f}] (95% t, 4 cases, each the mean of its "
        "runs (8 runs))*",
        f"    judge_score * 0.650 * [[]{low:.3f}, {high:.3f}]*"])
    suite = _results(pytester.path / "r.json")["suites"][0]
    interval = suite["intervals"]["judge_score"]
    assert interval["estimate"] == pytest.approx(suite["metrics"]["judge_score"])
    assert (interval["method"], interval["cases"], interval["observations"]) == (
        "clustered mean", 4, 8)


def test_a_score_interval_stays_within_0_and_1() -> None:
    aggregate = Aggregate()
    for i, score in enumerate([0.5, 1.0]):  # samples 0.1/0.9/0.5 average 0.5
        aggregate.add(_case("p/eval/s.yaml", f"c{i}", "passed", judge_score=score))
    judge = suite_intervals(aggregate.suites()[0].results, 0.95)["judge_score"]
    assert (judge.estimate, judge.low, judge.high) == (0.75, 0.0, 1.0)


# -- 21 and issue 38: the clustered pass rate's clamp, one interval per quantity ---------------

def test_a_standard_error_of_zero_is_the_clamps_top_not_missing() -> None:
    # each case's runs: one pass, one failure — SE exactly 0, so n_eff is every run
    _rate, low, high = stats.clustered_rate_interval([[True, False], [False, True]])
    assert (low, high) == pytest.approx(stats.wilson_interval(2, 4))
    assert (round(low, 3), round(high, 3)) == (0.150, 0.850)
    # rounding that leaves a standard error of 1e-17 gives the same interval
    tiny = [[True, False, False], [False, True, False], [False, False, True]]
    assert stats.clustered_rate_interval(tiny)[1:] == pytest.approx(stats.wilson_interval(3, 9))


def test_one_repeated_case_has_one_interval_wherever_it_is_shown(
        packages: Packages, pytester: pytest.Pytester) -> None:
    # 17 of 20 runs pass: the suite's "over runs" interval is the case's own
    _package(packages, 1, "1:3", head="repeat: 20;minPassRate: 0.8")
    result = pytester.runpytest("-v")
    low, high = scipy_stats.binomtest(17, 20).proportion_ci(method="wilson")
    result.stdout.fnmatch_lines([
        f"    pass_rate over runs 0.850 [[]{low:.3f}, {high:.3f}]*",
        f"*17/20 passed (85%, 95% CI {low:.0%}–{high:.0%})*"])


def test_runs_that_disagree_within_each_case_use_every_run(
        packages: Packages, pytester: pytest.Pytester) -> None:
    _package(packages, 2, "1:1 2:1", head="repeat: 2;minPassRate: 0.5")
    result = pytester.runpytest("--elizon-report=full")
    result.stdout.fnmatch_lines(["    pass_rate over runs 0.500 [[]0.150, 0.850] (95% clustered "
                                 "by case, share of 4 runs of 2 cases)*"])


# -- 22: κ's interval is statsmodels' (Fleiss, Cohen and Everitt 1969) ------------------------

@pytest.mark.parametrize("table", [[[16, 4], [4, 16]], [[30, 2], [5, 3]], [[9, 1], [0, 10]],
                                   [[3, 4], [6, 2]], [[45, 5], [10, 40]]])
@pytest.mark.parametrize("confidence", [0.9, 0.95])
def test_kappa_interval_matches_statsmodels(table: list[list[int]], confidence: float) -> None:
    (tt, tf), (ft, ff) = table
    first = [True] * (tt + tf) + [False] * (ft + ff)
    second = [True] * tt + [False] * tf + [True] * ft + [False] * ff
    kappa, interval = agreement.cohen_kappa(first, second, confidence)
    want = cohens_kappa(np.array(table))
    half = scipy_stats.norm.ppf(0.5 + confidence / 2) * want.std_kappa
    assert kappa == pytest.approx(want.kappa)
    assert interval == pytest.approx((max(-1.0, want.kappa - half), min(1.0, want.kappa + half)))
    if confidence == 0.95:
        assert interval == pytest.approx((max(-1.0, want.kappa_low), min(1.0, want.kappa_upp)))


# -- 23: the power of the test that is run ------------------------------------------------------

@functools.cache
def _mcnemar_p(b: int, c: int) -> float:
    return float(mcnemar([[0, b], [c, 0]], exact=True).pvalue)


def _mcnemar_power(n: int, rate: float, drop: float, alpha: float) -> float:
    """By brute force: every (down, up) flip count, statsmodels' exact McNemar p-value."""
    after = rate - drop
    down, up = rate * (1 - after), (1 - rate) * after
    total = 0.0
    for b in range(n + 1):
        for c in range(min(b, n - b + 1)):
            if _mcnemar_p(b, c) < alpha:
                total += (math.comb(n, b) * math.comb(n - b, c) * down ** b * up ** c
                          * (1 - down - up) ** (n - b - c))
    return float(total)


@pytest.mark.parametrize(("n", "rate", "drop", "alpha"), [
    (9, 1.0, 0.553, 0.05), (20, 0.75, 0.4, 0.05), (30, 0.5, 0.3, 0.05), (12, 0.3, 0.25, 0.1),
    (25, 0.9, 0.5, 0.025), (70, 0.8, 0.2, 0.05)])
def test_mcnemar_power_is_the_exact_enumeration(n: int, rate: float, drop: float,
                                                alpha: float) -> None:
    assert stats.mcnemar_power(n, rate, drop, alpha) == pytest.approx(
        _mcnemar_power(n, rate, drop, alpha), abs=1e-10)


@pytest.mark.parametrize(("n", "k", "rate", "drop"), [(2, 5, 0.9, 0.5), (10, 3, 0.8, 0.3),
                                                      (40, 4, 0.9, 0.1), (300, 2, 0.6, 0.05)])
def test_paired_t_power_is_the_noncentral_t(n: int, k: int, rate: float, drop: float) -> None:
    after = rate - drop
    sigma = math.sqrt((rate * (1 - rate) + after * (1 - after)) / k)
    want = scipy_stats.nct.sf(scipy_stats.t.ppf(0.975, n - 1), n - 1, drop * math.sqrt(n) / sigma)
    assert stats.paired_t_power(n, k, rate, drop) == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize(("cases", "rate", "alpha", "repeats"), [
    (9, 1.0, 0.025, 1.0), (20, 0.75, 0.05, 1.0), (40, 0.9, 0.05, 1.0), (10, 0.8, 0.05, 4.0)])
def test_the_detectable_drop_is_the_first_drop_reaching_80_percent(
        cases: int, rate: float, alpha: float, repeats: float) -> None:
    drop = stats.detectable_drop(cases, rate, alpha, repeats=repeats)
    assert drop is not None
    # the first drop on a grid of 0.001 that reaches 80 %, the power scanned, not bisected
    grid = [d / 1000 for d in range(1, round(rate * 1000) + 1)]
    first = next(d for d in grid if stats.drop_power(cases, rate, d, alpha, repeats) >= 0.8)
    assert first - 0.001 < drop <= first + 1e-6
    if repeats == 1.0:
        assert _mcnemar_power(cases, rate, drop + 1e-6, alpha) >= 0.8
        assert _mcnemar_power(cases, rate, drop - 0.001, alpha) < 0.8


def test_the_readmes_suite_states_the_drop_its_test_detects(
        packages: Packages, pytester: pytest.Pytester) -> None:
    # 9 cases all passing (the README's example): the two-sample z test said 0.553, which
    # McNemar's exact test, the one run, detects only 37 % of the time
    assert _mcnemar_power(9, 1.0, 0.553, 0.05) == pytest.approx(0.368, abs=1e-3)
    _package(packages, 9, "")
    result = pytester.runpytest("--elizon-results=before.json", "--elizon-report=full")
    assert result.ret == pytest.ExitCode.OK
    # Holm spans the suite's rows (pass rate, latency): power at α/2 at least
    drop = stats.detectable_drop(9, 1.0, 0.025)
    assert drop is not None
    assert _mcnemar_power(9, 1.0, drop + 1e-6, 0.025) >= 0.8
    result.stdout.fnmatch_lines([
        f"    detects a pass-rate drop of {drop:.3f} or more with at least 80% power against "
        "a rerun of its 9 cases (McNemar exact, α 0.05, Holm over 2 metrics)"])
    # the rerun compared is tested on exactly those two rows
    result = pytester.runpytest("--elizon-baseline=before.json", "--elizon-results=after.json")
    rows = _results(pytester.path / "after.json")["regression"]["significance"]
    assert sorted(r["metric"] for r in rows) == ["mean_latency_ms", "pass_rate"]


@pytest.mark.parametrize("runs", [1, 3])
def test_the_holm_family_counted_is_the_one_a_rerun_is_tested_on(runs: int) -> None:
    suite = "p/eval/s.yaml"
    aggregate = Aggregate()
    for i in range(4):
        record = {"outcome": "passed", "judge_score": 0.5, "latency_ms": 3.0}
        more: dict[str, Any] = {"rag": {"faithfulness": 0.5}} if i % 2 else {}
        aggregate.add(_case(suite, f"c{i}", "passed", judge_score=0.5, latency_ms=3.0,
                            runs=[record] * runs if runs > 1 else [], **more))
    results = aggregate.suites()[0].results
    paired = [(of_result(r), of_result(r)) for r in results]
    tested = [c.metric for c in suite_changes(suite, paired, 0.95, 0.05)]
    assert sorted(tested) == ["faithfulness", "judge_score", "mean_latency_ms", "pass_rate"]
    assert rows_tested(results) == len(tested)


def test_repeated_cases_state_the_paired_t_tests_drop(
        packages: Packages, pytester: pytest.Pytester) -> None:
    _package(packages, 4, "1:1", head="repeat: 3;minPassRate: 0.5")  # 11 of 12 runs pass
    result = pytester.runpytest("--elizon-report=full")
    drop = stats.detectable_drop(4, 11 / 12, 0.025, repeats=3.0)
    assert drop is not None
    after = 11 / 12 - drop
    sigma = math.sqrt((11 / 12 * 1 / 12 + after * (1 - after)) / 3)
    assert scipy_stats.nct.sf(scipy_stats.t.ppf(1 - 0.0125, 3), 3, drop * 2 / sigma) == \
        pytest.approx(0.8, abs=1e-4)
    result.stdout.fnmatch_lines([
        f"    detects a pass-rate drop of {drop:.3f} or more with at least 80% power against "
        "a rerun of its 4 cases, 12 runs (paired t, α 0.05, Holm over 2 metrics)"])


def test_power_command_sizes_by_the_exact_test() -> None:
    # mcnemar_power is the enumeration's (above); every smaller suite falls short
    n = stats.runs_needed(0.9, 0.15)
    assert stats.mcnemar_power(n, 0.9, 0.15) >= 0.8
    assert all(stats.mcnemar_power(m, 0.9, 0.15) < 0.8 for m in range(1, n))
    k = stats.repeats_needed(30, 0.9, 0.15)
    assert k is not None
    assert stats.paired_t_power(30, k, 0.9, 0.15) >= 0.8 > stats.paired_t_power(30, k - 1,
                                                                                0.9, 0.15)
    lines = power.power_lines(rate=0.9, drop=0.15, cases=30, repeats=1, alpha=0.05, power=0.8)
    assert lines[:2] == [
        f"To detect a drop from 0.9 to 0.75 (McNemar exact, α 0.05, 80% power): {n} cases, "
        "each run once in each of the two suite runs compared.",
        f"With 30 cases: repeat each {k} times ({30 * k} runs; paired t on per-case pass "
        f"rates, α 0.05, 80% power), or add cases: {n} run once."]


@pytest.mark.parametrize(("rate", "drop"), [(0.9, 0.005), (0.5, 0.001)])
def test_the_cases_a_small_drop_needs_take_a_few_dozen_exact_powers(
        rate: float, drop: float, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # every n in the 5 % below the crossing was tried: 2,900 exact powers (32 s) for
    # 58,158 cases, 196,000 (hours) for 3.9 million; stopped at the 41st
    from pytest_elizon_eval import cli

    tried: list[int] = []
    inside = False
    real_power, real_weighted = stats.mcnemar_power, getattr(stats, "_weighted", None)

    def count(cases: int) -> None:
        tried.append(cases)
        if len(tried) > 40:
            raise AssertionError(f"more than 40 exact powers: {tried[:3]}, …, {tried[-3:]}")

    def power_of(cases: int, *args: float) -> float:
        nonlocal inside
        count(cases)
        inside = True
        try:
            return real_power(cases, *args)
        finally:
            inside = False

    def weighted(cases: int, *args: Any) -> float:  # the n below, sharing their chances
        if not inside:
            count(cases)
        assert real_weighted is not None
        return float(real_weighted(cases, *args))

    monkeypatch.setattr(stats, "mcnemar_power", power_of)
    monkeypatch.setattr(stats, "_weighted", weighted, raising=False)
    assert cli.main(["power", "--rate", str(rate), "--drop", str(drop)]) == 0
    said = re.search(r"Cases needed, each run once: (\d+)\.", capsys.readouterr().out)
    assert said is not None
    n = int(said[1])
    assert n - 1 in tried  # the search saw the crossing itself
    monkeypatch.undo()
    assert stats.mcnemar_power(n, rate, drop) >= 0.8 > stats.mcnemar_power(n - 1, rate, drop)


# -- issue 38: a change of a proportion lies within [−1, 1] ------------------------------------

def test_a_change_of_a_pass_rate_has_its_interval_within_minus_1_and_1() -> None:
    # 2 cases repeated: per-case rates 1 → 0.5 and 0.5 → 0 (the diff command's -0.5)
    before = [Paired((True, True), {}), Paired((True, False), {})]
    after = [Paired((True, False), {}), Paired((False, False), {})]
    [row] = [r for r in suite_changes("s", list(zip(before, after, strict=True)), 0.95, 0.05)
             if r.metric == "pass_rate"]
    assert row.change == -0.5  # no spread: the interval is the change itself
    assert -1.0 <= row.low <= row.high <= 1.0
    # with spread, the t interval itself, clipped
    before = [Paired((True, True), {}), Paired((True, False), {}), Paired((True, True), {})]
    after = [Paired((True, False), {}), Paired((False, False), {}), Paired((False, False), {})]
    [row] = [r for r in suite_changes("s", list(zip(before, after, strict=True)), 0.95, 0.05)
             if r.metric == "pass_rate"]
    low, high = scipy_stats.ttest_rel([0.5, 0.0, 0.0], [1.0, 0.5, 1.0]).confidence_interval()
    assert (row.low, row.high) == pytest.approx((max(-1.0, low), min(1.0, high)))
    assert row.low == -1.0


# -- 24: the sequential rule's saving, as the docs state it --------------------------------------

def test_sprt_chances_are_the_enumeration_of_every_sequence() -> None:
    rule, cap = sequential.Sprt(0.8), 10
    for p in (0.6, 0.8, 0.95):
        above = below = runs = 0.0
        for outcomes in itertools.product((True, False), repeat=cap):
            chance = math.prod(p if o else 1 - p for o in outcomes)
            decision, used = rule.decide(outcomes)
            above += chance * (decision == "above")
            below += chance * (decision == "below")
            runs += chance * used
        got = rule.chances(p, cap)
        assert (got.above, got.below, got.mean_runs) == pytest.approx((above, below, runs))


def _percent(text: str) -> float:
    return float(text.strip().rstrip("%").strip()) / 100


def test_the_documented_sequential_table_is_the_codes() -> None:
    text = (DOCS / "contract.md").read_text(encoding="utf-8")
    section = text[text.index("### Sequential repeats"):text.index("### Stability")]
    rows = {cells[0]: cells[1:] for line in section.splitlines()
            if line.strip().startswith("|") and not line.strip().startswith("|---")
            for cells in [[c.strip() for c in line.strip().strip("|").split("|")]]}
    grid = [float(p) for p in rows["true p"]]
    rule = sequential.Sprt(0.8)
    p0, p1 = rule.zone
    chances = {p: rule.chances(p) for p in grid}
    p0, p1 = (min(grid, key=lambda p: abs(p - edge)) for edge in (p0, p1))  # 0.7 is 0.7000…1
    worst = max(chances[p0].above, chances[p1].below)
    best, _ = sequential.fixed_repeat(worst, rule.zone)
    counting, _ = sequential.fixed_repeat(worst, rule.zone, 0.8)
    for p, wrong, mean, undecided, ratio in zip(
            grid, rows["wrong decisions (outside the zone)"], rows["mean runs (no cap)"],
            rows["inconclusive with `max: 20`"], rows[f"fixed n = {best} ÷ mean runs"],
            strict=True):
        got = chances[p]
        if p <= p0 or p >= p1:
            assert _percent(wrong) == pytest.approx(got.above if p <= p0 else got.below,
                                                    abs=5e-5)
        else:
            assert wrong == "zone"
        assert float(mean) == pytest.approx(got.mean_runs, abs=0.05)
        assert _percent(undecided) == pytest.approx(rule.chances(p, 20).undecided, abs=5e-4)
        assert float(ratio.rstrip("×")) == pytest.approx(best / got.mean_runs, abs=0.005)
    means = [chances[p].mean_runs for p in grid]
    near = [best / chances[p].mean_runs for p in grid if abs(p - 0.8) <= 0.1 + 1e-9]
    said: dict[str, Any] = {
        "worst": f"{worst:.2%}".replace("%", " %"), "best": f"n = {best}",
        "counting": f"n = {counting}",
        "mean": f"{sum(means) / len(means):.1f} runs",
        "average": f"{best / (sum(means) / len(means)):.2f}× fewer",
        "near": f"{min(near):.2f}–{max(near):.2f}×"}
    flat = re.sub(r"\s+", " ", section)
    for what, words in said.items():
        assert words in flat, (what, words)
    performance = re.sub(r"\s+", " ", (DOCS / "performance.md").read_text(encoding="utf-8"))
    assert f"{best / (sum(means) / len(means)):.2f}× fewer runs" in performance
    assert f"{min(near):.2f}–{max(near):.2f}×" in performance


def test_a_suite_of_cases_that_never_fail_decide_after_few_runs(
        packages: Packages, pytester: pytest.Pytester) -> None:
    # the grid's last column, as a user sees it: p = 1 decides above at the 12th run
    root = _package(packages, 1, "", head="repeat: {max: 40, until: decided};minPassRate: 0.8")
    _break(root, "")
    result = pytester.runpytest("-v")
    assert sequential.Sprt(0.8).chances(1.0).mean_runs == 12
    result.stdout.fnmatch_lines(["*decided above minPassRate 0.8 at run 12 of max 40*"])


# -- issue 38: a drop no test of so few cases could show is not "within noise" ---------------

@pytest.mark.parametrize("cases", range(1, 9))
def test_a_mcnemar_row_is_decidable_exactly_when_statsmodels_can_reach_alpha(cases: int
                                                                           ) -> None:
    from pytest_elizon_eval.reporting.significance import decidable

    smallest = mcnemar(np.array([[0, cases], [0, 0]]), exact=True).pvalue
    assert decidable(cases, 0.05) is bool(smallest < 0.05)


def test_a_drop_from_all_passing_to_none_on_few_cases_is_too_few_to_tell() -> None:
    from pytest_elizon_eval.reporting.significance import TOO_FEW, Paired, suite_changes

    for n in (1, 5):
        pairs = [(Paired((True,), {}), Paired((False,), {}))] * n
        (row,) = suite_changes("s.yaml", pairs, 0.95, 0.05)
        assert (row.before, row.after, row.significant) == (1.0, 0.0, False)
        assert row.verdict == TOO_FEW
        assert row.to_data()["decidable"] is False
    pairs = [(Paired((True,), {}), Paired((False,), {}))] * 6
    (row,) = suite_changes("s.yaml", pairs, 0.95, 0.05)
    assert row.verdict == "significant regression"
    assert row.p_value == pytest.approx(mcnemar(np.array([[0, 6], [0, 0]]), exact=True).pvalue)
    # a change that could have been significant and was not is within noise
    mixed = [(Paired((True,), {}), Paired((False,), {}))] * 2 + \
        [(Paired((True,), {}), Paired((True,), {}))] * 8
    (row,) = suite_changes("s.yaml", mixed, 0.95, 0.05)
    assert row.verdict == "within noise"


@pytest.mark.parametrize(("hits", "n", "rate", "words"), [
    (0, 1, 0.9, "too few cases to tell"),   # scipy: even 0 of 1 has p = 0.1
    (2, 2, 0.5, "too few cases to tell"),
    (3, 4, 0.75, "within noise"),           # 0 of 4 would have been significant
    (0, 1, 1.0, "significant"),
])
def test_an_authors_rate_compared_with_too_few_cases_says_so(hits: int, n: int, rate: float,
                                                               words: str) -> None:
    from pytest_elizon_eval.reporting.intervals import proportion_test

    found = proportion_test(hits, n, rate, 0.05)
    assert found is not None
    p, said = found
    assert p == pytest.approx(scipy_stats.binomtest(hits, n, rate).pvalue)
    assert said.startswith(words)
    extremes = min(scipy_stats.binomtest(k, n, rate).pvalue for k in range(n + 1))
    assert said.startswith("too few") is bool(extremes >= 0.05)
