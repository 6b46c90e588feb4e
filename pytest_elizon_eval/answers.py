"""An agent's answer, read from whatever the entry point gave, and the conversation it sees.

Owns the step from "the entry point returned / printed / replied this" to an
:class:`~.calls.EntryCall` with its text, structured value, tool calls and
usage (docs/contract.md#answers):

* :func:`from_return` — what a Python callable returned: a string, a
  JSON-like value, a pydantic model, or an :class:`~.calls.Answer`.
* :func:`from_reply` — what a command printed or a service replied, read by
  its ``output:`` mode: ``text``, ``json``, ``answer`` (the documented JSON
  envelope of an Answer) or ``openai`` (a chat-completions response).

and, for conversations, :func:`conversation` (the OpenAI-style message list
an entry point sees) and :func:`chat_request` (the body an ``output:
openai`` entry is sent). :func:`priced` costs usage from the user's prices.
No pytest import here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .calls import Answer, EntryCall, OutputError, ToolCall, Usage

__all__ = ["chat_request", "conversation", "from_reply", "from_return", "priced"]


def _json_text(value: object, what: str = "the entry point returned") -> str:
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise OutputError(f"{what} a {type(value).__name__} that is not JSON-serializable: "
                          f"{exc}") from None


def _plain(value: object) -> tuple[Any, str]:
    """(structured value, output text) of a plain return value."""
    if isinstance(value, str):
        return value, value
    if value is None:
        raise OutputError("the entry point returned None; return a string, a JSON-like value, "
                          "a pydantic model, an Answer or an iterator of strings")
    if isinstance(value, (bytes, bytearray)):
        raise OutputError("the entry point returned bytes; decode them and return a string")
    dump = getattr(value, "model_dump", None)
    if callable(dump) and hasattr(type(value), "model_fields"):
        value = dump(mode="json")
        return value, _json_text(value)
    if isinstance(value, (dict, list, tuple, int, float, bool)):
        plain = list(value) if isinstance(value, tuple) else value
        return plain, _json_text(plain)
    raise OutputError(f"the entry point returned a {type(value).__name__}; return a string, "
                      "a JSON-like value, a pydantic model, an Answer or an iterator of strings")


def _tool_call(call: object, index: int) -> ToolCall:
    if isinstance(call, Mapping):
        if not isinstance(call.get("name"), str):
            raise OutputError(f"tool call {index} has no 'name' string")
        call = ToolCall.from_data(call)
    if not isinstance(call, ToolCall) or not isinstance(call.name, str):
        raise OutputError(f"tool call {index} is a {type(call).__name__}, not a ToolCall")
    _json_text(call.arguments, f"tool call {index} ({call.name}) has arguments:")
    result = call.result
    try:
        json.dumps(result, allow_nan=False)
    except (TypeError, ValueError):
        result = repr(result)  # kept as text: a report must be able to show it
    error = None if call.error is None else str(call.error)
    return ToolCall(call.name, call.arguments, result, error)


def _count(value: object, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise OutputError(f"usage {what} is {value!r}; expected a whole number of tokens")
    return value


def _usage(usage: object) -> Usage | None:
    if usage is None:
        return None
    if isinstance(usage, Mapping):
        usage = Usage.from_data(usage)
    if not isinstance(usage, Usage):
        raise OutputError(f"usage is a {type(usage).__name__}, not a Usage")
    cost = usage.cost_usd
    if cost is not None and (isinstance(cost, bool) or not isinstance(cost, (int, float))
                             or cost < 0):
        raise OutputError(f"usage cost_usd is {cost!r}; expected a number of US dollars")
    model = usage.model if usage.model is None else str(usage.model)
    return Usage(_count(usage.input_tokens, "input_tokens"),
                 _count(usage.output_tokens, "output_tokens"),
                 None if cost is None else float(cost), model)


def _answer(answer: Answer) -> EntryCall:
    if answer.text is not None and not isinstance(answer.text, str):
        raise OutputError(f"Answer.text is a {type(answer.text).__name__}, not a string")
    value: Any = answer.text
    text = answer.text
    if answer.value is not None:
        value, as_text = _plain(answer.value)
        text = answer.text if answer.text is not None else as_text
    calls = tuple(_tool_call(c, i) for i, c in enumerate(answer.tool_calls or ()))
    return EntryCall(value=value, text=text, tool_calls=calls, usage=_usage(answer.usage))


def from_return(returned: object) -> EntryCall:
    """What a Python entry point returned (streams already joined), as a call."""
    if isinstance(returned, Answer):
        return _answer(returned)
    value, text = _plain(returned)
    return EntryCall(value=value, text=text)


def _parse(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise OutputError(f"{what} is not JSON ({exc}): {text[:200]!r}") from None


def _envelope(data: object) -> EntryCall:
    if not isinstance(data, Mapping):
        raise OutputError(f"the answer envelope is a {type(data).__name__}, not an object "
                          "with 'text' and/or 'value'")
    unknown = sorted(set(data) - {"text", "value", "tool_calls", "usage"})
    if unknown:
        raise OutputError(f"the answer envelope has unknown keys {unknown}; allowed: text, "
                          "value, tool_calls, usage")
    calls = data.get("tool_calls") or []
    if not isinstance(calls, list):
        raise OutputError("the answer envelope's tool_calls is not a list")
    try:
        answer = Answer(text=data.get("text"), value=data.get("value"), tool_calls=calls,
                        usage=data.get("usage"))
    except ValueError as exc:
        raise OutputError(f"the answer envelope: {exc}") from None
    return _answer(answer)


def _arguments(raw: object) -> Any:
    """OpenAI sends a tool's arguments as a JSON string; read it (kept as text if it is not
    JSON, so the assertion says what was sent)."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def _chat_completion(data: object) -> EntryCall:
    try:
        message = data["choices"][0]["message"]  # type: ignore[index]
        if not isinstance(message, Mapping):
            raise TypeError
    except (KeyError, IndexError, TypeError):
        raise OutputError("not a chat completion: no choices[0].message") from None
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise OutputError(f"choices[0].message.content is a {type(content).__name__}, "
                          "not text")
    calls = []
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise OutputError(f"tool_calls[{index}] has no function.name")
        calls.append(ToolCall(function["name"], _arguments(function.get("arguments"))))
    usage = None
    raw_usage = data.get("usage") if isinstance(data, Mapping) else None
    if isinstance(raw_usage, Mapping):
        usage = _usage({"input_tokens": raw_usage.get("prompt_tokens"),
                        "output_tokens": raw_usage.get("completion_tokens"),
                        "model": data.get("model") if isinstance(data, Mapping) else None})
    text = content or ""
    return EntryCall(value=text, text=text, tool_calls=tuple(calls), usage=usage)


