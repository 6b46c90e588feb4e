"""Writing finished cases into the history store a moment after their reports.

A case's row is handed to :class:`CaseWriter` as its report arrives, and the rows are
written together, one transaction for all that arrived within :data:`INTERVAL_S`
(docs/contract.md#history): one commit per case made the store most of what a fast
case costs (a WAL commit writes every page it touched again, takes its locks and now
and then checkpoints). While cases keep finishing, the session's own thread writes
each batch as a row is handed over once the oldest waiting row is an interval old (no
second thread competing for the GIL); while it is busy elsewhere — a model taking its
time — a daemon thread writes rows that have waited that long. So a session killed
mid-run keeps every case reported more than a moment before. :meth:`CaseWriter.close`
writes the rest. Once a write fails (a lock held past the busy timeout, a full disk)
later rows are only kept, for the recorder's one more try at the end. No pytest import
here.
"""

from __future__ import annotations

import threading
import time

from .store import CaseRow, HistoryError, Store

__all__ = ["INTERVAL_S", "CaseWriter", "Row"]

#: How long a finished case may wait for its write.
INTERVAL_S = 0.05

#: A finished case and when it was recorded.
Row = tuple[CaseRow, str]


class CaseWriter:
    """Writes the rows of one run, in the order they were handed over."""

    def __init__(self, store: Store, run_id: int, interval_s: float = INTERVAL_S) -> None:
        self.store = store
        self.run_id = run_id
        self.interval_s = interval_s
        #: Rows not written because a write failed, and why (the first failure).
        self.unwritten: list[Row] = []
        self.problem: HistoryError | None = None
        #: Rows lost to a value no writer foresaw, and the first such error's text.
        self.lost = 0
        self.lost_problem: str | None = None
        self._waiting: list[Row] = []
        self._oldest = 0.0  # when the first of _waiting was handed over
        self._taking = threading.Lock()  # guards _waiting and _oldest
        self._writing = threading.Lock()  # one write at a time: the thread's or close's
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True,
                                        name="elizon-history")
        self._thread.start()

    def put(self, row: Row) -> None:
        """Write ``row`` within an interval (at once, once the writer is closed)."""
        now = time.monotonic()
        with self._taking:
            if not self._waiting:
                self._oldest = now
            self._waiting.append(row)
            due = now - self._oldest >= self.interval_s
        if due or self._stopped.is_set():
            self._write_waiting()

    def close(self) -> None:
        """Stop the thread and write what is left, in this thread."""
        self._stopped.set()
        if self._thread is not threading.current_thread():
            self._thread.join()
        self._write_waiting()

    def _serve(self) -> None:
        while not self._stopped.wait(self.interval_s):
            with self._taking:
                due = bool(self._waiting) \
                    and time.monotonic() - self._oldest >= self.interval_s
            if due:  # the session's thread is busy elsewhere: write for it
                self._write_waiting(blocking=False)

    def _write_waiting(self, *, blocking: bool = True) -> None:
        if not self._writing.acquire(blocking):
            return  # the session's thread is writing them
        try:
            with self._taking:
                rows, self._waiting = self._waiting, []
            if rows:
                self._write(rows)
        finally:
            self._writing.release()

    def _write(self, rows: list[Row]) -> None:
        if self.problem is not None:
            self.unwritten += rows
            return
        try:
            if len(rows) == 1:
                self.store.record_case(self.run_id, *rows[0])
            else:
                self.store.record_cases(self.run_id, rows)
        except HistoryError as exc:
            self.problem = exc
            self.unwritten += rows
        except Exception as exc:  # a value no writer foresaw costs its own row, not the run
            if len(rows) > 1:  # which one: each on its own
                for row in rows:
                    self._write([row])
                return
            self.lost += 1
            if self.lost_problem is None:
                self.lost_problem = (f"cannot record {rows[0][0].nodeid} in the history store "
                                     f"{self.store.where}: {type(exc).__name__}: {exc}")
