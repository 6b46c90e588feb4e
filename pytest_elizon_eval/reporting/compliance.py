"""The "Compliance" section of the terminal summary, the markdown summary, the HTML report and
the results JSON (so a signature covers it).

What it holds is docs/contract.md#compliance, the seed's ``buildEvalComplianceReport``: the
run's findings rolled up by the controls cases and probes declare (``controls:``). The seed
rolls up *gate violations*, so a finding is a case that fails the run (``blocks``): a
control passes when no case that declares it fails the run; the run is ``compliant`` only
when every control passes and no case that fails the run is unmapped to a control. An
advisory suite's failure is not a violation (under ``--elizon-strict`` it is): it is listed
with its control as ``advisory_failed``, and fails nothing. ``framework`` is the name
``--elizon-compliance`` gives the controls (SOC 2, ISO 27001, …). The section is there when
a case declares a control or a framework is named.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..decide.outcomes import PASSED, CaseResult, blocks, outcome_name
from .aggregate import Aggregate

__all__ = ["build", "html_part", "markdown_lines", "terminal_lines"]


def _results(aggregate: Aggregate) -> list[CaseResult]:
    return [r for s in aggregate.suites() for r in s.results]


def _case(result: CaseResult) -> dict[str, str]:
    """A case as the section lists it, its outcome as every report words it
    (:func:`~..decide.wording.outcome_name`): an advisory suite's case that did not pass, or
    one only an unaligned judge failed, is ``advisory_failed`` (``_timeout``,
    ``_inconclusive``)."""
    return {"nodeid": result.nodeid, "outcome": outcome_name(result)}


def build(aggregate: Aggregate) -> dict[str, Any] | None:
    """The section as plain data, or None when no case declares a control and no framework
    is named."""
    framework = aggregate.framework
    results = _results(aggregate)
    if framework is None and not any(r.controls for r in results):
        return None
    by_control: dict[str, list[CaseResult]] = {}
    for result in results:
        for control in result.controls:
            by_control.setdefault(control, []).append(result)
    controls = [{"id": control, "passed": not any(blocks(r) for r in cases),
                 "cases": [_case(r) for r in cases]}
                for control, cases in sorted(by_control.items())]
    unmapped = [_case(r) for r in results if blocks(r) and not r.controls]
    return {"framework": framework,
            "compliant": all(c["passed"] for c in controls) and not unmapped,
            "controls": controls, "unmapped_failures": unmapped}


def _blocking(aggregate: Aggregate) -> set[str]:
    return {r.nodeid for r in _results(aggregate) if blocks(r)}


def _failed(control: dict[str, Any], blocking: set[str], *, named: bool = False) -> list[str]:
    """The control's cases that did not pass: those that fail the run by their node id (with
    their outcome, ``named``), the others (advisory) with their outcome and that they are
    not counted."""
    return [(f"{c['nodeid']} ({c['outcome']})" if named else c["nodeid"])
            if c["nodeid"] in blocking else f"{c['nodeid']} ({c['outcome']}, not counted)"
            for c in control["cases"] if c["outcome"] != PASSED]


def _title(data: dict[str, Any]) -> str:
    name = f" ({data['framework']})" if data["framework"] else ""
    failed = sum(not c["passed"] for c in data["controls"])
    verdict = "compliant" if data["compliant"] else "NOT compliant"
    unmapped = len(data["unmapped_failures"])
    return (f"compliance{name}: {verdict} — {len(data['controls']) - failed} of "
            f"{len(data['controls'])} controls passed"
            + (f", {unmapped} failed case{'s' * (unmapped != 1)} unmapped to a control"
               if unmapped else ""))


def terminal_lines(aggregate: Aggregate, *, full: bool = True
                   ) -> list[tuple[str, dict[str, bool]]]:
    """The terminal's Compliance lines with their markup: every control (``full``), or only
    when one failed, the failed controls and unmapped failures (docs/contract.md#terminal)."""
    data = build(aggregate)
    if data is None or (data["compliant"] and not full):
        return []
    lines: list[tuple[str, dict[str, bool]]] = [
        (_title(data), {"red": not data["compliant"], "green": data["compliant"],
                        "bold": True})]
    blocking = _blocking(aggregate)
    for control in data["controls"]:
        if control["passed"] and not full:
            continue
        failed = _failed(control, blocking)
        count = len(control["cases"])
        lines.append((f"  {'passed' if control['passed'] else 'FAILED'} {control['id']}: "
                      f"{count - len(failed)}/{count} cases passed"
                      + (f"; failed: {', '.join(failed)}" if failed else ""),
                      {"red": not control["passed"]}))
    for case in data["unmapped_failures"]:
        lines.append((f"  unmapped {case['outcome']}: {case['nodeid']}", {"red": True}))
    return lines


def markdown_lines(aggregate: Aggregate, cell: Callable[[str], str]) -> list[str]:
    """The markdown summary's Compliance section (``cell`` escapes a table cell)."""
    data = build(aggregate)
    if data is None:
        return []
    mark = "✅" if data["compliant"] else "❌"
    lines = [f"## {mark} Compliance\n", f"{cell(_title(data))}.\n",
             "| control | result | cases passed | failed cases |", "|---|---|---|---|"]
    blocking = _blocking(aggregate)
    for control in data["controls"]:
        # each row with its status, as the terminal's: the mark, and each case's outcome
        failed = _failed(control, blocking, named=True)
        count = len(control["cases"])
        status = "✅ passed" if control["passed"] else "❌ failed"
        lines.append(f"| {cell(control['id'])} | {status} "
                     f"| {count - len(failed)}/{count} | "
                     f"{cell(', '.join(failed)) or '—'} |")
    if data["unmapped_failures"]:
        lines += ["", "Failed cases unmapped to a control: " + ", ".join(
            f"`{cell(c['nodeid'])}` ({c['outcome']})" for c in data["unmapped_failures"])]
    return [*lines, ""]


def html_part(aggregate: Aggregate, escape: Callable[[str], str]) -> str:
    """The HTML report's Compliance section (``escape`` escapes text); empty when none."""
    data = build(aggregate)
    if data is None:
        return ""
    blocking = _blocking(aggregate)
    rows = "".join(
        f"<tr><td>{escape(c['id'])}</td><td>{'passed' if c['passed'] else 'failed'}</td>"
        f"<td>{escape(', '.join(_failed(c, blocking))) or '—'}</td></tr>" for c in data["controls"])
    unmapped = "".join(f"<li>{escape(c['nodeid'])} ({escape(c['outcome'])})</li>"
                       for c in data["unmapped_failures"])
    return (f'<section id="compliance"><h2>Compliance</h2><p>{escape(_title(data))}</p>'
            f"<table><thead><tr><th>control</th><th>result</th><th>failed cases</th></tr>"
            f"</thead><tbody>{rows}</tbody></table>"
            + (f"<p>Failed cases unmapped to a control:</p><ul>{unmapped}</ul>"
               if unmapped else "") + "</section>")
