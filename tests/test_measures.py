"""Task measures (docs/contract.md#task-metrics): classification reports against
scikit-learn on fixed and generated inputs, RAG context metrics against hand-computed
cases, agent metrics, labels and passages read from answers (hostile ones included), and
pytester runs through every report: terminal, markdown, HTML heatmap, results JSON and its
schema, author baselines and ``--elizon-baseline`` regressions."""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import math
import random
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, confusion_matrix, precision_recall_fscore_support

from pytest_elizon_eval import Answer
from pytest_elizon_eval.bind.judging import CallableJudge
from pytest_elizon_eval.decide.results_data import (
    CaseResult,
    LabelRecord,
    RagRecord,
    SuiteInfo,
    ToolCallRecord,
    TurnRecord,
)
from pytest_elizon_eval.load.datafiles import load_rows
from pytest_elizon_eval.load.runtime import Expect, RagExpect
from pytest_elizon_eval.measures import rag
from pytest_elizon_eval.measures.agents import agent_metrics
from pytest_elizon_eval.measures.classification import NO_LABEL, report
from pytest_elizon_eval.measures.hooks import _label, _rag, predicted_label
from pytest_elizon_eval.measures.rendering import html_section, markdown_lines, terminal_lines
from pytest_elizon_eval.measures.suite import SuiteMeasures, direction, measure
from pytest_elizon_eval.reporting import results, significance
from pytest_elizon_eval.reporting.regression import Regression
from pytest_elizon_eval.run.answers import from_reply, from_return
from pytest_elizon_eval.run.calls import EntryCall, OutputError
from pytest_elizon_eval.stats import wilson_interval

from .conftest import Packages, loopback
from .test_agents import JsonHandler
from .test_bad_files import error_lines

# -- classification against scikit-learn -----------------------------------------------------


def _same(mine: float | None, theirs: float) -> bool:
    """Undefined is None here and NaN in scikit-learn (zero_division=np.nan)."""
    return mine is None if math.isnan(theirs) else mine is not None and math.isclose(
        mine, theirs, abs_tol=1e-12)


def _assert_like_sklearn(pairs: list[tuple[str, str]]) -> None:
    with warnings.catch_warnings():  # scikit-learn warns of a single class, and so on
        warnings.simplefilter("ignore")
        _compare(pairs)


def _compare(pairs: list[tuple[str, str]]) -> None:
    found = report(pairs)
    if not pairs:
        assert (found.accuracy, found.macro, found.micro, found.weighted, found.labels) == \
            (None, (None,) * 3, (None,) * 3, (None,) * 3, ())
        return
    actual, predicted = [a for a, _ in pairs], [p for _, p in pairs]
    labels = list(found.labels)
    assert sorted(labels) == sorted(set(actual) | set(predicted))
    assert found.accuracy == pytest.approx(accuracy_score(actual, predicted))
    assert [list(r) for r in found.matrix] == confusion_matrix(
        actual, predicted, labels=labels).tolist()
    p, r, f, support = precision_recall_fscore_support(actual, predicted, labels=labels,
                                                       zero_division=np.nan)
    for scores, *theirs in zip(found.per_label, p, r, f, support, strict=True):
        assert _same(scores.precision, theirs[0]), (scores, theirs)
        assert _same(scores.recall, theirs[1]), (scores, theirs)
        assert _same(scores.f1, theirs[2]), (scores, theirs)
        assert scores.support == theirs[3]
    for kind, mine in (("macro", found.macro), ("micro", found.micro),
                       ("weighted", found.weighted)):
        theirs = precision_recall_fscore_support(actual, predicted, labels=labels,
                                                 average=kind, zero_division=np.nan)[:3]
        assert all(_same(m, float(t)) for m, t in zip(mine, theirs, strict=True)), \
            (kind, mine, theirs)


@pytest.mark.parametrize("pairs", [
    pytest.param([("a", "a"), ("a", "b"), ("b", "b"), ("c", "b")], id="mixed"),
    pytest.param([("a", "a"), ("a", "a"), ("b", "a")], id="a-label-never-predicted"),
    pytest.param([("a", "a"), ("a", "z"), ("a", "z")], id="a-label-only-predicted"),
    pytest.param([("a", "a")] * 4, id="a-single-class"),
    pytest.param([("a", "b")] * 3, id="all-wrong"),
    pytest.param([("a", NO_LABEL), ("b", "b")], id="an-answer-without-a-label"),
    pytest.param([], id="empty"),
])
def test_the_report_is_scikit_learns(pairs: list[tuple[str, str]]) -> None:
    _assert_like_sklearn(pairs)


