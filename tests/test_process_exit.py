"""The end of a process that ran cases (pytest_elizon_eval/process_exit.py): garbage there
is by the last exit handler is still finalized, and what is alive then is not walked
again by the interpreter's own collections; a process that ran no case exits as Python
does."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import Packages

#: A cyclic object whose __del__ leaves a mark, turned into garbage by an exit handler of
#: the user's (registered after the plugin's, so it runs before it); and a log file held
#: in a cycle that is never closed, whose last line is only in its buffer at exit.
MARKS = """
import atexit, os

class Marked:
    def __init__(self, name):
        self.name, self.me = name, self  # a cycle: only a garbage collection frees it

    def __del__(self):
        with open(os.path.join(os.environ["MARKS"], self.name), "w"):
            pass

_dropped = [Marked("garbage-at-exit")]
atexit.register(_dropped.clear)

class Log:
    def __init__(self):
        self.me = self
        self.out = open(os.path.join(os.environ["MARKS"], "log"), "w")

LOG = Log()
LOG.out.write("written, never flushed")
"""

#: pytest with an exit handler registered before the plugin is imported, so it runs after
#: the plugin's: it writes how many objects were frozen since the interpreter started.
PYTEST_THEN_FROZEN = (
    "import atexit, gc, os, sys\n"
    "at_start = gc.get_freeze_count()\n"
    "def frozen():\n"
    "    with open(os.path.join(os.environ['MARKS'], 'frozen'), 'w') as out:\n"
    "        out.write(str(gc.get_freeze_count() - at_start))\n"
    "atexit.register(frozen)\n"
    "import pytest\n"
    "sys.exit(pytest.main(sys.argv[1:]))\n")


def _run(folder: Path, marks: Path, *args: str) -> tuple[set[str], int]:
    marks.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(MARKS=str(marks), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    subprocess.run([sys.executable, "-c", PYTEST_THEN_FROZEN, "-q", "-p",
                    "pytest_elizon_eval.plugin", "-p", "no:cacheprovider", *args],
                   cwd=folder, env=env, check=True, capture_output=True)
    frozen = int((marks / "frozen").read_text())
    if "--collect-only" not in args:  # the app is imported only when a case runs
        assert (marks / "log").read_text() == "written, never flushed"  # flushed either way
    return {path.name for path in marks.iterdir()} - {"frozen", "log"}, frozen


def test_after_cases_garbage_is_finalized_and_the_living_are_frozen_not_walked_again(
        packages: Packages, pytester: pytest.Pytester) -> None:
    app = MARKS + "\ndef answer(text):\n    return text\n"
    folder = packages.package(suite="cases:\n  - id: one\n    input: hi\n", app=app)
    marks, frozen = _run(folder, pytester.path / "cases")
    assert marks == {"garbage-at-exit"}  # collected, its __del__ run, before the freeze
    assert frozen > 10_000  # pytest, the plugin, the cases: left for the OS to reclaim

    # collected, not run: its heap was frozen, so its exit is the plugin's too
    marks, frozen = _run(folder, pytester.path / "collected", "--collect-only")
    assert frozen > 10_000

    packages.write("plain/test_plain.py", MARKS + "\ndef test_plain():\n    pass\n")
    marks, frozen = _run(pytester.path / "plain", pytester.path / "plain-marks")
    assert marks == {"garbage-at-exit"}
    assert frozen == 0  # no case ran: the interpreter's own exit


#: A conftest that watches the heap: how many objects are frozen when it is imported, while
#: each case runs, once the session has finished, during the terminal summary, at
#: unconfigure (where pytest's own end-of-session collections are made) and after the
#: plugin's cleanup (this conftest's runs after it); written to seen.json by the process
#: that owns the session. With MARK set, whether that file exists at each point.
WATCH_HEAP = """
import gc, json, os, pathlib
import pytest

SEEN = {"at_import": gc.get_freeze_count(), "running": [], "marked": []}
MARK = os.environ.get("MARK")

def marked():
    return bool(MARK) and os.path.exists(MARK)

def pytest_configure(config):
    if not hasattr(config, "workerinput"):
        config.add_cleanup(done)

def done():
    SEEN["after_cleanup"] = gc.get_freeze_count()
    pathlib.Path(__file__).with_name("seen.json").write_text(json.dumps(SEEN))

def pytest_runtest_call(item):
    SEEN["running"].append(gc.get_freeze_count())
    SEEN["marked"].append(marked())

def pytest_terminal_summary(terminalreporter):
    SEEN["in_summary"] = gc.get_freeze_count()
    SEEN["collecting_in_summary"] = gc.isenabled()

