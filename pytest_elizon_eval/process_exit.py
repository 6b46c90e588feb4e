"""The end of a process that ran Elizon cases: Python's last collections skipped.

When the interpreter exits, CPython tears its modules down and collects garbage several
times on the way, each time walking every object still alive. After a session of
thousands of cases (their items, results and reports) that walk is most of the time
between the summary's last line and the shell prompt: about half a second per 2,000
cases on a small machine (docs/performance.md#measured-figures).

Python does not promise ``__del__`` to objects that still exist when the interpreter
exits (the data model's ``object.__del__``). So the last exit handler of a process that
ran cases collects the garbage there is by then — its finalizers run, as they would
have — and then freezes what is alive (:func:`gc.freeze`): the interpreter frees it by
reference counts as usual, without walking it again. Every other exit handler has run
before (this one is registered when the plugin is imported, so it runs last), and a
process that ran no case — a session of other tests where the plugin is merely
installed — exits exactly as Python does. No pytest import here.
"""

from __future__ import annotations

import atexit
import gc

__all__ = ["ran_cases"]

_ran = False


def ran_cases() -> None:
    """This process ran (or reported) Elizon cases: skip the collections at its exit."""
    global _ran
    _ran = True


def _at_exit() -> None:
    if _ran:
        gc.collect()
        gc.freeze()


atexit.register(_at_exit)
