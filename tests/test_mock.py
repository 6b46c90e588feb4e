"""The mock model for offline tests (docs/mock.md): scripts and their errors, tested
directly; the server tested with the real ``openai`` and ``anthropic`` clients over
loopback, for all three APIs, streamed and not; the fixtures, an ``output: openai``
package and the plugin's start-up through ``pytester``.

The SDKs are imported inside the tests that use them (they are test-only dependencies).
"""

from __future__ import annotations

import json
import shutil
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from pytest_elizon_eval import Answer, ToolCall, Usage
from pytest_elizon_eval.mock import (
    MockModel,
    MockRequest,
    MockResponse,
    MockScriptExhausted,
    MockServer,
    MockToolCall,
    MockToolResult,
    MockUsage,
)
from pytest_elizon_eval.mock import model as model_module

from .conftest import Packages, imported_by_a_session

EXAMPLES = Path(__file__).parent.parent / "example_suites"
WEATHER = {"name": "get_weather", "arguments": {"city": "Paris"}}
USER = [{"role": "user", "content": "weather in Paris?"}]


@contextmanager
def openai_client(server: MockServer) -> Iterator[Any]:
    import openai  # deferred: a test-only dependency, for the tests that use it

    with openai.OpenAI(base_url=server.url, api_key="sk-secret-key-1234") as client:
        yield client


@contextmanager
def anthropic_client(server: MockServer) -> Iterator[Any]:
    import anthropic  # deferred: a test-only dependency, for the tests that use it

    with anthropic.Anthropic(base_url=server.anthropic_url, api_key="ak-secret") as client:
        yield client


# -- the model, directly -------------------------------------------------------------------

def test_the_script_answers_in_order_then_the_default_and_reset_starts_again() -> None:
    model = MockModel(["Hello!", {"content": "Goodbye!", "stop_reason": "end_turn"}],
                      default={"content": "Default reply"})
    assert [model.complete("Hi").content for _ in range(4)] == [
        "Hello!", "Goodbye!", "Default reply", "Default reply"]
    assert model.call_count == 4
    assert model.calls[0] == MockRequest("python", ({"role": "user", "content": "Hi"},),
                                         body={"messages": [{"role": "user", "content": "Hi"}]})
    model.reset()
    assert (model.call_count, model.calls) == (0, ())
    assert model("Hi again", model="m-1").content == "Hello!"  # calling it is complete()
    assert model.calls[0].model == "m-1"


def test_a_script_that_runs_out_says_after_how_many_calls() -> None:
    model = MockModel(["one", "two"])
    model.complete("a")
    model.complete("b")
    with pytest.raises(MockScriptExhausted, match=r"^the MockModel's script ran out after 2 "
                       r"calls: its 2 responses are used up and it has no default, so call 3 "
                       r"has no answer \(script more responses, or give default=\)$"):
        model.complete("c")
    assert model.call_count == 3  # the request that found nothing is still recorded
    with pytest.raises(MockScriptExhausted, match="ran out after 0 calls"):
        MockModel().complete("anything")


def test_answers_are_filled_in_and_become_the_plugins_answer() -> None:
    model = MockModel([{"content": "Checking.", "tool_calls": [WEATHER, {**WEATHER, "id": "x9"}],
                        "usage": {"input_tokens": 12, "output_tokens": 4}},
                       {"tool_calls": [MockToolCall("get_time")], "model": "claude-x"},
                       MockResponse(content="It is 21 C.", stop_reason="max_tokens")])
    first = model.complete(USER, model="gpt-test")
    # made-up ids are numbered per model; a scripted one is kept; the request's model named
    assert [c.id for c in first.tool_calls] == ["call_1", "x9"]
    assert (first.stop_reason, first.model, first.usage) == ("tool_use", "gpt-test",
                                                              MockUsage(12, 4))
    assert first.to_answer() == Answer(
        text="Checking.", tool_calls=(ToolCall("get_weather", {"city": "Paris"}, id="call_1"),
                                      ToolCall("get_weather", {"city": "Paris"}, id="x9")),
        usage=Usage(12, 4, None, "gpt-test"))
    second = model.complete(USER)
    assert second.to_answer() == Answer(text="", tool_calls=(ToolCall("get_time", {},
                                                                      id="call_2"),),
                                        usage=Usage(0, 0, None, "claude-x"))
    third = model.complete(USER)
    assert (third.stop_reason, third.model, third.to_answer().text) == (
        "max_tokens", "elizon-mock", "It is 21 C.")
    model.reset()
    assert model.complete(USER).tool_calls[0].id == "call_1"  # ids start again too


def test_on_request_sees_each_request_and_may_answer_it_without_using_the_script() -> None:
    seen: list[str | None] = []

    def route(request: MockRequest) -> str | None:
        seen.append(request.last_user_text)
        return "routed" if request.last_user_text == "special" else None

    model = MockModel(["first", "second"], on_request=route)
    answers = [model.complete(text).content for text in ("a", "special", "b")]
    assert answers == ["first", "routed", "second"]
    assert seen == ["a", "special", "b"]
    assert model.call_count == 3

    def refuse(request: MockRequest) -> None:
        raise AssertionError(f"the app should not have asked {request.last_user_text!r}")

    strict = MockModel(["never"], on_request=refuse)
    with pytest.raises(AssertionError, match="should not have asked 'x'"):
        strict.complete("x")
    assert strict.call_count == 1
    with pytest.raises(ValueError, match=r"^the response on_request returned: unknown key "
                                         r"'txt'"):
        MockModel(on_request=lambda request: {"txt": "typo"}).complete("x")


