"""Statistics for verdicts that hold under noise, with the standard library only.

No scipy or numpy at run time: each function here is checked in the tests against
its reference implementation (statsmodels, scipy) as a test-only dependency.
Methods and their guarantees are described in docs/contract.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

__all__ = ["POWER", "binomial_test", "clustered_mean", "clustered_mean_interval",
           "clustered_rate_interval", "detectable_drop", "holm", "mcnemar_exact",
           "normal_ppf", "normal_quantile", "paired_t_test", "runs_needed", "t_quantile",
           "t_two_sided_p", "wilson_interval"]


def normal_quantile(confidence: float) -> float:
    """The two-sided standard-normal critical value for ``confidence`` (0.95 → 1.96)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1 (exclusive), got {confidence!r}")
    return normal_ppf(0.5 + confidence / 2.0)


_SQRT2 = math.sqrt(2.0)
_SQRT_2PI = math.sqrt(2.0 * math.pi)


def normal_ppf(p: float) -> float:
    """The standard normal's quantile at ``p`` (0 < p < 1), as ``statistics.NormalDist``
    gives it, without importing ``statistics`` (fractions, decimal) on every start: a
    rational first guess (Abramowitz & Stegun 26.2.23, within 4.5e-4) then Newton's
    method on the tail ``erfc``, which doubles the correct digits at each step."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be between 0 and 1 (exclusive), got {p!r}")
    if p == 0.5:
        return 0.0
    tail = min(p, 1.0 - p)
    t = math.sqrt(-2.0 * math.log(tail))
    z = t - (2.515517 + 0.802853 * t + 0.010328 * t * t) / (
        1.0 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t)
    for _ in range(4):
        z += (0.5 * math.erfc(z / _SQRT2) - tail) / (math.exp(-0.5 * z * z) / _SQRT_2PI)
    return z if p > 0.5 else -z


def wilson_interval(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (statsmodels ``method="wilson"``).

    Chosen over the normal ("Wald") interval because it stays inside [0, 1] and is
    honest at 0 % and 100 % with few runs — the usual case for a repeated LLM case.
    """
    if trials <= 0:
        raise ValueError("a pass-rate interval needs at least one run")
    if not 0 <= successes <= trials:
        raise ValueError(f"successes must be between 0 and {trials}, got {successes}")
    return _wilson_at(successes / trials, float(trials), confidence)


# -- clustered intervals (Miller 2024, "Adding Error Bars to Evals") -------------------------

def clustered_mean(clusters: Sequence[Sequence[float]]) -> tuple[float, float | None]:
    """The mean of every observation and its cluster-robust standard error.

    Observations of one cluster (the runs of one case) are not independent, so the
    variance sums each cluster's residuals before squaring (CR1: with the small-sample
    factor G/(G−1) for G clusters; statsmodels OLS ``cov_type="cluster"``). With one
    observation per cluster this is the ordinary s/√n. The error is None for fewer than
    two clusters: one case says nothing about how cases vary.
    """
    values = [float(x) for c in clusters for x in c]
    if not values:
        raise ValueError("a mean needs at least one observation")
    mean = math.fsum(values) / len(values)
    groups = [c for c in clusters if len(c)]
    if len(groups) < 2:
        return mean, None
    meat = math.fsum(math.fsum(float(x) - mean for x in c) ** 2 for c in groups)
    variance = meat / len(values) ** 2 * len(groups) / (len(groups) - 1)
    return mean, math.sqrt(variance)


def clustered_mean_interval(clusters: Sequence[Sequence[float]], confidence: float = 0.95
                            ) -> tuple[float, float | None, float | None]:
    """The mean with its normal interval from :func:`clustered_mean` (None, None when
    there is no standard error)."""
    mean, se = clustered_mean(clusters)
    if se is None:
        return mean, None, None
    half = normal_quantile(confidence) * se
    return mean, mean - half, mean + half