def test_generated_reports_are_scikit_learns() -> None:
    # seeded: the same 40 suites every run, of 0 to 25 cases over 4 actual and 5 predicted
    # labels, so labels never predicted, only predicted, single classes and empty suites recur
    chance = random.Random(25)
    for _ in range(40):
        _assert_like_sklearn([(chance.choice("abcd"), chance.choice("abcde"))
                              for _ in range(chance.randint(0, 25))])


def test_undefined_values_are_shown_as_undefined_never_zero() -> None:
    found = report([("billing", "billing"), ("legal", "billing")])
    legal = found.metrics()
    assert legal["precision.legal"] is None
    assert legal["recall.legal"] == 0.0
    lines = terminal_lines(SuiteMeasures(classification=found))
    assert "recall: billing 1.000, legal 0.000" in lines[1]
    table = markdown_lines(SuiteMeasures(classification=found), str)
    assert "| legal | — | 0.000 | 0.000 | 1 |" in table
    assert "| billing | 1 | 0 |" in table
    assert "| legal | 1 | 0 |" in table
    assert json.loads(json.dumps(found.to_data()))["per_label"][1]["precision"] is None


# -- RAG context metrics, by hand ------------------------------------------------------------

@pytest.mark.parametrize(("contexts", "relevant", "precision", "recall"), [
    # relevant at ranks 1 and 3: (1/1 + 2/3) / 2; spacing and case do not matter
    (["A cat sat.", "Dogs bark.", "The CAT\n sat on the mat."], ["cat sat"], 5 / 6, 1.0),
    # the one relevant passage at rank 2: (1/2) / 1; one of two relevant found
    (["x", "said a b here"], ["a b", "q"], 0.5, 0.5),
    (["x", "y"], ["z"], 0.0, 0.0),  # retrieved, none relevant: 0, not undefined
    ([], ["z"], None, 0.0),  # nothing retrieved: precision undefined
])
def test_context_precision_is_rank_weighted_and_recall_a_share(
        contexts: list[str], relevant: list[str], precision: float | None,
        recall: float) -> None:
    assert rag.context_precision(contexts, relevant) == pytest.approx(precision)
    assert rag.context_recall(contexts, relevant) == pytest.approx(recall)


def test_a_relevant_passage_ranked_first_counts_more() -> None:
    assert rag.context_precision(["rel", "x"], ["rel"]) > \
        rag.context_precision(["x", "rel"], ["rel"])


# -- agent metrics ---------------------------------------------------------------------------

SUITE = SuiteInfo("p/eval/s.yaml", "p", "must-pass", False)


def _case(n: int, calls: list[tuple[str, str | None]], turns: int = 0,
          first: str | None = None) -> CaseResult:
    records = tuple(ToolCallRecord(name, error=error) for name, error in calls)
    return CaseResult(nodeid=f"n{n}", case_id=f"c{n}", line=n, suite=SUITE, outcome="passed",
                      tool_calls=records, turn_count=turns,
                      turns=tuple(TurnRecord(t + 1) for t in range(turns)), first_tool=first)


def test_agent_metrics_count_calls_errors_turns_and_first_tools() -> None:
    found = agent_metrics([
        _case(1, [("search", None), ("summarize", "timeout")], first="search"),
        _case(2, [("summarize", None), ("search", None)], turns=3, first="search"),
        _case(3, []),
    ])
    assert found == {
        "tool_calls": 4, "tool_success_rate": 0.75, "tool_calls_per_case": 4 / 3,
        "tool_calls_per_turn": 4 / 5, "turns_per_conversation": 3.0, "first_tool_rate": 0.5,
        "tool_calls.search": 2, "tool_error_rate.search": 0.0,
        "tool_calls.summarize": 2, "tool_error_rate.summarize": 0.5}
    many = SuiteMeasures(agents=agent_metrics([_case(1, [(f"t{n}", None) for n in range(10)])]))
    assert terminal_lines(many)[1].endswith("t7 1× (errors 0.000), … 2 more")
    assert agent_metrics([_case(1, [])]) is None  # no agent here
    undefined = agent_metrics([_case(1, [], turns=2)])
    assert undefined is not None
    assert undefined["tool_success_rate"] is None
    assert (direction("recall.x"), direction("tool_error_rate.x"), direction("support.x")) == \
        (1, -1, 0)



