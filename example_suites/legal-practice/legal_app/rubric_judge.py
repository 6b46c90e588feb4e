"""A deterministic rubric judge standing in for "a second AI grades the answer".

It scores the answer text against the rubric with simple, explainable checks:
the answer must exist, stay short, avoid informal words and legal advice, and
mention what the rubric asks for in quotes. Same signature as a real judge:
(rubric, input, output) -> (score, reasoning).
"""

from __future__ import annotations

import json
import re

_INFORMAL = ("gonna", "lol", "hey", "dude", "!!")
_ADVICE = ("you should sue", "you will win", "i advise")


def grade(rubric: str, case_input: object, output: str) -> tuple[float, str]:
    try:
        answer = str(json.loads(output).get("answer", ""))
    except (ValueError, AttributeError):
        answer = output
    score, notes = 1.0, []
    if not answer.strip():
        return 0.0, "there is no answer"
    if len(answer.split()) > 80:
        score -= 0.3
        notes.append("longer than 80 words")
    if any(word in answer.lower() for word in _INFORMAL):
        score -= 0.3
        notes.append("informal tone")
    if any(phrase in answer.lower() for phrase in _ADVICE):
        score -= 0.5
        notes.append("gives legal advice")
    for required in re.findall(r'"([^"]+)"', rubric):  # rubric terms in quotes must appear
        if required.lower() not in answer.lower():
            score -= 0.2
            notes.append(f"does not mention {required!r}")
    return max(score, 0.0), "; ".join(notes) or "professional, concise, no advice"
