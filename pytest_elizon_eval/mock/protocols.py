"""The three APIs the mock server speaks, as plain data (docs/mock.md#endpoints).

OpenAI chat completions, the OpenAI Responses API and Anthropic's messages API: a
request body read into a :class:`~.model.MockRequest`, a :class:`~.model.MockResponse`
written as the API's reply body or as its stream of server-sent events, and the API's
own error body. No I/O: ``server`` moves the bytes.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .model import DEFAULT_MODEL, MockRequest, MockResponse, MockToolCall, MockUsage, message_text

__all__ = ["CHAT", "ENDPOINTS", "MESSAGES", "RESPONSES", "BadRequest", "Reply", "error_body",
           "family", "reply", "request_of"]

CHAT = "openai.chat"
RESPONSES = "openai.responses"
MESSAGES = "anthropic.messages"
#: Path → API. OpenAI clients take ``…/v1`` as their base URL, Anthropic's the server root.
ENDPOINTS = {"/v1/chat/completions": CHAT, "/v1/responses": RESPONSES, "/v1/messages": MESSAGES}

_FINISH = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length",
           "stop_sequence": "stop"}
_ANTHROPIC_ERRORS = {400: "invalid_request_error", 404: "not_found_error",
                     405: "invalid_request_error", 413: "request_too_large", 500: "api_error"}


class BadRequest(ValueError):
    """A request body the API refuses with 400; the message says what is wrong."""


def family(api: str | None, path: str, headers: Mapping[str, str]) -> str:
    """``anthropic`` or ``openai``: whose error shape a request gets, even at an unknown
    path (an Anthropic client sends ``anthropic-version``)."""
    if api == MESSAGES or path.startswith("/v1/messages") or "anthropic-version" in headers:
        return "anthropic"
    return "openai"


def error_body(family_name: str, status: int, message: str) -> dict[str, Any]:
    """The error body each API sends, which its SDK turns into its own exception."""
    if family_name == "anthropic":
        return {"type": "error",
                "error": {"type": _ANTHROPIC_ERRORS.get(status, "api_error"), "message": message}}
    return {"error": {"message": message, "type": "server_error" if status >= 500
                      else "invalid_request_error", "param": None, "code": None}}


# -- requests ------------------------------------------------------------------------------

def _messages(value: object, name: str) -> tuple[Mapping[str, Any], ...]:
    if not isinstance(value, list) or not value:
        raise BadRequest(f"{name} must be a non-empty array of messages")
    for index, message in enumerate(value):
        if not isinstance(message, dict):
            raise BadRequest(f"{name}[{index}] must be an object, not {json.dumps(message)[:80]}")
    return tuple(value)


def _shown(value: object) -> str:
    """A value of the request as a message quotes it (JSON, cut short)."""
    return json.dumps(value, ensure_ascii=False, default=repr)[:80]


def _ident(value: object, where: str, *, required: bool = False) -> str | None:
    """A tool call's id as the request gives it: a string (or, unless ``required``, left
    out); :class:`BadRequest` naming ``where`` for anything else, as both APIs refuse."""
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise BadRequest(f"{where} must be a string, not {_shown(value)}")
    return value


def _check_tool_results(api: str, messages: tuple[Mapping[str, Any], ...]) -> None:
    """A tool result must answer a call of the assistant message before it, as both real
    APIs insist: an application that loses a call's id fails here, as it would there. An
    id that is not a string, or ``tool_calls`` that are not an array of objects, are
    refused as the APIs refuse them."""
    issued: set[str | None] = set()
    for index, message in enumerate(messages):
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        where = f"messages[{index}]" if api != RESPONSES else f"input[{index}]"
        if api == RESPONSES:  # items, not a conversation of turns: the ids' types only
            _ident(message.get("call_id"), f"{where}.call_id")
            continue
        if message.get("role") == "assistant":
            calls = message.get("tool_calls")
            if calls is not None and not isinstance(calls, list):
                raise BadRequest(f"{where}.tool_calls must be an array, not {_shown(calls)}")
            issued = set()
            for number, call in enumerate(calls or ()):
                if not isinstance(call, dict):
                    raise BadRequest(f"{where}.tool_calls[{number}] must be an object, not "
                                     f"{_shown(call)}")
                issued.add(_ident(call.get("id"), f"{where}.tool_calls[{number}].id"))
            issued |= {_ident(b.get("id"), f"{where}.content[{number}].id")
                       for number, b in enumerate(blocks)
                       if isinstance(b, dict) and b.get("type") == "tool_use"}
            continue
        if api == CHAT and message.get("role") == "tool":
            answered = [_ident(message.get("tool_call_id"), f"{where}.tool_call_id",
                               required=True)]
        elif api == MESSAGES:
            answered = [_ident(b.get("tool_use_id"), f"{where}.content[{number}].tool_use_id",
                               required=True)
                        for number, b in enumerate(blocks)
                        if isinstance(b, dict) and b.get("type") == "tool_result"]
        else:
            answered = []
        for ident in answered:
            if ident not in issued:
                raise BadRequest(
                    f"{where}: the tool result for {json.dumps(ident)} answers no "
                    f"tool call of the assistant message before it (its calls: "
                    f"{', '.join(sorted(map(str, issued))) or 'none'})")


def request_of(api: str, body: object) -> MockRequest:
    """The request an API's body makes; :class:`BadRequest` for one the API would refuse.
    Only what the mock needs to answer is required: the conversation."""
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    for key, kind, described in (("model", str, "a string"), ("stream", bool, "true or false"),
                                 ("tools", list, "an array")):
        if body.get(key) is not None and not isinstance(body[key], kind):
            raise BadRequest(f"{key} must be {described}, not {json.dumps(body[key])}")
    tools = tuple(body.get("tools") or ())
    if not all(isinstance(t, dict) for t in tools):
        raise BadRequest("tools must be an array of objects")
    if api == CHAT:
        messages = _messages(body.get("messages"), "messages")
        system = "\n".join(text for m in messages if m.get("role") in ("system", "developer")
                           and (text := message_text(m.get("content"))) is not None) or None
    elif api == RESPONSES:
        given = body.get("input")
        if isinstance(given, str):
            messages = ({"role": "user", "content": given},)
        else:
            messages = _messages(given, "input")
        system = body.get("instructions") if isinstance(body.get("instructions"), str) else None
    else:
        messages = _messages(body.get("messages"), "messages")
        given = body.get("system")
        if given is not None and not isinstance(given, (str, list)):
            raise BadRequest("system must be a string or an array of text blocks")
        system = message_text(given)
    _check_tool_results(api, messages)
    return MockRequest(api, messages, model=body.get("model"), system=system, tools=tools,
                       stream=bool(body.get("stream")), body=body)


# -- replies -------------------------------------------------------------------------------

def _words(text: str) -> list[str]:
    """Text as a stream sends it: a word (with the spaces after it) at a time."""
    return re.findall(r"\s*\S+\s*|\s+", text)


def _slices(text: str, size: int = 16) -> list[str]:
    """A tool call's arguments as a stream sends them: in pieces that are not JSON alone."""
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def _calls(response: MockResponse) -> list[tuple[MockToolCall, str]]:
    """Each tool call with its arguments as the JSON text the OpenAI APIs send."""
    return [(c, json.dumps(dict(c.arguments), ensure_ascii=False)) for c in response.tool_calls]


