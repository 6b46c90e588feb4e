"""A case's tokens and cost as every report words them (docs/contract.md#cost).

One wording for the terminal's ``-v`` line, the markdown summary, JUnit and the HTML
report: US dollars to three significant digits (``$0.0000489``, never ``$0.0000``),
``—`` where nothing was measured, tokens with their split (and the cached input tokens
among them). Pure functions of plain
values; no pytest import here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["dollars", "tokens", "usage_line"]


def dollars(value: float | int | None, missing: str = "—") -> str:
    """US dollars to three significant digits (at least cents); ``missing`` when unknown."""
    if value is None or isinstance(value, bool) or not math.isfinite(value):
        return missing
    if value == 0:
        return "$0"
    places = max(2, 2 - math.floor(math.log10(abs(value))))
    return f"${value:,.{places}f}"


def tokens(usage: Mapping[str, Any] | None) -> int | None:
    """Input plus output tokens of a usage record; None when neither is known."""
    if not usage:
        return None
    counts = [usage.get("input_tokens"), usage.get("output_tokens")]
    known = [c for c in counts if isinstance(c, int) and not isinstance(c, bool)]
    return sum(known) if known else None


def _count(usage: Mapping[str, Any], key: str) -> int:
    value = usage.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def usage_line(usage: Mapping[str, Any] | None) -> str | None:
    """``99 tokens (82 in, 17 out), $0.00012``, the cached input tokens named
    (``6,099 tokens (6,082 in, of them 5,000 cache reads and 1,000 cache writes; 17 out)``);
    None when the answer reported no usage."""
    if not usage:
        return None
    total = tokens(usage)
    cost = usage.get("cost_usd")
    parts = []
    if total is not None:
        # the cache counts are a part of the input tokens, never added (docs/contract.md#cost)
        cached = [f"{_count(usage, key):,} {name}" for key, name in (
            ("cache_read_tokens", "cache reads"), ("cache_write_tokens", "cache writes"))
            if _count(usage, key)]
        of_them = f", of them {' and '.join(cached)};" if cached else ","
        tokens_in, tokens_out = _count(usage, "input_tokens"), _count(usage, "output_tokens")
        parts.append(f"{total:,} tokens ({tokens_in:,} in{of_them} {tokens_out:,} out)")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool):
        parts.append(dollars(cost))
    return ", ".join(parts) or None