def clustered_rate_interval(clusters: Sequence[Sequence[bool]], confidence: float = 0.95
                            ) -> tuple[float, float, float]:
    """A pass rate over every run, when runs repeat within cases: the share of runs that
    passed and a Wilson score interval at the clustered effective sample size.

    The effective size is p(1−p)/SE² with SE from :func:`clustered_mean` (Kish's design
    effect), kept between the number of cases and the number of runs: never more certain
    than independent runs, never less than one run per case. At 0 % or 100 % (no spread
    to measure) it is the number of cases. With one run per case it is plain Wilson.
    """
    runs = sum(len(c) for c in clusters)
    cases = sum(1 for c in clusters if len(c))
    if not runs:
        raise ValueError("a pass-rate interval needs at least one run")
    rate, se = clustered_mean([[1.0 if x else 0.0 for x in c] for c in clusters])
    effective = float(cases)
    if se and 0.0 < rate < 1.0:
        effective = min(float(runs), max(float(cases), rate * (1.0 - rate) / se ** 2))
    low, high = _wilson_at(rate, effective, confidence)
    return rate, low, high


def _wilson_at(rate: float, n: float, confidence: float) -> tuple[float, float]:
    """Wilson's interval for a rate observed over ``n`` (possibly fractional) trials."""
    # At 0 % and 100 % the bounds are exactly 0 and 1; floating point would leave 1e-17.
    z = normal_quantile(confidence)
    z2 = z * z
    denominator = 1.0 + z2 / n
    centre = (rate + z2 / (2.0 * n)) / denominator
    half = z * math.sqrt(rate * (1.0 - rate) / n + z2 / (4.0 * n * n)) / denominator
    low = 0.0 if rate <= 0.0 else max(0.0, centre - half)
    high = 1.0 if rate >= 1.0 else min(1.0, centre + half)
    return low, high


# -- exact tests --------------------------------------------------------------------------

def _log_binom_pmf(k: int, n: int, p: float) -> float:
    if p <= 0.0:
        return 0.0 if k == 0 else -math.inf
    if p >= 1.0:
        return 0.0 if k == n else -math.inf
    return (math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
            + k * math.log(p) + (n - k) * math.log1p(-p))


def binomial_test(successes: int, trials: int, p: float) -> float:
    """Exact two-sided binomial test of ``successes`` in ``trials`` against rate ``p``
    (scipy ``binomtest(...).pvalue``): the probability, under ``p``, of every count no
    more likely than the one observed."""
    if trials <= 0:
        raise ValueError("a binomial test needs at least one trial")
    if not 0 <= successes <= trials:
        raise ValueError(f"successes must be between 0 and {trials}, got {successes}")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be between 0 and 1, got {p!r}")
    observed = _log_binom_pmf(successes, trials, p)
    # scipy's relative tolerance, so counts exactly as likely are not lost to rounding
    bound = observed + math.log1p(1e-7)
    total = math.fsum(math.exp(lp) for k in range(trials + 1)
                      if (lp := _log_binom_pmf(k, trials, p)) <= bound)
    return min(1.0, total)


def mcnemar_exact(pass_to_fail: int, fail_to_pass: int) -> float:
    """McNemar's exact test on paired pass/fail flips (statsmodels ``mcnemar(exact=True)``):
    under no change each flip goes either way with probability ½."""
    if min(pass_to_fail, fail_to_pass) < 0:
        raise ValueError("flip counts cannot be negative")
    n = pass_to_fail + fail_to_pass
    if n == 0:
        return 1.0
    tail = math.fsum(math.exp(_log_binom_pmf(k, n, 0.5))
                     for k in range(min(pass_to_fail, fail_to_pass) + 1))
    return min(1.0, 2.0 * tail)


# -- Student's t, for the paired t-test ---------------------------------------------------

