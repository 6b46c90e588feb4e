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
           "clustered_rate_interval", "detectable_drop", "drop_power", "holm",
           "mcnemar_exact", "mcnemar_power", "normal_ppf", "normal_quantile",
           "paired_t_power", "paired_t_test", "repeats_needed", "runs_needed", "t_quantile",
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
    """The mean with its Student's t interval from :func:`clustered_mean`, G − 1 degrees
    of freedom for G clusters (statsmodels OLS ``cov_type="cluster"`` with ``use_t=True``;
    with one observation per cluster, ``DescrStatsW.tconfint_mean``); (None, None) when
    there is no standard error. The variance is estimated, so z would be too narrow: at
    2 cases a 95 % z interval covers about 70 % (docs/contract.md#intervals)."""
    mean, se = clustered_mean(clusters)
    if se is None:
        return mean, None, None
    groups = sum(1 for c in clusters if len(c))
    half = t_quantile(confidence, groups - 1) * se
    return mean, mean - half, mean + half


def clustered_rate_interval(clusters: Sequence[Sequence[bool]], confidence: float = 0.95
                            ) -> tuple[float, float, float]:
    """A pass rate over every run, when runs repeat within cases: the share of runs that
    passed and a Wilson score interval at the clustered effective sample size.

    The effective size is p(1−p)/SE² with SE from :func:`clustered_mean` (Kish's design
    effect), kept between the number of cases and the number of runs: never more certain
    than independent runs, never less than one run per case. A standard error of 0 (each
    case's runs pass at exactly the overall rate) is the clamp's top, the number of runs, as any SE
    small enough is: rounding never picks the formula. At 0 % or 100 % (no spread to
    measure) it is the number of cases. One case's runs are all the suite has: its own
    Wilson interval over runs, as the case's line shows it (docs/contract.md#intervals).
    With one run per case it is plain Wilson.
    """
    runs = sum(len(c) for c in clusters)
    cases = sum(1 for c in clusters if len(c))
    if not runs:
        raise ValueError("a pass-rate interval needs at least one run")
    rate, se = clustered_mean([[1.0 if x else 0.0 for x in c] for c in clusters])
    if cases < 2:
        effective = float(runs)
    elif not 0.0 < rate < 1.0 or se is None:
        effective = float(cases)
    elif se * se * runs <= rate * (1.0 - rate):  # n_eff ≥ runs, SE = 0 included
        effective = float(runs)
    else:
        effective = max(float(cases), rate * (1.0 - rate) / se ** 2)
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
    """The two-sided critical value of Student's t (scipy ``t.ppf(0.5 + confidence/2)``):
    Newton's method on the two-sided tail, kept inside a bracket that bisection narrows
    whenever a step would leave it (each step is one incomplete beta: a suite's t interval
    asks a new df, so this is on every report's path)."""
    normal_quantile(confidence)  # the same check of ``confidence``
    target = 1.0 - confidence
    low, high = 0.0, 1.0
    while t_two_sided_p(high, df) > target:
        low, high = high, high * 2.0
    # the t density at x: d/dx of the two-sided tail is −2·f(x)
    scale = math.exp(math.lgamma((df + 1.0) / 2.0) - math.lgamma(df / 2.0)) \
        / math.sqrt(df * math.pi)
    x = (low + high) / 2.0
    for _ in range(200):
        tail = t_two_sided_p(x, df)
        if tail > target:
            low = x
        else:
            high = x
        density = scale * (1.0 + x * x / df) ** (-(df + 1.0) / 2.0)
        step = (tail - target) / (2.0 * density) if density > 0.0 else math.inf
        following = x + step
        if not low < following < high:  # outside the bracket: bisect instead
            following = (low + high) / 2.0
        if abs(following - x) <= 1e-15 * max(1.0, x):
            return following
        x = following
    return x


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
# The power of the tests --elizon-baseline runs (docs/contract.md#power): McNemar's exact test
# when every case runs once, the paired t-test on per-case pass rates when cases repeat. The
# model: the same cases run again, every run passing independently with probability p before
# and p − D after.

#: The power a suite's detectable drop is stated at.
POWER = 0.8


def _check_drop(rate: float, drop: float, alpha: float) -> None:
    if not 0.0 < drop <= rate <= 1.0:
        raise ValueError(f"need 0 < drop <= rate <= 1, got rate {rate!r}, drop {drop!r}")
    if not 0.0 < alpha < 1.0:
        raise ValueError("alpha must be between 0 and 1 (exclusive)")


