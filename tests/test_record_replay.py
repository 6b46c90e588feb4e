"""--elizon-record / --elizon-replay round trips, and repeat runs with minPassRate."""

from __future__ import annotations

import json
from typing import Any

import pytest

from .conftest import Packages

COUNTING_APP = """
import pathlib, time

CALLS = pathlib.Path(__file__).with_name("calls.txt")

def answer(text):
    with CALLS.open("a") as fh:  # one appended byte a call: none lost when calls overlap
        fh.write("x")
    if text == "boom":
        raise RuntimeError("upstream refused")
    if text == "slow":
        time.sleep(3600)
    return {"route": "records.query", "echo": text}
"""
SUITE = """
cases:
  - id: routed
    input: which invoices
    expect: {route: records.query, maxLatencyMs: 60000}
  - id: raises
    input: boom
    expect: {errorContains: [refused]}
  - id: hangs
    input: slow
  - id: text
    input: {text: named}
    expect: {contains: ['"echo": "named"']}
"""


def calls(pytester: pytest.Pytester) -> int:
    path = pytester.path / "pkg/calls.txt"
    return len(path.read_text()) if path.exists() else 0


def cassette(pytester: pytest.Pytester, name: str = "tape.json") -> dict[str, Any]:
    data: dict[str, Any] = json.loads((pytester.path / name).read_text())
    return data


