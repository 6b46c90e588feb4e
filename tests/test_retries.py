"""Retries of refused calls and adaptive concurrency (docs/contract.md#retries,
docs/contract.md#concurrency), against a loopback server that scripts its answers and logs
how many requests it was serving when each one arrived. Nothing here bounds wall-clock time:
what a test proves comes from the server's log and the results file."""

from __future__ import annotations

import email.utils
import http.server
import json
import socket
import struct
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_elizon_eval.run.retrying import wait_from_headers

from .conftest import Packages

# The backoff without a hint is set small through its documented ini key, so that the tests
# never wait long; waits the server asks for are honoured as asked.
FAST = "[pytest]\nelizon_retry_backoff = 0.01 0.05\n"


class Script:
    """What the server answers, per path: a list of steps, the last one repeated. A step is
    ``(status, headers)`` or ``"reset"`` (the connection is dropped with a TCP reset)."""

    def __init__(self) -> None:
        self.steps: dict[str, list[Any]] = {}
        self.seen: dict[str, int] = {}
        #: (path, requests being served when this one arrived, status answered)
        self.log: list[tuple[str, int, int]] = []
        self.serving = 0
        #: With a cap, the path /limited answers 429 beyond this many requests at once.
        self.cap: int | None = None
        self.lock = threading.Lock()

    def step(self, path: str) -> tuple[Any, int]:
        with self.lock:
            n = self.seen.get(path, 0)
            self.seen[path] = n + 1
            self.serving += 1
            steps = self.steps.get(path, [(200, {})])
            return steps[min(n, len(steps) - 1)], self.serving


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # a kept-alive reply's body must not wait for an ACK
    script: Script

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        path = self.path
        step, serving = self.script.step(path)
        try:
            if path == "/limited":
                cap = self.script.cap
                status = 429 if cap is not None and serving > cap else 200
                if status == 200:
                    time.sleep(0.03)
                self._answer(path, serving, status, {"retry-after-ms": "20"})
            elif step == "reset":
                with self.script.lock:
                    self.script.log.append((path, serving, 0))
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
                self.close_connection = True
                self.connection.close()
            else:
                status, headers = step
                self._answer(path, serving, status, headers)
        finally:
            with self.script.lock:
                self.script.serving -= 1

    def _answer(self, path: str, serving: int, status: int, headers: dict[str, str]) -> None:
        with self.script.lock:
            self.script.log.append((path, serving, status))
        body = b"fine" if status == 200 else b'{"error": "slow down"}'
        if status == 200 and path.endswith("/chat/completions"):  # a judge's grade
            body = json.dumps({"choices": [{"message": {"content": json.dumps(
                {"score": 0.9, "reasoning": "polite"})}}]}).encode()
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, Script]]:
    script = Script()
    handler = type("Handler", (_Handler,), {"script": script})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_port}", script
    httpd.shutdown()
    httpd.server_close()


def _package(packages: Packages, entry: str, n: int = 1) -> None:
    packages.write("pkg/elizon.yaml", f"entry: {entry}\nevaluation:\n  suite: ./s.yaml\n")
    cases = "".join(f"  - id: c{i}\n    input: hi\n    expect: {{equals: fine}}\n"
                    for i in range(n))
    packages.write("pkg/s.yaml", "cases:\n" + cases)


def _results(pytester: pytest.Pytester) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((pytester.path / "r.json").read_text("utf-8"))
    return data


def _case(data: dict[str, Any]) -> dict[str, Any]:
    case: dict[str, Any] = data["suites"][0]["cases"][0]
    return case


