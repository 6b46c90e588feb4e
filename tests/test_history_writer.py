"""The history store's writer thread (pytest_elizon_eval/history/writer.py): rows are in the
store a moment after they are handed over, many at once in one transaction, the rest at
close; a failing store keeps them for the end, a row no writer foresaw costs only itself."""

from __future__ import annotations

import sqlite3
import threading
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from pytest_elizon_eval.history import writer as writer_module
from pytest_elizon_eval.history.store import CaseRow, HistoryError, Store
from pytest_elizon_eval.history.writer import CaseWriter


def _row(n: int, **data: Any) -> tuple[CaseRow, str]:
    data = {"nodeid": f"s.yaml::c{n}", "case_id": f"c{n}", "outcome": "passed",
            "suite": {"path": "s.yaml", "sha256": "S"}, **data}
    return CaseRow.of(data, "C", "app:answer"), "2026-12-01T00:00:00+00:00"


def _stored(path: Path) -> list[str]:
    with closing(sqlite3.connect(path)) as db:
        return [r[0] for r in db.execute("SELECT case_id FROM cases ORDER BY rowid")]


class _Counting(Store):
    """The real store, counting its write transactions."""

    writes: list[int]
    threads: list[str]

    def record_cases(self, run_id: int, rows: Any) -> None:
        self.writes.append(len(rows))
        self.threads.append(threading.current_thread().name)
        super().record_cases(run_id, rows)


def test_rows_land_while_the_session_runs_and_many_share_one_transaction(
        tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    store = Store.open(str(path))
    run = store.begin_run(started="t", packages=".", rootdir="/r", host="h", pid=1)
    writer = CaseWriter(store, run, interval_s=0.01)
    writer.put(_row(1))
    deadline = time.monotonic() + 30  # safety only: the evidence is the row in the file
    while _stored(path) != ["c1"]:
        assert time.monotonic() < deadline, "the writer thread never wrote the row"
        time.sleep(0.01)
    writer.close()
    store.close()

    counting = _Counting.open(str(path))
    assert isinstance(counting, _Counting)
    counting.writes, counting.threads = [], []
    slow = CaseWriter(counting, run, interval_s=3600)  # nothing written before close
    for n in range(2, 102):
        slow.put(_row(n))
    assert _stored(path) == ["c1"]
    slow.close()
    assert counting.writes == [100]  # one transaction for the hundred
    assert _stored(path) == [f"c{n}" for n in range(1, 102)]
    slow.put(_row(102))  # after close: written at once, in the caller's thread
    assert _stored(path)[-1] == "c102"
    counting.close()


def test_while_cases_keep_finishing_the_sessions_own_thread_writes_each_batch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "h.sqlite"
    store = _Counting.open(str(path))
    assert isinstance(store, _Counting)
    store.writes, store.threads = [], []
    run = store.begin_run(started="t", packages=".", rootdir="/r", host="h", pid=1)
    now = [1000.0]
    monkeypatch.setattr(writer_module.time, "monotonic", lambda: now[0])
    writer = CaseWriter(store, run, interval_s=3600)  # its thread stays asleep
    writer.put(_row(1))
    now[0] += 1800
    writer.put(_row(2))
    assert store.writes == []  # the oldest has waited half an interval
    now[0] += 1800
    writer.put(_row(3))  # now it has waited one: the three go, in this thread
    assert store.writes == [3]
    assert store.threads == [threading.current_thread().name]
    assert _stored(path) == ["c1", "c2", "c3"]
    writer.close()
    store.close()


class _Failing:
    where = "the store"

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.calls = 0

    def record_case(self, run_id: int, row: CaseRow, recorded: str) -> None:
        self.calls += 1
        if row.case_id == "bad":
            raise self.error

    def record_cases(self, run_id: int, rows: Any) -> None:
        self.calls += 1
        raise self.error


def test_a_failing_store_keeps_every_row_for_the_end_and_a_bad_row_costs_only_itself() -> None:
    locked = _Failing(HistoryError("cannot write the history store: database is locked"))
    writer = CaseWriter(locked, 1, interval_s=3600)  # type: ignore[arg-type]
    for n in range(3):
        writer.put(_row(n))
    writer.close()
    writer.put(_row(3))
    assert str(writer.problem) == "cannot write the history store: database is locked"
    assert [row.case_id for row, _ in writer.unwritten] == ["c0", "c1", "c2", "c3"]
    assert locked.calls == 1  # tried once; the rest wait for the end, not each a timeout

    odd = _Failing(TypeError("Object of type bytes is not JSON serializable"))
    writer = CaseWriter(odd, 1, interval_s=3600)  # type: ignore[arg-type]
    writer.put(_row(1))
    bad, recorded = _row(2)
    writer.put((CaseRow.of({**bad.data, "case_id": "bad"}, "C", "e"), recorded))
    writer.close()
    assert writer.problem is None
    assert writer.unwritten == []
    assert writer.lost == 1  # the batch failed; each row alone: only "bad" is lost
    assert writer.lost_problem == ("cannot record s.yaml::c2 in the history store the store: "
                                   "TypeError: Object of type bytes is not JSON serializable")
