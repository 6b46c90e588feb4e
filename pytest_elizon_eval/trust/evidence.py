"""Results documents read back, as evidence: checked, rebuilt, merged, acknowledged.

Owns the step from a results file someone hands over (docs/contract.md#trust)
to data the reporters can render again: a file is read as hostile input (a
size cap, no duplicate keys, no NaN, nesting bounded, the shipped JSON
Schema, verdicts that must follow from its cases); its cases become an
:class:`~.reporting.aggregate.Aggregate` again, so metrics and verdicts are
always recomputed by the same code the plugin runs; shards of a CI matrix
are merged into one document; and an acknowledgement (``<results>.ack.json``)
binds a person to exactly one document. What the command writes replaces what is
at its path, whole, never writing through a link (:func:`replace_file`). No pytest
import here.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..decide.results_data import case_of_file
from ..reporting import results
from ..reporting.aggregate import Aggregate, VariantGateFailure
from ..reporting.regression import CaseChange, Regression, verdict
from ..reporting.significance import SignificantChange
from . import provenance, signing

__all__ = [
    "ACK_FORMAT",
    "MAX_DOCUMENT_BYTES",
    "Document",
    "EvidenceError",
    "ack_path",
    "acknowledgement",
    "check_acknowledgement",
    "failed_regressions",
    "failed_variants",
    "merge",
    "read_document",
    "read_json_file",
    "regression_of",
    "regression_words",
    "replace_file",
    "variant_words",
]

#: Largest results file read (a run of 10,000 cases with long outputs stays well under it).
MAX_DOCUMENT_BYTES = 128 * 1024 * 1024
#: Largest signature or acknowledgement file read.
MAX_SMALL_BYTES = 1024 * 1024
#: Deepest nesting read (suite files nest at most 100 deep, so a case input fits); every
#: later step (schema, canonical form, reports) stays far from the recursion limit.
MAX_DEPTH = 160
ACK_FORMAT = "pytest-elizon-eval/acknowledgement/v1"


class EvidenceError(ValueError):
    """A file that is not what it should be; the message says what is wrong, in one line."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is too large")
    return value


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            # Two parsers may keep different copies of a repeated key: a signature checked
            # over one view would vouch for another.
            raise ValueError(f"the key {key[:60]!r} appears twice in one object")
        out[key] = value
    return out


def read_json_file(path: Path, limit: int) -> Any:
    """A JSON file's data, read as hostile input; EvidenceError says why it cannot be used."""
    try:
        with path.open("rb") as fh:
            raw = fh.read(limit + 1)
    except IsADirectoryError:
        raise EvidenceError("it is a directory, not a file") from None
    except OSError as exc:
        raise EvidenceError(f"cannot read it: {exc.strerror or exc}") from None
    if len(raw) > limit:
        raise EvidenceError(f"larger than {limit:,} bytes; not read")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EvidenceError(f"not UTF-8 text (byte offset {exc.start})") from None
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicates,
                          parse_constant=_reject_constant, parse_float=_finite)
    except RecursionError:
        data = _TOO_DEEP
    except ValueError as exc:
        raise EvidenceError(f"not JSON: {str(exc)[:200]}") from None
    if data is _TOO_DEEP or _depth(data) > MAX_DEPTH:
        raise EvidenceError(f"nested deeper than {MAX_DEPTH} levels; not a file this tool reads")
    return data


_TOO_DEEP = object()


def _depth(data: Any) -> int:
    """How deeply ``data`` nests, found without recursion."""
    deepest = 0
    stack = [(data, 1)]
    while stack:
        value, level = stack.pop()
        if isinstance(value, (dict, list)):
            deepest = max(deepest, level)
            if level <= MAX_DEPTH:
                items = value.values() if isinstance(value, dict) else value
                stack.extend((v, level + 1) for v in items)
    return deepest


@dataclass(frozen=True)
class Document:
    """A results file that passed every check."""

    path: Path
    data: dict[str, Any]
    #: SHA-256 of the canonical serialisation: what signatures and acknowledgements bind.
    sha256: str
    aggregate: Aggregate


