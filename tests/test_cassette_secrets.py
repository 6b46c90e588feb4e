"""Cassettes safe to commit (issue 26): a declared secret is never written into a cassette,
through any entry kind; replay puts it back so its leak is still caught; an old cassette
that holds one is reported."""

from __future__ import annotations

import http.server
import json
from collections.abc import Iterator

import pytest

from pytest_elizon_eval.run import cassette_secrets
from pytest_elizon_eval.run.calls import EntryCall

from .conftest import Packages, loopback

MANIFEST_SECRET = "PLANTED-SECRET-42"
FIXTURE_SECRET = "FIXTURE-SECRET-99"
APP = f"""
from pytest_elizon_eval import Answer, ToolCall

class Message:
    \"\"\"An Anthropic Message as the SDK returns it (read by its shape): the secret in a
    tool call's id and as a key of its input.\"\"\"
    model_fields = {{}}

    def model_dump(self, **options):
        return {{"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                "stop_reason": "tool_use", "stop_sequence": None,
                "content": [{{"type": "text", "text": "checking"}},
                            {{"type": "tool_use", "id": "toolu_{FIXTURE_SECRET}",
                              "name": "vault", "input": {{"{FIXTURE_SECRET}": 1}}}}],
                "usage": {{"input_tokens": 3, "output_tokens": 2}}}}

def leaky(text, messages=None):
    if text == "hello":
        return "hi"
    if text == "and the code?":
        return Message()
    # both secrets: in the text, a tool call's id, arguments (as a key too) and result, and
    # the passages
    return Answer(text=f"the code is {MANIFEST_SECRET.lower()}",
                  tool_calls=[ToolCall("lookup", {{"key": "{FIXTURE_SECRET}",
                                                   "{MANIFEST_SECRET}": ["x"]}},
                                       result={{"found": "{MANIFEST_SECRET}"}},
                                       id="call_{FIXTURE_SECRET}")],
                  contexts=["passage: {FIXTURE_SECRET}"])
"""
COMMAND = f"""
import sys
sys.stdin.read()
print("the code is {MANIFEST_SECRET} and {FIXTURE_SECRET}")
"""
CONFTEST = f"""
import pytest

@pytest.fixture(scope="session")
def elizon_secrets():
    return ["{FIXTURE_SECRET}"]
"""
SUITE = """
cases:
  - id: single
    input: what is the code?
  - id: talk
    turns:
      - input: hello
      - input: and the code?
"""


