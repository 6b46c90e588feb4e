"""The ``elizon-eval`` command and signed results, as a CI job uses them.

One module-scoped run of docs/ci.md's "From CI to activation" workflow (its ``pytest`` and
``elizon-eval`` commands as written, the matrix expanded, beside one full run of the
examples) gives the material; the other tests run the command on it (the console script
where a process of its own is the point: a terminal, a key file's mode; else ``cli.main``).
"""

from __future__ import annotations

import base64
import glob
import json
import os
import pty
import re
import select
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_elizon_eval import cli
from pytest_elizon_eval.reporting import results
from pytest_elizon_eval.trust import evidence, signing

from .conftest import ci_step_env, elizon_eval

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(sys.executable).with_name("elizon-eval")
LATENCY_METRICS = {"mean_latency_ms", "p50_latency_ms", "p95_latency_ms", "max_latency_ms"}
#: The workflow's ``secrets.ELIZON_ATTESTATION_SECRET``.
ATTESTATION_SECRET = "ci-attestation-secret-0123456789"


def run(*args: str, cwd: Path, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), *args], cwd=cwd, env=env or ci_step_env(), text=True,
                          capture_output=True, timeout=60, check=False)


def workflow() -> dict[str, Any]:
    """The workflow of the CI recipes' "From CI to activation" section (docs/ci.md)."""
    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    section = text.split("## From CI to activation", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block is not None
    data: dict[str, Any] = yaml.safe_load(block.group(1))
    return data


def _expand(text: str, values: dict[str, str]) -> str:
    return re.sub(r"\$\{\{\s*([\w.]+)\s*\}\}", lambda m: values[m.group(1)], text)


@dataclass
class Material:
    tmp: Path
    key_pem: str
    outputs: list[str]
    full_run: pytest.RunResult  # the full run of the examples beside the shards

    @property
    def merged(self) -> Path:
        return self.tmp / "reports" / "elizon.json"

    @property
    def public(self) -> Path:
        return self.tmp / "elizon-eval.pub"


def _commands(job: dict[str, Any], values: dict[str, str]) -> list[tuple[str, dict[str, str]]]:
    """The job's ``pytest`` and ``elizon-eval`` commands (installs, uploads and the deploy
    script are CI's business), with their step's environment."""
    found = []
    for step in job["steps"]:
        command = step.get("run", "")
        if command.startswith(("pytest ", "elizon-eval ")):
            env = {k: _expand(str(v), values) for k, v in (step.get("env") or {}).items()}
            found.append((_expand(command, values), env))
    return found


@pytest.fixture(scope="module")
def material(tmp_path_factory: pytest.TempPathFactory) -> Material:
    tmp = tmp_path_factory.mktemp("ci")
    shutil.copytree(ROOT / "example_suites", tmp / "example_suites",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp / "pytest.ini").write_text("[pytest]\n")  # the rootdir, as a checkout's config is
    flow = workflow()
    summary = tmp / "step-summary.md"
    env = ci_step_env(GITHUB_STEP_SUMMARY=str(summary))
    # The matrix's shards and one full run of the same packages, side by side (the full run,
    # which signs nothing, from before the key is made).
    jobs = [subprocess.Popen(
        [sys.executable, "-m", "pytest", "example_suites", "-p", "no:cacheprovider",
         "--elizon-results=full.json", "--elizon-junit=full.xml"],
        cwd=tmp, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)]
    keys = tmp.parent / f"{tmp.name}-keys"
    done = elizon_eval("keygen", str(keys), cwd=tmp)  # the script's keygen: test_keygen_...
    assert done.returncode == 0, done.stderr
    shutil.copy(keys / signing.PUBLIC_KEY_FILE, tmp / "elizon-eval.pub")
    key_pem = (keys / signing.KEY_FILE).read_text()
    base = {"secrets.ELIZON_SIGN_KEY": key_pem, "github.actor": "ci-reviewer",
            "secrets.ELIZON_ATTESTATION_SECRET": ATTESTATION_SECRET}
    outputs = [done.stdout, done.stderr]
    for shard in flow["jobs"]["eval"]["strategy"]["matrix"]["include"]:
        values = {**base, **{f"matrix.{k}": str(v) for k, v in shard.items()}}
        for command, step_env in _commands(flow["jobs"]["eval"], values):
            jobs.append(subprocess.Popen(
                ["bash", "-c", command.replace("pytest ", f"{sys.executable} -m pytest "
                                               "-p no:cacheprovider ", 1)],
                cwd=tmp, env={**env, **step_env}, text=True, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT))
    for job in jobs:
        out, _ = job.communicate(timeout=120)
        outputs.append(out)
        assert job.returncode == 0, out
    full_run = pytest.RunResult(jobs[0].returncode, outputs[2].splitlines(), [], 0.0)
    for name in ("merge", "activate"):
        for command, step_env in _commands(flow["jobs"][name], base):
            for part in command.split(" && "):
                done = _step(part, tmp, {"GITHUB_STEP_SUMMARY": str(summary), **step_env})
                outputs += [done.stdout, done.stderr]
                assert done.returncode == 0, (part, done.stdout, done.stderr)
    return Material(tmp, key_pem, outputs, full_run)


def _step(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """One command of a step: ``elizon-eval ...`` through ``cli.main`` in this process (its
    words as the shell splits them, a glob expanded as the shell does: sorted, or left as
    written when nothing matches), anything else (``cat ... >> "$GITHUB_STEP_SUMMARY"``) by
    the shell. Each ``elizon-eval`` process would only add its start-up: the console script
    itself runs in test_keygen_..., test_acknowledge_with_a_typed_yes_on_a_terminal and
    test_reference."""
    words = shlex.split(command)
    if words[0] != "elizon-eval":
        return subprocess.run(["bash", "-c", command], cwd=cwd, text=True, capture_output=True,
                              timeout=60, check=False, env={**ci_step_env(), **env})
    args = [match for word in words[1:] for match in (
        sorted(glob.glob(word, root_dir=cwd)) if set("*?[") & set(word) else []) or [word]]
    return elizon_eval(*args, cwd=cwd, **env)


def _comparable_case(case: dict[str, Any]) -> str:
    """The case without its timing (latencies, and what maxLatencyMs found)."""
    text = json.dumps(case, sort_keys=True)
    text = re.sub(r'"latency_ms": [-\d.e]+', '"latency_ms": 0', text)
    return re.sub(r"took [\d.]+ ms", "took ? ms", text)


def _comparable(data: dict[str, Any]) -> list[Any]:
    return [(s["path"], s["verdict"], s["sha256"], s["gate"],
             {k: v for k, v in s["metrics"].items() if k not in LATENCY_METRICS},
             [_comparable_case(c) for c in s["cases"]]) for s in data["suites"]]


def _untimed(xml: str) -> str:
    xml = re.sub(r' time="[^"]*"', "", xml)
    xml = re.sub(r"(latency: (?:mean )?|took |in )[\d.]+ ms", r"\1? ms", xml)
    return re.sub(r'(name="(?:metric|interval)\.\w*latency_ms'
                  r'(?:\.estimate|\.low|\.high)?" value=")[^"]*"', r'\1"', xml)


def test_workflow_merges_shards_into_what_one_full_run_gives(material: Material) -> None:
    tmp = material.tmp
    merged = json.loads(material.merged.read_text())
    full = json.loads((tmp / "full.json").read_text())
    shards = [json.loads(p.read_text()) for p in sorted((tmp / "reports").glob("shard-*.json"))]
    assert len(shards) == 2
    assert all(s["suites"] for s in shards)
    assert _comparable(merged) == _comparable(full)
    assert merged["verdict"] == full["verdict"]
    assert _untimed((tmp / "reports" / "elizon.xml").read_text()) == \
        _untimed((tmp / "full.xml").read_text())
    assert (tmp / "reports" / "elizon.md").read_text().startswith("# Elizon eval")
    results.check(merged)  # the schema, provenance included
    prov = merged["provenance"]
    assert [m["file"] for m in prov["merged_from"]] == [
        "reports/shard-legal.json", "reports/shard-rest.json"]
    assert [p["name"] for p in prov["packages"]] == [
        p["name"] for p in full["provenance"]["packages"]]
    assert {"legal-practice-v1", "triage"} <= {p["name"] for p in prov["packages"]}
    assert all(len(p["manifest_sha256"]) == 64 for p in prov["packages"])
    # the verify step of the workflow passed: signed, acknowledged, gate passed
    ack = json.loads(evidence.ack_path(material.merged).read_text())
    assert ack["by"] == "ci-reviewer"
    assert ack["how"] == "--acknowledge-evaluation"
    assert ack["results_sha256"] == evidence.read_document(material.merged).sha256


def test_examples_pass_with_one_advisory_failure(material: Material) -> None:
    """The example packages a new user runs first pass (``pytest example_suites``, the full
    run beside the shards; test_examples shows that they can fail)."""
    assert material.full_run.ret == pytest.ExitCode.OK
    # 50 cases of six packages, model-variants' 30 under each of its 3 variants and
    # legal-practice's 52 probes (`probes: all`); the noisy model's undecided case and the
    # model-variants candidates' failures are advisory
    assert material.full_run.parseoutcomes() == {"passed": 181, "advisory_failed": 10,
                                                 "advisory_inconclusive": 1}
    # issue 38: what the plugin adds to pytest's own lines (the progress lines before, the
    # outcome line after) is a line per suite, the two cases that need a person, and one
    # summary line: 25 lines at most (the files this run writes each add their line, as
    # pytest-html's does; a plain `pytest example_suites` writes none); issue 40 adds
    # model-variants' line per variant and a row per advisory variant's failed cases
    # (docs/contract.md#variant-comparison)
    lines = material.full_run.outlines
    progress = max(i for i, line in enumerate(lines) if line.rstrip().endswith("[100%]"))
    added = [line for line in lines[progress + 1:-1]
             if line.strip() and not re.match(r"-+ generated ", line)]
    assert len(added) <= 25 + 3 + 2, "\n".join(added)
    assert re.fullmatch(r"=+ elizon eval =+", added[0])
    summary = [line for line in added if line.startswith("elizon: ")]
    assert len(summary) == 1
    assert summary[0].startswith("elizon: 192 cases in 17 suites: 181 passed, 10 "
                                 "advisory_failed, 1 advisory_inconclusive;")
    assert summary[0].endswith(" — PASS")
    assert "advisory, not passed:" in added
    assert "inconclusive:" in added


def test_every_results_file_records_its_provenance(material: Material) -> None:
    shard = json.loads((material.tmp / "reports" / "shard-legal.json").read_text())
    prov = shard["provenance"]
    assert prov["options"] == {"--elizon-results": "reports/shard-legal.json",
                               "--elizon-attestation": "reports/shard-legal.attestation.jsonl"}
    assert prov["pytest"] == pytest.__version__
    assert prov["python"] == ".".join(map(str, sys.version_info[:3]))
    assert prov["started"] <= prov["finished"]
    (package,) = prov["packages"]
    assert package["name"] == "legal-practice-v1"
    assert package["manifest"] == "example_suites/legal-practice/elizon.yaml"
    assert package["entries"] == ["handle"]
    assert package["git"] is None
    assert len(package["suites"]) == 8  # its two suites and the six probe categories


def _verify_attested(document: str, *attestations: str, cwd: Path
                     ) -> subprocess.CompletedProcess[str]:
    words = [w for name in attestations for w in ("--attestation", name)]
    return elizon_eval("verify", document, *words, cwd=cwd,
                       ELIZON_ATTESTATION_SECRET=ATTESTATION_SECRET)


SHARD_ATTESTATIONS = ("reports/shard-legal.attestation.jsonl",
                      "reports/shard-rest.attestation.jsonl")


def test_the_merged_results_hold_what_the_shards_attested(material: Material) -> None:
    """The workflow's last verify: the merged document against both shards' attestations
    (the shards' provenance merged again as merge merged it), in either order."""
    tmp = material.tmp
    for order in (SHARD_ATTESTATIONS, SHARD_ATTESTATIONS[::-1]):
        done = _verify_attested("reports/elizon.json", *order, cwd=tmp)
        assert done.returncode == 0, done.stderr
        assert "suites and provenance are as attested" in done.stdout
    # each shard against its own: exactly its provenance
    assert _verify_attested("reports/shard-legal.json", SHARD_ATTESTATIONS[0],
                            cwd=tmp).returncode == 0
    # one shard's attestation does not cover the merge
    alone = _verify_attested("reports/elizon.json", SHARD_ATTESTATIONS[1], cwd=tmp)
    assert alone.returncode == 1
    assert "is not in the attestation: added after the run" in alone.stderr


@pytest.mark.parametrize(("edit", "named"), [
    (lambda p: p["packages"][0].update(version="9.9"), "provenance.packages[0].version"),
    (lambda p: p["packages"][-1]["entries"].append("other:model"),
     "provenance.packages[*].entries[*]"),
    (lambda p: p.update(pytest="0.1"), "provenance.pytest"),
    (lambda p: p["merged_from"][0].update(started="2000-01-01T00:00:00+00:00"),
     "provenance.merged_from[0].started"),
])
def test_a_merged_provenance_edited_after_the_merge_fails_verify(
        material: Material, edit: Any, named: str) -> None:
    tmp = material.tmp
    data = json.loads(material.merged.read_text())
    edit(data["provenance"])
    target = tmp / "edited-provenance.json"
    target.write_text(json.dumps(data))
    done = _verify_attested(target.name, *SHARD_ATTESTATIONS, cwd=tmp)
    assert done.returncode == 1, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("ELIZON_ATTESTATION_INVALID: edited-provenance.json: provenance.")
    assert re.search(re.escape(named).replace(r"\*", r"\d+"), line), line
    assert line.endswith(" is not the attested runs' provenance as merged: changed after "
                         "the run")


def test_sign_then_verify_ok_and_a_flipped_byte_is_invalid(material: Material) -> None:
    tmp = material.tmp
    ok = elizon_eval("verify", "reports/shard-rest.json", "--public-key", "elizon-eval.pub",
                     cwd=tmp)
    assert ok.returncode == 0, ok.stderr
    assert "signature valid" in ok.stdout
    edited = tmp / "flipped.json"
    text = (tmp / "reports" / "shard-rest.json").read_text()
    at = text.index('"output": "') + len('"output": "')
    edited.write_text(text[:at] + chr(ord(text[at]) ^ 1) + text[at + 1:])
    shutil.copy(tmp / "reports" / "shard-rest.json.sig", tmp / "flipped.json.sig")
    bad = elizon_eval("verify", "flipped.json", "--public-key", "elizon-eval.pub", cwd=tmp)
    assert bad.returncode == 1
    assert bad.stderr.startswith("ELIZON_RESULTS_SIGNATURE_INVALID: flipped.json: the "
                                 "signature is for another document")
    assert len(bad.stderr.splitlines()) == 1


def test_verify_with_another_key_or_no_signature_is_invalid(
        material: Material, capsys: pytest.CaptureFixture[str]) -> None:
    tmp = material.tmp
    signing.generate(tmp / "other")
    bad = elizon_eval("verify", "reports/elizon.json", "--public-key",
                      "other/elizon-eval.pub", cwd=tmp)
    assert bad.returncode == 1
    assert bad.stderr.startswith("ELIZON_RESULTS_SIGNATURE_INVALID: reports/elizon.json: "
                                 "signed with another key")
    shutil.copy(material.merged, tmp / "unsigned.json")
    assert cli.main(["verify", str(tmp / "unsigned.json"), "--public-key",
                     str(material.public)]) == 1
    assert "no signature file" in capsys.readouterr().err


def test_acknowledge_then_edit_is_not_acknowledged(
        material: Material, capsys: pytest.CaptureFixture[str]) -> None:
    tmp = material.tmp
    doc = tmp / "ack-edit.json"
    shutil.copy(tmp / "full.json", doc)
    assert cli.main(["acknowledge", str(doc)]) == 2  # no terminal, no flag
    refused = capsys.readouterr()
    assert "EVALUATION_NOT_ACKNOWLEDGED: no terminal" in refused.err
    assert not evidence.ack_path(doc).exists()
    assert "MUST-PASS GATE: PASSED" in refused.out  # shown before refusing
    done = elizon_eval("acknowledge", str(doc), "--by", "alice", "--acknowledge-evaluation",
                       cwd=tmp)
    assert done.returncode == 0, done.stderr
    assert cli.main(["verify", str(doc), "--require-ack"]) == 0
    data = json.loads(doc.read_text())
    data["suites"][0]["cases"][0]["output"] = "edited after the acknowledgement"
    doc.write_text(json.dumps(data, indent=2))
    bad = elizon_eval("verify", str(doc), "--require-ack", cwd=tmp)
    assert bad.returncode == 1
    assert bad.stderr.startswith("EVALUATION_NOT_ACKNOWLEDGED: ")
    assert "acknowledges another document" in bad.stderr


def _pty_session(args: list[str], cwd: Path, answer: str) -> tuple[int, str]:
    master, slave = pty.openpty()
    process = subprocess.Popen([str(SCRIPT), *args], cwd=cwd, env=ci_step_env(), stdin=slave,
                               stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    seen = b""
    answered = False
    while True:
        ready, _, _ = select.select([master], [], [], 30)
        assert ready, seen.decode(errors="replace")
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the command exited and closed the terminal
            break
        if not chunk:
            break
        seen += chunk
        if not answered and b'Type "yes"' in seen:
            os.write(master, answer.encode() + b"\n")
            answered = True
    os.close(master)
    return process.wait(timeout=30), seen.decode(errors="replace")


def test_acknowledge_with_a_typed_yes_on_a_terminal(material: Material) -> None:
    tmp = material.tmp
    doc = tmp / "typed.json"
    shutil.copy(tmp / "full.json", doc)
    status, seen = _pty_session(["acknowledge", str(doc), "--by", "bob"], tmp, "yes")
    assert status == 0, seen
    assert "\x1b[" in seen  # colour on a terminal
    ack = json.loads(evidence.ack_path(doc).read_text())
    assert ack["how"] == "typed yes on a terminal"
    assert ack["by"] == "bob"
    assert ack["verdict_seen"]["pass"] is True
    assert cli.main(["verify", str(doc), "--require-ack", "--require-pass"]) == 0


def _regressed(source: Path, target: Path) -> None:
    """A results file in which one must-pass case failed and its suite file changed."""
    data = json.loads(source.read_text())
    suite = next(s for s in data["suites"]
                 if s["path"] == "example_suites/legal-practice/eval/publish-gate-core.yaml")
    suite["sha256"] = "0" * 64
    case = suite["cases"][0]
    case["outcome"] = "failed"
    case["assertions"] = [{"name": "contains", "passed": False, "expected": "x",
                           "found": "missing: 'x'"}]
    target.write_text(json.dumps(results.build(evidence.aggregate_of(data),
                                               provenance=data["provenance"])))


def test_show_and_diff(material: Material, capsys: pytest.CaptureFixture[str]) -> None:
    tmp = material.tmp
    shown = elizon_eval("show", "full.json", cwd=tmp)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert "\x1b[" not in out  # no colour off a terminal
    assert ("example_suites/triage/eval/triage-suite.yaml [triage, must-pass]: 6 passed, "
            "0 failed, 0 timeout, pass rate 1.000 [0.610, 1.000] — PASS") in out
    assert "metric          author baseline  this run" in out
    # model-variants' advisory candidates come first, in path order
    assert "advisory, not passed:\n  example_suites/model-variants/eval/helpdesk.yaml::" in out
    assert "\n  example_suites/triage/eval/extended-suite.yaml::sarcasm" in out
    assert "\nverdict: PASS — The run passed: " in out
    _regressed(tmp / "full.json", tmp / "worse.json")
    assert cli.main(["show", str(tmp / "worse.json")]) == 0
    worse = capsys.readouterr().out
    assert "failed:\n  example_suites/legal-practice/eval/publish-gate-core.yaml::" \
        "route-overdue-invoices — ✗ contains: missing: 'x'" in worse
    assert "verdict: FAIL" in worse
    diff = elizon_eval("diff", "full.json", "worse.json", cwd=tmp)
    assert diff.returncode == 0
    lines = diff.stdout.splitlines()
    total = sum(len(s["cases"]) for s in json.loads((tmp / "full.json").read_text())["suites"])
    assert lines[0] == ("full.json -> worse.json: 1 regressed, 0 improved, 0 new, 0 removed, "
                        f"{total - 1} unchanged")
    assert lines[1].startswith("suite file changed: "
                               "example_suites/legal-practice/eval/publish-gate-core.yaml")
    assert lines[2].split() == ["change", "case", "before", "after"]
    assert lines[3].split() == ["regressed", "example_suites/legal-practice/eval/"
                                "publish-gate-core.yaml::route-overdue-invoices", "passed",
                                "failed"]
    full, worse_path = str(tmp / "full.json"), str(tmp / "worse.json")
    assert cli.main(["diff", full, worse_path, "--fail-on-regression"]) == 1
    assert cli.main(["diff", worse_path, full, "--fail-on-regression"]) == 0
    capsys.readouterr()
    assert cli.main(["verify", worse_path, "--require-pass"]) == 1
    assert capsys.readouterr().err == ("EVALUATION_GATE_FAILED: example_suites/legal-practice/"
                                       "eval/publish-gate-core.yaml (must-pass) passed 8 of 9\n")


def test_merge_refuses_a_case_twice_or_a_changed_suite(
        material: Material, capsys: pytest.CaptureFixture[str]) -> None:
    tmp = material.tmp
    shard = str(tmp / "reports" / "shard-legal.json")
    out = str(tmp / "x.json")
    assert cli.main(["merge", shard, str(tmp / "full.json"), "-o", out]) == 1
    assert f"is in both {shard} and {tmp / 'full.json'}" in capsys.readouterr().err
    _regressed(tmp / "reports" / "shard-legal.json", tmp / "changed.json")
    data = json.loads((tmp / "changed.json").read_text())
    data["suites"] = [s for s in data["suites"] if s["sha256"] == "0" * 64]
    for case in data["suites"][0]["cases"]:
        case["nodeid"] += "-other"
    (tmp / "changed.json").write_text(json.dumps(results.build(evidence.aggregate_of(data))))
    assert cli.main(["merge", shard, str(tmp / "changed.json"), "-o", out]) == 1
    assert "has another file SHA-256" in capsys.readouterr().err
    assert not (tmp / "x.json").exists()


def test_the_private_key_never_appears(material: Material, pytester: pytest.Pytester,
                                       monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    body = "".join(material.key_pem.strip().splitlines()[1:-1])
    raw = base64.b64decode(body)[-32:]  # the Ed25519 seed
    needles = [body, body[:24], raw.hex(), base64.b64encode(raw).decode()]
    texts = list(material.outputs)
    for path in material.tmp.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            texts.append(path.read_text(errors="replace"))
    for text in texts:
        for needle in needles:
            assert needle not in text
    # a key pasted where a path belongs, and a broken key in the variable: never echoed
    secret = "-----BEGIN PRIVATE KEY-----\nU0VDUkVUTUFSS0VSU0VDUkVUTUFSS0VS\n" \
             "-----END PRIVATE KEY-----\n"
    pytester.makefile(".yaml", **{"a.eval": "cases:\n  - id: a\n    input: x\n"})
    pasted = pytester.runpytest(f"--elizon-sign-key={secret}", "--elizon-results=r.json")
    monkeypatch.setenv("ELIZON_SIGN_KEY", secret)
    broken = pytester.runpytest("--elizon-results=r.json")
    capsys.readouterr()
    assert cli.main(["merge", str(material.tmp / "full.json"), "-o",
                     str(pytester.path / "m.json")]) == 2
    merged = capsys.readouterr()
    for result in (pasted, broken):
        text = result.stdout.str() + result.stderr.str()
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert "U0VDUkVU" not in text
    assert "takes the path of a key file, not the key itself" in pasted.stderr.str()
    assert "$ELIZON_SIGN_KEY" in broken.stderr.str()
    assert "U0VDUkVU" not in merged.out + merged.err
    assert "$ELIZON_SIGN_KEY: the PEM block is not a private key" in merged.err


def test_keygen_writes_a_private_key_only_its_owner_reads(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    done = run("keygen", "keys", cwd=tmp_path)
    assert done.returncode == 0
    assert (tmp_path / "keys" / "elizon-eval.key").stat().st_mode & 0o777 == 0o600
    assert cli.main(["keygen", str(tmp_path / "keys")]) == 2
    assert "exists; not overwritten" in capsys.readouterr().err
    module = subprocess.run([sys.executable, "-m", "pytest_elizon_eval", "--help"],
                            capture_output=True, text=True, check=False)
    assert module.returncode == 0
    assert "keygen" in module.stdout


@pytest.mark.parametrize("verb", ["keygen", "show", "diff", "merge", "acknowledge", "verify"])
def test_every_verb_has_help(verb: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main([verb, "--help"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: elizon-eval {verb}")


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([]) == 2
    with pytest.raises(SystemExit) as exit_:
        cli.main(["verify"])
    assert exit_.value.code == 2


def _hostile(tmp: Path, material: Material) -> dict[str, Path]:
    files: dict[str, Path] = {}

    def put(name: str, data: bytes) -> None:
        files[name] = tmp / f"{name}.json"
        files[name].write_bytes(data)

    huge = tmp / "huge.json"
    with huge.open("wb") as fh:
        fh.truncate(evidence.MAX_DOCUMENT_BYTES + 1)  # sparse: nothing written
    files["huge"] = huge
    put("nested", b"[" * 100_000 + b"]" * 100_000)
    put("nested-shallow", b'{"a":' * 500 + b"1" + b"}" * 500)
    put("wrong-schema", b'{"format": "something else"}')
    put("not-json", b"\x00\xff garbage")
    put("duplicate-key", b'{"format": 1, "format": 2}')
    put("nan", b'{"x": NaN}')
    full = json.loads((material.tmp / "full.json").read_text())
    full["verdict"]["pass"] = False
    put("lying-verdict", json.dumps(full).encode())
    return files


def test_hostile_files_are_one_clear_line(material: Material, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    expected = {
        "huge": "larger than 134,217,728 bytes", "nested": "nested deeper than 160 levels",
        "nested-shallow": "nested deeper than 160 levels",
        "wrong-schema": "not a pytest-elizon-eval results file",
        "not-json": "not UTF-8 text", "duplicate-key": "appears twice",
        "nan": "NaN is not a JSON number", "lying-verdict": "verdicts do not follow",
    }
    for name, path in _hostile(tmp_path, material).items():
        assert cli.main(["verify", str(path)]) == 1
        err = capsys.readouterr().err
        assert err.startswith(f"ELIZON_RESULTS_INVALID: {path}: "), err
        assert expected[name] in err
        assert len(err.splitlines()) == 1
        assert cli.main(["show", str(path)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("elizon-eval show: ")
        assert expected[name] in err
    assert cli.main(["show", str(tmp_path)]) == 2
    assert "a directory" in capsys.readouterr().err
    # a signature file for another document, and one that is not a signature file
    doc = tmp_path / "doc.json"
    shutil.copy(material.tmp / "full.json", doc)
    shutil.copy(material.tmp / "reports" / "shard-legal.json.sig", tmp_path / "doc.json.sig")
    assert cli.main(["verify", str(doc), "--public-key", str(material.public)]) == 1
    assert "signature is for another document" in capsys.readouterr().err
    (tmp_path / "doc.json.sig").write_text('{"format": "x"}')
    assert cli.main(["verify", str(doc), "--public-key", str(material.public)]) == 1
    assert "not a pytest-elizon-eval/signature/v1 file" in capsys.readouterr().err
    (tmp_path / "not-a-key.pub").write_text("ssh-ed25519 AAAA...")
    assert cli.main(["verify", str(doc), "--public-key", str(tmp_path / "not-a-key.pub")]) == 2
    assert "not a PEM public key" in capsys.readouterr().err
