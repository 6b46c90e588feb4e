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
from typing import Any

import yaml
from pydantic import ValidationError

from . import errors
from .errors import ElizonError
from .judging import EndpointJudge
from .model import JudgeEndpoint

__all__ = ["ENTRY", "JUDGE", "Bound", "Candidate", "Kind", "bind", "import_attribute"]


@dataclass(frozen=True)
class Candidate:
    """A value offered as the entry point, and where it was offered (for messages)."""

    value: object
    source: str


@dataclass(frozen=True)
class Bound:
    """A callable ready to use: an entry point, or a judge."""

    call: Callable[..., Any]
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
    unbound: str
    invalid: str
    how: str


ENTRY = Kind("entry point", errors.ELIZON_ENTRY_UNBOUND, errors.ELIZON_ENTRY_INVALID,
             "--elizon-entry=module:attr, an 'elizon_entry' fixture in conftest.py, "
             "'entry:' in elizon.yaml, or the ini option elizon_entry")
JUDGE = Kind("judge", errors.ELIZON_JUDGE_UNBOUND, errors.ELIZON_JUDGE_INVALID,
             "--elizon-judge, an 'elizon_judge' fixture in conftest.py, 'judge:' in "
             "elizon.yaml, or the ini option elizon_judge")


def _endpoint(value: object) -> EndpointJudge | None:
    """An endpoint judge from a manifest mapping or a ``{url: …, model: …}`` string."""
    if isinstance(value, str) and value.strip().startswith("{"):
        try:
            value = yaml.safe_load(value)
        except yaml.YAMLError as exc:
            raise ValueError(f"not a valid mapping: {exc}") from None
    if isinstance(value, dict):
        try:
            value = JudgeEndpoint.model_validate(value)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'judge'}: {e['msg']}"
                                 for e in exc.errors())
            raise ValueError(f"not a judge endpoint {{url, model, apiKeyEnv}}: {problems}") \
                from None
    if isinstance(value, JudgeEndpoint):
        return EndpointJudge(value.url, value.model, value.api_key_env)
    return None


def bind(candidates: Sequence[Candidate], folders: Sequence[Path], kind: Kind = ENTRY
         ) -> Bound:
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
        endpoint = _endpoint(value) if kind is JUDGE else None
        if endpoint is not None:
            value, description = endpoint, repr(endpoint)
        elif isinstance(value, str):
            value, description = import_attribute(value, folders), value
    except ValueError as exc:
        raise ElizonError(kind.invalid, [f"{chosen.value!r} ({chosen.source}): {exc}"]) from None
    if not callable(value):
        raise ElizonError(kind.invalid, [
            f"{chosen.source} gave {_describe(value)}, which is not callable; "
            "give a callable or a 'module.path:attribute' string"])
    return Bound(call=value, description=description, source=chosen.source)
