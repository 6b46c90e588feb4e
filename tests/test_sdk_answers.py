"""Answers from the SDKs people use, read by shape (docs/contract.md#sdk-answers).

Each SDK's own response types are built from recorded JSON with the SDK's own
``model_validate``, so a field an SDK renames breaks these tests, not a user's run.
The SDKs are imported inside the tests (they are test-only dependencies); LiteLLM,
the heaviest, only in the one test that needs it.
"""

from __future__ import annotations

import copy
import json
import sys
import time
import warnings
import xml.etree.ElementTree as ET
from typing import Any

import pytest

from pytest_elizon_eval import Answer, ToolCall, Usage
from pytest_elizon_eval.bind.entries import CallableEntry
from pytest_elizon_eval.run.answers import from_return
from pytest_elizon_eval.run.calls import OutputError

from .chat_server import ChatServer
from .conftest import Packages

WEATHER = ToolCall("get_weather", {"city": "Paris"})

# -- recorded responses ----------------------------------------------------------------------

WEATHER_CALL = {"id": "call_abc", "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
CHAT = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1733000000,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": None,
                     "message": {"role": "assistant", "content": None, "refusal": None,
                                 "tool_calls": [WEATHER_CALL]}}],
        "usage": {"prompt_tokens": 82, "completion_tokens": 17, "total_tokens": 99}}
RESPONSE = {"id": "resp_1", "object": "response", "created_at": 1733000000,
            "model": "gpt-4o-mini", "status": "completed", "parallel_tool_calls": True,
            "tool_choice": "auto", "tools": [],
            "output": [{"type": "function_call", "id": "fc_1", "call_id": "call_xyz",
                        "name": "get_weather", "arguments": '{"city": "Paris"}',
                        "status": "completed"},
                       {"type": "message", "id": "msg_1", "role": "assistant",
                        "status": "completed",
                        "content": [{"type": "output_text", "text": "Checking Paris.",
                                     "annotations": []}]}],
            "usage": {"input_tokens": 40, "output_tokens": 9, "total_tokens": 49,
                      "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": 0}}}
MESSAGE = {"id": "msg_01", "type": "message", "role": "assistant",
           "model": "claude-3-5-haiku-20241022", "stop_reason": "tool_use",
           "stop_sequence": None,
           "content": [{"type": "text", "text": "Let me check."},
                       {"type": "tool_use", "id": "toolu_01", "name": "get_weather",
                        "input": {"city": "Paris"}}],
           "usage": {"input_tokens": 20, "output_tokens": 11}}


def openai_chat() -> Any:
    from openai.types.chat import ChatCompletion  # test-only SDK

    return ChatCompletion.model_validate(CHAT)


def openai_response() -> Any:
    from openai.types.responses import Response  # test-only SDK

    return Response.model_validate(RESPONSE)


def anthropic_message() -> Any:
    from anthropic.types import Message  # test-only SDK

    return Message.model_validate(MESSAGE)


def langchain_message() -> Any:
    from langchain_core.messages import AIMessage  # test-only SDK

    return AIMessage(content=[{"type": "text", "text": "On it."}],
                     tool_calls=[{"name": "get_weather", "args": {"city": "Paris"},
                                  "id": "lc_1"}],
                     usage_metadata={"input_tokens": 30, "output_tokens": 6,
                                     "total_tokens": 36},
                     response_metadata={"model_name": "gpt-4o-mini"})


@pytest.mark.parametrize(("make", "text", "ident", "usage"), [
    (openai_chat, "", "call_abc", Usage(82, 17, None, "gpt-4o-mini")),
    (openai_response, "Checking Paris.", "call_xyz", Usage(40, 9, None, "gpt-4o-mini")),
    (anthropic_message, "Let me check.", "toolu_01", Usage(20, 11, None,
                                                           "claude-3-5-haiku-20241022")),
    (langchain_message, "On it.", "lc_1", Usage(30, 6, None, "gpt-4o-mini")),
])
def test_each_sdk_answer_is_read_with_its_tool_calls_and_usage(
        make: Any, text: str, ident: str, usage: Usage) -> None:
    call = from_return(make())
    assert (call.text, call.value) == (text, text)  # never the object dumped as JSON
    assert call.tool_calls == (ToolCall("get_weather", {"city": "Paris"}, id=ident),)
    assert call.usage == usage
    explicit = Answer.from_sdk(make())
    assert (explicit.text, explicit.tool_calls, explicit.usage) == (
        text, call.tool_calls, usage)


