"""A stand-in for a sampled LLM: each question has a cycle of answers, taken in turn.

Runs of one case disagree as a model's do at temperature > 0, but deterministically:
the n-th call with a question gets answer n of its cycle, so every run of
``pytest example_suites`` sees the same answers in the same order (each case is run by
one process, and its runs take the answers in the order they are called).
"""

from __future__ import annotations

import threading

_CYCLES = {
    "How many days do customers have to return an item?": [
        "Customers have 30 days to return an item.",
        "You can return it within 30 days.",
        "Returns are accepted for 30 days after delivery.",
        "Customers have 30 days to send it back.",
        "Customers have 14 days to return an item.",  # the sampled mistake
    ],
    "What is the capital of France?": ["Paris."],
    "Say hello to a new customer.": [
        "Hello, and welcome! How can I help you today?",
        "Hello and welcome! How can I help you today?",
    ],
    "Summarise the warranty policy in one line.": [
        "Two years of cover for manufacturing defects.",
        "Two years of cover for manufacturing defects, parts and labour.",
        "Defects are covered for two years.",
        "Manufacturing defects: two years of cover.",
        "One year of cover for accidental damage.",  # the sampled mistake
    ],
}
_calls: dict[str, int] = {}
_lock = threading.Lock()


def answer(question: str) -> str:
    """The package's entry point: the next answer of the question's cycle."""
    cycle = _CYCLES.get(question, ["I do not know."])
    with _lock:
        n = _calls[question] = _calls.get(question, -1) + 1
    return cycle[n % len(cycle)]
