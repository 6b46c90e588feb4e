"""Process and HTTP entry points (docs/contract.md#calling), against real processes and a loopback
server."""

from __future__ import annotations

import http.server
import inspect
import json
import os
import shlex
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from pytest_elizon_eval.bind import entries as entries_module
from pytest_elizon_eval.bind.entries import HttpEntry, entry_from
from pytest_elizon_eval.bind.judging import EndpointJudge
from pytest_elizon_eval.load.runtime import CommandEntry, JudgeEndpoint, UrlEntry
from pytest_elizon_eval.mock import MockModel, MockRequest, MockServer
from pytest_elizon_eval.text import without_userinfo

from .conftest import Packages, start_pytest

PY = json.dumps(sys.executable)


def process_package(packages: Packages, script: str, suite: str, *, extra: str = "",
                    output: str = "") -> None:
    packages.write("pkg/app.py", script)
    lines = [f"entry:\n  command: [{PY}, app.py]"]
    if extra:
        lines.append(extra)
    if output:
        lines.append(f"output: {output}")
    lines.append("evaluation:\n  suite: ./eval/suite.yaml")
    packages.write("pkg/elizon.yaml", "\n".join(lines) + "\n")
    packages.write("pkg/eval/suite.yaml", suite)


def results(pytester: pytest.Pytester, name: str = "r.json") -> dict[str, dict[str, Any]]:
    data = json.loads((pytester.path / name).read_text())
    return {c["id"]: c for s in data["suites"] for c in s["cases"]}


ECHO_SCRIPT = """
import json, os, sys
data = sys.stdin.read()
try:
    named = json.loads(data)
except ValueError:
    named = None
if isinstance(named, dict):
    print(json.dumps({"route": named.get("route", "none"), "cwd": os.path.basename(os.getcwd())}))
else:
    print("echo: " + data)
"""


def test_process_gets_stdin_and_answers_on_stdout(packages: Packages, pytester: pytest.Pytester
                                                  ) -> None:
    process_package(packages, ECHO_SCRIPT, """
        cases:
          - id: text-in
            input: hello there
            expect: {equals: "echo: hello there"}
          - id: mapping-in-as-json
            input: {route: billing}
            expect: {contains: ['"route": "billing"', '"cwd": "pkg"']}
    """)
    pytester.runpytest().assert_outcomes(passed=2)


def test_process_output_json_is_structured(packages: Packages, pytester: pytest.Pytester) -> None:
    process_package(packages, ECHO_SCRIPT, """
        cases:
          - id: routed
            input: {route: records.query}
            expect:
              route: records.query
              output: {cwd: pkg}
          - id: not-json
            input: plain text
            expect: {route: x}
    """, output="json")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*the entry point raised OutputError: stdout is not JSON*"])


def test_non_zero_exit_is_an_error_with_status_and_stderr(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    process_package(packages, """
import sys
sys.stderr.write("model quota exceeded for org acme\\n")
sys.exit(3)
""", """
        cases:
          - id: fails-loudly
            input: x
          - id: error-is-expected
            input: x
            expect:
              errorContains: [exit status 3, quota exceeded]
    """)
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*the entry point raised ProcessExit: exit status 3; stderr: "
                                 "model quota exceeded for org acme"])


def _gone(pid: int) -> bool:
    """The process no longer runs (gone, or a zombie awaiting its reaper)."""
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "State:\tZ" in state


def _wait_until_gone(pids: list[int]) -> list[int]:
    """The pids still running after a bounded number of polls (a zombie counts as gone: an
    orphan's reaper may be a PID 1 that never reaps). The bound is for safety only: gone
    processes end the wait at once."""
    for _ in range(600):
        left = [pid for pid in pids if not _gone(pid)]
        if not left:
            return []
        time.sleep(0.05)
    return left


