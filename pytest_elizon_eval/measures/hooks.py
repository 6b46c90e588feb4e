"""The task measures' pytest side: a client of the plugin's own hooks (docs/hooks.md).

After a case ran (``pytest_elizon_case_checks``) it reads the case's label (``expect.route``
or ``expect.label``), its passages and RAG scores (``expect.rag``, grading
``faithfulness`` and ``answerRelevancy`` with the bound judge), and the first tool
``expect.toolCalls.order`` names; it returns them as the case's measures, and the
``label`` and ``rag.*`` thresholds as whole-case checks. Registered by
:mod:`pytest_elizon_eval.plugin`, as the probe pack is.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest

from ..decide.results_data import JudgeRecord, LabelRecord, RagRecord
from ..load.runtime import MAX_LABEL, Expect, RagExpect
from ..run.answer_parts import PathMissing, json_from_text, select
from ..run.assertions import AssertionResult
from ..run.calls import EntryCall, Usage
from ..run.grade_cache import cache_key, judge_identity
from ..run.planning import CaseChecks
from . import rag as rag_metrics

if TYPE_CHECKING:
    from ..collect.nodes import CaseItem
    from ..run.running import CasePlan, CaseRun

__all__ = ["predicted_label", "pytest_elizon_case_checks"]

_NOT_CHECKED = "not checked: there is no output"


def _shown(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 80 else text[:79] + "…"


def predicted_label(expect: Expect, call: EntryCall, route_key: str) -> tuple[str | None, str]:
    """The label the answer gave (None if it gave none) and what was found, in words:
    ``expect.label`` reads the text (or the part at ``path:``), ``expect.route`` the route."""
    value: Any = call.text
    where = "the answer"
    if expect.label is None or expect.path is not None:
        value = call.value
        if isinstance(value, str):  # a structured answer written as JSON text
            read = json_from_text(value)
            if read.error is None:
                value = read.value
        path = route_key if expect.label is None else expect.path
        assert path is not None
        where = f"{'the route' if expect.label is None else 'the label'} at {path}"
        try:
            value = select(value, path)
        except (PathMissing, ValueError) as exc:
            return None, f"no label: {exc}"
    if isinstance(value, str):
        value = value.strip() if expect.label is not None else value
    if not isinstance(value, str):
        return None, f"no label: {where} is {_shown(value)}, not text"
    if not value or len(value) > MAX_LABEL or "\n" in value:
        return None, (f"no label: {where} is {len(value):,} characters of text"
                      f"{' on several lines' if chr(10) in value else ''}; a label is a word "
                      f"or phrase of 1 to {MAX_LABEL} characters on one line")
    return value, f"label {value!r}"


def _label(plan: CasePlan, expect: Expect, calls: Sequence[EntryCall]
           ) -> tuple[LabelRecord, tuple[AssertionResult, ...]]:
    expected = expect.label if expect.label is not None else expect.route
    assert expected is not None
    read = [predicted_label(expect, c, plan.route_key) for c in calls if c.text is not None]
    record = LabelRecord(expected, read[0][0] if read else None)
    if expect.label is None:  # expect.route checks itself (docs/contract.md#assertions)
        return record, ()
    wanted = f"label {expected!r}"
    if not read:
        return record, (AssertionResult("label", None, wanted, _NOT_CHECKED),)
    right = sum(1 for label, _ in read if label == expected)
    if len(calls) == 1:
        return record, (AssertionResult("label", right == 1, wanted, read[0][1]),)
    # repeats: the label passes as the case does, on minPassRate of its runs
    return record, (AssertionResult(
        "label", right / len(calls) >= plan.min_pass_rate - 1e-9, wanted,
        f"{right} of {len(calls)} runs gave it; the first: {read[0][1]}"),)


def _graded(plan: CasePlan, name: str, threshold: float, rubric: str, question: object,
            call: EntryCall, deadline: float
            ) -> tuple[float | None, str, JudgeRecord | None, Usage | None]:
    """A RAG grade, from the grade cache when it has it, and its record: the run's judge
    calls, cache use and judge usage count it as they count a rubric's."""
    judge = plan.judge
    if judge is None:
        return None, "no judge is bound to grade it", None, None
    identity = judge_identity(judge)
    judge_input = rag_metrics.judge_input(question, call.contexts)
    cache = plan.grade_cache
    key = cache_key(identity, rubric, judge_input, call.text or "", 0) if cache else ""
    grade = cache.get(key) if cache is not None else None
    cached = grade is not None
    if grade is None:
        grade = judge.grade(rubric, judge_input, call.text or "", deadline=deadline)
        if cache is not None and grade.score is not None:
            cache.put(key, grade)
    record = JudgeRecord(f"rag.{name}", identity, threshold, score=grade.score,
                         scores=() if grade.score is None else (grade.score,),
                         cached=int(cached), calls=int(not cached))
    from ..run.answers import priced  # deferred: read where a case ran, not where collected

    usage = priced(grade.usage, plan.prices)
    if grade.score is None:
        why = "gave no grade in time" if grade.timed_out else f"failed: {grade.error}"
        return None, f"judge {judge.description} {why}", record, usage
    found = f"{grade.score:.3f} ({grade.reasoning[:200]})" if grade.reasoning \
        else f"{grade.score:.3f}"
    return grade.score, found + (" [cached grade]" if cached else ""), record, usage


