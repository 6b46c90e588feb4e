"""Benchmark: the sequential stopping rule of ``repeat: {max, until: decided}`` against
fixed repeats, on simulated cases whose pass probability p is known.

For p in {0.5, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0}, ``minPassRate`` 0.8 and the default
indifference zone (0.7, 0.9) at confidence 0.95 (α = 0.05), it simulates 10,000 cases
each (seeded, stdlib ``random``) and prints:

* the rule's wrong decisions outside the zone (p ≤ 0.7 decided above, p ≥ 0.9 decided
  below), which must stay at or below α, and its mean runs, uncapped and with ``max: 20``;
* the smallest fixed n whose best pass threshold (and today's ⌈0.8·n⌉) reaches the same
  worst error outside the zone, computed exactly from the binomial, and the ratio of runs;
* how often today's fixed ``repeat: 5, minPassRate: 0.8`` fails a case with p = 0.85,
  and how often two runs of it disagree (a verdict that flips).

Usage: python benchmarks/sequential.py [--quick] [--cases N] [--seed S]
Numbers are printed, never asserted.
"""

from __future__ import annotations

import argparse
import math
import random

from pytest_elizon_eval.sequential import ABOVE, BELOW, Sprt

GRID = (0.5, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0)
THRESHOLD = 0.8
UNCAPPED = 100_000


def simulate(rule: Sprt, p: float, cases: int, cap: int, rng: random.Random
             ) -> tuple[int, int, int, int]:
    """(above, below, undecided, total runs) over ``cases`` simulated cases."""
    above = below = undecided = runs = 0
    for _ in range(cases):
        decision, used = rule.decide(rng.random() < p for _ in range(cap))
        runs += used
        if decision == ABOVE:
            above += 1
        elif decision == BELOW:
            below += 1
        else:
            undecided += 1
    return above, below, undecided, runs


def binomial_tail(n: int, c: int, p: float) -> float:
    """P(X ≥ c) for X ~ Binomial(n, p)."""
    return sum(math.comb(n, k) * p ** k * (1 - p) ** (n - k) for k in range(max(c, 0), n + 1))


def fixed_error(n: int, c: int, p0: float, p1: float) -> float:
    """The worst wrong-decision rate outside the zone of 'pass when at least c of n pass'."""
    return max(binomial_tail(n, c, p0), 1.0 - binomial_tail(n, c, p1))


def fixed_n_for(target: float, p0: float, p1: float, today: bool) -> tuple[int, int]:
    """The smallest n (and its threshold c) whose error outside the zone is ≤ ``target``."""
    for n in range(1, 2001):
        thresholds = [math.ceil(THRESHOLD * n - 1e-9)] if today else range(n + 1)
        for c in thresholds:
            if fixed_error(n, c, p0, p1) <= target:
                return n, c
    return -1, -1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 cases per p")
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=20261201)
    args = parser.parse_args()
    cases = 1_000 if args.quick else args.cases
    rule = Sprt(THRESHOLD)
    p0, p1 = rule.zone
    alpha = 1 - rule.confidence
    rng = random.Random(args.seed)
    print(f"SPRT, minPassRate {THRESHOLD}, zone ({p0:g}, {p1:g}), alpha {alpha:g}, "
          f"{cases:,} cases per p, seed {args.seed}")
    print(f"{'p':>5} {'above':>7} {'below':>7} {'wrong':>7} {'mean runs':>10} "
          f"{'| max 20: wrong':>15} {'inconcl.':>9} {'mean runs':>10}")
    worst = 0.0
    means = []
    for p in GRID:
        above, below, _, runs = simulate(rule, p, cases, UNCAPPED, rng)
        c_above, c_below, c_none, c_runs = simulate(rule, p, cases, 20, rng)
        wrong = c_wrong = None
        if p <= p0 + 1e-12:
            wrong, c_wrong = above / cases, c_above / cases
        elif p >= p1 - 1e-12:
            wrong, c_wrong = below / cases, c_below / cases
        if wrong is not None:
            worst = max(worst, wrong)
        means.append(runs / cases)
        shown = "  (zone)" if wrong is None else f"{wrong:7.4f}"
        shown_c = "  (zone)" if c_wrong is None else f"{c_wrong:7.4f}"
        print(f"{p:5.2f} {above / cases:7.4f} {below / cases:7.4f} {shown:>7} "
              f"{runs / cases:10.2f} {shown_c:>15} {c_none / cases:9.4f} {c_runs / cases:10.2f}")
    print(f"worst wrong-decision rate outside the zone: {worst:.4f} (alpha {alpha:g}: "
          f"{'within' if worst <= alpha else 'ABOVE'})")
    mean = sum(means) / len(means)
    target = max(worst, 1.0 / cases)  # no error seen: the simulation's resolution
    for today in (False, True):
        n, c = fixed_n_for(target, p0, p1, today)
        label = "today's threshold ceil(0.8n)" if today else "best threshold"
        ratios = [n / m for m in means]
        print(f"fixed n with {label} reaching {target:.4f}: n = {n} (pass at >= {c}); "
              f"sequential mean runs over the grid {mean:.1f}: {n / mean:.2f}x fewer "
              f"(mean of per-p ratios {sum(ratios) / len(ratios):.2f}x)")
    fail = 1.0 - binomial_tail(5, 4, 0.85)
    flips = sum(1 for _ in range(cases)
                if (sum(rng.random() < 0.85 for _ in range(5)) >= 4)
                != (sum(rng.random() < 0.85 for _ in range(5)) >= 4)) / cases
    print(f"today's repeat: 5, minPassRate 0.8 on p = 0.85: fails {fail:.1%} of runs "
          f"(exact); two runs disagree {2 * fail * (1 - fail):.1%} (exact), "
          f"{flips:.1%} simulated")


if __name__ == "__main__":
    main()
