"""The state of one pytest session, in one object under one stash key.

:class:`ElizonSession` holds what every node and hook of the session shares: the settings,
the package index, the binder, the case scheduler (with ``--elizon-concurrency`` > 1), the
retry policy, the adaptive gates and the values of session-wide entry/judge fixtures.
:mod:`.plugin` builds it in ``pytest_configure``; everything else reads it with :func:`of`.

The retry policy and the gates are also read where no config is at hand — inside an HTTP
entry's or a judge's retries, and where a run waits for its gate — so the process keeps the
sessions configured in it (:func:`current`); a pytester run inside a session pushes its own
and pops it when it ends. No pytest hooks and no sibling imports at run time here, so the
low-level modules (``retrying``, ``concurrency``) can read it without an import cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..bind.binding import Binder
    from ..load.discovery import PackageIndex
    from ..run.concurrency import CaseScheduler, Gates
    from ..run.retrying import RetryPolicy
    from .options import Settings

__all__ = ["SESSION", "ElizonSession", "current", "of"]


@dataclass(eq=False)
class ElizonSession:
    """Everything the session's nodes share; one per pytest process (each xdist worker
    has its own, so each adapts its concurrency on its own)."""

    settings: Settings
    index: PackageIndex
    binder: Binder
    retry: RetryPolicy
    #: The adaptive limits by entry point; None when concurrency is fixed.
    gates: Gates | None = None
    #: Starts cases ahead of their turn; None unless --elizon-concurrency > 1.
    scheduler: CaseScheduler | None = None
    #: Values of session-wide entry/judge fixtures, by fixture identity, once set up.
    fixture_values: dict[int, object] = field(default_factory=dict)
    #: The position of each collected item's node id (looked up when cases start ahead).
    positions: dict[str, int] | None = None
    #: ``--elizon-resume``: the cases the resumed run finished, by node id (suite sha256,
    #: case sha256, entry, report data); None when not resuming.
    resumable: dict[str, tuple[str, str, str, dict[str, Any]]] | None = None
    #: Why deadlines were suspended from the session's start (a debugger), if they were
    #: (docs/contract.md#debugging).
    suspended: str | None = None

    def start(self, config: pytest.Config | None) -> None:
        """Keep this session under its config and make it the process's current one."""
        if config is not None:
            config.stash[SESSION] = self
        _configured.append(self)

    def end(self) -> None:
        """The session is over: the process's current one is the one before, if any."""
        if self in _configured:
            _configured.remove(self)


#: The session's :class:`ElizonSession`.
SESSION = pytest.StashKey[ElizonSession]()

# Why a process-wide list at all: entries, judges and the run loop read the retry policy
# and the gates deep inside a call, with no config to hand; threading the session through
# them would change every entry's and judge's signature. The list holds sessions only
# (innermost last), so their state stays owned by the session object.
_configured: list[ElizonSession] = []


def of(config: pytest.Config) -> ElizonSession:
    """The session of ``config`` (set up by the plugin's ``pytest_configure``)."""
    return config.stash[SESSION]


def current() -> ElizonSession | None:
    """The innermost session running in this process, or None outside one."""
    return _configured[-1] if _configured else None
