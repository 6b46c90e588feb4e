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
plugin will load it. Providers × prompts become the manifest's ``variants:`` (params such
as the model for the entry point) and the prompts versions of one registry prompt,
``prompts/prompt.yaml``; the manifest says where to bind the entry point
(docs/contract.md#importing-from-promptfoo, docs/cli.md#coming-from-promptfoo). Configs
are untrusted input: the plugin's safe YAML loader guards the reading (then values
are read as promptfoo's YAML 1.2 reads them), ``file://`` paths must stay inside
the config's folder. No pytest import here.
"""

from __future__ import annotations

import csv
import errno
import io
import json
import keyword
import math
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import yaml

from ..errors import ElizonError
from ..load.documents import MAX_ALIAS_EXPANSION, MAX_FILE_BYTES, LoadFailed, Problem
from ..load.loading import load_yaml
from ..load.model import Manifest, Suite, manifest_shape, suite_checks, validate
from ..load.prompts import load_registry
from ..text import without_userinfo
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
    #: ``prompts/prompt.yaml``: the config's prompts as versions, when any converted.
    prompt_registry: str | None = None
    #: The providers and prompts read (a prompt file with several: each), the prompt
    #: versions written, and the variants (0: the manifest has none).
    providers: int = 0
    prompts: int = 0
    versions: int = 0
    variants: int = 0
    #: The reference variant's name.
    reference: str | None = None
    #: What of the providers and prompts was not converted, one line each.
    setup_unconverted: list[str] = field(default_factory=list)

    def files(self) -> dict[str, str]:
        """What :func:`write` writes: path in the package folder → text."""
        files = {"elizon.yaml": self.manifest, SUITE_NAME: self.suite}
        if self.checks:
            files[f"{CHECKS_MODULE}.py"] = self.checks
        if self.prompt_registry:
            files[PROMPTS_FILE] = self.prompt_registry
        return files

    def report(self, config: str, out_dir: str) -> list[str]:
        """The lines printed at the end of an import."""
        files = list(self.files())
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
        lines.append(self._matrix_line())
        if self.setup_unconverted:
            lines.append(f"providers and prompts not converted ({len(self.setup_unconverted)}; "
                         "kept as comments in elizon.yaml):")
            lines += [f"  {line}" for line in self.setup_unconverted]
        lines.append("bind the entry point as elizon.yaml says")
        return lines

    def _matrix_line(self) -> str:
        counts = (f"{_count(self.providers, 'provider')} × {_count(self.prompts, 'prompt')}")
        written = (f"; {_count(self.versions, 'prompt version')} in {PROMPTS_FILE}"
                   if self.versions else "")
        if self.variants:
            return (f"providers × prompts: {counts} → {self.variants} variants in elizon.yaml "
                    f"(reference: {self.reference}){written}")
        return f"providers × prompts: {counts} → no variants{written}"


def _count(number: int, what: str) -> str:
    return f"{number} {what}{'' if number == 1 else 's'}"


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

    def paths(self, ref: str, where: str) -> list[Path]:
        """The files a ``file://`` reference names: a glob's matches, sorted, or the one
        path (which may not exist)."""
        written = ref[len("file://"):]
        if any(c in written for c in "*?["):
            matched = sorted(p for p in self.root.glob(written) if p.is_file())
            if not matched:
                raise ImportFailed(f"{where}: {ref!r} matches no file")
            for path in matched:
                if not path.resolve().is_relative_to(self.root):
                    raise ImportFailed(f"{where}: {path} is outside the config's folder")
            return matched
        return [self.path(ref, where)]

    def tests(self, ref: str, where: str) -> Iterator[tuple[dict[str, Any], str]]:
        """Each test of a ``file://`` test file (globs allowed), with where it came from."""
        for path in self.paths(ref, where):
            yield from self._file(path)

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
    """``value`` as a note shows it: credentials (by key) as ``…``, URLs without their login
    and query (docs/cli.md#providers-and-prompts-as-variants: never printed)."""
    value = _masked(value)
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
        # No credential reaches the written module (docs/cli.md#providers-and-prompts-as-
        # variants): the vars are the case's input, written in the suite anyway.
        notes: list[str] = []
        test = {k: v if k == "vars" else _scrubbed(v, f"test.{k}", notes, "the check")
                for k, v in case.test.items()}
        context = {"prompt": case.prompt, "test": test,
                   "config": _scrubbed(item.get("config"), "config", notes, "the check")}
        case.notes += [f"python assert context, {note}" for note in notes
                       if f"python assert context, {note}" not in case.notes]
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


# -- providers × prompts: variants and the prompt registry -------------------------------------
# promptfoo runs every test once per (provider, prompt) pair; Elizon runs every case once per
# variant (docs/format.md#variants). Each pair becomes a variant, each prompt a version of
# one registry prompt (docs/format.md#prompts): promptfoo's prompts are alternatives for the
# same slot, which is what versions of one prompt are
# (docs/cli.md#providers-and-prompts-as-variants).

#: The registry prompt the config's prompts become versions of, and its file.
PROMPT_NAME = "prompt"
PROMPTS_FILE = f"prompts/{PROMPT_NAME}.yaml"

_NAME_JUNK = re.compile(r"[^A-Za-z0-9_.-]+")
#: ``{{ name }}`` (spaces or tabs inside): the one template form the prompt registry has.
_PROMPT_VARIABLE = re.compile(r"\{\{[ \t]*([A-Za-z_][A-Za-z0-9_]{0,63})[ \t]*\}\}")
#: The word between a provider and its model in ids such as ``openai:chat:gpt-4o``.
_PROVIDER_KINDS = {"chat", "completion", "completions", "messages", "responses", "assistant",
                   "embedding", "embeddings", "realtime"}
#: Provider ids that name code, a command or a URL rather than a model.
_CUSTOM_PROVIDERS = ("file://", "exec:", "python:", "golang:", "http://", "https://", "ws://",
                     "wss://")
_PROMPT_CODE = {".py", ".js", ".cjs", ".mjs", ".ts", ".cts", ".mts"}
_PROMPT_CHAT = {".json", ".jsonl", ".yaml", ".yml"}
#: The keys of promptfoo's provider options (one of them alone is no {id: options} pair).
_PROVIDER_KEYS = {"id", "label", "config", "prompts", "transform", "delay", "env"}
#: Provider keys besides id, label, config and prompts, and what not converting them means.
_PROVIDER_LOST = {
    "transform": "the assertions see the output untransformed; transform it in the entry point",
    "delay": "no Elizon equivalent (--elizon-concurrency limits the calls in flight)",
    "env": "the entry point reads its own environment (values not shown)",
}


@dataclass
class _Prompt:
    #: ``prompts[1]``, with the file (and the piece of it) when it came from one.
    where: str
    #: As written: the text, or the file reference.
    raw: str
    #: The label (or id) the config gives it.
    label: str | None
    #: What names it in variant names: the label, the file's stem, else ``prompt-N``.
    short: str | None
    config: dict[str, Any] | None = None
    #: The template, when converted; its ``{{ name }}`` variables; its registry version.
    text: str | None = None
    variables: list[str] = field(default_factory=list)
    version: str = ""
    #: Why it is not converted.
    why: str | None = None
    #: Written in the config (not read from a file): promptfoo labels it by its text.
    inline: bool = False


@dataclass
class _Provider:
    where: str
    ident: str
    label: str | None
    params: dict[str, Any]
    #: promptfoo's ``prompts:`` on a provider: the labels of the prompts it runs.
    prompts: list[str] | None
    #: Where each ``prompts:`` entry is, for errors.
    prompts_where: str = ""

    @property
    def shown(self) -> str:
        return self.label or _redacted(self.ident)


@dataclass
class _Matrix:
    """What the config's providers and prompts became."""

    key: str
    providers: list[_Provider]
    prompts: list[_Prompt]
    #: The ``variants:`` entries, and each one's provider and prompt, for the manifest.
    variants: list[dict[str, Any]]
    origins: list[str]
    #: What was not converted, one line each (the report and the manifest say them).
    notes: list[str]

    @property
    def versions(self) -> list[_Prompt]:
        return [p for p in self.prompts if p.text is not None]


#: A URL's ``scheme://``; a URL within other text runs to the next space (as
#: text.without_userinfo reads one).
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://\S*")
_QUERY_OR_FRAGMENT = re.compile(r"[?#]")


def _bare_url(url: str) -> str:
    """``url`` (text that starts with ``scheme://``) without its user, password, query and
    fragment: ``https://bob:pw@h/v1?key=k`` → ``https://h/v1``. The login ends where
    without_userinfo says (a password may hold ``/``, ``?``, ``@`` or a space), so no part of
    it is left, and nothing is parsed that could fail (a port, a host)."""
    scheme = _URL.match(url)
    if scheme is None:
        return url
    rest = without_userinfo(url)[scheme.end():]
    rest = rest.removeprefix("***@")  # without_userinfo's mark for the login it hid
    return scheme.group() + _QUERY_OR_FRAGMENT.split(rest, maxsplit=1)[0]


def _redacted(text: str) -> str:
    """``text`` as it may be written or shown: each URL in it (all of it, when it starts
    with one) without its user, password, query and fragment (docs/cli.md#providers-and-
    prompts-as-variants)."""
    if _URL.match(text):
        return _bare_url(text)
    if "://" not in text:
        return text
    return _URL_IN_TEXT.sub(lambda found: _bare_url(found.group()), text)


def _model(ident: str) -> str | None:
    """The model a provider id names (``openai:gpt-4o-mini`` → ``gpt-4o-mini``,
    ``bedrock:us.meta.llama3:0`` → ``us.meta.llama3:0``); None for custom providers."""
    if ident.startswith(_CUSTOM_PROVIDERS):
        return None
    parts = ident.split(":")
    rest = parts[1:]
    if len(rest) > 1 and rest[0] in _PROVIDER_KINDS:
        rest = rest[1:]
    return ":".join(rest) or None


#: The words of a key (``X-Auth-Token`` → x, auth, token; ``basicAuth`` → basic, auth).
_KEY_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def _sensitive(key: object) -> bool:
    """A config key that holds a credential (never written: docs/contract.md's no-secret
    rule): ``apiKey``, ``accessToken``, ``token_url``, ``basicAuth``, a header's
    ``Authorization`` or ``Cookie``; ``max_tokens`` and ``author`` are not."""
    name = re.sub(r"[^a-z]", "", str(key).lower())
    words = {w.lower() for w in _KEY_WORDS.findall(str(key))}
    return (any(word in name for word in ("apikey", "secret", "password", "passwd",
                                          "passphrase", "authorization", "authentication",
                                          "credential", "bearer", "privatekey"))
            or name.endswith(("token", "auth")) or bool(words & {"token", "auth", "cookie"}))


def _env_name(key: object) -> str:
    """An environment variable to suggest for a credential's key (``basicAuth`` →
    ``BASIC_AUTH``)."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", str(key))
    return re.sub(r"[^A-Za-z0-9]+", "_", spaced).strip("_").upper()[:64] or "SECRET"


def _scrubbed(value: Any, where: str, notes: list[str], reader: str = "the entry point"
              ) -> Any:
    """``value`` without the credentials in it, each noted (by key, never its value, with
    where ``reader`` may read it instead), and its URLs without their login and query, each
    change noted (docs/cli.md#providers-and-prompts-as-variants)."""
    if isinstance(value, dict):
        kept = {}
        for key, item in value.items():
            if _sensitive(key):
                notes.append(f"{where}.{key}: a credential, not written; {reader} reads it "
                             f"from its environment (e.g. ${_env_name(key)})")
            else:
                kept[key] = _scrubbed(item, f"{where}.{key}", notes, reader)
        return kept
    if isinstance(value, list):
        return [_scrubbed(item, f"{where}[{i}]", notes, reader) for i, item in enumerate(value)]
    if isinstance(value, str) and _redacted(value) != value:
        value = _redacted(value)
        notes.append(f"{where}: a URL: its user, password, query and fragment are left out "
                     f"({_shown(value, 80)})")
    return value


def _masked(value: Any) -> Any:
    """``value`` as a note may show it: a credential's value (by key) as ``…``, URLs as
    :func:`_redacted` writes them."""
    if isinstance(value, dict):
        return {k: "…" if _sensitive(k) else _masked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(item) for item in value]
    return _redacted(value) if isinstance(value, str) else value


def _params(config: dict[str, Any], where: str, notes: list[str]) -> dict[str, Any]:
    """A provider's (or prompt's) ``config`` as variant ``params``: keyword arguments."""
    params: dict[str, Any] = {}
    for key, value in _scrubbed(config, where, notes).items():
        if not (isinstance(key, str) and key.isidentifier()):
            notes.append(f"{where}.{key}: not a Python identifier, so no keyword argument "
                         "can carry it")
        else:
            params[key] = value
    return params


def _mapping(value: Any, where: str, what: str) -> dict[str, Any] | None:
    if value is not None and not isinstance(value, dict):
        raise ImportFailed(f"{where}: expected {what}, found {type(value).__name__}")
    return value


def _label(value: Any, where: str) -> str | None:
    if value is not None and not (isinstance(value, str) and value.strip()):
        raise ImportFailed(f"{where}: expected a label (text), found {_shown(value, 40)}")
    return value


# -- providers

def _provider_items(config: dict[str, Any], key: str, reader: _Reader
                    ) -> Iterator[tuple[str, Any]]:
    value = config.get(key)
    if value is None:
        return
    if isinstance(value, dict) and "id" not in value:  # {id: options, …}
        for ident, options in value.items():
            yield f"{key}.{ident}", {ident: options}
        return
    if isinstance(value, (str, dict)):
        yield from _provider_entries(key, value, reader)
        return
    if not isinstance(value, list):
        raise ImportFailed(f"{key}: expected a provider id, a list of providers or a mapping "
                           f"(id, label, config); found {type(value).__name__}")
    for index, item in enumerate(value):
        yield from _provider_entries(f"{key}[{index}]", item, reader)


def _provider_entries(where: str, item: Any, reader: _Reader) -> Iterator[tuple[str, Any]]:
    """An entry, or the providers a ``file://`` YAML or JSON file of providers holds."""
    if isinstance(item, str) and item.startswith("file://") and \
            Path(item).suffix.lower() in (".yaml", ".yml", ".json"):
        path = reader.path(item, where)
        if not path.is_file():
            raise ImportFailed(f"{where}: {item!r} names no file ({path})")
        data = _yaml(path, "providers file")
        shown = os.path.relpath(path, reader.root)
        for index, one in enumerate(data if isinstance(data, list) else [data]):
            yield f"{where} ({shown}[{index}])", one
        return
    yield where, item


def _provider(where: str, item: Any, notes: list[str]) -> _Provider:
    if isinstance(item, str):
        if not item.strip():
            raise ImportFailed(f"{where}: an empty provider id")
        options: dict[str, Any] = {"id": item}
    elif isinstance(item, dict) and "id" in item:
        options = item
    elif isinstance(item, dict) and len(item) == 1 and not set(item) & _PROVIDER_KEYS:
        # promptfoo's {openai:gpt-4o: {config: …}}
        ((ident, value),) = item.items()
        value = _mapping(value, f"{where}.{ident}", "the provider's options (label, config)")
        options = {**(value or {}), "id": (value or {}).get("id") or ident}
    elif isinstance(item, dict):
        raise ImportFailed(f"{where}: a provider mapping needs an 'id' (such as "
                           "openai:gpt-4o-mini), or is one 'id: options' pair")
    else:
        raise ImportFailed(f"{where}: expected a provider id or a mapping (id, label, config); "
                           f"found {type(item).__name__}")
    ident = options["id"]
    if not (isinstance(ident, str) and ident.strip()):
        raise ImportFailed(f"{where}.id: expected a provider id (text), found "
                           f"{_shown(ident, 40)}")
    label = _label(options.get("label"), f"{where}.label")
    config = _mapping(options.get("config"), f"{where}.config", "a mapping") or {}
    allowed = options.get("prompts")
    if isinstance(allowed, str):
        allowed = [allowed]
    if allowed is not None and not (isinstance(allowed, list)
                                    and all(isinstance(a, str) for a in allowed)):
        raise ImportFailed(f"{where}.prompts: expected a list of prompt labels")
    params: dict[str, Any] = {}
    model = _model(ident)
    if model is not None:
        params["model"] = model
    else:
        notes.append(f"{where} {_redacted(ident)!r}: names no model (promptfoo calls it as "
                     "code, a command, a URL or a built-in); bind the entry point (or the "
                     "variant's entry:) to what it does")
    params.update(_params(config, f"{where}.config", notes))
    others = {k: v for k, v in options.items()
              if k not in ("id", "label", "config", "prompts", "env")}
    others = _scrubbed(others, where, notes)
    if "env" in options:  # never shown, so not scrubbed (its keys are the variables' names)
        others["env"] = None
    for key, value in sorted(others.items(), key=lambda kv: str(kv[0])):
        shown = "" if key == "env" else f" {_shown(value, 60)}"
        notes.append(f"{where}.{key}{shown}: "
                     f"{_PROVIDER_LOST.get(str(key), 'no Elizon equivalent')}")
    return _Provider(where, ident, label, params, allowed, f"{where}.prompts")


def _providers(config: dict[str, Any], reader: _Reader, notes: list[str]
               ) -> tuple[str, list[_Provider]]:
    key = "providers" if "providers" in config or "targets" not in config else "targets"
    found = [_provider(where, item, notes) for where, item in
             _provider_items(config, key, reader)]
    labels: dict[str, str] = {}
    for provider in found:
        if provider.label is None:
            continue
        if provider.label in labels:
            raise ImportFailed(f"{provider.where}.label {provider.label!r} is also "
                               f"{labels[provider.label]}'s: each provider needs its own label "
                               "(it names its variant)")
        labels[provider.label] = provider.where
    return key, found


# -- prompts

def _prompt_items(config: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Each prompt as written: where, and its raw text (or file reference), label, id and
    config, in promptfoo's forms (docs/cli.md#providers-and-prompts-as-variants)."""
    value = config.get("prompts")
    if value is None:
        return []
    if isinstance(value, str):
        return [("prompts", {"raw": value})]
    if isinstance(value, dict):  # promptfoo's older form: {file or text: label}
        items: list[tuple[str, dict[str, Any]]] = []
        for raw, label in value.items():
            where = f"prompts[{raw!r}]"
            if not isinstance(raw, str):
                raise ImportFailed(f"{where}: expected a prompt text or file:// reference")
            items.append((where, {"raw": raw, "label": _label(label, where)}))
        return items
    if not isinstance(value, list):
        raise ImportFailed("prompts: expected a prompt text, a list of prompts or a mapping of "
                           f"prompts to labels; found {type(value).__name__}")
    items = []
    for index, item in enumerate(value):
        where = f"prompts[{index}]"
        if isinstance(item, str):
            items.append((where, {"raw": item}))
        elif isinstance(item, dict):
            raw = item.get("raw", item.get("id"))
            if not (isinstance(raw, str) and raw):
                raise ImportFailed(f"{where}: a prompt mapping needs 'raw': the prompt text "
                                   "or a file:// reference")
            ident = item.get("id") if "raw" in item else None
            items.append((where, {
                "raw": raw, "label": _label(item.get("label"), f"{where}.label"),
                "id": ident if isinstance(ident, str) else None,
                "config": _mapping(item.get("config"), f"{where}.config", "a mapping"),
                "other": sorted(set(item) - {"raw", "id", "label", "config"}, key=str)}))
        else:
            raise ImportFailed(f"{where}: expected a prompt text, a file:// reference or a "
                               f"mapping (raw, label); found {type(item).__name__}")
    return items


#: A prompt promptfoo reads as a file though it has no ``file://``: one line ending in the
#: name of a prompt file (and a function's, for code).
_FILE_PROMPT = re.compile(r"\.(?:txt|md|j2|csv|json|jsonl|ya?ml|py|[cm]?[jt]s)"
                          r"(?::[A-Za-z_]\w*)?$", re.IGNORECASE)


def _prompt_file(raw: str) -> str | None:
    """The ``file://`` reference a prompt is, or None for a prompt text."""
    if raw.startswith("file://"):
        return raw
    if "\n" not in raw and _FILE_PROMPT.search(raw):
        return "file://" + raw  # promptfoo reads it (and fails on a missing one, as here)
    return None


def _read_prompts(config: dict[str, Any], reader: _Reader, notes: list[str]) -> list[_Prompt]:
    prompts: list[_Prompt] = []
    labels: dict[str, str] = {}
    for where, item in _prompt_items(config):
        label = item.get("label")
        name = label or item.get("id")
        if label is not None:
            if label in labels:
                raise ImportFailed(f"{where}.label {label!r} is also {labels[label]}'s: "
                                   "promptfoo refuses two prompts with one label, and it names "
                                   "the variants")
            labels[label] = where
        for key in item.get("other", []):
            notes.append(f"{where}.{key}: no Elizon equivalent")
        found = _prompt_versions(where, item["raw"], label, name, reader)
        for prompt in found:
            prompt.config = item.get("config")
        prompts += found
    return prompts


def _prompt_versions(where: str, raw: str, label: str | None, name: str | None,
                     reader: _Reader) -> list[_Prompt]:
    if raw.startswith("exec:"):
        return [_Prompt(where, raw, label, name, why="a command builds this prompt; run it "
                        "from the entry point")]
    ref = _prompt_file(raw)
    if ref is None:
        return [_Prompt(where, raw, label, name, text=raw, inline=True)]
    written, _, function = ref[len("file://"):].partition(":")
    if Path(written).suffix.lower() not in _PROMPT_CODE:
        written, function = ref[len("file://"):], ""
    found: list[_Prompt] = []
    paths = reader.paths("file://" + written, where)
    for path in paths:
        shown = os.path.relpath(path, reader.root)
        at = f"{where} ({shown})" if len(paths) > 1 or raw.startswith("file://") else where
        if not path.is_file():
            raise ImportFailed(f"{where}: {ref!r} names no file ({path})")
        suffix = path.suffix.lower()
        stem = name if name and len(paths) == 1 else path.stem
        if suffix in _PROMPT_CODE:
            found.append(_Prompt(at, raw, label, stem, why=f"a prompt function ({shown}"
                                 f"{':' + function if function else ''}) builds the prompt "
                                 "in code; call it from the entry point"))
        elif suffix in _PROMPT_CHAT:
            found.append(_Prompt(at, raw, label, stem, why="a chat-format prompt (messages); a "
                                 "registry prompt is one text template: build the messages in "
                                 "the entry point"))
        elif suffix in (".txt", ".md", ".j2"):
            text = _text(_read_bytes(path, "prompt file"), path, "prompt file")
            pieces = [text] if suffix != ".txt" else [
                piece.strip() for piece in re.split(r"(?m)^[ \t]*---[ \t]*\r?$", text)]
            pieces = [p for p in pieces if p.strip()]
            if not pieces:
                raise ImportFailed(f"{at}: {shown} holds no prompt")
            for number, piece in enumerate(pieces, 1):
                several = len(pieces) > 1
                found.append(_Prompt(f"{at}, prompt {number}" if several else at, raw, label,
                                     f"{stem}-{number}" if several else stem, text=piece))
        else:
            found.append(_Prompt(at, raw, label, stem, why=f"a {suffix or 'suffix-less'} "
                                 "prompt file (the importer reads .txt, .md and .j2 prompts)"))
    return found


def _template_variables(text: str) -> list[str]:
    """The ``{{ name }}`` variables of a prompt template, in order; :class:`_Unrendered` for
    anything else: a ``{{`` that is no such variable is an error in the registry
    (docs/format.md#prompts), and ``{% %}`` / ``{# #}`` are nunjucks there is no text for."""
    if not text.strip():
        raise _Unrendered("the prompt is empty; a registry version is non-empty text")
    names: list[str] = []
    at = 0
    while (found := _NUNJUCKS.search(text, at)) is not None:
        match = _PROMPT_VARIABLE.match(text, found.start())
        if match is None:
            end = text.find(_CLOSING[found.group()], found.end())
            end = end + 2 if end >= 0 else len(text)
            while text[end:end + 1] == "}":  # {{{name}}}: shown whole
                end += 1
            snippet = text[found.start():end]
            raise _Unrendered(f"its template {_shown(snippet, 60)} is nunjucks the prompt "
                              "registry does not have (a filter, tag, comment, expression or "
                              "var.field; it has {{ name }} variables only); render it in the "
                              "entry point")
        if match.group(1) not in names:
            names.append(match.group(1))
        at = match.end()
    return names


def _allows(provider: _Provider, prompt: _Prompt, entry: str) -> bool:
    """promptfoo's test of a provider's ``prompts:`` entry: a prompt's label, or the start
    of one (``group`` allows ``group: …``); a prompt without one is labelled by its text."""
    label = prompt.label or (prompt.raw if prompt.inline else None)
    return label is not None and (entry == label or label.startswith(f"{entry}:"))


def _variant_name(text: str, taken: set[str]) -> str:
    """A valid variant name from ``text`` (docs/format.md#variants), unique in ``taken``."""
    base = _NAME_JUNK.sub("-", text)
    base = re.sub(r"^[^A-Za-z0-9]+", "", base)[:64].rstrip("-") or "variant"
    chosen, number = base, 2
    while chosen in taken:
        suffix = f"-{number}"
        chosen = base[:64 - len(suffix)].rstrip("-") + suffix
        number += 1
    taken.add(chosen)
    return chosen


def _matrix(config: dict[str, Any], reader: _Reader) -> _Matrix:
    notes: list[str] = []
    key, providers = _providers(config, reader, notes)
    prompts = _read_prompts(config, reader, notes)
    for prompt in prompts:
        if prompt.text is not None:
            try:
                prompt.variables = _template_variables(prompt.text)
            except _Unrendered as exc:
                prompt.text, prompt.why = None, str(exc)
    versions = [p for p in prompts if p.text is not None]
    for number, prompt in enumerate(versions, 1):
        prompt.version = str(number)
        prompt.short = prompt.short or f"prompt-{number}"
    for prompt in prompts:
        if prompt.why is not None:
            notes.append(f"{prompt.where} {_shown(prompt.raw, 60)}: {prompt.why}")
    pairs: list[tuple[_Provider | None, _Prompt | None]] = []
    every: list[_Provider | None] = [*providers] or [None]
    for provider in every:
        chosen: list[_Prompt | None] = list(versions) or [None]
        if provider is not None and provider.prompts is not None:
            for index, entry in enumerate(provider.prompts):
                if not any(_allows(provider, p, entry) for p in prompts):
                    raise ImportFailed(f"{provider.prompts_where}[{index}]: {entry!r} is no "
                                       "prompt's label")
            chosen = [p for p in versions if any(_allows(provider, p, e)
                                                 for e in provider.prompts)]
            if not chosen:
                notes.append(f"{provider.where} {provider.shown!r}: its prompts were not "
                             "converted, so it has no variant")
        pairs += [(provider, prompt) for prompt in chosen]
    variants: list[dict[str, Any]] = []
    origins: list[str] = []
    if len(pairs) > 1:
        taken: set[str] = set()
        for provider, version in pairs:
            parts = ([provider.shown] if provider is not None and len(providers) > 1 else []) \
                + ([version.short or ""] if version is not None and len(versions) > 1 else [])
            variant: dict[str, Any] = {"name": _variant_name("_".join(parts), taken)}
            if not variants:
                variant["reference"] = True
            params = dict(provider.params) if provider is not None else {}
            if version is not None and version.config:  # promptfoo: over the provider's
                params.update(_params(version.config, f"{version.where}.config", []))
            if params:
                variant["params"] = params
            if version is not None:
                variant["prompts"] = {PROMPT_NAME: version.version}
            variants.append(variant)
            origins.append(" × ".join(
                ([f"{provider.where} {_comment(provider.shown)!r}"] if provider else [])
                + ([f"{version.where} (version {version.version})"] if version else [])))
        for prompt in versions:  # credentials in a prompt's config, noted once
            if prompt.config:
                _params(prompt.config, f"{prompt.where}.config", notes)
    else:
        for provider in providers:
            extra = {k: v for k, v in provider.params.items() if k != "model"}
            if extra:
                notes.append(f"{provider.where}.config {_shown(extra, 80)}: one provider "
                             "and one prompt make no variants; pass it to the model in the "
                             "entry point")
        for prompt in versions:
            if prompt.config:
                shown = _params(prompt.config, f"{prompt.where}.config", notes)
                notes.append(f"{prompt.where}.config {_shown(shown, 80)}: one provider and "
                             "one prompt make no variants; pass it to the model in the entry "
                             "point")
    return _Matrix(key, providers, prompts, variants, origins, notes)


def _registry(matrix: _Matrix, config_path: Path, cases: list[_Case]) -> str | None:
    """``prompts/prompt.yaml``: each converted prompt a version, in the config's order; its
    variables every template's and every test var's (so the entry may pass all the vars)."""
    versions = matrix.versions
    if not versions:
        return None
    names = {v for p in versions for v in p.variables}
    names |= {k for c in cases if isinstance(c.input, dict) for k in c.input
              if isinstance(k, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", k)}
    out = [f"# Imported from {_comment(config_path.name)} by `elizon-eval import promptfoo`: "
           "promptfoo's prompts,",
           "# one version each, in the config's order (docs/format.md#prompts).",
           _dump({"variables": sorted(names)}).rstrip("\n"), "versions:"]
    for prompt in versions:
        label = f", label {_comment(prompt.label)!r}" if prompt.label else ""
        out.append(f"  # {_comment(prompt.where)}{label}")
        out += ["  " + line for line in yaml.dump(
            {prompt.version: prompt.text}, Dumper=_BlockDumper, sort_keys=False,
            allow_unicode=True, width=100).splitlines()]
    return "\n".join(out) + "\n"


def _missing_vars(case: _Case, versions: list[_Prompt]) -> None:
    """Note each var a prompt version uses that the case does not give: the registry refuses
    to render without it, where promptfoo renders it empty."""
    if not isinstance(case.input, dict):
        return
    missing: dict[str, list[str]] = {}
    for prompt in versions:
        for name in prompt.variables:
            if name not in case.input:
                missing.setdefault(name, []).append(prompt.version)
    for name, used in missing.items():
        case.notes.append(f"var {name} (in prompt version{'s' if len(used) > 1 else ''} "
                          f"{', '.join(used)}) is not among this test's vars: elizon_prompt "
                          "refuses to render without it, where promptfoo renders it empty")


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
_PROMPT_LOST = ("promptfoo adds it to the prompt, and the prompt versions are written without "
                "it; add it in the entry point")
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
    matrix = _matrix(data, reader)
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
    for case in cases:
        _missing_vars(case, matrix.versions)
    judge = _judge(cases, mapper.mapped)
    manifest = _manifest(data, config_path, any("judge" in c.expect for c in cases), judge,
                         matrix)
    suite, starts = _suite(cases, config_path)
    _check_loads(manifest, suite, cases, starts)
    registry = _registry(matrix, config_path, cases)
    if registry is not None:
        _check_registry(registry)
    unconverted = [f"{c.id}: {note}" for c in cases for note in c.notes]
    return Conversion(
        manifest=manifest, suite=suite,
        checks=_checks_module(mapper.python) if mapper.python else None,
        cases=len(cases), mapped=mapper.mapped, unconverted=unconverted,
        prompt_registry=registry,
        providers=len(matrix.providers), prompts=len(matrix.prompts),
        versions=len(matrix.versions), variants=len(matrix.variants),
        reference=matrix.variants[0]["name"] if matrix.variants else None,
        setup_unconverted=matrix.notes)


def _comment(text: str) -> str:
    return " ".join(text.split())  # one line: a newline would end the comment


def _manifest(config: dict[str, Any], config_path: Path, judged: bool,
              judge: dict[str, str] | None, matrix: _Matrix) -> str:
    description = config.get("description")
    name = _SLUG.sub("-", (description if isinstance(description, str) else
                           config_path.parent.name).lower()).strip("-")[:60] or "imported"
    # Provider ids only: their options may hold credentials (docs/contract.md, no secret
    # reaches any file).
    shown = ", ".join(_comment(p.shown) for p in matrix.providers) or "none"
    lines = [
        f"# Imported from {_comment(config_path.name)} by `elizon-eval import promptfoo`.",
        "# Bind the entry point that answers each case's input (a mapping of the promptfoo",
        "# vars, passed as keyword arguments):",
        "#   entry: app:answer             # a module of this folder, here; or",
        "#   an `elizon_entry` fixture in conftest.py, or --elizon-entry on the command line.",
        f"# promptfoo {matrix.key}: {shown}",
    ]
    if matrix.variants:
        lines += [
            "# Each provider × prompt is one of the variants below: every case runs once per",
            "# variant (suite.yaml::case[variant]; the first is the reference). A Python entry",
            "# receives a variant's params as keyword arguments beside the vars",
            "# (docs/format.md#variants).",
        ]
    if matrix.versions:
        pinned = "the version a variant pins" if matrix.variants else "it"
        lines += [
            f"# The prompt{'s are versions' if len(matrix.versions) > 1 else ' is a version'} "
            f"of `{PROMPT_NAME}` in {PROMPTS_FILE}: the elizon_prompt fixture",
            f"# renders {pinned} with the case's vars (docs/format.md#prompts),",
            "# e.g. in conftest.py:",
            *_entry_example(matrix),
        ]
    if matrix.variants:
        width = max(len(v["name"]) for v in matrix.variants)
        lines.append("# The variants, from promptfoo's providers × prompts:")
        lines += [f"#   {v['name']:<{width}} = {origin}"
                  for v, origin in zip(matrix.variants, matrix.origins, strict=True)]
    lines += [f"# promptfoo, not converted: {_comment(note)}" for note in matrix.notes]
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
    if matrix.variants:
        body["variants"] = matrix.variants
    return "\n".join(lines) + "\n" + _dump(body)


#: Names the example entry's body uses: a param so named is not a parameter of it.
_EXAMPLE_NAMES = {"vars", "elizon_prompt", "call_your_model", "others"}


def _entry_example(matrix: _Matrix) -> list[str]:
    """An ``elizon_entry`` fixture, as comment lines, that takes the variants' params by
    name (so they do not reach the prompt as vars) and renders the prompt. A param no
    parameter can be named (a Python keyword such as ``class``; a soft keyword such as
    ``match`` can) is taken out of ``**vars`` instead, so the code compiles and renders."""
    params: list[str] = []
    for variant in matrix.variants:
        params += [k for k in variant.get("params", {}) if k not in params]
    unnamed = sorted(k for k in params if keyword.iskeyword(k) or k in _EXAMPLE_NAMES)
    signature = "".join(f"{k}=None, " for k in params if k not in unnamed)
    model = "model, " if "model" in params else ""
    taken = [
        f"#           # {', '.join(unnamed)}: no parameter can be named so; they arrive in "
        "**vars (and the elizon_variant fixture's params)",
        f"#           others = {{k: vars.pop(k, None) for k in {tuple(unnamed)!r}}}",
    ] if unnamed else []
    return [
        "#   @pytest.fixture",
        "#   def elizon_entry(elizon_prompt):",
        f"#       def answer({signature}**vars):",
        *taken,
        f'#           return call_your_model({model}elizon_prompt("{PROMPT_NAME}", **vars))',
        "#       return answer",
    ]


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True  # a value used twice is written twice, not as &id001 / *id001


def _dump(value: Any) -> str:
    return yaml.dump(value, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100,
                     default_flow_style=False)


class _BlockDumper(_Dumper):
    """Multi-line templates as ``|`` blocks, as a person writes them (PyYAML picks a quoted
    style itself where a block cannot hold the text, e.g. trailing spaces)."""


def _block_text(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", text,
                                   style="|" if "\n" in text else None)


_BlockDumper.add_representer(str, _block_text)


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


def _check_registry(text: str) -> None:
    """The prompt registry loads as the ``elizon_prompt`` fixture will read it (its own
    reader, on a copy in a temporary folder); ImportFailed, before anything is written,
    naming each problem."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / PROMPTS_FILE).parent.mkdir()
        (root / PROMPTS_FILE).write_text(text, encoding="utf-8")
        try:
            load_registry(root, lambda path: path.relative_to(root).as_posix())
        except ElizonError as exc:
            raise ImportFailed("the converted package would not load, so nothing was written: "
                               + "; ".join(exc.messages)) from None


def write(conversion: Conversion, out_dir: Path, *, force: bool = False) -> list[Path]:
    """Write the package; an existing file (a link too, dangling or not) is kept unless
    ``force``, which replaces it: a link is replaced, never written through."""
    files = conversion.files()
    targets = [out_dir / name for name in files]
    folder = out_dir / Path(PROMPTS_FILE).parent
    if conversion.prompt_registry and folder.is_symlink():  # a file in it would be written through
        raise ImportFailed(f"{folder} is a symbolic link; the prompt registry is written into a "
                           "folder of its own: remove the link")
    existing = [p for p in targets if os.path.lexists(p)]
    if existing and not force:
        link = " (a symbolic link)" if existing[0].is_symlink() else ""
        raise ImportFailed(f"{existing[0]} exists{link}; use --force to overwrite")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        for path, text in zip(targets, files.values(), strict=True):
            path.parent.mkdir(exist_ok=True)
            replace_file(path, text)
    except OSError as exc:
        raise ImportFailed(f"cannot write into {out_dir}: {exc.strerror}") from None
    return targets