def test_every_rate_gives_its_counts_for_an_interval() -> None:
    results = [_case(1, [("search", None), ("summarize", "timeout")], first="search"),
               _case(2, [("summarize", None), ("search", None)], first="search")]
    results[0] = dataclasses.replace(results[0], label=LabelRecord("a", "a"),
                                     rag=RagRecord(faithfulness=0.5, context_recall=1.0))
    results[1] = dataclasses.replace(results[1], label=LabelRecord("a", "b"),
                                     rag=RagRecord(faithfulness=1.0))
    found = measure(results)
    assert found.proportions == {
        "accuracy": (1, 2), "precision.a": (1, 1), "precision.b": (0, 1), "recall.a": (1, 2),
        "tool_success_rate": (3, 4), "tool_error_rate.search": (0, 2),
        "tool_error_rate.summarize": (1, 2), "first_tool_rate": (1, 2)}
    for metric, (successes, trials) in found.proportions.items():  # the rates they stand for
        assert found.metrics()[metric] == successes / trials
    assert found.samples["faithfulness"] == (0.5, 1.0)
    assert found.samples["context_recall"] == (1.0,)
    assert wilson_interval(*found.proportions["accuracy"])[0] < 0.5


# -- labels and passages read from answers ---------------------------------------------------

def _call(value: Any) -> EntryCall:
    return EntryCall(value=value, text=value if isinstance(value, str) else json.dumps(value))


@pytest.mark.parametrize(("expect", "value", "found"), [
    ({"label": "spam"}, "  spam\n", ("spam", "label 'spam'")),
    ({"label": "pos", "path": "$.sentiment"}, {"sentiment": "pos"}, ("pos", "label 'pos'")),
    ({"label": "pos", "path": "$.sentiment"}, '{"sentiment": "neg"}', ("neg", "label 'neg'")),
    ({"route": "a.b"}, {"route": "a.c"}, ("a.c", "label 'a.c'")),
    ({"label": "pos", "path": "$.sentiment"}, {"sentiment": {"x": 1}},
     (None, 'no label: the label at $.sentiment is {"x": 1}, not text')),
    ({"label": "pos", "path": "$.sentiment"}, {"mood": "pos"},
     (None, "no label: $.sentiment is missing: no key 'sentiment' at $ (it has: mood)")),
    ({"label": "pos"}, "x" * 5000, (None, "no label: the answer is 5,000 characters of text; "
                                          "a label is a word or phrase of 1 to 200 characters "
                                          "on one line")),
    ({"label": "pos"}, "pos\nbecause", (None, "no label: the answer is 11 characters of text "
                                              "on several lines; a label is a word or phrase "
                                              "of 1 to 200 characters on one line")),
])
def test_the_predicted_label_or_why_there_is_none(expect: dict[str, Any], value: Any,
                                                  found: tuple[str | None, str]) -> None:
    assert predicted_label(Expect.model_validate(expect), _call(value), "route") == found


def test_a_repeated_case_is_labelled_by_its_first_run_and_checked_on_all() -> None:
    """docs/contract.md#classification: one label per case (its first run's), so accuracy
    counts cases, as McNemar pairs them; the label assertion weighs every run."""
    plan = SimpleNamespace(route_key="route", min_pass_rate=0.5)
    runs = [_call(x) for x in ("spam", "ham", "spam")]
    record, (check,) = _label(plan, Expect.model_validate({"label": "ham"}), runs)  # type: ignore[arg-type]
    assert record == LabelRecord("ham", "spam")
    assert check.passed is False
    assert check.found == "1 of 3 runs gave it; the first: label 'spam'"


def test_a_failing_rag_grade_of_a_judge_not_aligned_is_advisory() -> None:
    """docs/contract.md#judge-alignment: the RAG grades obey the judge's alignment as a
    rubric's do; the context metrics, which need no judge, still count."""
    judge = CallableJudge(lambda rubric, case_input, output: 0.2, "app:judge")
    why = "judge not aligned: κ 0.41 < 0.60"
    plan = SimpleNamespace(judge=judge, grade_cache=None, prices={}, timeout_s=5.0,
                           judge_advisory=why)
    spec = RagExpect.model_validate({"faithfulness": 0.5, "contextRecall": 1,
                                     "relevant": ["missing"]})
    call = EntryCall(value="x", text="x", contexts=("p",))
    _, checks, graded, _ = _rag(plan, spec, "q?", call)  # type: ignore[arg-type]
    assert [(c.name, c.passed) for c in checks] == [("rag.faithfulness", None),
                                                    ("rag.contextRecall", False)]
    assert checks[0].found.endswith(f"counted as advisory: {why}")
    assert [(g.name, g.calls, g.advisory) for g in graded] == [("rag.faithfulness", 1, why)]


