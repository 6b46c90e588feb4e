"""Hostile inputs to the surfaces added since the last catalogue (issue 37's "Done when"): the
report options, the attestation, the mock server. What the other catalogues already hold
(test_attestation's tampered files, test_dataset_hash's malformed hashes and files,
test_mock's bad scripts, test_interpreter_left_alone's limits) is not repeated here.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from pytest_elizon_eval.mock import MockModel, MockServer
from pytest_elizon_eval.trust import signing

from .conftest import Packages

SUITE = "cases:\n  - id: a\n    input: hi\n    expect: {contains: [hi]}\n"
APP = "def answer(text):\n    return text\n"
SECRET = "a-long-enough-attestation-secret"


@pytest.fixture
def package(packages: Packages, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ELIZON_ATTESTATION_SECRET", SECRET)
    return packages.package(app=APP, suite=SUITE)


@pytest.mark.parametrize(("args", "first", "second"), [
    (["--elizon-results=r.json", "--elizon-attestation=r.json"],
     "--elizon-results", "--elizon-attestation"),
    (["--elizon-results=out/r.json", "--elizon-junit=out/../out/r.json"],
     "--elizon-junit", "--elizon-results"),
    (["--elizon-markdown=s.md", "--elizon-html=s.md"], "--elizon-markdown", "--elizon-html"),
    (["--elizon-record=c.json", "--elizon-results=c.json"], "--elizon-results", "--elizon-record"),
    (["--elizon-history=h.db", "--elizon-junit=h.db"], "--elizon-junit", "--elizon-history"),
])
def test_two_reports_naming_one_file_is_a_usage_error_before_any_case_runs(
        package: Path, pytester: pytest.Pytester, args: list[str], first: str,
        second: str) -> None:
    """The second writer would replace the first without a word (a results file overwritten
    by its own attestation was then 'valid' to nobody)."""
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {first} and {second} both name *: each report "
                                 "needs a file of its own"])
    assert "passed" not in result.stdout.str().lower()
    assert not list(pytester.path.rglob("*.json"))  # nothing was written


def test_a_report_over_the_results_signature_is_refused_too(
        package: Path, pytester: pytest.Pytester) -> None:
    signing.generate(pytester.path / "keys")
    result = pytester.runpytest("--elizon-results=r.json", "--elizon-html=r.json.sig",
                                f"--elizon-sign-key={pytester.path / 'keys' / signing.KEY_FILE}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --elizon-html and the results' signature both name "
                                 "*r.json.sig: each report needs a file of its own"])


def test_distinct_reports_and_a_url_store_are_accepted(
        package: Path, pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--elizon-results=r.json", "--elizon-junit=r.xml",
                                "--elizon-attestation=r.attestation.jsonl",
                                "--elizon-markdown=r.md", "--elizon-html=r.html")
    assert result.ret == pytest.ExitCode.OK
    assert json.loads((pytester.path / "r.json").read_text())["verdict"]
    assert (pytester.path / "r.attestation.jsonl").read_text().count("\n") == 3


def test_an_attestation_that_cannot_be_written_fails_the_run_as_a_results_file_does(
        package: Path, pytester: pytest.Pytester) -> None:
    (pytester.path / "taken").mkdir()
    result = pytester.runpytest("--elizon-attestation=taken", "--elizon-results=r.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["elizon: cannot write the attestation *taken: Is a directory"])
    (suite,) = json.loads((pytester.path / "r.json").read_text())["suites"]  # the rest written
    assert [c["id"] for c in suite["cases"]] == ["a"]


@pytest.mark.parametrize("constant", [b"NaN", b"Infinity", b"-Infinity"])
def test_the_mock_server_answers_400_to_a_body_that_is_not_json(constant: bytes) -> None:
    """NaN is not JSON: the real APIs refuse such a body, so the mock does too, and a client
    that sends one fails in its tests as it would in production."""
    body = b'{"model": "m", "temperature": ' + constant + \
        b', "messages": [{"role": "user", "content": "hi"}]}'
    model = MockModel(default="fine")
    with MockServer(model) as server, httpx.Client() as http:
        answered = http.post(f"{server.url}/chat/completions", content=body,
                             headers={"content-type": "application/json"})
        fine = http.post(f"{server.url}/chat/completions", json={
            "model": "m", "messages": [{"role": "user", "content": "hi"}]})
    assert answered.status_code == 400
    assert answered.json()["error"]["message"].startswith("the request body is not JSON")
    assert fine.status_code == 200  # the server goes on serving
    assert model.call_count == 1  # the model never saw the refused request
