"""Choose the entry point and the judge of a case, from the sources in their order.

Owns the precedence (docs/contract.md#binding): command line > the
``elizon_entry`` fixture > the manifest's ``entry:`` > the ini option
``elizon_entry`` (the judge likewise, with ``judge``), turning whatever the
winning source gave — a callable, a ``module.path:attribute`` string, a
mapping — into an :class:`~.entries.Entry` or a :class:`~.judging.Judge`,
and the ``*_UNBOUND`` / ``*_INVALID`` messages that say which source a bad
value came from.

Text given on the command line or in an ini file is checked once, when the
session starts (:func:`parse_text`: a bad value is one usage error). A
binding made of text alone is the same for every case of a package, so a
:class:`Binder` makes it once per session.

Modules named by a package are imported with the package's folder on
``sys.path`` only for the duration of the import, and the modules loaded
from that folder are then taken out of ``sys.modules`` again: two packages
that each ship an ``app.py`` each get their own. No pytest import here.
"""

from __future__ import annotations

import importlib
import sys
import threading
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .. import errors
from ..errors import ElizonError
from ..load.runtime import CommandEntry, JudgeEndpoint, UrlEntry, from_model
from ..run.importing import IMPORT_LOCK

if TYPE_CHECKING:  # types only: pydantic is imported where a mapping is validated, the
    # entries and judges where one is made (a session that only collects needs neither)
    from pydantic import TypeAdapter, ValidationError

    from ..load.packages import Variant
    from .entries import Entry
    from .judging import Judge

__all__ = ["ENTRY", "JUDGE", "Binder", "ImportExited", "Kind", "Source", "import_attribute",
           "parse_text", "precedence"]


@dataclass(frozen=True)
class Kind:
    """What is being bound: its name in messages, its error codes, where it is given."""

    noun: str
    #: The manifest key; the option is ``--elizon-<key>``, the fixture and ini ``elizon_<key>``.
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


@dataclass(frozen=True)
class Source:
    """A value offered for binding (None: this source offers nothing), and where from."""

    value: object
    where: str


# -- text and mappings ---------------------------------------------------------------------

def precedence(*, cli: Source, fixture: Source, manifest: Source, ini: Source
               ) -> list[Source]:
    """The sources of an entry point or a judge in the order they win
    (docs/contract.md#binding): the first that offers a value binds."""
    return [cli, fixture, manifest, ini]


@cache
def _entry_adapter() -> TypeAdapter[Any]:
    from pydantic import TypeAdapter  # deferred: pydantic only where a mapping is bound

    from ..load import model  # deferred: as above

    return TypeAdapter(model.EntrySpec)  # the one place that decides "url means HTTP"


def _problems(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc'] if not str(p).startswith('entry-'))}"
                     f": {e['msg']}".lstrip(": ") for e in exc.errors())


def _from_mapping(value: dict[Any, Any], kind: Kind) -> object:
    """A mapping as an endpoint judge, or a command or HTTP entry; ValueError if it is none."""
    from pydantic import ValidationError  # deferred: pydantic only where a mapping is bound


    try:
        if kind is JUDGE:
            return JudgeEndpoint.model_validate(value)
        return from_model(_entry_adapter().validate_python(value))
    except ValidationError as exc:
        shape = ("a judge endpoint {url, model, apiKeyEnv}" if kind is JUDGE else
                 "an HTTP entry {url, method, headers, timeout, output}" if "url" in value else
                 "a process entry {command, cwd, env, output}")
        raise ValueError(f"not {shape}: {_problems(exc)}") from None


def parse_text(text: str, kind: Kind) -> object:
    """Option or ini text as a spec string or a validated mapping; ValueError if it is neither.
    A mapping is written as a YAML flow mapping: ``{command: [python, app.py]}``."""
    stripped = text.strip()
    if stripped.startswith("{"):
        import yaml  # deferred: only an option written as a mapping needs PyYAML

        try:
            value = yaml.safe_load(stripped)
        except yaml.YAMLError as exc:
            raise ValueError(f"not a valid YAML mapping: {exc}") from None
        if not isinstance(value, dict):
            raise ValueError("not a mapping")
        return _from_mapping(value, kind)
    _split_spec(stripped)
    return stripped


# -- imports -------------------------------------------------------------------------------

_import_lock = IMPORT_LOCK  # shared with run/importing's imports on cases' threads
_isolated: dict[tuple[Path, str], ModuleType] = {}


def _provides(folder: Path, top: str) -> bool:
    return (folder / top).is_dir() or (folder / f"{top}.py").is_file()


def _modules() -> dict[str, ModuleType]:
    """A copy of ``sys.modules``, taken in one step: other threads (entry points running,
    their imports) change it at any moment, and a loop over it would then stop with
    "dictionary changed size during iteration" (docs/contract.md#imports). A dict's copy
    runs no Python code, so no other thread runs during it."""
    return sys.modules.copy()