def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularised incomplete beta (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        for numerator in (m * (b - m) * x / ((a + m2 - 1.0) * (a + m2)),
                          -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _incomplete_beta(a: float, b: float, x: float) -> float:
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| ≥ |t|) for Student's t with ``df`` degrees of freedom (scipy ``t.sf`` × 2)."""
    if df <= 0:
        raise ValueError("degrees of freedom must be positive")
    if math.isinf(t):
        return 0.0
    return min(1.0, _incomplete_beta(df / 2.0, 0.5, df / (df + t * t)))


@lru_cache(maxsize=256)  # a run asks the same (confidence, df) for many suites and metrics
def t_quantile(confidence: float, df: float) -> float:
    """The two-sided critical value of Student's t (scipy ``t.ppf(0.5 + confidence/2)``)."""
    normal_quantile(confidence)  # the same check of ``confidence``
    low, high = 0.0, 1.0
    while t_two_sided_p(high, df) > 1.0 - confidence:
        high *= 2.0
    for _ in range(200):
        mid = (low + high) / 2.0
        if t_two_sided_p(mid, df) > 1.0 - confidence:
            low = mid
        else:
            high = mid
    return (low + high) / 2.0


def paired_t_test(differences: Sequence[float], confidence: float = 0.95
                  ) -> tuple[float, float, float, float]:
    """Paired t-test of per-case differences (after − before; scipy ``ttest_rel``):
    the mean difference, its t interval and the two-sided p-value. Differences that all
    agree have no spread: p is 1 when they are all 0, else 0."""
    n = len(differences)
    if n < 2:
        raise ValueError("a paired test needs at least two paired cases")
    mean = math.fsum(differences) / n
    variance = math.fsum((d - mean) ** 2 for d in differences) / (n - 1)
    if variance <= 1e-24 * max(1.0, mean * mean):
        return mean, mean, mean, 1.0 if abs(mean) <= 1e-12 else 0.0
    se = math.sqrt(variance / n)
    half = t_quantile(confidence, n - 1) * se
    return mean, mean - half, mean + half, t_two_sided_p(mean / se, n - 1)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given (statsmodels
    ``multipletests(method="holm")[1]``): a family of tests keeps its error rate at α."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


# -- power ----------------------------------------------------------------------------------

#: The power a suite's detectable drop is stated at.
POWER = 0.8


def runs_needed(rate: float, drop: float, alpha: float = 0.05, power: float = POWER) -> int:
    """Runs per side to detect a pass-rate fall from ``rate`` to ``rate − drop`` with a
    two-sided test at ``alpha`` and ``power`` (Fleiss, no continuity correction; statsmodels
    ``samplesize_proportions_2indep_onetail``):
    n = (z₁₋α/₂·√(2p̄q̄) + z_power·√(p₁q₁ + p₂q₂))² / drop², p̄ the mean of the two rates."""
    if not 0.0 < drop <= rate <= 1.0:
        raise ValueError(f"need 0 < drop <= rate <= 1, got rate {rate!r}, drop {drop!r}")
    if not 0.0 < alpha < 1.0 or not 0.0 < power < 1.0:
        raise ValueError("alpha and power must be between 0 and 1 (exclusive)")
    return math.ceil(_runs_exact(rate, drop, alpha, power) - 1e-9)


def _runs_exact(rate: float, drop: float, alpha: float, power: float) -> float:
    after = rate - drop
    mean = (rate + after) / 2.0
    null = math.sqrt(2.0 * mean * (1.0 - mean))
    alternative = math.sqrt(rate * (1.0 - rate) + after * (1.0 - after))
    z_alpha = normal_quantile(1.0 - alpha)
    z_power = normal_ppf(power)
    return (max(0.0, z_alpha * null + z_power * alternative) / drop) ** 2


def detectable_drop(runs: int, rate: float, alpha: float = 0.05,
                    power: float = POWER) -> float | None:
    """The smallest pass-rate drop from ``rate`` that ``runs`` runs detect with ``power``
    (the inverse of :func:`runs_needed`); None when even a fall to 0 is out of reach."""
    if runs <= 0 or not 0.0 < rate <= 1.0:
        return None
    if _runs_exact(rate, rate, alpha, power) > runs:
        return None
    low, high = 0.0, rate
    for _ in range(100):
        mid = (low + high) / 2.0
        if mid > 0.0 and _runs_exact(rate, mid, alpha, power) <= runs:
            high = mid
        else:
            low = mid
    return high