def _event(name: str | None, data: object) -> bytes:
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


@dataclass(frozen=True)
class Reply:
    """How one answered request is written: ``ident`` numbers the server's answers (the
    ids of the reply), ``created`` is its Unix time."""

    api: str
    request: MockRequest
    response: MockResponse
    ident: int
    created: int

    @property
    def usage(self) -> MockUsage:
        return self.response.usage or MockUsage()

    @property
    def model(self) -> str:
        return self.response.model or self.request.model or DEFAULT_MODEL


def reply(api: str, request: MockRequest, response: MockResponse, ident: int, created: int
          ) -> dict[str, Any] | Iterator[bytes]:
    """The reply body (a JSON object), or for a streamed request its server-sent events."""
    answer = Reply(api, request, response, ident, created)
    if api == CHAT:
        return _chat_stream(answer) if request.stream else _chat(answer)
    if api == RESPONSES:
        return _responses_stream(answer) if request.stream else _response(answer, "completed")
    return _messages_stream(answer) if request.stream else _message(answer)


def _chat(answer: Reply) -> dict[str, Any]:
    response, usage = answer.response, answer.usage
    message: dict[str, Any] = {"role": "assistant", "content": response.content,
                               "refusal": None}
    if response.tool_calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": a}}
            for c, a in _calls(response)]
    return {"id": f"chatcmpl-mock-{answer.ident}", "object": "chat.completion",
            "created": answer.created, "model": answer.model, "system_fingerprint": None,
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": _FINISH[response.stop_reason or "end_turn"]}],
            "usage": {"prompt_tokens": usage.input_tokens,
                      "completion_tokens": usage.output_tokens,
                      "total_tokens": usage.total_tokens}}


