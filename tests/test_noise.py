"""Verdicts that hold under noise (issue 21, suite level): intervals in every report, the
author baseline's noise test, each suite's detectable drop, significant regressions against
--elizon-baseline and --elizon-fail-on-regression — driven as users run them."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from pytest_elizon_eval import stats
from pytest_elizon_eval.reporting.aggregate import Aggregate
from pytest_elizon_eval.reporting.regression import compare

from .conftest import Packages

#: Answers "ok" unless the case's number is listed in broken.txt; with ``repeat``, a case
#: listed as ``N:K`` fails its first K runs (counted in files that :func:`_break` clears).
APP = """
from pathlib import Path

here = Path(__file__).parent

def answer(text):
    broken = {}
    for item in (here / "broken.txt").read_text().split():
        number, _, runs = item.partition(":")
        broken[number] = int(runs or 10**6)
    counter = here / "runs" / text
    counter.parent.mkdir(exist_ok=True)
    seen = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(seen))
    return "no" if seen <= broken.get(text, 0) else "ok"
"""


def _break(root: Path, broken: str) -> None:
    """What fails from the next run on, counting every case's runs from 0 again."""
    (root / "broken.txt").write_text(broken)
    for counter in (root / "runs").glob("*"):
        counter.unlink()


def _suite(cases: int, each: str = "") -> str:
    lines = ["cases:"]
    for i in range(1, cases + 1):
        lines += [f"  - id: c{i:02d}", f"    input: '{i}'", "    expect: {contains: [ok]}"]
        lines += [f"    {line}" for line in each.split(";") if line]
    return "\n".join(lines) + "\n"


def _package(packages: Packages, cases: int, broken: str, head: str = "",
             baseline: str = "") -> Path:
    root = packages.package(suite=_suite(cases, head), app=APP, baseline=baseline)
    _break(root, broken)
    return root


