"""Simulation: how often --elizon-baseline calls a regression "significant" when nothing
changed, against how often "the pass rate dropped" does; and how often it catches a true
15-point drop (its power). Figures: docs/contract.md#significant-regressions.

Each simulated suite has 50 cases with known pass probabilities (a fixed spread from 0.5
to 1.0, mean 0.79). Two runs of it are drawn (stdlib ``random``, seeded) and compared by
the plugin's own code (:func:`pytest_elizon_eval.reporting.significance.suite_changes`):
once with every case run once (McNemar's exact test) and once with ``repeat: 5`` (paired
t-test on per-case pass rates). "No change" draws both runs from the same probabilities;
"true drop" lowers every case's probability by 0.15 in the second run.

Usage: python benchmarks/regression_noise.py [--quick] [--suites N] [--seed S]
Numbers are printed, never asserted.
"""

from __future__ import annotations

import argparse
import math
import random
import time

from pytest_elizon_eval.reporting.significance import Paired, suite_changes

CASES = 50
#: Each case's pass probability: a spread like a real suite's (easy, usual, hard cases).
PROBABILITIES = [(1.0, 0.95, 0.9, 0.9, 0.85, 0.8, 0.75, 0.7, 0.6, 0.5)[i % 10]
                 for i in range(CASES)]
DROP = 0.15
ALPHA = 0.05


def _run(rng: random.Random, drop: float, repeats: int) -> list[Paired]:
    return [Paired(tuple(rng.random() < p - drop for _ in range(repeats)), {})
            for p in PROBABILITIES]


def simulate(suites: int, repeats: int, drop: float, seed: int) -> tuple[float, float]:
    """(share flagged as a significant regression, share whose pass rate merely dropped)."""
    rng = random.Random(seed)
    significant = dropped = 0
    for _ in range(suites):
        before, after = _run(rng, 0.0, repeats), _run(rng, drop, repeats)
        row = suite_changes("s", list(zip(before, after, strict=True)), 0.95, ALPHA)[0]
        significant += row.regressed
        dropped += row.after < row.before
    return significant / suites, dropped / suites


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000 suites instead of 10,000")
    parser.add_argument("--suites", type=int, default=None)
    parser.add_argument("--seed", type=int, default=21)
    args = parser.parse_args()
    suites = args.suites or (1_000 if args.quick else 10_000)
    mean = sum(PROBABILITIES) / CASES
    print(f"{suites:,} simulated pairs of runs of a {CASES}-case suite (mean pass probability "
          f"{mean:.3f}), α {ALPHA}, seed {args.seed}")
    print(f"{'repeats':>7}  {'true change':>11}  {'significant regression':>22}  "
          f"{'pass rate dropped':>17}")
    started = time.perf_counter()
    for repeats in (1, 5):
        for drop in (0.0, DROP):
            flagged, dropped = simulate(suites, repeats, drop, args.seed + repeats)
            se = math.sqrt(flagged * (1 - flagged) / suites)
            print(f"{repeats:>7}  {'-' + str(drop) if drop else 'none':>11}  "
                  f"{flagged:>14.3f} ± {1.96 * se:.3f}  {dropped:>17.3f}")
    print(f"({time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
