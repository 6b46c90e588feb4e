"""The example packages a new user runs first: they pass (test_cli runs them in full, as the
CI workflow's full run beside its shards), and they can fail."""

from __future__ import annotations

import json
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
    assert result.parseoutcomes() == {"passed": 7, "deselected": 78}


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
    # secret) and every one of the 44 probes
    assert outcomes["failed"] == 9 + 44
    result.stdout.fnmatch_lines(["FAILED *publish-gate-core.yaml::guardrail-injection*"])
    result.stdout.fnmatch_lines(["      found:    'ZE…31' at character *"])  # masked
    assert "ZEBRA-7731" not in result.stdout.str()


def test_legal_practice_shows_its_routers_classification(examples: Path,
                                                          pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("example_suites/legal-practice/eval")
    result.stdout.fnmatch_lines([
        "*publish-gate-core.yaml ?legal-practice-v1, must-pass?: 9 passed*",
        "    accuracy  * 1.000 * 1.000 * +0 * at",  # widths follow the latency's Δ
        "    recall.refuse.security  1.000 * 1.000 * +0 * at",
        "    classification (5 cases, 5 labels): accuracy 1.000, macro F1 1.000, weighted F1 1.000",
        "      recall: answer.summarize 1.000, calendar.schedule 1.000, records.query 1.000, "
        "refuse.advice 1.000, refuse.security 1.000"])


def test_the_rag_example_catches_a_retriever_that_finds_the_wrong_passages(
        examples: Path, pytester: pytest.Pytester) -> None:
    (examples / "handbook-rag" / "conftest.py").write_text(
        "import pytest\n"
        "from pytest_elizon_eval import Answer\n"
        "from handbook_rag.assistant import HANDBOOK\n\n"
        "@pytest.fixture(scope='session')\n"
        "def elizon_entry():\n"
        "    return lambda question: Answer(text='Employees accrue 40 days of paid leave.',\n"
        "        value={'intent': 'other'}, contexts=[HANDBOOK[5], HANDBOOK[0]])\n")
    result = pytester.runpytest("example_suites/handbook-rag", "--elizon-results=r.json")
    assert result.parseoutcomes() == {"failed": 9}
    result.stdout.fnmatch_lines([
        "    accuracy  1.000            0.000     -1  below",
        "    classification (5 cases, 5 labels): accuracy 0.000, macro F1 0.000, weighted F1 0.000",
        "      recall: equipment 0.000, facilities 0.000, money 0.000, other —, time-off 0.000"])
    result.stdout.fnmatch_lines([
        "    context_recall     1.000            0.250     -0.75   below",
        "    rag (4 cases): faithfulness 0.000, answer relevancy 0.500, context precision 0.125, "
        "context recall 0.250"])


def test_the_support_agent_reports_its_agent_metrics(examples: Path,
                                                     pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("example_suites/support-agent", "--elizon-results=r.json",
                                "--elizon-markdown=s.md", "--elizon-html=r.html")
    result.stdout.fnmatch_lines([
        "    tool_success_rate  0.800 * 0.857 * +0.0571 * above",
        "    first_tool_rate    1.000 * 1.000 * +0 * at",
        "    agents: 7 tool calls, success 0.857, 1.400 per case, 0.875 per turn, 2.500 turns "
        "per conversation, expected first tool first 1.000",
        "      tools: add_to_cart 3× (errors 0.333), process_payment 2× (errors 0.000), "
        "search_invoices 1× (errors 0.000), summarize 1× (errors 0.000)"])
    suite = json.loads((pytester.path / "r.json").read_text())["suites"][0]
    assert suite["measures"]["agents"]["tool_error_rate.add_to_cart"] == pytest.approx(1 / 3)
    assert suite["metrics"]["tool_calls.add_to_cart"] == 3
    assert "| add_to_cart | 3 | 0.333 |" in (pytester.path / "s.md").read_text()
    assert "<td>add_to_cart</td><td>3</td><td>0.333</td>" in (pytester.path / "r.html").read_text()
