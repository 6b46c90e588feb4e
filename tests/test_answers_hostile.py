"""Answers as real APIs give them (docs/contract.md#answers, #sdk-answers, #cost, #rag): prompt
cache tokens counted and priced, dated model names priced by their base name, tool results
kept in the records, a chat-completions stream read (and its missing usage explained),
refusals kept as marked text, and answers that cannot be kept failing their case without a
traceback of the plugin.

SDK objects are the SDKs' own (``model_validate`` of recorded JSON, or the real client
against the mock server on loopback); packages run through pytester as users run them.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_elizon_eval import Answer, Usage
from pytest_elizon_eval.mock import MockModel, MockRequest, MockResponse, MockServer
from pytest_elizon_eval.run.answers import from_reply, from_return, price_for, priced
from pytest_elizon_eval.run.calls import OutputError
from pytest_elizon_eval.run.sdk_answers import REFUSAL_MARK

from .conftest import Packages, validate_results

HAIKU = "claude-3-5-haiku-20241022"
MESSAGE = {"id": "msg_01", "type": "message", "role": "assistant", "model": HAIKU,
           "stop_reason": "end_turn", "stop_sequence": None,
           "content": [{"type": "text", "text": "Refunds take 14 days."}],
           "usage": {"input_tokens": 82, "output_tokens": 17}}
CACHED = {"input_tokens": 82, "output_tokens": 17, "cache_read_input_tokens": 5000,
          "cache_creation_input_tokens": 1000}


def _results(pytester: pytest.Pytester) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((pytester.path / "results.json").read_text())
    validate_results(data)
    return data


def _cases(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for s in data["suites"] for c in s["cases"]}


# -- issue 37 item 8: prompt cache tokens -------------------------------------------------------

def test_anthropic_cache_tokens_are_counted_and_priced(packages: Packages,
                                                       pytester: pytest.Pytester) -> None:
    import anthropic.types  # noqa: F401 - imported here, kept for the inner run

    packages.package(suite="""
        cases:
          - id: cached
            input: cached
            expect: {maxTokens: 1000, maxCostUsd: 0.001}
          - id: plain
            input: plain
            expect: {maxTokens: 1000, maxCostUsd: 0.001}
        """, app=f"""
        from anthropic.types import Message
        MESSAGE = {MESSAGE!r}
        def answer(text):
            usage = {CACHED!r} if text == "cached" else MESSAGE["usage"]
            return Message.model_validate({{**MESSAGE, "usage": usage}})
        """)
    # priced by its base name: the answer names the dated snapshot (item 15)
    manifest = pytester.path / "pkg/elizon.yaml"
    manifest.write_text(manifest.read_text() + "prices:\n  claude-3-5-haiku: {input: 0.8, "
                                               "output: 4}\n")
    result = pytester.runpytest("-v", "--elizon-results=results.json")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*::cached FAILED (6,099 tokens (6,082 in, of them 5,000 cache reads and 1,000 cache "
        "writes; 17 out), $0.00493)*",
        "*::plain PASSED (99 tokens (82 in, 17 out), $0.000134)*"])
    result.stdout.fnmatch_lines(["*✗ maxTokens*", "*found: *6,099 tokens (6,082 in, 17 out)*"])
    result.stdout.fnmatch_lines(["*✗ maxCostUsd*", "*found: *$0.00493*"])
    cases = _cases(_results(pytester))
    cached = cases["cached"]["usage"]
    # the cache tokens are billed input: counted in input_tokens, at the input price
    assert cached == {"input_tokens": 6082, "output_tokens": 17, "model": HAIKU,
                      "cache_read_tokens": 5000, "cache_write_tokens": 1000,
                      "cost_usd": pytest.approx((6082 * 0.8 + 17 * 4) / 1e6)}
    assert "cache_read_tokens" not in cases["plain"]["usage"]  # no cache: the shape as before


def test_openai_cached_tokens_are_part_of_the_prompt_not_added() -> None:
    from openai.types.chat import ChatCompletion
    from openai.types.responses import Response

    usage = {"prompt_tokens": 1000, "completion_tokens": 20, "total_tokens": 1020,
             "prompt_tokens_details": {"cached_tokens": 800}}
    chat = {"id": "c", "object": "chat.completion", "created": 1, "model": "gpt-4o",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "ok"}}], "usage": usage}
    expected = Usage(1000, 20, None, "gpt-4o", 800)
    assert from_return(ChatCompletion.model_validate(chat)).usage == expected
    assert from_reply(json.dumps(chat), "openai").usage == expected  # output: openai
    response = {"id": "r", "object": "response", "created_at": 1, "model": "gpt-4o",
                "status": "completed", "parallel_tool_calls": True, "tool_choice": "auto",
                "tools": [], "output": [{"type": "message", "id": "m", "role": "assistant",
                                         "status": "completed", "content": [
                                             {"type": "output_text", "text": "ok",
                                              "annotations": []}]}],
                "usage": {"input_tokens": 1000, "output_tokens": 20, "total_tokens": 1020,
                          "input_tokens_details": {"cached_tokens": 800,
                                                   "cache_write_tokens": 0},
                          "output_tokens_details": {"reasoning_tokens": 0}}}
    assert from_return(Response.model_validate(response)).usage == expected
    # cached tokens cost the input price where the price gives no cache rate
    assert priced(expected, {"gpt-4o": (2.5, 10.0)}) == Usage(
        1000, 20, pytest.approx((1000 * 2.5 + 20 * 10) / 1e6), "gpt-4o", 800)


def test_anthropic_stream_and_langchain_cache_tokens_are_counted() -> None:
    from anthropic.types import RawMessageDeltaEvent, RawMessageStartEvent
    from langchain_core.messages import AIMessage

    start = {**MESSAGE, "content": [], "stop_reason": None,
             "usage": {**CACHED, "output_tokens": 1}}
    events = [RawMessageStartEvent.model_validate({"type": "message_start", "message": start}),
              RawMessageDeltaEvent.model_validate(
                  {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                   "usage": {"output_tokens": 17}})]
    assert Answer.from_anthropic(events).usage == Usage(6082, 17, None, HAIKU, 5000, 1000)
    # LangChain counts the cache in input_tokens already, and names it in the details
    message = AIMessage(content="ok", usage_metadata={
        "input_tokens": 6082, "output_tokens": 17, "total_tokens": 6099,
        "input_token_details": {"cache_read": 5000, "cache_creation": 1000}})
    assert from_return(message).usage == Usage(6082, 17, None, None, 5000, 1000)


@pytest.mark.parametrize(("usage", "message"), [
    ({"input_tokens": 82, "cache_read_tokens": 5000},
     r"cache_read_tokens \+ cache_write_tokens \(5,000\) exceed input_tokens \(82\); "
     "input_tokens counts every input token, cached ones included"),
    ({"output_tokens": 3, "cache_write_tokens": 4}, r"exceed input_tokens \(none given\)"),
    ({"input_tokens": 9, "cache_read_tokens": -1}, "usage cache_read_tokens is -1"),
    ({"input_tokens": 9, "cache_write_tokens": "2"}, "usage cache_write_tokens is '2'"),
])
def test_cache_counts_that_cannot_be_part_of_the_input_say_so(usage: dict[str, Any],
                                                               message: str) -> None:
    with pytest.raises(OutputError, match=message):
        from_reply(json.dumps({"text": "a", "usage": usage}), "answer")


# -- item 15: dated model names --------------------------------------------------------------

def test_a_dated_snapshot_is_priced_by_its_base_name() -> None:
    prices = {"gpt-4o": (2.5, 10.0), "gpt-4o-mini": (0.15, 0.6),
              "claude-3-5-sonnet": (3.0, 15.0), "gpt-4o-2024-05-13": (5.0, 15.0)}
    assert price_for("gpt-4o-2024-08-06", prices) == (2.5, 10.0)
    assert price_for("gpt-4o-mini-2024-07-18", prices) == (0.15, 0.6)  # not gpt-4o's
    assert price_for("claude-3-5-sonnet-20241022", prices) == (3.0, 15.0)
    assert price_for("gpt-4o-2024-05-13", prices) == (5.0, 15.0)  # its own price first
    # only a trailing date is a snapshot: no other suffix or prefix is taken off
    for model in ("gpt-4o-0613", "gpt-4o-latest", "gpt-4o-2024-08", "my-gpt-4o",
                  "gpt-4o-2024-08-06-ft", "gpt-4o-202410221"):
        assert price_for(model, prices) is None, model
    used = Usage(1000, 100, None, "gpt-4o-2024-08-06")
    assert priced(used, prices) == Usage(1000, 100, pytest.approx(0.0035), "gpt-4o-2024-08-06")


# -- item 9: the tool results sent back are in the records -------------------------------------

TOOL_AGENT = """
import json
from pytest_elizon_eval import Answer, ToolCall

