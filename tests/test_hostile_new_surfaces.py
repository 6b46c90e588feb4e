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
    # pytest's own JUnit report is a writer too
    (["--elizon-junit=x.xml", "--junitxml=x.xml"], "--elizon-junit", "--junitxml"),
    (["--junitxml=out/../x.xml", "--elizon-markdown=x.xml"], "--elizon-markdown", "--junitxml"),
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
    # a store URL is no file: never "both name" a report, however its path reads; its
    # closed port is one warning, and the run and its reports go on without it
    result = pytester.runpytest("--elizon-results=r.json", "--elizon-junit=r.xml",
                                "--elizon-attestation=r.attestation.jsonl",
                                "--elizon-markdown=r.md", "--elizon-html=r.html",
                                "--junitxml=pytest.xml",
                                "--elizon-history=postgresql://u:p@127.0.0.1:1/db")
    assert result.ret == pytest.ExitCode.OK
    said = result.stdout.str() + result.stderr.str()
    assert "both name" not in said
    assert said.count("WARNING: cannot connect to the history store postgresql://***@127.0.0.1:1"
                      "/db") == 1  # its login masked
    assert json.loads((pytester.path / "r.json").read_text())["verdict"]
    assert (pytester.path / "r.attestation.jsonl").read_text().count("\n") == 3
    assert (pytester.path / "pytest.xml").is_file()


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


def test_power_help_and_the_diff_docs_say_what_the_code_does(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The help names the tests power_lines prints and --elizon-baseline runs (McNemar's exact
    test, the paired t-test), not the normal approximation they replaced; docs/cli.md says
    --fail-on-regression fails on a must-pass case not run, as cli._diff does."""
    from pytest_elizon_eval import cli

    with pytest.raises(SystemExit):
        cli.main(["power", "--help"])
    said = " ".join(capsys.readouterr().out.split())
    assert "McNemar's exact test" in said
    assert "paired t-test on per-case pass rates" in said
    assert "normal approximation" not in said
    assert "Fleiss" not in said
    docs = " ".join((Path(__file__).parents[1] / "docs" / "cli.md").read_text("utf-8").split())
    diff = docs[docs.index("## diff"):docs.index("## power")]
    assert "regressed or was not run (an error now) in a must-pass suite: that run failed " \
           "on it" in diff
