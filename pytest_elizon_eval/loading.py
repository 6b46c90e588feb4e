"""Read a YAML file into plain Python data that remembers its line numbers.

Owns everything between the bytes on disk and JSON-like data: UTF-8
decoding, safe parsing (no object construction, ever), and the guards that
turn hostile or surprising files into clear problems instead of hangs,
``MemoryError`` or crashes: alias bombs, recursive aliases, deep nesting,
multi-document streams, duplicate keys and YAML 1.1 scalars that read as
something the author did not mean (``no`` → false, ``0123`` → 83).

Mappings come back as :class:`YamlMapping` and sequences as
:class:`YamlSequence`, ordinary ``dict``/``list`` subclasses that carry the
1-based line of themselves and of each key / item, so validation errors can
point at ``file:line``. :func:`read_json` reads the plugin's own JSON files
(results, cassettes). No pytest import here.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

__all__ = [
    "MAX_FILE_BYTES",
    "LoadFailed",
    "Problem",
    "YamlMapping",
    "YamlSequence",
    "line_of",
    "load_yaml",
    "read_json",
]

#: Larger files are refused before parsing: a suite is text written by people.
MAX_FILE_BYTES = 64 * 1024 * 1024
#: Deeper nesting is refused (libyaml and our builder both recurse).
MAX_DEPTH = 100
#: Nodes that alias expansion may add on top of the document itself.
MAX_ALIAS_EXPANSION = 100_000

try:  # libyaml is ~4x faster on large suites; the pure-Python loader is the fallback.
    _Loader: type[yaml.SafeLoader] = yaml.CSafeLoader  # type: ignore[assignment]
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _Loader = yaml.SafeLoader

_STR = "tag:yaml.org,2002:str"
_NULL = "tag:yaml.org,2002:null"
_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_MERGE = "tag:yaml.org,2002:merge"
_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"

_LEGACY_OCTAL = re.compile(r"[-+]?0[0-7_]+")
_SCALARS = yaml.constructor.SafeConstructor()


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a file, at a 1-based line (None: the whole file)."""

    line: int | None
    message: str


