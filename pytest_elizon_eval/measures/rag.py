"""RAG metrics of one answer (docs/contract.md#rag), as the seed's ``runRagEval``.

``contextPrecision`` and ``contextRecall`` compare the passages the answer came with
(best first) with the ``relevant:`` passages, with no judge: a retrieved passage is
relevant when it contains one of the ``relevant:`` passages, compared case-insensitively
with runs of whitespace as one space.

* context precision (rank-weighted, as RAGAS defines it): the mean, over the relevant
  retrieved passages, of the precision at their rank —
  ``Σ_k precision@k · rel_k / (relevant retrieved)``; 0 when none is relevant, undefined
  (None) when nothing was retrieved. A relevant passage ranked first weighs more than one
  ranked last.
* context recall: the share of the ``relevant:`` passages that some retrieved passage
  contains.

``faithfulness`` and ``answerRelevancy`` are graded by the bound judge with the built-in
rubrics below (docs/contract.md#rag prints them). Stdlib only; no pytest import here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["ANSWER_RELEVANCY_RUBRIC", "FAITHFULNESS_RUBRIC", "context_precision",
           "context_recall", "judge_input", "relevance"]

FAITHFULNESS_RUBRIC = (
    "Faithfulness. The input holds a question and the numbered passages (contexts) the "
    "answer was built from. Split the answer into its factual claims. Score the share of "
    "claims that the passages support (1: every claim is grounded in the passages; 0: none "
    "is). A claim that is true but not in the passages is not grounded. An answer that only "
    "says it cannot answer makes no claims: score it 1.")
ANSWER_RELEVANCY_RUBRIC = (
    "Answer relevancy. The input holds a question (and the passages the answer was built "
    "from, which do not matter here). Score how directly and completely the answer addresses "
    "the question (1: it answers exactly what was asked; 0: it is about something else or "
    "evades it). Do not judge whether it is true; penalise padding and parts that answer a "
    "different question.")

_SPACE = re.compile(r"\s+")


def _normal(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


def relevance(contexts: Sequence[str], relevant: Sequence[str]) -> list[bool]:
    """For each retrieved passage, whether it contains a ``relevant:`` passage."""
    wanted = [_normal(r) for r in relevant]
    return [any(w in _normal(c) for w in wanted) for c in contexts]


def context_precision(contexts: Sequence[str], relevant: Sequence[str]) -> float | None:
    flags = relevance(contexts, relevant)
    if not flags:
        return None
    hits, total = 0, 0.0
    for rank, hit in enumerate(flags, 1):
        if hit:
            hits += 1
            total += hits / rank
    return total / hits if hits else 0.0


def context_recall(contexts: Sequence[str], relevant: Sequence[str]) -> float | None:
    if not relevant:
        return None
    found = [_normal(c) for c in contexts]
    return sum(1 for r in relevant if any(_normal(r) in c for c in found)) / len(relevant)


def judge_input(question: object, contexts: Sequence[str]) -> dict[str, object]:
    """What the judge is shown as the case's input: the question and numbered passages."""
    return {"question": question,
            "contexts": {f"[{i}]": passage for i, passage in enumerate(contexts, 1)}}
