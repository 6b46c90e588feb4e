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


def _run(folder: Path, marks: Path) -> tuple[set[str], int]:
    marks.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(MARKS=str(marks), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    subprocess.run([sys.executable, "-c", PYTEST_THEN_FROZEN, "-q", "-p",
                    "pytest_elizon_eval.plugin", "-p", "no:cacheprovider"],
                   cwd=folder, env=env, check=True, capture_output=True)
    frozen = int((marks / "frozen").read_text())
    assert (marks / "log").read_text() == "written, never flushed"  # flushed, either way
    return {path.name for path in marks.iterdir()} - {"frozen", "log"}, frozen


def test_after_cases_garbage_is_finalized_and_the_living_are_frozen_not_walked_again(
        packages: Packages, pytester: pytest.Pytester) -> None:
    app = MARKS + "\ndef answer(text):\n    return text\n"
    folder = packages.package(suite="cases:\n  - id: one\n    input: hi\n", app=app)
    marks, frozen = _run(folder, pytester.path / "cases")
    assert marks == {"garbage-at-exit"}  # collected, its __del__ run, before the freeze
    assert frozen > 10_000  # pytest, the plugin, the cases: left for the OS to reclaim

    packages.write("plain/test_plain.py", MARKS + "\ndef test_plain():\n    pass\n")
    marks, frozen = _run(pytester.path / "plain", pytester.path / "plain-marks")
    assert marks == {"garbage-at-exit"}
    assert frozen == 0  # no case ran: the interpreter's own exit


#: A conftest that watches the heap: how many objects are frozen when it is imported, while
#: each case runs, once every plugin's end-of-session hook has run, during the terminal
#: summary, and at unconfigure (where pytest's own end-of-session collections are made);
#: written to seen.json.
WATCH_HEAP = """
import gc, json, pathlib
import pytest

SEEN = {"at_import": gc.get_freeze_count(), "running": []}

def pytest_runtest_call(item):
    SEEN["running"].append(gc.get_freeze_count())

@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    SEEN["at_sessionfinish"] = gc.get_freeze_count()

def pytest_terminal_summary(terminalreporter):
    SEEN["in_summary"] = gc.get_freeze_count()

@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config):
    SEEN["at_unconfigure"] = gc.get_freeze_count()
    pathlib.Path(__file__).with_name("seen.json").write_text(json.dumps(SEEN))
"""

TWO_CASES = "cases:\n  - id: one\n    input: hi\n  - id: two\n    input: ho\n"
ECHO = "def answer(text):\n    return text\n"


def _heap_seen(pytester: pytest.Pytester, *args: str, in_process: bool = False
               ) -> dict[str, Any]:
    pytester.makeconftest(WATCH_HEAP)
    run = pytester.runpytest_inprocess if in_process else pytester.runpytest_subprocess
    result = run("-p", "no:cacheprovider", "--elizon-history=off", *args)
    assert result.ret == 0, result.stdout.str()
    seen: dict[str, Any] = json.loads((pytester.path / "seen.json").read_text())
    return seen


def test_the_heap_is_frozen_while_cases_run_and_again_when_the_session_finishes(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite=TWO_CASES, app=ECHO)
    seen = _heap_seen(pytester)
    start = seen["at_import"]
    # while the cases ran: the items, the suites, every module (thousands of objects)
    assert len(seen["running"]) == 2
    assert min(seen["running"]) > start + 10_000
    # the session's end froze the run's results too, before any report was written
    assert seen["at_sessionfinish"] > max(seen["running"])
    # other plugins' summaries see every object (gc.get_referrers: hypothesis asks there)
    assert seen["in_summary"] == start
    # and frozen again after them: pytest's own collections at unconfigure skip it all
    assert seen["at_unconfigure"] > max(seen["running"])


def test_a_session_without_elizon_cases_freezes_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    seen = _heap_seen(pytester)
    assert seen["running"] == [seen["at_import"]] == [seen["at_sessionfinish"]]
    assert seen["at_unconfigure"] == seen["at_import"]


def test_with_other_tests_the_heap_is_frozen_only_when_the_session_finishes(
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
    assert seen["at_sessionfinish"] > start + 10_000


def test_elizon_freeze_heap_false_freezes_nothing(packages: Packages,
                                                  pytester: pytest.Pytester) -> None:
    packages.package(suite=TWO_CASES, app=ECHO)
    pytester.makeini("[pytest]\nelizon_freeze_heap = false\n")
    seen = _heap_seen(pytester)
    assert seen["running"] == [seen["at_import"]] * 2
    assert seen["at_sessionfinish"] == seen["at_import"]

    pytester.makeini("[pytest]\nelizon_freeze_heap = sometimes\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*elizon_freeze_heap*expected true or false*"])


def test_a_heap_frozen_by_someone_else_is_left_to_them(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite=TWO_CASES, app=ECHO)
    gc.freeze()  # as this very test suite's conftest does, or a pre-forking server
    before = gc.get_freeze_count()
    seen = _heap_seen(pytester, in_process=True)
    # neither frozen further nor thawed: theirs stays theirs (fewer only as frozen objects
    # are freed by reference counts)
    for count in [*seen["running"], seen["at_unconfigure"], gc.get_freeze_count()]:
        assert before * 0.9 < count <= before


#: Three sessions in one process, as a script that calls pytest.main does: Elizon cases
#: (the process's last session so far: its heap stays frozen after it), then a plain
#: session whose test runs the cases again in a session inside it.
SESSIONS = """
import gc, json
import pytest

seen = {"start": gc.get_freeze_count()}

def test_nested():
    seen["outer_test"] = gc.get_freeze_count()
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


def test_a_later_session_thaws_the_heap_and_a_nested_one_leaves_nothing_frozen(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite=TWO_CASES, app=ECHO)
    packages.write("test_outer.py", "from sessions import test_nested\n")
    packages.write("sessions.py", SESSIONS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    done = subprocess.run([sys.executable, "-c", "import sessions"], cwd=pytester.path,
                          env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    seen = json.loads((pytester.path / "sessions.json").read_text())
    start = seen["start"]
    assert seen["after_first"] > start + 10_000  # the last session so far: left frozen
    assert seen["outer_test"] == start  # the next session thawed it, and froze nothing
    assert seen["after_inner"] == start  # the session inside it thawed its own
    assert seen["after_outer"] == start