class LoadFailed(Exception):
    """The file could not be read as one YAML document; ``problems`` says why."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(p.message for p in problems))
        self.problems = problems


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
    """The line of the deepest element of ``path`` that exists in ``data``."""
    line = getattr(data, "line", None)
    node = data
    for part in path:
        if isinstance(node, YamlMapping) and isinstance(part, str):
            if part in node.key_lines:
                line = node.key_lines[part]
            if part not in node:
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


def load_yaml(data: bytes) -> Any:
    """Parse one YAML document from ``data``; raise :class:`LoadFailed` with every problem."""
    if len(data) > MAX_FILE_BYTES:
        raise LoadFailed(
            [Problem(None, f"file is {len(data):,} bytes; the limit is {MAX_FILE_BYTES:,}")]
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        bad = data[exc.start]
        raise LoadFailed(
            [Problem(line, f"not UTF-8 text (byte 0x{bad:02x} at offset {exc.start}); "
                           "save the file as UTF-8")]
        ) from None
    node = _compose_single(text)
    if node is None:
        raise LoadFailed([Problem(None, "file is empty; expected a YAML mapping")])
    builder = _Builder()
    try:
        value = builder.build(node, 0)
    except _Abort as exc:
        raise LoadFailed([*builder.problems, exc.problem]) from None
    if builder.problems:
        raise LoadFailed(builder.problems)
    return value


def _compose_single(text: str) -> Node | None:
    loader = _Loader(text)
    try:
        if not loader.check_node():
            return None
        node: Node | None = loader.get_node()
        if loader.check_node():
            extra = loader.get_node()
            raise LoadFailed(
                [Problem(extra.start_mark.line + 1 if extra else None,
                         "file holds more than one YAML document (a second '---'); "
                         "an Elizon file is exactly one document")]
            )
        return node
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        what = " ".join(str(p) for p in (exc.context, exc.problem) if p)
        raise LoadFailed([Problem(mark.line + 1 if mark else None, f"not valid YAML: {what}")]) \
            from None
    except yaml.YAMLError as exc:
        raise LoadFailed([Problem(None, f"not valid YAML: {exc}")]) from None
    except RecursionError:
        raise LoadFailed([Problem(None, "YAML nesting is too deep to read")]) from None
    finally:
        loader.dispose()


class _Abort(Exception):
    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


class _Builder:
    """Turns composed YAML nodes into plain data, guarding against hostile graphs."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self._seen: set[int] = set()
        self._open: set[int] = set()
        self._expanding = 0
        self._expansion_budget = MAX_ALIAS_EXPANSION

    def build(self, node: Node, depth: int) -> Any:
        line = node.start_mark.line + 1
        if self._expanding:
            self._expansion_budget -= 1
            if self._expansion_budget < 0:
                raise _Abort(Problem(line, "YAML aliases expand to more than "
                                           f"{MAX_ALIAS_EXPANSION:,} nodes (an alias bomb?)"))
        if depth > MAX_DEPTH:
            raise _Abort(Problem(line, f"YAML nesting is deeper than {MAX_DEPTH} levels"))
        if isinstance(node, ScalarNode):
            return self._scalar(node, line)
        key = id(node)
        if key in self._open:
            raise _Abort(Problem(line, "recursive YAML alias (a node that contains itself)"))
        repeat = key in self._seen
        self._seen.add(key)
        self._open.add(key)
        self._expanding += repeat
        try:
            if isinstance(node, SequenceNode) and node.tag == _SEQ:
                return self._sequence(node, line, depth)
            if isinstance(node, MappingNode) and node.tag == _MAP:
                return self._mapping(node, line, depth)
            raise _Abort(Problem(line, f"YAML tag {node.tag!r} is not allowed"))
        finally:
            self._expanding -= repeat
            self._open.discard(key)

    def _sequence(self, node: SequenceNode, line: int, depth: int) -> YamlSequence:
        seq = YamlSequence(line)
        for item in node.value:
            seq.item_lines.append(item.start_mark.line + 1)
            seq.append(self.build(item, depth + 1))
        return seq

    def _mapping(self, node: MappingNode, line: int, depth: int) -> YamlMapping:
        mapping = YamlMapping(line)
        merged: list[YamlMapping] = []
        for key_node, value_node in node.value:
            key_line = key_node.start_mark.line + 1
            if isinstance(key_node, ScalarNode) and key_node.tag == _MERGE:
                merged.extend(self._merge_sources(value_node, depth))
                continue
            if not isinstance(key_node, ScalarNode) or key_node.tag == _NULL:
                self.problems.append(Problem(key_line, "mapping key must be a plain string"))
                continue
            name = key_node.value  # keys are names: keep the text the author wrote
            if name in mapping.key_lines:
                self.problems.append(Problem(
                    key_line, f"duplicate key {name!r} (first at line {mapping.key_lines[name]})"))
                continue
            mapping.key_lines[name] = key_line
            mapping[name] = self.build(value_node, depth + 1)
        for source in merged:  # explicit keys win over merged ones, as in YAML's merge
            for name, value in source.items():
                if name not in mapping:
                    mapping[name] = value
                    mapping.key_lines[name] = source.key_lines.get(name, line)
        return mapping

    def _merge_sources(self, node: Node, depth: int) -> list[YamlMapping]:
        value = self.build(node, depth + 1)
        sources = value if isinstance(value, list) else [value]
        if not all(isinstance(s, YamlMapping) for s in sources):
            self.problems.append(Problem(node.start_mark.line + 1,
                                         "'<<' merge needs a mapping or a list of mappings"))
            return []
        return list(sources)

    def _scalar(self, node: ScalarNode, line: int) -> Any:
        tag, text = node.tag, node.value
        if tag == _STR:
            return text
        if tag == _NULL:
            return None
        plain = not node.style  # None (pure-Python parser) or "" (libyaml)
        if tag == _BOOL:
            value = _SCALARS.construct_yaml_bool(node)
            if plain and text.lower() not in ("true", "false"):
                self._ambiguous(line, text, f"boolean {str(value).lower()}")
            return value
        if tag == _INT:
            int_value = _SCALARS.construct_yaml_int(node)
            if plain and (":" in text or _LEGACY_OCTAL.fullmatch(text)):
                self._ambiguous(line, text, f"the number {int_value}")
            return int_value
        if tag == _FLOAT:
            float_value = _SCALARS.construct_yaml_float(node)
            if plain and ":" in text:
                self._ambiguous(line, text, f"the number {float_value}")
            return float_value
        if tag == _TIMESTAMP:
            return text  # dates stay text: JSON has no date type
        raise _Abort(Problem(line, f"YAML tag {tag!r} is not allowed"))

    def _ambiguous(self, line: int, text: str, reads_as: str) -> None:
        self.problems.append(Problem(
            line, f"unquoted {text!r} is read by YAML 1.1 as {reads_as}; "
                  f"quote it ('{text}') if you mean the text"))
