"""What an entry point is: the one protocol, its three kinds, and how one is built.

An :class:`Entry` has one method, ``run(input, *, deadline) -> EntryCall``,
that never raises: every way a call can go (an answer, an error, the
deadline) comes back as an :class:`~.calls.EntryCall`. Callers never ask
which kind they hold. The kinds (docs/contract.md#binding):

* :class:`CallableEntry` — a Python callable, sync or async; a string input
  is passed positionally, a mapping as keywords (or whole, as the one
  positional argument, when its keys cannot all be keywords).
* :class:`ProcessEntry` — ``{command: [argv…], cwd?, env?, output?}``. The
  input goes to stdin (a string as is, a mapping as JSON), the output is
  stdout (UTF-8 with replacement; parsed as JSON with ``output: json``), a
  non-zero exit is an error carrying the status and the tail of stderr.
  The deadline covers the whole output, not just the process's exit; at
  the deadline, or when the command exits, everything it started is killed
  (its process group, and any process still holding its output pipes, even
  in a session of its own). Output is capped: head and tail are kept, with
  the true length.
* :class:`HttpEntry` — ``{url, method?, headers?, timeout?, output?}``. The
  input is sent as JSON (a string as ``{"input": …}``) over connections kept
  for the session; a JSON reply is parsed, any other is text; a non-2xx
  status is an error with the status and a body excerpt. The exchange runs
  on the shared event loop and is cancelled at the deadline; latency is the
  exchange alone.

``${NAME}`` in ``env`` and header values is read from the operator's
environment at call time; the values never appear in a description, an
error or a report. A command inherits the environment but for the plugin's
own secrets (:data:`WITHHELD_VARIABLES`); a URL is described without its user
name and password. :func:`entry_from` builds an entry from what a binding
source gave. No pytest import here.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import json
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import IO, Any, Literal, Protocol

from ..load.runtime import CommandEntry, UrlEntry
from ..run.answers import answer_of, chat_request, conversation, from_reply, parse_json
from ..run.calls import EntryCall, ErrorInfo, OutputError
from ..run.chat_body import build, load_tools
from ..run.retrying import (
    RETRY_STATUSES,
    Refusal,
    Tally,
    attempts,
    gave_up,
    policy,
    wait_from_headers,
)
from ..text import without_userinfo
from .calling import call_with_deadline, is_async, run_blocking
from .http_client import (
    HttpClient,
    HttpError,
    HttpReply,
    PastDeadline,
    excerpt,
    json_body,
    limit_key_of,
)

__all__ = ["MAX_OUTPUT_BYTES", "WITHHELD_VARIABLES", "CallableEntry", "Entry",
           "EntryConfigError", "HttpEntry", "ProcessEntry", "entry_from", "expand"]

#: Output kept of a process's stdout, or of an HTTP body, in bytes (head and tail halves).
MAX_OUTPUT_BYTES = 8 * 1024 * 1024
#: stderr kept for an error message (its tail).
_STDERR_TAIL = 2000
#: How long a command's leftovers get to close its output after it exits.
_EXIT_GRACE_S = 0.5
#: How long a killed process, and the pipes of its output, get to go away.
_REAP_S = 5.0
_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: The plugin's own secrets, never passed on to a command entry's process (the application
#: under test has no use for them, and could leak them in its answer or its logs): the
#: attestation's shared secret and the results' signing key. An entry's own ``env:`` may
#: still name one explicitly.
WITHHELD_VARIABLES = frozenset({"ELIZON_ATTESTATION_SECRET", "ELIZON_SIGN_KEY"})


class Entry(Protocol):
    """An entry point: what a case's input is given to."""

    #: What it is, for reports (never a secret).
    description: str
    #: What adaptive concurrency adapts per: entries with one key share one limit
    #: (docs/contract.md#concurrency).
    limit_key: str

    def run(self, case_input: object, *, deadline: float,
            messages: list[dict[str, Any]] | None = None) -> EntryCall:
        """Give ``case_input`` to the application; answer by ``deadline``
        (``time.monotonic()``) or report a timeout. Never raises. In a conversation,
        ``messages`` is the conversation so far, ending with this turn's user message."""
        ...

    def close(self) -> None:
        """Release what the entry keeps for the session (connections)."""
        ...


class EntryConfigError(Exception):
    """The entry cannot be called as configured (e.g. a variable it names is not set)."""