def _mcnemar_rejects(k: int, m: int, alpha: float) -> bool:
    """Whether k flips one way and m − k the other (k < m/2) are significant at ``alpha``:
    2·P(Bin(m, ½) ≤ k) < α, by the incomplete beta; near α by :func:`mcnemar_exact` itself,
    so the power counts exactly the outcomes the test calls significant."""
    two = 2.0 * _incomplete_beta(float(m - k), float(k + 1), 0.5)
    if abs(two - alpha) <= 1e-9 * alpha:
        return mcnemar_exact(k, m - k) < alpha
    return two < alpha


@lru_cache(maxsize=1024)  # a suite's detectable drop asks the same few counts many times
def _mcnemar_cut(m: int, alpha: float) -> int:
    """The most flips the other way that m flips may hold and be significant at ``alpha``
    (−1: none), by bisection."""
    low, high = -1, (m - 1) // 2  # the cut lies in [low, high]
    while low < high:
        mid = (low + high + 1) // 2
        if _mcnemar_rejects(mid, m, alpha):
            low = mid
        else:
            high = mid - 1
    return low


def _mcnemar_cuts(counts: range, alpha: float) -> list[int]:
    """:func:`_mcnemar_cut` for each of ``counts`` (consecutive): bisection at the first, then
    from m to m + 1 the cut grows by at most one, decided on P(Bin(m, ½) ≤ k) carried along
    (F_m(c) = F_{m−1}(c) − ½·P_{m−1}(c)), and near α by the exact test itself."""
    cut = _mcnemar_cut(counts.start, alpha) if counts.start else -1
    below = at = 0.0  # P(Bin(m, ½) ≤ cut) and P(Bin(m, ½) = cut)
    if cut >= 0:
        below = _incomplete_beta(float(counts.start - cut), float(cut + 1), 0.5)
        at = math.exp(_log_binom_pmf(cut, counts.start, 0.5))
    cuts = [cut]
    for m in counts[1:]:
        if cut < 0:
            if m >= 1 and _mcnemar_rejects(0, m, alpha):
                cut, below = 0, 0.5 ** m
                at = below
        else:
            below -= 0.5 * at
            at *= 0.5 * m / (m - cut)
            following = at * (m - cut) / (cut + 1)
            if 2 * (cut + 1) < m:
                two = 2.0 * (below + following)
                if abs(two - alpha) <= 1e-9 * alpha:
                    rejects = mcnemar_exact(cut + 1, m - cut - 1) < alpha
                else:
                    rejects = two < alpha
                if rejects:
                    cut, below, at = cut + 1, below + following, following
        cuts.append(cut)
    return cuts


def _likely(n: int, p: float) -> range:
    """The counts of Bin(n, p) outside which the probability is negligible (beyond 10 sd)."""
    if n <= 60:
        return range(n + 1)
    mean, sd = n * p, math.sqrt(n * p * (1.0 - p))
    return range(max(0, math.floor(mean - 10.0 * sd - 3.0)),
                 min(n, math.ceil(mean + 10.0 * sd + 3.0)) + 1)


def _rejections(counts: range, theta: float, alpha: float) -> list[float]:
    """For each m of ``counts`` (consecutive), the chance that McNemar's exact test calls a
    fall significant when m cases flip, each down with probability ``theta``: P(X ≥ m − cut),
    X ~ Bin(m, θ), cut by :func:`_mcnemar_cuts` (0 where no split of m is). It depends on m
    alone, not on the cases: :func:`runs_needed` shares one list among neighbouring n."""
    chances: list[float] = []
    need = 0  # the flips down needed at the previous m; ``tail`` = P(X_{m−1} ≥ need)
    tail = -1.0
    for m, cut in zip(counts, _mcnemar_cuts(counts, alpha), strict=True):
        if cut < 0:
            tail = -1.0
            chances.append(0.0)
            continue
        want = m - cut  # flips down needed: more than half, so a fall
        if theta >= 1.0:
            tail = 1.0
        elif tail >= 0.0 and need >= 1:
            # one flip more: P(X_m ≥ j) = P(X_{m−1} ≥ j) + θ·P(X_{m−1} = j − 1), then up to
            # the new j, less P(X_m = j) for each count passed
            tail += theta * math.exp(_log_binom_pmf(need - 1, m - 1, theta))
            for j in range(need, want):
                tail -= math.exp(_log_binom_pmf(j, m, theta))
            tail = min(1.0, max(0.0, tail))
        else:
            tail = _incomplete_beta(float(want), float(m - want + 1), theta)
        need = want
        chances.append(tail)
    return chances


