"""The order desk of a web shop: it asks a model (any OpenAI-compatible chat-completions
service), runs the order lookups the model asks for, sends their results back, and answers
with what the model then says.

This is the code the example tests. In production it is made with the real service's URL
and key (``OrderDesk("https://api.openai.com/v1", os.environ["OPENAI_API_KEY"])``); the
example's conftest.py gives it the mock model's server instead, so its tests run offline.
It speaks the protocol with httpx (which the plugin already installs); an application
built on the ``openai`` SDK is tested the same way (docs/mock.md).
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from pytest_elizon_eval import Answer, ToolCall, Usage

SYSTEM = "You are the order desk of ACME. Answer in one sentence; look orders up, never guess."
TOOLS = [{"type": "function", "function": {
    "name": "lookup_order", "description": "The status of one order, by its number.",
    "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                   "required": ["order_id"]}}}]
ORDERS = {"A-1001": {"status": "shipped", "eta": "Friday"},
          "A-1002": {"status": "being packed", "eta": "next week"}}
#: Model calls per question at most: a model that keeps asking for tools is cut off.
MAX_ROUNDS = 3


def lookup_order(order_id: str) -> dict[str, Any]:
    """The tool the model may call; an unknown order is an error the model is told about."""
    if order_id not in ORDERS:
        raise LookupError(f"no order {order_id}")
    return {"order_id": order_id, **ORDERS[order_id]}


class ModelServiceError(Exception):
    """The model service refused a request; the message is what it said."""


class OrderDesk:
    """One client of the model service, kept for many questions (close it when done)."""

    def __init__(self, base_url: str, api_key: str, model: str = "gpt-4o-mini") -> None:
        self.model = model
        self._http = httpx.Client(base_url=base_url, timeout=30,
                                  headers={"Authorization": f"Bearer {api_key}"})

    def close(self) -> None:
        self._http.close()

    def reply(self, question: str) -> Answer:
        """Answer a customer's question, with the lookups made and the tokens used."""
        if not question.strip():
            # nothing to ask the model about: answered here, at no cost
            return Answer(text="Please ask about an order, for example: where is A-1001?")
        messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM},
                                          {"role": "user", "content": question.strip()}]
        calls: list[ToolCall] = []
        usage = Usage(0, 0, None, self.model)
        for _ in range(MAX_ROUNDS):
            reply = self._http.post("/chat/completions", json={
                "model": self.model, "messages": messages, "tools": TOOLS})
            if reply.is_error:
                raise ModelServiceError(f"the model service answered {reply.status_code}: "
                                        f"{reply.text[:300]}")
            data = reply.json()
            usage += Usage(data["usage"]["prompt_tokens"], data["usage"]["completion_tokens"],
                           None, self.model)
            message = data["choices"][0]["message"]
            if not message.get("tool_calls"):
                return Answer(text=message["content"] or "", tool_calls=calls, usage=usage)
            messages.append(message)
            for call in message["tool_calls"]:
                calls.append(self._run(call))
                result = calls[-1].result if calls[-1].error is None \
                    else {"error": calls[-1].error}
                messages.append({"role": "tool", "tool_call_id": call["id"],
                                 "content": json.dumps(result)})
        return Answer(text="Sorry, I could not finish looking that up.", tool_calls=calls,
                      usage=usage)

    @staticmethod
    def _run(call: dict[str, Any]) -> ToolCall:
        name, arguments = call["function"]["name"], json.loads(call["function"]["arguments"])
        if name != "lookup_order":
            return ToolCall(name, arguments, error=f"unknown tool {name}", id=call["id"])
        try:
            return ToolCall(name, arguments, result=lookup_order(**arguments), id=call["id"])
        except (LookupError, TypeError) as exc:
            return ToolCall(name, arguments, error=str(exc), id=call["id"])