def aggregate_of(data: Mapping[str, Any], where: str = "") -> Aggregate:
    """The cases of a (schema-valid) document as an aggregate; a case twice is an error."""
    # shown again at the run's elizon_confidence and elizon_alpha, where the file says them
    rate = next((s["intervals"]["pass_rate"] for s in data["suites"]
                 if "pass_rate" in s.get("intervals", {})), None)
    drop = next((s["detectable_drop"] for s in data["suites"] if s.get("detectable_drop")), None)
    aggregate = Aggregate(rate["confidence"] if rate else 0.95, drop["alpha"] if drop else 0.05)
    aggregate.framework = (data.get("compliance") or {}).get("framework")
    seen_paths: set[str] = set()
    for suite in data["suites"]:
        if suite["path"] in seen_paths:
            raise EvidenceError(f"{where}the suite {suite['path']} is listed twice")
        seen_paths.add(suite["path"])
        for case in suite["cases"]:
            before = len(aggregate)
            aggregate.add(case_of_file(suite, case))
            if len(aggregate) == before:
                raise EvidenceError(f"{where}the case {case['nodeid']} is listed twice")
    # --elizon-fail-on-regression gated its variants against their reference: recomputed
    # with the gate the run had (docs/contract.md#variant-comparison)
    aggregate.gate_variants = data["verdict"].get("variant_gate") is True
    return aggregate


def _gate_of_an_older_file(data: Mapping[str, Any], aggregate: Aggregate) -> None:
    """A file written before ``verdict.variant_gate`` does not say whether the variant gate
    was on: it was when only the gate explains the failed run it states (a significantly
    worse variant); never taken as on to fail a run the file says passed."""
    if "variant_gate" in data["verdict"] or data["verdict"]["pass"] \
            or not aggregate.variant_regressions():
        return
    aggregate.gate_variants = True


def _check_verdicts(data: Mapping[str, Any], aggregate: Aggregate) -> None:
    """The verdicts a document states must be those its cases give."""
    # the variant gate fails a suite too: known before the suites' verdicts are compared
    _gate_of_an_older_file(data, aggregate)
    stated = {s["path"]: s["verdict"] for s in data["suites"]}
    for summary in aggregate.suites():
        claim = stated.get(summary.info.path)
        if claim is not None and claim != summary.verdict:
            raise EvidenceError(f"its verdicts do not follow from its cases: suite "
                                f"{summary.info.path} says {claim!r}, its cases give "
                                f"{summary.verdict!r}")
    # --elizon-fail-on-regression may fail a run its cases pass, never pass one they fail
    expected = verdict(aggregate, regression_of(data))[0]
    if bool(data["verdict"]["pass"]) != expected:
        raise EvidenceError(f"its verdicts do not follow from its cases: the run says pass="
                            f"{str(data['verdict']['pass']).lower()}, its cases give "
                            f"pass={str(expected).lower()}")


def read_document(path: Path) -> Document:
    """A results file, checked; EvidenceError (one line) if it is not a usable one."""
    data = read_json_file(path, MAX_DOCUMENT_BYTES)
    try:
        checked = results.check(data)
    except ValueError as exc:
        raise EvidenceError(str(exc)) from None
    try:
        aggregate = aggregate_of(checked)
        _check_verdicts(checked, aggregate)
        sha = signing.document_sha256(checked)
    except EvidenceError:
        raise
    except (KeyError, TypeError, ValueError, RecursionError) as exc:
        raise EvidenceError(f"not a results file this tool can read ({type(exc).__name__})"
                            ) from None
    return Document(path, checked, sha, aggregate)


def regression_of(data: Mapping[str, Any]) -> Regression | None:
    """The document's regression section as the object reporters render."""
    found = data.get("regression")
    if not found:
        return None
    changes = tuple(CaseChange(c["nodeid"], c["change"], c["before"], c["after"])
                    for c in found["cases"])
    significance = tuple(SignificantChange.from_data(row)
                         for row in found.get("significance") or ())
    must_pass = tuple(s["path"] for s in data["suites"] if not s["advisory"])
    return Regression(found["baseline_file"], changes, tuple(found["changed_suites"]),
                      significance=significance, must_pass=must_pass,
                      fail_on_regression=bool(found.get("fails_run")))


def failed_regressions(data: Mapping[str, Any]) -> list[SignificantChange]:
    """The significant regressions that failed the run (``--elizon-fail-on-regression``,
    ``regression.fails_run``), recomputed as the run did (reporting/regression.py): they
    fail the must-pass gate as a failed suite does; empty when they did not fail it."""
    regression = regression_of(data)
    return regression.blocking() if regression is not None and regression.fails_run else []


