"""Binds the order desk to a mock model, so its tests run offline (docs/mock.md).

Each case gets its own mock server from the ``elizon_mock_server`` fixture, and its own
order desk pointed at it. The mock plays the model from what it is sent: it asks for a
lookup of each order number in the question, and answers from the lookups' results.
What the cases test is the desk's own code: that it runs the lookups, sends each result
back under its call's id, reports a failed lookup, adds up the tokens of every model
call, and answers a blank question without asking the model at all.
"""

import json
import re

import pytest
from order_desk import assistant

ORDER_NUMBER = re.compile(r"\b[A-Z]-\d{4}\b")


def play_the_model(request):
    """The mock model's answer to one request (a pytest_elizon_eval.mock.MockRequest)."""
    if request.tool_results:
        said = []
        for result in request.tool_results:
            found = json.loads(result.content)
            said.append(f"I could not find that order ({found['error']})." if "error" in found
                        else f"Order {found['order_id']} is {found['status']}, "
                             f"arriving {found['eta']}.")
        return {"content": " ".join(said), "usage": {"input_tokens": 90, "output_tokens": 20}}
    asked = ORDER_NUMBER.findall(request.last_user_text)
    if asked:
        return {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": number}}
                               for number in asked],
                "usage": {"input_tokens": 60, "output_tokens": 12}}
    return {"content": "Which order do you mean? Order numbers look like A-1001.",
            "usage": {"input_tokens": 55, "output_tokens": 14}}


@pytest.fixture
def elizon_entry(elizon_mock_server):
    server = elizon_mock_server(on_request=play_the_model)
    desk = assistant.OrderDesk(server.url, api_key="offline-test-key")
    yield desk.reply
    desk.close()
    # What the desk sent, checked for every request of the case: a real model needs the
    # system prompt and the tool's definition each time.
    for request in server.model.calls:
        assert request.system == assistant.SYSTEM, "the system prompt was not sent"
        assert [tool["function"]["name"] for tool in request.tools] == ["lookup_order"]
