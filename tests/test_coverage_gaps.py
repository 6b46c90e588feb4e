"""Direct unit tests for error paths and rarely taken branches, module by module."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml

from pytest_elizon_eval.load.packages import load_manifest
from pytest_elizon_eval.run import answers
from pytest_elizon_eval.run.calls import Answer, OutputError, ToolCall
from pytest_elizon_eval.run.concurrency import CaseScheduler
from pytest_elizon_eval.trust import provenance, signing

# -- provenance -------------------------------------------------------------------------


def test_command_options_describes_entries_and_judges_without_secrets() -> None:
    out = provenance.command_options({
        "elizon_entry": "{command: [python, app.py], env: {TOKEN: secret}}",
        "elizon_judge": "{url: 'https://judge.example/v1', model: grader, apiKeyEnv: KEY}",
        "elizon_report": "out.html",
        "elizon_replay": True,
        "elizon_record": False,
        "elizon_mode": "auto",
        "elizon_timeout": None,
        "other_option": "ignored",
    })
    assert out == {
        "--elizon-entry": "command python app.py",
        # as the judge describes itself everywhere else
        "--elizon-judge": "chat-completions judge 'grader' at "
                          "https://judge.example/v1/chat/completions",
        "--elizon-replay": True,
        "--elizon-report": "out.html",
    }
    assert "secret" not in json.dumps(out)


def test_command_options_describes_url_entries_specs_and_invalid_text() -> None:
    url = provenance.command_options(
        {"elizon_entry": "{url: 'http://localhost:8000/chat', method: PUT, "
                         "headers: {Authorization: Bearer-xyz}}"})
    assert url == {"--elizon-entry": "PUT http://localhost:8000/chat"}
    spec = provenance.command_options({"elizon_entry": "app:answer"})
    assert spec == {"--elizon-entry": "app:answer"}
    bad = provenance.command_options({"elizon_entry": "{command: []}"})
    assert bad == {"--elizon-entry": "(not a valid spec)"}
    assert provenance.command_options({"elizon_judge": "{url: ftp://x}"}) == {
        "--elizon-judge": "(not a valid spec)"}


def test_record_carries_versions_options_and_packages() -> None:
    rec = provenance.record(started="a", finished="b", pytest_version="8.0",
                            options={"--elizon-replay": True},
                            package_records=[{"name": "pkg"}])
    assert rec["started"] == "a"
    assert rec["finished"] == "b"
    assert rec["pytest"] == "8.0"
    assert rec["options"] == {"--elizon-replay": True}
    assert rec["packages"] == [{"name": "pkg"}]
    assert isinstance(rec["plugin"], str)
    assert rec["plugin"]


def _package(suites: list[str], entries: list[str], *, sha: str = "s1", version: str = "1",
             commit: str | None = "c1", dirty: bool = False,
             manifest: str | None = "pkg/elizon.yaml") -> dict:
    return {"name": "pkg", "version": version, "manifest": manifest, "manifest_sha256": sha,
            "entries": entries, "suites": suites,
            "git": None if commit is None else {"commit": commit, "dirty": dirty}}


def _prov(started: str, finished: str, packages: list[dict], options: dict) -> dict:
    return {"started": started, "finished": finished, "plugin": "1.0", "pytest": "8.0",
            "python": "3.12", "options": options, "packages": packages}


def test_merge_joins_shards_of_one_package() -> None:
    one = _prov("2024-01-01T00:00:02", "2024-01-01T00:00:05",
                [_package(["pkg/b.yaml"], ["e2"])],
                {"--elizon-replay": True, "--elizon-report": "a.html"})
    two = _prov("2024-01-01T00:00:01", "2024-01-01T00:00:09",
                [_package(["pkg/a.yaml"], ["e1", "e2"], dirty=True)],
                {"--elizon-replay": True, "--elizon-report": "b.html"})
    merged = provenance.merge([("one.json", "h1", one), ("two.json", "h2", two),
                               ("old.json", "h3", None)])
    assert merged["started"] == "2024-01-01T00:00:01"
    assert merged["finished"] == "2024-01-01T00:00:09"
    assert merged["plugin"] == "1.0"
    assert merged["python"] == "3.12"
    assert merged["options"] == {"--elizon-replay": True}
    [package] = merged["packages"]
    assert package["suites"] == ["pkg/a.yaml", "pkg/b.yaml"]
    assert package["entries"] == ["e1", "e2"]
    assert package["git"] == {"commit": "c1", "dirty": True}
    assert [m["file"] for m in merged["merged_from"]] == ["one.json", "two.json", "old.json"]
    assert merged["merged_from"][2] == {"file": "old.json", "document_sha256": "h3",
                                        "started": None, "finished": None, "options": {}}


def test_merge_keeps_git_when_one_shard_has_none_and_keys_manifestless_packages() -> None:
    one = _prov("s", "f", [_package(["x.yaml"], [], manifest=None, commit=None)], {})
    two = _prov("s", "f", [_package(["x.yaml"], ["e"], manifest=None)], {})
    merged = provenance.merge([("1", "h", one), ("2", "h", two)])
    [package] = merged["packages"]
    assert package["git"] is None
    assert package["entries"] == ["e"]


def test_merge_of_nothing_known_is_unknown() -> None:
    merged = provenance.merge([("a.json", "h", None)])
    assert merged["plugin"] == "unknown"
    assert merged["packages"] == []
    assert merged["options"] == {}


@pytest.mark.parametrize(("change", "message"), [
    ({"sha": "s2"}, "its manifest SHA-256 differs between one.json and two.json"),
    ({"version": "2"}, "its version differs"),
    ({"commit": "c2"}, "git commit c1 in one.json, c2 in two.json"),
])
def test_merge_refuses_shards_of_different_packages(change: dict, message: str) -> None:
    one = _prov("s", "f", [_package(["a.yaml"], [])], {})
    two = _prov("s", "f", [_package(["b.yaml"], [], **change)], {})
    with pytest.raises(ValueError, match="shards ran different") as info:
        provenance.merge([("one.json", "h", one), ("two.json", "h", two)])
    assert message in str(info.value)


def test_git_state_outside_a_work_tree_and_with_no_git(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    def no_git(*args: object, **kwargs: object) -> object:
        raise OSError("no git")

    monkeypatch.setattr(provenance.subprocess, "run", no_git)
    assert provenance.git_state(tmp_path) is None


def test_manifest_hash_and_version_and_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "elizon.yaml"
    path.write_text('name: p\nversion: "3"\n')
    sha = provenance._manifest_sha256(path)
    assert sha == hashlib.sha256(path.read_bytes()).hexdigest()
    # the version a results file names is the one validated when the package was collected
    assert load_manifest(path, "elizon.yaml").version == "3"
    path.write_text("version: [unclosed\n")
    assert provenance._manifest_sha256(path) not in (None, sha)
    assert provenance._manifest_sha256(tmp_path / "missing.yaml") is None


# -- concurrency ------------------------------------------------------------------------


def test_scheduler_take_of_an_unknown_key_and_start_after_stop() -> None:
    scheduler = CaseScheduler(1)
    assert scheduler.take("never") is None
    scheduler.stop()
    scheduler.start("late", lambda: 1)
    assert not scheduler.started("late")
    assert scheduler.take("late") is None


def test_scheduler_starts_a_key_once_and_delivers_exceptions() -> None:
    scheduler = CaseScheduler(2)

    def boom() -> object:
        raise RuntimeError("broken case")

    scheduler.start("k", boom)
    scheduler.start("k", lambda: "second")  # already started: ignored
    future = scheduler.take("k")
    assert future is not None
    with pytest.raises(RuntimeError, match="broken case"):
        future.result(timeout=5)


def test_scheduler_run_of_a_stopped_scheduler_does_not_run_work() -> None:
    from concurrent.futures import Future

    scheduler = CaseScheduler(1)
    scheduler.stop()
    future: Future[object] = Future()
    ran: list[int] = []
    scheduler._run("k", future, lambda: ran.append(1))
    assert ran == []
    assert not future.done()


# -- signing ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("keys")
    private, public, _ = signing.generate(folder)
    return private, public


def test_signing_key_repr_names_the_source_and_fingerprint(keys: tuple[Path, Path]) -> None:
    key = signing.SigningKey.from_file(keys[0], "KEY_FILE")
    text = repr(key)
    assert text.startswith("SigningKey(KEY_FILE, sha256:")
    assert "PRIVATE" not in text


def test_signing_key_from_one_line_pem_with_literal_newlines(keys: tuple[Path, Path]) -> None:
    pem = keys[0].read_bytes().strip().replace(b"\n", b"\\n")
    key = signing.SigningKey.from_pem(pem, "ELIZON_KEY")
    assert key.fingerprint == signing.SigningKey.from_file(keys[0], "f").fingerprint


def test_signing_key_rejects_non_keys(tmp_path: Path, keys: tuple[Path, Path]) -> None:
    with pytest.raises(ValueError, match="SRC: not a PEM private key"):
        signing.SigningKey.from_pem(b"hello", "SRC")
    broken = b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
    with pytest.raises(ValueError, match="SRC: the PEM block is not a private key"):
        signing.SigningKey.from_pem(broken, "SRC")
    with pytest.raises(ValueError, match="SRC: cannot read the key file"):
        signing.SigningKey.from_file(tmp_path / "absent.key", "SRC")
    big = tmp_path / "big.key"
    big.write_bytes(b"x" * (signing.MAX_KEY_BYTES + 1))
    with pytest.raises(ValueError, match="larger than"):
        signing.SigningKey.from_file(big, "SRC")


def test_signing_key_rejects_encrypted_and_non_ed25519_keys() -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519

    encrypted = ed25519.Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"pw"))
    with pytest.raises(ValueError, match="SRC: the private key is encrypted"):
        signing.SigningKey.from_pem(encrypted, "SRC")
    ec_key = ec.generate_private_key(ec.SECP256R1())
    ec_pem = ec_key.private_bytes(serialization.Encoding.PEM,
                                  serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption())
    with pytest.raises(ValueError, match="not an Ed25519 key"):
        signing.SigningKey.from_pem(ec_pem, "SRC")


def test_load_public_key_error_paths(tmp_path: Path, keys: tuple[Path, Path]) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    with pytest.raises(ValueError, match="PUB: this is a private key"):
        signing.load_public_key(keys[0], "PUB")
    text = tmp_path / "text.pub"
    text.write_text("not a key\n")
    with pytest.raises(ValueError, match="PUB: not a PEM public key"):
        signing.load_public_key(text, "PUB")
    ec_pub = tmp_path / "ec.pub"
    ec_pub.write_bytes(ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    with pytest.raises(ValueError, match="PUB: not an Ed25519 public key"):
        signing.load_public_key(ec_pub, "PUB")
    assert signing.fingerprint(signing.load_public_key(keys[1], "PUB")).startswith("sha256:")


def test_generate_never_overwrites(keys: tuple[Path, Path]) -> None:
    with pytest.raises(FileExistsError):
        signing.generate(keys[0].parent)


def test_verify_reports_each_reason(keys: tuple[Path, Path]) -> None:
    key = signing.SigningKey.from_file(keys[0], "k")
    public = signing.load_public_key(keys[1], "p")
    doc = {"results": [1, 2], "name": "x"}
    good = key.sign(doc)
    assert signing.verify(doc, good, public) == key.fingerprint
    cases = [
        ([], "is not a pytest-elizon-eval/signature/v1 file"),
        ({**good, "algorithm": "rsa"}, "unsupported algorithm 'rsa'"),
        ({**good, "canonicalization": "c14n"}, "unsupported canonicalization 'c14n'"),
        ({**good, "document_sha256": "0" * 64}, "the signature is for another document"),
        ({**good, "public_key_fingerprint": "sha256:00"}, "signed with another key"),
        ({**good, "signature": "!!not base64!!"}, "not a base64 Ed25519 signature"),
        ({**good, "signature": 5}, "not a base64 Ed25519 signature"),
        ({**good, "signature": "AAAA"}, "not a base64 Ed25519 signature"),
        ({**good, "signature": "A" * 86 + "=="}, "does not match the document and the key"),
    ]
    for signature, reason in cases:
        with pytest.raises(signing.SignatureInvalid) as info:
            signing.verify(doc, signature, public)
        assert reason in str(info.value)
    sig_text = signing.signature_text(json.dumps(doc), key)
    assert signing.verify(doc, json.loads(sig_text), public) == key.fingerprint


# -- answers ----------------------------------------------------------------------------


@pytest.mark.parametrize(("usage", "message"), [
    ({"input_tokens": -1}, "usage input_tokens is -1"),
    ({"output_tokens": True}, "usage output_tokens is True"),
    ({"input_tokens": 1.5}, "usage input_tokens is 1.5"),
    ({"cost_usd": "cheap"}, "usage cost_usd is 'cheap'"),
    ({"cost_usd": -0.1}, "usage cost_usd is -0.1"),
    (["not", "usage"], "usage is a list, not a Usage"),
])
def test_answer_with_bad_usage_is_an_output_error(usage: object, message: str) -> None:
    with pytest.raises(OutputError, match=message.replace(".", r"\.")):
        answers.from_return(Answer(text="hi", usage=usage))  # type: ignore[arg-type]


def test_answer_usage_model_becomes_text_and_costs_float() -> None:
    call = answers.from_return(Answer(text="hi", usage={"input_tokens": 3, "output_tokens": 4,
                                                        "cost_usd": 1, "model": 7}))
    assert call.usage is not None
    assert call.usage.model == "7"
    assert call.usage.cost_usd == 1.0
    assert isinstance(call.usage.cost_usd, float)


def test_answer_with_non_text_text_and_bad_tool_calls() -> None:
    with pytest.raises(OutputError, match=r"Answer\.text is a int, not a string"):
        answers.from_return(Answer(text=5))  # type: ignore[arg-type]
    with pytest.raises(OutputError, match="tool call 0 has no 'name' string"):
        answers.from_return(Answer(text="x", tool_calls=[{"arguments": {}}]))
    with pytest.raises(OutputError, match="tool call 1 is a str, not a ToolCall"):
        answers.from_return(Answer(text="x", tool_calls=[{"name": "a"}, "b"]))
    with pytest.raises(OutputError, match=r"tool call 0 \(search\) has arguments"):
        answers.from_return(Answer(text="x", tool_calls=[ToolCall("search", {1, 2})]))


def test_tool_call_results_that_are_not_json_are_kept_as_text() -> None:
    call = answers.from_return(Answer(text="x", tool_calls=[
        ToolCall("clock", {}, result=object, error=ValueError("late"))]))
    [tool] = call.tool_calls
    assert tool.result == repr(object)
    assert tool.error == "late"


@pytest.mark.parametrize(("reply", "message"), [
    ("[1, 2]", "the answer envelope is a list, not an object"),
    ('{"text": "a", "extra": 1}', "unknown keys \\['extra'\\]"),
    ('{"text": "a", "tool_calls": {"name": "x"}}', "tool_calls is not a list"),
    ('{"tool_calls": []}', "the answer envelope: an Answer needs a text or a value"),
    ("{not json", "the answer envelope is not JSON"),
])
def test_bad_answer_envelopes(reply: str, message: str) -> None:
    with pytest.raises(OutputError, match=message):
        answers.from_reply(reply, "answer")


@pytest.mark.parametrize(("reply", "message"), [
    ("[]", "not a chat completion: no choices\\[0\\].message"),
    ('{"choices": [{"message": "hi"}]}', "not a chat completion"),
    ('{"choices": [{"message": {"content": [1]}}]}', "content is a list, not text"),
    ('{"choices": [{"message": {"content": "a", "tool_calls": ["x"]}}]}',
     "tool_calls\\[0\\] has no function.name"),
    ('{"choices": [{"message": {"content": "a", "tool_calls": [{"function": {}}]}}]}',
     "tool_calls\\[0\\] has no function.name"),
])
def test_bad_chat_completions(reply: str, message: str) -> None:
    with pytest.raises(OutputError, match=message):
        answers.from_reply(reply, "openai")


def test_chat_completion_tool_arguments_that_are_not_json_stay_text() -> None:
    reply = {"choices": [{"message": {"content": None, "tool_calls": [
        {"function": {"name": "a", "arguments": "{broken"}},
        {"function": {"name": "b", "arguments": {"q": 1}}}]}}],
        "usage": "not a mapping"}
    call = answers.from_reply(json.dumps(reply), "openai")
    assert [(t.name, t.arguments) for t in call.tool_calls] == [("a", "{broken"),
                                                                ("b", {"q": 1})]
    assert call.text == ""
    assert call.usage is None


def test_chat_request_without_a_model() -> None:
    assert answers.chat_request([{"role": "user", "content": "q"}], None) == {
        "messages": [{"role": "user", "content": "q"}]}


def test_prefetch_with_stop_stops_the_scheduler() -> None:
    from pytest_elizon_eval.run.concurrency import prefetch

    class Item:
        nodeid = "t::a"

        def background_work(self) -> object:
            return lambda: 1

    scheduler = CaseScheduler(1)
    prefetch(scheduler, [Item()], stop=True)
    assert not scheduler.started("t::a")
    scheduler.start("t::b", lambda: 2)
    assert scheduler.take("t::b") is None


# -- promptfoo --------------------------------------------------------------------------

UNUSUAL = """
defaultTest: file://default.yaml
tests:
  - description: Odd forms
    vars: {doc: "file://doc.txt", items: [a, b]}
    metadata: {owner: me}
    assert:
      - just text
      - {type: contains, value: 5}
      - {type: equals, value: {a: 1}}
      - {type: equals, value: one}
      - {type: equals, value: two}
      - {type: is-json, value: "file://schema.json"}
      - {type: latency}
      - {type: llm-rubric, value: "  "}
      - {type: llm-rubric, value: polite, threshold: 2}
      - {type: python, value: "output == 1"}
      - {type: python, value: "file://check.py:not-a-name"}
      - {type: python, value: "file://check.py:grade", threshold: 0.7}
      - {type: python, value: "file://check.py"}
      - {type: contains, value: hi, transform: output.trim()}
      - {type: similar, value: x}
  - file://more.yaml
  - file://more.json
  - file://rows*.csv