@pytest.mark.parametrize(("contexts", "message"), [
    ("one passage", "Answer.contexts is a str; expected a list of the passages"),
    (["ok", 3], r"Answer.contexts\[1\] is an int, not a string"),
    (["x" * 1_000_001], r"Answer.contexts\[0\] is 1,000,001 characters long"),
    (["p"] * 1001, "Answer.contexts has 1,001 passages; at most 1,000"),
])
def test_hostile_contexts_say_what_is_wrong(contexts: Any, message: str) -> None:
    with pytest.raises(OutputError, match=message):
        from_return(Answer("text", contexts=contexts))


def test_contexts_come_from_every_form_of_answer() -> None:
    assert from_return(Answer("a", contexts=["p1", "p2"])).contexts == ("p1", "p2")
    assert from_reply(json.dumps({"text": "a", "contexts": ["p"]}), "answer").contexts == ("p",)
    chat = {"choices": [{"message": {"content": "a"}}], "contexts": ["p", "q"]}
    assert from_reply(json.dumps(chat), "openai").contexts == ("p", "q")
    with pytest.raises(OutputError, match="the chat completion's contexts is a dict"):
        from_reply(json.dumps({**chat, "contexts": {"p": 1}}), "openai")
    assert EntryCall.from_data(_call("a").__class__(text="a", contexts=("p",)).to_data()
                               ).contexts == ("p",)  # a cassette keeps them


MANIFEST = "name: pkg\nentry: app:answer\nevaluation:\n  suite: ./eval/suite.yaml\n"


@pytest.mark.parametrize(("expect", "message"), [
    ("label: 3", "cases[0].expect.label: expected a string, found the number 3"),
    ("label: ' spam'", "cases[0].expect.label: label ' spam' must be a word or phrase on one*"),
    (f"label: {'x' * 201}", "cases[0].expect.label: * at most 200 characters"),
    (f"route: {'x' * 201}", "cases[0].expect.route: * at most 200 characters"),
    ("route: ''", "cases[0].expect.route: must not be empty"),
    ("rag: {contextRecall: 0.5}", "cases[0].expect.rag: contextPrecision and contextRecall "
                                  "are measured against the passages*add 'relevant:'*"),
    ("rag: {faithfulness: 2}", "cases[0].expect.rag.faithfulness: must be at most 1.0, found 2"),
    ("rag: {relevant: [3]}", "cases[0].expect.rag.relevant[0]: expected a string, found the "
                             "number 3"),
    ("rag: {faithfullness: 0.5}", "*unknown key 'faithfullness' (did you mean 'faithfulness'?)*"),
])
def test_hostile_labels_and_rag_keys_get_errors_at_their_lines(
        tmp_path: Path, expect: str, message: str) -> None:
    suite = f"cases:\n  - id: c\n    input: hi\n    expect:\n      {expect}\n"
    lines = error_lines(tmp_path, suite, MANIFEST)
    pattern = f"EVALUATION_SUITE_INVALID: pkg/eval/suite.yaml:5: {message}".replace("[", "[[]")
    assert any(fnmatch.fnmatch(line, pattern) for line in lines), lines


# -- through every report --------------------------------------------------------------------

ROUTER = """
import json, pathlib

def answer(text):
    routes = json.loads((pathlib.Path(__file__).parent / "routes.json").read_text())
    for word, route in routes.items():
        if word in text:
            return {"route": route}
    return {"answer": "no idea"}
"""
ROUTER_SUITE = """
cases:
  - {id: a, input: pay the invoice, expect: {route: billing}}
  - {id: b, input: another invoice, expect: {route: billing}}
  - {id: c, input: sign the contract, expect: {route: legal}}
  - {id: d, input: renew the lease, expect: {route: legal}}
  - {id: e, input: hello there, expect: {route: smalltalk}}
"""


ROUTES = {"invoice": "billing", "contract": "legal", "lease": "billing"}


def _router(packages: Packages, baseline: str = "", **routes: str) -> None:
    packages.package(suite=ROUTER_SUITE, app=ROUTER, baseline=baseline)
    packages.write("pkg/routes.json", json.dumps({**ROUTES, **routes}))


def _results(pytester: pytest.Pytester, name: str = "results.json") -> dict[str, Any]:
    return results.check(json.loads((pytester.path / name).read_text()))


