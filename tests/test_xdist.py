"""Collection, outcomes, time limits, reports and concurrency under pytest-xdist: one ``-n 2``
run over one set of packages shows, and writes, exactly what a serial run of the same
packages does; a replay under xdist then gives the same outcomes (and the same HTML page)
without calling any entry point. (Starting xdist workers is the slow part, so the behaviours
share these runs; a crashed worker has its own run in test_reports, the example packages
theirs in test_cli's CI workflow, where -n 2 shards are merged and compared with a full run,
and the probe pack's shared canary in test_probes. An elizon_retry_on warning is given once
here, not once per worker too.)"""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from . import test_collection, test_concurrency, test_outcomes, test_record_replay, test_reports
from .conftest import ECHO_APP, Packages, start_pytest
from .test_reports import cases_by_id, results_of


def write_the_packages(packages: Packages, pytester: pytest.Pytester) -> None:
    # outcomes: a pass, a failure, a timeout and an advisory timeout
    packages.package("outc", app=test_outcomes.HANG_APP, entry="app:quick", suite="""
        cases:
          - id: ok
            input: x
          - id: bad
            input: x
            expect: {equals: other}
    """)
    packages.package("adv", app=test_outcomes.HANG_APP, entry="app:hang", gate="advisory",
                     suite="cases:\n  - id: slow\n    input: x\n")
    packages.package("hard", app=test_outcomes.HANG_APP, entry="app:hang",
                     suite="cases:\n  - id: slow\n    input: x\n")
    # reports: two suites of one package, must-pass and advisory, with a baseline
    test_reports.two_suites(packages, "demo")
    # a lone surrogate in the output (it cannot be encoded as UTF-8 on its way across xdist)
    packages.package("lone", app=test_reports.LONE_SURROGATE_APP, suite="""
        cases:
          - id: passes-with-it
            input: a
            expect: {contains: [lone]}
          - id: fails-with-it
            input: b
            expect: {equals: something else}
    """)
    # recording: structured output, an expected error, a timeout, keyword input
    packages.package("rec", app=test_record_replay.COUNTING_APP, suite=test_record_replay.SUITE)
    # concurrency: overlapping calls, logged by the entry itself
    packages.package("conc", app=test_concurrency.TRACING_APP,
                     suite=test_concurrency.suite(8, test_concurrency.MIXED))
    # node ids
    packages.package("ids", app=ECHO_APP, suite=test_collection.SUITE)
    # a retry-on class of a package not installed here: one warning, not one per worker too
    # (test_hostile_answers: the warning itself)
    pytester.makeini("[pytest]\nelizon_retry_on = not_installed_sdk_x.RateLimitError\n")


def report_args(folder: str) -> list[str]:
    # 0.3 s: three times the concurrency entry's 0.1 s calls, the others answer at once
    return ["--elizon-timeout=0.3", "-v", "-p", "no:randomly",
            f"--elizon-junit={folder}/j.xml", f"--elizon-results={folder}/r.json",
            f"--elizon-markdown={folder}/s.md", f"--elizon-record={folder}/tape.json"]


SERIAL_LINE = re.compile(r"^(\S+::\S+) ([A-Z][A-Z ]*[A-Z]) +\[ *\d+%\]$")
XDIST_LINE = re.compile(r"^\[gw\d+\] \[ *\d+%\] ([A-Z][A-Z ]*[A-Z]) (\S+::\S+) *$")


def verbose_lines(result: pytest.RunResult, xdist: bool) -> list[tuple[str, str]]:
    """(node id, outcome word) of each case's verbose progress line."""
    found = []
    for line in result.outlines:
        if xdist and (match := XDIST_LINE.match(line)):
            found.append((match[2], match[1]))
        elif not xdist and (match := SERIAL_LINE.match(line)):
            found.append((match[1], match[2]))
    return sorted(found)


def outcomes_of(data: dict[str, Any], prefix: str) -> Counter[str]:
    """The outcomes of the cases under ``prefix``, advisory ones marked as such."""
    return Counter(("advisory " if s["advisory"] else "") + c["outcome"].removeprefix("advisory_")
                   for s in data["suites"] for c in s["cases"] if c["nodeid"].startswith(prefix))