def _weighted(cases: int, flips: float, chances: Sequence[float], first: int) -> float:
    """Σ P(M = m)·chances[m − first] over the likely m of M ~ Bin(cases, flips)
    (:func:`_likely`, all within the m that ``chances`` covers from ``first``)."""
    counts = _likely(cases, flips)
    # P(m flips), each from the one before: × (n − m)/(m + 1) · π/(1 − π)
    odds = flips / (1.0 - flips) if flips < 1.0 else math.inf
    weight = math.exp(_log_binom_pmf(counts.start, cases, flips))
    terms = []
    for m in counts:
        if m > counts.start:  # from the logarithm where the product would underflow
            weight = weight * (cases - m + 1) / m * odds if 1e-250 < weight < math.inf \
                and odds < math.inf else math.exp(_log_binom_pmf(m, cases, flips))
        chance = chances[m - first]
        if chance > 0.0 and weight > 0.0:
            terms.append(weight * chance)
    return min(1.0, math.fsum(terms))


def _flips(rate: float, drop: float) -> tuple[float, float]:
    """π, the chance that a case flips, and θ, the chance that a flip is down."""
    after = rate - drop
    down, up = rate * (1.0 - after), (1.0 - rate) * after
    return down + up, down / (down + up)


def mcnemar_power(cases: int, rate: float, drop: float, alpha: float = 0.05) -> float:
    """The chance that McNemar's exact test (:func:`mcnemar_exact`) calls a fall significant
    — p < ``alpha`` and more cases flipped pass → fail than back — when ``cases`` cases, run
    once on each side, pass with probability ``rate`` before and ``rate − drop`` after.

    Exact: the m flips are Bin(n, π), π = p(1 − p′) + (1 − p)p′, and given m the flips down
    are Bin(m, p(1 − p′)/π); the power sums P(m) · P(enough of them are down) over m."""
    _check_drop(rate, drop, alpha)
    if cases <= 0:
        return 0.0
    flips, theta = _flips(rate, drop)
    counts = _likely(cases, flips)
    return _weighted(cases, flips, _rejections(counts, theta, alpha), counts.start)


def _t_tail(c: float, df: float, shift: float) -> float:
    """P(T > c) for the noncentral t with ``df`` degrees of freedom and noncentrality
    ``shift`` (scipy ``nct.sf``): the normal tail averaged over the scaled χ, whose density
    ∝ u^(df−1)·e^(−df·u²/2) peaks at about 1 with spread 1/√(2·df) (Simpson's rule)."""
    spread = 1.0 / math.sqrt(2.0 * df)
    low, high = max(0.0, 1.0 - 12.0 * spread), 1.0 + 14.0 * spread + 4.0 / df
    # the normal tail moves c per unit of u: steps of at most 0.04 in it, and an even count
    steps = 2 * max(200, math.ceil(c * (high - low) / 0.08))
    h = (high - low) / steps
    scale = (math.log(2.0) + (df / 2.0) * math.log(df / 2.0) - math.lgamma(df / 2.0))
    total = []
    for i in range(steps + 1):
        u = low + i * h
        if u <= 0.0:
            density = math.exp(scale) if df == 1.0 else 0.0
        else:
            density = math.exp(scale + (df - 1.0) * math.log(u) - df * u * u / 2.0)
        weight = 1.0 if i in (0, steps) else (4.0 if i % 2 else 2.0)
        total.append(weight * density * 0.5 * math.erfc((c * u - shift) / _SQRT2))
    return min(1.0, math.fsum(total) * h / 3.0)


def paired_t_power(cases: int, repeats: float, rate: float, drop: float,
                   alpha: float = 0.05) -> float:
    """The chance that the paired t-test on per-case pass rates (:func:`paired_t_test`)
    calls a fall significant when ``cases`` cases run ``repeats`` times on each side (the
    harmonic mean, when they differ) and pass with probability ``rate`` before and
    ``rate − drop`` after: its noncentral t power (statsmodels ``TTestPower``, one tail)
    with each case's difference spread σ² = (p q + p′q′)/k. Differences without spread
    (from 1 to 0) are always significant."""
    _check_drop(rate, drop, alpha)
    if cases < 2 or repeats <= 0:
        return 0.0
    after = rate - drop
    variance = (rate * (1.0 - rate) + after * (1.0 - after)) / repeats
    if variance <= 0.0:
        return 1.0
    df = float(cases - 1)
    return _t_tail(t_quantile(1.0 - alpha, df), df, drop * math.sqrt(cases / variance))


def drop_power(cases: int, rate: float, drop: float, alpha: float = 0.05,
               repeats: float = 1.0) -> float:
    """The power of the test a comparison of ``cases`` cases runs: McNemar's exact test when
    each runs once, else the paired t-test."""
    if repeats <= 1.0:
        return mcnemar_power(cases, rate, drop, alpha)
    return paired_t_power(cases, repeats, rate, drop, alpha)


