"""Answers from the model SDKs people use, recognised by shape (docs/contract.md#sdk-answers).

An entry point may return the OpenAI SDK's ``ChatCompletion`` or Responses API
``Response``, Anthropic's ``Message``, LiteLLM's ``ModelResponse`` or a
LangChain ``AIMessage`` — or stream their chunks (``ChatCompletionChunk``,
Anthropic's stream events, Responses stream events, ``AIMessageChunk``). Each
is read by the fields it has (``model_dump()``), never by importing those
packages: they stay optional, and a version that adds fields still reads.

:func:`read_sdk` says what one object is (None: not an SDK answer),
:func:`is_chunk` whether a streamed object is an SDK chunk, :func:`join_chunks`
assembles a stream into one answer. The result, :class:`SdkAnswer`, is plain
data that :class:`~.calls.Answer` is built from. Stdlib only; no pytest import.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["KINDS", "OPENAI_STREAM_USAGE", "REFUSAL_MARK", "SdkAnswer", "SdkShapeError",
           "dump_of", "is_chunk", "join_chunks", "join_openai", "read_as", "read_sdk"]

#: The mark a refusal's text starts with: OpenAI's ``refusal`` (``content: null``), a
#: Responses API ``refusal`` part, Anthropic's ``stop_reason: refusal``. Kept as the answer's
#: text so that ``contains`` and probes see it; "refused" also meets a probe's ``mustRefuse``
#: (docs/contract.md#answers).
REFUSAL_MARK = "[refused] "

#: Why an OpenAI stream's tokens are unknown: it reports usage only when asked to.
OPENAI_STREAM_USAGE = ("the OpenAI stream reported no usage: request it with "
                       "stream_options={\"include_usage\": True}")

#: What each kind is called in messages.
KINDS = {"openai": "an OpenAI ChatCompletion", "responses": "an OpenAI Responses API Response",
         "anthropic": "an Anthropic Message", "litellm": "a LiteLLM ModelResponse",
         "langchain": "a LangChain AIMessage"}

_ANTHROPIC_EVENTS = frozenset({"message_start", "content_block_start", "content_block_delta",
                               "content_block_stop", "message_delta", "message_stop", "ping"})


class SdkShapeError(ValueError):
    """An object is not the SDK answer it was read as; the message says what is missing."""


@dataclass(frozen=True)
class SdkAnswer:
    """One SDK answer as plain data: its text (``""`` when it only called tools), its tool
    calls as ``(name, arguments, id)``, and its usage (None where not reported).
    ``input_tokens`` counts cached input tokens too; the cache counts say how many of them
    were read from and written to the prompt cache (docs/contract.md#cost)."""

    kind: str
    text: str
    tool_calls: tuple[tuple[str, Any, str | None], ...] = ()
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    model: str | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    #: Why the usage is unknown, when that is known (a stream not asked for its usage).
    usage_missing: str | None = None

    @property
    def has_usage(self) -> bool:
        return self.input_tokens is not None or self.output_tokens is not None \
            or self.cost_usd is not None


def dump_of(value: object) -> dict[str, Any] | None:
    """A pydantic model's fields as JSON-like data (the shape every SDK object has)."""
    dump = getattr(value, "model_dump", None)
    if not callable(dump) or not hasattr(type(value), "model_fields"):
        return None
    try:
        data = dump(mode="json")
    except TypeError:  # pydantic v1-style models take no mode
        data = dump()
    return data if isinstance(data, dict) else None


def _arguments(raw: object) -> Any:
    """OpenAI sends arguments as a JSON string: parsed, or kept as text when not JSON."""
    if isinstance(raw, str):
        if not raw.strip():
            return {}
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):
            return raw
    return raw


