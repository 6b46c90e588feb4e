"""Call an entry point with a case's input, under the case's time limit.

Owns the one risky step of a case: running foreign code. A sync callable
runs in a daemon thread that is abandoned at the deadline (so a hung call
never holds the session or its exit); an async callable runs on a shared
background event loop and is cancelled at the deadline. Whatever the code
does — raise, ``sys.exit()``, raise ``KeyboardInterrupt``, return garbage,
stream chunks — comes back as an :class:`EntryCall`, never as an exception.
A real Ctrl-C from the user interrupts the waiting main thread and stops
the session as usual. No pytest import here.
"""

from __future__ import annotations

import concurrent.futures
import functools
import inspect
import json
import queue
import threading
import traceback
from collections.abc import Callable, Coroutine, Iterator, Mapping
from dataclasses import dataclass
from time import perf_counter
from typing import Any, ClassVar

__all__ = ["EntryCall", "ErrorInfo", "OutputError", "call_with_deadline", "invoke", "output_of"]

#: Longest traceback text kept for a report.
_TRACEBACK_LINES = 40


@dataclass(frozen=True)
class ErrorInfo:
    """What the entry point raised, as text."""

    type: str
    message: str
    traceback: str = ""

    def to_data(self) -> dict[str, str]:
        return {"type": self.type, "message": self.message, "traceback": self.traceback}

    @classmethod
    def from_data(cls, data: Mapping[str, str]) -> ErrorInfo:
        return cls(data["type"], data["message"], data.get("traceback", ""))

    @property
    def text(self) -> str:
        """``Type: message``, the text ``errorContains`` looks in."""
        return f"{self.type}: {self.message}" if self.message else self.type


@dataclass(frozen=True)
class EntryCall:
    """How one call of the entry point went."""

    #: The output as returned: a string or a JSON-like value (None if there is none).
    value: Any = None
    #: The output text assertions read: the string, or the value as JSON.
    text: str | None = None
    error: ErrorInfo | None = None
    #: Milliseconds around the call (and the stream, if any); None when it timed out.
    latency_ms: float | None = None
    timed_out: bool = False
    #: Answered from a cassette (``--elizon-replay``), not by calling the entry point.
    replayed: bool = False


class OutputError(Exception):
    """The entry point returned something that is not an output (None, bytes, objects)."""


def _error_info(exc: BaseException) -> ErrorInfo:
    frames = list(traceback.extract_tb(exc.__traceback__))
    own = [i for i, f in enumerate(frames) if f.filename == __file__]
    shown = frames[own[-1] + 1:] if own else frames  # hide this module's frames
    lines = "".join(traceback.format_list(shown)).splitlines()[-_TRACEBACK_LINES:]
    name = type(exc).__name__
    message = str(exc)
    if isinstance(exc, SystemExit):
        message = f"the entry point called sys.exit({exc.code!r})"
    elif isinstance(exc, KeyboardInterrupt):
        message = "the entry point raised KeyboardInterrupt itself"
    return ErrorInfo(name, message, "\n".join(lines))


def _json_text(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise OutputError(f"the entry point returned a {type(value).__name__} that is not "
                          f"JSON-serializable: {exc}") from None


def output_of(value: object) -> tuple[Any, str]:
    """(structured value, output text) of what an entry point returned (SPEC §3)."""
    if isinstance(value, str):
        return value, value
    if value is None:
        raise OutputError("the entry point returned None; return a string, a JSON-like value, "
                          "a pydantic model or an iterator of strings")
    if isinstance(value, (bytes, bytearray)):
        raise OutputError("the entry point returned bytes; decode them and return a string")
    dump = getattr(value, "model_dump", None)
    if callable(dump) and hasattr(type(value), "model_fields"):
        value = dump(mode="json")
        return value, _json_text(value)
    if isinstance(value, (dict, list, tuple, int, float, bool)):
        plain = list(value) if isinstance(value, tuple) else value
        return plain, _json_text(plain)
    raise OutputError(f"the entry point returned a {type(value).__name__}; return a string, "
                      "a JSON-like value, a pydantic model or an iterator of strings")


def _join_chunks(chunks: list[object]) -> str:
    for index, chunk in enumerate(chunks):
        if not isinstance(chunk, str):
            raise OutputError(f"the entry point streamed a {type(chunk).__name__} as chunk "
                              f"{index}; stream strings only")
    return "".join(chunks)  # type: ignore[arg-type]


#: Turns what a callable returned (after streams are joined) into (value, text).
Convert = Callable[[Any], tuple[Any, "str | None"]]


# -- sync callables: daemon worker threads, a busy one abandoned at the deadline -------------

class _Worker:
    """A daemon thread that runs one call at a time. A worker whose call outlives its
    deadline is simply never handed work again (it rejoins the idle ones if it ever ends),
    so a hung call costs one thread, not the session."""

    _idle: ClassVar[list[_Worker]] = []
    _idle_lock = threading.Lock()

    def __init__(self) -> None:
        self._tasks: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        threading.Thread(target=self._loop, name="elizon-entry", daemon=True).start()

    @classmethod
    def run(cls, task: Callable[[], None]) -> None:
        """Start ``task`` on an idle worker, or on a new one."""
        with cls._idle_lock:
            worker = cls._idle.pop() if cls._idle else None
        (worker or cls())._tasks.put(task)

    def _loop(self) -> None:
        while True:
            self._tasks.get()()
            with self._idle_lock:
                self._idle.append(self)


def _call_sync(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
               timeout_s: float, convert: Convert) -> EntryCall:
    box: list[EntryCall] = []
    done = threading.Event()

    def work() -> None:
        start = perf_counter()
        try:
            raw = fn(*args, **kwargs)
            if inspect.isawaitable(raw) or hasattr(raw, "__aiter__"):
                import asyncio  # deferred: only async entry points need it

                raw = asyncio.run(_settle(raw))  # a sync wrapper around async code
            elif isinstance(raw, Iterator):
                raw = _join_chunks(list(raw))
            latency = (perf_counter() - start) * 1000
            value, text = convert(raw)
            box.append(EntryCall(value=value, text=text, latency_ms=latency))
        except BaseException as exc:  # graded, whatever it is: SystemExit included
            box.append(EntryCall(error=_error_info(exc),
                                 latency_ms=(perf_counter() - start) * 1000))
        finally:
            done.set()

    _Worker.run(work)
    if not done.wait(timeout_s):
        return EntryCall(timed_out=True)
    return box[0]


async def _settle(raw: Any) -> Any:
    if hasattr(raw, "__aiter__"):
        chunks: list[object] = [chunk async for chunk in raw]
        return _join_chunks(chunks)
    result = await raw
    if hasattr(result, "__aiter__"):
        return await _settle(result)
    if isinstance(result, Iterator):
        return _join_chunks(list(result))
    return result


# -- async callables: one background event loop, cancelled at the deadline --------------------

class _LoopThread:
    """An event loop running forever in a daemon thread."""

    def __init__(self) -> None:
        import asyncio  # deferred: only async entry points need it

        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="elizon-loop",
                                       daemon=True)
        self.thread.start()

    def responsive(self, within_s: float) -> bool:
        """Whether the loop still runs callbacks (code may have blocked it)."""
        pong = threading.Event()
        self.loop.call_soon_threadsafe(pong.set)
        return pong.wait(within_s)

    def submit(self, coro: Coroutine[Any, Any, EntryCall]) -> concurrent.futures.Future[EntryCall]:
        import asyncio

        return asyncio.run_coroutine_threadsafe(coro, self.loop)