def _results(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def test_intervals_noise_and_detectable_drop_in_every_report(
        packages: Packages, pytester: pytest.Pytester,
        capsys: pytest.CaptureFixture[str]) -> None:
    _package(packages, 20, "3 7 11 15 19", baseline="pass_rate: 0.8")  # 15 of 20 pass
    pytester.makeini("[pytest]\nelizon_confidence = 0.9\n")
    result = pytester.runpytest("--elizon-results=r.json", "--elizon-markdown=s.md",
                                "--elizon-junit=j.xml", "--elizon-html=h.html",
                                "--elizon-report=full")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # 5 cases of a must-pass suite fail
    low, high = stats.wilson_interval(15, 20, 0.9)
    shown = f"[{low:.3f}, {high:.3f}]"
    # the power of McNemar's exact test at α over Holm's 2 rows (pass rate, latency)
    drop = stats.detectable_drop(20, 0.75, 0.05 / 2)
    assert drop is not None
    p = stats.binomial_test(15, 20, 0.8)
    result.stdout.fnmatch_lines([
        f"pkg/eval/suite.yaml [[]pkg, must-pass]: 15 passed, 5 failed, 0 timeout, pass rate "
        f"0.750 [[]{shown[1:]} — FAIL",
        f"    pass_rate 0.750 {shown} (90% Wilson, 20 cases)",
        f"    detects a pass-rate drop of {drop:.3f} or more with at least 80% power against a "
        "rerun of its 20 cases (McNemar exact, α 0.05, Holm over 2 metrics)",
        "    metric*90% interval*vs baseline",
        f"    pass_rate  0.800 * 0.750 * [[]{shown[1:]}  -0.05 * below, within noise (exact "
        f"binomial p={p:.3g})",
    ])
    suite = _results(pytester.path / "r.json")["suites"][0]
    interval = suite["intervals"]["pass_rate"]
    assert (interval["low"], interval["high"]) == pytest.approx((low, high))
    assert (interval["method"], interval["confidence"], interval["cases"]) == ("wilson", 0.9, 20)
    assert suite["detectable_drop"]["drop"] == pytest.approx(drop)
    row = next(r for r in suite["comparison"] if r["metric"] == "pass_rate")
    assert row["p_value"] == pytest.approx(p)
    assert row["noise"].startswith("within noise")
    assert "mean_latency_ms" in suite["intervals"]
    markdown = (pytester.path / "s.md").read_text(encoding="utf-8")
    assert f"| pass_rate | 0.800 | 0.750 | {shown} | -0.05 | below, within noise" in markdown
    assert f"pass_rate 0.750 {shown} (90% Wilson, 20 cases) · detects a pass-rate drop" \
        in markdown
    properties = {p.get("name"): p.get("value")
                  for p in ET.parse(pytester.path / "j.xml").getroot().iter("property")}
    assert float(properties["interval.pass_rate.low"]) == pytest.approx(low, rel=1e-5)
    assert properties["interval.pass_rate.method"] == "wilson"
    assert properties["baseline.pass_rate.noise"].startswith("within noise")
    assert float(properties["detectable_drop"]) == pytest.approx(drop, rel=1e-5)
    page = (pytester.path / "h.html").read_text(encoding="utf-8")
    assert (f'class="errorbar" data-metric="pass_rate" data-low="{low:.4f}" '
            f'data-high="{high:.4f}"') in page
    assert "90% interval" in page
    from pytest_elizon_eval import cli

    # elizon-eval show says the same, at the run's confidence
    assert cli.main(["show", str(pytester.path / "r.json")]) == 0
    assert f"    pass_rate 0.750 {shown} (90% Wilson, 20 cases)" in capsys.readouterr().out
    # and on the baseline chart's bar of this run
    assert page.count('class="errorbar" data-metric="pass_rate"') == 2
    assert "within noise (exact binomial" in page


def test_repeated_cases_get_an_interval_clustered_by_case(
        packages: Packages, pytester: pytest.Pytester) -> None:
    # 6 cases x 4 runs: c01 fails 3 runs, c02 and c03 one each; every case passes at 0.25
    _package(packages, 6, "1:3 2:1 3:1", head="repeat: 4;minPassRate: 0.25")
    result = pytester.runpytest("--elizon-results=r.json", "--elizon-markdown=s.md",
                                "--elizon-junit=j.xml", "--elizon-report=full")
    assert result.ret == pytest.ExitCode.OK
    suite = _results(pytester.path / "r.json")["suites"][0]
    runs = [[r["outcome"] == "passed" for r in c["runs"]] for c in suite["cases"]]
    rate, low, high = stats.clustered_rate_interval(runs)
    assert rate == 19 / 24
    interval = suite["intervals"]["pass_rate"]
    assert (interval["method"], interval["estimate"], interval["observations"]) == (
        "clustered wilson", rate, 24)
    assert (interval["low"], interval["high"]) == pytest.approx((low, high))
    # clustered: wider than 24 independent runs would give
    assert high - low > (lambda w: w[1] - w[0])(stats.wilson_interval(19, 24))
    result.stdout.fnmatch_lines([f"    pass_rate over runs 0.792 [[]{low:.3f}, {high:.3f}] "
                                 "(95% clustered by case, share of 24 runs of 6 cases)"])
    # JUnit: the metric is the share of cases, the interval says what it is about (the runs)
    properties = {p.get("name"): p.get("value")
                  for p in ET.parse(pytester.path / "j.xml").getroot().iter("property")}
    assert float(properties["metric.pass_rate"]) == 1.0
    assert float(properties["interval.pass_rate.estimate"]) == pytest.approx(19 / 24, rel=1e-5)
    assert float(properties["interval.pass_rate.low"]) == pytest.approx(low, rel=1e-5)
    assert "interval.mean_latency_ms.estimate" in properties
    # the table's row is the share of cases; its interval cell says it is about the runs
    assert f"| pass_rate | — | 1.000 | 0.792 over runs [{low:.3f}, {high:.3f}] |" \
        in (pytester.path / "s.md").read_text(encoding="utf-8")


def test_fail_on_regression_fails_only_a_significant_regression(
        packages: Packages, pytester: pytest.Pytester,
        capsys: pytest.CaptureFixture[str]) -> None:
    root = _package(packages, 10, "", head="repeat: 4;minPassRate: 0.5")
    assert pytester.runpytest("--elizon-results=before.json").ret == pytest.ExitCode.OK
    args = ("--elizon-baseline=before.json", "--elizon-fail-on-regression",
            "--elizon-results=after.json", "--elizon-markdown=s.md", "--elizon-html=h.html",
            "--elizon-junit=j.xml", "--elizon-report=full")
    # one case lost one run in four: within noise, the run passes
    _break(root, "4:1")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.OK
    assert "regression.fails_run" not in (pytester.path / "j.xml").read_text(encoding="utf-8")
    result.stdout.fnmatch_lines(["  within noise: pkg/eval/suite.yaml pass_rate 1.000 -> 0.975 "
                                 "(-0.025 [[]*], paired t, p=0.343, Holm p=*)"])
    # every case lost runs, each still at minPassRate: every case passes, the suite regressed
    _break(root, " ".join(f"{i}:{2 if i % 2 else 1}" for i in range(1, 11)))
    result = pytester.runpytest(*args, "-p", "metadata", "-p", "html", "--html=ph.html")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=10)
    result.stdout.fnmatch_lines([
        "  significant regression: pkg/eval/suite.yaml pass_rate 1.000 -> 0.625 (-0.375 *"
        "paired t, p=*",
        "--elizon-fail-on-regression fails the run: 1 significant regression of must-pass "
        "suites since *before.json: pkg/eval/suite.yaml pass_rate -0.375 (p=*).",
    ])
    data = _results(pytester.path / "after.json")
    assert data["verdict"]["pass"] is False
    assert "--elizon-fail-on-regression fails the run" in data["verdict"]["paragraph"]
    assert (data["regression"]["fails_run"], data["regression"]["blocking"]) == (True, 1)
    row = next(r for r in data["regression"]["significance"] if r["metric"] == "pass_rate")
    assert (row["test"], row["verdict"], row["cases"]) == ("paired t", "significant regression",
                                                           10)
    assert row["change"] == pytest.approx(-0.375)
    markdown = (pytester.path / "s.md").read_text(encoding="utf-8")
    assert markdown.startswith("# Elizon eval\n\n❌ The run's cases passed:")
    assert "| `pkg/eval/suite.yaml` | pass_rate | paired t | 1.000 | 0.625 | -0.375 [" in markdown
    page = (pytester.path / "h.html").read_text(encoding="utf-8")
    assert "<title>Elizon eval: FAIL</title>" in page
    # pytest-html's summary too
    assert "Elizon eval: FAIL</strong>" in (pytester.path / "ph.html").read_text(encoding="utf-8")
    assert '<tr class="significance" data-verdict="significant regression">' in page
    from pytest_elizon_eval import cli

    capsys.readouterr()
    assert cli.main(["diff", str(pytester.path / "before.json"),
                     str(pytester.path / "after.json")]) == 0
    assert ("significant regression: pkg/eval/suite.yaml pass_rate -0.375 [" in
            capsys.readouterr().out)
    # shown again from the file: the rows, and a verdict that never says pass
    assert cli.main(["show", str(pytester.path / "after.json")]) == 0
    shown = capsys.readouterr().out
    assert "  significant regression: pkg/eval/suite.yaml pass_rate 1.000 -> 0.625" in shown
    assert "\nverdict: FAIL — The run's cases passed: " in shown
    assert "--elizon-fail-on-regression fails the run: 1 significant regression" in shown
    # the JUnit file has no failed case, so its suite says the run failed, and on what
    suite = ET.parse(pytester.path / "j.xml").getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("failures"), suite.get("errors")) == ("0", "0")
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert (properties["regression.fails_run"], properties["regression.metrics"]) == (
        "true", "pass_rate")
    assert float(properties["regression.pass_rate.change"]) == pytest.approx(-0.375)
    assert float(properties["regression.pass_rate.adjusted_p"]) < 0.05
    # elizon-eval diff fails on the same significant regression, though no case regressed
    before, after = str(pytester.path / "before.json"), str(pytester.path / "after.json")
    assert cli.main(["diff", before, after, "--fail-on-regression"]) == 1
    assert ("--fail-on-regression fails the run: 1 significant regression of must-pass "
            "suites since ") in capsys.readouterr().out
    # the run failed: verify --require-pass says so, and a person can override it
    assert cli.main(["verify", after, "--require-pass"]) == 1
    assert capsys.readouterr().err.startswith(
        "EVALUATION_GATE_FAILED: significant regression (--elizon-fail-on-regression): "
        "pkg/eval/suite.yaml pass_rate -0.375 (Holm p=")
    from pytest_elizon_eval.trust import signing

    private, public, _ = signing.generate(pytester.path / "keys")
    assert cli.main(["override", after, "--approver", "Alice", "--reason", "accepted",
                     "--sign-key", str(private)]) == 0
    made = _results(pytester.path / "after.json.override.json")
    assert (made["failed_suites"], made["failed_regressions"][0]["metric"]) == ([], "pass_rate")
    assert cli.main(["verify", after, "--require-pass", "--approver-key", str(public)]) == 0
    assert "must-pass gate failed, overridden by Alice: accepted" in capsys.readouterr().out
    # without the flag the same regression is reported, and does not fail the run
    _break(root, " ".join(f"{i}:{2 if i % 2 else 1}" for i in range(1, 11)))
    result = pytester.runpytest("--elizon-baseline=before.json")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["  significant regression: pkg/eval/suite.yaml pass_rate *"])


