"""The heap of a process that runs Elizon cases: what lives all session is not walked.

A session that collected Elizon cases freezes what is alive when collection ends
(:func:`freeze_collected`, :func:`gc.freeze`): the items, their suites and every module
imported by then live until the session ends, so the garbage collections made while the
cases run skip them. :func:`thaw` puts them back before any plugin's end-of-session hook
(``gc.get_referrers`` does not see frozen objects), so a session run in-process
(``pytester``, ``pytest.main``) leaves nothing frozen behind. A process where something
else has frozen objects since the plugin was imported manages its own heap: nothing is
frozen or thawed then (docs/contract.md#the-collected-heap).

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

__all__ = ["freeze_collected", "ran_cases", "thaw"]

_ran = False
_frozen = False
#: Objects frozen when the plugin was imported: the interpreter's own (3.12 starts with
#: some); more later means another piece of code freezes the heap itself.
_FROZEN_AT_IMPORT = gc.get_freeze_count()


def freeze_collected() -> None:
    """Collection ended with Elizon cases: leave what is alive out of every later
    collection until :func:`thaw`, unless something else has frozen objects since the
    plugin was imported (Python has one permanent generation: thawing ours would thaw
    theirs)."""
    global _frozen
    if not _frozen and gc.get_freeze_count() == _FROZEN_AT_IMPORT:
        gc.freeze()
        _frozen = True


def thaw() -> None:
    """The session is over: what :func:`freeze_collected` froze is collected as usual
    again."""
    global _frozen
    if _frozen:
        _frozen = False
        gc.unfreeze()


def ran_cases() -> None:
    """This process ran (or reported) Elizon cases: skip the collections at its exit."""
    global _ran
    _ran = True


def _at_exit() -> None:
    thaw()  # a session that never reached its cleanup: its files are found and flushed
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
