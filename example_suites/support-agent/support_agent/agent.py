"""A small deterministic support agent: it picks tools by keywords, calls them, and answers.

Real agents call a model to choose tools; this one follows rules, so the example runs
offline and gives the same answer every time. It returns a ``pytest_elizon_eval.Answer``
with the tool calls it made and its token usage (counted from the words, as a stand-in
for what a model API reports); the cost comes from the manifest's ``prices``.
"""

from __future__ import annotations

from typing import Any

from pytest_elizon_eval import Answer, ToolCall, Usage

INVOICES = [
    {"id": "INV-101", "matter": "M-7", "status": "overdue", "amount": 1200},
    {"id": "INV-102", "matter": "M-7", "status": "paid", "amount": 300},
    {"id": "INV-103", "matter": "M-9", "status": "overdue", "amount": 450},
]
CATALOGUE = {"SKU-123": {"name": "Will template pack", "price": 49.0}}


def search_invoices(status: str) -> list[dict[str, Any]]:
    return [invoice for invoice in INVOICES if invoice["status"] == status]


def summarize(invoices: list[dict[str, Any]]) -> str:
    total = sum(invoice["amount"] for invoice in invoices)
    return f"{len(invoices)} invoices, {total} EUR in all"


def _tokens(text: str) -> int:
    return max(1, round(len(text.split()) * 1.3))


def _usage(prompt: str, answer: str) -> Usage:
    # 40 tokens of system prompt, then the words of the conversation.
    return Usage(input_tokens=40 + _tokens(prompt), output_tokens=_tokens(answer) + 20,
                 model="support-mini")


def _cart(messages: list[dict[str, Any]]) -> list[str]:
    """What earlier turns put in the cart (the conversation is all the state there is)."""
    return [call["function"]["name"] for message in messages
            for call in message.get("tool_calls", [])
            if call["function"]["name"] == "add_to_cart"]


def reply(text: str, messages: list[dict[str, Any]] | None = None) -> Answer:
    """Answer one user message; ``messages`` is the conversation so far, in a conversation."""
    said = text.lower()
    history = messages or []
    calls: list[ToolCall] = []
    if "overdue" in said or "unpaid" in said:
        found = search_invoices("overdue")
        calls.append(ToolCall("search_invoices", {"status": "overdue"}, result=found))
        summary = summarize(found)
        calls.append(ToolCall("summarize", {"invoices": [i["id"] for i in found]},
                              result=summary))
        answer = f"Overdue invoices: {summary}. Nothing was deleted."
    elif "add" in said and "sku-" in said:
        sku = next(word.strip(".,!").upper() for word in text.split()
                   if word.lower().startswith("sku-"))
        item = CATALOGUE.get(sku)
        if item is None:
            calls.append(ToolCall("add_to_cart", {"sku": sku}, error=f"unknown item {sku}"))
            answer = f"Sorry, I could not find {sku}."
        else:
            calls.append(ToolCall("add_to_cart", {"sku": sku, "quantity": 1},
                                  result={"cart_size": len(_cart(history)) + 1}))
            answer = f"Added {item['name']} to your cart."
    elif "check out" in said or "checkout" in said:
        if not _cart(history):
            answer = "Your cart is empty, so there is nothing to pay for yet."
        else:
            calls.append(ToolCall("process_payment", {"method": "card"},
                                  result={"status": "confirmed"}))
            answer = "Payment confirmed: your order is on its way."
    elif "delete" in said:
        answer = "I cannot delete matters; a person at the practice has to do that."
    else:
        answer = "I can look up invoices, add items to your cart, and take payment."
    return Answer(text=answer, tool_calls=calls, usage=_usage(text, answer))
