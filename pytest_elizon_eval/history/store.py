"""One history store, SQLite or PostgreSQL, behind one small interface.

The schema is the same for both (docs/contract.md#history): ``runs`` (one row per
session, with its provenance and, once finished, the whole results document),
``suites``, ``cases`` (one row per case as it finished, with its report data),
``case_runs`` (the runs of a repeated case) and ``metrics`` (per suite, at the end).
``meta`` holds the schema version: :data:`MIGRATIONS` upgrade an older store in place,
and a store written by a newer plugin is refused rather than misread.

SQLite is opened in WAL mode with a busy timeout, so two sessions writing one file
both land whole (two creating one new file too: turning it to WAL is retried, as SQLite
answers the second at once there instead of waiting); finished cases are written in
small batches, each one transaction, so a session killed mid-run keeps every case it
finished but its last moment's (:mod:`.recorder` says when). PostgreSQL is reached with
psycopg 3 (the optional extra ``pytest-elizon-eval[postgres]``). No pytest import here.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote

from ..text import without_userinfo

__all__ = ["DEFAULT_PATH", "MIGRATIONS", "SCHEMA_VERSION", "CaseRow", "HistoryError", "Store",
           "describe", "is_url", "reason", "unknown_scheme"]

#: Where the store is when nothing names one: under the rootdir.
DEFAULT_PATH = ".elizon/history.sqlite"
#: Seconds a write waits for another session's lock before the store counts as unwritable.
BUSY_TIMEOUT_S = 30.0

# Each step upgrades the schema by one version; ``{ID}`` is the dialect's auto-numbered key.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (  # 1: the tables
        "CREATE TABLE runs (id {ID}, started TEXT NOT NULL, finished TEXT, "
        "status TEXT NOT NULL, packages TEXT NOT NULL, rootdir TEXT NOT NULL, "
        "host TEXT NOT NULL, pid BIGINT NOT NULL, passed INTEGER, provenance TEXT, "
        "document TEXT)",
        "CREATE TABLE suites (run_id BIGINT NOT NULL REFERENCES runs(id), path TEXT NOT NULL, "
        "package TEXT NOT NULL, sha256 TEXT NOT NULL, gate TEXT NOT NULL, verdict TEXT, "
        "PRIMARY KEY (run_id, path))",
        "CREATE TABLE cases (run_id BIGINT NOT NULL REFERENCES runs(id), nodeid TEXT NOT NULL, "
        "suite_path TEXT NOT NULL, suite_sha256 TEXT NOT NULL, case_id TEXT NOT NULL, "
        "case_sha256 TEXT NOT NULL, entry TEXT NOT NULL, outcome TEXT NOT NULL, "
        "latency_ms DOUBLE PRECISION, cost_usd DOUBLE PRECISION, tokens BIGINT, "
        "judge_score DOUBLE PRECISION, recorded TEXT NOT NULL, data TEXT NOT NULL, "
        "PRIMARY KEY (run_id, nodeid))",
        "CREATE TABLE case_runs (run_id BIGINT NOT NULL, nodeid TEXT NOT NULL, "
        "n INTEGER NOT NULL, outcome TEXT NOT NULL, latency_ms DOUBLE PRECISION, "
        "judge_score DOUBLE PRECISION, PRIMARY KEY (run_id, nodeid, n))",
        "CREATE TABLE metrics (run_id BIGINT NOT NULL, suite_path TEXT NOT NULL, "
        "name TEXT NOT NULL, value DOUBLE PRECISION, PRIMARY KEY (run_id, suite_path, name))",
    ),
    (  # 2: resumed cases are told apart; the lookup by packages gets an index (an index of
        # cases by case, made here by earlier versions, is dropped at open: see below)
        "ALTER TABLE cases ADD COLUMN resumed INTEGER NOT NULL DEFAULT 0",
        "CREATE INDEX runs_by_packages ON runs (packages, id)",
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)

_ID = {"sqlite": "INTEGER PRIMARY KEY", "postgresql": "BIGSERIAL PRIMARY KEY"}
_CASE_COLUMNS = ("run_id", "nodeid", "suite_path", "suite_sha256", "case_id", "case_sha256",
                 "entry", "outcome", "latency_ms", "cost_usd", "tokens", "judge_score",
                 "recorded", "data", "resumed")


def _upsert_cases(rows: int) -> str:
    """The case upsert for ``rows`` rows in one statement: a case recorded again (a resumed
    run, a re-run) replaces its row."""
    one = f"({', '.join('?' * len(_CASE_COLUMNS))})"
    return (f"INSERT INTO cases ({', '.join(_CASE_COLUMNS)}) VALUES "
            f"{', '.join([one] * rows)} ON CONFLICT (run_id, nodeid) DO UPDATE SET "
            + ", ".join(f"{c} = excluded.{c}" for c in _CASE_COLUMNS[2:]))


_UPSERT_CASE = _upsert_cases(1)
#: A URL's scheme (two characters at least: ``C://x`` is a Windows path).
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]+)://")
_ANY_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")
#: libpq's URL parameters that carry the login (docs/contract.md#history): in a store URL
#: a value runs to the next parameter, in a message that quotes one to a space or a quote.
_LOGIN_PARAMETER = re.compile(r"([?&](?:ssl)?password=|[?&]user=)([^&#]*)", re.IGNORECASE)
_LOGIN_PARAMETER_IN_TEXT = re.compile(r"([?&](?:ssl)?password=|[?&]user=)([^&#\s'\"]*)",
                                      re.IGNORECASE)
#: Where a login's parts are cut apart, as libpq may cut a login it misreads.
_LOGIN_PARTS = re.compile(r"[/@:?#&=\s]+")
#: Rows per multi-row statement: 15 columns × 60 stays under the 999 parameters an older
#: SQLite allows.
_ROWS_PER_STATEMENT = 60

_T = TypeVar("_T")
#: One encoder for every case's data (``json.dumps`` with options makes one per call).
_DATA = json.JSONEncoder(ensure_ascii=False)


def _chunks(items: Sequence[_T], size: int) -> Iterator[Sequence[_T]]:
    return (items[i:i + size] for i in range(0, len(items), size))


class HistoryError(Exception):
    """The store cannot be used; the message names it and says what to do."""


def is_url(location: str) -> bool:
    return location.startswith(("postgresql://", "postgres://"))


def unknown_scheme(location: str) -> str | None:
    """The scheme of a URL that names no store this plugin has (``mysql``), else None: a
    path is never taken for one (docs/contract.md#history)."""
    found = _SCHEME.match(location)
    return found.group(1) if found is not None and not is_url(location) else None


def describe(location: str) -> str:
    """The store as messages and files name it: a URL's user name and password (its
    userinfo, and libpq's ``password=``, ``sslpassword=`` and ``user=`` parameters) are
    never shown."""
    if "://" not in location:
        return location  # a path: an ``@`` or ``password=`` in it is no login
    spans = [found.span(2) for found in _LOGIN_PARAMETER.finditer(location)]
    userinfo = _userinfo(location)
    if userinfo is not None:
        spans.append(userinfo)
    hidden: list[list[int]] = []
    for start, end in sorted(spans):
        if hidden and start <= hidden[-1][1]:  # overlapping spans are hidden as one
            hidden[-1][1] = max(hidden[-1][1], end)
        else:
            hidden.append([start, end])
    shown = []
    done = 0
    for start, end in hidden:
        shown += [location[done:start], "***"]
        done = end
    return "".join(shown) + location[done:]


def _userinfo(location: str) -> tuple[int, int] | None:
    """Where a store URL's userinfo is: from ``://`` to the URL's last ``@``, whatever is
    between (a ``/``, a space, another ``@``, which libpq reads otherwise and then quotes
    apart in its errors). A ``@`` in a parameter's value hides the host with it, never
    shows a login (docs/contract.md#history)."""
    scheme = _ANY_SCHEME.search(location)
    if scheme is None:
        return None
    at = location.rfind("@", scheme.end())
    return (scheme.end(), at) if at >= 0 else None


def _login(location: str) -> tuple[set[str], set[str]]:
    """The passwords a store URL holds (its userinfo's, libpq's parameters'), as given and
    percent-decoded, and the words of its login (the user names, and the parts libpq may
    cut a misread login into: ``alice:hunter2/x@h`` is host ``alice`` and port
    ``hunter2`` to it): a driver's error may quote any of them where no URL shows."""
    passwords, words = [], []
    if "://" in location:
        userinfo = _userinfo(location)
        if userinfo is not None:
            user, colon, password = location[slice(*userinfo)].partition(":")
            words += [user, *_LOGIN_PARTS.split(user)]
            if colon:
                passwords.append(password)
                words += _LOGIN_PARTS.split(password)
        for found in _LOGIN_PARAMETER.finditer(location):
            if found.group(1).lower().endswith("password="):
                passwords.append(found.group(2))
                words += _LOGIN_PARTS.split(found.group(2))
            else:
                words.append(found.group(2))

    def both(given: list[str]) -> set[str]:
        return {form for word in given for form in (word, unquote(word)) if form}

    return both(passwords), both(words)


def _masked(text: str, location: str) -> str:
    """``text`` (a driver's message) with no part of ``location``'s login left in it."""
    text = _LOGIN_PARAMETER_IN_TEXT.sub(r"\1***", without_userinfo(text))
    passwords, words = _login(location)
    for password in sorted(passwords, key=len, reverse=True):
        text = text.replace(password, "***")  # wherever it shows, word or not
    for word in sorted(words - passwords, key=len, reverse=True):
        # a user name only as a word of its own: a user "e" leaves "connection" alone
        text = re.sub(rf"(?<![\w.\-]){re.escape(word)}(?![\w.\-])", "***", text)
    return text


@dataclass(frozen=True)
class CaseRow:
    """One finished case as the store keeps it."""

    nodeid: str
    suite_path: str
    suite_sha256: str
    case_id: str
    case_sha256: str
    entry: str
    outcome: str
    data: Mapping[str, Any]
    resumed: bool = False
    #: ``data`` as the store writes it (JSON), written when the row is made: a value no
    #: writer foresaw costs its own row there, not the batch it would be written with.
    data_text: str = ""

    @classmethod
    def of(cls, data: Mapping[str, Any], case_sha256: str, entry: str) -> CaseRow:
        suite = data["suite"]
        return cls(data["nodeid"], suite["path"], suite.get("sha256", ""), data["case_id"],
                   case_sha256, entry or data.get("entry", ""), data["outcome"], data,
                   bool(data.get("resumed")), _DATA.encode(data))


def _make_folder(folder: Path) -> None:
    """Make the store's folder. The plugin's own ``.elizon`` folder, made here, gets a
    ``.gitignore`` of ``*`` (as pytest's ``.pytest_cache`` does): a user's history is
    never committed by accident (docs/contract.md#history)."""
    if folder.name == ".elizon" and not folder.exists():
        folder.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):  # a .gitignore is a courtesy, never the run's cost
            (folder / ".gitignore").write_text(
                "# Created by pytest-elizon-eval automatically.\n*\n", encoding="utf-8")
    folder.mkdir(parents=True, exist_ok=True)


