"""How far a judge agrees with people, and people with each other: stdlib statistics.

Owns judge alignment (:func:`alignment`: agreement rate, Cohen's κ with an interval,
mean absolute error, Pearson r, the confusion matrix at the pass threshold, the
Landis–Koch label), a judge's self-consistency over k samples (:func:`consistency`),
multi-annotator summaries with Fleiss' κ (:func:`summarize_annotations`), and reading
labels and annotations files (JSONL or CSV) with an error at the line of each bad row
(docs/format.md#judge-alignment, docs/cli.md#annotations). Every figure is checked in
the tests against scikit-learn, statsmodels and scipy. No pytest import here.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from .load.datafiles import CsvProblem, csv_records
from .stats import normal_quantile

__all__ = [
    "Alignment",
    "AnnotationSummary",
    "Consistency",
    "LabelRow",
    "LabelsProblem",
    "alignment",
    "cohen_kappa",
    "consistency",
    "fleiss_kappa",
    "landis_koch",
    "pearson",
    "read_annotations",
    "read_labels",
    "summarize_annotations",
]

#: Most rows a labels or annotations file may hold (each one is a judge call or more).
MAX_ROWS = 100_000
#: Largest labels or annotations file read, in bytes.
MAX_BYTES = 16 * 1024 * 1024


class LabelsProblem(ValueError):
    """A labels or annotations file that cannot be used: one ``file:line: what`` per line."""

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = list(lines)
        super().__init__("\n".join(self.lines))


# -- statistics -------------------------------------------------------------------------------


def landis_koch(kappa: float | None) -> str | None:
    """Landis & Koch's (1977) words for a κ: poor, slight, fair, moderate, substantial,
    almost perfect."""
    if kappa is None:
        return None
    kappa = round(kappa, 9)  # 0.6 computed as 0.6000000000000001 is still "moderate"
    for bound, label in ((0.0, "poor"), (0.2, "slight"), (0.4, "fair"), (0.6, "moderate"),
                         (0.8, "substantial")):
        if kappa < bound or (bound > 0 and kappa <= bound):
            return label
    return "almost perfect"


def cohen_kappa(first: Sequence[bool], second: Sequence[bool], confidence: float = 0.95
                ) -> tuple[float | None, tuple[float, float] | None]:
    """Cohen's κ of two raters' pass/fail, and its interval ``κ ± z·SE`` with the
    large-sample standard error of Fleiss, Cohen and Everitt (1969), as statsmodels
    ``cohens_kappa`` gives it, clipped to [−1, 1]. (Cohen's own 1960 approximation,
    √(pₒ(1−pₒ) / (n(1−pₑ)²)), is not κ's variance: it can be several times too wide.)
    (None, None) when κ is undefined: both raters gave one and the same class throughout."""
    n = len(first)
    if n == 0 or n != len(second):
        raise ValueError("Cohen's κ needs two equally long, non-empty lists")
    # the 2×2 table as shares: cell[i][j] = first said i, second said j (True, False);
    # by value, so 0/1 and numpy bools count as the pass/fail they are (docs/contract.md)
    pairs = [(bool(a), bool(b)) for a, b in zip(first, second, strict=True)]
    cell = [[sum(1 for a, b in pairs if a == x and b == y) / n
             for y in (True, False)] for x in (True, False)]
    row = [cell[0][0] + cell[0][1], cell[1][0] + cell[1][1]]
    col = [cell[0][0] + cell[1][0], cell[0][1] + cell[1][1]]
    observed = cell[0][0] + cell[1][1]
    expected = row[0] * col[0] + row[1] * col[1]
    if expected >= 1.0:
        return None, None
    kappa = (observed - expected) / (1 - expected)
    # Fleiss, Cohen & Everitt (1969): var = (A + B − C) / (n(1 − pₑ)²)
    agreeing = math.fsum(cell[i][i] * (1 - (row[i] + col[i]) * (1 - kappa)) ** 2
                         for i in range(2))
    crossed = (1 - kappa) ** 2 * math.fsum(cell[i][j] * (col[i] + row[j]) ** 2
                                           for i in range(2) for j in range(2) if i != j)
    chance = (kappa - expected * (1 - kappa)) ** 2
    se = math.sqrt(max(0.0, agreeing + crossed - chance) / (n * (1 - expected) ** 2))
    z = normal_quantile(confidence)
    return kappa, (max(-1.0, kappa - z * se), min(1.0, kappa + z * se))


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Pearson's r; None when either side does not vary (r is undefined then)."""
    n = len(xs)
    if n < 2 or n != len(ys):
        return None
    mx, my = math.fsum(xs) / n, math.fsum(ys) / n
    sxy = math.fsum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    sxx = math.fsum((x - mx) ** 2 for x in xs)
    syy = math.fsum((y - my) ** 2 for y in ys)
    if sxx == 0 or syy == 0:
        return None
    return max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))


