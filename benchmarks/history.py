"""Benchmark: the history store's cost and speed, and resume (docs/performance.md).

1. Recording: a run of N cases (default 10,000) with an instant entry point, timed
   with ``--elizon-history=off``, with the default SQLite store, and with PostgreSQL on
   loopback (a server started for it, as the tests start theirs; skipped with the
   reason where none can be). Best of K runs each, in fresh subprocesses; the overhead
   is the store's run over the run without one. The issue's bar: SQLite at most +10 %.
2. Asking: a SQLite store of R runs × C cases (default 1,000 × 100) is filled, then
   ``elizon-eval history STORE`` is timed as a user runs it (a subprocess, start-up
   included), with the default ``--last 30`` and with ``--last R``. The bar: under 1 s.
3. Resume: a run of M cases (default 1,000) is killed at its middle case, then
   ``--elizon-resume`` runs; the entry point's log says how many cases each ran.

Usage: python benchmarks/history.py [--quick] [--repeat K] [--no-postgres]
Numbers are printed, never asserted; the script fails only if a run fails.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_elizon_eval.history.store import Store
from tests import postgres_server

APP = """
import os, signal

def answer(text=None):
    log = os.environ.get("CALLS_LOG")
    if log:
        with open(log, "a") as out:
            out.write(text + "\\n")
    if text == os.environ.get("KILL_AT"):
        os.kill(os.getpid(), signal.SIGKILL)
    return text
"""


def package(folder: Path, cases: int) -> Path:
    root = folder / "pkg"
    (root / "eval").mkdir(parents=True)
    (root / "elizon.yaml").write_text("name: pkg\nentry: app:answer\nevaluation:\n"
                                      "  suite: ./eval/suite.yaml\n  gate: must-pass\n")
    (root / "app.py").write_text(APP)
    with (root / "eval" / "suite.yaml").open("w") as out:
        out.write("cases:\n")
        for n in range(cases):
            out.write(f"  - id: case-{n}\n    input: c{n}\n    expect: {{contains: [c]}}\n")
    return folder


def pytest_run(folder: Path, *args: str, env: dict[str, str] | None = None
               ) -> tuple[float, int]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "pkg", *args], cwd=folder, capture_output=True, text=True,
                          env={**os.environ, **(env or {})})
    return time.perf_counter() - start, done.returncode


def recording(cases: int, repeat: int, postgres: bool) -> None:
    print(f"1. recording a {cases:,}-case run (instant entry point), best of {repeat}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = package(Path(tmp), cases)
        modes: list[tuple[str, list[str]]] = [("no store", ["--elizon-history=off"]),
                                              ("SQLite", [])]
        server = None
        if postgres:
            try:
                server = postgres_server.running()
                url = server.__enter__()
                import psycopg  # the benchmark's own: the extra [postgres]

                with psycopg.connect(f"{url}/postgres", autocommit=True) as db:
                    db.execute("CREATE DATABASE bench")
                modes.append(("PostgreSQL", [f"--elizon-history={url}/bench"]))
            except (postgres_server.Unavailable, ImportError) as exc:
                print(f"   PostgreSQL: skipped ({exc})")
                server = None
        try:
            best: dict[str, float] = {}
            for _ in range(repeat):
                for name, args in modes:
                    took, status = pytest_run(folder, *args)
                    if status != 0:
                        raise SystemExit(f"the {name} run failed (exit {status})")
                    best[name] = min(best.get(name, took), took)
            base = best["no store"]
            for name, took in best.items():
                extra = "" if name == "no store" else f"  ({(took / base - 1) * 100:+.1f} %)"
                print(f"   {name:<11} {took:7.2f} s{extra}")
        finally:
            if server is not None:
                server.__exit__(None, None, None)


def fill(path: Path, runs: int, cases: int) -> None:
    store = Store.open(str(path))
    store.close()
    db = sqlite3.connect(path)
    with db:
        for run in range(1, runs + 1):
            db.execute("INSERT INTO runs (id, started, finished, status, packages, rootdir, "
                       "host, pid, passed) VALUES (?, ?, ?, 'finished', 'pkg', '/r', 'h', 1, 1)",
                       (run, f"2026-01-01T00:00:{run % 60:02d}", "end"))
            rows = []
            for n in range(cases):
                outcome = "failed" if (run * 7 + n) % 53 == 0 else "passed"
                data = {"nodeid": f"pkg/eval/suite.yaml::case-{n}", "case_id": f"case-{n}",
                        "line": n + 2, "outcome": outcome, "latency_ms": float(n % 97),
                        "suite": {"path": "pkg/eval/suite.yaml", "package": "pkg",
                                  "gate": "must-pass", "advisory": False, "sha256": "S"}}
                rows.append((run, data["nodeid"], "pkg/eval/suite.yaml", "S", data["case_id"],
                             "C", "app:answer", outcome, data["latency_ms"], 0.001, 100, None,
                             "now", json.dumps(data)))
            db.executemany("INSERT INTO cases (run_id, nodeid, suite_path, suite_sha256, "
                           "case_id, case_sha256, entry, outcome, latency_ms, cost_usd, "
                           "tokens, judge_score, recorded, data) VALUES "
                           "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    db.close()


def asking(runs: int, cases: int) -> None:
    print(f"2. elizon-eval history over {runs:,} runs × {cases} cases (SQLite)")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "history.sqlite"
        fill(path, runs, cases)
        for args in ([], ["--last", str(runs)]):
            start = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "pytest_elizon_eval", "history",
                                   str(path), *args], capture_output=True, text=True)
            took = time.perf_counter() - start
            if done.returncode:
                raise SystemExit(f"elizon-eval history failed: {done.stderr}")
            print(f"   {' '.join(args) or '--last 30 (default)':<20} {took:6.2f} s "
                  "(a subprocess: start-up included)")


def resume(cases: int) -> None:
    print(f"3. resume: a {cases:,}-case run killed at case {cases // 2}, then --elizon-resume")
    with tempfile.TemporaryDirectory() as tmp:
        folder = package(Path(tmp), cases)
        log = Path(tmp) / "calls.log"
        took, status = pytest_run(folder, env={"CALLS_LOG": str(log),
                                               "KILL_AT": f"c{cases // 2}"})
        first = len(log.read_text().split())
        log.unlink()
        took2, status2 = pytest_run(folder, "--elizon-resume", env={"CALLS_LOG": str(log)})
        second = len(log.read_text().split())
        print(f"   killed run:  {first:,} entry calls, {took:.2f} s (exit {status})")
        print(f"   resumed run: {second:,} entry calls, {took2:.2f} s (exit {status2}); "
              f"{cases - second:,} cases taken from the store")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, one run each")
    parser.add_argument("--repeat", type=int, default=3, metavar="K")
    parser.add_argument("--no-postgres", action="store_true", help="skip PostgreSQL")
    options = parser.parse_args()
    quick = options.quick
    recording(2_000 if quick else 10_000, 1 if quick else options.repeat,
              not options.no_postgres)
    asking(100 if quick else 1_000, 100)
    resume(200 if quick else 1_000)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
