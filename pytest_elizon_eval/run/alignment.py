"""Measure a package's judge against its human labels, keep the result, and gate on it.

Owns docs/contract.md#judge-alignment: :func:`measure` grades every labelled output
with the judge (through the grade cache, so a measured judge is not asked twice) and
computes :func:`~..agreement.alignment`; the result is kept as one JSON file per
:func:`alignment_key` — the judge's identity, the labels file's SHA-256, the pass
threshold and every rubric the rows resolve to — in ``.pytest_cache/d/elizon/alignment``,
and reused until one of those changes. :func:`advisory_reason` says why a must-pass
suite's judge failures are advisory ("judge not aligned: κ 0.41 < 0.60"). No pytest
import here.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import errors
from ..collect import session
from ..errors import ElizonError
from ..load.packages import AlignmentLabels, Package, load_suite
from .grade_cache import GradeCache, cache_key, judge_identity

if TYPE_CHECKING:  # made by the binder, which imports it
    from ..bind.judging import Judge

__all__ = ["advisory_reason", "alignment_key", "load", "measure", "measured_or_kept",
           "resolve_rubrics", "save"]

_LOCK = threading.Lock()
#: Alignment records known to this process, by folder and key (None: looked for, none kept).
_KNOWN: dict[tuple[Path | None, str], dict[str, Any] | None] = {}


#: :func:`_named_rubrics` by the package's suite files as they are on disk (path, size,
#: modification time): every judged case's plan asks, and reading the suites is not free.
_RUBRICS: dict[tuple[tuple[str, int, int], ...], dict[str, str]] = {}


def _suites_stamp(package: Package) -> tuple[tuple[str, int, int], ...]:
    stamp = []
    for spec in package.suites:
        try:
            status = spec.path.stat()
        except OSError:
            stamp.append((str(spec.path), -1, -1))
            continue
        stamp.append((str(spec.path), status.st_size, status.st_mtime_ns))
    return tuple(stamp)


def _named_rubrics(package: Package) -> dict[str, str]:
    """Every named rubric (``{name, rubric, threshold}``) of the package's suites, and every
    rubric text, by name (texts by themselves); read once while the suite files stay."""
    stamp = _suites_stamp(package)
    with _LOCK:
        known = _RUBRICS.get(stamp)
    if known is not None:
        return known
    found: dict[str, str] = {}
    running = session.current()  # its suite cache: the files are read as collection reads them
    cache = running.index.cache if running is not None else None
    for spec in package.suites:
        if spec.probe_source is not None:
            continue  # a probe file is no suite (reading it as one only fails, and costs)
        try:
            loaded = load_suite(spec.path, spec.path.name, cache)
        except ElizonError:
            continue  # the suite's own collection reports it
        for case in loaded.cases:
            for expect in [case.expect, *(t.expect for t in case.turns or ())]:
                for rubric in (expect.rubrics if expect is not None else ()):
                    found.setdefault(rubric.name or rubric.rubric, rubric.rubric)
    with _LOCK:
        _RUBRICS[stamp] = found
    return found


def resolve_rubrics(package: Package, labels: AlignmentLabels) -> list[str]:
    """The rubric text each labelled row is graded against: its own ``rubric`` (a rubric's
    text, or the name of one in the package's suites), else ``alignment.rubric``, else the
    package's one rubric; ElizonError at the rows it cannot decide for."""
    named = _named_rubrics(package)
    texts = sorted(set(named.values()))

    def text_of(value: str) -> str:
        return named.get(value, value)

    default = text_of(labels.spec.rubric) if labels.spec.rubric else (
        texts[0] if len(texts) == 1 else None)
    resolved: list[str] = []
    missing: list[int] = []
    for row in labels.rows:
        text = text_of(row.rubric) if row.rubric else default
        if text is None:
            missing.append(row.line)
            continue
        resolved.append(text)
    if missing:
        many = f"{len(texts)} rubrics" if texts else "no rubric"
        raise ElizonError(errors.ELIZON_ALIGNMENT_INVALID, [
            f"{labels.display}:{line}: the row names no rubric and the package has {many}; "
            "give the row a 'rubric' (its text or a rubric's name) or alignment: {rubric: …}"
            for line in missing[:10]])
    return resolved


def alignment_key(identity: str, labels: AlignmentLabels, rubrics: Sequence[str]) -> str:
    """The SHA-256 of everything an alignment result depends on."""
    text = json.dumps({"judge": identity, "labels": labels.sha256,
                       "threshold": labels.spec.threshold, "rubrics": sorted(set(rubrics))},
                      sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def load(folder: Path | None, key: str) -> dict[str, Any] | None:
    """The alignment record kept under ``key``, or None."""
    if folder is None:
        return None
    try:
        data = json.loads((folder / f"{key}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("key") == key else None


def save(folder: Path | None, record: dict[str, Any]) -> None:
    """Keep ``record`` (atomically: xdist workers may write the same one); never raises."""
    if folder is None:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".tmp-")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                json.dump(record, stream, ensure_ascii=False, indent=2)
            os.replace(temporary, folder / f"{record['key']}.json")
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError:
        return


def measure(judge: Judge, package: Package, labels: AlignmentLabels, rubrics: Sequence[str],
            cache: GradeCache | None, timeout_s: float) -> dict[str, Any]:
    """Grade every labelled output (each within ``timeout_s``) and compare with the human
    labels. A row the judge gives no score is left out and counted (``ungraded``)."""
    identity = judge_identity(judge)
    pairs: list[tuple[float, float]] = []
    ungraded: list[str] = []
    calls = cached = 0
    for row, rubric in zip(labels.rows, rubrics, strict=True):
        key = cache_key(identity, rubric, row.input, row.output, 0)
        grade = cache.get(key) if cache is not None else None
        if grade is None:
            grade = judge.grade(rubric, row.input, row.output,
                                deadline=time.monotonic() + timeout_s)
            calls += 1
            if grade.score is not None and cache is not None:
                cache.put(key, grade)
        else:
            cached += 1
        if grade.score is None:
            why = "no grade in time" if grade.timed_out else (grade.error or "no score")
            ungraded.append(f"{labels.display}:{row.line}: {why}")
            continue
        pairs.append((row.human, grade.score))
    record: dict[str, Any] = {
        "key": alignment_key(identity, labels, rubrics), "judge": identity,
        "package": package.name, "labels": labels.display, "labels_sha256": labels.sha256,
        "min_kappa": labels.spec.min_kappa, "measured": time.strftime(
            "%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "calls": calls, "cached": cached, "ungraded": ungraded[:20],
        "ungraded_count": len(ungraded)}
    if pairs:
        from ..agreement import alignment  # deferred: only a package with alignment: needs it

        record.update(alignment(pairs, labels.spec.threshold).to_data())
    else:
        record.update({"n": 0, "cohen_kappa": None, "note": "the judge graded no labelled "
                       "example"})
    return record


def measured_or_kept(judge: Judge, package: Package, folder: Path | None, *, align: bool,
                     cache: GradeCache | None, timeout_s: float) -> dict[str, Any] | None:
    """The package judge's alignment record: kept from an earlier measurement of the same
    judge, labels and rubrics, else measured now when ``align`` (and kept), else None. Once
    per process per key; ElizonError when the labels' rubrics cannot be decided."""
    labels = package.alignment
    if labels is None:
        return None
    rubrics = resolve_rubrics(package, labels)
    key = alignment_key(judge_identity(judge), labels, rubrics)
    memo = (folder, key)
    with _LOCK:  # cases planned at once (concurrency) measure a judge once
        if memo in _KNOWN and (_KNOWN[memo] is not None or not align):
            return _KNOWN[memo]
        record = load(folder, key)
        if record is None and align:
            record = measure(judge, package, labels, rubrics, cache, timeout_s)
            save(folder, record)
        elif record is not None and align:
            record = {**record, "reused": True}
        _KNOWN[memo] = record
        return record


def advisory_reason(record: dict[str, Any] | None, labels: AlignmentLabels | None,
                    require: bool) -> str | None:
    """Why a must-pass suite's judge failures are advisory, or None: its κ is below
    ``minKappa`` (or undefined), or no alignment is kept for it while one is required."""
    if record is None:
        if not require:
            return None
        if labels is None:
            return ("judge not aligned: the package has no alignment: labels "
                    "(elizon_require_alignment = true)")
        return ("judge not aligned: no alignment measured for this judge and these labels "
                "(run pytest --elizon-align or elizon-eval align)")
    minimum = labels.spec.min_kappa if labels is not None else None
    kappa = record.get("cohen_kappa")
    if minimum is None:
        return None
    if not isinstance(kappa, (int, float)):
        return f"judge not aligned: κ undefined, minKappa {minimum:.2f}"
    if kappa < minimum:
        return f"judge not aligned: κ {kappa:.2f} < {minimum:.2f}"
    return None