@dataclass(frozen=True)
class Alignment:
    """How a judge's scores compare with human labels (the seed's ``JudgeAlignmentResult``)."""

    n: int
    threshold: float
    agreement_rate: float
    cohen_kappa: float | None
    kappa_interval: tuple[float, float] | None
    mean_absolute_error: float
    pearson: float | None
    true_pos: int
    true_neg: int
    false_pos: int
    false_neg: int
    strength: str | None
    #: Why κ is missing, when it is.
    note: str | None = None

    def to_data(self) -> dict[str, Any]:
        data = asdict(self)
        data["kappa_interval"] = list(self.kappa_interval) if self.kappa_interval else None
        return data

    def summary(self) -> str:
        """One line: κ, its interval and label, agreement, MAE, r, the confusion matrix."""
        kappa = ("κ undefined" if self.cohen_kappa is None else
                 f"κ {self.cohen_kappa:.2f}" + (
                     f" [{self.kappa_interval[0]:.2f}, {self.kappa_interval[1]:.2f}]"
                     if self.kappa_interval else "") + f" ({self.strength})")
        r = "r n/a" if self.pearson is None else f"r {self.pearson:.2f}"
        return (f"{kappa}, agreement {self.agreement_rate:.0%}, MAE "
                f"{self.mean_absolute_error:.2f}, {r}, TP {self.true_pos} TN {self.true_neg} "
                f"FP {self.false_pos} FN {self.false_neg} (n={self.n}, pass ≥ "
                f"{self.threshold:g})")


def alignment(pairs: Sequence[tuple[float, float]], threshold: float = 0.5,
              confidence: float = 0.95) -> Alignment:
    """Alignment of ``(human, judge)`` score pairs; a score at or above ``threshold`` passes."""
    if not pairs:
        raise ValueError("alignment needs at least one labelled example")
    human = [h >= threshold for h, _ in pairs]
    judge = [j >= threshold for _, j in pairs]
    n = len(pairs)
    kappa, interval = cohen_kappa(human, judge, confidence)
    counts = Counter(zip(human, judge, strict=True))
    return Alignment(
        n=n, threshold=threshold,
        agreement_rate=sum(h == j for h, j in zip(human, judge, strict=True)) / n,
        cohen_kappa=kappa, kappa_interval=interval,
        mean_absolute_error=math.fsum(abs(h - j) for h, j in pairs) / n,
        pearson=pearson([h for h, _ in pairs], [j for _, j in pairs]),
        true_pos=counts[True, True], true_neg=counts[False, False],
        false_pos=counts[False, True], false_neg=counts[True, False],
        strength=landis_koch(kappa),
        note=None if kappa is not None else
        "κ is undefined: the human labels and the judge each gave one and the same class")


