"""Triage a factory-floor request as immediate or routine, by keyword rules.

Stands in for an LLM application so the example runs anywhere: same
signature as a real entry point (named inputs as keyword arguments, text
out), no network, no model.
"""

from __future__ import annotations

_DANGER = {
    "fire": ("fire", "smoke", "burning", "flames"),
    "injury": ("cut their", "bleeding", "injured", "hurt"),
    "gas": ("gas",),
    "machine damage": ("still running", "chewing up", "jammed and running"),
}


def triage(request: str) -> tuple[str, str]:
    """(priority, reason) for a request."""
    text = request.lower()
    for reason, words in _DANGER.items():
        if any(word in text for word in words):
            return "immediate", reason
    return "routine", "no sign of danger"


def handle(request: str, format: str = "sentence") -> str:
    """The package's entry point: a request in, the triage decision out."""
    priority, reason = triage(request)
    if format == "label":
        return priority
    if priority == "immediate":
        return f"Priority: immediate. Reason: {reason}. Paging the on-call engineer now."
    return f"Priority: routine. Reason: {reason}. A ticket has been opened."
