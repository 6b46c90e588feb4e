"""Agents: answers with tool calls and usage, tool-call assertions, conversations, cost.

Pure pieces (reading an answer, the conversation messages, pricing, the tool-call rules)
are tested directly; behaviour through pytester, for each entry kind: a Python callable,
a command with ``output: answer`` and an OpenAI-compatible server with ``output: openai``
started on loopback by the test.
"""

from __future__ import annotations

import http.server
import json
import re
import sys
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_elizon_eval import Answer, ToolCall, Usage
from pytest_elizon_eval.decide.wording import usage_text
from pytest_elizon_eval.load.runtime import Expect
from pytest_elizon_eval.run.answers import conversation, from_reply, from_return, priced
from pytest_elizon_eval.run.assertions import check
from pytest_elizon_eval.run.calls import EntryCall, OutputError

from . import github_runner
from .conftest import Packages, validate_results
from .test_bad_files import assert_consecutive, error_lines

# -- pure pieces -----------------------------------------------------------------------------

ENVELOPE = {"text": "Found 2 overdue invoices.",
            "tool_calls": [{"name": "search_invoices", "arguments": {"status": "overdue"},
                            "result": [{"id": "INV-1"}]},
                           {"name": "summarize", "arguments": {}, "error": "timeout"}],
            "usage": {"input_tokens": 120, "output_tokens": 30, "model": "m"}}
CHAT_COMPLETION = {
    "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini",
    "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": "Let me look that up.",
        "tool_calls": [{"id": "call_1", "type": "function", "function": {
            "name": "search_invoices", "arguments": "{\"status\": \"overdue\"}"}}]}}],
    "usage": {"prompt_tokens": 82, "completion_tokens": 17, "total_tokens": 99},
}


def test_an_answer_is_read_from_every_form() -> None:
    call = from_return(Answer(text="hi", tool_calls=[ToolCall("t", {"a": 1})],
                              usage=Usage(10, 5, 0.002)))
    assert (call.text, call.value, call.tool_calls[0].name, call.usage) == \
        ("hi", "hi", "t", Usage(10, 5, 0.002))
    structured = from_return(Answer(value={"route": "x"}))
    assert (structured.value, structured.text) == ({"route": "x"}, '{"route": "x"}')
    enveloped = from_reply(json.dumps(ENVELOPE), "answer")
    assert [c.name for c in enveloped.tool_calls] == ["search_invoices", "summarize"]
    assert enveloped.tool_calls[1].error == "timeout"
    assert enveloped.usage == Usage(120, 30, None, "m")
    chat = from_reply(json.dumps(CHAT_COMPLETION), "openai")
    assert chat.text == "Let me look that up."
    assert chat.tool_calls == (ToolCall("search_invoices", {"status": "overdue"}, id="call_1"),)
    assert chat.usage == Usage(82, 17, None, "gpt-4o-mini")


@pytest.mark.parametrize(("text", "mode", "message"), [
    ("not json", "answer", "the answer envelope is not JSON"),
    ("[1]", "answer", "the answer envelope is a list"),
    ('{"text": "x", "extra": 1}', "answer", "unknown keys ['extra']"),
    ('{"tool_calls": []}', "answer", "an Answer needs a text or a value"),
    ('{"text": "x", "tool_calls": [{"arguments": {}}]}', "answer", "tool call 0 has no 'name'"),
    ('{"text": "x", "usage": {"input_tokens": -3}}', "answer", "expected a whole number"),
    ('{"choices": []}', "openai", "not a chat completion"),
    ('{"choices": [{"message": {"content": 3}}]}', "openai", "is a int, not text"),
])
def test_a_bad_answer_says_what_is_wrong(text: str, mode: str, message: str) -> None:
    with pytest.raises(OutputError, match=message.replace("[", r"\[").replace("]", r"\]")
                       .replace("(", r"\(").replace(")", r"\)")):
        from_reply(text, mode)


