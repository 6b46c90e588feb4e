"""Every case result of the run, grouped by suite, with the suite metrics (SPEC §6).

Fed on the controller (never on an xdist worker) from the plain data on
each report; the single source of truth every reporter renders.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..outcomes import ERROR, FAILED, PASSED, TIMEOUT, CaseResult, SuiteInfo

__all__ = ["METRICS", "Aggregate", "SuiteSummary"]

#: The metric names, in the order reports show them.
METRICS = ("cases", "pass_rate", "fail_rate", "timeout_rate", "mean_latency_ms",
           "p50_latency_ms", "p95_latency_ms", "max_latency_ms")


def _percentile(sorted_values: list[float], share: float) -> float:
    """Nearest-rank percentile: the smallest value with at least ``share`` of values at or below."""
    rank = max(1, math.ceil(share * len(sorted_values)))
    return sorted_values[rank - 1]


@dataclass
class SuiteSummary:
    """One suite's cases of this run."""

    info: SuiteInfo
    results: list[CaseResult] = field(default_factory=list)

    def count(self, outcome: str) -> int:
        return sum(1 for r in self.results if r.outcome == outcome)

    @property
    def not_passed(self) -> list[CaseResult]:
        return [r for r in self.results if r.outcome != PASSED]

    @property
    def passed(self) -> bool:
        return not self.not_passed

    def metrics(self) -> dict[str, float | int | None]:
        """The named numbers a run is compared on; None where nothing was measured."""
        n = len(self.results)
        latencies = sorted(r.latency_ms for r in self.results if r.latency_ms is not None)
        values: dict[str, float | int | None] = {
            "cases": n,
            "pass_rate": self.count(PASSED) / n if n else None,
            "fail_rate": (self.count(FAILED) + self.count(ERROR)) / n if n else None,
            "timeout_rate": self.count(TIMEOUT) / n if n else None,
            "mean_latency_ms": sum(latencies) / len(latencies) if latencies else None,
            "p50_latency_ms": _percentile(latencies, 0.50) if latencies else None,
            "p95_latency_ms": _percentile(latencies, 0.95) if latencies else None,
            "max_latency_ms": latencies[-1] if latencies else None,
        }
        return values


class Aggregate:
    """The run's case results, by node id (a re-run case keeps its last result)."""

    def __init__(self) -> None:
        self._results: dict[str, CaseResult] = {}

    def add(self, data: Mapping[str, Any]) -> None:
        result = CaseResult.from_data(data)
        self._results[result.nodeid] = result

    def __len__(self) -> int:
        return len(self._results)

    def suites(self) -> list[SuiteSummary]:
        """One summary per suite, ordered by suite path; cases in file order."""
        by_path: dict[str, SuiteSummary] = {}
        for result in sorted(self._results.values(), key=lambda r: (r.suite.path, r.line)):
            summary = by_path.setdefault(result.suite.path, SuiteSummary(result.suite))
            summary.results.append(result)
        return [by_path[p] for p in sorted(by_path)]