def test_a_delay_is_waited_by_complete(monkeypatch: pytest.MonkeyPatch) -> None:
    waited: list[float] = []
    monkeypatch.setattr(model_module, "time", SimpleNamespace(sleep=waited.append))
    model = MockModel([{"content": "slow", "delay": 1.5}, "fast"])
    model.complete("a")
    model.complete("b")
    assert waited == [1.5]


@pytest.mark.parametrize(("script", "error", "message"), [
    ([{"tool_calls": [{"arguments": {"city": "Paris"}}]}], ValueError,
     "responses[0].tool_calls[0]: a tool call needs a name"),
    (["ok", {"tool_calls": [{"name": " "}]}], ValueError,
     "responses[1].tool_calls[0]: a tool call needs a name (a non-empty string), not ' '"),
    ([{"tool_calls": [{"name": "f", "arguments": ["Paris"]}]}], TypeError,
     "responses[0].tool_calls[0].arguments must be a mapping of argument names to values, "
     "not list"),
    ([{"tool_calls": [{"name": "f", "arguments": "{\"city\": \"Paris\"}"}]}], TypeError,
     "responses[0].tool_calls[0].arguments must be a mapping of argument names to values, "
     "not str"),
    ([{"tool_calls": [{"name": "f", "arguments": {"when": {1, 2}}}]}], TypeError,
     "responses[0].tool_calls[0].arguments cannot be sent as JSON: Object of type set is not "
     "JSON serializable"),
    ([{"tool_calls": {"name": "f"}}], TypeError,
     "responses[0].tool_calls must be a list of tool calls, not dict"),
    ([{"tool_calls": [{"name": "f", "args": {}}]}], ValueError,
     "responses[0].tool_calls[0]: unknown key 'args' (did you mean 'arguments'?); the keys are "
     "name, arguments, id"),
    ([{"content": "hi", "delay": -1}], ValueError,
     "responses[0].delay must be 0 or more seconds, not -1"),
    ([{"content": "hi", "delay": "2s"}], TypeError,
     "responses[0].delay must be a number of seconds, not '2s'"),
    ([{"content": "hi", "delay": float("nan")}], ValueError,
     "responses[0].delay must be 0 or more seconds, not nan"),
    ([{"content": "hi", "usage": {"input_tokens": -5}}], ValueError,
     "responses[0].usage.input_tokens must be 0 or more, not -5"),
    ([{"content": "hi", "usage": {"output_tokens": 2.5}}], TypeError,
     "responses[0].usage.output_tokens must be a whole number of tokens, not 2.5"),
    ([{"content": "hi", "usage": {"prompt_tokens": 3}}], ValueError,
     "responses[0].usage: unknown key 'prompt_tokens' (did you mean 'input_tokens'?)"),
    ([{"content": "hi", "toolCalls": []}], ValueError,
     "responses[0]: unknown key 'toolCalls' (did you mean 'tool_calls'?); the keys are content, "
     "tool_calls, stop_reason, usage, model, delay"),
    ([{"content": "hi", "stop_reason": "stop"}], ValueError,
     "responses[0].stop_reason must be one of end_turn, tool_use, max_tokens, stop_sequence, "
     "not 'stop' (OpenAI's 'stop' is 'end_turn' here)"),
    ([{"content": "hi", "stop_reason": "tool_use"}], ValueError,
     "responses[0].stop_reason is tool_use but it calls no tool"),
    ([{}], ValueError,
     "responses[0] has neither content nor tool_calls (give content: '' for an empty answer)"),
    ([{"content": 42}], TypeError, "responses[0].content must be a string, not int"),
    ([None], TypeError, "responses[0] must be a string, a mapping or a MockResponse, not "
                        "NoneType"),
    ("Hello!", TypeError, "responses must be a list of responses; wrap a single one in a list"),
])
def test_a_bad_script_is_refused_when_the_model_is_made(script: Any, error: type[Exception],
                                                        message: str) -> None:
    with pytest.raises(error) as raised:
        MockModel(script)
    assert str(raised.value).startswith(message)


def test_a_bad_default_on_request_or_response_object_is_refused_too() -> None:
    with pytest.raises(ValueError, match=r"^default: unknown key 'text' \(did you mean "
                                         r"'content'\?\)"):
        MockModel(default={"text": "hi"})
    with pytest.raises(TypeError, match=r"^on_request must be callable, not str$"):
        MockModel(on_request="print")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^MockToolCall: a tool call needs a name"):
        MockToolCall("")
    with pytest.raises(ValueError, match=r"^MockUsage.input_tokens must be 0 or more, not -1"):
        MockUsage(-1, 0)
    with pytest.raises(ValueError, match=r"^MockResponse.delay must be 0 or more seconds"):
        MockResponse(content="x", delay=-0.5)
    with pytest.raises(TypeError, match=r"^messages must be a string or a non-empty list of "
                                        r"message mappings"):
        MockModel(["x"]).complete([])
    with pytest.raises(TypeError, match=r"^tools must be a list of tool definitions"):
        MockModel(["x"]).complete("hi", tools="get_weather")


def test_a_requests_user_text_and_tool_results_are_read_from_each_apis_shape() -> None:
    chat = MockRequest("openai.chat", (
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1"}]},
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c": 21}'},
        {"role": "user", "content": [{"type": "text", "text": "So?"}]}))
    assert chat.last_user_text == "So?"
    assert chat.tool_results == (MockToolResult("call_1", '{"temp_c": 21}'),)
    responses = MockRequest("openai.responses", (
        {"role": "user", "content": [{"type": "input_text", "text": "weather?"}]},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "21 C"}))
    assert responses.last_user_text == "weather?"
    assert responses.tool_results == (MockToolResult("call_1", "21 C"),)
    anthropic = MockRequest("anthropic.messages", (
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "call_1"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1",
                                      "content": [{"type": "text", "text": "21 C"}]}]}))
    # the user message that only returns a tool's result is not the user's text
    assert anthropic.last_user_text == "weather?"
    assert anthropic.tool_results == (MockToolResult("call_1", "21 C"),)
    assert MockRequest("python", ({"role": "assistant", "content": "x"},)).last_user_text is None


