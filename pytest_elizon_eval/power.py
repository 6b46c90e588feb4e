"""``elizon-eval power``: how many cases (or repeats) a suite needs to detect a pass-rate drop,
and the smallest drop a given suite detects (docs/cli.md#power, docs/contract.md#power).

The numbers are the power of the tests ``--elizon-baseline`` runs: McNemar's exact test when
each case runs once, the paired t-test on per-case pass rates when cases repeat
(:func:`pytest_elizon_eval.stats.runs_needed`, :func:`~pytest_elizon_eval.stats.repeats_needed`,
:func:`~pytest_elizon_eval.stats.detectable_drop`); this module words them.
"""

from __future__ import annotations

from . import stats

__all__ = ["power_lines"]

_MCNEMAR = "McNemar exact"
_PAIRED_T = "paired t on per-case pass rates"


def power_lines(*, rate: float, drop: float | None, cases: int | None, repeats: int,
                alpha: float, power: float) -> list[str]:
    """What the command prints. ``drop`` None: the drop ``cases`` × ``repeats`` runs detect."""
    def at(test: str) -> str:
        return f"{test}, α {alpha:g}, {power:.0%} power"

    if drop is None:
        if cases is None:
            raise ValueError("give --drop D, or --cases N to see the drop N cases detect")
        runs = cases * repeats
        found = stats.detectable_drop(cases, rate, alpha, power, float(repeats))
        what = f"{cases} cases" + (f" × {repeats} repeats" if repeats > 1 else "")
        test = at(_PAIRED_T if repeats > 1 else _MCNEMAR)
        if found is None:
            return [f"{what} ({runs} runs) cannot detect any drop from {rate:g} ({test})."]
        return [f"{what} ({runs} runs) detect a pass-rate drop of {found:.3f} or more from "
                f"{rate:g}, to {rate - found:.3f} ({test})."]
    needed = stats.runs_needed(rate, drop, alpha, power)
    lines = [f"To detect a drop from {rate:g} to {rate - drop:g} ({at(_MCNEMAR)}): {needed} "
             "cases, each run once in each of the two suite runs compared."]
    if cases is None:
        lines.append(f"Cases needed, each run once: {needed}.")
    elif cases >= needed:
        lines.append(f"{cases} cases, each run once, are enough.")
    else:
        times = stats.repeats_needed(cases, rate, drop, alpha, power)
        if times is None:
            lines.append(f"One case cannot be compared by a paired test, however often it "
                         f"repeats: add cases, {needed} run once.")
        else:
            lines.append(f"With {cases} cases: repeat each {times} times ({cases * times} "
                         f"runs; {at(_PAIRED_T)}), or add cases: {needed} run once.")
            lines.append("Repeats stand in for cases only as far as cases' own pass rates, "
                         "not their differences, make the noise; more cases are the surer way.")
    return lines