def test_record_then_replay_without_calling_the_entry_point(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    packages.package(app=COUNTING_APP, suite=SUITE)
    recorded = pytester.runpytest("--elizon-record=tape.json", "--elizon-timeout=0.15")
    assert recorded.parseoutcomes() == {"passed": 3, "timeout": 1}
    recorded.stdout.fnmatch_lines(["*generated cassette: *tape.json*"])
    assert calls(pytester) == 4
    tape = cassette(pytester)
    assert tape["format"] == "pytest-elizon-eval/cassette/v2"
    assert sorted(tape["cases"]) == [f"pkg:eval/suite.yaml::{name}"
                                     for name in ("hangs", "raises", "routed", "text")]
    assert {case["timeout_s"] for case in tape["cases"].values()} == {0.15}
    assert tape["cases"]["pkg:eval/suite.yaml::hangs"]["runs"][0]["timed_out"] is True
    assert tape["cases"]["pkg:eval/suite.yaml::raises"]["runs"][0]["error"]["message"] == \
        "upstream refused"
    # Offline: no entry point bound at all, and it is never called.
    (pytester.path / "pkg/elizon.yaml").write_text(
        "evaluation:\n  suite: ./eval/suite.yaml\n")
    replayed = pytester.runpytest("--elizon-replay=tape.json", "--elizon-results=r.json")
    assert replayed.parseoutcomes() == {"passed": 3, "timeout": 1}
    assert calls(pytester) == 4
    results = json.loads((pytester.path / "r.json").read_text())
    assert {c["entry"] for s in results["suites"] for c in s["cases"]} == {"cassette"}


def test_the_cassette_is_stable_for_review(packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app=COUNTING_APP, suite=SUITE.replace("  - id: hangs\n    input: slow\n",
                                                           ""))
    pytester.runpytest("--elizon-record=tape.json")
    first = (pytester.path / "tape.json").read_text()
    pytester.runpytest("--elizon-record=tape.json")
    second = (pytester.path / "tape.json").read_text()

    def without_latency(text: str) -> list[str]:
        return [line for line in text.splitlines() if '"latency_ms"' not in line]

    assert without_latency(first) == without_latency(second)
    assert first.index('"pkg:eval/suite.yaml::raises"') < first.index(
        '"pkg:eval/suite.yaml::routed"')  # sorted keys


def test_re_recording_a_subset_keeps_the_other_cases(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    packages.package(app=COUNTING_APP, suite=SUITE)
    pytester.runpytest("--elizon-record=tape.json", "--elizon-timeout=0.15")
    pytester.runpytest("--elizon-record=tape.json", "-k", "routed")
    assert len(cassette(pytester)["cases"]) == 4


def test_replay_reports_missing_and_changed_cases(packages: Packages, pytester: pytest.Pytester
                                                  ) -> None:
    packages.package(app=COUNTING_APP, suite=SUITE)
    pytester.runpytest("--elizon-record=tape.json", "--elizon-timeout=0.15", "-k", "not text")
    suite = pytester.path / "pkg/eval/suite.yaml"
    suite.write_text(suite.read_text().replace("input: which invoices", "input: which bills"))
    before = calls(pytester)
    result = pytester.runpytest("--elizon-replay=tape.json")
    assert result.parseoutcomes() == {"passed": 1, "timeout": 1, "errors": 2}
    result.stdout.fnmatch_lines([
        "ELIZON_CASSETTE_STALE: the input of pkg:eval/suite.yaml::routed changed since it was "
        "recorded; record it again with --elizon-record"])
    result.stdout.fnmatch_lines([
        "ELIZON_CASSETTE_MISSING: pkg:eval/suite.yaml::text is not in the cassette (cases are "
        "keyed by package name, suite path inside the package and case id); record it with "
        "--elizon-record"])
    assert calls(pytester) == before  # never silently called live


def test_replayed_latency_is_checked_and_labelled(packages: Packages, pytester: pytest.Pytester
                                                  ) -> None:
    packages.package(app=COUNTING_APP, suite=SUITE)
    pytester.runpytest("--elizon-record=tape.json", "-k", "routed")
    tape = cassette(pytester)
    tape["cases"]["pkg:eval/suite.yaml::routed"]["runs"][0]["latency_ms"] = 75_000.0
    (pytester.path / "tape.json").write_text(json.dumps(tape))
    result = pytester.runpytest("--elizon-replay=tape.json", "-k", "routed")
    result.assert_outcomes(failed=1, deselected=3)
    result.stdout.fnmatch_lines([
        "      found:    took 75000.0 ms (recorded latency, replayed)",
        "latency: 75000.0 ms (recorded latency, replayed from the cassette)",
    ])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--elizon-record=a.json", "--elizon-replay=b.json"],
         "ERROR: --elizon-record and --elizon-replay cannot be used together"),
        (["--elizon-replay=missing.json"], "ERROR: --elizon-replay=*missing.json: cannot read it*"),
        (["--elizon-replay=bad.json"], "ERROR: --elizon-replay=*bad.json: not a cassette*"),
    ],
)
def test_bad_cassette_options(packages: Packages, pytester: pytest.Pytester, args: list[str],
                              message: str) -> None:
    packages.package(app=COUNTING_APP, suite=SUITE)
    (pytester.path / "b.json").write_text('{"format": "pytest-elizon-eval/cassette/v1", '
                                          '"cases": {}}')
    (pytester.path / "bad.json").write_text('{"cases": []}')
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


FLAKY_APP = """
import pathlib, time

def answer(text):
    counter = pathlib.Path(__file__).with_name(f"n-{text}.txt")
    n = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(n))
    if text == "sometimes-slow" and n == 2:
        time.sleep(3600)
    return "good" if n % 2 else "bad"
"""