def _text_of(content: object) -> str:
    """Text of content given as a string or as a list of blocks (``{"type": "text", …}``)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(block.get("text") or "") for block in content
                       if isinstance(block, Mapping)
                       and block.get("type") in ("text", "output_text"))
    return ""


def _map(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _cost(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _cached(value: object) -> int | None:
    """A cache count; 0 as None (nothing cached says no more than no count)."""
    return _count(value) or None


#: Tokens in, out, read from the prompt cache and written to it (None: not reported).
_Counts = tuple[int | None, int | None, int | None, int | None]


def _openai_usage(usage: Mapping[str, Any], tokens_in: str, tokens_out: str, details: str
                  ) -> _Counts:
    """OpenAI's usage (chat: ``prompt_tokens``, Responses: ``input_tokens``): the cached
    tokens its details name are already counted in the input tokens, so they are only
    noted, never added (docs/contract.md#cost)."""
    detail = _map(usage.get(details))
    return (_count(usage.get(tokens_in)), _count(usage.get(tokens_out)),
            _cached(detail.get("cached_tokens")), _cached(detail.get("cache_write_tokens")))


def _anthropic_usage(usage: Mapping[str, Any]) -> _Counts:
    """Anthropic's usage: its ``input_tokens`` leaves out the tokens read from and written to
    the cache, which are billed too, so they are added (docs/contract.md#cost)."""
    read = _count(usage.get("cache_read_input_tokens"))
    write = _count(usage.get("cache_creation_input_tokens"))
    base = _count(usage.get("input_tokens"))
    total = None if base is None and read is None and write is None \
        else (base or 0) + (read or 0) + (write or 0)
    return total, _count(usage.get("output_tokens")), read or None, write or None


def _answer(kind: str, text: str, calls: tuple[tuple[str, Any, str | None], ...],
            counts: _Counts, model: object, cost: float | None = None,
            missing: str | None = None) -> SdkAnswer:
    tokens_in, tokens_out, read, written = counts
    return SdkAnswer(kind, text, calls, tokens_in, tokens_out, cost,
                     model if isinstance(model, str) else None, read, written, missing)


def _refused(text: str, refusal: str | None = None) -> str:
    """The answer's text with its refusal marked (docs/contract.md#answers): OpenAI's
    ``refusal`` (a text of its own) after any text; with no refusal text (Anthropic's
    ``stop_reason: refusal``), the text it stopped at."""
    if refusal is None:
        return REFUSAL_MARK + text if text else REFUSAL_MARK.rstrip()
    return (f"{text}\n" if text else "") + REFUSAL_MARK + refusal


def _chat_completion(data: Mapping[str, Any], kind: str, cost: float | None) -> SdkAnswer:
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping) \
            or not isinstance(choices[0].get("message"), Mapping):
        raise SdkShapeError(f"{KINDS[kind]} needs choices[0].message; this one has none")
    message = choices[0]["message"]
    calls = []
    for index, call in enumerate(message.get("tool_calls") or ()):
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise SdkShapeError(f"{KINDS[kind]}: tool_calls[{index}] has no function.name")
        calls.append((function["name"], _arguments(function.get("arguments")),
                      call.get("id") if isinstance(call.get("id"), str) else None))
    text = _text_of(message.get("content"))
    if isinstance(message.get("refusal"), str) and message["refusal"]:
        text = _refused(text, message["refusal"])  # content is null: the refusal is the text
    usage = _openai_usage(_map(data.get("usage")), "prompt_tokens", "completion_tokens",
                          "prompt_tokens_details")
    return _answer(kind, text, tuple(calls), usage, data.get("model"), cost)


def _responses(data: Mapping[str, Any]) -> SdkAnswer:
    output = data.get("output")
    if not isinstance(output, list):
        raise SdkShapeError("an OpenAI Responses API Response needs an output list")
    texts, calls = [], []
    for item in output:
        if not isinstance(item, Mapping):
            continue
        if item.get("type") == "message":
            texts.append(_text_of(item.get("content")))
            parts = item.get("content")
            for part in parts if isinstance(parts, list) else ():  # a refusal: a part of its own
                if isinstance(part, Mapping) and part.get("type") == "refusal" \
                        and isinstance(part.get("refusal"), str) and part["refusal"]:
                    texts[-1] = _refused(texts[-1], part["refusal"])
        elif item.get("type") == "function_call" and isinstance(item.get("name"), str):
            calls.append((item["name"], _arguments(item.get("arguments")),
                          item.get("call_id") if isinstance(item.get("call_id"), str) else None))
    usage = _openai_usage(_map(data.get("usage")), "input_tokens", "output_tokens",
                          "input_tokens_details")
    return _answer("responses", "".join(texts), tuple(calls), usage, data.get("model"))


