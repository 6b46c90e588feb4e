"""Recording a session into the history store, and resuming an unfinished one.

:class:`HistoryRecorder` is registered on the process that owns the session only (never
on an xdist worker), like the reporter: it records the cases in batches as their reports
arrive (within :data:`FLUSH_S`, or twice that while a long case runs) and, at the end,
the run's status, suites, metrics and whole results document. A store that
fails is one warning at the end of the run and never changes the exit status, unless
ini ``elizon_history_strict`` makes it an error (docs/contract.md#history).

``--elizon-resume`` (docs/contract.md#resume): the owning process finds the last session
of the same packages; if it did not finish (and is not running now) this session takes
it over, and every process — each xdist worker too, told the run through
``workerinput`` — reads the cases it finished. A case whose entry point identity and
effective content (the case with its suite's defaults and settings) are unchanged is then
reported from the store (:func:`.resume.stored_result`) instead of being run.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..collect import session as elizon_session
from ..decide import outcomes
from ..reporting.trend import RUNS_SHOWN
from ..trust import provenance
from . import resume
from .store import CaseRow, HistoryError, Store, describe, reason

if TYPE_CHECKING:
    from ..collect.options import Settings
    from ..reporting.aggregate import Aggregate
    from .queries import History

__all__ = ["KEY_ATTR", "WORKER_KEY", "HistoryRecorder", "packages_key",
           "worker_resumable"]

#: The report attribute carrying (case content SHA-256, entry identity) to the controller.
KEY_ATTR = outcomes.HISTORY_KEY_ATTR
#: workerinput key: (store, run id) of the run being resumed.
WORKER_KEY = "elizon_history_resume"
#: How long finished cases may gather before they are written, in one transaction
#: (docs/contract.md#history): a session that is killed keeps every case it finished
#: longer than this before.
FLUSH_S = 0.05
#: At most this many cases are written in one transaction.
BATCH_ROWS = 100


def packages_key(config: pytest.Config) -> str:
    """What "the same packages" means for resume: the paths the session was asked to run,
    relative to the rootdir, sorted (the rootdir itself when none were named)."""
    root = config.rootpath
    found = set()
    for arg in config.args or ["."]:
        path, sep, rest = str(arg).partition("::")
        full = Path(config.invocation_params.dir, path).resolve()
        try:
            shown = full.relative_to(root.resolve()).as_posix() or "."
        except ValueError:
            shown = full.as_posix()
        found.add(shown + (sep + rest if sep else ""))
    return "\n".join(sorted(found))


def worker_resumable(config: pytest.Config) -> None:
    """On an xdist worker: read the finished cases of the run the controller resumes."""
    given = getattr(config, "workerinput", {}).get(WORKER_KEY)
    if not given:
        return
    location, run_id = given
    try:
        store = Store.open(location)
        try:
            # what the controller found damaged (and warned about) runs again here too
            elizon_session.of(config).resumable = resume.usable(
                store.finished_cases(int(run_id))[0])[0]
        finally:
            store.close()
    except Exception:  # the controller said why already; these cases simply run
        pass


class HistoryRecorder:
    """Writes the session into the store; owned by the session's owning process."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.location = settings.history
        self.strict = settings.history_strict
        self.store: Store | None = None
        self.run_id: int | None = None
        #: The store failed before this session's run was in it (it could not be opened,
        #: the run begun or taken over): it is not tried again, so a store locked by
        #: another process costs one wait per session, not one per case.
        self.gave_up = False
        self.started = provenance.now()
        self.problem: str | None = None
        self.failed_writes = 0
        #: Finished cases not yet written, with when each was handed over (monotonic).
        self.pending: list[tuple[CaseRow, str]] = []
        self._since: float | None = None
        #: Once a batch's write failed (a lock held past the busy timeout, a full disk), it
        #: and every case after it are tried once more in one transaction at the end: a
        #: store that stays locked then costs one wait, not one per case.
        self.failed: list[tuple[CaseRow, str]] | None = None
        self._failed_problem: str | None = None
        #: Writes what the session's own thread left waiting while a long case runs.
        self._writer: threading.Thread | None = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        #: Every case's report data, by node id: the results document is made of them.
        self.reported: dict[str, dict[str, Any]] = {}
        self.resumed = 0
        self.notes: list[str] = []
        self.packages = packages_key(config)
        #: The store's last runs, for the HTML report's trend strips (asked once recorded).
        self.history: History | None = None
        self.want_history = settings.html is not None
        if settings.resume:
            self._resume()

    # -- opening and resuming ------------------------------------------------------------

    def _store(self) -> Store | None:
        """The open store, opened on first use (a session without cases makes none)."""
        if self.store is None and not self.gave_up and self.location is not None:
            try:
                self.store = Store.open(self.location)
            except Exception as exc:  # the store's failure, never the run's
                self._give_up(exc)
        return self.store

    def _give_up(self, exc: Exception) -> None:
        """The store failed before this session's run was in it: one warning, no retry."""
        self.gave_up = True
        self.problem = self.problem or (
            str(exc) if isinstance(exc, HistoryError) else
            f"cannot use the history store {describe(str(self.location))}: "
            f"{type(exc).__name__}: {reason(exc, str(self.location))}")

    def _begin(self) -> int | None:
        if self.run_id is None and not self.gave_up:
            store = self._store()
            if store is None:
                return None
            try:
                self.run_id = store.begin_run(started=self.started, packages=self.packages,
                                              rootdir=str(self.config.rootpath),
                                              host=socket.gethostname(), pid=os.getpid())
            except Exception as exc:  # the store's failure, never the run's
                self._give_up(exc)
        return self.run_id

    def _resume(self) -> None:
        store = self._store()
        if store is None:
            return
        try:
            last = store.last_run(self.packages)
            if last is None:
                self.notes.append("--elizon-resume: no earlier session of these packages in "
                                  f"{store.where}; every case runs")
                return
            run_id, status, host, pid = last
            if status == "finished":
                self.notes.append(f"--elizon-resume: the last session of these packages (run "
                                  f"{run_id}) finished; a finished session is never resumed, "
                                  "every case runs")
                return
            if status == "running" and host == socket.gethostname() and _alive(pid):
                self.notes.append(f"--elizon-resume: the last session of these packages (run "
                                  f"{run_id}) is still running (pid {pid}); every case runs")
                return
            finished, damaged = store.finished_cases(run_id)
            finished, unusable = resume.usable(finished)
            store.take_over(run_id, host=socket.gethostname(), pid=os.getpid())
        except Exception as exc:  # the store's failure, never the run's
            self._give_up(exc)
            return
        self.run_id = run_id
        elizon_session.of(self.config).resumable = finished
        self.notes.append(f"--elizon-resume: continuing run {run_id} of {store.where}, "
                          f"{len(finished)} case{'s' if len(finished) != 1 else ''} finished "
                          "before")
        damaged = sorted(damaged + unusable)
        if damaged:  # docs/contract.md#resume: they run again, and the store is said damaged
            shown = ", ".join(damaged[:3]) + (f", … ({len(damaged) - 3} more)"
                                              if len(damaged) > 3 else "")
            self.problem = (f"run {run_id} of the history store {store.where} holds "
                            f"{len(damaged)} damaged case{'s' if len(damaged) != 1 else ''} "
                            f"({shown}): they ran again")

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """pytest-xdist: every worker reads the resumed run's finished cases itself."""
        if elizon_session.of(self.config).resumable is not None and self.location is not None:
            node.workerinput[WORKER_KEY] = (self.location, self.run_id)

    # -- recording ---------------------------------------------------------------------------

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if self.run_id is None:
            self.started = provenance.now()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, outcomes.REPORT_ATTR, None)
        if data is None or self.location is None:
            return
        case_sha, entry = getattr(report, KEY_ATTR, None) or ("", "")
        self.reported[data["nodeid"]] = data
        self.resumed += bool(data.get("resumed"))
        run_id = self._begin()
        if run_id is None or self.store is None:
            self.failed_writes += 1
            return
        try:
            row = CaseRow.of(data, case_sha, entry)
        except Exception as exc:  # a value no writer foresaw costs that row, not the run
            self._lost(data.get("nodeid"), 1, exc)
            return
        with self._lock:
            self.pending.append((row, provenance.now()))
            if self._since is None:
                self._since = time.monotonic()
            if len(self.pending) >= BATCH_ROWS or time.monotonic() - self._since >= FLUSH_S:
                self._write_batch(run_id)
        if self._writer is None:
            self._writer = threading.Thread(target=self._write_stale, args=(run_id,),
                                            name="elizon-history-writer", daemon=True)
            self._writer.start()
        self._wake.set()

    def _write_batch(self, run_id: int) -> None:
        """Write the pending cases in one transaction (the lock held); after a failure,
        keep them for the end."""
        batch, self.pending, self._since = self.pending, [], None
        if self.failed is not None:
            self.failed += batch
            return
        store = self.store
        assert store is not None  # opened before the first row was handed over
        try:
            store.record_cases(run_id, batch)
        except HistoryError as exc:
            self._failed_problem = str(exc)
            self.problem = self.problem or str(exc)
            self.failed = batch
        except Exception as exc:  # a value no writer foresaw costs that batch
            self._lost(batch[0][0].nodeid, len(batch), exc, locked=True)

    def _write_stale(self, run_id: int) -> None:
        """The writer thread: cases the session's thread has not written twice FLUSH_S
        after they were handed over (a long case runs, or the run ended) are written
        here. It waits otherwise: the session's thread writes a fast run's cases itself,
        as a thread writing at the same time slowed it more than the writes cost. It
        ends after a failed write: the rest wait for the end."""
        while True:
            self._wake.wait()
            self._wake.clear()
            stopping = self._stop.wait(FLUSH_S)
            with self._lock:
                since = self._since
                if since is not None and (stopping or time.monotonic() - since >= 2 * FLUSH_S):
                    self._write_batch(run_id)
                if self.failed is not None or (stopping and not self.pending):
                    return
                if self.pending:
                    self._wake.set()  # look again once they are due

    def _lost(self, nodeid: object, count: int, exc: Exception, *, locked: bool = False
              ) -> None:
        where = self.store.where if self.store is not None else describe(str(self.location))
        with contextlib.nullcontext() if locked else self._lock:  # both threads may lose one
            self.problem = self.problem or (f"cannot record {nodeid} in the history store "
                                            f"{where}: {type(exc).__name__}: {exc}")
            self.failed_writes += count

    def _stop_writer(self) -> None:
        """Every row handed over is written, or left in :attr:`pending` after a failure."""
        if self._writer is not None:
            self._stop.set()
            self._wake.set()
            self._writer.join()
            self._writer = None

    def finish(self, session: pytest.Session, aggregate: Aggregate,
               made: dict[str, Any] | None) -> None:
        """The session ended: its status, suites, metrics and results document."""
        store = self.store
        if store is not None and self.run_id is not None:
            self._finish(store, self.run_id, session, aggregate, made)
        if self.problem is not None and self.strict:
            session.exitstatus = pytest.ExitCode.USAGE_ERROR

    def _finish(self, store: Store, run_id: int, session: pytest.Session,
                aggregate: Aggregate, made: dict[str, Any] | None) -> None:
        interrupted = session.exitstatus == pytest.ExitCode.INTERRUPTED \
            or bool(session.shouldstop) or bool(session.shouldfail)
        from ..reporting import results  # deferred: the document is built at the end only

        try:
            self._stop_writer()
            rows = (self.failed or []) + self.pending
            self.pending, self.failed = [], None
            if rows:
                try:
                    store.record_cases(run_id, rows)
                except HistoryError:
                    self.failed_writes += len(rows)
                    raise
                if self.problem == self._failed_problem:  # it passed: every case landed
                    self.problem = None
            document = results.build(aggregate, provenance=made, reported=self.reported)
            store.finish_run(run_id, finished=provenance.now(),
                             status="interrupted" if interrupted else "finished",
                             passed=aggregate.passed, suites=document["suites"],
                             provenance=made, document=document)
            if self.want_history:
                from . import queries  # deferred: only the HTML report asks

                self.history = queries.ask(store, last=RUNS_SHOWN)
                self.history.current = run_id
        except HistoryError as exc:
            self.problem = self.problem or str(exc)
        except Exception as exc:  # a document no writer foresaw costs the store, not the run
            self.problem = self.problem or (f"cannot write the run to the history store "
                                            f"{store.where}: {type(exc).__name__}: {exc}")
        finally:
            self.close()

    def close(self) -> None:
        """Stop the writer and close the store (the session's end; unconfigure again,
        for a session whose end never reached :meth:`finish`)."""
        self._stop_writer()
        if self.store is not None:
            self.store.close()
            self.store = None

    def summary_lines(self) -> list[tuple[str, dict[str, bool]]]:
        """What the terminal says about the history: resume notes, and the one warning."""
        lines: list[tuple[str, dict[str, bool]]] = [(note, {}) for note in self.notes]
        if self.resumed:
            lines.append((f"elizon history: {self.resumed} case"
                          f"{'s' if self.resumed != 1 else ''} resumed from run {self.run_id} "
                          "(not run again)", {"cyan": True}))
        if self.problem is not None:
            lost = (f" ({self.failed_writes} case{'s' if self.failed_writes != 1 else ''} "
                    "not recorded)") if self.failed_writes else ""
            word = "ERROR (ini elizon_history_strict)" if self.strict else "WARNING"
            lines.append((f"elizon history {word}: {self.problem}{lost}",
                          {"red": True} if self.strict else {"yellow": True}))
        return lines


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True