def _drop(name: str, module: object) -> None:
    """Take ``name`` out of ``sys.modules`` if it is still ``module``: another thread may
    have taken it out, or put another in, since it was seen."""
    if sys.modules.get(name) is module:
        sys.modules.pop(name, None)


def _import_isolated(module_name: str, folder: Path) -> ModuleType:
    key = (folder, module_name)
    with _import_lock:
        if key in _isolated:
            return _isolated[key]
        top = module_name.split(".")[0]
        shadowed = {n: m for n, m in _modules().items() if n == top or n.startswith(top + ".")}
        for name, module in shadowed.items():
            _drop(name, module)
        before = _modules()
        sys.path.insert(0, str(folder))
        try:
            importlib.invalidate_caches()
            module = importlib.import_module(module_name)
        finally:
            sys.path.remove(str(folder))
            for name, loaded in _modules().items():
                file = getattr(loaded, "__file__", None) if name not in before else None
                if isinstance(file, str) and file and _inside(file, folder):
                    _drop(name, loaded)
            sys.modules.update(shadowed)
        _isolated[key] = module
        return module


def _inside(filename: str, folder: Path) -> bool:
    try:
        return Path(filename).resolve().is_relative_to(folder)
    except (OSError, ValueError):
        return False


def _split_spec(spec: str) -> tuple[str, str]:
    module_name, sep, attribute = spec.partition(":")
    if not sep or not all(p.isidentifier() for p in module_name.split(".")) \
            or not all(p.isidentifier() for p in attribute.split(".")):
        raise ValueError("expected 'module.path:attribute' (for example 'my_app.main:answer'), "
                         "a {command: […]} or a {url: …} mapping")
    return module_name, attribute


#: The plugin's own folder: its frames never locate a user's import failure.
_PLUGIN_FOLDER = Path(__file__).resolve().parents[1]


class ImportExited(ValueError):
    """Importing a module ended the way a program ends (``sys.exit()``, another
    BaseException that is not KeyboardInterrupt): a problem of what names the module,
    never an end of the session."""


def _import_failure(exc: BaseException, folder: Path | None) -> str:
    """Where an import failed: the failing line of the user's module (the last frame in the
    package's folder, not one inside a library it called), never importlib's or the
    plugin's (a module that is not there has no line: the caller says where it is named)."""
    if isinstance(exc, SyntaxError) and exc.filename:
        text = (exc.text or "").strip()
        return f"{exc.filename}:{exc.lineno}: {text}" if text else f"{exc.filename}:{exc.lineno}"
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if "importlib" not in f.filename and not f.filename.startswith("<frozen")
              and not _inside(f.filename, _PLUGIN_FOLDER)]
    if folder is not None:
        frames = [f for f in frames if _inside(f.filename, folder)] or frames
    if not frames:
        return ""
    last = frames[-1]
    return f"{last.filename}:{last.lineno}: {(last.line or '').strip()}"


def import_attribute(spec: str, folders: Sequence[Path]) -> object:
    """Load ``module.path:attribute``; the module is looked for in ``folders`` first.

    Raises ``ValueError`` with a readable reason when the spec is malformed, the
    module cannot be imported (naming the failing line) or the attribute does not exist.
    """
    module_name, attribute = _split_spec(spec.strip())
    folder = next((f.resolve() for f in folders if _provides(f, module_name.split(".")[0])),
                  None)
    where = f" from {folder}" if folder else ""
    try:
        module = (_import_isolated(module_name, folder) if folder
                  else importlib.import_module(module_name))
    except Exception as exc:
        at = _import_failure(exc, folder)
        try:
            said = str(exc)
        except Exception:  # a message that cannot be printed still names the failure
            said = f"<unprintable {type(exc).__name__}>"
        raise ValueError(f"cannot import {module_name!r}{where}: {type(exc).__name__}: {said}"
                         + (f" (at {at})" if at and at not in said else "")) from exc
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt) or _pytest_outcome(exc):
            raise  # a real Ctrl-C, or pytest's own skip/fail/exit: pytest handles them
        at = _import_failure(exc, folder)
        try:
            said = str(exc)
        except Exception:  # an exit whose message cannot be printed is still an exit
            said = ""
        raise ImportExited(f"importing {module_name!r}{where} ended with "
                           f"{type(exc).__name__}{f': {said}' if said else ''}"
                           + (f" (at {at})" if at else "")) from None
    value: object = module
    for name in attribute.split("."):
        try:
            value = getattr(value, name)
        except AttributeError:
            raise ValueError(f"{module_name!r} has no attribute {attribute!r}") from None
    return value


def _pytest_outcome(exc: BaseException) -> bool:
    """Whether ``exc`` is pytest's skip, fail or exit (``pytest.importorskip`` at import)."""
    outcomes = sys.modules.get("_pytest.outcomes")  # looked up: no pytest import here
    kind = getattr(outcomes, "OutcomeException", None)
    return isinstance(kind, type) and isinstance(exc, kind)


def _describe(value: object) -> str:
    return f"{type(value).__name__} {value!r}"[:120]