def comparable_cases(data: dict[str, Any]) -> dict[str, Any]:
    """Each case's results, without what differs between any two runs (time taken)."""
    cases = cases_by_id(data)
    for case in cases.values():
        case.pop("latency_ms")
        if case["error"]:
            case["error"].pop("traceback")
        for a in case["assertions"]:
            if a["name"] == "maxLatencyMs":
                a.pop("found")
        for run in case.get("runs") or ():
            run.pop("latency_ms", None)
        for turn in case.get("turns") or ():
            turn.pop("latency_ms", None)
    return cases


def comparable_suites(data: dict[str, Any]) -> list[dict[str, Any]]:
    suites = []
    for suite in data["suites"]:
        suite = dict(suite, metrics=dict(suite["metrics"]))
        for key in ("mean_latency_ms", "p50_latency_ms", "p95_latency_ms", "max_latency_ms"):
            suite["metrics"].pop(key)
        suite.pop("comparison")
        suite.pop("cases")
        # latencies differ run to run, and so do their intervals
        suite["intervals"] = {k: v for k, v in suite.get("intervals", {}).items()
                              if k != "mean_latency_ms"}
        suites.append(suite)
    return suites


def junit_cases(path: Path) -> list[tuple[str | None, ...]]:
    root = ET.parse(path).getroot()
    return sorted((c.get("name"), c.get("file"), c.get("line"),
                   *(child.tag for child in c if child.tag != "system-out"))
                  for c in root.iter("testcase"))