def test_returning_something_else_in_an_answer_is_an_output_error() -> None:
    with pytest.raises(ValueError, match="needs a text or a value"):
        Answer()
    with pytest.raises(OutputError, match="not JSON-serializable"):
        from_return(Answer(text="x", tool_calls=[ToolCall("t", {"f": object()})]))
    with pytest.raises(OutputError, match="not a ToolCall"):
        from_return(Answer(text="x", tool_calls=["search"]))  # type: ignore[list-item]


def test_the_conversation_an_entry_point_sees() -> None:
    first = EntryCall(text="Added.", tool_calls=(ToolCall("add_to_cart", {"sku": "S"},
                                                          result={"ok": True}),))
    messages = conversation([("Add S", first)], {"question": "pay?"})
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "user"]
    assert messages[1]["tool_calls"][0]["function"] == {"name": "add_to_cart",
                                                        "arguments": '{"sku": "S"}'}
    assert messages[2] == {"role": "tool", "tool_call_id": "call_0_0", "content": '{"ok": true}'}
    assert messages[3] == {"role": "user", "content": '{"question": "pay?"}'}


def test_prices_cost_usage_only_when_the_model_has_one() -> None:
    prices = {"m": (1.0, 2.0)}
    assert priced(Usage(1_000_000, 500_000, model="m"), prices) == \
        Usage(1_000_000, 500_000, 2.0, "m")
    assert priced(Usage(10, 10, model="other"), prices) == Usage(10, 10, None, "other")
    assert priced(Usage(10, 10), prices) == Usage(10, 10)  # no model: never a guess
    assert priced(Usage(10, 10, 0.5, "m"), prices) == Usage(10, 10, 0.5, "m")  # reported wins


CALLS = (ToolCall("search", {"status": "overdue", "page": 1}),
         ToolCall("summarize", {}, error="boom"))


@pytest.mark.parametrize(("rules", "passed", "found"), [
    ({"called": ["search"]}, True, "2 calls"),
    ({"called": ["search", "refund"]}, False, "never called: 'refund'; calls: search("),
    ({"notCalled": ["delete"]}, True, "2 calls"),
    ({"notCalled": ["summarize"]}, False, "called: 'summarize'"),
    ({"calledWith": [{"name": "search", "arguments": {"status": "overdue"}}]}, True, "2 calls"),
    ({"calledWith": [{"name": "search", "arguments": {"status": "paid"}}]}, False,
     'no call of search matches ($.status: expected "paid", found "overdue")'),
    ({"calledWith": [{"name": "refund"}]}, False, "refund was never called"),
    ({"order": ["search", "summarize"]}, True, "2 calls"),
    ({"order": ["summarize", "search"]}, False, "'search' was not called after ['summarize']"),
    ({"allSucceeded": True}, False, "calls with an error: 'summarize'"),
    ({"maxCalls": 2}, True, "2 calls"),
    ({"maxCalls": 1}, False, "2 calls"),
])
def test_each_tool_call_rule(rules: dict[str, Any], passed: bool, found: str) -> None:
    results = check(Expect.model_validate({"toolCalls": rules}), EntryCall(text="x",
                                                                          tool_calls=CALLS))
    assert len(results) == 1
    assert results[0].passed is passed
    assert found in results[0].found
    if not passed:
        assert "summarize({}) error: boom" in results[0].found  # what happened, every time


def test_tokens_and_cost_limits_fail_when_usage_is_unknown() -> None:
    expect = Expect.model_validate({"maxTokens": 100, "maxCostUsd": 0.01})
    unknown = check(expect, EntryCall(text="x"))
    assert [(a.passed, a.found) for a in unknown] == [
        (False, "usage unknown: the entry point reported no token counts (return an Answer "
                "with usage)"),
        (False, "cost unknown: the entry point reported no usage")]
    no_price = check(expect, EntryCall(text="x", usage=Usage(60, 60, model="m")))
    assert [(a.passed, a.found) for a in no_price] == [
        (False, "120 tokens (60 in, 60 out)"),
        (False, "cost unknown: no cost reported and no price for model 'm'")]
    within = check(expect, EntryCall(text="x", usage=Usage(50, 10, 0.004)))
    assert [a.passed for a in within] == [True, True]
    # a cost under a millionth of a dollar in significant digits, never "$0.000000"
    tiny = check(Expect.model_validate({"maxCostUsd": 1e-7}),
                 EntryCall(text="x", usage=Usage(5, 1, 4.89e-07, "m")))
    assert [(a.passed, a.found) for a in tiny] == [(False, "$0.000000489")]
    assert usage_text(Usage(5, 1, 4.89e-07, "m")) == \
        "6 tokens (5 in, 1 out), $0.000000489, model m"