def expand(value: str, environ: Mapping[str, str], where: str) -> str:
    """``value`` with each ``${NAME}`` replaced from ``environ``."""
    def lookup(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in environ:
            raise EntryConfigError(f"the environment variable {name} (named in {where}) "
                                   "is not set")
        return environ[name]
    return _REFERENCE.sub(lookup, value)


# -- a Python callable ---------------------------------------------------------------------

class CallableEntry:
    """A Python callable, sync or async."""

    def __init__(self, fn: Callable[..., Any], description: str) -> None:
        self.fn = fn
        self.description = description
        #: Adaptive concurrency adapts per entry point.
        self.limit_key = description
        self._signature = _signature_of(fn)
        self._takes_messages = _takes_messages(self._signature)
        #: A sync callable: called in a thread (an async one runs on the event loop).
        self.sync = not is_async(fn)
        #: How an input's keys are passed, by its keys (binding them is the same each time).
        self._passing: _Choices = {}
        #: A variant's params it is given as keyword arguments (:meth:`with_params`).
        self.params: dict[str, Any] = {}

    def __repr__(self) -> str:
        return self.description

    def with_params(self, params: Mapping[str, Any], variant: str) -> CallableEntry:
        """This entry point, given a variant's ``params`` as keyword arguments: those its
        signature takes (by name, or ``**kwargs``); it reads the rest, if it wants them,
        from the ``elizon_variant`` fixture (docs/format.md#variants)."""
        made = CallableEntry(self.fn, f"{self.description} (variant {variant})")
        made.limit_key = self.limit_key  # one application: one concurrency limit
        signature = self._signature
        if signature is not None:
            anything = any(p.kind is inspect.Parameter.VAR_KEYWORD
                           for p in signature.parameters.values())
            taken = {name for name, p in signature.parameters.items()
                     if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                   inspect.Parameter.KEYWORD_ONLY)}
            made.params = {k: v for k, v in params.items() if anything or k in taken}
        return made

    def run(self, case_input: object, *, deadline: float,
            messages: list[dict[str, Any]] | None = None) -> EntryCall:
        extra = {"messages": messages} if messages is not None and self._takes_messages \
            else {}
        if self.params:
            extra = {**self.params, **extra}
        args, kwargs = _arguments(self._signature, case_input, extra, self._passing)
        if self.params and not args and isinstance(case_input, Mapping):
            # a case's input key and a variant's param, both keywords: neither may
            # silently replace the other (docs/format.md#variants)
            clash = sorted(str(key) for key in case_input if key in self.params)
            if clash:
                return EntryCall(error=ErrorInfo("EntryConfigError", (
                    f"the case's input {clash[0]!r} is also a param of its variant "
                    f"({self.description}): both are keyword arguments of the entry point, "
                    "and neither may replace the other; rename one")))
        tally = Tally()
        call = attempts(lambda: call_with_deadline(self.fn, args, kwargs, deadline,
                                                   answer_of, self.description),
                             _refused, deadline=deadline, tally=tally, key=self.limit_key)
        return retried(_unclassified(call), tally)

    def close(self) -> None:
        pass


def _refused(call: EntryCall) -> Refusal | None:
    """A Python entry point's refusal: it raised RateLimited, a model SDK's rate-limit or
    overload error, or an elizon_retry_on class (docs/contract.md#retries)."""
    if call.error is not None and call.error.retryable:
        return Refusal(call.error.retry_after, call.error.rate_limited)
    return None


def _unclassified(call: EntryCall) -> EntryCall:
    """``call``, whose error was not retried, with why a name in ini ``elizon_retry_on`` could
    not be checked for it, when one is no exception class: found only when the first error
    needed the classes imported (docs/contract.md#retries), it is said on every error it
    may have left unretried."""
    error = call.error
    problem = policy().classes.problem if error is not None and not error.retryable else None
    if error is None or problem is None:
        return call
    return replace(call, error=replace(error, message=f"{error.message} (not retried: "
                                                      f"{problem})"))


def retried(call: EntryCall, tally: Tally) -> EntryCall:
    """``call`` with what its retries cost; a refusal that stands says how many attempts
    were made and why no more followed."""
    if tally.attempts <= 1 and not tally.rate_limited:
        return call
    error = call.error
    if error is not None:
        error = replace(error, message=error.message + gave_up(tally))
    return replace(call, error=error, attempts=max(tally.attempts, 1),
                   waited_s=tally.waited_s, rate_limited=tally.rate_limited)