def test_repeat_passes_at_the_min_pass_rate(packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app=FLAKY_APP, suite="""
        cases:
          - id: half-good
            input: a
            repeat: 4
            minPassRate: 0.5
            expect: {equals: good}
          - id: not-good-enough
            input: b
            repeat: 4
            minPassRate: 0.75
            expect: {equals: good}
          - id: one-run-times-out
            input: sometimes-slow
            repeat: 3
            minPassRate: 0.6
            expect: {equals: good}
    """)
    result = pytester.runpytest("--elizon-timeout=0.15", "--elizon-results=r.json",
                                "--elizon-markdown=s.md")
    assert result.parseoutcomes() == {"passed": 2, "failed": 1}
    assert "| `not-good-enough` | failed | 2/4 runs passed (50%, 95% CI 15%–85%; flaky; within " \
        "noise); first that did not: ✗ equals: " \
        in (pytester.path / "s.md").read_text()
    result.stdout.fnmatch_lines([
        "case 'not-good-enough' failed (must-pass suite pkg/eval/suite.yaml:7)",
        "runs: 2/4 passed, minPassRate 0.75 needs 3",
        "  run 1: passed in * ms",
        "  run 2: failed in * ms — ✗ equals",
        "  run 3: passed in * ms",
        "  run 4: failed in * ms — ✗ equals",
        "the first run that did not pass:",
    ])
    data = json.loads((pytester.path / "r.json").read_text())
    [suite] = data["suites"]
    assert suite["metrics"]["cases"] == 3  # per case, not per run
    cases = {c["id"]: c for c in suite["cases"]}
    assert [r["outcome"] for r in cases["one-run-times-out"]["runs"]] == ["passed", "timeout",
                                                                          "passed"]
    assert cases["one-run-times-out"]["outcome"] == "passed"
    assert len(cases["half-good"]["runs"]) == 4


def test_repeat_defaults_from_the_manifest(packages: Packages, pytester: pytest.Pytester) -> None:
    packages.write("pkg/elizon.yaml", """
        entry: app:answer
        evaluation:
          suite: ./eval/suite.yaml
          repeat: 2
          minPassRate: 0.5
    """)
    packages.write("pkg/app.py", FLAKY_APP)
    packages.write("pkg/eval/suite.yaml", """
        cases:
          - id: suite-default
            input: c
            expect: {equals: good}
          - id: own-setting
            input: d
            repeat: 2
            minPassRate: 1.0
            expect: {equals: good}
    """)
    result = pytester.runpytest("--elizon-results=r.json")
    assert result.parseoutcomes() == {"passed": 1, "failed": 1}
    cases = {c["id"]: c for s in json.loads((pytester.path / "r.json").read_text())["suites"]
             for c in s["cases"]}
    assert len(cases["suite-default"]["runs"]) == 2
    assert cases["own-setting"]["passed_runs"] == 1


def test_repeat_with_replay_uses_every_recorded_run(packages: Packages, pytester: pytest.Pytester
                                                    ) -> None:
    suite = "cases:\n  - id: flaky\n    input: e\n    repeat: 3\n    minPassRate: 0.6\n" \
            "    expect: {equals: good}\n"
    packages.package(app=FLAKY_APP, suite=suite)
    pytester.runpytest("--elizon-record=tape.json").assert_outcomes(passed=1)
    assert len(cassette(pytester)["cases"]["pkg:eval/suite.yaml::flaky"]["runs"]) == 3
    pytester.runpytest("--elizon-replay=tape.json").assert_outcomes(passed=1)
    suite_file = pytester.path / "pkg/eval/suite.yaml"
    suite_file.write_text(suite_file.read_text().replace("repeat: 3", "repeat: 5"))
    result = pytester.runpytest("--elizon-replay=tape.json")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["ELIZON_CASSETTE_MISSING: pkg:eval/suite.yaml::flaky has 3 "
                                 "recorded run(s); repeat asks for 5"])


def test_repeat_must_be_sensible(packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app=FLAKY_APP, suite="cases:\n  - id: a\n    input: x\n    repeat: 0\n"
                                           "    minPassRate: 1.5\n")
    result = pytester.runpytest()
    result.stdout.fnmatch_lines([
        "EVALUATION_SUITE_INVALID: pkg/eval/suite.yaml:4: cases[[]0[]].repeat: must be at least 1*",
        "EVALUATION_SUITE_INVALID: pkg/eval/suite.yaml:5: cases[[]0[]].minPassRate: must be at "
        "most 1.0, found 1.5",
    ])


