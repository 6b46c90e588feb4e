"""--elizon-concurrency (docs/contract.md#concurrency): cases overlap, yet everything pytest and
the reports show is exactly what a serial run shows (order aside)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from .conftest import PYTEST_WITH_CTRL_C, Packages, interrupt_when

# Logs each call's input and how many calls were running at its start.
TRACING_APP = """
import asyncio, json, os, pathlib, threading, time

LOG = pathlib.Path(__file__).with_name("calls.log")
LOOPS = pathlib.Path(__file__).with_name("loops.log")
_lock = threading.Lock()
_running = 0

def _enter(text):
    global _running
    with _lock:
        _running += 1
        with LOG.open("a") as fh:
            fh.write(json.dumps([text, _running]) + "\\n")

def _leave():
    global _running
    with _lock:
        _running -= 1

def answer(text):
    _enter(text)
    try:
        if text.startswith("hang"):
            time.sleep(3600)
        time.sleep(float(os.environ.get("TRACING_SLEEP", "0.1")))  # long enough to overlap
        return "ok " + text
    finally:
        _leave()

async def async_answer(text):
    _enter(text)
    with LOOPS.open("a") as fh:
        fh.write(f"{id(asyncio.get_running_loop())}\\n")
    try:
        await asyncio.sleep(0.1)
        return "ok " + text
    finally:
        _leave()
"""


def suite(n: int, extra: str = "") -> str:
    cases = "".join(f"  - id: case-{i:02d}\n    input: c{i:02d}\n"
                    f"    expect: {{contains: [c{i:02d}]}}\n" for i in range(n))
    return "cases:\n" + cases + extra


def calls(pytester: pytest.Pytester, package: str = "pkg") -> list[tuple[str, int]]:
    log = pytester.path / package / "calls.log"
    if not log.exists():
        return []
    return [tuple(json.loads(line)) for line in log.read_text().splitlines()]  # type: ignore[misc]


def test_cases_overlap_up_to_n(packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app=TRACING_APP, suite=suite(12))
    result = pytester.runpytest("--elizon-concurrency=4")
    result.assert_outcomes(passed=12)
    peak = max(running for _, running in calls(pytester))  # overlap, seen by the entry itself
    assert 2 <= peak <= 4


def test_async_entry_points_share_one_event_loop(packages: Packages, pytester: pytest.Pytester
                                                 ) -> None:
    packages.package(app=TRACING_APP, entry="app:async_answer", suite=suite(12))
    pytester.runpytest("--elizon-concurrency=6").assert_outcomes(passed=12)
    assert 2 <= max(running for _, running in calls(pytester)) <= 6
    loops = (pytester.path / "pkg/loops.log").read_text().split()
    assert len(loops) == 12
    assert len(set(loops)) == 1  # every call ran on the same event loop


def test_only_selected_cases_run(packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app=TRACING_APP, suite=suite(10))
    result = pytester.runpytest("--elizon-concurrency=8", "-k", "case-01 or case-07",
                                "--deselect", "pkg/eval/suite.yaml::case-07")
    result.assert_outcomes(passed=1, deselected=9)
    assert [text for text, _ in calls(pytester)] == ["c01"]


def test_exitfirst_starts_nothing_new(packages: Packages, pytester: pytest.Pytester) -> None:
    failing = suite(20).replace("expect: {contains: [c03]}", "expect: {contains: [nope]}")
    packages.package(app=TRACING_APP, suite=failing)
    # The first failure is logged, in order, in the same file as the entry's calls.
    pytester.makeconftest("""
        import json, pathlib

        def pytest_runtest_logreport(report):
            if report.failed:
                log = pathlib.Path(__file__).parent / "pkg" / "calls.log"
                with log.open("a") as fh:
                    fh.write(json.dumps(["FAILED " + report.nodeid, 0]) + "\\n")
    """)
    result = pytester.runpytest("--elizon-concurrency=4", "-x")
    result.assert_outcomes(passed=3, failed=1)
    events = [text for text, _ in calls(pytester)]
    failure = events.index("FAILED pkg/eval/suite.yaml::case-03")
    # Started ahead of their turn: the cases up to the failing one, and when case-03 itself
    # came up (before its failure was known), the 7 after it (4 slots, 4 more in line). A
    # case of that window may still reach its entry point just after the failure is
    # reported (it was queued before); no case beyond the window is ever started, before
    # or after.
    assert sorted(events[:failure])[:4] == ["c00", "c01", "c02", "c03"]
    after = {f"c{i:02d}" for i in range(4, 11)}
    assert set(events) - {events[failure]} <= {"c00", "c01", "c02", "c03"} | after
    assert set(events[failure + 1:]) <= after


# Each call logs when it started and ended, on the clock the plugin times calls with.
TIMED_APP = """
import json, pathlib, time

