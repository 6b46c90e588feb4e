"""Every case result of the run, grouped by suite, with metrics and verdicts.

The metrics and verdicts are docs/contract.md#reports.

Fed on the controller (never on an xdist worker) from the plain data on each
report — a crashed xdist worker's case included — this is the single source
of truth every reporter renders.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..decide.comparison import BETTER, WITHIN_NOISE, WORSE, Comparison, compare
from ..decide.outcomes import (
    ERROR,
    FAILED,
    GATED_BY_COMPARISON,
    INCONCLUSIVE,
    PASSED,
    TIMEOUT,
    CaseResult,
    SuiteInfo,
    blocks,
    inconclusive_passes,
)
from ..measures import suite as task_measures
from ..run.calls import ErrorInfo
from .intervals import (
    DetectableDrop,
    MetricInterval,
    baseline_test,
    detectable_drop,
    proportion_test,
    suite_intervals,
    task_intervals,
)
from .usage_text import dollars

__all__ = ["COST_METRICS", "METRICS", "Aggregate", "BaselineRow", "SuiteSummary", "format_delta",
           "format_metric"]

#: The metric names, in the order reports show them.
METRICS = ("cases", "pass_rate", "fail_rate", "timeout_rate", "inconclusive_rate",
           "mean_latency_ms",
           "p50_latency_ms", "p95_latency_ms", "max_latency_ms", "judge_score",
           "total_cost_usd", "mean_cost_usd", "total_tokens", "mean_tokens", "retries",
           "rate_limited_cases")
#: Metrics where more is worse for the operator's bill (``--elizon-baseline`` flags a rise).
COST_METRICS = ("total_cost_usd", "mean_cost_usd", "total_tokens", "mean_tokens")

Number = float | int
#: Metrics shown in a table only when not 0 (or named by the author): retries
#: (docs/contract.md#retries), and inconclusive cases, which only `repeat: {until: decided}`
#: can produce (every other suite would show a row of 0).
_SHOWN_WHEN_SET = ("inconclusive_rate", "retries", "rate_limited_cases")


def format_metric(value: float | int | None, metric: str, missing: str = "-") -> str:
    """A metric as reports show it: counts whole, latencies in ms to 0.1, rates to 0.001,
    dollars to three significant digits (``$0.0000400``, never ``$0.000000``)."""
    if value is None:
        return missing
    if metric in ("cases", "total_tokens", "retries", "rate_limited_cases") \
            or task_measures.is_count(metric):
        return f"{int(value):,}"
    if metric.endswith("_usd"):  # three significant digits, as every cost (usage_text)
        return dollars(value)
    if metric == "mean_tokens":
        return f"{value:,.1f}"
    return f"{value:.1f}" if metric.endswith("_ms") else f"{value:.3f}"


def format_delta(value: float | None, metric: str, missing: str = "-") -> str:
    """A change of a metric (the baseline tables' Δ), signed, in three significant digits:
    dollars as every cost is shown (``+$0.00000640``, never ``+6.4e-06``), the rest as
    ``+0.0571`` — and never in exponent form (``+1,234``, not ``+1.23e+03``)."""
    if value is None:
        return missing
    if metric.endswith("_usd"):
        return ("-" if value < 0 else "+") + dollars(abs(value))
    shown = f"{value:+.3g}"
    if "e" not in shown:
        return shown
    places = max(0, 2 - math.floor(math.log10(abs(value))))
    shown = f"{value:+,.{places}f}"
    return shown.rstrip("0").rstrip(".") if "." in shown else shown


def _percentile(sorted_values: list[float], share: float) -> float:
    """Nearest rank: the smallest value with at least ``share`` of the values at or below it."""
    rank = max(1, math.ceil(share * len(sorted_values)))
    return sorted_values[rank - 1]


@dataclass(frozen=True)
class BaselineRow:
    """One metric of a suite: the author's baseline next to this run."""

    metric: str
    baseline: float | None
    run: Number | None
    #: ``at``, ``above``, ``below``, or why there is no comparison.
    comparison: str
    #: This run's interval of the metric at elizon_confidence, where it has one.
    interval: MetricInterval | None = None
    #: pass_rate (or a task proportion: accuracy, recall.<label>…) against the author's:
    #: the exact binomial test's p-value and its words
    #: ("within noise …" / "significant …"); else None and "".
    p_value: float | None = None
    noise: str = ""

    @property
    def delta(self) -> float | None:
        if self.baseline is None or self.run is None:
            return None
        return float(self.run) - self.baseline


@dataclass
class SuiteSummary:
    """One suite's cases of this run."""

    info: SuiteInfo
    results: list[CaseResult] = field(default_factory=list)
    _measured: tuple[int, task_measures.SuiteMeasures] | None = field(
        default=None, init=False, repr=False, compare=False)
    #: ini elizon_confidence and elizon_alpha (docs/contract.md#intervals).
    confidence: float = 0.95
    alpha: float = 0.05
    _intervals: tuple[int, dict[str, MetricInterval]] | None = field(
        default=None, init=False, repr=False, compare=False)
    #: Its variants failed ``--elizon-fail-on-regression``'s gate (set by the Aggregate).
    gate_failed: bool = field(default=False, compare=False)

    def intervals(self) -> dict[str, MetricInterval]:
        """An interval for each rate and mean metric measured, task metrics included
        (:mod:`.intervals`)."""
        # every reporter asks (terminal, results, history…): made again only when cases
        # were added, as the measures
        if self._intervals is None or self._intervals[0] != len(self.results):
            measured = self.measures()
            self._intervals = (len(self.results), {
                **suite_intervals(self.results, self.confidence),
                **task_intervals(measured.proportions, measured.samples, self.confidence)})
        return dict(self._intervals[1])

    def detectable_drop(self) -> DetectableDrop | None:
        """The smallest pass-rate drop this suite detects at alpha with 80 % power."""
        return detectable_drop(self.results, self.alpha)

    def count(self, outcome: str) -> int:
        return sum(1 for r in self.results if r.outcome == outcome)

    @property
    def not_passed(self) -> list[CaseResult]:
        return [r for r in self.results if r.outcome != PASSED]

    @property
    def teardown_errors(self) -> int:
        """Cases whose fixture's teardown raised after they ran (their outcome stays)."""
        return sum(1 for r in self.results if r.teardown_error is not None)

    @property
    def passed(self) -> bool:
        return not self.not_passed and not self.teardown_errors

    @property
    def verdict(self) -> str:
        """``pass``, ``fail`` (a case fails the run: see :func:`~.outcomes.blocks`) or
        ``advisory`` (an advisory suite with failures or timeouts, which do not). A suite
        whose only cases not passed are inconclusive under ``elizon_inconclusive = pass``
        passes: the ini says so for every gate (docs/contract.md#repeat-runs). A must-pass
        suite whose variants failed ``--elizon-fail-on-regression``'s gate fails
        (``gate_failed``, docs/contract.md#variant-comparison)."""
        if self.gate_failed:
            return "fail"
        if all((r.outcome == PASSED or inconclusive_passes(r)) and r.teardown_error is None
               for r in self.results):  # a teardown's error fails the run: never a pass
            return "pass"
        return "fail" if any(blocks(r) for r in self.results) else "advisory"

    def metrics(self) -> dict[str, Number | None]:
        """The named numbers a run is compared on; None where nothing was measured."""
        n = len(self.results)
        latencies = sorted(r.latency_ms for r in self.results if r.latency_ms is not None)
        scores = [r.judge_score for r in self.results if r.judge_score is not None]
        # Cost and tokens count only cases that reported them, never a guess for the others.
        costs = [r.usage.cost_usd for r in self.results
                 if r.usage and r.usage.cost_usd is not None]
        tokens = [r.usage.tokens for r in self.results
                  if r.usage and r.usage.tokens is not None]
        return {**{
            "cases": n,
            "pass_rate": self.count(PASSED) / n if n else None,
            "fail_rate": (self.count(FAILED) + self.count(ERROR)) / n if n else None,
            "timeout_rate": self.count(TIMEOUT) / n if n else None,
            "inconclusive_rate": self.count(INCONCLUSIVE) / n if n else None,
            "mean_latency_ms": sum(latencies) / len(latencies) if latencies else None,
            "p50_latency_ms": _percentile(latencies, 0.50) if latencies else None,
            "p95_latency_ms": _percentile(latencies, 0.95) if latencies else None,
            "max_latency_ms": latencies[-1] if latencies else None,
            "judge_score": sum(scores) / len(scores) if scores else None,
            "total_cost_usd": sum(costs) if costs else None,
            "mean_cost_usd": sum(costs) / len(costs) if costs else None,
            "total_tokens": sum(tokens) if tokens else None,
            "mean_tokens": sum(tokens) / len(tokens) if tokens else None,
            # docs/contract.md#retries: how hard the run pushed against its services
            "retries": sum(r.retries for r in self.results),
            "rate_limited_cases": sum(1 for r in self.results if r.rate_limited),
        }, **self.measures().metrics()}

    def measures(self) -> task_measures.SuiteMeasures:
        """Its classification, RAG and agent measures (docs/contract.md#task-metrics)."""
        # every reporter asks, some more than once: measured again only when cases were added
        if self._measured is None or self._measured[0] != len(self.results):
            self._measured = (len(self.results), task_measures.measure(self.results))
        return self._measured[1]

    def baseline_rows(self) -> list[BaselineRow]:
        """Every metric this run measured or the author named, baseline next to run."""
        metrics = self.metrics()
        # a run that retried nothing does not list the retry counts (0) in every table
        names = [m for m in METRICS if m in self.info.baseline or metrics[m]
                 or (metrics[m] is not None and m not in _SHOWN_WHEN_SET)]
        names += [m for m in self.measures().headline if m not in names]
        names += [m for m in self.info.baseline if m not in names]
        rows = []
        intervals = self.intervals()
        counted = self.measures().proportions
        for name in names:
            baseline = self.info.baseline.get(name)
            run = metrics.get(name)
            if name not in metrics:
                comparison = "not measured by this run"
            elif run is None:
                comparison = "nothing measured in this run"
            elif baseline is None:
                comparison = "no baseline"
            elif math.isclose(float(run), baseline, rel_tol=1e-9, abs_tol=1e-9):
                comparison = "at"
            else:
                comparison = "above" if run > baseline else "below"
            tested = None
            if baseline is not None and name == "pass_rate":
                tested = baseline_test(self.results, baseline, self.alpha)
            elif baseline is not None and name in counted:  # accuracy, recall.<label>…
                tested = proportion_test(*counted[name], baseline, self.alpha)
            rows.append(BaselineRow(name, baseline, run, comparison, intervals.get(name),
                                    *(tested or (None, ""))))
        return rows


@dataclass(frozen=True)
class VariantGateFailure:
    """A variant result ``--elizon-fail-on-regression`` fails the run on: a significant
    drop (its metric, change and Holm p), or failed cases its comparison cannot judge
    (``metric`` None)."""

    #: The comparison's package (``pkg``, or ``pkg (advisory suites)``).
    package: str
    variant: str
    reference: str
    metric: str | None
    change: float | None
    adjusted_p: float | None
    #: In words: ``pass_rate -0.833 (Holm p=0.00195)``, or why it could not be judged.
    reason: str


def _cases(results: Sequence[CaseResult]) -> str:
    """``3 failed cases`` (``(c0, c1, c2)`` named, the first few)."""
    ids = [r.case_id for r in results]
    shown = ", ".join(ids[:5]) + (f", … {len(ids) - 5} more" if len(ids) > 5 else "")
    return f"{len(ids)} failed case{'s' if len(ids) != 1 else ''} ({shown})"


class Aggregate:
    """The run's case results, by node id (a re-run case keeps its last result)."""

    def __init__(self, confidence: float = 0.95, alpha: float = 0.05) -> None:
        self.confidence = confidence
        self.alpha = alpha
        self._results: dict[str, CaseResult] = {}
        #: By suite path: the suite's data and record as the first case gave them.
        self._infos: dict[str, tuple[dict[str, Any], SuiteInfo]] = {}
        self._suites: list[SuiteSummary] | None = None
        #: The compliance framework the Compliance section names (``--elizon-compliance``).
        self.framework: str | None = None
        #: ``failed, overridden by NAME: REASON`` when a view shows an override of the gate.
        self.override_note: str | None = None
        self._gate_variants = False
        #: The variant comparisons of the suites last built: (comparison, gated, suites).
        self._compared: list[tuple[Comparison, bool, list[SuiteSummary]]] | None = None

    def add(self, data: Mapping[str, Any]) -> None:
        """Add a case's result from its report's data (an xdist worker's)."""
        suite = data.get("suite")
        if isinstance(suite, Mapping):  # one SuiteInfo per suite, not one per case
            path = suite.get("path")
            known = self._infos.get(path) if isinstance(path, str) else None
            if known is not None and known[0] == suite:
                data = {**data, "suite": known[1]}  # taken as it is by from_data
        result = CaseResult.from_data(data)
        if isinstance(suite, Mapping) and result.suite.path not in self._infos:
            self._infos[result.suite.path] = (dict(suite), result.suite)
        self.add_result(result)

    def add_result(self, result: CaseResult) -> None:
        """Add a case's result as it is (a re-run case replaces its earlier one)."""
        self._results[result.nodeid] = result
        self._suites = None

    def teardown_failed(self, nodeid: str, longrepr: object) -> None:
        """A case's teardown raised (pytest's ERROR at teardown, after its result was
        reported): its outcome stays, and the run failed (docs/contract.md#reports). A
        node id that is no case of the run (a plain pytest test) is none of its business."""
        result = self._results.get(nodeid)
        if result is None:
            return
        try:  # pytest's report of it, as its terminal shows it
            text = str(longrepr)
        except Exception:  # a representation that cannot be printed: the case still counts
            text = ""
        crash = getattr(longrepr, "reprcrash", None)
        message = getattr(crash, "message", None)
        said = message if isinstance(message, str) and message else \
            (text.strip().splitlines() or ["the teardown raised"])[-1]
        kind, colon, rest = said.partition(": ")
        named = bool(colon) and kind.replace(".", "").replace("_", "").isalnum()
        self.add_result(replace(result, teardown_error=ErrorInfo(
            kind if named else "TeardownError", rest if named else said, text[-8000:])))

    def __len__(self) -> int:
        return len(self._results)

    @property
    def gate_variants(self) -> bool:
        """``--elizon-fail-on-regression``: variants are gated by their comparison with
        the reference (docs/contract.md#variant-comparison)."""
        return self._gate_variants

    @gate_variants.setter
    def gate_variants(self, on: bool) -> None:
        self._gate_variants = on
        self._suites = None  # the suites' verdicts depend on it

    def suites(self) -> list[SuiteSummary]:
        """One summary per suite, ordered by suite path; cases in file order (built once per
        set of results: every reporter asks, some more than once)."""
        if self._suites is None:
            self._suites = self._grouped()
            self._compared = None
            if self._gate_variants:  # a must-pass suite of a variant the gate failed
                failed = {(f.package, f.variant) for f in self.variant_regressions()}
                for compared, gated, summaries in self._comparisons():
                    for summary in summaries:  # by its comparison: names may repeat
                        summary.gate_failed = gated and any(
                            (compared.package, r.variant) in failed for r in summary.results)
        return list(self._suites)

    def _grouped(self) -> list[SuiteSummary]:
        known: dict[str, SuiteInfo] = {}
        for r in self._results.values():
            # the fullest record of each suite: a crashed worker's case knows only what the
            # files say, not the variants the session ran (docs/format.md#variants)
            if r.suite.package and (r.suite.path not in known or (
                    r.suite.variants and not known[r.suite.path].variants)):
                known[r.suite.path] = r.suite
        by_path: dict[str, SuiteSummary] = {}
        # probes share their manifest line: the node id orders them the same in every run
        for result in sorted(self._results.values(),
                             key=lambda r: (r.suite.path, r.line, r.nodeid)):
            info = known.get(result.suite.path, result.suite)
            if result.suite is not info:
                result = replace(result, suite=info)
                self._results[result.nodeid] = result  # one copy of each case, not two
            by_path.setdefault(info.path, SuiteSummary(info, confidence=self.confidence,
                                                       alpha=self.alpha)).results.append(result)
        return [by_path[p] for p in sorted(by_path)]

    def _comparisons(self) -> list[tuple[Comparison, bool, list[SuiteSummary]]]:
        """Per package whose cases ran under variants: one comparison of its must-pass
        suites' cases (what the gate decides on) and one of its advisory suites' (never
        gated), each with whether it is gated and its suites."""
        if self._suites is None:
            self.suites()  # builds them (and their gate, which asks for these)
        if self._compared is not None:
            return self._compared
        assert self._suites is not None
        # by package name and its variants (the reference first): two packages of one name
        # (nothing makes names unique) are compared apart unless they declare the same
        # variants, each against its own reference
        groups: dict[tuple[str, tuple[str, ...], bool], list[SuiteSummary]] = {}
        for summary in self._suites:
            if summary.info.variants:
                key = (summary.info.package, tuple(summary.info.variants),
                       not summary.info.advisory)
                groups.setdefault(key, []).append(summary)
        found: list[tuple[Comparison, bool, list[SuiteSummary]]] = []
        for (package, names_of, gated), summaries in sorted(
                groups.items(), key=lambda g: (g[0][0], not g[0][2], g[1][0].info.path)):
            names = list(names_of)
            advisory: set[str] = set()
            for summary in summaries:
                advisory.update(summary.info.advisory_variants or ())
            # a package with both kinds of suite names the advisory ones' comparison apart,
            # and a name shared by packages of other variants names its first suite
            label = package if gated or not any(
                k[0] == package and k[2] for k in groups) else f"{package} (advisory suites)"
            if sum(1 for k in groups if k[0] == package and k[2] == gated) > 1:
                label += f" ({summaries[0].info.path})"
            found.append((compare([r for s in summaries for r in s.results], names, names[0],
                                  advisory, confidence=self.confidence, alpha=self.alpha,
                                  package=label), gated, summaries))
        self._compared = found
        return found

    def variant_comparisons(self) -> list[Comparison]:
        """The comparisons every report shows: per package whose cases ran under variants,
        one of its must-pass suites and one of its advisory suites, the reference first
        (docs/contract.md#variant-comparison)."""
        return [compared for compared, _, _ in self._comparisons()]

    def variant_regressions(self) -> list[VariantGateFailure]:
        """What ``--elizon-fail-on-regression`` fails the run on among the variants
        (docs/contract.md#variant-comparison), decided on the comparison of a package's
        must-pass suites that the reports show, for each variant neither advisory nor the
        reference: a significant drop against the reference; and its failed cases the
        comparison could not judge, gated case by case again — those the reference did not
        run, and every one when there are too few cases to tell. Never a silent pass."""
        found: list[VariantGateFailure] = []
        for compared, gated, summaries in self._comparisons():
            if not gated:
                continue
            reference = compared.reference
            results = [r for s in summaries for r in s.results]
            # the cases the reference ran: what a variant's case is paired with
            paired = {(r.suite.path, r.case_id) for r in results
                      if r.variant == reference and r.outcome != ERROR}
            for variant in compared.variants:
                if variant.reference or variant.advisory:
                    continue
                rows = [d for d in compared.differences if d.variant == variant.name]
                worse = [d for d in rows if d.verdict == WORSE]
                found += [VariantGateFailure(
                    compared.package, variant.name, reference, d.metric, d.change,
                    d.adjusted_p, f"{d.metric} {d.change:+.3g} (Holm p={d.adjusted_p:.3g})")
                    for d in worse]
                gated_name = GATED_BY_COMPARISON.format(variant=variant.name)
                # its cases that would fail the run but for the gate
                held = [r for r in results if r.variant == variant.name
                        and r.advisory == gated_name and blocks(replace(r, advisory=None))]
                judged = any(d.metric == "pass_rate" and d.verdict in (BETTER, WITHIN_NOISE)
                             for d in rows)
                unpaired = [r for r in held if (r.suite.path, r.case_id) not in paired]
                if worse:
                    continue
                if unpaired:
                    found.append(VariantGateFailure(
                        compared.package, variant.name, reference, None, None, None,
                        _cases(unpaired) + f" {reference} did not run: gated case by case"))
                elif held and not judged:
                    found.append(VariantGateFailure(
                        compared.package, variant.name, reference, None, None, None,
                        _cases(held) + " its comparison cannot judge (too few cases to "
                        "tell): gated case by case"))
        return found

    def variant_note(self) -> str:
        """The sentence that says the run failed on its variants; else empty."""
        if not self.gate_variants:
            return ""
        found = self.variant_regressions()
        if not found:
            return ""
        named = "; ".join(f"{f.variant} of {f.package} against {f.reference}: {f.reason}"
                          for f in found)
        return (f"--elizon-fail-on-regression fails the run on {len(found)} variant "
                f"result{'s' if len(found) != 1 else ''} against the reference: {named}.")

    @property
    def passed(self) -> bool:
        """Whether the run passes its gates: no must-pass suite has a case that did not pass,
        and, under ``--elizon-fail-on-regression``, no variant is significantly worse than
        its reference."""
        return all(s.verdict != "fail" for s in self.suites()) and not self.variant_note()

    def rate_limit_note(self) -> str:
        """One sentence when the run was rate limited or retried calls; else empty."""
        results = list(self._results.values())
        retries = sum(r.retries for r in results)
        limited = sum(1 for r in results if r.rate_limited)
        if not retries and not limited:
            return ""
        waited = sum(r.waited_s for r in results)
        return (f"The run was {'rate limited' if limited else 'refused'}: {limited} "
                f"case{'s' if limited != 1 else ''} hit a rate limit, {retries} "
                f"call{'s' if retries != 1 else ''} retried, {waited:.1f} s spent waiting.")

    def cost_note(self) -> str:
        """The run's total cost in one line (docs/contract.md#cost), the judge's apart;
        empty when no case reported a cost."""
        results = list(self._results.values())
        costs = [r.usage.cost_usd for r in results if r.usage and r.usage.cost_usd is not None]
        judged = [r.judge_usage.cost_usd for r in results
                  if r.judge_usage and r.judge_usage.cost_usd is not None]
        if not costs and not judged:
            return ""
        # a total over the cases that reported a cost: how many did is said, never guessed
        unknown = len(results) - len(costs)
        said = (f"run cost: {dollars(sum(costs))} over {len(costs):,} "
                f"case{'s' if len(costs) != 1 else ''}"
                + (f" ({unknown:,} more reported no cost)" if unknown else "")
                if costs else "run cost: unknown (no case's answer reported one)")
        if judged:
            said += f"; the judge: {dollars(sum(judged))}"
        return said

    def paragraph(self) -> str:
        """The run's verdict as one paragraph a person can read (smithers' contract)."""
        suites = self.suites()
        if not suites:
            return "No Elizon cases ran."
        total = sum(len(s.results) for s in suites)
        head = (f"The run {'passed' if self.passed else 'failed'}: {len(suites)} "
                f"suite{'s' if len(suites) != 1 else ''}, {total} case{'s' if total != 1 else ''}.")
        parts = []
        for s in suites:
            n = len(s.results)
            gate = s.info.gate + (" counted as must-pass" if s.info.gate == "advisory"
                                  and not s.info.advisory else "")
            if s.passed:
                parts.append(f"{s.info.path} ({gate}) passed all {n} cases.")
                continue
            counted = [f"{s.count(o)} {o}" for o in (FAILED, TIMEOUT, ERROR, INCONCLUSIVE)
                       if s.count(o)]
            if s.teardown_errors:  # the cases' outcomes stay: said beside them
                counted.append(f"{s.teardown_errors} teardown error"
                               f"{'s' if s.teardown_errors != 1 else ''}")
            detail = ", ".join(counted)
            tail = {"advisory": ", which does not block",
                    "pass": ", which passes by elizon_inconclusive = pass"}.get(s.verdict, "")
            parts.append(f"{s.info.path} ({gate}) passed {s.count(PASSED)} of {n} "
                         f"({detail}){tail}.")
        note = self.variant_note()
        return " ".join([head, *parts, *([note] if note else [])])