class _Leaky(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        text = f"code: {MANIFEST_SECRET} / {FIXTURE_SECRET}".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def service() -> Iterator[str]:
    with loopback(_Leaky) as base:
        yield base


@pytest.fixture
def three(packages: Packages, service: str) -> Packages:
    """One package per entry kind, each planting the manifest's secret."""
    packages.write("conftest.py", CONFTEST)
    for name, entry in (("callable", "app:leaky"), ("command", "{command: [python, cmd.py]}"),
                        ("http", f"{{url: '{service}/'}}")):
        packages.write(f"{name}/elizon.yaml", f"name: {name}\nentry: {entry}\n"
                       f"secrets: [{MANIFEST_SECRET}]\nevaluation:\n  suite: ./s.yaml\n")
        packages.write(f"{name}/s.yaml", SUITE)
        packages.write(f"{name}/app.py", APP)
        packages.write(f"{name}/cmd.py", COMMAND)
    return packages


def test_scrub_and_restore_directly() -> None:
    recording = {"suite": "p:s.yaml", "case": "c", "runs": [
        {"text": "A planted-secret-42 B", "output": {"k": ["PLANTED-SECRET-42x"]}},
        {"turns": [{"text": "FIXTURE-SECRET-99", "value": {"fixture-secret-99": 1}}]}]}
    secrets = (MANIFEST_SECRET, FIXTURE_SECRET)
    scrubbed = cassette_secrets.scrub(recording, secrets)
    text = json.dumps(scrubbed)
    assert "SECRET-42" not in text.upper()
    assert "SECRET-99" not in text.upper()
    assert scrubbed["runs"][0]["text"] == "A «elizon-secret:1» B"
    assert scrubbed["runs"][1]["turns"][0] == {"text": "«elizon-secret:2»",
                                               "value": {"«elizon-secret:2»": 1}}
    replay = ((EntryCall.from_data({"text": "x «elizon-secret:2» «elizon-secret:7»"}),),)
    restored = cassette_secrets.restore(replay, secrets)
    assert restored[0][0].text == f"x {FIXTURE_SECRET} «elizon-secret:7»"
    assert restored[0][0].replayed
    assert not cassette_secrets.holds_secret(replay, secrets)
    assert cassette_secrets.holds_secret(restored, secrets)
    # one text (a snapshot's output) in the same form
    assert cassette_secrets.scrub_text("Planted-Secret-42!", secrets) == "«elizon-secret:1»!"
    assert cassette_secrets.text_holds_secret("x fixture-secret-99", secrets)
    assert not cassette_secrets.text_holds_secret("x «elizon-secret:2»", secrets)


def test_recording_through_every_entry_kind_keeps_no_secret_and_replay_still_catches_it(
        three: Packages, pytester: pytest.Pytester) -> None:
    cassette = pytester.path / "cassette.json"
    recorded = pytester.runpytest("callable", "command", "http", "-p", "no:cacheprovider",
                                  f"--elizon-record={cassette}")
    assert recorded.parseoutcomes() == {"failed": 6}  # each case leaks a secret
    text = cassette.read_text()
    for secret in (MANIFEST_SECRET, FIXTURE_SECRET):
        assert secret.casefold() not in text.casefold()
    data = json.loads(text)
    assert set(data["cases"]) == {f"{p}:s.yaml::{c}" for p in ("callable", "command", "http")
                                  for c in ("single", "talk")}
    def entry(key: str) -> str:
        return json.dumps(data["cases"][key], ensure_ascii=False)

    assert "«elizon-secret:1»" in entry("command:s.yaml::single")
    # an SDK answer's tool call, and an Answer's tool call (id, arguments, result) and passages
    assert json.loads(entry("callable:s.yaml::talk"))["runs"][0]["turns"][1]["tool_calls"] == [
        {"name": "vault", "arguments": {"«elizon-secret:2»": 1}, "result": None,
         "error": None, "id": "toolu_«elizon-secret:2»"}]
    single = json.loads(entry("callable:s.yaml::single"))["runs"][0]
    assert single["tool_calls"] == [
        {"name": "lookup", "arguments": {"key": "«elizon-secret:2»", "«elizon-secret:1»": ["x"]},
         "result": {"found": "«elizon-secret:1»"}, "error": None,
         "id": "call_«elizon-secret:2»"}]
    assert single["contexts"] == ["passage: «elizon-secret:2»"]
    assert "«elizon-secret:2»" in entry("http:s.yaml::talk")
    replayed = pytester.runpytest("callable", "command", "http", "-p", "no:cacheprovider",
                                  f"--elizon-replay={cassette}", "-rf")
    assert replayed.parseoutcomes() == {"failed": 6}
    replayed.stdout.fnmatch_lines(["FAILED callable/s.yaml::talk - ✗ secrets: leaked: FI…99 at "
                                   "turn 2",
                                   "FAILED command/s.yaml::single - ✗ secrets: leaked: PL…42, "
                                   "FI…99"], consecutive=False)
    assert "cassette holds" not in replayed.stdout.str()


def test_an_old_cassette_with_a_secret_in_plain_text_is_reported(
        three: Packages, pytester: pytest.Pytester) -> None:
    cassette = pytester.path / "cassette.json"
    pytester.runpytest("command", "-p", "no:cacheprovider", f"--elizon-record={cassette}")
    old = cassette.read_text().replace("«elizon-secret:1»", MANIFEST_SECRET)
    cassette.write_text(old)  # as a cassette recorded before this change holds it
    replayed = pytester.runpytest("command", "-p", "no:cacheprovider", "-k", "single",
                                  f"--elizon-replay={cassette}")
    assert replayed.parseoutcomes() == {"failed": 1, "deselected": 1}
    replayed.stdout.fnmatch_lines([
        "  ✗ cassette", "      expected: the cassette holds no declared secret",
        "      found:    the recording holds a declared secret in plain text (recorded before "
        "secrets were kept out of cassettes): record this case again with --elizon-record"])
    assert MANIFEST_SECRET not in replayed.stdout.str()
