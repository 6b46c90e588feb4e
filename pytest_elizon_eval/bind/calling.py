"""Run foreign code under a deadline: worker threads and the shared event loop.

Owns the one risky step of a case: calling code we do not control. A sync
callable runs in a daemon worker thread that is abandoned at the deadline
(so a hung call never holds the session or its exit; pytest-timeout's thread
method is the model: nothing is interrupted, no signal handler or trace
function is installed), or as a case's first call under ``--elizon-concurrency``
on the case's slot thread (run/slots.py); a coroutine runs on one shared
background event loop and is cancelled at the deadline. An entry point with
too many calls still running past their deadline gets no more
(run/deadlines.py); while deadlines are suspended (a debugger) a sync call is
made on the calling thread and waited for without limit. Whatever the code
does — raise, ``sys.exit()``, raise ``KeyboardInterrupt``, return garbage,
stream without end — comes back as an :class:`~.calls.EntryCall`, never as an
exception. Streams are read chunk by chunk, at most :data:`MAX_STREAM_CHARS`
characters and never past the deadline. A real Ctrl-C from the user
interrupts the waiting main thread and stops the session as usual. No pytest
import here.
"""

from __future__ import annotations

import concurrent.futures
import functools
import inspect
import os
import queue
import threading
import time
import traceback
from collections.abc import AsyncIterator, Callable, Coroutine, Hashable, Iterator
from typing import Any, ClassVar, TypeVar

from ..run import deadlines, slots
from ..run.calls import EntryCall, ErrorInfo, OutputError
from ..run.retrying import refusal_of
from ..run.sdk_answers import SdkAnswer, SdkShapeError, is_chunk, join_chunks
from ..run.slots import SlotAbandoned, SlotCall

__all__ = ["MAX_STREAM_CHARS", "Convert", "call_with_deadline", "error_info", "is_async",
           "run_blocking", "run_on_loop"]

#: Longest traceback text kept for a report, in lines.
_TRACEBACK_LINES = 40
#: Most characters read from a streamed answer (as process and HTTP outputs are capped).
MAX_STREAM_CHARS = 8 * 1024 * 1024

_T = TypeVar("_T")


def error_info(exc: BaseException) -> ErrorInfo:
    """``exc`` as text, with the traceback of the foreign code (this module's frames left out)."""
    frames = list(traceback.extract_tb(exc.__traceback__))
    own = [i for i, f in enumerate(frames) if f.filename == __file__]
    shown = frames[own[-1] + 1:] if own else frames
    lines = "".join(traceback.format_list(shown)).splitlines()[-_TRACEBACK_LINES:]
    try:
        message = str(exc)
    except Exception:  # a broken __str__: the case still fails with the exception's type
        message = f"<unprintable {type(exc).__name__}>"
    if isinstance(exc, SystemExit):
        message = f"the entry point called sys.exit({exc.code!r})"
    elif isinstance(exc, KeyboardInterrupt):
        message = "the entry point raised KeyboardInterrupt itself"
    refusal = refusal_of(exc)
    return ErrorInfo(type(exc).__name__, message, "\n".join(lines),
                     retryable=refusal is not None,
                     retry_after=refusal.wait_s if refusal is not None else None,
                     rate_limited=refusal is not None and refusal.rate_limited)


class _PastDeadline(Exception):
    """A stream was still going at the deadline: the call timed out."""