def litellm_model_response(monkeypatch: pytest.MonkeyPatch) -> Any:
    """LiteLLM's own ModelResponse class, from its own module, without running the
    package's ``__init__`` (routers, cost maps, every provider: ~2 s that nothing here
    uses): for the import, ``litellm`` is a bare package over LiteLLM's own folder."""
    import importlib.util  # only for this SDK
    import types  # only for this SDK

    spec = importlib.util.find_spec("litellm")
    assert spec is not None
    assert spec.submodule_search_locations is not None
    package = types.ModuleType("litellm")
    package.__path__ = list(spec.submodule_search_locations)
    package.__spec__ = spec
    monkeypatch.setitem(sys.modules, "litellm", package)
    from litellm.types.utils import ModelResponse  # test-only SDK, heavy: here only

    return ModelResponse


def test_litellm_model_response_keeps_its_cost(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network at import
    with warnings.catch_warnings():
        # the filter LiteLLM's __init__ itself sets (its _process_defaults): pydantic cannot
        # enforce its TypedDicts' ReadOnly items, and says so as it builds the models
        warnings.filterwarnings("ignore", message=".*`ReadOnly` qualifier.*")
        response = litellm_model_response(monkeypatch)(**copy.deepcopy(CHAT))
    response._hidden_params["response_cost"] = 4.89e-05
    call = from_return(response)
    assert call.tool_calls == (ToolCall("get_weather", {"city": "Paris"}, id="call_abc"),)
    assert call.usage == Usage(82, 17, 4.89e-05, "gpt-4o-mini")
    assert Answer.from_litellm(response).usage == call.usage


def test_explicit_conversions_say_what_they_got() -> None:
    assert Answer.from_openai(CHAT).tool_calls[0].id == "call_abc"  # a dump reads too
    assert Answer.from_anthropic(anthropic_message()).text == "Let me check."
    assert Answer.from_langchain(langchain_message()).usage == Usage(30, 6, None, "gpt-4o-mini")
    with pytest.raises(ValueError, match="expected an Anthropic Message, got an OpenAI "
                                         "ChatCompletion"):
        Answer.from_anthropic(openai_chat())
    with pytest.raises(ValueError, match=r"expected an OpenAI ChatCompletion or an OpenAI "
                                         r"Responses API Response; this dict has none"):
        Answer.from_openai({"answer": 42})
    with pytest.raises(ValueError, match=r"needs choices\[0\]\.message"):
        Answer.from_openai({"object": "chat.completion", "choices": []})


def test_an_answer_may_only_call_tools() -> None:
    answer = Answer(tool_calls=[WEATHER])
    assert answer.text == ""
    assert from_return(answer).tool_calls == (WEATHER,)
    with pytest.raises(ValueError, match="needs a text or a value, or tool calls"):
        Answer()


def test_unknown_objects_say_what_to_return() -> None:
    class Reply:
        pass

    with pytest.raises(OutputError, match="returned a Reply; return a string, a JSON-like "
                                          "value, a pydantic model, an Answer, an SDK "
                                          r"response \(OpenAI ChatCompletion"):
        from_return(Reply())


# -- streams, through a real callable entry --------------------------------------------------

def openai_chunks() -> list[Any]:
    from openai.types.chat import ChatCompletionChunk  # test-only SDK

    base = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini"}
    deltas = [{"role": "assistant", "content": "Paris "},
              {"content": "is sunny."},
              {"tool_calls": [{"index": 0, "id": "call_s1", "type": "function",
                               "function": {"name": "get_weather", "arguments": '{"ci'}}]},
              {"tool_calls": [{"index": 0, "function": {"arguments": 'ty": "Paris"}'}}]}]
    chunks = [ChatCompletionChunk.model_validate(
        {**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]}) for d in deltas]
    chunks.append(ChatCompletionChunk.model_validate(
        {**base, "choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 8,
                                          "total_tokens": 20}}))
    return chunks