def _anthropic(data: Mapping[str, Any]) -> SdkAnswer:
    content = data.get("content")
    if not isinstance(content, list):
        raise SdkShapeError("an Anthropic Message needs a content list")
    calls = tuple((block["name"], block.get("input"),
                   block.get("id") if isinstance(block.get("id"), str) else None)
                  for block in content if isinstance(block, Mapping)
                  and block.get("type") == "tool_use" and isinstance(block.get("name"), str))
    text = _text_of(content)
    if data.get("stop_reason") == "refusal":  # what it said before it stopped, marked
        text = _refused(text)
    return _answer("anthropic", text, calls, _anthropic_usage(_map(data.get("usage"))),
                   data.get("model"))


def _langchain(data: Mapping[str, Any]) -> SdkAnswer:
    if "content" not in data:
        raise SdkShapeError("a LangChain AIMessage needs content")
    calls = tuple((call["name"], call.get("args"),
                   call.get("id") if isinstance(call.get("id"), str) else None)
                  for call in data.get("tool_calls") or ()
                  if isinstance(call, Mapping) and isinstance(call.get("name"), str))
    usage = _map(data.get("usage_metadata"))
    details = _map(usage.get("input_token_details"))  # already counted in input_tokens
    meta = _map(data.get("response_metadata"))
    model = meta.get("model_name") or meta.get("model")
    text = _text_of(data.get("content"))
    refusal = _map(data.get("additional_kwargs")).get("refusal")  # OpenAI's, as LangChain keeps it
    if isinstance(refusal, str) and refusal:
        text = _refused(text, refusal)
    return SdkAnswer("langchain", text, calls,
                     _count(usage.get("input_tokens")), _count(usage.get("output_tokens")), None,
                     model if isinstance(model, str) else None,
                     _cached(details.get("cache_read")), _cached(details.get("cache_creation")))


def _kind(data: Mapping[str, Any], value: object) -> str | None:
    if data.get("object") == "chat.completion" and "choices" in data:
        # LiteLLM's ModelResponse has OpenAI's shape and keeps its cost aside
        return "litellm" if isinstance(getattr(value, "_hidden_params", None), Mapping) \
            else "openai"
    if data.get("object") == "response" and "output" in data:
        return "responses"
    if data.get("type") == "message" and data.get("role") == "assistant":
        return "anthropic"
    if data.get("type") in ("ai", "AIMessageChunk") and "content" in data:
        return "langchain"
    return None


def _read(data: Mapping[str, Any], kind: str, value: object) -> SdkAnswer:
    if kind in ("openai", "litellm"):
        hidden = getattr(value, "_hidden_params", None)
        cost = _cost(hidden.get("response_cost")) if isinstance(hidden, Mapping) else None
        return _chat_completion(data, kind, cost)
    if kind == "responses":
        return _responses(data)
    if kind == "anthropic":
        return _anthropic(data)
    return _langchain(data)


def read_sdk(value: object) -> SdkAnswer | None:
    """``value`` read as an SDK answer, or None when it has no SDK answer's shape."""
    data = dump_of(value)
    if data is None:
        return None
    kind = _kind(data, value)
    return None if kind is None else _read(data, kind, value)


def read_as(value: object, kinds: Sequence[str]) -> SdkAnswer:
    """``value`` (an SDK object, its ``model_dump()``, or a stream of its chunks) read as
    one of ``kinds``; :class:`SdkShapeError` says what it is not."""
    wanted = " or ".join(KINDS[k] for k in kinds)
    if isinstance(value, SdkAnswer):
        read = value
    else:
        data = value if isinstance(value, Mapping) else dump_of(value)
        if data is None:
            if isinstance(value, (list, tuple)) or hasattr(value, "__next__"):
                read = join_chunks(list(value))  # type: ignore[call-overload]
            else:
                raise SdkShapeError(f"expected {wanted}, got a {type(value).__name__}")
        else:
            kind = _kind(data, value)
            if kind == "openai" and "litellm" in kinds and "openai" not in kinds:
                kind = "litellm"  # a LiteLLM response given as its dump has OpenAI's shape
            if kind is None:
                raise SdkShapeError(f"expected {wanted}; this {type(value).__name__} has "
                                    f"none of their fields (keys: {sorted(data)[:12]})")
            read = _read(data, kind, value)
    if read.kind not in kinds and not (read.kind == "litellm" and "openai" in kinds):
        raise SdkShapeError(f"expected {wanted}, got {KINDS[read.kind]}")
    return read