_loop_lock = threading.Lock()
_loop: _LoopThread | None = None


def _shared_loop() -> _LoopThread:
    global _loop
    with _loop_lock:
        if _loop is None:
            _loop = _LoopThread()
        return _loop


def _retire_loop(stuck: _LoopThread) -> None:
    """Abandon a loop that code blocked (e.g. time.sleep in a coroutine); the next call gets
    a fresh one, so one bad case cannot time out every later async case."""
    global _loop
    with _loop_lock:
        if _loop is stuck:
            _loop = None


async def _guarded(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                   convert: Convert) -> EntryCall:
    start = perf_counter()
    try:
        raw = await _settle(fn(*args, **kwargs))
        latency = (perf_counter() - start) * 1000
        value, text = convert(raw)
        return EntryCall(value=value, text=text, latency_ms=latency)
    except BaseException as exc:
        import asyncio  # already loaded: this runs on the event loop

        if isinstance(exc, asyncio.CancelledError):
            raise
        # caught here so asyncio never sees SystemExit/KeyboardInterrupt
        return EntryCall(error=_error_info(exc), latency_ms=(perf_counter() - start) * 1000)


def _call_async(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                timeout_s: float, convert: Convert) -> EntryCall:
    runner = _shared_loop()
    future = runner.submit(_guarded(fn, args, kwargs, convert))
    try:
        return future.result(timeout_s)
    except concurrent.futures.TimeoutError:
        future.cancel()
        if not runner.responsive(1.0):
            _retire_loop(runner)
        return EntryCall(timed_out=True)


def _inspect_async(fn: Callable[..., Any]) -> bool:
    # A plain function, functools.partial, or an object with an async __call__.
    own_call = getattr(type(fn), "__call__", None)  # noqa: B004 - the method, not callability
    for candidate in (fn, getattr(fn, "func", None), own_call):
        if candidate is not None and (inspect.iscoroutinefunction(candidate)
                                      or inspect.isasyncgenfunction(candidate)):
            return True
    return False


_known_async = functools.lru_cache(maxsize=256)(_inspect_async)  # the same few callables


def _is_async(fn: Callable[..., Any]) -> bool:
    try:
        return _known_async(fn)
    except TypeError:  # an unhashable callable object: inspect it each time
        return _inspect_async(fn)


def call_with_deadline(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                       timeout_s: float, convert: Convert) -> EntryCall:
    """Call ``fn(*args, **kwargs)`` with every guard of this module; ``convert`` its result."""
    if _is_async(fn):
        return _call_async(fn, args, kwargs, timeout_s, convert)
    return _call_sync(fn, args, kwargs, timeout_s, convert)


def invoke(fn: Callable[..., Any], case_input: object, timeout_s: float) -> EntryCall:
    """Give ``case_input`` to an entry point (a string positionally, a mapping as keywords)."""
    if isinstance(case_input, Mapping):
        return call_with_deadline(fn, (), dict(case_input), timeout_s, output_of)
    return call_with_deadline(fn, (case_input,), {}, timeout_s, output_of)

