"""Retrying a refused call inside the case's time limit (docs/contract.md#retries).

Owns what counts as a retryable refusal, how long to wait before the next
attempt, and the loop that retries within a deadline:

* HTTP: ``429``, ``502``, ``503``, ``504`` and connection resets; every other
  status fails at once. The wait the server asks for is read from
  ``retry-after-ms``, ``Retry-After`` (seconds or an HTTP date) or the
  ``x-ratelimit-reset-*`` headers of OpenAI-compatible servers.
* Python: :class:`RateLimited` (``retry_after=`` seconds); the rate-limit and
  overload errors of the model SDKs (OpenAI, Anthropic, LiteLLM, LangChain),
  recognised by the module and name of the classes of the exception's MRO, so
  no SDK is ever imported for it (:func:`sdk_refusal`); and the exception
  classes named by ini ``elizon_retry_on``, read for a ``retry_after``
  attribute or a ``response.headers`` mapping. Those classes are imported when
  an error first needs classifying (:class:`RetryClasses`), never at start-up:
  an SDK can take seconds to import, and ``--collect-only`` classifies nothing.

Without a hint, the wait is exponential backoff with full jitter (the
OpenAI SDK's policy, STYLE.md "Retries"): uniform in ``[0, min(cap, base ·
2^n)]``. A wait is never allowed to run past the deadline: a hint that
does not fit ends the retries at once (the server said when it will answer,
and that is too late), a backoff is shortened to fit. The policy is the
current session's (:attr:`~.session.ElizonSession.retry`, see :func:`policy`);
every value here is plain data.
"""

from __future__ import annotations

import email.utils
import math
import random
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from ..collect import session

__all__ = [
    "RETRY_STATUSES",
    "SDK_OVERLOAD_STATUSES",
    "RateLimited",
    "Refusal",
    "RetryClasses",
    "RetryPolicy",
    "Tally",
    "attempts",
    "gave_up",
    "next_wait",
    "policy",
    "refusal_of",
    "sdk_refusal",
    "wait_from_headers",
]

_R = TypeVar("_R")

#: The HTTP statuses retried: rate limited, and the gateway/overload family.
RETRY_STATUSES = frozenset({429, 502, 503, 504})


class RateLimited(Exception):
    """Raised by a Python entry point (or judge) to say "refused, try again later":
    ``retry_after`` is the wait the service asked for, in seconds (None: back off)."""

    def __init__(self, message: str = "rate limited", *, retry_after: float | None = None
                 ) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class Refusal:
    """Why an attempt may be retried: the wait asked for (None: back off), and whether it
    was a rate limit (429, :class:`RateLimited`) rather than an overloaded or lost server."""

    wait_s: float | None
    rate_limited: bool


_MISSING = object()


