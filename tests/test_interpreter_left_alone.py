"""The user's interpreter is theirs (docs/contract.md#at-the-deadline): a session that had
timeouts leaves no signal handler, timer, trace function, frozen heap, exit handler or
patched module behind, and writes nothing beside the plugin; an entry point's ``finally``,
``asyncio.run`` cleanup and its own SIGALRM timer behave as in a plain test; hung calls
are capped per entry point (docs/contract.md#hung-calls); debuggers suspend deadlines
(docs/contract.md#debugging); the public types are ordinary dataclasses."""

from __future__ import annotations

import bdb
import copy
import dataclasses
import json
import os
import pickle
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import pytest_elizon_eval
from pytest_elizon_eval import Answer, CaseResult, EntryCall, ErrorInfo, ToolCall, Usage
from pytest_elizon_eval.run import deadlines

from .conftest import Packages

PACKAGE_DIR = Path(pytest_elizon_eval.__file__).parent

#: Runs pytest in a fresh interpreter and writes, before and after, everything of the
#: interpreter's own that a plugin could leave changed.
SNAPSHOT_AND_RUN = r'''
import atexit, dataclasses, gc, json, signal, sys, threading

def state():
    return {
        "sigalrm": repr(signal.getsignal(signal.SIGALRM)),
        "sigint": repr(signal.getsignal(signal.SIGINT)),
        "sigterm": repr(signal.getsignal(signal.SIGTERM)),
        "timer": list(signal.getitimer(signal.ITIMER_REAL)),
        "trace": repr(sys.gettrace()),
        "profile": repr(sys.getprofile()),
        "frozen": gc.get_freeze_count(),
        "gc_enabled": gc.isenabled(),
        "exit_handlers": atexit._ncallbacks(),
        "dataclasses": sorted(k for k in vars(dataclasses) if not k.startswith("__")),
        "dataclass": repr(dataclasses.dataclass),
        "breakpointhook": repr(sys.breakpointhook),
        "excepthook": repr(sys.excepthook),
        "threading_excepthook": repr(threading.excepthook),
        "switchinterval": sys.getswitchinterval(),
        "recursionlimit": sys.getrecursionlimit(),
        "monitoring": [sys.monitoring.get_tool(tool) for tool in range(6)]
        if hasattr(sys, "monitoring") else None,
    }

import pytest
before = state()
status = pytest.main(sys.argv[2:])
after = state()
with open(sys.argv[1], "w") as out:
    json.dump({"status": int(status), "before": before, "after": after}, out)
'''

SLOW_APP = """
import time

def answer(text):
    if text == "slow":
        time.sleep(3)
    return "ok " + text
"""


def _run_snapshot(folder: Path, *args: str) -> dict[str, Any]:
    out = folder / "state.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    subprocess.run([sys.executable, "-c", SNAPSHOT_AND_RUN, str(out), "-q",
                    "-p", "pytest_elizon_eval.plugin", "-p", "no:cacheprovider",
                    "--elizon-history=off", *args],
                   cwd=folder, env=env, check=False, capture_output=True, timeout=120)
    data: dict[str, Any] = json.loads(out.read_text())
    return data


def _package_files() -> set[str]:
    """Every file under the plugin's folder but Python's own bytecode (a cache of the
    plugin's own kept in ``__pycache__`` counts)."""
    return {str(path.relative_to(PACKAGE_DIR)) for path in PACKAGE_DIR.rglob("*")
            if path.suffix != ".pyc"}


def test_a_session_with_timeouts_leaves_the_interpreter_as_it_found_it(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app=SLOW_APP, suite="cases:\n  - id: slow\n    input: slow\n"
                                          "  - id: fast\n    input: fast\n")
    files = _package_files()
    found = _run_snapshot(pytester.path, "--elizon-timeout=0.3")
    assert found["status"] == 1  # a must-pass suite with a timeout does not pass
    assert found["after"] == found["before"]
    assert _package_files() == files  # nothing written beside the plugin's own files


def test_with_concurrency_nothing_is_left_either(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app=SLOW_APP, suite="cases:\n" + "".join(
        f"  - id: c{n}\n    input: {'slow' if n == 0 else f'n{n}'}\n" for n in range(6)))
    found = _run_snapshot(pytester.path, "--elizon-timeout=0.3", "--elizon-concurrency=4")
    assert found["status"] == 1
    assert found["after"] == found["before"]


# -- what an entry point does runs as in a plain test ------------------------------------------

#: What the entry point and the conftest share (beside the package: the plugin imports the
#: package's own modules apart from everything else).
SHARED = """
import threading

LOCK = threading.Lock()
ENDED = threading.Event()
RELEASE = threading.Event()
LOG = []
"""