def test_a_router_suite_reports_its_classification_everywhere(
        packages: Packages, pytester: pytest.Pytester) -> None:
    _router(packages, "accuracy: 0.8;recall.legal: 1.0;precision.smalltalk: 0.5")
    result = pytester.runpytest("--elizon-results=results.json", "--elizon-markdown=s.md",
                                "--elizon-html=r.html", "--elizon-report=full")
    result.assert_outcomes(passed=3, failed=2)
    result.stdout.fnmatch_lines([
        # a task proportion is tested against the author's rate as pass_rate is
        "    accuracy             0.800            0.600     [[]0.231, 0.882[]]  -0.2  below, "
        "within noise (exact binomial p=0.263)",
        "    recall.legal         1.000            0.500     [[]0.095, 0.905[]]  -0.5  below, "
        "significant (exact binomial p=0 < α 0.05)",
        "    precision.smalltalk  0.500            -         -               -     nothing "
        "measured in this run",
        "    classification (5 cases, 4 labels): accuracy 0.600, macro F1 0.367, weighted F1 "
        "0.587",
        "      recall: billing 1.000, legal 0.500, smalltalk 0.000, (no label) —",
    ])
    suite = _results(pytester)["suites"][0]
    assert suite["metrics"]["precision.smalltalk"] is None  # never predicted: undefined
    assert suite["metrics"]["support.billing"] == 2
    found = suite["measures"]["classification"]
    assert found["labels"] == ["billing", "legal", "smalltalk", "(no label)"]
    assert found["matrix"] == [[2, 0, 0, 0], [1, 1, 0, 0], [0, 0, 0, 1], [0, 0, 0, 0]]
    assert [c.get("label") for c in suite["cases"]][3:] == [
        {"expected": "legal", "predicted": "billing"}, {"expected": "smalltalk",
                                                        "predicted": None}]
    markdown = (pytester.path / "s.md").read_text()
    assert "| smalltalk | — | 0.000 | 0.000 | 1 |" in markdown
    assert "| legal | 1 | 1 | 0 | 0 |" in markdown
    assert "| *macro avg* | 0.556 | 0.500 | 0.367 | 5 |" in markdown
    page = (pytester.path / "r.html").read_text()
    assert page.count('<rect class="hm"') == 16
    assert ('data-actual="legal" data-predicted="billing" data-count="1" ' in page)
    assert "Classification: accuracy 0.600 (5 cases)" in page


def test_a_fall_in_accuracy_since_an_earlier_run_is_tested_for_significance(
        packages: Packages, pytester: pytest.Pytester) -> None:
    _router(packages, "recall.legal: 1.0", lease="legal")
    pytester.runpytest("--elizon-results=before.json")
    packages.write("pkg/routes.json", json.dumps(ROUTES))
    result = pytester.runpytest("--elizon-baseline=before.json", "--elizon-results=after.json",
                                "--elizon-markdown=s.md", "--elizon-report=full")
    # one case flipped: McNemar on per-case correctness, as for pass_rate; on 5 cases no
    # result could be significant, so it cannot tell (not "within noise")
    result.stdout.fnmatch_lines([
        "  metric regressed (untested): pkg/eval/suite.yaml macro_f1 0.500 -> 0.367",
        "  metric regressed (untested): pkg/eval/suite.yaml recall.legal 1.000 -> 0.500",
        "  too few cases to tell: pkg/eval/suite.yaml accuracy 0.800 -> 0.600 (-0.2 "
        "[[]-0.551, +0.151[]], McNemar exact, p=1, Holm p=1)"])
    assert "micro_f1" not in result.stdout.str()  # it is accuracy: tested as accuracy
    regression = _results(pytester, "after.json")["regression"]
    moved = {m["metric"]: m["regressed"] for m in regression["metrics"]}
    # headline metrics and those the author names; not every per-label one
    assert moved == {"macro_f1": True, "recall.legal": True}
    tested = {c["metric"]: (c["test"], c["cases"], c["verdict"])
              for c in regression["significance"]}
    assert tested["accuracy"] == ("McNemar exact", 5, "too few cases to tell")
    markdown = (pytester.path / "s.md").read_text()
    assert "❌ metric regressed (untested): `pkg/eval/suite.yaml` recall.legal 1.000 → 0.500" \
        in markdown
    assert "| `pkg/eval/suite.yaml` | accuracy | McNemar exact | 0.800 | 0.600 |" in markdown


