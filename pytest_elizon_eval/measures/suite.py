"""One suite's task measures from its case results (docs/contract.md#task-metrics): the
classification report of its labelled cases, the means of its RAG scores, its agent
metrics. :class:`~.reporting.aggregate.SuiteSummary` adds :meth:`SuiteMeasures.metrics`
to its own, so they reach every report, ``authorBaseline`` and ``--elizon-baseline``
exactly as ``pass_rate`` does. No pytest import here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..decide.results_data import CaseResult
from .agents import agent_metrics, first_tool_hit, tally

if TYPE_CHECKING:  # the classification report is built only for suites with labels
    from .classification import ClassificationReport

__all__ = ["RAG_METRICS", "SuiteMeasures", "direction", "is_count", "measure"]

Number = float | int
#: The RAG suite metrics: the mean of each case score that was measured.
RAG_METRICS = ("faithfulness", "answer_relevancy", "context_precision", "context_recall")
#: Metrics where more is better: a fall since an earlier run (``--elizon-baseline``) is a
#: regression. Names ending ``.<label>`` / ``.<tool>`` are matched by their prefix.
_HIGHER = frozenset({"accuracy", "macro_precision", "macro_recall", "macro_f1",
                     "micro_precision", "micro_recall", "micro_f1", "weighted_precision",
                     "weighted_recall", "weighted_f1", "precision", "recall", "f1",
                     *RAG_METRICS, "tool_success_rate", "first_tool_rate"})
_LOWER = frozenset({"tool_error_rate"})
_COUNTS = frozenset({"support", "tool_calls"})


def _stem(metric: str) -> str:
    return metric.split(".", 1)[0]


def direction(metric: str) -> int:
    """+1 where more is better, -1 where less is, 0 where neither (counts, calls per case)."""
    stem = _stem(metric)
    return 1 if stem in _HIGHER else -1 if stem in _LOWER else 0


def is_count(metric: str) -> bool:
    """Whether the metric counts things (shown whole)."""
    return _stem(metric) in _COUNTS


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


@dataclass(frozen=True)
class SuiteMeasures:
    classification: ClassificationReport | None = None
    #: The RAG means (None: nothing measured) and how many cases had ``expect.rag``.
    rag: dict[str, float | None] | None = None
    rag_cases: int = 0
    agents: dict[str, Number | None] | None = None
    #: For an interval around each metric (:mod:`pytest_elizon_eval.stats`): the
    #: proportions as (successes, trials) — accuracy, per-label precision and recall, the
    #: tool rates — and the per-case scores each RAG mean is made of.
    proportions: dict[str, tuple[int, int]] = field(default_factory=dict)
    samples: dict[str, tuple[float, ...]] = field(default_factory=dict)

    def metrics(self) -> dict[str, Number | None]:
        found: dict[str, Number | None] = {}
        if self.classification is not None:
            found.update(self.classification.metrics())
        if self.rag is not None:
            found.update(self.rag)
        if self.agents is not None:
            found.update(self.agents)
        return found

    @property
    def headline(self) -> tuple[str, ...]:
        """The metrics every baseline table lists (the rest only when the author names
        them): per-label and per-tool ones would swamp it."""
        return tuple(m for m in self.metrics() if "." not in m
                     and not m.startswith(("micro_", "weighted_", "macro_precision",
                                           "macro_recall")))

    def to_data(self) -> dict[str, Any]:
        """The results file's ``measures`` of a suite (docs/contract.md#task-metrics)."""
        data: dict[str, Any] = {}
        if self.classification is not None:
            data["classification"] = self.classification.to_data()
        if self.rag is not None:
            data["rag"] = {"cases": self.rag_cases, **self.rag}
        if self.agents is not None:
            data["agents"] = dict(self.agents)
        return data


def _proportions(found: ClassificationReport | None, results: Sequence[CaseResult]
                 ) -> dict[str, tuple[int, int]]:
    counts: dict[str, tuple[int, int]] = {}
    if found is not None and found.cases:
        counts["accuracy"] = (sum(found.matrix[i][i] for i in range(len(found.labels))),
                              found.cases)
        for i, label in enumerate(found.labels):
            predicted = sum(row[i] for row in found.matrix)
            if predicted:
                counts[f"precision.{label}"] = (found.matrix[i][i], predicted)
            if sum(found.matrix[i]):
                counts[f"recall.{label}"] = (found.matrix[i][i], sum(found.matrix[i]))
    counted = tally(results)  # every call, not only those a case's budget kept
    if counted.calls:
        counts["tool_success_rate"] = (counted.calls - counted.errors, counted.calls)
        for name in sorted(counted.per_tool):  # one order in every process
            counts[f"tool_error_rate.{name}"] = (counted.errors_per_tool[name],
                                                 counted.per_tool[name])
    ordered = [r for r in results if r.first_tool is not None]
    if ordered:
        counts["first_tool_rate"] = (sum(1 for r in ordered if first_tool_hit(r)),
                                     len(ordered))
    return counts


def measure(results: Sequence[CaseResult]) -> SuiteMeasures:
    found = None
    if any(r.label is not None for r in results):
        from .classification import NO_LABEL, report  # deferred: only labelled cases need it

        found = report([(r.label.expected, r.label.predicted if r.label.predicted is not None
                         else NO_LABEL) for r in results if r.label is not None])
    ragged = [r.rag for r in results if r.rag is not None]
    return SuiteMeasures(
        classification=found,
        rag={m: _mean([getattr(r, m) for r in ragged]) for m in RAG_METRICS} if ragged
        else None,
        rag_cases=len(ragged),
        agents=agent_metrics(results),
        proportions=_proportions(found, results),
        samples={m: tuple(v for r in ragged if (v := getattr(r, m)) is not None)
                 for m in RAG_METRICS} if ragged else {})
