"""The example packages a new user runs first: they pass (test_cli runs them in full, as the
CI workflow's full run beside its shards), and they can fail."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
import yaml

from .conftest import validate_results

EXAMPLES = Path(__file__).parent.parent / "example_suites"


@pytest.fixture
def examples(pytester: pytest.Pytester) -> Path:
    target = pytester.path / "example_suites"
    shutil.copytree(EXAMPLES, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def test_safety_cases_by_marker(examples: Path, pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("example_suites", "-m", "safety", "--strict-markers")
    assert result.parseoutcomes() == {"passed": 7, "deselected": 185}


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


def test_legal_practice_shows_its_judge_alignment_and_grades_once(
        examples: Path, pytester: pytest.Pytester) -> None:
    labels = (examples / "legal-practice/eval/judge-labels.jsonl").read_text().splitlines()
    assert len(labels) >= 30
    first = pytester.runpytest("example_suites/legal-practice", "--elizon-align",
                               "--elizon-report=full")
    assert first.ret == pytest.ExitCode.OK
    first.stdout.fnmatch_lines([
        "judge: 9 calls, 0 grades reused from the cache",
        "judge alignment:",
        "  legal_app.rubric_judge:grade [[]prompt *] on example_suites/legal-practice/eval/"
        "judge-labels.jsonl: κ 0.74 "
        "[[]0.51, 0.98] (substantial), minKappa 0.60, agreement 88%, MAE 0.32, r 0.79, TP 17 "
        "TN 11 FP 3 FN 1 (n=32, pass ≥ 0.8)"])
    second = pytester.runpytest("example_suites/legal-practice", "--elizon-report=full")
    assert second.ret == pytest.ExitCode.OK
    second.stdout.fnmatch_lines(["judge: 0 calls, 9 grades reused from the cache",
                                 "judge alignment:",
                                 "  legal_app.rubric_judge:grade * κ 0.74 *"])
def test_the_noisy_model_shows_intervals_flaky_and_inconclusive_the_same_every_run(
        examples: Path, pytester: pytest.Pytester) -> None:
    import json  # deferred: only this test reads a results file

    seen = []
    # the same outcome counts and rates on every run; the second compares itself with the
    # first, pair by pair, and nothing it finds is a significant regression
    for extra in ([], ["--elizon-baseline=r.json", "--elizon-fail-on-regression"]):
        result = pytester.runpytest("example_suites/noisy-model", "--elizon-results=r.json",
                                    "--elizon-report=full", *extra)
        assert result.ret == pytest.ExitCode.OK
        assert result.parseoutcomes() == {"passed": 3, "advisory_inconclusive": 1}
        data = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))
        seen.append({c["id"]: (c["outcome"], c["repeat"]["passed"], c["repeat"]["runs"])
                     for s in data["suites"] for c in s["cases"]})
    assert seen[0] == seen[1] == {
        "return-window": ("passed", 4, 5), "capital-of-france": ("passed", 12, 12),
        "greeting-is-stable": ("passed", 4, 4),
        "warranty-summary": ("advisory_inconclusive", 8, 10)}  # its suite is advisory
    text = result.stdout.str()
    assert "return-window passed: 4/5 passed (80%, 95% CI 38%–96%) — flaky, within noise" in text
    assert "warranty-summary advisory_inconclusive: 8/10 passed (80%, 95% CI 49%–94%) — flaky, " \
           "inconclusive" in text
    assert "  within noise: example_suites/noisy-model/eval/repeats.yaml pass_rate " \
           "0.933 -> 0.933 (+0 [+0, +0], paired t, p=1, Holm p=1)" in text
    assert data["regression"]["fails_run"] is False


def test_legal_practice_shows_its_routers_classification(examples: Path,
                                                          pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("example_suites/legal-practice/eval", "--elizon-report=full")
    result.stdout.fnmatch_lines([
        "*publish-gate-core.yaml ?legal-practice-v1, must-pass?: 9 passed*",
        # the author's pass rate against this run's: an exact binomial test
        "    pass_rate  * 1.000 * 1.000 * [[]0.701, 1.000[]] * +0 * at, within noise (exact "
        "binomial p=1)",
        # widths follow the latency's Δ
        "    accuracy  * 1.000 * 1.000 * [[]*[]] * +0 * at, within noise (exact binomial p=1)",
        "    recall.refuse.security  1.000 * 1.000 * [[]*[]] * +0 * at, within noise*",
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
    result = pytester.runpytest("example_suites/handbook-rag", "--elizon-results=r.json",
                                "--elizon-report=full")
    assert result.parseoutcomes() == {"failed": 9}
    result.stdout.fnmatch_lines([
        "    accuracy  1.000            0.000     [[]0.000, 0.434[]]  -1  below, significant "
        "(exact binomial p=0 < α 0.05)",
        "    classification (5 cases, 5 labels): accuracy 0.000, macro F1 0.000, weighted F1 0.000",
        "      recall: equipment 0.000, facilities 0.000, money 0.000, other —, time-off 0.000"])
    result.stdout.fnmatch_lines([
        # 4 scores averaging 0.25: the t interval (3 degrees of freedom), kept within 0–1
        "    context_recall     1.000            0.250     [[]0.000, 1.000[]]  -0.75   below",
        "    rag (4 cases): faithfulness 0.000, answer relevancy 0.500, context precision 0.125, "
        "context recall 0.250"])


def test_the_support_agent_reports_its_agent_metrics(examples: Path,
                                                     pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("example_suites/support-agent", "--elizon-results=r.json",
                                "--elizon-markdown=s.md", "--elizon-html=r.html",
                                "--elizon-report=full")
    result.stdout.fnmatch_lines([
        "    tool_success_rate  0.800 * 0.857 * [[]*[]] * +0.0571 * above, within noise*",
        "    first_tool_rate    1.000 * 1.000 * [[]*[]] * +0 * at, within noise*",
        "    agents: 7 tool calls, success 0.857, 1.400 per case, 0.875 per turn, 2.500 turns "
        "per conversation, expected first tool first 1.000",
        "      tools: add_to_cart 3× (errors 0.333), process_payment 2× (errors 0.000), "
        "search_invoices 1× (errors 0.000), summarize 1× (errors 0.000)"])
    suite = json.loads((pytester.path / "r.json").read_text())["suites"][0]
    assert suite["measures"]["agents"]["tool_error_rate.add_to_cart"] == pytest.approx(1 / 3)
    assert suite["metrics"]["tool_calls.add_to_cart"] == 3
    assert "| add_to_cart | 3 | 0.333 |" in (pytester.path / "s.md").read_text()
    page = (pytester.path / "r.html").read_text()
    assert "<td>add_<wbr>to_<wbr>cart</td><td>3</td><td>0.333</td>" in page


def test_model_variants_shows_a_significant_drop_and_one_within_noise(
        examples: Path, pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("example_suites/model-variants", "--elizon-results=r.json",
                                "--elizon-markdown=s.md", "--elizon-html=r.html")
    # the reference passes every case; the candidates are advisory: shown, never failing
    assert result.ret == pytest.ExitCode.OK
    assert result.parseoutcomes() == {"passed": 81, "advisory_failed": 9}
    result.stdout.fnmatch_lines([
        "variant current of model-variants (reference): 30/30 passed, pass rate 1.000 "
        "[[]0.886, 1.000[]], "
        "$0.0102, 1,370 tokens, *",
        # 7 flips, all one way: exact McNemar p = 2 * 0.5**7, times 2 tests by Holm
        "variant cheaper of model-variants (advisory): 23/30 passed, pass rate 0.767 "
        "[[]0.591, 0.882[]], worse "
        "than current (p = 0.0313, Holm), $0.000983, *",
        "variant old-prompt of model-variants (advisory): 28/30 passed, pass rate 0.933 "
        "[[]0.787, 0.982[]], "
        "within noise of current (p = 0.5, Holm), *"])
    data = json.loads((pytester.path / "r.json").read_text("utf-8"))
    validate_results(data)
    (compared,) = data["variants"]
    assert compared["reference"] == "current"
    assert {d["variant"]: (d["test"], d["cases"], d["p_value"], d["adjusted_p"], d["verdict"])
            for d in compared["differences"]} == {
        "cheaper": ("McNemar exact", 30, pytest.approx(2 * 0.5 ** 7),
                    pytest.approx(4 * 0.5 ** 7), "worse"),
        "old-prompt": ("McNemar exact", 30, 0.5, 0.5, "within noise")}
    flips = {d["case_id"]: {o["variant"]: o["outcome"] for o in d["outcomes"]}
             for d in compared["disagreements"]}
    assert {case for case, by in flips.items() if by["cheaper"] == "failed"} == {
        "opened-software", "battery-warranty", "switzerland-customs", "gift-card-refund",
        "damaged-parcel", "price-drop", "discount-codes"}
    assert {case for case, by in flips.items() if by["old-prompt"] == "failed"} == {
        "return-window", "refund-time"}
    assert all(by["current"] == "passed" for by in flips.values())
    # the cheaper model is a tenth of the price: the frontier keeps it beside the reference
    costs = {v["name"]: v["cost_usd"] for v in compared["variants"]}
    assert costs["cheaper"] < costs["old-prompt"] < costs["current"]
    assert all(v["on_frontier"] for v in compared["variants"])
    # each case names the prompt version it rendered, and that version's hash
    templates = yaml.safe_load((examples / "model-variants/prompts/support.yaml").read_text())
    sha = {v: hashlib.sha256(text.encode()).hexdigest()
           for v, text in templates["versions"].items()}
    cases = [c for s in data["suites"] for c in s["cases"]]
    assert len(cases) == 90
    pinned = {"current": "2", "cheaper": "2", "old-prompt": "1"}
    assert all(c["prompts"] == [{"name": "support", "version": pinned[c["variant"]],
                                 "sha256": sha[pinned[c["variant"]]]}] for c in cases)
    summary = (pytester.path / "s.md").read_text("utf-8")
    assert "| cheaper | pass_rate | McNemar exact | 30 | 1.000 | 0.767 | -0.233 " in summary
    assert "| 0.5 | 0.5 | within noise |" in summary
    assert "| example_suites/model-variants/eval/helpdesk.yaml | refund-time | passed | " \
           "passed | failed |" in summary
    page = (pytester.path / "r.html").read_text("utf-8")
    assert page.count('<tr class="disagree">') == 9
    assert '<tr data-verdict="worse"><td>cheaper</td>' in page
    assert '<tr data-verdict="within noise"><td>old-prompt</td>' in page


def test_model_variants_gates_the_cheaper_model_on_its_significant_drop(
        examples: Path, pytester: pytest.Pytester) -> None:
    # The cheaper model as a release candidate: not advisory, gated against the reference by
    # --elizon-fail-on-regression, so its drop fails the run and the old prompt's does not.
    manifest = examples / "model-variants" / "elizon.yaml"
    text = manifest.read_text("utf-8")
    advisory = "    prompts: {support: \"2\"}\n    gate: advisory\n"
    assert text.count(advisory) == 1
    manifest.write_text(text.replace(advisory, "    prompts: {support: \"2\"}\n"), "utf-8")
    result = pytester.runpytest("example_suites/model-variants", "--elizon-fail-on-regression")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # its cases' failures are advisory: the comparison, not each case, gates it
    assert result.parseoutcomes() == {"passed": 81, "advisory_failed": 9}
    result.stdout.fnmatch_lines([
        "variant cheaper of model-variants: 23/30 passed*worse than current*",
        "--elizon-fail-on-regression fails the run on 1 variant result against the reference: "
        "cheaper of model-variants against current: "
        "pass_rate -0.233*"])