# -- streams ----------------------------------------------------------------------------------

def _chunk_kind(data: Mapping[str, Any]) -> str | None:
    if data.get("object") == "chat.completion.chunk":
        return "openai"
    kind = data.get("type")
    if kind in _ANTHROPIC_EVENTS:
        return "anthropic"
    if kind == "AIMessageChunk":
        return "langchain"
    if isinstance(kind, str) and kind.startswith("response."):
        return "responses"
    return None


def is_chunk(value: object) -> bool:
    """Whether a streamed object is a chunk of an SDK's stream."""
    data = value if isinstance(value, Mapping) else dump_of(value)
    return data is not None and _chunk_kind(data) is not None


class _Calls:
    """Tool calls assembled from their pieces, by index."""

    def __init__(self) -> None:
        self.by_index: dict[object, list[Any]] = {}

    def piece(self, index: object, name: object, ident: object, arguments: object) -> None:
        call = self.by_index.setdefault(index, [None, "", None])
        if isinstance(name, str) and name:
            call[0] = name
        if isinstance(arguments, str):
            call[1] += arguments
        elif isinstance(arguments, Mapping) and arguments:
            call[1] = json.dumps(arguments)
        if isinstance(ident, str) and ident:
            call[2] = ident

    def unnamed(self) -> list[object]:
        """The index of each call no piece named."""
        return [index for index, (name, _, _) in self.by_index.items()
                if not isinstance(name, str)]

    def done(self) -> tuple[tuple[str, Any, str | None], ...]:
        return tuple((name, _arguments(args), ident)
                     for name, args, ident in self.by_index.values() if isinstance(name, str))


def join_openai(chunks: Sequence[Mapping[str, Any]]) -> SdkAnswer:
    """OpenAI chat-completion chunks (an SDK's, or a server's events read as JSON) assembled
    into one answer; :class:`SdkShapeError` names the chunk whose shape is wrong."""
    text: list[str] = []
    refusal: list[str] = []
    calls = _Calls()
    usage: Mapping[str, Any] | None = None
    model = None
    for number, chunk in enumerate(chunks):
        model = chunk.get("model") or model
        if isinstance(chunk.get("usage"), Mapping):
            usage = chunk["usage"]
        choices = chunk.get("choices") or ()
        if not isinstance(choices, (list, tuple)):
            raise SdkShapeError(f"chunk {number}: choices is {_a(choices)}, not a list")
        for choice in choices:
            if not isinstance(choice, Mapping):
                raise SdkShapeError(f"chunk {number}: a choice is {_a(choice)}, not a mapping")
            delta = choice.get("delta")
            if not isinstance(delta, Mapping) or choice.get("index", 0) != 0:
                continue
            # as strict as a chat completion read whole (docs/contract.md#answers): a piece
            # of the wrong shape is never passed over, as if the model had not sent it
            for field, parts in (("content", text), ("refusal", refusal)):
                if delta.get(field) is not None and not isinstance(delta[field], str):
                    raise SdkShapeError(f"chunk {number}: delta.{field} is "
                                        f"{_a(delta[field])}, not text")
                parts.append(delta.get(field) or "")
            pieces = delta.get("tool_calls") or ()
            if not isinstance(pieces, (list, tuple)):
                raise SdkShapeError(f"chunk {number}: delta.tool_calls is {_a(pieces)}, "
                                    "not a list")
            for call in pieces:
                function = call.get("function") or {} if isinstance(call, Mapping) else None
                if not isinstance(function, Mapping):
                    raise SdkShapeError(f"chunk {number}: a tool call piece is not a mapping "
                                        "with a function")
                name = function.get("name")
                if name is not None and not isinstance(name, str):
                    raise SdkShapeError(f"chunk {number}: a tool call's function.name is "
                                        f"{_a(name)}, not text")
                calls.piece(call.get("index"), name, call.get("id"), function.get("arguments"))
    unnamed = calls.unnamed()
    if unnamed:  # a call dropped would let notCalled or maxCalls: 0 pass
        raise SdkShapeError(f"the tool call at index {unnamed[0]!r} has no function.name")
    said = "".join(text)
    if "".join(refusal):
        said = _refused(said, "".join(refusal))
    counts = _openai_usage(usage or {}, "prompt_tokens", "completion_tokens",
                           "prompt_tokens_details")
    return _answer("openai", said, calls.done(), counts, model,
                   missing=OPENAI_STREAM_USAGE if usage is None else None)


