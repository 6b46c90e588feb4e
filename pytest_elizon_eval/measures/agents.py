"""Agent metrics of a suite (docs/contract.md#agent-metrics), as the seed's
``AgentMetrics`` / ``ToolMetrics``: tool-call success, calls per case and per turn,
per-tool counts and error rates, turns per conversation, and the share of cases that
called the expected first tool first. Undefined values are None. No pytest import here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ..decide.results_data import CaseResult
from ..text import named

__all__ = ["ToolTally", "agent_metrics", "tally"]

Number = float | int


@dataclass(frozen=True)
class ToolTally:
    """Every tool call of some cases: how many, how many carried an error, and both per
    tool (the tools past a case's first 100 names are in the totals only)."""

    calls: int
    errors: int
    per_tool: Counter[str]
    errors_per_tool: Counter[str]


def tally(results: Sequence[CaseResult]) -> ToolTally:
    """The tool calls of ``results``: a case's ``tool_counts`` where its calls were not all
    kept (docs/contract.md#agent-metrics), else its kept calls (a results file written
    before the counts were kept reads as it did then)."""
    per_tool: Counter[str] = Counter()
    errors_per_tool: Counter[str] = Counter()
    calls = errors = 0
    for r in results:
        counted = ([(c.name, c.calls, c.errors) for c in r.tool_counts]
                   if r.tool_counts is not None else
                   [(c.name, 1, int(c.error is not None)) for c in r.tool_calls])
        for name, made, failed in counted:
            calls += made
            errors += failed
            if name is not None:
                per_tool[name] += made
                errors_per_tool[name] += failed
    return ToolTally(calls, errors, per_tool, errors_per_tool)


def first_tool_hit(result: CaseResult) -> bool:
    """The case's first call is the tool its ``expect.toolCalls.order`` names first (the
    first call is always kept; its name as kept, so compared as kept)."""
    return bool(result.tool_calls) and result.first_tool is not None \
        and result.tool_calls[0].name == named(result.first_tool)


def agent_metrics(results: Sequence[CaseResult]) -> dict[str, Number | None] | None:
    """The suite's agent metrics; None for a suite with no tool call, no conversation and
    no ``expect.toolCalls.order`` (nothing an agent did to measure)."""
    counted = tally(results)
    conversations = [r for r in results if r.turn_count]
    ordered = [r for r in results if r.first_tool is not None]
    if not counted.calls and not conversations and not ordered:
        return None
    # a single call is one turn; a conversation's turns are those that ran
    turns = sum(len(r.turns) if r.turn_count else 1 for r in results)
    calls = counted.calls
    found: dict[str, Number | None] = {
        "tool_calls": calls,
        "tool_success_rate": (calls - counted.errors) / calls if calls else None,
        "tool_calls_per_case": calls / len(results) if results else None,
        "tool_calls_per_turn": calls / turns if turns else None,
        "turns_per_conversation": sum(len(r.turns) for r in conversations) / len(conversations)
        if conversations else None,
        "first_tool_rate": sum(1 for r in ordered if first_tool_hit(r)) / len(ordered)
        if ordered else None,
    }
    for name in sorted(counted.per_tool):
        found[f"tool_calls.{name}"] = counted.per_tool[name]
        found[f"tool_error_rate.{name}"] = \
            counted.errors_per_tool[name] / counted.per_tool[name]
    return found
