"""The mock model behind a local HTTP server, so applications and ``output: openai``
packages run unchanged and offline (docs/mock.md#the-server).

:class:`MockServer` listens on a free loopback port and answers OpenAI chat completions,
the OpenAI Responses API and Anthropic's messages API (streamed too) from a
:class:`~.model.MockModel`, recording every request. Standard library only: a
``ThreadingHTTPServer`` on a daemon thread, stopped, its connections cut and its
threads joined by :meth:`MockServer.stop`.
"""

from __future__ import annotations

import contextlib
import http.server
import itertools
import json
import re
import socket
import socketserver
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from . import protocols
from .model import MockModel

__all__ = ["MockServer", "RecordedRequest"]

#: The largest request body read; a bigger one is answered 413 unread.
MAX_BODY_BYTES = 32 * 1024 * 1024
#: A chunk-size line of a chunked body: hex digits (16 at most), any extensions after ``;``.
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,16})[ \t]*(?:;[^\r\n]*)?\r?\n")
#: A Content-Length: decimal digits and nothing else (around it, spaces are stripped).
_CONTENT_LENGTH = re.compile(r"[0-9]{1,20}")
#: Headers that carry credentials: recorded masked, so a key never reaches a test report.
SECRET_HEADERS = ("authorization", "proxy-authorization", "x-api-key", "api-key", "cookie")


def _no_constant(name: str) -> Any:
    """NaN and Infinity are not JSON: a real API answers 400 to a body that holds them, so
    a client that sends them fails here as it would there."""
    raise ValueError(f"{name} is not a JSON number")


class _Unreadable(Exception):
    """A request body that cannot be read: its status, and why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _masked(name: str, value: str) -> str:
    if name not in SECRET_HEADERS:
        return value
    scheme, _, credential = value.partition(" ")
    return f"{scheme} ***" if credential and name.endswith("authorization") else "***"


@dataclass(frozen=True)
class RecordedRequest:
    """One HTTP request the server received, as it arrived: the method, the path (with its
    query), the headers (names in lower case, credentials masked as ``***``), the body
    parsed as JSON (None when it is not JSON) and the API of the path (None: unknown)."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: Any
    api: str | None


class _HttpServer(http.server.ThreadingHTTPServer):
    """A threading HTTP server that knows its open connections, so stopping can cut them."""

    daemon_threads = True  # a stuck client never keeps the interpreter alive...
    block_on_close = True  # ...yet server_close() joins every request's thread

    def __init__(self, owner: MockServer) -> None:
        self.owner = owner
        self.open: set[socket.socket] = set()
        self.open_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def server_bind(self) -> None:
        # HTTPServer's own asks the resolver for the host's name: a DNS lookup at start-up
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = "127.0.0.1", self.server_address[1]

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.open_lock:
            self.open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.open_lock:
            self.open.discard(request)
        super().shutdown_request(request)

    def cut_connections(self) -> None:
        """End every exchange under way: a client that stopped reading, or never sent its
        body, cannot then hold ``server_close()``'s join."""
        with self.open_lock:
            connections = list(self.open)
        for connection in connections:
            with contextlib.suppress(OSError):  # already closed by its own thread
                connection.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Not printed to the user's terminal as socketserver does: a client that went away
        # is no error; anything else is kept for the test (MockServer.errors).
        error = sys.exc_info()[1]
        if error is not None and not isinstance(error, OSError):
            self.owner.errors.append(error)


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _HttpServer
    # One request per connection: a client's kept-alive connection would otherwise hold a
    # thread (and the join at stop) until the client closed it.
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the user's terminal gets no access log

    def do_POST(self) -> None:
        self.server.owner._exchange(self)

    do_GET = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_POST