def _chat_stream(answer: Reply) -> Iterator[bytes]:
    response, usage = answer.response, answer.usage
    options = answer.request.body.get("stream_options")
    with_usage = isinstance(options, dict) and options.get("include_usage") is True
    base = {"id": f"chatcmpl-mock-{answer.ident}", "object": "chat.completion.chunk",
            "created": answer.created, "model": answer.model, "system_fingerprint": None}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        data: dict[str, Any] = {**base, "choices": [{"index": 0, "delta": delta,
                                                     "logprobs": None, "finish_reason": finish}]}
        if with_usage:  # as OpenAI does: every chunk says usage null, but the last
            data["usage"] = None
        return _event(None, data)

    yield chunk({"role": "assistant", "content": "" if response.content is not None else None})
    for piece in _words(response.content or ""):
        yield chunk({"content": piece})
    for index, (call, arguments) in enumerate(_calls(response)):
        yield chunk({"tool_calls": [{"index": index, "id": call.id, "type": "function",
                                     "function": {"name": call.name, "arguments": ""}}]})
        for piece in _slices(arguments):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, _FINISH[response.stop_reason or "end_turn"])
    if with_usage:
        yield _event(None, {**base, "choices": [], "usage": {
            "prompt_tokens": usage.input_tokens, "completion_tokens": usage.output_tokens,
            "total_tokens": usage.total_tokens}})
    yield b"data: [DONE]\n\n"


def _output_items(answer: Reply) -> list[dict[str, Any]]:
    """The Responses API's ``output``: a message with the text, then each function call."""
    response = answer.response
    items: list[dict[str, Any]] = []
    if response.content or not response.tool_calls:
        items.append({"type": "message", "id": f"msg_mock_{answer.ident}",
                      "status": "completed", "role": "assistant",
                      "content": [{"type": "output_text", "text": response.content or "",
                                   "annotations": [], "logprobs": []}]})
    items += [{"type": "function_call", "id": f"fc_{c.id}", "call_id": c.id, "name": c.name,
               "arguments": a, "status": "completed"}
              for c, a in _calls(response)]
    return items


def _response(answer: Reply, status: str, output: list[dict[str, Any]] | None = None
              ) -> dict[str, Any]:
    """A Responses API ``Response``: ``status`` ``in_progress`` while it streams."""
    body, usage = answer.request.body, answer.usage
    done = status != "in_progress"
    cut = done and answer.response.stop_reason == "max_tokens"
    return {
        "id": f"resp_mock_{answer.ident}", "object": "response", "created_at": answer.created,
        "status": "incomplete" if cut else status, "model": answer.model,
        "output": (_output_items(answer) if output is None else output) if done else [],
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if cut else None,
        "instructions": answer.request.system,
        "metadata": body.get("metadata") or {}, "parallel_tool_calls": True,
        "temperature": body.get("temperature"), "top_p": body.get("top_p"),
        "tool_choice": body.get("tool_choice", "auto"), "tools": list(answer.request.tools),
        "max_output_tokens": body.get("max_output_tokens"),
        "previous_response_id": body.get("previous_response_id"),
        "text": {"format": {"type": "text"}},
        "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
                  "total_tokens": usage.total_tokens,
                  "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens_details": {"reasoning_tokens": 0}} if done else None}


