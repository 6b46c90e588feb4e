"""Issue 38, items 1 and 5: errors a pytest user expects (docs/contract.md#checks,
docs/contract.md#retries).

1. A check may use plain ``assert`` and return nothing, as a pytest test does.
5. The model SDKs' rate-limit and overload errors are retried without naming them in
   ``elizon_retry_on``, waiting what their reply's headers ask for: proved with the real
   OpenAI and Anthropic clients against a loopback server, from the server's log and the
   results file (never the clock).
"""

from __future__ import annotations

import functools
import http.server
import json
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_elizon_eval.run.calls import EntryCall
from pytest_elizon_eval.run.checks import grade_checks
from pytest_elizon_eval.run.retrying import Refusal, refusal_of

from .conftest import Packages
from .test_checks import _case

# -- item 1: a check may use plain assert ---------------------------------------------------

ASSERTING_CHECKS = '''
def asserts_and_passes(output):
    assert "fine" in output


def asserts_and_fails(output):
    assert "zzz" in output, "the answer never says zzz"


def says_nothing(output):
    pass


def polite(output):
    "please" in output.lower()  # the return forgotten: never a silent pass


def returns_false(output):
    return False
'''

FORGOT = ("failed", "returned None without an assert (a forgotten return?): return True/False, "
          "or assert")

FINE_APP = "def answer(text):\n    return 'all fine'\n"


