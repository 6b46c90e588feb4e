"""Limits of the file formats that the runtime reads too (no pydantic, no pytest here)."""

from __future__ import annotations

__all__ = ["MAX_LABEL", "MAX_PRICE"]

#: Longest label ``expect.label`` / ``expect.route`` may name (every report's tables show it).
MAX_LABEL = 200
#: The most a price may be, in US dollars per 1M tokens: with token counts of at most 64
#: bits, a cost worked out from prices then stays a finite number, however large.
MAX_PRICE = 1_000_000.0