def test_bad_levels_and_a_flag_without_a_baseline_are_usage_errors(
        packages: Packages, pytester: pytest.Pytester) -> None:
    _package(packages, 2, "")
    for ini, said in (("elizon_confidence = 1.5", "elizon_confidence*('1.5'): expected a "
                       "confidence level above 0 and below 1, e.g. 0.95"),
                      ("elizon_confidence = high", "elizon_confidence*('high'): expected*"),
                      ("elizon_alpha = 0", "elizon_alpha*('0'): expected a significance level "
                       "above 0 and below 1, e.g. 0.05"),
                      ("elizon_fail_on_regression = maybe", "elizon_fail_on_regression*: "
                       "*expected true or false")):
        pytester.makeini(f"[pytest]\n{ini}\n")
        result = pytester.runpytest()
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([f"ERROR: ini option {said}"])
    pytester.makeini("[pytest]\nelizon_confidence = 90%\n")
    assert pytester.runpytest().ret == pytest.ExitCode.OK
    # the gate asked for, with nothing to compare (no baseline, no variants): never a
    # silent pass; the run's own reports are made all the same
    result = pytester.runpytest("--elizon-fail-on-regression", "--elizon-results=r.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["ERROR: --elizon-fail-on-regression had nothing to compare: "
                                 "it compares this run with an earlier one (give "
                                 "--elizon-baseline=PATH*"])
    assert (pytester.path / "r.json").is_file()