def _a(value: object) -> str:
    name = type(value).__name__
    return f"{'an' if name[:1] in 'aeiou' else 'a'} {name}"


def _join_anthropic(events: list[Mapping[str, Any]]) -> SdkAnswer:
    text, calls = [], _Calls()
    counts: dict[str, object] = {}  # the usage as Anthropic words it
    model = None
    refused = False
    for event in events:
        kind = event.get("type")
        if kind == "message_start" and isinstance(event.get("message"), Mapping):
            message = event["message"]
            model = message.get("model")
            counts = dict(_map(message.get("usage")))
        elif kind == "content_block_start":
            block = event.get("content_block") or {}
            if block.get("type") == "tool_use":
                calls.piece(event.get("index"), block.get("name"), block.get("id"),
                            block.get("input"))
            elif block.get("type") == "text" and block.get("text"):
                text.append(block["text"])
        elif kind == "content_block_delta":
            delta = event.get("delta") or {}
            if delta.get("type") == "text_delta":
                text.append(str(delta.get("text") or ""))
            elif delta.get("type") == "input_json_delta":
                calls.piece(event.get("index"), None, None, delta.get("partial_json") or "")
        elif kind == "message_delta":
            refused = refused or _map(event.get("delta")).get("stop_reason") == "refusal"
            # its counts are the message's so far: each one given (not 0) replaces the start's
            counts.update((k, v) for k, v in _map(event.get("usage")).items() if _count(v))
    said = "".join(text)
    return _answer("anthropic", _refused(said) if refused else said, calls.done(),
                   _anthropic_usage(counts), model)


def _join_langchain(chunks: list[Mapping[str, Any]]) -> SdkAnswer:
    text, calls = [], _Calls()
    tokens_in = tokens_out = read = written = None
    model = None
    for chunk in chunks:
        text.append(_text_of(chunk.get("content")))
        for call in chunk.get("tool_call_chunks") or ():
            calls.piece(call.get("index"), call.get("name"), call.get("id"), call.get("args"))
        usage = chunk.get("usage_metadata")
        if isinstance(usage, Mapping):  # each chunk's usage adds to the total
            tokens_in = (tokens_in or 0) + (_count(usage.get("input_tokens")) or 0)
            tokens_out = (tokens_out or 0) + (_count(usage.get("output_tokens")) or 0)
            details = _map(usage.get("input_token_details"))
            read = (read or 0) + (_count(details.get("cache_read")) or 0)
            written = (written or 0) + (_count(details.get("cache_creation")) or 0)
        meta = chunk.get("response_metadata") or {}
        model = meta.get("model_name") or meta.get("model") or model
    return SdkAnswer("langchain", "".join(text), calls.done(), tokens_in, tokens_out, None,
                     model if isinstance(model, str) else None, read or None, written or None)


def _join_responses(events: list[Mapping[str, Any]]) -> SdkAnswer:
    for event in reversed(events):
        if event.get("type") == "response.completed" and isinstance(event.get("response"),
                                                                     Mapping):
            return _responses(event["response"])
    raise SdkShapeError("the Responses API stream ended without a response.completed event")


def join_chunks(chunks: list[object]) -> SdkAnswer:
    """A stream of one SDK's chunks assembled into one answer."""
    dumps = []
    for index, chunk in enumerate(chunks):
        data = chunk if isinstance(chunk, Mapping) else dump_of(chunk)
        if data is None or _chunk_kind(data) is None:
            raise SdkShapeError(f"chunk {index} of the stream is a {type(chunk).__name__}, "
                                "not an SDK chunk; stream strings or one SDK's chunks")
        dumps.append(data)
    if not dumps:
        raise SdkShapeError("the stream held no chunks")
    kinds = {_chunk_kind(d) for d in dumps}
    if len(kinds) > 1:
        raise SdkShapeError(f"the stream mixes chunks of several SDKs: {sorted(map(str, kinds))}")
    kind = kinds.pop()
    if kind == "openai":
        return join_openai(dumps)
    if kind == "anthropic":
        return _join_anthropic(dumps)
    if kind == "langchain":
        return _join_langchain(dumps)
    return _join_responses(dumps)