def test_verbose_shows_runs_passed(packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app=FLAKY_APP, suite="cases:\n  - id: flaky\n    input: f\n    repeat: 3\n"
                                           "    minPassRate: 0.5\n    expect: {equals: good}\n")
    result = pytester.runpytest("-v", "--elizon-markdown=s.md")
    result.stdout.re_match_lines([r"^pkg/eval/suite\.yaml::flaky PASSED +\[100%\]$"])
    assert result.parseoutcomes() == {"passed": 1}


def test_a_repeated_cases_short_summary_line_keeps_its_shape(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    packages.package(app=FLAKY_APP, suite="cases:\n  - id: flaky\n    input: g\n    repeat: 4\n"
                                           "    minPassRate: 1.0\n    expect: {equals: good}\n")
    result = pytester.runpytest("-v", "-rf")
    assert result.parseoutcomes() == {"failed": 1}
    # the word stays pytest's own; the ratio is the reason after the node id
    result.stdout.re_match_lines([r"^pkg/eval/suite\.yaml::flaky FAILED +\[100%\]$"])
    result.stdout.re_match_lines([
        r"^FAILED pkg/eval/suite\.yaml::flaky - 2/4 runs passed \(50%, 95% CI 15%–85%; "])


def test_a_replayed_timeout_keeps_the_limit_it_was_recorded_under(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    packages.package(app=COUNTING_APP, suite="cases:\n  - id: hangs\n    input: slow\n")
    pytester.runpytest("--elizon-record=tape.json", "--elizon-timeout=0.15")
    assert cassette(pytester)["cases"]["pkg:eval/suite.yaml::hangs"]["timeout_s"] == 0.15
    result = pytester.runpytest("--elizon-replay=tape.json", "--elizon-results=r.json")
    assert result.parseoutcomes() == {"timeout": 1}
    result.stdout.fnmatch_lines([
        "  pkg/eval/suite.yaml::hangs — no answer within 0.15 s (the limit it was recorded under)"])
    assert "90 s" not in result.stdout.str()
    [case] = json.loads((pytester.path / "r.json").read_text())["suites"][0]["cases"]
    assert (case["timeout_s"], case["timeout_source"]) == (0.15, "the limit it was recorded under")


def test_cassette_keys_survive_a_change_of_rootdir(packages: Packages, pytester: pytest.Pytester
                                                   ) -> None:
    packages.package("proj/pkg", app=COUNTING_APP, suite=SUITE.replace(
        "  - id: hangs\n    input: slow\n", ""))
    (pytester.path / "proj/pkg/elizon.yaml").write_text(
        (pytester.path / "proj/pkg/elizon.yaml").read_text().replace("name: proj/pkg",
                                                                     "name: pkg"))
    tape = pytester.path / "tape.json"
    recorded = pytester.runpytest(f"--elizon-record={tape}")
    recorded.stdout.fnmatch_lines(["proj/pkg/eval/suite.yaml ...*"])  # rootdir: the tmp dir
    assert sorted(cassette(pytester)["cases"]) == [
        "pkg:eval/suite.yaml::raises", "pkg:eval/suite.yaml::routed", "pkg:eval/suite.yaml::text"]
    other = pytester.path / "proj"
    replayed = pytester.runpytest(str(other), f"--rootdir={other}", f"--elizon-replay={tape}",
                                  "-v")
    replayed.stdout.fnmatch_lines([f"rootdir: {other}",  # the suite's path moved with it:
                                   "pkg/eval/suite.yaml [[]pkg, must-pass[]]: 3 passed, *"])
    assert replayed.parseoutcomes() == {"passed": 3}


def test_a_deeply_nested_cassette_is_a_usage_error(packages: Packages, pytester: pytest.Pytester
                                                   ) -> None:
    packages.package(app=COUNTING_APP, suite=SUITE)
    (pytester.path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    result = pytester.runpytest("--elizon-replay=deep.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.stderr.fnmatch_lines(["ERROR: --elizon-replay=*deep.json: *nested too deeply*"])
