"""What one call of an entry point (or a judge) produced, as plain data.

No dependencies: these values cross threads, the event loop, xdist and
cassette files, so they hold only strings, numbers and JSON-like values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["EntryCall", "ErrorInfo"]


@dataclass(frozen=True)
class ErrorInfo:
    """What the entry point raised (or why it could not answer), as text."""

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

    def to_data(self) -> dict[str, Any]:
        """The call as a cassette keeps it."""
        return {"value": self.value, "text": self.text,
                "error": self.error.to_data() if self.error else None,
                "latency_ms": self.latency_ms, "timed_out": self.timed_out}

    @classmethod
    def from_data(cls, data: Mapping[str, Any], *, replayed: bool = True) -> EntryCall:
        error = data.get("error")
        return cls(value=data.get("value"), text=data.get("text"),
                   error=ErrorInfo.from_data(error) if error else None,
                   latency_ms=data.get("latency_ms"), timed_out=bool(data.get("timed_out")),
                   replayed=replayed)
