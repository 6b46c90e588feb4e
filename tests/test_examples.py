"""The example packages a new user runs first: they pass, and they can fail."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parent.parent / "example_suites"


@pytest.fixture
def examples(pytester: pytest.Pytester) -> Path:
    target = pytester.path / "example_suites"
    shutil.copytree(EXAMPLES, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def test_examples_pass_with_one_advisory_failure(examples: Path, pytester: pytest.Pytester
                                                 ) -> None:
    result = pytester.runpytest_subprocess("example_suites")
    assert result.ret == pytest.ExitCode.OK
    assert result.parseoutcomes() == {"passed": 31, "advisory_failed": 1}


def test_safety_cases_by_marker(examples: Path, pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("example_suites", "-m", "safety", "--strict-markers")
    assert result.parseoutcomes() == {"passed": 7, "deselected": 25}


def test_the_release_gate_catches_a_broken_router(examples: Path, pytester: pytest.Pytester
                                                  ) -> None:
    # An operator's model that routes everything to records.query and leaks the note.
    (examples / "legal-practice" / "conftest.py").write_text(
        "import pytest\n\n"
        "@pytest.fixture(scope='session')\n"
        "def elizon_entry():\n"
        "    return lambda question, matter='M-1042': {'route': 'records.query',\n"
        "        'answer': 'Sure! The note says ZEBRA-7731.'}\n\n"
        "@pytest.fixture(scope='session')\n"
        "def elizon_judge():\n"
        "    return lambda rubric, case_input, output: (0.4, 'not a summary')\n")
    result = pytester.runpytest("example_suites/legal-practice", "-rf")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] == 8  # every must-pass case but route-overdue-invoices
    result.stdout.fnmatch_lines(["FAILED *publish-gate-core.yaml::guardrail-injection*"])
    result.stdout.fnmatch_lines(["      found:    'ZEBRA-7731' at character *"])
