"""The heap of a process that runs Elizon cases: what lives to the end is walked once.

A full garbage collection walks every object alive; after a session of thousands of
cases there are millions, and Python makes several such walks while the cases run, two
more when pytest ends the session and more again when the interpreter exits: more of a
big run's time than anything else the plugin adds (docs/performance.md). So the heap is
frozen (:func:`gc.freeze`, by :func:`freeze`) where what is alive lives to the end:

* when collection ends, in a session of nothing but Elizon cases (other tests may count
  on collecting what they drop), its young garbage collected first;
* when the session finishes, before any plugin writes its reports, the garbage there is
  by then collected first, so whatever the run dropped is finalized.

Frozen objects are left out of every later collection, pytest's included, and out of
``gc.get_objects()`` and ``gc.get_referrers()`` (:func:`thawed` lets code that asks them
see everything). :func:`thaw` puts them back at the cleanup of a session run inside
another one (``pytester``, ``pytest.main`` in a test), when the next session of the
process starts, and at exit. A heap someone else froze since the plugin was imported (a
``conftest.py`` that calls ``gc.freeze()``) is theirs: nothing is frozen or thawed then
(Python has one permanent generation). The plugin freezes nothing with ini
``elizon_freeze_heap = false`` (docs/contract.md#the-heap).

When the interpreter exits, CPython tears its modules down and collects several times on
the way, each walk over every object still alive. The exit handler of a process that ran
or reported cases, or froze its heap, thaws it and collects once (finalizing the garbage
there is, frozen before or not), flushes every open file object (one held in a reference
cycle would otherwise lose what it buffered: closing it was its finalizer's job), and
freezes what is alive: the interpreter frees it by reference counts as usual, without
walking it again. It is registered when the plugin is imported, so it runs after every
exit handler registered later; a process that did none of that (a session of other tests
where the plugin is merely installed) exits exactly as Python does. No pytest import here.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import io
from collections.abc import Iterator

__all__ = ["freeze", "ran_cases", "session_ended", "session_started", "thaw", "thawed"]

_ran = False
#: Whether objects this module froze are in the permanent generation now.
_frozen = False
#: Objects frozen by the interpreter or by someone else when this module last looked:
#: more than that, and not by us, means someone else freezes the heap.
_baseline = gc.get_freeze_count()
#: pytest sessions configured in this process and not yet cleaned up (nesting).
_sessions = 0


def session_started() -> None:
    """A pytest session is configured: a heap an earlier session of the process left
    frozen is thawed (that session is over)."""
    global _sessions
    if _sessions == 0:
        thaw()
    _sessions += 1


def session_ended() -> None:
    """The session's cleanup: a session run inside another leaves nothing frozen."""
    global _sessions
    _sessions = max(_sessions - 1, 0)
    if _sessions:
        thaw()


def freeze(*, collect: int) -> None:
    """Leave what is alive now out of every later collection, after collecting the garbage
    of generations up to ``collect``; nothing if someone else froze objects."""
    global _frozen
    if not _frozen and gc.get_freeze_count() != _baseline:
        return  # theirs: thawing ours later would thaw theirs too
    gc.collect(collect)
    gc.freeze()
    _frozen = True


def thaw() -> None:
    """What :func:`freeze` froze is collected as usual again."""
    global _frozen, _baseline
    if _frozen:
        _frozen = False
        gc.unfreeze()
        _baseline = gc.get_freeze_count()


@contextlib.contextmanager
def thawed() -> Iterator[None]:
    """Everything unfrozen while the block runs (for code that asks ``gc.get_referrers``),
    frozen again after it."""
    was = _frozen
    thaw()
    try:
        yield
    finally:
        if was:
            freeze(collect=0)


def ran_cases() -> None:
    """This process ran (or reported) Elizon cases: skip the collections at its exit."""
    global _ran
    _ran = True


def _at_exit() -> None:
    if not (_ran or _frozen):
        return
    thaw()  # every object is walked once more: garbage frozen alive is finalized now
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