def regression_words(rows: Sequence[SignificantChange]) -> str:
    """How verify and override name the regressions that failed the run."""
    return ", ".join(f"{r.suite} {r.metric} {r.change:+.3g} (Holm p={r.adjusted_p:.3g})"
                     for r in rows)


def failed_variants(document: Document) -> list[VariantGateFailure]:
    """The variant results that failed the run (the variant gate of
    ``--elizon-fail-on-regression``, ``verdict.variant_gate``), recomputed from the cases as
    the run did (docs/contract.md#variant-comparison): they fail the must-pass gate as a
    failed suite does; empty when the gate was off or held."""
    aggregate = document.aggregate
    return aggregate.variant_regressions() if aggregate.gate_variants else []


def variant_words(rows: Sequence[VariantGateFailure]) -> str:
    """How verify, acknowledge and override name them: ``small of pkg against large:
    pass_rate -0.833 (Holm p=0.00195)``."""
    return "; ".join(f"{f.variant} of {f.package} against {f.reference}: {f.reason}"
                     for f in rows)


def replace_file(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all (a reader never sees half a file).

    Whatever is at ``path`` is replaced, never written through: a symbolic link placed
    there is itself replaced, so the text cannot land wherever it points. The text goes to
    a new file first (``O_EXCL``: not through a link or file someone placed there), which
    then takes the name. OSError as raised."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8", "backslashreplace"))
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise


# -- merging ---------------------------------------------------------------------------------

_SUITE_FIELDS = (("sha256", "file SHA-256"), ("package", "package"), ("gate", "gate"),
                 ("advisory", "advisory flag"), ("baseline", "author baseline"))


def merge(documents: Sequence[Document]) -> tuple[dict[str, Any], Aggregate, list[str]]:
    """One results document (and its aggregate, for the other reports) from the shards of a
    CI matrix: cases joined per suite, metrics, variant comparisons and verdicts recomputed
    by the code a run uses; and what the merge had to decide for itself, in words (which
    reference the variants are compared with, when the shards name different ones).
    EvidenceError when the shards disagree: a case in two shards, a suite whose file hash
    (or gate, package, baseline) differs, different packages."""
    suites: dict[str, tuple[Mapping[str, Any], Path]] = {}
    owner: dict[str, Path] = {}
    for document in documents:
        for suite in document.data["suites"]:
            first = suites.get(suite["path"])
            if first is None:
                suites[suite["path"]] = (suite, document.path)
            else:
                for key, what in _SUITE_FIELDS:
                    if first[0][key] != suite[key]:
                        raise EvidenceError(
                            f"the suite {suite['path']} has another {what} in {document.path} "
                            f"than in {first[1]}; the shards did not run the same suite")
                if bool(first[0].get("variants")) != bool(suite.get("variants")):
                    with_, without = (first[1], document.path) if first[0].get("variants") \
                        else (document.path, first[1])
                    raise EvidenceError(
                        f"the suite {suite['path']} ran under variants in {with_} and without "
                        f"in {without}; the shards did not run the same package")
            for case in suite["cases"]:
                if case["nodeid"] in owner:
                    raise EvidenceError(f"the case {case['nodeid']} is in both "
                                        f"{owner[case['nodeid']]} and {document.path}; "
                                        "each case must run in one shard only")
                owner[case["nodeid"]] = document.path
    joined, notes = _joined_variants(documents)
    # at the shards' elizon_confidence and elizon_alpha, as their files were written
    aggregate = Aggregate(documents[0].aggregate.confidence, documents[0].aggregate.alpha)
    for document in documents:
        for suite in document.data["suites"]:
            suite = {**suite, **joined.get(suite["path"], {})}
            for case in suite["cases"]:
                aggregate.add(case_of_file(suite, case))
    # every shard ran with the same options: the first that names a framework names it
    aggregate.framework = next((d.data["compliance"]["framework"] for d in documents
                                if (d.data.get("compliance") or {}).get("framework")), None)
    # a shard that gated its variants (--elizon-fail-on-regression) gates the merge's
    aggregate.gate_variants = any(d.aggregate.gate_variants for d in documents)
    try:
        merged_provenance = provenance.merge(
            [(str(d.path), d.sha256, d.data.get("provenance")) for d in documents])
    except ValueError as exc:
        raise EvidenceError(str(exc)) from None
    return results.build(aggregate, None, provenance=merged_provenance), aggregate, notes