# -- pairing, directly ---------------------------------------------------------------------

def _case(suite: str, name: str, outcome: str, **more: Any) -> dict[str, Any]:
    return {"nodeid": f"{suite}::{name}", "case_id": name, "line": 1, "outcome": outcome,
            "suite": {"path": suite, "package": "p", "gate": "must-pass", "advisory": False},
            **more}


def test_single_runs_pair_by_node_id_with_mcnemar_and_holm_across_metrics() -> None:
    suite = "p/eval/s.yaml"
    before = {"suites": [{"path": suite, "sha256": "", "cases": [
        {"nodeid": f"{suite}::c{i}", "outcome": "passed", "judge_score": 0.9,
         "latency_ms": 10.0 + i} for i in range(12)] + [
        {"nodeid": f"{suite}::gone", "outcome": "failed"}]}]}
    after = Aggregate(alpha=0.05)
    for i in range(12):  # 7 flip to failed, one flips nowhere, scores fall by 0.1-0.2
        after.add(_case(suite, f"c{i}", "failed" if i < 7 else "passed",
                        judge_score=0.8 - 0.01 * i, latency_ms=10.0 + i))
    after.add(_case(suite, "fresh", "failed", judge_score=0.0))
    regression = compare(before, after, "b.json")
    rows = {r.metric: r for r in regression.significance}
    assert set(rows) == {"pass_rate", "judge_score", "mean_latency_ms"}
    rate = rows["pass_rate"]
    assert (rate.test, rate.cases, rate.before) == ("McNemar exact", 12, 1.0)
    assert rate.after == pytest.approx(5 / 12)
    assert rate.p_value == pytest.approx(stats.mcnemar_exact(7, 0))
    assert [rows[m].adjusted_p for m in ("pass_rate", "judge_score", "mean_latency_ms")] == \
        pytest.approx(stats.holm([rate.p_value, rows["judge_score"].p_value,
                                  rows["mean_latency_ms"].p_value]))
    assert rate.regressed
    assert rows["judge_score"].regressed
    assert rows["mean_latency_ms"].verdict == "within noise"  # no change at all
    # new and removed cases are listed, never paired
    changes = {c.nodeid.rsplit("::", 1)[1]: c.change for c in regression.changes}
    assert (changes["fresh"], changes["gone"]) == ("new", "removed")
    assert regression.blocking() == [rate, rows["judge_score"]]


# -- elizon-eval power ------------------------------------------------------------------------

