"""Overrides on the record and signed acknowledgements (issue 26): ``elizon-eval override``,
and ``show``, ``acknowledge`` and ``verify`` with them, including every way they are refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_elizon_eval import cli
from pytest_elizon_eval.decide.outcomes import CaseResult, SuiteInfo
from pytest_elizon_eval.reporting import results
from pytest_elizon_eval.reporting.aggregate import Aggregate
from pytest_elizon_eval.trust import signing

MUST = SuiteInfo("pkg/s.yaml", "pkg", "must-pass", False)
PROVENANCE = {"started": "2026-12-01T10:00:00+00:00", "finished": "2026-12-01T10:01:00+00:00",
              "plugin": "1.0", "pytest": "9", "python": "3.11", "options": {},
              "packages": []}


def _results(path: Path, *outcomes: str) -> Path:
    aggregate = Aggregate()
    for index, outcome in enumerate(outcomes):
        aggregate.add(CaseResult(nodeid=f"pkg/s.yaml::c{index}", case_id=f"c{index}",
                                 line=index + 2, suite=MUST, outcome=outcome).to_data())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results.build(aggregate, provenance=PROVENANCE)))
    return path


@pytest.fixture
def keys(tmp_path: Path) -> dict[str, Path]:
    found = {}
    for name in ("approver", "other"):
        private, public, _ = signing.generate(tmp_path / f"keys-{name}")
        found[name], found[f"{name}.pub"] = private, public
    return found


@pytest.fixture(autouse=True)
def _no_env_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ELIZON_SIGN_KEY", raising=False)


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = cli.main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


REASON = "upstream outage, accepted by the release board"


def _override(capsys: pytest.CaptureFixture[str], doc: Path, key: Path
              ) -> tuple[int, str, str]:
    return _cli(capsys, "override", str(doc), "--approver", "Alice", "--reason", REASON,
                "--sign-key", str(key))


def test_an_override_is_honoured_only_with_its_key(
        tmp_path: Path, keys: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    doc = _results(tmp_path / "r.json", "passed", "failed")
    status, _, err = _cli(capsys, "verify", str(doc), "--require-pass")
    assert status == 1
    assert "EVALUATION_GATE_FAILED" in err
    status, out, _ = _override(capsys, doc, keys["approver"])
    assert status == 0
    assert f"must-pass gate failed, overridden by Alice: {REASON}" in out
    data = json.loads((tmp_path / "r.json.override.json").read_text())
    assert data["failed_suites"] == [{"path": "pkg/s.yaml", "gate": "must-pass", "passed": 1,
                                      "cases": 2}]
    assert data["provenance"]["started"] == PROVENANCE["started"]
    assert data["signature"]["public_key_fingerprint"].startswith("sha256:")
    status, out, err = _cli(capsys, "verify", str(doc), "--require-pass",
                            "--approver-key", str(keys["approver.pub"]))
    assert (status, err) == (0, "")
    assert f"must-pass gate failed, overridden by Alice: {REASON} (signature valid" in out
    # without a key it cannot be checked, so it is not honoured; another key's is refused
    status, _, err = _cli(capsys, "verify", str(doc), "--require-pass")
    assert status == 1
    assert "EVALUATION_OVERRIDE_INVALID" in err
    assert "cannot be honoured without a key" in err
    assert "EVALUATION_GATE_FAILED" in err
    status, _, err = _cli(capsys, "verify", str(doc), "--require-pass",
                          "--public-key", str(keys["other.pub"]), "--approver-key",
                          str(keys["other.pub"]))
    assert status == 1
    assert "signed with another key" in err
    # show says it too, and the page it writes
    status, out, _ = _cli(capsys, "show", str(doc), "--html", str(tmp_path / "r.html"))
    assert f"MUST-PASS GATE: failed, overridden by Alice: {REASON}" in out
    assert "not checked: give --public-key" in out
    assert f"Must-pass gate: failed, overridden by Alice: {REASON}" in \
        (tmp_path / "r.html").read_text()


def test_a_tampered_or_replayed_override_is_refused(
        tmp_path: Path, keys: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    doc = _results(tmp_path / "a" / "r.json", "failed")
    assert _override(capsys, doc, keys["approver"])[0] == 0
    kept = doc.with_name("r.json.override.json")
    text = kept.read_text()
    kept.write_text(text.replace(REASON, "nobody objected"))
    status, _, err = _cli(capsys, "verify", str(doc), "--require-pass",
                            "--approver-key", str(keys["approver.pub"]))
    assert status == 1
    assert "EVALUATION_OVERRIDE_INVALID" in err
    assert "the signature is for another document" in err
    assert "EVALUATION_OVERRIDE_INVALID" in _cli(capsys, "show", str(doc))[1]
    # the genuine override, beside another results file that also failed
    other = _results(tmp_path / "b" / "r.json", "failed", "failed")
    kept.write_text(text)
    shutil.copy(kept, other.with_name("r.json.override.json"))
    status, _, err = _cli(capsys, "verify", str(other), "--require-pass",
                          "--approver-key", str(keys["approver.pub"]))
    assert status == 1
    assert "overrides another results file" in err


def test_refused_when_the_gate_passed_or_there_is_no_key(
        tmp_path: Path, keys: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    passed = _results(tmp_path / "p" / "r.json", "passed")
    status, _, err = _override(capsys, passed, keys["approver"])
    assert status == 1
    assert "the must-pass gate passed: there is nothing to override" in err
    assert not passed.with_name("r.json.override.json").exists()
    failed = _results(tmp_path / "f" / "r.json", "failed")
    status, _, err = _cli(capsys, "override", str(failed), "--approver", "A", "--reason", "R")
    assert status == 2
    assert "an override must be signed: give --sign-key" in err
    status, _, err = _cli(capsys, "override", str(failed), "--approver", " ", "--reason", "R",
                          "--sign-key", str(keys["approver"]))
    assert status == 1
    assert "--approver must be one line" in err
    assert not failed.with_name("r.json.override.json").exists()


def test_the_acknowledgement_is_signed_and_records_the_override(
        tmp_path: Path, keys: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    doc = _results(tmp_path / "r.json", "failed")
    assert _override(capsys, doc, keys["approver"])[0] == 0
    status, out, _ = _cli(capsys, "acknowledge", str(doc), "--acknowledge-evaluation",
                          "--by", "bob", "--sign-key", str(keys["approver"]),
                          "--approver-key", str(keys["approver.pub"]))
    assert status == 0
    assert f"failed, overridden by Alice: {REASON} (at " in out
    ack_path = tmp_path / "r.json.ack.json"
    ack = json.loads(ack_path.read_text())
    assert ack["override"]["approver"] == "Alice"
    assert "signature" in ack
    verify = ("verify", str(doc), "--require-ack", "--require-pass",
              "--approver-key", str(keys["approver.pub"]))
    status, out, _ = _cli(capsys, *verify)
    assert status == 0
    assert "acknowledged by bob at" in out
    assert ", signed by sha256:" in out
    assert "give --approver-key" not in out
    status, out, _ = _cli(capsys, *verify[:3])  # not asked about the gate: still said
    assert status == 0
    assert f"MUST-PASS GATE: failed, overridden by Alice: {REASON}" in out
    assert ", signed by sha256:" in out  # for its content, by a key no one named
    assert "(not checked: give --approver-key)" in out
    ack["by"] = "mallory"  # changed after signing
    ack_path.write_text(json.dumps(ack))
    status, _, err = _cli(capsys, *verify)
    assert status == 1
    assert "EVALUATION_NOT_ACKNOWLEDGED: the acknowledgement's signature does not hold" in err
    del ack["signature"]
    ack_path.write_text(json.dumps(ack))
    status, _, err = _cli(capsys, *verify)
    assert status == 1
    assert "r.json.ack.json is not signed" in err
    # no key to demand a signature: it passes, but says plainly that it is unsigned
    status, out, err = _cli(capsys, "verify", str(doc), "--require-ack")
    assert status == 0
    assert "acknowledged by mallory at" in out
    assert ", UNSIGNED" in out
    assert "warning: " in err
    assert "r.json.ack.json is not signed: anyone who can write beside the results could " \
        "have made it" in err