def answer(text, messages):
    if text.startswith("weather"):
        return Answer(text="", tool_calls=[ToolCall("get_weather", {"city": "Paris"},
                                                    id="call_w1")])
    sent = [m for m in messages if m["role"] == "tool"]
    return f"It is {json.loads(sent[-1]['content'])['temp_c']} C in Paris."
"""


def test_tool_results_sent_to_the_model_are_in_every_record(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite="""
        cases:
          - id: weather
            turns:
              - input: weather in Paris?
              - input: So?
                toolResults: {call_w1: {temp_c: 21}}
                expect: {contains: [21 C]}
        """, app=TOOL_AGENT)
    result = pytester.runpytest("--elizon-results=results.json", "--elizon-html=report.html",
                                "--elizon-record=cassette.json")
    result.assert_outcomes(passed=1)
    case = _cases(_results(pytester))["weather"]
    assert case["tool_calls"] == [{"name": "get_weather", "arguments": {"city": "Paris"},
                                   "result": {"temp_c": 21}, "error": None, "id": "call_w1"}]
    assert case["turns"][0]["tool_calls"][0]["result"] == {"temp_c": 21}
    report = (pytester.path / "report.html").read_text(encoding="utf-8")
    assert ("get_weather({&quot;city&quot;: &quot;Paris&quot;})</code> → "
            "{&quot;temp_c&quot;: 21}") in report
    # the cassette keeps what the entry point answered: the result came from the suite
    assert '"temp_c"' not in (pytester.path / "cassette.json").read_text()


# -- item 10: output: openai with body {stream: true} ------------------------------------------

def _weather(request: MockRequest) -> MockResponse:
    """A model that calls get_weather, then answers from the result it is sent."""
    usage = {"input_tokens": 50, "output_tokens": 10}
    if request.tool_results:
        said = f"It is {json.loads(request.tool_results[-1].content)}"
        return MockResponse.of({"content": said, "usage": usage}, "response")
    return MockResponse.of({"tool_calls": [{"name": "get_weather", "arguments": {"city": "P"},
                                            "id": "call_s1"}], "usage": usage}, "response")


STREAM_SUITE = """
cases:
  - id: weather
    turns:
      - input: weather in Paris?
        expect: {toolCalls: {calledWith: [{name: get_weather, arguments: {city: P}}]}}
      - input: So?
        toolResults: {get_weather: {temp_c: 21}}
        expect: {contains: ["'temp_c': 21"]}
    expect: {maxTokens: 1000, maxCostUsd: 0.01}