class Store:
    """An open store; every method raises :class:`HistoryError` when the store fails."""

    def __init__(self, connection: Any, dialect: str, where: str, location: str = "") -> None:
        self.connection = connection
        self.dialect = dialect
        #: The store as messages name it (:func:`describe`).
        self.where = where
        #: As given, for :func:`reason` to mask its login in a driver's messages; never shown.
        self._location = location

    # -- opening -----------------------------------------------------------------------------

    @classmethod
    def open(cls, location: str, *, upto: int = SCHEMA_VERSION) -> Store:
        """Open (and create, or upgrade to schema ``upto``) the store at ``location``: a
        SQLite file path or a ``postgresql://`` URL."""
        scheme = unknown_scheme(location)
        if scheme is not None:  # never a file named "mysql:" (docs/contract.md#history)
            raise HistoryError(f"the history store {describe(location)} is not a SQLite file "
                               f"path or a postgresql:// URL ({scheme}:// stores are not "
                               "supported)")
        store = cls._connect_postgresql(location) if is_url(location) \
            else cls._connect_sqlite(Path(location))
        try:
            store.migrate(upto)
        except BaseException:
            store.close()
            raise
        return store

    @classmethod
    def _connect_sqlite(cls, path: Path) -> Store:
        where = str(path)
        if path.is_dir():
            raise HistoryError(f"the history store {where} is a directory, not a SQLite file")
        import sqlite3  # deferred: a session that opens no store (--collect-only) needs none

        try:
            _make_folder(path.parent)
            connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None,
                                         check_same_thread=False)
        except (OSError, sqlite3.Error) as exc:
            raise HistoryError(f"cannot open the history store {where}: {reason(exc)}") from None
        store = cls(connection, "sqlite", where)
        try:
            # WAL: readers never block the writer, and two writers wait for each other
            # (the busy timeout) instead of failing; NORMAL syncs at checkpoints only.
            _wal(connection, sqlite3.OperationalError)
            connection.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.DatabaseError as exc:
            store.close()
            raise store._failure(exc) from None
        return store

    @classmethod
    def _connect_postgresql(cls, url: str) -> Store:
        where = describe(url)
        try:
            import psycopg  # deferred: the optional extra pytest-elizon-eval[postgres]
        except ImportError:
            raise HistoryError(f"the history store {where} is PostgreSQL, which needs psycopg "
                               "3: pip install 'pytest-elizon-eval[postgres]'") from None
        try:
            connection = psycopg.connect(url, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise HistoryError(f"cannot connect to the history store {where}: "
                               f"{reason(exc, url)}") from None
        return cls(connection, "postgresql", where, url)

    def close(self) -> None:
        with suppress(Exception):  # closing what failed: nothing more to say
            self.connection.close()

    # -- plumbing ----------------------------------------------------------------------------

    def _failure(self, exc: BaseException) -> HistoryError:
        text = reason(exc, self._location)
        sqlite3 = sys.modules.get("sqlite3")  # loaded when the store opened, if it is SQLite
        if sqlite3 is not None and self.dialect == "sqlite" \
                and isinstance(exc, sqlite3.DatabaseError) and (
                "not a database" in text or "malformed" in text or "corrupt" in text):
            return HistoryError(f"the history store {self.where} is not a usable SQLite "
                                f"database ({text}): move it aside to start a new one, or "
                                "name another with --elizon-history")
        if "locked" in text or "busy" in text:
            text += f" (still locked after {BUSY_TIMEOUT_S:g} s)"
        return HistoryError(f"cannot write the history store {self.where}: {text}")

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.dialect == "postgresql" else sql

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            cursor = self.connection.execute(self._sql(sql), tuple(params))
            return list(cursor.fetchall())
        except Exception as exc:
            raise self._failure(exc) from None

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """One write transaction (SQLite: taken at once, so it waits its turn instead of
        failing mid-way); yields a cursor."""
        try:
            if self.dialect == "sqlite":
                cursor = self.connection.cursor()
                cursor.execute("BEGIN IMMEDIATE")
                try:
                    yield cursor
                except BaseException:
                    cursor.execute("ROLLBACK")
                    raise
                cursor.execute("COMMIT")
            else:
                with self.connection.transaction():
                    yield self.connection.cursor()
        except HistoryError:
            raise
        except Exception as exc:
            raise self._failure(exc) from None

    def _run(self, cursor: Any, sql: str, params: Sequence[Any] = ()) -> Any:
        return cursor.execute(self._sql(sql), tuple(params))

    # -- the schema --------------------------------------------------------------------------

    def version(self) -> int:
        """The store's schema version (0: empty)."""
        if self.dialect == "sqlite":
            found = self.rows("SELECT name FROM sqlite_master WHERE name = 'meta'")
        else:
            found = self.rows("SELECT tablename FROM pg_tables WHERE tablename = 'meta' "
                              "AND schemaname = current_schema()")
        if not found:
            return 0
        return self._version_of(self.rows("SELECT value FROM meta WHERE key = "
                                          "'schema_version'"))

    def _version_of(self, rows: Sequence[tuple[Any, ...]]) -> int:
        """The schema version ``meta`` holds (0: none yet); a value that is no number is a
        damaged store, said as such (docs/contract.md#history)."""
        if not rows:
            return 0
        try:
            return int(rows[0][0])
        except (TypeError, ValueError):
            raise HistoryError(
                f"the history store {self.where} is damaged: its schema version is "
                f"{str(rows[0][0])[:40]!r}, not a number: move it aside to start a new one, "
                "or name another with --elizon-history") from None

    def migrate(self, upto: int = SCHEMA_VERSION) -> None:
        """Bring the schema to version ``upto``, in place; refuse a newer store."""
        if self.version() >= upto:
            self._refuse_newer()
            if upto == SCHEMA_VERSION:
                self._drop_unread_index()
            return
        with self.transaction() as cursor:
            if self.dialect == "postgresql":  # one migrating session at a time
                self._run(cursor, "SELECT pg_advisory_xact_lock(7240024)")
            self._run(cursor, "CREATE TABLE IF NOT EXISTS meta "
                              "(key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            current = self._version_of(self._run(
                cursor, "SELECT value FROM meta WHERE key = 'schema_version'").fetchall())
            for step in MIGRATIONS[current:upto]:
                for statement in step:
                    self._run(cursor, statement.replace("{ID}", _ID[self.dialect]))
            if current < upto:
                self._run(cursor, "DELETE FROM meta WHERE key = 'schema_version'")
                self._run(cursor, "INSERT INTO meta (key, value) VALUES ('schema_version', ?)",
                          (str(upto),))
        self._refuse_newer()
        if upto == SCHEMA_VERSION:
            self._drop_unread_index()

    def _drop_unread_index(self) -> None:
        """Schema 2's index of cases by case goes: no lookup reads it (each asks by run, the
        primary key's order), and keeping it cost every case's write a page of its own
        (the new run's row of each case sits among the earlier runs'), about half the write
        on a large store. Dropped without a new schema version, so that an older plugin
        sharing the store (a team's PostgreSQL) still reads it."""
        if self.dialect == "sqlite":
            found = self.rows("SELECT 1 FROM sqlite_master WHERE type = 'index' "
                              "AND name = 'cases_by_case'")
        else:
            found = self.rows("SELECT 1 FROM pg_indexes WHERE indexname = 'cases_by_case' "
                              "AND schemaname = current_schema()")
        if found:
            # a store busy past the timeout keeps it until a later open
            with suppress(HistoryError), self.transaction() as cursor:
                self._run(cursor, "DROP INDEX IF EXISTS cases_by_case")

    def _refuse_newer(self) -> None:
        found = self.version()
        if found > SCHEMA_VERSION:
            raise HistoryError(
                f"the history store {self.where} has schema version {found}, written by a "
                f"newer pytest-elizon-eval (this one reads up to {SCHEMA_VERSION}): upgrade "
                "pytest-elizon-eval, or name another store with --elizon-history")

    # -- a session's writes ------------------------------------------------------------------

    def begin_run(self, *, started: str, packages: str, rootdir: str, host: str,
                  pid: int) -> int:
        with self.transaction() as cursor:
            params = (started, "running", packages, rootdir, host, pid)
            sql = ("INSERT INTO runs (started, status, packages, rootdir, host, pid) "
                   "VALUES (?, ?, ?, ?, ?, ?)")
            if self.dialect == "postgresql":
                return int(self._run(cursor, sql + " RETURNING id", params).fetchone()[0])
            return int(self._run(cursor, sql, params).lastrowid)

    def take_over(self, run_id: int, *, host: str, pid: int) -> None:
        """A resumed run continues in this process."""
        with self.transaction() as cursor:
            self._run(cursor, "UPDATE runs SET status = 'running', host = ?, pid = ? "
                              "WHERE id = ?", (host, pid, run_id))

    def record_case(self, run_id: int, row: CaseRow, recorded: str) -> None:
        """Record one finished case (again, if it was: the newer result wins)."""
        self.record_cases(run_id, [(row, recorded)])

    def record_cases(self, run_id: int, rows: Sequence[tuple[CaseRow, str]]) -> None:
        """Record finished cases, with when each was recorded, in one transaction (a case
        given twice: the later wins)."""
        latest = {row.nodeid: (row, recorded) for row, recorded in rows}
        values = []
        repeated = []
        for row, recorded in latest.values():
            data = row.data
            usage = data.get("usage") or {}
            values.append((run_id, row.nodeid, row.suite_path, row.suite_sha256, row.case_id,
                           row.case_sha256, row.entry, row.outcome, data.get("latency_ms"),
                           usage.get("cost_usd"), usage.get("tokens"), data.get("judge_score"),
                           recorded, row.data_text or _DATA.encode(data),
                           int(row.resumed)))
            repeated += [(run_id, row.nodeid, n, run.get("outcome", ""), run.get("latency_ms"),
                          run.get("judge_score"))
                         for n, run in enumerate(data.get("runs") or (), start=1)]
        if self.dialect == "sqlite" and len(values) == 1 and not repeated:
            # one statement is its own transaction: a third of the round trips of
            # BEGIN IMMEDIATE, the upsert and COMMIT, for the one write a finished case makes
            try:
                self.connection.execute(_UPSERT_CASE, values[0])
            except Exception as exc:
                raise self._failure(exc) from None
            return
        # Many rows to a statement: a driver lets other threads run during each statement,
        # and a thread taking the GIL back once per row waits behind a busy main thread.
        with self.transaction() as cursor:
            for chunk in _chunks(values, _ROWS_PER_STATEMENT):
                self._run(cursor, _upsert_cases(len(chunk)), [v for row in chunk for v in row])
            nodeids = sorted({r[1] for r in repeated})
            for names in _chunks(nodeids, _ROWS_PER_STATEMENT):
                self._run(cursor, "DELETE FROM case_runs WHERE run_id = ? AND nodeid IN "
                                  f"({', '.join('?' * len(names))})", [run_id, *names])
            for runs in _chunks(repeated, _ROWS_PER_STATEMENT):
                self._run(cursor, "INSERT INTO case_runs (run_id, nodeid, n, outcome, "
                                  "latency_ms, judge_score) VALUES "
                                  + ", ".join(["(?, ?, ?, ?, ?, ?)"] * len(runs)),
                          [v for run in runs for v in run])

    def finish_run(self, run_id: int, *, finished: str, status: str, passed: bool | None,
                   suites: Sequence[Mapping[str, Any]], provenance: Mapping[str, Any] | None,
                   document: Mapping[str, Any] | None) -> None:
        """The session ended: its status (``finished`` or ``interrupted``), its suites and
        metrics, and the whole results document."""
        with self.transaction() as cursor:
            for suite in suites:
                self._run(cursor, "DELETE FROM suites WHERE run_id = ? AND path = ?",
                          (run_id, suite["path"]))
                self._run(cursor, "DELETE FROM metrics WHERE run_id = ? AND suite_path = ?",
                          (run_id, suite["path"]))
                self._run(cursor, "INSERT INTO suites (run_id, path, package, sha256, gate, "
                                  "verdict) VALUES (?, ?, ?, ?, ?, ?)",
                          (run_id, suite["path"], suite["package"], suite["sha256"],
                           suite["gate"], suite["verdict"]))
                for name, value in suite["metrics"].items():
                    self._run(cursor, "INSERT INTO metrics (run_id, suite_path, name, value) "
                                      "VALUES (?, ?, ?, ?)",
                              (run_id, suite["path"], name,
                               None if value is None else float(value)))
            self._run(cursor, "UPDATE runs SET finished = ?, status = ?, passed = ?, "
                              "provenance = ?, document = ? WHERE id = ?",
                      (finished, status, None if passed is None else int(passed),
                       None if provenance is None else json.dumps(provenance),
                       None if document is None else json.dumps(document, ensure_ascii=False),
                       run_id))

    # -- resume ------------------------------------------------------------------------------

    def last_run(self, packages: str) -> tuple[int, str, str, int] | None:
        """The latest run of ``packages``: (id, status, host, pid)."""
        rows = self.rows("SELECT id, status, host, pid FROM runs WHERE packages = ? "
                         "ORDER BY id DESC LIMIT 1", (packages,))
        return (int(rows[0][0]), rows[0][1], rows[0][2], int(rows[0][3])) if rows else None

    def finished_cases(self, run_id: int
                       ) -> tuple[dict[str, tuple[str, str, str, dict[str, Any]]], list[str]]:
        """Every case run ``run_id`` finished: by node id, (suite sha256, case sha256,
        entry, report data); and, sorted, the node ids of the rows whose data is not a JSON
        object (damaged: those cases run again, docs/contract.md#resume)."""
        finished = {}
        damaged = []
        for nodeid, suite_sha, case_sha, entry, data in self.rows(
                "SELECT nodeid, suite_sha256, case_sha256, entry, data FROM cases "
                "WHERE run_id = ?", (run_id,)):
            try:
                report = json.loads(data)
            except (TypeError, ValueError, RecursionError):
                report = None
            if isinstance(report, dict):
                finished[nodeid] = (suite_sha, case_sha, entry, report)
            else:
                damaged.append(nodeid)
        return finished, sorted(damaged)


def _wal(connection: Any, busy: type[Exception]) -> None:
    """Turn the SQLite file to WAL, waiting up to the busy timeout for another session that
    is doing so: on a new file it holds a write lock in rollback-journal mode for a moment,
    and SQLite then answers "database is locked" at once, without its busy handler (it
    could deadlock there). Two sessions creating one store both land whole
    (docs/contract.md#history)."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    pause = 0.001
    while True:
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            return
        except busy as exc:
            if ("locked" not in str(exc) and "busy" not in str(exc)) \
                    or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(2 * pause, 0.05)


def reason(exc: BaseException, location: str = "") -> str:
    """The first line of an error, with no part of the store URL's login in it."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return _masked(text, location)