@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config):  # after the session finished, before pytest's collections
    SEEN["at_unconfigure"] = gc.get_freeze_count()
    SEEN["marked_at_unconfigure"] = marked()
    SEEN["collecting_at_unconfigure"] = gc.isenabled()
"""

TWO_CASES = "cases:\n  - id: one\n    input: hi\n  - id: two\n    input: ho\n"
ECHO = "def answer(text):\n    return text\n"


def _heap_seen(pytester: pytest.Pytester, *args: str, conftest: str = "") -> dict[str, Any]:
    pytester.makeconftest(WATCH_HEAP + conftest)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--elizon-history=off",
                                           *args)
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    seen: dict[str, Any] = json.loads((pytester.path / "seen.json").read_text())
    return seen


def test_the_heap_is_frozen_while_cases_run_and_once_the_session_has_finished(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite=TWO_CASES, app=ECHO)
    seen = _heap_seen(pytester)
    start = seen["at_import"]
    # while the cases ran: the items, the suites, every module (thousands of objects)
    assert len(seen["running"]) == 2
    assert min(seen["running"]) > start + 10_000
    # other plugins' summaries see every object (gc.get_referrers: hypothesis asks there),
    # no automatic collection walking them; collection is back on afterwards
    assert seen["in_summary"] == start
    assert seen["collecting_in_summary"] is False
    assert seen["collecting_at_unconfigure"] is True
    # frozen again once the session has finished, the run's results too: pytest's own
    # collections at unconfigure skip it all
    assert seen["at_unconfigure"] > max(seen["running"])
    # nothing frozen is left once the session is cleaned up (pytest.main returns)
    assert seen["after_cleanup"] == start


#: An entry point whose every answer leaves garbage that only a collection frees, with
#: automatic collections off: its __del__ marks the file MARK.
LEAVES_GARBAGE = """
import gc, os
gc.disable()

class Cyclic:
    def __init__(self):
        self.me = self

    def __del__(self):
        open(os.environ["MARK"], "w").close()

def answer(text):
    Cyclic()
    return text
"""


def test_the_garbage_a_run_dropped_is_finalized_when_the_session_finishes(
        packages: Packages, pytester: pytest.Pytester,
        monkeypatch: pytest.MonkeyPatch) -> None:
    packages.package(suite=TWO_CASES, app=LEAVES_GARBAGE)
    monkeypatch.setenv("MARK", str(pytester.path / "finalized"))
    seen = _heap_seen(pytester)
    assert seen["marked"] == [False, False]  # the first case's garbage still uncollected
    assert seen["marked_at_unconfigure"]  # collected before the heap was frozen again


def test_collection_is_back_on_when_a_sessionfinish_hook_raises(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite=TWO_CASES, app=ECHO)
    pytester.makeconftest(WATCH_HEAP + "\ndef pytest_sessionfinish(session):\n"
                                       "    raise RuntimeError('a broken plugin')\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--elizon-history=off")
    assert "a broken plugin" in result.stdout.str() + result.stderr.str()
    seen = json.loads((pytester.path / "seen.json").read_text())
    assert seen["collecting_at_unconfigure"] is True
    assert seen["at_unconfigure"] == seen["at_import"]  # thawed, not frozen again


def test_a_session_without_elizon_cases_freezes_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    seen = _heap_seen(pytester)
    start = seen["at_import"]
    assert seen["running"] == [start]
    assert seen["in_summary"] == seen["at_unconfigure"] == start


def test_with_other_tests_the_heap_is_frozen_only_once_the_session_has_finished(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite=TWO_CASES, app=ECHO)
    # a test that counts on collecting an object it drops (frozen, it never would be)
    packages.write("test_plain.py", """
        import gc, weakref

        class Cyclic:
            def __init__(self):
                self.me = self

        KEPT = [Cyclic()]

        def test_dropped_object_is_collected():
            dead = weakref.ref(KEPT.pop())
            gc.collect()
            assert dead() is None
    """)
    seen = _heap_seen(pytester)
    start = seen["at_import"]
    assert seen["running"] == [start] * 3
    assert seen["at_unconfigure"] > start + 10_000


def test_collect_only_and_the_xdist_controller_freeze_too(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite=TWO_CASES, app=ECHO)
    seen = _heap_seen(pytester, "--collect-only")
    assert seen["at_unconfigure"] > seen["at_import"] + 10_000
    # the controller collects nothing; it froze what it had once the reports were in
    seen = _heap_seen(pytester, "-n", "2")
    assert seen["running"] == []  # the cases ran in the workers
    assert seen["at_unconfigure"] > seen["at_import"] + 10_000


def test_elizon_freeze_heap_false_freezes_nothing(packages: Packages,
                                                  pytester: pytest.Pytester) -> None:
    packages.package(suite=TWO_CASES, app=ECHO)
    pytester.makeini("[pytest]\nelizon_freeze_heap = false\n")
    seen = _heap_seen(pytester)
    assert seen["running"] == [seen["at_import"]] * 2
    assert seen["in_summary"] == seen["at_unconfigure"] == seen["at_import"]

    pytester.makeini("[pytest]\nelizon_freeze_heap = sometimes\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*elizon_freeze_heap*expected true or false*"])


def test_a_heap_someone_else_froze_is_left_to_them(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite=TWO_CASES, app=ECHO)
    # frozen before the plugin would freeze: nothing is frozen or thawed by it
    seen = _heap_seen(pytester, conftest="\ngc.freeze()\nSEEN['theirs'] = gc.get_freeze_count()\n")
    theirs = seen["theirs"]
    # neither frozen further nor thawed (fewer only as frozen objects are freed)
    for count in [*seen["running"], seen["in_summary"], seen["at_unconfigure"],
                  seen["after_cleanup"]]:
        assert theirs * 0.9 < count <= theirs


#: Someone freezes the heap after the plugin was imported, with a cycle in it that then
#: becomes garbage: theirs to collect, never the plugin's (not even at exit).
THEIR_FREEZE = """
import gc, os, sys
import pytest
import pytest_elizon_eval.plugin  # imported: what is frozen from now on is someone else's