"""
SDK_STREAM_APP = """
import openai
client = openai.OpenAI(base_url={url!r}, api_key="sk-test", max_retries=0)

def answer(text):
    return client.chat.completions.create(
        model="gpt-4o-2024-08-06", messages=[{{"role": "user", "content": text}}], stream=True)
"""


def test_a_streamed_chat_completion_is_read_and_missing_usage_says_how_to_ask(
        packages: Packages, pytester: pytest.Pytester) -> None:
    import openai  # noqa: F401 - imported here, kept for the inner run

    prices = "prices:\n  gpt-4o: {input: 2.5, output: 10}\n"
    with MockServer(MockModel(on_request=_weather)) as server:
        for name, body in (("streamed", "{stream: true, stream_options: {include_usage: true}}"),
                           ("unasked", "{stream: true}")):
            packages.write(f"{name}/elizon.yaml", f"""
                name: {name}
                entry:
                  url: {server.url}/chat/completions
                  output: openai
                  model: gpt-4o-2024-08-06
                  body: {body}
                evaluation: {{suite: ./eval/suite.yaml}}
                prices:
                  gpt-4o: {{input: 2.5, output: 10}}
                """)
            packages.write(f"{name}/eval/suite.yaml", STREAM_SUITE)
        packages.package("sdk", app=SDK_STREAM_APP.format(url=server.url), suite="""
            cases:
              - id: sdk-stream
                input: weather in Paris?
                expect: {maxCostUsd: 0.01}
            """)
        manifest = pytester.path / "sdk/elizon.yaml"
        manifest.write_text(manifest.read_text() + prices)
        result = pytester.runpytest("--elizon-results=results.json", "-p", "no:randomly")
        bodies = [r.body for r in server.requests]
    assert [b["stream"] for b in bodies] == [True] * 5
    result.assert_outcomes(passed=1, failed=2)
    cases = {(s["package"], c["id"]): c for s in _results(pytester)["suites"]
             for c in s["cases"]}
    streamed = cases[("streamed", "weather")]
    assert streamed["outcome"] == "passed"
    assert streamed["turns"][1]["output"] == "It is {'temp_c': 21}"
    assert streamed["tool_calls"][0]["id"] == "call_s1"
    assert streamed["tool_calls"][0]["result"] == {"temp_c": 21}  # item 9, over HTTP
    # two turns of 50 in and 10 out, priced as gpt-4o (item 15)
    assert streamed["usage"] == {"input_tokens": 100, "output_tokens": 20,
                                 "cost_usd": pytest.approx(0.00045),
                                 "model": "gpt-4o-2024-08-06"}
    # a stream not asked for its usage says how to ask, not that the model has no price
    result.stdout.fnmatch_lines([
        "*✗ maxTokens*", "*found: *usage unknown: the chat-completions stream reported no "
        "usage: add stream_options: {include_usage: true} to the entry's body*",
        "*✗ maxCostUsd*", "*found: *cost unknown: the chat-completions stream reported no "
        "usage: add stream_options*"])
    result.stdout.fnmatch_lines([
        "*case 'sdk-stream' failed*", "*✗ maxCostUsd*",
        "*found: *cost unknown: the OpenAI stream reported no usage: request it with "
        "stream_options={\"include_usage\": True}*"])
    assert "no price" not in result.stdout.str()


def _events(*chunks: object, end: str = "data: [DONE]\n\n") -> str:
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + end


def _chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}


def test_server_sent_events_are_read_as_the_format_says() -> None:
    # comments, CRLF line ends, a data field split over lines, no space after the colon
    text = (": keep-alive\r\n\r\nevent: chunk\r\ndata: {\"id\": \"c\", \"choices\": [{\"index\":"
            " 0, \r\ndata: \"delta\": {\"content\": \"Hel\"}}]}\r\n\r\ndata:" + json.dumps(
                _chunk({"content": "lo\u2028 there"}, "stop")) + "\r\n\r\n")
    call = from_reply(text, "openai")
    assert call.text == call.value == "Hello\u2028 there"  # finished: no [DONE] needed
    assert call.usage is not None
    assert "include_usage" in (call.usage.missing or "")
    passages = _events(_chunk({"content": "a"}, contexts=["p1", "p2"]), _chunk({}, "stop"))
    assert from_reply(passages, "openai").contexts == ("p1", "p2")
    # a leading byte-order mark is no part of the stream; a call's name comes in its first
    # piece only, its arguments in pieces after it
    called = "\ufeff" + _events(
        _chunk({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "f"}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"name": None, "arguments": '{"a"'}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]}, "tool_calls"))
    assert [(c.name, c.arguments, c.id) for c in from_reply(called, "openai").tool_calls] == [
        ("f", {"a": 1}, "c1")]


@pytest.mark.parametrize(("text", "message"), [
    (_events(_chunk({"content": "Hel"}), end=""),
     "the chat-completions stream ended after 1 chunks without a finish_reason or "
     "'data: \\[DONE\\]'; it was cut off"),
    (_events(_chunk({"content": "a"}), {"error": {"message": "overloaded"}}),
     'event 1 of the chat-completions stream is an error: {"message": "overloaded"}'),
    (_events([1, 2]), "event 0 of the chat-completions stream is a list, not a chunk object"),
    (_events(_chunk({"tool_calls": {"index": 0}})),
     "the chat-completions stream: chunk 0: delta.tool_calls is a dict, not a list"),
    (_events(_chunk({"tool_calls": [7]})), "chunk 0: a tool call piece is not a mapping"),
    (_events(_chunk({}, "stop", choices="x")), "chunk 0: choices is a str, not a list"),
    ("data: {nope}\n\n", "event 0 of the chat-completions stream is not JSON"),
    ("data: [DONE]\n\n", "the chat-completions stream holds no chunks"),
    (_events(_chunk({"content": "a"}, "stop", usage={"prompt_tokens": -3})),
     "usage input_tokens is -3"),
    # as strict as a chat completion read whole: a call without a name is never dropped
    # (notCalled or maxCalls: 0 would pass), a refusal or content not text never ignored
    (_events(_chunk({"tool_calls": [{"index": 0, "id": "c1", "function": {"arguments": "{}"}}]},
                    "tool_calls")),
     "the chat-completions stream: the tool call at index 0 has no function.name"),
    (_events(_chunk({"tool_calls": [{"index": 0, "function": {"name": 5}}]}, "tool_calls")),
     "chunk 0: a tool call's function.name is an int, not text"),
    (_events(_chunk({"refusal": {"why": "no"}}, "stop")),
     "chunk 0: delta.refusal is a dict, not text"),
    (_events(_chunk({"content": ["a"]}, "stop")), "chunk 0: delta.content is a list, not text"),
    (_events(_chunk({}, "stop", choices=["a"])), "chunk 0: a choice is a str, not a mapping"),
])
def test_a_broken_stream_fails_saying_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(OutputError, match=message):
        from_reply(text, "openai")


# -- item 25: refusals ---------------------------------------------------------------------------

SORRY = "I'm sorry, I can't assist with that."
REFUSING_CHAT = {"id": "c", "object": "chat.completion", "created": 1, "model": "gpt-4o",
                 "choices": [{"index": 0, "finish_reason": "stop", "message": {
                     "role": "assistant", "content": None, "refusal": SORRY}}],
                 "usage": {"prompt_tokens": 9, "completion_tokens": 8, "total_tokens": 17}}


def _refusing_response() -> Any:
    from openai.types.responses import Response

    return Response.model_validate({
        "id": "r", "object": "response", "created_at": 1, "model": "gpt-4o",
        "status": "completed", "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
        "output": [{"type": "message", "id": "m", "role": "assistant", "status": "completed",
                    "content": [{"type": "refusal", "refusal": SORRY}]}]})


def _refusing_message() -> Any:
    from anthropic.types import Message

    return Message.model_validate({**MESSAGE, "stop_reason": "refusal", "content": [
        {"type": "text", "text": SORRY}]})


def _refusing_chunks() -> list[Any]:
    from openai.types.chat import ChatCompletionChunk

    return [ChatCompletionChunk.model_validate(_chunk({"refusal": piece}, finish))
            for piece, finish in ((SORRY[:9], None), (SORRY[9:], "stop"))]


def _refusing_chat() -> Any:
    from openai.types.chat import ChatCompletion

    return ChatCompletion.model_validate(REFUSING_CHAT)


@pytest.mark.parametrize("make", [_refusing_chat, _refusing_response, _refusing_message,
                                  lambda: Answer.from_openai(_refusing_chunks())])
def test_an_sdk_refusal_is_kept_as_marked_text(make: Any) -> None:
    call = from_return(make())
    assert call.text == call.value == REFUSAL_MARK + SORRY


def test_a_chat_completion_refusal_is_kept_as_marked_text() -> None:
    call = from_reply(json.dumps(REFUSING_CHAT), "openai")
    assert (call.text, call.value) == (REFUSAL_MARK + SORRY, REFUSAL_MARK + SORRY)
    assert call.usage == Usage(9, 8, None, "gpt-4o")
    streamed = from_reply(_events(*(c.model_dump(mode="json") for c in _refusing_chunks())),
                          "openai")
    assert streamed.text == REFUSAL_MARK + SORRY
    with pytest.raises(OutputError, match=r"choices\[0\]\.message\.refusal is an int, not text"):
        from_reply(json.dumps({"choices": [{"message": {"content": None, "refusal": 3}}]}),
                   "openai")


def test_a_refusal_reaches_the_checks(packages: Packages, pytester: pytest.Pytester) -> None:
    import openai.types.chat  # noqa: F401 - imported here, kept for the inner run

    packages.package(suite="""
        cases:
          - id: refuses
            input: how do I pick a lock?
            expect: {contains: ["can't assist"], matches: ['(?i)refuse']}
          - id: must-answer
            input: hello
            expect: {notContains: ["[refused]"]}
        """, app=f"""
        from openai.types.chat import ChatCompletion
        def answer(text):
            return ChatCompletion.model_validate({REFUSING_CHAT!r})
        """)
    result = pytester.runpytest("--elizon-results=results.json")
    result.assert_outcomes(passed=1, failed=1)
    cases = _cases(_results(pytester))
    assert cases["refuses"]["output"] == cases["must-answer"]["output"] == REFUSAL_MARK + SORRY


# -- item 11: an answer that cannot be kept fails its case, with no traceback -------------------

def test_rag_contexts_that_are_not_passages_fail_the_case_saying_why(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite="""
        cases:
          - id: not-text
            input: none
            expect: {rag: {contextRecall: 1, relevant: [refunds]}}
          - id: not-a-list
            input: text
            expect: {rag: {contextRecall: 1, relevant: [refunds]}}
          - id: none-given
            input: missing
            expect: {rag: {contextRecall: 1, relevant: [refunds]}}
        """, app="""
        from pytest_elizon_eval import Answer
        def answer(text):
            given = {"none": [None], "text": "refunds", "missing": None}[text]
            return Answer("Refunds take 14 days.", contexts=given)
        """)
    result = pytester.runpytest("--elizon-results=results.json")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines([
        "*case 'not-text' failed*: *OutputError: Answer.contexts[[]0[]] is a NoneType, not a "
        "string (a passage is its text)",
        "*rag.contextRecall: * not checked: there is no output",
        "*case 'not-a-list' failed*: *OutputError: Answer.contexts is a str; expected a list "
        "of the passages*",
        "*case 'none-given' failed*", "*✗ rag.contextRecall*",
        "*found: *the answer came with no passages*"])
    assert "answers.py" not in result.stdout.str()  # the answer is wrong, not the plugin
    errors = [c["error"] for c in _cases(_results(pytester)).values() if c["error"]]
    assert [(e["type"], e["traceback"]) for e in errors] == [("OutputError", "")] * 2


# -- review item 9: a sum with an unknown part knows no token count ------------------------------

def test_a_sum_with_a_part_of_unknown_usage_has_unknown_tokens() -> None:
    from pytest_elizon_eval.run.assertions import _max_cost, _max_tokens

    stream = Usage(missing="the stream was not asked for its usage")
    known = Usage(100, 10, 0.0001, "m", cache_read_tokens=50)
    for total in (stream + known, known + stream):
        assert (total.tokens, total.cost_usd, total.cache_read_tokens) == (None, None, None)
        assert _max_tokens(150, total).found == (
            "usage unknown: the stream was not asked for its usage")
        assert _max_tokens(150, total).passed is False
    # a part that reported no token counts at all (only a model): unknown, saying so
    for total in (Usage(model="m") + known, known + Usage(cost_usd=0.1)):
        assert total.tokens is None
        assert _max_tokens(150, total).found == (
            "usage unknown: part of it reported no token counts (each answer needs its usage)")
    # costs both parts reported still add up: only the token counts are unknown
    assert _max_cost(1.0, known + Usage(cost_usd=0.1)).found == "$0.100"
    # what every part reported still adds up, and an unknown total stays unknown
    both = known + Usage(1, 2, 0.5, "m", cache_write_tokens=1)
    assert (both.input_tokens, both.output_tokens, both.cache_read_tokens,
            both.cache_write_tokens, both.missing) == (101, 12, 50, 1, None)
    assert (Usage() + Usage()).tokens is None
    assert (stream + known + known).tokens is None


def test_max_tokens_of_a_conversation_fails_when_a_turn_reported_no_tokens(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite="""
        cases:
          - id: talk
            turns: [{input: first}, {input: second}]
            expect: {maxTokens: 150}
          - id: plain-first
            turns: [{input: plain}, {input: second}]
            expect: {maxTokens: 150}
          - id: known
            turns: [{input: second}, {input: second}]
            expect: {maxTokens: 220}
        """, app="""
        from pytest_elizon_eval import Answer, Usage

        def answer(text):
            if text == "first":  # a model name, but no token counts
                return Answer(text="one", usage=Usage(model="m"))
            if text == "plain":  # no usage at all: unknown, never zero
                return "one"
            return Answer(text="two", usage=Usage(100, 10, model="m"))
        """)
    result = pytester.runpytest("--elizon-results=results.json")
    result.assert_outcomes(passed=1, failed=2)
    cases = _cases(_results(pytester))
    found = {name: [(a["passed"], a["found"]) for a in cases[name]["assertions"]
                    if a["name"] == "maxTokens"] for name in ("talk", "plain-first", "known")}
    unknown = [(False, "usage unknown: part of it reported no token counts (each answer "
                       "needs its usage)")]
    assert found == {"talk": unknown, "plain-first": unknown,
                     "known": [(True, "220 tokens (200 in, 20 out)")]}
