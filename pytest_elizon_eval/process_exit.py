"""The heap of a process that runs Elizon cases: what lives to the end is walked once.

A full garbage collection walks every object alive; after a session of thousands of
cases there are millions, and Python makes several such walks while the cases run, two
more when pytest ends the session and more again when the interpreter exits: more of a
big run's time than anything else the plugin adds (docs/performance.md). So the heap is
frozen (:func:`gc.freeze`, by :func:`freeze`) where what is alive lives to the end:

* when collection ends, in a session of nothing but Elizon cases (other tests may count
  on collecting what they drop), its young garbage collected first;
* once the session has finished, its garbage collected first, so whatever the run, its
  reports and its teardown dropped is finalized (while it finishes the heap is thawed
  and automatic collection paused: :func:`collections_paused`).

Frozen objects are left out of every later collection, pytest's included, and out of
``gc.get_objects()`` and ``gc.get_referrers()``. :func:`thaw` puts them back; every
session's cleanup does (:func:`session_ended`), and so does the exit handler. Only the
process's outermost session freezes (:func:`session_started`): one run inside a test
leaves its garbage to that test. A heap someone else froze since the plugin was imported
(a ``conftest.py`` that calls ``gc.freeze()``) is theirs: nothing is frozen or thawed
then, at exit neither (Python has one permanent generation). The plugin freezes nothing
with ini ``elizon_freeze_heap = false`` (docs/contract.md#the-heap).

When the interpreter exits, CPython tears its modules down and collects several times on
the way, each walk over every object still alive. The exit handler of a process that ran
or reported cases, or froze its heap, thaws it and collects once (finalizing the garbage
there is, frozen before or not), flushes every open file object (one held in a reference
cycle would otherwise lose what it buffered: closing it was its finalizer's job), and
freezes what is alive: the interpreter frees it by reference counts as usual, without
walking it again. It is registered when the plugin is imported, so it runs after every
exit handler registered later; a process that did none of that (a session of other tests
where the plugin is merely installed), and a child forked from one, exits exactly as
Python does. No pytest import here.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import io
import os
from collections.abc import Iterator

__all__ = ["collections_paused", "freeze", "ran_cases", "session_ended", "session_started", "thaw"]

_ran = False
#: Whether objects this module froze are in the permanent generation now, and whether it
#: ever froze any (a process that collected cases without running them, --collect-only).
_frozen = False
_froze = False
#: Frozen when the plugin was imported (Python 3.12 starts with a few hundred objects of
#: its own): more than that, before this module freezes, means someone else freezes.
_AT_IMPORT = gc.get_freeze_count()
#: The process the plugin was imported in: a child forked from it (an entry point that
#: forks) exits as Python does, its pages left shared with the parent.
_PID = os.getpid()
#: pytest sessions configured in this process and not yet cleaned up (nesting).
_sessions = 0


def session_started() -> bool:
    """A pytest session is configured; whether it is the process's outermost one, the only
    one that freezes (a session inside a test would leave its garbage to that test)."""
    global _sessions
    _sessions += 1
    return _sessions == 1


def session_ended() -> None:
    """The session's cleanup, after pytest's end-of-session collections: nothing is left
    frozen (a host that embeds pytest, a notebook, keeps collecting its garbage)."""
    global _sessions
    _sessions = max(_sessions - 1, 0)
    thaw()


def freeze(*, collect: int) -> None:
    """Leave what is alive now out of every later collection, after collecting the garbage
    of generations up to ``collect``; nothing if someone else had frozen objects first
    (Python has one permanent generation: thawing ours would thaw theirs)."""
    global _frozen, _froze
    if not _frozen and gc.get_freeze_count() > _AT_IMPORT:
        return
    gc.collect(collect)
    _frozen = _froze = True
    gc.freeze()


def thaw() -> None:
    """What :func:`freeze` froze is collected as usual again (and whatever other code
    froze since: gc.unfreeze() cannot tell them apart, and only the collector's walks
    change)."""
    global _frozen
    if _frozen:
        _frozen = False
        gc.unfreeze()


@contextlib.contextmanager
def collections_paused() -> Iterator[None]:
    """No automatic garbage collection while the block runs; what it drops is collected by
    the next one, or by :func:`freeze`."""
    enabled = gc.isenabled()
    if enabled:
        gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def ran_cases() -> None:
    """This process ran (or reported) Elizon cases: skip the collections at its exit."""
    global _ran
    _ran = True


def _at_exit() -> None:
    if not (_ran or _froze) or os.getpid() != _PID:
        return
    # every object is walked once more: garbage frozen alive is finalized now, and every
    # open file object is found (frozen or not; all is frozen again below anyway), but for
    # what someone else froze: theirs stays out of every walk, as without the plugin
    if _frozen or gc.get_freeze_count() <= _AT_IMPORT:
        gc.unfreeze()
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
