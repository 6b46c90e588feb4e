"""What a read file becomes, without the YAML reader: data that remembers its lines.

:class:`YamlMapping` and :class:`YamlSequence` are the ``dict``/``list`` a suite's
YAML (or data file) is read into, carrying the 1-based line of themselves and
of each key / item; :class:`Problem` and :class:`LoadFailed` say what is wrong
with a file; :func:`read_json` reads the plugin's own JSON files. Split from
:mod:`.loading` (which owns the YAML parser) so that a session whose files come
from the suite cache never imports PyYAML. No pytest import here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "MAX_ALIAS_EXPANSION",
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "LoadFailed",
    "Problem",
    "YamlMapping",
    "YamlSequence",
    "line_of",
    "read_json",
]

#: Larger files are refused before parsing: a suite is text written by people.
MAX_FILE_BYTES = 64 * 1024 * 1024
#: Deeper nesting of mappings and sequences is refused.
MAX_DEPTH = 100
#: Nodes that alias expansion may add on top of the document itself.
MAX_ALIAS_EXPANSION = 100_000


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a file, at a 1-based line (None: the whole file)."""

    line: int | None
    message: str


class LoadFailed(Exception):
    """The file could not be read as one clean YAML document; ``problems`` says why.

    When every problem is one that still let the whole document be read (an
    unquoted ``no``, a repeated key, …), ``complete`` is true and ``data`` holds
    the document as read, so a caller can validate it and report everything at once.
    """

    def __init__(self, problems: list[Problem], data: Any = None, *,
                 complete: bool = False) -> None:
        super().__init__("; ".join(p.message for p in problems))
        self.problems = problems
        self.data = data
        self.complete = complete


class YamlMapping(dict[str, Any]):
    """A mapping that knows its own line and the line of each key."""

    __slots__ = ("key_lines", "line")

    def __init__(self, line: int) -> None:
        super().__init__()
        self.line = line
        self.key_lines: dict[str, int] = {}


class YamlSequence(list[Any]):
    """A sequence that knows its own line and the line of each item."""

    __slots__ = ("item_lines", "line")

    def __init__(self, line: int) -> None:
        super().__init__()
        self.line = line
        self.item_lines: list[int] = []


def line_of(data: Any, path: tuple[str | int, ...]) -> int | None:
    """The line of the deepest element of ``path`` that exists in ``data``.

    When that element is a mapping key, it is the key's line, not the line
    where its value (say a block mapping below it) starts.
    """
    line = getattr(data, "line", None)
    node = data
    last = len(path) - 1
    for index, part in enumerate(path):
        if isinstance(node, YamlMapping) and isinstance(part, str):
            if part not in node:
                break
            line = node.key_lines.get(part, line)
            if index == last:
                break
            node = node[part]
        elif isinstance(node, YamlSequence) and isinstance(part, int):
            if not 0 <= part < len(node):
                break
            line = node.item_lines[part]
            node = node[part]
        else:
            break
        line = getattr(node, "line", line)
    return line


def read_json(path: Path) -> Any:
    """A JSON file's data; ``ValueError`` says why it could not be read."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"cannot read it: {exc.strerror}") from None
    except ValueError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    except RecursionError:  # the json module recurses once per nesting level
        raise ValueError("not JSON this plugin can read: it is nested too deeply") from None
