"""The words of a repeated case's :class:`~.results_data.RepeatRecord`, shared by every
report: the interval, "within noise", "flaky", the sequential decision and the outputs'
stability. No pytest import here.
"""

from __future__ import annotations

from .results_data import RepeatRecord

__all__ = ["decision_text", "interval_text", "repeat_properties", "repeat_text", "tags"]


def _pct(value: float) -> str:
    return f"{value * 100:.0f}%"


def interval_text(record: RepeatRecord) -> str:
    """``4/5 passed (80%, 95% CI 38%–96%)``."""
    return (f"{record.passed}/{record.runs} passed ({_pct(record.pass_rate)}, "
            f"{_pct(record.confidence)} CI {_pct(record.low)}–{_pct(record.high)})")


def tags(record: RepeatRecord) -> list[str]:
    """The short words: ``flaky``, ``within noise``, ``inconclusive``."""
    found = []
    if record.flaky:
        found.append("flaky")
    if record.rule == "sequential" and record.decision is None:
        found.append("inconclusive")
    elif record.within_noise and record.rule != "sequential":  # a decision is not noise
        found.append("within noise")
    return found


def decision_text(record: RepeatRecord) -> str:
    """How the case was decided against its ``minPassRate``."""
    threshold = f"minPassRate {record.min_pass_rate:g}"
    if record.rule != "sequential":
        return f"fixed repeat: {threshold}"
    zone = (f"{record.method}, zone ±{record.indifference or 0:g}, "
            f"{_pct(record.confidence)} confidence")
    if record.decision is None:
        policy = f"elizon_inconclusive = {'pass' if record.inconclusive_passes else 'fail'}"
        return (f"inconclusive: undecided after {record.runs} of max {record.max_runs} runs "
                f"({zone}; {policy})")
    late = record.runs - (record.decided_at or record.runs)
    extra = f", {late} more already under way counted" if late else ""
    return (f"decided {record.decision} {threshold} at run {record.decided_at} of max "
            f"{record.max_runs}{extra} ({zone})")


def _stability_text(record: RepeatRecord) -> str:
    text = f"{record.unique_outputs} distinct output(s)"
    if record.variance is not None:
        text += (f", variance {record.variance:.3f}, least similar pair "
                 f"{record.min_similarity or 0:.3f}")
    return text


def repeat_text(record: RepeatRecord) -> str:
    """One line for any report: rate, interval, words, decision and outputs."""
    words = tags(record)
    shown = f" — {', '.join(words)}" if words else ""
    return (f"{interval_text(record)}{shown}; {decision_text(record)}; "
            f"{_stability_text(record)}")


def repeat_properties(record: RepeatRecord) -> list[tuple[str, str]]:
    """(name, value) pairs for JUnit properties."""
    pairs = [("elizon_runs", str(record.runs)), ("elizon_passed_runs", str(record.passed)),
             ("elizon_pass_rate", f"{record.pass_rate:.6g}"),
             ("elizon_pass_rate_low", f"{record.low:.6g}"),
             ("elizon_pass_rate_high", f"{record.high:.6g}"),
             ("elizon_confidence", f"{record.confidence:g}"),
             ("elizon_within_noise", str(record.within_noise).lower()),
             ("elizon_flaky", str(record.flaky).lower()),
             ("elizon_unique_outputs", str(record.unique_outputs))]
    if record.rule == "sequential":
        pairs.append(("elizon_decision", record.decision or "inconclusive"))
    if record.variance is not None:
        pairs.append(("elizon_output_variance", f"{record.variance:.6g}"))
    return pairs