class MockServer:
    """A :class:`~.model.MockModel` behind OpenAI's and Anthropic's HTTP APIs on
    ``127.0.0.1`` and a free port (docs/mock.md#the-server).

    Start it with :meth:`start` or ``with``; give OpenAI clients :attr:`url` and Anthropic
    clients :attr:`anthropic_url`. :attr:`requests` holds every request received,
    :attr:`model` the calls it answered. What went wrong while answering (``on_request``
    raised, the script ran out) is answered 500 and kept in :attr:`errors`; leaving the
    ``with`` block (and the ``elizon_mock_server`` fixture) raises it.
    """

    def __init__(self, model: MockModel | None = None) -> None:
        if model is not None and not isinstance(model, MockModel):
            raise TypeError(f"model must be a MockModel, not {type(model).__name__}")
        #: The model that answers; its ``calls`` are the requests it answered.
        self.model = model if model is not None else MockModel()
        #: The exceptions the model raised while answering, in order.
        self.errors: list[BaseException] = []
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()  # wakes the answers waiting out their delay
        self._ids = itertools.count(1)
        self._http: _HttpServer | None = None
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        where = f"at {self.root_url}" if self._http is not None else "not running"
        return f"MockServer({where}, {len(self.requests)} requests)"

    # -- life ------------------------------------------------------------------------------

    def start(self) -> MockServer:
        """Listen on a free loopback port and answer on a daemon thread; returns itself."""
        if self._http is not None or self._stopping.is_set():
            raise RuntimeError("a MockServer starts once; make another for a new run")
        self._http = _HttpServer(self)
        self._thread = threading.Thread(target=self._http.serve_forever, args=(0.05,),
                                        name=f"elizon-mock-server:{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop answering, cut the exchanges under way, close the socket and join every
        thread. Stopping twice, or a server never started, is no error."""
        self._stopping.set()
        http, thread = self._http, self._thread
        if http is None or thread is None:
            return
        http.shutdown()  # the accept loop ends: no new exchange starts
        http.cut_connections()
        http.server_close()  # the listening socket closes; each exchange's thread is joined
        thread.join()

    def raise_errors(self) -> None:
        """Raise what went wrong while answering, if anything did: an ``AssertionError``
        naming how many requests could not be answered, from the first error."""
        if self.errors:
            first = self.errors[0]
            raise AssertionError(
                f"the mock server could not answer {len(self.errors)} request(s); the first: "
                f"{type(first).__name__}: {first}") from first

    def __enter__(self) -> MockServer:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()
        if kind is None:
            self.raise_errors()

    # -- what tests read -------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._http is None:
            raise RuntimeError("the mock server is not started: call start(), or use it in "
                               "a with block")
        return int(self._http.server_port)

    @property
    def root_url(self) -> str:
        """``http://127.0.0.1:PORT``, no path."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The base URL OpenAI clients take: ``http://127.0.0.1:PORT/v1``."""
        return f"{self.root_url}/v1"

    @property
    def anthropic_url(self) -> str:
        """The base URL Anthropic clients take (they add ``/v1/messages``)."""
        return self.root_url

    @property
    def requests(self) -> tuple[RecordedRequest, ...]:
        """Every request received, in the order they arrived, bad ones too."""
        with self._lock:
            return tuple(self._requests)

    # -- one exchange (on the request's own thread) ----------------------------------------

    def _exchange(self, handler: _Handler) -> None:
        path = urlsplit(handler.path).path.rstrip("/")
        api = protocols.ENDPOINTS.get(path)
        headers = {k.lower(): v for k, v in handler.headers.items()}
        kind = protocols.family(api, path, headers)
        problem = None
        try:
            raw = self._body(handler, headers)
        except _Unreadable as exc:
            raw, problem = b"", exc
        body, parsed = None, False
        with contextlib.suppress(ValueError, RecursionError):  # recorded as None, answered 400
            body, parsed = json.loads(raw, parse_constant=_no_constant), True
        with self._lock:
            self._requests.append(RecordedRequest(
                handler.command, handler.path, {k: _masked(k, v) for k, v in headers.items()},
                body, api))
        if api is None:
            endpoints = ", ".join(f"POST {p}" for p in protocols.ENDPOINTS)
            return self._error(handler, kind, 404, f"Invalid URL ({handler.command} "
                               f"{handler.path}): the mock server answers {endpoints}")
        if handler.command != "POST":
            return self._error(handler, kind, 405, f"{handler.command} is not allowed on "
                                                   f"{path}; send POST")
        if problem is not None:
            return self._error(handler, kind, problem.status, str(problem))
        if not parsed:
            return self._error(handler, kind, 400, "the request body is not JSON: "
                               f"{raw[:80].decode('utf-8', 'replace')!r}")
        try:
            request = protocols.request_of(api, body)
        except protocols.BadRequest as exc:
            return self._error(handler, kind, 400, str(exc))
        except Exception as exc:  # a shape no check foresaw: answered all the same, and kept
            self.errors.append(exc)
            return self._error(handler, kind, 500, f"the mock server could not read the "
                                                   f"request: {type(exc).__name__}: {exc}")
        try:
            response = self.model.answer(request)
        except Exception as exc:
            # answered, so the application under test sees a failing model, and kept, so
            # the test fails even if the application swallows that
            self.errors.append(exc)
            return self._error(handler, kind, 500, f"the mock model could not answer: "
                                                   f"{type(exc).__name__}: {exc}")
        if response.delay and self._stopping.wait(response.delay):
            return  # the server is stopping: no answer is owed
        answered = protocols.reply(api, request, response, next(self._ids), int(time.time()))
        if isinstance(answered, dict):
            self._send(handler, 200, answered)
        else:
            self._stream(handler, answered)

    @staticmethod
    def _body(handler: _Handler, headers: Mapping[str, str]) -> bytes:
        """The request body (b"" when there is none); :class:`_Unreadable` when it is too
        large to read or its length is not a number: a chunk size is 1 to 16 hex digits
        (and any ``;`` extensions), a Content-Length decimal digits — never a sign, a
        ``0x`` or an underscore ``int()`` would take, so ``-1`` cannot read to the end."""
        too_large = _Unreadable(413, f"the request body is over {MAX_BODY_BYTES} bytes")
        unreadable = _Unreadable(400, "the request body's length cannot be read")
        if "chunked" in headers.get("transfer-encoding", "").lower():
            parts: list[bytes] = []
            size = 0
            while True:
                line = _CHUNK_SIZE.fullmatch(handler.rfile.readline(1024))
                if line is None:
                    raise unreadable
                length = int(line.group(1), 16)
                if length == 0:
                    while handler.rfile.readline(1024).strip():
                        pass  # trailers: read past, ignored
                    return b"".join(parts)
                size += length
                if size > MAX_BODY_BYTES:
                    raise too_large
                parts.append(handler.rfile.read(length))
                handler.rfile.readline(8)
        given = (headers.get("content-length") or "0").strip()
        if not _CONTENT_LENGTH.fullmatch(given):
            raise unreadable
        length = int(given)
        if length > MAX_BODY_BYTES:
            raise too_large
        return handler.rfile.read(length) if length > 0 else b""

    @staticmethod
    def _send(handler: _Handler, status: int, data: object,
              extra: Mapping[str, str] | None = None) -> None:
        payload = json.dumps(data, ensure_ascii=False).encode("utf-8")
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        for name, value in (extra or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        if handler.command != "HEAD":
            handler.wfile.write(payload)

    def _error(self, handler: _Handler, kind: str, status: int, message: str) -> None:
        # The SDKs retry a 500 twice by default: told not to, a failing mock answers once
        # and the model's calls count the requests the application made.
        extra = {"x-should-retry": "false"} if status >= 500 else None
        self._send(handler, status, protocols.error_body(kind, status, message), extra)

    @staticmethod
    def _stream(handler: _Handler, events: Iterator[bytes]) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream; charset=utf-8")
        handler.send_header("Cache-Control", "no-cache")
        handler.end_headers()
        for event in events:  # HTTP/1.0: the stream ends when the connection closes
            handler.wfile.write(event)
            handler.wfile.flush()
