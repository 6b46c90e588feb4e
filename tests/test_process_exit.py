"""The end of a process that ran cases (pytest_elizon_eval/process_exit.py): garbage there
is by the last exit handler is still finalized, and what is alive then is not walked
again by the interpreter's own collections; a process that ran no case exits as Python
does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
