"""``elizon-eval import promptfoo``: a promptfoo config as an Elizon package.

Owns reading a ``promptfooconfig.yaml`` (inline ``tests:``, ``defaultTest``,
``file://`` test files in YAML, JSON, JSONL or CSV, ``vars``, ``description``,
``assert`` lists, ``threshold``, ``options``, local ``$ref``s) and writing what it
means in Elizon terms: ``elizon.yaml``, ``suite.yaml`` (ids from the descriptions,
``input`` from the vars, every assertion that has an Elizon equivalent mapped, its
``{{ var }}`` templates rendered with the test's vars) and, for ``python`` asserts
that name a file, ``promptfoo_checks.py`` (adapters that call them as
``expect.checks`` with the context promptfoo gives). Everything that is not
converted is listed in the :class:`Conversion`'s report and kept as a YAML comment
on its case: nothing is dropped silently. What is written is first validated as the
plugin will load it. Providers and prompts are not converted: the manifest says
where to bind the entry point (docs/contract.md#importing-from-promptfoo). Configs
are untrusted input: the plugin's safe YAML loader guards the reading (then values
are read as promptfoo's YAML 1.2 reads them), ``file://`` paths must stay inside
the config's folder. No pytest import here.
"""

from __future__ import annotations

import csv
import errno
import io
import json
import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import yaml

from ..load.documents import MAX_ALIAS_EXPANSION, MAX_FILE_BYTES, LoadFailed, Problem
from ..load.loading import load_yaml
from ..load.model import Manifest, Suite, manifest_shape, suite_checks, validate
from ..trust.evidence import replace_file

__all__ = ["Conversion", "ImportFailed", "convert", "write"]

SUITE_NAME = "suite.yaml"
CHECKS_MODULE = "promptfoo_checks"


class ImportFailed(Exception):
    """The config (or a file it names) cannot be imported; the message says why and where."""


@dataclass
class _Case:
    id: str
    description: str | None
    input: Any
    #: Where the test came from (``tests[2]``, ``more.csv:3``), for errors.
    where: str = ""
    expect: dict[str, Any] = field(default_factory=dict)
    #: What was not converted, one line each (kept as comments on the case).
    notes: list[str] = field(default_factory=list)
    #: The test as promptfoo sees it (defaultTest merged in): a python assert's context.
    test: dict[str, Any] = field(default_factory=dict)
    #: The config's prompt rendered with the vars (one inline prompt only), else None.
    prompt: str | None = None
    #: The test's ``options`` over defaultTest's, and where each came from.
    options: dict[str, Any] = field(default_factory=dict)
    option_origin: dict[str, str] = field(default_factory=dict)


@dataclass
class Conversion:
    """What an import writes, and what it says about it."""

    manifest: str
    suite: str
    #: ``promptfoo_checks.py``, when python asserts named files.
    checks: str | None
    cases: int
    #: Assertion types mapped, with counts.
    mapped: dict[str, int]
    #: ``<case id>: <what was not converted>`` lines.
    unconverted: list[str]

    def report(self, config: str, out_dir: str) -> list[str]:
        """The lines printed at the end of an import."""
        files = ["elizon.yaml", SUITE_NAME] + ([f"{CHECKS_MODULE}.py"] if self.checks else [])
        lines = [f"imported {self.cases} cases from {config} into {out_dir} "
                 f"({', '.join(files)})"]
        if self.mapped:
            lines.append("mapped: " + ", ".join(f"{k} ×{n}" for k, n in self.mapped.items()))
        if self.unconverted:
            lines.append(f"not converted ({len(self.unconverted)}; kept as comments on their "
                         f"cases in {SUITE_NAME}):")
            lines += [f"  {line}" for line in self.unconverted]
        else:
            lines.append("not converted: nothing")
        lines.append("providers are not converted: bind the entry point as elizon.yaml says")
        return lines


# -- reading ---------------------------------------------------------------------------------

def _read_bytes(path: Path, what: str) -> bytes:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ImportFailed(f"{what} {path}: larger than {MAX_FILE_BYTES:,} bytes")
        return path.read_bytes()
    except OSError as exc:
        raise ImportFailed(f"{what} {path}: cannot read it: {exc.strerror}") from None


_NULL = "tag:yaml.org,2002:null"
_MERGE = "tag:yaml.org,2002:merge"


try:  # libyaml's parser, as load_yaml's: the pure-Python one ends '?' plain text in {…}
    _Parsing: type[yaml.SafeLoader] = yaml.CSafeLoader  # type: ignore[assignment]
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _Parsing = yaml.SafeLoader


