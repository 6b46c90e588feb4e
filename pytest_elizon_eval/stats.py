"""Statistics for verdicts that hold under noise, with the standard library only.

No scipy or numpy at run time: each function here is checked in the tests against
its reference implementation (statsmodels, scipy) as a test-only dependency.
Methods and their guarantees are described in docs/contract.md.
"""

from __future__ import annotations

import math
from statistics import NormalDist

__all__ = ["normal_quantile", "wilson_interval"]


def normal_quantile(confidence: float) -> float:
    """The two-sided standard-normal critical value for ``confidence`` (0.95 → 1.96)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1 (exclusive), got {confidence!r}")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def wilson_interval(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (statsmodels ``method="wilson"``).

    Chosen over the normal ("Wald") interval because it stays inside [0, 1] and is
    honest at 0 % and 100 % with few runs — the usual case for a repeated LLM case.
    """
    if trials <= 0:
        raise ValueError("a pass-rate interval needs at least one run")
    if not 0 <= successes <= trials:
        raise ValueError(f"successes must be between 0 and {trials}, got {successes}")
    z = normal_quantile(confidence)
    p = successes / trials
    z2 = z * z
    denominator = 1.0 + z2 / trials
    centre = (p + z2 / (2.0 * trials)) / denominator
    half = z * math.sqrt(p * (1.0 - p) / trials + z2 / (4.0 * trials * trials)) / denominator
    # At 0 and n successes the bounds are exactly 0 and 1; floating point leaves 1e-17.
    lower = 0.0 if successes == 0 else max(0.0, centre - half)
    upper = 1.0 if successes == trials else min(1.0, centre + half)
    return lower, upper
