"""Run cases ahead of pytest's item loop, at most N at once (``--elizon-concurrency``).

pytest still runs and reports item by item, in order; this module only makes
sure that by the time an item asks for its result, its case has been running
in the background (docs/contract.md#concurrency). :func:`prefetch` looks at
the item about to run and the next N-1, and starts each one that can run
before its own setup (its ``background_work``). Each started case waits for
one of N slots, then runs :func:`~.running.run_case` — so its time limit and
its latency start when its entry point is called, never while it queues. Work runs in daemon
threads: after ``-x``, ``--maxfail`` or Ctrl-C nothing new starts and what
was started is abandoned, never waited for. No pytest import here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future

__all__ = ["MAX_CONCURRENCY", "CaseScheduler", "prefetch"]

#: The largest ``--elizon-concurrency``.
MAX_CONCURRENCY = 64


class CaseScheduler:
    """Starts work by key, at most ``slots`` at a time; each key's result is a future."""

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self._free = threading.Semaphore(slots)
        self._futures: dict[str, Future[object]] = {}
        self._lock = threading.Lock()
        self._stopped = threading.Event()

    def started(self, key: str) -> bool:
        with self._lock:
            return key in self._futures

    def start(self, key: str, work: Callable[[], object]) -> None:
        """Queue ``work`` for ``key`` (once); it runs when a slot is free."""
        with self._lock:
            if key in self._futures or self._stopped.is_set():
                return
            future: Future[object] = Future()
            self._futures[key] = future
        threading.Thread(target=self._run, args=(future, work), daemon=True,
                         name=f"elizon-case-{key}").start()

    def _run(self, future: Future[object], work: Callable[[], object]) -> None:
        self._free.acquire()
        try:
            if self._stopped.is_set() or not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(work())
            except BaseException as exc:  # delivered to the item that waits for it
                future.set_exception(exc)
        finally:
            self._free.release()

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
        for future in pending:
            future.cancel()


def prefetch(scheduler: CaseScheduler, items: Sequence[object], *, stop: bool) -> None:
    """Make sure ``items`` (the one about to run, then the next ones) are under way; with
    ``stop`` (``-x``, ``--maxfail``) start nothing new. An item takes part when it has a
    ``background_work()`` that returns the work, or None when it must wait for its turn."""
    if stop:
        scheduler.stop()
        return
    for item in items:
        work_of: Callable[[], Callable[[], object] | None] | None = getattr(
            item, "background_work", None)
        key = getattr(item, "nodeid", None)
        if work_of is None or not isinstance(key, str) or scheduler.started(key):
            continue
        work = work_of()
        if work is not None:
            scheduler.start(key, work)
