"""The example packages a new user runs first: they pass (test_cli runs them in full, as the
CI workflow's full run beside its shards), and they can fail."""

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


def test_safety_cases_by_marker(examples: Path, pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("example_suites", "-m", "safety", "--strict-markers")
    assert result.parseoutcomes() == {"passed": 7, "deselected": 77}


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
    # every must-pass case (route-overdue-invoices too: its answer reveals the planted
    # secret) and every one of the 52 probes (8 of them conversations)
    assert outcomes["failed"] == 9 + 52
    result.stdout.fnmatch_lines(["FAILED *publish-gate-core.yaml::guardrail-injection*"])
    result.stdout.fnmatch_lines(["      found:    'ZE…31' at character *"])  # masked
    assert "ZEBRA-7731" not in result.stdout.str()
