"""``output: openai`` driving a plain model server: system prompt, tools, body fields and
templates, and a tool-calling conversation whose ids and results round-trip
(docs/format.md#entry-url, docs/contract.md#conversations).

The request builder is tested directly; the round trip against a loopback
OpenAI-compatible server (tests/chat_server.py) that records every request.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_elizon_eval.bind.entries import HttpEntry
from pytest_elizon_eval.load.runtime import Case, UrlEntry
from pytest_elizon_eval.run.chat_body import build, check_body, load_tools

from .chat_server import ChatServer
from .conftest import Packages

USER = [{"role": "user", "content": "hi"}]


def test_a_request_is_built_from_the_entry_keys() -> None:
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]
    request = build(USER, "hi", model="m", system="Be brief.", tools=tools,
                    body={"temperature": 0, "metadata": {"asked": "Q: {{input}}"}})
    assert request == {"temperature": 0, "metadata": {"asked": "Q: hi"}, "model": "m",
                       "tools": tools,
                       "messages": [{"role": "system", "content": "Be brief."}, *USER]}
    placed = build(USER, {"q": 1}, body={"request": {"messages": "{{messages}}"},
                                         "raw": "{{input}}"})
    assert placed == {"request": {"messages": USER}, "raw": {"q": 1}}  # nothing added


@pytest.mark.parametrize(("body", "message"), [
    ({"x": "{{question}}"}, "body.x: unknown placeholder '{{question}}'; use '{{messages}}'"),
    ({"x": ["a", "say {{messages}}"]}, "body.x[1]: '{{messages}}' is a list and must be the "
                                       "whole value"),
    ({"messages": [{"role": "user"}]}, "body.messages is where the conversation goes"),
    ({"x": "{{messages}}", "y": "{{messages}}"}, "places '{{messages}}' more than once"),
    ({"x": "{{input"}, "body.x: unclosed placeholder"),
])
def test_a_bad_template_says_where(body: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")
                       .replace("(", r"\(").replace(")", r"\)").replace("{", r"\{")
                       .replace("}", r"\}").replace(".", r"\.")):
        check_body(body)


def test_bad_tools_and_keys_given_twice_are_refused(tmp_path: Any) -> None:
    with pytest.raises(ValueError, match=r"tools\[0\] \(type function\) has no function\.name"):
        UrlEntry.model_validate({"url": "http://x", "tools": [{"type": "function"}]})
    with pytest.raises(ValueError, match="model is given twice"):
        UrlEntry.model_validate({"url": "http://x", "model": "a", "body": {"model": "b"}})
    (tmp_path / "tools.json").write_text('{"tools": [{"type": "function", '
                                         '"function": {"name": "f"}}]}')
    assert load_tools(tmp_path / "tools.json")[0]["function"]["name"] == "f"
    (tmp_path / "bad.yaml").write_text("- [unclosed\n")
    with pytest.raises(ValueError, match=r"bad\.yaml is not valid YAML"):
        load_tools(tmp_path / "bad.yaml")
    with pytest.raises(ValueError, match="cannot read the tools file"):
        load_tools(tmp_path / "missing.json")


TOOLS_YAML = """
- type: function
  function:
    name: get_weather
    description: The weather in a city now.
    parameters: {type: object, properties: {city: {type: string}}, required: [city]}
"""

WEATHER_SUITE = """
cases:
  - id: weather
    turns:
      - input: weather in Paris?
        expect:
          toolCalls: {calledWith: [{name: get_weather, arguments: {city: Paris}}]}
      - input: So?
        toolResults: {get_weather: {temp_c: 21}}
        expect: {contains: [21 C, call_srv_1]}
      - input: Thanks!
        expect: {contains: [welcome]}
  - id: misspelt
    turns:
      - input: weather in Paris?
      - input: So?
        toolResults: {get_wether: {temp_c: 21}}
