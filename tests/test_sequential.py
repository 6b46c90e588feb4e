"""Per-case noise (docs/contract.md#repeat-runs): a repeated case's Wilson interval, the
sequential stopping rule (``repeat: {max, until: decided}``), ``inconclusive``, flaky
cases, ``expect.deterministic`` / ``expect.stable`` — in every report."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

import pytest

from pytest_elizon_eval.load.model import Suite, validate
from pytest_elizon_eval.sequential import Sprt, flaky, similarity, stability, within_noise
from pytest_elizon_eval.stats import wilson_interval

from .conftest import Packages, validate_results

# Each input names its pass probability; every input has its own seeded generator, so a
# case's runs are the same on every test run. "pattern:PPPPF" cycles through the letters.
APP = '''
import random

_rngs = {}
_seen = {}

def answer(text):
    if text.startswith("pattern:"):
        letters = text.split(":", 1)[1]
        n = _seen[text] = _seen.get(text, -1) + 1
        return "yes" if letters[n % len(letters)] == "P" else "no"
    if text.startswith("count"):
        n = _seen[text] = _seen.get(text, -1) + 1
        return f"answer {n}"
    if text.startswith("same"):
        return "the same answer"
    rng = _rngs.setdefault(text, random.Random(7))
    return "yes" if rng.random() < float(text) else "no"
'''

SUITE = """
cases:
  - id: always
    input: "1.0"
    repeat: {max: 20, until: decided}
    minPassRate: 0.8
    expect: {contains: ["yes"]}
  - id: mostly
    input: "0.97"
    repeat: {max: 40, until: decided}
    minPassRate: 0.8
    expect: {contains: ["yes"]}
  - id: coin
    input: "0.5"
    repeat: {max: 20, until: decided}
    minPassRate: 0.8
    expect: {contains: ["yes"]}
  - id: never
    input: "0.0"
    repeat: {max: 20, until: decided}
    expect: {contains: ["yes"]}
  - id: undecided
    input: "pattern:PPPPF"
    repeat: {max: 20, until: decided}
    minPassRate: 0.8
    expect: {contains: ["yes"]}
  - id: fixed-flaky
    input: "pattern:PPPPF"
    repeat: 5
    minPassRate: 0.8
    expect: {contains: ["yes"]}
  - id: same
    input: "same"
    repeat: 3
    expect: {deterministic: true}
  - id: varied
    input: "count"
    repeat: 3
    expect: {stable: {maxUniqueOutputs: 2, minSimilarity: 0.5}}
