"""Deadlines a person can step through, and a bound on calls that never return.

Both are about threads, which belong to the process, so both are kept per process:

* **Suspension.** Under ``--pdb``, ``--trace`` or a debugger's trace function, and from
  the moment a debugger is entered (``breakpoint()`` in an entry point), nobody waiting
  for in-process code gives up at its deadline: the person stepping through it decides
  when it ends (pytest-timeout's ``is_debugging`` is the model;
  docs/contract.md#at-the-deadline). Nothing is installed to find out: the trace
  function and ``sys.monitoring`` are only read.
* **Hung calls.** A sync call past its deadline is abandoned on its worker thread, which
  cannot be stopped; :class:`HungCalls` counts, per entry point, those still running, so
  that past the cap (ini ``elizon_max_hung_calls``) an entry point that does not return
  costs no more threads (docs/contract.md#hung-calls).

No pytest import here.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Hashable

__all__ = ["DEFAULT_MAX_HUNG", "HungCalls", "debugger_in_use", "hung", "passed", "remaining",
           "restore", "suspend", "suspended"]

#: Trace functions from modules whose dotted name has a part starting with one of these are
#: debuggers (pdb and its kin are built on bdb; the IDEs' pydevd, as ``pydevd_cython`` or
#: ``pydevd_frame_evaluator``), not coverage or a profiler.
_DEBUGGER_MODULES = ("bdb", "pdb", "pydevd")

#: Calls of one entry point left running past their deadline before its later calls are
#: refused (ini ``elizon_max_hung_calls``; never below the run's concurrency).
DEFAULT_MAX_HUNG = 32


def debugger_in_use() -> str | None:
    """What debugs this thread now, if anything: a trace function from a debugger's module,
    or a tool that holds ``sys.monitoring``'s debugger slot (Python 3.12+, debugpy)."""
    trace = sys.gettrace()
    if trace is not None:
        module = (getattr(trace, "__module__", None)
                  or getattr(type(trace), "__module__", None) or "")
        if any(part.startswith(_DEBUGGER_MODULES) for part in module.split(".")):
            return f"a debugger's trace function ({module})"
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is not None:
        tool = monitoring.get_tool(monitoring.DEBUGGER_ID)
        if tool is not None:
            return f"a debugger ({tool})"
    return None


class _Suspension:
    reason: str | None = None


_suspension = _Suspension()


def suspend(reason: str) -> None:
    """From now on no deadline of in-process code is kept; ``reason`` says why (the first
    reason stands)."""
    if _suspension.reason is None:
        _suspension.reason = reason


def suspended() -> str | None:
    """Why deadlines are suspended, or None when they are kept."""
    return _suspension.reason


def restore(reason: str | None) -> None:
    """Put back what :func:`suspended` said before a session (a pytest run inside a test
    leaves its host's state as it found it)."""
    _suspension.reason = reason


def remaining(deadline: float) -> float | None:
    """Seconds left until ``deadline`` (never below 0); None, no limit, while suspended."""
    if _suspension.reason is not None:
        return None
    return max(deadline - time.monotonic(), 0.0)


def passed(deadline: float) -> bool:
    """Whether ``deadline`` has passed and is kept."""
    return _suspension.reason is None and time.monotonic() >= deadline


class HungCalls:
    """Calls left running past their deadline, by callable, until each returns.

    A callable is keyed by its identity (``id(fn)``): two packages' ``app:answer`` are two
    callables, and while one of its calls is counted the callable is alive (the call's
    frame holds it), so its identity cannot be reused."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[Hashable, int] = {}
        #: The most one callable may have (set by the session; restored after it).
        self.cap = DEFAULT_MAX_HUNG

    def add(self, key: Hashable) -> None:
        with self._lock:
            self._running[key] = self._running.get(key, 0) + 1

    def done(self, key: Hashable) -> None:
        """One of ``key``'s abandoned calls has returned at last (always after its
        :meth:`add`: callers count a call as abandoned under the lock that decides it)."""
        with self._lock:
            left = self._running[key] - 1
            if left > 0:
                self._running[key] = left
            else:
                del self._running[key]

    def count(self, key: Hashable) -> int:
        return self._running.get(key, 0)

    def refusal(self, key: Hashable, name: str) -> str | None:
        """Why a new call of ``key`` (shown as ``name``) is not made, or None when it may
        be."""
        running = self.count(key)
        if running < self.cap:
            return None
        return (f"{name} does not return: {running} of its calls are still running past "
                f"their deadline (the cap is {self.cap}: ini elizon_max_hung_calls, never "
                "below the concurrency), so no more are started; each one that returns "
                "frees its place")


#: The process's hung calls (their threads are the process's).
hung = HungCalls()
