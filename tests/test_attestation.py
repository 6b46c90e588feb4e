"""The attestation a run writes (--elizon-attestation, keyed by $ELIZON_ATTESTATION_SECRET)
and ``elizon-eval verify --attestation``: valid as written, and each kind of tampering a
verdict that names the first bad record, with its own exit status (docs/cli.md#verify,
docs/contract.md#attestations); and a signed results file whose verification names the
first case changed after signing.

One module-scoped set of runs gives the material, as a CI job makes it: a signed serial run
with the results file and the attestation, a second serial run (another run id, to splice
from), and an ``-n 2`` run of the same cases, one after the other. A second set, a package
with a must-pass and an advisory suite, gives the results that are edited to pass a gate
they failed (a suite made advisory, a failing case moved, the provenance rewritten). The
verdicts come from the console script itself.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import io
import json
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_elizon_eval.mock import MockModel, MockServer
from pytest_elizon_eval.reporting import results
from pytest_elizon_eval.trust import attestation, evidence, signing

from .conftest import Packages, ci_step_env, elizon_eval

SECRET = "s3cret-Attestation-Value-4711"
SCRIPT = Path(sys.executable).with_name("elizon-eval")
#: Text that is only in the cases' inputs and outputs: never in the attestation.
RAW = "zebra-lantern-5521"

SUITE = f"""
cases:
  - id: alpha
    input: {{text: "{RAW} alpha"}}
    expect: {{contains: [alpha]}}
  - id: bravo
    input: {{text: "{RAW} bravo"}}
    expect: {{contains: [bravo]}}
  - id: charlie
    input: {{text: "{RAW} charlie"}}
    expect: {{contains: [delta]}}
  - id: delta
    input: {{text: "{RAW} delta"}}
    expect: {{contains: [delta]}}
  - id: echo
    input: {{text: "{RAW} echo"}}
    expect: {{contains: [echo], startsWith: "{RAW}"}}
"""
APP = "def answer(text):\n    return text\n"


def write_package(root: Path) -> None:
    (root / "pkg" / "eval").mkdir(parents=True)
    (root / "pkg" / "elizon.yaml").write_text(textwrap.dedent("""\
        name: pkg
        entry: app:answer
        evaluation:
          suite: ./eval/suite.yaml
          gate: must-pass
    """))
    (root / "pkg" / "eval" / "suite.yaml").write_text(SUITE)
    (root / "pkg" / "app.py").write_text(APP)
    (root / "pytest.ini").write_text("[pytest]\n")


@dataclass
class Material:
    tmp: Path
    outputs: str

    def lines(self, name: str = "att.jsonl") -> list[str]:
        return (self.tmp / name).read_text(encoding="utf-8").splitlines(keepends=True)

    def records(self, name: str = "att.jsonl") -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.lines(name)]


@pytest.fixture(scope="module")
def material(tmp_path_factory: pytest.TempPathFactory) -> Material:
    tmp = tmp_path_factory.mktemp("attest")
    write_package(tmp)
    signing.generate(tmp / "keys")
    env = ci_step_env(ELIZON_ATTESTATION_SECRET=SECRET)
    runs = {
        # the history store and pytest's cache on: files a run writes, searched for the secret
        "serial": ["--elizon-attestation=att.jsonl", "--elizon-results=r.json",
                   "--elizon-sign-key=keys/elizon-eval.key"],
        "other": ["--elizon-attestation=other.jsonl", "-p", "no:cacheprovider",
                  "--elizon-history=off"],
        "xdist": ["-n", "2", "--elizon-attestation=xdist.jsonl", "-p", "no:cacheprovider",
                  "--elizon-history=off"],
    }
    outputs = []
    for args in runs.values():  # one after the other: each session has the machine to itself
        done = _pytest("pkg", *args, cwd=tmp, env=env)
        outputs.append(done.stdout)
        # charlie fails: every run reports it and writes its files
        assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout
        assert "1 failed, 4 passed" in done.stdout, done.stdout
    assert "generated attestation: " in outputs[0]
    return Material(tmp, "".join(outputs))


def _pytest(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A pytest session as a CI step runs it. The timeout only stops a hung session from
    hanging the test run: nothing is measured by it."""
    return subprocess.run([sys.executable, "-m", "pytest", *args], cwd=cwd, env=env,
                          text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=900, check=False)