@dataclass(frozen=True)
class Consistency:
    """A judge's k grades of one answer (the seed's ``JudgeConsistencyResult``)."""

    scores: tuple[float, ...]
    mean: float
    std_dev: float
    min: float
    max: float
    range: float
    tolerance: float
    consistent: bool

    def to_data(self) -> dict[str, Any]:
        data = asdict(self)
        data["scores"] = list(self.scores)
        return data


def consistency(scores: Sequence[float], tolerance: float = 0.1) -> Consistency:
    """Mean, population standard deviation, min, max and range of ``scores``; consistent
    when the range is at most ``tolerance``."""
    if not scores:
        raise ValueError("consistency needs at least one score")
    mean = math.fsum(scores) / len(scores)
    std = math.sqrt(math.fsum((s - mean) ** 2 for s in scores) / len(scores))
    low, high = min(scores), max(scores)
    # a range within rounding of the tolerance counts as within it (0.3 − 0.2 is 0.1000…1)
    return Consistency(tuple(scores), mean, std, low, high, high - low, tolerance,
                       high - low <= tolerance + 1e-9)


def fleiss_kappa(table: Sequence[Sequence[int]]) -> float | None:
    """Fleiss' κ of a subjects × categories table of rater counts; None unless every subject
    has the same number (≥ 2) of raters, or when chance agreement is already perfect."""
    if not table:
        return None
    raters = {sum(row) for row in table}
    if len(raters) != 1 or (m := raters.pop()) < 2:
        return None
    n = len(table)
    p_i = [(sum(c * c for c in row) - m) / (m * (m - 1)) for row in table]
    p_bar = math.fsum(p_i) / n
    p_j = [sum(row[j] for row in table) / (n * m) for j in range(len(table[0]))]
    p_e = math.fsum(p * p for p in p_j)
    if p_e >= 1.0:
        return None
    return (p_bar - p_e) / (1 - p_e)


# -- reading labels and annotations -----------------------------------------------------------


def _rows(data: bytes, display: str, suffix: str) -> list[tuple[int, dict[str, Any]]]:
    """(line, row) of a JSONL or CSV file; LabelsProblem with every unreadable row."""
    if len(data) > MAX_BYTES:
        raise LabelsProblem([f"{display}: the file is {len(data):,} bytes; the limit is "
                             f"{MAX_BYTES:,}"])
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise LabelsProblem([f"{display}:{line}: not UTF-8 text; save the file as UTF-8"]
                            ) from None
    found: list[tuple[int, dict[str, Any]]] = []
    problems: list[str] = []
    if suffix == ".csv":
        header: list[str] | None = None
        try:
            for start, record in csv_records(text):
                if header is None:
                    header = [cell.strip() for cell in record]
                elif len(record) > len(header):
                    problems.append(f"{display}:{start}: {len(record)} cells, but the header "
                                    f"names {len(header)} columns")
                else:
                    found.append((start, {k: v for k, v in zip(header, record, strict=False)
                                          if v != ""}))
        except CsvProblem as exc:
            problems.append(f"{display}:{exc.line}: {exc.message}")
    elif suffix == ".jsonl":
        for number, raw in enumerate(text.split("\n"), 1):
            if not raw.strip():
                continue
            try:
                value = json.loads(raw, parse_constant=_no_constant)
            except (ValueError, RecursionError) as exc:
                problems.append(f"{display}:{number}: not JSON: {str(exc)[:120]}")
                continue
            if not isinstance(value, dict):
                problems.append(f"{display}:{number}: a row must be a JSON object, found "
                                f"{type(value).__name__}")
                continue
            found.append((number, value))
    else:
        raise LabelsProblem([f"{display}: a labels file is .jsonl or .csv, not "
                             f"{suffix or 'a file without a suffix'}"])
    if problems:
        raise LabelsProblem(problems[:20] + ([f"{display}: … and {len(problems) - 20} more"]
                                             if len(problems) > 20 else []))
    if not found:
        raise LabelsProblem([f"{display}: the file has no rows"])
    if len(found) > MAX_ROWS:
        raise LabelsProblem([f"{display}: {len(found):,} rows; the limit is {MAX_ROWS:,}"])
    return found


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not a number this file accepts")