LOG = pathlib.Path(__file__).with_name("times.log")

def answer(text):
    start = time.perf_counter()
    time.sleep(0.15)
    end = time.perf_counter()
    with LOG.open("a") as fh:
        fh.write(json.dumps([text, start, end]) + "\\n")
    return "ok " + text
"""


def test_each_case_keeps_its_own_time_limit_and_latency(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    # 8 cases of 0.15 s through 2 slots: queueing takes at least 0.6 s, more than the 0.5 s
    # limit, yet no case times out, because a case's clock starts when its entry point is
    # called; and the latency reported is the call's own, without the wait for a slot.
    packages.package(app=TIMED_APP, suite=suite(8))
    result = pytester.runpytest("--elizon-concurrency=2", "--elizon-timeout=0.5",
                                "--elizon-results=r.json")
    result.assert_outcomes(passed=8)
    times = {f"case-{text[1:]}": (start, end) for text, start, end in map(
        json.loads, (pytester.path / "pkg/times.log").read_text().splitlines())}
    data = json.loads((pytester.path / "r.json").read_text())
    latency = {c["id"]: c["latency_ms"] / 1000 for s in data["suites"] for c in s["cases"]}
    assert sorted(times) == sorted(latency) == [f"case-{i:02d}" for i in range(8)]
    first_start = min(start for start, _ in times.values())
    # the premise, from the entry's own clock: the queue took longer than the limit
    assert max(end for _, end in times.values()) - first_start > 0.5
    waited = 0
    for case, (start, end) in times.items():
        # the reported latency covers the whole call ...
        assert latency[case] >= end - start, (case, latency[case], end - start)
        # ... and, for a case that waited for a slot (it started after another case had
        # ended), not the wait: less than the span from the first call's start to its end
        if any(other_end <= start for other, (_, other_end) in times.items() if other != case):
            waited += 1
            assert latency[case] < end - first_start, (case, latency[case], end - first_start)
    assert waited >= 6  # two slots: all but the first two cases waited


def test_timeouts_under_concurrency(packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app=TRACING_APP, suite=suite(4, "  - id: hangs\n    input: hang\n"))
    result = pytester.runpytest("--elizon-concurrency=5", "--elizon-timeout=0.3")
    assert result.parseoutcomes() == {"passed": 4, "timeout": 1}


def test_a_hung_call_costs_a_thread_never_a_slot(packages: Packages, pytester: pytest.Pytester
                                                ) -> None:
    # The first case hangs for good on one of the 2 slots. Once its item ends it as timed
    # out, a new slot takes the stuck one's place: the other cases still run two at a time,
    # next to the hung call, which the entry's own count of calls under way shows.
    packages.package(app=TRACING_APP, suite="cases:\n  - id: hangs\n    input: hang\n"
                     + suite(8)[len("cases:\n"):])
    result = pytester.runpytest("--elizon-concurrency=2", "--elizon-timeout=0.3")
    assert result.parseoutcomes() == {"passed": 8, "timeout": 1}
    log = calls(pytester)
    assert [text for text, _ in log].count("hang") == 1  # called once, never again
    assert max(running for text, running in log if text != "hang") == 3


HANGS = "cases:\n  - id: h1\n    input: hang1\n  - id: h2\n    input: hang2\n" \
    "  - id: c3\n    input: c3\n    expect: {contains: [c3]}\n"


def test_a_case_in_line_behind_hung_calls_still_runs(packages: Packages,
                                                     pytester: pytest.Pytester) -> None:
    # apkg's cases can start ahead only once its session fixture is set up (by a1, in its
    # turn): by then bpkg's hung h1 and h2 hold both slots, and a2 waits in line behind
    # them. Whoever waits ends calls past their time, so a2 and c3 get a slot.
    packages.package("apkg", entry=None, suite="cases:\n  - id: a1\n    input: a1\n"
                                                "  - id: a2\n    input: a2\n")
    packages.write("apkg/conftest.py", """
        import pytest

        @pytest.fixture(scope="session")
        def elizon_entry():
            return lambda text: "ok " + text
    """)
    packages.package("bpkg", app=TRACING_APP, suite=HANGS)
    result = pytester.runpytest_subprocess("--elizon-concurrency=2", "--elizon-timeout=0.5",
                                           "-p", "no:cacheprovider", timeout=120)
    assert result.parseoutcomes() == {"passed": 3, "timeout": 2}


def test_hung_calls_of_cases_that_never_run_do_not_hold_the_run(
        packages: Packages, pytester: pytest.Pytester) -> None:
    # h1 and h2 are started ahead, hang, and are then skipped: no item ever waits for them,
    # yet c3, in line behind them, runs
    packages.package(app=TRACING_APP, suite=HANGS)
    pytester.makeconftest("""
        import pytest

        def pytest_collection_modifyitems(items):
            for item in items:
                if item.name.startswith("h"):
                    item.add_marker(pytest.mark.skip(reason="not today"))
    """)
    result = pytester.runpytest_subprocess("--elizon-concurrency=2", "--elizon-timeout=0.5",
                                           "-p", "no:cacheprovider", timeout=120)
    assert result.parseoutcomes() == {"passed": 1, "skipped": 2}
    assert sorted(text for text, _ in calls(pytester)) == ["c3", "hang1", "hang2"]


def test_function_scoped_entry_fixtures_run_in_their_turn(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    packages.package(app=TRACING_APP, entry=None, suite=suite(4))
    pytester.makeconftest("""
        import pytest
        from pkg import app

        @pytest.fixture
        def elizon_entry(tmp_path):
            return app.answer
    """)
    packages.write("pkg/__init__.py", "")
    pytester.runpytest("--elizon-concurrency=4").assert_outcomes(passed=4)
    assert max(running for _, running in calls(pytester)) == 1
    (pytester.path / "pkg/calls.log").unlink()
    pytester.makeconftest("""
        import pytest
        from pkg import app

        @pytest.fixture(scope="session")
        def model():
            return app.answer

        @pytest.fixture(scope="session")
        def elizon_entry(model):
            return model
    """)
    pytester.runpytest("--elizon-concurrency=4").assert_outcomes(passed=4)
    assert max(running for _, running in calls(pytester)) > 1


MIXED = """
  - id: wrong
    input: w
    expect: {equals: nope}
  - id: hangs
    input: hang
  - id: raises
    input: {unexpected: keyword}
