"""``elizon-eval power``: how many cases (or repeats) a suite needs to detect a pass-rate drop,
and the smallest drop a given suite detects (docs/cli.md#power, docs/contract.md#power).

The numbers are :func:`pytest_elizon_eval.stats.runs_needed` and
:func:`~pytest_elizon_eval.stats.detectable_drop`; this module words them.
"""

from __future__ import annotations

import math

from . import stats

__all__ = ["power_lines"]


def power_lines(*, rate: float, drop: float | None, cases: int | None, repeats: int,
                alpha: float, power: float) -> list[str]:
    """What the command prints. ``drop`` None: the drop ``cases`` × ``repeats`` runs detect."""
    at = f"two-sided, α {alpha:g}, {power:.0%} power"
    if drop is None:
        if cases is None:
            raise ValueError("give --drop D, or --cases N to see the drop N cases detect")
        runs = cases * repeats
        found = stats.detectable_drop(runs, rate, alpha, power)
        what = f"{cases} cases" + (f" × {repeats} repeats" if repeats > 1 else "")
        if found is None:
            return [f"{what} ({runs} runs) cannot detect any drop from {rate:g} ({at})."]
        return [f"{what} ({runs} runs) detect a pass-rate drop of {found:.3f} or more from "
                f"{rate:g}, to {rate - found:.3f} ({at})."]
    needed = stats.runs_needed(rate, drop, alpha, power)
    lines = [f"To detect a drop from {rate:g} to {rate - drop:g} ({at}): {needed} runs in "
             "each of the two suite runs compared."]
    if cases is None:
        lines.append(f"Cases needed, each run once: {needed}.")
    elif cases >= needed:
        lines.append(f"{cases} cases, each run once, are enough.")
    else:
        times = math.ceil(needed / cases)
        lines.append(f"With {cases} cases: repeat each {times} times ({cases * times} runs), "
                     f"or add cases: {needed} run once.")
        lines.append("Repeats stand in for cases only as far as cases' own pass rates, not "
                     "their differences, make the noise; more cases are the surer way.")
    return lines
