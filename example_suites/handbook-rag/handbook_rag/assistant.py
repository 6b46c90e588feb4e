"""Answer a question from the employee handbook, saying which passages were used.

Stands in for a retrieval-augmented LLM application: the passages are ranked by the
words they share with the question (ties in handbook order), the answer is the best
passage, and the two best passages are returned as the answer's contexts.
"""

from __future__ import annotations

import re

from pytest_elizon_eval import Answer

HANDBOOK = [
    "Employees accrue 25 days of paid leave per year.",
    "Unused leave of up to 5 days carries over to the next year.",
    "Expenses are reimbursed within 30 days of an approved claim.",
    "Claims for expenses need a receipt for every item over 20 euros.",
    "Laptops are replaced every three years, or sooner if they fail.",
    "The office is open from 8 to 19 on weekdays.",
]
INTENTS = {"leave": "time-off", "expenses": "money", "reimbursed": "money",
           "laptop": "equipment", "laptops": "equipment", "office": "facilities"}
_STOP = {"the", "a", "an", "of", "to", "is", "are", "do", "i", "my", "how", "what", "when",
         "for", "per", "if", "or", "on", "from", "every", "many", "much", "get", "does"}


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP}


def retrieve(question: str, k: int = 2) -> list[str]:
    asked = _words(question)
    ranked = sorted(range(len(HANDBOOK)), key=lambda i: (-len(asked & _words(HANDBOOK[i])), i))
    return [HANDBOOK[i] for i in ranked[:k]]


def answer(question: str) -> Answer:
    contexts = retrieve(question)
    intent = next((INTENTS[w] for w in re.findall(r"[a-z]+", question.lower()) if w in INTENTS),
                  "other")
    return Answer(text=contexts[0], value={"answer": contexts[0], "intent": intent},
                  contexts=contexts)