"""

REPORTS = ["--elizon-results=out/r.json", "--elizon-markdown=out/s.md",
           "--elizon-junit=out/j.xml", "--elizon-html=out/r.html"]


def _cases(pytester: pytest.Pytester) -> dict[str, Any]:
    data = json.loads((pytester.path / "out/r.json").read_text(encoding="utf-8"))
    validate_results(data)
    return {c["id"]: c for s in data["suites"] for c in s["cases"]}


def test_the_sequential_rule_decides_and_every_report_shows_it(
        packages: Packages, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    packages.package(suite=SUITE, app=APP)
    result = pytester.runpytest("-v", *REPORTS, "--junitxml=out/pytest.xml")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*::always PASSED*", "*::coin FAILED*",
                                 "*::undecided INCONCLUSIVE*",
                                 "*3 failed, 4 passed, 1 inconclusive*"])
    cases = _cases(pytester)
    # p = 1: twelve passes take the likelihood ratio past 1/alpha = 20; nothing more runs
    always = cases["always"]["repeat"]
    assert (cases["always"]["outcome"], always["decision"], always["decided_at"],
            always["runs"]) == ("passed", "above", 12, 12)
    assert always["rule"] == "sequential"
    assert always["method"] == "SPRT"
    assert (always["low"], always["high"]) == pytest.approx(wilson_interval(12, 12))
    assert not always["flaky"]
    mostly = cases["mostly"]["repeat"]
    assert (cases["mostly"]["outcome"], mostly["decision"]) == ("passed", "above")
    assert mostly["runs"] < 40
    coin = cases["coin"]["repeat"]
    assert (cases["coin"]["outcome"], coin["decision"]) == ("failed", "below")
    assert coin["runs"] < 20
    assert coin["flaky"]
    # minPassRate 1 (the default): one failing run rules out p >= 0.9 at once
    never = cases["never"]["repeat"]
    assert (cases["never"]["outcome"], never["decision"], never["decided_at"],
            never["runs"]) == ("failed", "below", 1, 1)
    # four passes in five, for ever: the rule cannot tell 0.8 from 0.8 and stops at max
    undecided = cases["undecided"]
    assert undecided["outcome"] == "inconclusive"
    assert undecided["repeat"]["runs"] == 20
    assert "decision" not in undecided["repeat"]
    assert undecided["repeat"]["flaky"]
    assert undecided["repeat"]["inconclusive_passes"] is False
    # plain repeat keeps its counting rule (4 of 5 meets 0.8) and says it is within noise
    fixed = cases["fixed-flaky"]
    assert fixed["outcome"] == "passed"
    assert fixed["passed_runs"] == 4
    assert fixed["repeat"]["rule"] == "fixed"
    assert fixed["repeat"]["within_noise"]
    assert fixed["repeat"]["flaky"]
    assert "decision" not in fixed["repeat"]
    assert cases["same"]["outcome"] == "passed"
    assert (cases["same"]["repeat"]["unique_outputs"], cases["same"]["repeat"]["variance"]) \
        == (1, 0.0)
    varied = cases["varied"]
    assert varied["outcome"] == "failed"
    assert varied["repeat"]["unique_outputs"] == 3
    assert [a["passed"] for a in varied["assertions"] if a["name"] == "stable"] == [False]
    # the terminal summary: every repeated case with its interval and words
    text = result.stdout.str()
    assert ("pkg/eval/suite.yaml::fixed-flaky passed: 4/5 passed (80%, 95% CI 38%–96%) — "
            "flaky, within noise; fixed repeat: minPassRate 0.8") in text
    assert "pkg/eval/suite.yaml::undecided inconclusive: 16/20 passed" in text
    assert ("inconclusive: undecided after 20 of max 20 runs (SPRT, zone ±0.1, 95% "
            "confidence; elizon_inconclusive = fail)") in text
    assert "decided above minPassRate 0.8 at run 12 of max 20" in text
    assert "[pkg, must-pass]: 4 passed, 3 failed, 0 timeout, 1 inconclusive, pass rate over " \
           "runs " in text
    # listed apart with its reason, like the timed-out cases
    assert "inconclusive:\n  pkg/eval/suite.yaml::undecided — inconclusive after 20 of max " \
           "20 runs: 16/20 runs passed" in text
    # the results' suite counts it as they count timeouts: a rate with its interval
    suite = json.loads((pytester.path / "out/r.json").read_text(encoding="utf-8"))["suites"][0]
    assert suite["metrics"]["inconclusive_rate"] == 1 / 8
    assert suite["intervals"]["inconclusive_rate"]["low"] == \
        pytest.approx(wilson_interval(1, 8)[0])
    from pytest_elizon_eval import cli

    # elizon-eval show lists it apart too, not under "failed:"
    assert cli.main(["show", str(pytester.path / "out/r.json")]) == 0
    shown = capsys.readouterr().out
    failed = shown.split("\nfailed:\n", 1)[1].split("\nverdict:", 1)[0]
    assert "::coin" in failed
    assert "::undecided" not in failed
    assert "\ninconclusive:\n  pkg/eval/suite.yaml::undecided — inconclusive after" in shown
    # markdown: counts and the repeated cases table
    md = (pytester.path / "out/s.md").read_text(encoding="utf-8")
    assert "4 passed · 3 failed · 0 timeout · 1 inconclusive" in md
    assert "| `fixed-flaky` | passed | 4/5 passed (80%, 95% CI 38%–96%) | flaky, within " \
           "noise |" in md
    assert "| `undecided` | inconclusive |" in md
    assert "| inconclusive_rate | — | 0.125 |" in md
    # JUnit: the inconclusive case is an error of its own type; every rate is a property
    root = ET.parse(pytester.path / "out/j.xml").getroot()
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["metric.inconclusive_rate"] == "0.125"
    assert props["case.fixed-flaky.flaky"] == "true"
    assert props["case.fixed-flaky.pass_rate_low"] == f"{wilson_interval(4, 5)[0]:.6g}"
    assert props["case.undecided.decision"] == "inconclusive"
    errors = {c.get("name"): c.find("error") for c in root.iter("testcase")}
    assert errors["undecided"] is not None
    assert errors["undecided"].get("type") == "inconclusive"
    assert errors["undecided"].get("message").startswith("inconclusive after 20 of max 20")
    # pytest's own --junitxml: each repeated case's rate as user properties
    own = ET.parse(pytester.path / "out/pytest.xml").getroot()
    fixed_props = {p.get("name"): p.get("value") for c in own.iter("testcase")
                   if c.get("name") == "fixed-flaky" for p in c.iter("property")}
    assert fixed_props["elizon_flaky"] == "true"
    assert fixed_props["elizon_within_noise"] == "true"
    assert fixed_props["elizon_pass_rate"] == "0.8"
    # HTML: the inconclusive category, the flaky badge and an error bar per repeated case
    page = (pytester.path / "out/r.html").read_text(encoding="utf-8")
    assert 'data-outcome="inconclusive"' in page
    assert '<span class="b flaky">flaky</span>' in page
    assert '<span class="b within-noise">within noise</span>' in page
    assert page.count('class="interval"') == 8
    assert page.count('class="threshold"') == 8


def test_elizon_inconclusive_pass_lets_the_gate_pass(packages: Packages,
                                                     pytester: pytest.Pytester) -> None:
    packages.package(suite="""
        cases:
          - id: undecided
            input: "pattern:PPPPF"
            repeat: {max: 10, until: decided}
            minPassRate: 0.8
            expect: {contains: ["yes"]}
        """, app=APP)
    pytester.makeini("[pytest]\nelizon_inconclusive = pass\n")
    result = pytester.runpytest(*REPORTS, "--elizon-annotations=on")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["::warning file=pkg/eval/suite.yaml,line=*,title=undecided%3A "
                                 "inconclusive (passes by elizon_inconclusive = pass)::*"])
    # the must-pass gate passes, and every report says PASS, not advisory
    result.stdout.fnmatch_lines(["*[[]pkg, must-pass[]]: 0 passed, 0 failed, 0 timeout, "
                                 "1 inconclusive, pass rate * — PASS", "*1 inconclusive*"])
    case = _cases(pytester)["undecided"]
    assert case["outcome"] == "inconclusive"
    assert case["repeat"]["inconclusive_passes"]
    data = json.loads((pytester.path / "out/r.json").read_text(encoding="utf-8"))
    assert data["verdict"]["pass"] is True
    assert data["suites"][0]["verdict"] == "pass"
    assert data["verdict"]["paragraph"].endswith(
        "passed 0 of 1 (1 inconclusive), which passes by elizon_inconclusive = pass.")
    md = (pytester.path / "out/s.md").read_text(encoding="utf-8")
    assert "## ✅ pkg/eval/suite.yaml" in md
    assert "gate **must-pass**: 0 passed · 0 failed · 0 timeout · 1 inconclusive" in md
    root = ET.parse(pytester.path / "out/j.xml").getroot()
    skipped = next(root.iter("skipped"))
    assert skipped.get("message").startswith("inconclusive, passes by elizon_inconclusive")
    page = (pytester.path / "out/r.html").read_text(encoding="utf-8")
    assert "of 1 package: 0 passed, 1 inconclusive</p>" in page
    assert "<h2>Inconclusive: 1 case pass by elizon_inconclusive = pass</h2>" in page
    assert "advisory, not passed" not in page
    assert "PASS · pkg/eval/suite.yaml" in page


def test_a_bad_elizon_inconclusive_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nelizon_inconclusive = maybe\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini option elizon_inconclusive*'maybe'*expected fail or "
                                 "pass*"])


OVERLAP_APP = '''
import threading, time
_lock = threading.Lock()
_now = [0]
_peak = [0]

def answer(text):
    with _lock:
        _now[0] += 1
        _peak[0] = max(_peak[0], _now[0])
    time.sleep(0.02)
    with _lock:
        _now[0] -= 1
        with open("peak.txt", "w") as out:
            out.write(str(_peak[0]))
    return "yes"
'''


def test_runs_overlap_under_concurrency_and_every_started_run_is_counted(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite="""
        cases:
          - id: always
            input: hello
            repeat: {max: 40, until: decided}
            minPassRate: 0.8
            expect: {contains: ["yes"]}
        """, app=OVERLAP_APP)
    result = pytester.runpytest("--elizon-concurrency=4", "--elizon-results=out/r.json")
    assert result.ret == pytest.ExitCode.OK
    record = _cases(pytester)["always"]["repeat"]
    assert int((pytester.path / "peak.txt").read_text()) > 1  # runs of the case overlapped
    # decided at the 12th run in start order; the runs already under way are counted too
    assert record["decided_at"] == 12
    assert 12 <= record["runs"] <= 12 + 3
    assert record["passed"] == record["runs"]


def test_deterministic_needs_repeat(packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite="""
        cases:
          - id: once
            input: same
            expect: {deterministic: true}
        """, app=APP)
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "*EVALUATION_SUITE_INVALID: pkg/eval/suite.yaml: case once: expect.deterministic and "
        "expect.stable compare the runs of a repeated case; give it (or its suite) repeat: 2 "
        "or more*"])


@pytest.mark.parametrize(("text", "message"), [
    ("repeat: {max: 20}", "cases[0].repeat: missing required key 'until'"),
    ("repeat: {max: 20, until: always}",
     "cases[0].repeat.until: expected 'decided', found the text 'always'"),
    ("repeat: {max: 1, until: decided}", "cases[0].repeat.max: must be at least 2, found 1"),
    ("repeat: {max: 20, until: decided, indifference: 0.9}",
     "cases[0].repeat.indifference: Input should be less than 0.5"),
    ("repeat: {max: 20, until: decided, upto: 3}", "cases[0].repeat: unknown key 'upto'"),
    ("expect: {stable: {}}",
     "cases[0].expect.stable: stable needs maxUniqueOutputs, minSimilarity or both"),
    ("expect: {stable: {minSimilarity: 2}}",
     "cases[0].expect.stable.minSimilarity: must be at most 1.0, found 2"),
])
def test_bad_shapes_are_clear_errors_at_their_key(text: str, message: str) -> None:
    import yaml  # deferred: the test's own reading of a tiny document

    _, problems = validate(Suite, yaml.safe_load(f"cases: [{{id: a, input: x, {text}}}]"))
    assert any(p.message.startswith(message) for p in problems), problems


def test_a_bad_repeat_is_an_error_at_its_line(packages: Packages,
                                              pytester: pytest.Pytester) -> None:
    packages.package(suite="""
        cases:
          - id: a
            input: x
            repeat: {max: 20}
        """, app=APP)
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert ("EVALUATION_SUITE_INVALID: pkg/eval/suite.yaml:4: cases[0].repeat: missing "
            "required key 'until'") in result.stdout.lines


def test_deterministic_in_a_turn_is_refused() -> None:
    import yaml  # deferred: the test's own reading of a tiny document

    _, problems = validate(Suite, yaml.safe_load(
        "cases: [{id: a, turns: [{input: x, expect: {deterministic: true}}]}]"))
    assert [p.message for p in problems] == [
        "cases[0].turns[0]: deterministic and stable compare the runs of the whole case; put "
        "them in the case's own expect, not a turn's"]


# -- the pure rule --------------------------------------------------------------------------

def test_sprt_thresholds_are_the_anytime_ones() -> None:
    rule = Sprt(0.8)  # zone (0.7, 0.9), alpha 0.05: log 20 = 3.0
    assert rule.decide([True] * 11) == (None, 11)  # 11 * log(9/7) = 2.76
    assert rule.decide([True] * 12) == ("above", 12)
    assert rule.decide([False] * 3) == ("below", 3)  # 3 * log(1/3) = -3.30
    assert rule.decide([True, True, False, False]) == (None, 4)
    # the decision is the first crossing: what follows does not undo it
    assert rule.decide([False] * 3 + [True] * 30) == ("below", 3)
    # a zone touching 1: one failure rules out p >= 1
    assert Sprt(1.0).decide([True, False]) == ("below", 2)
    # a zone touching 0: one pass rules out p <= 0
    assert Sprt(0.05).decide([False, True]) == ("above", 2)
    # a higher confidence needs more evidence
    assert Sprt(0.8, confidence=0.99).decide([True] * 12) == (None, 12)


def test_noise_words_and_stability() -> None:
    assert within_noise(4, 5, 0.8)
    assert not within_noise(20, 20, 0.8)
    assert flaky(4, 5)
    assert not flaky(5, 5)
    assert not flaky(0, 5)
    assert not flaky(1, 1)
    assert similarity("abc", "abc") == 1.0
    assert similarity("", "") == 1.0
    assert similarity("abcd", "abce") == pytest.approx(0.75)
    found = stability(["a", "a", "b", None])
    # six pairs: (a, a) alike; (a, b) twice and (a|b, none) three times differ wholly
    assert (found.runs, found.unique_outputs) == (4, 3)
    assert found.variance == pytest.approx(5 / 6)
    assert found.min_similarity == 0.0
    assert stability(["x"] * 5).variance == 0.0


def test_a_sequential_case_replays_its_recorded_runs(packages: Packages,
                                                     pytester: pytest.Pytester) -> None:
    packages.package(suite="""
        cases:
          - id: coin
            input: "0.5"
            repeat: {max: 20, until: decided}
            minPassRate: 0.8
            expect: {contains: ["yes"]}
        """, app=APP)
    pytester.runpytest("--elizon-record=c.json", "--elizon-results=out/r.json")
    recorded = _cases(pytester)["coin"]
    cassette = json.loads((pytester.path / "c.json").read_text(encoding="utf-8"))
    (entry,) = cassette["cases"].values()
    assert len(entry["runs"]) == recorded["repeat"]["runs"] < 20  # only the runs it took
    (pytester.path / "pkg/app.py").write_text("def answer(text):\n    raise RuntimeError\n")
    pytester.runpytest("--elizon-replay=c.json", "--elizon-results=out/r.json")
    replayed = _cases(pytester)["coin"]
    assert replayed["replayed"]
    assert replayed["repeat"] == recorded["repeat"]


def test_a_suite_default_may_be_sequential() -> None:
    import yaml  # deferred: the test's own reading of a tiny document

    from pytest_elizon_eval.load import model
    from pytest_elizon_eval.load.runtime import Manifest, RepeatUntil
    from pytest_elizon_eval.run.planning import repeat_rule

    manifest = Manifest.model_validate(yaml.safe_load(
        "evaluation: {suites: [{suite: ./s.yaml, minPassRate: 0.9,"
        " repeat: {max: 30, until: decided, indifference: 0.05}}]}"))
    assert manifest.evaluation is not None
    (ref,) = manifest.evaluation.refs()
    assert isinstance(ref.repeat, RepeatUntil)
    rule, runs = repeat_rule(ref.repeat, 0.9, 0.95)
    assert runs == 30
    assert rule == Sprt(0.9, 0.05, 0.95)
    assert repeat_rule(3, 0.9, 0.95) == (None, 3)
    _, problems = validate(model.Manifest, yaml.safe_load(
        "evaluation: {suite: ./s.yaml, repeat: {max: 20, untl: decided}}"))
    assert [p.message for p in problems] == [
        "evaluation.repeat: missing required key 'until'",
        "evaluation.repeat: unknown key 'untl' (did you mean 'until'?); allowed here: max, "
        "until, indifference"]


def _decided_share(rule: Sprt, p: float, horizon: int) -> dict[str | None, float]:
    """The exact chance of each decision within ``horizon`` runs, by dynamic programming
    over the number of passes (the order of a prefix does not change where it stands)."""
    shares: dict[str | None, float] = {"above": 0.0, "below": 0.0, None: 0.0}
    alive = {0: 1.0}  # passes so far -> chance of being undecided there
    for n in range(1, horizon + 1):
        nxt: dict[int, float] = {}
        for passes, mass in alive.items():
            for passed, chance in ((True, p), (False, 1 - p)):
                k = passes + passed
                decision = rule.standing(k, n)  # reached from an undecided path: new
                if decision is None:
                    nxt[k] = nxt.get(k, 0.0) + mass * chance
                else:
                    shares[decision] += mass * chance
        alive = nxt
    shares[None] = sum(alive.values())
    return shares


def test_the_rule_keeps_its_error_bound_exactly() -> None:
    rule = Sprt(0.8)
    # at the zone's edges, where the bound is tightest, and beyond them
    assert _decided_share(rule, 0.7, 150)["above"] <= 0.05
    assert _decided_share(rule, 0.5, 150)["above"] <= 0.05
    assert _decided_share(rule, 0.9, 150)["below"] <= 0.05
    assert _decided_share(rule, 0.99, 150)["below"] <= 0.05
    strict = Sprt(0.8, indifference=0.05, confidence=0.99)
    assert _decided_share(strict, 0.75, 300)["above"] <= 0.01
    assert _decided_share(strict, 0.85, 300)["below"] <= 0.01


def test_the_case_confidence_is_elizon_confidence(packages: Packages,
                                                  pytester: pytest.Pytester) -> None:
    packages.package(suite="""
        cases:
          - id: fixed-flaky
            input: "pattern:PPPPF"
            repeat: 5
            minPassRate: 0.8
            expect: {contains: ["yes"]}
        """, app=APP)
    pytester.makeini("[pytest]\nelizon_confidence = 0.99\n")
    result = pytester.runpytest("--elizon-results=out/r.json", "--elizon-report=full")
    assert result.ret == pytest.ExitCode.OK
    record = _cases(pytester)["fixed-flaky"]["repeat"]
    assert record["confidence"] == 0.99
    assert (record["low"], record["high"]) == pytest.approx(wilson_interval(4, 5, 0.99))
    result.stdout.fnmatch_lines(["*4/5 passed (80%, 99% CI *"])
