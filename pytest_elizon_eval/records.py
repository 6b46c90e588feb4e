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
decorator. No pytest import here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import threading
from collections.abc import Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any

__all__ = ["dataclass", "fields", "is_record", "realize"]

#: Classes decorated but not yet made: their decorator's options and their module.
_pending: dict[type, tuple[dict[str, Any], ModuleType | None]] = {}
# Cases started ahead under --elizon-concurrency can make a class's first instance in two
# threads at once; re-entrant, since making a class makes its pending bases first.
_lock = threading.RLock()


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
                dataclasses.dataclass(klass, **options)
            # made before the stub goes: another thread that still finds the stub waits
            # on the lock above, then finds the class made
            del _pending[klass]
            if klass.__dict__.get("__new__") is _FIRST_NEW:
                # not deleted: CPython would keep calling the inherited object.__new__
                # through the slot with the call's arguments, which it refuses
                klass.__new__ = _PLAIN_NEW  # type: ignore[assignment]


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
        return dataclasses.dataclass(cls, **options)
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
