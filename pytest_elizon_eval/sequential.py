"""Per-case noise: a repeated case's interval, the sequential stopping rule, flakiness and
the stability of its outputs — pure functions, stdlib only (docs/contract.md#repeat-runs).

The stopping rule of ``repeat: {max: N, until: decided}`` is Wald's sequential
probability ratio test (SPRT) with an indifference zone: around ``minPassRate`` m and the
zone's half-width δ it tests H₀: p ≤ m − δ against H₁: p ≥ m + δ with both error rates
α = 1 − confidence, and the thresholds 1/α and α (not Wald's approximate ones). Under
any p ≤ m − δ the likelihood ratio is a non-negative supermartingale, so by Ville's
inequality the chance that it *ever* reaches 1/α is at most α, whatever the number of
runs, the cap, or runs that were already under way when it stopped: the guarantee is
anytime-valid. The same holds for deciding "below" under any p ≥ m + δ. Inside the zone
either answer is acceptable, and the case may end ``inconclusive`` at ``max``.
"""

from __future__ import annotations

import difflib
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .stats import wilson_interval

__all__ = [
    "ABOVE",
    "BELOW",
    "DEFAULT_CONFIDENCE",
    "DEFAULT_INDIFFERENCE",
    "Chances",
    "Sprt",
    "Stability",
    "fixed_repeat",
    "flaky",
    "similarity",
    "stability",
    "within_noise",
]

ABOVE, BELOW = "above", "below"
#: The confidence used while ini ``elizon_confidence`` is not set (or not registered).
DEFAULT_CONFIDENCE = 0.95
#: The indifference zone's half-width δ when ``repeat:`` does not name one.
DEFAULT_INDIFFERENCE = 0.1


@dataclass(frozen=True)
class Sprt:
    """The stopping rule for one case: threshold ``min_pass_rate`` m, half-width
    ``indifference`` δ, ``confidence`` 1 − α. :meth:`decide` reads the runs' pass/fail in
    order and says where the log-likelihood ratio first left (α, 1/α), if it did."""

    min_pass_rate: float
    indifference: float = DEFAULT_INDIFFERENCE
    confidence: float = DEFAULT_CONFIDENCE

    @property
    def zone(self) -> tuple[float, float]:
        """(p₀, p₁): the indifference zone, clipped to [0, 1]."""
        m, d = self.min_pass_rate, self.indifference
        return max(0.0, m - d), min(1.0, m + d)

    def _steps(self) -> tuple[float, float]:
        """The log-likelihood ratio's step for a pass and for a failure (±inf where one
        outcome is impossible under a hypothesis: p₀ = 0 or p₁ = 1)."""
        p0, p1 = self.zone
        up = math.inf if p0 == 0.0 else math.log(p1 / p0)
        down = -math.inf if p1 == 1.0 else math.log((1.0 - p1) / (1.0 - p0))
        return up, down

    def standing(self, passed: int, runs: int) -> str | None:
        """Where ``passed`` passes in ``runs`` runs stand: ``above`` when the likelihood
        ratio is at least 1/α, ``below`` when at most α, else None."""
        up, down = self._steps()
        bound = math.log(1.0 / (1.0 - self.confidence))
        # 0 * inf is nan: an outcome that did not occur adds nothing
        llr = (passed * up if passed else 0.0) + ((runs - passed) * down
                                                 if runs > passed else 0.0)
        if llr >= bound:
            return ABOVE
        if llr <= -bound:
            return BELOW
        return None

    def chances(self, p: float, max_runs: int | None = None) -> Chances:
        """What the rule does to a case whose runs pass with probability ``p``: the chance
        it decides above, below or not at all, and its mean runs, exact (no simulation):
        the chance of each undecided count of passes is carried from one run to the next.
        Without ``max_runs`` it runs until undecided has a chance below 1e-12 (what is left
        is counted undecided, the runs to there counted). docs/contract.md#sequential-repeats
        states these figures, checked against this in the tests."""
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p must be between 0 and 1, got {p!r}")
        limit = max_runs if max_runs is not None else 1_000_000
        undecided = {0: 1.0}  # passes so far → chance, among cases not yet decided
        above = below = runs = 0.0
        for count in range(1, limit + 1):
            left = math.fsum(undecided.values())
            if max_runs is None and left < 1e-12:
                break
            runs += left  # every undecided case makes run ``count``
            following: dict[int, float] = {}
            for passed, chance in undecided.items():
                for now, step in ((passed + 1, chance * p), (passed, chance * (1.0 - p))):
                    if step <= 0.0:
                        continue
                    decision = self.standing(now, count)
                    if decision == ABOVE:
                        above += step
                    elif decision == BELOW:
                        below += step
                    else:
                        following[now] = following.get(now, 0.0) + step
            undecided = following
        return Chances(above, below, math.fsum(undecided.values()), runs)

    def decide(self, passes: Iterable[bool]) -> tuple[str | None, int]:
        """(``above``, ``below`` or None, how many runs had been read when it first
        decided — or all of them when it did not)."""
        passed = count = 0
        for outcome in passes:
            count += 1
            passed += bool(outcome)
            decision = self.standing(passed, count)
            if decision is not None:
                return decision, count
        return None, count


