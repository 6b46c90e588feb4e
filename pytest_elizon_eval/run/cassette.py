"""Record and replay entry-point results (``--elizon-record`` / ``--elizon-replay``).

A cassette is one human-readable JSON file (docs/contract.md#record-and-replay).
Per case, keyed by :func:`case_key` — the package's name, the suite's path
inside the package and the case id, so the key survives a change of
rootdir or of the folder the package sits in — the SHA-256 of the case's
input and every run's result (output, error, latency, whether it timed
out), and the time limit it was recorded under. Keys and fields are sorted,
so a re-recording diffs well in code review. Replay answers from it without
calling the entry point; a case that is not in it, or whose input changed
since it was recorded, is an error — never replayed from a stale answer and
never called live instead. No pytest import here.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import errors
from ..load.documents import read_json
from .calls import EntryCall, ErrorInfo, OutputError

__all__ = ["FORMAT", "Cassette", "CassetteMiss", "case_key", "input_sha256", "recording",
           "suite_key"]

FORMAT = "pytest-elizon-eval/cassette/v2"
_OLDER = ("pytest-elizon-eval/cassette/v1",)


class CassetteMiss(Exception):
    """The cassette cannot answer for a case; ``code`` says why."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def suite_key(package: str, folder: Path, suite: Path) -> str:
    """A suite as cassettes know it: ``package:path/inside/the/package.yaml``."""
    try:
        inside = suite.resolve().relative_to(folder.resolve()).as_posix()
    except ValueError:
        inside = suite.name
    return f"{package}:{inside}"


def case_key(suite: str, case_id: str) -> str:
    return f"{suite}::{case_id}"


#: One encoder for every input (``json.dumps`` with options makes one per call).
_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def input_sha256(case_input: object) -> str:
    canonical = _CANONICAL.encode(case_input)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def _run_data(calls: Sequence[EntryCall], conversation: bool) -> dict[str, Any]:
    if conversation:
        return {"turns": [c.to_data() for c in calls]}
    return calls[0].to_data()


def _run_calls(data: Any, where: str) -> tuple[EntryCall, ...]:
    if isinstance(data, Mapping) and "turns" in data:
        turns = data["turns"]
        if not isinstance(turns, list) or not turns:  # a run with no call replays nothing
            shown = "an empty list" if isinstance(turns, list) else f"a {_kind(turns)}"
            return (_broken(where, f"turns is {shown}; a recorded conversation is a list of "
                                   "at least one call"),)
        return tuple(_replayed(turn, f"{where}, turn {number}")
                     for number, turn in enumerate(turns, 1))
    return (_replayed(data, where),)


def _broken(where: str, problem: str, latency: Any = None) -> EntryCall:
    """The error call that stands for a recording that cannot be replayed: the case is an
    error naming where in the cassette, as a live answer that cannot be kept is."""
    return EntryCall(error=ErrorInfo("OutputError", f"{where} cannot be replayed: {problem}; "
                                                    "record it again with --elizon-record"),
                     latency_ms=latency if _duration(latency) else None, replayed=True)


def _replayed(data: Any, where: str) -> EntryCall:
    """A recorded call as replay gives it; one a hand edit made into what no live answer
    could be (a NaN, nesting past ``MAX_NESTING``, a count that is not one) is an error of
    the call, as that answer would have been, naming where it is in the cassette
    (docs/contract.md#record-and-replay)."""
    problem = _problem(data)
    if problem is None:
        try:
            return EntryCall.from_data(data)
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            problem = f"not a recorded call ({type(exc).__name__}: {exc})"
    return _broken(where, problem, data.get("latency_ms") if isinstance(data, Mapping) else None)


def _duration(value: Any) -> bool:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value) and value >= 0
    except OverflowError:  # a whole number past any float: no duration either
        return False


def _kind(value: Any) -> str:
    return type(value).__name__


def _problem(data: Any) -> str | None:
    """What keeps a recorded call from being one a live answer could have been; None when
    nothing does. The checks a live answer gets (run/answers.py), on the recording."""
    from . import answers  # deferred: only a replayed run reads recordings

    if not isinstance(data, Mapping):
        return f"the call is a {_kind(data)}, not an object"
    text, latency = data.get("text"), data.get("latency_ms")
    if text is not None and not isinstance(text, str):
        return f"text is a {_kind(text)}, not a string"
    if latency is not None and not _duration(latency):
        return f"latency_ms is {latency!r}; expected a finite number of milliseconds from 0"
    error = data.get("error")
    if error is not None and not (isinstance(error, Mapping) and isinstance(error.get("type"), str)
                                  and isinstance(error.get("message"), str)):
        return "error is not an object with a 'type' and a 'message' string"
    try:
        answers.check_tree(data.get("value"), "value")
        calls = data.get("tool_calls") or []
        if not isinstance(calls, list):
            return f"tool_calls is a {_kind(calls)}, not a list"
        for index, call in enumerate(calls):
            if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
                return f"tool call {index} is not an object with a 'name' string"
            for part in ("arguments", "result"):
                answers.check_tree(call.get(part), f"tool call {index} ({call['name'][:80]}) "
                                                   f"{part}")
            if any(call.get(k) is not None and not isinstance(call.get(k), str)
                   for k in ("error", "id")):
                return f"tool call {index}'s error and id must be strings"
        usage = data.get("usage")
        problem = None if usage is None else _usage_problem(usage, answers)
        if problem is not None:
            return problem
        answers.contexts_of(data.get("contexts"), "contexts")
    except OutputError as exc:
        return str(exc)
    return None