def verify(*args: str, cwd: Path, secret: str | None = SECRET, script: bool = False
           ) -> subprocess.CompletedProcess[str]:
    """``elizon-eval verify *args`` with the secret in its variable: through ``cli.main`` in
    this process, or the console script itself (``script``: the first verdict)."""
    if not script:
        return elizon_eval("verify", *args, cwd=cwd,
                           **({} if secret is None else {"ELIZON_ATTESTATION_SECRET": secret}))
    env = ci_step_env() if secret is None else ci_step_env(ELIZON_ATTESTATION_SECRET=secret)
    return subprocess.run([str(SCRIPT), "verify", *args], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=60, check=False)


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    """The verdict: one line on stderr, never a traceback."""
    assert "Traceback" not in done.stdout + done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    return done.stderr


# -- valid, as written -----------------------------------------------------------------------

def test_a_run_writes_the_attestation_and_verify_says_valid(material: Material) -> None:
    done = verify("--attestation", "att.jsonl", cwd=material.tmp, script=True)
    assert done.returncode == 0, done.stderr
    run_id = material.records()[0]["run_id"]
    key_id = attestation.Secret.from_text(SECRET, "s").key_id
    assert done.stdout == (f"verified: attestation att.jsonl valid: 7 records (header, 5 "
                           f"cases, final) of run {run_id}, key id {key_id}\n")
    both = verify("r.json", "--attestation", "att.jsonl", "--public-key",
                  "keys/elizon-eval.pub", cwd=material.tmp)
    assert both.returncode == 0, both.stderr
    assert "signature valid" in both.stdout
    assert both.stdout.rstrip().endswith("its 5 cases, 1 suite and provenance are as attested")


