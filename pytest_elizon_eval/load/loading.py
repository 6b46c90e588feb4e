"""Read a YAML file into plain Python data that remembers its line numbers.

Owns everything between the bytes on disk and JSON-like data: UTF-8
decoding, safe parsing (no object construction, ever), and the guards that
turn hostile or surprising files into clear problems instead of hangs,
``MemoryError`` or crashes: alias bombs, recursive aliases, deep nesting,
multi-document streams, duplicate keys and YAML 1.1 scalars that read as
something the author did not mean (``no`` → false, ``0123`` → 83).

The document is composed here, from the parser's event stream, not by
PyYAML's composer: libyaml's C composer recurses once per nesting level and
crashes the process on a deep enough file before any check of ours could
run. Reading events is iterative, so nesting is bounded before it costs
anything.

Mappings come back as :class:`~.documents.YamlMapping` and sequences as
:class:`~.documents.YamlSequence` (:mod:`.documents`, which holds what a read
file becomes without importing PyYAML), carrying the 1-based line of
themselves and of each key / item, so validation errors can point at
``file:line``. No pytest import here.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from typing import Any

import yaml
from yaml.events import (
    AliasEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.nodes import ScalarNode

from .documents import (
    MAX_ALIAS_EXPANSION,
    MAX_DEPTH,
    MAX_FILE_BYTES,
    LoadFailed,
    Problem,
    YamlMapping,
    YamlSequence,
)

__all__ = ["load_yaml"]  # what a file becomes: .documents

try:  # libyaml is much faster on large suites; the pure-Python parser is the fallback.
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

_NULL_TEXTS = frozenset({"", "~", "null", "Null", "NULL"})
_LEGACY_OCTAL = re.compile(r"[-+]?0[0-7_]+")
_SCALARS = yaml.constructor.SafeConstructor()
_RESOLVER = yaml.resolver.Resolver()
_resolve: Callable[[type[ScalarNode], str, tuple[bool, bool]], str] = _RESOLVER.resolve
#: First characters of plain scalars that may resolve to something other than a string;
#: any other plain scalar is text without asking the resolver (most of a suite is text).
_RESOLVED_STARTS = frozenset(_RESOLVER.yaml_implicit_resolvers)
assert None not in _RESOLVED_STARTS, "a catch-all implicit resolver defeats the fast path"
_CONSTRUCT: dict[str, tuple[str, Callable[[ScalarNode], Any]]] = {
    _BOOL: ("boolean", _SCALARS.construct_yaml_bool),
    _INT: ("whole number", _SCALARS.construct_yaml_int),
    _FLOAT: ("number", _SCALARS.construct_yaml_float),
}


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
    loader = _Loader(text)
    composer = _Composer(loader)
    try:
        value = composer.document()
    except _Abort as exc:
        raise LoadFailed([*composer.problems, exc.problem]) from None
    except yaml.MarkedYAMLError as exc:
        raise LoadFailed([*composer.problems, _syntax_problem(exc)]) from None
    except yaml.YAMLError as exc:
        raise LoadFailed([*composer.problems, Problem(None, f"not valid YAML: {exc}")]) from None
    finally:
        loader.dispose()
    if composer.problems:
        raise LoadFailed(composer.problems, value, complete=True)
    return value


def _syntax_problem(exc: yaml.MarkedYAMLError) -> Problem:
    mark = exc.problem_mark or exc.context_mark
    if exc.context_mark and "end of stream" in str(exc.problem):
        # An unterminated quote is only noticed at the end of the file: show where it opens.
        mark = exc.context_mark
    line = mark.line + 1 if mark else None
    if "maximum nesting depth" in str(exc.problem):  # libyaml's own limit, when it has one
        return Problem(line, f"YAML nesting is deeper than {MAX_DEPTH} levels")
    what = " ".join(str(p) for p in (exc.context, exc.problem) if p)
    return Problem(line, f"not valid YAML: {what}")


class _Abort(Exception):
    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem


#: An anchor whose collection is still being read: an alias to it is recursive.
_OPEN = object()


class _MergeKey:
    """The ``<<`` key (a sentinel, so no key text can be mistaken for it)."""


_MERGE_KEY = _MergeKey()


class _Composer:
    """Builds plain data from parser events, guarding against hostile documents.

    Nesting is checked as each collection opens, so a deep file stops after
    ``MAX_DEPTH`` levels whatever its size; recursion here is bounded by that.
    Events are typed ``Any``: PyYAML's event classes declare every mark optional.
    """

    def __init__(self, loader: yaml.SafeLoader) -> None:
        self.problems: list[Problem] = []
        self._loader: Any = loader  # untyped in PyYAML's stubs
        self._get: Callable[[], Any] = loader.get_event
        #: anchor → (line, value or _OPEN)
        self._anchors: dict[str, tuple[int, Any]] = {}
        self._expansion_budget = MAX_ALIAS_EXPANSION

    def document(self) -> Any:
        """The single document of the stream (``LoadFailed`` when there is none)."""
        loader = self._loader
        loader.get_event()  # stream start
        if loader.check_event(StreamEndEvent):
            raise LoadFailed([Problem(None, "file is empty; expected a YAML mapping")])
        loader.get_event()  # document start
        value = self._value(self._get(), 1)
        loader.get_event()  # document end
        if not loader.check_event(StreamEndEvent):
            line = loader.get_event().start_mark.line + 1  # a second document's start
            with contextlib.suppress(yaml.YAMLError):  # its content, as users see it
                line = loader.peek_event().start_mark.line + 1
            raise _Abort(Problem(line, "file holds more than one YAML document (a second "
                                       "'---'); an Elizon file is exactly one document"))
        return value

    def _value(self, event: Any, depth: int) -> Any:
        """The value that starts with ``event``; collections at ``depth`` (the root is 1)."""
        kind = event.__class__
        line: int = event.start_mark.line + 1
        if kind is ScalarEvent:
            value = self._scalar(event, line)
            if event.anchor is not None:
                self._anchor(event.anchor, line, value)
            return value
        if kind is AliasEvent:
            return self._alias(event.anchor, line, depth)
        if depth > MAX_DEPTH:
            raise _Abort(Problem(line, f"YAML nesting is deeper than {MAX_DEPTH} levels"))
        tag = event.tag
        if kind is SequenceStartEvent and tag in (None, "!", _SEQ):
            build: Callable[[int, int], Any] = self._sequence
        elif kind is MappingStartEvent and tag in (None, "!", _MAP):
            build = self._mapping
        else:
            raise _Abort(Problem(line, f"YAML tag {tag!r} is not allowed"))
        anchor = event.anchor
        if anchor is None:
            return build(line, depth)
        self._anchor(anchor, line, _OPEN)
        value = build(line, depth)
        self._anchors[anchor] = (line, value)
        return value

    def _anchor(self, name: str, line: int, value: Any) -> None:
        if name in self._anchors:
            self.problems.append(Problem(line, f"duplicate YAML anchor '&{name}' "
                                               f"(first at line {self._anchors[name][0]})"))
        self._anchors[name] = (line, value)

    def _sequence(self, line: int, depth: int) -> YamlSequence:
        seq = YamlSequence(line)
        get, item_lines, value = self._get, seq.item_lines, self._value
        while True:
            event = get()
            if event.__class__ is SequenceEndEvent:
                return seq
            item_lines.append(event.start_mark.line + 1)
            seq.append(value(event, depth + 1))

    def _mapping(self, line: int, depth: int) -> YamlMapping:
        mapping = YamlMapping(line)
        key_lines = mapping.key_lines
        merged: list[YamlMapping] = []
        get, value = self._get, self._value
        while True:
            event = get()
            if event.__class__ is MappingEndEvent:
                break
            key_line: int = event.start_mark.line + 1
            name = self._key(event, key_line, depth)
            item = value(get(), depth + 1)
            if name is None:
                continue
            if isinstance(name, _MergeKey):
                merged.extend(self._merge_sources(item, key_line))
            elif name in key_lines:
                self.problems.append(Problem(
                    key_line, f"duplicate key {name!r} (first at line {key_lines[name]})"))
            else:
                key_lines[name] = key_line
                mapping[name] = item
        for source in merged:  # explicit keys win over merged ones, as in YAML's merge
            for name, item in source.items():
                if name not in mapping:
                    mapping[name] = item
                    key_lines[name] = source.key_lines.get(name, line)
        return mapping

    def _key(self, event: Any, line: int, depth: int) -> str | _MergeKey | None:
        """A key's text, ``_MERGE_KEY`` for ``<<``, or None (a problem is recorded)."""
        if event.__class__ is ScalarEvent:
            text: str = event.value
            tag = event.tag
            if (tag is None or tag == "!") and event.implicit[0]:
                # Of what a plain key may resolve to, only these two matter (the resolver's
                # own patterns, without its cost on every key).
                tag = _MERGE if text == "<<" else _NULL if text in _NULL_TEXTS else _STR
            if event.anchor is not None:
                self._anchor(event.anchor, line, text)
            if tag == _MERGE:
                return _MERGE_KEY
            if tag != _NULL:
                return text  # keys are names: keep the text the author wrote
        elif event.__class__ is not AliasEvent:
            self._value(event, depth + 1)  # read past it, under the same guards
        self.problems.append(Problem(line, "mapping key must be a plain string"))
        return None

    def _merge_sources(self, value: Any, line: int) -> list[YamlMapping]:
        sources = value if isinstance(value, list) else [value]
        if not all(isinstance(s, YamlMapping) for s in sources):
            self.problems.append(Problem(line, "'<<' merge needs a mapping or a list of mappings"))
            return []
        return list(sources)

    def _alias(self, name: str, line: int, depth: int) -> Any:
        if name not in self._anchors:
            raise _Abort(Problem(line, f"not valid YAML: found undefined alias '*{name}'"))
        value = self._anchors[name][1]
        if value is _OPEN:
            raise _Abort(Problem(line, "recursive YAML alias (a node that contains itself)"))
        return self._expand(value, line, depth)

    def _expand(self, value: Any, line: int, depth: int) -> Any:
        """A copy of an anchored value; every node counts, as later steps expand it too."""
        self._expansion_budget -= 1
        if self._expansion_budget < 0:
            raise _Abort(Problem(line, "YAML aliases expand to more than "
                                       f"{MAX_ALIAS_EXPANSION:,} nodes (an alias bomb?)"))
        if isinstance(value, YamlMapping):
            if depth > MAX_DEPTH:
                raise _Abort(Problem(line, f"YAML nesting is deeper than {MAX_DEPTH} levels"))
            mapping = YamlMapping(value.line)
            mapping.key_lines.update(value.key_lines)
            for name, item in value.items():
                mapping[name] = self._expand(item, line, depth + 1)
            return mapping
        if isinstance(value, YamlSequence):
            if depth > MAX_DEPTH:
                raise _Abort(Problem(line, f"YAML nesting is deeper than {MAX_DEPTH} levels"))
            seq = YamlSequence(value.line)
            seq.item_lines.extend(value.item_lines)
            seq.extend(self._expand(item, line, depth + 1) for item in value)
            return seq
        return value  # scalars are immutable: sharing one is as good as a copy

    def _scalar(self, event: Any, line: int) -> Any:
        text: str = event.value
        tag = event.tag
        if tag is None or tag == "!":
            if not event.implicit[0] or text[:1] not in _RESOLVED_STARTS:
                return text
            tag = _resolve(ScalarNode, text, event.implicit)
        if tag in (_STR, _TIMESTAMP):  # dates stay text: JSON has no date type
            return text
        if tag == _NULL:
            return None
        if tag not in _CONSTRUCT:
            raise _Abort(Problem(line, f"YAML tag {tag!r} is not allowed"))
        kind, construct = _CONSTRUCT[tag]
        try:
            value = construct(ScalarNode(tag, text))
        except (LookupError, ValueError):  # an explicit tag on text that is not one
            self.problems.append(Problem(line, f"{text!r} is not a {kind} ({tag!r})"))
            return text
        if not event.style:  # plain: None (pure-Python parser) or "" (libyaml)
            if tag == _BOOL and text.lower() not in ("true", "false"):
                self._ambiguous(line, text, f"boolean {str(value).lower()}")
            elif ":" in text or (tag == _INT and _LEGACY_OCTAL.fullmatch(text)):
                self._ambiguous(line, text, f"the number {value}")  # 1:30 (base 60), 0123
        return value

    def _ambiguous(self, line: int, text: str, reads_as: str) -> None:
        self.problems.append(Problem(
            line, f"unquoted {text!r} is read by YAML 1.1 as {reads_as}; "
                  f"quote it ('{text}') if you mean the text"))