class _Yaml12Loader(_Parsing):  # type: ignore[valid-type,misc]
    """Values as promptfoo (js-yaml, YAML 1.2 core schema) reads them: only ``true`` and
    ``false`` are booleans (``Yes``, ``no``, ``on`` are text), numbers are decimal, ``0o``
    or ``0x`` (``0123`` is 123, ``1:30`` is text), dates are text; a repeated key is an
    error, as in js-yaml. Only used on text :func:`load_yaml` has accepted, so its guards
    (size, nesting, alias bombs, tags, one document) have already held."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key, _ in node.value:
            if isinstance(key, yaml.ScalarNode) and key.tag != _MERGE:
                if key.value in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key.value!r} (first at line "
                        f"{seen[key.value]}); promptfoo refuses it too", key.start_mark)
                seen[key.value] = key.start_mark.line + 1
        mapping: dict[Any, Any] = super().construct_mapping(node, deep)
        return mapping


# Null and the merge key as YAML 1.1 has them; booleans and numbers of YAML 1.2 below.
_Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in items if tag in (_NULL, _MERGE)]
    for first, items in yaml.SafeLoader.yaml_implicit_resolvers.items()
    if any(tag in (_NULL, _MERGE) for tag, _ in items)}


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    text = str(loader.construct_scalar(node))
    if text[:2] in ("0o", "0x"):
        return int(text[2:], 8 if text[1] == "o" else 16)
    return int(text, 10)


def _construct_text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    return str(loader.construct_scalar(node))  # dates stay text: JSON has no date type


_Yaml12Loader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(
    r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
_Yaml12Loader.add_implicit_resolver("tag:yaml.org,2002:int", re.compile(
    r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"), list("-+0123456789"))
_Yaml12Loader.add_implicit_resolver("tag:yaml.org,2002:float", re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"), list("-+0123456789."))
_Yaml12Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_Yaml12Loader.add_constructor("tag:yaml.org,2002:timestamp", _construct_text)


def _yaml(path: Path, what: str) -> Any:
    raw = _read_bytes(path, what)
    try:
        load_yaml(raw)
    except LoadFailed as exc:
        # A complete read only met YAML 1.1 surprises ('no', '0123'), which YAML 1.2 does
        # not have, or what _Yaml12Loader reports itself (a repeated key).
        if not exc.complete:
            problem = exc.problems[0]
            at = f":{problem.line}" if problem.line else ""
            raise ImportFailed(f"{what} {path}{at}: {problem.message}") from None
    try:
        data = yaml.load(raw.decode("utf-8-sig"), Loader=_Yaml12Loader)
    except yaml.MarkedYAMLError as exc:
        at = f":{exc.problem_mark.line + 1}" if exc.problem_mark else ""
        raise ImportFailed(f"{what} {path}{at}: {exc.problem}") from None
    except (yaml.YAMLError, ValueError) as exc:  # a number no YAML 1.2 reader takes
        raise ImportFailed(f"{what} {path}: not YAML promptfoo reads: {exc}") from None
    return _dereference(data, f"{what} {path}")


class _Refs:
    """Local ``$ref``s (``#/…`` JSON pointers into the same file) replaced by what they
    point at, as promptfoo resolves them; a ``$ref`` to another file stays (and is noted
    where it is used). Every value is copied, so nothing is shared when it is written."""

    def __init__(self, root: Any, where: str) -> None:
        self.root = root
        self.where = where
        self.budget = MAX_ALIAS_EXPANSION

    def value(self, value: Any, active: tuple[str, ...]) -> Any:
        self.budget -= 1
        if self.budget < 0:  # refs to refs can double at each step
            raise ImportFailed(f"{self.where}: $refs expand to more than "
                               f"{MAX_ALIAS_EXPANSION:,} values")
        if isinstance(value, list):
            return [self.value(v, active) for v in value]
        if not isinstance(value, dict):
            return value
        ref = value.get("$ref")
        if not (isinstance(ref, str) and ref.startswith("#")):
            return {k: self.value(v, active) for k, v in value.items()}
        if ref in active:
            raise ImportFailed(f"{self.where}: $ref {ref!r} refers to itself (through "
                               f"{' -> '.join(active)})")
        target = self.value(self._pointed(ref), (*active, ref))
        siblings = {k: self.value(v, active) for k, v in value.items() if k != "$ref"}
        if siblings and isinstance(target, dict):  # keys beside a $ref extend what it points at
            return {**target, **siblings}
        return target

    def _pointed(self, ref: str) -> Any:
        if ref != "#" and not ref.startswith("#/"):
            raise ImportFailed(f"{self.where}: $ref {ref!r} is not a JSON pointer ('#/a/b')")
        node = self.root
        for raw in ref[2:].split("/") if ref != "#" else []:
            part = unquote(raw).replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise ImportFailed(f"{self.where}: $ref {ref!r} points at nothing (no "
                                   f"{part!r} there)")
        return node


def _dereference(data: Any, where: str) -> Any:
    try:
        return _Refs(data, where).value(data, ())
    except RecursionError:  # a long chain of $refs, each into nested data
        raise ImportFailed(f"{where}: $refs nest too deeply") from None


def _text(raw: bytes, path: Path, what: str) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ImportFailed(f"{what} {path}: not UTF-8 text (at byte {exc.start})") from None


def _json_value(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ImportFailed(f"{where}: not JSON: {exc}") from None


def _loops(path: Path) -> bool:
    """Whether following ``path``'s links never ends."""
    try:
        path.stat()
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


class _Reader:
    """Resolves ``file://`` references, inside the config's folder only."""

    def __init__(self, config: Path) -> None:
        self.config = config
        self.root = config.parent.resolve()

    def path(self, ref: str, where: str) -> Path:
        written = ref[len("file://"):]
        if "\0" in written:
            raise ImportFailed(f"{where}: {ref!r} contains a NUL byte")
        try:
            resolved = (self.root / written).resolve()
            # Python 3.13 resolves a loop without raising: reading it then fails with ELOOP
            looped = _loops(self.root / written)
        except (RuntimeError, OSError):  # a symlink loop (RuntimeError up to Python 3.12)
            looped = True
        if looped:
            raise ImportFailed(f"{where}: {ref!r} is a symlink loop") from None
        if not resolved.is_relative_to(self.root):
            raise ImportFailed(f"{where}: {ref!r} is outside the config's folder {self.root}; "
                               "copy the file next to the config")
        return resolved

    def tests(self, ref: str, where: str) -> Iterator[tuple[dict[str, Any], str]]:
        """Each test of a ``file://`` test file (globs allowed), with where it came from."""
        written = ref[len("file://"):]
        if any(c in written for c in "*?["):
            matched = sorted(p for p in self.root.glob(written) if p.is_file())
            if not matched:
                raise ImportFailed(f"{where}: {ref!r} matches no file")
            for path in matched:
                if not path.resolve().is_relative_to(self.root):
                    raise ImportFailed(f"{where}: {path} is outside the config's folder")
                yield from self._file(path)
            return
        yield from self._file(self.path(ref, where))

    def _file(self, path: Path) -> Iterator[tuple[dict[str, Any], str]]:
        suffix = path.suffix.lower()
        shown = os.path.relpath(path, self.root)
        if suffix in (".yaml", ".yml", ".json"):
            data = _yaml(path, "test file") if suffix != ".json" else _dereference(_json_value(
                _text(_read_bytes(path, "test file"), path, "test file"), shown), shown)
            items = data if isinstance(data, list) else [data]
            for index, item in enumerate(items):
                yield _test(item, f"{shown}[{index}]"), f"{shown}[{index}]"
        elif suffix == ".jsonl":
            text = _text(_read_bytes(path, "test file"), path, "test file")
            for number, line in enumerate(text.split("\n"), 1):
                if line.strip():
                    yield _test(_json_value(line, f"{shown}:{number}"), f"{shown}:{number}"), \
                        f"{shown}:{number}"
        elif suffix == ".csv":
            yield from _csv_tests(_text(_read_bytes(path, "test file"), path, "test file"),
                                  shown)
        else:
            raise ImportFailed(f"test file {shown}: unsupported type {suffix or '(none)'}; "
                               "expected .yaml, .yml, .json, .jsonl or .csv")


def _test(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ImportFailed(f"{where}: a test must be a mapping (vars, assert, description), "
                           f"found {type(value).__name__}")
    return value


#: promptfoo's CSV ``__expected`` shorthand: ``type: value``; anything else means equals.
_CSV_TYPES = ("contains-any", "contains-all", "icontains-any", "icontains-all", "icontains",
              "contains-json", "contains", "not-contains", "not-icontains", "starts-with",
              "regex", "is-json", "equals", "llm-rubric", "grade", "javascript", "python",
              "similar", "fn", "eval")


def _csv_assertion(text: str) -> dict[str, Any]:
    head, sep, rest = text.partition(":")
    kind = head.strip().lower()
    if kind in ("is-json", "contains-json") and not sep:
        return {"type": kind}
    if sep and kind in _CSV_TYPES:
        kind = {"grade": "llm-rubric", "fn": "javascript", "eval": "javascript"}.get(kind, kind)
        value: Any = rest.strip()
        if kind.endswith(("-any", "-all")):
            value = [v.strip() for v in value.split(",") if v.strip()]
        return {"type": kind, "value": value}
    return {"type": "equals", "value": text}


def _csv_tests(text: str, shown: str) -> Iterator[tuple[dict[str, Any], str]]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        if header is None:
            return
        for record in reader:
            where = f"{shown}:{reader.line_num}"
            if not any(c.strip() for c in record):
                continue
            if len(record) > len(header):
                raise ImportFailed(f"{where}: {len(record)} cells, but the header names "
                                   f"{len(header)} columns")
            test: dict[str, Any] = {"vars": {}, "assert": []}
            for column, cell in zip(header, record, strict=False):
                name = column.strip()
                if name.startswith("__expected"):
                    if cell.strip():
                        test["assert"].append(_csv_assertion(cell))
                elif name == "__description":
                    test["description"] = cell
                elif name.startswith("__"):
                    if cell.strip():
                        test.setdefault("_notes", []).append(
                            f"CSV column {name} = {cell!r} (no Elizon equivalent)")
                else:
                    test["vars"][name] = cell
            yield test, where
    except csv.Error as exc:
        raise ImportFailed(f"{shown}:{reader.line_num}: not CSV: {exc}") from None


# -- mapping ---------------------------------------------------------------------------------

_SLUG = re.compile(r"[^a-z0-9]+")


def case_id(description: str | None, index: int, taken: set[str]) -> str:
    """A valid, unique case id from a description (``case-<n>`` without one)."""
    base = _SLUG.sub("-", (description or "").lower()).strip("-")[:60].strip("-")
    base = base or f"case-{index + 1}"
    chosen, number = base, 2
    while chosen in taken:
        chosen = f"{base}-{number}"
        number += 1
    taken.add(chosen)
    return chosen


def _listed(value: Any) -> list[str] | None:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def _shown(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    text = text.replace("\n", "\\n").replace("\r", "\\r")
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _add(expect: dict[str, Any], key: str, value: Any) -> None:
    """Add to ``expect``: lists are joined, a second scalar is a conflict (ValueError)."""
    if key not in expect:
        expect[key] = value
    elif isinstance(expect[key], list) and isinstance(value, list):
        expect[key] = expect[key] + [v for v in value if v not in expect[key]]
    elif expect[key] != value:
        raise ValueError(f"a second {key} ({_shown(value)}) besides {_shown(expect[key])}")


_RUBRIC_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


def _add_rubric(expect: dict[str, Any], rubric: dict[str, Any], metric: object) -> None:
    """Add an ``llm-rubric`` as a judge rubric: the first as the one mapping; with a second,
    every one becomes a named rubric of a list (``judge.NAME``): a later one named by its
    promptfoo ``metric`` when that is a usable name, else each ``rubric-N``."""
    present = expect.get("judge")
    if present is None:  # one rubric stays the one mapping: its assertion is "judge"
        expect["judge"] = rubric
        return
    if isinstance(metric, str) and _RUBRIC_NAME.match(metric):
        rubric = {"name": metric, **rubric}
    listed = present if isinstance(present, list) else [present]
    if any({k: v for k, v in r.items() if k != "name"} == {k: v for k, v in rubric.items()
                                                            if k != "name"} for r in listed):
        return  # the same rubric twice is graded once
    listed = [*listed, rubric]
    taken: set[str] = set()
    named = []
    for number, item in enumerate(listed, 1):
        name = item.get("name")
        if not name or name in taken:
            name = f"rubric-{number}"
        taken.add(name)
        named.append({"name": name, **{k: v for k, v in item.items() if k != "name"}})
    expect["judge"] = named


class _Unrendered(Exception):
    """A template the importer does not render; the message says which and why."""


#: ``{{ name }}`` and ``{{ name.field }}``: the part of nunjucks the importer renders.
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\s*\}\}")
_NUNJUCKS = re.compile(r"\{\{|\{%|\{#")
_CLOSING = {"{{": "}}", "{%": "%}", "{#": "#}"}


def _js_text(value: Any, shown: str) -> str:
    """A var as nunjucks prints it (JavaScript's text of the value)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # JavaScript prints 2.0 as 2
    if isinstance(value, (str, int, float)):
        return str(value)
    if isinstance(value, list):  # an array prints as its items joined by commas
        return ",".join(_js_text(v, shown) for v in value)
    raise _Unrendered(f"the template {shown!r} prints a mapping (promptfoo writes "
                      "[object Object])")


def _literal(segment: str) -> str:
    found = _NUNJUCKS.search(segment)
    if found is None:
        return segment
    end = segment.find(_CLOSING[found.group()], found.end())
    snippet = segment[found.start():end + 2 if end >= 0 else None]
    raise _Unrendered(f"the template {_shown(snippet, 60)} is nunjucks the importer does "
                      "not render (a filter, tag, comment or expression; it renders "
                      "{{ var }} and {{ var.field }})")


def _render(text: str, variables: dict[str, Any]) -> str:
    """``text`` with its ``{{ var }}`` / ``{{ var.field }}`` placeholders replaced by the
    test's vars, as promptfoo's nunjucks renders them; :class:`_Unrendered` for any other
    nunjucks syntax and for a var the test does not have."""
    parts: list[str] = []
    last = 0
    for match in _PLACEHOLDER.finditer(text):
        parts.append(_literal(text[last:match.start()]))
        value: Any = variables
        for name in match.group(1).split("."):
            if not (isinstance(value, dict) and name in value):
                raise _Unrendered(f"the template {match.group()!r} names a var the test "
                                  "does not have")
            value = value[name]
        parts.append(_js_text(value, match.group()))
        last = match.end()
    parts.append(_literal(text[last:]))
    return "".join(parts)


def _rendered(value: Any, variables: dict[str, Any]) -> Any:
    """An assertion's value rendered as promptfoo does: text, and each text of a list."""
    if isinstance(value, str):
        return value if value.startswith("file://") else _render(value, variables)
    if isinstance(value, list):
        return [_rendered(v, variables) if isinstance(v, str) else v for v in value]
    return value


class _Mapper:
    def __init__(self, reader: _Reader, out_dir: Path) -> None:
        self.reader = reader
        self.out_dir = out_dir
        self.mapped: dict[str, int] = {}
        #: (check name, path from out_dir, function, its context as JSON)
        self.python: list[tuple[str, str, str, str]] = []

    def assertion(self, case: _Case, item: Any) -> None:
        """Map one promptfoo assertion onto ``case`` (or note why not)."""
        if isinstance(item, dict) and "$ref" in item:  # local ones are resolved by now
            case.notes.append(f"assertion $ref {_shown(item['$ref'])}: not resolved (only "
                              "'#/…' pointers into the same file are); copy the assertion in")
            return
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            case.notes.append(f"assertion {_shown(item)}: not a mapping with a 'type'")
            return
        kind: str = item["type"]
        value = item.get("value")
        if kind != "python":  # python's value is code or a file, not a template
            try:
                value = _rendered(value, case.input)
            except _Unrendered as exc:
                case.notes.append(f"{kind} {_shown(value)}: {exc}; not converted")
                return
        try:
            mapped = self._map(case, kind, value, item)
        except ValueError as exc:
            case.notes.append(f"{kind} {_shown(value)}: {exc}")
            return
        if mapped is None:
            case.notes.append(f"{kind} {_shown(value)}: no Elizon equivalent")
            return
        extras = sorted(set(item) - {"type", "value", "threshold"} - mapped)
        if extras:  # transform, weight, provider, …: what the mapping cannot carry
            case.notes.append(f"{kind}: {', '.join(f'{k}={_shown(item[k], 40)}' for k in extras)}"
                              " not converted (the assertion itself is)")
        self.mapped[kind] = self.mapped.get(kind, 0) + 1

    def _map(self, case: _Case, kind: str, value: Any, item: dict[str, Any]) -> set[str] | None:
        """Add the Elizon form of one assertion; the keys of ``item`` it used besides
        type/value/threshold, or None when there is no equivalent."""
        expect = case.expect
        texts = _listed(value)
        threshold = item.get("threshold")
        simple = {"contains": "containsExact", "icontains": "contains",
                  "contains-all": "containsExact", "icontains-all": "contains",
                  "contains-any": "containsAny", "icontains-any": "containsAny",
                  "not-contains": "notContains", "not-icontains": "notContains",
                  "regex": "matches"}
        if kind in simple:
            if texts is None:
                raise ValueError("value is not text or a list of texts")
            _add(expect, simple[kind], texts)
            return set()
        if kind in ("equals", "starts-with"):
            if not isinstance(value, str):
                raise ValueError("value is not text (an object compared as JSON has no "
                                 "exact Elizon equivalent; consider output:)")
            _add(expect, "equals" if kind == "equals" else "startsWith", value)
            return set()
        if kind in ("is-json", "contains-json"):
            _add(expect, "isJson", True)
            if isinstance(value, dict):
                _add(expect, "jsonSchema", value)
            elif value is not None:
                raise ValueError("a schema given as a file or text is not converted")
            return set()
        if kind in ("latency", "cost"):
            if not isinstance(threshold, (int, float)) or isinstance(threshold, bool) \
                    or not math.isfinite(threshold):
                raise ValueError("needs a finite numeric threshold")
            if kind == "latency":
                _add(expect, "maxLatencyMs", int(threshold))
            else:
                _add(expect, "maxCostUsd", float(threshold))
            return set()
        if kind == "llm-rubric":
            if not isinstance(value, str) or not value.strip():
                raise ValueError("the rubric is not text")
            if threshold is not None and not (isinstance(threshold, (int, float))
                                              and 0 <= threshold <= 1):
                raise ValueError("threshold is not a number from 0 to 1")
            _add_rubric(expect, {"rubric": value, "threshold":
                                 float(threshold) if threshold is not None else 0.5},
                        item.get("metric"))
            return set()
        if kind == "python":
            return self._python(case, value, threshold, item)
        return None

    def _python(self, case: _Case, value: Any, threshold: Any, item: dict[str, Any]
                ) -> set[str]:
        if not (isinstance(value, str) and value.startswith("file://")):
            raise ValueError("inline Python code is not converted; move it into a file "
                             "(file://checks.py:function) or write a check")
        written, _, function = value[len("file://"):].partition(":")
        path = self.reader.path("file://" + written, f"case {case.id}")
        function = function or "get_assert"
        if not function.isidentifier():
            raise ValueError(f"{function!r} is not a function name")
        name = f"check_{len(self.python) + 1}"
        context = {"prompt": case.prompt, "test": case.test, "config": item.get("config")}
        self.python.append((name, os.path.relpath(path, self.out_dir.resolve()), function,
                            json.dumps(context, ensure_ascii=False, default=str)))
        spec: Any = f"{CHECKS_MODULE}:{name}"
        if isinstance(threshold, (int, float)) and not isinstance(threshold, bool):
            spec = {"check": spec, "threshold": float(threshold)}
        _add(case.expect, "checks", [spec])
        return {"config"}  # handed to the function in its context, as promptfoo does


_CHECKS_HEAD = '''"""Adapters for the promptfoo python asserts of this suite (written by
``elizon-eval import promptfoo``): each calls the original file's function as promptfoo
does, ``function(output, context)``, and turns its result into an Elizon check's.

The context has promptfoo's keys: ``prompt`` (the config's one inline prompt rendered
with the case's vars; None when the config has several, or a file), ``vars`` (the
case's input), ``test`` (the promptfoo test: description, vars, assert, options),
``config`` (the assertion's config), ``provider`` (the Elizon entry point stands in
for promptfoo's provider), ``providerResponse`` (the output, and tokenUsage and cost
when the answer reported them), ``logProbs`` and ``trace`` (None).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent


def _response(output: Any, answer: Any) -> dict[str, Any]:
    response: dict[str, Any] = {"output": output}
    usage = getattr(answer, "usage", None)
    if usage is not None:
        response["tokenUsage"] = {"prompt": usage.input_tokens,
                                  "completion": usage.output_tokens, "total": usage.tokens}
        if usage.cost_usd is not None:
            response["cost"] = usage.cost_usd
    return response


def _run(path: str, function: str, fixed: str, output: Any, input: Any, answer: Any) -> Any:
    spec = importlib.util.spec_from_file_location(f"promptfoo_assert_{abs(hash(path))}",
                                                  _HERE / path)
    assert spec is not None and spec.loader is not None, f"cannot load {path}"
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    known = json.loads(fixed)  # a fresh copy: the function may change what it is given
    variables = input if isinstance(input, dict) else {"input": input}
    context = {"prompt": known["prompt"], "vars": variables,
               "test": {**known["test"], "vars": variables}, "config": known["config"],
               "provider": {"id": "elizon-entry", "label": "the Elizon entry point"},
               "providerResponse": _response(output, answer), "logProbs": None,
               "trace": None}
    result = getattr(module, function)(output, context)
    if isinstance(result, dict):  # promptfoo's GradingResult
        return bool(result.get("pass")), str(result.get("reason", ""))
    return result
'''


def _checks_module(python: list[tuple[str, str, str, str]]) -> str:
    parts = [_CHECKS_HEAD]
    for name, path, function, context in python:
        parts.append(f"\n\ndef {name}(output: Any, input: Any, answer: Any) -> Any:\n"
                     f"    return _run({path!r}, {function!r},\n"
                     f"                {context!r},\n"
                     f"                output, input, answer)\n")
    return "".join(parts)


# -- the whole config --------------------------------------------------------------------------

def _tests(config: dict[str, Any], reader: _Reader) -> Iterator[tuple[dict[str, Any], str]]:
    tests = config.get("tests")
    if tests is None:
        return
    items = tests if isinstance(tests, list) else [tests]
    for index, item in enumerate(items):
        where = f"tests[{index}]"
        if isinstance(item, str):
            if not item.startswith("file://"):
                raise ImportFailed(f"{where}: {item!r} is neither a test nor a file:// "
                                   "reference")
            yield from reader.tests(item, where)
        else:
            yield _test(item, where), where


def _default(config: dict[str, Any], reader: _Reader) -> dict[str, Any]:
    default = config.get("defaultTest") or {}
    if isinstance(default, str) and default.startswith("file://"):
        default = _yaml(reader.path(default, "defaultTest"), "defaultTest file")
    if not isinstance(default, dict):
        raise ImportFailed("defaultTest: expected a mapping (vars, assert, threshold)")
    return default


def _asserts(test: dict[str, Any], where: str) -> list[Any]:
    found = test.get("assert") or []
    if not isinstance(found, list):
        raise ImportFailed(f"{where}.assert: expected a list of assertions")
    return found


def _options(test: dict[str, Any], where: str) -> dict[str, Any]:
    found = test.get("options")
    if found is None:
        return {}
    if not isinstance(found, dict):
        raise ImportFailed(f"{where}.options: expected a mapping (transform, provider, …)")
    return found


_KNOWN_TEST_KEYS = {"vars", "assert", "description", "threshold", "options", "_notes"}

_TRANSFORM_LOST = ("the assertions see the output untransformed; transform it in the entry "
                   "point (or read a JSON field with expect.path)")
_PROMPT_LOST = ("promptfoo adds it to the prompt, and prompts are not converted; add it in "
                "the entry point")
#: Test options with no Elizon equivalent, and what that means for the converted case.
_OPTION_LOST = {
    "transform": _TRANSFORM_LOST,
    "postprocess": _TRANSFORM_LOST,
    "transformVars": "the input is the vars as written; transform them in the entry point",
    "prefix": _PROMPT_LOST,
    "suffix": _PROMPT_LOST,
    "rubricPrompt": "the judge grades with its own prompt",
    "storeOutputAs": "an Elizon case does not pass its output on to later cases",
    "runSerially": "cases share --elizon-concurrency; give --elizon-concurrency=1 to run one "
                   "at a time",
}
#: Options whose promptfoo behaviour Elizon has anyway: converted by writing nothing.
_OPTION_AS_IS = {"disableVarExpansion", "disableConversationVar"}


def _option_notes(case: _Case, mapped: dict[str, int]) -> None:
    for key, value in case.options.items():
        if key == "provider":  # the grading provider: the package's judge (_judge)
            continue
        if key in _OPTION_AS_IS:
            mapped[f"options.{key}"] = mapped.get(f"options.{key}", 0) + 1
            continue
        case.notes.append(f"options.{key} {_shown(value, 60)} (from {case.option_origin[key]}"
                          f"): not converted: {_OPTION_LOST.get(key, 'no Elizon equivalent')}")


def _endpoint_judge(provider: Any) -> dict[str, str] | str:
    """The endpoint judge (docs/format.md#judge) a promptfoo grading provider is; else why
    it is none."""
    ident = provider
    if isinstance(provider, dict):
        extra = sorted(set(provider) - {"id", "label"})
        if extra:
            return f"its {', '.join(extra)} cannot be carried by an endpoint judge"
        ident = provider.get("id")
    if not isinstance(ident, str):
        return "it names no provider id"
    parts = ident.split(":")
    if parts[0] == "openai" and parts[-1] and (
            len(parts) == 2 or (len(parts) == 3 and parts[1] == "chat")):
        return {"url": "https://api.openai.com/v1", "model": parts[-1],
                "apiKeyEnv": "OPENAI_API_KEY"}
    return "only OpenAI chat models (openai:<model>) map onto an endpoint judge"


def _judge(cases: list[_Case], mapped: dict[str, int]) -> dict[str, str] | None:
    """The package's judge, from the grading provider (``options.provider``) of the cases
    that have a judge; notes on those cases when there is no one judge to write."""
    judged = [c for c in cases if "judge" in c.expect]
    given = [c for c in judged if "provider" in c.options]
    if not given:
        return None
    first = given[0].options["provider"]
    judge = _endpoint_judge(first)
    if isinstance(judge, dict) and len(given) == len(judged) and all(
            c.options["provider"] == first for c in given):
        mapped["options.provider"] = len(given)
        return judge
    for case in given:
        value = case.options["provider"]
        why = _endpoint_judge(value)
        if not isinstance(why, str):
            why = "a package has one judge, and its tests grade with different providers"
        case.notes.append(f"options.provider {_shown(value, 60)} (from "
                          f"{case.option_origin['provider']}; grades llm-rubric): not "
                          f"converted: {why}; bind a judge (elizon.yaml judge: or an "
                          "elizon_judge fixture)")
    return None


def _one_prompt(config: dict[str, Any]) -> str | None:
    """The config's prompt template when it has exactly one, written inline."""
    prompts = config.get("prompts")
    items = [prompts] if isinstance(prompts, (str, dict)) else prompts
    if not isinstance(items, list) or len(items) != 1:
        return None
    text = items[0].get("raw") if isinstance(items[0], dict) else items[0]
    return text if isinstance(text, str) and not text.startswith("file://") else None


def convert(config_path: Path, out_dir: Path) -> Conversion:
    """Read ``config_path`` and what it names; the package to write into ``out_dir``.
    ImportFailed when the config cannot be read or the package would not load."""
    data = _yaml(config_path, "config")
    if not isinstance(data, dict):
        raise ImportFailed(f"config {config_path}: not a promptfoo config (a mapping with "
                           "'tests', 'prompts', 'providers', …)")
    reader = _Reader(config_path)
    default = _default(data, reader)
    default_vars = default.get("vars") or {}
    if not isinstance(default_vars, dict):
        raise ImportFailed("defaultTest.vars: expected a mapping")
    default_asserts = _asserts(default, "defaultTest")
    default_options = _options(default, "defaultTest")
    prompt = _one_prompt(data)
    mapper = _Mapper(reader, out_dir)
    cases: list[_Case] = []
    taken: set[str] = set()
    for index, (test, where) in enumerate(_tests(data, reader)):
        variables = test.get("vars") or {}
        if not isinstance(variables, dict):
            raise ImportFailed(f"{where}.vars: expected a mapping of names to values")
        merged = {**default_vars, **variables}
        description = test.get("description")
        description = description if isinstance(description, str) else None
        case = _Case(case_id(description, index, taken), description, merged, where)
        case.notes += test.get("_notes", [])
        own = _options(test, where)
        case.options = {**default_options, **own}
        case.option_origin = {k: "the test" if k in own else "defaultTest"
                              for k in case.options}
        asserts = [*_asserts(test, where), *default_asserts]
        case.test = {**{k: v for k, v in test.items() if k != "_notes"}, "vars": merged,
                     "assert": asserts, "options": case.options}
        if prompt is not None:
            try:
                case.prompt = _render(prompt, merged)
            except _Unrendered:
                case.prompt = None
        for name, var in merged.items():
            if isinstance(var, str) and var.startswith("file://"):
                case.notes.append(f"var {name} = {var!r}: promptfoo reads the file; here it "
                                  "is this text")
            elif isinstance(var, list) and case.options.get("disableVarExpansion") is not True:
                case.notes.append(f"var {name} is a list: promptfoo makes one test per "
                                  "item; here it is one input")
        for item in asserts:
            mapper.assertion(case, item)
        threshold = test.get("threshold", default.get("threshold"))
        if threshold is not None:
            case.notes.append(f"threshold {_shown(threshold)} (a weighted score over the "
                              "assertions): not converted; in Elizon every assertion must pass")
        _option_notes(case, mapper.mapped)
        for key in sorted(set(test) - _KNOWN_TEST_KEYS):
            case.notes.append(f"test key {key}: {_shown(test[key], 60)} not converted")
        cases.append(case)
    if not cases:
        raise ImportFailed(f"config {config_path}: no tests to import (tests: is missing or "
                           "empty)")
    judge = _judge(cases, mapper.mapped)
    manifest = _manifest(data, config_path, any("judge" in c.expect for c in cases), judge)
    suite, starts = _suite(cases, config_path)
    _check_loads(manifest, suite, cases, starts)
    unconverted = [f"{c.id}: {note}" for c in cases for note in c.notes]
    return Conversion(
        manifest=manifest, suite=suite,
        checks=_checks_module(mapper.python) if mapper.python else None,
        cases=len(cases), mapped=mapper.mapped, unconverted=unconverted)


def _comment(text: str) -> str:
    return " ".join(text.split())  # one line: a newline would end the comment


def _manifest(config: dict[str, Any], config_path: Path, judged: bool,
              judge: dict[str, str] | None) -> str:
    description = config.get("description")
    name = _SLUG.sub("-", (description if isinstance(description, str) else
                           config_path.parent.name).lower()).strip("-")[:60] or "imported"
    providers = config.get("providers", config.get("targets"))
    shown = _comment(_shown(providers, 200)) if providers is not None else "none"
    lines = [
        f"# Imported from {_comment(config_path.name)} by `elizon-eval import promptfoo`.",
        "# Providers are not converted. Bind the entry point that answers each case's",
        "# input (a mapping of the promptfoo vars, passed as keyword arguments):",
        "#   entry: app:answer             # a module of this folder, here; or",
        "#   an `elizon_entry` fixture in conftest.py, or --elizon-entry on the command line.",
        f"# promptfoo providers were: {shown}",
    ]
    if config.get("prompts") is not None:
        lines.append(f"# promptfoo prompts were: {_comment(_shown(config['prompts'], 200))}")
    if judge is not None:
        lines.append("# judge: promptfoo's grading provider (options.provider); the API key is "
                     f"read from ${judge['apiKeyEnv']}.")
    elif judged:
        lines.append("# llm-rubric became judge: bind a judge (judge: here, or an elizon_judge "
                     "fixture).")
    body: dict[str, Any] = {"name": name}
    if isinstance(description, str):
        body["description"] = description
    if judge is not None:
        body["judge"] = judge
    body["evaluation"] = {"suite": f"./{SUITE_NAME}", "gate": "must-pass"}
    return "\n".join(lines) + "\n" + _dump(body)


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True  # a value used twice is written twice, not as &id001 / *id001


def _dump(value: Any) -> str:
    return yaml.dump(value, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100,
                     default_flow_style=False)


def _suite(cases: list[_Case], config_path: Path) -> tuple[str, list[int]]:
    """The suite's text, and the line of each case's ``- id:``."""
    out = [f"# Imported from {_comment(config_path.name)} by `elizon-eval import promptfoo`.",
           "cases:"]
    starts = []
    for case in cases:
        body: dict[str, Any] = {"id": case.id}
        if case.description:
            body["description"] = case.description
        body["input"] = case.input
        if case.expect:
            body["expect"] = case.expect
        dumped = _dump([body]).splitlines()
        out.append("  " + dumped[0])
        starts.append(len(out))
        out += [f"    # promptfoo, not converted: {_comment(note)}" for note in case.notes]
        out += ["  " + line for line in dumped[1:]]
    return "\n".join(out) + "\n", starts


def _check_loads(manifest: str, suite: str, cases: list[_Case], starts: list[int]) -> None:
    """The package loads as it will be written: the plugin's own reading and validation of
    both files. ImportFailed (before anything is written) names each problem and its case."""
    problems: list[str] = []
    for name, text, model, more in (("elizon.yaml", manifest, Manifest, manifest_shape),
                                    (SUITE_NAME, suite, Suite, suite_checks)):
        found: list[Problem]
        try:
            found = validate(model, load_yaml(text.encode("utf-8", "backslashreplace")),
                             more)[1]
        except LoadFailed as exc:
            found = exc.problems + (validate(model, exc.data, more)[1] if exc.complete else [])
        for problem in found:
            at = f":{problem.line}" if problem.line else ""
            whose = [c for c, start in zip(cases, starts, strict=True)
                     if name == SUITE_NAME and start <= (problem.line or 0)][-1:]
            of = "".join(f" (case {c.id}, from {c.where})" for c in whose)
            problems.append(f"{name}{at}{of}: {problem.message}")
    if problems:
        more_ = f"; and {len(problems) - 5} more" if len(problems) > 5 else ""
        raise ImportFailed("the converted package would not load, so nothing was written: "
                           + "; ".join(problems[:5]) + more_ + ". Change the config (or leave "
                           "that assertion out) and import again")


def write(conversion: Conversion, out_dir: Path, *, force: bool = False) -> list[Path]:
    """Write the package; an existing file (a link too, dangling or not) is kept unless
    ``force``, which replaces it: a link is replaced, never written through."""
    files = {"elizon.yaml": conversion.manifest, SUITE_NAME: conversion.suite}
    if conversion.checks:
        files[f"{CHECKS_MODULE}.py"] = conversion.checks
    targets = [out_dir / name for name in files]
    existing = [p for p in targets if os.path.lexists(p)]
    if existing and not force:
        link = " (a symbolic link)" if existing[0].is_symlink() else ""
        raise ImportFailed(f"{existing[0]} exists{link}; use --force to overwrite")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        for path, text in zip(targets, files.values(), strict=True):
            replace_file(path, text)
    except OSError as exc:
        raise ImportFailed(f"cannot write into {out_dir}: {exc.strerror}") from None
    return targets
