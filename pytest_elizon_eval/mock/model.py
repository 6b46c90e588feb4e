"""A model that answers from a script, for tests of an application's own code (docs/mock.md).

:class:`MockModel` gives each request the next response of its script (then its
``default``), records every request, and lets ``on_request`` look at each one or answer
it. A script is checked when the model is made: a bad one never waits to fail until a
test reaches the call that would use it. No pytest and no network here: the HTTP side
of the same answers is ``server``, the three APIs' wire formats ``protocols``.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeAlias

from ..run.calls import Answer, ToolCall, Usage

__all__ = ["STOP_REASONS", "MockModel", "MockRequest", "MockResponse", "MockScriptExhausted",
           "MockToolCall", "MockToolResult", "MockUsage", "ResponseLike"]

#: Why an answer ended, in Anthropic's words; ``protocols`` gives OpenAI's for each.
STOP_REASONS = ("end_turn", "tool_use", "max_tokens", "stop_sequence")

#: The model a response names when neither it nor the request names one.
DEFAULT_MODEL = "elizon-mock"

#: Keys the APIs and camelCase mock libraries use, mapped to ours: a script written from
#: habit gets a hint, not just "unknown key".
_SPELLINGS = {"toolCalls": "tool_calls", "stopReason": "stop_reason", "text": "content",
              "finish_reason": "stop_reason", "input": "arguments", "args": "arguments",
              "inputTokens": "input_tokens", "outputTokens": "output_tokens",
              "prompt_tokens": "input_tokens", "completion_tokens": "output_tokens"}
_OPENAI_STOPS = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}


def _keys(data: Mapping[Any, Any], allowed: Sequence[str], where: str) -> None:
    unknown = [k for k in data if k not in allowed]
    if unknown:
        key = unknown[0]
        meant = _SPELLINGS.get(key)
        hint = f" (did you mean {meant!r}?)" if meant in allowed else ""
        raise ValueError(f"{where}: unknown key {key!r}{hint}; the keys are "
                         f"{', '.join(allowed)}")


def _count(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{where} must be a whole number of tokens, not {value!r}")
    if value < 0:
        raise ValueError(f"{where} must be 0 or more, not {value}")
    return value


def _text_or_none(value: object, where: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{where} must be a string, not {type(value).__name__}")
    return value


@dataclass(frozen=True)
class MockToolCall:
    """A tool the mock model calls: its name and arguments (a JSON mapping), and the id the
    application sends the result back with (made up as ``call_N`` when not given)."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None

    def __post_init__(self) -> None:
        # frozen: normalised once, here (the arguments a detached copy of what was given)
        object.__setattr__(self, "arguments",
                           _tool_call_arguments(self.name, self.arguments, self.id,
                                                "MockToolCall"))

    @classmethod
    def of(cls, value: object, where: str) -> MockToolCall:
        """A tool call from a mapping ``{name, arguments, id}`` or a MockToolCall."""
        if isinstance(value, MockToolCall):
            return value
        if not isinstance(value, Mapping):
            raise TypeError(f"{where} must be a mapping with a name (or a MockToolCall), not "
                            f"{type(value).__name__}")
        _keys(value, ("name", "arguments", "id"), where)
        arguments = value.get("arguments")
        arguments = {} if arguments is None else arguments
        # checked here first, so that an error names the script's place, not MockToolCall
        _tool_call_arguments(value.get("name"), arguments, value.get("id"), where)
        return cls(value["name"], arguments, value.get("id"))