class Cyclic:
    def __init__(self):
        self.me = self

    def __del__(self):
        open(os.environ["MARK"], "w").close()

kept = [Cyclic()]
gc.freeze()
kept.clear()  # garbage, in their permanent generation
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "--elizon-history=off", "pkg"]))
"""


def test_at_exit_a_heap_someone_else_froze_stays_theirs(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite=TWO_CASES, app=ECHO)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["MARK"] = str(pytester.path / "finalized")
    done = subprocess.run([sys.executable, "-c", THEIR_FREEZE], cwd=pytester.path, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout
    assert not (pytester.path / "finalized").exists()  # never thawed, never collected


def test_a_forked_child_exits_as_python_does(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_elizon_eval import process_exit

    walks: list[int] = []

    def walked(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            walks.append(info["generation"])

    monkeypatch.setattr(process_exit, "_ran", True)
    monkeypatch.setattr(process_exit, "_PID", os.getpid() + 1)  # as in a forked child
    frozen = gc.get_freeze_count()
    gc.callbacks.append(walked)
    try:
        process_exit._at_exit()
    finally:
        gc.callbacks.remove(walked)
    assert walks == []  # no collection, no thaw, no freeze: its pages stay shared
    assert gc.get_freeze_count() == frozen


#: Sessions in one process, as a script that calls pytest.main does: Elizon cases, then a
#: plain session whose test runs the cases again in a session inside it. The entry point
#: writes how many objects are frozen at each call.
SESSIONS = """
import gc, json
import pytest

seen = {"start": gc.get_freeze_count()}

def test_nested():
    assert pytest.main(["-q", "-p", "no:cacheprovider", "--elizon-history=off", "pkg"]) == 0
    seen["after_inner"] = gc.get_freeze_count()

assert pytest.main(["-q", "-p", "no:cacheprovider", "--elizon-history=off", "pkg"]) == 0
seen["after_first"] = gc.get_freeze_count()
assert pytest.main(["-q", "-p", "no:cacheprovider", "--elizon-history=off",
                    "test_outer.py"]) == 0
seen["after_outer"] = gc.get_freeze_count()
with open("sessions.json", "w") as out:
    json.dump(seen, out)
"""

COUNTS_FROZEN = """
import gc

def answer(text):
    with open("calls.txt", "a") as out:
        out.write(f"{gc.get_freeze_count()}\\n")
    return text
"""


def test_a_session_leaves_nothing_frozen_and_one_inside_another_freezes_nothing(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite=TWO_CASES, app=COUNTS_FROZEN)
    packages.write("test_outer.py", "from sessions import test_nested\n")
    packages.write("sessions.py", SESSIONS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    done = subprocess.run([sys.executable, "-c", "import sessions"], cwd=pytester.path,
                          env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    seen = json.loads((pytester.path / "sessions.json").read_text())
    start = seen["start"]
    calls = [int(line) for line in (pytester.path / "calls.txt").read_text().split()]
    assert len(calls) == 4
    assert min(calls[:2]) > start + 10_000  # the first session froze its heap...
    assert seen["after_first"] == start  # ...and left nothing frozen once it returned
    assert calls[2:] == [start, start]  # the session inside a test froze nothing
    assert seen["after_inner"] == seen["after_outer"] == start
