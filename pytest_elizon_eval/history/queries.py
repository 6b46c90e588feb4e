"""What ``elizon-eval history`` asks the store (docs/cli.md#history): pure reads, no pytest.

Per suite, the trend of its last runs (pass rate with its Wilson interval, cost, p95
latency, judge score); the cases that fail in the latest run and the run since which
they fail; the cases flaky across runs — whose outcome changed back and forth (at least
twice) between runs while the suite file, the entry point (its name and its package's code)
and the case itself stayed the same; and one run against
another (:func:`run_aggregate`, compared as ``elizon-eval diff`` compares files).
"""

from __future__ import annotations

import fnmatch
import itertools
import json
import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..decide.outcomes import PASSED
from ..reporting.aggregate import Aggregate
from ..stats import wilson_interval
from .store import Store

__all__ = ["Flaky", "History", "Point", "StartedFailing", "ask", "run_aggregate", "variant_of"]


@dataclass(frozen=True)
class Point:
    """One suite in one run."""

    run: int
    started: str
    status: str
    cases: int
    passed: int
    pass_rate: float
    interval: tuple[float, float]
    cost_usd: float | None
    p95_latency_ms: float | None
    judge_score: float | None
    #: What ran: the entry points with their code's fingerprint (docs/contract.md#history),
    #: ``; ``-joined when the suite's cases differ. A change from the run before is a
    #: boundary in the trend: the application changed there, not by chance.
    application: str = ""


@dataclass(frozen=True)
class StartedFailing:
    """A case that did not pass in the latest run it ran in, and since when."""

    nodeid: str
    outcome: str
    #: The first run of the failing streak shown.
    since: int
    #: The last run it passed in, within the runs shown (None: none passed).
    last_passed: int | None


@dataclass(frozen=True)
class Flaky:
    """A case whose outcome changed between runs with its suite, entry and content the
    same."""

    nodeid: str
    runs: int
    changes: int
    outcomes: dict[str, int]


@dataclass
class History:
    store: str
    runs_total: int
    runs: list[tuple[int, str, str]] = field(default_factory=list)
    trends: dict[str, list[Point]] = field(default_factory=dict)
    #: By suite path, a suite whose cases ran under package variants: the trend of each
    #: variant's cases, by variant name (None: its runs' cases without a variant), apart
    #: (docs/cli.md#history); ``trends`` pools them.
    variant_trends: dict[str, dict[str | None, list[Point]]] = field(default_factory=dict)
    started_failing: list[StartedFailing] = field(default_factory=list)
    flaky: list[Flaky] = field(default_factory=list)
    #: The run of the session asking, when a session asks (the HTML report's strip).
    current: int | None = None

    def to_data(self) -> dict[str, Any]:
        return {"store": self.store, "runs_total": self.runs_total,
                "runs": [{"run": r, "started": s, "status": st} for r, s, st in self.runs],
                "suites": [{"path": path, "trend": [asdict(p) for p in points],
                            **({"variants": [{"variant": name, "trend": [asdict(p) for p in
                                                                         kept]}
                                             for name, kept in self.variant_trends[path].items()]}
                               if path in self.variant_trends else {})}
                           for path, points in self.trends.items()],
                "started_failing": [asdict(c) for c in self.started_failing],
                "flaky": [asdict(c) for c in self.flaky]}


def _p95(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(1, math.ceil(0.95 * len(ordered))) - 1]  # nearest rank, as reports


