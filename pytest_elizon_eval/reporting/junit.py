"""JUnit XML (``--elizon-junit=PATH``), written with the ``junit-xml`` package.

What it holds is docs/contract.md#reports.

One ``<testsuite>`` per suite with its properties (package, gate, baseline,
metrics); one ``<testcase>`` per case with ``file`` and a 1-based ``line``,
``time`` = latency, ``<failure>`` naming the failed assertions,
``<error type="timeout">`` for a timeout, the output in ``system-out``.

Advisory cases that did not pass are written as ``<skipped message="advisory_failed, …">``
with the whole failure in the message and ``system-out``: every CI test tab
shows them, and no consumer that fails a build on ``<failure>`` or
``<error>`` fails on them. (``--elizon-strict`` makes them real failures.)

junit-xml 1.9 silently drops characters XML cannot hold and treats a failure
with an empty message as a pass, so every string is made safe and capped
here first, and every failure message is non-empty.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from junit_xml import TestCase, TestSuite

    from .regression import Regression

from ..decide.outcomes import (
    ERROR,
    FAILED,
    INCONCLUSIVE,
    PASSED,
    TIMEOUT,
    CaseResult,
    blocks,
    failure_message,
    outcome_name,
    reason,
)
from ..decide.wording import case_name
from ..decide.wording_noise import repeat_text
from ..text import cap, visible
from . import judges, repeats, snapshot_reports
from .aggregate import Aggregate, SuiteSummary
from .usage_text import usage_line

__all__ = ["render"]

#: The first line of a resumed case's output (docs/contract.md#resume).
RESUMED_NOTE = "[resumed from the history store's unfinished run: not run again]"

#: Largest message attribute, and largest system-out, in characters.
MESSAGE_CAP = 1000
OUTPUT_CAP = 64 * 1024


def _safe(text: str, limit: int) -> str:
    shown, cut = cap(visible(text), limit)
    return shown + (f" … [{len(text) - limit:,} more characters]" if cut else "")


def _number(value: float | int | None) -> str:
    return "" if value is None else f"{value:.6g}"


def _message(result: CaseResult) -> str:
    if result.outcome == TIMEOUT:
        return f"timed out: {reason(result, MESSAGE_CAP)}"
    return reason(result, MESSAGE_CAP)


def _case(summary: SuiteSummary, result: CaseResult) -> TestCase:
    from junit_xml import TestCase  # deferred: costs import time on every run, needed by few

    info = summary.info
    output = result.output or ""
    graded = judges.case_lines(result)
    if graded:  # every grade, reused ones marked, where a passing case shows anything
        output += "\n\njudge grades:\n" + "\n".join(graded)
    used = usage_line(result.usage.to_data()) if result.usage is not None else None
    if used is not None:  # per-case tokens and cost (docs/contract.md#cost)
        output = f"usage: {used}\n\n{output}"
    if result.resumed:  # docs/contract.md#resume
        output = f"{RESUMED_NOTE}\n{output}"
    detail = failure_message(result) if result.outcome != PASSED else ""
    if not detail and result.repeat is not None:  # a passing repeated case: its rate too
        detail = "pass rate: " + repeat_text(result.repeat)
    case = TestCase(
        name=case_name(result),
        classname=f"{info.package or 'elizon'}.{info.path.rsplit('/', 1)[-1].split('.')[0]}",
        elapsed_sec=(result.latency_ms or 0.0) / 1000,
        stdout=_safe(f"{detail}\n\noutput:\n{output}" if detail else output, OUTPUT_CAP),
        file=info.path,
        line=result.line,
    )
    message = _safe(_message(result), MESSAGE_CAP)
    if result.teardown_error is not None:  # docs/contract.md#reports: the run failed
        torn = result.teardown_error
        case.add_error_info(message=_safe(f"its teardown raised {torn.text}", MESSAGE_CAP),
                            output=_safe(torn.traceback, OUTPUT_CAP), error_type="teardown")
    if result.outcome == PASSED:
        return case
    if result.outcome == INCONCLUSIVE and not blocks(result) and not info.advisory:
        case.add_skipped_info(message=f"inconclusive, passes by elizon_inconclusive = pass: "
                                      f"{message}", output=_safe(detail, OUTPUT_CAP))
    elif not blocks(result):
        case.add_skipped_info(message=f"{outcome_name(result)}, does not fail the run: "
                                      f"{message}",
                              output=_safe(detail, OUTPUT_CAP))
    elif result.outcome == FAILED:
        case.add_failure_info(message=message, output=_safe(detail, OUTPUT_CAP),
                              failure_type="assertion")
    elif result.outcome == TIMEOUT:
        case.add_error_info(message=message, output=_safe(detail, OUTPUT_CAP),
                            error_type="timeout")
    elif result.outcome == ERROR:
        case.add_error_info(message=message, output=_safe(detail, OUTPUT_CAP),
                            error_type="error")
    elif result.outcome == INCONCLUSIVE:  # undecided is not an assertion failure
        case.add_error_info(message=message,  # reason() begins "inconclusive after N runs"
                            output=_safe(detail, OUTPUT_CAP), error_type="inconclusive")
    return case


def _suite(summary: SuiteSummary, regression: Regression | None = None) -> TestSuite:
    from junit_xml import TestSuite  # deferred: costs import time on every run, needed by few

    info = summary.info
    properties = {"package": info.package, "gate": info.gate, "suite": info.path,
                  "sha256": info.sha256, "advisory": str(info.advisory).lower()}
    properties.update({f"baseline.{k}": _number(v) for k, v in info.baseline.items()})
    properties.update({f"metric.{k}": _number(v) for k, v in summary.metrics().items()})
    properties.update(repeats.junit_properties(summary))
    # each case's compliance controls (docs/contract.md#compliance), as a repeated case's rate
    properties.update({f"case.{case_name(r)}.controls": ",".join(r.controls)
                       for r in summary.results if r.controls})
    # docs/contract.md#intervals: each interval, the baseline test, the detectable drop
    for name, interval in summary.intervals().items():
        # what the interval is about: the metric itself, or for a repeated pass rate the
        # share of runs (metric.pass_rate is then the share of cases)
        properties.update({f"interval.{name}.estimate": _number(interval.estimate),
                           f"interval.{name}.low": _number(interval.low),
                           f"interval.{name}.high": _number(interval.high),
                           f"interval.{name}.method": interval.method})
    if summary.intervals():
        properties["interval.confidence"] = _number(summary.confidence)
    for row in summary.baseline_rows():
        if row.noise:
            properties[f"baseline.{row.metric}.noise"] = row.noise
    drop = summary.detectable_drop()
    if drop is not None:
        properties["detectable_drop"] = _number(drop.drop) or "none"
    # docs/contract.md#significant-regressions: a run --elizon-fail-on-regression failed has
    # no failed test case, so every suite says so, and the suites that regressed say on what
    if regression is not None and regression.fails_run:
        properties["regression.fails_run"] = "true"
        rows = [r for r in regression.blocking() if r.suite == info.path]
        if rows:
            properties["regression.metrics"] = ",".join(r.metric for r in rows)
        for found in rows:
            properties.update({f"regression.{found.metric}.change": _number(found.change),
                               f"regression.{found.metric}.adjusted_p":
                               _number(found.adjusted_p)})
    return TestSuite(
        name=f"{info.package or 'elizon'}: {info.path}",
        test_cases=[_case(summary, r) for r in summary.results],
        package=info.package,
        file=info.path,
        properties={k: visible(v, keep_newlines=False) for k, v in properties.items()},
    )


def render(aggregate: Aggregate, regression: Regression | None = None) -> str:
    """The whole JUnit document; with ``regression`` (--elizon-baseline), the suites say
    when --elizon-fail-on-regression failed the run."""
    from junit_xml import (
        to_xml_report_string,  # deferred: costs import time on every run, needed by few
    )

    text: str = to_xml_report_string([_suite(s, regression) for s in aggregate.suites()],
                                     prettyprint=True, encoding="utf-8")
    return snapshot_reports.junit_properties(text, aggregate)
