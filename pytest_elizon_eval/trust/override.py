"""Overrides on the record, and signed acknowledgements (docs/contract.md#overrides).

An **override** is a person's approval of a failed must-pass gate, as the seed's
``AttestedOverride`` (approver, reason, when): ``RESULTS.override.json`` beside the results,
bound to their canonical SHA-256, naming the suites that failed and the results'
provenance, and signed by the approver's Ed25519 key (the signature inside the file, over
every other field). It is made only for a gate that failed. ``verify`` honours it only when
it is for exactly this results file and its signature verifies with a key it was given.

An **acknowledgement** (``RESULTS.ack.json``) carries the same kind of signature when
``acknowledge`` is given a key. Both are read as hostile input. No pytest import here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import signing
from .evidence import (
    MAX_SMALL_BYTES,
    Document,
    EvidenceError,
    failed_regressions,
    failed_variants,
    read_json_file,
)

__all__ = ["OVERRIDE_FORMAT", "check_signed", "find", "make", "override_path", "sign",
           "summary"]

OVERRIDE_FORMAT = "pytest-elizon-eval/override/v1"
#: The field of an override or acknowledgement that holds its signature.
SIGNATURE = "signature"
MAX_TEXT = 2000


def override_path(results: Path) -> Path:
    return results.with_name(results.name + ".override.json")


def sign(body: dict[str, Any], key: signing.SigningKey) -> dict[str, Any]:
    """``body`` with its signature (over every other field) inside it."""
    return {**body, SIGNATURE: key.sign(body)}


def check_signed(data: dict[str, Any], key: Any, what: str) -> str | None:
    """The fingerprint that signed ``data`` (an override or acknowledgement): verified with
    ``key`` when one is given, else only that the signature is for this content (a changed
    file is caught without a key). None when it is not signed and no key asks for one;
    SignatureInvalid says what is wrong."""
    body = {k: v for k, v in data.items() if k != SIGNATURE}
    signature = data.get(SIGNATURE)
    if signature is None:
        if key is not None:
            raise signing.SignatureInvalid(f"{what} is not signed")
        return None
    try:
        if key is not None:
            return signing.verify(body, signature, key)
        return signing.check_document(body, signature)
    except signing.SignatureInvalid as exc:
        raise signing.SignatureInvalid(f"{what}: {str(exc).replace('results', 'file')}"
                                       ) from None


def _text(value: str, name: str) -> str:
    text = value.strip()
    if not text or len(text) > MAX_TEXT or not text.isprintable():
        raise EvidenceError(f"{name} must be one line of 1 to {MAX_TEXT} printable characters")
    return text


def make(document: Document, *, approver: str, reason: str, at: str,
         key: signing.SigningKey) -> dict[str, Any]:
    """The signed override of ``document``'s failed gate (failed suites, or significant
    regressions or variants significantly worse than their reference that failed the run
    under --elizon-fail-on-regression); EvidenceError when the gate passed (there is
    nothing to override) or a name is empty."""
    failing = [s for s in document.aggregate.suites() if s.verdict == "fail"]
    regressed = failed_regressions(document.data)
    worse = failed_variants(document)
    if not failing and not regressed and not worse:
        raise EvidenceError("the must-pass gate passed: there is nothing to override")
    found = document.data.get("provenance") or {}
    body = {
        "format": OVERRIDE_FORMAT,
        "results_file": document.path.name,
        "results_sha256": document.sha256,
        "approver": _text(approver, "--approver"),
        "reason": _text(reason, "--reason"),
        "at": at,
        "failed_suites": [{"path": s.info.path, "gate": s.info.gate,
                           "passed": s.count("passed"), "cases": len(s.results)}
                          for s in failing],
        # the significant regressions --elizon-fail-on-regression failed the run on
        **({"failed_regressions": [{"suite": r.suite, "metric": r.metric,
                                    "change": r.change, "adjusted_p": r.adjusted_p}
                                   for r in regressed]} if regressed else {}),
        # the variants significantly worse than their reference it failed the run on
        **({"failed_variants": [{"package": f.package,
                                 "variant": f.variant, "reference": f.reference,
                                 "metric": f.metric, "change": f.change,
                                 "adjusted_p": f.adjusted_p, "reason": f.reason}
                                for f in worse]} if worse else {}),
        # what was run, so the override says on its own what it approved
        "provenance": {"created": document.data["created"],
                       "plugin": found.get("plugin"), "started": found.get("started"),
                       "finished": found.get("finished"),
                       "packages": [{"name": p.get("name"), "version": p.get("version"),
                                     "git": p.get("git")} for p in found.get("packages", [])]},
    }
    return sign(body, key)


def find(document: Document, key: Any = None) -> tuple[dict[str, Any], str | None] | None:
    """The override beside ``document`` and the fingerprint that signed it (verified with
    ``key`` when given, else only matched to its content); None when there is none.
    EvidenceError when it is not an override, is for another results file, or its
    signature does not hold."""
    path = override_path(document.path)
    if not path.exists():
        return None
    data = read_json_file(path, MAX_SMALL_BYTES)
    if not isinstance(data, dict) or data.get("format") != OVERRIDE_FORMAT:
        raise EvidenceError(f"{path} is not an override file ({OVERRIDE_FORMAT})")
    if data.get("results_sha256") != document.sha256:
        raise EvidenceError(f"{path} overrides another results file (sha256 "
                            f"{str(data.get('results_sha256'))[:64]}), not this one (sha256 "
                            f"{document.sha256})")
    for name in ("approver", "reason", "at"):
        if not isinstance(data.get(name), str) or not data[name]:
            raise EvidenceError(f"{path} has no {name}")
    if data.get(SIGNATURE) is None:
        raise EvidenceError(f"{path} is not signed; make it with 'elizon-eval override'")
    try:
        signer = check_signed(data, key, str(path))
    except signing.SignatureInvalid as exc:
        raise EvidenceError(str(exc)) from None
    return data, signer


def summary(data: dict[str, Any]) -> str:
    """How every view says it: ``failed, overridden by NAME: REASON``."""
    return f"failed, overridden by {data['approver'][:200]}: {data['reason'][:MAX_TEXT]}"