#: A conftest that, once the session is over, waits (for at most 30 s, a guard only) for
#: what the abandoned call does after its deadline, and writes what it saw.
WAITS_AT_THE_END = """
import pathlib, shared

def pytest_unconfigure(config):
    ended = shared.ENDED.wait(30)
    pathlib.Path("seen").write_text(repr((ended, shared.LOCK.acquire(timeout=30), shared.LOG)))
"""


def _shared(packages: Packages) -> None:
    packages.write("shared.py", SHARED)
    packages.write("conftest.py", WAITS_AT_THE_END)


def test_a_finally_that_releases_a_lock_runs_and_the_next_case_gets_the_lock(
        packages: Packages, pytester: pytest.Pytester) -> None:
    """A call abandoned at its deadline is left to finish: its ``finally`` runs, the lock it
    held is released, and a later case that needs the lock gets it."""
    packages.package(app="""
from shared import ENDED, LOCK, LOG, RELEASE

def answer(text):
    if text == "holds":
        LOCK.acquire()
        try:
            RELEASE.wait(30)  # until the next case has been given up on the lock: see below
            raise RuntimeError("the pool went away")
        finally:
            LOG.append("finally ran")
            LOCK.release()
            ENDED.set()
    if LOCK.acquire(timeout=0.01):  # the first case's lock is still held: says so
        LOCK.release()
        return "free"
    RELEASE.set()
    return "held"
""", suite="cases:\n  - id: holds\n    input: holds\n  - id: next\n    input: next\n"
           "    expect: {equals: held}\n")
    _shared(packages)
    result = pytester.runpytest_subprocess("--elizon-timeout=0.5", "-p", "no:cacheprovider")
    assert result.parseoutcomes() == {"timeout": 1, "passed": 1}
    ended, acquired, log = eval((pytester.path / "seen").read_text())
    assert (ended, acquired, log) == (True, True, ["finally ran"])


def test_asyncio_run_cleanup_completes_after_the_deadline(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app="""
import asyncio
from shared import ENDED, LOG

async def agent():
    try:
        await asyncio.sleep(1.0)
    finally:
        await asyncio.sleep(0.05)  # cleanup that itself awaits
        LOG.append("cleaned up")

def answer(text):
    try:
        return asyncio.run(agent()) or "done"
    finally:
        ENDED.set()
""", suite="cases:\n  - id: slow\n    input: x\n")
    _shared(packages)
    result = pytester.runpytest_subprocess("--elizon-timeout=0.2", "-p", "no:cacheprovider")
    assert result.parseoutcomes() == {"timeout": 1}
    assert eval((pytester.path / "seen").read_text()) == (True, True, ["cleaned up"])
    assert "Task was destroyed" not in result.stderr.str() + result.stdout.str()