"""


def comparable(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    cases = {}
    for suite_data in data["suites"]:
        for case in suite_data["cases"]:
            case.pop("latency_ms")
            case["error"] and case["error"].pop("traceback")
            cases[case["nodeid"]] = case
    return {"verdict": data["verdict"], "cases": cases}


def test_a_concurrent_run_reports_exactly_what_a_serial_run_does(
    packages: Packages, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    packages.package(app=TRACING_APP, suite=suite(5, MIXED))
    packages.package("adv", app=TRACING_APP, suite=suite(2, MIXED), gate="advisory")
    # what is compared is the reports, not overlap (test_cases_overlap_up_to_n): short calls
    # spare the serial run its sleeps
    monkeypatch.setenv("TRACING_SLEEP", "0.02")
    args = ["--elizon-timeout=0.2", "-p", "no:xdist"]  # ten times the calls that answer
    serial = pytester.runpytest(*args, "--elizon-results=serial.json")
    fast = pytester.runpytest(*args, "--elizon-concurrency=16",
                                         "--elizon-results=fast.json")
    assert serial.parseoutcomes() == fast.parseoutcomes() == {
        "passed": 7, "failed": 2, "timeout": 1, "advisory_failed": 2, "advisory_timeout": 1}
    assert serial.ret == fast.ret == pytest.ExitCode.TESTS_FAILED
    assert comparable(pytester.path / "serial.json") == comparable(pytester.path / "fast.json")


@pytest.mark.parametrize(
    ("args", "ini", "message"),
    [
        (["--elizon-concurrency=0"], "", "ERROR: --elizon-concurrency=0: expected a whole number "
                                         "from 1 to 64*"),
        (["--elizon-concurrency=65"], "", "ERROR: --elizon-concurrency=65: expected*"),
        (["--elizon-concurrency=many"], "", "ERROR: --elizon-concurrency=many: expected*"),
        ([], "elizon_concurrency = 100", "ERROR: ini option elizon_concurrency in *tox.ini "
                                         "('100'): expected a whole number from 1 to 64*"),
    ],
)
def test_bad_concurrency(packages: Packages, pytester: pytest.Pytester, args: list[str],
                         ini: str, message: str) -> None:
    packages.package(app=TRACING_APP, suite=suite(1))
    if ini:
        pytester.makefile(".ini", tox=f"[pytest]\n{ini}\n")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_ini_concurrency(packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app=TRACING_APP, suite=suite(8))
    pytester.makeini("[pytest]\nelizon_concurrency = 4\n")
    pytester.runpytest().assert_outcomes(passed=8)
    assert max(running for _, running in calls(pytester)) > 1


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_stops_a_concurrent_run_promptly(packages: Packages, pytester: pytest.Pytester
                                                ) -> None:
    packages.package(app=TRACING_APP, suite="cases:\n" + "".join(
        f"  - id: h{i}\n    input: hang{i}\n" for i in range(8)))
    with subprocess.Popen(
            [sys.executable, "-c", PYTEST_WITH_CTRL_C, "-p", "no:cacheprovider",
             "--elizon-concurrency=4"],
            cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"}) as process:
        output = interrupt_when(process, lambda: len(calls(pytester)) >= 4)
    assert process.returncode == pytest.ExitCode.INTERRUPTED, output
    assert "KeyboardInterrupt" in output
    # four cases were under way (one slot each); after Ctrl-C no case was started, and none
    # was left to reach its 90 s limit
    assert sorted(text for text, _ in calls(pytester)) == ["hang0", "hang1", "hang2", "hang3"]
    assert "timeout" not in output


# -- the adaptive limit, directly ------------------------------------------------------------

def test_adaptive_limit_grows_one_per_window_and_halves_once_per_refusal_window() -> None:
    from pytest_elizon_eval.run.concurrency import AUTO_START, AdaptiveLimit

    limit = AdaptiveLimit(most=6)
    assert limit.limit == AUTO_START == 4
    for _ in range(4):  # a window of 4 calls not refused: one wider
        limit.acquire()
        limit.release()
    assert 4.9 < limit.limit <= 5
    for _ in range(40):
        limit.acquire()
        limit.release()
    assert limit.limit == 6  # never past MAX
    sent_before_cut = time.monotonic()
    limit.refused(sent_before_cut)
    assert limit.limit == 3
    limit.refused(sent_before_cut)  # sent before the cut: that cut already answered it
    assert (limit.limit, limit.cuts) == (3, 1)
    limit.refused(time.monotonic() + 1)
    limit.refused(time.monotonic() + 2)
    limit.refused(time.monotonic() + 3)
    assert limit.limit == 1  # never below one
    limit.acquire()
    limit.release(refused=True)  # a refused call does not widen it
    assert limit.limit == 1


def test_adaptive_limit_admits_calls_in_the_order_they_asked() -> None:
    from pytest_elizon_eval.run.concurrency import AdaptiveLimit

    limit = AdaptiveLimit(most=1, start=1)
    limit.acquire()  # the one place is taken
    admitted: list[int] = []
    threads = []
    for n in range(6):  # each asks only once the one before is known to be waiting
        thread = threading.Thread(target=lambda n=n: (limit.acquire(), admitted.append(n)))
        thread.start()
        threads.append(thread)
        while limit.waiting < n + 1:
            time.sleep(0.001)
    for n in range(6):  # free the place six times; each time the next in line gets it
        limit.release(refused=True)  # (refused: the limit stays at one place)
        while len(admitted) < n + 1:
            time.sleep(0.001)
    for thread in threads:
        thread.join(5)
    assert admitted == list(range(6))
    assert limit.peak == 1


def test_an_interrupted_wait_gives_up_its_place_in_line() -> None:
    """Ctrl-C while a case waits at the gate in the main thread: the calls behind it are
    still admitted (its ticket is skipped, not waited for forever)."""
    from pytest_elizon_eval.run.concurrency import AdaptiveLimit

    class Interrupted(threading.Condition):
        interrupt = True

        def wait(self, timeout: float | None = None) -> bool:
            if Interrupted.interrupt:
                Interrupted.interrupt = False
                raise KeyboardInterrupt
            return super().wait(timeout)

    limit = AdaptiveLimit(most=1, start=1)
    limit._changed = Interrupted()
    limit.acquire()
    with pytest.raises(KeyboardInterrupt):
        limit.acquire()  # waits for the one place, and is interrupted
    admitted = threading.Event()
    thread = threading.Thread(target=lambda: (limit.acquire(), admitted.set()))
    thread.start()
    limit.release(refused=True)
    assert admitted.wait(5), "the call behind the interrupted one was never admitted"
    thread.join(5)
    assert limit.waiting == 0


def test_a_stopped_scheduler_ends_its_slot_threads() -> None:
    from pytest_elizon_eval.run.concurrency import CaseScheduler

    before = {t for t in threading.enumerate() if t.name == "elizon-case"}
    scheduler = CaseScheduler(3)
    for key in "abc":
        scheduler.start(key, lambda: None)
    for key in "abc":
        future = scheduler.take(key)
        assert future is not None
        future.result(5)
    scheduler.stop()
    for thread in {t for t in threading.enumerate() if t.name == "elizon-case"} - before:
        thread.join(5)
        assert not thread.is_alive()