def test_a_429_with_retry_after_is_waited_for_then_the_case_passes(
        packages: Packages, pytester: pytest.Pytester, server: tuple[str, Script]) -> None:
    url, script = server
    # a fraction of a second, as the header allows (its whole-second form is read in
    # test_wait_from_headers_reads_every_form): the wait is the one asked for
    script.steps["/x"] = [(429, {"Retry-After": "0.2"}), (200, {})]
    _package(packages, f"{{url: '{url}/x'}}")
    result = pytester.runpytest("--elizon-results=r.json", "--elizon-markdown=m.md",
                                "--elizon-html=h.html", "--elizon-junit=j.xml")
    result.assert_outcomes(passed=1)
    data = _results(pytester)
    case = _case(data)
    assert (case["attempts"], case["retries"], case["rate_limited"]) == (2, 1, True)
    assert case["waited_s"] == 0.2  # the server's wait, as asked
    assert data["suites"][0]["metrics"]["retries"] == 1
    assert data["suites"][0]["metrics"]["rate_limited_cases"] == 1
    assert [s for _, _, s in script.log] == [429, 200]
    result.stdout.fnmatch_lines(["*The run was rate limited: 1 case hit a rate limit, "
                                 "1 call retried*"])
    note = "The run was rate limited: 1 case hit a rate limit, 1 call retried"
    assert note in (pytester.path / "m.md").read_text("utf-8")
    assert note in (pytester.path / "h.html").read_text("utf-8")
    junit = (pytester.path / "j.xml").read_text("utf-8")
    assert '<property name="metric.retries" value="1"' in junit
    assert '<property name="metric.rate_limited_cases" value="1"' in junit


def test_429_forever_fails_within_the_time_limit_counting_attempts(
        packages: Packages, pytester: pytest.Pytester, server: tuple[str, Script]) -> None:
    url, script = server
    # refused again and again; then asked to wait longer than the time left: the case ends
    # there, at once, with a failure that counts the attempts (not left to a race with the
    # deadline, which would be a timeout)
    script.steps["/x"] = [(429, {"Retry-After": "0.05"})] * 3 + [(429, {"Retry-After": "30"})]
    _package(packages, f"{{url: '{url}/x'}}")
    result = pytester.runpytest("--elizon-results=r.json", "--elizon-retries=100",
                                "--elizon-timeout=5")
    result.assert_outcomes(failed=1)
    case = _case(_results(pytester))
    assert case["outcome"] == "failed"
    assert case["attempts"] == len(script.log) == 4
    assert case["waited_s"] == pytest.approx(0.15)
    assert "after 4 attempts" in case["error"]["message"]
    assert "the server asked to wait 30 s, longer than the" in case["error"]["message"]


def test_retries_used_up_and_retries_off(
        packages: Packages, pytester: pytest.Pytester, server: tuple[str, Script]) -> None:
    url, script = server
    script.steps["/x"] = [(503, {})]
    _package(packages, f"{{url: '{url}/x'}}")
    pytester.makeini(FAST)
    pytester.runpytest("--elizon-results=r.json", "--elizon-retries=2").assert_outcomes(
        failed=1)
    case = _case(_results(pytester))
    assert (case["attempts"], case["rate_limited"]) == (3, False)
    assert "after 3 attempts; retries used up" in case["error"]["message"]
    pytester.makeini(FAST + "elizon_retries = 0\n")  # the ini key turns them off too
    pytester.runpytest("--elizon-results=r.json").assert_outcomes(failed=1)
    assert _case(_results(pytester))["attempts"] == 1
    assert len(script.log) == 4


def test_a_400_is_not_retried(packages: Packages, pytester: pytest.Pytester,
                              server: tuple[str, Script]) -> None:
    url, script = server
    script.steps["/x"] = [(400, {"Retry-After": "0"})]
    _package(packages, f"{{url: '{url}/x'}}")
    pytester.runpytest("--elizon-results=r.json").assert_outcomes(failed=1)
    case = _case(_results(pytester))
    assert (case["attempts"], case["retries"], len(script.log)) == (1, 0, 1)


def test_a_retry_after_longer_than_the_time_left_ends_the_case_at_once(
        packages: Packages, pytester: pytest.Pytester, server: tuple[str, Script]) -> None:
    url, script = server
    script.steps["/x"] = [(429, {"Retry-After": "30"})]
    _package(packages, f"{{url: '{url}/x'}}")
    pytester.runpytest("--elizon-results=r.json", "--elizon-timeout=5").assert_outcomes(
        failed=1)
    case = _case(_results(pytester))
    assert (case["attempts"], len(script.log), case["waited_s"]) == (1, 1, 0)
    assert "the server asked to wait 30 s, longer than the" in case["error"]["message"]
    assert "HTTP 429" in case["error"]["message"]


