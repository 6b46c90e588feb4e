"""An agent's answer, read from whatever the entry point gave, and the conversation it sees.

Owns the step from "the entry point returned / printed / replied this" to an
:class:`~.calls.EntryCall` with its text, structured value, tool calls and
usage (docs/contract.md#answers):

* :func:`from_return` — what a Python callable returned: a string, a
  JSON-like value, a pydantic model, or an :class:`~.calls.Answer`.
* :func:`from_reply` — what a command printed or a service replied, read by
  its ``output:`` mode: ``text``, ``json``, ``answer`` (the documented JSON
  envelope of an Answer) or ``openai`` (a chat-completions response, or its
  server-sent events when the request asked for a stream).

and, for conversations, :func:`conversation` (the OpenAI-style message list
an entry point sees) and :func:`chat_request` (the body an ``output:
openai`` entry is sent), :func:`with_tool_results` (an answer's tool calls with
the results the next turn sent back). :func:`priced` costs usage from the user's
prices. No pytest import here.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeGuard

from .calls import Answer, EntryCall, ErrorInfo, OutputError, Rates, ToolCall, Usage
from .sdk_answers import REFUSAL_MARK, SdkAnswer, SdkShapeError, join_openai, read_sdk

__all__ = ["MAX_CONTEXTS", "MAX_CONTEXT_CHARS", "MAX_COST_USD", "MAX_NESTING", "MAX_TOKENS",
           "answer_of", "chat_request", "check_tree", "checked_usage", "contexts_of",
           "conversation", "from_reply", "from_return", "is_token_count", "parse_json",
           "price_for", "priced", "with_tool_results"]

#: Deepest nesting of lists and mappings kept from an entry point: every report must be able
#: to write the answer again within Python's recursion limit (docs/contract.md#answers).
MAX_NESTING = 100
#: Most tokens one answer's usage may count: a signed 64-bit count.
MAX_TOKENS = 2 ** 63 - 1
#: Most US dollars one answer may cost: far above any real call, and sums stay finite.
MAX_COST_USD = 1e9

#: A trail to a value: (the parent's trail, key or index), None at the top.
_Trail = tuple[Any, object] | None


def _path(trail: _Trail, most: int | None = None) -> str:
    keys: list[object] = []
    while trail is not None:
        trail, key = trail
        keys.append(key)
    keys.reverse()
    shown = "$" + "".join(f"[{k}]" if isinstance(k, int) else
                          f".{k}" if isinstance(k, str) and k.isidentifier() else f"[{k!r}]"
                          for k in keys[:most])
    return shown + "…" if most is not None and len(keys) > most else shown


def _not_finite(number: float) -> str:
    return "NaN" if math.isnan(number) else "Infinity" if number > 0 else "-Infinity"


_FINITE = ("numbers must be finite (NaN, Infinity and numbers beyond ±1.8e308, which read "
           "as Infinity, are not)")


def _too_deep(what: str, trail: _Trail = None) -> OutputError:
    at = f" (at {_path(trail, 6)})" if trail is not None else ""
    return OutputError(f"{what}: lists and objects nested more than {MAX_NESTING} levels "
                    f"deep{at}; flatten it")


def check_tree(value: object, what: str) -> None:
    """:class:`OutputError` naming where ``value`` (what an entry point gave, ``what`` in
    words) holds a number that is not finite, or nests lists and mappings more than
    :data:`MAX_NESTING` deep. Walked without recursion: the value may be as deep as its
    parser allowed."""
    if isinstance(value, float) and not math.isfinite(value):
        raise OutputError(f"{what}: {_not_finite(value)}; {_FINITE}")
    if not isinstance(value, (dict, list, tuple)):
        return
    stack: list[tuple[Any, int, _Trail]] = [(value, 1, None)]
    while stack:
        node, depth, trail = stack.pop()
        if depth > MAX_NESTING:
            raise _too_deep(what, trail)
        for key, child in node.items() if isinstance(node, dict) else enumerate(node):
            if isinstance(child, float):
                if not math.isfinite(child):
                    raise OutputError(f"{what}: {_not_finite(child)} at "
                                      f"{_path((trail, key))}; {_FINITE}")
            elif isinstance(child, (dict, list, tuple)):
                stack.append((child, depth + 1, (trail, key)))


def parse_json(text: str, what: str) -> Any:
    """``text`` read as JSON and checked by :func:`check_tree`: ValueError (as from
    ``json.loads``) when it is not JSON, :class:`OutputError` when it cannot be kept."""
    try:
        value = json.loads(text)
    except RecursionError:  # the parser's own limit, far past MAX_NESTING
        raise _too_deep(what) from None
    check_tree(value, what)
    return value


def _json_text(value: object, what: str = "the entry point returned",
               part: str = "the entry point's answer") -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except RecursionError:
        raise _too_deep(part) from None
    except (TypeError, ValueError) as exc:
        raise OutputError(f"{what} a {type(value).__name__} that is not JSON-serializable: "
                          f"{exc}") from None
    check_tree(value, part)  # after dumps, which says what a cycle or an object is
    return text


#: The SDK answers read by shape, for messages (docs/contract.md#sdk-answers).
_SDKS = ("OpenAI ChatCompletion or Response, Anthropic Message, LiteLLM ModelResponse, "
         "LangChain AIMessage")


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
                      "a JSON-like value, a pydantic model, an Answer, an SDK response "
                      f"({_SDKS}) or an iterator of strings or SDK chunks")


def _tool_call(call: object, index: int) -> ToolCall:
    if isinstance(call, Mapping):
        if not isinstance(call.get("name"), str):
            raise OutputError(f"tool call {index} has no 'name' string")
        call = ToolCall.from_data(call)
    if not isinstance(call, ToolCall) or not isinstance(call.name, str):
        raise OutputError(f"tool call {index} is a {type(call).__name__}, not a ToolCall")
    _json_text(call.arguments, f"tool call {index} ({call.name}) has arguments:",
               f"tool call {index} ({call.name}) arguments")
    result = call.result
    try:
        _json_text(result, "", "the result")
    except OutputError as exc:
        try:
            result = repr(result)  # kept as text: a report must be able to show it
        except (RecursionError, ValueError):  # too deep or too long to print as well (ints
            result = str(exc)                 # past 4,300 digits): the reason is kept instead
    error = None if call.error is None else str(call.error)
    ident = None if call.id is None else str(call.id)
    return ToolCall(call.name, call.arguments, result, error, ident)


def _number(value: object) -> str:
    """``value`` for a message: a huge whole number by its size (its digits may be more
    than Python will print)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"a {value.bit_length():,}-bit number"
    if isinstance(value, float) and not math.isfinite(value):
        return _not_finite(value)
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:60] + "…"