def anthropic_events() -> list[Any]:
    from anthropic.types import (  # test-only SDK
        RawContentBlockDeltaEvent,
        RawContentBlockStartEvent,
        RawMessageDeltaEvent,
        RawMessageStartEvent,
        RawMessageStopEvent,
    )

    start = {**MESSAGE, "content": [], "stop_reason": None,
             "usage": {"input_tokens": 12, "output_tokens": 1}}
    return [RawMessageStartEvent.model_validate({"type": "message_start", "message": start}),
            RawContentBlockStartEvent.model_validate(
                {"type": "content_block_start", "index": 0,
                 "content_block": {"type": "text", "text": ""}}),
            RawContentBlockDeltaEvent.model_validate(
                {"type": "content_block_delta", "index": 0,
                 "delta": {"type": "text_delta", "text": "Paris is sunny."}}),
            RawContentBlockStartEvent.model_validate(
                {"type": "content_block_start", "index": 1,
                 "content_block": {"type": "tool_use", "id": "toolu_s1", "name": "get_weather",
                                   "input": {}}}),
            RawContentBlockDeltaEvent.model_validate(
                {"type": "content_block_delta", "index": 1,
                 "delta": {"type": "input_json_delta", "partial_json": '{"city": "Paris"}'}}),
            RawMessageDeltaEvent.model_validate(
                {"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                 "usage": {"output_tokens": 8}}),
            RawMessageStopEvent.model_validate({"type": "message_stop"})]


def langchain_chunks() -> list[Any]:
    from langchain_core.messages import AIMessageChunk  # test-only SDK

    return [AIMessageChunk(content="Paris "),
            AIMessageChunk(content="is sunny.", tool_call_chunks=[
                {"name": "get_weather", "args": '{"city": ', "id": "lc_s1", "index": 0}]),
            AIMessageChunk(content="", tool_call_chunks=[
                {"name": None, "args": '"Paris"}', "id": None, "index": 0}],
                usage_metadata={"input_tokens": 12, "output_tokens": 8, "total_tokens": 20},
                response_metadata={"model_name": "gpt-4o-mini"})]


def responses_events() -> list[Any]:
    from openai.types.responses import ResponseCompletedEvent, ResponseTextDeltaEvent

    delta = ResponseTextDeltaEvent.model_validate(
        {"type": "response.output_text.delta", "sequence_number": 1, "item_id": "msg_1",
         "output_index": 1, "content_index": 0, "delta": "Checking Paris.", "logprobs": []})
    return [delta, ResponseCompletedEvent.model_validate(
        {"type": "response.completed", "sequence_number": 2, "response": RESPONSE})]


@pytest.mark.parametrize(("make", "text", "ident", "usage"), [
    (openai_chunks, "Paris is sunny.", "call_s1", Usage(12, 8, None, "gpt-4o-mini")),
    (anthropic_events, "Paris is sunny.", "toolu_s1",
     Usage(12, 8, None, "claude-3-5-haiku-20241022")),
    (langchain_chunks, "Paris is sunny.", "lc_s1", Usage(12, 8, None, "gpt-4o-mini")),
    (responses_events, "Checking Paris.", "call_xyz", Usage(40, 9, None, "gpt-4o-mini")),
])
def test_a_streamed_sdk_answer_is_assembled(make: Any, text: str, ident: str,
                                            usage: Usage) -> None:
    chunks = make()

    def agent(question: str) -> Any:
        yield from chunks

    call = CallableEntry(agent, "agent").run("weather?", deadline=time.monotonic() + 10)
    assert call.error is None
    assert (call.text, call.usage) == (text, usage)
    assert call.tool_calls == (ToolCall("get_weather", {"city": "Paris"}, id=ident),)


def test_a_stream_that_mixes_text_and_chunks_says_so() -> None:
    chunks = openai_chunks()

    def agent(question: str) -> Any:
        yield "Paris"
        yield chunks[0]

    call = CallableEntry(agent, "agent").run("weather?", deadline=time.monotonic() + 10)
    assert call.error is not None
    assert call.error.message == ("the entry point streamed a ChatCompletionChunk as chunk 1; "
                                  "stream strings, or the chunks of one SDK's stream, not a mix")


# -- through every report --------------------------------------------------------------------

LANGCHAIN = {"content": [{"type": "text", "text": "On it."}],
             "tool_calls": [{"name": "get_weather", "args": {"city": "Paris"}, "id": "lc_1"}],
             "usage_metadata": {"input_tokens": 30, "output_tokens": 6, "total_tokens": 36},
             "response_metadata": {"model_name": "gpt-4o-mini"}}
#: (the SDK's type, recorded JSON, its tokens as every report shows them, the call's id)
SDKS = {"openai": ("openai.types.chat:ChatCompletion", CHAT, "99 tokens (82 in, 17 out)",
                   "call_abc"),
        "responses": ("openai.types.responses:Response", RESPONSE,
                      "49 tokens (40 in, 9 out)", "call_xyz"),
        "anthropic": ("anthropic.types:Message", MESSAGE, "31 tokens (20 in, 11 out)",
                      "toolu_01"),
        "langchain": ("langchain_core.messages:AIMessage", LANGCHAIN,
                      "36 tokens (30 in, 6 out)", "lc_1")}


def sdk_app(kind: str) -> str:
    """An entry point that returns the SDK's own response object, built from recorded JSON."""
    where, data, _, _ = SDKS[kind]
    module, name = where.split(":")
    return (f"import json\nfrom {module} import {name}\nDATA = json.loads({json.dumps(data)!r})"
            f"\ndef answer(text):\n    return {name}.model_validate(DATA)\n")


SDK_SUITE = """
cases:
  - id: calls-the-tool
    input: weather in Paris?
    expect:
      toolCalls:
        called: [get_weather]
        calledWith: [{name: get_weather, arguments: {city: Paris}}]
      maxTokens: 100
  - id: json-text-is-not-matched
    input: weather?
    expect: {contains: [get_weather]}
"""


@pytest.mark.parametrize("kind", list(SDKS))
def test_an_sdk_answer_reaches_every_report(packages: Packages, pytester: pytest.Pytester,
                                            kind: str) -> None:
    _, _, tokens, ident = SDKS[kind]
    packages.package(suite=SDK_SUITE, app=sdk_app(kind))
    result = pytester.runpytest("-v", "--elizon-results=results.json", "--junitxml=junit.xml",
                                "--elizon-markdown=summary.md", "--elizon-junit=elizon.xml",
                                "--elizon-html=report.html")
    # the tool call and usage are read; the text is "", so contains cannot pass on JSON
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([f"*calls-the-tool PASSED ({tokens})*",
                                 f"*json-text-is-not-matched FAILED ({tokens})*"])
    # the short summary keeps pytest's own word
    result.stdout.fnmatch_lines(["FAILED *::json-text-is-not-matched - *"])
    data = json.loads((pytester.path / "results.json").read_text())
    cases = {c["id"]: c for c in data["suites"][0]["cases"]}
    assert cases["calls-the-tool"]["tool_calls"][0]["id"] == ident
    assert cases["calls-the-tool"]["tool_calls"][0]["arguments"] == {"city": "Paris"}
    properties = {p.get("name"): p.get("value") for p in
                  ET.parse(pytester.path / "junit.xml").iter("property")}
    assert properties["elizon_tokens"] == tokens.split()[0]
    assert f"usage: {tokens}" in (pytester.path / "elizon.xml").read_text()
    report = (pytester.path / "report.html").read_text(encoding="utf-8")
    assert f'<span class="n u">{tokens.split()[0]} · —</span>' in report  # no price: a dash
    assert ident in report
    summary = (pytester.path / "summary.md").read_text()
    assert f"| {tokens} |" in summary  # the failing case's row


# -- the real client against a loopback server ------------------------------------------------

@pytest.mark.parametrize("stream", [False, True])
def test_the_openai_client_answer_is_read_as_returned(stream: bool) -> None:
    """The first thing a new user writes: return what ``client.chat.completions.create``
    gave — an answer with only a tool call (``content: null``), or its stream."""
    import openai  # test-only SDK

    with ChatServer().running() as server:
        client = openai.OpenAI(base_url=server.url, api_key="sk-test", max_retries=0)

        def agent(question: str) -> Any:
            return client.chat.completions.create(
                model="weather-agent", messages=[{"role": "user", "content": question}],
                stream=stream, **({"stream_options": {"include_usage": True}} if stream else {}))

        call = CallableEntry(agent, "agent").run("weather in Paris?",
                                                 deadline=time.monotonic() + 30)
        client.close()
    assert call.error is None
    assert call.text == ""
    assert call.tool_calls == (ToolCall("get_weather", {"city": "Paris"}, id="call_srv_1"),)
    assert call.usage == Usage(50, 10, None, "weather-agent")