"""


def test_a_model_server_gets_tools_system_and_body_and_tool_ids_round_trip(
        packages: Packages, pytester: pytest.Pytester) -> None:
    with ChatServer().running() as server:
        packages.write("pkg/elizon.yaml", f"""
            name: pkg
            entry:
              url: {server.url}/chat/completions
              output: openai
              model: weather-agent
              system: You answer weather questions.
              tools: tools.yaml
              body: {{temperature: 0, max_tokens: 50}}
            evaluation: {{suite: ./eval/suite.yaml}}
            """)
        packages.write("pkg/tools.yaml", TOOLS_YAML)
        packages.write("pkg/eval/suite.yaml", WEATHER_SUITE)
        result = pytester.runpytest("--elizon-results=results.json")
        requests = server.requests
    result.assert_outcomes(passed=1, failed=1)
    # a key that names no call of the previous answer fails the turn, saying what was called
    result.stdout.fnmatch_lines(["*✗ toolResults: * no call 'get_wether'; the previous answer "
                                 "called get_weather (id call_srv_1)"])
    assert len(requests) == 4  # the misspelt turn is not sent
    first, second, third = requests[:3]
    assert first["model"] == "weather-agent"
    assert (first["temperature"], first["max_tokens"]) == (0, 50)
    assert first["tools"][0]["function"]["name"] == "get_weather"
    assert first["messages"] == [{"role": "system", "content": "You answer weather questions."},
                                 {"role": "user", "content": "weather in Paris?"}]
    # turn 2: the server's own call id, and the result as the turn gave it
    assert second["messages"][2] == {
        "role": "assistant", "content": "",
        "tool_calls": [{"id": "call_srv_1", "type": "function", "function": {
            "name": "get_weather", "arguments": '{"city": "Paris"}'}}]}
    assert second["messages"][3] == {"role": "tool", "tool_call_id": "call_srv_1",
                                     "content": '{"temp_c": 21}'}
    assert third["messages"][:4] == second["messages"][:4]
    assert [m["role"] for m in third["messages"]] == [
        "system", "user", "assistant", "tool", "user", "assistant", "user"]
    case = json.loads((pytester.path / "results.json").read_text())["suites"][0]["cases"][0]
    assert case["tool_calls"][0]["id"] == "call_srv_1"


def test_a_bad_template_is_a_manifest_error_at_its_line(packages: Packages,
                                                       pytester: pytest.Pytester) -> None:
    packages.package(entry="{url: 'http://127.0.0.1:9/v1', output: openai, "
                           "body: {x: '{{question}}'}}", suite="cases:\n  - id: a\n    input: hi\n")
    result = pytester.runpytest()
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*elizon.yaml:2*unknown placeholder '{{question}}'*"])


def test_request_keys_need_output_openai_and_a_readable_tools_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="system shape a chat-completions request and need "
                                         "output: openai"):
        HttpEntry(UrlEntry.model_validate({"url": "http://x", "system": "hi"}), "json")
    spec = UrlEntry.model_validate({"url": "http://x", "output": "openai", "tools": "t.json"})
    with pytest.raises(ValueError, match=r"cannot read the tools file .*t\.json"):
        HttpEntry(spec, None, tmp_path)
    (tmp_path / "t.json").write_text('[{"type": "function", "function": {"name": "f"}}]')
    assert HttpEntry(spec, None, tmp_path).tools == [
        {"type": "function", "function": {"name": "f"}}]


def test_tool_results_on_the_first_turn_are_refused() -> None:
    with pytest.raises(ValueError, match="the first turn has toolResults, but no earlier "
                                         "answer"):
        Case.model_validate({"id": "a", "turns": [{"input": "hi", "toolResults": {"f": 1}}]})
    with pytest.raises(ValueError, match="toolResults is null; give a mapping of tool name or "
                                         "call id to its result"):
        Case.model_validate({"id": "a", "turns": [{"input": "hi"},
                                                  {"input": "so?", "toolResults": None}]})