def test_accuracy_and_rag_means_are_paired_tests_that_gate_a_regression() -> None:
    """Pure: accuracy by McNemar on per-case correctness, the RAG means by a paired t-test,
    read from an earlier results file's cases as from this run's; a significant fall of
    either blocks under --elizon-fail-on-regression, as the pass rate's does."""
    def case(correct: bool, faithful: float) -> dict[str, Any]:
        return {"outcome": "passed", "label": {"expected": "a",
                                               "predicted": "a" if correct else "b"},
                "rag": {"faithfulness": faithful, "contexts": 2, "relevant": 0}}

    before = [significance.of_file(case(True, 0.9 - i / 100)) for i in range(8)]
    after = [significance.of_result(dataclasses.replace(
        _case(i, []), label=LabelRecord("a", "b"), rag=RagRecord(faithfulness=0.5 - i / 50)))
        for i in range(8)]
    rows = {c.metric: c for c in significance.suite_changes(
        "s.yaml", list(zip(before, after, strict=True)), 0.95, 0.05)}
    # pass_rate did not move; every case's label went wrong: 8 flips one way
    assert rows["pass_rate"].verdict == "within noise"
    accuracy = rows["accuracy"]
    assert (accuracy.test, accuracy.before, accuracy.after) == ("McNemar exact", 1.0, 0.0)
    assert accuracy.p_value == pytest.approx(2 * 0.5 ** 8)
    assert accuracy.verdict == "significant regression"
    faithful = rows["faithfulness"]
    assert faithful.test == "paired t"
    assert faithful.regressed
    assert (faithful.before, faithful.change) == (pytest.approx(0.865), pytest.approx(-0.435))
    unlabelled = significance.of_file({"outcome": "passed", "label": {"x": 1}, "rag": "junk"})
    assert unlabelled.correct is None
    assert unlabelled.values["faithfulness"] is None
    gated = Regression("before.json", (), (), significance=tuple(rows.values()),
                       must_pass=("s.yaml",), fail_on_regression=True)
    assert {c.metric for c in gated.blocking()} == {"accuracy", "faithfulness"}


RETRIEVER = """
from pytest_elizon_eval import Answer

DOCS = ["Refunds are paid within 14 days.", "Shipping is free over 50 euros.",
        "Support answers within one day."]

def answer(text):
    ranked = sorted(DOCS, key=lambda d: -len(set(d.lower().split()) & set(text.lower().split())))
    if "nothing" in text:
        return Answer(text="I do not know.")
    return Answer(text=ranked[0], contexts=ranked[:2])

def judge(rubric, case_input, output):
    assert set(case_input) == {"question", "contexts"}
    return (0.9, "grounded") if rubric.startswith("Faithfulness") else (0.6, "partly")
"""
RAG_SUITE = """
cases:
  - id: refunds
    input: how fast are refunds paid
    expect:
      rag: {faithfulness: 0.8, answerRelevancy: 0.5, contextRecall: 1,
            relevant: [Refunds are paid within 14 days.]}
  - id: shipping
    input: is shipping free
    expect:
      rag: {contextPrecision: 0.9, relevant: [support answers]}
  - id: nothing
    input: nothing here
    expect:
      rag: {faithfulness: 0.5, relevant: [x]}
"""