# -- behaviour, each entry kind --------------------------------------------------------------

SUITE = """
cases:
  - id: searches
    input: Which invoices are overdue?
    expect:
      contains: [overdue]
      toolCalls:
        called: [search_invoices]
        calledWith: [{name: search_invoices, arguments: {status: overdue}}]
        notCalled: [delete_matter]
      maxTokens: 500
      maxCostUsd: 0.01
  - id: talks
    turns:
      - input: Add SKU-1
        expect: {toolCalls: {called: [add_to_cart]}}
      - input: Check out
        expect: {contains: [paid], toolCalls: {called: [process_payment]}}
    expect: {toolCalls: {order: [add_to_cart, process_payment]}, maxCostUsd: 0.01}
"""

AGENT_APP = """
import json, os
from pytest_elizon_eval import Answer, ToolCall, Usage

LOG = os.environ.get("AGENT_LOG")

def decide(text, messages):
    if LOG:
        with open(LOG, "a") as f:
            f.write(json.dumps({"text": text, "messages": messages}) + "\\n")
    said = text.lower()
    if "overdue" in said:
        return "2 overdue invoices", [ToolCall("search_invoices", {"status": "overdue"})]
    if "add" in said:
        return "added", [ToolCall("add_to_cart", {"sku": text.split()[-1]})]
    if "check out" in said:
        carted = any(c["function"]["name"] == "add_to_cart"
                     for m in messages or [] for c in m.get("tool_calls", []))
        return ("paid", [ToolCall("process_payment", {})]) if carted else ("empty cart", [])
    return "hello", []

def agent(text, messages=None):
    answer, calls = decide(text, messages)
    return Answer(text=answer, tool_calls=calls, usage=Usage(100, 20, model="tiny"))
"""

COMMAND = """
import json, sys
sys.path.insert(0, __file__.rsplit("/", 1)[0])
from app import decide
request = sys.stdin.read()
try:
    data = json.loads(request)
    text, messages = data["input"], data["messages"]
except ValueError:
    text, messages = request, None
answer, calls = decide(text, messages)
print(json.dumps({"text": answer, "tool_calls": [{"name": c.name, "arguments": c.arguments}
                                                 for c in calls],
                  "usage": {"input_tokens": 90, "output_tokens": 10, "cost_usd": 0.0005}}))
"""


def agent_package(packages: Packages, entry: str, suite: str = SUITE) -> None:
    packages.write("pkg/elizon.yaml", f"name: pkg\nentry: {entry}\nprices:\n"
                   "  tiny: {input: 10, output: 50}\nevaluation:\n  suite: ./eval/suite.yaml\n"
                   "  authorBaseline: {mean_cost_usd: 0.002, mean_tokens: 120}\n")
    packages.write("pkg/eval/suite.yaml", suite)
    packages.write("pkg/app.py", AGENT_APP)
    packages.write("pkg/command.py", COMMAND)


def results_of(pytester: pytest.Pytester) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((pytester.path / "results.json").read_text())
    return data


