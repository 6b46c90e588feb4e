"""The only module that touches private pytest APIs (and pytest-xdist's internals).

A YAML case is not a Python function, yet it must get fixtures (the
``elizon_entry`` fixture, with everything it depends on) exactly like one.
pytest's own ``DoctestItem`` does this with the session's fixture manager
and a ``TopRequest``; :class:`FixtureItem` does the same, in one place.
A case's failure is shown as pytest shows a Python test's — with a crash
line after the node id in the short summary — through pytest's own
``ReprExceptionInfo``. The APIs used are the same in pytest 8 and 9, the
versions the tests cover (:data:`SUPPORTED`); any other version gets a
warning at start-up.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _pytest
import pluggy
import pytest
from _pytest._code.code import (
    ReprEntryNative,
    ReprExceptionInfo,
    ReprFileLocation,
    ReprTraceback,
    Traceback,
    TracebackEntry,
)
from _pytest.fixtures import FixtureLookupErrorRepr, FuncFixtureInfo, TopRequest

__all__ = ["SUPPORTED", "FixtureClosure", "FixtureItem", "failure_repr", "fixture_location",
           "positions", "session_wide_fixture", "unsupported_pytest", "upcoming_items"]

#: pytest versions whose private APIs used here are known to work: [first, last) majors.
SUPPORTED = (8, 10)


def unsupported_pytest() -> str | None:
    """A warning's text when this pytest is outside :data:`SUPPORTED`."""
    major = pytest.version_tuple[0]
    if isinstance(major, int) and SUPPORTED[0] <= major < SUPPORTED[1]:
        return None
    return (f"pytest-elizon-eval is tested with pytest {SUPPORTED[0]}.x to "
            f"{SUPPORTED[1] - 1}.x; pytest {pytest.__version__} may not work with it")


def failure_repr(text: str, path: Path, line: int, crash: str) -> ReprExceptionInfo:
    """A failure shown as ``text`` in the failures section, and as ``- crash`` after the
    node id in the short summary and in pytest's own JUnit message (1-based ``line``).
    Plain dataclasses: pytest-xdist carries them to the controller as they are."""
    lines = [f"{row}\n" for row in text.splitlines()] or ["\n"]
    return ReprExceptionInfo(
        reprtraceback=ReprTraceback(reprentries=[ReprEntryNative(lines)], extraline=None,
                                    style="native"),
        reprcrash=ReprFileLocation(str(path), line, crash))


class FixtureClosure:
    """The fixtures an item uses (pytest's ``FuncFixtureInfo``), shared by the items that
    use the same ones, with the definitions of those that are session-scoped with all they
    depend on (found once, when a case first runs)."""

    __slots__ = ("_wide", "info", "seen")

    def __init__(self, info: FuncFixtureInfo) -> None:
        self.info = info
        self._wide: tuple[tuple[Any, str], ...] | None = None
        #: Of each of those, what pytest cached when it last filled a case's fixtures.
        self.seen: dict[str, Any] = {}

    def session_wide(self) -> tuple[tuple[Any, str], ...]:
        if self._wide is None:
            info = self.info
            self._wide = tuple((info.name2fixturedefs[name][-1], name)
                               for name in info.names_closure
                               if name != "request" and _wide(info, name))
        return self._wide