@dataclass(frozen=True)
class LabelRow:
    """One labelled example: what the application said, and what a person thought of it."""

    line: int
    output: str
    human: float
    input: object = None
    rubric: str | None = None


def _human(value: object, csv_text: bool) -> float:
    if isinstance(value, str):
        word = value.strip().lower()
        if word in ("pass", "fail"):
            return 1.0 if word == "pass" else 0.0
        if csv_text:
            with contextlib.suppress(ValueError):
                value = float(word)
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not (isinstance(value, int) or math.isfinite(value)) or not 0 <= value <= 1:
        shown = repr(value)
        shown = shown if len(shown) <= 40 else shown[:40] + "…"
        raise ValueError(f"'human' is {shown}; it must be a score from 0 to 1 or 'pass'/'fail'")
    return float(value)


def read_labels(data: bytes, display: str, suffix: str, threshold: float = 0.5
                ) -> list[LabelRow]:
    """The labelled examples of an alignment file (``output``, ``human``, optional ``input``
    and ``rubric``); LabelsProblem at the line of each bad row, or when the labels hold one
    class only (Cohen's κ is undefined then)."""
    rows = _rows(data, display, suffix)
    labels: list[LabelRow] = []
    problems: list[str] = []
    for line, row in rows:
        unknown = sorted(set(row) - {"output", "human", "input", "rubric"})
        output, rubric = row.get("output"), row.get("rubric")
        try:
            if unknown:
                raise ValueError(f"unknown column {unknown[0]!r}; a label row has output, "
                                 "human, and optionally input and rubric")
            if not isinstance(output, str):
                raise ValueError("'output' is missing" if output is None else
                                 f"'output' is {type(output).__name__}, not text")
            if "human" not in row:
                raise ValueError("'human' is missing: a score from 0 to 1 or 'pass'/'fail'")
            human = _human(row["human"], suffix == ".csv")
            if rubric is not None and (not isinstance(rubric, str) or not rubric.strip()):
                raise ValueError("'rubric' must be non-empty text (a rubric or its name)")
        except ValueError as exc:
            problems.append(f"{display}:{line}: {exc}")
            continue
        labels.append(LabelRow(line, output, human, row.get("input"), rubric))
    if problems:
        raise LabelsProblem(problems[:20])
    classes = {h >= threshold for h in (r.human for r in labels)}
    if len(classes) == 1:
        which = "pass" if classes.pop() else "fail"
        raise LabelsProblem([f"{display}: every label is {which} (at the threshold "
                             f"{threshold:g}): Cohen's κ is undefined with one class only; add "
                             "examples a person judged the other way"])
    return labels


@dataclass(frozen=True)
class _Annotation:
    line: int
    case: str
    annotator: str
    label: str | float
    confidence: float | None
    output: str | None
    input: object