def _said(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # an exception that cannot print itself is still named
        return f"<unprintable {type(exc).__name__}>"


class RetryClasses:
    """The exception classes named in ini ``elizon_retry_on``, imported once, by the first
    error that needs classifying (docs/contract.md#retries); one per session, shared by the
    copies of its :class:`RetryPolicy`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._found: tuple[type[BaseException], ...] | None = None
        #: Why a name is no exception class, naming the ini key (None: every one is, or
        #: none was imported yet).
        self.problem: str | None = None

    def get(self, names: tuple[str, ...], source: str) -> tuple[type[BaseException], ...]:
        """The classes of ``names`` that are exception classes (imported on the first call;
        under a lock, as entry points raise on several threads at once)."""
        with self._lock:
            if self._found is None:
                self._found, self.problem = _import_classes(names, source)
            return self._found


def _import_classes(names: tuple[str, ...], source: str
                    ) -> tuple[tuple[type[BaseException], ...], str | None]:
    """The exception classes of ``names``, and what is wrong with the others. Imported under
    binding's lock: this runs on a case's thread, maybe while another package's import has
    its folder first on ``sys.path`` (docs/contract.md#imports)."""
    from .importing import import_module  # deferred: ``RateLimited`` users need no more

    found: list[type[BaseException]] = []
    problems: list[str] = []
    for name in names:
        module_name, _, attribute = name.rpartition(".")
        try:
            module = import_module(module_name)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # an SDK that fails (or exits) at import: said, not raised
            problems.append(f"{name!r} is not an exception class: importing {module_name} "
                            f"failed: {type(exc).__name__}: {_said(exc)}")
            continue
        try:
            value = getattr(module, attribute, _MISSING)
        except Exception:  # a module's own __getattr__ that fails: the name is not there
            value = _MISSING
        if value is _MISSING:
            problems.append(f"{name!r} is not an exception class: module {module_name!r} "
                            f"has no attribute {attribute!r}")
        elif not (isinstance(value, type) and issubclass(value, BaseException)):
            problems.append(f"{name!r} is not an exception class but a "
                            f"{type(value).__name__}")
        else:
            found.append(value)
    return tuple(found), f"{source}: {'; '.join(problems)}" if problems else None


@dataclass(frozen=True)
class RetryPolicy:
    """How many retries, and the backoff used when the server gives no hint."""

    #: Retries after the first attempt (0: none).
    retries: int = 4
    #: First backoff ceiling and the largest one, in seconds.
    base_s: float = 0.5
    cap_s: float = 8.0
    #: Further exception classes that mean "rate limited", by dotted name (ini
    #: ``elizon_retry_on``), imported by the first error that needs classifying.
    retry_on: tuple[str, ...] = ()
    #: Where ``retry_on`` was given, for the message of a name that is no exception class.
    retry_on_source: str = "ini option elizon_retry_on"
    #: Called with (limit key, when the refused request was sent) on a rate-limit refusal;
    #: adaptive concurrency listens here.
    on_refusal: Callable[[str, float], None] | None = field(default=None, compare=False)
    #: The classes of ``retry_on`` once imported (the same for a copy made by
    #: :func:`dataclasses.replace`: they are imported once per session).
    classes: RetryClasses = field(default_factory=RetryClasses, compare=False, repr=False)

    def retries_on(self, exc: BaseException) -> bool:
        """Whether ``exc`` is of a class named in ``retry_on`` (imported now, if this is the
        first error to classify)."""
        return bool(self.retry_on) and isinstance(
            exc, self.classes.get(self.retry_on, self.retry_on_source))

    def backoff(self, retry: int) -> float:
        """Full jitter: uniform in [0, min(cap, base · 2^retry)]."""
        return random.uniform(0, min(self.cap_s, self.base_s * 2 ** retry))


_DEFAULT = RetryPolicy()


def policy() -> RetryPolicy:
    """The current session's policy; the defaults outside a session (a direct call)."""
    running = session.current()
    return running.retry if running is not None else _DEFAULT


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def _duration(text: str) -> float | None:
    """``1.5``, ``20ms``, ``6m0s``, ``1h2m3.5s`` in seconds; None if it is none of these."""
    text = text.strip()
    try:
        value = float(text)
        return value if math.isfinite(value) and value >= 0 else None
    except ValueError:
        pass
    parts = _DURATION.findall(text)
    if not parts or "".join(a + b for a, b in parts) != text:
        return None
    return sum(float(amount) * _UNIT_S[unit] for amount, unit in parts)


def wait_from_headers(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """The wait a reply's headers ask for, in seconds; None when they ask for none.
    ``retry-after-ms`` (the most precise) wins, then ``Retry-After`` (seconds or an HTTP
    date), then the longest ``x-ratelimit-reset-*`` (when every exhausted quota is back)."""
    lower = {str(k).lower(): str(v) for k, v in headers.items()}
    if "retry-after-ms" in lower:
        ms = _duration(lower["retry-after-ms"])
        if ms is not None:
            return ms / 1000
    if "retry-after" in lower:
        raw = lower["retry-after"].strip()
        seconds = _duration(raw) if raw.replace(".", "", 1).isdigit() else None
        if seconds is not None:
            return seconds
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError, IndexError):
            when = None
        if when is not None and when.tzinfo is not None:
            return max(when.timestamp() - (time.time() if now is None else now), 0.0)
    resets = [_duration(v) for k, v in lower.items() if k.startswith("x-ratelimit-reset")]
    known = [r for r in resets if r is not None]
    return max(known) if known else None


#: An SDK error's statuses that mean "overloaded, try again": the gateway family retried
#: over HTTP, and Anthropic's 529 ``overloaded_error``.
SDK_OVERLOAD_STATUSES = frozenset({502, 503, 504, 529})
#: The packages whose errors are recognised without being named in ``elizon_retry_on``
#: (docs/contract.md#retries), by the top-level package of a class's module.
_SDK_PACKAGES = frozenset({"openai", "anthropic", "litellm", "langchain_core"})
#: Their rate-limit classes, as (top-level package, class name): a subclass is one too
#: (LiteLLM's RateLimitError is OpenAI's; LangChain's provider errors subclass both theirs
#: and the SDK's).
_SDK_RATE_LIMITS = frozenset({("openai", "RateLimitError"), ("anthropic", "RateLimitError"),
                              ("litellm", "RateLimitError"),
                              ("langchain_core", "ModelRateLimitError")})
#: Overload classes that may carry no status of their own.
_SDK_OVERLOADS = frozenset({("anthropic", "OverloadedError"),
                            ("litellm", "ServiceUnavailableError")})


def _classes(exc: BaseException) -> list[tuple[str, str]]:
    """(top-level package, class name) of each class in ``exc``'s MRO. Read from the
    classes, never imported: classifying must not import an SDK (docs/contract.md#retries)."""
    found = []
    for cls in type(exc).__mro__:
        module, name = getattr(cls, "__module__", None), getattr(cls, "__qualname__", None)
        if isinstance(module, str) and isinstance(name, str):
            found.append((module.partition(".")[0], name))
    return found


def _status(exc: BaseException) -> int | None:
    """The HTTP status an SDK error carries: its ``status_code``, else its response's."""
    for owner in (exc, getattr(exc, "response", None)):
        status = getattr(owner, "status_code", None)
        if isinstance(status, int) and not isinstance(status, bool):
            return status
    return None


def _headers(exc: BaseException) -> dict[str, str] | None:
    """The headers of the reply an exception carries (``response.headers``), lower-cased;
    None without one."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if not (isinstance(headers, Mapping) or hasattr(headers, "items")):
        return None
    try:
        return {str(k).lower(): str(v) for k, v in headers.items()}  # type: ignore[union-attr]
    except (TypeError, ValueError, AttributeError):
        return None


def sdk_refusal(exc: BaseException) -> Refusal | None:
    """A model SDK's rate-limit or overload error as a refusal: a class of OpenAI's,
    Anthropic's, LiteLLM's or LangChain's whose name says so, or which carries status 429
    (rate limited) or one of :data:`SDK_OVERLOAD_STATUSES`; None for any other error, for
    one whose reply says ``x-should-retry: false`` (the SDKs obey it too), and for OpenAI's
    ``insufficient_quota``. The wait is the one its reply's headers ask for
    (:func:`wait_from_headers`)."""
    try:
        classes = _classes(exc)
        if not any(package in _SDK_PACKAGES for package, _ in classes):
            return None
        status = _status(exc)
        headers = _headers(exc) or {}
        # OpenAI's "insufficient_quota" is a 429 no wait cures: the account has no credit
        no_credit = bool(getattr(exc, "code", None) == "insufficient_quota")
    except Exception:  # an exception whose attributes raise is no SDK error we know
        return None
    if no_credit or headers.get("x-should-retry", "").strip().lower() == "false":
        return None
    if status == 429 or any(c in _SDK_RATE_LIMITS for c in classes):
        rate_limited = True
    elif status in SDK_OVERLOAD_STATUSES or any(c in _SDK_OVERLOADS for c in classes):
        rate_limited = False
    else:
        return None
    return Refusal(wait_from_headers(headers), rate_limited)


def refusal_of(exc: BaseException) -> Refusal | None:
    """Whether a Python exception is a retryable refusal, and the wait it asks for:
    :class:`RateLimited`, a model SDK's rate-limit or overload error (:func:`sdk_refusal`),
    or a class named in ``elizon_retry_on``."""
    if not isinstance(exc, RateLimited):
        known = sdk_refusal(exc)
        if known is not None:
            return known
        if not policy().retries_on(exc):
            return None
    hint = getattr(exc, "retry_after", None)
    if isinstance(hint, (int, float)) and not isinstance(hint, bool) \
            and math.isfinite(hint) and hint >= 0:
        return Refusal(float(hint), True)
    headers = _headers(exc)
    return Refusal(wait_from_headers(headers) if headers is not None else None, True)


@dataclass
class Tally:
    """What the retries of one call cost, kept outside the call so that a call cancelled
    at the deadline can still say how many attempts it made."""

    attempts: int = 0
    #: Attempts followed by another because they were refused.
    retries: int = 0
    waited_s: float = 0.0
    rate_limited: bool = False
    #: Why the retries stopped early, when they did (for the error message).
    stopped: str = ""


def gave_up(tally: Tally, attempts: int | None = None) -> str:
    """The words added to the last error: how many attempts (``attempts``, else every one
    the tally counted), and why no more."""
    count = tally.attempts if attempts is None else attempts
    made = f"{count} attempt{'s' if count != 1 else ''}"
    return f" (after {made}; {tally.stopped})" if tally.stopped else f" (after {made})"


def next_wait(why: Refusal | None, tally: Tally, *, deadline: float, sent: float,
              key: str = "") -> float | None:
    """After an attempt sent at ``sent``: None when it stands (it was not refused, or no
    retry can follow — ``tally.stopped`` says why), else how long to wait before the next."""
    if why is None:
        return None
    current = policy()
    now = time.monotonic()
    spent = now - sent
    if why.rate_limited:
        tally.rate_limited = True
        if current.on_refusal is not None and key:
            current.on_refusal(key, sent)
    if tally.attempts > current.retries:
        tally.stopped = "retries used up" if current.retries else "retries are off"
        return None
    left = deadline - now - spent  # the next attempt takes about as long as this one did
    if why.wait_s is not None:
        if why.wait_s > left:
            tally.stopped = (f"the server asked to wait {why.wait_s:g} s, longer than the "
                             f"{max(deadline - now, 0):.2f} s left of the case's time limit")
            return None
        wait = why.wait_s
    else:
        if left <= 0:
            tally.stopped = "no time left within the case's time limit for another attempt"
            return None
        wait = min(current.backoff(tally.attempts - 1), left)
    tally.waited_s += wait
    tally.retries += 1
    return wait


def attempts(once: Callable[[], _R], refused: Callable[[_R], Refusal | None],
             *, deadline: float, tally: Tally, key: str = "") -> _R:
    """Run ``once()`` until it is not refused, the retries are used up, or the next attempt
    cannot fit before ``deadline``; the last result is returned either way (``tally`` says
    how it went). ``refused(result)`` tells a refusal apart. The waits sleep in the calling
    thread: a worker thread the caller stops waiting for at the deadline."""
    while True:
        tally.attempts += 1
        sent = time.monotonic()
        result = once()
        wait = next_wait(refused(result), tally, deadline=deadline, sent=sent, key=key)
        if wait is None:
            return result
        time.sleep(wait)
