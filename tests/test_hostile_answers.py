"""Hostile answers from entry points fail their own case, clearly, and nothing else.

Non-finite or absurd numbers, lists nested far too deep, a ``tool_calls`` that is not a list,
a charset Python cannot decode with, a refusal with a huge body; the ini naming an SDK that
is not installed; ``--elizon-concurrency=auto`` in provenance; and a one-parameter entry
point given a mapping. Parsing is tested directly; the rest through pytester over real
packages, real commands and a loopback HTTP server started here.
"""

from __future__ import annotations

import http.server
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# pytester's in-process runs drop the modules first imported inside them: the key is made
# here, outside every inner run, so that the classes signing uses stay the same ones.
from cryptography.hazmat.primitives import serialization  # noqa: F401

from pytest_elizon_eval import Answer, ToolCall, Usage, cli
from pytest_elizon_eval.bind.entries import CallableEntry
from pytest_elizon_eval.run.answers import MAX_NESTING, from_reply, from_return
from pytest_elizon_eval.run.calls import OutputError
from pytest_elizon_eval.trust import provenance

from .conftest import Packages

DEEP = "[" * 100_000 + "]" * 100_000


def nested(levels: int) -> Any:
    """A list ``levels`` deep, built without recursion."""
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return value


def chat(message: dict[str, Any], **extra: Any) -> str:
    return json.dumps({"choices": [{"message": {"role": "assistant", **message}}], **extra})


def tool_call(arguments: str) -> dict[str, Any]:
    return {"content": "x", "tool_calls": [{"function": {"name": "search",
                                                          "arguments": arguments}}]}


# -- parsing: what a command printed or a service replied --------------------------------------

@pytest.mark.parametrize(("text", "mode", "message"), [
    ('{"text": "ok", "usage": {"cost_usd": NaN}}', "answer",
     "the answer envelope: NaN at $.usage.cost_usd; numbers must be finite"),
    ('{"text": "ok", "usage": {"cost_usd": 1e400}}', "answer",
     "the answer envelope: Infinity at $.usage.cost_usd; numbers must be finite"),
    ('{"text": "ok", "usage": {"input_tokens": 1' + "0" * 400 + "}}", "answer",
     "usage input_tokens is a 1,329-bit number; expected a whole number of tokens from 0 to "
     "9,223,372,036,854,775,807 (64 bits)"),
    ('{"text": "ok", "usage": {"output_tokens": 9223372036854775808}}', "answer",
     "usage output_tokens is 9223372036854775808; expected a whole number of tokens"),
    ('{"text": "ok", "usage": {"cost_usd": 1' + "0" * 400 + "}}", "answer",
     "usage cost_usd is a 1,329-bit number; expected a finite number of US dollars from 0 to "
     "1,000,000,000"),
    ('{"text": "ok", "usage": {"cost_usd": 2e9}}', "answer",
     "usage cost_usd is 2000000000.0; expected a finite number of US dollars"),
    ('{"text": "ok", "tool_calls": [{"name": "t", "arguments": {"x": [-Infinity]}}]}', "answer",
     "the answer envelope: -Infinity at $.tool_calls[0].arguments.x[0]"),
    ('{"text": "ok", "value": ' + DEEP + "}", "answer",
     f"the answer envelope: lists and objects nested more than {MAX_NESTING} levels deep; "
     "flatten it"),
    ('{"text": "ok", "value": ' + json.dumps(nested(MAX_NESTING)) + "}", "answer",
     f"the answer envelope: lists and objects nested more than {MAX_NESTING} levels deep "
     "(at $.value[0][0][0][0][0]…)"),
    (chat(tool_call('{"q": NaN}')), "openai",
     "tool_calls[0].function.arguments (search): NaN at $.q; numbers must be finite"),
    (chat(tool_call('{"q": [1, Infinity]}')), "openai",
     "tool_calls[0].function.arguments (search): Infinity at $.q[1]"),
    (chat(tool_call(DEEP)), "openai",
     "tool_calls[0].function.arguments (search): lists and objects nested more than"),
    (chat({"content": "x", "tool_calls": 5}), "openai",
     "choices[0].message.tool_calls is a int, not a list"),
    (chat({"content": "x"}, usage={"prompt_tokens": 1e400}), "openai",
     "the chat completion: Infinity at $.usage.prompt_tokens"),
    (DEEP, "openai", "the chat completion: lists and objects nested more than"),
    ('{"score": NaN}', "json", "the output: NaN at $.score"),
])
def test_a_hostile_reply_is_an_output_error_naming_the_field(text: str, mode: str,
                                                            message: str) -> None:
    with pytest.raises(OutputError) as raised:
        from_reply(text, mode)
    assert message in str(raised.value)