# A shell script, so that a hanging case has noted its processes within milliseconds of its
# start, far inside even a short time limit on a busy machine. ``trap '' TERM`` before a
# child starts makes the child ignore SIGTERM from its first instant.
LEFTOVERS_SCRIPT = """
read -r how
note() { echo "$1" >> "$PIDS/$how"; }
case "$how" in
group-sleeper)    # a grandchild of the command's group holds stdout; it exits
    (trap '' TERM; exec sleep 3600) & note $!
    echo answered ;;
ignores-sigterm)  # the command and its child ignore SIGTERM and hang
    trap '' TERM
    note $$
    sleep 3600 & note $!
    wait ;;
detached-exits)   # a grandchild in a session of its own holds stdout; it exits
    (trap '' TERM; exec setsid sleep 3600) & note $!
    echo answered ;;
detached-hangs)   # the same grandchild, and the command hangs
    note $$
    (trap '' TERM; exec setsid sleep 3600) & note $!
    sleep 3600 ;;
esac
"""


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_leftover_processes_are_killed_and_a_case_never_passes_late(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    """Grandchildren that hold stdout — in the command's group or detached in a session of
    their own, ignoring SIGTERM — never keep pytest waiting, never outlive their case, and
    never turn into a pass after the time limit."""
    pids = pytester.path / "pids"
    pids.mkdir()
    cases = {"answers": ("group-sleeper", "detached-exits"),
             "hangs": ("ignores-sigterm", "detached-hangs")}
    for folder, ids in cases.items():
        packages.write(f"{folder}/elizon.yaml", "entry: {command: [sh, leftovers.sh]}\n"
                                                "evaluation: {suite: s.yaml}\n")
        packages.write(f"{folder}/leftovers.sh", f"PIDS={shlex.quote(str(pids))}\n"
                                                 + LEFTOVERS_SCRIPT)
        packages.write(f"{folder}/s.yaml", "cases:\n" + "".join(
            f"  - id: {i}\n    input: {i}\n" + ("    expect: {contains: [answered]}\n"
                                                 if folder == "answers" else "")
            for i in ids))
    # The cases that answer get a generous limit: they pass only if their grandchildren,
    # which sleep for an hour, keep neither the case nor pytest waiting. The cases that
    # hang never answer, so a short limit ends them whatever the machine's load. In each
    # run the cases run at once (their time limits overlap); pytest itself must exit. The
    # two runs go side by side: the answering one is over while the other waits its limit.
    # 2 s: time for the scripts to note their processes on a loaded machine; they never answer
    finish_hung = start_pytest(pytester, "hangs", "--elizon-timeout=2",
                               "--elizon-concurrency=2", "--elizon-results=hangs.json",
                               name="hangs")
    try:
        answered = pytester.runpytest_subprocess("answers", "--elizon-timeout=30",
                                                 "--elizon-concurrency=2",
                                                 "--elizon-results=answers.json", timeout=120)
    finally:
        hung = finish_hung()
    assert answered.parseoutcomes() == {"passed": 2}
    assert hung.parseoutcomes() == {"timeout": 2}
    outcomes = {**results(pytester, "answers.json"), **results(pytester, "hangs.json")}
    assert {k: c["outcome"] for k, c in outcomes.items()} == {
        "group-sleeper": "passed", "ignores-sigterm": "timeout",
        "detached-exits": "passed", "detached-hangs": "timeout"}
    for name in cases["answers"]:  # answered within the limit, not after it
        assert outcomes[name]["latency_ms"] < outcomes[name]["timeout_s"] * 1000, outcomes[name]
    noted = {f.name: [int(p) for p in f.read_text().split()] for f in pids.iterdir()}
    assert sorted(noted) == sorted(outcomes)
    assert all(len(group) == 2 if name in cases["hangs"] else len(group) == 1
               for name, group in noted.items()), noted
    assert _wait_until_gone([pid for group in noted.values() for pid in group]) == [], \
        "a process of a case was left running"


def test_a_hundred_megabytes_of_output_is_capped_head_and_tail(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    process_package(packages, """
import sys
out = sys.stdout.buffer
out.write(b"START ")
block = b"x" * (1024 * 1024)
for _ in range(100):
    out.write(block)
out.write(b" END")
""", "cases:\n  - id: floods\n    input: x\n    expect: {contains: [START, END, bytes left out]}\n")
    result = pytester.runpytest("--elizon-results=r.json")
    result.assert_outcomes(passed=1)
    case = results(pytester)["floods"]
    assert 8_000_000 < case["output_length"] < 9_000_000  # head + tail, not 100 MB
    assert case["output"].startswith("START xxx")


def test_env_references_the_operators_environment_and_stays_out_of_reports(
    packages: Packages, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    process_package(packages, """
import os
key = os.environ["MODEL_KEY"]
print(f"key of length {len(key)}, plain {os.environ['PLAIN']}")
""", "cases:\n  - id: uses-key\n    input: x\n    expect: {contains: [key of length 14, "
                                     "plain value]}\n",
                    extra="  env:\n    MODEL_KEY: ${TEST_SECRET_KEY}\n    PLAIN: value")
    result = pytester.runpytest("--elizon-results=r.json", "--elizon-junit=j.xml")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*EntryConfigError: the environment variable TEST_SECRET_KEY "
                                 "(named in env.MODEL_KEY) is not set"])
    monkeypatch.setenv("TEST_SECRET_KEY", "sk-secret-1234")
    result = pytester.runpytest("--elizon-results=r.json", "--elizon-junit=j.xml", "-rA")
    result.assert_outcomes(passed=1)
    for text in (result.stdout.str(), (pytester.path / "r.json").read_text(),
                 (pytester.path / "j.xml").read_text()):
        assert "sk-secret-1234" not in text
    assert results(pytester)["uses-key"]["entry"].startswith("command ")


def test_a_command_that_cannot_start(packages: Packages, pytester: pytest.Pytester) -> None:
    packages.write("pkg/elizon.yaml", "entry: {command: [no-such-program-xyz]}\n"
                                      "evaluation: {suite: s.yaml}\n")
    packages.write("pkg/s.yaml", "cases:\n  - id: a\n    input: x\n")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*ProcessError: cannot start 'no-such-program-xyz' in *"])


def test_a_command_entry_from_the_command_line(packages: Packages, pytester: pytest.Pytester
                                               ) -> None:
    packages.write("checks/app.py", ECHO_SCRIPT)
    packages.write("checks/smoke.eval.yaml", "cases:\n  - id: a\n    input: hi\n"
                                             "    expect: {equals: 'echo: hi'}\n")
    result = pytester.runpytest(f"--elizon-entry={{command: [{PY}, app.py]}}")
    result.assert_outcomes(passed=1)


#: How long /slow and /drip keep a case waiting at most (unless the test ends first): far
#: beyond the short limits they are called with, so those limits are reached however slowly
#: the machine runs, yet a limit that failed to act would still end with a wrong outcome
#: instead of hanging the test run.
_NEVER_S = 60


class _Service(http.server.BaseHTTPRequestHandler):
    server: _Server
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        path = self.path
        if path == "/json":
            self._send(200, json.dumps({"route": "records.query", "got": body,
                                        "key": self.headers.get("X-Key")}), "application/json")
        elif path == "/text":
            self._send(200, f"plain answer to {body}", "text/plain; charset=utf-8")
        elif path == "/fail":
            self._send(500, "upstream model overloaded " + "x" * 2000, "text/plain")
        elif path == "/badjson":
            self._send(200, '{"route": ', "application/json")
        elif path == "/slow":  # no answer while the test runs
            if not self.server.released.wait(_NEVER_S):  # a late answer, should a limit fail
                self._send(200, "late", "text/plain")
        elif path == "/drip":  # a byte at a time while the test runs, then the end
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            for _ in range(_NEVER_S * 20):
                if self.server.released.wait(0.05):
                    return
                try:
                    self.wfile.write(b"x")
                    self.wfile.flush()
                except OSError:
                    return
        elif path == "/endless":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            try:
                for _ in range(100_000):
                    self.wfile.write(b"y" * 65536)
            except OSError:
                return

    def _send(self, status: int, text: str, content_type: str) -> None:
        data = text.encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass

    def log_message(self, *args: object) -> None:
        pass


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    #: Set when the test is over: until then /slow and /drip never finish their reply, so a
    #: case calling them times out however slowly the machine runs.
    released: threading.Event


@pytest.fixture
def service() -> Iterator[str]:
    server = _Server(("127.0.0.1", 0), _Service)
    server.released = threading.Event()
    # a short poll interval: shutdown() waits for the next poll (0.5 s by default)
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.released.set()
    server.shutdown()
    server.server_close()


def http_package(packages: Packages, entry: str, suite: str) -> None:
    packages.write("pkg/elizon.yaml", f"entry: {entry}\nevaluation:\n  suite: ./s.yaml\n")
    packages.write("pkg/s.yaml", suite)


def test_http_entry_posts_json_and_reads_json_or_text(
    packages: Packages, pytester: pytest.Pytester, service: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEST_SERVICE_KEY", "k-123")
    headers = "{X-Key: '${TEST_SERVICE_KEY}'}"
    http_package(packages, f"{{url: '{service}/json', headers: {headers}}}", """
        cases:
          - id: string-input
            input: which invoices?
            expect:
              route: records.query
              output: {got: {input: which invoices?}, key: k-123}
          - id: mapping-input
            input: {question: q, matter: M-1}
            expect:
              output: {got: {question: q, matter: M-1}}
    """)
    pytester.runpytest().assert_outcomes(passed=2)
    http_package(packages, f"{{url: '{service}/text'}}",
                 "cases:\n  - id: text\n    input: hi\n"
                 "    expect: {equals: \"plain answer to {'input': 'hi'}\"}\n")
    pytester.runpytest().assert_outcomes(passed=1)


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_http_entry_failures(packages: Packages, pytester: pytest.Pytester, service: str
                             ) -> None:
    """Every way a service can fail, one package each. The services that answer (with an
    error) run at once under a generous limit; the two that never answer run at once under a
    short one, which ends them whatever the machine's load."""
    refused = f"http://127.0.0.1:{closed_port()}/"
    entries = {
        "fail": f"{{url: '{service}/fail'}}",
        "badjson": f"{{url: '{service}/badjson'}}",
        "endless": f"{{url: '{service}/endless'}}",
        "own-timeout": f"{{url: '{service}/slow', timeout: 0.25}}",
        "refused": f"{{url: '{refused}'}}",
        "slow": f"{{url: '{service}/slow'}}",
        "drip": f"{{url: '{service}/drip'}}",
    }
    for name, entry in entries.items():
        packages.write(f"{name}/elizon.yaml", f"entry: {entry}\nevaluation:\n  suite: ./s.yaml\n")
        packages.write(f"{name}/s.yaml", "cases:\n  - id: a\n    input: x\n")
    answering = ["fail", "badjson", "endless", "own-timeout", "refused"]
    result = pytester.runpytest(*answering, "--elizon-timeout=30", "--elizon-concurrency=8")
    assert result.parseoutcomes() == {"failed": 5}
    result.stdout.fnmatch_lines_random([
        "*HttpError: HTTP 500 from http://127.0.0.1:*/fail: 'upstream model overloaded xxx*",
        "*HttpError: the JSON reply from * is malformed*",
        "*HttpError: the response body from * is larger than 8,388,608 bytes",
        # the entry's own limit, shorter than the case's, is the service's error
        "*HttpTimeout: no answer from */slow within the entry's timeout of 0.25 s",
        f"*HttpError: connection refused by {refused} (is the service running?)",
    ])
    # /slow and /drip never finish while the test runs: any limit is reached, and half a
    # second is ten of /drip's bytes, each read well within it
    result = pytester.runpytest("slow", "drip", "--elizon-timeout=0.5", "--elizon-concurrency=8")
    assert result.parseoutcomes() == {"timeout": 2}
    result.stdout.fnmatch_lines_random([
        # the whole exchange is limited, not each read: a dripping reply times out too
        "  slow/s.yaml::a — no answer within 0.5 s (--elizon-timeout=0.5)",
        "  drip/s.yaml::a — no answer within 0.5 s (--elizon-timeout=0.5)",
    ])


class _KeptAlive(http.server.BaseHTTPRequestHandler):
    """Answers in about 10 ms over HTTP/1.1 keep-alive, logging each request's client port
    and how long the server spent on it."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # a kept-alive reply's body must not wait for an ACK
    log: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        started = time.perf_counter()  # the request line and headers are read by now
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        time.sleep(0.01)
        data = json.dumps({"route": "echo", "input": body["input"]}).encode()
        # the handling ends where the reply starts: from then on the client may have it all
        self.log.append({"input": body["input"], "port": self.client_address[1],
                         "handling_ms": (time.perf_counter() - started) * 1000})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def log_message(self, *args: object) -> None:
        pass


SLOW_CLIENT_CONFTEST = """
import time

import httpx

_original = httpx.Client.__init__


def _slow_init(self, *args, **kwargs):  # creating a client costs at least 300 ms here
    started = time.perf_counter()
    time.sleep(0.3)
    _original(self, *args, **kwargs)
    with open(CREATIONS, "a") as f:
        f.write(f"{(time.perf_counter() - started) * 1000}\\n")


def pytest_configure(config):
    httpx.Client.__init__ = _slow_init


def pytest_unconfigure(config):
    httpx.Client.__init__ = _original
"""


def test_http_entry_keeps_one_connection_and_latency_is_the_exchange(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    """One client per bound entry per session: five cases, one connection, one client made.
    Latency is the exchange alone: it covers the server's handling, and never the (here
    deliberately slow) creation of the client."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _KeptAlive)
    server.daemon_threads = True
    log: list[dict[str, Any]] = []
    _KeptAlive.log = log
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    creations = pytester.path / "creations"
    try:
        pytester.makeconftest(f"CREATIONS = {str(creations)!r}\n" + SLOW_CLIENT_CONFTEST)
        http_package(packages, f"{{url: 'http://127.0.0.1:{server.server_port}/'}}",
                     "cases:\n" + "".join(f"  - id: case-{n}\n    input: c{n}\n"
                                          f"    expect: {{route: echo}}\n" for n in range(5)))
        result = pytester.runpytest("--elizon-results=r.json")
    finally:
        server.shutdown()
        server.server_close()
    result.assert_outcomes(passed=5)
    assert [r["input"] for r in log] == [f"c{n}" for n in range(5)]
    assert len({r["port"] for r in log}) == 1, log  # keep-alive: one connection for all
    [creation_ms] = map(float, creations.read_text().split())  # one client for the session
    cases = results(pytester)
    for request in log:
        latency = cases[f"case-{request['input'][1:]}"]["latency_ms"]
        assert request["handling_ms"] <= latency < request["handling_ms"] + creation_ms, \
            (request, latency, creation_ms)


def test_output_json_is_accepted_outside_the_manifest(packages: Packages,
                                                      pytester: pytest.Pytester) -> None:
    """``output: json`` in a command mapping from the ini key, a fixture and the command line
    (``route:`` needs structured output: with text output it fails)."""
    suite = ("cases:\n  - id: routed\n    input: {route: records.query}\n"
             "    expect: {route: records.query}\n")
    spec = f"{{command: [{PY}, app.py], output: json}}"
    for folder in ("from-ini", "from-fixture"):
        packages.write(f"{folder}/elizon.yaml", "evaluation: {suite: s.yaml}\n")
        packages.write(f"{folder}/s.yaml", suite)
    packages.write("from-ini/app.py", ECHO_SCRIPT)
    # the fixture's own command: with the ini's, there is no app.py here to run
    packages.write("from-fixture/fixture_app.py", ECHO_SCRIPT)
    packages.write("from-fixture/conftest.py", f"""
        import pytest

        @pytest.fixture
        def elizon_entry():
            return {{"command": [{PY}, "fixture_app.py"], "output": "json"}}
    """)
    packages.write("alone/app.py", ECHO_SCRIPT)  # a stand-alone suite, bound by the ini key
    packages.write("alone/routed.eval.yaml", suite)
    pytester.makeini(f"[pytest]\nelizon_entry = {spec}\n")
    pytester.runpytest().assert_outcomes(passed=3)
    pytester.makeini("[pytest]\n")
    pytester.runpytest(f"--elizon-entry={spec}", "alone").assert_outcomes(passed=1)


def test_one_package_bound_three_ways(packages: Packages, pytester: pytest.Pytester,
                                      service: str) -> None:
    """The same suite passes with a callable, a command and a URL (docs/contract.md#calling)."""
    packages.write("pkg/eval/suite.yaml", """
        cases:
          - id: routes
            input: {route: records.query}
            expect: {route: records.query}
    """)
    packages.write("pkg/app.py", """
import json, sys

def handle(route):
    return {"route": route}

if __name__ == "__main__":  # the same application, as a command
    print(json.dumps(handle(**json.load(sys.stdin))))
""")
    for entry in ("app:handle", f"{{command: [{PY}, app.py]}}", f"{{url: '{service}/json'}}"):
        output = "output: json\n" if "command" in entry else ""
        packages.write("pkg/elizon.yaml", f"entry: {entry}\n{output}evaluation:\n"
                                          "  suite: ./eval/suite.yaml\n")
        pytester.runpytest().assert_outcomes(passed=1)


def test_invalid_entry_mapping(packages: Packages, pytester: pytest.Pytester) -> None:
    packages.write("pkg/elizon.yaml", "entry: {command: []}\nevaluation: {suite: s.yaml}\n")
    packages.write("pkg/s.yaml", "cases:\n  - id: a\n    input: x\n")
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(["ELIZON_MANIFEST_INVALID: pkg/elizon.yaml:1: entry.command: "
                                 "must not be empty"])
    packages.write("pkg/elizon.yaml", "evaluation: {suite: s.yaml}\n")
    result = pytester.runpytest("--elizon-entry={url: 'ftp://x'}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # checked at start-up, not per case
    result.stderr.fnmatch_lines(["ERROR: --elizon-entry={url: 'ftp://x'}: not an HTTP entry "
                                 "{url, method, headers, timeout, output}: url: *"])


def test_a_request_that_cannot_be_sent_fails_the_case_with_an_http_error(
    packages: Packages, pytester: pytest.Pytester, service: str
) -> None:
    """A header value that is not ASCII fails its case with an HttpError that says why;
    nothing escapes the entry."""
    packages.write("pkg/elizon.yaml", f"entry: {{url: '{service}/json', "
                   "headers: {X-Name: 'Zoë'}}\nevaluation:\n  suite: ./s.yaml\n")
    packages.write("pkg/s.yaml", "cases:\n  - id: header\n    input: hi\n")
    result = pytester.runpytest("--elizon-results=r.json")
    result.assert_outcomes(failed=1)
    error = results(pytester)["header"]["error"]
    assert error["type"] == "HttpError", error
    assert f"request to {service}/json cannot be sent: UnicodeEncodeError" in error["message"]


def test_every_entry_kind_has_the_key_adaptive_concurrency_adapts_per(tmp_path: Path) -> None:
    # running asks entry.limit_key of any Entry: each kind carries one.
    def app(text: str) -> str:
        return text

    made = [entry_from(app, "app:answer", tmp_path),
            entry_from(CommandEntry(command=["echo", "hi"]), "command", tmp_path),
            entry_from(UrlEntry(url="http://127.0.0.1:9/chat"), "url", tmp_path)]
    assert [e.limit_key for e in made] == ["app:answer", "command echo hi",
                                           "http://127.0.0.1:9"]
    for entry in made:
        entry.close()


def test_how_a_mapping_is_passed_is_chosen_once_per_set_of_keys() -> None:
    """A callable's binding of an input depends on its keys alone: the choice is kept by
    them, and every call still gets arguments of its own."""
    def keywords(question: str, context: str = "") -> str:
        return question + context

    def whole(payload: dict[str, Any], config: object = None) -> str:
        return str(sorted(payload))

    def either(**kwargs: Any) -> str:
        return str(sorted(kwargs))

    for fn in (keywords, whole, either):
        signature = inspect.signature(fn)
        known: dict[Any, Any] = {}
        for case_input in ({"question": "q"}, {"question": "q", "context": "c"},
                           {"question": "q", "other": 1}, {"other": 1}, {"question": "x"},
                           {1: "a key that is no keyword"}, "a string"):
            for extra in ({}, {"messages": []}):
                fresh = entries_module._arguments(signature, case_input, extra)
                args, kwargs = entries_module._arguments(signature, case_input, extra, known)
                again = entries_module._arguments(signature, case_input, extra, known)
                assert (args, kwargs) == fresh == again
                for given in (args, again[0]):  # a mapping passed whole is a copy each time
                    assert all(arg is not case_input for arg in given
                               if isinstance(case_input, dict))
                if args and isinstance(args[0], dict):
                    assert args[0] is not again[0][0]
        assert len(known) == 10  # one choice per set of keys (5 × 2; a string binds none)


# -- the plugin's own secrets and a URL's password stay out ------------------------------------

PRINT_ENVIRONMENT = "import json, os; print(json.dumps(dict(os.environ)))"


def test_a_command_entry_never_inherits_the_plugins_own_secrets(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ELIZON_ATTESTATION_SECRET", "attestation-secret-4711-abcdef")
    monkeypatch.setenv("ELIZON_SIGN_KEY", "-----BEGIN PRIVATE KEY-----\nsecret\n")
    monkeypatch.setenv("ELIZON_SOMETHING_ELSE", "kept")
    printed = entry_from(CommandEntry(command=[sys.executable, "-c", PRINT_ENVIRONMENT],
                                      output="json"), "command", tmp_path)
    call = printed.run("x", deadline=time.monotonic() + 120)
    assert call.error is None, call.error
    environment = call.value
    assert environment["ELIZON_SOMETHING_ELSE"] == "kept"  # the rest is inherited
    assert "ELIZON_ATTESTATION_SECRET" not in environment
    assert "ELIZON_SIGN_KEY" not in environment
    assert "attestation-secret-4711" not in call.text
    # the plugin's process keeps them (verify and signing read them there)
    assert os.environ["ELIZON_ATTESTATION_SECRET"] == "attestation-secret-4711-abcdef"
    # an entry's env may still pass one on purpose
    named = entry_from(CommandEntry(command=[sys.executable, "-c", PRINT_ENVIRONMENT],
                                    env={"ELIZON_SIGN_KEY": "${ELIZON_SIGN_KEY}"},
                                    output="json"), "command", tmp_path)
    given = named.run("x", deadline=time.monotonic() + 120)
    assert given.value["ELIZON_SIGN_KEY"] == "-----BEGIN PRIVATE KEY-----\nsecret\n"
    assert "ELIZON_ATTESTATION_SECRET" not in given.value


@pytest.mark.parametrize(("url", "shown"), [
    ("https://bob:hunter2@api.example/x", "https://***@api.example/x"),
    ("https://bob@api.example:8443/x?q=1", "https://***@api.example:8443/x?q=1"),
    ("http://bob:p%40ss@h/x?mail=a@b", "http://***@h/x?mail=a@b"),  # only the authority's
    ("http://b:pa#ss@h/x", "http://***@h/x"),  # a password a parser would cut at # or ?
    ("https://api.example/x?mail=a@b", "https://api.example/x?mail=a@b"),
    ("no URL at all: bob@example.org", "no URL at all: bob@example.org"),
])
def test_a_url_is_described_without_its_user_name_and_password(url: str, shown: str) -> None:
    assert without_userinfo(url) == shown
    assert HttpEntry.describe(UrlEntry(url=url)) == f"POST {shown}"
    assert EndpointJudge.describe(JudgeEndpoint(url=url, model="m")).startswith(
        f"chat-completions judge 'm' at {shown}")


def _grading_mock(request: MockRequest) -> str | dict[str, Any]:
    """The application's model and the judge's, behind one mock server."""
    if request.model == "judge-model":
        return '{"score": 1, "reasoning": "fine"}'
    return {"content": "Hello there", "model": "shop-model-2025"}


def test_a_url_s_user_name_and_password_reach_no_file_and_no_output(
        packages: Packages, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry and a judge whose URLs carry a user name and password: sent (the service
    gets them as Basic auth), never written — not in the results, the attestation, any
    other report, the history store or pytest's cache — nor shown."""
    packages.package(suite="cases:\n  - id: greets\n    input: hi\n"
                           "    expect: {contains: [Hello], judge: {rubric: polite, "
                           "threshold: 0.5}}\n", entry=None)
    monkeypatch.setenv("ELIZON_ATTESTATION_SECRET", "attestation-secret-4711-abcdef")
    with MockServer(MockModel(on_request=_grading_mock)) as server:
        authority = f"bob:hunter2@127.0.0.1:{server.port}"
        result = pytester.runpytest(
            f"--elizon-entry={{url: 'http://{authority}/v1/chat/completions', "
            "output: openai, model: shop-model}",
            f"--elizon-judge={{url: 'http://{authority}/v1', model: judge-model}}",
            "--elizon-results=r.json", "--elizon-attestation=att.jsonl",
            "--elizon-junit=j.xml", "--elizon-markdown=s.md", "--elizon-html=r.html",
            "--elizon-history=.elizon/history.sqlite", "-rA", "-v")
        result.assert_outcomes(passed=1)
        # sent: the service saw both calls with the user's credentials (recorded masked)
        assert [r.body["model"] for r in server.requests] == ["shop-model", "judge-model"]
        assert all(r.headers["authorization"] == "Basic ***" for r in server.requests)
    written = [p for p in pytester.path.rglob("*") if p.is_file()]
    names = {p.name for p in written}
    # every report, the history store, and pytest's cache with the judge's grade in it
    assert {"r.json", "att.jsonl", "j.xml", "s.md", "r.html", "history.sqlite"} <= names
    assert any(p.parent.parent.name == "grades" for p in written)
    for secret in (b"hunter2", b"bob"):
        assert [p for p in written if secret in p.read_bytes()] == []
    shown = result.stdout.str() + result.stderr.str()
    assert "hunter2" not in shown
    assert "bob" not in shown
    data = json.loads((pytester.path / "r.json").read_text())
    [case] = data["suites"][0]["cases"]
    port = server.port
    assert case["entry"] == f"POST http://***@127.0.0.1:{port}/v1/chat/completions"
    assert data["provenance"]["options"]["--elizon-judge"] == (
        f"chat-completions judge 'judge-model' at http://***@127.0.0.1:{port}/v1/chat/"
        "completions")