def test_threads_calling_at_once_each_get_their_own_scripted_answer() -> None:
    model = MockModel([f"answer {i}" for i in range(40)])
    answers: list[str | None] = []
    lock = threading.Lock()

    def ask() -> None:
        for _ in range(10):
            content = model.complete("hi").content
            with lock:
                answers.append(content)

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(answers, key=lambda a: int((a or "").split()[1])) == [
        f"answer {i}" for i in range(40)]
    assert model.call_count == 40


# -- the server, with the real SDKs -------------------------------------------------------

def test_openai_chat_completions_answer_text_tool_calls_and_usage() -> None:
    model = MockModel([{"content": "Let me check.", "tool_calls": [WEATHER],
                        "usage": {"input_tokens": 82, "output_tokens": 17}},
                       {"content": "It is 21 C in Paris.", "model": "gpt-mock-2"}])
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]
    with MockServer(model) as server, openai_client(server) as client:
        first = client.chat.completions.create(
            model="gpt-4o-mini", tools=tools,
            messages=[{"role": "system", "content": "Be brief."}, *USER])
        call = first.choices[0].message.tool_calls[0]
        second = client.chat.completions.create(model="gpt-4o-mini", messages=[
            *USER, first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "21 C"}])
        recorded = server.requests
    assert first.choices[0].message.content == "Let me check."
    assert (call.id, call.function.name, json.loads(call.function.arguments)) == (
        "call_1", "get_weather", {"city": "Paris"})
    assert first.choices[0].finish_reason == "tool_calls"
    assert (first.usage.prompt_tokens, first.usage.completion_tokens,
            first.usage.total_tokens) == (82, 17, 99)
    assert first.model == "gpt-4o-mini"
    # the plugin reads the SDK's answer as the model meant it
    assert Answer.from_openai(first) == Answer(
        text="Let me check.", tool_calls=(ToolCall("get_weather", {"city": "Paris"},
                                                   id="call_1"),),
        usage=Usage(82, 17, None, "gpt-4o-mini"))
    assert (second.choices[0].message.content, second.model) == ("It is 21 C in Paris.",
                                                                 "gpt-mock-2")
    assert second.choices[0].finish_reason == "stop"
    # what the application sent, as the model saw it and as the server received it
    asked = model.calls
    assert (asked[0].api, asked[0].system, asked[0].tools) == ("openai.chat", "Be brief.",
                                                              tuple(tools))
    assert asked[1].tool_results == (MockToolResult("call_1", "21 C"),)
    assert [(r.method, r.path, r.api) for r in recorded] == [
        ("POST", "/v1/chat/completions", "openai.chat")] * 2
    assert recorded[0].headers["authorization"] == "Bearer ***"
    assert "sk-secret-key-1234" not in repr(recorded)
    assert recorded[0].body["messages"][0] == {"role": "system", "content": "Be brief."}


def test_openai_chat_completions_stream_in_pieces_with_usage_last() -> None:
    model = MockModel([{"content": "It is sunny in Paris today.", "tool_calls": [WEATHER],
                        "usage": {"input_tokens": 9, "output_tokens": 7}},
                       "Plain streamed answer."])
    with MockServer(model) as server, openai_client(server) as client:
        chunks = list(client.chat.completions.create(
            model="gpt-4o-mini", messages=USER, stream=True,
            stream_options={"include_usage": True}))
        # the SDK's own accumulating helper reads the same stream into one completion
        with client.chat.completions.stream(model="gpt-4o-mini", messages=USER) as stream:
            final = stream.get_final_completion()
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    pieces = [c.choices[0].delta.content for c in chunks if c.choices
              and c.choices[0].delta.content]
    arguments = "".join(t.function.arguments or "" for c in chunks if c.choices
                        for t in c.choices[0].delta.tool_calls or ())
    assert text == "It is sunny in Paris today."
    assert len(pieces) == 6  # a word at a time
    assert json.loads(arguments) == {"city": "Paris"}
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    # with include_usage the usage comes alone, last, with no choices
    assert chunks[-1].choices == []
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (9, 7)
    assert all(c.usage is None for c in chunks[:-1])
    assert final.choices[0].message.content == "Plain streamed answer."
    assert model.calls[0].stream is True


