"""Entry points that are not Python callables: a process, or an HTTP service (SPEC §3).

Both run a case's input under the case's deadline and return an
:class:`~.calling.EntryCall`, never raising:

* :class:`ProcessEntry` — ``{command: [argv…], cwd?, env?}``. The input goes
  to stdin (a string as is, a mapping as JSON), the output is stdout (UTF-8
  with replacement; parsed as JSON with ``output: json``), a non-zero exit is
  an error carrying the status and the tail of stderr. The process runs in a
  session of its own; at the deadline — or when it exits leaving children
  behind — the whole process group is killed with SIGKILL and reaped within
  a bound. Output is capped: the head and the tail are kept, with the true
  length.
* :class:`HttpEntry` — ``{url, method?, headers?, timeout?}``. The input is
  POSTed as JSON (a string as ``{"input": …}``); a JSON reply is parsed, any
  other is text; a non-2xx status is an error with the status and a body
  excerpt; the body is capped. The request runs on the shared event loop
  (one loop for every concurrent HTTP case), and the deadline covers the
  whole exchange: at it, the request is cancelled.

``${NAME}`` in ``env`` values and header values is read from the operator's
environment at call time; the values never appear in a description, an error
or a report. No pytest import here.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from .calling import EntryCall, ErrorInfo, call_with_deadline

__all__ = ["MAX_OUTPUT_BYTES", "DeadlineEntry", "EntryConfigError", "HttpEntry", "ProcessEntry",
           "expand"]

#: Output kept of a process's stdout, or of an HTTP body, in bytes (head and tail halves).
MAX_OUTPUT_BYTES = 8 * 1024 * 1024
#: stderr kept for an error message (its tail).
_STDERR_TAIL = 2000
#: How long a killed process group, and the pipes of its output, get to go away.
_REAP_S = 5.0
_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


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


def _input_bytes(case_input: object) -> bytes:
    text = case_input if isinstance(case_input, str) else json.dumps(case_input,
                                                                     ensure_ascii=False)
    return text.encode("utf-8")


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


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


class DeadlineEntry:
    """An entry point that enforces the case's deadline itself (not a Python callable)."""

    description = ""

    def __repr__(self) -> str:
        return self.description

    def run(self, case_input: object, timeout_s: float) -> EntryCall:
        raise NotImplementedError