def test_the_bounds_themselves_are_accepted() -> None:
    most = from_reply(json.dumps({"text": "ok", "value": nested(MAX_NESTING - 1),
                                  "usage": {"input_tokens": 2 ** 63 - 1, "cost_usd": 1e9}}),
                      "answer")
    assert most.usage == Usage(2 ** 63 - 1, None, 1e9)
    arguments = from_reply(chat(tool_call(json.dumps(nested(MAX_NESTING)))), "openai")
    assert arguments.tool_calls[0].arguments == nested(MAX_NESTING)
    # arguments that are not JSON stay text, as before: the assertion shows what was sent
    assert from_reply(chat(tool_call("{oops")), "openai").tool_calls[0].arguments == "{oops"


@pytest.mark.parametrize(("returned", "message"), [
    (Answer(text="ok", usage=Usage(input_tokens=10 ** 400)),
     "usage input_tokens is a 1,329-bit number; expected a whole number of tokens"),
    (Answer(text="ok", usage=Usage(output_tokens=10 ** 5000)),  # too long for int → str
     "usage output_tokens is a 16,610-bit number"),
    (Answer(text="ok", usage=Usage(cost_usd=float("nan"))),
     "usage cost_usd is NaN; expected a finite number of US dollars"),
    (Answer(text="ok", usage=Usage(cost_usd=10 ** 400)),
     "usage cost_usd is a 1,329-bit number; expected a finite number of US dollars"),
    (Answer(text="ok", tool_calls=[ToolCall("search", {"q": {"page": float("inf")}})]),
     "tool call 0 (search) arguments: Infinity at $.q.page"),
    (Answer(text="ok", value={"score": float("nan")}),
     "the entry point's answer: NaN at $.score"),
    (float("-inf"), "the entry point's answer: -Infinity; numbers must be finite"),
    (nested(MAX_NESTING + 1), "the entry point's answer: lists and objects nested more than"),
    (nested(100_000), "the entry point's answer: lists and objects nested more than"),
])
def test_a_python_answer_with_hostile_numbers_is_an_output_error(returned: object,
                                                                 message: str) -> None:
    with pytest.raises(OutputError) as raised:
        from_return(returned)
    assert message in str(raised.value)


def test_a_tool_result_too_deep_to_show_is_kept_as_the_reason() -> None:
    call = from_return(Answer(text="ok", tool_calls=[ToolCall("t", result=nested(100_000))]))
    assert call.tool_calls[0].result == (
        f"the result: lists and objects nested more than {MAX_NESTING} levels deep; flatten it")


# -- through pytest: a command, a Python entry point, a service --------------------------------

COMMAND = """
import sys
said = sys.stdin.read()
replies = {
    "nan-cost": '{"text": "ok", "usage": {"cost_usd": NaN}}',
    "huge-tokens": '{"text": "ok", "usage": {"input_tokens": 1' + '0' * 400 + '}}',
    "nan-arguments": '{"text": "ok", "tool_calls": [{"name": "t", "arguments": {"x": NaN}}]}',
    "deep": '{"text": "ok", "value": ' + '[' * 100000 + ']' * 100000 + '}',
}
print(replies.get(said, '{"text": "ok", "usage": {"input_tokens": 5, "cost_usd": 0.001}}'))
"""

PYTHON_APP = """
from pytest_elizon_eval import Answer, ToolCall, Usage

def answer(text):
    if text == "huge-tokens":
        return Answer(text="ok", usage=Usage(input_tokens=10 ** 400))
    if text == "nan-cost":
        return Answer(text="ok", usage=Usage(cost_usd=float("nan")))
    if text == "nan-arguments":
        return Answer(text="ok", tool_calls=[ToolCall("t", {"x": float("nan")})])
    deep = []
    for _ in range(100000):
        deep = [deep]
    if text == "deep":
        return Answer(text="ok", value=deep)
    return Answer(text="ok", usage=Usage(input_tokens=5, cost_usd=0.001))
"""

HOSTILE_CASES = ["nan-cost", "huge-tokens", "nan-arguments", "deep"]