# -- binding -------------------------------------------------------------------------------

class Binder:
    """Binds entries and judges for one session; a binding made of text alone is made once
    per package folder and kept (with its connections) until :meth:`close`."""

    def __init__(self, rootpath: Path) -> None:
        self.rootpath = rootpath
        self._made: dict[tuple[object, ...], Entry | Judge | ElizonError] = {}
        self._lock = threading.Lock()

    def entry(self, sources: Sequence[Source], folder: Path, output: str = "text") -> Entry:
        """The entry point from the first source that offers one."""
        return self._bind(ENTRY, sources, folder, output)  # type: ignore[return-value]

    def judge(self, sources: Sequence[Source], folder: Path) -> Judge:
        """The judge from the first source that offers one."""
        return self._bind(JUDGE, sources, folder, "text")  # type: ignore[return-value]

    def _bind(self, kind: Kind, sources: Sequence[Source], folder: Path, output: str
              ) -> Entry | Judge:
        chosen = next((s for s in sources if s.value is not None), None)
        if chosen is None:
            tried = ", ".join(s.where for s in sources)
            raise ElizonError(kind.unbound, [
                f"no {kind.noun} is bound for this case (looked at: {tried}). Bind one with "
                f"{kind.how}"])
        value = chosen.value
        if callable(value):  # from a fixture: cheap to wrap, may differ per case
            return self._make(kind, chosen, folder, output)
        key = (kind.key, repr(value), chosen.where, folder, output)
        with self._lock:
            made = self._made.get(key)
            if made is None:
                try:
                    made = self._make(kind, chosen, folder, output)
                except ElizonError as exc:
                    made = exc
                self._made[key] = made
        if isinstance(made, ElizonError):
            raise made
        return made

    def _make(self, kind: Kind, chosen: Source, folder: Path, output: str) -> Entry | Judge:
        value = chosen.value
        # a spec is described as written ('app:answer'), not as a quoted Python string
        description = value.strip() if isinstance(value, str) else (
            getattr(value, "__qualname__", None) or repr(value))
        module = getattr(value, "__module__", None)
        if kind is JUDGE and callable(value) and isinstance(module, str) \
                and hasattr(value, "__qualname__"):
            # a fixture's judge as its spec would name it ('legal_app.rubric_judge:grade'):
            # its identity keys grades and alignment results, so two judges called 'grade'
            # differ, and elizon-eval align --judge SPEC keeps what pytest then reuses
            description = f"{module}:{description}"
        try:
            if isinstance(value, str):
                parsed = parse_text(value, kind)
                if isinstance(parsed, str):
                    value = import_attribute(parsed, [folder, self.rootpath])
                else:
                    value = parsed
            elif isinstance(value, dict):
                value = _from_mapping(value, kind)
        except ValueError as exc:
            raise ElizonError(kind.invalid, [f"{chosen.value!r} ({chosen.where}): {exc}"]
                              ) from None
        structured = (JudgeEndpoint,) if kind is JUDGE else (CommandEntry, UrlEntry)
        if not callable(value) and not isinstance(value, structured):
            raise ElizonError(kind.invalid, [
                f"{chosen.where} gave {_describe(value)}, which is not callable; "
                "give a callable or a 'module.path:attribute' string"])
        if kind is JUDGE:
            from .judging import judge_from  # deferred: see the imports above

            return judge_from(value, description)
        from .entries import entry_from  # deferred: see the imports above

        try:
            return entry_from(value, description, folder, output)
        except ValueError as exc:  # an HTTP entry's request keys (a tools file, the output)
            raise ElizonError(kind.invalid, [f"{chosen.where}: {exc}"]) from None

    def variant_entry(self, entry: Entry, variant: Variant) -> Entry:
        """``entry`` as ``variant`` runs it (its params), made once per pair
        (docs/format.md#variants)."""
        from .entries import for_variant  # deferred: see the imports above

        key = ("variant", id(entry), variant.name, repr(variant.params))
        with self._lock:
            made = self._made.get(key)
        if made is None:
            try:
                made = for_variant(entry, variant.name, variant.params)
            except ValueError as exc:
                made = ElizonError(ENTRY.invalid, [f"{variant.where}: {exc}"])
            with self._lock:
                # the entry is kept with it, so its id is not reused for another one
                self._made[key] = made
                self._made[("variant-of", id(entry), variant.name)] = entry
        if isinstance(made, ElizonError):
            raise made
        return made  # type: ignore[return-value]

    def close(self) -> None:
        """Release what every binding keeps (HTTP connections), and the modules imported
        from package folders: a later session in this process (an IDE's, ``pytest.main``
        called again) imports the code as it is then, not as this session found it."""
        with self._lock:
            made = list(self._made.values())
            self._made.clear()
        with _import_lock:
            _isolated.clear()
        closed: set[int] = set()
        for bound in made:
            # a variant's entry may be the one it was made of: each is closed once
            if not isinstance(bound, ElizonError) and id(bound) not in closed:
                closed.add(id(bound))
                bound.close()
