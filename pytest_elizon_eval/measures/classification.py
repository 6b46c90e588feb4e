"""A classification report over (actual, predicted) label pairs, as the seed's
``computeClassificationReport``: accuracy; per-label precision, recall, F1 and support;
macro, micro and weighted averages; the confusion matrix (rows actual, columns predicted).

A value with nothing to divide by is undefined (None), never 0 or NaN: the precision of a
label never predicted, the recall of a label never actual, anything of no cases. The
averages leave undefined values out, as scikit-learn's ``zero_division=np.nan`` does.
Stdlib only; no pytest import here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["NO_LABEL", "ClassificationReport", "LabelScores", "report"]

#: The predicted label of a case whose answer gave none (an error, a timeout, a missing
#: key): a column of the matrix, so the miss counts against the actual label's recall.
NO_LABEL = "(no label)"


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


@dataclass(frozen=True)
class LabelScores:
    label: str
    precision: float | None
    recall: float | None
    f1: float | None
    #: Cases whose actual label this is.
    support: int


@dataclass(frozen=True)
class ClassificationReport:
    #: Every label, actual or predicted, sorted (NO_LABEL last).
    labels: tuple[str, ...]
    #: matrix[i][j]: cases of actual labels[i] predicted as labels[j].
    matrix: tuple[tuple[int, ...], ...]
    per_label: tuple[LabelScores, ...]
    accuracy: float | None
    macro: tuple[float | None, float | None, float | None]
    micro: tuple[float | None, float | None, float | None]
    weighted: tuple[float | None, float | None, float | None]
    cases: int

    def metrics(self) -> dict[str, float | int | None]:
        """The names ``authorBaseline`` and ``--elizon-baseline`` compare on."""
        found: dict[str, float | int | None] = {"accuracy": self.accuracy}
        for kind, (p, r, f) in (("macro", self.macro), ("micro", self.micro),
                                ("weighted", self.weighted)):
            found.update({f"{kind}_precision": p, f"{kind}_recall": r, f"{kind}_f1": f})
        for scores in self.per_label:
            found.update({f"precision.{scores.label}": scores.precision,
                          f"recall.{scores.label}": scores.recall,
                          f"f1.{scores.label}": scores.f1,
                          f"support.{scores.label}": scores.support})
        return found

    def to_data(self) -> dict[str, Any]:
        def triple(values: tuple[float | None, float | None, float | None]
                   ) -> dict[str, float | None]:
            return dict(zip(("precision", "recall", "f1"), values, strict=True))
        return {"cases": self.cases, "accuracy": self.accuracy, "labels": list(self.labels),
                "matrix": [list(row) for row in self.matrix],
                "per_label": [{"label": s.label, "precision": s.precision, "recall": s.recall,
                               "f1": s.f1, "support": s.support} for s in self.per_label],
                "macro": triple(self.macro), "micro": triple(self.micro),
                "weighted": triple(self.weighted)}


def _sorted_labels(pairs: Sequence[tuple[str, str]]) -> tuple[str, ...]:
    found = {label for pair in pairs for label in pair}
    return tuple(sorted(found - {NO_LABEL}) + ([NO_LABEL] if NO_LABEL in found else []))


def report(pairs: Sequence[tuple[str, str]]) -> ClassificationReport:
    """The report of ``pairs`` (actual, predicted); empty pairs give an all-undefined one."""
    labels = _sorted_labels(pairs)
    at = {label: i for i, label in enumerate(labels)}
    matrix = [[0] * len(labels) for _ in labels]
    for actual, guess in pairs:
        matrix[at[actual]][at[guess]] += 1
    per_label = []
    for i, label in enumerate(labels):
        tp = matrix[i][i]
        predicted = sum(row[i] for row in matrix)
        support = sum(matrix[i])
        # F1 as 2TP / (2TP + FP + FN): defined whenever the label was actual or predicted
        f1 = _ratio(2 * tp, predicted + support)
        per_label.append(LabelScores(label, _ratio(tp, predicted), _ratio(tp, support), f1,
                                     support))
    correct = sum(matrix[i][i] for i in range(len(labels)))
    accuracy = _ratio(correct, len(pairs))
    total = sum(s.support for s in per_label)

    def weighted(values: list[tuple[float | None, int]]) -> float | None:
        known = [(v, w) for v, w in values if v is not None]
        weight = sum(w for _, w in known)
        if not known:
            return None
        # every defined value weighs 0 (labels only predicted): their plain mean, as
        # scikit-learn's average does
        return sum(v * w for v, w in known) / weight if weight else _mean([v for v, _ in known])

    return ClassificationReport(
        labels=labels, matrix=tuple(tuple(row) for row in matrix), per_label=tuple(per_label),
        accuracy=accuracy,
        macro=(_mean([s.precision for s in per_label]), _mean([s.recall for s in per_label]),
               _mean([s.f1 for s in per_label])),
        # single-label: every case is one prediction, so micro P = R = F1 = accuracy
        micro=(accuracy, accuracy, accuracy),
        weighted=(weighted([(s.precision, s.support) for s in per_label]),
                  weighted([(s.recall, s.support) for s in per_label]),
                  weighted([(s.f1, s.support) for s in per_label])) if total
        else (None, None, None),
        cases=len(pairs))