def test_a_python_agent_with_tool_calls_conversations_and_cost(
        packages: Packages, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    log = pytester.path / "agent.log"
    monkeypatch.setenv("AGENT_LOG", str(log))
    agent_package(packages, "app:agent")
    result = pytester.runpytest("--elizon-results=results.json", "--elizon-markdown=summary.md",
                                "--elizon-report=full")
    result.assert_outcomes(passed=2)
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert calls[0]["messages"] is None  # a single call: no conversation
    # the second turn sees the first, its tool call included, ending with its own message
    assert [m["role"] for m in calls[2]["messages"]] == ["user", "assistant", "tool", "user"]
    assert calls[2]["messages"][1]["tool_calls"][0]["function"]["name"] == "add_to_cart"
    suite = results_of(pytester)["suites"][0]
    cases = {c["id"]: c for c in suite["cases"]}
    # priced from the manifest: 100 in at $10/1M + 20 out at $50/1M = $0.002 per answer
    assert cases["searches"]["usage"] == {"input_tokens": 100, "output_tokens": 20,
                                          "cost_usd": pytest.approx(0.002), "model": "tiny"}
    assert cases["talks"]["usage"]["cost_usd"] == pytest.approx(0.004)
    assert [t["tool_calls"][0]["name"] for t in cases["talks"]["turns"]] == \
        ["add_to_cart", "process_payment"]
    assert suite["metrics"]["total_cost_usd"] == pytest.approx(0.006)
    assert suite["metrics"]["mean_tokens"] == pytest.approx(180)
    comparison = {c["metric"]: c for c in suite["comparison"]}
    assert comparison["mean_cost_usd"]["baseline"] == 0.002
    assert comparison["mean_cost_usd"]["comparison"] == "above"
    result.stdout.fnmatch_lines(["*mean_cost_usd*$0.00200*$0.00300*above*"])
    assert "| mean_cost_usd | $0.00200 | $0.00300 |" in \
        (pytester.path / "summary.md").read_text()


def test_a_command_agent_reads_the_answer_envelope(packages: Packages,
                                                   pytester: pytest.Pytester) -> None:
    # the interpreter running the tests: it imports the plugin, as the app does, whatever
    # "python" on PATH is
    agent_package(packages, f"{{command: [{sys.executable}, command.py], output: answer}}")
    result = pytester.runpytest("--elizon-results=results.json")
    result.assert_outcomes(passed=2)
    cases = {c["id"]: c for c in results_of(pytester)["suites"][0]["cases"]}
    assert cases["searches"]["usage"]["cost_usd"] == 0.0005  # reported: never re-priced
    assert cases["talks"]["turns"][1]["tool_calls"][0]["name"] == "process_payment"


class JsonHandler(http.server.BaseHTTPRequestHandler):
    """A loopback handler that answers with JSON, quietly."""

    def reply(self, data: dict[str, Any]) -> None:
        body = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class ChatAgent(JsonHandler):
    """An OpenAI-compatible chat-completions server whose 'model' calls tools by keyword."""

    bodies: list[dict[str, Any]]

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.bodies.append(body)
        said = body["messages"][-1]["content"].lower()
        calls = []
        if "overdue" in said:
            calls.append(("search_invoices", {"status": "overdue"}))
            content = "2 overdue invoices"
        elif "add" in said:
            calls.append(("add_to_cart", {"sku": "SKU-1"}))
            content = "added"
        elif "check out" in said:
            carted = any(c["function"]["name"] == "add_to_cart"
                         for m in body["messages"] for c in m.get("tool_calls", []))
            calls += [("process_payment", {})] if carted else []
            content = "paid" if carted else "empty cart"
        else:
            content = "hello"
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = [
                {"id": f"c{i}", "type": "function",
                 "function": {"name": name, "arguments": json.dumps(arguments)}}
                for i, (name, arguments) in enumerate(calls)]
        self.reply({"id": "x", "object": "chat.completion", "model": "tiny",
                    "choices": [{"index": 0, "message": message}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 20}})


@pytest.fixture
def chat_agent() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    bodies: list[dict[str, Any]] = []
    handler = type("Handler", (ChatAgent,), {"bodies": bodies})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                              daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1/chat/completions", bodies
    finally:
        server.shutdown()
        server.server_close()


def test_an_openai_compatible_agent_needs_no_python(
        packages: Packages, pytester: pytest.Pytester,
        chat_agent: tuple[str, list[dict[str, Any]]]) -> None:
    url, bodies = chat_agent
    agent_package(packages, f"{{url: '{url}', output: openai, model: tiny}}")
    result = pytester.runpytest("--elizon-results=results.json")
    result.assert_outcomes(passed=2)
    # a chat-completions request body each time, the conversation so far in it
    assert bodies[0] == {"model": "tiny", "messages": [
        {"role": "user", "content": "Which invoices are overdue?"}]}
    assert [m["role"] for m in bodies[2]["messages"]] == ["user", "assistant", "tool", "user"]
    cases = {c["id"]: c for c in results_of(pytester)["suites"][0]["cases"]}
    assert cases["searches"]["usage"]["cost_usd"] == pytest.approx(0.002)  # priced: tiny


# -- conversations ---------------------------------------------------------------------------

def turns_suite(count: int, failing: int | None = None) -> str:
    turns = "".join(
        f"      - input: say {n}\n        expect: {{contains: "
        f"['{'never' if n == failing else f'said {n}'}']}}\n" for n in range(1, count + 1))
    return f"cases:\n  - id: chat\n    turns:\n{turns}"


ECHO_AGENT = """
import json, os, time
def agent(text, messages):
    with open(os.environ["AGENT_LOG"], "a") as f:
        f.write(json.dumps({"text": text, "seen": len(messages)}) + "\\n")
    if text == "say 3" and os.environ.get("AGENT_SLOW"):
        time.sleep(30)
    return "said " + text.split()[-1]
"""


@pytest.mark.parametrize("count", [1, 2, 5])
def test_a_conversation_passes_turn_by_turn(packages: Packages, pytester: pytest.Pytester,
                                            monkeypatch: pytest.MonkeyPatch, count: int) -> None:
    log = pytester.path / "agent.log"
    monkeypatch.setenv("AGENT_LOG", str(log))
    packages.package(suite=turns_suite(count), app=ECHO_AGENT, entry="app:agent")
    pytester.runpytest().assert_outcomes(passed=1)
    seen = [json.loads(line) for line in log.read_text().splitlines()]
    # turn n sees the n-1 earlier exchanges (2 messages each) and its own message
    assert [(s["text"], s["seen"]) for s in seen] == [(f"say {n}", 2 * n - 1)
                                                      for n in range(1, count + 1)]


def test_a_failing_middle_turn_ends_the_conversation(
        packages: Packages, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    log = pytester.path / "agent.log"
    monkeypatch.setenv("AGENT_LOG", str(log))
    packages.package(suite=turns_suite(5, failing=3), app=ECHO_AGENT, entry="app:agent")
    result = pytester.runpytest("--elizon-results=results.json", "--elizon-junit=junit.xml",
                                "--elizon-markdown=summary.md")
    result.assert_outcomes(failed=1)
    assert len(log.read_text().splitlines()) == 3  # turns 4 and 5 were never said
    markdown = (pytester.path / "summary.md").read_text()
    assert "| `chat` | failed | turn 3 of 5: ✗ contains: missing: 'never' |" in markdown
    assert "<summary>chat: 3 turns</summary>" in markdown
    assert "  turn 3 ✗ failed: say 3\n      answer: said 3" in markdown
    result.stdout.fnmatch_lines([
        "case 'chat' failed at turn 3 of 5 (must-pass suite pkg/eval/suite.yaml:2)",
        "  turn 1 ✓ passed: say 1", "      answer: said 1", "*",
        "  turn 3 ✗ failed: say 3", "      answer: said 3",
        "      ✗ contains: every one of: 'never' — missing: 'never'",
        "*FAILED pkg/eval/suite.yaml::chat - turn 3 of 5: ✗ contains: missing: 'never'"])
    case = results_of(pytester)["suites"][0]["cases"][0]
    assert case["failed_turn"] == 3
    assert [t["outcome"] for t in case["turns"]] == ["passed", "passed", "failed"]
    failure = ET.parse(pytester.path / "junit.xml").getroot().find(".//failure")
    assert failure is not None
    assert failure.get("message", "").startswith("turn 3 of 5: ✗ contains")


def test_a_conversation_that_times_out_names_the_turn(
        packages: Packages, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_LOG", str(pytester.path / "agent.log"))
    monkeypatch.setenv("AGENT_SLOW", "1")
    packages.package(suite=turns_suite(5), app=ECHO_AGENT, entry="app:agent")
    # 0.5 s: turns 1 and 2 answer at once (in-process, no start-up inside the limit, a line
    # appended to a file each) even on a loaded machine; turn 3 sleeps 30 s
    result = pytester.runpytest("--elizon-timeout=0.5", "--elizon-results=results.json")
    assert result.parseoutcomes() == {"timeout": 1}
    result.stdout.fnmatch_lines(["*pkg/eval/suite.yaml::chat — turn 3 of 5: no answer within "
                                 "0.5 s (--elizon-timeout=0.5)"])
    case = results_of(pytester)["suites"][0]["cases"][0]
    assert (case["outcome"], case["failed_turn"]) == ("timeout", 3)
    said = [json.loads(line)["text"] for line in (pytester.path / "agent.log").read_text()
            .splitlines()]
    assert said == ["say 1", "say 2", "say 3"]  # turns 4 and 5 never said


def test_conversations_record_and_replay_every_turn(
        packages: Packages, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """(Conversations under xdist, recorded and replayed: test_xdist, with support-agent.)"""
    log = pytester.path / "agent.log"
    monkeypatch.setenv("AGENT_LOG", str(log))
    agent_package(packages, "app:agent")
    recorded = pytester.runpytest("--elizon-record=tape.json",
                                  "--elizon-results=recorded.json")
    recorded.assert_outcomes(passed=2)
    tape = json.loads((pytester.path / "tape.json").read_text())["cases"]
    talk = tape["pkg:eval/suite.yaml::talks"]["runs"][0]["turns"]
    assert [t["tool_calls"][0]["name"] for t in talk] == ["add_to_cart", "process_payment"]
    log.unlink()
    replayed = pytester.runpytest("--elizon-replay=tape.json", "--elizon-results=replayed.json")
    replayed.assert_outcomes(passed=2)
    assert not log.exists()  # nothing was called
    before = json.loads((pytester.path / "recorded.json").read_text())["suites"][0]
    after = json.loads((pytester.path / "replayed.json").read_text())["suites"][0]
    assert after["metrics"]["total_cost_usd"] == before["metrics"]["total_cost_usd"]
    assert [c["turns"] for c in after["cases"]] == [c["turns"] for c in before["cases"]]


def test_cost_regressions_against_an_earlier_run(packages: Packages,
                                                 pytester: pytest.Pytester) -> None:
    agent_package(packages, "app:agent")
    pytester.runpytest("--elizon-results=before.json").assert_outcomes(passed=2)
    manifest = pytester.path / "pkg/elizon.yaml"
    manifest.write_text(manifest.read_text().replace("output: 50", "output: 500"))
    result = pytester.runpytest("--elizon-baseline=before.json", "--elizon-markdown=s.md",
                                "--elizon-results=results.json", "--elizon-report=full")
    result.stdout.fnmatch_lines(["*cost regressed: pkg/eval/suite.yaml mean_cost_usd "
                                 "$0.00300 -> $0.0165*"])
    assert "❌ cost regressed: `pkg/eval/suite.yaml` mean_cost_usd" in \
        (pytester.path / "s.md").read_text()
    changes = results_of(pytester)["regression"]["metrics"]
    assert {"suite": "pkg/eval/suite.yaml", "metric": "total_cost_usd",
            "before": pytest.approx(0.006), "after": pytest.approx(0.033),
            "regressed": True} in changes


# -- bad input -------------------------------------------------------------------------------

@pytest.mark.parametrize(("case", "message"), [
    ("  - id: both\n    input: x\n    turns: [{input: y}]\n",
     "pkg/eval/suite.yaml:2: cases[[]0[]]: a case has exactly one of 'input' (one call) or "
     "'turns' (a conversation)"),
    ("  - id: neither\n    expect: {contains: [x]}\n",
     "pkg/eval/suite.yaml:2: cases[[]0[]]: a case has exactly one of 'input'*"),
    ("  - id: empty\n    turns: []\n", "pkg/eval/suite.yaml:3: cases[[]0[]].turns: must not "
                                       "be empty"),
    ("  - id: rule\n    input: x\n    expect: {toolCalls: {caled: [x]}}\n",
     "pkg/eval/suite.yaml:4: cases[[]0[]].expect.toolCalls: unknown key 'caled' (did you mean "
     "'called'?)*"),
    ("  - id: limit\n    input: x\n    expect: {maxCostUsd: -1}\n",
     "pkg/eval/suite.yaml:4: cases[[]0[]].expect.maxCostUsd: must be at least 0*"),
])
def test_bad_agent_cases_are_suite_errors(tmp_path: Path, case: str, message: str) -> None:
    lines = error_lines(tmp_path, "cases:\n" + case)
    assert_consecutive(lines, [f"EVALUATION_SUITE_INVALID: {message}"])


def test_bad_prices_are_one_usage_error(packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite=SUITE, app=AGENT_APP, entry="app:agent")
    pytester.makeini("[pytest]\nelizon_prices =\n    tiny 1 2\n    broken one\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini option elizon_prices in *: 'broken one': expected "
                                 "'MODEL INPUT OUTPUT'*"])


HOSTILE_AGENT = """
from pytest_elizon_eval import Answer, ToolCall
def agent(text):
    nasty = "nul\\x00 ::error::pwned | pipe </details> `tick`\\n::warning::x"
    return Answer(text="done", tool_calls=[
        ToolCall(nasty, {"q": nasty, "big": "A" * 1_000_000}, result=nasty, error=nasty)])
"""


def test_hostile_tool_calls_break_no_report(packages: Packages, pytester: pytest.Pytester,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    packages.package(suite="cases:\n  - id: nasty\n    input: x\n"
                           "    expect: {toolCalls: {allSucceeded: true}}\n",
                     app=HOSTILE_AGENT, entry="app:agent")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    result = pytester.runpytest("--elizon-junit=junit.xml", "--elizon-results=results.json",
                                "--elizon-markdown=summary.md")
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    assert "\x00" not in output
    live = [c for c in github_runner.parse(output) if c.name != "stop-commands"]
    assert [c.name for c in live] == ["error"]  # our own annotation, nothing else
    assert "pwned" not in live[0].properties.get("title", "")
    ET.parse(pytester.path / "junit.xml")  # well-formed
    case = results_of(pytester)["suites"][0]["cases"][0]
    arguments = case["tool_calls"][0]
    assert (len(arguments["arguments"]), arguments["arguments_length"]) == (65536, 1_000_083)
    markdown = (pytester.path / "summary.md").read_text()
    table = [line for line in markdown.splitlines() if line.startswith("| `nasty`")]
    assert len(table) == 1
    assert len(re.split(r"(?<!\\)\|", table[0])) == 7  # 5 columns held: no raw pipe got in
    assert len(markdown.encode()) < 1024 * 1024
    shown = [line for line in output.splitlines() if "calls with an error" in line]
    assert shown
    assert all(len(line) < 3000 for line in shown)  # 1 MB of arguments, cut


def test_answers_are_exported(tmp_path: Path) -> None:
    import pytest_elizon_eval

    assert {"Answer", "ToolCall", "Usage"} <= set(pytest_elizon_eval.__all__)


class GradingJudge(JsonHandler):
    """A judge endpoint that grades 0.9 and reports its own token usage."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.reply({"choices": [{"message": {"content": '{"score": 0.9}'}}],
                    "usage": {"prompt_tokens": 300, "completion_tokens": 10}})


def test_the_judges_usage_is_counted_apart(packages: Packages, pytester: pytest.Pytester) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), GradingJudge)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02},
                     daemon=True).start()
    try:
        agent_package(packages, "app:agent", suite="cases:\n  - id: graded\n    input: hi\n"
                      "    expect: {judge: {rubric: polite, threshold: 0.5}}\n")
        url = f"http://127.0.0.1:{server.server_port}/v1"
        pytester.makeini(f"[pytest]\nelizon_judge = {{url: '{url}', model: tiny}}\n")
        pytester.runpytest("--elizon-results=results.json").assert_outcomes(passed=1)
    finally:
        server.shutdown()
        server.server_close()
    case = results_of(pytester)["suites"][0]["cases"][0]
    # the judge's 300 + 10 tokens, priced as 'tiny', apart from the entry's 100 + 20
    assert case["judge_usage"] == {"input_tokens": 300, "output_tokens": 10,
                                   "cost_usd": pytest.approx(0.0035), "model": "tiny"}
    assert case["usage"]["input_tokens"] == 100


# -- agent metrics count every call, not the ones a case's budget keeps ------------------------

MANY_CALLS = """
from pytest_elizon_eval import Answer, ToolCall

def agent(text):
    return Answer(text="done", tool_calls=[ToolCall("search", {"i": i}) for i in range(50)]
                  + [ToolCall("fetch", {"i": i}, error="down") for i in range(100)])
"""


def test_agent_metrics_count_every_call_past_the_kept_ones(
        packages: Packages, pytester: pytest.Pytester) -> None:
    from pytest_elizon_eval.decide.outcomes import TOOL_CALLS_KEPT
    from pytest_elizon_eval.reporting.aggregate import Aggregate

    packages.package(suite="cases:\n  - id: busy\n    input: x\n"
                           "    expect: {toolCalls: {order: [search]}}\n",
                     app=MANY_CALLS, entry="app:agent")
    pytester.runpytest("--elizon-results=results.json").assert_outcomes(passed=1)
    data = results_of(pytester)
    validate_results(data)
    suite, case = data["suites"][0], data["suites"][0]["cases"][0]
    assert (len(case["tool_calls"]), case["tool_calls_total"]) == (TOOL_CALLS_KEPT, 150)
    want = {"tool_calls": 150, "tool_success_rate": pytest.approx(1 / 3),
            "tool_calls_per_case": 150.0, "tool_calls_per_turn": 150.0,
            "turns_per_conversation": None, "first_tool_rate": 1.0,
            "tool_calls.fetch": 100, "tool_error_rate.fetch": 1.0,
            "tool_calls.search": 50, "tool_error_rate.search": 0.0}
    assert suite["measures"]["agents"] == want
    assert (suite["intervals"]["tool_success_rate"]["estimate"],
            suite["intervals"]["tool_success_rate"]["observations"]) == (pytest.approx(1 / 3), 150)
    assert case["tool_counts"] == [{"name": "search", "calls": 50, "errors": 0},
                                   {"name": "fetch", "calls": 100, "errors": 100}]
    # read back (a baseline, elizon-eval show) the counts are the case's own
    for kept in (case, {k: v for k, v in case.items() if k != "tool_counts"}):
        back = Aggregate()
        back.add({**kept, "case_id": kept["id"], "suite": {
            k: suite[k] for k in ("path", "package", "gate", "advisory")}})
        agents = back.suites()[0].measures().agents
        assert agents is not None
        # a file written before the counts were kept: its kept calls, as before
        assert agents["tool_calls"] == (150 if "tool_counts" in kept else 100)


def test_an_answer_of_many_tool_names_is_counted_in_a_bounded_record() -> None:
    from pytest_elizon_eval.decide import outcomes
    from pytest_elizon_eval.decide.outcomes import CaseIdentity
    from pytest_elizon_eval.measures.agents import agent_metrics
    from pytest_elizon_eval.run.running import Attempt, CaseRun

    from .test_reports_hostile import MUST, _plan

    calls = tuple(ToolCall(f"t{i:03d}", {}, error="down" if i % 2 else None)
                  for i in range(250))
    found = outcomes.decide(CaseIdentity("p::c", "c", 2, MUST), _plan(), CaseRun((Attempt(
        EntryCall(value="ok", text="ok", latency_ms=1.0, tool_calls=calls), ()),)))
    assert found.tool_counts is not None
    assert len(found.tool_counts) == outcomes.TOOL_CALLS_KEPT + 1  # the rest in one
    rest = found.tool_counts[-1]
    assert (rest.name, rest.calls, rest.errors) == (None, 150, 75)
    metrics = agent_metrics([found])
    assert metrics is not None
    assert (metrics["tool_calls"], metrics["tool_success_rate"]) == (250, 0.5)
    assert sum(1 for m in metrics if m.startswith("tool_calls.")) == outcomes.TOOL_CALLS_KEPT
    assert (metrics["tool_calls.t099"], metrics["tool_error_rate.t099"]) == (1, 1.0)
    assert "tool_calls.t100" not in metrics
