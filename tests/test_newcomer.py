"""What a newcomer sees when their own code goes wrong around a case: the errors pytest gives
for a Python test (issue 38: an ``elizon_entry`` fixture that raises, or asks for a fixture
that does not exist)."""

from __future__ import annotations

import pytest

from .conftest import Packages

SUITE = "cases:\n  - id: a\n    input: hi\n"


def _manifest_without_entry(packages: Packages, conftest: str) -> None:
    packages.package(entry=None, suite=SUITE)
    packages.write("pkg/conftest.py", conftest)


def test_an_entry_fixture_asking_for_a_missing_fixture_says_so_as_pytest_does(
        packages: Packages, pytester: pytest.Pytester) -> None:
    _manifest_without_entry(packages, """
        import pytest

        @pytest.fixture
        def elizon_entry(nosuchfixture):
            return lambda text: text
        """)
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # not INTERNALERROR
    assert result.parseoutcomes() == {"errors": 1}
    result.stdout.fnmatch_lines([
        "*ERROR at setup of case a*",
        "file */pkg/conftest.py, line 3",
        "  @pytest.fixture",
        "  def elizon_entry(nosuchfixture):",
        "E       fixture 'nosuchfixture' not found",
        ">       available fixtures: *elizon_judge*monkeypatch*tmp_path*",
    ])
    assert "source code not available" not in result.stdout.str()


RAISES = """
    import os

    import pytest

    @pytest.fixture
    def elizon_entry():
        key = os.environ["ELIZON_TEST_NO_SUCH_KEY"]
        return lambda text: key
    """


def test_an_entry_fixture_that_raises_is_shown_from_the_users_code_only(
        packages: Packages, pytester: pytest.Pytester) -> None:
    """The tutorial's fixture without its API key: the error ends in the user's conftest,
    with none of pytest's, pluggy's or the plugin's frames (thousands of lines before)."""
    _manifest_without_entry(packages, RAISES)
    result = pytester.runpytest()
    assert result.parseoutcomes() == {"errors": 1}
    section = result.stdout.str().split("ERROR at setup of case a")[1].split("elizon eval")[0]
    # the user's frame (its last line on 3.11+, where os is frozen; os.py's follows on 3.10)
    assert "pkg/conftest.py:7" in section
    assert "KeyError: 'ELIZON_TEST_NO_SUCH_KEY'" in section
    assert ">       key = os.environ[\"ELIZON_TEST_NO_SUCH_KEY\"]" in section
    for machinery in ("_pytest", "pluggy", "pytest_elizon_eval", "_multicall"):
        assert machinery not in section
    assert section.count("\n") < 25
    result.stdout.fnmatch_lines(["ERROR pkg/eval/suite.yaml::a - KeyError: "
                                 "'ELIZON_TEST_NO_SUCH_KEY'"])


def test_full_trace_still_shows_every_frame(packages: Packages,
                                            pytester: pytest.Pytester) -> None:
    _manifest_without_entry(packages, RAISES)
    result = pytester.runpytest("--full-trace")
    section = result.stdout.str().split("ERROR at setup of case a")[1]
    assert "pytest_elizon_eval" in section
    assert "pluggy" in section


