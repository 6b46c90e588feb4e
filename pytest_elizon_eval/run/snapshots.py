"""Snapshots: a case's output pinned in a file next to its suite (``expect.snapshot: true``).

A suite's snapshots live in ``__snapshots__/<suite name>.snap.yaml`` beside it
(docs/contract.md#snapshots): YAML with the cases sorted by id, each pinning the SHA-256
of the case's input, the entry point's identity, and the output as text (a block scalar
when it spans lines) with its SHA-256, so a change reads as a diff in a pull request.
A declared secret never reaches the file: the output is stored, hashed and compared with
each secret replaced by the placeholder a cassette keeps (:mod:`.cassette_secrets`).
:func:`compare` says whether this run's output is ``new``, a ``match`` or ``changed``
(with a unified diff); with ``--elizon-snapshot-update`` it also says what to write, and
:func:`updated_text` gives the file after the writes and removals (the session's owning
process does that, once per file). No pytest import here.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import errors
from ..errors import ElizonError
from ..load.documents import LoadFailed, Problem, YamlMapping, line_of
from . import cassette_secrets
from .assertions import AssertionResult
from .cassette import input_sha256  # one canonical input hash: a cassette's and a snapshot's

if TYPE_CHECKING:
    import yaml

__all__ = ["DIRECTORY", "FORMAT", "SUFFIX", "Comparison", "Pin", "SnapshotFile", "compare",
           "input_sha256", "is_snapshot_file", "load", "snapshot_path", "suite_gone",
           "text_sha256", "twin_of", "updated_text"]

FORMAT = "pytest-elizon-eval/snapshots/v1"
DIRECTORY = "__snapshots__"
SUFFIX = ".snap.yaml"
#: What a pinned entry holds, in the order it is written (the output last: it is long).
_FIELDS = ("input_sha256", "entry", "output_sha256", "output")
#: A diff longer than this is cut (the file itself holds the whole of both texts).
DIFF_KEPT = 8000
_HEADER = ("# Snapshots of {suite}: each case's pinned output (docs/contract.md#snapshots).\n"
           "# Written by pytest --elizon-snapshot-update; review changes like code.\n")

NEW, MATCH, CHANGED = "new", "match", "changed"
#: Why a pin written before secrets were kept out of snapshots is ``changed``.
HOLDS_SECRET = ("the snapshot holds a declared secret in plain text (written before secrets "
                "were kept out of snapshots)")


def snapshot_path(suite: Path) -> Path:
    """Where the snapshots of the suite file ``suite`` live: ``suite.yaml`` →
    ``__snapshots__/suite.snap.yaml``; any other name is kept whole (``suite.yml`` →
    ``suite.yml.snap.yaml``, ``cases.jsonl`` → ``cases.jsonl.snap.yaml``). Only a suite and
    its :func:`twin_of` (``s.yml``, ``s.yml.yaml``) would share a file."""
    name = suite.name.removesuffix(".yaml")
    return suite.parent / DIRECTORY / f"{name}{SUFFIX}"


def twin_of(suite: Path) -> Path | None:
    """The one other file whose snapshots :func:`snapshot_path` would put in ``suite``'s
    file: a name kept whole and the same name with ``.yaml`` after it (``s.yml`` and
    ``s.yml.yaml``). Two such suites are refused (docs/contract.md#snapshots): an update run
    of one would remove the other's snapshots as unused."""
    other = suite.name.removesuffix(".yaml") if suite.name.endswith(".yaml") \
        else suite.name + ".yaml"
    if not other:
        return None
    twin = suite.with_name(other)
    # ``s.yaml.yaml``'s other is ``s.yaml``, whose snapshots are ``s.snap.yaml``: no twin
    return twin if snapshot_path(twin) == snapshot_path(suite) else None


def is_snapshot_file(path: Path) -> bool:
    return path.parent.name == DIRECTORY and path.name.endswith(SUFFIX)


def suite_gone(path: Path) -> bool:
    """Whether the snapshot file ``path`` has no suite file beside its folder any more (the
    suite was deleted or renamed): every snapshot in it is then unused. The inverse of
    :func:`snapshot_path`: ``suite.snap.yaml`` belongs to ``suite.yaml``, or to ``suite``
    when that name is kept whole (``cases.jsonl.snap.yaml``)."""
    name = path.name.removesuffix(SUFFIX)
    return not any((path.parent.parent / n).is_file() for n in (f"{name}.yaml", name))


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Pin:
    """One case's stored snapshot, and the 1-based line of its key in the file."""

    case_id: str
    input_sha256: str
    entry: str
    output: str
    line: int


@dataclass
class SnapshotFile:
    """A snapshot file as read: its valid pins, and the entries that are not valid (by case
    id: the ``file:line: what`` message); ``raw`` keeps every entry as written."""

    path: Path
    display: str
    pins: dict[str, Pin] = field(default_factory=dict)
    bad: dict[str, str] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)

    def where(self, pin: Pin | None) -> str:
        return f"{self.display}:{pin.line}" if pin is not None else self.display


