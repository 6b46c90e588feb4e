"""Choose and load the entry point a case's input is given to (SPEC §3), and the judge.

Owns the precedence (command line > ``elizon_entry`` fixture > manifest
``entry:`` > ini ``elizon_entry``), turning a ``module.path:attribute`` spec
into a callable, and the ``ELIZON_ENTRY_UNBOUND`` / ``ELIZON_ENTRY_INVALID``
messages that say which source the bad value came from. The judge is bound
the same way (``--elizon-judge``, ``elizon_judge``, ``judge:``, ini
``elizon_judge``), and may also be a chat-completions endpoint mapping.

Modules named by a package are imported with the package's folder on
``sys.path`` only for the duration of the import, and the modules loaded
from that folder are then taken out of ``sys.modules`` again: two packages
that each ship an ``app.py`` each get their own. No pytest import here.
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from . import errors
from .entries import DeadlineEntry, HttpEntry, ProcessEntry
from .errors import ElizonError
from .judging import EndpointJudge
from .model import CommandEntry, JudgeEndpoint, UrlEntry

_M = TypeVar("_M", bound=BaseModel)

__all__ = ["ENTRY", "JUDGE", "BindContext", "Bound", "Candidate", "Kind", "bind",
           "import_attribute"]


@dataclass(frozen=True)
class Candidate:
    """A value offered as the entry point, and where it was offered (for messages)."""

    value: object
    source: str


@dataclass(frozen=True)
class Bound:
    """A callable ready to use: an entry point, or a judge."""

    call: Callable[..., Any] | DeadlineEntry
    #: What it is, for reports: the spec string or the callable's qualified name.
    description: str
    source: str


_import_lock = threading.Lock()
_isolated: dict[tuple[Path, str], ModuleType] = {}


def _provides(folder: Path, top: str) -> bool:
    return (folder / top).is_dir() or (folder / f"{top}.py").is_file()


def _import_isolated(module_name: str, folder: Path) -> ModuleType:
    key = (folder, module_name)
    with _import_lock:
        if key in _isolated:
            return _isolated[key]
        top = module_name.split(".")[0]
        shadowed = {n: m for n, m in sys.modules.items() if n == top or n.startswith(top + ".")}
        for name in shadowed:
            del sys.modules[name]
        before = set(sys.modules)
        sys.path.insert(0, str(folder))
        try:
            importlib.invalidate_caches()
            module = importlib.import_module(module_name)
        finally:
            sys.path.remove(str(folder))
            for name in set(sys.modules) - before:
                file = getattr(sys.modules[name], "__file__", None)
                if file and Path(file).resolve().is_relative_to(folder):
                    del sys.modules[name]
            sys.modules.update(shadowed)
        _isolated[key] = module
        return module


def import_attribute(spec: str, folders: Sequence[Path]) -> object:
    """Load ``module.path:attribute``; the module is looked for in ``folders`` first.

    Raises ``ValueError`` with a readable reason when the spec is malformed, the
    module cannot be imported or the attribute does not exist.
    """
    module_name, sep, attribute = spec.strip().partition(":")
    parts = module_name.split(".")
    if not sep or not all(p.isidentifier() for p in parts) \
            or not all(p.isidentifier() for p in attribute.split(".")):
        raise ValueError("expected 'module.path:attribute' (for example 'my_app.main:answer')")
    folder = next((f.resolve() for f in folders if _provides(f, parts[0])), None)
    try:
        module = (_import_isolated(module_name, folder) if folder
                  else importlib.import_module(module_name))
    except Exception as exc:
        where = f" from {folder}" if folder else ""
        raise ValueError(f"cannot import {module_name!r}{where}: "
                         f"{type(exc).__name__}: {exc}") from exc
    value: object = module
    for name in attribute.split("."):
        try:
            value = getattr(value, name)
        except AttributeError:
            raise ValueError(f"{module_name!r} has no attribute {attribute!r}") from None
    return value


def _describe(value: object) -> str:
    return f"{type(value).__name__} {value!r}"[:120]


@dataclass(frozen=True)
class Kind:
    """What is being bound: its name in messages, its error codes and how to bind it."""

    noun: str
    #: The manifest key; the option is ``--elizon-<key>``, the fixture ``elizon_<key>``.
    key: str
    unbound: str
    invalid: str

    @property
    def option(self) -> str:
        return f"--elizon-{self.key}"

    @property
    def fixture(self) -> str:
        return f"elizon_{self.key}"

    @property
    def how(self) -> str:
        return (f"{self.option}, an '{self.fixture}' fixture in conftest.py, '{self.key}:' in "
                f"elizon.yaml, or the ini option {self.fixture}")


ENTRY = Kind("entry point", "entry", errors.ELIZON_ENTRY_UNBOUND, errors.ELIZON_ENTRY_INVALID)
JUDGE = Kind("judge", "judge", errors.ELIZON_JUDGE_UNBOUND, errors.ELIZON_JUDGE_INVALID)


def _as_model(value: object, model: type[_M], shape: str) -> _M | None:
    """``value`` as ``model`` if it is a mapping (or already one); None otherwise."""
    if isinstance(value, dict):
        try:
            return model.model_validate(value)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}"
                                 for e in exc.errors())
            raise ValueError(f"not {shape}: {problems}") from None
    return value if isinstance(value, model) else None


def _structured(value: object, kind: Kind, context: BindContext) -> object | None:
    """A judge endpoint, a process or an HTTP entry built from a mapping; None otherwise.
    A mapping given as an option's text (``{url: …}``) is read as YAML flow."""
    if isinstance(value, str) and value.strip().startswith("{"):
        value = yaml.safe_load(value)
    if kind is JUDGE:
        endpoint = _as_model(value, JudgeEndpoint, "a judge endpoint {url, model, apiKeyEnv}")
        return EndpointJudge(endpoint.url, endpoint.model, endpoint.api_key_env) \
            if endpoint else None
    if isinstance(value, UrlEntry) or (isinstance(value, dict) and "url" in value):
        url = _as_model(value, UrlEntry, "an HTTP entry {url, method, headers, timeout}")
        assert url is not None
        return HttpEntry(url.url, url.method, url.headers, url.timeout)
    command = _as_model(value, CommandEntry, "a process entry {command, cwd, env}")
    if command is None:
        return None
    return ProcessEntry(command.command, context.folder, command.cwd, command.env,
                        context.output_json)