def test_the_file_is_as_documented_and_an_auditor_can_recompute_it(material: Material) -> None:
    records = material.records()
    header, cases, final = records[0], records[1:-1], records[-1]
    assert [r["record"] for r in records] == ["header", *["case"] * 5, "final"]
    assert [r["index"] for r in records] == list(range(7))
    assert header["format"] == "pytest-elizon-eval/attestation/v2"
    assert (header["algorithm"], header["order"], header["cases"]) == ("hmac-sha256", "nodeid", 5)
    assert final["cases"] == 5
    # each suite's path, gate, effective advisory flag, file SHA-256 and content hash, as the
    # results file says them
    [suite] = json.loads((material.tmp / "r.json").read_text())["suites"]
    assert header["suites"] == [{k: suite[k] for k in ("path", "gate", "advisory", "sha256",
                                                       "content_hash")}]
    assert header["suites"][0]["gate"] == "must-pass"
    assert header["suites"][0]["content_hash"].startswith("sha256:")
    # node-id order; the suite, outcome, score and each check's pass/fail of every case
    assert [r["case_id"] for r in cases] == ["alpha", "bravo", "charlie", "delta", "echo"]
    assert {r["suite"] for r in cases} == {"pkg/eval/suite.yaml"}
    assert [(r["advisory"], r["inconclusive_passes"]) for r in cases] == [(None, None)] * 5
    assert [r["outcome"] for r in cases] == ["passed", "passed", "failed", "passed", "passed"]
    assert cases[4]["checks"] == [{"name": "contains", "passed": True},
                                  {"name": "startsWith", "passed": True}]
    assert cases[2]["checks"] == [{"name": "contains", "passed": False}]
    assert {r["score"] for r in cases} == {None}

    def digest(value: Any) -> str:
        return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":"),
                                         ensure_ascii=False).encode()).hexdigest()

    assert cases[0]["input_sha256"] == digest({"text": f"{RAW} alpha"})
    assert cases[0]["output_sha256"] == digest(f"{RAW} alpha")
    assert cases[0]["output_length"] == len(f"{RAW} alpha")
    # each MAC: HMAC-SHA256 over the context line and the record's canonical JSON without
    # its mac, whose prev is the MAC before it
    prev = "0" * 64
    for record in records:
        assert record["prev"] == prev
        body = {k: v for k, v in record.items() if k != "mac"}
        message = b"pytest-elizon-eval/attestation/v2\n" + json.dumps(
            body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        assert record["mac"] == hmac.new(SECRET.encode(), message, hashlib.sha256).hexdigest()
        prev = record["mac"]
    assert header["key_id"] == hmac.new(SECRET.encode(), b"elizon-attestation-key-id",
                                        hashlib.sha256).hexdigest()[:16]


def test_the_header_holds_the_results_provenance(material: Material) -> None:
    header = material.records()[0]
    provenance = json.loads((material.tmp / "r.json").read_text())["provenance"]
    assert header["provenance"] == provenance
    packages = provenance["packages"]
    assert header["metadata"] == {
        "entries": ["app:answer"], "models": [], "judges": [],  # the app reports no usage
        "datasets": [d for p in packages for d in p.get("datasets", [])]}


def test_no_raw_text_and_never_the_secret_in_any_file_or_output(material: Material) -> None:
    assert RAW not in (material.tmp / "att.jsonl").read_text()
    assert RAW in (material.tmp / "r.json").read_text()  # the search finds what is there
    secret = SECRET.encode()
    searched = [p for p in material.tmp.rglob("*") if p.is_file()]
    assert any(p.name.endswith(".sqlite") for p in searched)  # the history store too
    assert [p for p in searched if secret in p.read_bytes()] == []
    assert SECRET not in material.outputs


def test_a_serial_and_an_xdist_run_chain_the_same_cases_alike(material: Material) -> None:
    def chained(name: str) -> list[dict[str, Any]]:
        return [{k: v for k, v in r.items() if k not in ("run_id", "prev", "mac")}
                for r in material.records(name)[1:]]

    assert chained("xdist.jsonl") == chained("att.jsonl")
    assert verify("--attestation", "xdist.jsonl", cwd=material.tmp).returncode == 0


# -- each tampering, its verdict ---------------------------------------------------------

def _edit_outcome(lines: list[str], _: list[str]) -> str:
    record = json.loads(lines[3])
    record["outcome"] = "passed"
    return "".join([*lines[:3], json.dumps(record) + "\n", *lines[4:]])


def _removed_and_forged_later(lines: list[str], _: list[str]) -> str:
    """Record 2 removed, and a forgery of it (its MAC no longer holds) put further down:
    only a record whose MAC holds can make the gap a move."""
    forged = json.loads(lines[2])
    forged["outcome"] = "failed"
    return "".join([*lines[:2], *lines[3:-1], json.dumps(forged) + "\n", lines[-1]])


TAMPERINGS = {
    # name: (the file's text from the chain's lines and another run's, exit, verdict words)
    "edited outcome": (_edit_outcome, 1,
                       ["tampered: record 3 (line 4, case charlie, node id "
                        "pkg/eval/suite.yaml::charlie): MAC mismatch"]),
    "truncated": (lambda lines, _: "".join(lines[:-1]), 3,
                  ["truncated: the chain ends after record 5 (line 6, case echo",
                   "without its final record"]),
    "cut short before the final record": (
        lambda lines, _: "".join([*lines[:3], lines[-1]]), 3,
        ["truncated: case records 3 to 5 are missing", "2 of the header's 5 case records"]),
    "reordered": (lambda lines, _: "".join([*lines[:2], lines[3], lines[2], *lines[4:]]), 1,
                  ["tampered: reordered: broken chain link at record 2: line 3 holds record 3 "
                   "(case charlie", "record 2 is at line 4"]),
    "a record removed": (lambda lines, _: "".join([*lines[:2], *lines[3:]]), 1,
                         ["broken chain link at record 2", "record 2 was removed"]),
    "a record removed and a forgery of it further down": (
        _removed_and_forged_later, 1, ["broken chain link at record 2: line 3 holds record 3",
                                       "record 2 was removed"]),
    "spliced from another run": (
        lambda lines, other: "".join([*lines[:2], other[2], *lines[3:]]), 1,
        ["tampered: record 2 (line 3, case bravo, node id pkg/eval/suite.yaml::bravo) is "
         "from another run"]),
    "appended after the final record": (lambda lines, _: "".join([*lines, lines[1]]), 1,
                                        ["tampered: record 7 (line 8) follows the final "
                                         "record"]),
    "not JSON in the middle": (lambda lines, _: "".join([*lines[:4], "{oops\n", *lines[5:]]),
                               1, ["tampered: record 4 (line 5) is not JSON"]),
    "header edited": (lambda lines, _: lines[0].replace('"cases": 5', '"cases": 4')
                      + "".join(lines[1:]), 4,
                      ["wrong secret or tampered header", "its key id is this secret's"]),
    "header removed": (lambda lines, _: "".join(lines[1:]), 4,
                       ["the chain has no header: line 1 is a case record"]),
    "a non-JSON file": (lambda lines, _: "just some text\n", 2,
                        ["not an attestation file: line 1 is not JSON"]),
    "an empty file": (lambda lines, _: "", 3, ["truncated: the file is empty"]),
}


@pytest.mark.parametrize("name", TAMPERINGS)
def test_each_tampering_is_one_verdict_naming_the_first_bad_record(
        material: Material, name: str) -> None:
    make, status, words = TAMPERINGS[name]
    target = material.tmp / f"tampered-{name.replace(' ', '-')}.jsonl"
    target.write_text(make(material.lines(), material.lines("other.jsonl")), encoding="utf-8")
    done = verify("--attestation", target.name, cwd=material.tmp)
    assert done.returncode == status, done.stderr
    line = one_line(done)
    assert line.startswith(f"ELIZON_ATTESTATION_INVALID: {target.name}: "), line
    for word in words:
        assert word in line, line
    assert done.stdout == ""


class _Lines(io.RawIOBase):
    """An attestation file that fails the test if it is read past line ``stop``."""

    def __init__(self, lines: list[bytes], stop: int) -> None:
        self.lines, self.stop, self.given = lines, stop, 0

    def readable(self) -> bool:
        return True

    def readline(self, size: int | None = -1) -> bytes:
        assert self.given < self.stop, "read on past the first record that does not hold"
        self.given += 1
        return self.lines[self.given - 1] if self.given <= len(self.lines) else b""


def test_the_file_is_read_a_line_at_a_time_and_no_further_than_the_verdict() -> None:
    secret = attestation.Secret.from_text(SECRET, "s")
    cases = [{"nodeid": f"s::{n}", "case_id": n, "outcome": "passed"} for n in "abcdef"]
    made = [line.encode() for line in attestation.lines(cases, 6, secret, provenance=None)]
    assert attestation.verify_stream(_Lines(made, len(made) + 1), secret).valid
    tampered = [*made[:3], made[3].replace(b'"passed"', b'"failed"'), *made[4:]]
    verdict = attestation.verify_stream(_Lines(tampered, 4), secret)
    assert (verdict.status, verdict.index) == (attestation.TAMPERED, 3)
    # a byte that is not UTF-8 is named by its offset in the file, when it is reached
    broken = [*made[:2], b"\xff" + made[2], *made[3:]]
    verdict = attestation.verify_bytes(b"".join(broken), secret)
    assert verdict.status == attestation.UNUSABLE
    assert verdict.message == ("not an attestation file: not UTF-8 text (byte offset "
                               f"{len(made[0]) + len(made[1])})")
    # blank lines only: empty, as a file with nothing in it
    assert attestation.verify_bytes(b"\n \n", secret).status == attestation.TRUNCATED
    assert attestation.verify_bytes(b"\n" + made[0], secret).message == (
        "not an attestation file: line 1 is empty")


def test_a_missing_file_a_folder_and_a_wrong_secret(material: Material) -> None:
    missing = verify("--attestation", "gone.jsonl", cwd=material.tmp)
    assert missing.returncode == 2
    assert one_line(missing) == "ELIZON_ATTESTATION_INVALID: gone.jsonl: no such file\n"
    folder = verify("--attestation", "keys", cwd=material.tmp)
    assert (folder.returncode, "it is a directory" in one_line(folder)) == (2, True)
    wrong = verify("--attestation", "att.jsonl", cwd=material.tmp,
                   secret="another-secret-long-enough")
    assert wrong.returncode == 4
    line = one_line(wrong)
    assert "att.jsonl: wrong secret or tampered header: the header's MAC does not match" in line
    assert "another-secret-long-enough" not in line + wrong.stdout


def test_results_that_differ_from_the_attestation_name_the_case(material: Material) -> None:
    data = json.loads((material.tmp / "r.json").read_text())
    cases = data["suites"][0]["cases"]
    assert [c["id"] for c in cases] == ["alpha", "bravo", "charlie", "delta", "echo"]
    cases[3]["output"] = "delta, edited"  # the verdicts still follow from the cases
    (material.tmp / "edited.json").write_text(json.dumps(data, indent=2))
    done = verify("edited.json", "--attestation", "att.jsonl", cwd=material.tmp)
    assert done.returncode == 1
    assert one_line(done) == (
        "ELIZON_ATTESTATION_INVALID: edited.json: case 4 (id delta, node id "
        "pkg/eval/suite.yaml::delta) differs from its attested record 4: output changed after "
        "the run\n")
    del cases[1]
    (material.tmp / "removed.json").write_text(json.dumps(data, indent=2))
    gone = verify("removed.json", "--attestation", "att.jsonl", cwd=material.tmp)
    # the first difference in document order: the case that is there and changed
    assert "case 3 (id delta" in one_line(gone)
    cases[2]["output"] = f"{RAW} delta"
    (material.tmp / "removed.json").write_text(json.dumps(data, indent=2))
    gone = verify("removed.json", "--attestation", "att.jsonl", cwd=material.tmp)
    assert gone.returncode == 1
    assert "attested record 2 (case bravo, node id pkg/eval/suite.yaml::bravo) is not in " \
           "the results: removed after the run" in one_line(gone)


# -- results edited to pass a gate they failed -------------------------------------------------

GATES_MANIFEST = """\
name: gates
version: '3.1'
entry: app:answer
evaluation:
  suites:
    - suite: ./eval/must.yaml
      gate: must-pass
    - suite: ./eval/extra.yaml
      gate: advisory
"""
MUST = """
cases:
  - id: alpha
    input: {text: alpha}
    expect: {contains: [alpha]}
  - id: charlie
    input: {text: charlie}
    expect: {contains: [delta]}
"""
EXTRA = """
cases:
  - id: kilo
    input: {text: kilo}
    expect: {contains: [kilo]}
  - id: lima
    input: {text: lima}
    expect: {contains: [mike]}
"""


@pytest.fixture(scope="module")
def gates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of a package with a must-pass suite (charlie fails it) and an advisory one:
    its results ``r.json`` and attestation ``att.jsonl``."""
    tmp = tmp_path_factory.mktemp("gates")
    (tmp / "gates" / "eval").mkdir(parents=True)
    (tmp / "gates" / "elizon.yaml").write_text(GATES_MANIFEST)
    (tmp / "gates" / "eval" / "must.yaml").write_text(MUST)
    (tmp / "gates" / "eval" / "extra.yaml").write_text(EXTRA)
    (tmp / "gates" / "app.py").write_text(APP)
    (tmp / "pytest.ini").write_text("[pytest]\n")
    done = _pytest("gates", "--elizon-results=r.json", "--elizon-attestation=att.jsonl",
                   "-p", "no:cacheprovider", "--elizon-history=off", cwd=tmp,
                   env=ci_step_env(ELIZON_ATTESTATION_SECRET=SECRET))
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout
    return tmp


def _suite(data: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(s for s in data["suites"] if s["path"].endswith(name))
    return found


def _made_advisory(data: dict[str, Any]) -> None:
    _suite(data, "must.yaml").update(gate="advisory", advisory=True)


def _only_its_advisory_flag(data: dict[str, Any]) -> None:
    _suite(data, "must.yaml")["advisory"] = True


def _failing_case_moved(data: dict[str, Any]) -> None:
    must = _suite(data, "must.yaml")
    [charlie] = [c for c in must["cases"] if c["id"] == "charlie"]
    must["cases"].remove(charlie)
    _suite(data, "extra.yaml")["cases"].append(charlie)


def _excused_by_an_unaligned_judge(data: dict[str, Any]) -> None:
    [charlie] = [c for c in _suite(data, "must.yaml")["cases"] if c["id"] == "charlie"]
    charlie["advisory"] = "judge not aligned: κ 0.10 < 0.60"


def _entry_rewritten(data: dict[str, Any]) -> None:
    data["provenance"]["packages"][0]["entries"] = ["other:model"]


def _option_added(data: dict[str, Any]) -> None:
    data["provenance"]["options"]["--elizon-strict"] = True


def _provenance_removed(data: dict[str, Any]) -> None:
    del data["provenance"]


def _content_hash_changed(data: dict[str, Any]) -> None:
    _suite(data, "extra.yaml")["content_hash"] = "sha256:" + "0" * 64


EDITS = {
    # name: (the edit, what verify says, whether --require-pass alone then passes)
    "a must-pass suite made advisory": (
        _made_advisory, "suite gates/eval/must.yaml differs from its attestation: gate, "
                        "advisory flag changed after the run", True),
    "only its advisory flag": (
        _only_its_advisory_flag, "suite gates/eval/must.yaml differs from its attestation: "
                                 "advisory flag changed after the run", True),
    "a failing case moved into the advisory suite": (
        _failing_case_moved, "(id charlie, node id gates/eval/must.yaml::charlie) differs "
                             "from its attested record 4: suite, outcome changed after the "
                             "run (attested in suite gates/eval/must.yaml)", True),
    "a failing case excused as only an unaligned judge's": (
        _excused_by_an_unaligned_judge, "(id charlie, node id gates/eval/must.yaml::charlie) "
                                        "differs from its attested record 4: outcome, advisory "
                                        "reason changed after the run", True),
    "the provenance's entry point rewritten": (
        _entry_rewritten, "provenance.packages[0].entries[0] is not the attested "
                          "provenance: changed after the run", False),
    "an option added to the provenance": (
        _option_added, "provenance.options.--elizon-strict is not the attested provenance: "
                       "changed after the run", False),
    "the provenance removed": (
        _provenance_removed, "provenance is not the attested provenance: changed after the "
                             "run", False),
    "a suite's content hash changed": (
        _content_hash_changed, "suite gates/eval/extra.yaml differs from its attestation: "
                               "content hash changed after the run", False),
}


def _rebuilt(data: dict[str, Any], target: Path) -> None:
    """``data`` written as a results file whose verdicts follow from its (edited) cases, as
    someone without the secret would make it to pass every other check."""
    target.write_text(json.dumps(results.build(evidence.aggregate_of(data),
                                               provenance=data.get("provenance"))))


def test_the_run_with_two_gates_verifies_and_fails_its_must_pass_gate(gates: Path) -> None:
    done = verify("r.json", "--attestation", "att.jsonl", cwd=gates)
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith("its 4 cases, 2 suites and provenance are as "
                                         "attested")
    assert verify("r.json", "--require-pass", cwd=gates).returncode == 1
    # rebuilt as the edits below are, unchanged: it still verifies
    _rebuilt(json.loads((gates / "r.json").read_text()), gates / "rebuilt.json")
    assert verify("rebuilt.json", "--attestation", "att.jsonl", cwd=gates).returncode == 0


@pytest.mark.parametrize("name", EDITS)
def test_results_edited_without_the_secret_fail_verify_naming_the_change(
        gates: Path, name: str) -> None:
    edit, said, passes_the_gate = EDITS[name]
    data = json.loads((gates / "r.json").read_text())
    edit(data)
    target = gates / f"edited-{name.replace(' ', '-')}.json"
    _rebuilt(data, target)
    # what the edit buys without an attestation: a gate that fails no more
    alone = verify(target.name, "--require-pass", cwd=gates)
    assert (alone.returncode == 0) is passes_the_gate, alone.stderr
    done = verify(target.name, "--attestation", "att.jsonl", "--require-pass", cwd=gates)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.splitlines()
    assert "Traceback" not in done.stderr
    [attested] = [line for line in lines if line.startswith("ELIZON_ATTESTATION_INVALID")]
    assert attested.startswith(f"ELIZON_ATTESTATION_INVALID: {target.name}: "), attested
    assert said in attested, attested


def test_the_header_names_the_models_the_answers_and_the_openai_entry_name(
        packages: Packages, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """``metadata.models``: what the answers' usage named and what an ``output: openai``
    entry asks for (here the manifest's), sorted and distinct."""
    monkeypatch.setenv("ELIZON_ATTESTATION_SECRET", SECRET)
    with MockServer(MockModel(default={"content": "Hello", "model": "shop-model-2025"})
                    ) as server:
        packages.package(suite="cases:\n  - id: a\n    input: hi\n  - id: b\n"
                               "    input: ho\n",
                         entry=f"{{url: '{server.url}/chat/completions', output: openai, "
                               "model: shop-model}")
        result = pytester.runpytest("--elizon-attestation=att.jsonl", "--elizon-history=off")
        result.assert_outcomes(passed=2)
    header = json.loads((pytester.path / "att.jsonl").read_text().splitlines()[0])
    assert header["metadata"]["models"] == ["shop-model", "shop-model-2025"]
    assert header["metadata"]["entries"] == [f"POST {server.url}/chat/completions"]


def test_models_in_the_metadata_are_those_given_sorted_and_distinct() -> None:
    secret = attestation.Secret.from_text(SECRET, "s")
    [header, *_] = attestation.records(
        [], 0, secret, provenance=None, models=["b-model", "a-model", "b-model"])
    assert header["metadata"] == {"entries": [], "models": ["a-model", "b-model"],
                                  "judges": [], "datasets": []}
    assert header["suites"] == []


# -- the secret: required, long enough, never shown ----------------------------------------

def test_verify_without_the_secret_or_with_a_short_one_is_a_usage_error(
        material: Material) -> None:
    unset = verify("--attestation", "att.jsonl", cwd=material.tmp, secret=None)
    assert unset.returncode == 2
    assert "$ELIZON_ATTESTATION_SECRET, which is not set" in one_line(unset)
    short = verify("--attestation", "att.jsonl", cwd=material.tmp, secret="tiny-but-9")
    assert short.returncode == 2
    line = one_line(short)
    assert "$ELIZON_ATTESTATION_SECRET is shorter than 16 characters" in line
    assert "tiny-but-9" not in line + short.stdout
    neither = verify(cwd=material.tmp)
    assert neither.returncode == 2
    assert "give RESULTS, --attestation FILE, or both" in neither.stderr
    alone = verify("--attestation", "att.jsonl", "--require-pass", cwd=material.tmp)
    assert alone.returncode == 2
    assert "--require-pass: these check a results file: give RESULTS" in alone.stderr


def test_a_run_with_a_short_secret_or_none_is_a_usage_error_that_never_shows_it(
        packages: Packages, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    packages.package(suite=SUITE, app=APP)
    monkeypatch.setenv("ELIZON_ATTESTATION_SECRET", "short-secret")
    short = pytester.runpytest("--elizon-attestation=att.jsonl")
    assert short.ret == pytest.ExitCode.USAGE_ERROR
    text = short.stdout.str() + short.stderr.str()
    assert "--elizon-attestation=att.jsonl: $ELIZON_ATTESTATION_SECRET is shorter than 16 " \
           "characters" in text
    assert "short-secret" not in text
    assert "Traceback" not in text
    monkeypatch.delenv("ELIZON_ATTESTATION_SECRET")
    unset = pytester.runpytest("--elizon-attestation=att.jsonl")
    assert unset.ret == pytest.ExitCode.USAGE_ERROR
    assert "$ELIZON_ATTESTATION_SECRET is not set" in unset.stderr.str()
    # the ini key says how to turn it off for one run
    pytester.makeini("[pytest]\nelizon_attestation = att.jsonl\n")
    from_ini = pytester.runpytest()
    assert from_ini.ret == pytest.ExitCode.USAGE_ERROR
    assert "ini option elizon_attestation" in from_ini.stderr.str()
    assert "-o elizon_attestation=" in from_ini.stderr.str()
    pytester.runpytest("-o", "elizon_attestation=").assert_outcomes(passed=4, failed=1)
    assert not (pytester.path / "att.jsonl").exists()
    # the secret alone writes nothing
    monkeypatch.setenv("ELIZON_ATTESTATION_SECRET", SECRET)
    pytester.runpytest("-o", "elizon_attestation=").assert_outcomes(passed=4, failed=1)
    assert [p.name for p in pytester.path.glob("*.jsonl")] == []


def test_the_secret_is_never_in_a_repr_and_a_short_one_never_in_its_message() -> None:
    secret = attestation.Secret.from_text(f"  {SECRET}\n", "$VAR")
    assert SECRET not in repr(secret)
    assert repr(secret) == f"Secret($VAR, key id {secret.key_id})"
    assert secret.key_id == attestation.Secret.from_text(SECRET, "x").key_id  # whitespace
    with pytest.raises(ValueError, match=r"^\$VAR is shorter than 16") as info:
        attestation.Secret.from_text("fifteen-chars!!", "$VAR")
    assert "fifteen" not in str(info.value)


def test_a_chain_that_would_lie_about_its_count_is_never_written() -> None:
    secret = attestation.Secret.from_text(SECRET, "s")
    with pytest.raises(ValueError, match="counts 2 cases, 1 were given"):
        list(attestation.lines([{"nodeid": "a", "case_id": "a", "outcome": "passed"}], 2,
                               secret, provenance=None))


# -- Ed25519: the first case changed after signing -----------------------------------------

def test_a_signed_results_file_edited_names_the_first_changed_case(material: Material) -> None:
    tmp = material.tmp
    data = json.loads((tmp / "r.json").read_text())
    data["suites"][0]["cases"][2]["output"] = "charlie, edited"
    (tmp / "signed-edit.json").write_text(json.dumps(data, indent=2))
    shutil.copy(tmp / "r.json.sig", tmp / "signed-edit.json.sig")
    done = verify("signed-edit.json", "--public-key", "keys/elizon-eval.pub", cwd=tmp)
    assert done.returncode == 1
    line = one_line(done)
    assert line.startswith("ELIZON_RESULTS_SIGNATURE_INVALID: signed-edit.json: the signature "
                           "is for another document")
    assert line.endswith("; case 3 (id charlie, node id pkg/eval/suite.yaml::charlie) was "
                         "changed after signing\n")
    # a signature made before per-case digests still verifies, and still says it is broken
    old = json.loads((tmp / "r.json.sig").read_text())
    del old["cases"]
    (tmp / "signed-edit.json.sig").write_text(json.dumps(old))
    shutil.copy(tmp / "r.json", tmp / "old-sig.json")
    (tmp / "old-sig.json.sig").write_text(json.dumps(old))
    assert verify("old-sig.json", "--public-key", "keys/elizon-eval.pub",
                  cwd=tmp).returncode == 0
    unnamed = verify("signed-edit.json", "--public-key", "keys/elizon-eval.pub", cwd=tmp)
    assert unnamed.returncode == 1
    assert "the signature is for another document" in one_line(unnamed)
    assert "; case" not in unnamed.stderr


def _signed(cases: list[dict[str, Any]], keys: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    document = {"verdict": {"pass": True}, "suites": [{"path": "s", "cases": cases}]}
    key = signing.SigningKey.from_file(keys / signing.KEY_FILE, "k")
    return document, json.loads(signing.signature_text(json.dumps(document), key))


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("keys")
    signing.generate(folder)
    return folder


@pytest.mark.parametrize(("edit", "named"), [
    (lambda c: c.__setitem__(1, {**c[1], "outcome": "failed"}),
     "case 2 (id b, node id s::b) was changed after signing"),
    (lambda c: c.pop(1), "signed case 2 was removed after signing (case 2 (id c, node id "
                         "s::c) was signed as case 3)"),
    (lambda c: c.insert(1, {"id": "x", "nodeid": "s::x"}),
     "case 2 (id x, node id s::x) was added after signing"),
    (lambda c: c.pop(), "the last 1 signed case was removed after signing"),
    (lambda c: c.append({"id": "z", "nodeid": "s::z"}),
     "case 4 (id z, node id s::z) was added after signing"),
    (lambda c: None, "every case is as signed: what changed is outside the cases"),
])
def test_the_per_case_digests_say_which_case_changed(keys: Path, edit: Any,
                                                      named: str) -> None:
    cases = [{"id": n, "nodeid": f"s::{n}", "outcome": "passed"} for n in "abc"]
    document, signature = _signed(cases, keys)
    public = signing.load_public_key(keys / signing.PUBLIC_KEY_FILE, "p")
    assert signing.verify(document, signature, public).startswith("sha256:")
    assert signature["cases"]["count"] == 3
    assert len(base64.b64decode(signature["cases"]["digests"])) == 3 * 8
    changed = json.loads(json.dumps(document))
    edit(changed["suites"][0]["cases"])
    changed["verdict"]["pass"] = False  # the document differs even when no case does
    with pytest.raises(signing.SignatureInvalid) as info:
        signing.verify(changed, signature, public)
    assert str(info.value).startswith("the signature is for another document")
    assert "; " + named in str(info.value)


def test_digests_another_key_signed_name_no_case(keys: Path, tmp_path: Path) -> None:
    cases = [{"id": n, "nodeid": f"s::{n}"} for n in "ab"]
    document, signature = _signed(cases, keys)
    signing.generate(tmp_path)
    other = signing.SigningKey.from_file(tmp_path / signing.KEY_FILE, "o")
    # the digests of this very document, signed by a key that is not the results' signer
    signature["cases"] = other.sign_results(document)["cases"]
    forged = json.loads(json.dumps(document))
    forged["suites"][0]["cases"][0]["id"] = "A"
    public = signing.load_public_key(keys / signing.PUBLIC_KEY_FILE, "p")
    with pytest.raises(signing.SignatureInvalid) as info:
        signing.verify(forged, signature, public)
    assert "; case" not in str(info.value)
    assert signing.changed_case(forged, signature, public) is None