def test_xdist_shows_and_writes_what_a_serial_run_does_and_replays_the_same(
    packages: Packages, pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    write_the_packages(packages, pytester)
    # The serial reference run works on a copy of the packages (its own reports and its
    # entries' call logs), at the same time as the xdist run on the originals: most of its
    # time is spent waiting on time limits and sleeping entries, while xdist starts workers.
    copy = tmp_path_factory.mktemp("serial") / pytester.path.name
    shutil.copytree(pytester.path, copy)
    finish_parallel = start_pytest(pytester, *report_args("xdist"), "-n", "2",
                                   "--elizon-concurrency=4")
    # The xdist run has its environment: the serial one's concurrency entry need not sleep
    # long enough to overlap (it never overlaps), so it sleeps 20 ms a call, not 100.
    monkeypatch.setenv("TRACING_SLEEP", "0.02")
    monkeypatch.chdir(copy)
    try:
        serial = pytester.runpytest(*report_args("serial"), "-p", "no:xdist")
    finally:
        monkeypatch.chdir(pytester.path)
        parallel = finish_parallel()
    for log in ("conc/calls.log", "rec/calls.txt"):  # the entries logged their calls apart
        assert (copy / log).is_file()
    output = parallel.stdout.str() + parallel.stderr.str()
    serial_data = results_of(copy / "serial/r.json")
    data = results_of(pytester.path / "xdist/r.json")

    # -- what pytest shows: outcomes, exit status, node ids and each case's outcome word
    expected = {"passed": 18, "failed": 5, "timeout": 4, "advisory_failed": 1,
                "advisory_timeout": 1, "warnings": 1}
    assert serial.parseoutcomes() == expected, "the serial reference run"
    assert parallel.parseoutcomes() == expected, "xdist counts outcomes as a serial run does"
    assert serial.ret == parallel.ret == pytest.ExitCode.TESTS_FAILED
    assert "INTERNALERROR" not in output
    assert verbose_lines(parallel, xdist=True) == verbose_lines(serial, xdist=False), \
        "node ids and outcome words differ under xdist"
    assert len(verbose_lines(serial, xdist=False)) == 29
    ids = [i.replace("pkg/", "ids/", 1) for i in test_collection.IDS]
    assert [nodeid for nodeid, _ in verbose_lines(parallel, xdist=True)
            if nodeid.startswith("ids/")] == ids
    parallel.stdout.fnmatch_lines(["*case 'bad' failed (must-pass suite outc/eval/suite.yaml:4)"])
    parallel.stdout.fnmatch_lines(["*skipped not_installed_sdk_x.RateLimitError: not installed*"])

    # -- each package's outcomes, as their own tests expect them (in both runs)
    for run in (serial_data, data):
        assert outcomes_of(run, "outc/") + outcomes_of(run, "adv/") + outcomes_of(
            run, "hard/") == {"passed": 1, "failed": 1, "timeout": 1, "advisory timeout": 1}
        assert outcomes_of(run, "demo/") == {"passed": 2, "failed": 1, "timeout": 1,
                                             "advisory passed": 1, "advisory failed": 1}
        assert outcomes_of(run, "rec/") == {"passed": 3, "timeout": 1}
        assert outcomes_of(run, "conc/") == {"passed": 8, "failed": 2, "timeout": 1}
        assert outcomes_of(run, "ids/") == {"passed": 2}

    # -- reports: identical to the serial run's, and each written once (by the controller)
    assert parallel.stdout.str().count("generated results JSON") == 1
    assert parallel.stdout.str().count("generated cassette") == 1
    assert comparable_cases(data) == comparable_cases(serial_data)
    assert comparable_suites(data) == comparable_suites(serial_data)
    assert data["verdict"] == serial_data["verdict"]
    assert junit_cases(pytester.path / "xdist/j.xml") == junit_cases(copy / "serial/j.xml")
    assert len(junit_cases(pytester.path / "xdist/j.xml")) == 29

    # -- the lone surrogate was reported, and every file written
    cases = cases_by_id(data)
    assert cases["lone/eval/suite.yaml::passes-with-it"]["outcome"] == "passed"
    assert cases["lone/eval/suite.yaml::fails-with-it"]["outcome"] == "failed"
    assert cases["lone/eval/suite.yaml::fails-with-it"]["output"] == "lone \\ud800 b"
    markdown = (pytester.path / "xdist/s.md").read_text(encoding="utf-8")
    MarkdownIt("commonmark").enable("table").parse(markdown)
    assert "| `fails-with-it` | failed |" in markdown

    # -- concurrency with xdist: every case called once, on one worker, calls overlapping
    # ("raises" gets its mapping whole, docs/contract.md#passing-input, and fails on it)
    calls = test_concurrency.calls(pytester, "conc")
    inputs = [text for text, _ in calls if isinstance(text, str)]
    assert [text for text, _ in calls if not isinstance(text, str)] == [{"unexpected": "keyword"}]
    assert len(inputs) == len(set(inputs)) == 10, inputs
    assert max(running for _, running in calls) > 1, "no two calls overlapped"

    # -- recording: one cassette with every case, the same cases as a serial recording
    tape = test_record_replay.cassette(pytester, "xdist/tape.json")
    assert sorted(tape["cases"]) == sorted(
        json.loads((copy / "serial/tape.json").read_text(encoding="utf-8"))["cases"])
    assert len(tape["cases"]) == 29
    rec_calls = pytester.path / "rec/calls.txt"
    assert rec_calls.read_text() == "x" * 4  # rec's entry: each case called once

    # -- replay under xdist: the same outcomes, and no entry point called
    finish_replay = start_pytest(pytester, "-n", "2", "--elizon-replay=xdist/tape.json",
                                 "--elizon-results=replay/r.json",
                                 "--elizon-html=replay/page.html",
                                 "--elizon-history=replay/xdist.sqlite", name="replayed")
    try:
        # the HTML page, written once by the controller, is the page a serial replay writes
        # (replayed, the latencies are the recorded ones, so the pages are equal byte for
        # byte); the serial replay runs while xdist starts its workers
        pytester.runpytest("-p", "no:xdist", "--elizon-replay=xdist/tape.json",
                           "--elizon-html=replay/serial-page.html",
                           "--elizon-history=replay/serial.sqlite")  # each its own trend strip
    finally:
        replayed = finish_replay()
    assert replayed.parseoutcomes() == expected, "a replay under xdist differs"
    assert replayed.ret == serial.ret
    page = (pytester.path / "replay/page.html").read_text(encoding="utf-8")
    assert page.count('<details class="case"') == 29
    assert page.count('class="chart-trend"') == 9  # each suite's trend, from the store
    assert page == (pytester.path / "replay/serial-page.html").read_text(encoding="utf-8")
    replay_data = results_of(pytester.path / "replay/r.json")
    assert {k: c["outcome"] for k, c in cases_by_id(replay_data).items()} == {
        k: c["outcome"] for k, c in cases_by_id(serial_data).items()}
    assert rec_calls.read_text() == "x" * 4
    assert test_concurrency.calls(pytester, "conc") == calls