def test_a_librarys_own_sigalrm_timer_keeps_working(
        packages: Packages, pytester: pytest.Pytester) -> None:
    """A library that installed its SIGALRM handler (at import, on the main thread) and
    arms its own timer in a call gets its signal; the case's own limit still holds."""
    packages.package(app="""
import signal, threading

FIRED = threading.Event()
signal.signal(signal.SIGALRM, lambda signum, frame: FIRED.set())

def answer(text):
    FIRED.clear()
    signal.setitimer(signal.ITIMER_REAL, 0.05)
    return "fired" if FIRED.wait(20) else "never fired"
""", suite="cases:\n  - id: own\n    input: own\n    expect: {equals: fired}\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.parseoutcomes() == {"passed": 1}


LATE_BUT_CAUGHT = """
import time

def answer(text):
    try:
        time.sleep(1.5)
    except BaseException:
        pass
    return "ok fallback"
"""


def test_an_answer_that_arrives_after_the_limit_is_a_timeout(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app=LATE_BUT_CAUGHT, suite="cases:\n  - id: late\n    input: x\n")
    result = pytester.runpytest("--elizon-timeout=0.2")
    assert result.parseoutcomes() == {"timeout": 1}


def _on_a_slot_nobody_reaps(fn: Any, limit_s: float) -> EntryCall:
    """``fn`` as a case's first call on its slot thread, with no scheduler to end it at its
    deadline (its item was busy): what it gives is all that decides the outcome."""
    from pytest_elizon_eval.bind.calling import call_with_deadline
    from pytest_elizon_eval.run import slots
    from pytest_elizon_eval.run.answers import from_return

    return slots.running(slots.SlotCall(), lambda: call_with_deadline(
        fn, (), {}, time.monotonic() + limit_s, from_return, "app:late"))


def test_a_late_fallback_or_a_late_error_on_a_slot_is_a_timeout() -> None:
    limit_s = 0.05

    def fallback() -> str:
        until = time.monotonic() + limit_s
        while time.monotonic() <= until:  # whatever interrupts it, it swallows
            try:
                time.sleep(0.01)
            except BaseException:
                continue
        return "ok fallback"

    def late_error() -> str:
        until = time.monotonic() + limit_s
        while time.monotonic() <= until:
            time.sleep(0.01)
        raise TimeoutError("the SDK's own read timeout, just after the case's")

    assert _on_a_slot_nobody_reaps(fallback, limit_s).timed_out
    assert _on_a_slot_nobody_reaps(late_error, limit_s).timed_out
    early = _on_a_slot_nobody_reaps(lambda: 1 / 0, 30)
    assert early.error is not None
    assert early.error.type == "ZeroDivisionError"  # an error in time is the entry's error


def test_quitting_pdb_in_an_entry_point_stops_the_session(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app=BREAKS_IN, suite="cases:\n  - id: first\n    input: x\n"
                                          "  - id: second\n    input: y\n")
    result = pytester.run(sys.executable, "-m", "pytest", "-p", "pytest_elizon_eval.plugin",
                          "-p", "no:cacheprovider", "--elizon-history=off", "-v",
                          stdin=b"q\n", timeout=120)
    output = result.stdout.str()
    assert "Quitting debugger" in output + result.stderr.str()
    assert "::second" not in output  # never reached: the session stopped
    assert "escaped" not in output
    assert result.ret == pytest.ExitCode.INTERRUPTED


def test_a_check_that_never_returns_is_capped_too(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app="def answer(text):\n    return text\n", suite="cases:\n" + "".join(
        f"  - id: c{n}\n    input: x{n}\n    expect: {{checks: [stuck]}}\n" for n in range(5)))
    packages.write("conftest.py", """
import threading, pytest

NEVER = threading.Event()

@pytest.fixture(scope="session")
def elizon_checks():
    return {"stuck": lambda output: NEVER.wait()}
""")
    pytester.makeini("[pytest]\nelizon_max_hung_calls = 2\n")
    result = pytester.runpytest_subprocess("--elizon-timeout=0.2", "-p", "no:cacheprovider")
    assert result.parseoutcomes() == {"timeout": 2, "failed": 3}
    # each failed case's report says why (counted where it says it: pytest's short summary
    # repeats it in full only where CI is set)
    said = [line for line in result.stdout.lines if line.strip().startswith("found:")]
    assert len(said) == 3
    assert all("the check stuck does not return: 2 of its calls are still running" in line
               for line in said)


# -- hung calls ---------------------------------------------------------------------------

NEVER_RETURNS = """
import threading, pathlib

NEVER = threading.Event()

def answer(text):
    NEVER.wait()  # an entry point that does not return
"""

COUNTS_THREADS = """
import pathlib, threading

def pytest_sessionfinish(session):
    pathlib.Path("threads").write_text(str(threading.active_count()))
"""


def test_200_hung_calls_cost_a_bounded_number_of_threads(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app=NEVER_RETURNS, suite="cases:\n" + "".join(
        f"  - id: c{n:03}\n    input: x{n}\n" for n in range(200)))
    packages.write("conftest.py", COUNTS_THREADS)
    pytester.makeini("[pytest]\nelizon_max_hung_calls = 5\n")
    result = pytester.runpytest_subprocess("--elizon-timeout=0.1", "-p", "no:cacheprovider",
                                           "-rf")
    assert result.parseoutcomes() == {"timeout": 5, "failed": 195}
    threads = int((pytester.path / "threads").read_text())
    assert threads <= 5 + 3  # the hung calls' threads, the main one, and the plugin's own
    result.stdout.fnmatch_lines(["*app:answer* does not return: 5 of its calls are still "
                                 "running past their deadline (the cap is 5*"])


def test_the_cap_never_goes_below_the_concurrency_and_a_bad_cap_is_a_usage_error(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app=NEVER_RETURNS, suite="cases:\n" + "".join(
        f"  - id: c{n:02}\n    input: x{n}\n" for n in range(12)))
    pytester.makeini("[pytest]\nelizon_max_hung_calls = 2\n")
    result = pytester.runpytest_subprocess("--elizon-timeout=0.2", "-p", "no:cacheprovider",
                                           "--elizon-concurrency=4", "-rf")
    outcomes = result.parseoutcomes()
    # the cap is 4, not 2; calls already under way when it is reached may hang too (at most
    # concurrency - 1 of them), and every case after that fails at once
    assert 4 <= outcomes["timeout"] <= 4 + 3
    assert outcomes["failed"] == 12 - outcomes["timeout"]
    said = [line for line in result.stdout.lines if line.startswith("FAILED")
            and "EntryPointHung: app:answer does not return" in line]
    assert len(said) == outcomes["failed"]
    for bad in ("0", "lots", "10001"):
        pytester.makeini(f"[pytest]\nelizon_max_hung_calls = {bad}\n")
        result = pytester.runpytest("--collect-only")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([f"ERROR: ini option elizon_max_hung_calls in *tox.ini "
                                     f"({bad!r}): expected a whole number from 1 to 10000"])


def test_a_hung_call_that_returns_at_last_frees_its_place() -> None:
    counted = deadlines.HungCalls()
    counted.cap = 2
    counted.add("entry")
    counted.add("entry")
    assert "app:answer does not return: 2 of its calls are still running" in (
        counted.refusal("entry", "app:answer") or "")
    assert counted.refusal("other", "other") is None
    counted.done("entry")
    assert counted.refusal("entry", "app:answer") is None
    counted.done("entry")
    assert counted.count("entry") == 0
    with pytest.raises(KeyError):  # a return never counted is a bug, not a number to clamp
        counted.done("entry")


def test_an_abandoned_call_is_counted_until_it_returns() -> None:
    from pytest_elizon_eval.bind.calling import call_with_deadline
    from pytest_elizon_eval.run.answers import from_return

    release = threading.Event()

    def held() -> str:
        return "late" if release.wait(30) else "never"

    def other() -> str:
        return "answered"

    call = call_with_deadline(held, (), {}, time.monotonic() + 0.05, from_return, "app:held")
    assert call.timed_out
    assert deadlines.hung.count(id(held)) == 1
    assert deadlines.hung.count(id(other)) == 0  # another callable, even of the same name
    assert call_with_deadline(other, (), {}, time.monotonic() + 30, from_return,
                              "app:held").text == "answered"
    release.set()
    for _ in range(600):  # a guard: the thread ends as soon as it runs
        if deadlines.hung.count(id(held)) == 0:
            break
        time.sleep(0.05)
    assert deadlines.hung.count(id(held)) == 0


# -- debuggers ----------------------------------------------------------------------------

def _traced_as(module: str) -> Any:
    def trace(frame: Any, event: str, arg: Any) -> None:
        return None

    trace.__module__ = module
    return trace


def test_a_debuggers_trace_function_is_recognised_and_coverages_is_not() -> None:
    saved = sys.gettrace()
    debugger = bdb.Bdb()
    debugger.reset()
    seen: dict[str, str | None] = {}
    try:
        sys.settrace(debugger.trace_dispatch)
        seen["bdb"] = deadlines.debugger_in_use()
        for module in ("_pydevd_bundle.pydevd_cython", "coverage.pytracer", "cProfile"):
            sys.settrace(_traced_as(module))
            seen[module] = deadlines.debugger_in_use()
    finally:
        sys.settrace(saved)
    assert "(bdb)" in (seen["bdb"] or "")
    assert "(_pydevd_bundle.pydevd_cython)" in (seen["_pydevd_bundle.pydevd_cython"] or "")
    assert seen["coverage.pytracer"] is None
    assert seen["cProfile"] is None


BREAKS_IN = """
import pdb  # loaded before the call: stopping in it takes no import, well within the limit

def answer(text):
    breakpoint()
    return "answered " + text
"""


def test_under_pdb_deadlines_are_suspended_and_the_header_says_so(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app=LATE_BUT_CAUGHT, suite="cases:\n  - id: late\n    input: x\n"
                                                 "    expect: {equals: ok fallback}\n")
    result = pytester.runpytest_subprocess("--elizon-timeout=0.2", "--pdb",
                                           "-p", "no:cacheprovider")
    assert result.parseoutcomes() == {"passed": 1}
    result.stdout.fnmatch_lines(["elizon: deadlines suspended (--pdb): *"])


def test_a_breakpoint_in_an_entry_point_suspends_deadlines_from_then_on(
        packages: Packages, pytester: pytest.Pytester) -> None:
    """pdb stops in the entry point (on its worker thread); the person there takes longer
    than the case's limit, then continues: the answer counts."""
    packages.package(app=BREAKS_IN, suite="cases:\n  - id: stops\n    input: x\n"
                                          "    expect: {equals: answered x}\n")
    commands = "import time; time.sleep(3.5)\nc\n"  # longer than the case's limit
    result = pytester.run(sys.executable, "-m", "pytest", "-p", "pytest_elizon_eval.plugin",
                          "-p", "no:cacheprovider", "--elizon-timeout=3", "--elizon-history=off",
                          stdin=commands.encode(), timeout=120)
    assert result.parseoutcomes() == {"passed": 1}, result.stdout.str()
    result.stdout.fnmatch_lines(["*elizon: deadlines were suspended during the run "
                                 "(a debugger was entered)*"])


COVERED_APP = """
import time
import shared

def answer(text):
    started = True
    time.sleep(2)
    return "late"

def after():
    ran = "after the timeout"
    return ran

shared.AFTER.append(after)
"""


def test_coverage_of_an_entry_point_that_timed_out_and_of_its_caller_is_kept(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app=COVERED_APP, suite="cases:\n  - id: slow\n    input: x\n")
    packages.write("shared.py", "AFTER = []\n")
    packages.write("conftest.py", "import shared\n\ndef pytest_sessionfinish(session):\n"
                                  "    shared.AFTER[0]()\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV"))}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    subprocess.run([sys.executable, "-m", "coverage", "run", "--include=*/app.py",
                    "-m", "pytest", "-p", "pytest_elizon_eval.plugin", "-p", "no:cacheprovider",
                    "--elizon-timeout=0.3", "--elizon-history=off"],
                   cwd=pytester.path, env=env, capture_output=True, check=False, timeout=120)
    report = subprocess.run([sys.executable, "-m", "coverage", "json", "-o", "-"],
                            cwd=pytester.path, env=env, capture_output=True, check=True,
                            text=True, timeout=60)
    files = json.loads(report.stdout)["files"]
    [covered] = [data["executed_lines"] for name, data in files.items()
                 if name.endswith("app.py")]
    lines = textwrap.dedent(COVERED_APP).lstrip("\n").splitlines()
    for wanted in ('    started = True', '    ran = "after the timeout"'):
        assert lines.index(wanted) + 1 in covered, wanted