def test_the_openai_responses_api_answers_and_streams() -> None:
    model = MockModel([{"content": "Checking Paris.", "tool_calls": [WEATHER],
                        "usage": {"input_tokens": 40, "output_tokens": 9}},
                       {"content": "It is 21 C.", "usage": {"input_tokens": 50,
                                                            "output_tokens": 5}},
                       {"content": "Cut sho", "stop_reason": "max_tokens"}])
    with MockServer(model) as server, openai_client(server) as client:
        response = client.responses.create(model="gpt-4o-mini", input="weather in Paris?",
                                           instructions="Be brief.")
        with client.responses.stream(model="gpt-4o-mini", input=[
                {"role": "user", "content": "weather in Paris?"},
                {"type": "function_call_output", "call_id": "call_1",
                 "output": "21 C"}]) as stream:
            deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
            streamed = stream.get_final_response()
        cut = client.responses.create(model="gpt-4o-mini", input="long story")
    assert response.output_text == "Checking Paris."
    (call,) = [item for item in response.output if item.type == "function_call"]
    assert (call.call_id, call.name, json.loads(call.arguments)) == ("call_1", "get_weather",
                                                                     {"city": "Paris"})
    assert (response.usage.input_tokens, response.usage.output_tokens) == (40, 9)
    assert Answer.from_openai(response).tool_calls == (
        ToolCall("get_weather", {"city": "Paris"}, id="call_1"),)
    assert deltas == ["It ", "is ", "21 ", "C."]
    assert (streamed.output_text, streamed.status, streamed.usage.total_tokens) == (
        "It is 21 C.", "completed", 55)
    assert (cut.status, cut.incomplete_details.reason) == ("incomplete", "max_output_tokens")
    first, second, _ = model.calls
    assert (first.api, first.system, first.last_user_text) == (
        "openai.responses", "Be brief.", "weather in Paris?")
    assert second.tool_results == (MockToolResult("call_1", "21 C"),)


def test_the_responses_stream_of_a_tool_call_gives_its_arguments_in_pieces() -> None:
    model = MockModel([{"tool_calls": [{"name": "search", "arguments": {
        "query": "invoices of March", "limit": 10}}]}])
    with MockServer(model) as server, openai_client(server) as client:
        events = list(client.responses.create(model="m", input="find", stream=True))
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    pieces = [e.delta for e in events if e.type == "response.function_call_arguments.delta"]
    assert len(pieces) > 1
    assert json.loads("".join(pieces)) == {"query": "invoices of March", "limit": 10}
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert events[-1].response.output[0].call_id == "call_1"


def test_anthropic_messages_answer_and_stream_text_tool_use_and_usage() -> None:
    model = MockModel([{"content": "Let me check.", "tool_calls": [WEATHER],
                        "usage": {"input_tokens": 20, "output_tokens": 11}},
                       {"content": "It is 21 C in Paris.", "stop_reason": "stop_sequence",
                        "usage": {"input_tokens": 30, "output_tokens": 8}},
                       {"tool_calls": [WEATHER]}])
    with MockServer(model) as server, anthropic_client(server) as client:
        message = client.messages.create(model="claude-x", max_tokens=100, system="Be brief.",
                                         messages=USER)
        use = message.content[1]
        with client.messages.stream(model="claude-x", max_tokens=100,
                                    stop_sequences=["\n\nHuman:"], messages=[
                *USER, {"role": "assistant", "content": [b.model_dump() for b in
                                                         message.content]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id,
                                              "content": "21 C"}]}]) as stream:
            texts = list(stream.text_stream)
            streamed = stream.get_final_message()
        with client.messages.stream(model="claude-x", max_tokens=100,
                                    messages=USER) as stream:
            tool_only = stream.get_final_message()
        recorded = server.requests
    assert (message.content[0].type, message.content[0].text) == ("text", "Let me check.")
    assert (use.type, use.id, use.name, use.input) == ("tool_use", "call_1", "get_weather",
                                                       {"city": "Paris"})
    assert (message.stop_reason, message.model) == ("tool_use", "claude-x")
    assert (message.usage.input_tokens, message.usage.output_tokens) == (20, 11)
    assert Answer.from_anthropic(message) == Answer(
        text="Let me check.", tool_calls=(ToolCall("get_weather", {"city": "Paris"},
                                                   id="call_1"),),
        usage=Usage(20, 11, None, "claude-x"))
    assert texts == ["It ", "is ", "21 ", "C ", "in ", "Paris."]
    assert streamed.content[0].text == "It is 21 C in Paris."
    assert (streamed.stop_reason, streamed.stop_sequence) == ("stop_sequence", "\n\nHuman:")
    assert (streamed.usage.input_tokens, streamed.usage.output_tokens) == (30, 8)
    assert [b.type for b in tool_only.content] == ["tool_use"]
    assert (tool_only.content[0].input, tool_only.stop_reason) == ({"city": "Paris"},
                                                                   "tool_use")
    assert model.calls[0].system == "Be brief."
    assert model.calls[1].tool_results == (MockToolResult("call_1", "21 C"),)
    assert [(r.path, r.api) for r in recorded] == [("/v1/messages", "anthropic.messages")] * 3
    assert "ak-secret" not in repr(recorded)
    assert "anthropic-version" in recorded[0].headers


