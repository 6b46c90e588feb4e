"""SPEC §3/§5: process and HTTP entry points, against real processes and a loopback server."""

from __future__ import annotations

import http.server
import json
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import Packages

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


def results(pytester: pytest.Pytester) -> dict[str, dict[str, Any]]:
    data = json.loads((pytester.path / "r.json").read_text())
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


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_a_grandchild_holding_stdout_does_not_keep_pytest_waiting(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    pid_file = pytester.path / "grandchild.pid"
    process_package(packages, f"""
import os, subprocess, sys
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
open({str(pid_file)!r}, "w").write(str(child.pid))
print("answered")
""", "cases:\n  - id: leaves-a-sleeper\n    input: x\n    expect: {contains: [answered]}\n")
    started = time.monotonic()
    result = pytester.runpytest_subprocess(timeout=60)
    assert time.monotonic() - started < 30
    result.assert_outcomes(passed=1)
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while not _gone(grandchild) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _gone(grandchild), "the grandchild was left running"


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_at_the_deadline_the_whole_group_is_killed_even_if_it_ignores_sigterm(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    pid_file = pytester.path / "pids"
    process_package(packages, f"""
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(3600)"])
open({str(pid_file)!r}, "w").write(f"{{os.getpid()}} {{child.pid}}")
time.sleep(3600)
""", "cases:\n  - id: hangs\n    input: x\n  - id: later\n    input: x\n")
    started = time.monotonic()
    result = pytester.runpytest_subprocess("--elizon-timeout=1", timeout=60)
    assert time.monotonic() - started < 30
    assert result.parseoutcomes() == {"timeout": 2}
    for pid in map(int, pid_file.read_text().split()):
        assert _gone(pid)


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


class _Service(http.server.BaseHTTPRequestHandler):
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
        elif path == "/slow":
            time.sleep(5)
            self._send(200, "late", "text/plain")
        elif path == "/drip":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            for _ in range(200):
                try:
                    self.wfile.write(b"x")
                    self.wfile.flush()
                except OSError:
                    return
                time.sleep(0.05)
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


@pytest.fixture
def service() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Service)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
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


@pytest.mark.parametrize(
    ("path", "args", "outcome", "message"),
    [
        ("/fail", [], "failed", "*HttpError: HTTP 500 from http://127.0.0.1:*/fail: 'upstream "
                                "model overloaded xxx*"),
        ("/badjson", [], "failed", "*HttpError: the JSON reply from * is malformed*"),
        ("/slow", ["--elizon-timeout=1"], "timeout", None),
        ("/drip", ["--elizon-timeout=1"], "timeout", None),
        ("/endless", [], "failed", "*HttpError: the response body from * is larger than "
                                   "8,388,608 bytes"),
    ],
)
def test_http_entry_failures(
    packages: Packages, pytester: pytest.Pytester, service: str,
    path: str, args: list[str], outcome: str, message: str | None,
) -> None:
    http_package(packages, f"{{url: '{service}{path}'}}", "cases:\n  - id: a\n    input: x\n")
    started = time.monotonic()
    result = pytester.runpytest(*args)
    assert time.monotonic() - started < 20
    assert result.parseoutcomes() == {outcome: 1}
    if message:
        result.stdout.fnmatch_lines([message])


def test_http_entry_timeout_and_refused_connection(
    packages: Packages, pytester: pytest.Pytester, service: str
) -> None:
    http_package(packages, f"{{url: '{service}/slow', timeout: 0.5}}",
                 "cases:\n  - id: a\n    input: x\n")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*HttpTimeout: no answer from * within the entry's timeout "
                                 "of 0.5 s"])
    http_package(packages, "{url: 'http://127.0.0.1:9/'}", "cases:\n  - id: a\n    input: x\n")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*HttpError: cannot reach http://127.0.0.1:9/: ConnectError*"])


def test_one_package_bound_three_ways(packages: Packages, pytester: pytest.Pytester,
                                      service: str) -> None:
    """The same suite passes with a callable, a command and a URL (README's example)."""
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
    result.stdout.fnmatch_lines(["ELIZON_ENTRY_INVALID: \"{url: 'ftp://x'}\" (--elizon-entry): "
                                 "not an HTTP entry {url, method, headers, timeout}: url: *"])