def test_a_connection_reset_is_retried(packages: Packages, pytester: pytest.Pytester,
                                       server: tuple[str, Script]) -> None:
    url, script = server
    script.steps["/x"] = ["reset", (200, {})]
    _package(packages, f"{{url: '{url}/x'}}")
    pytester.makeini(FAST)
    pytester.runpytest("--elizon-results=r.json").assert_outcomes(passed=1)
    case = _case(_results(pytester))
    assert (case["attempts"], case["rate_limited"]) == (2, False)
    assert [s for _, _, s in script.log] == [0, 200]


def test_a_judge_endpoint_refused_with_429_is_retried(
        packages: Packages, pytester: pytest.Pytester, server: tuple[str, Script]) -> None:
    """The judge's retries count in the case's (and the run is said to be rate limited);
    the entry point's own call made one attempt."""
    url, script = server
    script.steps["/judge/chat/completions"] = [(429, {"retry-after-ms": "20"}), (200, {})]
    packages.write("pkg/elizon.yaml", f"entry: {{url: '{url}/x'}}\n"
                   f"judge: {{url: '{url}/judge', model: grader}}\n"
                   "evaluation:\n  suite: ./s.yaml\n")
    packages.write("pkg/s.yaml", "cases:\n  - id: c\n    input: hi\n    expect:\n"
                   "      judge: {rubric: polite, threshold: 0.5}\n")
    result = pytester.runpytest("--elizon-results=r.json")
    result.assert_outcomes(passed=1)
    case = _case(_results(pytester))
    assert (case["attempts"], case["retries"], case["rate_limited"]) == (1, 1, True)
    assert case["waited_s"] == 0.02
    assert case["judge_score"] == 0.9
    assert [(p, s) for p, _, s in script.log] == [
        ("/x", 200), ("/judge/chat/completions", 429), ("/judge/chat/completions", 200)]
    result.stdout.fnmatch_lines(["*The run was rate limited: 1 case hit a rate limit*"])


RATE_LIMITED_APP = """
import pytest_elizon_eval

calls = []

def answer(text):
    calls.append(text)
    if len(calls) == 1:
        raise pytest_elizon_eval.RateLimited("quota", retry_after=0.01)
    return "fine"
"""


def test_a_python_entry_raising_rate_limited_is_retried(packages: Packages,
                                                        pytester: pytest.Pytester) -> None:
    packages.package(suite="cases:\n  - id: c\n    input: hi\n    expect: {equals: fine}\n",
                     app=RATE_LIMITED_APP)
    pytester.runpytest("--elizon-results=r.json").assert_outcomes(passed=1)
    case = _case(_results(pytester))
    assert (case["attempts"], case["waited_s"], case["rate_limited"]) == (2, 0.01, True)


SDK = """
class Response:
    headers = {"retry-after-ms": "10"}

class RateLimitError(Exception):
    response = Response()
"""

SDK_APP = """
import pathlib
import sdk

CALLS = pathlib.Path(__file__).with_name("calls.txt")

def answer(text):
    with CALLS.open("a") as fh:
        fh.write("x")
    if len(CALLS.read_text()) < 3:
        raise sdk.RateLimitError("429 Too Many Requests")
    return "fine"
"""


def test_an_exception_named_in_elizon_retry_on_is_retried(packages: Packages,
                                                           pytester: pytest.Pytester) -> None:
    packages.write("sdk_for_tests.py", SDK)
    packages.package(suite="cases:\n  - id: c\n    input: hi\n    expect: {equals: fine}\n",
                     app=SDK_APP.replace("sdk", "sdk_for_tests"))
    pytester.syspathinsert()
    pytester.makeini("[pytest]\nelizon_retry_on = sdk_for_tests.RateLimitError\n")
    pytester.runpytest("--elizon-results=r.json").assert_outcomes(passed=1)
    case = _case(_results(pytester))
    assert (case["attempts"], case["waited_s"]) == (3, 0.02)
    # not named: the same exception fails the case at once
    (pytester.path / "pkg" / "calls.txt").unlink()
    pytester.makeini("[pytest]\n")
    pytester.runpytest("--elizon-results=r.json").assert_outcomes(failed=1)
    assert _case(_results(pytester))["attempts"] == 1


