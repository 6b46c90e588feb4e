"""Agent metrics of a suite (docs/contract.md#agent-metrics), as the seed's
``AgentMetrics`` / ``ToolMetrics``: tool-call success, calls per case and per turn,
per-tool counts and error rates, turns per conversation, and the share of cases that
called the expected first tool first. Undefined values are None. No pytest import here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ..decide.results_data import CaseResult

__all__ = ["agent_metrics"]

Number = float | int


def agent_metrics(results: Sequence[CaseResult]) -> dict[str, Number | None] | None:
    """The suite's agent metrics; None for a suite with no tool call, no conversation and
    no ``expect.toolCalls.order`` (nothing an agent did to measure)."""
    calls = [c for r in results for c in r.tool_calls]
    conversations = [r for r in results if r.turn_count]
    ordered = [r for r in results if r.first_tool is not None]
    if not calls and not conversations and not ordered:
        return None
    # a single call is one turn; a conversation's turns are those that ran
    turns = sum(len(r.turns) if r.turn_count else 1 for r in results)
    failed = sum(1 for c in calls if c.error is not None)
    found: dict[str, Number | None] = {
        "tool_calls": len(calls),
        "tool_success_rate": (len(calls) - failed) / len(calls) if calls else None,
        "tool_calls_per_case": len(calls) / len(results) if results else None,
        "tool_calls_per_turn": len(calls) / turns if turns else None,
        "turns_per_conversation": sum(len(r.turns) for r in conversations) / len(conversations)
        if conversations else None,
        "first_tool_rate": sum(1 for r in ordered if r.tool_calls
                               and r.tool_calls[0].name == r.first_tool) / len(ordered)
        if ordered else None,
    }
    counts = Counter(c.name for c in calls)
    errors = Counter(c.name for c in calls if c.error is not None)
    for name in sorted(counts):
        found[f"tool_calls.{name}"] = counts[name]
        found[f"tool_error_rate.{name}"] = errors[name] / counts[name]
    return found
