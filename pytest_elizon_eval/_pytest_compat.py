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
           "init_request"]


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