def read_annotations(data: bytes, display: str, suffix: str) -> list[_Annotation]:
    """The rows of an annotations file (``case``, ``annotator``, ``label``, optional
    ``confidence``, ``output``, ``input``); LabelsProblem at the line of each bad row."""
    found: list[_Annotation] = []
    problems: list[str] = []
    allowed = {"case", "annotator", "label", "confidence", "output", "input"}
    for line, row in _rows(data, display, suffix):
        try:
            unknown = sorted(set(row) - allowed)
            if unknown:
                raise ValueError(f"unknown column {unknown[0]!r}; an annotation row has "
                                 "case, annotator, label, and optionally confidence, output, "
                                 "input")
            for key in ("case", "annotator"):
                if not isinstance(row.get(key), (str, int)) or isinstance(row.get(key), bool) \
                        or str(row[key]).strip() == "":
                    raise ValueError(f"'{key}' is missing or not text")
            label = row.get("label")
            if isinstance(label, str) and suffix == ".csv":
                with contextlib.suppress(ValueError):
                    label = float(label) if label.strip() not in ("", "nan", "inf") else label
            if isinstance(label, bool) or not isinstance(label, (str, int, float)) or (
                    isinstance(label, float) and not math.isfinite(label)) or label == "":
                raise ValueError("'label' is missing or not text or a number")
            confidence = row.get("confidence")
            if confidence is not None:
                confidence = float(confidence) if isinstance(confidence, str) else confidence
                if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) \
                        or not 0 <= confidence <= 1:
                    raise ValueError("'confidence' must be a number from 0 to 1")
            output = row.get("output")
            if output is not None and not isinstance(output, str):
                raise ValueError("'output' must be text")
        except ValueError as exc:
            problems.append(f"{display}:{line}: {exc}")
            continue
        found.append(_Annotation(line, str(row["case"]), str(row["annotator"]),
                                 float(label) if isinstance(label, int) else label,
                                 None if confidence is None else float(confidence),
                                 output, row.get("input")))
    if problems:
        raise LabelsProblem(problems[:20])
    return found


@dataclass(frozen=True)
class CaseAgreement:
    """One annotated case: its gold (majority) label and how many raters gave it."""

    case: str
    gold: str | float
    agreement: float
    raters: int
    output: str | None = None
    input: object = None


@dataclass(frozen=True)
class AnnotationSummary:
    """The seed's ``DatasetAnnotationReport``."""

    cases: tuple[CaseAgreement, ...]
    overall_agreement: float
    disputed: tuple[str, ...]
    dispute_below: float
    fleiss_kappa: float | None
    notes: tuple[str, ...] = field(default=())

    def to_data(self) -> dict[str, Any]:
        return {"cases": [asdict(c) for c in self.cases],
                "overall_agreement": self.overall_agreement, "disputed": list(self.disputed),
                "dispute_below": self.dispute_below, "fleiss_kappa": self.fleiss_kappa,
                "notes": list(self.notes)}


def summarize_annotations(rows: Sequence[_Annotation], dispute_below: float = 0.8
                          ) -> AnnotationSummary:
    """Per case the gold label (the most common; a tie goes to the higher summed confidence,
    then to the label seen first) and the share of raters who gave it; overall agreement
    is the mean of those shares; Fleiss' κ over every label seen."""
    if not rows:
        raise ValueError("no annotations")
    by_case: dict[str, list[_Annotation]] = {}
    for row in rows:
        by_case.setdefault(row.case, []).append(row)
    cases: list[CaseAgreement] = []
    categories = list(dict.fromkeys(r.label for r in rows))
    table: list[list[int]] = []
    for name, given in by_case.items():
        counts = Counter(r.label for r in given)
        weight: dict[str | float, float] = {}
        for r in given:
            weight[r.label] = weight.get(r.label, 0.0) + (
                1.0 if r.confidence is None else r.confidence)
        order = list(dict.fromkeys(r.label for r in given))
        gold = max(order, key=lambda label: (counts[label], weight[label], -order.index(label)))
        output = next((r.output for r in given if r.output is not None), None)
        case_input = next((r.input for r in given if r.input is not None), None)
        cases.append(CaseAgreement(name, gold, counts[gold] / len(given), len(given), output,
                                   case_input))
        table.append([counts[c] for c in categories])
    raters = {c.raters for c in cases}
    notes: list[str] = []
    if len(raters) != 1:
        notes.append("Fleiss' κ is null: cases have different numbers of raters "
                     f"({min(raters)}–{max(raters)})")
    elif raters == {1}:
        notes.append("Fleiss' κ is null: each case has one rater")
    return AnnotationSummary(
        tuple(cases), math.fsum(c.agreement for c in cases) / len(cases),
        tuple(c.case for c in cases if c.agreement < dispute_below), dispute_below,
        fleiss_kappa(table), tuple(notes))
