"""How an operator binds legal-practice-v1 to their own models.

Here both are deterministic stand-ins written for the example (no network,
no model download). To use real models, return your own callables instead:
the entry point takes the case's named inputs as keyword arguments, the
judge takes (rubric, input, output) and returns a score in [0, 1] or
(score, reasoning). docs/tutorial.md ("Bind your real application") shows
the same package bound to an OpenAI-compatible endpoint.
"""

import pytest
from legal_app import assistant, rubric_judge


@pytest.fixture(scope="session")
def elizon_entry():
    return assistant.handle


@pytest.fixture(scope="session")
def elizon_judge():
    return rubric_judge.grade
