"""Controls and compliance (issue 26): cases and probes declare controls; the Compliance
section rolls findings up by control in every report, and the signature covers it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_elizon_eval import cli
from pytest_elizon_eval.decide.outcomes import CaseResult, SuiteInfo
from pytest_elizon_eval.errors import ElizonError
from pytest_elizon_eval.load.packages import load_suite
from pytest_elizon_eval.reporting import compliance, results
from pytest_elizon_eval.reporting.aggregate import Aggregate
from pytest_elizon_eval.trust import signing

from .conftest import Packages

SUITE = SuiteInfo("pkg/s.yaml", "pkg", "must-pass", False)
ADVISORY = SuiteInfo("pkg/a.yaml", "pkg", "advisory", True)


def _aggregate(*cases: tuple[str, str, tuple[str, ...]], framework: str | None = None,
               advisory: tuple[tuple[str, str, tuple[str, ...]], ...] = ()) -> Aggregate:
    found = Aggregate()
    found.framework = framework
    for suite, chosen in ((SUITE, cases), (ADVISORY, advisory)):
        for index, (name, outcome, controls) in enumerate(chosen):
            found.add(CaseResult(nodeid=f"{suite.path}::{name}", case_id=name, line=index + 2,
                                 suite=suite, outcome=outcome, controls=controls).to_data())
    return found


def test_compliant_only_when_every_control_passes_and_no_failure_is_unmapped() -> None:
    assert compliance.build(_aggregate(("a", "failed", ()))) is None  # nothing declared
    passing = compliance.build(_aggregate(("a", "passed", ("CC6.1",)), ("b", "passed", ())))
    assert passing is not None
    assert passing["compliant"] is True
    unmapped = compliance.build(_aggregate(("a", "passed", ("CC6.1",)), ("b", "error", ())))
    assert unmapped is not None
    assert unmapped["compliant"] is False  # every control passed, but a failure is unmapped
    assert unmapped["controls"][0]["passed"] is True
    assert unmapped["unmapped_failures"] == [{"nodeid": "pkg/s.yaml::b", "outcome": "error"}]
    failed = compliance.build(_aggregate(("a", "passed", ("CC6.1", "CC7.2")),
                                         ("b", "timeout", ("CC7.2",)), framework="SOC 2"))
    assert failed is not None
    assert failed["framework"] == "SOC 2"
    assert failed["compliant"] is False
    assert [(c["id"], c["passed"], len(c["cases"])) for c in failed["controls"]] == [
        ("CC6.1", True, 1), ("CC7.2", False, 2)]
    # the seed rolls up gate violations: an advisory suite's failure is listed with its
    # control, and fails neither the control nor, unmapped, the run
    advisory = _aggregate(("a", "passed", ("CC6.1",)),
                          advisory=(("b", "failed", ("CC6.1",)), ("c", "timeout", ())))
    rolled = compliance.build(advisory)
    assert rolled is not None
    assert rolled["compliant"] is True
    assert rolled["controls"] == [{"id": "CC6.1", "passed": True, "cases": [
        {"nodeid": "pkg/a.yaml::b", "outcome": "advisory_failed"},
        {"nodeid": "pkg/s.yaml::a", "outcome": "passed"}]}]
    assert rolled["unmapped_failures"] == []
    assert [line for line, _ in compliance.terminal_lines(advisory)] == [
        "compliance: compliant — 1 of 1 controls passed",
        "  passed CC6.1: 1/2 cases passed; failed: pkg/a.yaml::b (advisory_failed, not "
        "counted)"]
    # an error in an advisory suite (the case could not run) is a violation
    broken = compliance.build(_aggregate(advisory=(("b", "error", ("CC6.1",)),)))
    assert broken is not None
    assert broken["controls"][0]["passed"] is False
    named = compliance.build(_aggregate(("a", "passed", ()), framework="ISO 27001"))
    assert named == {"framework": "ISO 27001", "compliant": True, "controls": [],
                     "unmapped_failures": []}


def test_controls_in_yaml_and_csv_suites_and_a_bad_one_at_its_line(tmp_path: Path) -> None:
    csv = tmp_path / "s.csv"
    csv.write_text('id,input,controls\na,x,"CC6.1, A.8.12"\nb,y,["LLM01"]\n')
    assert [c.controls for c in load_suite(csv, "s.csv").cases] == [["CC6.1", "A.8.12"],
                                                                    ["LLM01"]]
    bad = tmp_path / "s.yaml"
    bad.write_text("cases:\n  - id: a\n    input: x\n    controls: [CC6.1, 'has space']\n")
    with pytest.raises(ElizonError) as info:
        load_suite(bad, "s.yaml")
    assert info.value.lines == [
        "EVALUATION_SUITE_INVALID: s.yaml:4: cases[0].controls[1]: control 'has space' must "
        "be an identifier such as LLM01 or CC6.1 (letters, digits and . _ : / -, at most 64 "
        "characters)"]


PACKAGE_SUITE = """
    cases:
      - id: access-controlled
        input: hello
        controls: [CC6.1]
        expect: {contains: [hello]}
      - id: logs-kept
        input: hello
        controls: [CC6.1, CC7.2]
        expect: {contains: [missing]}
      - id: unmapped-failure
        input: hello
        expect: {contains: [absent]}
      - id: unmapped-pass
        input: hello
    """


def _run(packages: Packages, pytester: pytest.Pytester, suite: str, *args: str
         ) -> tuple[pytest.RunResult, dict[str, Any]]:
    packages.write("pkg/app.py", "def echo(text):\n    return text\n")
    packages.write("pkg/elizon.yaml", "name: pkg\nentry: app:echo\nevaluation:\n"
                   "  suite: ./s.yaml\n")
    packages.write("pkg/s.yaml", suite)
    tmp = pytester.path
    result = pytester.runpytest("pkg", "-p", "no:cacheprovider", f"--elizon-results={tmp}/r.json",
                                f"--elizon-markdown={tmp}/s.md", f"--elizon-html={tmp}/h.html",
                                *args)
    data = json.loads((tmp / "r.json").read_text())
    results.check(data)
    return result, data


def test_the_section_in_every_report_and_the_framework_named(
        packages: Packages, pytester: pytest.Pytester,
        capsys: pytest.CaptureFixture[str]) -> None:
    result, data = _run(packages, pytester, PACKAGE_SUITE, "--elizon-compliance=SOC 2",
                        f"--elizon-junit={pytester.path}/e.xml",
                        f"--junitxml={pytester.path}/p.xml")
    section = data["compliance"]
    assert section["framework"] == "SOC 2"
    assert section["compliant"] is False
    assert [(c["id"], c["passed"]) for c in section["controls"]] == [
        ("CC6.1", False), ("CC7.2", False)]
    assert section["unmapped_failures"] == [{"nodeid": "pkg/s.yaml::unmapped-failure",
                                             "outcome": "failed"}]
    cases = {c["id"]: c for c in data["suites"][0]["cases"]}
    assert cases["logs-kept"]["controls"] == ["CC6.1", "CC7.2"]
    result.stdout.fnmatch_lines([
        "compliance (SOC 2): NOT compliant — 0 of 2 controls passed, 1 failed case unmapped "
        "to a control",
        "  FAILED CC6.1: 1/2 cases passed; failed: pkg/s.yaml::logs-kept",
        "  FAILED CC7.2: 0/1 cases passed; failed: pkg/s.yaml::logs-kept",
        "  unmapped failed: pkg/s.yaml::unmapped-failure"])
    # JUnit: each case's controls, as a suite property (ours) and a case property (pytest's)
    ours = (pytester.path / "e.xml").read_text()
    assert '<property name="case.logs-kept.controls" value="CC6.1,CC7.2"/>' in ours
    assert "case.unmapped-pass.controls" not in ours
    pytests = (pytester.path / "p.xml").read_text()
    assert 'name="elizon_controls" value="CC6.1,CC7.2"' in pytests
    assert pytests.count('name="elizon_controls"') == 2
    markdown = (pytester.path / "s.md").read_text()
    assert "## ❌ Compliance" in markdown
    assert "| CC7.2 | ❌ failed | 0/1 | pkg/s.yaml::logs-kept (failed) |" in markdown
    page = (pytester.path / "h.html").read_text()
    assert '<section id="compliance"><h2>Compliance</h2><p>compliance (SOC 2): NOT compliant' \
        in page
    # show, reading the file again, keeps the framework
    capsys.readouterr()
    cli.main(["show", str(pytester.path / "r.json")])
    assert "compliance (SOC 2): NOT compliant" in capsys.readouterr().out


def test_the_section_is_signed_with_the_results(packages: Packages, pytester: pytest.Pytester,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    _, public, _ = signing.generate(pytester.path / "keys")
    _run(packages, pytester, PACKAGE_SUITE,
         f"--elizon-sign-key={pytester.path / 'keys' / signing.KEY_FILE}")
    doc = pytester.path / "r.json"
    assert cli.main(["verify", str(doc), "--public-key", str(public)]) == 0
    data = json.loads(doc.read_text())
    data["compliance"]["compliant"] = True  # a finding rewritten after the run
    doc.write_text(json.dumps(data))
    assert cli.main(["verify", str(doc), "--public-key", str(public)]) == 1
    assert "ELIZON_RESULTS_SIGNATURE_INVALID" in capsys.readouterr().err


def test_all_controls_pass_is_compliant_and_a_bad_name_is_refused(
        packages: Packages, pytester: pytest.Pytester) -> None:
    passing = PACKAGE_SUITE.replace("[missing]", "[hello]").replace("[absent]", "[hello]")
    result, data = _run(packages, pytester, passing, "-v")
    assert data["compliance"]["compliant"] is True
    assert data["compliance"]["framework"] is None
    result.stdout.fnmatch_lines(["compliance: compliant — 2 of 2 controls passed"])
    result = pytester.runpytest("pkg", "-p", "no:cacheprovider", "--elizon-compliance=")
    result.stderr.fnmatch_lines(["*--elizon-compliance=: the compliance framework's name must "
                                 "be one line of 1 to 80 printable characters"])


def test_probes_roll_up_by_their_owasp_controls(packages: Packages,
                                                pytester: pytest.Pytester) -> None:
    packages.write("pkg/app.py", "def echo(text):\n    return text\n")
    packages.write("pkg/elizon.yaml", """
        name: pkg
        entry: app:echo
        evaluation:
          suites:
            - probes: [tool-misuse]
        """)
    pytester.runpytest("pkg", "-p", "no:cacheprovider", f"--elizon-results={pytester.path}/r.json")
    data = json.loads((pytester.path / "r.json").read_text())
    assert [(c["id"], c["passed"], len(c["cases"])) for c in data["compliance"]["controls"]] \
        == [("LLM01", False, 8), ("LLM06", False, 8)]  # an echo leaks the canary
    assert data["compliance"]["unmapped_failures"] == []