def _joined_variants(documents: Sequence[Document]
                     ) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """By suite path, the ``variants`` and ``advisory_variants`` of the
    suites of a package with variants, joined over the shards (``--elizon-variant large``
    in one, ``small`` in another: the merge has both), the reference first; and a note per
    package whose shards name different references (docs/cli.md#merge).

    A shard's first variant is its reference: the package's own, or, when the shard did not
    run that one, a stand-in. A variant some shard lists after another is no shard's
    package reference; of the rest, the first shard's is taken."""
    lists: dict[str, list[tuple[list[str], Path]]] = {}
    for document in documents:
        for suite in document.data["suites"]:
            if suite.get("variants"):
                lists.setdefault(suite["package"], []).append((suite["variants"],
                                                               document.path))
    order: dict[str, list[str]] = {}
    notes: list[str] = []
    for package, found in lists.items():
        seen = list(dict.fromkeys(name for names, _ in found for name in names))
        follows = {name for names, _ in found for name in names[1:]}
        firsts = list(dict.fromkeys(names[0] for names, _ in found if names[0] not in follows))
        reference = firsts[0] if firsts else found[0][0][0]
        order[package] = [reference, *(n for n in seen if n != reference)]
        if len(firsts) > 1:
            named = ", ".join(dict.fromkeys(f"{names[0]} in {where}" for names, where in found
                                            if names[0] in firsts))
            notes.append(f"the shards compare {package}'s variants with different references "
                         f"({named}): the merge compares them with {reference}, the first "
                         "shard's")
    joined: dict[str, dict[str, Any]] = {}
    for document in documents:
        for suite in document.data["suites"]:
            if not suite.get("variants"):
                continue
            ran = {*joined.get(suite["path"], {}).get("variants", ()), *suite["variants"]}
            advisory = {*joined.get(suite["path"], {}).get("advisory_variants", ()),
                        *suite.get("advisory_variants", ())}
            names = [n for n in order[suite["package"]] if n in ran]
            # (its case_count is its file's, the same in every shard)
            joined[suite["path"]] = {
                "variants": names, "advisory_variants": [n for n in names if n in advisory]}
    return joined, notes


# -- acknowledgement -------------------------------------------------------------------------

def ack_path(results_path: Path) -> Path:
    return results_path.with_name(results_path.name + ".ack.json")


def acknowledgement(document: Document, *, by: str, at: str, how: str) -> dict[str, Any]:
    """What ``acknowledge`` writes: who saw exactly which document, when, and its verdict."""
    return {
        "format": ACK_FORMAT,
        "results_file": document.path.name,
        "results_sha256": document.sha256,
        "by": by,
        "at": at,
        "how": how,
        "verdict_seen": {
            # from its cases, and its significant regressions if they failed the run
            **dict(zip(("pass", "paragraph"), verdict(document.aggregate,
                                                       regression_of(document.data)),
                       strict=True)),
            "suites": [{"path": s.info.path, "gate": s.info.gate, "verdict": s.verdict}
                       for s in document.aggregate.suites()],
        },
    }


def check_acknowledgement(document: Document) -> dict[str, Any]:
    """The acknowledgement of exactly this document; EvidenceError says why there is none."""
    path = ack_path(document.path)
    if not path.exists():
        raise EvidenceError(f"no acknowledgement {path}: run 'elizon-eval acknowledge "
                            f"{document.path}' after looking at the results")
    data = read_json_file(path, MAX_SMALL_BYTES)
    if not isinstance(data, dict) or data.get("format") != ACK_FORMAT:
        raise EvidenceError(f"{path} is not an acknowledgement file ({ACK_FORMAT})")
    if data.get("results_sha256") != document.sha256:
        raise EvidenceError(f"{path} acknowledges another document (sha256 "
                            f"{str(data.get('results_sha256'))[:64]}); these results (sha256 "
                            f"{document.sha256}) were changed after, or never, acknowledged")
    if not isinstance(data.get("by"), str) or not isinstance(data.get("at"), str):
        raise EvidenceError(f"{path} does not say who acknowledged and when")
    return data