def _signature_of(fn: Callable[..., Any]) -> inspect.Signature | None:
    """``fn``'s signature; None when Python cannot read one (some built-ins)."""
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def _takes_messages(signature: inspect.Signature | None) -> bool:
    """Whether the callable accepts ``messages=`` (a parameter of that name, or
    ``**kwargs``)."""
    return signature is not None and any(
        p.name == "messages" or p.kind is inspect.Parameter.VAR_KEYWORD
        for p in signature.parameters.values())


#: How a mapping input is passed: as keywords, or whole as the one positional argument.
_Passing = Literal["keywords", "whole"]
#: The choice made for each set of keys: (the input's keys, the extra arguments' names).
_Choices = dict[tuple[tuple[object, ...], tuple[str, ...]], _Passing]


def _arguments(signature: inspect.Signature | None, case_input: object,
               extra: dict[str, Any], known: _Choices | None = None
               ) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """How a callable is given an input (docs/contract.md#passing-input): a string as its
    one positional argument; a mapping as keywords, unless its keys cannot all be bound
    as keywords (a key it has no parameter for, or a required parameter left unfilled)
    while the whole mapping can be its one positional argument — ``run(input: dict)``,
    LangChain's ``invoke(input, config=None, **kwargs)``. When neither fits, keywords: the
    call's TypeError then names the key. ``known`` keeps the choice by the keys given (it
    depends on nothing else)."""
    if not isinstance(case_input, Mapping):
        return (case_input,), extra
    named = {**case_input, **extra}
    if signature is None:
        return (), named
    keys = (tuple(case_input), tuple(extra))
    passing = known.get(keys) if known is not None else None
    if passing is None:
        passing = _passing(signature, case_input, extra, named)
        if known is not None:
            known[keys] = passing
    return ((dict(case_input),), extra) if passing == "whole" else ((), named)


def _passing(signature: inspect.Signature, case_input: Mapping[Any, Any],
             extra: dict[str, Any], named: dict[Any, Any]) -> _Passing:
    try:
        signature.bind(**named)
    except TypeError:
        try:  # a copy, as keywords are: the case keeps its input
            signature.bind(dict(case_input), **extra)
        except TypeError:
            return "keywords"
        return "whole"
    return "keywords"


def _request(case_input: object, messages: list[dict[str, Any]] | None, mode: str,
             model: str | None = None) -> object:
    """What a command or a service is sent: the input as it is (a string, or a mapping),
    ``{"input": …, "messages": […]}`` in a conversation, or a chat-completions request
    body for ``output: openai``."""
    if mode == "openai":
        return chat_request(messages or conversation([], case_input), model)
    if messages is not None:
        return {"input": case_input, "messages": messages}
    return case_input


def _read(text: str, mode: str, latency_ms: float, *, json_reply: bool = False) -> EntryCall:
    try:
        call = from_reply(text, mode, json_reply=json_reply)
    except OutputError as exc:
        return EntryCall(error=ErrorInfo("OutputError", str(exc)), latency_ms=latency_ms)
    return replace(call, latency_ms=latency_ms)


# -- a command -----------------------------------------------------------------------------

def _input_bytes(request: object) -> bytes:
    text = request if isinstance(request, str) else json.dumps(request, ensure_ascii=False)
    return text.encode("utf-8", "surrogatepass")


class _CappedReader:
    """Reads a pipe to its end in a daemon thread, keeping the head and tail."""

    def __init__(self, pipe: IO[bytes], limit: int) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self._half = limit // 2
        self.done = threading.Event()
        threading.Thread(target=self._read, args=(pipe,), daemon=True,
                         name="elizon-pipe").start()

    def _read(self, pipe: IO[bytes]) -> None:
        try:
            while chunk := pipe.read1(65536):  # type: ignore[attr-defined]
                self.total += len(chunk)
                room = self._half - len(self.head)
                if room > 0:
                    self.head += chunk[:room]
                    chunk = chunk[room:]
                if chunk:
                    self.tail += chunk
                    if len(self.tail) > self._half:
                        del self.tail[:len(self.tail) - self._half]
        except (OSError, ValueError):
            pass
        finally:
            self.done.set()

    def text(self) -> str:
        kept = len(self.head) + len(self.tail)
        head = self.head.decode("utf-8", "replace")
        if kept >= self.total:
            return (self.head + self.tail).decode("utf-8", "replace")
        tail = self.tail.decode("utf-8", "replace")
        return f"{head}\n… [{self.total - kept:,} bytes left out of {self.total:,}] …\n{tail}"