def test_rag_scores_gate_cases_and_reach_every_report(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(suite=RAG_SUITE, app=RETRIEVER, gate="advisory",
                     baseline="faithfulness: 0.9;context_recall: 0.5")
    (pytester.path / "pkg/elizon.yaml").write_text(
        (pytester.path / "pkg/elizon.yaml").read_text() + "judge: app:judge\n")
    result = pytester.runpytest("--elizon-results=results.json", "--elizon-markdown=s.md",
                                "--elizon-html=r.html", "-rA", "--elizon-report=full")
    assert result.parseoutcomes() == {"passed": 1, "advisory_failed": 2}
    result.stdout.fnmatch_lines([
        "*rag.contextPrecision*", "*expected: contextPrecision at least 0.9*", "*found: *0.000*",
    ])
    result.stdout.fnmatch_lines(["*found: * the answer came with no passages: return "
                                 "Answer(contexts=*"])
    result.stdout.fnmatch_lines(["    rag (3 cases): faithfulness 0.900, answer relevancy "
                                 "0.600, context precision 0.500, context recall 0.500"])
    # the RAG grades are judge calls of the run, and go through the grade cache
    result.stdout.fnmatch_lines(["judge: 2 calls, 0 grades reused from the cache"])
    suite = _results(pytester)["suites"][0]
    assert [(j["name"], j["score"], j["calls"]) for j in suite["cases"][0]["judges"]] == [
        ("rag.faithfulness", 0.9, 1), ("rag.answerRelevancy", 0.6, 1)]
    again = pytester.runpytest("--elizon-results=again.json", "--elizon-report=full")
    again.stdout.fnmatch_lines(["judge: 0 calls, 2 grades reused from the cache"])
    assert _results(pytester, "again.json")["suites"][0]["cases"][0]["rag"] == \
        suite["cases"][0]["rag"]
    assert [c["rag"] for c in suite["cases"]] == [
        {"faithfulness": 0.9, "answer_relevancy": 0.6, "context_precision": 1.0,
         "context_recall": 1.0, "contexts": 2, "relevant": 1},
        {"faithfulness": None, "answer_relevancy": None, "context_precision": 0.0,
         "context_recall": 0.0, "contexts": 2, "relevant": 1},
        {"faithfulness": None, "answer_relevancy": None, "context_precision": None,
         "context_recall": None, "contexts": 0, "relevant": 1}]
    assert suite["measures"]["rag"]["cases"] == 3
    rows = {r["metric"]: r["comparison"] for r in suite["comparison"]}
    assert rows["faithfulness"] == "at"
    assert rows["context_recall"] == "at"
    assert "| 0.900 | 0.600 | 0.500 | 0.500 |" in (pytester.path / "s.md").read_text()
    assert "<h3>RAG (3 cases)</h3>" in (pytester.path / "r.html").read_text()
    # the RAG grades go through the grade cache: counted, then reused and marked so
    result.stdout.fnmatch_lines(["judge: 2 calls, 0 grades reused from the cache"])
    again = pytester.runpytest("--elizon-results=results.json", "--elizon-report=full")
    again.stdout.fnmatch_lines(["judge: 0 calls, 2 grades reused from the cache"])
    found = _results(pytester)["suites"][0]["cases"][0]["assertions"]
    assert [a["found"] for a in found[:2]] == ["0.900 (grounded) [cached grade]",
                                               "0.600 (partly) [cached grade]"]


COMMAND = """
import json, sys
question = sys.stdin.read()
contexts = {"refunds": ["Refunds take 14 days.", "Shipping is free."],
            "broken": [{"passage": 1}]}
key = "refunds" if "refund" in question else "broken"
print(json.dumps({"text": "Refunds take 14 days.", "contexts": contexts[key]}))
"""


def test_a_command_gives_its_passages_in_the_answer_envelope(
        packages: Packages, pytester: pytest.Pytester) -> None:
    packages.package(entry="{command: [python, retrieve.py], output: answer}", suite="""
        cases:
          - id: refunds
            input: how long do refunds take
            expect: {rag: {contextRecall: 1, contextPrecision: 1, relevant: [refunds take]}}
          - id: broken
            input: anything
            expect: {rag: {contextRecall: 1, relevant: [x]}}
        """)
    packages.write("pkg/retrieve.py", COMMAND)
    result = pytester.runpytest("--elizon-results=results.json")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*OutputError: the envelope's contexts?0? is a dict, not a "
                                 "string (a passage is its text)"])
    case = _results(pytester)["suites"][0]["cases"][0]
    assert case["rag"]["contexts"] == 2
    assert case["rag"]["context_precision"] == 1.0


def test_the_docs_print_the_built_in_rubrics_word_for_word() -> None:
    text = (Path(__file__).parent.parent / "docs" / "contract.md").read_text(encoding="utf-8")
    quoted = " ".join(line[2:] for line in text.splitlines() if line.startswith("> "))
    assert rag.FAITHFULNESS_RUBRIC in quoted
    assert rag.ANSWER_RELEVANCY_RUBRIC in quoted


def test_a_turn_cannot_hold_a_cases_measures(tmp_path: Path) -> None:
    suite = ("cases:\n  - id: c\n    turns:\n      - input: hi\n        expect:\n"
             "          label: greeting\n")
    assert error_lines(tmp_path, suite, MANIFEST) == [
        "EVALUATION_SUITE_INVALID: pkg/eval/suite.yaml:5: cases[0].turns[0].expect: label and "
        "rag are measured once per case: put them in the case's own expect (they read the "
        "conversation's last answer)"]


def test_a_csv_label_is_text_even_when_it_reads_as_json() -> None:
    rows = load_rows(b"id,input,expect.label\nc,hi,404\n", ".csv")
    assert rows["cases"][0]["expect"]["label"] == "404"


