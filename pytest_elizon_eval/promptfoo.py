"""``elizon-eval import promptfoo``: a promptfoo config as an Elizon package.

Owns reading a ``promptfooconfig.yaml`` (inline ``tests:``, ``defaultTest``,
``file://`` test files in YAML, JSON, JSONL or CSV, ``vars``, ``description``,
``assert`` lists, ``threshold``) and writing what it means in Elizon terms:
``elizon.yaml``, ``suite.yaml`` (ids from the descriptions, ``input`` from the
vars, every assertion that has an Elizon equivalent mapped) and, for ``python``
asserts that name a file, ``promptfoo_checks.py`` (adapters that call them as
``expect.checks``). Everything that is not converted is listed in the
:class:`Conversion`'s report and kept as a YAML comment on its case: nothing is
dropped silently. Providers and prompts are not converted: the manifest says
where to bind the entry point (README.md#coming-from-promptfoo). Configs are
untrusted input: read with the plugin's safe YAML loader, ``file://`` paths must
stay inside the config's folder. No pytest import here.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .evidence import replace_file
from .loading import MAX_FILE_BYTES, LoadFailed, load_yaml

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
    expect: dict[str, Any] = field(default_factory=dict)
    #: What was not converted, one line each (kept as comments on the case).
    notes: list[str] = field(default_factory=list)


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


def _plain(value: Any) -> Any:
    """Loaded YAML as plain dicts and lists (the line-carrying subclasses do not dump)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _yaml(path: Path, what: str) -> Any:
    raw = _read_bytes(path, what)
    try:
        return _plain(load_yaml(raw))
    except LoadFailed as exc:
        if exc.complete:  # only YAML 1.1 surprises ('no', '0123'): promptfoo reads YAML 1.2
            return _plain(exc.data)
        problem = exc.problems[0]
        at = f":{problem.line}" if problem.line else ""
        raise ImportFailed(f"{what} {path}{at}: {problem.message}") from None


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


class _Reader:
    """Resolves ``file://`` references, inside the config's folder only."""

    def __init__(self, config: Path) -> None:
        self.config = config
        self.root = config.parent.resolve()

    def path(self, ref: str, where: str) -> Path:
        written = ref[len("file://"):]
        if "\0" in written:
            raise ImportFailed(f"{where}: {ref!r} contains a NUL byte")
        resolved = (self.root / written).resolve()
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
            data = _yaml(path, "test file") if suffix != ".json" else _json_value(
                _text(_read_bytes(path, "test file"), path, "test file"), shown)
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


class _Mapper:
    def __init__(self, reader: _Reader, out_dir: Path) -> None:
        self.reader = reader
        self.out_dir = out_dir
        self.mapped: dict[str, int] = {}
        self.python: list[tuple[str, str, str]] = []  # (check name, path from out_dir, function)

    def assertion(self, case: _Case, item: Any) -> None:
        """Map one promptfoo assertion onto ``case`` (or note why not)."""
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            case.notes.append(f"assertion {_shown(item)}: not a mapping with a 'type'")
            return
        kind: str = item["type"]
        value = item.get("value")
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
            if not isinstance(threshold, (int, float)) or isinstance(threshold, bool):
                raise ValueError("needs a numeric threshold")
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
            _add(expect, "judge", {"rubric": value, "threshold":
                                   float(threshold) if threshold is not None else 0.5})
            return set()
        if kind == "python":
            return self._python(case, value, threshold)
        return None

    def _python(self, case: _Case, value: Any, threshold: Any) -> set[str]:
        if not (isinstance(value, str) and value.startswith("file://")):
            raise ValueError("inline Python code is not converted; move it into a file "
                             "(file://checks.py:function) or write a check")
        written, _, function = value[len("file://"):].partition(":")
        path = self.reader.path("file://" + written, f"case {case.id}")
        function = function or "get_assert"
        if not function.isidentifier():
            raise ValueError(f"{function!r} is not a function name")
        name = f"check_{len(self.python) + 1}"
        self.python.append((name, os.path.relpath(path, self.out_dir.resolve()), function))
        spec: Any = f"{CHECKS_MODULE}:{name}"
        if isinstance(threshold, (int, float)) and not isinstance(threshold, bool):
            spec = {"check": spec, "threshold": float(threshold)}
        _add(case.expect, "checks", [spec])
        return set()


