"""The history store (docs/contract.md#history) and resume (docs/contract.md#resume): real
sessions recorded into real SQLite files, two sessions writing one file at once, a session
killed mid-run and resumed (under xdist), and stores that cannot be used."""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from pytest_elizon_eval.cli import main
from pytest_elizon_eval.decide.outcomes import CaseIdentity, SuiteInfo
from pytest_elizon_eval.history import resume
from pytest_elizon_eval.history import store as store_module
from pytest_elizon_eval.history.store import SCHEMA_VERSION, CaseRow, HistoryError, Store
from pytest_elizon_eval.load.content import CANARY, case_text
from pytest_elizon_eval.load.runtime import Case
from pytest_elizon_eval.stats import wilson_interval

from . import postgres_server
from .conftest import ECHO_APP, Packages

try:  # imported before any inner run: pytester drops the modules first imported inside one
    import psycopg
except ImportError:  # the PostgreSQL tests skip, saying so
    psycopg = None

_NO_PSYCOPG = "psycopg 3 (the PostgreSQL store's driver) is not installed: pip install " \
              "'pytest-elizon-eval[test]'"

#: Inner runs keep the default history store (conftest turns it off elsewhere).
INNER_HISTORY = True

#: Logs every call; SIGKILLs its own session at the input named by $KILL_AT (a crash),
#: once the store at $KILL_WHEN_STORED holds that many cases: the background writer
#: lands them while a case runs (or never, and the test says so).
LOGGING_APP = """
import os, signal, sqlite3, time

def answer(text=None):
    with open(os.environ["CALLS_LOG"], "a", encoding="utf-8") as log:
        log.write(text + "\\n")
    if text == os.environ.get("KILL_AT"):
        store, count = os.environ["KILL_WHEN_STORED"].rsplit(":", 1)
        for _ in range(600):
            db = sqlite3.connect(store)
            try:
                if db.execute("SELECT count(*) FROM cases").fetchone()[0] >= int(count):
                    break
            finally:
                db.close()
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGKILL)
    return text
"""
SIX = "cases:\n" + "".join(
    f"  - id: c{n}\n    input: c{n}\n" + ("    expect: {equals: nope}\n" if n == 2 else "")
    for n in range(1, 7))


def _cases(store: Path) -> list[tuple[int, str, str, int]]:
    with closing(sqlite3.connect(store)) as db:
        return db.execute("SELECT run_id, case_id, outcome, resumed FROM cases "
                          "ORDER BY run_id, case_id").fetchall()


def _runs(store: Path) -> list[tuple[int, str]]:
    with closing(sqlite3.connect(store)) as db:
        return db.execute("SELECT id, status FROM runs ORDER BY id").fetchall()


# -- the store itself ----------------------------------------------------------------------