def test_a_check_that_asserts_and_returns_none_passes_as_a_pytest_test_does(
        packages: Packages, pytester: pytest.Pytester) -> None:
    names = ["asserts_and_passes", "asserts_and_fails", "says_nothing", "polite", "returns_false"]
    cases = "".join(f"  - id: {n.replace('_', '-')}\n    input: hi\n"
                    f"    expect: {{checks: ['mine:{n}']}}\n" for n in names)
    # pytest rewrites a conftest's asserts into `raise AssertionError(...)`: still an assert
    cases += "  - id: rewritten\n    input: hi\n    expect: {checks: [rewritten]}\n"
    # a check held against a threshold grades by score: None there is a forgotten return
    cases += ("  - id: none-with-threshold\n    input: hi\n    expect:\n      checks:\n"
              "        - {check: 'mine:asserts_and_passes', threshold: 0.5}\n")
    packages.package(app=FINE_APP, suite="cases:\n" + cases)
    packages.write("pkg/mine.py", ASSERTING_CHECKS)
    packages.write("pkg/conftest.py", """
        import pytest

        def rewritten(output):
            assert "fine" in output

        @pytest.fixture(scope="session")
        def elizon_checks():
            return {"rewritten": rewritten}
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "--elizon-results=r.json")
    result.assert_outcomes(passed=2, failed=5)
    data = json.loads((pytester.path / "r.json").read_text("utf-8"))
    found = {c["id"]: (c["outcome"], c["assertions"][0]["found"])
             for c in data["suites"][0]["cases"]}
    assert found["asserts-and-passes"] == ("passed", "returned None (no assert failed)")
    assert found["rewritten"] == ("passed", "returned None (no assert failed)")
    assert found["says-nothing"] == FORGOT
    assert found["polite"] == FORGOT
    outcome, said = found["asserts-and-fails"]
    assert outcome == "failed"
    assert said.startswith("AssertionError: the answer never says zzz (at ")
    assert found["returns-false"] == ("failed", "returned False")
    assert found["none-with-threshold"] == (
        "failed", "returned None, but a threshold is given: return a score from 0 to 1")


def _asserting(output: str) -> None:
    assert output


def test_only_a_plain_none_passes_every_other_return_keeps_its_meaning() -> None:
    def returns(value: object) -> Any:
        return lambda output: value

    functions = {"none": _asserting, "pair-none": returns((None, "why")),
                 "true": returns(True), "false-pair": returns((False, "because")),
                 "text": returns("yes")}
    case = _case({"checks": list(functions)})
    call = EntryCall(value="out", text="out", latency_ms=1.0)
    results = grade_checks(case.expect, functions, case, "hi", call,  # type: ignore[arg-type]
                           time.monotonic() + 5).results
    assert [(r.name, r.passed) for r in results] == [
        ("checks.none", True), ("checks.pair-none", False), ("checks.true", True),
        ("checks.false-pair", False), ("checks.text", False)]
    assert results[3].found == "returned False — because"


class _Asserting:
    def __call__(self, output: str) -> None:
        assert output


class _Forgetting:
    def __call__(self, output: str) -> None:
        output.startswith("out")


def _forgets(output: str, prefix: str) -> None:
    output.startswith(prefix)


def _asserts(output: str, prefix: str) -> None:
    assert output.startswith(prefix)


def _decorated(function: Any) -> Any:
    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return function(*args, **kwargs)
    return wrapper


def test_none_passes_only_from_code_that_asserts_however_the_check_is_wrapped() -> None:
    async def async_asserts(output: str) -> None:
        assert output

    functions: dict[str, object] = {
        "partial": functools.partial(_asserts, prefix="out"),
        "object": _Asserting(), "method": _Asserting().__call__,
        "decorated": _decorated(_asserting), "async": async_asserts,
        "partial-forgets": functools.partial(_forgets, prefix="out"),
        "object-forgets": _Forgetting(), "decorated-forgets": _decorated(_Forgetting()),
        "lambda-forgets": lambda output: None}
    case = _case({"checks": list(functions)})
    call = EntryCall(value="out", text="out", latency_ms=1.0)
    results = grade_checks(case.expect, functions, case, "hi", call,  # type: ignore[arg-type]
                           time.monotonic() + 5).results
    assert {r.name.removeprefix("checks."): (r.passed, r.found) for r in results} == {
        name: (True, "returned None (no assert failed)") if "forgets" not in name
        else (False, FORGOT[1]) for name in functions}


# -- item 5: the SDKs' rate-limit and overload errors --------------------------------------

def _openai_error(kind: str, status: int, headers: dict[str, str], body: object = None
                  ) -> BaseException:
    import httpx2
    import openai

    request = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx2.Response(status, headers=headers, request=request)
    error: BaseException = getattr(openai, kind)("refused", response=response, body=body)
    return error


def _anthropic_error(kind: str, status: int, headers: dict[str, str]) -> BaseException:
    import anthropic
    import httpx2

    request = httpx2.Request("POST", "http://127.0.0.1/v1/messages")
    response = httpx2.Response(status, headers=headers, request=request)
    error: BaseException = getattr(anthropic, kind)("refused", response=response, body=None)
    return error


def test_sdk_errors_are_recognised_by_class_and_status_without_importing_an_sdk(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from langchain_core.exceptions import ModelAPIError, ModelRateLimitError

    errors = {
        "openai 429": _openai_error("RateLimitError", 429, {"retry-after-ms": "7"}),
        "openai 503": _openai_error("InternalServerError", 503, {"Retry-After": "2"}),
        "openai 500": _openai_error("InternalServerError", 500, {}),
        "openai 400": _openai_error("BadRequestError", 400, {"Retry-After": "1"}),
        "openai told not to": _openai_error("RateLimitError", 429, {"x-should-retry": "false"}),
        "openai no credit": _openai_error("RateLimitError", 429, {"retry-after": "1"},
                                          {"code": "insufficient_quota", "message": "quota"}),
        "anthropic 429": _anthropic_error("RateLimitError", 429, {"retry-after": "3"}),
        "anthropic 529": _anthropic_error("OverloadedError", 529, {}),
        "langchain 429": ModelRateLimitError("slow down"),
        "langchain 5xx": ModelAPIError("server error"),
        "plain": ValueError("429 Too Many Requests"),
    }
    # classifying reads the classes it is given: with every SDK made unimportable, it
    # still tells them apart (an import would raise ImportError here)
    for name in ("openai", "anthropic", "litellm", "langchain_core", "httpx2"):
        monkeypatch.setitem(sys.modules, name, None)
    assert {name: refusal_of(exc) for name, exc in errors.items()} == {
        "openai 429": Refusal(0.007, True),
        "openai 503": Refusal(2.0, False),
        "openai 500": None,
        "openai 400": None,
        "openai told not to": None,
        "openai no credit": None,
        "anthropic 429": Refusal(3.0, True),
        "anthropic 529": Refusal(None, False),
        "langchain 429": Refusal(None, True),
        "langchain 5xx": None,
        "plain": None,
    }


class _Script:
    """What the loopback server answers, per path: (status, headers, body) steps, the last
    one repeated; and the status of each request it answered, in order."""

    def __init__(self, steps: dict[str, list[tuple[int, dict[str, str], object]]]) -> None:
        self.steps = steps
        self.log: list[tuple[str, int]] = []
        self.lock = threading.Lock()

    def next(self, path: str) -> tuple[int, dict[str, str], object]:
        with self.lock:
            seen = sum(1 for p, _ in self.log if p == path)
            steps = self.steps[path]
            step = steps[min(seen, len(steps) - 1)]
            self.log.append((path, step[0]))
            return step


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    script: _Script

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        status, headers, body = self.script.next(self.path)
        payload = json.dumps(body).encode()
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **headers}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[http.server.ThreadingHTTPServer] = []

    def start(script: _Script) -> str:
        handler = type("Handler", (_Handler,), {"script": script})
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        httpd.daemon_threads = True
        threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True).start()
        servers.append(httpd)
        return f"http://127.0.0.1:{httpd.server_port}"

    yield start
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


COMPLETION = {"id": "c1", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
              "choices": [{"index": 0, "finish_reason": "stop",
                           "message": {"role": "assistant", "content": "fine"}}]}
MESSAGE = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
           "content": [{"type": "text", "text": "fine"}], "stop_reason": "end_turn",
           "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 1}}

OPENAI_APP = """
import openai
client = openai.OpenAI(base_url={url!r}, api_key="sk-test", max_retries=0)

def answer(text):
    return client.chat.completions.create(
        model="gpt-4o-mini", messages=[{{"role": "user", "content": text}}])
"""
ANTHROPIC_APP = """
import anthropic
client = anthropic.Anthropic(base_url={url!r}, api_key="ak-test", max_retries=0)

def answer(text):
    return client.messages.create(
        model="claude-x", max_tokens=10, messages=[{{"role": "user", "content": text}}])
"""


def test_the_real_sdks_refusals_are_retried_as_their_replies_ask(
        packages: Packages, pytester: pytest.Pytester, serve: Any) -> None:
    import anthropic  # noqa: F401 - imported here, kept for the inner run
    import openai  # noqa: F401 - imported here, kept for the inner run

    limited = {"error": {"message": "Rate limit reached", "type": "requests",
                         "code": "rate_limit_exceeded"}}
    overloaded = {"type": "error", "error": {"type": "overloaded_error",
                                             "message": "Overloaded"}}
    bad = {"error": {"message": "bad request", "type": "invalid_request_error"}}
    script = _Script({
        "/oa/chat/completions": [(429, {"retry-after-ms": "7"}, limited), (200, {}, COMPLETION)],
        "/an/v1/messages": [(529, {"retry-after-ms": "5"}, overloaded), (200, {}, MESSAGE)],
        "/bad/chat/completions": [(400, {"retry-after-ms": "1"}, bad)],
    })
    url = serve(script)
    suite = "cases:\n  - id: c\n    input: hi\n    expect: {equals: fine}\n"
    packages.package("openai_app", suite=suite, app=OPENAI_APP.format(url=url + "/oa"))
    packages.package("anthropic_app", suite=suite,
                     app=ANTHROPIC_APP.format(url=url + "/an"))
    packages.package("bad_app", suite=suite, app=OPENAI_APP.format(url=url + "/bad"))
    result = pytester.runpytest("-p", "no:randomly", "--elizon-results=r.json")
    result.assert_outcomes(passed=2, failed=1)
    data = json.loads((pytester.path / "r.json").read_text("utf-8"))
    cases = {s["package"]: s["cases"][0] for s in data["suites"]}
    shown = {name: (c["outcome"], c["attempts"], c["retries"], c["waited_s"], c["rate_limited"])
             for name, c in cases.items()}
    # the wait is the one each reply asked for (a backoff of our own is random, from 0.5 s)
    assert shown == {"openai_app": ("passed", 2, 1, 0.007, True),
                     "anthropic_app": ("passed", 2, 1, 0.005, False),
                     "bad_app": ("failed", 1, 0, 0, False)}
    assert sorted(script.log) == sorted([
        ("/oa/chat/completions", 429), ("/oa/chat/completions", 200),
        ("/an/v1/messages", 529), ("/an/v1/messages", 200), ("/bad/chat/completions", 400)])
    assert cases["bad_app"]["error"]["type"] == "BadRequestError"
    metrics = {s["package"]: s["metrics"]["rate_limited_cases"] for s in data["suites"]}
    assert metrics == {"openai_app": 1, "anthropic_app": 0, "bad_app": 0}
