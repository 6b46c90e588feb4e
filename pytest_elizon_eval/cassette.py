"""Record and replay entry-point results (``--elizon-record`` / ``--elizon-replay``, SPEC §7).

A cassette is one human-readable JSON file: per case, keyed by suite path and
case id, the SHA-256 of the case's input and every run's result (output,
error, latency, whether it timed out). Keys and fields are sorted, so a
re-recording diffs well in code review. Replay answers from it without
calling the entry point; a case that is not in it, or whose input changed
since it was recorded, is an error — never replayed from a stale answer and
never called live instead. No pytest import here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from . import errors
from .calling import EntryCall, ErrorInfo
from .loading import read_json

__all__ = ["FORMAT", "Cassette", "CassetteMiss", "call_from_data", "call_to_data",
           "input_sha256", "key"]

FORMAT = "pytest-elizon-eval/cassette/v1"


class CassetteMiss(Exception):
    """The cassette cannot answer for a case; ``code`` says why."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def key(suite_path: str, case_id: str) -> str:
    return f"{suite_path}::{case_id}"


def input_sha256(case_input: object) -> str:
    canonical = json.dumps(case_input, sort_keys=True, ensure_ascii=False,
                           separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def call_to_data(call: EntryCall) -> dict[str, Any]:
    return {"value": call.value, "text": call.text,
            "error": call.error.to_data() if call.error else None,
            "latency_ms": call.latency_ms, "timed_out": call.timed_out}


def call_from_data(data: Mapping[str, Any]) -> EntryCall:
    error = data.get("error")
    return EntryCall(value=data.get("value"), text=data.get("text"),
                     error=ErrorInfo.from_data(error) if error else None,
                     latency_ms=data.get("latency_ms"), timed_out=bool(data.get("timed_out")),
                     replayed=True)


class Cassette:
    """The recordings of a cassette file, by case key."""

    def __init__(self, entries: dict[str, dict[str, Any]] | None = None) -> None:
        self.entries: dict[str, dict[str, Any]] = dict(entries or {})

    @classmethod
    def load(cls, path: Path) -> Cassette:
        """Read a cassette; ``ValueError`` says what is wrong with the file."""
        data = read_json(path)
        if not isinstance(data, dict) or data.get("format") != FORMAT \
                or not isinstance(data.get("cases"), dict):
            raise ValueError(f"not a cassette (expected {{\"format\": \"{FORMAT}\", "
                             "\"cases\": {…}})")
        for name, entry in data["cases"].items():
            if not isinstance(entry, dict) or not isinstance(entry.get("runs"), list) \
                    or not isinstance(entry.get("input_sha256"), str):
                raise ValueError(f"case {name!r} has no 'input_sha256' and 'runs'")
        return cls(data["cases"])

    def answers(self, suite_path: str, case_id: str, case_input: object, runs: int
                ) -> list[EntryCall]:
        """The recorded calls for ``runs`` runs of a case, or :class:`CassetteMiss`."""
        entry = self.entries.get(key(suite_path, case_id))
        if entry is None:
            raise CassetteMiss(errors.ELIZON_CASSETTE_MISSING, f"{key(suite_path, case_id)} is not "
                               "in the cassette; record it again with --elizon-record")
        if entry["input_sha256"] != input_sha256(case_input):
            raise CassetteMiss(errors.ELIZON_CASSETTE_STALE,
                               f"the input of {key(suite_path, case_id)} changed since it was "
                               "recorded; record it again with --elizon-record")
        if len(entry["runs"]) < runs:
            raise CassetteMiss(errors.ELIZON_CASSETTE_MISSING, f"{key(suite_path, case_id)} has "
                               f"{len(entry['runs'])} recorded run(s); repeat asks for {runs}")
        return [call_from_data(run) for run in entry["runs"][:runs]]

    def update(self, recordings: Iterable[Mapping[str, Any]]) -> None:
        """Add or replace the recordings of the cases of this run."""
        for recording in recordings:
            self.entries[key(recording["suite"], recording["case"])] = {
                "input_sha256": recording["input_sha256"], "runs": recording["runs"]}

    def dump(self) -> str:
        """The file's text: stable order, one field per line."""
        return json.dumps({"format": FORMAT, "cases": self.entries}, indent=2, sort_keys=True,
                          ensure_ascii=False) + "\n"