def hostile_suite(cases: list[str]) -> str:
    return "cases:\n" + "".join(f"  - id: {c}\n    input: {c}\n    expect: {{contains: [ok]}}\n"
                                for c in [*cases, "fine"])


def results_of(pytester: pytest.Pytester) -> dict[str, dict[str, Any]]:
    data = json.loads((pytester.path / "r.json").read_text("utf-8"))
    return {c["id"]: c for s in data["suites"] for c in s["cases"]}


@pytest.fixture(scope="module")
def sign_key(tmp_path_factory: pytest.TempPathFactory) -> Path:
    keys = tmp_path_factory.mktemp("keys")
    assert cli.main(["keygen", str(keys)]) == 0
    return keys / "elizon-eval.key"


@pytest.mark.parametrize("entry", [f"{{command: [{sys.executable}, command.py], output: answer}}",
                                   "app:answer"], ids=["command", "callable"])
def test_hostile_numbers_fail_their_case_and_the_run_is_signed(
        packages: Packages, pytester: pytest.Pytester, sign_key: Path, entry: str) -> None:
    """Before: NaN reached the results file and signing raised ValueError; a 401-digit token
    count made the session's mean_tokens raise OverflowError. Each is now its case's
    OutputError, and the metrics, reports and signature of the run are made."""
    packages.write("pkg/elizon.yaml", f"name: pkg\nentry: '{entry}'\nevaluation:\n"
                   "  suite: ./s.yaml\n  authorBaseline: {mean_tokens: 5, mean_cost_usd: 0.001}\n")
    packages.write("pkg/s.yaml", hostile_suite(HOSTILE_CASES))
    packages.write("pkg/command.py", COMMAND)
    packages.write("pkg/app.py", PYTHON_APP)
    result = pytester.runpytest("--elizon-results=r.json", "--elizon-markdown=m.md",
                                f"--elizon-sign-key={sign_key}")
    result.assert_outcomes(passed=1, failed=4)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    cases = results_of(pytester)
    errors = {c: cases[c]["error"] for c in HOSTILE_CASES}
    assert {e["type"] for e in errors.values()} == {"OutputError"}
    assert "cost_usd" in errors["nan-cost"]["message"]
    assert "NaN" in errors["nan-cost"]["message"]
    assert "input_tokens is a 1,329-bit number" in errors["huge-tokens"]["message"]
    assert "NaN at $." in errors["nan-arguments"]["message"]
    assert f"nested more than {MAX_NESTING} levels deep" in errors["deep"]["message"]
    assert cases["fine"]["usage"]["input_tokens"] == 5
    assert (pytester.path / "r.json.sig").is_file()
    assert "| mean_tokens |" in (pytester.path / "m.md").read_text("utf-8")


class Scenarios(http.server.BaseHTTPRequestHandler):
    """A loopback service whose answer is picked by what it is sent: the input (``{"input":
    …}``) or the last message of a chat-completions request."""

    protocol_version = "HTTP/1.1"
    seen: dict[str, int]
    lock: threading.Lock

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        said = body["input"] if "input" in body else body["messages"][-1]["content"]
        with self.lock:
            self.seen[said] = self.seen.get(said, 0) + 1
            count = self.seen[said]
        if said in ("huge-503-once", "huge-503") and (count == 1 or said == "huge-503"):
            self._huge(503)
        elif said == "huge-200":
            self._huge(200)
        elif said == "rot13":
            self._send(200, b"fine", "text/plain; charset=rot13")
        elif said == "idna":
            self._send(200, b"fine", "text/plain; charset=idna")
        elif said == "tool-calls-5":
            self._send(200, chat({"content": "x", "tool_calls": 5}).encode())
        elif said == "deep-arguments":
            self._send(200, chat(tool_call(DEEP)).encode())
        elif said == "nan-arguments":
            self._send(200, chat(tool_call('{"q": NaN}')).encode())
        elif said == "deep-json":
            self._send(200, DEEP.encode())
        elif "messages" in body:
            self._send(200, chat({"content": "fine"}).encode())
        else:
            self._send(200, b"fine", "text/plain")

    def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("retry-after-ms", "10")
        self.end_headers()
        self.wfile.write(body)

    def _huge(self, status: int) -> None:
        """50 MB, written until the client stops reading."""
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(50 * 1024 * 1024))
        self.send_header("retry-after-ms", "10")
        self.end_headers()
        chunk = b"overloaded " * 95_000
        try:
            for _ in range(50):
                self.wfile.write(chunk[:1024 * 1024])
        except OSError:  # the client closed the connection: it read enough
            self.close_connection = True

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def service() -> Iterator[tuple[str, dict[str, int]]]:
    seen: dict[str, int] = {}
    handler = type("Handler", (Scenarios,), {"seen": seen, "lock": threading.Lock()})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_port}/", seen
    httpd.shutdown()
    httpd.server_close()


