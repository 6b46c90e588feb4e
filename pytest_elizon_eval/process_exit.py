"""The end of a process that ran Elizon cases: Python's last collections skipped.

When the interpreter exits, CPython tears its modules down and collects garbage several
times on the way, each time walking every object still alive. After a session of
thousands of cases (their items, results and reports) that walk is most of the time
between the summary's last line and the shell prompt: about half a second per 2,000
cases on a small machine (docs/performance.md#measured-figures).

Python does not promise ``__del__`` to objects that still exist when the interpreter
exits (the data model's ``object.__del__``). So the exit handler of a process that ran
cases collects the garbage there is by then — its finalizers run, as they would have —
flushes every open file object (one held in a reference cycle would otherwise lose what
it buffered: closing it was its finalizer's job), and then freezes what is alive
(:func:`gc.freeze`): the interpreter frees it by reference counts as usual, without
walking it again. It is registered when the plugin is imported, so it runs after every
exit handler registered later; a process that ran no case — a session of other tests
where the plugin is merely installed — exits exactly as Python does. No pytest import
here.
"""

from __future__ import annotations

import atexit
import gc
import io

__all__ = ["ran_cases"]

_ran = False


def ran_cases() -> None:
    """This process ran (or reported) Elizon cases: skip the collections at its exit."""
    global _ran
    _ran = True


def _at_exit() -> None:
    if _ran:
        gc.collect()
        _flush_open_files()
        gc.freeze()


def _flush_open_files() -> None:
    for found in gc.get_objects():
        if isinstance(found, io.IOBase):
            try:
                if not found.closed:
                    found.flush()
            except Exception:  # detached, broken or read-only: nothing to keep
                continue


atexit.register(_at_exit)
