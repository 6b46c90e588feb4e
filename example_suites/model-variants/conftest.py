"""Binds the helpdesk to each case's variant (docs/format.md#prompts).

The fixture is function-scoped, as ``elizon_prompt`` is: each case gets a renderer of the
prompt version its variant pins (``prompts:`` in elizon.yaml), and the plugin records the
versions it rendered in the case's result. The variant's ``params`` (the model's name)
reach the returned function as keyword arguments.
"""

import pytest
from shop_helpdesk import app


@pytest.fixture
def elizon_entry(elizon_prompt):
    def answer(question, model):
        return app.answer(question, model=model, render=elizon_prompt)
    return answer