def _pipe_holders(pipes: list[IO[bytes]]) -> set[int]:
    """Processes (other than this one) that hold one of ``pipes`` open (Linux ``/proc``):
    what a command started, even in a session of its own, while it can still write."""
    try:
        wanted = {f"pipe:[{os.fstat(p.fileno()).st_ino}]" for p in pipes}
        entries = os.listdir("/proc")
    except (OSError, ValueError):
        return set()
    holders: set[int] = set()
    me = os.getpid()
    for name in entries:
        if not name.isdigit() or int(name) == me:
            continue
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{name}/fd"):
                with contextlib.suppress(OSError):
                    if os.readlink(f"/proc/{name}/fd/{fd}") in wanted:
                        holders.add(int(name))
                        break
    return holders


def _kill_everything(process: subprocess.Popen[bytes],
                     outputs: list[tuple[IO[bytes], _CappedReader]]) -> None:
    """SIGKILL the command's process group, and every process still holding one of its
    output pipes open (only looked for while a pipe is open: once a reader saw the end,
    no process can write to it any more)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    still_open = [pipe for pipe, reader in outputs if not reader.done.is_set()]
    for pid in _pipe_holders(still_open) if still_open else ():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


class ProcessEntry:
    """An application run as a command, once per case."""

    @staticmethod
    def describe(spec: CommandEntry) -> str:
        """What an entry of ``spec`` is called in reports (its environment never shows)."""
        return "command " + " ".join(spec.command)

    def __init__(self, spec: CommandEntry, folder: Path, output: str = "text") -> None:
        self.command = list(spec.command)
        self.cwd = (folder / spec.cwd) if spec.cwd else folder
        self.env = dict(spec.env or {})
        self.output = spec.output or output
        self.description = self.describe(spec)
        #: Adaptive concurrency adapts per entry point.
        self.limit_key = self.description
        #: A variant's name and params, as ``ELIZON_VARIANT`` and ``ELIZON_VARIANT_PARAMS``
        #: (JSON) in the command's environment (docs/format.md#variants).
        self.variant_env: dict[str, str] = {}

    def __repr__(self) -> str:
        return self.description

    def close(self) -> None:
        pass

    def with_variant(self, variant: str, params: Mapping[str, Any]) -> ProcessEntry:
        made = copy.copy(self)
        made.description = f"{self.description} (variant {variant})"
        made.variant_env = {"ELIZON_VARIANT": variant,
                            "ELIZON_VARIANT_PARAMS": json.dumps(dict(params), allow_nan=False)}
        return made

    def run(self, case_input: object, *, deadline: float,
            messages: list[dict[str, Any]] | None = None) -> EntryCall:
        try:
            environ = {k: v for k, v in os.environ.items() if k not in WITHHELD_VARIABLES}
            environ.update({k: expand(v, os.environ, f"env.{k}") for k, v in self.env.items()})
            environ.update(self.variant_env)
        except EntryConfigError as exc:
            return EntryCall(error=ErrorInfo("EntryConfigError", str(exc)))
        started = time.perf_counter()
        try:
            process = subprocess.Popen(
                self.command, cwd=self.cwd, env=environ, stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else str(exc)
            return EntryCall(error=ErrorInfo("ProcessError", f"cannot start {self.command[0]!r}"
                                                             f" in {self.cwd}: {reason}"))
        assert process.stdin
        assert process.stdout
        assert process.stderr
        stdout = _CappedReader(process.stdout, MAX_OUTPUT_BYTES)
        stderr = _CappedReader(process.stderr, 64 * 1024)
        outputs = [(process.stdout, stdout), (process.stderr, stderr)]
        request = _request(case_input, messages, self.output)
        feeder = threading.Thread(target=self._feed, args=(process.stdin,
                                                           _input_bytes(request)),
                                  daemon=True, name="elizon-stdin")
        feeder.start()
        try:
            try:
                status = process.wait(timeout=max(deadline - time.monotonic(), 0))
            except subprocess.TimeoutExpired:
                return EntryCall(timed_out=True)
            # Done; what it left behind gets a moment to close the output, then goes too.
            stdout.done.wait(min(_EXIT_GRACE_S, max(deadline - time.monotonic(), 0)))
            _kill_everything(process, outputs)
            # The answer is the whole output: it must be complete by the deadline.
            if not (stdout.done.wait(max(deadline - time.monotonic(), 0))
                    and stderr.done.wait(max(deadline - time.monotonic(), 0))):
                return EntryCall(timed_out=True)
            latency = (time.perf_counter() - started) * 1000
        finally:
            _finish(process, outputs, feeder, stdout, stderr)
        if status != 0:
            why = f"killed by signal {-status}" if status < 0 else f"exit status {status}"
            tail = stderr.text()[-_STDERR_TAIL:].strip()
            return EntryCall(error=ErrorInfo("ProcessExit", f"{why}; stderr: {tail or '(empty)'}"),
                             latency_ms=latency)
        text = stdout.text()
        if self.output == "json":
            try:
                value = parse_json(text, "stdout")
            except OutputError as exc:
                return EntryCall(error=ErrorInfo("OutputError", str(exc)), latency_ms=latency)
            except ValueError as exc:
                return EntryCall(error=ErrorInfo("OutputError", f"stdout is not JSON ({exc}): "
                                                                f"{excerpt(text)}"),
                                 latency_ms=latency)
            return EntryCall(value=value, text=json.dumps(value, ensure_ascii=False),
                             latency_ms=latency)
        return _read(text, self.output, latency)

    @staticmethod
    def _feed(pipe: IO[bytes], data: bytes) -> None:
        with contextlib.suppress(OSError, ValueError):  # a process need not read its input
            pipe.write(data)
        with contextlib.suppress(OSError, ValueError):
            pipe.close()


def _finish(process: subprocess.Popen[bytes], outputs: list[tuple[IO[bytes], _CappedReader]],
            feeder: threading.Thread,
            stdout: _CappedReader, stderr: _CappedReader) -> None:
    """Kill whatever is left of the command, reap it, and close our ends of its pipes —
    each within a bound, so nothing a process leaves behind keeps pytest waiting."""
    _kill_everything(process, outputs)
    # An unkillable process (stuck in the kernel) is abandoned, never waited on again.
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=_REAP_S)
    feeder.join(_REAP_S)
    for reader in (stdout, stderr):
        reader.done.wait(_REAP_S)
    # A pipe is closed only once its thread is done with it.
    for pipe, idle in ((process.stdin, not feeder.is_alive()),
                       (process.stdout, stdout.done.is_set()),
                       (process.stderr, stderr.done.is_set())):
        if pipe is not None and idle:
            with contextlib.suppress(OSError):
                pipe.close()


# -- an HTTP service -----------------------------------------------------------------------

class HttpEntry:
    """An application served over HTTP, called once per case over kept connections."""

    @staticmethod
    def describe(spec: UrlEntry) -> str:
        """What an entry of ``spec`` is called in reports (its headers never show, nor the
        URL's user name and password: ``POST https://***@api.example/x``)."""
        return f"{spec.method} {without_userinfo(spec.url)}"

    def __init__(self, spec: UrlEntry, output: str | None = None,
                 folder: Path | None = None) -> None:
        self.url = spec.url
        self.method = spec.method
        self.headers = dict(spec.headers or {})
        self.timeout_s = spec.timeout
        #: ``json``: every reply is parsed as JSON; ``text``: by its content type.
        self.output = spec.output or output or "text"
        self.model = spec.model
        self.system = spec.system
        self.body = spec.body
        self.tools: list[Any] | None = None
        asked = [k for k in ("system", "tools", "body") if getattr(spec, k) is not None]
        if asked and self.output != "openai":
            raise ValueError(f"{', '.join(asked)} shape a chat-completions request and need "
                             f"output: openai (this entry's output is {self.output})")
        if isinstance(spec.tools, str):
            self.tools = load_tools((folder or Path.cwd()) / spec.tools)
        elif spec.tools is not None:
            self.tools = list(spec.tools)
        self.description = self.describe(spec)
        #: The URL as messages name it (no user name or password).
        self.shown_url = without_userinfo(self.url)
        #: Adaptive concurrency adapts per host (docs/contract.md#concurrency).
        self.limit_key = limit_key_of(self.url)
        self._client = HttpClient()

    def __repr__(self) -> str:
        return self.description

    def close(self) -> None:
        self._client.close()

    def run(self, case_input: object, *, deadline: float,
            messages: list[dict[str, Any]] | None = None) -> EntryCall:
        own = self.timeout_s is not None and time.monotonic() + self.timeout_s < deadline
        limit = time.monotonic() + self.timeout_s if own and self.timeout_s else deadline
        # Reaching the deadline is the only way the exchange ends early, so it is always a
        # timeout, never an HTTP error.
        if self.output == "openai":
            request: object = build(messages or conversation([], case_input), case_input,
                                    model=self.model, system=self.system, tools=self.tools,
                                    body=self.body)
        else:
            request = _request(case_input, messages, self.output, self.model)
        tally = Tally()
        try:
            call = run_blocking(lambda: self._exchange(request, limit, tally), limit)
        except PastDeadline:
            call = None
        if call is not None:
            return retried(call, tally)
        if own:
            return retried(EntryCall(error=ErrorInfo(
                "HttpTimeout", f"no answer from {self.shown_url} within the entry's timeout of "
                               f"{self.timeout_s:g} s")), tally)
        return retried(EntryCall(timed_out=True), tally)

    def _exchange(self, request: object, deadline: float, tally: Tally) -> EntryCall:
        try:
            headers = {k: expand(v, os.environ, f"headers.{k}") for k, v in self.headers.items()}
        except EntryConfigError as exc:
            return EntryCall(error=ErrorInfo("EntryConfigError", str(exc)))
        call, _ = attempts(lambda: self._once(request, headers, deadline),
                           lambda outcome: outcome[1], deadline=deadline, tally=tally,
                           key=self.limit_key)
        return call

    def _once(self, request: object, headers: dict[str, str], deadline: float
              ) -> tuple[EntryCall, Refusal | None]:
        """One exchange, and whether it was a refusal worth another attempt."""
        try:
            reply = self._client.exchange(self.method, self.url, json_body(request), headers,
                                          deadline=deadline, limit=MAX_OUTPUT_BYTES)
        except HttpError as exc:
            return EntryCall(error=ErrorInfo("HttpError", str(exc))), \
                Refusal(None, False) if exc.reset else None
        refusal = None
        if reply.status in RETRY_STATUSES:
            refusal = Refusal(wait_from_headers(reply.headers), reply.status == 429)
        return self._read_reply(reply), refusal

    def _read_reply(self, reply: HttpReply) -> EntryCall:
        text = reply.text()
        if not reply.ok:
            return EntryCall(error=ErrorInfo("HttpError", f"HTTP {reply.status} from "
                                                          f"{self.shown_url}: "
                                                          f"{excerpt(text, 500)}"),
                             latency_ms=reply.latency_ms)
        if self.output in ("answer", "openai"):
            return _read(text, self.output, reply.latency_ms)
        if self.output == "json" or "json" in reply.content_type:
            try:
                value = parse_json(text, f"the JSON reply from {self.shown_url}")
            except OutputError as exc:
                return EntryCall(error=ErrorInfo("OutputError", str(exc)),
                                 latency_ms=reply.latency_ms)
            except ValueError as exc:
                return EntryCall(error=ErrorInfo(
                    "HttpError", f"the JSON reply from {self.shown_url} is malformed ({exc}): "
                                 f"{excerpt(text)}"), latency_ms=reply.latency_ms)
            return EntryCall(value=value, text=json.dumps(value, ensure_ascii=False),
                             latency_ms=reply.latency_ms)
        return EntryCall(value=text, text=text, latency_ms=reply.latency_ms)


def for_variant(entry: Entry, variant: str, params: Mapping[str, Any]) -> Entry:
    """``entry`` as a variant runs it, with its ``params`` (docs/format.md#variants);
    ValueError when the entry cannot take them."""
    if isinstance(entry, CallableEntry):
        return entry.with_params(params, variant)
    if isinstance(entry, ProcessEntry):
        return entry.with_variant(variant, params)
    if params:
        raise ValueError(
            f"variant {variant} gives params, which are keyword arguments of a Python entry "
            f"point (or ELIZON_VARIANT_PARAMS of a command); {entry.description} is an HTTP "
            "service: give the variant model and body (an output: openai request's) instead")
    return entry


def entry_from(value: object, description: str, folder: Path, output: str = "text") -> Entry:
    """The entry point for a resolved source value: a callable, or a command or HTTP spec.
    ``output`` is the package's default reading of a command's or service's answer."""
    if isinstance(value, CommandEntry):
        return ProcessEntry(value, folder, output)
    if isinstance(value, UrlEntry):
        return HttpEntry(value, output, folder)
    if callable(value):
        return CallableEntry(value, description)
    raise TypeError(f"not an entry point: {type(value).__name__}")