def _responses_stream(answer: Reply) -> Iterator[bytes]:
    sequence = itertools.count()

    def event(kind: str, **data: Any) -> bytes:
        return _event(kind, {"type": kind, "sequence_number": next(sequence), **data})

    started = _response(answer, "in_progress")
    yield event("response.created", response=started)
    yield event("response.in_progress", response=started)
    items = _output_items(answer)
    for index, item in enumerate(items):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            yield event("response.output_item.added", output_index=index,
                        item={**item, "status": "in_progress", "content": []})
            yield event("response.content_part.added", item_id=item["id"], output_index=index,
                        content_index=0, part=part)
            for piece in _words(text):
                yield event("response.output_text.delta", item_id=item["id"],
                            output_index=index, content_index=0, delta=piece, logprobs=[])
            yield event("response.output_text.done", item_id=item["id"], output_index=index,
                        content_index=0, text=text, logprobs=[])
            yield event("response.content_part.done", item_id=item["id"], output_index=index,
                        content_index=0, part={**part, "text": text})
        else:
            yield event("response.output_item.added", output_index=index,
                        item={**item, "status": "in_progress", "arguments": ""})
            for piece in _slices(item["arguments"]):
                yield event("response.function_call_arguments.delta", item_id=item["id"],
                            output_index=index, delta=piece)
            yield event("response.function_call_arguments.done", item_id=item["id"],
                        output_index=index, name=item["name"], arguments=item["arguments"])
        yield event("response.output_item.done", output_index=index, item=item)
    final = _response(answer, "completed", items)
    yield event(f"response.{final['status']}", response=final)


def _message_usage(usage: MockUsage, output_tokens: int) -> dict[str, int]:
    return {"input_tokens": usage.input_tokens, "output_tokens": output_tokens,
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def _blocks(answer: Reply) -> list[dict[str, Any]]:
    """An Anthropic message's content: the text (if any, or if nothing else), each tool use."""
    response = answer.response
    blocks: list[dict[str, Any]] = []
    if response.content or not response.tool_calls:
        blocks.append({"type": "text", "text": response.content or ""})
    blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.arguments)}
               for c in response.tool_calls]
    return blocks


def _stop_sequence(answer: Reply) -> str | None:
    """The sequence an answer stopped at: the request's first, when it stopped at one."""
    stops = answer.request.body.get("stop_sequences")
    if answer.response.stop_reason == "stop_sequence" and isinstance(stops, list) and stops:
        return str(stops[0])
    return None


def _message(answer: Reply, content: list[dict[str, Any]] | None = None,
             stopped: bool = True) -> dict[str, Any]:
    usage = answer.usage
    return {"id": f"msg_mock_{answer.ident}", "type": "message", "role": "assistant",
            "model": answer.model, "content": _blocks(answer) if content is None else content,
            "stop_reason": answer.response.stop_reason if stopped else None,
            "stop_sequence": _stop_sequence(answer) if stopped else None,
            "usage": _message_usage(usage, usage.output_tokens if stopped else 0)}


def _messages_stream(answer: Reply) -> Iterator[bytes]:
    def event(kind: str, **data: Any) -> bytes:
        return _event(kind, {"type": kind, **data})

    yield event("message_start", message=_message(answer, [], stopped=False))
    for index, block in enumerate(_blocks(answer)):
        if block["type"] == "text":
            yield event("content_block_start", index=index,
                        content_block={"type": "text", "text": ""})
            for piece in _words(block["text"]):
                yield event("content_block_delta", index=index,
                            delta={"type": "text_delta", "text": piece})
        else:
            yield event("content_block_start", index=index,
                        content_block={**block, "input": {}})
            for piece in _slices(json.dumps(block["input"], ensure_ascii=False)):
                yield event("content_block_delta", index=index,
                            delta={"type": "input_json_delta", "partial_json": piece})
        yield event("content_block_stop", index=index)
    yield event("message_delta",
                delta={"stop_reason": answer.response.stop_reason,
                       "stop_sequence": _stop_sequence(answer)},
                usage={"output_tokens": answer.usage.output_tokens})
    yield event("message_stop")