def from_reply(text: str, mode: str, *, json_reply: bool = False) -> EntryCall:
    """A command's stdout or a service's reply body, read by its ``output:`` mode
    (``json_reply``: a service said its reply is JSON, which ``text`` mode then parses)."""
    if mode == "answer":
        return _envelope(_parse(text, "the answer envelope"))
    if mode == "openai":
        return _chat_completion(_parse(text, "the chat completion"))
    if mode == "json" or json_reply:
        value = _parse(text, "the output")
        return EntryCall(value=value, text=json.dumps(value, ensure_ascii=False))
    return EntryCall(value=text, text=text)


def _content(case_input: object) -> str:
    return case_input if isinstance(case_input, str) else json.dumps(case_input,
                                                                     ensure_ascii=False)


def conversation(history: Sequence[tuple[object, EntryCall]], current: object
                 ) -> list[dict[str, Any]]:
    """The OpenAI-style messages an entry point sees at a turn: every earlier user message
    and answer (with its tool calls and their results), then this turn's user message."""
    messages: list[dict[str, Any]] = []
    for turn, (case_input, call) in enumerate(history):
        messages.append({"role": "user", "content": _content(case_input)})
        assistant: dict[str, Any] = {"role": "assistant", "content": call.text or ""}
        ids = [f"call_{turn}_{index}" for index in range(len(call.tool_calls))]
        if call.tool_calls:
            assistant["tool_calls"] = [
                {"id": ident, "type": "function",
                 "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                for ident, c in zip(ids, call.tool_calls, strict=True)]
        messages.append(assistant)
        for ident, c in zip(ids, call.tool_calls, strict=True):
            result = c.error if c.error is not None else c.result
            messages.append({"role": "tool", "tool_call_id": ident,
                             "content": result if isinstance(result, str)
                             else json.dumps(result)})
    messages.append({"role": "user", "content": _content(current)})
    return messages


def chat_request(messages: list[dict[str, Any]], model: str | None) -> dict[str, Any]:
    """The chat-completions request body an ``output: openai`` entry is sent."""
    body: dict[str, Any] = {"messages": messages}
    if model:
        body["model"] = model
    return body


def priced(usage: Usage | None, prices: Mapping[str, tuple[float, float]]) -> Usage | None:
    """``usage`` with its cost from ``prices`` (US dollars per 1M input and output tokens by
    model) when it reports none; no price for its model means no cost, never a guess."""
    if usage is None or usage.cost_usd is not None or usage.model is None \
            or usage.model not in prices or usage.tokens is None:
        return usage
    per_input, per_output = prices[usage.model]
    cost = ((usage.input_tokens or 0) * per_input + (usage.output_tokens or 0) * per_output) / 1e6
    return Usage(usage.input_tokens, usage.output_tokens, cost, usage.model)
