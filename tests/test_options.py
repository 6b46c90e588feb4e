"""Options, ini keys and what the terminal shows of a manifest: each bad value is one clear
error naming its source; the reference documents every option ``pytest --help`` lists."""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

import pytest

import pytest_elizon_eval
from pytest_elizon_eval.collect import _pytest_compat

from .conftest import ECHO_APP, Packages

ROOT = Path(__file__).resolve().parents[1]
#: The package as imported: the checkout, or site-packages when the wheel is tested.
PACKAGE = Path(pytest_elizon_eval.__file__).parent
SUITE = "cases:\n  - id: a\n    input: hello\n    expect: {contains: [hello]}\n"


def test_a_bad_elizon_strict_names_the_option(packages: Packages,
                                              pytester: pytest.Pytester) -> None:
    packages.package(suite=SUITE, app=ECHO_APP)
    pytester.makeini("[pytest]\nelizon_strict = maybe\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini option elizon_strict in *tox.ini: invalid truth value "
                                 "'maybe'; expected true or false*"])


def test_a_terminal_escape_in_the_manifest_name_is_shown_as_text(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite=SUITE, app=ECHO_APP)
    manifest = pytester.path / "pkg/elizon.yaml"
    text = manifest.read_text().replace("name: pkg", 'name: "evil\\e[2J\\e[31m"')
    manifest.write_text(text)
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    output = result.stdout.str()
    assert "\x1b[2J" not in output
    assert "evil\\x1b[2J\\x1b[31m" in output


def test_an_error_in_an_advisory_suite_fails_the_run_and_every_report_says_so(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite=SUITE, entry=None, gate="advisory")
    result = pytester.runpytest("--elizon-results=results.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    import json

    data = json.loads((pytester.path / "results.json").read_text())
    assert data["verdict"]["pass"] is False
    assert data["suites"][0]["verdict"] == "fail"
    result.stdout.fnmatch_lines(["*pkg/eval/suite.yaml [[]pkg, advisory[]]: *1 error, pass rate "
                                 "* — FAIL"])


def test_an_unsupported_pytest_gets_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _pytest_compat.unsupported_pytest() is None
    monkeypatch.setattr(pytest, "version_tuple", (10, 0, 0))
    assert "tested with pytest 8.x to 9.x" in (_pytest_compat.unsupported_pytest() or "")


def test_xdist_comes_with_the_plugin() -> None:
    requires = metadata.requires("pytest-elizon-eval") or []
    base = [r for r in requires if "extra ==" not in r]
    assert any(r.startswith("pytest-xdist") for r in base)
    assert any(re.match(r"pytest[<>=!,.\d ]*<10", r.replace(" ", "")) for r in base)
    assert metadata.metadata("pytest-elizon-eval")["License-Expression"] == "MIT"


def _help_names(pytester: pytest.Pytester) -> tuple[set[str], set[str]]:
    text = pytester.runpytest("--help").stdout.str()
    options = set(re.findall(r"(--elizon-[a-z-]+)", text))
    ini = set(re.findall(r"^\s+(elizon_[a-z_]+)", text, re.MULTILINE))
    return options, ini


def test_the_reference_documents_every_option_and_ini_key(pytester: pytest.Pytester) -> None:
    options, ini = _help_names(pytester)
    assert "--elizon-entry" in options
    assert "elizon_entry" in ini
    reference = (ROOT / "docs/reference.md").read_text(encoding="utf-8")
    for name in sorted(options | ini):  # the one table; the contract links to it
        assert f"`{name}`" in reference, f"docs/reference.md does not document {name}"


def test_no_reference_cites_a_document_outside_the_repository() -> None:
    files = [ROOT / "README.md", *ROOT.glob("docs/*.md"), *PACKAGE.glob("**/*.py"),
             *ROOT.glob("tests/*.py")]
    cited = [f.name for f in files if re.search(r"SPEC (§|\.md)", f.read_text("utf-8"))]
    assert cited == []