def test_power_prints_cases_repeats_and_detectable_drops(
        capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_elizon_eval import cli

    needed = stats.runs_needed(0.9, 0.15)
    assert cli.main(["power", "--rate", "0.9", "--drop", "0.15"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"To detect a drop from 0.9 to 0.75 (McNemar exact, α 0.05, 80% power): {needed} cases, "
        "each run once in each of the two suite runs compared.",
        f"Cases needed, each run once: {needed}."]
    assert cli.main(["power", "--rate", "0.9", "--drop", "0.15", "--cases", "30"]) == 0
    times = stats.repeats_needed(30, 0.9, 0.15)
    assert times is not None
    assert (f"With 30 cases: repeat each {times} times ({30 * times} runs; paired t on per-case "
            f"pass rates, α 0.05, 80% power), or add cases: {needed} run once.") \
        in capsys.readouterr().out
    assert cli.main(["power", "--rate", "0.9", "--cases", "50", "--repeats", "3",
                     "--alpha", "0.01"]) == 0
    drop = stats.detectable_drop(50, 0.9, 0.01, repeats=3.0)
    assert drop is not None
    assert capsys.readouterr().out == (
        f"50 cases × 3 repeats (150 runs) detect a pass-rate drop of {drop:.3f} or more from "
        f"0.9, to {0.9 - drop:.3f} (paired t on per-case pass rates, α 0.01, 80% power).\n")


@pytest.mark.parametrize(("argv", "said"), [
    (["--rate", "1.2", "--drop", "0.1"],
     "argument --rate: expected a pass rate above 0 and at most 1, got '1.2'"),
    (["--rate", "0.5", "--drop", "0.6"], "--drop 0.6 is more than --rate 0.5"),
    (["--rate", "0.9"], "give --drop D (the cases needed), or --cases N"),
    (["--rate", "0.9", "--cases", "many"],
     "argument --cases: expected a whole number of cases from 1, got 'many'"),
    (["--rate", "0.9", "--drop", "0.1", "--power", "1"],
     "argument --power: expected a power above 0 and below 1, got '1'"),
])
def test_power_bad_arguments_are_clear_errors(argv: list[str], said: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_elizon_eval import cli

    try:
        status = cli.main(["power", *argv])
    except SystemExit as exc:  # argparse's own errors exit
        status = int(exc.code or 0)
    assert status == 2
    assert said in capsys.readouterr().err


def test_judge_scores_and_latencies_of_repeated_cases_are_clustered_by_case() -> None:
    import numpy as np
    from statsmodels.stats.weightstats import DescrStatsW

    from pytest_elizon_eval.reporting.intervals import suite_intervals

    suite = "p/eval/s.yaml"
    scores = [[0.9, 0.7, 0.8], [0.2, 0.4], [0.6], [1.0, 1.0, 0.9, 0.8]]
    aggregate = Aggregate(confidence=0.8)
    for i, runs in enumerate(scores):
        records = [{"outcome": "passed", "judge_score": x, "latency_ms": 100.0 * x}
                   for x in runs]
        mean = sum(runs) / len(runs)
        aggregate.add(_case(suite, f"c{i}", "passed", judge_score=mean, latency_ms=100 * mean,
                            runs=records if len(runs) > 1 else []))
    found = suite_intervals(aggregate.suites()[0].results, 0.8)
    judge = found["judge_score"]
    assert (judge.method, judge.cases, judge.observations) == ("clustered mean", 4, 10)
    # each case is one observation, the mean of its runs: the metric the row shows
    means = [sum(c) / len(c) for c in scores]
    assert judge.estimate == pytest.approx(aggregate.suites()[0].metrics()["judge_score"])
    assert (judge.low, judge.high) == pytest.approx(
        DescrStatsW(np.array(means)).tconfint_mean(0.2))
    latency = found["mean_latency_ms"]
    assert (latency.low, latency.high) == pytest.approx(
        DescrStatsW(np.array([100 * m for m in means])).tconfint_mean(0.2))
    # a suite's baseline rows carry them, at the aggregate's confidence
    rows = {r.metric: r for r in aggregate.suites()[0].baseline_rows()}
    assert rows["judge_score"].interval == judge
    assert "mean_cost_usd" not in found  # nothing measured, no interval


def test_a_significant_change_of_a_metric_that_never_gates_says_so() -> None:
    from pytest_elizon_eval.reporting.regression import shown_verdict
    from pytest_elizon_eval.reporting.significance import SignificantChange

    def row(metric: str, after: float, p: float) -> SignificantChange:
        return SignificantChange("s.yaml", metric, "paired t", 20, 1.0, after, 0.001, 0.002, p,
                                 p, 0.05, metric != "mean_latency_ms")

    # a microsecond of latency, significant but never gating: worded as such
    assert shown_verdict(row("mean_latency_ms", 1.003, 0.001)) == \
        "significant regression (not gated)"
    assert shown_verdict(row("judge_score", 0.9, 0.001)) == "significant regression"
    assert shown_verdict(row("mean_latency_ms", 1.003, 0.5)) == "within noise"