def _rag(plan: CasePlan, spec: RagExpect, question: object, call: EntryCall
         ) -> tuple[RagRecord, tuple[AssertionResult, ...], tuple[JudgeRecord, ...],
                    Usage | None]:
    contexts = call.contexts
    graded: list[JudgeRecord] = []
    spent: list[Usage] = []
    relevant = spec.relevant or []
    scores: dict[str, float | None] = {}
    found: dict[str, str] = {}
    if relevant and contexts:
        scores["context_precision"] = rag_metrics.context_precision(contexts, relevant)
        scores["context_recall"] = rag_metrics.context_recall(contexts, relevant)
    # the grades run after the case's answer, which may have used all of its time: they
    # get the case's time limit again, together; one cut off fails its threshold
    deadline = time.monotonic() + plan.timeout_s
    for name, threshold, rubric in (
            ("faithfulness", spec.faithfulness, rag_metrics.FAITHFULNESS_RUBRIC),
            ("answer_relevancy", spec.answer_relevancy, rag_metrics.ANSWER_RELEVANCY_RUBRIC)):
        if threshold is not None and call.text is not None and not call.timed_out \
                and (contexts or name == "answer_relevancy"):
            scores[name], found[name], grade, usage = _graded(
                plan, "faithfulness" if name == "faithfulness" else "answerRelevancy",
                threshold, rubric, question, call, deadline)
            graded.extend([grade] if grade is not None else [])
            spent.extend([usage] if usage is not None else [])
    record = RagRecord(contexts=len(contexts), relevant=len(relevant), **scores)
    checks = []
    for name, key, threshold in (("faithfulness", "faithfulness", spec.faithfulness),
                                 ("answerRelevancy", "answer_relevancy", spec.answer_relevancy),
                                 ("contextPrecision", "context_precision",
                                  spec.context_precision),
                                 ("contextRecall", "context_recall", spec.context_recall)):
        if threshold is None:
            continue
        wanted = f"{name} at least {threshold:g}"
        score = scores.get(key)
        if call.text is None or call.timed_out:
            checks.append(AssertionResult(f"rag.{name}", None, wanted, _NOT_CHECKED))
        elif score is not None:
            checks.append(AssertionResult(f"rag.{name}", score >= threshold, wanted,
                                          found.get(key, f"{score:.3f}")))
        elif not contexts and key != "answer_relevancy":
            checks.append(AssertionResult(
                f"rag.{name}", False, wanted, "the answer came with no passages: return "
                "Answer(contexts=[...]) or a 'contexts' list (docs/contract.md#rag)"))
        else:
            checks.append(AssertionResult(f"rag.{name}", False, wanted, found.get(key, "")))
    # a judge that is not aligned (docs/contract.md#judge-alignment) decides no RAG grade,
    # as it decides no rubric: a failing grade of it is reported and counted as advisory
    advisory = plan.judge_advisory
    graded_names = {g.name for g in graded}
    if advisory:
        checks = [AssertionResult(c.name, None, c.expected, f"{c.found} — counted as advisory: "
                                  f"{advisory}")
                  if c.passed is False and c.name in graded_names else c for c in checks]
        failed = {c.name for c in checks if c.passed is None and c.name in graded_names}
        graded = [replace(g, advisory=advisory) if g.name in failed else g for g in graded]
    return record, tuple(checks), tuple(graded), sum(spent[1:], spent[0]) if spent else None


def _first_tool(expects: Sequence[Expect | None]) -> str | None:
    for expect in expects:
        if expect is not None and expect.tool_calls is not None and expect.tool_calls.order:
            return expect.tool_calls.order[0]
    return None


@pytest.hookimpl
def pytest_elizon_case_checks(item: CaseItem, run: CaseRun) -> CaseChecks | None:
    """The case's task measures, and its ``label`` and ``rag`` checks."""
    plan = item.plan
    if plan is None or not run.attempts:
        return None
    case = plan.case
    expect = case.expect
    measures: dict[str, Any] = {}
    checks: list[AssertionResult] = []
    graded: tuple[JudgeRecord, ...] = ()
    usage: Usage | None = None
    first_tool = _first_tool([expect, *(t.expect for t in case.turns or ())])
    if first_tool is not None:
        measures["first_tool"] = first_tool
    if expect is not None and (expect.label is not None or expect.route is not None):
        measures["label"], found = _label(plan, expect, [a.call for a in run.attempts])
        checks.extend(found)
    if expect is not None and expect.rag is not None:
        question = case.turns[-1].input if case.turns else case.input
        measures["rag"], found, graded, usage = _rag(plan, expect.rag, question,
                                                     run.attempts[0].call)
        checks.extend(found)
    if not measures:
        return None
    return CaseChecks(assertions=tuple(checks), measures=measures, judges=graded,
                      judge_usage=usage)