def test_a_suite_file_its_manifest_does_not_name_says_so_and_how_to_add_it(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(name="helpdesk", app="def answer(text):\n    return text\n", suite=SUITE)
    packages.write("helpdesk/eval/extended.yaml", SUITE)
    result = pytester.runpytest("helpdesk/eval/extended.yaml")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([
        "EVALUATION_SUITE_INVALID: helpdesk/eval/extended.yaml: not a suite of its package: "
        "helpdesk/elizon.yaml does not name it; add '- suite: ./eval/extended.yaml' to the "
        "evaluation block's suites there (docs/format.md, several suites), or run the whole "
        "package: pytest helpdesk"])
    assert "no match in any of" not in result.stdout.str()


def test_the_suite_a_manifest_names_and_its_folder_still_collect_as_before(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(name="helpdesk", app="def answer(text):\n    return text\n", suite=SUITE)
    packages.write("helpdesk/eval/notes.yaml", "not: a suite\n")  # only walked past, never named
    assert pytester.runpytest("helpdesk/eval/suite.yaml").parseoutcomes() == {"passed": 1}
    assert pytester.runpytest("helpdesk/eval").parseoutcomes() == {"passed": 1}


TWO_GATES = """
name: pkg
entry: app:answer
evaluation:
  suites:
    - suite: ./eval/must.yaml
      gate: must-pass
    - suite: ./eval/extra.yaml
      gate: advisory
"""
MUST = "cases:\n  - id: core\n    input: core\n    expect: {equals: core}\n"
EXTRA = "cases:\n  - id: nice\n    input: nice\n    expect: {equals: nice}\n"
#: Answers each input as itself, except those named in $BROKEN.
BREAKABLE = """
import os

def answer(text):
    return "oops" if text in os.environ.get("BROKEN", "").split(",") else text
"""


def test_diff_fails_on_regression_by_the_rule_pytest_fails_the_run_by(
        packages: Packages, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_elizon_eval import cli

    packages.write("pkg/elizon.yaml", TWO_GATES)
    packages.write("pkg/eval/must.yaml", MUST)
    packages.write("pkg/eval/extra.yaml", EXTRA)
    packages.write("pkg/app.py", BREAKABLE)
    assert pytester.runpytest("--elizon-results=before.json").ret == pytest.ExitCode.OK
    monkeypatch.setenv("BROKEN", "nice")  # only the advisory case regresses
    gated = pytester.runpytest("--elizon-results=advisory.json", "--elizon-baseline=before.json",
                               "--elizon-fail-on-regression")
    assert gated.ret == pytest.ExitCode.OK
    before, advisory = str(pytester.path / "before.json"), str(pytester.path / "advisory.json")
    capsys.readouterr()
    assert cli.main(["diff", before, advisory, "--fail-on-regression"]) == 0  # exited 1 before
    said = capsys.readouterr().out
    assert "regressed  pkg/eval/extra.yaml::nice" in said  # shown, never failing it
    monkeypatch.setenv("BROKEN", "core")
    assert pytester.runpytest("--elizon-results=must.json").ret == pytest.ExitCode.TESTS_FAILED
    assert cli.main(["diff", before, str(pytester.path / "must.json"),
                     "--fail-on-regression"]) == 1
    assert "1 case of must-pass suites regressed (--fail-on-regression)" in \
        capsys.readouterr().out


def test_cases_that_never_ran_are_errors_not_a_significant_regression(
        packages: Packages, pytester: pytest.Pytester,
        capsys: pytest.CaptureFixture[str]) -> None:
    import json

    suite = "cases:\n" + "".join(f"  - id: c{i}\n    input: c{i}\n    expect: {{equals: c{i}}}\n"
                                 for i in range(8))
    packages.package(app="def answer(text):\n    return text\n", suite=suite)
    assert pytester.runpytest("--elizon-results=before.json").ret == pytest.ExitCode.OK
    packages.write("pkg/app.py", "def other(text):\n    return text\n")  # answer is gone
    result = pytester.runpytest("--elizon-results=after.json", "--elizon-baseline=before.json",
                                "--elizon-fail-on-regression")
    assert result.parseoutcomes() == {"errors": 8}
    assert "significant regression" not in result.stdout.str()
    data = json.loads((pytester.path / "after.json").read_text())
    regression = data["regression"]
    assert regression["counts"]["not run"] == 8
    assert regression["counts"]["regressed"] == 0
    assert not [row for row in regression.get("significance", ())
                if row["metric"] == "pass_rate"]
    assert {c["change"] for c in regression["cases"]} == {"not run"}
    # elizon-eval diff by the same rule: the run failed on them, as not run, not regressed
    from pytest_elizon_eval import cli

    capsys.readouterr()
    assert cli.main(["diff", str(pytester.path / "before.json"),
                     str(pytester.path / "after.json"), "--fail-on-regression"]) == 1
    said = capsys.readouterr().out
    assert "8 cases of must-pass suites not run (--fail-on-regression)" in said
    assert "significant regression" not in said
