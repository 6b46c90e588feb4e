"""Which part of an answer an assertion reads, JSON written as text, and the text
assertions added with them (docs/contract.md#assertions).

Owns ``expect.path`` (``$.summary``, ``$.items[0].title``: the dotted path syntax
of ``route``, with list indices), reading a text answer as JSON (the trimmed text,
or the one fenced ``json`` block in it) for ``jsonSchema`` and ``isJson``, and the
assertions ``containsAny``, ``containsExact``, ``startsWith`` and ``isJson``. Pure
functions of plain values; no pytest import here.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["JsonText", "PathMissing", "contains_any", "contains_exact", "is_json",
           "json_from_text", "parse_path", "select", "starts_with"]

_SEGMENT = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]")
#: A fenced block whose info string is ``json`` (any case), on lines of its own.
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*json[ \t]*\r?\n(.*?)\r?\n[ \t]*\1[ \t]*$",
                    re.IGNORECASE | re.DOTALL | re.MULTILINE)


def parse_path(path: str) -> tuple[str | int, ...]:
    """``$.a.b[0]`` (or ``a.b[0]``) as its parts; ValueError says what is wrong.

    A part made of digits alone (``a.0``) is a list index when it meets a list."""
    text = path.strip()
    if text.startswith("$"):
        text = text[1:]
    if not text:
        raise ValueError(f"path {path!r} names no part of the answer; write e.g. '$.summary'")
    if not text.startswith((".", "[")):
        text = "." + text
    parts: list[str | int] = []
    at = 0
    for match in _SEGMENT.finditer(text):
        if match.start() != at:
            break
        parts.append(match.group(1) if match.group(1) is not None else int(match.group(2)))
        at = match.end()
    if at != len(text):
        raise ValueError(f"path {path!r} is not a dotted path like '$.summary' or "
                         f"'$.items[0].title' (stuck at {text[at:at + 20]!r})")
    return tuple(parts)


class PathMissing(Exception):
    """The answer has no value at the path; the message names the missing part."""


def _shown(parts: tuple[str | int, ...]) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)


def select(value: object, path: str) -> object:
    """The value at ``path``; :class:`PathMissing` names the first part that is not there."""
    node = value
    parts = parse_path(path)
    for depth, part in enumerate(parts):
        here = _shown(parts[:depth])
        if isinstance(node, dict):
            if str(part) not in node:
                keys = ", ".join(map(str, list(node)[:20])) or "no keys"
                raise PathMissing(f"{_shown(parts[:depth + 1])} is missing: no key {str(part)!r}"
                                  f" at {here} (it has: {keys})")
            node = node[str(part)]
        elif isinstance(node, list):
            index = part if isinstance(part, int) else int(part) if part.isdigit() else None
            if index is None:
                raise PathMissing(f"{_shown(parts[:depth + 1])} is missing: {here} is a list, "
                                  f"not a mapping with key {part!r}")
            if index >= len(node):
                raise PathMissing(f"{_shown(parts[:depth + 1])} is missing: {here} has "
                                  f"{len(node)} items")
            node = node[index]
        else:
            kind = "text" if isinstance(node, str) else "null" if node is None \
                else type(node).__name__
            raise PathMissing(f"{_shown(parts[:depth + 1])} is missing: {here} is {kind}, "
                              "not a mapping or list")
    return node


@dataclass(frozen=True)
class JsonText:
    """A text read as JSON: the value, or why it is not JSON (``error`` set)."""

    value: Any = None
    error: str | None = None


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def json_from_text(text: str) -> JsonText:
    """The JSON a text holds: the trimmed text, else the content of its one fenced ``json``
    block. Not JSON: the parser's message and position (line, column)."""
    trimmed = text.strip()
    fences = [] if trimmed[:1] in ("{", "[", '"') else _FENCE.findall(text)
    if len(fences) > 1:
        return JsonText(error=f"not JSON: the text holds {len(fences)} fenced json blocks; "
                              "expected one")
    source, where = (fences[0][1], "in the fenced json block, ") if fences else (trimmed, "")
    if not source.strip():
        return JsonText(error="not JSON: the text is empty")
    try:
        return JsonText(json.loads(source, parse_constant=_reject_constant))
    except json.JSONDecodeError as exc:
        return JsonText(error=f"not JSON: {exc.msg} {where}at line {exc.lineno} column "
                              f"{exc.colno} (character {exc.pos})")
    except ValueError as exc:
        return JsonText(error=f"not JSON: {exc}")
    except RecursionError:
        return JsonText(error="not JSON this plugin can read: it is nested too deeply")


# -- the new text assertions: (passed, expected, found) ---------------------------------------

def _quoted(values: list[str]) -> str:
    return ", ".join(repr(v) for v in values)


def contains_any(values: list[str], text: str) -> tuple[bool, str, str]:
    """At least one string occurs, ignoring case (casefold, like ``contains``)."""
    folded = text.casefold()
    hits = [v for v in values if v.casefold() in folded]
    return bool(hits) or not values, f"at least one of: {_quoted(values)}", \
        f"found: {_quoted(hits)}" if hits else "none found"


def contains_exact(values: list[str], text: str) -> tuple[bool, str, str]:
    """Every string occurs with exactly this case."""
    missing = [v for v in values if v not in text]
    return not missing, f"every one of, case-sensitive: {_quoted(values)}", \
        f"missing: {_quoted(missing)}" if missing else "all found"


def starts_with(prefix: str, text: str) -> tuple[bool, str, str]:
    """The text, without leading whitespace, starts with ``prefix``."""
    start = text.lstrip()
    shown = start[:len(prefix) + 20].replace("\n", "\\n")
    return start.startswith(prefix), f"text starting with {prefix!r}", \
        f"starts with {shown!r}"


def is_json(wanted: bool, text: str) -> tuple[bool, str, str]:
    """``isJson: true``: the text reads as JSON ([`json_from_text`]); ``false``: it does not."""
    read = json_from_text(text)
    expected = "text that reads as JSON" if wanted else "text that is not JSON"
    if read.error is None:
        kind = "an object" if isinstance(read.value, dict) else \
            "an array" if isinstance(read.value, list) else "a value"
        return wanted, expected, f"JSON: {kind}"
    return not wanted, expected, read.error
