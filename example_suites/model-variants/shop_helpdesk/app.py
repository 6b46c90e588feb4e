"""The helpdesk: renders the support prompt for a question and asks the model."""

from __future__ import annotations

from collections.abc import Callable

from pytest_elizon_eval import Answer

from . import models

SHOP = "ACME Outdoor"


def answer(question: str, *, model: str, render: Callable[..., str]) -> Answer:
    """Answer one customer question with ``model``; ``render`` renders a registry prompt
    (the ``elizon_prompt`` fixture in the tests)."""
    prompt = render("support", shop=SHOP, question=question)
    return models.complete(model, prompt)
