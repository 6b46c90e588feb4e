"""HTTP exchanges of the plugin: HTTP entry points and judge endpoints.

One :class:`HttpClient` per bound endpoint per session keeps its connections
(an ``httpx.Client`` per thread that calls it).
:meth:`HttpClient.exchange` sends one JSON request and reads the reply with a
size cap; every transport problem becomes an :class:`HttpError` whose message
says what happened in words ("connection refused by …"). Callers run
exchanges with :func:`~.calling.run_blocking`, which stops waiting at the
deadline; an exchange left behind stops reading at the deadline, and httpx's
own timeout sits behind that as a backstop that never fires first.

Blocking calls in threads rather than ``httpx.AsyncClient`` on the event loop:
measured on loopback, the async client's pool costs about twice the CPU per
request and tops out well below the server's rate at 64 concurrent cases
(``benchmarks/ratelimit.py``). No pytest import here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..text import without_userinfo
from .calling import run_blocking

if TYPE_CHECKING:
    import httpx

__all__ = ["MAX_BODY_BYTES", "HttpClient", "HttpError", "HttpReply", "PastDeadline", "excerpt",
           "json_body", "limit_key_of"]

#: Largest response body read, in bytes.
MAX_BODY_BYTES = 8 * 1024 * 1024
#: Added to httpx's own timeout so that the caller's deadline always comes first.
_BACKSTOP_S = 5.0


class HttpError(Exception):
    """The exchange failed; the message says how, in words. ``reset``: the connection was
    lost mid-exchange (reset, closed without an answer), which is worth another attempt;
    a refused connection is not (nothing listens there)."""

    def __init__(self, message: str, *, reset: bool = False) -> None:
        super().__init__(message)
        self.reset = reset


@dataclass(frozen=True)
class HttpReply:
    status: int
    content_type: str
    body: bytes
    encoding: str
    #: Milliseconds from sending the request to the end of the body.
    latency_ms: float
    #: The reply's headers (names in lower case), read for the wait a refusal asks for.
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def text(self) -> str:
        """The body decoded by its charset; one Python has no text codec for (``rot13``,
        ``base64``) or that cannot replace bad bytes (``idna``) is read as UTF-8."""
        try:
            return self.body.decode(self.encoding, "replace")
        except (LookupError, ValueError):
            return self.body.decode("utf-8", "replace")


def _was_reset(exc: BaseException) -> bool:
    """Whether a transport error is a connection lost mid-exchange (retryable)."""
    import httpx  # deferred: costs import time on every run, needed by URL entries only

    if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)):
        return True
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)):
            return True
        current = current.__cause__ or current.__context__
    return False


def _transport_problem(exc: BaseException, url: str) -> str:
    """A transport error in words; a refused connection says so. ``url`` is as messages
    name it (:func:`~..text.without_userinfo`); the exception's own text is made so too."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError):
            return f"connection refused by {url} (is the service running?)"
        current = current.__cause__ or current.__context__
    text = without_userinfo(str(exc) or type(exc).__name__)
    if "refused" in text.lower():
        return f"connection refused by {url} (is the service running?)"
    return f"cannot reach {url}: {type(exc).__name__}: {text}"


class PastDeadline(Exception):
    """The deadline passed while a reply was still arriving: the caller stops waiting then,
    so reading stops too. Callers count it as a timeout, never as an HTTP error."""


class HttpClient:
    """Connections to one endpoint, reused by every call of the session."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._made: list[httpx.Client] = []
        self._lock = threading.Lock()
        self._closed = False

    def _session(self) -> httpx.Client:
        """This thread's client. One per thread, not one shared: a shared pool checks every
        idle connection on each request, which at 64 concurrent cases costs more than the
        exchange itself (``benchmarks/ratelimit.py``)."""
        client: httpx.Client | None = getattr(self._local, "client", None)
        if client is None:
            if self._closed:  # an exchange abandoned at its deadline, still retrying
                raise HttpError("the session is over: no new connections")
            import httpx  # deferred: costs import time on every run, needed by few

            client = self._local.client = httpx.Client()
            with self._lock:
                self._made.append(client)
        return client

    def exchange(self, method: str, url: str, body: object, headers: Mapping[str, str],
                 *, deadline: float, limit: int = MAX_BODY_BYTES) -> HttpReply:
        """Send ``body`` as JSON and read the whole reply (at most ``limit`` bytes). A 2xx
        body over the limit is an :class:`HttpError`; any other status is returned with the
        first ``limit`` bytes of its body, so that the status decides (a retry, the error)."""
        import httpx  # deferred: costs import time on every run, needed by URL entries only

        where = without_userinfo(url)  # messages never name its user or password
        client = self._session()
        backstop = max(deadline - time.monotonic(), 0) + _BACKSTOP_S
        started = time.perf_counter()
        try:
            with client.stream(method, url, json=body, headers=dict(headers),
                               timeout=backstop) as response:
                raw = bytearray()
                for chunk in response.iter_bytes():
                    raw += chunk
                    if len(raw) > limit:
                        if response.is_success:
                            raise HttpError(f"the response body from {where} is larger than "
                                            f"{limit:,} bytes")
                        del raw[limit:]  # an error's start says enough; the rest is unread
                        break
                    if time.monotonic() >= deadline:
                        raise PastDeadline
        except (httpx.HTTPError, OSError) as exc:
            raise HttpError(_transport_problem(exc, where), reset=_was_reset(exc)) from None
        except (TypeError, ValueError) as exc:  # an input JSON cannot hold, a header not ASCII
            raise HttpError(f"the request to {where} cannot be sent: {type(exc).__name__}: "
                            f"{without_userinfo(str(exc))}") from None
        return HttpReply(status=response.status_code,
                         content_type=response.headers.get("content-type", ""),
                         body=bytes(raw), encoding=response.encoding or "utf-8",
                         latency_ms=(time.perf_counter() - started) * 1000,
                         headers={k.lower(): v for k, v in response.headers.items()})

    def close(self) -> None:
        """Close the kept connections (never waiting long for one a hung exchange holds)."""
        with self._lock:
            made, self._made = self._made, []
            self._closed = True
        self._local = threading.local()

        def close_all() -> None:
            for client in made:
                client.close()

        if made:
            run_blocking(close_all, time.monotonic() + 2.0)


def limit_key_of(url: str) -> str:
    """What adaptive concurrency adapts per for a URL: its scheme, host and port (never its
    user name or password: the key is shown in reports)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


def excerpt(data: bytes | str, limit: int = 200) -> str:
    """The start of a reply, quoted, for an error message."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return repr(text[:limit])


def json_body(case_input: object) -> Any:
    """The request body for an input: a string as ``{"input": …}``, a mapping as is."""
    return {"input": case_input} if isinstance(case_input, str) else case_input
