"""The history store (docs/contract.md#history) given hostile conditions: a store URL with
a login, a store that is damaged, locked or named by an unknown scheme, and two sessions
creating one new store at the same moment. Each run ends with its reports written."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from pytest_elizon_eval.cli import main
from pytest_elizon_eval.history import resume
from pytest_elizon_eval.history import store as store_module
from pytest_elizon_eval.history.store import SCHEMA_VERSION, HistoryError, Store

from . import postgres_server
from .conftest import ECHO_APP, Packages

try:  # imported before any inner run: pytester drops the modules first imported inside one
    import psycopg
except ImportError:  # the tests that need it skip, saying so
    psycopg = None

#: Inner runs keep the history store on (conftest turns it off elsewhere): the ini tests
#: name it there.
INNER_HISTORY = True

THREE = "cases:\n  - id: a\n    input: a\n  - id: b\n    input: b\n  - id: c\n    input: c\n"

#: Logs every call, so a test can tell a case run from one taken from the store.
LOGGING_APP = """
import os

def answer(text=None):
    with open(os.environ["CALLS_LOG"], "a", encoding="utf-8") as log:
        log.write(text + "\\n")
    return text
"""


def _results(pytester: pytest.Pytester, name: str = "r.json") -> dict[str, Any]:
    data: dict[str, Any] = json.loads((pytester.path / name).read_text(encoding="utf-8"))
    return data


def _outcomes(document: dict[str, Any]) -> dict[str, str]:
    return {c["id"]: c["outcome"] for s in document["suites"] for c in s["cases"]}


# -- item 2: a store URL's login is in no message and no file --------------------------------

def test_a_store_urls_user_and_password_reach_no_message_and_no_file(
        packages: Packages, pytester: pytest.Pytester) -> None:
    if psycopg is None:
        pytest.skip("psycopg 3 (the PostgreSQL store's driver) is not installed")
    port = postgres_server.free_port()  # nothing listens: the connection fails
    packages.package(app=ECHO_APP, suite=THREE)
    url = (f"postgresql://alice:hunter2secret@127.0.0.1:{port}/db"
           "?password=querysecret&connect_timeout=5")
    result = pytester.runpytest(f"--elizon-history={url}", "--elizon-results=r.json")
    assert result.ret == 0
    result.stdout.fnmatch_lines([f"elizon history WARNING: cannot connect to the history store "
                                 f"postgresql://***@127.0.0.1:{port}/db?password=***"
                                 "&connect_timeout=5: *(3 cases not recorded)"])
    written = (pytester.path / "r.json").read_text(encoding="utf-8")
    assert _outcomes(json.loads(written)) == {"a": "passed", "b": "passed", "c": "passed"}
    for shown in (result.stdout.str(), result.stderr.str(), written):
        for secret in ("alice", "hunter2secret", "querysecret"):
            assert secret not in shown


def test_a_driver_error_that_quotes_the_url_or_its_password_is_masked() -> None:
    if psycopg is None:
        pytest.skip("psycopg 3 (the PostgreSQL store's driver) is not installed")
    # libpq quotes the token it cannot read (here: the password) and, for an unreadable
    # host, the whole URL
    for url in ("postgresql://alice:hunter2%zzsecret@127.0.0.1:1/db",
                "postgresql://alice:hunter2secret@[::1/db"):
        with pytest.raises(HistoryError) as raised:
            Store.open(url)
        message = str(raised.value)
        assert "cannot connect to the history store postgresql://***@" in message
        assert "hunter2" not in message, message
        assert "alice" not in message, message


def test_describe_masks_the_login_and_a_password_parameter_but_not_a_path() -> None:
    describe = store_module.describe
    assert describe("postgresql://alice:pw@h:5/db?sslmode=require&password=x%20y") \
        == "postgresql://***@h:5/db?sslmode=require&password=***"
    assert describe("postgres://alice@h/db") == "postgres://***@h/db"
    assert describe("/srv/history/a@b:c.sqlite") == "/srv/history/a@b:c.sqlite"
    unknown = store_module.unknown_scheme
    assert [unknown("mysql://h/db"), unknown("postgres://h/db"), unknown("C://x/h.sqlite"),
            unknown("./a:b//c")] == ["mysql", None, None, None]


# -- item 4: a damaged store is one warning, and the run's reports are written ---------------

def test_a_store_with_a_schema_version_that_is_no_number_is_one_warning_unless_strict(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app=ECHO_APP, suite=THREE)
    store = pytester.path / "h.sqlite"
    Store.open(str(store)).close()
    with closing(sqlite3.connect(store)) as db:
        db.execute("UPDATE meta SET value = 'banana' WHERE key = 'schema_version'")
        db.commit()
    result = pytester.runpytest(f"--elizon-history={store}", "--elizon-results=r.json")
    assert result.ret == 0
    result.stdout.fnmatch_lines([
        f"elizon history WARNING: the history store {store} is damaged: its schema version "
        "is 'banana', not a number: move it aside to start a new one, or name another with "
        "--elizon-history (3 cases not recorded)"])
    assert result.stdout.str().count("elizon history") == 1
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert _outcomes(_results(pytester)) == {"a": "passed", "b": "passed", "c": "passed"}
    pytester.makeini("[pytest]\nelizon_history_strict = true\n")
    strict = pytester.runpytest(f"--elizon-history={store}", "--elizon-results=s.json")
    assert strict.ret == pytest.ExitCode.USAGE_ERROR
    strict.stdout.fnmatch_lines(["elizon history ERROR (ini elizon_history_strict): the "
                                 f"history store {store} is damaged: *"])
    assert _outcomes(_results(pytester, "s.json")) == {"a": "passed", "b": "passed",
                                                        "c": "passed"}


def test_a_resumed_runs_damaged_cases_run_again_with_one_warning(
        packages: Packages, pytester: pytest.Pytester, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    packages.package(app=LOGGING_APP, suite=THREE)
    calls = tmp_path / "calls.log"
    monkeypatch.setenv("CALLS_LOG", str(calls))
    store = pytester.path / "h.sqlite"
    pytester.runpytest(f"--elizon-history={store}").assert_outcomes(passed=3)
    with closing(sqlite3.connect(store)) as db:  # an unfinished run with two damaged rows
        db.execute("UPDATE runs SET status = 'interrupted'")
        db.execute("UPDATE cases SET data = '{not json' WHERE case_id = 'a'")
        db.execute("UPDATE cases SET data = '{}' WHERE case_id = 'b'")
        db.commit()
    calls.unlink()
    result = pytester.runpytest(f"--elizon-history={store}", "--elizon-resume",
                                "--elizon-results=r.json")
    result.assert_outcomes(passed=3)
    assert calls.read_text().split() == ["a", "b"]  # run again; c is taken from the store
    result.stdout.fnmatch_lines([
        f"--elizon-resume: continuing run 1 of {store}, 1 case finished before",
        "elizon history: 1 case resumed from run 1 (not run again)",
        f"elizon history WARNING: run 1 of the history store {store} holds 2 damaged cases "
        "(pkg/eval/suite.yaml::a, pkg/eval/suite.yaml::b): they ran again"])
    assert result.stdout.str().count("elizon history WARNING") == 1
    document = _results(pytester)
    assert _outcomes(document) == {"a": "passed", "b": "passed", "c": "passed"}
    assert [c["id"] for s in document["suites"] for c in s["cases"] if c.get("resumed")] \
        == ["c"]
    with closing(sqlite3.connect(store)) as db:  # the rows are whole again
        rows = db.execute("SELECT case_id, data FROM cases ORDER BY case_id").fetchall()
    assert [(case, json.loads(data)["outcome"]) for case, data in rows] == [
        ("a", "passed"), ("b", "passed"), ("c", "passed")]


def test_a_damaged_row_is_left_out_of_what_a_resumed_run_takes(tmp_path: Path) -> None:
    # the store and the resume check an xdist worker shares with the controller
    store = Store.open(str(tmp_path / "h.sqlite"))
    run = store.begin_run(started="t", packages="p", rootdir="/r", host="h", pid=1)
    good = {"nodeid": "s.yaml::c", "case_id": "c", "line": 3, "outcome": "passed",
            "suite": {"path": "s.yaml", "package": "p", "gate": "must-pass",
                      "advisory": False}}
    for nodeid, data in (("s.yaml::a", "{not json"), ("s.yaml::b", "{}"),
                         ("s.yaml::d", "[1, 2]"), ("s.yaml::c", json.dumps(good))):
        store.connection.execute(
            "INSERT INTO cases (run_id, nodeid, suite_path, suite_sha256, case_id, "
            "case_sha256, entry, outcome, recorded, data) VALUES (?, ?, 's.yaml', 'S', "
            "'x', 'C', 'e', 'passed', 'now', ?)", (run, nodeid, data))
    finished, damaged = store.finished_cases(run)
    assert sorted(finished) == ["s.yaml::b", "s.yaml::c"]
    assert damaged == ["s.yaml::a", "s.yaml::d"]
    kept, unusable = resume.usable(finished)
    assert list(kept) == ["s.yaml::c"]
    assert unusable == ["s.yaml::b"]
    store.close()


# -- item 5: a locked store costs one wait per run -------------------------------------------

def test_a_store_locked_from_the_start_is_tried_once_and_warned_about_once(
        packages: Packages, pytester: pytest.Pytester,
        monkeypatch: pytest.MonkeyPatch) -> None:
    packages.package(app=ECHO_APP, suite=THREE)
    store = pytester.path / "locked.sqlite"
    Store.open(str(store)).close()
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_S", 0.05)
    tries: list[str] = []
    begin_run = Store.begin_run

    def counted(self: Store, **given: Any) -> int:
        tries.append(given["packages"])
        return begin_run(self, **given)

    monkeypatch.setattr(Store, "begin_run", counted)
    with closing(sqlite3.connect(store, isolation_level=None)) as other:
        other.execute("BEGIN EXCLUSIVE")  # another process writing, for the whole run
        result = pytester.runpytest(f"--elizon-history={store}", "--elizon-results=r.json")
        other.execute("ROLLBACK")
    assert result.ret == 0
    assert len(tries) == 1  # one wait for the run, not one per case
    result.stdout.fnmatch_lines([f"elizon history WARNING: cannot write the history store "
                                 f"{store}: database is locked (still locked after 0.05 s) "
                                 "(3 cases not recorded)"])
    assert result.stdout.str().count("elizon history") == 1
    assert _outcomes(_results(pytester)) == {"a": "passed", "b": "passed", "c": "passed"}


# -- item 12: an unknown URL scheme is a usage error -----------------------------------------

def test_an_unknown_url_scheme_is_a_usage_error_naming_where_and_creates_nothing(
        packages: Packages, pytester: pytest.Pytester,
        capsys: pytest.CaptureFixture[str]) -> None:
    packages.package(app=ECHO_APP, suite=THREE)
    result = pytester.runpytest("--elizon-history=mysql://alice:pw-secret@host/db")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "*--elizon-history: mysql://***@host/db is not a SQLite file path or a postgresql:// "
        "URL (mysql:// stores are not supported)*"])
    pytester.makeini("[pytest]\nelizon_history = MySQL://host/db\n")
    from_ini = pytester.runpytest()
    assert from_ini.ret == pytest.ExitCode.USAGE_ERROR
    from_ini.stderr.fnmatch_lines(["*ini option elizon_history in *tox.ini: MySQL://host/db is not "
                                   "a SQLite file path or a postgresql:// URL*"])
    assert sorted(p.name for p in pytester.path.iterdir()) == ["pkg", "tox.ini"]
    assert "pw-secret" not in result.stdout.str() + result.stderr.str()
    assert main(["history", "mysql://alice:pw-secret@host/db"]) == 2
    said = capsys.readouterr().err
    assert "mysql://***@host/db" in said
    assert "pw-secret" not in said


# -- the flaky test's cause: two sessions creating one new store -----------------------------

def _traced(monkeypatch: pytest.MonkeyPatch, seen: Callable[[str], None]) -> None:
    """Every SQLite connection made from now on reports each statement it runs."""
    connect = sqlite3.connect

    def tracing(*args: Any, **named: Any) -> sqlite3.Connection:
        made = connect(*args, **named)
        made.set_trace_callback(seen)
        return made

    monkeypatch.setattr(sqlite3, "connect", tracing)


def test_a_new_store_another_session_is_creating_is_waited_for_not_given_up(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Two sessions opening one new store: the first to turn it to WAL holds its write lock
    # for a moment, in rollback-journal mode, where SQLite answers the second at once
    # ("database is locked") instead of waiting. Held here by hand, for as long as it takes
    # the second to try twice.
    path = tmp_path / "new.sqlite"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    tried = threading.Semaphore(0)

    def seen(statement: str) -> None:
        if statement.startswith("PRAGMA journal_mode"):
            tried.release()

    _traced(monkeypatch, seen)
    opened: list[object] = []

    def open_store() -> None:
        try:
            opened.append(Store.open(str(path)))
        except HistoryError as exc:
            opened.append(exc)

    second = threading.Thread(target=open_store)
    second.start()
    tried.acquire()
    while not tried.acquire(timeout=0.01) and second.is_alive():
        pass  # it tried once; released once it tries again, or once it gave up
    other.execute("ROLLBACK")
    other.close()
    second.join()
    store = opened[0]
    assert isinstance(store, Store), store
    assert store.version() == SCHEMA_VERSION
    assert store.begin_run(started="t", packages="p", rootdir="/r", host="h", pid=1) == 1
    store.close()


# -- issue 38: the default store's folder is git-ignored in the user's repository ------------

def test_the_default_store_folder_is_made_with_a_gitignore_and_a_chosen_folder_is_not(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(app=ECHO_APP, suite=THREE)
    assert pytester.runpytest().parseoutcomes() == {"passed": 3}
    assert (pytester.path / ".elizon" / "history.sqlite").is_file()
    assert (pytester.path / ".elizon" / ".gitignore").read_text().splitlines()[-1] == "*"
    (pytester.path / "mine").mkdir()
    assert pytester.runpytest("--elizon-history=mine/h.sqlite").ret == pytest.ExitCode.OK
    assert sorted(p.name for p in (pytester.path / "mine").iterdir())[0] == "h.sqlite"
    assert not (pytester.path / "mine" / ".gitignore").exists()


def test_an_existing_elizon_folder_is_left_as_its_owner_keeps_it(
        packages: Packages, pytester: pytest.Pytester) -> None:
    """A team that deleted the .gitignore to commit its store keeps it deleted."""
    packages.package(app=ECHO_APP, suite=THREE)
    (pytester.path / ".elizon").mkdir()
    assert pytester.runpytest().parseoutcomes() == {"passed": 3}
    assert not (pytester.path / ".elizon" / ".gitignore").exists()


# -- issue 38: flakiness and trends are keyed on what ran, not only its name ------------------

GOOD_APP = "def answer(text):\n    return text\n"
BROKEN_APP = "def answer(text):\n    return 'oops'\n"


def test_an_application_broken_then_fixed_is_a_boundary_not_a_flaky_case(
        packages: Packages, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    suite = "cases:\n  - id: a\n    input: a\n    expect: {equals: a}\n" \
            "  - id: b\n    input: b\n    expect: {equals: b}\n"
    packages.package(app=GOOD_APP, suite=suite)
    outcomes = []
    for app in (GOOD_APP, BROKEN_APP, GOOD_APP):
        packages.write("pkg/app.py", app)
        outcomes.append(pytester.runpytest().parseoutcomes())
    assert outcomes == [{"passed": 2}, {"failed": 2}, {"passed": 2}]
    monkeypatch.chdir(pytester.path)
    capsys.readouterr()  # what the runs said
    assert main(["history", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["flaky"] == []  # both changed with the code: no case is flaky
    trend = data["suites"][0]["trend"]
    first, broken, fixed = (point["application"] for point in trend)
    assert first == fixed != broken  # the same code again: the same application
    assert first.startswith("app:answer code:")
    assert main(["history"]) == 0
    table = capsys.readouterr().out
    assert table.count("-- the application changed: ") == 2
    assert "no case flaky across the runs shown" in table
    # the HTML report's trend strip marks both boundaries too
    assert pytester.runpytest("--elizon-html=r.html").ret == pytest.ExitCode.OK
    page = (pytester.path / "r.html").read_text(encoding="utf-8")
    assert page.count('class="app-changed"') == 2  # broken, fixed; this run is as the last


def test_the_fingerprint_reads_the_packages_python_and_version_only(tmp_path: Path) -> None:
    from pytest_elizon_eval.load.application import fingerprint

    (tmp_path / "app.py").write_text(GOOD_APP)
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "helper.py").write_text("X = 1\n")
    before = fingerprint(tmp_path, "1.0")
    (tmp_path / "notes.txt").write_text("not code")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "cached.py").write_text("ignored = True\n")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "site.py").write_text("ignored = True\n")
    assert fingerprint(tmp_path, "1.0") == before
    assert fingerprint(tmp_path, "1.1") != before
    (tmp_path / "lib" / "helper.py").write_text("X = 2\n")
    assert fingerprint(tmp_path, "1.0") != before


# -- review item 1: a stored row that is JSON but no case's result is damaged ----------------

#: A row's report data damaged as a hand or a bad disk could leave it, still a JSON object.
DAMAGES: dict[str, dict[str, Any]] = {
    "error-not-a-record": {"outcome": "failed", "error": 5},
    "assertion-not-a-record": {"assertions": [5]},
    "assertions-a-string": {"assertions": "abc"},
    "latency-a-word": {"latency_ms": "fast"},
    "judge-score-a-word": {"judge_score": "high"},
    "tool-call-not-a-record": {"tool_calls": [5]},
    "usage-tokens-a-word": {"usage": {"input_tokens": "x"}},
    "line-a-word": {"line": "three"},
}


def _stored_case(nodeid: str = "s.yaml::c") -> dict[str, Any]:
    return {"nodeid": nodeid, "case_id": "c", "line": 3, "outcome": "passed",
            "suite": {"path": "s.yaml", "package": "p", "gate": "must-pass",
                      "advisory": False}}


@pytest.mark.parametrize("damage", DAMAGES.values(), ids=DAMAGES.keys())
def test_a_row_that_is_json_but_no_cases_result_is_not_taken(damage: dict[str, Any]) -> None:
    whole = _stored_case()
    damaged = {**_stored_case("s.yaml::d"), **damage}
    finished = {"s.yaml::c": ("S", "C", "e", whole), "s.yaml::d": ("S", "C", "e", damaged)}
    kept, unusable = resume.usable(finished)
    assert list(kept) == ["s.yaml::c"]
    assert unusable == ["s.yaml::d"]


@pytest.mark.parametrize("damage", [DAMAGES[name] for name in (
    "error-not-a-record", "assertions-a-string", "latency-a-word", "usage-tokens-a-word")],
    ids=["error", "assertions", "latency", "usage"])
def test_a_resumed_run_with_a_damaged_json_row_runs_its_case_again_and_writes_every_report(
        damage: dict[str, Any], packages: Packages, pytester: pytest.Pytester,
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    packages.package(app=LOGGING_APP, suite=THREE)
    calls = tmp_path / "calls.log"
    monkeypatch.setenv("CALLS_LOG", str(calls))
    store = pytester.path / "h.sqlite"
    pytester.runpytest(f"--elizon-history={store}").assert_outcomes(passed=3)
    with closing(sqlite3.connect(store)) as db:  # an unfinished run, case a's row damaged
        db.execute("UPDATE runs SET status = 'interrupted'")
        (data,) = db.execute("SELECT data FROM cases WHERE case_id = 'a'").fetchone()
        db.execute("UPDATE cases SET data = ? WHERE case_id = 'a'",
                   (json.dumps({**json.loads(data), **damage}),))
        db.commit()
    calls.unlink()
    reports = {"results": "r.json", "html": "r.html", "markdown": "r.md", "junit": "r.xml"}
    result = pytester.runpytest(f"--elizon-history={store}", "--elizon-resume",
                                *(f"--elizon-{kind}={name}" for kind, name in reports.items()))
    assert result.ret == pytest.ExitCode.OK
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert calls.read_text().split() == ["a"]  # run again; b and c taken from the store
    result.stdout.fnmatch_lines([
        f"elizon history WARNING: run 1 of the history store {store} holds 1 damaged case "
        "(pkg/eval/suite.yaml::a): they ran again"])
    assert sorted(p.name for p in pytester.path.iterdir() if p.name.startswith("r.")) \
        == sorted(reports.values())
    document = _results(pytester)
    assert _outcomes(document) == {"a": "passed", "b": "passed", "c": "passed"}
    assert [c["id"] for s in document["suites"] for c in s["cases"] if c.get("resumed")] \
        == ["b", "c"]
    assert 'name="a"' in (pytester.path / "r.xml").read_text(encoding="utf-8")


# -- review item 3: a login holding a "/" or a space is hidden whole -------------------------

def test_describe_hides_a_login_holding_a_slash_a_space_or_an_at_and_an_sslpassword() -> None:
    describe = store_module.describe
    assert describe("postgresql://alice:hunter2/x@127.0.0.1:1/db") \
        == "postgresql://***@127.0.0.1:1/db"
    assert describe("postgresql://alice:hunter 2@h/db") == "postgresql://***@h/db"
    assert describe("postgresql://alice:p@ss@h/db") == "postgresql://***@h/db"
    assert describe("postgresql://h/db?sslmode=require&sslpassword=key pass&x=1") \
        == "postgresql://h/db?sslmode=require&sslpassword=***&x=1"
    # a password parameter holding an "@": the host is hidden with it, the password whole
    assert "sec" not in describe("postgresql://h/db?password=sec@ret")


@pytest.mark.parametrize(("url", "secrets"), [
    ("postgresql://alice:hunter2/x@127.0.0.1:1/db", ("alice", "hunter2")),  # host "alice"
    ("postgresql://alice:hunter 2@127.0.0.1:1/db", ("alice", "hunter")),  # quoted whole
    ("postgresql://alice:pq7@zz9@127.0.0.1:1/db", ("alice", "pq7", "zz9")),  # host "zz9@…"
])
def test_a_driver_error_quoting_a_misread_login_or_its_parts_is_masked(
        url: str, secrets: tuple[str, ...]) -> None:
    if psycopg is None:
        pytest.skip("psycopg 3 (the PostgreSQL store's driver) is not installed")
    with pytest.raises(HistoryError) as raised:
        Store.open(url)
    message = str(raised.value)
    assert message.startswith("cannot connect to the history store postgresql://***@"), message
    for secret in secrets:
        assert secret not in message, message


def test_a_store_url_whose_password_holds_a_slash_reaches_no_message_and_no_file(
        packages: Packages, pytester: pytest.Pytester) -> None:
    if psycopg is None:
        pytest.skip("psycopg 3 (the PostgreSQL store's driver) is not installed")
    packages.package(app=ECHO_APP, suite=THREE)
    url = "postgresql://alice:hunter2/x@127.0.0.1:1/db?sslpassword=keysecret"
    result = pytester.runpytest(f"--elizon-history={url}", "--elizon-results=r.json")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["elizon history WARNING: cannot connect to the history store "
                                 "postgresql://***@127.0.0.1:1/db?sslpassword=***: *"])
    written = (pytester.path / "r.json").read_text(encoding="utf-8")
    assert json.loads(written)["provenance"]["options"]["--elizon-history"] \
        == "postgresql://***@127.0.0.1:1/db?sslpassword=***"
    for shown in (result.stdout.str(), result.stderr.str(), written):
        for secret in ("alice", "hunter2", "keysecret"):
            assert secret not in shown


@pytest.mark.parametrize(("text", "shown"), [
    ("https://bob:hunter2/x@api.example/v1", "https://***@api.example/v1"),
    ("https://bob:hunter 2@api.example/v1", "https://***@api.example/v1"),  # a URL: all of it
    ("https://bob:p@ss@api.example/v1?mail=a@b", "https://***@api.example/v1?mail=a@b"),
    ("cannot reach 'http://bob:pw/x@h/v1': refused", "cannot reach 'http://***@h/v1': refused"),
    ("x https://h/a?next=https://bob:pw/x@k/ y", "x https://h/a?next=https://***@k/ y"),
])
def test_without_userinfo_hides_a_login_holding_a_slash_a_space_or_an_at(
        text: str, shown: str) -> None:
    from pytest_elizon_eval.text import without_userinfo

    assert without_userinfo(text) == shown


# -- review item 10: a .py that is no regular file is not read --------------------------------

def _fingerprint_in_thread(folder: Path) -> list[str | None]:
    """The fingerprint, computed where a read that never ends cannot stop the test run: the
    list is empty if it did not return (the thread is a daemon, left to the process's end)."""
    from pytest_elizon_eval.load.application import fingerprint

    got: list[str | None] = []
    worker = threading.Thread(target=lambda: got.append(fingerprint(folder, "1")), daemon=True)
    worker.start()
    worker.join(timeout=60)  # a bound on a hang only: the result, not the time, is checked
    return got


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this platform")
def test_a_fifo_named_py_is_left_out_of_the_fingerprint(tmp_path: Path) -> None:
    from pytest_elizon_eval.load.application import fingerprint

    (tmp_path / "app.py").write_text(GOOD_APP)
    plain = fingerprint(tmp_path, "1")
    os.mkfifo(tmp_path / "pipe.py")  # a read of it waits for a writer that never comes
    assert _fingerprint_in_thread(tmp_path) == [plain]


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero on this platform")
def test_a_device_named_py_is_left_out_and_a_link_is_read_only_within_the_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_elizon_eval.load import application

    # a read past the limit would stop there: a regression reads 1 MiB, not forever
    monkeypatch.setattr(application, "MAX_BYTES", 1 << 20)
    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "app.py").write_text(GOOD_APP)
    (folder / "shared.txt").write_text("X = 1\n")
    (tmp_path / "outside.py").write_text("X = 2\n")
    plain = application.fingerprint(folder, "1")
    os.symlink("/dev/zero", folder / "zero.py")  # a read of it never ends
    os.symlink(tmp_path / "outside.py", folder / "outside.py")  # not the package's code
    assert application.fingerprint(folder, "1") == plain
    # a link to a regular file within the folder is read as that file
    os.symlink(folder / "shared.txt", folder / "linked.py")
    linked = application.fingerprint(folder, "1")
    (folder / "linked.py").unlink()
    (folder / "linked.py").write_text("X = 1\n")
    assert linked == application.fingerprint(folder, "1") != plain


def test_the_bytes_read_are_counted_against_the_limit_not_the_sizes_seen_before(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_elizon_eval.load import application

    (tmp_path / "app.py").write_text(GOOD_APP)
    growing = tmp_path / "growing.py"
    growing.write_bytes(b"#" * 10)
    monkeypatch.setattr(application, "MAX_BYTES", 1000)
    assert application.fingerprint(tmp_path, "1") is not None
    listed = application._python_files

    def then_grown(folder: Path) -> Any:
        found = listed(folder)
        growing.write_bytes(b"#" * 5000)  # written to between the walk and the read
        return found

    monkeypatch.setattr(application, "_python_files", then_grown)
    read: list[int] = []
    real_read = os.read

    def counted(fd: int, size: int) -> bytes:
        chunk = real_read(fd, size)
        read.append(len(chunk))
        return chunk

    monkeypatch.setattr(os, "read", counted)
    assert application.fingerprint(tmp_path, "1") is None  # past the limit: no fingerprint
    assert 1000 < sum(read) <= 1001  # never read past it