def ask(store: Store, *, last: int = 30, suites: Sequence[str] = ()) -> History:
    """The history of the last ``last`` runs, of the suites matching ``suites`` (paths or
    glob patterns; all when empty)."""
    total = int(store.rows("SELECT count(*) FROM runs")[0][0])
    runs = [(int(i), s, st) for i, s, st in reversed(store.rows(
        "SELECT id, started, status FROM runs ORDER BY id DESC LIMIT ?", (last,)))]
    found = History(store.where, total, runs)
    if not runs:
        return found
    started = {r: s for r, s, _ in runs}
    status = {r: st for r, _, st in runs}
    rows = store.rows(
        "SELECT run_id, suite_path, case_id, nodeid, outcome, latency_ms, cost_usd, "
        "judge_score, suite_sha256, entry, case_sha256 FROM cases WHERE run_id >= ? "
        "ORDER BY run_id", (runs[0][0],))

    def wanted(path: str) -> bool:
        return not suites or any(path == s or fnmatch.fnmatchcase(path, s) for s in suites)

    per_suite: dict[tuple[str, int], list[tuple[Any, ...]]] = defaultdict(list)
    per_variant: dict[tuple[str, str, int], list[tuple[Any, ...]]] = defaultdict(list)
    with_variants: set[str] = set()
    per_case: dict[str, list[tuple[int, str, tuple[str, str, str]]]] = defaultdict(list)
    for run_id, path, case_id, nodeid, outcome, latency, cost, score, s_sha, entry, c_sha \
            in rows:
        if run_id not in started or not wanted(path):
            continue
        per_suite[(path, run_id)].append((outcome, latency, cost, score, entry))
        variant = variant_of(str(nodeid), str(case_id))
        if variant is not None:
            with_variants.add(path)
        # "" sorts first: the cases without a variant, of runs before variants were declared
        per_variant[(path, variant or "", run_id)].append((outcome, latency, cost, score,
                                                            entry))
        per_case[nodeid].append((int(run_id), outcome, (s_sha, entry, c_sha)))

    def point(run_id: int, cases: list[tuple[Any, ...]]) -> Point:
        n = len(cases)
        passed = sum(1 for c in cases if c[0] == PASSED)
        costs = [c[2] for c in cases if c[2] is not None]
        scores = [c[3] for c in cases if c[3] is not None]
        return Point(
            int(run_id), started[run_id], status[run_id], n, passed, passed / n,
            wilson_interval(passed, n), sum(costs) if costs else None,
            _p95([c[1] for c in cases if c[1] is not None]),
            sum(scores) / len(scores) if scores else None,
            "; ".join(sorted({str(c[4]) for c in cases})))

    for (path, run_id), cases in sorted(per_suite.items()):
        found.trends.setdefault(path, []).append(point(run_id, cases))
    for (path, variant, run_id), cases in sorted(per_variant.items()):
        if path in with_variants:
            found.variant_trends.setdefault(path, {}).setdefault(variant or None, []).append(
                point(run_id, cases))
    for nodeid, seen in sorted(per_case.items()):
        _started_failing(found, nodeid, seen)
        _flaky(found, nodeid, seen)
    return found


def variant_of(nodeid: str, case_id: str) -> str | None:
    """The package variant a stored case ran under: its node id names it as
    ``suite::case[variant]`` (docs/format.md#variants); None for a case without one."""
    name = nodeid.rpartition("::")[2]
    if name.startswith(f"{case_id}[") and name.endswith("]"):
        return name[len(case_id) + 1:-1]
    return None


def _started_failing(found: History, nodeid: str,
                     seen: list[tuple[int, str, tuple[str, str, str]]]) -> None:
    if seen[-1][1] == PASSED:
        return
    since = seen[-1][0]
    last_passed = None
    for run_id, outcome, _ in reversed(seen):
        if outcome == PASSED:
            last_passed = run_id
            break
        since = run_id
    found.started_failing.append(StartedFailing(nodeid, seen[-1][1], since, last_passed))


def _flaky(found: History, nodeid: str,
           seen: list[tuple[int, str, tuple[str, str, str]]]) -> None:
    # Only changes between consecutive runs of one unchanged (suite, entry, case) count:
    # an outcome that changed with the suite or the entry point is not flakiness; and it
    # must change back and forth (twice or more).
    changes = 0
    counted: Counter[str] = Counter()
    runs = 0
    for (_, before, key_before), (_, after, key_after) in itertools.pairwise(seen):
        if key_before == key_after:
            changes += (before == PASSED) != (after == PASSED)
    if changes >= 2:  # one change is a case that broke (or was fixed), not a flaky one
        key = seen[-1][2]
        for _, outcome, same in seen:
            if same == key:
                counted[outcome] += 1
                runs += 1
        found.flaky.append(Flaky(nodeid, runs, changes, dict(sorted(counted.items()))))


def run_aggregate(store: Store, run_id: int) -> Aggregate:
    """Every case the store holds for run ``run_id``, as the reporters' aggregate."""
    aggregate = Aggregate()
    for (data,) in store.rows("SELECT data FROM cases WHERE run_id = ?", (run_id,)):
        aggregate.add(json.loads(data))
    return aggregate
