"""``@dataclass`` that makes a class's methods when the class is first used.

Most of what importing a module of dataclasses costs is the decorator: it
generates the source of ``__init__``, ``__eq__``, ``__repr__``, ``__hash__`` and
the frozen ``__setattr__`` for every class and compiles each one — about half a
millisecond per class, and every pytest session imports some eighty of them,
most of which a run never instantiates (a baseline comparison, a judge, a
snapshot). :func:`dataclass` takes the same arguments, records them, and leaves
a ``__new__`` that applies the real :func:`dataclasses.dataclass` to the class
(in place: the class object stays the same) the first time an instance is made
— by a call, by pickle or by :func:`copy.copy` alike. :func:`fields` and
:func:`is_record` do the same for code that looks at a class before it has
instances (docs/performance.md#measured-figures). Type checkers see the standard
decorator.

Making a class still compiles its methods' generated source; :class:`_CompiledMethods`
keeps what was compiled, by that source, in a file where this module's own ``.pyc``
goes (per interpreter, stamped with its bytecode's magic number as a ``.pyc`` is), so a
later session only looks it up. No pytest import here.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import marshal
import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from importlib.util import MAGIC_NUMBER, cache_from_source
from pathlib import Path
from types import CodeType, ModuleType
from typing import TYPE_CHECKING, Any

__all__ = ["dataclass", "fields", "is_record", "realize"]

#: Classes decorated but not yet made: their decorator's options and their module.
_pending: dict[type, tuple[dict[str, Any], ModuleType | None]] = {}
# Cases started ahead under --elizon-concurrency can make a class's first instance in two
# threads at once; re-entrant, since making a class makes its pending bases first.
_lock = threading.RLock()


class _CompiledMethods:
    """The code objects of methods :mod:`dataclasses` generated, by their source text.

    :mod:`dataclasses` makes every method by ``exec(source, globals, namespace)``; while
    :func:`realize` runs, a module-level ``exec`` in :mod:`dataclasses` (found before the
    builtin) runs the code compiled from that source instead, compiled at most once per
    interpreter version. The same source always compiles to the same code, so the class
    made is the one the builtin would make. The file is read once per process and
    rewritten (atomically) at exit when a class needed new source; it is skipped where bytecode
    is not written (``PYTHONDONTWRITEBYTECODE``) or cannot be."""

    #: Past this many sources the file keeps only those this process used.
    MOST = 2048

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.codes: dict[str, CodeType] | None = None
        self.used: set[str] = set()
        self.added = False
        #: The thread making a class through :func:`realize` now (only its source is ours).
        self.maker: int | None = None

    def _load(self) -> dict[str, CodeType]:
        codes: dict[str, CodeType] = {}
        if self.path is not None:
            try:
                raw = self.path.read_bytes()
                # made by this very interpreter's bytecode, as a .pyc must be
                stored = marshal.loads(raw[len(MAGIC_NUMBER):]) \
                    if raw.startswith(MAGIC_NUMBER) else None
            except Exception:  # none yet, or not ours: compiled as without the file
                stored = None
            if isinstance(stored, dict):
                codes = {k: v for k, v in stored.items()
                         if isinstance(k, str) and isinstance(v, CodeType)}
        self.codes = codes
        return codes

    def exec(self, source: Any, globals: Any = None, locals: Any = None) -> None:
        if not isinstance(source, str) or threading.get_ident() != self.maker:
            # not the generated source we know, or a class made by another thread
            exec(source, globals, locals)
            return
        codes = self.codes if self.codes is not None else self._load()
        code = codes.get(source)
        if code is None:
            # dont_inherit: compiled as dataclasses' own exec compiles it, without this
            # module's ``from __future__`` flags
            code = codes[source] = compile(source, "<string>", "exec", dont_inherit=True)
            if not self.added:
                self.added = True
                atexit.register(self.save)  # once, at the end: one write per session
        self.used.add(source)
        exec(code, globals, locals)

    def save(self) -> None:
        """Write the file if this process compiled something new."""
        if not self.added or self.path is None or self.codes is None \
                or sys.dont_write_bytecode:
            return
        self.added = False
        codes = self.codes if len(self.codes) <= self.MOST \
            else {k: v for k, v in self.codes.items() if k in self.used}
        temporary: str | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.path.parent,
                                                 prefix=self.path.name, suffix=".tmp")
            with os.fdopen(handle, "wb") as out:
                out.write(MAGIC_NUMBER + marshal.dumps(codes))
            os.replace(temporary, self.path)
        except OSError:  # a read-only install: compile each time, as without the file
            self.path = None
            if temporary is not None:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)


def _methods_file() -> Path | None:
    """Where this module's own ``.pyc`` goes (``__pycache__``, or under
    ``PYTHONPYCACHEPREFIX``), named for the interpreter: None where there is none."""
    try:
        return Path(cache_from_source(__file__)).with_suffix(".methods")
    except (NotImplementedError, ValueError):  # no cache_tag: no bytecode cache at all
        return None


_compiled = _CompiledMethods(_methods_file())


def realize(cls: type) -> None:
    """Apply the pending decorator to ``cls`` and to its pending base classes, bases
    first (a dataclass reads its bases' fields); nothing if they are made."""
    if not _pending:
        return
    with _lock:
        for klass in reversed(cls.__mro__):
            found = _pending.get(klass)
            if found is None:
                continue
            options, module = found
            with _module_present(klass.__module__, module):
                _make(klass, options)
            # made before the stub goes: another thread that still finds the stub waits
            # on the lock above, then finds the class made
            del _pending[klass]
            if klass.__dict__.get("__new__") is _FIRST_NEW:
                # not deleted: CPython would keep calling the inherited object.__new__
                # through the slot with the call's arguments, which it refuses
                klass.__new__ = _PLAIN_NEW  # type: ignore[assignment]


def _make(cls: type, options: dict[str, Any]) -> Any:
    """The real decorator, its methods' code taken from :data:`_compiled`."""
    with _lock:
        outermost = "exec" not in dataclasses.__dict__
        if outermost:
            _compiled.maker = threading.get_ident()
            dataclasses.exec = _compiled.exec  # type: ignore[attr-defined]
        try:
            return dataclasses.dataclass(cls, **options)
        finally:
            if outermost:
                del dataclasses.exec  # type: ignore[attr-defined]
                _compiled.maker = None


@contextlib.contextmanager
def _module_present(name: str, module: ModuleType | None) -> Iterator[None]:
    """The decorator reads the class's module from ``sys.modules`` (string annotations):
    one that has left it since (pytester's in-process runs drop the modules they imported)
    is put back while the class is made."""
    if module is None or sys.modules.get(name) is not None:
        yield
        return
    sys.modules[name] = module
    try:
        yield
    finally:
        if sys.modules.get(name) is module:
            del sys.modules[name]


def _first_new(cls: type, *args: Any, **kwargs: Any) -> Any:
    # type.__call__ runs __init__ after this returns, and looks it up then: the one the
    # decorator has just made
    realize(cls)
    return object.__new__(cls)


def _plain_new(cls: type, *args: Any, **kwargs: Any) -> Any:
    return object.__new__(cls)


_FIRST_NEW = staticmethod(_first_new)
_PLAIN_NEW = staticmethod(_plain_new)


def _lazy(cls: type, options: dict[str, Any]) -> type:
    if options.get("slots") or any(
            "__new__" in klass.__dict__
            and klass.__dict__["__new__"] not in (_FIRST_NEW, _PLAIN_NEW)
            for klass in cls.__mro__[:-1]):
        # slots make a new class, and a __new__ of its own must keep working: made now
        return _make(cls, options)  # type: ignore[no-any-return]
    _pending[cls] = (options, sys.modules.get(cls.__module__))
    cls.__new__ = _FIRST_NEW  # type: ignore[assignment]
    return cls


if TYPE_CHECKING:
    from dataclasses import dataclass
else:
    def dataclass(cls: type | None = None, /, **options: Any) -> Any:
        """:func:`dataclasses.dataclass`, applied when the class is first used."""
        if cls is None:
            return lambda klass: _lazy(klass, options)
        return _lazy(cls, options)


def fields(class_or_instance: Any) -> tuple[dataclasses.Field[Any], ...]:
    """:func:`dataclasses.fields`, for a class that may not have been made yet."""
    realize(class_or_instance if isinstance(class_or_instance, type)
            else type(class_or_instance))
    return dataclasses.fields(class_or_instance)


def is_record(value: Any) -> bool:
    """:func:`dataclasses.is_dataclass`, counting a class not made yet (without making
    it: telling what a type hint is must not cost the class's methods)."""
    return (isinstance(value, type) and value in _pending) or dataclasses.is_dataclass(value)
