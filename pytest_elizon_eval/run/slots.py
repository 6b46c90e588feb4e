"""A case's first call made on the slot thread that runs the case ahead of its turn.

Under ``--elizon-concurrency`` a slot thread (:mod:`.concurrency`) runs a case
before pytest reaches its item. Handing the case's sync call on to a worker
thread, so that the slot can stop waiting for it at the deadline, costs two
thread switches per case; so the slot makes its case's first call itself. A
thread that runs foreign code cannot be stopped, so the scheduler keeps the
deadline instead: while pytest waits for any case, each call past its deadline
is abandoned (:meth:`SlotCall.abandon`) and a new slot thread takes the stuck
one's place; the case's item then runs the case on its own thread with that
call timed out (docs/contract.md#concurrency). No pytest import here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from . import deadlines

__all__ = ["SlotAbandoned", "SlotCall", "on_this_thread", "running"]

_T = TypeVar("_T")

#: ``call``: the :class:`SlotCall` the next sync call of a Python entry point on this
#: thread is (bind/calling.py takes it), or None.
on_this_thread = threading.local()


class SlotAbandoned(BaseException):
    """Raised in a slot thread whose call returned after its case was ended without it:
    the thread drops that run and ends. A BaseException, so that no ``except Exception``
    on the way out keeps the run going."""


class SlotCall:
    """The state of a case's first call, shared by the thread that makes it and the item
    that waits for the case."""

    READY, CALLING, DONE, ABANDONED, TIMED_OUT = range(5)
    __slots__ = ("_lock", "deadline", "on_abandon", "state")

    def __init__(self, state: int = READY) -> None:
        self._lock = threading.Lock()
        #: READY (not begun), CALLING, DONE, ABANDONED; or TIMED_OUT: a run without the
        #: call, which is taken as timed out.
        self.state = state
        #: When the call under way must have ended (``time.monotonic()``).
        self.deadline = float("inf")
        #: Told when the call is abandoned (it counts as hung until it returns).
        self.on_abandon: Callable[[], None] | None = None

    def begin(self, deadline: float, on_abandon: Callable[[], None] | None = None) -> None:
        with self._lock:
            self.deadline, self.state = deadline, self.CALLING
            self.on_abandon = on_abandon

    def end(self) -> bool:
        """The call returned: False when its case was already ended without it."""
        with self._lock:
            if self.state == self.ABANDONED:
                return False
            self.state = self.DONE
            return True

    def abandon(self) -> bool:
        """End the case without the call, if the call is still under way past its
        deadline: True when it was."""
        with self._lock:
            if self.state != self.CALLING or not deadlines.passed(self.deadline):
                return False
            self.state = self.ABANDONED
            if self.on_abandon is not None:  # counted before end() can see the state
                self.on_abandon()
            return True


def running(call: SlotCall, work: Callable[[], _T]) -> _T:
    """``work()``, whose first sync call of a Python entry point on this thread is
    ``call``."""
    on_this_thread.call = call
    try:
        return work()
    finally:
        on_this_thread.call = None