@dataclass(frozen=True)
class BindContext:
    """Where the package lives, for module imports and a process's working folder."""

    folder: Path
    rootpath: Path
    output_json: bool = False


def bind(candidates: Sequence[Candidate], context: BindContext, kind: Kind = ENTRY) -> Bound:
    """Bind the first candidate whose value is not None, in the order given."""
    chosen = next((c for c in candidates if c.value is not None), None)
    if chosen is None:
        tried = ", ".join(c.source for c in candidates)
        raise ElizonError(kind.unbound, [
            f"no {kind.noun} is bound for this case (looked at: {tried}). Bind one with "
            f"{kind.how}"])
    value = chosen.value
    description = getattr(value, "__qualname__", None) or repr(value)
    try:
        structured = _structured(value, kind, context)
        if structured is not None:
            value, description = structured, repr(structured)
        elif isinstance(value, str):
            value, description = import_attribute(value, [context.folder, context.rootpath]), \
                value
    except (ValueError, yaml.YAMLError) as exc:
        raise ElizonError(kind.invalid, [f"{chosen.value!r} ({chosen.source}): {exc}"]) from None
    if not callable(value) and not isinstance(value, DeadlineEntry):
        raise ElizonError(kind.invalid, [
            f"{chosen.source} gave {_describe(value)}, which is not callable; "
            "give a callable or a 'module.path:attribute' string"])
    return Bound(call=value, description=description, source=chosen.source)