@dataclass(frozen=True)
class Chances:
    """:meth:`Sprt.chances`: where the rule ends for one true pass rate, and its mean runs."""

    above: float
    below: float
    undecided: float
    mean_runs: float


def fixed_repeat(error: float, zone: tuple[float, float], threshold: float | None = None
                 ) -> tuple[int, int]:
    """The fewest runs n, and the passes c needed of them, with which a fixed ``repeat: n``
    errs outside ``zone`` = (p₀, p₁) at most ``error``: P(≥ c passes | p₀) and
    P(< c passes | p₁), each at most ``error``. With ``threshold`` r, c is the counting
    rule's ⌈r·n⌉; else the best c for each n. What the sequential rule's runs are compared
    with (docs/contract.md#sequential-repeats)."""
    p0, p1 = zone
    for n in range(1, 10_001):
        low, high = _upper_tails(n, p0), _upper_tails(n, p1)
        choices = [math.ceil(threshold * n - 1e-9)] if threshold is not None else range(n + 1)
        for c in choices:
            if max(low[c], 1.0 - high[c]) <= error:
                return n, c
    raise ValueError(f"no fixed repeat up to 10,000 runs errs at most {error!r}")


def _upper_tails(n: int, p: float) -> list[float]:
    """P(Bin(n, p) ≥ c) for c = 0 … n + 1, summed from the top."""
    def pmf(k: int) -> float:
        if p in (0.0, 1.0):
            return 1.0 if k == (n if p else 0) else 0.0
        return math.exp(math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
                        + k * math.log(p) + (n - k) * math.log1p(-p))
    out = [0.0] * (n + 2)
    for k in range(n, -1, -1):
        out[k] = out[k + 1] + pmf(k)
    return out


def within_noise(passed: int, runs: int, min_pass_rate: float,
                 confidence: float = DEFAULT_CONFIDENCE) -> bool:
    """Whether the pass rate's Wilson interval holds ``min_pass_rate``: the runs cannot
    tell whether the true rate is above or below the threshold."""
    low, high = wilson_interval(passed, runs, confidence)
    return low <= min_pass_rate <= high


def flaky(passed: int, runs: int) -> bool:
    """Whether a repeated case's runs disagree: some passed and some did not."""
    return runs > 1 and 0 < passed < runs


def similarity(a: str, b: str) -> float:
    """How alike two outputs are, 0 to 1: difflib's ratio 2·M / (|a| + |b|), M the
    characters in matching blocks (1.0 for identical texts, two empty texts included)."""
    if a == b:
        return 1.0
    return difflib.SequenceMatcher(None, a, b).ratio()


@dataclass(frozen=True)
class Stability:
    """The outputs of a repeated case (docs/contract.md#stability): how many runs, how many
    distinct outputs, the text variance (mean over all pairs of runs of 1 − similarity)
    and the least similar pair's similarity."""

    runs: int
    unique_outputs: int
    variance: float
    min_similarity: float


#: A run without output (an error, a timeout) is this text for stability's sake.
NO_OUTPUT = "\x00<no output>"


def stability(outputs: Sequence[str | None]) -> Stability:
    """:class:`Stability` of ``outputs`` (None: a run without output). Pairs are compared
    once per pair of distinct outputs, weighted by how often each occurs, so a case whose
    20 runs gave 2 answers costs one comparison."""
    counts = Counter(NO_OUTPUT if o is None else o for o in outputs)
    n = sum(counts.values())
    distinct = list(counts)
    pairs = n * (n - 1) // 2
    lowest = 1.0
    distance = 0.0
    for i, a in enumerate(distinct):
        for b in distinct[i + 1:]:
            alike = 0.0 if NO_OUTPUT in (a, b) else similarity(a, b)
            lowest = min(lowest, alike)
            distance += (1.0 - alike) * counts[a] * counts[b]
    return Stability(runs=n, unique_outputs=len(distinct),
                     variance=distance / pairs if pairs else 0.0, min_similarity=lowest)
