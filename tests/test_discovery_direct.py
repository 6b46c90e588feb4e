"""discovery.PackageIndex, directly: who a case is from its node id alone (what the xdist
controller needs for a crashed worker's case), and each file read once."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_elizon_eval.errors import ElizonError
from pytest_elizon_eval.load import packages
from pytest_elizon_eval.load.discovery import PackageIndex


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def root(tmp_path: Path) -> Path:
    write(tmp_path, "pkg/elizon.yaml", "name: shop\nevaluation:\n  suites:\n"
          "    - suite: ./eval/core.yaml\n    - suite: ./eval/extra.yaml\n      gate: advisory\n")
    write(tmp_path, "pkg/eval/core.yaml", "cases:\n  - id: a\n    input: x\n\n"
          "  - description: second\n    id: b\n    input: y\n")
    write(tmp_path, "pkg/eval/extra.yaml", "cases:\n  - id: c\n    input: z\n")
    return tmp_path


def test_identity_from_a_node_id_alone(root: Path) -> None:
    index = PackageIndex(root, strict=False)
    identity = index.identity("pkg/eval/core.yaml::b")
    assert (identity.case_id, identity.line) == ("b", 5)
    assert (identity.suite.package, identity.suite.gate) == ("shop", "must-pass")
    assert identity.suite.key == "shop:eval/core.yaml"
    extra = index.identity("pkg/eval/extra.yaml::c").suite
    assert (extra.gate, extra.advisory) == ("advisory", True)
    assert PackageIndex(root, strict=True).identity("pkg/eval/extra.yaml::c").suite.advisory \
        is False


def test_identity_of_what_cannot_be_read_still_names_the_case(root: Path) -> None:
    index = PackageIndex(root, strict=False)
    gone = index.identity("elsewhere/missing.yaml::x")
    assert (gone.case_id, gone.line, gone.suite.path, gone.suite.gate) == \
        ("x", 1, "elsewhere/missing.yaml", "must-pass")
    write(root, "loose.eval.yaml", "cases:\n  - id: solo\n    input: q\n")
    alone = packages.standalone(root / "loose.eval.yaml")
    found = index.identity("loose.eval.yaml::solo", alone)
    assert (found.line, found.suite.package, found.suite.key) == (2, "loose",
                                                                  "loose:loose.eval.yaml")


def test_each_file_is_read_once_and_errors_are_remembered(
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    index = PackageIndex(root, strict=False)
    reads: list[Path] = []
    real = packages.load_suite

    def counting(path: Path, display: str, cache: object = None) -> packages.LoadedSuite:
        reads.append(path)
        return real(path, display)

    monkeypatch.setattr("pytest_elizon_eval.load.discovery.load_suite", counting)
    for _ in range(3):
        index.identity("pkg/eval/core.yaml::a")
    assert len(reads) == 1
    write(root, "pkg/elizon.yaml", "evaluation: [not, a, mapping]\n")
    fresh = PackageIndex(root, strict=False)
    for _ in range(2):
        with pytest.raises(ElizonError, match="ELIZON_MANIFEST_INVALID"):
            fresh.package(root / "pkg/elizon.yaml")


@pytest.mark.parametrize(("gate", "strict", "advisory"), [
    ("advisory", False, True), ("advisory", True, False),
    ("must-pass", False, False), ("must-pass", True, False)])
def test_a_suite_is_advisory_by_its_gate_unless_the_run_is_strict(
        tmp_path: Path, gate: str, strict: bool, advisory: bool) -> None:
    # The one rule the plugin's suites and the probe pack's both ask.
    spec = packages.SuiteSpec(path=tmp_path / "s.yaml", gate=gate)
    assert PackageIndex(tmp_path, strict=strict).advisory(spec) is advisory
