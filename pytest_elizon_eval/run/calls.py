"""What one call of an entry point (or a judge) produced, as plain data.

No dependencies: these values cross threads, the event loop, xdist and
cassette files, so they hold only strings, numbers and JSON-like values.
:class:`Answer`, :class:`ToolCall` and :class:`Usage` are also what a Python
entry point may return for an agent's answer (docs/contract.md#answers).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = ["Answer", "EntryCall", "ErrorInfo", "OutputError", "Rates", "ToolCall", "Usage"]


@dataclass(frozen=True)
class ToolCall:
    """One tool an agent called while answering: its name, its arguments (a JSON-like
    mapping), and what it returned or the error it raised."""

    name: str
    arguments: Any = None
    result: Any = None
    error: str | None = None
    #: The id the model gave the call (OpenAI ``call_…``, Anthropic ``toolu_…``): sent back
    #: with its result in a conversation (docs/contract.md#conversations).
    id: str | None = None

    def to_data(self) -> dict[str, Any]:
        data = {"name": self.name, "arguments": self.arguments, "result": self.result,
                "error": self.error}
        if self.id is not None:
            data["id"] = self.id
        return data

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> ToolCall:
        ident = data.get("id")
        return cls(str(data["name"]), data.get("arguments"), data.get("result"),
                   data.get("error"), ident if isinstance(ident, str) else None)


def _sum(a: int | None, b: int | None) -> int | None:
    return None if a is None and b is None else (a or 0) + (b or 0)


class Rates(NamedTuple):
    """What a model costs, in US dollars per 1M tokens: input, output, and the prompt
    cache's read and write rates when the prices give them (None: the cache tokens cost
    the input rate) (docs/contract.md#cost)."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None


@dataclass(frozen=True)
class Usage:
    """What an answer cost: tokens in and out, and US dollars when known. ``model`` names
    the model, so a price the user gives can cost the tokens when ``cost_usd`` is None.

    ``input_tokens`` counts every input token, cached ones included (as OpenAI's
    ``prompt_tokens`` does; Anthropic's cache tokens are added to its ``input_tokens``);
    ``cache_read_tokens`` and ``cache_write_tokens`` say how many of them were read from
    and written to the provider's prompt cache (docs/contract.md#cost)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    model: str | None = None
    # left out of a results file while None, so records without them keep their shape
    cache_read_tokens: int | None = field(default=None, metadata={"omit_none": True})
    cache_write_tokens: int | None = field(default=None, metadata={"omit_none": True})
    #: Why the token counts are unknown, in words, when the plugin knows (an OpenAI stream
    #: without ``stream_options.include_usage``): what ``maxTokens`` and ``maxCostUsd``
    #: say. Not a results field (compare=False): it only words those checks.
    missing: str | None = field(default=None, compare=False)

    @property
    def tokens(self) -> int | None:
        """Input plus output tokens; None when neither is known."""
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)

    def __add__(self, other: Usage) -> Usage:
        # a total cost is known only when every part's cost is
        cost = None if self.cost_usd is None or other.cost_usd is None \
            else self.cost_usd + other.cost_usd
        model = self.model if self.model == other.model else None
        missing = self.missing or other.missing
        if (missing or self.tokens is None or other.tokens is None) and (
                self.tokens is not None or other.tokens is not None):
            # the token counts too: a part's unknown count is no zero, and maxTokens never
            # passes on the known part alone (docs/contract.md#cost)
            return Usage(None, None, cost, model, missing=missing or (
                "part of it reported no token counts (each answer needs its usage)"))
        return Usage(_sum(self.input_tokens, other.input_tokens),
                     _sum(self.output_tokens, other.output_tokens), cost, model,
                     _sum(self.cache_read_tokens, other.cache_read_tokens),
                     _sum(self.cache_write_tokens, other.cache_write_tokens), missing)

    def to_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {"input_tokens": self.input_tokens,
                                "output_tokens": self.output_tokens,
                                "cost_usd": self.cost_usd, "model": self.model}
        for key in ("cache_read_tokens", "cache_write_tokens", "missing"):
            if getattr(self, key) is not None:  # cassettes without them keep their shape
                data[key] = getattr(self, key)
        return data

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Usage:
        def count(key: str) -> int | None:  # a cache count only words the usage: one that
            value = data.get(key)          # is not a count (a cassette edited by hand) is none
            return value if isinstance(value, int) and not isinstance(value, bool) else None

        missing = data.get("missing")
        return cls(data.get("input_tokens"), data.get("output_tokens"), data.get("cost_usd"),
                   data.get("model"), count("cache_read_tokens"), count("cache_write_tokens"),
                   missing if isinstance(missing, str) else None)


@dataclass(frozen=True)
class Answer:
    """What a Python entry point may return for an agent: the text and/or a structured
    value, the tools it called, and what the answer cost. An answer that only calls tools
    (OpenAI's ``content: null``) has the text ``""``."""

    text: str | None = None
    value: Any = None
    tool_calls: Sequence[ToolCall] = field(default_factory=tuple)
    usage: Usage | None = None
    #: The passages a retrieval-augmented answer was built from, best first
    #: (docs/contract.md#rag).
    contexts: Sequence[str] | None = None

    def __post_init__(self) -> None:
        if self.text is None and self.value is None:
            if not self.tool_calls:
                raise ValueError("an Answer needs a text or a value, or tool calls")
            object.__setattr__(self, "text", "")  # frozen: set once, here

    @classmethod
    def from_sdk(cls, response: object) -> Answer:
        """Any SDK answer this plugin reads by shape (docs/contract.md#sdk-answers)."""
        from . import sdk_answers  # deferred: calls stays dependency-free for most imports

        return cls._of(sdk_answers.read_as(response, list(sdk_answers.KINDS)))

    @classmethod
    def from_openai(cls, response: object) -> Answer:
        """An OpenAI ``ChatCompletion`` or Responses API ``Response`` (the object, its
        ``model_dump()``, or a stream of its chunks)."""
        from . import sdk_answers  # deferred: calls stays dependency-free for most imports

        return cls._of(sdk_answers.read_as(response, ["openai", "responses"]))

    @classmethod
    def from_anthropic(cls, message: object) -> Answer:
        """An Anthropic ``Message`` (or its dump, or its stream's events)."""
        from . import sdk_answers  # deferred: calls stays dependency-free for most imports

        return cls._of(sdk_answers.read_as(message, ["anthropic"]))

    @classmethod
    def from_litellm(cls, response: object) -> Answer:
        """A LiteLLM ``ModelResponse`` (its ``response_cost`` becomes the cost)."""
        from . import sdk_answers  # deferred: calls stays dependency-free for most imports

        return cls._of(sdk_answers.read_as(response, ["litellm"]))

    @classmethod
    def from_langchain(cls, message: object) -> Answer:
        """A LangChain ``AIMessage`` (or a stream of ``AIMessageChunk``)."""
        from . import sdk_answers  # deferred: calls stays dependency-free for most imports

        return cls._of(sdk_answers.read_as(message, ["langchain"]))

    @classmethod
    def _of(cls, read: Any) -> Answer:
        usage = Usage(read.input_tokens, read.output_tokens, read.cost_usd, read.model,
                      read.cache_read_tokens, read.cache_write_tokens, read.usage_missing) \
            if read.has_usage or read.model is not None or read.usage_missing else None
        return cls(text=read.text, tool_calls=tuple(
            ToolCall(name, arguments, id=ident) for name, arguments, ident in read.tool_calls),
            usage=usage)


class OutputError(Exception):
    """What an entry point returned or printed is not an answer (None, bytes, objects,
    malformed JSON, a bad envelope); the case fails with this message."""


@dataclass(frozen=True)
class ErrorInfo:
    """What the entry point raised (or why it could not answer), as text."""

    type: str
    message: str
    traceback: str = ""
    #: A retryable refusal (:class:`~.retrying.RateLimited`, a model SDK's rate-limit or
    #: overload error, an ``elizon_retry_on`` class), the wait it asked for in seconds
    #: (None: back off), and whether it was a rate limit rather than an overload. Never
    #: saved: it only steers the retries of the call that raised it.
    retryable: bool = field(default=False, compare=False)
    retry_after: float | None = field(default=None, compare=False)
    rate_limited: bool = field(default=False, compare=False)

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
    #: The tools an agent called, in order, and what the answer cost (when reported).
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = None
    #: Attempts made (1 + retries), the seconds spent waiting between them, and whether
    #: the service refused one with a rate limit (docs/contract.md#retries). Not saved in
    #: a cassette: a replayed call made one attempt.
    attempts: int = 1
    waited_s: float = 0.0
    rate_limited: bool = False
    #: The passages the answer was built from, best first (docs/contract.md#rag).
    contexts: tuple[str, ...] = ()

    def to_data(self) -> dict[str, Any]:
        """The call as a cassette keeps it."""
        data = {"value": self.value, "text": self.text,
                "error": self.error.to_data() if self.error else None,
                "latency_ms": self.latency_ms, "timed_out": self.timed_out,
                "tool_calls": [c.to_data() for c in self.tool_calls],
                "usage": self.usage.to_data() if self.usage else None}
        if self.contexts:  # cassettes of answers without passages keep their shape
            data["contexts"] = list(self.contexts)
        return data

    @classmethod
    def from_data(cls, data: Mapping[str, Any], *, replayed: bool = True) -> EntryCall:
        error = data.get("error")
        usage = data.get("usage")
        return cls(value=data.get("value"), text=data.get("text"),
                   error=ErrorInfo.from_data(error) if error else None,
                   latency_ms=data.get("latency_ms"), timed_out=bool(data.get("timed_out")),
                   replayed=replayed,
                   tool_calls=tuple(ToolCall.from_data(c) for c in data.get("tool_calls") or ()),
                   usage=Usage.from_data(usage) if usage else None,
                   contexts=tuple(str(c) for c in data.get("contexts") or ()))