_CHECKS_HEAD = '''"""Adapters for the promptfoo python asserts of this suite (written by
``elizon-eval import promptfoo``): each calls the original file's function with
promptfoo's ``(output, context)`` and turns its result into an Elizon check's."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent


def _run(path: str, function: str, output: Any, input: Any) -> Any:
    spec = importlib.util.spec_from_file_location(f"promptfoo_assert_{abs(hash(path))}",
                                                  _HERE / path)
    assert spec is not None and spec.loader is not None, f"cannot load {path}"
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    context = {"vars": input if isinstance(input, dict) else {"input": input}}
    result = getattr(module, function)(output, context)
    if isinstance(result, dict):  # promptfoo's GradingResult
        return bool(result.get("pass")), str(result.get("reason", ""))
    return result
'''


def _checks_module(python: list[tuple[str, str, str]]) -> str:
    parts = [_CHECKS_HEAD]
    for name, path, function in python:
        parts.append(f"\n\ndef {name}(output: Any, input: Any) -> Any:\n"
                     f"    return _run({path!r}, {function!r}, output, input)\n")
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


_KNOWN_TEST_KEYS = {"vars", "assert", "description", "threshold", "_notes"}


def convert(config_path: Path, out_dir: Path) -> Conversion:
    """Read ``config_path`` and what it names; the package to write into ``out_dir``."""
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
        case = _Case(case_id(description, index, taken), description, merged)
        case.notes += test.get("_notes", [])
        for name, var in merged.items():
            if isinstance(var, str) and var.startswith("file://"):
                case.notes.append(f"var {name} = {var!r}: promptfoo reads the file; here it "
                                  "is this text")
            elif isinstance(var, list):
                case.notes.append(f"var {name} is a list: promptfoo makes one test per "
                                  "item; here it is one input")
        for item in [*_asserts(test, where), *default_asserts]:
            mapper.assertion(case, item)
        threshold = test.get("threshold", default.get("threshold"))
        if threshold is not None:
            case.notes.append(f"threshold {_shown(threshold)} (a weighted score over the "
                              "assertions): not converted; in Elizon every assertion must pass")
        for key in sorted(set(test) - _KNOWN_TEST_KEYS):
            case.notes.append(f"test key {key}: {_shown(test[key], 60)} not converted")
        cases.append(case)
    if not cases:
        raise ImportFailed(f"config {config_path}: no tests to import (tests: is missing or "
                           "empty)")
    unconverted = [f"{c.id}: {note}" for c in cases for note in c.notes]
    return Conversion(
        manifest=_manifest(data, config_path, any("judge" in c.expect for c in cases)),
        suite=_suite(cases, config_path),
        checks=_checks_module(mapper.python) if mapper.python else None,
        cases=len(cases), mapped=mapper.mapped, unconverted=unconverted)


def _comment(text: str) -> str:
    return " ".join(text.split())  # one line: a newline would end the comment


def _manifest(config: dict[str, Any], config_path: Path, judged: bool) -> str:
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
    if judged:
        lines.append("# llm-rubric became judge: bind a judge (judge: here, or an elizon_judge "
                     "fixture).")
    body = {"name": name, "evaluation": {"suite": f"./{SUITE_NAME}", "gate": "must-pass"}}
    if isinstance(description, str):
        body = {"name": name, "description": description, **{"evaluation": body["evaluation"]}}
    return "\n".join(lines) + "\n" + _dump(body)


def _dump(value: Any) -> str:
    return yaml.safe_dump(value, sort_keys=False, allow_unicode=True, width=100,
                          default_flow_style=False)


def _suite(cases: list[_Case], config_path: Path) -> str:
    out = [f"# Imported from {_comment(config_path.name)} by `elizon-eval import promptfoo`.",
           "cases:"]
    for case in cases:
        body: dict[str, Any] = {"id": case.id}
        if case.description:
            body["description"] = case.description
        body["input"] = case.input
        if case.expect:
            body["expect"] = case.expect
        dumped = _dump([body]).splitlines()
        out.append("  " + dumped[0])
        out += [f"    # promptfoo, not converted: {_comment(note)}" for note in case.notes]
        out += ["  " + line for line in dumped[1:]]
    return "\n".join(out) + "\n"


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