def service_package(packages: Packages, entry: str, cases: list[str],
                    expect: str = "{contains: [fine]}") -> None:
    packages.write("pkg/elizon.yaml", f"name: pkg\nentry: {entry}\nevaluation:\n"
                   "  suite: ./s.yaml\n")
    packages.write("pkg/s.yaml", "cases:\n" + "".join(
        f"  - id: {c}\n    input: {c}\n    expect: {expect}\n" for c in cases))


def test_an_openai_reply_with_bad_tool_calls_fails_its_case_only(
        packages: Packages, pytester: pytest.Pytester,
        service: tuple[str, dict[str, int]]) -> None:
    url, _ = service
    service_package(packages, f"{{url: '{url}', output: openai}}",
                    ["tool-calls-5", "deep-arguments", "nan-arguments", "fine"])
    result = pytester.runpytest("--elizon-results=r.json")
    result.assert_outcomes(passed=1, failed=3)
    cases = results_of(pytester)
    assert cases["tool-calls-5"]["error"] == {
        "type": "OutputError", "traceback": "",
        "message": "choices[0].message.tool_calls is a int, not a list"}
    assert cases["deep-arguments"]["error"]["message"] == (
        f"tool_calls[0].function.arguments (search): lists and objects nested more than "
        f"{MAX_NESTING} levels deep; flatten it")
    assert cases["nan-arguments"]["error"]["message"].startswith(
        "tool_calls[0].function.arguments (search): NaN at $.q; numbers must be finite")
    assert cases["fine"]["outcome"] == "passed"


def test_a_json_reply_nested_too_deep_fails_its_case_only(
        packages: Packages, pytester: pytest.Pytester,
        service: tuple[str, dict[str, int]]) -> None:
    url, _ = service
    service_package(packages, f"{{url: '{url}'}}", ["deep-json", "fine"])
    pytester.runpytest("--elizon-results=r.json").assert_outcomes(passed=1, failed=1)
    error = results_of(pytester)["deep-json"]["error"]
    assert (error["type"], error["message"]) == (
        "OutputError", f"the JSON reply from {url}: lists and objects nested more than "
                       f"{MAX_NESTING} levels deep; flatten it")


def test_a_charset_python_cannot_decode_with_is_read_as_utf8(
        packages: Packages, pytester: pytest.Pytester,
        service: tuple[str, dict[str, int]]) -> None:
    url, _ = service
    service_package(packages, f"{{url: '{url}'}}", ["rot13", "idna", "fine"],
                    expect="{equals: fine}")
    result = pytester.runpytest("--elizon-results=r.json")
    result.assert_outcomes(passed=3)
    assert "Traceback" not in result.stdout.str()


def test_a_huge_503_is_retried_like_any_503(packages: Packages, pytester: pytest.Pytester,
                                            service: tuple[str, dict[str, int]]) -> None:
    url, seen = service
    service_package(packages, f"{{url: '{url}'}}", ["huge-503-once", "huge-503", "huge-200"])
    pytester.runpytest("--elizon-results=r.json", "--elizon-retries=2").assert_outcomes(
        passed=1, failed=2)
    cases = results_of(pytester)
    assert (cases["huge-503-once"]["outcome"], cases["huge-503-once"]["attempts"]) == \
        ("passed", 2)
    standing = cases["huge-503"]
    assert standing["attempts"] == seen["huge-503"] == 3
    assert standing["error"]["message"].startswith(f"HTTP 503 from {url}: 'overloaded ")
    assert standing["error"]["message"].endswith("(after 3 attempts; retries used up)")
    assert "larger than" not in standing["error"]["message"]
    # a 2xx answer over the cap is still refused outright, and not retried
    assert cases["huge-200"]["error"]["message"] == (
        f"the response body from {url} is larger than 8,388,608 bytes")
    assert seen["huge-200"] == 1


# -- ini elizon_retry_on ------------------------------------------------------------------------

SDK = """
class RateLimitError(Exception):
    retry_after = 0.01
"""