@pytest.mark.parametrize(("args", "ini", "said"), [
    (["--elizon-retries=-1"], "", "--elizon-retries=-1: expected a whole number of retries"),
    (["--elizon-concurrency=auto:0"], "", "--elizon-concurrency=auto:0: expected a whole"),
    ([], "elizon_retry_on = not.a.Class", "ini option elizon_retry_on in *: 'not.a.Class' is "
                                          "not an importable exception class*"),
    ([], "elizon_retry_backoff = 1", "ini option elizon_retry_backoff in *: expected 'BASE CAP'*"),
    ([], "elizon_retries = many", "ini option elizon_retries in *: expected a whole number*"),
    ([], "elizon_concurrency = auto:65", "ini option elizon_concurrency in *: expected*auto:MAX*"),
])
def test_bad_retry_and_concurrency_values_are_usage_errors(
        pytester: pytest.Pytester, args: list[str], ini: str, said: str) -> None:
    pytester.makeini(f"[pytest]\n{ini}\n")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{said}*"])


def test_auto_concurrency_shrinks_under_429s_and_grows_back(
        packages: Packages, pytester: pytest.Pytester, server: tuple[str, Script]) -> None:
    url, script = server
    script.cap = 2  # the server serves two at once, refusing the rest
    _package(packages, f"{{url: '{url}/limited'}}", n=80)
    seen_first: list[int] = []

    def lift() -> None:  # once 30 requests were answered, the limit is lifted
        while len(script.log) < 30:
            time.sleep(0.005)
        seen_first.append(len(script.log))
        script.cap = None

    threading.Thread(target=lift, daemon=True).start()
    result = pytester.runpytest("--elizon-results=r.json", "--elizon-concurrency=auto:16")
    result.assert_outcomes(passed=80)
    log = script.log
    limited = log[:seen_first[0]]
    refused = [i for i, (_, _, status) in enumerate(limited) if status == 429]
    assert refused, "the server refused nothing: the test proves nothing"
    # it started wider than the server allows, at AUTO_START = 4 and no wider ...
    assert max(serving for _, serving, _ in limited[:refused[0] + 1]) in (3, 4)
    # ... shrank: after the first refusals, most requests fit under the server's cap ...
    after = [serving for _, serving, _ in limited[refused[0] + 4:]]
    assert after
    assert sorted(after)[len(after) // 2] <= 2
    # ... and grew back past where it started once the limit was lifted
    assert max(serving for _, serving, _ in log[seen_first[0]:]) > 4
    data = _results(pytester)
    assert data["suites"][0]["metrics"]["rate_limited_cases"] >= 1


def test_wait_from_headers_reads_every_form() -> None:
    later = email.utils.formatdate(1_000_030, usegmt=True)
    assert wait_from_headers({"Retry-After": later}, now=1_000_000) == 30
    assert wait_from_headers({"Retry-After": "2"}) == 2
    assert wait_from_headers({"retry-after-ms": "250", "Retry-After": "1"}) == 0.25
    assert wait_from_headers({"x-ratelimit-reset-requests": "1m0.5s",
                              "x-ratelimit-reset-tokens": "20ms"}) == 60.5
    assert wait_from_headers({"Retry-After": "soon"}) is None
    assert wait_from_headers({}) is None


def test_a_judge_endpoint_that_stays_refused_says_how_many_attempts(
        server: tuple[str, Script]) -> None:
    from pytest_elizon_eval.bind.judging import EndpointJudge
    from pytest_elizon_eval.collect.session import ElizonSession
    from pytest_elizon_eval.load.runtime import JudgeEndpoint
    from pytest_elizon_eval.run import retrying

    url, script = server
    script.steps["/j/chat/completions"] = [(503, {"retry-after-ms": "10"})]
    # the judge reads the current session's policy deep inside its call
    running = ElizonSession(settings=Any, index=Any, binder=Any,  # type: ignore[arg-type]
                            retry=retrying.RetryPolicy(retries=2))
    running.start(None)
    judge = EndpointJudge(JudgeEndpoint.model_validate({"url": f"{url}/j", "model": "m"}))
    try:
        assert retrying.policy().retries == 2
        grade = judge.grade("polite", "hi", "fine", deadline=time.monotonic() + 30)
    finally:
        judge.close()
        running.end()
    assert retrying.policy() is not running.retry
    assert grade.score is None
    assert grade.error is not None
    assert grade.error.startswith("HTTP 503: ")
    assert grade.error.endswith(" (after 3 attempts; retries used up)")
    assert (grade.retries, grade.rate_limited, len(script.log)) == (2, False, 3)
