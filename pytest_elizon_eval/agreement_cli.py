"""The ``elizon-eval annotations summarize`` verb (docs/cli.md#annotations-summarize).

Reads an annotations file (:func:`~.agreement.read_annotations`), prints each case's gold
label and agreement, the overall agreement, the disputed cases and Fleiss' κ, and with
``--gold`` writes the gold labels as a judge-alignment labels file. The parser entries
live in :mod:`.cli`; this module keeps the work. No pytest import here.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Protocol

from . import agreement
from .text import visible

__all__ = ["AgreementTrouble", "summarize"]


class AgreementTrouble(Exception):
    """A file that cannot be used: the command's error lines, exit status 2."""


class _Out(Protocol):
    def line(self, text: str = "", markup: dict[str, bool] | None = None) -> None: ...


def _gold_rows(summary: agreement.AnnotationSummary) -> list[dict[str, Any]]:
    """The gold labels in the alignment labels file's form; AgreementTrouble for a case
    without an output or with a label that is neither pass/fail nor a score."""
    rows: list[dict[str, Any]] = []
    problems: list[str] = []
    for case in summary.cases:
        gold = case.gold
        if isinstance(gold, str) and gold.strip().lower() in ("pass", "fail"):
            human: str | float = gold.strip().lower()
        elif isinstance(gold, float) and 0 <= gold <= 1:
            human = gold
        else:
            problems.append(f"case {case.case!r}: the gold label {gold!r} is neither "
                            "pass/fail nor a score from 0 to 1")
            continue
        if case.output is None:
            problems.append(f"case {case.case!r}: no row gives its 'output', which a labels "
                            "file needs")
            continue
        row: dict[str, Any] = {"output": case.output, "human": human}
        if case.input is not None:
            row["input"] = case.input
        rows.append(row)
    if problems:
        raise AgreementTrouble("--gold: " + "; ".join(problems[:5]) + (
            f"; … and {len(problems) - 5} more" if len(problems) > 5 else ""))
    return rows


def _write_atomically(path: Path, text: str) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent or Path("."), prefix=".gold-")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def summarize(path: str, dispute_below: float, gold: str | None, as_json: bool,
              out: _Out) -> int:
    """Print the summary of the annotations file at ``path``; the exit status."""
    if not 0 <= dispute_below <= 1:
        raise AgreementTrouble(f"--dispute-below must be from 0 to 1, not {dispute_below:g}")
    file = Path(path)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise AgreementTrouble(f"{path}: cannot read the file: {exc.strerror}") from None
    try:
        rows = agreement.read_annotations(data, path, file.suffix.lower())
    except agreement.LabelsProblem as exc:
        raise AgreementTrouble("\n".join(exc.lines)) from None
    summary = agreement.summarize_annotations(rows, dispute_below)
    if gold is not None:
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in _gold_rows(summary))
        try:
            _write_atomically(Path(gold), text)
        except OSError as exc:
            raise AgreementTrouble(f"--gold {gold}: cannot write: {exc.strerror}") from None
    if as_json:
        out.line(json.dumps(summary.to_data(), ensure_ascii=False, indent=2))
        return 0
    for case in summary.cases:
        flag = "  DISPUTED" if case.case in summary.disputed else ""
        name = visible(case.case, keep_newlines=False)
        out.line(f"{name}: gold {case.gold!r}, agreement {case.agreement:.0%} of "
                 f"{case.raters}{flag}", {"yellow": True} if flag else None)
    kappa = "null" if summary.fleiss_kappa is None else (
        f"{summary.fleiss_kappa:.3f} ({agreement.landis_koch(summary.fleiss_kappa)})")
    out.line(f"{len(summary.cases)} cases, overall agreement {summary.overall_agreement:.0%}, "
             f"{len(summary.disputed)} disputed (agreement below {dispute_below:g}), "
             f"Fleiss' κ {kappa}", {"bold": True})
    for note in summary.notes:
        out.line(note)
    if gold is not None:
        out.line(f"gold labels written to {gold} ({len(summary.cases)} rows)")
    return 0


def align(package_path: str, judge_text: str | None, cache_dir: str, refresh: bool,
          timeout_s: float, as_json: bool, out: _Out) -> int:
    """Measure a package's judge against its ``alignment:`` labels, keep the result where
    pytest's runs look for it, print it; 1 when κ is below ``minKappa`` (or undefined)."""
    # deferred: only this verb loads packages and binds judges
    from .bind.binding import JUDGE, Binder, Source, parse_text, precedence
    from .errors import ElizonError
    from .load.packages import MANIFEST_NAME, load_manifest
    from .reporting.judges import alignment_line
    from .run import alignment
    from .run.grade_cache import GradeCache

    path = Path(package_path)
    manifest = path / MANIFEST_NAME if path.is_dir() else path
    if not manifest.is_file():
        raise AgreementTrouble(f"{package_path}: no {MANIFEST_NAME} there")
    try:
        package = load_manifest(manifest, str(manifest))
        labels = package.alignment
        if labels is None:
            raise AgreementTrouble(f"{manifest}: no alignment: {{labels: …}} to measure the "
                                   "judge against")
        if judge_text is None and package.judge is None:  # bound by a fixture, if at all
            raise AgreementTrouble(
                f"{manifest}: no judge: to measure, and elizon-eval cannot run an "
                "elizon_judge fixture (conftest.py); measure that judge with pytest "
                "--elizon-align, which keeps the result for later runs, or give one with "
                "--judge MODULE:FUNCTION or --judge '{url: …, model: …}'")
        given = None
        if judge_text is not None:
            try:
                given = parse_text(judge_text, JUDGE)
            except ValueError as exc:
                raise AgreementTrouble(f"--judge {judge_text!r}: {exc}") from None
        binder = Binder(Path.cwd())
        judge = binder.judge(precedence(
            cli=Source(given, f"--judge={judge_text}"),
            fixture=Source(None, "an elizon_judge fixture (not read by elizon-eval)"),
            manifest=Source(package.judge, f"judge: in {manifest}"),
            ini=Source(None, "ini elizon_judge (not read by elizon-eval)")), package.folder)
        try:
            rubrics = alignment.resolve_rubrics(package, labels)
            folder = Path(cache_dir) / "d" / "elizon"
            cache = GradeCache(folder / "grades", "refresh" if refresh else "on")
            record = alignment.measure(judge, package, labels, rubrics, cache, timeout_s)
        finally:
            judge.close()
    except ElizonError as exc:
        raise AgreementTrouble("\n".join(exc.lines)) from None
    alignment.save(folder / "alignment", record)
    if as_json:
        out.line(json.dumps(record, ensure_ascii=False, indent=2))
    else:
        out.line(visible(alignment_line(record), keep_newlines=False), {"bold": True})
        out.line(f"judge calls: {record['calls']}, grades reused from the cache: "
                 f"{record['cached']}; kept in {folder / 'alignment'}")
        for line in record.get("ungraded", ()):
            out.line(f"  not graded: {visible(line, keep_newlines=False)}", {"yellow": True})
    reason = alignment.advisory_reason(record, labels, require=False)
    if reason:
        if not as_json:
            out.line(f"{reason}: its failures in must-pass suites are advisory", {"red": True})
        return 1
    return 0