def _usage_problem(usage: Any, answers: Any) -> str | None:
    """What is wrong with a recorded usage, as a live answer's would be checked: its token
    and cache counts, the cache within input_tokens, its cost (OutputError), its model."""
    if not isinstance(usage, Mapping):
        return f"usage is a {_kind(usage)}, not an object"
    model = usage.get("model")
    if model is not None and not isinstance(model, str):
        return f"usage model is a {_kind(model)}, not a string"
    answers.checked_usage(usage)
    return None


def recording(suite: str, case_id: str, case_input: object,
              runs: Iterable[Sequence[EntryCall]], timeout_s: float, *,
              conversation: bool = False) -> dict[str, Any]:
    """What ``--elizon-record`` keeps of a case; it rides on the report to the controller.
    Each run is its call, or ``{"turns": [calls]}`` for a conversation. The time limit is
    kept so that a recorded timeout is replayed with the limit it had."""
    return {"suite": suite, "case": case_id, "input_sha256": input_sha256(case_input),
            "timeout_s": timeout_s, "runs": [_run_data(r, conversation) for r in runs]}


class Cassette:
    """The recordings of a cassette file, by case key."""

    def __init__(self, entries: dict[str, dict[str, Any]] | None = None,
                 canary: str | None = None) -> None:
        self.entries: dict[str, dict[str, Any]] = dict(entries or {})
        #: The probe pack's canary the recordings were made with: a probe's input holds it,
        #: so a replay (or a re-recording) must use the same one.
        self.canary = canary

    @classmethod
    def load(cls, path: Path) -> Cassette:
        """Read a cassette; ``ValueError`` says what is wrong with the file."""
        data = read_json(path)
        if isinstance(data, dict) and data.get("format") in _OLDER:
            raise ValueError(f"recorded by an older version ({data['format']}), whose keys "
                             "depended on the rootdir; record it again with --elizon-record")
        if not isinstance(data, dict) or data.get("format") != FORMAT \
                or not isinstance(data.get("cases"), dict):
            raise ValueError(f"not a cassette (expected {{\"format\": \"{FORMAT}\", "
                             "\"cases\": {…}})")
        for name, entry in data["cases"].items():
            if not isinstance(entry, dict) or not isinstance(entry.get("runs"), list) \
                    or not isinstance(entry.get("input_sha256"), str):
                raise ValueError(f"case {name!r} has no 'input_sha256' and 'runs'")
        canary = data.get("canary")
        return cls(data["cases"], canary if isinstance(canary, str) else None)

    def answers(self, suite: str, case_id: str, case_input: object, runs: int,
                at_most: bool = False
                ) -> tuple[tuple[tuple[EntryCall, ...], ...], float | None]:
        """The recorded calls (per run, per turn) for ``runs`` runs of a case (``at_most``:
        up to ``runs``, at least one — a sequential case's recording ends where it decided)
        and the time limit they were recorded under; or :class:`CassetteMiss`."""
        name = case_key(suite, case_id)
        entry = self.entries.get(name)
        if entry is None:
            raise CassetteMiss(errors.ELIZON_CASSETTE_MISSING, f"{name} is not in the cassette "
                               "(cases are keyed by package name, suite path inside the "
                               "package and case id); record it with --elizon-record")
        if entry["input_sha256"] != input_sha256(case_input):
            raise CassetteMiss(errors.ELIZON_CASSETTE_STALE,
                               f"the input of {name} changed since it was "
                               "recorded; record it again with --elizon-record")
        if len(entry["runs"]) < (1 if at_most else runs):
            raise CassetteMiss(errors.ELIZON_CASSETTE_MISSING, f"{name} has "
                               f"{len(entry['runs'])} recorded run(s); repeat asks for {runs}")
        limit = entry.get("timeout_s")
        if limit is not None and not (_duration(limit) and limit > 0):
            # a limit no recording has: each run is an error saying so, never a NaN limit
            # in the reports (docs/contract.md#record-and-replay)
            broken = _broken(f"the cassette's recording of {name}", (
                f"timeout_s is {repr(limit)[:60]}; expected the time limit it was recorded "
                "under, a finite number of seconds above 0"))
            return tuple((broken,) for _ in entry["runs"][:runs]), None
        return (tuple(_run_calls(run, f"the cassette's recording of {name}, run {number}")
                      for number, run in enumerate(entry["runs"][:runs], 1)),
                None if limit is None else float(limit))

    def update(self, recordings: Iterable[Mapping[str, Any]]) -> None:
        """Add or replace the recordings of the cases of this run."""
        for recording in recordings:
            self.entries[case_key(recording["suite"], recording["case"])] = {
                "input_sha256": recording["input_sha256"], "timeout_s": recording["timeout_s"],
                "runs": recording["runs"]}

    def dump(self) -> str:
        """The file's text: stable order, one field per line."""
        data: dict[str, Any] = {"format": FORMAT, "cases": self.entries}
        if self.canary is not None:
            data["canary"] = self.canary
        return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
