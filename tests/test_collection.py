"""Which files are collected (docs/format.md#node-ids), node ids, locations, and pytest's selection
options."""

from __future__ import annotations

import pytest

from .conftest import ECHO_APP, Packages

SUITE = """
cases:
  - id: first-case
    input: alpha
    expect:
      contains: [alpha]

  - id: second-case
    input: beta
    expect:
      equals: beta
"""
IDS = ["pkg/eval/suite.yaml::first-case", "pkg/eval/suite.yaml::second-case"]


def collected(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if "::" in line and not line.startswith(" ")]


@pytest.mark.parametrize(
    "target",
    ["", "pkg", "pkg/elizon.yaml", "pkg/eval", "pkg/eval/suite.yaml"],
)
def test_node_ids_are_the_suite_path_however_the_suite_is_reached(
    packages: Packages, pytester: pytest.Pytester, target: str
) -> None:
    packages.package(suite=SUITE, app=ECHO_APP)
    result = pytester.runpytest("--collect-only", "-q", *([target] if target else []))
    assert collected(result) == IDS
    assert result.ret == 0


def test_a_case_runs_by_its_node_id(packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite=SUITE, app=ECHO_APP)
    result = pytester.runpytest("-v", "pkg/eval/suite.yaml::second-case")
    result.stdout.fnmatch_lines(["pkg/eval/suite.yaml::second-case PASSED*"])
    result.assert_outcomes(passed=1)


def test_suites_list_form_collects_every_set(packages: Packages, pytester: pytest.Pytester
                                             ) -> None:
    packages.write("pkg/elizon.yaml", """
        entry: app:answer
        evaluation:
          suites:
            - suite: ./eval/core.yaml
              gate: must-pass
            - suite: ./eval/extended.yaml
              gate: advisory
    """)
    packages.write("pkg/app.py", ECHO_APP)
    packages.write("pkg/eval/core.yaml", SUITE)
    packages.write("pkg/eval/extended.yaml", "cases:\n  - id: more\n    input: x\n")
    result = pytester.runpytest("--collect-only", "-q")
    assert sorted(collected(result)) == sorted(
        [i.replace("suite.yaml", "core.yaml") for i in IDS] + ["pkg/eval/extended.yaml::more"])


def test_a_suite_outside_the_walk_is_collected_through_its_manifest(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    # A hidden folder is in norecursedirs: only the manifest can reach it.
    packages.write("pkg/elizon.yaml", "entry: app:answer\nevaluation:\n  suite: .eval/s.yaml\n")
    packages.write("pkg/app.py", ECHO_APP)
    packages.write("pkg/.eval/s.yaml", SUITE)
    result = pytester.runpytest("-v")
    result.stdout.fnmatch_lines(["pkg/.eval/s.yaml::first-case PASSED*"])
    result.assert_outcomes(passed=2)


def test_standalone_suite_files_match_the_ini_globs(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    packages.write("checks/smoke.eval.yaml", "cases:\n  - id: smoke\n    input: hi\n")
    packages.write("checks/other.yaml", "cases:\n  - id: ignored\n    input: hi\n")
    packages.write("checks/extra.evals.yml", "cases:\n  - id: extra\n    input: hi\n")
    result = pytester.runpytest("--collect-only", "-q")
    assert collected(result) == ["checks/smoke.eval.yaml::smoke"]
    pytester.makeini("[pytest]\nelizon_suite_files = *.eval.yaml *.evals.yml\n")
    result = pytester.runpytest("--collect-only", "-q")
    assert sorted(collected(result)) == ["checks/extra.evals.yml::extra",
                                         "checks/smoke.eval.yaml::smoke"]


def test_a_manifest_without_evaluation_yields_no_tests(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    packages.write("pkg/elizon.yaml", "name: quiet\nentry: app:answer\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_reportinfo_and_location_point_at_the_case_line(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    packages.package(suite=SUITE, app=ECHO_APP)
    items, _ = pytester.inline_genitems()
    assert [(item.location[0], item.location[1]) for item in items] == [
        ("pkg/eval/suite.yaml", 1), ("pkg/eval/suite.yaml", 6)]  # 0-based: lines 2 and 7
    path, line, _ = items[1].reportinfo()
    assert (path.name, line) == ("suite.yaml", 6)


def test_keyword_deselect_and_exitfirst(packages: Packages, pytester: pytest.Pytester) -> None:
    suite = SUITE + "\n  - id: third-case\n    input: gamma\n    expect:\n      equals: nope\n"
    suite += "\n  - id: fourth-case\n    input: delta\n"
    packages.package(suite=suite, app=ECHO_APP)
    pytester.runpytest("-k", "second").assert_outcomes(passed=1, deselected=3)
    pytester.runpytest("--deselect", "pkg/eval/suite.yaml::third-case").assert_outcomes(
        passed=3, deselected=1)
    pytester.runpytest("-x").assert_outcomes(passed=2, failed=1)


def test_last_failed_reruns_only_the_failed_case(
    packages: Packages, pytester: pytest.Pytester
) -> None:
    suite = SUITE.replace("equals: beta", "equals: not-beta")
    packages.package(suite=suite, app=ECHO_APP)
    pytester.runpytest().assert_outcomes(passed=1, failed=1)
    result = pytester.runpytest("--lf", "-v")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["run-last-failure: rerun previous 1 failure*",
                                 "pkg/eval/suite.yaml::second-case FAILED*"])
    assert "first-case" not in result.stdout.str()