SDK_APP = """
import pathlib
import sdk_for_tests

CALLS = pathlib.Path(__file__).with_name("calls.txt")

def answer(text):
    with CALLS.open("a") as fh:
        fh.write("x")
    if len(CALLS.read_text()) < 2:
        raise sdk_for_tests.RateLimitError("429")
    return "fine"
"""

WARNING = ("ini option elizon_retry_on in *: skipped not_installed_sdk_x.RateLimitError, "
           "not_installed_sdk_y.errors.Busy: not installed here (not_installed_sdk_x, "
           "not_installed_sdk_y), so nothing can raise them")


def retry_on_package(packages: Packages, pytester: pytest.Pytester, names: str) -> None:
    packages.write("sdk_for_tests.py", SDK)
    packages.package(suite="cases:\n  - id: c\n    input: hi\n    expect: {equals: fine}\n",
                     app=SDK_APP)
    pytester.syspathinsert()
    pytester.makeini(f"[pytest]\nelizon_retry_on = {names}\n")


def test_a_retry_on_class_of_a_package_not_installed_is_skipped_with_one_warning(
        packages: Packages, pytester: pytest.Pytester) -> None:
    retry_on_package(packages, pytester, "not_installed_sdk_x.RateLimitError "
                     "sdk_for_tests.RateLimitError not_installed_sdk_y.errors.Busy")
    result = pytester.runpytest("--elizon-results=r.json")
    result.assert_outcomes(passed=1)
    assert results_of(pytester)["c"]["attempts"] == 2  # the installed class is still retried
    result.stdout.fnmatch_lines(["*warnings summary*", f"*PytestConfigWarning: {WARNING}*"])
    assert result.stdout.str().count("skipped not_installed_sdk") == 1
    # a real pytest warning: the user's filters apply to it
    (pytester.path / "pkg" / "calls.txt").unlink()
    strict = pytester.runpytest("-W", "error::pytest.PytestConfigWarning")
    assert strict.ret != pytest.ExitCode.OK
    strict.stderr.fnmatch_lines([f"*{WARNING}*"])
    # (under xdist it is given once, not once per worker too: test_xdist's run)


# (a misspelt class of a module that is there is found when an error first needs the classes:
# test_hostile_loading_more)
@pytest.mark.parametrize(("name", "said"), [
    ("sdk_for_tests.sub.Error", "'sdk_for_tests.sub.Error' is not an importable exception class"
                                "*: there is no module sdk_for_tests.sub"),
])
def test_a_misspelt_retry_on_module_of_an_installed_package_is_a_usage_error(
        packages: Packages, pytester: pytest.Pytester, name: str, said: str) -> None:
    retry_on_package(packages, pytester, name)
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*ini option elizon_retry_on in *: {said}"])


# -- provenance -----------------------------------------------------------------------------------

def test_provenance_records_concurrency_auto(packages: Packages,
                                             pytester: pytest.Pytester) -> None:
    packages.package(suite="cases:\n  - id: c\n    input: hi\n",
                     app="def answer(text):\n    return text\n")
    pytester.runpytest("--elizon-results=r.json", "--elizon-concurrency=auto").assert_outcomes(
        passed=1)
    options = json.loads((pytester.path / "r.json").read_text("utf-8"))["provenance"]["options"]
    assert options["--elizon-concurrency"] == "auto"
    # the annotations' default, auto, is still not an option given
    assert provenance.command_options({"elizon_annotations": "auto",
                                       "elizon_concurrency": "auto"}) == {
        "--elizon-concurrency": "auto"}


# -- a mapping input to a one-parameter entry point ----------------------------------------------

CALLABLES = """
import json

def run(input: dict):
    return "run got " + json.dumps(input, sort_keys=True)

class Chain:
    def invoke(self, input, config=None, **kwargs):
        return ("invoke got " + json.dumps(input, sort_keys=True)
                + f" config={config} extra={sorted(kwargs)}")

chain = Chain()

def named(question, matter):
    return f"named got question={question} matter={matter}"

def needs_input(input, **kwargs):
    return "needs_input got " + json.dumps(input, sort_keys=True) + f" extra={sorted(kwargs)}"

def two(a, b):
    return "two"
"""

MAPPING = "{question: overdue?, matter: M-1}"