class ProcessEntry(DeadlineEntry):
    """An application run as a command, once per case."""

    def __init__(self, command: list[str], folder: Path, cwd: str | None = None,
                 env: Mapping[str, str] | None = None, output_json: bool = False) -> None:
        self.command = list(command)
        self.cwd = (folder / cwd) if cwd else folder
        self.env = dict(env or {})
        self.output_json = output_json
        self.description = "command " + " ".join(self.command)

    def run(self, case_input: object, timeout_s: float) -> EntryCall:
        try:
            environ = dict(os.environ)
            environ.update({k: expand(v, os.environ, f"env.{k}") for k, v in self.env.items()})
        except EntryConfigError as exc:
            return EntryCall(error=ErrorInfo("EntryConfigError", str(exc)))
        started = time.perf_counter()
        deadline = time.monotonic() + timeout_s
        try:
            process = subprocess.Popen(
                self.command, cwd=self.cwd, env=environ, stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            return EntryCall(error=ErrorInfo("ProcessError", f"cannot start {self.command[0]!r}"
                                                             f" in {self.cwd}: {exc.strerror}"))
        assert process.stdin
        assert process.stdout
        assert process.stderr
        stdout = _CappedReader(process.stdout, MAX_OUTPUT_BYTES)
        stderr = _CappedReader(process.stderr, 64 * 1024)
        feeder = threading.Thread(target=self._feed, args=(process.stdin,
                                                           _input_bytes(case_input)),
                                  daemon=True, name="elizon-stdin")
        feeder.start()
        try:
            status = process.wait(timeout=max(deadline - time.monotonic(), 0))
        except subprocess.TimeoutExpired:
            _finish(process, feeder, stdout, stderr)
            return EntryCall(timed_out=True)
        # The command is done; children it left behind (holding our pipes open) go too.
        stdout.done.wait(min(0.5, max(deadline - time.monotonic(), 0)))
        _finish(process, feeder, stdout, stderr)
        latency = (time.perf_counter() - started) * 1000
        if status != 0:
            why = f"killed by signal {-status}" if status < 0 else f"exit status {status}"
            tail = stderr.text()[-_STDERR_TAIL:].strip()
            return EntryCall(error=ErrorInfo("ProcessExit", f"{why}; stderr: {tail or '(empty)'}"),
                             latency_ms=latency)
        text = stdout.text()
        if not self.output_json:
            return EntryCall(value=text, text=text, latency_ms=latency)
        try:
            value = json.loads(text)
        except ValueError as exc:
            return EntryCall(error=ErrorInfo("OutputError", f"stdout is not JSON ({exc}): "
                                                            f"{text[:200]!r}"),
                             latency_ms=latency)
        return EntryCall(value=value, text=json.dumps(value, ensure_ascii=False),
                         latency_ms=latency)

    @staticmethod
    def _feed(pipe: IO[bytes], data: bytes) -> None:
        with contextlib.suppress(OSError, ValueError):  # a process need not read its input
            pipe.write(data)
        with contextlib.suppress(OSError, ValueError):
            pipe.close()


def _finish(process: subprocess.Popen[bytes], feeder: threading.Thread,
            stdout: _CappedReader, stderr: _CappedReader) -> None:
    """Kill what is left of the process group, reap it, and close our ends of its pipes —
    each within a bound, so nothing a process leaves behind keeps pytest waiting."""
    _kill_group(process)
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


class HttpEntry(DeadlineEntry):
    """An application served over HTTP, called once per case."""

    def __init__(self, url: str, method: str = "POST", headers: Mapping[str, str] | None = None,
                 timeout_s: float | None = None) -> None:
        self.url = url
        self.method = method
        self.headers = dict(headers or {})
        self.timeout_s = timeout_s
        self.description = f"{method} {url}"

    def run(self, case_input: object, timeout_s: float) -> EntryCall:
        limit = min(timeout_s, self.timeout_s or timeout_s)
        # The deadline is enforced here alone, by cancelling the request on the loop, so
        # reaching it is always reported as a timeout, never as an HTTP error.
        call = call_with_deadline(self._exchange, (case_input, limit), {}, limit,
                                  lambda pair: pair)
        if call.timed_out and self.timeout_s is not None and self.timeout_s < timeout_s:
            return EntryCall(error=ErrorInfo("HttpTimeout", f"no answer from {self.url} within "
                                             f"the entry's timeout of {self.timeout_s:g} s"))
        return call

    async def _exchange(self, case_input: object, limit_s: float) -> tuple[Any, str]:
        """On the shared event loop, so the deadline cancels the request itself."""
        import httpx  # deferred: costs import time on every run, needed by few

        body = {"input": case_input} if isinstance(case_input, str) else case_input
        headers = {k: expand(v, os.environ, f"headers.{k}") for k, v in self.headers.items()}
        # httpx's own per-read timeout only backs up the cancellation: it must never fire first.
        try:
            async with httpx.AsyncClient(timeout=limit_s + 5) as client, client.stream(
                    self.method, self.url, json=body, headers=headers) as response:
                raw = bytearray()
                async for chunk in response.aiter_bytes():
                    raw += chunk
                    if len(raw) > MAX_OUTPUT_BYTES:
                        raise HttpError(f"the response body from {self.url} is larger than "
                                        f"{MAX_OUTPUT_BYTES:,} bytes")
        except httpx.HTTPError as exc:
            raise HttpError(f"cannot reach {self.url}: {type(exc).__name__}: {exc}") from None
        text = raw.decode(response.encoding or "utf-8", "replace")
        if not response.is_success:
            raise HttpError(f"HTTP {response.status_code} from {self.url}: {text[:500]!r}")
        if "json" in response.headers.get("content-type", ""):
            try:
                value = json.loads(text)
            except ValueError as exc:
                raise HttpError(f"the JSON reply from {self.url} is malformed ({exc}): "
                                f"{text[:200]!r}") from None
            return value, json.dumps(value, ensure_ascii=False)
        return text, text


class HttpError(Exception):
    """The HTTP exchange failed; the case fails with this message."""