# -- the public types ---------------------------------------------------------------------

@pytest.mark.parametrize("record", [
    Answer(text="hi", tool_calls=(ToolCall("search", {"q": 1}),), usage=Usage(3, 4, 0.1, "m")),
    ToolCall("search", {"q": 1}, result="found", id="call_1"),
    Usage(1, 2, None, "gpt"),
    EntryCall(text="x", latency_ms=3.0),
    ErrorInfo("ValueError", "bad"),
], ids=lambda record: type(record).__name__)
def test_the_public_records_are_ordinary_dataclasses(record: Any) -> None:
    cls = type(record)
    assert dataclasses.is_dataclass(cls)
    assert dataclasses.is_dataclass(record)
    names = [f.name for f in dataclasses.fields(cls)]
    assert names
    assert names == [f.name for f in dataclasses.fields(record)]
    first = names[0]
    changed = dataclasses.replace(record, **{first: getattr(record, first)})
    assert changed == record
    assert pickle.loads(pickle.dumps(record)) == record
    assert copy.deepcopy(record) == record

    @dataclasses.dataclass(frozen=True)
    class Mine(cls):  # type: ignore[valid-type,misc]
        extra: str = "mine"

    assert [f.name for f in dataclasses.fields(Mine)] == [*names, "extra"]