class _Stream:
    """Joins streamed chunks — strings, or one SDK's chunks (docs/contract.md#sdk-answers) —
    at most MAX_STREAM_CHARS characters (SDK chunks count one each), never past the
    deadline."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.parts: list[str] = []
        self.chunks: list[object] = []
        self.size = 0

    def add(self, chunk: object) -> None:
        """Keep ``chunk``; :class:`_PastDeadline` once the deadline has passed."""
        if isinstance(chunk, str) and not self.chunks:
            self.size += len(chunk)
            self.parts.append(chunk)
        elif not self.parts and is_chunk(chunk):
            self.size += 1
            self.chunks.append(chunk)
        else:
            raise OutputError(f"the entry point streamed a {type(chunk).__name__} as chunk "
                              f"{len(self.parts) + len(self.chunks)}; stream strings, or "
                              "the chunks of one SDK's stream, not a mix")
        if self.size > MAX_STREAM_CHARS:
            raise OutputError(f"the entry point streamed more than {MAX_STREAM_CHARS:,} "
                              "characters; the stream was closed")
        if deadlines.passed(self.deadline):
            raise _PastDeadline

    def text(self) -> str | SdkAnswer:
        """The joined text, or the SDK answer the chunks make."""
        if not self.chunks:
            return "".join(self.parts)
        try:
            return join_chunks(self.chunks)
        except SdkShapeError as exc:
            raise OutputError(f"the entry point's stream: {exc}") from None


def _read_stream(chunks: Iterator[object], deadline: float) -> str | SdkAnswer:
    stream = _Stream(deadline)
    try:
        for chunk in chunks:
            stream.add(chunk)
    finally:
        close = getattr(chunks, "close", None)
        if callable(close):
            close()  # a generator's cleanup runs now, not whenever it is collected
    return stream.text()


async def _read_async_stream(chunks: AsyncIterator[object], deadline: float
                             ) -> str | SdkAnswer:
    stream = _Stream(deadline)
    try:
        async for chunk in chunks:
            stream.add(chunk)
    finally:
        close = getattr(chunks, "aclose", None)
        if callable(close):
            await close()
    return stream.text()


async def _settle(raw: Any, deadline: float) -> Any:
    """What a coroutine or stream finally gives: awaited, streams joined."""
    while True:
        if hasattr(raw, "__aiter__"):
            return await _read_async_stream(raw, deadline)
        if inspect.isawaitable(raw):
            raw = await raw
            continue
        if isinstance(raw, Iterator):
            return _read_stream(raw, deadline)
        return raw


#: Turns what a callable returned (after streams are joined) into a call that took the
#: latency given (ms).
Convert = Callable[[Any, float], EntryCall]


# -- sync callables: daemon worker threads, a busy one abandoned at the deadline -------------

class _Worker:
    """A daemon thread that runs one call at a time. A worker whose call outlives its
    deadline is simply never handed work again (it rejoins the idle ones if it ever ends),
    so a hung call costs one thread, not the session."""

    _idle: ClassVar[list[_Worker]] = []
    _idle_lock = threading.Lock()

    def __init__(self) -> None:
        self._tasks: queue.SimpleQueue[tuple[Callable[[], None], threading.Event]] = (
            queue.SimpleQueue())
        threading.Thread(target=self._loop, name="elizon-entry", daemon=True).start()

    @classmethod
    def run(cls, task: Callable[[], None], done: threading.Event) -> None:
        """Start ``task`` on an idle worker, or on a new one; ``done`` is set after it."""
        with cls._idle_lock:
            worker = cls._idle.pop() if cls._idle else None
        (worker or cls())._tasks.put((task, done))

    def _loop(self) -> None:
        while True:
            task, done = self._tasks.get()
            try:
                task()
            finally:
                # idle again before the caller wakes: its next call finds this worker
                # instead of starting a thread
                with self._idle_lock:
                    self._idle.append(self)
                done.set()


def run_blocking(work: Callable[[], _T], deadline: float, key: Hashable | None = None
                 ) -> _T | None:
    """Run ``work()`` on a worker thread until ``deadline``; None if it had not finished by
    then (the worker is abandoned, and counted against ``key`` until it returns). What
    ``work`` raises is raised here. While deadlines are suspended it is waited for."""
    box: list[tuple[bool, Any]] = []
    done = threading.Event()
    state = _Abandonment(key)
    pid = os.getpid()

    def task() -> None:
        try:
            box.append((True, work()))
        except BaseException as exc:  # handed to the caller, whatever it is
            box.append((False, exc))
        _end_forked_child(pid)
        state.finished()

    _Worker.run(task, done)
    if not _wait(done, deadline):
        if state.abandon():
            return None  # whatever it gives later is not looked at
        done.wait()  # it finished as it was given up: its answer came in time
    finished, value = box[0]
    if not finished:
        raise value
    return value  # type: ignore[no-any-return]


def _end_forked_child(pid: int) -> None:
    """A child process the call forked came back from it: it must never go on with the
    session (docs/contract.md#at-the-deadline)."""
    if os.getpid() != pid:
        os._exit(0)


def _still_debugging() -> bool:
    """At a deadline: whether deadlines are suspended, or a debugger has been attached
    since the session started (which suspends them from now on)."""
    if deadlines.suspended() is None:
        attached = deadlines.debugger_in_use()
        if attached is not None:
            deadlines.suspend(attached)
    return deadlines.suspended() is not None


def _wait(done: threading.Event, deadline: float) -> bool:
    """Wait for ``done`` until ``deadline``; on, without limit, while deadlines are
    suspended (a debugger entered during the wait counts too)."""
    if done.wait(deadlines.remaining(deadline)):
        return True
    return _still_debugging() and done.wait()


def _stops_the_session(exc: BaseException) -> bool:
    """pytest's own ``Exit`` (quitting pdb with ``q``, ``pytest.exit()``): not the entry
    point's error but the person's wish to stop (told apart by name: no pytest import)."""
    kind = type(exc)
    return kind.__name__ == "Exit" and kind.__module__ == "_pytest.outcomes"


class _Abandonment:
    """Whether a call was given up at its deadline before it finished, decided once under a
    lock: the hung-call count of its entry point goes up then and down when it returns."""

    __slots__ = ("_lock", "abandoned", "ended", "key")

    def __init__(self, key: Hashable | None) -> None:
        self._lock = threading.Lock()
        self.key = key
        self.abandoned = self.ended = False

    def abandon(self) -> bool:
        """Give the call up: False when it had already finished."""
        with self._lock:
            if self.ended:
                return False
            self.abandoned = True
            if self.key is not None:  # counted before finished() can see the flag
                deadlines.hung.add(self.key)
        return True

    def finished(self) -> None:
        with self._lock:
            self.ended = True
            if self.abandoned and self.key is not None:
                deadlines.hung.done(self.key)


def _claim_slot_call() -> SlotCall | None:
    call: SlotCall | None = getattr(slots.on_this_thread, "call", None)
    if call is not None:
        slots.on_this_thread.call = None  # the case's first call only: later ones hand off
    return call


def _call_sync(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
               deadline: float, convert: Convert, slot: SlotCall | None = None,
               name: str | None = None) -> EntryCall:
    direct = slot is None and deadlines.suspended() is not None
    pid = os.getpid()

    def work() -> EntryCall:
        start = time.perf_counter()
        try:
            raw = fn(*args, **kwargs)
            _end_forked_child(pid)
            if inspect.isawaitable(raw) or hasattr(raw, "__aiter__"):
                import asyncio  # deferred: only async entry points need it

                raw = asyncio.run(_settle(raw, deadline))  # a sync wrapper around async code
            elif isinstance(raw, Iterator):
                raw = _read_stream(raw, deadline)
            latency = (time.perf_counter() - start) * 1000
            if deadlines.passed(deadline):
                # an answer that came after the limit is a timeout, however it got here
                return EntryCall(timed_out=True)
            return convert(raw, latency)
        except _PastDeadline:
            return EntryCall(timed_out=True)
        except BaseException as exc:  # graded, whatever it is: SystemExit included
            _end_forked_child(pid)
            if _stops_the_session(exc) or (direct and isinstance(exc, KeyboardInterrupt)):
                raise  # on this thread a Ctrl-C is the person's, not the entry point's
            if deadlines.passed(deadline):  # an error raised after the limit: a timeout too
                return EntryCall(timed_out=True)
            return EntryCall(error=error_info(exc),
                             latency_ms=(time.perf_counter() - start) * 1000)

    if slot is not None and slot.state == SlotCall.TIMED_OUT:
        return EntryCall(timed_out=True)
    key = id(fn)
    refused = _hung_refusal(key, name)
    if refused is not None:
        return refused
    if slot is not None:  # on its slot thread: the scheduler keeps the deadline
        slot.begin(deadline, None if name is None else lambda: deadlines.hung.add(key))
        made = work()
        if not slot.end():
            if name is not None:
                deadlines.hung.done(key)
            raise SlotAbandoned
        return made
    if direct:
        return work()  # on this thread, as a test's code runs, for the person debugging it
    call = run_blocking(work, deadline, key if name is not None else None)
    return call if call is not None else EntryCall(timed_out=True)


def _hung_refusal(key: Hashable, name: str | None) -> EntryCall | None:
    """The call not made, when the callable ``key`` (shown as ``name``; None: not capped)
    has too many calls still running past their deadline."""
    said = None if name is None else deadlines.hung.refusal(key, name)
    return None if said is None else EntryCall(error=ErrorInfo("EntryPointHung", said))


# -- coroutines: one background event loop, cancelled at the deadline -------------------------

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

    def submit(self, coro: Coroutine[Any, Any, _T]) -> concurrent.futures.Future[_T]:
        import asyncio  # deferred: only async entry points need it

        return asyncio.run_coroutine_threadsafe(coro, self.loop)


_loop_lock = threading.Lock()
_loop: _LoopThread | None = None


def _shared_loop() -> _LoopThread:
    global _loop
    with _loop_lock:
        if _loop is None:
            _loop = _LoopThread()
        return _loop


def _retire_loop(stuck: _LoopThread) -> bool:
    """Abandon a loop that code blocked (e.g. time.sleep in a coroutine); the next call gets
    a fresh one, so one bad case cannot time out every later async case. True for the call
    that retired it (others that waited on the same loop did not block it)."""
    global _loop
    with _loop_lock:
        if _loop is stuck:
            _loop = None
            return True
        return False


def run_on_loop(make: Callable[[], Coroutine[Any, Any, _T]], deadline: float,
                key: Hashable | None = None) -> _T | None:
    """Run ``make()`` on the shared loop until ``deadline``; None if it was cancelled there.

    Cancellation at the deadline is the only way such a call ends early, so reaching the
    deadline is always reported as a timeout, never as whatever error the code raises. A
    loop the code blocked is retired, and counted against ``key`` until it runs again."""
    runner = _shared_loop()
    future = runner.submit(make())
    try:
        return future.result(deadlines.remaining(deadline))
    except concurrent.futures.TimeoutError:
        if _still_debugging():  # a debugger was entered meanwhile
            return future.result()
        future.cancel()
        if not runner.responsive(1.0) and _retire_loop(runner) and key is not None:
            deadlines.hung.add(key)
            runner.loop.call_soon_threadsafe(deadlines.hung.done, key)
        return None


async def _guarded(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                   deadline: float, convert: Convert) -> EntryCall:
    start = time.perf_counter()
    try:
        raw = await _settle(fn(*args, **kwargs), deadline)
        latency = (time.perf_counter() - start) * 1000
        if deadlines.passed(deadline):  # it caught its cancellation and answered late
            return EntryCall(timed_out=True)
        return convert(raw, latency)
    except _PastDeadline:
        return EntryCall(timed_out=True)
    except BaseException as exc:
        import asyncio  # already loaded: this runs on the event loop

        if isinstance(exc, asyncio.CancelledError) or _stops_the_session(exc):
            raise
        if deadlines.passed(deadline):  # an error raised after the limit: a timeout too
            return EntryCall(timed_out=True)
        # caught here so asyncio never sees SystemExit/KeyboardInterrupt
        return EntryCall(error=error_info(exc), latency_ms=(time.perf_counter() - start) * 1000)


def _inspect_async(fn: Callable[..., Any]) -> bool:
    # A plain function, functools.partial, or an object with an async __call__.
    own_call = getattr(type(fn), "__call__", None)  # noqa: B004 - the method, not callability
    for candidate in (fn, getattr(fn, "func", None), own_call):
        if candidate is not None and (inspect.iscoroutinefunction(candidate)
                                      or inspect.isasyncgenfunction(candidate)):
            return True
    return False


_known_async = functools.lru_cache(maxsize=256)(_inspect_async)  # the same few callables


def is_async(fn: Callable[..., Any]) -> bool:
    try:
        return _known_async(fn)
    except TypeError:  # an unhashable callable object: inspect it each time
        return _inspect_async(fn)


def call_with_deadline(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                       deadline: float, convert: Convert, name: str | None = None) -> EntryCall:
    """Call ``fn(*args, **kwargs)`` until ``deadline`` (``time.monotonic()``), with every guard
    of this module; ``convert`` its result. With ``name`` (how reports name the entry
    point), the calls of ``fn`` still running past their deadline are counted and capped."""
    slot = _claim_slot_call()
    if is_async(fn):
        key = id(fn)
        refused = _hung_refusal(key, name)
        if refused is not None:
            return refused
        call = run_on_loop(lambda: _guarded(fn, args, kwargs, deadline, convert), deadline,
                           key if name is not None else None)
        return call if call is not None else EntryCall(timed_out=True)
    return _call_sync(fn, args, kwargs, deadline, convert, slot, name)
