"""What a repeated case's runs say together: its pass rate with the Wilson interval, the
sequential decision, flakiness, and the ``deterministic`` / ``stable`` checks of its
outputs (docs/contract.md#repeat-runs, #stability). :mod:`.outcomes` asks this module;
no pytest import here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..run.assertions import AssertionResult
from ..sequential import ABOVE, BELOW, Stability, flaky, stability, within_noise
from ..stats import wilson_interval
from .results_data import FAILED, INCONCLUSIVE, PASSED, TIMEOUT, RepeatRecord

if TYPE_CHECKING:  # types only: reports read results without the run path
    from ..run.running import CasePlan

__all__ = ["SIMILARITY_CHARS", "across_runs", "repeat_outcome", "repeat_record"]

#: Characters of each output compared for similarity (difflib is quadratic in length).
SIMILARITY_CHARS = 1000
#: The method named in reports.
METHOD = "SPRT"


def repeat_outcome(plan: CasePlan, outcomes: Sequence[str]) -> tuple[str, str | None, int]:
    """The case's outcome from its runs' outcomes, the sequential decision and the run it
    came at: the counting rule of ``repeat: n``, or the stopping rule's decision."""
    passed = outcomes.count(PASSED)
    if plan.sequential is None:
        if passed / len(outcomes) >= plan.min_pass_rate - 1e-9:  # 3/5 meets 0.6 despite rounding
            return PASSED, None, len(outcomes)
        return (TIMEOUT if all(o == TIMEOUT for o in outcomes) else FAILED), None, len(outcomes)
    decision, at = plan.sequential.decide(o == PASSED for o in outcomes)
    if decision == ABOVE:
        return PASSED, decision, at
    if decision == BELOW:
        return (TIMEOUT if all(o == TIMEOUT for o in outcomes) else FAILED), decision, at
    return INCONCLUSIVE, None, at


def _outputs(texts: Sequence[str | None]) -> Stability:
    return stability([None if t is None else t[:SIMILARITY_CHARS] for t in texts])


def repeat_record(plan: CasePlan, outcomes: Sequence[str], texts: Sequence[str | None],
                  decision: str | None, decided_at: int) -> RepeatRecord:
    """The case's :class:`RepeatRecord` (``texts``: each run's whole output, or None)."""
    n, passed = len(outcomes), outcomes.count(PASSED)
    low, high = wilson_interval(passed, n, plan.confidence)
    expect = plan.case.expect
    measured = _outputs(texts) if expect is not None and expect.across_runs else None
    rule = plan.sequential
    return RepeatRecord(
        runs=n, passed=passed, pass_rate=passed / n, low=low, high=high,
        confidence=plan.confidence, min_pass_rate=plan.min_pass_rate,
        within_noise=within_noise(passed, n, plan.min_pass_rate, plan.confidence),
        flaky=flaky(passed, n),
        rule="fixed" if rule is None else "sequential",
        unique_outputs=len({t for t in texts}),
        max_runs=None if rule is None else plan.repeat,
        method=None if rule is None else METHOD,
        indifference=None if rule is None else rule.indifference,
        decision=decision,
        decided_at=None if rule is None or decision is None else decided_at,
        inconclusive_passes=None if rule is None else plan.inconclusive_passes,
        variance=None if measured is None else round(measured.variance, 6),
        min_similarity=None if measured is None else round(measured.min_similarity, 6))


def across_runs(plan: CasePlan, record: RepeatRecord) -> tuple[AssertionResult, ...]:
    """``expect.deterministic`` and ``expect.stable``, checked over every run's output."""
    expect = plan.case.expect
    if expect is None or not expect.across_runs:
        return ()
    found = (f"{record.unique_outputs} distinct output(s) in {record.runs} runs, variance "
             f"{record.variance or 0:.3f}, least similar pair {record.min_similarity or 0:.3f}")
    results = []
    if expect.deterministic:
        results.append(AssertionResult("deterministic", record.unique_outputs == 1,
                                       "the same output from every run", found))
    stable = expect.stable
    if stable is not None:
        # what was found next to each limit ("3 unique outputs, max 2"), then the rest
        wanted, ok, said = [], True, []
        if stable.max_unique_outputs is not None:
            wanted.append(f"at most {stable.max_unique_outputs} distinct output(s)")
            ok = ok and record.unique_outputs <= stable.max_unique_outputs
            said.append(f"{record.unique_outputs} unique output"
                        f"{'s' * (record.unique_outputs != 1)}, max "
                        f"{stable.max_unique_outputs}")
        if stable.min_similarity is not None:
            wanted.append(f"every pair of outputs at least {stable.min_similarity:g} similar")
            ok = ok and (record.min_similarity or 0.0) >= stable.min_similarity - 1e-9
            said.append(f"least similar pair {record.min_similarity or 0:.3f}, min "
                        f"{stable.min_similarity:g}")
        results.append(AssertionResult("stable", ok, " and ".join(wanted),
                                       f"{'; '.join(said)} — {found}"))
    return tuple(results)