def is_token_count(value: object) -> TypeGuard[int]:
    """Whether ``value`` is a token count usage can keep: a whole number from 0 to 64 bits."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOKENS


def _count(value: object, what: str) -> int | None:
    if value is None:
        return None
    if not is_token_count(value):
        raise OutputError(f"usage {what} is {_number(value)}; expected a whole number of "
                          f"tokens from 0 to {MAX_TOKENS:,} (64 bits)")
    return value


def _cost(value: object) -> float | None:
    if value is None:
        return None
    dollars = math.nan
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            dollars = float(value)
        except OverflowError:  # an int too large for a float
            dollars = math.inf
    if not (math.isfinite(dollars) and 0 <= dollars <= MAX_COST_USD):
        raise OutputError(f"usage cost_usd is {_number(value)}; expected a finite number of US "
                          f"dollars from 0 to {MAX_COST_USD:,.0f}")
    return dollars


def _usage(usage: object) -> Usage | None:
    if usage is None:
        return None
    if isinstance(usage, Mapping):  # every count as given, checked below (not from_data's)
        usage = Usage(*(usage.get(k) for k in ("input_tokens", "output_tokens", "cost_usd",
                                               "model", "cache_read_tokens",
                                               "cache_write_tokens")))
    if not isinstance(usage, Usage):
        raise OutputError(f"usage is a {type(usage).__name__}, not a Usage")
    model = usage.model if usage.model is None else str(usage.model)
    tokens_in = _count(usage.input_tokens, "input_tokens")
    read = _count(usage.cache_read_tokens, "cache_read_tokens")
    written = _count(usage.cache_write_tokens, "cache_write_tokens")
    cached = (read or 0) + (written or 0)
    if cached and (tokens_in is None or cached > tokens_in):
        # the cache counts are a part of input_tokens, never added to it (docs/contract.md#cost)
        given = "none given" if tokens_in is None else f"{tokens_in:,}"
        raise OutputError(f"usage cache_read_tokens + cache_write_tokens ({cached:,}) exceed "
                          f"input_tokens ({given}); input_tokens counts every input token, "
                          "cached ones included (add Anthropic's cache_read_input_tokens and "
                          "cache_creation_input_tokens to its input_tokens)")
    missing = None if usage.missing is None else str(usage.missing)
    return Usage(tokens_in, _count(usage.output_tokens, "output_tokens"), _cost(usage.cost_usd),
                 model, read, written, missing)


def checked_usage(usage: object) -> Usage | None:
    """``usage`` (a :class:`Usage` or its record) kept as an answer's is: every count, the
    cache counts within ``input_tokens``, and the cost checked; OutputError names what is
    wrong (docs/contract.md#answers)."""
    return _usage(usage)


#: Most passages one answer may carry, and most characters of one (docs/contract.md#rag).
MAX_CONTEXTS = 1000
MAX_CONTEXT_CHARS = 1_000_000


def _a(value: object) -> str:
    name = type(value).__name__
    return f"{'an' if name[:1] in 'aeiou' else 'a'} {name}"


def contexts_of(contexts: object, what: str) -> tuple[str, ...]:
    """An answer's passages as a tuple of strings; OutputError says what is wrong."""
    if contexts is None:
        return ()
    if isinstance(contexts, (str, bytes)) or not isinstance(contexts, (list, tuple)):
        raise OutputError(f"{what} is {_a(contexts)}; expected a list of the "
                          "passages (strings) the answer was built from, best first")
    if len(contexts) > MAX_CONTEXTS:
        raise OutputError(f"{what} has {len(contexts):,} passages; at most {MAX_CONTEXTS:,} "
                          "are read")
    for index, passage in enumerate(contexts):
        if not isinstance(passage, str):
            raise OutputError(f"{what}[{index}] is {_a(passage)}, not a string "
                              "(a passage is its text)")
        if len(passage) > MAX_CONTEXT_CHARS:
            raise OutputError(f"{what}[{index}] is {len(passage):,} characters long; a "
                              f"passage may have at most {MAX_CONTEXT_CHARS:,}")
    return tuple(contexts)


def _answer(answer: Answer, latency_ms: float | None = None) -> EntryCall:
    if answer.text is not None and not isinstance(answer.text, str):
        raise OutputError(f"Answer.text is a {type(answer.text).__name__}, not a string")
    value: Any = answer.text
    text = answer.text
    if answer.value is not None:
        value, as_text = _plain(answer.value)
        text = answer.text if answer.text is not None else as_text
    calls = tuple(_tool_call(c, i) for i, c in enumerate(answer.tool_calls or ()))
    return EntryCall(value=value, text=text, tool_calls=calls, usage=_usage(answer.usage),
                     contexts=contexts_of(answer.contexts, "Answer.contexts"),
                     latency_ms=latency_ms)


def answer_of(returned: object, latency_ms: float | None = None) -> EntryCall:
    """As :func:`from_return`, with an answer that cannot be kept as a failed call whose
    ``OutputError`` says what is wrong: it is the answer that is wrong, so the case shows no
    traceback of the plugin reading it."""
    try:
        return from_return(returned, latency_ms)
    except OutputError as exc:
        return EntryCall(error=ErrorInfo("OutputError", str(exc)), latency_ms=latency_ms)


def from_return(returned: object, latency_ms: float | None = None) -> EntryCall:
    """What a Python entry point returned (streams already joined), as a call that took
    ``latency_ms``."""
    if isinstance(returned, Answer):
        return _answer(returned, latency_ms)
    try:
        sdk = returned if isinstance(returned, SdkAnswer) else read_sdk(returned)
    except SdkShapeError as exc:
        raise OutputError(f"the entry point returned {exc}") from None
    if sdk is not None:
        return _answer(Answer._of(sdk), latency_ms)
    value, text = _plain(returned)
    return EntryCall(value=value, text=text, latency_ms=latency_ms)


def _parse(text: str, what: str) -> Any:
    try:
        return parse_json(text, what)
    except ValueError as exc:
        raise OutputError(f"{what} is not JSON ({exc}): {text[:200]!r}") from None


def _envelope(data: object) -> EntryCall:
    if not isinstance(data, Mapping):
        raise OutputError(f"the answer envelope is a {type(data).__name__}, not an object "
                          "with 'text' and/or 'value'")
    unknown = sorted(set(data) - {"text", "value", "tool_calls", "usage", "contexts"})
    if unknown:
        raise OutputError(f"the answer envelope has unknown keys {unknown}; allowed: text, "
                          "value, tool_calls, usage, contexts")
    calls = data.get("tool_calls") or []
    if not isinstance(calls, list):
        raise OutputError("the answer envelope's tool_calls is not a list")
    try:
        answer = Answer(text=data.get("text"), value=data.get("value"), tool_calls=calls,
                        usage=data.get("usage"),
                        contexts=contexts_of(data.get("contexts"), "the envelope's contexts"))
    except ValueError as exc:
        raise OutputError(f"the answer envelope: {exc}") from None
    return _answer(answer)


def _arguments(raw: object, what: str) -> Any:
    """OpenAI sends a tool's arguments as a JSON string; read it (kept as text if it is not
    JSON, so the assertion says what was sent)."""
    if isinstance(raw, str):
        try:
            return parse_json(raw, what)
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
    raw_calls = message.get("tool_calls")
    if raw_calls is not None and not isinstance(raw_calls, list):
        raise OutputError(f"choices[0].message.tool_calls is a {type(raw_calls).__name__}, "
                          "not a list")
    calls = []
    for index, call in enumerate(raw_calls or []):
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise OutputError(f"tool_calls[{index}] has no function.name")
        name = function["name"]
        ident = call.get("id")
        calls.append(ToolCall(name, _arguments(
            function.get("arguments"), f"tool_calls[{index}].function.arguments ({name})"),
            id=ident if isinstance(ident, str) else None))
    usage = None
    raw_usage = data.get("usage") if isinstance(data, Mapping) else None
    if isinstance(raw_usage, Mapping):
        # the cached tokens are part of prompt_tokens already: noted, not added
        details = raw_usage.get("prompt_tokens_details")
        details = details if isinstance(details, Mapping) else {}
        usage = _usage({"input_tokens": raw_usage.get("prompt_tokens"),
                        "output_tokens": raw_usage.get("completion_tokens"),
                        "cache_read_tokens": details.get("cached_tokens") or None,
                        "cache_write_tokens": details.get("cache_write_tokens") or None,
                        "model": data.get("model") if isinstance(data, Mapping) else None})
    text = content or ""
    refusal = message.get("refusal")
    if refusal is not None and not isinstance(refusal, str):
        raise OutputError(f"choices[0].message.refusal is {_a(refusal)}, not text")
    if refusal:  # kept as the answer's text, marked (docs/contract.md#answers)
        text = (f"{text}\n" if text else "") + REFUSAL_MARK + refusal
    # a RAG server's passages: a top-level "contexts" beside "choices" (docs/contract.md#rag)
    contexts = contexts_of(data.get("contexts") if isinstance(data, Mapping) else None,
                           "the chat completion's contexts")
    return EntryCall(value=text, text=text, tool_calls=tuple(calls), usage=usage,
                     contexts=contexts)


#: What an ``output: openai`` reply that is a stream of server-sent events starts with: a
#: field of its first event or a comment. A chat completion (JSON) starts with ``{``.
_EVENT_START = re.compile(r"\A\s*(?:data|event|id|retry)?:")
_LINE_END = re.compile(r"\r\n|\r|\n")  # the only line ends of server-sent events
#: How an entry's request asks for a stream's usage (docs/contract.md#answers).
_STREAM_USAGE = ("the chat-completions stream reported no usage: add stream_options: "
                 "{include_usage: true} to the entry's body")


def _event_data(text: str) -> list[str]:
    """The data of each server-sent event, in order (fields other than ``data`` and
    comments passed over, as the event-stream format says)."""
    events: list[str] = []
    data: list[str] | None = None
    for line in _LINE_END.split(text):
        if not line:  # a blank line ends an event
            if data is not None:
                events.append("\n".join(data))
            data = None
            continue
        field, _, value = line.partition(":")
        if field == "data":  # one space after the colon is not part of the value
            data = [] if data is None else data
            data.append(value[1:] if value.startswith(" ") else value)
    if data is not None:  # the last event, without its blank line
        events.append("\n".join(data))
    return events


def _chat_stream(text: str) -> EntryCall:
    """A chat completion streamed as server-sent events (``body: {stream: true}``): its
    chunks assembled as an SDK's stream is, its usage from the last chunk when the request
    asked for it (``stream_options.include_usage``)."""
    chunks: list[Mapping[str, Any]] = []
    done = finished = False
    for number, data in enumerate(_event_data(text)):
        if data.strip() == "[DONE]":
            done = True
            break
        what = f"event {number} of the chat-completions stream"
        chunk = _parse(data, what)
        if not isinstance(chunk, Mapping):
            raise OutputError(f"{what} is {_a(chunk)}, not a chunk object")
        if chunk.get("error") is not None:  # a server that fails mid-stream says so in it
            raise OutputError(f"{what} is an error: {json.dumps(chunk['error'])[:300]}")
        choices = chunk.get("choices")
        finished = finished or (isinstance(choices, list) and any(
            isinstance(c, Mapping) and c.get("finish_reason") for c in choices))
        chunks.append(chunk)
    if not chunks:
        raise OutputError(f"the chat-completions stream holds no chunks: {text[:200]!r}")
    if not (done or finished):  # cut off: what arrived is not the whole answer
        raise OutputError(f"the chat-completions stream ended after {len(chunks):,} chunks "
                          "without a finish_reason or 'data: [DONE]'; it was cut off")
    try:
        read = join_openai(chunks)
    except SdkShapeError as exc:
        raise OutputError(f"the chat-completions stream: {exc}") from None
    if read.usage_missing is not None:
        read = replace(read, usage_missing=_STREAM_USAGE)
    contexts = next((c["contexts"] for c in chunks if "contexts" in c), None)
    call = _answer(Answer._of(read))
    return replace(call, contexts=contexts_of(contexts, "the chat-completions stream's contexts"))


def from_reply(text: str, mode: str, *, json_reply: bool = False) -> EntryCall:
    """A command's stdout or a service's reply body, read by its ``output:`` mode
    (``json_reply``: a service said its reply is JSON, which ``text`` mode then parses)."""
    if mode == "answer":
        return _envelope(_parse(text, "the answer envelope"))
    if mode == "openai":
        # a byte-order mark is no part of either form: a stream with one is still a stream
        text = text.removeprefix("\ufeff")
        if _EVENT_START.match(text):
            return _chat_stream(text)
        return _chat_completion(_parse(text, "the chat completion"))
    if mode == "json" or json_reply:
        value = _parse(text, "the output")
        return EntryCall(value=value, text=json.dumps(value, ensure_ascii=False))
    return EntryCall(value=text, text=text)


def _content(case_input: object) -> str:
    return case_input if isinstance(case_input, str) else json.dumps(case_input,
                                                                     ensure_ascii=False)


def _tool_result(call: ToolCall, given: Mapping[str, Any] | None, ident: str) -> object:
    """What a tool message says for ``call``: the result the turn gives for its id or its
    name (``toolResults``), else its own error or result."""
    if given is not None:
        for key in (ident, call.name):
            if key in given:
                return given[key]
    return call.error if call.error is not None else call.result


def conversation(history: Sequence[tuple[object, EntryCall]], current: object, *,
                 first: int = 0, tool_results: Mapping[str, Any] | None = None
                 ) -> list[dict[str, Any]]:
    """The OpenAI-style messages an entry point sees at a turn: every earlier user message
    and answer (with its tool calls and their results), then this turn's user message.
    A tool call keeps the id its model gave it; one without gets ``call_<turn>_<n>``,
    ``first`` numbering the first turn of ``history``, so a caller can build a
    conversation a turn at a time, each message once. ``tool_results`` (this turn's
    ``toolResults``, by call id or tool name) answer the last answer's tool calls; a
    string result is sent as it is, any other as JSON."""
    messages: list[dict[str, Any]] = []
    for turn, (case_input, call) in enumerate(history, first):
        given = tool_results if turn == first + len(history) - 1 else None
        messages.append({"role": "user", "content": _content(case_input)})
        assistant: dict[str, Any] = {"role": "assistant", "content": call.text or ""}
        ids = [c.id or f"call_{turn}_{index}" for index, c in enumerate(call.tool_calls)]
        if call.tool_calls:
            assistant["tool_calls"] = [
                {"id": ident, "type": "function",
                 "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                for ident, c in zip(ids, call.tool_calls, strict=True)]
        messages.append(assistant)
        for ident, c in zip(ids, call.tool_calls, strict=True):
            result = _tool_result(c, given, ident)
            messages.append({"role": "tool", "tool_call_id": ident,
                             "content": result if isinstance(result, str)
                             else json.dumps(result)})
    messages.append({"role": "user", "content": _content(current)})
    return messages


def with_tool_results(call: EntryCall, given: Mapping[str, Any] | None, turn: int
                      ) -> EntryCall:
    """``call`` (the answer of turn ``turn``, from 0) with each tool call's ``result`` the
    result the next turn's ``toolResults`` sent back for it, by call id or tool name, as
    :func:`conversation` sends it: the records show what the model was given
    (docs/contract.md#answers)."""
    if not given or not call.tool_calls:
        return call
    calls = []
    for index, tool in enumerate(call.tool_calls):
        ident = tool.id or f"call_{turn}_{index}"
        key = next((k for k in (ident, tool.name) if k in given), None)
        calls.append(tool if key is None else replace(tool, result=given[key]))
    return replace(call, tool_calls=tuple(calls))


def chat_request(messages: list[dict[str, Any]], model: str | None) -> dict[str, Any]:
    """The chat-completions request body an ``output: openai`` entry is sent."""
    body: dict[str, Any] = {"messages": messages}
    if model:
        body["model"] = model
    return body


#: A dated snapshot's suffix: ``-2024-08-06`` (OpenAI) or ``-20241022`` (Anthropic).
_DATED = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8})\Z")


def price_for(model: str, prices: Mapping[str, Rates]) -> Rates | None:
    """The price of ``model``: its own, else its base name's when it is a dated snapshot
    (``gpt-4o-2024-08-06`` priced as ``gpt-4o``, ``claude-3-5-sonnet-20241022`` as
    ``claude-3-5-sonnet``), as real APIs name the model that answered
    (docs/contract.md#cost). None: no price."""
    if model in prices:
        return prices[model]
    base = _DATED.sub("", model)
    return prices.get(base) if base != model else None


def priced(usage: Usage | None, prices: Mapping[str, Rates]) -> Usage | None:
    """``usage`` with its cost from ``prices`` (US dollars per 1M tokens by model,
    :func:`price_for`) when it reports none; no price for its model means no cost, never a
    guess. Cached input tokens are part of ``input_tokens``: the cache reads and writes
    cost the price's cache rates, or its input rate where it gives none
    (docs/contract.md#cost)."""
    if usage is None or usage.cost_usd is not None or usage.model is None \
            or usage.tokens is None:
        return usage
    price = price_for(usage.model, prices)
    if price is None:
        return usage
    rates = Rates(*price)  # a bare (input, output) pair is a price without cache rates
    cost_in = (usage.input_tokens or 0) * rates.input  # as before where no cache rate is given
    if rates.cache_read is not None or rates.cache_write is not None:
        read, written = usage.cache_read_tokens or 0, usage.cache_write_tokens or 0
        # answers refuse cache counts past input_tokens (_usage); a Usage made by hand that
        # has them is priced with no uncached input, never a negative count of it
        fresh = max((usage.input_tokens or 0) - read - written, 0)
        cost_in = (fresh * rates.input
                   + read * (rates.input if rates.cache_read is None else rates.cache_read)
                   + written * (rates.input if rates.cache_write is None
                                else rates.cache_write))
    cost = (cost_in + (usage.output_tokens or 0) * rates.output) / 1e6
    return replace(usage, cost_usd=cost)
