"""HMAC-SHA256 hash-chained attestations: a tamper trail that names the first changed case.

Owns docs/contract.md#attestations (the seed's ``attestEvalSuite`` and
``verifyEvalAttestation``): the shared secret (``$ELIZON_ATTESTATION_SECRET``, never
written or shown: only its key id, an HMAC of a fixed text, is); the JSON Lines file a
run writes (a header, one record per case in node-id order, a final record, each
MAC'd over its canonical bytes, which hold the MAC of the record before it); verifying
such a file into one :class:`Verdict`; and comparing a results document's cases with
the records. An Ed25519 signature (:mod:`.signing`) proves a whole results document
to anyone with the public key; an attestation proves each case to whoever holds the
secret, and says which record was changed, removed, moved or spliced in.

Stdlib ``hmac`` and ``hashlib`` only. No pytest import here.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .signing import canonical

__all__ = [
    "ALGORITHM",
    "FORMAT",
    "HEADER",
    "MIN_SECRET_CHARS",
    "SECRET_VARIABLE",
    "TAMPERED",
    "TRUNCATED",
    "UNUSABLE",
    "VALID",
    "Secret",
    "Verdict",
    "case_fields",
    "compare",
    "from_environment",
    "lines",
    "metadata",
    "records",
    "verify_bytes",
    "verify_file",
]

FORMAT = "pytest-elizon-eval/attestation/v1"
ALGORITHM = "hmac-sha256"
#: Prefixed to a record's canonical bytes before the MAC, so an attestation's MAC can never
#: pass for an HMAC the same secret makes of something else.
CONTEXT = b"pytest-elizon-eval/attestation/v1\n"
SECRET_VARIABLE = "ELIZON_ATTESTATION_SECRET"
MIN_SECRET_CHARS = 16
#: The key id is HMAC-SHA256(secret, this), 16 hex digits: it tells a wrong secret from a
#: changed header without the secret, or a plain hash of it, ever reaching the file.
KEY_ID_TEXT = b"elizon-attestation-key-id"
#: The header's ``prev``: nothing comes before it.
FIRST_PREV = "0" * 64
ORDER = "nodeid"
#: Largest file read (100,000 cases make about 50 MB).
MAX_FILE_BYTES = 256 * 1024 * 1024
#: Characters of an id from the file shown in a verdict.
_SHOWN = 200

#: Verdicts, each with its own exit status in ``elizon-eval verify`` (docs/cli.md#verify).
VALID, TAMPERED, UNUSABLE, TRUNCATED, HEADER = (
    "valid", "tampered", "unusable", "truncated", "header")


class Secret:
    """The shared secret, and where it came from. Its ``repr`` and every message name the
    source and the key id only, never the secret."""

    __slots__ = ("_key", "source")

    def __init__(self, key: bytes, source: str) -> None:
        self._key = key
        self.source = source

    def __repr__(self) -> str:
        return f"Secret({self.source}, key id {self.key_id})"

    @classmethod
    def from_text(cls, text: str, source: str) -> Secret:
        """``ValueError`` naming ``source`` (never the text) if it is too short. Surrounding
        whitespace is dropped, so a secret pasted with a newline is the same secret."""
        value = text.strip()
        if len(value) < MIN_SECRET_CHARS:
            raise ValueError(f"{source} is shorter than {MIN_SECRET_CHARS} characters: an "
                             "attestation is only as strong as its secret; use a random one "
                             "(python -c \"import secrets; print(secrets.token_urlsafe(32))\")")
        # surrogateescape: bytes of the environment that are not UTF-8 stay those bytes
        return cls(value.encode("utf-8", "surrogateescape"), source)

    @property
    def key_id(self) -> str:
        return hmac.new(self._key, KEY_ID_TEXT, hashlib.sha256).hexdigest()[:16]

    def mac(self, record: Mapping[str, Any]) -> str:
        """The MAC of ``record``: over every field but ``mac`` itself."""
        body = canonical({k: v for k, v in record.items() if k != "mac"})
        return hmac.new(self._key, CONTEXT + body, hashlib.sha256).hexdigest()

    def holds(self, record: Mapping[str, Any]) -> bool:
        """Whether ``record`` (untrusted) carries the MAC this secret makes of it."""
        given = record.get("mac")
        try:
            expected = self.mac(record)
        except (ValueError, RecursionError):  # nothing this writer made
            return False
        return isinstance(given, str) and hmac.compare_digest(given.encode("utf-8", "replace"),
                                                              expected.encode("ascii"))


def from_environment() -> Secret | None:
    """The secret in ``$ELIZON_ATTESTATION_SECRET``; None when unset or empty; ValueError
    (naming the variable, never its value) when too short."""
    text = os.environ.get("ELIZON_ATTESTATION_SECRET", "")
    if not text.strip():
        return None
    return Secret.from_text(text, f"${SECRET_VARIABLE}")


# -- writing ---------------------------------------------------------------------------------

def _sha256(value: Any) -> str:
    return hashlib.sha256(canonical(value)).hexdigest()


def case_fields(case: Mapping[str, Any]) -> dict[str, Any]:
    """What a case record attests of a case, from its plain data as a report carries it
    (``case_id``) or a results file keeps it (``id``): its input and output only as the
    SHA-256 of their canonical JSON, never their text."""
    assertions = case.get("assertions")
    return {
        "nodeid": case.get("nodeid"),
        "case_id": case["case_id"] if "case_id" in case else case.get("id"),
        "outcome": case.get("outcome"),
        "score": case.get("judge_score"),
        "checks": [{"name": a.get("name"), "passed": a.get("passed")}
                   for a in (assertions if isinstance(assertions, list) else [])
                   if isinstance(a, Mapping)],
        "input_sha256": _sha256(case.get("input")),
        "output_sha256": _sha256(case.get("output")),
        "output_length": case.get("output_length"),
    }


def metadata(provenance: Mapping[str, Any] | None) -> dict[str, Any]:
    """What an auditor asks of a run first, from its results' provenance as written: the
    entry points the cases were given to (the model), the judges that graded them, and the
    datasets (each suite's case count and content hash) where the provenance holds them."""
    entries: set[str] = set()
    judges: set[str] = set()
    datasets: list[Any] = []
    packages = provenance.get("packages") if provenance is not None else None
    for package in packages if isinstance(packages, list) else []:
        entries.update(package.get("entries") or ())
        judges.update(package.get("judges") or ())
        datasets += package.get("datasets") or []
    return {"entries": sorted(entries), "judges": sorted(judges), "datasets": datasets}


def _sealed(record: dict[str, Any], secret: Secret) -> dict[str, Any]:
    record["mac"] = secret.mac(record)
    return record


def records(cases: Iterable[Mapping[str, Any]], count: int, secret: Secret, *,
            provenance: Mapping[str, Any] | None, run_id: str | None = None,
            created: str | None = None) -> Iterator[dict[str, Any]]:
    """The chain of a run's ``count`` cases (their plain data, in node-id order, made one at
    a time): the header, a record per case, the final record."""
    run_id = run_id or secrets.token_hex(16)
    header = _sealed({
        "format": FORMAT, "record": "header", "index": 0, "run_id": run_id,
        "created": created or datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "algorithm": ALGORITHM, "key_id": secret.key_id, "order": ORDER, "cases": count,
        "metadata": metadata(provenance),
        "provenance": None if provenance is None else dict(provenance), "prev": FIRST_PREV,
    }, secret)
    yield header
    prev, index = header["mac"], 0
    for case in cases:
        index += 1
        record = _sealed({"record": "case", "index": index, "run_id": run_id,
                          **case_fields(case), "prev": prev}, secret)
        prev = record["mac"]
        yield record
    if index != count:  # the header already said how many: a chain that lies is never made
        raise ValueError(f"the attestation's header counts {count} cases, {index} were given")
    yield _sealed({"record": "final", "index": count + 1, "run_id": run_id, "cases": count,
                   "prev": prev}, secret)


def lines(cases: Iterable[Mapping[str, Any]], count: int, secret: Secret, *,
          provenance: Mapping[str, Any] | None, run_id: str | None = None,
          created: str | None = None) -> Iterator[str]:
    """:func:`records` as the file's lines. ASCII JSON: a lone surrogate in an id is written
    as its escape and reads back as the string the MAC covers."""
    for record in records(cases, count, secret, provenance=provenance, run_id=run_id,
                          created=created):
        yield json.dumps(record, ensure_ascii=True) + "\n"


# -- verifying -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Verdict:
    """What verifying an attestation found: ``status`` is one of :data:`VALID`,
    :data:`TAMPERED`, :data:`TRUNCATED`, :data:`HEADER` or :data:`UNUSABLE`, and
    ``message`` says it in one line (text from the file in it is not yet made safe)."""

    status: str
    message: str
    #: The position in the chain (0: the header) of the first record that does not hold.
    index: int | None = None
    case_id: str | None = None
    run_id: str | None = None
    #: Records verified, the header and the final record included.
    records: int = 0
    #: A valid chain's case records, by node id.
    cases: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return self.status == VALID


class _Duplicate(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:  # two readers could see two different records
            raise _Duplicate(f"the key {key[:60]!r} appears twice in one object")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _parse(line: str) -> tuple[dict[str, Any] | None, str]:
    """A line's record, or None and what the line is instead."""
    if not line.strip():
        return None, "empty"
    try:
        value = json.loads(line, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except RecursionError:
        return None, "nested too deeply to be a record"
    except _Duplicate as exc:
        return None, f"not a record ({exc})"
    except ValueError as exc:
        return None, f"not JSON ({str(exc)[:120]})"
    if not isinstance(value, dict):
        return None, f"not a JSON object (a {type(value).__name__})"
    return value, ""


def _short(value: object) -> str:
    text = str(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "…"


def _what(record: Mapping[str, Any]) -> str:
    """``case ID, node id NODEID`` (or ``final record``), as the file names it."""
    kind = record.get("record")
    if kind == "case":
        return f"case {_short(record.get('case_id'))}, node id {_short(record.get('nodeid'))}"
    return f"{_short(kind)} record"


def _label(position: int, record: Mapping[str, Any]) -> str:
    """``record 3 (line 4, case ID, node id NODEID)``: the record at that place."""
    return f"record {position} (line {position + 1}, {_what(record)})"


def _case_id(record: Mapping[str, Any] | None) -> str | None:
    value = record.get("case_id") if record is not None else None
    return value if isinstance(value, str) else None


def verify_file(path: Path, secret: Secret) -> Verdict:
    """Verify the attestation file at ``path`` (hostile input) with ``secret``."""
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        return Verdict(UNUSABLE, "no such file")
    except IsADirectoryError:
        return Verdict(UNUSABLE, "it is a directory, not a file")
    except OSError as exc:
        return Verdict(UNUSABLE, f"cannot read it: {exc.strerror or exc}")
    if len(raw) > MAX_FILE_BYTES:
        return Verdict(UNUSABLE, f"larger than {MAX_FILE_BYTES:,} bytes; not read")
    return verify_bytes(raw, secret)


def verify_bytes(raw: bytes, secret: Secret) -> Verdict:
    """Re-derive the chain of an attestation file's bytes: the first record that does not
    hold, and why; or that every record does."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Verdict(UNUSABLE, f"not an attestation file: not UTF-8 text (byte offset "
                                 f"{exc.start})")
    if not text.strip():
        return Verdict(TRUNCATED, "truncated: the file is empty (no header, no records)",
                       index=0)
    found = text.split("\n")
    if found[-1] == "":  # the newline that ends the last line
        found.pop()
    parsed = [_parse(line) for line in found]
    header, problem = parsed[0]
    if header is None:
        return Verdict(UNUSABLE, f"not an attestation file: line 1 is {problem}")
    if header.get("format") != FORMAT:
        if header.get("record") in ("case", "final"):
            return Verdict(HEADER, f"the chain has no header: line 1 is a {header['record']} "
                                   "record (the header was removed)", index=0,
                           case_id=_case_id(header))
        return Verdict(UNUSABLE, f"not a {FORMAT} file (line 1's format is "
                                 f"{_short(header.get('format'))!r})")
    if not secret.holds(header):
        if header.get("key_id") != secret.key_id:
            return Verdict(HEADER, "wrong secret or tampered header: the header's MAC does not "
                                   f"match, and its key id {_short(header.get('key_id'))} is "
                                   f"not this secret's ({secret.key_id})", index=0)
        return Verdict(HEADER, "wrong secret or tampered header: the header's MAC does not "
                               "match, though its key id is this secret's: the header was "
                               "changed", index=0)
    run_id, count = header.get("run_id"), header.get("cases")
    if header.get("record") != "header" or header.get("index") != 0 \
            or header.get("prev") != FIRST_PREV or not isinstance(run_id, str) \
            or not isinstance(count, int) or isinstance(count, bool) or count < 0:
        return Verdict(UNUSABLE, "the header's MAC holds, but it is not a header this version "
                                 "reads (its record, index, prev, run_id or cases)")
    return _chain(parsed, header, secret)


def _chain(parsed: list[tuple[dict[str, Any] | None, str]], header: dict[str, Any],
           secret: Secret) -> Verdict:
    run_id, count = header["run_id"], header["cases"]
    prev = header["mac"]
    cases: dict[str, Mapping[str, Any]] = {}
    last = 0
    for position in range(1, len(parsed)):
        record, problem = parsed[position]
        if record is None:
            return Verdict(TAMPERED, f"tampered: record {position} (line {position + 1}) is "
                                     f"{problem}", index=position, run_id=run_id)
        label = _label(position, record)
        if not secret.holds(record):
            return _at(position, record, run_id, TAMPERED, f"tampered: {label}: MAC mismatch: "
                                                           "the record was changed after it "
                                                           "was written")
        if record.get("run_id") != run_id:
            return _at(position, record, run_id, TAMPERED,
                       f"tampered: {label} is from another run (run id "
                       f"{_short(record.get('run_id'))}; this chain's is {run_id}): spliced in "
                       "from another attestation")
        if record.get("index") != position or record.get("prev") != prev:
            return _out_of_place(parsed, position, record, label, run_id, count)
        kind = record.get("record")
        if kind == "final":
            if position + 1 < len(parsed):
                return _at(position + 1, parsed[position + 1][0], run_id, TAMPERED,
                           f"tampered: record {position + 1} (line {position + 2}) follows the "
                           "final record: appended")
            if record.get("cases") != count or position != count + 1:  # never made so
                return _at(position, record, run_id, TAMPERED,
                           f"tampered: {label} counts {_short(record.get('cases'))} cases, "
                           f"the header {count}")
            return Verdict(VALID, f"valid: {position + 1} records (header, {count} case"
                                  f"{'s' if count != 1 else ''}, final) of run {run_id}, key "
                                  f"id {secret.key_id}", run_id=run_id, records=position + 1,
                           cases=cases)
        nodeid = record.get("nodeid")
        if kind != "case" or position > count or not isinstance(nodeid, str):
            return _at(position, record, run_id, TAMPERED,
                       f"tampered: {label} is not a case record the header allows (it counts "
                       f"{count} cases)")
        cases[nodeid] = record
        prev, last = record["mac"], position
    after = f"after {_label(last, parsed[last][0] or {})}" if last else "after its header"
    return Verdict(TRUNCATED, f"truncated: the chain ends {after} without its final record: "
                              f"{last} of the header's {count} case records are there",
                   index=len(parsed), run_id=run_id)


def _at(position: int, record: Mapping[str, Any] | None, run_id: str, status: str,
        message: str) -> Verdict:
    """The verdict on the record at ``position``."""
    return Verdict(status, message, index=position, case_id=_case_id(record), run_id=run_id)


def _out_of_place(parsed: list[tuple[dict[str, Any] | None, str]], position: int,
                  record: Mapping[str, Any], label: str, run_id: str, count: int) -> Verdict:
    """The verdict on an authentic record of this run that does not follow the one before
    it: records moved, removed or repeated."""
    index = record.get("index")
    here = (f"broken chain link at record {position}: line {position + 1} holds record "
            f"{_short(index)} ({_what(record)})")
    if isinstance(index, int) and index > position:
        later = next((p for p in range(position + 1, len(parsed))
                      if (r := parsed[p][0]) is not None and r.get("index") == position
                      and r.get("run_id") == run_id), None)
        if later is not None:
            return _at(position, record, run_id, TAMPERED,
                       f"tampered: reordered: {here}, and record {position} is at line "
                       f"{later + 1}")
        if record.get("record") == "final":
            return _at(position, record, run_id, TRUNCATED,
                       f"truncated: case records {position} to {index - 1} are missing: the "
                       f"final record (line {position + 1}) follows record {position - 1}; "
                       f"{position - 1} of the header's {count} case records are there")
        return _at(position, record, run_id, TAMPERED,
                   f"tampered: {here}: record {position} was removed")
    if isinstance(index, int) and index < position:
        return _at(position, record, run_id, TAMPERED,
                   f"tampered: {here}: a record repeated or moved down")
    return _at(position, record, run_id, TAMPERED,
               f"tampered: broken chain link at {label}: it does not follow record "
               f"{position - 1} (its prev is not that record's MAC)")


# -- results against the attestation ---------------------------------------------------------

#: A record's fields compared with a results file's case, and what each is called.
_COMPARED = (("case_id", "id"), ("outcome", "outcome"), ("score", "judge score"),
             ("checks", "checks"), ("input_sha256", "input"), ("output_sha256", "output"),
             ("output_length", "output length"))


def compare(document: Mapping[str, Any], attested: Mapping[str, Mapping[str, Any]]
            ) -> str | None:
    """The first case of the results ``document`` (in document order, 1-based) that is not
    as a valid attestation's records say, and how; or the first attested case the document
    lacks. None when the document holds exactly the attested cases, as attested."""
    seen: set[str] = set()
    position = 0
    suites = document.get("suites")
    for suite in suites if isinstance(suites, list) else []:
        for case in suite.get("cases", []) if isinstance(suite, Mapping) else []:
            position += 1
            try:
                fields = case_fields(case)
            except (ValueError, RecursionError, AttributeError):
                return f"case {position} cannot be read as a case"
            label = (f"case {position} (id {_short(fields['case_id'])}, node id "
                     f"{_short(fields['nodeid'])})")
            record = attested.get(fields["nodeid"]) if isinstance(fields["nodeid"], str) \
                else None
            if record is None:
                return f"{label} is not in the attestation: added after the run"
            changed = [word for name, word in _COMPARED if record.get(name) != fields[name]]
            if changed:
                return (f"{label} differs from its attested record {record.get('index')}: "
                        f"{', '.join(changed)} changed after the run")
            seen.add(fields["nodeid"])
    # a valid chain's records: each index a whole number
    missing = sorted((r for n, r in attested.items() if n not in seen),
                     key=lambda r: int(r.get("index") or 0))
    if missing:
        first = missing[0]
        return (f"attested record {first.get('index')} (case {_short(first.get('case_id'))}, "
                f"node id {_short(first.get('nodeid'))}) is not in the results: removed after "
                f"the run ({len(missing)} attested case{'s' if len(missing) != 1 else ''} "
                "missing)")
    return None