def test_an_older_store_is_upgraded_in_place_and_a_newer_one_refused(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    old = Store.open(str(path), upto=1)
    run = old.begin_run(started="t0", packages=".", rootdir="/r", host="h", pid=1)
    old.close()
    with closing(sqlite3.connect(path)) as db:  # schema 1 had no resumed column
        assert "resumed" not in [c[1] for c in db.execute("PRAGMA table_info(cases)")]
    with closing(sqlite3.connect(path)) as db:  # earlier versions indexed cases by case
        db.execute("CREATE INDEX cases_by_case ON cases (suite_path, case_id, run_id)")
        db.commit()
    store = Store.open(str(path))
    assert store.version() == SCHEMA_VERSION == 2  # an older plugin still reads the store
    assert store.rows("SELECT count(*) FROM sqlite_master WHERE name = 'cases_by_case'") \
        == [(0,)]  # no lookup read it, and it cost every case's write
    assert store.last_run(".") == (run, "running", "h", 1)  # the old rows are kept
    store.connection.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    store.close()
    with pytest.raises(HistoryError, match=r"h\.sqlite has schema version 99, written by a "
                                           r"newer pytest-elizon-eval \(this one reads up to "
                                           r"2\): upgrade"):
        Store.open(str(path))


def test_the_unread_index_of_a_current_store_goes_at_open_unless_the_store_is_busy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "h.sqlite"
    Store.open(str(path)).close()

    def indexed() -> bool:
        with closing(sqlite3.connect(path)) as db:
            return db.execute("SELECT count(*) FROM sqlite_master "
                              "WHERE name = 'cases_by_case'").fetchone() == (1,)

    with closing(sqlite3.connect(path)) as db:  # as an earlier version left it
        db.execute("CREATE INDEX cases_by_case ON cases (suite_path, case_id, run_id)")
        db.commit()
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_S", 0.1)
    with closing(sqlite3.connect(path, isolation_level=None)) as other:
        other.execute("BEGIN IMMEDIATE")  # another session writing: no lock for the drop
        busy = Store.open(str(path))  # still opens: the index waits for a later open
        assert busy.version() == SCHEMA_VERSION
        busy.close()
        other.execute("ROLLBACK")
    assert indexed()
    Store.open(str(path)).close()
    assert not indexed()


def test_a_stored_case_is_resumed_only_when_its_entry_and_effective_content_are_unchanged(
        ) -> None:
    suite = SuiteInfo("s.yaml", "p", "must-pass", False, sha256="S")
    identity = CaseIdentity("s.yaml::a", "a", 3, suite)
    data = {"nodeid": "s.yaml::a", "case_id": "a", "line": 3, "outcome": "failed",
            "suite": {"path": "s.yaml", "package": "p", "gate": "must-pass",
                      "advisory": False}}
    finished = {"s.yaml::a": ("S", "C", "app:answer", data)}
    found = resume.stored_result(finished, identity, "C", "app:answer")
    assert found is not None
    assert (found.resumed, found.outcome) == (True, "failed")
    assert resume.stored_result(finished, identity, "C2", "app:answer") is None
    assert resume.stored_result(finished, identity, "C", "other:entry") is None
    # another case of the suite file changed (its hash too), this one moved down: taken,
    # as this session's suite file says it
    moved = CaseIdentity("s.yaml::a", "a", 9, SuiteInfo("s.yaml", "p", "must-pass", False,
                                                        sha256="S2"))
    found = resume.stored_result(finished, moved, "C", "app:answer")
    assert found is not None
    assert (found.line, found.suite.sha256) == (9, "S2")


def test_a_cases_effective_content_is_its_keys_and_resolved_settings_not_the_runs_canary(
        ) -> None:
    def sha(text: str, **effective: object) -> str:
        return resume.case_sha256(Case.model_validate({"id": "a", "input": text}), effective)

    probe = "Repeat CANARY-0123456789ABCDEF-ELZ back"  # a probe's input: a new canary a run
    assert sha(probe, repeat=1) == sha(probe.replace("0123", "FFFF"), repeat=1)
    assert len({sha(probe, repeat=1), sha(probe, repeat=3), sha("other", repeat=1),
                sha(probe)}) == 4


def test_a_cases_hash_written_in_parts_is_the_canonical_json_of_the_whole() -> None:
    # the case's part is written once, at validation, and kept in the suite cache: the
    # hash must still be that of {"case": ..., "effective": ...} written at once
    effective = {"repeat": 3, "timeout_s": 90.0, "judge": None, "prices": [["m", 1.5]],
                 "checks": ["mod:fn"], "min_pass_rate": 0.9}
    for data in ({"id": "a", "input": "Repeat CANARY-0123456789ABCDEF-ELZ back"},
                 {"id": "b", "input": {"q": "çà ☃", "n": [1, 2.5, None]},
                  "expect": {"contains": ["x"], "notContains": ["y"]}, "tags": ["t"]},
                 {"id": "c", "input": "lone \udc80 surrogate"}):
        case = Case.model_validate(data)
        for given in (effective, None):
            content = case.model_dump(by_alias=True, exclude_none=True, warnings=False)
            whole = json.dumps({"case": content, "effective": given} if given else content,
                               sort_keys=True, ensure_ascii=False, default=repr)
            wanted = hashlib.sha256(CANARY.sub("{canary}", whole).encode(
                "utf-8", "backslashreplace")).hexdigest()
            assert resume.case_sha256(case, given) == wanted
            assert resume.case_sha256(case, given, case_text(case)) == wanted
    cyclic: list[object] = []
    cyclic.append(cyclic)
    assert resume.case_sha256(Case.model_validate({"id": "d", "input": "x"}),
                              {"loop": cyclic}) == ""  # never resumed, never a crash


def test_an_effective_contents_text_is_made_once_yet_each_is_written_as_itself() -> None:
    # the cases of a suite share their effective content: its text is kept by its items
    # and their types, so 1, 1.0 and True (equal as keys) are still written apart
    case = Case.model_validate({"id": "a", "input": "x"})

    def whole(effective: dict[str, object]) -> str:
        text = json.dumps({"case": case.model_dump(by_alias=True, exclude_none=True),
                           "effective": effective}, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()

    seen = set()
    for _ in range(2):  # the second time from what was kept
        for value in (1, 1.0, True, (1, 1.0), (1.0, 1), (("m", 1),), (("m", 1.0),), None):
            effective = {"repeat": 2, "timeout_s": value}
            assert resume.case_sha256(case, effective) == whole(effective), value
            seen.add(resume.case_sha256(case, effective))
    assert len(seen) == 8
    pinned = {"repeat": 2, "snapshot": {"output": "kept"}}  # not hashable: written each time
    assert resume.case_sha256(case, pinned) == whole(pinned)


# -- sessions --------------------------------------------------------------------------------

def test_every_case_is_recorded_under_the_rootdir_and_off_records_nothing(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app=ECHO_APP, suite="cases:\n  - id: a\n    input: x\n"
                                          "  - id: b\n    input: y\n    expect: {equals: z}\n")
    pytester.runpytest("--elizon-history=off").assert_outcomes(passed=1, failed=1)
    refused = pytester.runpytest("--elizon-history=off", "--elizon-resume")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["*--elizon-resume continues a session from the history "
                                  "store, which is off (--elizon-history=off or ini "
                                  "elizon_history)"])
    store = pytester.path / ".elizon" / "history.sqlite"
    assert not store.exists()
    pytester.runpytest().assert_outcomes(passed=1, failed=1)
    assert _cases(store) == [(1, "a", "passed", 0), (1, "b", "failed", 0)]
    with closing(sqlite3.connect(store)) as db:
        status, passed, document = db.execute(
            "SELECT status, passed, document FROM runs").fetchone()
        metrics = dict(db.execute("SELECT name, value FROM metrics WHERE suite_path = "
                                  "'pkg/eval/suite.yaml'").fetchall())
    assert (status, passed) == ("finished", 0)
    assert json.loads(document)["suites"][0]["verdict"] == "fail"
    assert metrics["pass_rate"] == 0.5


def test_a_store_that_cannot_be_used_is_one_warning_unless_strict(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app=ECHO_APP, suite="cases:\n  - id: a\n    input: x\n"
                                          "  - id: b\n    input: y\n")
    (pytester.path / "adir").mkdir()
    result = pytester.runpytest("--elizon-history=adir", "--elizon-junit=j.xml")
    assert result.ret == 0  # the exit status is the cases' alone
    result.stdout.fnmatch_lines(["elizon history WARNING: the history store */adir is a "
                                 "directory, not a SQLite file (2 cases not recorded)"])
    assert result.stdout.str().count("elizon history") == 1
    assert (pytester.path / "j.xml").is_file()  # the other reports are written
    bad = pytester.path / "corrupt.sqlite"
    bad.write_bytes(b"this is no database at all, " * 200)
    pytester.makeini("[pytest]\nelizon_history = corrupt.sqlite\n"
                     "elizon_history_strict = true\n")
    result = pytester.runpytest("--elizon-markdown=m.md")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines([
        "elizon history ERROR (ini elizon_history_strict): the history store */corrupt.sqlite "
        "is not a usable SQLite database (file is not a database): move it aside to start "
        "a new one, or name another with --elizon-history (2 cases not recorded)"])
    assert "2 passed" in result.stdout.str()
    assert (pytester.path / "m.md").is_file()


#: Another writer takes the store at input b and keeps it until input d.
LOCKING_APP = """
import os, pathlib, sqlite3, threading, time

held = []

def answer(text=None):
    if text == "b":  # holds the store until d, and sees the background writer give up on a
        db = sqlite3.connect(os.environ["STORE"], isolation_level=None, check_same_thread=False)
        db.execute("BEGIN EXCLUSIVE")
        held.append(db)
        for _ in range(600):
            if not any(t.name == "elizon-history-writer" for t in threading.enumerate()):
                pathlib.Path(os.environ["STORE"] + ".writer-gave-up").touch()
                break
            time.sleep(0.05)
    if text == "d":
        db = held.pop()
        db.execute("ROLLBACK")
        db.close()
    return text
"""


def test_a_store_locked_past_its_timeout_costs_one_wait_and_the_rest_land_at_the_end(
        packages: Packages, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    packages.package(app=LOCKING_APP, suite="cases:\n" + "".join(
        f"  - id: {n}\n    input: {n}\n" for n in "abcd"))
    store = pytester.path / "locked.sqlite"
    monkeypatch.setenv("STORE", str(store))
    monkeypatch.setattr("pytest_elizon_eval.history.store.BUSY_TIMEOUT_S", 0.05)
    result = pytester.runpytest(f"--elizon-history={store}")
    assert result.ret == 0
    # a's write timed out while b held the lock: the writer stopped, and b, c and d waited
    # for the end instead of each waiting out the lock; with a, they land once it is
    # released — no case lost, so no warning
    assert Path(f"{store}.writer-gave-up").exists()
    assert "elizon history" not in result.stdout.str()
    assert [c[1:3] for c in _cases(store)] == [("a", "passed"), ("b", "passed"),
                                               ("c", "passed"), ("d", "passed")]
    assert _runs(store) == [(1, "finished")]


def test_two_sessions_writing_one_store_at_once_both_land_whole(
        packages: Packages, pytester: pytest.Pytester, tmp_path: Path) -> None:
    # Each session's first case waits until the other session has started its own: the
    # two are provably under way at once, and then both record their cases.
    meeting = """
import os, pathlib, time

def answer(text=None):
    meet = pathlib.Path(os.environ["MEET"])
    (meet / "{me}").touch()
    there = meet / "{other}"
    for _ in range(1200):
        if there.exists():
            return text
        time.sleep(0.05)
    return "never met"
"""
    many = "cases:\n" + "".join(f"  - id: c{n}\n    input: c{n}\n" for n in range(20))
    packages.package("one", app=meeting.format(me="one", other="two"), suite=many)
    packages.package("two", app=meeting.format(me="two", other="one"), suite=many)
    store = tmp_path / "shared.sqlite"
    env = {**os.environ, "MEET": str(tmp_path)}
    procs = [subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               name, f"--elizon-history={store}"], cwd=pytester.path, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for name in ("one", "two")]
    outputs = [p.communicate(timeout=120)[0] for p in procs]
    assert all("20 passed" in out for out in outputs), outputs
    with closing(sqlite3.connect(store)) as db:
        runs = db.execute("SELECT packages, status, (SELECT count(*) FROM cases "
                          "WHERE run_id = runs.id) FROM runs ORDER BY packages").fetchall()
    assert runs == [("one", "finished", 20), ("two", "finished", 20)]


def test_a_killed_session_is_resumed_under_xdist_and_a_finished_one_never(
        packages: Packages, pytester: pytest.Pytester, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    packages.package(app=LOGGING_APP, suite=SIX)
    calls = tmp_path / "calls.log"
    monkeypatch.setenv("CALLS_LOG", str(calls))
    store = pytester.path / ".elizon" / "history.sqlite"
    monkeypatch.setenv("KILL_AT", "c4")
    monkeypatch.setenv("KILL_WHEN_STORED", f"{store}:3")
    killed = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert killed.ret == -9  # the machine "crashed" inside case c4
    assert _runs(store) == [(1, "running")]
    assert [c[1:3] for c in _cases(store)] == [("c1", "passed"), ("c2", "failed"),
                                               ("c3", "passed")]

    monkeypatch.delenv("KILL_AT")
    calls.unlink()
    resumed = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2",
                                            "--elizon-resume", "--elizon-results=r.json",
                                            "--elizon-junit=j.xml", "--elizon-markdown=m.md",
                                            "--elizon-html=h.html")
    resumed.assert_outcomes(passed=5, failed=1)  # c2's failure is kept, not forgotten
    assert sorted(calls.read_text().split()) == ["c4", "c5", "c6"]  # only the unfinished half
    resumed.stdout.fnmatch_lines(["--elizon-resume: continuing run 1 of */history.sqlite, "
                                  "3 cases finished before",
                                  "elizon history: 3 cases resumed from run 1 (not run again)"])
    cases = json.loads((pytester.path / "r.json").read_text())["suites"][0]["cases"]
    assert {c["id"]: c.get("resumed", False) for c in cases} == {
        "c1": True, "c2": True, "c3": True, "c4": False, "c5": False, "c6": False}
    assert (pytester.path / "j.xml").read_text().count("resumed from the history store") == 3
    assert "3 cases resumed from the history store" in (pytester.path / "m.md").read_text()
    assert (pytester.path / "h.html").read_text().count("resumed from the history store") == 3
    assert _runs(store) == [(1, "finished")]  # the one session, now whole
    with closing(sqlite3.connect(store)) as db:  # the workers' case keys reached the controller
        assert db.execute("SELECT count(*) FROM cases WHERE length(case_sha256) != 64 "
                          "OR entry = ''").fetchone() == (0,)
    assert [c[1:] for c in _cases(store)] == [
        ("c1", "passed", 1), ("c2", "failed", 1), ("c3", "passed", 1), ("c4", "passed", 0),
        ("c5", "passed", 0), ("c6", "passed", 0)]

    calls.unlink()
    again = pytester.runpytest("--elizon-resume")
    again.assert_outcomes(passed=5, failed=1)
    again.stdout.fnmatch_lines(["--elizon-resume: the last session of these packages (run 1) "
                                "finished; a finished session is never resumed, every case "
                                "runs"])
    assert sorted(calls.read_text().split()) == [f"c{n}" for n in range(1, 7)]
    assert _runs(store) == [(1, "finished"), (2, "finished")]


# -- asking the history ------------------------------------------------------------------------

#: Per case, its outcome in runs 1-4 and what it was run with (entry, case content).
_STORY = {
    "always": ["passed"] * 4,
    "broke": ["passed", "passed", "failed", "failed"],  # fails since run 3
    "flaky": ["passed", "failed", "passed", "failed"],  # nothing changed, outcome did
    "edited": ["passed", "failed", "failed", "failed"],  # its content changed in run 2
}


def _story_store(path: Path) -> None:
    store = Store.open(str(path))
    for run in range(1, 5):
        run_id = store.begin_run(started=f"2026-01-0{run}T00:00:00+00:00", packages="p",
                                 rootdir="/r", host="h", pid=1)
        for n, (case, outcomes) in enumerate(_STORY.items()):
            data = {"nodeid": f"p/s.yaml::{case}", "case_id": case, "line": n + 1,
                    "outcome": outcomes[run - 1], "latency_ms": 10.0 * (n + 1),
                    "usage": {"cost_usd": 0.25}, "judge_score": 0.5 + 0.1 * n,
                    "suite": {"path": "p/s.yaml", "package": "p", "gate": "must-pass",
                              "advisory": False, "sha256": "S"}}
            content = "v2" if case == "edited" and run > 1 else "v1"
            store.record_case(run_id, CaseRow.of(data, content, "app:answer"), "now")
        store.finish_run(run_id, finished="end", status="finished", passed=False, suites=[],
                         provenance=None, document=None)
    store.close()


def test_history_shows_trends_cases_that_started_failing_and_flaky_ones(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _story_store(tmp_path / ".elizon" / "history.sqlite")
    (tmp_path / "deeper").mkdir()
    monkeypatch.chdir(tmp_path / "deeper")  # the store is found in a parent folder
    assert main(["history", "--last", "3"]) == 0
    table = capsys.readouterr().out
    lo, hi = wilson_interval(2, 4)
    assert f"  4    2026-01-04T00:00:00+00:00  4      0.250 [{wilson_interval(1, 4)[0]:.3f}" \
           in table
    assert "  1    " not in table  # --last 3: runs 2-4
    assert f"  3    2026-01-03T00:00:00+00:00  4      0.500 [{lo:.3f}, {hi:.3f}]" in table
    assert "$1.00  40.0    0.650" in table  # cost summed, p95 nearest rank, judge mean
    assert "  p/s.yaml::broke  failed since run 3 (passed in run 2)" in table
    assert "  p/s.yaml::edited  failed since run 2 (no pass in the runs shown)" in table
    assert "  p/s.yaml::flaky  2 changes in 3 runs: failed ×2, passed ×1" in table
    # neither broke (one change) nor edited (changed with its content) is flaky
    assert table.count(" changes in ") + table.count(" change in ") == 1
    assert main(["history", str(tmp_path / ".elizon" / "history.sqlite"), "--format", "json",
                 "--suite", "p/*.yaml"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [p["pass_rate"] for p in data["suites"][0]["trend"]] == [1.0, 0.5, 0.5, 0.25]
    assert data["suites"][0]["trend"][1]["interval"] == [lo, hi]
    assert [f["nodeid"] for f in data["flaky"]] == ["p/s.yaml::flaky"]
    assert main(["history", "diff", "2", "4"]) == 0
    diff = capsys.readouterr().out
    assert "run 2 -> run 4: 1 regressed, 0 improved, 0 new, 0 removed, 3 unchanged" in diff
    assert "regressed  p/s.yaml::broke  passed  failed" in diff
    assert main(["history", "diff", "-3", "latest"]) == 0  # counted from the latest: 2, 4
    assert capsys.readouterr().out == diff
    assert main(["history", "diff", "2", "7"]) == 2
    assert "elizon-eval history: no run 7 in " in capsys.readouterr().err
    assert main(["history", "diff", "-5", "-1"]) == 2
    assert re.search(r"no run -5 in \S+ \(it holds 4 runs\)\n", capsys.readouterr().err)
    monkeypatch.chdir(tmp_path.parent)
    assert main(["history", "nowhere.sqlite"]) == 2
    assert "no history store at nowhere.sqlite" in capsys.readouterr().err


# -- PostgreSQL: a real server these tests start ---------------------------------------------

@pytest.fixture(scope="module")
def postgres() -> Iterator[str]:
    """A PostgreSQL server these tests start (tests/postgres_server.py): its base URL."""
    if psycopg is None:
        pytest.skip(_NO_PSYCOPG)
    try:
        with postgres_server.running() as url:
            yield url
    except postgres_server.Unavailable as exc:
        pytest.skip(str(exc))


def _database(base: str, name: str) -> str:
    with psycopg.connect(f"{base}/postgres", autocommit=True) as db:
        db.execute(f"CREATE DATABASE {name}")
    return f"{base}/{name}"


def test_postgresql_records_sessions_upgrades_and_answers_history(
        postgres: str, packages: Packages, pytester: pytest.Pytester,
        capsys: pytest.CaptureFixture[str]) -> None:
    url = _database(postgres, "sessions")
    old = Store.open(url, upto=1)  # a store of schema 1, upgraded by the first session
    old.close()
    packages.package(app=ECHO_APP, suite="cases:\n  - id: a\n    input: x\n"
                                          "  - id: b\n    input: y\n    expect: {equals: z}\n")
    pytester.runpytest(f"--elizon-history={url}").assert_outcomes(passed=1, failed=1)
    pytester.runpytest(f"--elizon-history={url}").assert_outcomes(passed=1, failed=1)
    with psycopg.connect(url) as db:
        assert db.execute("SELECT value FROM meta").fetchall() == [(str(SCHEMA_VERSION),)]
        assert db.execute("SELECT id, status, passed FROM runs ORDER BY id").fetchall() == [
            (1, "finished", 0), (2, "finished", 0)]
        assert db.execute("SELECT run_id, case_id, outcome FROM cases ORDER BY run_id, "
                          "case_id").fetchall() == [(1, "a", "passed"), (1, "b", "failed"),
                                                    (2, "a", "passed"), (2, "b", "failed")]
    assert main(["history", url]) == 0
    table = capsys.readouterr().out
    assert "history of postgresql://***@127.0.0.1:" in table  # nor the user, nor the password
    assert "pkg/eval/suite.yaml::b  failed since run 1 (no pass in the runs shown)" in table
    with psycopg.connect(url, autocommit=True) as db:
        db.execute("UPDATE meta SET value = '7'")
    with pytest.raises(HistoryError, match="has schema version 7, written by a newer"):
        Store.open(url)


def test_the_html_report_shows_each_suites_trend_and_marks_cases_flaky_across_runs(
        packages: Packages, pytester: pytest.Pytester) -> None:
    # a case that passes on odd runs and fails on even ones, nothing else changing
    flipping = """
import pathlib

def answer(text=None):
    if text == "steady":
        return text
    count = pathlib.Path("count.txt")
    n = int(count.read_text()) + 1 if count.exists() else 1
    count.write_text(str(n))
    return "yes" if n % 2 else "no"
"""
    packages.package(app=flipping, suite="cases:\n  - id: steady\n    input: steady\n"
                                         "  - id: flips\n    input: x\n"
                                         "    expect: {equals: 'yes'}\n")
    for _ in range(3):  # pass, fail, pass: the case's outcome changed twice
        pytester.runpytest()
    page = pytester.runpytest("--elizon-html=h.html")  # run 4: fails
    page.assert_outcomes(passed=1, failed=1)
    html = (pytester.path / "h.html").read_text()
    assert html.count('class="chart-trend"') == 1
    rates = re.findall(r'data-run="(\d)" data-pass-rate="([0-9.]+)"', html)
    assert rates == [("1", "1.000000"), ("2", "0.500000"), ("3", "1.000000"),
                     ("4", "0.500000")]
    assert "run 4 (this run): pass rate 0.500 [" in html
    flaky = re.findall(r'data-id="([a-z]+)"[^>]*><summary class="row"><span>[a-z]+ '
                       r'<span class="b flaky"', html)
    assert flaky == ["flips"]


def test_a_session_stopped_by_x_is_resumed_in_process_re_running_only_what_changed(
        packages: Packages, pytester: pytest.Pytester, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    manifest = ("name: pkg\nentry: app:answer\nevaluation:\n  suites:\n"
                "    - suite: ./another.yaml\n"
                "    - suite: ./base.yaml\n{b_defaults}    - suite: ./six.yaml\n")
    packages.write("pkg/elizon.yaml", manifest.format(b_defaults=""))
    packages.write("pkg/app.py", LOGGING_APP)
    packages.write("pkg/base.yaml", "cases:\n  - id: b1\n    input: b1\n")
    # s1 has no snapshot yet: it fails as new, and an update run must run it to write it
    packages.write("pkg/another.yaml", "cases:\n  - id: s1\n    input: s1\n"
                                       "    expect: {snapshot: true}\n")
    suite = packages.write("pkg/six.yaml", SIX)
    calls = tmp_path / "calls.log"
    monkeypatch.setenv("CALLS_LOG", str(calls))
    pytester.runpytest("--maxfail=2").assert_outcomes(passed=2, failed=2)  # s1, c2: stop
    store = pytester.path / ".elizon" / "history.sqlite"
    assert _runs(store) == [(1, "interrupted")]
    calls.unlink()
    # Edits between the two sessions: a case added above the others (every line moves), c1's
    # own content, and base.yaml's suite default (repeat, from the manifest: its file is
    # untouched). c2 is unchanged, as its effective content: it alone is taken.
    suite.write_text(SIX.replace("cases:\n", "cases:\n  - id: c0\n    input: c0\n")
                     .replace("input: c1\n", "input: c1\n    expect: {contains: [c]}\n"))
    packages.write("pkg/elizon.yaml", manifest.format(b_defaults="      repeat: 2\n"))
    resumed = pytester.runpytest("--elizon-resume", "--elizon-markdown=m.md",
                                 "--elizon-results=r.json", "--elizon-snapshot-update")
    resumed.assert_outcomes(passed=8, failed=1)
    assert calls.read_text().split() == ["s1", "b1", "b1", "c0", "c1", "c3", "c4", "c5",
                                         "c6"]
    assert "s1:" in (pytester.path / "pkg/__snapshots__/another.snap.yaml").read_text()
    assert "1 case resumed from the history store" in (pytester.path / "m.md").read_text()
    cases = {c["id"]: c for s in json.loads((pytester.path / "r.json").read_text())["suites"]
             for c in s["cases"]}
    assert [i for i, c in cases.items() if c.get("resumed")] == ["c2"]
    assert (cases["c2"]["outcome"], cases["c2"]["line"]) == ("failed", 7)  # where it is now
    assert _runs(store) == [(1, "finished")]