@pytest.mark.parametrize(("entry", "expected"), [
    ("callables:run", 'run got {"matter": "M-1", "question": "overdue?"}'),
    ("callables:chain.invoke",
     'invoke got {"matter": "M-1", "question": "overdue?"} config=None extra=[]'),
    ("callables:named", "named got question=overdue? matter=M-1"),  # keys fit: keywords
    ("callables:needs_input",  # **kwargs, but `input` would be left unfilled: the whole mapping
     'needs_input got {"matter": "M-1", "question": "overdue?"} extra=[]'),
])
def test_a_mapping_reaches_an_entry_point_whole_when_its_keys_cannot_be_keywords(
        packages: Packages, pytester: pytest.Pytester, entry: str, expected: str) -> None:
    packages.package(suite=f"cases:\n  - id: c\n    input: {MAPPING}\n", app=None, entry=entry)
    packages.write("pkg/callables.py", CALLABLES)
    pytester.runpytest("--elizon-results=r.json").assert_outcomes(passed=1)
    assert results_of(pytester)["c"]["output"] == expected


def test_a_langchain_shaped_entry_point_in_a_conversation_gets_the_messages_as_keywords(
        packages: Packages, pytester: pytest.Pytester) -> None:
    suite = ("cases:\n  - id: c\n    turns:\n"
             f"      - input: {MAPPING}\n        expect: {{contains: [invoke got]}}\n"
             f"      - input: {{question: paid?}}\n        expect: {{contains: [paid?]}}\n")
    packages.package(suite=suite, app=None, entry="callables:chain.invoke")
    packages.write("pkg/callables.py", CALLABLES)
    pytester.runpytest("--elizon-results=r.json").assert_outcomes(passed=1)
    turns = results_of(pytester)["c"]["turns"]
    assert turns[1]["output"] == \
        'invoke got {"question": "paid?"} config=None extra=[\'messages\']'


def test_keys_that_fit_neither_way_say_which_key(packages: Packages,
                                                 pytester: pytest.Pytester) -> None:
    packages.package(suite="cases:\n  - id: c\n    input: {a: 1, c: 2}\n", app=None,
                     entry="callables:two")
    packages.write("pkg/callables.py", CALLABLES)
    pytester.runpytest("--elizon-results=r.json").assert_outcomes(failed=1)
    error = results_of(pytester)["c"]["error"]
    assert (error["type"], error["message"]) == (
        "TypeError", "two() got an unexpected keyword argument 'c'")


class Runnable:
    def invoke(self, input: object, config: object = None, **kwargs: object) -> str:
        return f"whole {input!r} {config!r} {sorted(kwargs)}"


def _positional_only(x: object, /) -> str:
    return f"whole {x!r}"


def _any_positional(*args: object) -> str:
    return f"whole {args!r}"


def _keywords(**kwargs: object) -> str:
    return f"keywords {sorted(kwargs.items())!r}"


def _input_or_keywords(input: object = None, **kwargs: object) -> str:
    return f"keywords {input!r} {sorted(kwargs)}"


def _optional_matter(question: object, matter: object = None) -> str:
    return f"keywords {question!r} {matter!r}"


@pytest.mark.parametrize(("fn", "given", "answered"), [
    (Runnable().invoke, {"question": "q"}, "whole {'question': 'q'} None []"),
    (Runnable().invoke, {"input": "x"}, "whole 'x' None []"),  # the keys fit: keywords
    (_positional_only, {"x": 1}, "whole {'x': 1}"),
    (_any_positional, {"a": 1}, "whole ({'a': 1},)"),
    (_keywords, {"a": 1}, "keywords [('a', 1)]"),
    (_input_or_keywords, {"question": "q"}, "keywords None ['question']"),
    (_optional_matter, {"question": "q"}, "keywords 'q' None"),
    (dict, {"a": 1}, {"a": 1}),  # no signature Python can read: keywords, as always
])
def test_which_shapes_get_the_whole_mapping(fn: Callable[..., Any], given: dict[str, Any],
                                            answered: object) -> None:
    call = CallableEntry(fn, "fn").run(given, deadline=time.monotonic() + 30)
    assert call.error is None
    assert call.value == answered


def test_a_tool_result_too_long_to_print_is_kept_as_its_reason() -> None:
    # an int past Python's 4,300-digit limit can be neither JSON nor repr()
    call = from_return(Answer(text="ok", tool_calls=[ToolCall("t", {}, 10 ** 5000)]))
    assert call.text == "ok"
    # the message says so (Python 3.10: "(4300) for integer", 3.11 on: "(4300 digits)")
    assert "Exceeds the limit (4300" in str(call.tool_calls[0].result)