"""


def _write(folder: Path, files: dict[str, str | bytes]) -> Path:
    for name, text in files.items():
        path = folder / name
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)
    return folder / "promptfooconfig.yaml"


def test_promptfoo_unusual_assertion_forms_become_notes(tmp_path: Path) -> None:
    from pytest_elizon_eval.importers.promptfoo import convert

    config = _write(tmp_path, {
        "promptfooconfig.yaml": UNUSUAL,
        "default.yaml": "vars: {tone: calm}\n",
        "check.py": "def get_assert(output, context):\n    return True\n",
        "more.yaml": "- vars: {q: yes-or-no}\n  assert: [{type: icontains, value: ok}]\n",
        "more.json": '{"vars": {"q": "json"}}',
        "rows1.csv": "q,__expected,__expected2,__metric\n"
                     "a,is-json,,m1\n,,,\nb,\"contains-any: x, y\",,\n",
        "rows2.csv": "",
    })
    conversion = convert(config, tmp_path / "out")
    notes = "\n".join(conversion.unconverted)
    for expected in [
        "var doc = 'file://doc.txt': promptfoo reads the file",
        "var items is a list",
        "test key metadata",
        "assertion 'just text': not a mapping with a 'type'",
        "contains 5: value is not text or a list of texts",
        "equals {\"a\": 1}: value is not text",
        "equals 'two': a second equals ('two') besides 'one'",
        "a schema given as a file or text is not converted",
        "latency null: needs a finite numeric threshold",
        "the rubric is not text",
        "threshold is not a number from 0 to 1",
        "inline Python code is not converted",
        "'not-a-name' is not a function name",
        "contains: transform='output.trim()' not converted",
        "similar 'x': no Elizon equivalent",
        "CSV column __metric = 'm1' (no Elizon equivalent)",
    ]:
        assert expected in notes
    assert conversion.cases == 5
    suite = yaml.safe_load(conversion.suite)["cases"]
    odd = suite[0]["expect"]
    assert odd["checks"] == [{"check": "promptfoo_checks:check_1", "threshold": 0.7},
                             "promptfoo_checks:check_2"]
    assert suite[0]["input"]["tone"] == "calm"
    assert suite[3]["expect"] == {"isJson": True}
    assert suite[4]["expect"] == {"containsAny": ["x", "y"]}
    assert conversion.checks is not None
    assert "'grade'" in conversion.checks
    assert "promptfoo prompts were" not in conversion.manifest
    assert "judge" not in conversion.manifest.split("\n", 6)[-1]
    lines = conversion.report("promptfooconfig.yaml", "out")
    assert any(line.startswith("mapped: ") for line in lines)


def test_promptfoo_report_of_a_plain_conversion_and_writing(tmp_path: Path) -> None:
    from pytest_elizon_eval.importers.promptfoo import ImportFailed, convert, write

    config = _write(tmp_path, {"promptfooconfig.yaml": "tests: [{vars: {q: hi}}]\n"})
    conversion = convert(config, tmp_path / "out")
    assert conversion.mapped == {}
    assert conversion.checks is None
    lines = conversion.report("promptfooconfig.yaml", "out")
    assert "not converted: nothing" in lines
    assert not any(line.startswith("mapped:") for line in lines)
    assert "expect" not in yaml.safe_load(conversion.suite)["cases"][0]
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ImportFailed, match="cannot write into"):
        write(conversion, blocker / "sub")
    written = write(conversion, tmp_path / "out")
    assert [p.name for p in written] == ["elizon.yaml", "suite.yaml"]
    assert all(p.is_file() for p in written)


@pytest.mark.parametrize(("config", "files", "message"), [
    ("tests: [file://missing.yaml]", {}, "cannot read it"),
    ("tests: [file://t.jsonl]", {"t.jsonl": b"\xff\xfe{}\n"}, "not UTF-8 text"),
    ('tests: ["file://a\\0b.csv"]', {}, "contains a NUL byte"),
    ("tests: [file://none*.csv]", {}, "matches no file"),
    ("tests: [file://t.csv]", {"t.csv": "q\na,b\n"}, "2 cells, but the header names 1"),
    ("defaultTest: [1]\ntests: [{}]", {}, "defaultTest: expected a mapping"),
    ("defaultTest: {vars: [1]}\ntests: [{}]", {}, "defaultTest.vars: expected a mapping"),
    ("prompts: [x]", {}, "no tests to import"),
    ("tests: [file://t.yaml]", {"t.yaml": "a: [unclosed\n"}, "test file"),
])
def test_promptfoo_more_bad_configs(tmp_path: Path, config: str, files: dict[str, str | bytes],
                                    message: str) -> None:
    from pytest_elizon_eval.importers.promptfoo import ImportFailed, convert

    path = _write(tmp_path, {"promptfooconfig.yaml": config, **files})
    with pytest.raises(ImportFailed, match=message):
        convert(path, tmp_path / "out")


def test_promptfoo_refuses_files_larger_than_the_limit(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_elizon_eval.importers import promptfoo

    monkeypatch.setattr(promptfoo, "MAX_FILE_BYTES", 10)
    path = _write(tmp_path, {"promptfooconfig.yaml": "tests: [{vars: {q: a long one}}]\n"})
    with pytest.raises(promptfoo.ImportFailed, match="larger than 10 bytes"):
        promptfoo.convert(path, tmp_path / "out")


def test_promptfoo_yaml_11_surprises_are_read_as_promptfoo_reads_them(tmp_path: Path) -> None:
    from pytest_elizon_eval.importers.promptfoo import convert

    path = _write(tmp_path, {"promptfooconfig.yaml": "tests:\n  - vars: {answer: no}\n"})
    conversion = convert(path, tmp_path / "out")
    assert conversion.cases == 1