def _tool_call_arguments(name: object, arguments: object, ident: object, where: str
                         ) -> dict[str, Any]:
    """A tool call checked; its arguments as a copy made of JSON values only."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"{where}: a tool call needs a name (a non-empty string), not "
                         f"{name!r}")
    if not isinstance(arguments, Mapping):
        raise TypeError(f"{where}.arguments must be a mapping of argument names to values, "
                        f"not {type(arguments).__name__}")
    try:  # every API sends them as JSON: found now, not by the request that needs them
        copied: dict[str, Any] = json.loads(json.dumps(dict(arguments), allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{where}.arguments cannot be sent as JSON: {exc}") from None
    if ident is not None and (not isinstance(ident, str) or not ident):
        raise ValueError(f"{where}.id must be a non-empty string, not {ident!r}")
    return copied


@dataclass(frozen=True)
class MockUsage:
    """The tokens an answer reports using: in (the prompt) and out (the answer)."""

    input_tokens: int = 0
    output_tokens: int = 0

    def __post_init__(self) -> None:
        _count(self.input_tokens, "MockUsage.input_tokens")
        _count(self.output_tokens, "MockUsage.output_tokens")

    @classmethod
    def of(cls, value: object, where: str) -> MockUsage:
        if isinstance(value, MockUsage):
            return value
        if not isinstance(value, Mapping):
            raise TypeError(f"{where} must be a mapping of input_tokens and output_tokens, "
                            f"not {type(value).__name__}")
        _keys(value, ("input_tokens", "output_tokens"), where)
        return cls(_count(value.get("input_tokens", 0), f"{where}.input_tokens"),
                   _count(value.get("output_tokens", 0), f"{where}.output_tokens"))

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class MockResponse:
    """One scripted answer: text and/or tool calls, why it stopped, the usage and model it
    reports, and seconds to wait before answering.

    ``stop_reason`` is one of :data:`STOP_REASONS` (by default ``tool_use`` when there are
    tool calls, else ``end_turn``); usage defaults to 0 tokens in and out; the model to the
    request's ``model``, else ``elizon-mock``.
    """

    content: str | None = None
    tool_calls: tuple[MockToolCall, ...] = ()
    stop_reason: str | None = None
    usage: MockUsage | None = None
    model: str | None = None
    delay: float = 0.0

    def __post_init__(self) -> None:
        checked = _checked(self.content, self.tool_calls, self.stop_reason, self.usage,
                           self.model, self.delay, "MockResponse")
        for key, value in checked.items():
            object.__setattr__(self, key, value)  # frozen: normalised once, here

    @classmethod
    def of(cls, value: object, where: str) -> MockResponse:
        """A response from a string (its content), a mapping of the fields, or itself."""
        if isinstance(value, MockResponse):
            return value
        if isinstance(value, str):
            return cls(content=value)
        if not isinstance(value, Mapping):
            raise TypeError(f"{where} must be a string, a mapping or a MockResponse, not "
                            f"{type(value).__name__}")
        _keys(value, ("content", "tool_calls", "stop_reason", "usage", "model", "delay"), where)
        calls = value.get("tool_calls")
        checked = _checked(value.get("content"), () if calls is None else calls,
                           value.get("stop_reason"), value.get("usage"), value.get("model"),
                           value.get("delay", 0.0), where)
        response = object.__new__(cls)  # already checked, with the script's location
        for key, field_value in checked.items():
            object.__setattr__(response, key, field_value)
        return response

    def to_answer(self) -> Answer:
        """The plugin's own :class:`~pytest_elizon_eval.Answer` for this response, for an
        entry point to return (docs/contract.md#answers)."""
        usage = self.usage or MockUsage()
        return Answer(text=self.content if self.content is not None else "",
                      tool_calls=tuple(ToolCall(c.name, dict(c.arguments), id=c.id)
                                       for c in self.tool_calls),
                      usage=Usage(usage.input_tokens, usage.output_tokens, None, self.model))


def _checked(content: object, tool_calls: object, stop_reason: object, usage: object,
             model: object, delay: object, where: str) -> dict[str, Any]:
    """A response's fields, checked and normalised; errors name ``where``."""
    content = _text_or_none(content, f"{where}.content")
    if isinstance(tool_calls, (str, bytes, Mapping)) or not isinstance(tool_calls, Iterable):
        raise TypeError(f"{where}.tool_calls must be a list of tool calls, not "
                        f"{type(tool_calls).__name__}")
    calls = tuple(MockToolCall.of(c, f"{where}.tool_calls[{i}]") for i, c in enumerate(tool_calls))
    if content is None and not calls:
        raise ValueError(f"{where} has neither content nor tool_calls (give content: '' for "
                         f"an empty answer)")
    if stop_reason is not None:
        if stop_reason not in STOP_REASONS:
            meant = _OPENAI_STOPS.get(stop_reason) if isinstance(stop_reason, str) else None
            hint = f" (OpenAI's {stop_reason!r} is {meant!r} here)" if meant else ""
            raise ValueError(f"{where}.stop_reason must be one of {', '.join(STOP_REASONS)}, "
                             f"not {stop_reason!r}{hint}")
        if stop_reason == "tool_use" and not calls:
            raise ValueError(f"{where}.stop_reason is tool_use but it calls no tool")
    if usage is not None:
        usage = MockUsage.of(usage, f"{where}.usage")
    model = _text_or_none(model, f"{where}.model")
    if model is not None and not model.strip():
        raise ValueError(f"{where}.model must not be empty")
    if isinstance(delay, bool) or not isinstance(delay, (int, float)):
        raise TypeError(f"{where}.delay must be a number of seconds, not {delay!r}")
    if not math.isfinite(delay) or delay < 0:
        raise ValueError(f"{where}.delay must be 0 or more seconds, not {delay!r}")
    return {"content": content, "tool_calls": calls, "stop_reason": stop_reason,
            "usage": usage, "model": model, "delay": float(delay)}


#: What a script holds and ``on_request`` may return: a string (the content), a mapping of
#: :class:`MockResponse`'s fields, or a MockResponse.
ResponseLike: TypeAlias = str | Mapping[str, Any] | MockResponse


@dataclass(frozen=True)
class MockToolResult:
    """A tool's result the application sent back: the id of the call it answers, and the
    result as text."""

    call_id: str | None
    content: str


def message_text(content: object) -> str | None:
    """The text of a message's content: a string, or the text parts of a list of parts
    (``text`` in chat completions and Anthropic, ``input_text`` / ``output_text`` in the
    Responses API); None when it has none."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p["text"] for p in content if isinstance(p, Mapping)
                 and p.get("type") in ("text", "input_text", "output_text")
                 and isinstance(p.get("text"), str)]
        return "".join(parts) if parts else None
    return None


@dataclass(frozen=True)
class MockRequest:
    """One request the mock model was asked to answer, whichever way it came.

    ``api`` says which: ``python`` (:meth:`MockModel.complete`), ``openai.chat``,
    ``openai.responses`` or ``anthropic.messages``. ``messages`` are the conversation as
    the API carried it (a Responses ``input`` string becomes one user message), ``system``
    the system prompt wherever the API puts it, ``body`` the whole request.
    """

    api: str
    messages: tuple[Mapping[str, Any], ...]
    model: str | None = None
    system: str | None = None
    tools: tuple[Mapping[str, Any], ...] = ()
    stream: bool = False
    body: Mapping[str, Any] = field(default_factory=dict)

    @property
    def last_user_text(self) -> str | None:
        """The text of the last user message that has text (an Anthropic user message that
        only carries tool results is passed over); None when there is none."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                text = message_text(message.get("content"))
                if text is not None:
                    return text
        return None

    @property
    def tool_results(self) -> tuple[MockToolResult, ...]:
        """Every tool result in the conversation, in order: chat completions' ``tool``
        messages, the Responses API's ``function_call_output`` items and Anthropic's
        ``tool_result`` blocks."""
        found = []
        for message in self.messages:
            if message.get("role") == "tool":
                found.append(MockToolResult(message.get("tool_call_id"),
                                            message_text(message.get("content")) or ""))
            elif message.get("type") == "function_call_output":
                output = message.get("output")
                found.append(MockToolResult(message.get("call_id"),
                                            output if isinstance(output, str)
                                            else message_text(output) or ""))
            elif isinstance(message.get("content"), list):
                found += [MockToolResult(block.get("tool_use_id"),
                                         message_text(block.get("content")) or "")
                          for block in message["content"]
                          if isinstance(block, Mapping) and block.get("type") == "tool_result"]
        return tuple(found)


class MockScriptExhausted(RuntimeError):
    """The mock model was asked once more than its script answers, and has no default."""


class MockModel:
    """Answers each request with the next scripted response, then ``default``.

    ``on_request(request)`` is called with each :class:`MockRequest` as it arrives: to
    assert on it (what it raises reaches the caller), or to answer it — a response it
    returns is the answer, and the script stays where it was; None lets the script answer.
    Safe to call from several threads (the mock server answers each request on its own).
    """

    def __init__(self, responses: Iterable[ResponseLike] = (), *,
                 default: ResponseLike | None = None,
                 on_request: Callable[[MockRequest], ResponseLike | None] | None = None
                 ) -> None:
        if isinstance(responses, (str, bytes, Mapping, MockResponse)):
            raise TypeError("responses must be a list of responses; wrap a single one in a "
                            "list")
        self.responses = tuple(MockResponse.of(r, f"responses[{i}]")
                               for i, r in enumerate(responses))
        self.default = None if default is None else MockResponse.of(default, "default")
        if on_request is not None and not callable(on_request):
            raise TypeError(f"on_request must be callable, not {type(on_request).__name__}")
        self.on_request = on_request
        self._lock = threading.Lock()
        self._calls: list[MockRequest] = []
        self._next = 0  # the script's next response
        self._tool_ids = 0  # tool calls given a made-up id so far

    def __repr__(self) -> str:
        return (f"MockModel({len(self.responses)} responses, "
                f"{'a' if self.default else 'no'} default, {self.call_count} calls)")

    @property
    def calls(self) -> tuple[MockRequest, ...]:
        """Every request so far, in the order they arrived."""
        with self._lock:
            return tuple(self._calls)

    @property
    def call_count(self) -> int:
        with self._lock:
            return len(self._calls)

    def reset(self) -> None:
        """Forget every call and start the script again."""
        with self._lock:
            self._calls.clear()
            self._next = 0
            self._tool_ids = 0

    def complete(self, messages: str | Sequence[Mapping[str, Any]], **request: Any
                 ) -> MockResponse:
        """Answer ``messages`` (a string is one user message; keywords such as ``model``,
        ``system`` and ``tools`` are part of the request), after the response's delay."""
        if isinstance(messages, str):
            listed: list[Mapping[str, Any]] = [{"role": "user", "content": messages}]
        else:
            given = list(messages) if isinstance(messages, Sequence) else []
            listed = [m for m in given if isinstance(m, Mapping)]
            if not listed or len(listed) != len(given):
                raise TypeError("messages must be a string or a non-empty list of message "
                                f"mappings, not {messages!r:.80}")
        tools = request.get("tools") or ()
        if not isinstance(tools, Sequence) or not all(isinstance(t, Mapping) for t in tools):
            raise TypeError(f"tools must be a list of tool definitions, not {tools!r:.80}")
        system = request.get("system")
        response = self.answer(MockRequest(
            "python", tuple(listed), model=request.get("model"),
            system=system if isinstance(system, str) else None,
            tools=tuple(tools), stream=bool(request.get("stream")),
            body={"messages": listed, **request}))
        if response.delay:
            time.sleep(response.delay)
        return response

    __call__ = complete

    def answer(self, request: MockRequest) -> MockResponse:
        """The response to ``request``, recorded as a call: ``on_request``'s, else the
        script's next, else the default. Its delay is the caller's to wait."""
        with self._lock:
            self._calls.append(request)
            number = len(self._calls)
        chosen = None
        if self.on_request is not None:
            returned = self.on_request(request)
            if returned is not None:
                chosen = MockResponse.of(returned, "the response on_request returned")
        with self._lock:
            if chosen is None and self._next < len(self.responses):
                chosen = self.responses[self._next]
                self._next += 1
            elif chosen is None and self.default is not None:
                chosen = self.default
            elif chosen is None:
                raise MockScriptExhausted(
                    f"the MockModel's script ran out after {number - 1} calls: its "
                    f"{len(self.responses)} responses are used up and it has no default, so "
                    f"call {number} has no answer (script more responses, or give default=)")
            calls = []
            for call in chosen.tool_calls:
                if call.id is None:
                    self._tool_ids += 1
                    call = replace(call, id=f"call_{self._tool_ids}")
                calls.append(call)
        return replace(chosen, tool_calls=tuple(calls),
                       stop_reason=chosen.stop_reason or ("tool_use" if calls else "end_turn"),
                       usage=chosen.usage or MockUsage(),
                       model=chosen.model or request.model or DEFAULT_MODEL)