def test_a_case_result_is_an_ordinary_dataclass() -> None:
    assert dataclasses.is_dataclass(CaseResult)
    names = {f.name for f in dataclasses.fields(CaseResult)}
    assert {"outcome", "case_id"} <= names


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
def test_a_forked_child_that_returns_never_goes_on_with_the_session() -> None:
    from pytest_elizon_eval.bind.calling import call_with_deadline
    from pytest_elizon_eval.run.answers import from_return

    parent = os.getpid()
    children: list[int] = []

    def forks() -> str:
        import warnings

        with warnings.catch_warnings():  # 3.12+: a fork in a process with threads warns
            warnings.simplefilter("ignore", DeprecationWarning)
            child = os.fork()
        children.append(child)
        return "answered"

    # 30 s: what the child does on its way back is the point, not a deadline
    result = call_with_deadline(forks, (), {}, time.monotonic() + 30, from_return)
    if os.getpid() != parent:  # the child got here: the session would go on in it
        os._exit(7)
    for _ in range(600):  # a guard: a child that went on would never end by itself
        pid, status = os.waitpid(children[0], os.WNOHANG)
        if pid:
            break
        time.sleep(0.05)
    else:
        os.kill(children[0], 9)
        os.waitpid(children[0], 0)
        pytest.fail("the forked child went on after the call")
    assert os.waitstatus_to_exitcode(status) == 0  # ended as it came back from the call
    assert result.text == "answered"
