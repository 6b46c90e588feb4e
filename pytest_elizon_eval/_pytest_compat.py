"""The only module that touches private pytest APIs.

A YAML case is not a Python function, yet it must get fixtures (the
``elizon_entry`` fixture, with everything it depends on) exactly like one.
pytest's own ``DoctestItem`` does this with the session's fixture manager
and a ``TopRequest``; this module does the same, in one place, for pytest 8
and 9 (the APIs used are unchanged across those versions).
"""

from __future__ import annotations

import contextlib
import inspect
from pathlib import Path
from typing import Any

import pytest
from _pytest.fixtures import FuncFixtureInfo, TopRequest

__all__ = ["FuncFixtureInfo", "fill_fixtures", "fixture_info", "fixture_location",
           "init_request", "session_wide_fixture", "upcoming_items"]


def fixture_info(item: pytest.Item) -> FuncFixtureInfo:
    """The fixture closure of an item that is not a Python function (reads ``usefixtures``)."""
    manager = item.session._fixturemanager
    return manager.getfixtureinfo(node=item, func=None, cls=None)


def init_request(item: Any, info: FuncFixtureInfo) -> None:
    """Give ``item`` what pytest's fixture machinery expects of a function item."""
    item._fixtureinfo = info
    item.fixturenames = info.names_closure
    item.funcargs = {}
    item._request = TopRequest(item, _ispytest=True)


def fill_fixtures(item: Any) -> None:
    """Set up every fixture the item uses (in ``setup()``)."""
    item._request._fillfixtures()


def fixture_location(item: Any, name: str) -> str:
    """``file:line`` of the fixture definition that wins for ``item``."""
    definitions = item._fixtureinfo.name2fixturedefs.get(name)
    if not definitions:
        return "unknown location"
    func = definitions[-1].func
    try:
        path = inspect.getsourcefile(func) or "?"
        line = inspect.getsourcelines(func)[1]
    except (OSError, TypeError):
        return getattr(func, "__qualname__", "?")
    with contextlib.suppress(ValueError):
        path = Path(path).resolve().relative_to(item.config.rootpath).as_posix()
    return f"{path}:{line}"


def session_wide_fixture(item: Any, name: str) -> tuple[int, bool] | None:
    """(identity, is the plugin's default) of fixture ``name`` for ``item``, if it and every
    fixture it depends on are session-scoped: then its value is the same for every item
    once one item has set it up. None otherwise."""
    definitions = item._fixtureinfo.name2fixturedefs
    stack, seen = [name], set()
    while stack:
        current = stack.pop()
        if current in seen or current == "request":
            continue
        seen.add(current)
        found = definitions.get(current)
        if not found or found[-1].scope != "session":
            return None
        stack.extend(found[-1].argnames)
    definition = definitions[name][-1]
    default = getattr(definition.func, "__module__", "") == "pytest_elizon_eval.plugin"
    return id(definition), default


def upcoming_items(item: pytest.Item, nextitem: pytest.Item | None, count: int
                   ) -> list[pytest.Item]:
    """Up to ``count`` items this process will run after ``item``, in order.

    Serially that is what follows in ``session.items``. On a pytest-xdist worker it is the
    worker's own queue (private to xdist: read defensively, falling back to ``nextitem``).
    """
    session = item.session
    if not hasattr(item.config, "workerinput"):
        index = _index_of(session).get(item.nodeid)
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
            return [nextitem, *(session.items[i] for i in indices)][:count] \
                if nextitem else [session.items[i] for i in indices]
        except Exception:  # xdist changed: look no further than pytest's own nextitem
            break
    return [nextitem] if nextitem else []


_INDEX = pytest.StashKey[dict[str, int]]()


def _index_of(session: pytest.Session) -> dict[str, int]:
    if _INDEX not in session.stash:
        session.stash[_INDEX] = {item.nodeid: i for i, item in enumerate(session.items)}
    return session.stash[_INDEX]
