"""Retrying a refused call inside the case's time limit (docs/contract.md#retries).

Owns what counts as a retryable refusal, how long to wait before the next
attempt, and the loop that retries within a deadline:

* HTTP: ``429``, ``502``, ``503``, ``504`` and connection resets; every other
  status fails at once. The wait the server asks for is read from
  ``retry-after-ms``, ``Retry-After`` (seconds or an HTTP date) or the
  ``x-ratelimit-reset-*`` headers of OpenAI-compatible servers.
* Python: :class:`RateLimited` (``retry_after=`` seconds), and the exception
  classes named by ini ``elizon_retry_on``, read for a ``retry_after``
  attribute or a ``response.headers`` mapping.

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
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from ..collect import session

__all__ = [
    "RETRY_STATUSES",
    "RateLimited",
    "Refusal",
    "RetryPolicy",
    "Tally",
    "attempts",
    "gave_up",
    "next_wait",
    "policy",
    "refusal_of",
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


@dataclass(frozen=True)
class RetryPolicy:
    """How many retries, and the backoff used when the server gives no hint."""

    #: Retries after the first attempt (0: none).
    retries: int = 4
    #: First backoff ceiling and the largest one, in seconds.
    base_s: float = 0.5
    cap_s: float = 8.0
    #: Further exception classes that mean "rate limited" (ini ``elizon_retry_on``).
    retry_on: tuple[type[BaseException], ...] = ()
    #: Called with (limit key, when the refused request was sent) on a rate-limit refusal;
    #: adaptive concurrency listens here.
    on_refusal: Callable[[str, float], None] | None = field(default=None, compare=False)

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


def refusal_of(exc: BaseException) -> Refusal | None:
    """Whether a Python exception is a retryable refusal, and the wait it asks for."""
    if not isinstance(exc, (RateLimited, *policy().retry_on)):
        return None
    hint = getattr(exc, "retry_after", None)
    if isinstance(hint, (int, float)) and not isinstance(hint, bool) \
            and math.isfinite(hint) and hint >= 0:
        return Refusal(float(hint), True)
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if isinstance(headers, Mapping) or hasattr(headers, "items"):
        try:
            return Refusal(wait_from_headers(dict(headers.items())), True)  # type: ignore[union-attr]
        except (TypeError, ValueError, AttributeError):
            pass
    return Refusal(None, True)


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