class FixtureItem(pytest.Item):
    """An item that is not a Python function but gets fixtures like one.

    Subclasses call :meth:`init_fixtures` in ``__init__`` and :meth:`fill_fixtures` in
    ``setup()``; :attr:`fixture_values` are then what ``funcargs`` holds for a function.
    ``short_failure`` turns an exception of setup into a cheap, short report (pytest would
    otherwise format a long traceback of plugin internals that nobody reads).
    """

    _fixture_closure: FixtureClosure
    #: No Python function, as pytest's DoctestItem has none: what pytest reads when it
    #: formats a fixture lookup error ("fixture 'x' not found") of this item.
    obj: object = None

    def init_fixtures(self, closure: FixtureClosure | None = None) -> FixtureClosure:
        """Give this item the fixture closure ``closure`` (computed when None), which items
        with the same fixtures share."""
        if closure is None:
            manager = self.session._fixturemanager
            closure = FixtureClosure(manager.getfixtureinfo(node=self, func=None, cls=None))
        self._fixture_closure = closure
        self._initrequest()
        return closure

    def _initrequest(self) -> None:  # pytest calls it again when an item is re-run
        info = self._fixture_closure.info
        self._fixtureinfo = info
        self.fixturenames = info.names_closure
        self.funcargs: dict[str, object] = {}
        self._request = TopRequest(self, _ispytest=True)  # type: ignore[arg-type,unused-ignore]

    def fill_fixtures(self) -> None:
        """Set up every fixture the item uses (in ``setup()``). A session-scoped fixture
        (with everything it depends on) that an earlier item set up is taken as pytest
        would take it — its cached value — without asking pytest's fixture machinery,
        which does it per fixture per case; pytest fills the rest."""
        closure = self._fixture_closure
        wide = closure.session_wide()
        seen = closure.seen
        for definition, name in wide:
            cached = definition.cached_result
            # the very value pytest gave a case of this closure: not one another test set
            # up since with its own parameter (pytest would set it up again here)
            if cached is not None and cached[2] is None and cached is seen.get(name):
                self.funcargs.setdefault(name, definition.cached_result[0])
        self._request._fillfixtures()
        for definition, name in wide:
            seen[name] = definition.cached_result

    @property
    def fixture_values(self) -> dict[str, object]:
        return self.funcargs

    def short_failure(self, excinfo: pytest.ExceptionInfo[BaseException]
                      ) -> ReprExceptionInfo | str | None:
        """A short representation of ``excinfo``, or None for pytest's usual one."""
        return None

    def _repr_failure_py(self, excinfo: pytest.ExceptionInfo[BaseException],
                         style: Any = None) -> Any:
        short = self.short_failure(excinfo)
        if short is not None:
            return short
        shown = super()._repr_failure_py(excinfo, style)
        if isinstance(shown, FixtureLookupErrorRepr) and list(shown.tblines[:1]) == [_NO_SOURCE]:
            shown.tblines = shown.tblines[1:]  # the item itself: it has no Python source
        return shown

    def _traceback_filter(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Traceback:
        """The traceback as pytest shows a Python test's: without pytest's, pluggy's and
        this plugin's frames (a fixture that raises is shown from the user's code down, not
        through thousands of lines of hook calls), unless ``--full-trace``."""
        traceback = excinfo.traceback
        if not self.config.getoption("fulltrace", False):
            users = traceback.filter(_users_frame)
            if users:
                traceback = users
        return traceback.filter(excinfo)


#: What pytest writes for a fixture lookup error's requesting item without source.
_NO_SOURCE = "file , line 0: source code not available"
#: Frames in these folders are the machinery between pytest and a user's code.
_MACHINERY = tuple(str(Path(folder)) + os.sep for folder in (
    *(Path(module.__file__).parent for module in (_pytest, pluggy) if module.__file__),
    Path(__file__).parent.parent))


def _users_frame(entry: TracebackEntry) -> bool:
    filename = entry.frame.code.raw.co_filename
    if "<" in filename and ">" in filename:  # generated code: nothing to show
        return False
    return not os.path.abspath(filename).startswith(_MACHINERY)


def _wide(info: FuncFixtureInfo, name: str) -> bool:
    """Whether fixture ``name``, unparametrized, and all it depends on are session-scoped."""
    definitions = info.name2fixturedefs
    stack, seen = [name], set()
    while stack:
        current = stack.pop()
        if current in seen or current == "request":
            continue
        seen.add(current)
        found = definitions.get(current)
        if not found or found[-1].scope != "session" or found[-1].params is not None:
            return False
        stack.extend(found[-1].argnames)
    return True


def fixture_location(item: FixtureItem, name: str) -> str:
    """``file:line`` of the fixture definition that wins for ``item``."""
    definitions = item._fixtureinfo.name2fixturedefs.get(name)
    if not definitions:
        return "unknown location"
    return _location(definitions[-1].func, item.config.rootpath)


@functools.lru_cache(maxsize=64)
def _location(func: Callable[..., object], rootpath: Path) -> str:
    """Read once per fixture: every case asks, and reading the source is slow."""
    try:
        path = inspect.getsourcefile(func) or "?"
        line = inspect.getsourcelines(func)[1]
    except (OSError, TypeError):
        return getattr(func, "__qualname__", "?")
    with contextlib.suppress(ValueError):
        path = Path(path).resolve().relative_to(rootpath).as_posix()
    return f"{path}:{line}"


def session_wide_fixture(item: FixtureItem, name: str, default_module: str
                         ) -> tuple[int, bool] | None:
    """(identity, is the default from ``default_module``) of fixture ``name`` for ``item``,
    if it and every fixture it depends on are session-scoped: then its value is the same
    for every item once one item has set it up. None otherwise."""
    info = item._fixtureinfo
    if not _wide(info, name):
        return None
    definition = info.name2fixturedefs[name][-1]
    return id(definition), getattr(definition.func, "__module__", "") == default_module


def upcoming_items(item: pytest.Item, nextitem: pytest.Item | None, count: int,
                   positions: dict[str, int]) -> list[pytest.Item]:
    """Up to ``count`` items this process will run after ``item``, in order.

    Serially that is what follows in ``session.items`` (``positions``: see
    :func:`positions`). On a pytest-xdist worker it is the
    worker's own queue (private to xdist: read defensively, falling back to ``nextitem``).
    """
    session = item.session
    if not hasattr(item.config, "workerinput"):
        index = positions.get(item.nodeid)
        if index is None:
            return [nextitem] if nextitem else []
        return list(session.items[index + 1:index + 1 + count])
    for plugin in item.config.pluginmanager.get_plugins():
        queue = getattr(plugin, "torun", None)
        if queue is None or not hasattr(queue, "lock"):
            continue
        try:
            with queue.lock() as pending:
                indices = [i for i in pending if isinstance(i, int)][:count]
            found = [session.items[i] for i in indices]
            return [nextitem, *found][:count] if nextitem else found
        except Exception:  # xdist changed: look no further than pytest's own nextitem
            break
    return [nextitem] if nextitem else []


def positions(session: pytest.Session) -> dict[str, int]:
    """The position of each collected item in ``session.items``, by node id (the caller
    keeps it: the items are in their final order once the run starts)."""
    return {item.nodeid: i for i, item in enumerate(session.items)}