def _plain(value: Any) -> Any:
    """``value`` without the loader's line-keeping types (so it can be written again)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _fix(what: str) -> str:
    return (f"{what}; fix it, or delete it and run pytest with --elizon-snapshot-update to "
            "write it again")


def _entry(case_id: str, value: Any, line: int) -> Pin | str:
    """A pin, or what is wrong with the entry."""
    if not isinstance(value, dict):
        return _fix(f"snapshot {case_id!r} must be a mapping of {', '.join(_FIELDS)}, found "
                    f"{type(value).__name__}")
    missing = [k for k in _FIELDS if k not in value]
    unknown = sorted(str(k) for k in value if k not in _FIELDS)
    if missing or unknown:
        parts = [f"missing {', '.join(missing)}"] if missing else []
        parts += [f"unknown key(s) {', '.join(unknown)}"] if unknown else []
        return _fix(f"snapshot {case_id!r}: {'; '.join(parts)}")
    wrong = [k for k in _FIELDS if not isinstance(value[k], str)]
    if wrong:
        return _fix(f"snapshot {case_id!r}: {', '.join(wrong)} must be text, found "
                    + ", ".join(type(value[k]).__name__ for k in wrong))
    if value["output_sha256"] != text_sha256(value["output"]):
        return (f"snapshot {case_id!r}: output_sha256 is not the SHA-256 of its output (was "
                "the output edited by hand?); set output_sha256 to "
                f"{text_sha256(value['output'])} if the edit is meant, or run pytest with "
                "--elizon-snapshot-update to pin what the entry point says now")
    return Pin(case_id, value["input_sha256"], value["entry"], value["output"], line)


def _problems(display: str, problems: Iterable[Problem]) -> ElizonError:
    return ElizonError.from_problems(errors.ELIZON_SNAPSHOT_INVALID, display, problems)


def load(path: Path, display: str) -> SnapshotFile:
    """Read a snapshot file (an empty one when there is none). A file that is not a snapshot
    file as a whole is an ElizonError naming it and the line; a bad entry is kept in
    ``bad``, so only its own case fails."""
    found = SnapshotFile(path, display)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return found
    except OSError as exc:
        raise _problems(display, [Problem(None, f"cannot read it: {exc.strerror}")]) from None
    from ..load.loading import load_yaml  # deferred: PyYAML, only where snapshots are kept

    try:
        data = load_yaml(raw)
    except LoadFailed as exc:
        raise _problems(display, exc.problems) from None
    if not isinstance(data, YamlMapping):
        raise _problems(display, [Problem(getattr(data, "line", 1), _fix(
            f"not a snapshot file: expected a mapping with format: {FORMAT} and snapshots:"))])
    if data.get("format") != FORMAT:
        raise _problems(display, [Problem(line_of(data, ("format",)), _fix(
            f"format must be {FORMAT}, found {data.get('format')!r}"))])
    unknown = sorted(k for k in data if k not in ("format", "snapshots"))
    if unknown:
        raise _problems(display, [Problem(line_of(data, (unknown[0],)), _fix(
            f"unknown key(s) {', '.join(unknown)}; a snapshot file has format and snapshots"))])
    entries = data.get("snapshots")
    if entries is None:
        entries = YamlMapping(line_of(data, ("snapshots",)) or 1)
    if not isinstance(entries, YamlMapping):
        raise _problems(display, [Problem(line_of(data, ("snapshots",)), _fix(
            f"snapshots must be a mapping of case id to snapshot, found "
            f"{type(entries).__name__}"))])
    for case_id, value in entries.items():
        line = entries.key_lines.get(case_id, entries.line)
        found.raw[case_id] = _plain(value)
        pin = _entry(case_id, value, line)
        if isinstance(pin, Pin):
            found.pins[case_id] = pin
        else:
            found.bad[case_id] = f"{display}:{line}: {pin}"
    return found


# -- comparing ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Comparison:
    """What a case's snapshot check says: its assertion, its record for every report (None
    when nothing was compared) and the entry an update run writes (None: nothing)."""

    assertion: AssertionResult
    record: dict[str, Any] | None = None
    write: dict[str, Any] | None = None


def _diff(pinned: str, now: str, where: str) -> str:
    lines = list(difflib.unified_diff(pinned.splitlines(), now.splitlines(),
                                      f"snapshot ({where})", "output", lineterm=""))
    if not lines and pinned != now:  # only line endings or the final newline differ
        lines = [f"--- snapshot ({where})", "+++ output",
                 f"-{pinned[-40:]!r}", f"+{now[-40:]!r}"]
    text = "\n".join(lines)
    if len(text) > DIFF_KEPT:
        text = text[:DIFF_KEPT] + f"\n… (diff cut at {DIFF_KEPT:,} characters)"
    return text


def _entry_data(current_input: str, entry: str, text: str) -> dict[str, Any]:
    return {"input_sha256": current_input, "entry": entry, "output_sha256": text_sha256(text),
            "output": text}


def compare(file: SnapshotFile, case_id: str, texts: Sequence[str | None],
            case_input: object, entry: str, *, update: bool,
            secrets: Sequence[str] = ()) -> Comparison:
    """Compare the output of every run of a case (None: that run gave no output) with its
    pin. Every run must give the pinned output; with ``update`` a new or changed snapshot
    is written instead of failing, unless the runs disagree with each other. Outputs are
    compared, diffed and written with each of the case's declared ``secrets`` replaced by
    its placeholder; a pin that holds one in plain text is ``changed`` until written again."""
    pin = file.pins.get(case_id)
    where = file.where(pin)
    expected = (f"the output pinned in {where} (sha256 {text_sha256(pin.output)[:12]})"
                if pin is not None else f"a snapshot of the case in {file.display}")
    given = [cassette_secrets.scrub_text(t, secrets) for t in texts if t is not None]
    if not given:
        return Comparison(AssertionResult("snapshot", None, expected,
                                          "not checked: there is no output"))
    now = given[0]
    current_input = input_sha256(case_input)
    record: dict[str, Any] = {"file": file.display, "line": pin.line if pin else None,
                              "updated": False}
    disagree = any(t != now for t in given)
    runs = f" (every one of {len(given)} runs)" if len(given) > 1 else ""
    not_written = (f"not written: the {len(given)} runs gave different outputs, and a "
                   "snapshot pins one")
    if pin is None:
        record["status"] = NEW
        if update and not disagree:
            record["updated"] = True
            return Comparison(AssertionResult("snapshot", True, expected,
                                              f"new: written to {file.display}"),
                              record, _entry_data(current_input, entry, now))
        found = (not_written if update else
                 f"new: no snapshot of {case_id!r} in {file.display}; run pytest with "
                 "--elizon-snapshot-update to write it")
        return Comparison(AssertionResult("snapshot", False, expected, found), record)
    notes = []
    if pin.entry != entry:
        notes.append(f"the entry point changed since the snapshot (was {pin.entry!r})")
    input_changed = pin.input_sha256 != current_input
    holds_secret = cassette_secrets.text_holds_secret(pin.output, secrets)
    pinned = cassette_secrets.scrub_text(pin.output, secrets)  # a diff never shows one
    differing = [t for t in given if t != pinned]
    if not differing and not input_changed and not holds_secret:
        record["status"] = MATCH
        if notes:
            record["note"] = notes[0]
        write = None
        if update and notes:  # the pin follows the entry point it now matches
            write = _entry_data(current_input, entry, now)
            record["updated"] = True
        found = f"match{runs}" + (f"; {notes[0]}" if notes else "")
        return Comparison(AssertionResult("snapshot", True, expected, found), record, write)
    record["status"] = CHANGED
    why = [HOLDS_SECRET] if holds_secret else []
    if input_changed:
        why.append("the case's input changed since the snapshot was taken")
    if differing:
        why.append(f"{len(differing)} of {len(given)} runs differ from it" if len(given) > 1
                   else "the output differs from it")
        record["diff"] = _diff(pinned, differing[0], where)
    record["note"] = "; ".join([*why, *notes])
    if update and not disagree:
        record["updated"] = True
        return Comparison(AssertionResult("snapshot", True, expected,
                                          f"changed: updated in {where} ({record['note']})"),
                          record, _entry_data(current_input, entry, now))
    accept = ("run pytest with --elizon-snapshot-update to write it again"
              if holds_secret and not differing else
              "diff below; run pytest with --elizon-snapshot-update to accept it")
    found = f"changed: {record['note']}; " + (not_written if update else accept)
    return Comparison(AssertionResult("snapshot", False, expected, found), record)


# -- writing (the session's owning process) -------------------------------------------------

@functools.cache
def _dumper() -> type[yaml.SafeDumper]:
    """A YAML dumper writing multi-line text as a block scalar: the file diffs line by line."""
    import yaml  # deferred: PyYAML, only where snapshots are written

    def text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
        style = "|" if "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    class Dumper(yaml.SafeDumper):
        pass

    Dumper.add_representer(str, text)
    return Dumper


def dump(suite_display: str, entries: Mapping[str, Any]) -> str:
    """A snapshot file's text: cases sorted by id, each entry's keys in a fixed order."""
    ordered = {}
    for case_id in sorted(entries):
        value = entries[case_id]
        if isinstance(value, dict) and set(value) == set(_FIELDS):
            value = {k: value[k] for k in _FIELDS}
        ordered[case_id] = value
    import yaml  # deferred: PyYAML, only where snapshots are written

    body = yaml.dump({"format": FORMAT, "snapshots": ordered}, Dumper=_dumper(),
                     sort_keys=False, allow_unicode=True, width=1_000_000,
                     default_flow_style=False)
    return _HEADER.format(suite=suite_display) + body


def updated_text(file: SnapshotFile, suite_display: str, writes: Mapping[str, Any],
                 unused: Iterable[str]) -> str | None:
    """The file's text after this run's writes and the removal of unused snapshots; None
    when no snapshot is left (the file is then removed)."""
    entries = {k: v for k, v in file.raw.items() if k not in set(unused)}
    entries.update(writes)
    return dump(suite_display, entries) if entries else None