@lru_cache(maxsize=256)  # every report of a run asks for each suite's
def detectable_drop(cases: int, rate: float, alpha: float = 0.05, power: float = POWER,
                    repeats: float = 1.0) -> float | None:
    """The smallest pass-rate drop from ``rate`` that a comparison of ``cases`` cases (run
    ``repeats`` times each) detects with ``power`` (:func:`drop_power`); None when even a
    fall to 0 is out of reach."""
    if cases <= 0 or not 0.0 < rate <= 1.0:
        return None
    if not 0.0 < power < 1.0:
        raise ValueError("power must be between 0 and 1 (exclusive)")
    if drop_power(cases, rate, rate, alpha, repeats) < power:
        return None
    low, high = 0.0, rate
    for _ in range(20):  # to a millionth of the rate: below the three decimals shown
        mid = (low + high) / 2.0
        if mid > 0.0 and drop_power(cases, rate, mid, alpha, repeats) >= power:
            high = mid
        else:
            low = mid
    return high


#: How many n below the crossing that bisection finds :func:`runs_needed` tries.
_BELOW = 20


def runs_needed(rate: float, drop: float, alpha: float = 0.05, power: float = POWER) -> int:
    """The fewest cases, each run once on both sides, with which McNemar's exact test
    detects a fall from ``rate`` to ``rate − drop`` with ``power`` (:func:`mcnemar_power`):
    an n whose exact power reaches it where n − 1's does not (docs/contract.md#power).

    An exact test's power zigzags with n. The normal approximation gives a start, Newton's
    method on it a closer one, steps that double from there bracket the crossing and
    bisection finds it; then the 20 n below are tried for a smaller n that reaches it too
    (20 more when the lowest of them does). Each step is one exact power: a few dozen of
    them whatever the n (trying the 5 % of n below took hours for a drop of 0.001), and the
    20 share one list of rejection chances (:func:`_rejections`)."""
    _check_drop(rate, drop, alpha)
    if not 0.0 < power < 1.0:
        raise ValueError("alpha and power must be between 0 and 1 (exclusive)")
    flips, theta = _flips(rate, drop)
    spread = math.sqrt(max(0.0, flips - drop * drop))
    # the normal approximation (Connor 1987): z = (D·√n − z_α·√π)/√(π − D²), linear in √n
    n = max(1, math.ceil((normal_quantile(1.0 - alpha) * math.sqrt(flips)
                          + normal_ppf(power) * spread) ** 2 / drop ** 2))
    reached = mcnemar_power(n, rate, drop, alpha)
    step = max(1, n // 64)
    # Newton's method on that line from the exact power: the approximation's error, about
    # 1 % of n, becomes a case or two
    for _ in range(2):
        if spread <= 0.0 or not 0.0 < reached < 1.0:
            break
        root = max(0.0, math.sqrt(n) + (normal_ppf(power) - normal_ppf(reached)) * spread
                   / drop)
        moved = max(1, math.ceil(root * root)) - n
        if moved == 0:
            break
        n += moved
        reached = mcnemar_power(n, rate, drop, alpha)
        step = max(1, abs(moved) // 2)

    def reaches(m: int) -> bool:
        return mcnemar_power(m, rate, drop, alpha) >= power

    if reached >= power:  # 0 cases detect nothing: an n below the crossing
        low, high = max(0, n - step), n
        while low > 0 and reaches(low):
            step *= 2
            low, high = max(0, low - step), low
    else:
        low, high = n, n + step
        while not reaches(high):
            step *= 2
            low, high = high, high + step
    while high - low > 1:
        mid = (low + high) // 2
        if reaches(mid):
            high = mid
        else:
            low = mid
    while high > 1:  # high reaches power, high − 1 not unless the window says otherwise
        window = range(max(1, high - _BELOW), high)
        likely = [_likely(m, flips) for m in window]
        first = min(r.start for r in likely)
        chances = _rejections(range(first, max(r.stop for r in likely)), theta, alpha)
        below = [m for m in window if _weighted(m, flips, chances, first) >= power]
        if not below or below[0] > window.start:
            return below[0] if below else high
        high = below[0]  # the n just below it not tried yet: 20 more
    return high


def repeats_needed(cases: int, rate: float, drop: float, alpha: float = 0.05,
                   power: float = POWER) -> int | None:
    """The fewest runs per case (2 or more) with which ``cases`` cases detect the fall by
    the paired t-test (:func:`paired_t_power`); None for one case (no paired t-test)."""
    _check_drop(rate, drop, alpha)
    if cases < 2:
        return None
    high = 2
    while paired_t_power(cases, high, rate, drop, alpha) < power:
        high *= 2
    low = high // 2  # below the answer (or 1: none tried)
    while high - low > 1:
        mid = (low + high) // 2
        if mid >= 2 and paired_t_power(cases, mid, rate, drop, alpha) >= power:
            high = mid
        else:
            low = mid
    return high