class RagServer(JsonHandler):
    """On loopback: a RAG service that answers as a chat completion with the passages it
    used beside "choices", and a judge endpoint that scores by what it is asked."""

    prompts: list[str]

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        said = body["messages"][-1]["content"]
        if self.path.startswith("/judge"):  # the judge is sent to <url>/chat/completions
            self.prompts.append(said)
            score = 0.25 if said.startswith("Rubric:\nFaithfulness") else 0.75
            content = json.dumps({"score": score, "reasoning": "graded"})
            self.reply({"choices": [{"message": {"role": "assistant", "content": content}}]})
            return
        self.reply({"choices": [{"message": {"role": "assistant", "content": "Free over 50."}}],
                    "contexts": ["Shipping is free over 50 euros.", "Refunds take 14 days."]})


def test_a_rag_service_and_an_endpoint_judge_over_http(
        packages: Packages, pytester: pytest.Pytester) -> None:
    prompts: list[str] = []
    with loopback(type("Handler", (RagServer,), {"prompts": prompts})) as base:
        packages.package(entry=f"{{url: '{base}/chat', output: openai, model: m}}", suite="""
            cases:
              - id: shipping
                input: is shipping free
                expect:
                  rag: {faithfulness: 0.5, answerRelevancy: 0.5,
                        contextPrecision: 1, relevant: [shipping is free]}
            """)
        (pytester.path / "pkg/elizon.yaml").write_text(
            (pytester.path / "pkg/elizon.yaml").read_text()
            + f"judge: {{url: '{base}/judge', model: j}}\n")
        result = pytester.runpytest("--elizon-results=results.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*✗ rag.faithfulness*"])
    case = _results(pytester)["suites"][0]["cases"][0]
    assert case["rag"] == {"faithfulness": 0.25, "answer_relevancy": 0.75,
                           "context_precision": 1.0, "context_recall": 1.0, "contexts": 2,
                           "relevant": 1}
    assert [a["passed"] for a in case["assertions"]] == [False, True, True]
    faithful = next(p for p in prompts if p.startswith("Rubric:\nFaithfulness"))
    assert rag.FAITHFULNESS_RUBRIC in faithful
    assert '"[1]": "Shipping is free over 50 euros."' in faithful
    assert "The application's answer:\nFree over 50." in faithful


def test_hostile_labels_stay_text_in_every_report() -> None:
    import xml.etree.ElementTree as ET  # only here: the JUnit report is parsed back

    from pytest_elizon_eval.reporting import html, junit, markdown
    from pytest_elizon_eval.reporting.aggregate import Aggregate

    aggregate = Aggregate()
    for n, (expected, predicted) in enumerate([('a<b>"|`x', "\x07bell"), ("ok", "ok")]):
        aggregate.add(CaseResult(nodeid=f"n{n}", case_id="c", line=n + 1, suite=SUITE,
                                 outcome="passed",
                                 label=LabelRecord(expected, predicted)).to_data())
    page = html.render(aggregate)
    assert "a<b>" not in page
    assert 'data-actual="a&lt;b&gt;&quot;|`x"' in page
    assert "\x07" not in page
    assert "| a&lt;b&gt;\"\\|\\`x | — | 0.000 | 0.000 | 1 |" in markdown.render(aggregate)
    ET.fromstring(junit.render(aggregate))  # still XML


def test_a_judged_rag_metric_needs_a_bound_judge(packages: Packages,
                                                 pytester: pytest.Pytester) -> None:
    packages.package(app=RETRIEVER, suite="""
        cases:
          - {id: judged, input: refunds, expect: {rag: {faithfulness: 0.5}}}
          - {id: unjudged, input: refunds, expect: {rag: {contextRecall: 0, relevant: [x]}}}
        """)
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["ELIZON_JUDGE_UNBOUND: no judge is bound for this case*"])


def test_a_matrix_of_many_labels_is_left_out_of_markdown_and_html_not_json() -> None:
    found = report([(f"l{n}", f"l{n + 1}") for n in range(41)])
    measures = SuiteMeasures(classification=found)
    assert "The confusion matrix of 42 labels is left out here (at most 40 are drawn); the " \
        "results JSON has it." in markdown_lines(measures, str)
    page = html_section(measures, str)
    assert "<rect" not in page
    assert "The confusion matrix of 42 labels is left out here" in page
    assert len(found.to_data()["matrix"]) == 42
    assert html_section(SuiteMeasures(classification=report([("a", "b")])), str).count(
        '<rect class="hm"') == 4
