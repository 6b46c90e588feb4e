"""HMAC-SHA256 hash-chained attestations: a tamper trail that names the first changed case.

Owns docs/contract.md#attestations (the seed's ``attestEvalSuite`` and
``verifyEvalAttestation``): the shared secret (``$ELIZON_ATTESTATION_SECRET``, never
written or shown: only its key id, an HMAC of a fixed text, is); the JSON Lines file a
run writes (a header with each suite's gate and the run's provenance, one record per
case in node-id order, a final record, each MAC'd over its canonical bytes, which hold
the MAC of the record before it); verifying such a file, one line at a time, into one
:class:`Verdict`; and comparing a results document with what one or more valid chains
attest (:class:`Attested`): its suites, its cases and its provenance. An Ed25519
signature (:mod:`.signing`) proves a whole results document to anyone with the public
key; an attestation proves each case to whoever holds the secret, and says which record
was changed, removed, moved or spliced in.

Stdlib ``hmac`` and ``hashlib`` only (the provenance of shards is merged as ``elizon-eval
merge`` merges it, by :mod:`.provenance`). No pytest import here.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import os
import secrets
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from .signing import canonical

__all__ = [
    "ALGORITHM",
    "FORMAT",
    "HEADER",
    "MIN_SECRET_CHARS",
    "SECRET_VARIABLE",
    "SUITE_FIELDS",
    "TAMPERED",
    "TRUNCATED",
    "UNUSABLE",
    "VALID",
    "Attested",
    "Secret",
    "Verdict",
    "case_fields",
    "compare",
    "from_environment",
    "lines",
    "metadata",
    "records",
    "suite_fields",
    "verify_bytes",
    "verify_file",
    "verify_stream",
]

#: v2: the header attests each suite (``suites``) and names the models; a case record its
#: suite and what lets a case that did not pass leave the gate alone (``advisory``,
#: ``inconclusive_passes``). A v1 file is not read: its records have other shapes.
FORMAT = "pytest-elizon-eval/attestation/v2"
ALGORITHM = "hmac-sha256"
#: Prefixed to a record's canonical bytes before the MAC, so an attestation's MAC can never
#: pass for an HMAC the same secret makes of something else (nor a v1 record's for v2's).
CONTEXT = FORMAT.encode("ascii") + b"\n"
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


def case_fields(case: Mapping[str, Any], suite: str | None = None) -> dict[str, Any]:
    """What a case record attests of a case, from its plain data as a report carries it
    (``case_id``, its ``suite`` inside) or a results file keeps it (``id``; ``suite``: the
    path of the suite it is listed under): its input and output only as the SHA-256 of
    their canonical JSON, never their text; and what decides whether a case that did not
    pass fails the gate (docs/contract.md#outcomes-and-gates)."""
    assertions = case.get("assertions")
    if suite is None:
        info = case.get("suite")
        suite = info.get("path") if isinstance(info, Mapping) else None
    repeat = case.get("repeat")
    return {
        "nodeid": case.get("nodeid"),
        "case_id": case["case_id"] if "case_id" in case else case.get("id"),
        "suite": suite,
        "outcome": case.get("outcome"),
        "score": case.get("judge_score"),
        "checks": [{"name": a.get("name"), "passed": a.get("passed")}
                   for a in (assertions if isinstance(assertions, list) else [])
                   if isinstance(a, Mapping)],
        "input_sha256": _sha256(case.get("input")),
        "output_sha256": _sha256(case.get("output")),
        "output_length": case.get("output_length"),
        # only an unaligned judge failed it; an inconclusive case the ini lets pass
        "advisory": case.get("advisory"),
        "inconclusive_passes": repeat.get("inconclusive_passes")
        if isinstance(repeat, Mapping) else None,
    }


#: What a header attests of each suite, as a results file's suite (and a report's
#: ``suite``) names it: the gate and the effective advisory flag decide what a failure
#: does; the file's SHA-256 and the cases' content hash say which suite it was.
SUITE_FIELDS = ("path", "gate", "advisory", "sha256", "content_hash")


def suite_fields(suite: Mapping[str, Any]) -> dict[str, Any]:
    """What the header attests of one suite (a results file's suite entry, or the plain
    data of a :class:`~..decide.results_data.SuiteInfo`)."""
    return {name: suite.get(name) for name in SUITE_FIELDS}


def metadata(provenance: Mapping[str, Any] | None,
             models: Iterable[str] = ()) -> dict[str, Any]:
    """What an auditor asks of a run first: the entry points the cases were given to, the
    ``models`` that answered (what the answers' usage named, and what an ``output: openai``
    entry asks for), the judges that graded them, and the datasets (each suite's case
    count and content hash) — all but the models from its results' provenance as
    written."""
    entries: set[str] = set()
    judges: set[str] = set()
    datasets: list[Any] = []
    packages = provenance.get("packages") if provenance is not None else None
    for package in packages if isinstance(packages, list) else []:
        entries.update(package.get("entries") or ())
        judges.update(package.get("judges") or ())
        datasets += package.get("datasets") or []
    return {"entries": sorted(entries), "models": sorted(set(models)), "judges": sorted(judges),
            "datasets": datasets}


def _sealed(record: dict[str, Any], secret: Secret) -> dict[str, Any]:
    record["mac"] = secret.mac(record)
    return record


def records(cases: Iterable[Mapping[str, Any]], count: int, secret: Secret, *,
            provenance: Mapping[str, Any] | None,
            suites: Iterable[Mapping[str, Any]] = (), models: Iterable[str] = (),
            run_id: str | None = None, created: str | None = None
            ) -> Iterator[dict[str, Any]]:
    """The chain of a run's ``count`` cases (their plain data, in node-id order, made one at
    a time): the header (with each of ``suites`` and the ``models``), a record per case,
    the final record."""
    run_id = run_id or secrets.token_hex(16)
    header = _sealed({
        "format": FORMAT, "record": "header", "index": 0, "run_id": run_id,
        "created": created or datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "algorithm": ALGORITHM, "key_id": secret.key_id, "order": ORDER, "cases": count,
        "suites": sorted((suite_fields(s) for s in suites), key=lambda s: str(s["path"])),
        "metadata": metadata(provenance, models),
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
          provenance: Mapping[str, Any] | None, suites: Iterable[Mapping[str, Any]] = (),
          models: Iterable[str] = (), run_id: str | None = None,
          created: str | None = None) -> Iterator[str]:
    """:func:`records` as the file's lines. ASCII JSON: a lone surrogate in an id is written
    as its escape and reads back as the string the MAC covers."""
    for record in records(cases, count, secret, provenance=provenance, suites=suites,
                          models=models, run_id=run_id, created=created):
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
    #: A valid chain's header (its suites, metadata and provenance).
    header: Mapping[str, Any] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return self.status == VALID


class _Duplicate(ValueError):
    pass


class _Unreadable(Exception):
    """The file cannot be read on as an attestation: the unusable verdict's message."""


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


_Parsed = tuple[dict[str, Any] | None, str]


def _read_lines(stream: IO[bytes]) -> Iterator[str]:
    """The file's lines (split at ``\n`` only; the newline that ends the last one is no line
    of its own), read and decoded one at a time, never more than :data:`MAX_FILE_BYTES` in
    all; :class:`_Unreadable` for bytes that are not UTF-8 or a file over the limit."""
    read = 0
    while True:
        raw = stream.readline(MAX_FILE_BYTES + 1 - read)
        if not raw:
            return
        read += len(raw)
        if read > MAX_FILE_BYTES:
            raise _Unreadable(f"larger than {MAX_FILE_BYTES:,} bytes; not read")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _Unreadable(f"not an attestation file: not UTF-8 text (byte offset "
                              f"{read - len(raw) + exc.start})") from None
        yield text[:-1] if text.endswith("\n") else text


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
    """Verify the attestation file at ``path`` (hostile input) with ``secret``, reading it
    one line at a time."""
    try:
        with path.open("rb") as fh:
            try:
                size = os.fstat(fh.fileno()).st_size
            except OSError:
                size = 0
            if size > MAX_FILE_BYTES:  # a regular file's size; any other is counted as read
                return Verdict(UNUSABLE, f"larger than {MAX_FILE_BYTES:,} bytes; not read")
            return verify_stream(fh, secret)
    except FileNotFoundError:
        return Verdict(UNUSABLE, "no such file")
    except IsADirectoryError:
        return Verdict(UNUSABLE, "it is a directory, not a file")
    except OSError as exc:
        return Verdict(UNUSABLE, f"cannot read it: {exc.strerror or exc}")


def verify_bytes(raw: bytes, secret: Secret) -> Verdict:
    """:func:`verify_stream` of an attestation file's bytes."""
    return verify_stream(io.BytesIO(raw), secret)


def verify_stream(stream: IO[bytes], secret: Secret) -> Verdict:
    """Re-derive the chain of an attestation file, line by line: the first record that
    does not hold, and why; or that every record does. Only the line at hand (and, of a
    valid chain, its header and case records) is held."""
    found = _read_lines(stream)
    try:
        first = next(found, None)
        if first is None or not first.strip():
            if all(not line.strip() for line in found):
                return Verdict(TRUNCATED, "truncated: the file is empty (no header, no "
                                          "records)", index=0)
            return Verdict(UNUSABLE, "not an attestation file: line 1 is empty")
        header, problem = _parse(first)
        if header is None:
            return Verdict(UNUSABLE, f"not an attestation file: line 1 is {problem}")
        problem_with_header = _check_header(header, secret)
        if problem_with_header is not None:
            return problem_with_header
        return _chain((_parse(line) for line in found), header, secret)
    except _Unreadable as exc:
        return Verdict(UNUSABLE, str(exc))


def _check_header(header: dict[str, Any], secret: Secret) -> Verdict | None:
    """The verdict on a first line that is not a header this secret made, else None."""
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
    run_id, count, suites = header.get("run_id"), header.get("cases"), header.get("suites")
    if header.get("record") != "header" or header.get("index") != 0 \
            or header.get("prev") != FIRST_PREV or not isinstance(run_id, str) \
            or not isinstance(count, int) or isinstance(count, bool) or count < 0 \
            or not isinstance(suites, list) \
            or not all(isinstance(s, dict) and isinstance(s.get("path"), str) for s in suites):
        return Verdict(UNUSABLE, "the header's MAC holds, but it is not a header this version "
                                 "reads (its record, index, prev, run_id, cases or suites)")
    return None


def _chain(parsed: Iterator[_Parsed], header: dict[str, Any], secret: Secret) -> Verdict:
    run_id, count = header["run_id"], header["cases"]
    prev = header["mac"]
    cases: dict[str, Mapping[str, Any]] = {}
    last: tuple[int, Mapping[str, Any]] | None = None
    position = 0
    for record, problem in parsed:
        position += 1
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
            return _out_of_place(parsed, position, record, label, run_id, count, secret)
        kind = record.get("record")
        if kind == "final":
            appended = next(parsed, None)
            if appended is not None:
                return _at(position + 1, appended[0], run_id, TAMPERED,
                           f"tampered: record {position + 1} (line {position + 2}) follows the "
                           "final record: appended")
            if record.get("cases") != count or position != count + 1:  # never made so
                return _at(position, record, run_id, TAMPERED,
                           f"tampered: {label} counts {_short(record.get('cases'))} cases, "
                           f"the header {count}")
            return Verdict(VALID, f"valid: {position + 1} records (header, {count} case"
                                  f"{'s' if count != 1 else ''}, final) of run {run_id}, key "
                                  f"id {secret.key_id}", run_id=run_id, records=position + 1,
                           cases=cases, header=header)
        nodeid = record.get("nodeid")
        if kind != "case" or position > count or not isinstance(nodeid, str):
            return _at(position, record, run_id, TAMPERED,
                       f"tampered: {label} is not a case record the header allows (it counts "
                       f"{count} cases)")
        cases[nodeid] = record
        prev, last = record["mac"], (position, record)
    after = f"after {_label(*last)}" if last else "after its header"
    return Verdict(TRUNCATED, f"truncated: the chain ends {after} without its final record: "
                              f"{last[0] if last else 0} of the header's {count} case records "
                              "are there", index=position + 1, run_id=run_id)


def _at(position: int, record: Mapping[str, Any] | None, run_id: str, status: str,
        message: str) -> Verdict:
    """The verdict on the record at ``position``."""
    return Verdict(status, message, index=position, case_id=_case_id(record), run_id=run_id)


def _out_of_place(rest: Iterator[_Parsed], position: int, record: Mapping[str, Any],
                  label: str, run_id: str, count: int, secret: Secret) -> Verdict:
    """The verdict on an authentic record of this run that does not follow the one before
    it: records moved, removed or repeated. ``rest``: the lines after it, searched (only
    for records whose MAC holds) for the one that should have been here."""
    index = record.get("index")
    here = (f"broken chain link at record {position}: line {position + 1} holds record "
            f"{_short(index)} ({_what(record)})")
    if isinstance(index, int) and index > position:
        later = next((p for p, (r, _) in enumerate(rest, start=position + 1)
                      if r is not None and r.get("index") == position
                      and r.get("run_id") == run_id and secret.holds(r)), None)
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

class Attested:
    """What one or more valid attestations (one per shard of a merged results file) attest
    together: their case records by node id, their suites by path, and each run's
    provenance."""

    def __init__(self) -> None:
        self.cases: dict[str, Mapping[str, Any]] = {}
        self.suites: dict[str, Mapping[str, Any]] = {}
        self.provenances: list[Mapping[str, Any] | None] = []

    def __len__(self) -> int:
        return len(self.cases)

    def add(self, verdict: Verdict) -> str | None:
        """Add a valid chain's records; what makes them not one run's with those added
        before (a case attested twice, a suite attested otherwise), else None. What is
        added still counts when there is a problem: every attestation is checked."""
        twice = next((n for n in verdict.cases if n in self.cases), None)
        self.cases.update(verdict.cases)
        suites = verdict.header.get("suites")
        other = None
        for suite in suites if isinstance(suites, list) else []:
            known = self.suites.setdefault(suite["path"], suite)
            if known != suite and other is None:
                other = suite["path"]
        provenance = verdict.header.get("provenance")
        self.provenances.append(provenance if isinstance(provenance, Mapping) else None)
        if twice is not None:
            return (f"case {_short(twice)} is attested by another --attestation too (the same "
                    "run given twice?)")
        if other is not None:
            return (f"suite {_short(other)} is attested with another gate, advisory flag, "
                    "file SHA-256 or content hash by another --attestation: the shards did "
                    "not run the same suite")
        return None


#: A case record's fields compared with a results file's case, and what each is called.
_COMPARED = (("case_id", "id"), ("suite", "suite"), ("outcome", "outcome"),
             ("score", "judge score"), ("checks", "checks"), ("input_sha256", "input"),
             ("output_sha256", "output"), ("output_length", "output length"),
             ("advisory", "advisory reason"), ("inconclusive_passes", "inconclusive_passes"))
#: A suite's attested fields compared with a results file's suite, and what each is called.
_SUITE_COMPARED = (("gate", "gate"), ("advisory", "advisory flag"),
                   ("sha256", "file SHA-256"), ("content_hash", "content hash"))


def _same(one: Any, other: Any) -> bool:
    """Equal as JSON values: ``true`` is not ``1``, nor ``1`` ``1.0``."""
    if type(one) is not type(other):
        return False
    if isinstance(one, dict):
        return one.keys() == other.keys() and all(_same(v, other[k]) for k, v in one.items())
    if isinstance(one, list):
        return len(one) == len(other) and all(_same(a, b) for a, b in zip(one, other, strict=True))
    return bool(one == other)


def compare(document: Mapping[str, Any], attested: Attested) -> str | None:
    """The first thing in the results ``document`` that is not as the attestations say, and
    how: a suite whose gate, advisory flag, file SHA-256 or content hash changed, or that
    no attestation names; a case (in document order, 1-based) that is not as its record
    says, or not attested; an attested case or suite the document lacks; a provenance
    that is not the attested runs'. None when the document holds exactly the attested
    suites and cases, as attested, with their provenance."""
    seen: set[str] = set()
    seen_suites: set[str] = set()
    position = 0
    suites = document.get("suites")
    for suite in suites if isinstance(suites, list) else []:
        if not isinstance(suite, Mapping):
            return "a suite of the results cannot be read as a suite"
        path = suite.get("path")
        known = attested.suites.get(path) if isinstance(path, str) else None
        if known is None:
            return f"suite {_short(path)} is not in the attestation: added after the run"
        changed = [word for name, word in _SUITE_COMPARED
                   if not _same(known.get(name), suite.get(name))]
        if changed:
            return (f"suite {_short(path)} differs from its attestation: {', '.join(changed)} "
                    "changed after the run")
        seen_suites.add(known["path"])
        cases = suite.get("cases")
        for case in cases if isinstance(cases, list) else []:
            position += 1
            try:
                fields = case_fields(case, known["path"])
            except (ValueError, RecursionError, AttributeError):
                return f"case {position} cannot be read as a case"
            label = (f"case {position} (id {_short(fields['case_id'])}, node id "
                     f"{_short(fields['nodeid'])})")
            record = attested.cases.get(fields["nodeid"]) \
                if isinstance(fields["nodeid"], str) else None
            if record is None:
                return f"{label} is not in the attestation: added after the run"
            changed = [word for name, word in _COMPARED
                       if not _same(record.get(name), fields[name])]
            if changed:
                moved = (f" (attested in suite {_short(record.get('suite'))})"
                         if "suite" in changed else "")
                return (f"{label} differs from its attested record {record.get('index')}: "
                        f"{', '.join(changed)} changed after the run{moved}")
            seen.add(fields["nodeid"])
    # a valid chain's records: each index a whole number
    missing = sorted((r for n, r in attested.cases.items() if n not in seen),
                     key=lambda r: int(r.get("index") or 0))
    if missing:
        first = missing[0]
        return (f"attested record {first.get('index')} (case {_short(first.get('case_id'))}, "
                f"node id {_short(first.get('nodeid'))}) is not in the results: removed after "
                f"the run ({len(missing)} attested case{'s' if len(missing) != 1 else ''} "
                "missing)")
    gone = sorted(p for p in attested.suites if p not in seen_suites)
    if gone:
        return f"attested suite {_short(gone[0])} is not in the results: removed after the run"
    return _compare_provenance(document.get("provenance"), attested.provenances)


def _difference(expected: Any, found: Any, where: str) -> str | None:
    """The first key (``provenance.packages[0].git.commit``) at which ``found`` is not
    ``expected``; None when they are the same JSON value."""
    if isinstance(expected, Mapping) and isinstance(found, Mapping):
        for key in [*expected, *(k for k in found if k not in expected)]:
            if key not in expected or key not in found:
                return f"{where}.{key}"
            inner = _difference(expected[key], found[key], f"{where}.{key}")
            if inner is not None:
                return inner
        return None
    if isinstance(expected, list) and isinstance(found, list):
        for index in range(max(len(expected), len(found))):
            if index >= len(expected) or index >= len(found):
                return f"{where}[{index}]"
            inner = _difference(expected[index], found[index], f"{where}[{index}]")
            if inner is not None:
                return inner
        return None
    return None if _same(expected, found) else where


def _shard_place(provenance: Mapping[str, Any] | None,
                 merged_from: Sequence[Any]) -> int:
    """Where a shard's run is among a merged file's ``merged_from`` (by its start, end and
    options), so the runs are merged again in the order ``elizon-eval merge`` took them."""
    for place, shard in enumerate(merged_from):
        if isinstance(shard, Mapping) and provenance is not None and all(
                _same(shard.get(k), provenance.get(k)) for k in ("started", "finished",
                                                                 "options")):
            return place
    return len(merged_from)


def _compare_provenance(found: Any, provenances: Sequence[Mapping[str, Any] | None]
                        ) -> str | None:
    """How the results' ``provenance`` is not the attested runs': one run's exactly, the
    shards' as ``elizon-eval merge`` merges them (every key but the shard files' names and
    document hashes, which no attestation holds)."""
    merged_from = found.get("merged_from") if isinstance(found, Mapping) else None
    if len(provenances) == 1 and merged_from is None:
        where = _difference(provenances[0], found, "provenance")
        if where is None:
            return None
        return f"{where} is not the attested provenance: changed after the run"
    from . import provenance as merging  # deferred: only a merged file needs the merge

    shards = sorted(provenances, key=lambda p: _shard_place(
        p, merged_from if isinstance(merged_from, list) else []))
    try:
        expected = merging.merge([(f"shard {n}", "", p) for n, p in enumerate(shards, 1)])
    except (ValueError, KeyError, TypeError) as exc:
        return f"the attested runs' provenance cannot be merged: {exc}"
    expected["merged_from"] = [{k: v for k, v in shard.items()
                                if k not in ("file", "document_sha256")}
                               for shard in expected["merged_from"]]
    if isinstance(found, Mapping) and isinstance(merged_from, list):
        found = {**found, "merged_from": [
            {k: v for k, v in shard.items() if k not in ("file", "document_sha256")}
            if isinstance(shard, Mapping) else shard for shard in merged_from]}
    for key in ("started", "finished"):  # merge() says now() when no shard has provenance
        if all(p is None for p in shards) and isinstance(found, Mapping):
            expected[key] = found.get(key)
    where = _difference(expected, found, "provenance")
    if where is None:
        return None
    return (f"{where} is not the attested runs' provenance as merged: changed after the "
            "run")