def test_bad_requests_get_each_apis_error_shape_and_status() -> None:
    import anthropic  # deferred: test-only dependencies, for the tests that use them
    import openai

    with MockServer(MockModel(default="fine")) as server:
        with httpx.Client() as http:
            not_json = http.post(f"{server.url}/chat/completions", content=b"{oops")
            unknown = http.post(f"{server.url}/completions", json={"prompt": "hi"},
                                headers={"x-api-key": "ak-123", "cookie": "session=s3"})
            wrong_method = http.get(f"{server.url}/chat/completions")
            no_messages = http.post(f"{server.url}/chat/completions", json={"model": "m"})
            null = http.post(f"{server.url}/responses", content=b"null")
            anthropic_bad = http.post(f"{server.anthropic_url}/v1/messages", content=b"[1,",
                                      headers={"anthropic-version": "2023-06-01"})
            chunked = http.post(f"{server.url}/chat/completions",
                                content=iter([b'{"messages": [{"role": "user", ',
                                              b'"content": "hi"}]}']))
        with openai_client(server) as client, pytest.raises(openai.BadRequestError) as sdk:
            client.chat.completions.create(model="m", messages=[])
        lost_id = http_post(server, {"messages": [*USER, {
            "role": "assistant", "content": None, "tool_calls": [{
                "id": "call_1", "type": "function",
                "function": {"name": "get_weather", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_one", "content": "21 C"}]})
        with anthropic_client(server) as client, \
                pytest.raises(anthropic.BadRequestError) as lost_anthropic_id:
            client.messages.create(model="m", max_tokens=5, messages=[
                *USER, {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "call_1", "name": "f", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_9",
                                              "content": "21 C"}]}])
        with anthropic_client(server) as client, \
                pytest.raises(anthropic.BadRequestError) as sdk_anthropic:
            client.messages.create(model="m", max_tokens=5, messages=[])
        recorded = server.requests
    assert not_json.status_code == 400
    assert not_json.json() == {"error": {"message": "the request body is not JSON: '{oops'",
                                         "type": "invalid_request_error", "param": None,
                                         "code": None}}
    assert unknown.status_code == 404
    assert unknown.json()["error"]["message"] == (
        "Invalid URL (POST /v1/completions): the mock server answers POST /v1/chat/completions, "
        "POST /v1/responses, POST /v1/messages")
    assert wrong_method.status_code == 405
    assert no_messages.status_code == 400
    assert no_messages.json()["error"]["message"] == "messages must be a non-empty array of " \
                                                     "messages"
    assert (null.status_code, null.json()["error"]["message"]) == (
        400, "the request body must be a JSON object")
    assert anthropic_bad.status_code == 400
    assert anthropic_bad.json() == {"type": "error", "error": {
        "type": "invalid_request_error", "message": "the request body is not JSON: '[1,'"}}
    assert chunked.json()["choices"][0]["message"]["content"] == "fine"
    assert sdk.value.body == {"message": "messages must be a non-empty array of messages",
                              "type": "invalid_request_error", "param": None, "code": None}
    assert sdk_anthropic.value.body == {"type": "error", "error": {
        "type": "invalid_request_error", "message": "messages must be a non-empty array of "
                                                    "messages"}}
    # a tool result must answer a call the model made, as the real APIs insist
    assert lost_id.status_code == 400
    assert lost_id.json()["error"]["message"] == (
        'messages[2]: the tool result for "call_one" answers no tool call of the assistant '
        "message before it (its calls: call_1)")
    assert lost_anthropic_id.value.body["error"] == {
        "type": "invalid_request_error",
        "message": 'messages[2]: the tool result for "call_9" answers no tool call of the '
                   "assistant message before it (its calls: call_1)"}
    # bad requests are recorded as they came; only the good one reached the model
    assert [(r.method, r.path, r.body) for r in recorded[:3]] == [
        ("POST", "/v1/chat/completions", None), ("POST", "/v1/completions", {"prompt": "hi"}),
        ("GET", "/v1/chat/completions", None)]
    assert (recorded[1].headers["x-api-key"], recorded[1].headers["cookie"]) == ("***", "***")
    assert server.model.call_count == 1
    assert server.errors == []


def http_post(server: MockServer, body: object) -> httpx.Response:
    with httpx.Client() as http:
        return http.post(f"{server.url}/chat/completions", json=body)


def _raw_exchange(server: MockServer, head: bytes) -> bytes:
    """Send ``head`` (a request line, headers and what follows) on a socket of its own and
    read the whole answer, the socket left open for writing: a server that waited for the
    client to close would never answer. The timeout only stops a test that would hang."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=120) as sock:
        sock.sendall(head)
        received = b""
        while chunk := sock.recv(65536):  # HTTP/1.0: the server closes when it has answered
            received += chunk
    return received


CHUNKED = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: mock\r\n"
           b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
BODY = json.dumps({"messages": USER}).encode()


@pytest.mark.parametrize("size", [b"-1", b"+1f", b"0x1f", b"1_f", b"", b"zz",
                                  b"11111111111111111", b" -1;ext"])
def test_a_chunk_size_that_is_not_hex_digits_is_refused_before_anything_is_read(
        size: bytes) -> None:
    """``int(b"-1", 16)`` is -1, and ``rfile.read(-1)`` reads to the end of the stream,
    past the size limit: a chunk size is 1 to 16 hex digits, or the request is a 400."""
    with MockServer(MockModel(default="fine")) as server:
        answer = _raw_exchange(server, CHUNKED + size + b"\r\n" + BODY)
        assert server.model.call_count == 0
    assert answer.startswith(b"HTTP/1.0 400 "), answer[:200]
    body = json.loads(answer.split(b"\r\n\r\n", 1)[1])
    assert body["error"]["message"] == "the request body's length cannot be read"
    assert server.errors == []


def test_a_chunked_body_with_extensions_and_a_content_length_of_digits_are_read() -> None:
    with MockServer(MockModel(default="fine")) as server:
        chunked = _raw_exchange(server, CHUNKED + b"%X;name=value\r\n" % len(BODY) + BODY
                                + b"\r\n0\r\n\r\n")
        plain = _raw_exchange(server, b"POST /v1/chat/completions HTTP/1.1\r\nHost: m\r\n"
                                      b"Content-Length: %d\r\n\r\n" % len(BODY) + BODY)
        signed = _raw_exchange(server, b"POST /v1/chat/completions HTTP/1.1\r\nHost: m\r\n"
                                       b"Content-Length: +%d\r\n\r\n" % len(BODY) + BODY)
    assert chunked.startswith(b"HTTP/1.0 200 "), chunked[:200]
    assert plain.startswith(b"HTTP/1.0 200 "), plain[:200]
    assert signed.startswith(b"HTTP/1.0 400 "), signed[:200]
    assert server.model.call_count == 2


OPENAI_CALL = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
ANTHROPIC_USE = {"role": "assistant", "content": [
    {"type": "tool_use", "id": "call_1", "name": "f", "input": {}}]}


@pytest.mark.parametrize(("path", "body", "message"), [
    ("/v1/chat/completions", {"messages": [*USER, {"role": "assistant", "tool_calls": 5}]},
     "messages[1].tool_calls must be an array, not 5"),
    ("/v1/chat/completions", {"messages": [*USER, {"role": "assistant", "tool_calls": [7]}]},
     "messages[1].tool_calls[0] must be an object, not 7"),
    ("/v1/chat/completions", {"messages": [*USER, {"role": "assistant", "tool_calls": [
        {"id": ["x"], "type": "function"}]}]},
     'messages[1].tool_calls[0].id must be a string, not ["x"]'),
    ("/v1/chat/completions", {"messages": [*USER, OPENAI_CALL,
                                           {"role": "tool", "tool_call_id": [1],
                                            "content": "21 C"}]},
     "messages[2].tool_call_id must be a string, not [1]"),
    ("/v1/messages", {"max_tokens": 5, "messages": [*USER, ANTHROPIC_USE, {
        "role": "user", "content": [{"type": "tool_result", "tool_use_id": {},
                                     "content": "21 C"}]}]},
     "messages[2].content[0].tool_use_id must be a string, not {}"),
    ("/v1/messages", {"max_tokens": 5, "messages": [*USER, {"role": "assistant", "content": [
        {"type": "tool_use", "id": 3, "name": "f", "input": {}}]}]},
     "messages[1].content[0].id must be a string, not 3"),
    ("/v1/responses", {"input": [*USER, {"type": "function_call_output", "call_id": [],
                                         "output": "21 C"}]},
     "input[1].call_id must be a string, not []"),
])
def test_a_tool_call_id_or_tool_calls_of_the_wrong_type_is_a_400_in_the_api_s_shape(
        path: str, body: dict[str, Any], message: str) -> None:
    """What made ``request_of`` raise TypeError (the client then got no answer at all) is
    refused as the API would refuse it."""
    with MockServer(MockModel(default="fine")) as server, httpx.Client() as http:
        answered = http.post(f"{server.root_url}{path}", json=body)
    assert answered.status_code == 400
    if path == "/v1/messages":
        assert answered.json() == {"type": "error", "error": {
            "type": "invalid_request_error", "message": message}}
    else:
        assert answered.json() == {"error": {"message": message,
                                             "type": "invalid_request_error", "param": None,
                                             "code": None}}
    assert (server.errors, server.model.call_count) == ([], 0)


def test_a_request_no_check_foresaw_is_answered_500_and_kept(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(api: str, body: object) -> MockRequest:
        raise TypeError("a shape nobody foresaw")

    from pytest_elizon_eval.mock import protocols  # deferred: the module is patched here

    monkeypatch.setattr(protocols, "request_of", broken)
    server = MockServer(MockModel(default="fine")).start()
    try:
        answered = http_post(server, {"messages": USER})
    finally:
        server.stop()
    assert answered.status_code == 500
    assert answered.json()["error"]["message"] == ("the mock server could not read the "
                                                   "request: TypeError: a shape nobody "
                                                   "foresaw")
    assert [str(e) for e in server.errors] == ["a shape nobody foresaw"]


def test_a_model_that_cannot_answer_is_a_500_once_and_fails_the_with_block() -> None:
    import openai  # deferred: a test-only dependency, for the tests that use it

    server = MockServer(MockModel(["only one"]))
    answered: list[pytest.ExceptionInfo[openai.InternalServerError]] = []

    def ask_twice() -> None:
        with server, openai_client(server) as client:
            client.chat.completions.create(model="m", messages=USER)
            with pytest.raises(openai.InternalServerError) as refused:
                client.chat.completions.create(model="m", messages=USER)
            answered.append(refused)

    with pytest.raises(AssertionError) as raised:
        ask_twice()
    assert "the mock model could not answer: MockScriptExhausted: the MockModel's script ran " \
           "out after 1 calls" in str(answered[0].value)
    # the SDK was told not to retry: the model saw the application's two requests, no more
    assert server.model.call_count == 2
    assert [type(e) for e in server.errors] == [MockScriptExhausted]
    assert str(raised.value).startswith("the mock server could not answer 1 request(s); the "
                                        "first: MockScriptExhausted: ")
    assert raised.value.__cause__ is server.errors[0]


def test_stopping_interrupts_a_delayed_answer_closes_the_port_and_joins_every_thread() -> None:
    before = set(threading.enumerate())
    arrived = threading.Event()
    server = MockServer(MockModel([{"content": "late", "delay": 600}, "prompt"],
                                  on_request=lambda request: arrived.set())).start()
    port = server.port
    outcome: list[object] = []

    def ask_slowly() -> None:
        try:
            with httpx.Client(timeout=None) as http:
                outcome.append(http.post(f"{server.url}/chat/completions",
                                         json={"messages": [{"role": "user",
                                                             "content": "slow"}]}).status_code)
        except httpx.HTTPError as exc:
            outcome.append(type(exc).__name__)

    slow = threading.Thread(target=ask_slowly)
    slow.start()
    # the first request reached the model (the wait only stops a test that would hang)
    assert arrived.wait(120)
    with httpx.Client() as http:
        prompt = http.post(f"{server.url}/chat/completions", json={"messages": [
            {"role": "user", "content": "quick"}]}).json()
    # the second request was answered while the first still waited out its delay: the
    # model took them in that order, answered the second, and the first got no answer
    # until the server stopped — and then none at all
    assert [c.last_user_text for c in server.model.calls] == ["slow", "quick"]
    assert prompt["choices"][0]["message"]["content"] == "prompt"
    assert outcome == []
    server.stop()
    slow.join()
    assert outcome == ["RemoteProtocolError"]  # the delayed answer was never sent
    assert set(threading.enumerate()) - before == set()
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port)):
        pass
    server.stop()  # twice is no error
    with pytest.raises(RuntimeError, match="a MockServer starts once"):
        server.start()


def test_the_fixture_stops_every_server_though_one_fails_and_raises_every_error() -> None:
    from pytest_elizon_eval.mock.fixtures import _stop_all  # the fixture's teardown

    servers = [MockServer(MockModel(["one"])).start() for _ in range(3)]
    ports = [s.port for s in servers]
    real_stop = servers[0].stop

    def failing_stop() -> None:
        raise OSError("the first server's socket would not close")

    servers[0].stop = failing_stop  # type: ignore[method-assign]
    for server in servers[1:]:  # each one's script runs out: an error kept, to be raised
        for _ in range(2):
            http_post(server, {"messages": USER})
    with pytest.raises(Exception, match=r"^3 problems stopping the test's mock servers") \
            as raised:
        _stop_all(servers)
    # the others were stopped all the same
    for port in ports[1:]:
        with pytest.raises(ConnectionRefusedError), \
                socket.create_connection(("127.0.0.1", port)):
            pass
    problems = list(getattr(raised.value, "exceptions", [raised.value]))
    if sys.version_info >= (3, 11):
        assert type(raised.value).__name__ == "ExceptionGroup"
        assert [type(p).__name__ for p in problems] == ["OSError", "AssertionError",
                                                        "AssertionError"]
        assert str(problems[0]) == "the first server's socket would not close"
        assert all("MockScriptExhausted" in str(p) for p in problems[1:])
    else:  # one AssertionError naming each
        assert isinstance(raised.value, AssertionError)
        assert "OSError: the first server's socket would not close" in str(raised.value)
        assert str(raised.value).count("MockScriptExhausted") == 2
    real_stop()


def test_one_server_s_error_is_raised_as_itself() -> None:
    from pytest_elizon_eval.mock.fixtures import _stop_all  # the fixture's teardown

    server = MockServer(MockModel([])).start()
    http_post(server, {"messages": USER})
    with pytest.raises(AssertionError, match="could not answer 1 request"):
        _stop_all([server])
    _stop_all([])  # none: nothing to say


def test_a_server_not_started_says_so_and_takes_only_a_mock_model() -> None:
    with pytest.raises(RuntimeError, match="the mock server is not started: call start"):
        _ = MockServer().url
    with pytest.raises(TypeError, match="model must be a MockModel, not list"):
        MockServer(["hi"])  # type: ignore[arg-type]


# -- the fixtures, through pytester --------------------------------------------------------

FIXTURE_TESTS = """
import socket
import threading

import openai
import pytest

STARTED = []


def test_an_app_talks_to_the_mock(elizon_mock_server):
    server = elizon_mock_server(["Bonjour!"], default="Encore?")
    STARTED.append(server.port)
    with openai.OpenAI(base_url=server.url, api_key="k") as client:
        texts = [client.chat.completions.create(model="m", messages=[
            {"role": "user", "content": "hi"}]).choices[0].message.content for _ in range(2)]
    assert texts == ["Bonjour!", "Encore?"]
    assert server.model.calls[0].last_user_text == "hi"


def test_the_servers_of_the_last_test_are_gone(elizon_mock_server):
    assert not [t for t in threading.enumerate() if t.name.startswith("elizon-mock-server")]
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", STARTED[0])).close()


def test_each_test_gets_fresh_models(elizon_mock_model):
    one, two = elizon_mock_model(["a"]), elizon_mock_model(["b"])
    assert (one.complete("x").content, two.complete("x").content) == ("a", "b")


def test_a_model_or_a_script_not_both(elizon_mock_server, elizon_mock_model):
    with pytest.raises(TypeError, match="a model or a script"):
        elizon_mock_server(["a"], model=elizon_mock_model(["b"]))


def test_an_assertion_in_on_request_fails_the_test_even_if_the_app_swallows_it(
        elizon_mock_server):
    def no_secrets(request):
        assert "password" not in request.last_user_text, "the app leaked a password"

    server = elizon_mock_server(on_request=no_secrets, default="ok")
    with openai.OpenAI(base_url=server.url, api_key="k") as client:
        try:
            client.chat.completions.create(model="m", messages=[
                {"role": "user", "content": "my password is hunter2"}])
        except openai.APIError:
            pass  # an application that hides its model's errors
"""


def test_the_fixtures_make_fresh_servers_stop_them_and_surface_on_request_failures(
        pytester: pytest.Pytester) -> None:
    # imported out here: a module an in-process run imports first is dropped after it
    import openai  # noqa: F401

    pytester.makepyfile(test_app=FIXTURE_TESTS)
    result = pytester.runpytest()
    result.assert_outcomes(passed=5, errors=1)
    result.stdout.fnmatch_lines([
        "*ERROR at teardown of test_an_assertion_in_on_request_fails_the_test_even_if_*",
        "*AssertionError: the mock server could not answer 1 request(s); the first: "
        "AssertionError: the app leaked a password*"])


SHOP_TOOLS = """
- type: function
  function:
    name: lookup_order
    description: The status of an order.
    parameters: {type: object, properties: {order_id: {type: string}}, required: [order_id]}
"""

SHOP_SUITE = """
cases:
  - id: greets
    input: hello
    expect: {contains: [Welcome to the shop]}
  - id: looks-up-an-order
    turns:
      - input: where is order A-17?
        expect:
          toolCalls: {calledWith: [{name: lookup_order, arguments: {order_id: A-17}}]}
      - input: and?
        toolResults: {lookup_order: {status: shipped}}
        expect: {contains: [Order A-17 is shipped]}
  - id: expects-what-the-model-never-says
    input: hello
    expect: {contains: [Goodbye]}
"""

SHOP_CONFTEST = """
import json
import re

import pytest


def answer(request):
    # a scripted model that reads the conversation: order questions call the tool, a tool's
    # result is reported, anything else is greeted
    if request.system != "You are the ACME shop assistant.":
        return "no system prompt reached me"
    asked = re.search(r"order ([A-Z]-[0-9]+)", request.last_user_text)
    if asked and not request.tool_results:
        return {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": asked[1]}}],
                "usage": {"input_tokens": 30, "output_tokens": 9}}
    if request.tool_results:
        status = json.loads(request.tool_results[-1].content)["status"]
        return f"Order A-17 is {status}."
    return {"content": "Welcome to the shop!", "usage": {"input_tokens": 12, "output_tokens": 5}}


@pytest.fixture
def elizon_entry(elizon_mock_server):
    server = elizon_mock_server(on_request=answer)
    yield {"url": f"{server.url}/chat/completions", "output": "openai", "model": "shop-model",
           "system": "You are the ACME shop assistant.", "tools": "tools.yaml",
           "headers": {"Authorization": "Bearer ${SHOP_API_KEY}"}}
    with open("requests.jsonl", "a", encoding="utf-8") as log:
        for recorded in server.requests:
            log.write(json.dumps({"headers": dict(recorded.headers), "body": recorded.body,
                                  "path": recorded.path}) + "\\n")
"""


def test_an_output_openai_package_runs_offline_against_the_mock_server(
        packages: Packages, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOP_API_KEY", "sk-live-do-not-log")
    packages.write("shop/elizon.yaml", "name: shop\nevaluation: {suite: ./eval/suite.yaml}\n")
    packages.write("shop/tools.yaml", SHOP_TOOLS)
    packages.write("shop/eval/suite.yaml", SHOP_SUITE)
    packages.write("shop/conftest.py", SHOP_CONFTEST)
    result = pytester.runpytest("--elizon-results=results.json")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["case 'expects-what-the-model-never-says' failed *",
                                 "      found:    missing: 'Goodbye'",
                                 "usage: 17 tokens (12 in, 5 out), cost unknown, model shop-model",
                                 "  | Welcome to the shop!"])
    logged = [json.loads(line) for line in
              (pytester.path / "requests.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["path"] for r in logged] == ["/v1/chat/completions"] * 4
    assert {r["headers"]["authorization"] for r in logged} == {"Bearer ***"}
    first = logged[0]["body"]
    assert first["model"] == "shop-model"
    assert first["tools"][0]["function"]["name"] == "lookup_order"
    # the conversation's second turn sent the tool's result back under the mock's call id
    tool_turn = logged[2]["body"]["messages"]
    assert tool_turn[3] == {"role": "tool", "tool_call_id": "call_1",
                            "content": '{"status": "shipped"}'}
    cases = {c["id"]: c for c in json.loads((pytester.path / "results.json").read_text())
             ["suites"][0]["cases"]}
    assert cases["greets"]["usage"]["input_tokens"] == 12
    assert "sk-live-do-not-log" not in (pytester.path / "results.json").read_text()


def test_the_offline_chat_example_passes_and_catches_a_desk_that_loses_call_ids(
        pytester: pytest.Pytester) -> None:
    example = pytester.path / "offline-chat"
    shutil.copytree(EXAMPLES / "offline-chat", example,
                    ignore=shutil.ignore_patterns("__pycache__"))
    result = pytester.runpytest("offline-chat")
    assert result.parseoutcomes() == {"passed": 5}
    desk = example / "order_desk" / "assistant.py"
    source = desk.read_text(encoding="utf-8")
    assert source.count('"tool_call_id": call["id"]') == 1
    desk.write_text(source.replace('"tool_call_id": call["id"]', '"tool_call_id": "lost"'),
                    encoding="utf-8")
    broken = pytester.runpytest("offline-chat")
    # every case whose model called a tool; the mock refused the result as OpenAI would
    assert broken.parseoutcomes() == {"passed": 2, "failed": 3}
    broken.stdout.fnmatch_lines(["*ModelServiceError: the model service answered 400: *the "
                                 "tool result for \\\"lost\\\" answers no tool call*"])


# -- start-up ------------------------------------------------------------------------------

LAZY = ("pytest_elizon_eval.mock.fixtures", "pytest_elizon_eval.mock.model",
        "pytest_elizon_eval.mock.server", "http.server")


def test_the_plugin_imports_the_mock_only_for_a_test_that_uses_it(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    done, imported = imported_by_a_session(pytester.path, "test_plain.py", among=LAZY)
    assert done.returncode == 0, done.stdout
    assert imported == ["pytest_elizon_eval.mock.fixtures"]  # registered, nothing more
    pytester.makepyfile(test_mocked="def test_mocked(elizon_mock_server):\n"
                                    "    assert elizon_mock_server(['hi']).url\n")
    done, imported = imported_by_a_session(pytester.path, "test_mocked.py", among=LAZY)
    assert done.returncode == 0, done.stdout
    assert imported == list(LAZY)


def test_the_mock_package_names_only_what_it_exports() -> None:
    import pytest_elizon_eval.mock as mock  # deferred: the package itself is under test

    assert sorted(mock.__all__) == sorted(n for n in mock._HOME)
    assert all(getattr(mock, name) is not None for name in mock.__all__)
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        _ = mock.Nope
