"""Run cases ahead of pytest's item loop, at most N at once (``--elizon-concurrency``).

pytest still runs and reports item by item, in order; this module only makes
sure that by the time an item asks for its result, its case has been running
in the background (docs/contract.md#concurrency). :func:`prefetch` looks at
the item about to run and the next 2N-1 (with ``auto``, the next N-1), and
starts each one that can run before its own setup (its ``background_work``):
N run, and up to N more wait in line, so a slot whose case ended takes the
next at once instead of waiting for pytest's loop. Each started case waits for
one of N slots, then runs :func:`~.running.run_case` — so its time limit and
its latency start when its entry point is called, never while it queues. A
slot makes its case's first sync call itself; whoever waits for a case ends
the calls past their deadline (run/slots.py). Work runs in daemon
threads: after ``-x``, ``--maxfail`` or Ctrl-C nothing new starts and what
was started is abandoned, never waited for.

With ``--elizon-concurrency=auto[:MAX]`` there are MAX slots, and each case
also waits for its entry point's :class:`AdaptiveLimit` (one per entry
point; per host for HTTP), before its time limit starts: the limit starts at
:data:`AUTO_START`, grows by one per window of calls that were not refused
(additive increase) and halves on a rate-limit refusal (multiplicative
decrease), at most once per window: a refusal of a request sent before the
last cut does not cut again. Each process (each xdist worker) adapts on its
own: the gates are the current session's (:attr:`~.session.ElizonSession.gates`).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError, Future
from concurrent.futures import TimeoutError as FutureTimeout

from ..collect import session
from .slots import SlotAbandoned, SlotCall

__all__ = [
    "AUTO_START",
    "MAX_CONCURRENCY",
    "AdaptiveLimit",
    "CaseScheduler",
    "Gates",
    "gate_for",
    "prefetch",
]

#: The largest ``--elizon-concurrency``, and the default MAX of ``auto``.
MAX_CONCURRENCY = 64
#: Where an adaptive limit starts: modest, so a tight rate limit is found quickly.
AUTO_START = 4


class AdaptiveLimit:
    """How many calls of one entry point may be under way at once, found by AIMD."""

    def __init__(self, most: int, start: int = AUTO_START) -> None:
        self.most = most
        self.limit = float(min(start, most))
        self.in_flight = 0
        #: The most calls ever under way at once, and how many cuts were made (evidence).
        self.peak = 0
        self.cuts = 0
        self._last_cut = float("-inf")
        self._changed = threading.Condition()
        #: Tickets: calls get room in the order they asked for it (pytest's order).
        self._issued = 0
        self._admitted = 0
        #: Tickets whose caller stopped waiting (Ctrl-C in the main thread): skipped.
        self._given_up: set[int] = set()

    @property
    def waiting(self) -> int:
        """Calls waiting for room."""
        return self._issued - self._admitted

    def acquire(self) -> None:
        """Wait for room under the limit, after every call that asked before."""
        with self._changed:
            ticket = self._issued
            self._issued += 1
            try:
                while ticket != self._admitted or self.in_flight >= max(int(self.limit), 1):
                    self._changed.wait()
            except BaseException:  # interrupted while waiting: the line must not stop here
                self._given_up.add(ticket)
                self._skip_given_up()
                self._changed.notify_all()
                raise
            self._admitted += 1
            self._skip_given_up()
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            self._changed.notify_all()  # the next ticket may fit as well

    def _skip_given_up(self) -> None:
        while self._admitted in self._given_up:
            self._given_up.discard(self._admitted)
            self._admitted += 1

    def release(self, *, refused: bool = False) -> None:
        """A call ended; one that was not refused widens the limit by 1/limit (one per
        window of calls)."""
        with self._changed:
            self.in_flight -= 1
            if not refused:
                self.limit = min(float(self.most), self.limit + 1 / max(self.limit, 1.0))
            self._changed.notify_all()

    def refused(self, sent: float) -> None:
        """A request sent at ``sent`` (``time.monotonic()``) was rate limited: halve the
        limit, unless it was sent before the last cut (that cut already answered it)."""
        with self._changed:
            if sent <= self._last_cut:
                return
            self.limit = max(1.0, self.limit / 2)
            self._last_cut = time.monotonic()
            self.cuts += 1


class Gates:
    """The adaptive limits of a process, by entry point (an HTTP entry's host)."""

    def __init__(self, most: int) -> None:
        self.most = most
        self._limits: dict[str, AdaptiveLimit] = {}
        self._lock = threading.Lock()

    def limit(self, key: str) -> AdaptiveLimit:
        with self._lock:
            found = self._limits.get(key)
            if found is None:
                found = self._limits[key] = AdaptiveLimit(self.most)
            return found

    def refused(self, key: str, sent: float) -> None:
        self.limit(key).refused(sent)


def gate_for(key: str) -> AdaptiveLimit | None:
    """The adaptive limit a call of ``key`` waits for; None when concurrency is fixed
    (or outside a session)."""
    running = session.current()
    gates = running.gates if running is not None else None
    return gates.limit(key) if gates is not None else None


#: How often an item that waits for a case looks for slot calls past their deadline (its own
#: case may wait in line behind them): one is ended within this after its deadline.
_REAP_S = 0.05


class CaseScheduler:
    """Starts work by key, at most ``slots`` at a time, in the order it was queued; each
    key's result is a future. The slots are long-lived daemon threads that take queued work
    in turn: starting a thread per case costs the main thread a wait for the new thread to
    run, which under load is most of a case's hand-off."""

    def __init__(self, slots: int, queued: int = 0) -> None:
        self.slots = slots
        #: How many items the run looks ahead: the slots' cases, and ``queued`` more that
        #: wait for a slot, so that a slot whose case ended takes the next one at once
        #: instead of waiting for pytest's loop to reach the next item.
        self.ahead = slots + queued
        self._queue: queue.SimpleQueue[
            tuple[str, Future[object], Callable[[], object]] | None] = queue.SimpleQueue()
        self._futures: dict[str, Future[object]] = {}
        #: The first calls that slots make themselves (run/slots.py), by key, until their
        #: work ends or they are abandoned: whoever waits ends those past their deadline.
        self._calls: dict[str, SlotCall] = {}
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._threads = 0
        #: The items already started (by identity): each item is looked at again by the
        #: next ``slots`` items' prefetch, and a set lookup is all that costs then.
        self.started_items: set[int] = set()

    def started(self, key: str) -> bool:
        return key in self._futures  # a dict lookup is atomic; only the main thread adds

    def start(self, key: str, work: Callable[[], object], call: SlotCall | None = None
              ) -> None:
        """Queue ``work`` for ``key`` (once); it runs when a slot is free. ``call``: the
        first call the slot makes itself, if any."""
        with self._lock:
            if key in self._futures or self._stopped.is_set():
                return
            future: Future[object] = Future()
            self._futures[key] = future
            if call is not None:
                self._calls[key] = call
            more = self._threads < self.slots
            self._threads += more
        self._queue.put((key, future, work))
        if more:
            threading.Thread(target=self._serve, daemon=True, name="elizon-case").start()

    def _serve(self) -> None:
        while True:
            queued = self._queue.get()
            if queued is None:  # stopped: the slot thread ends
                return
            if not self._run(*queued):
                return  # its call was abandoned: a new slot thread took its place

    def _run(self, key: str, future: Future[object], work: Callable[[], object]) -> bool:
        try:
            if self._stopped.is_set() or not future.set_running_or_notify_cancel():
                return True
            try:
                future.set_result(work())
            except SlotAbandoned:
                return False
            except BaseException as exc:  # delivered to the item that waits for it
                future.set_exception(exc)
            return True
        finally:
            with self._lock:
                self._calls.pop(key, None)

    def _reap(self) -> None:
        """End every slot call past its deadline, each slot replaced: a case waiting in
        line behind hung calls, or a hung call whose item never runs (skipped, its setup
        failed), never holds the run."""
        with self._lock:
            calls = list(self._calls.items())
        for key, call in calls:
            if call.abandon():
                with self._lock:
                    self._calls.pop(key, None)
                if not self._stopped.is_set():
                    threading.Thread(target=self._serve, daemon=True,
                                     name="elizon-case").start()

    #: :meth:`result`'s word for a case ended without its slot's call.
    ABANDONED: object = object()

    def result(self, key: str, call: SlotCall | None) -> object:
        """What ``key``'s work gave (None: never started, or cancelled) — or
        :data:`ABANDONED` once its first call, made on its slot thread (``call``), has
        outlived its deadline: the caller then runs the case itself, with that call timed
        out. While it waits it ends the slot calls past their deadline (:meth:`_reap`).
        Ctrl-C still stops the wait."""
        future = self.take(key)
        if future is None:
            return None
        try:
            while True:
                if call is not None and call.state == SlotCall.ABANDONED:
                    return self.ABANDONED
                try:
                    return future.result(_REAP_S)
                except FutureTimeout:
                    self._reap()
        except CancelledError:
            return None

    def take(self, key: str) -> Future[object] | None:
        """The future of ``key``'s work, removed from the scheduler (None: never started)."""
        with self._lock:
            return self._futures.pop(key, None)

    def stop(self) -> None:
        """Start nothing more; work still queued is cancelled, running work is abandoned."""
        self._stopped.set()
        with self._lock:
            pending = list(self._futures.values())
            self._futures.clear()
            self._calls.clear()
            threads, self._threads = self._threads, 0
        for future in pending:
            future.cancel()
        for _ in range(threads):  # each slot thread ends after the work it is doing
            self._queue.put(None)


def prefetch(scheduler: CaseScheduler, items: Sequence[object], *, stop: bool) -> None:
    """Make sure ``items`` (the one about to run, then the next ones) are under way; with
    ``stop`` (``-x``, ``--maxfail``) start nothing new. An item takes part when it has a
    ``background_work()`` that returns the work, or None when it must wait for its turn."""
    if stop:
        scheduler.stop()
        return
    done = scheduler.started_items
    for item in items:
        if id(item) in done:
            continue
        work_of: Callable[[], Callable[[], object] | None] | None = getattr(
            item, "background_work", None)
        key = getattr(item, "nodeid", None)
        if work_of is None or not isinstance(key, str):
            continue
        if scheduler.started(key):
            done.add(id(item))
            continue
        work = work_of()
        if work is not None:
            scheduler.start(key, work, getattr(item, "slot_call", None))
            done.add(id(item))
