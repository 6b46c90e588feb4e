"""A deadline for a sync call made on the main thread: SIGALRM instead of a worker thread.

Handing every sync call to a worker thread (:func:`~.calling.run_blocking`)
costs two thread switches per call; on the main thread of the main interpreter,
on POSIX, the same deadline is kept by ``signal.setitimer(ITIMER_REAL)`` and a
SIGALRM handler that raises :class:`DeadlineSignal` in the running code — the
model is pytest-timeout's ``signal`` method (docs/contract.md#at-the-deadline).
It is used only when nobody else uses SIGALRM: the handler is the default one
and no real-time timer is armed; otherwise, and off the main thread, callers
use the worker thread as before.

A call cannot be abandoned on the main thread, so code that catches the
interrupt must still be made to end:

* after the deadline the interrupt is raised again every :data:`RETRY_S`;
* from the second time on, every Python frame of the call is also traced, and
  the trace raises it at the next line the call runs — a line of the ``except``
  clause that caught it, so it leaves that ``try``: ``except BaseException:
  pass`` (or ``continue``) in a loop does not keep the call alive. An exception
  out of a trace turns tracing off; the next tick turns it on again. So each
  tick gets the interrupt out of one swallowing ``try``.
* What this cannot stop: code that swallows it at two levels and re-enters the
  inner one from the outer one's loop (each tick leaves one level, the loop
  goes back in), code that never returns to the interpreter (a C extension
  that blocks with signals ignored or retried by itself), and code that installs
  a SIGALRM handler of its own during the call (an alarm-based timeout of its
  own). Such a call holds the session; the worker thread has no such limit,
  and any SIGALRM handler installed before the session
  (``signal.signal(signal.SIGALRM, signal.SIG_IGN)`` in a ``conftest.py``)
  makes every call use it.

A real Ctrl-C during the call is told apart from an entry point that raises
``KeyboardInterrupt`` itself, and still stops the session when the code
swallowed it. A process forked by the call that returns from it is ended at
once: it must never go on to run the rest of the session. No pytest import here.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any, TypeVar

__all__ = ["RETRY_S", "DeadlineSignal", "run_signalled", "usable"]

_T = TypeVar("_T")

#: How often the interrupt is raised again while a call goes on past its deadline.
RETRY_S = 0.02

_POSIX = hasattr(signal, "setitimer") and hasattr(signal, "SIGALRM")
#: The C functions under ``signal.signal`` / ``signal.getsignal``: the wrappers turn every
#: handler into an enum member, which cost more than the rest of a call's guard together.
_raw: Any = getattr(signal, "_signal", signal)


_SIGALRM = int(getattr(signal, "SIGALRM", 14))
_SIGINT = int(signal.SIGINT)
_SIG_DFL = int(signal.SIG_DFL)


class DeadlineSignal(GeneratorExit):
    """Raised in a call's code at its deadline. A BaseException, as KeyboardInterrupt is:
    ``except Exception`` in the entry point does not catch it. A GeneratorExit: a streaming
    generator interrupted between chunks runs the cleanup it has for being closed, as when
    the reader closes it at the deadline (docs/contract.md#at-the-deadline)."""


class _State:
    """The one signal deadline in force (there is one main thread)."""

    active = False
    ticks = 0
    interrupted = False
    previous_int: Any = None
    saved_trace: Any = None
    traced = False


_state = _State()


def usable() -> bool:
    """Whether a call made here and now may use the signal deadline: POSIX, the main thread,
    SIGALRM unclaimed (its default handler, no real-time timer armed), and no signal
    deadline already in force."""
    if not _POSIX or _state.active or threading.current_thread() is not threading.main_thread():
        return False
    return (_raw.getsignal(_SIGALRM) == _SIG_DFL
            and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0))


def _raise_on_line(frame: FrameType, event: str, arg: object) -> Any:
    """The escalation's local trace: raise at the next line the call runs (not at its
    "exception" event, which comes while still inside the ``try`` that would catch it)."""
    if event == "line" and _state.active and frame.f_code not in _OWN_CODE:
        raise DeadlineSignal
    return _raise_on_line


def _trace_calls(frame: FrameType, event: str, arg: object) -> Any:
    """The escalation's global trace: every frame the call enters is traced too."""
    if _state.active and frame.f_code not in _OWN_CODE:
        return _raise_on_line
    return None


def _start_tracing(frame: FrameType) -> None:
    """Trace every frame of the call from ``frame`` down to its boundary, and any it calls."""
    if not _state.traced:
        _state.saved_trace, _state.traced = sys.gettrace(), True
    sys.settrace(_trace_calls)
    walked: FrameType | None = frame
    while walked is not None and walked.f_code not in _OWN_CODE:
        walked.f_trace_lines = True
        walked.f_trace = _raise_on_line
        walked = walked.f_back


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    if not _state.active:
        return  # the call is over: nothing of it is left to interrupt
    if frame is None or frame.f_code in _OWN_CODE:
        # Not in the call's code: a deadline only microseconds away can fire before the
        # call starts. Ask again shortly, so a call that starts late is still interrupted
        # (run_signalled disarms the timer when the call is over).
        signal.setitimer(signal.ITIMER_REAL, RETRY_S)
        return
    _state.ticks += 1
    signal.setitimer(signal.ITIMER_REAL, RETRY_S)  # again, should the call swallow this one
    if _state.ticks > 1:  # it swallowed the last one: trace its frames until it ends
        _start_tracing(frame)
    raise DeadlineSignal


def _on_interrupt(signum: int, frame: FrameType | None) -> None:
    _state.interrupted = True  # the user's Ctrl-C, not the entry point's own raise
    previous = _state.previous_int
    if callable(previous):
        previous(signum, frame)
    else:
        raise KeyboardInterrupt


def run_signalled(work: Callable[[], _T], deadline: float) -> _T | None:
    """``work()`` on this thread until ``deadline`` (``time.monotonic()``); None when the
    deadline interrupted it. Call only when :func:`usable` said so. What ``work`` raises is
    raised here; a Ctrl-C during it is raised here as KeyboardInterrupt even when ``work``
    caught it."""
    pid = os.getpid()
    _state.ticks, _state.interrupted, _state.traced = 0, False, False
    previous_int = _raw.getsignal(_SIGINT)
    _raw.signal(_SIGALRM, _on_alarm)
    if callable(previous_int):
        _state.previous_int = previous_int
        _raw.signal(_SIGINT, _on_interrupt)
    finished = False
    value: _T | None = None
    try:
        left = deadline - time.monotonic()
        if left > 0:
            _state.active = True
            signal.setitimer(signal.ITIMER_REAL, left)
            value = work()
            finished = True
    except DeadlineSignal:
        pass
    finally:
        # This frame is never interrupted (_OWN_CODE): the handler and the traces stand
        # down here first, then everything is put back as it was.
        _state.active = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        if _state.traced:
            sys.settrace(_state.saved_trace)
            _state.saved_trace = None
        _raw.signal(_SIGALRM, _SIG_DFL)
        if callable(previous_int):
            _raw.signal(_SIGINT, previous_int)
            _state.previous_int = None
        if os.getpid() != pid:  # a child the call forked came back here: it must go
            os._exit(0)
    if _state.interrupted:
        raise KeyboardInterrupt
    return value if finished else None


#: Frames the handler and the traces never interrupt: the call's own boundary.
_OWN_CODE: frozenset[CodeType] = frozenset({run_signalled.__code__, _on_alarm.__code__,
                                            _on_interrupt.__code__})
