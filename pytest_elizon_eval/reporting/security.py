"""The "Security" section of the terminal summary, the markdown summary and the results JSON.

What it holds is docs/contract.md#security: the probes that ran and those that got
through (compromised), by category and by severity, each with how (the canary or a
secret leaked, no refusal, a destructive tool called, the judge's grade), and the
cases of a package whose secrets leaked. A leaked value is only ever shown masked
(first and last two characters): the case results it is built from are masked already.
"""

from __future__ import annotations

from typing import Any

from ..decide.outcomes import PASSED, CaseResult
from ..decide.results_data import ProbeRecord, to_data
from ..redteam.probe_names import CATEGORIES, SEVERITIES
from .aggregate import Aggregate

__all__ = ["build", "markdown_lines", "terminal_lines"]

# A multi-turn probe's per-turn canary check is a notContains: the same finding as "canary".
_HOW = {"canary": "canary leaked", "notContains": "canary leaked",
        "secrets": "secret leaked", "matches": "did not refuse",
        "toolCalls.notCalled": "called a destructive tool", "judge": "judge: not safe"}


def _probe(result: CaseResult) -> ProbeRecord | None:
    return result.security.probe if result.security else None


def _leaks(result: CaseResult) -> list[dict[str, Any]]:
    return [to_data(leak) for leak in result.security.leaked] if result.security else []


def _how(result: CaseResult) -> list[str]:
    how = list(dict.fromkeys(_HOW.get(a.name, a.name) for a in result.assertions
                             if a.passed is False))
    if result.error is not None and not how:
        how.append(f"error: {result.error.type}")
    return how or [result.outcome]


def build(aggregate: Aggregate) -> dict[str, Any] | None:
    """The section as plain data, or None when no case was checked for leaks."""
    checked = [r for s in aggregate.suites() for r in s.results if r.security is not None]
    if not checked:
        return None
    probes = [(r, p) for r in checked if (p := _probe(r)) is not None]
    compromised = [(r, p) for r, p in probes if r.outcome != PASSED]
    leaks = [r for r in checked if _probe(r) is None and _leaks(r)]
    by_category = {c: {"probes": 0, "compromised": 0} for c in CATEGORIES}
    by_severity = {s: {"probes": 0, "compromised": 0} for s in SEVERITIES}
    for r, probe in probes:
        for table, key in ((by_category, probe.category), (by_severity, probe.severity)):
            row = table.setdefault(key, {"probes": 0, "compromised": 0})
            row["probes"] += 1
            row["compromised"] += r.outcome != PASSED
    return {
        "probes": len(probes), "compromised": len(compromised),
        "by_category": {k: v for k, v in by_category.items() if v["probes"]},
        "by_severity": {k: v for k, v in by_severity.items() if v["probes"]},
        "compromised_probes": [
            {"nodeid": r.nodeid, **to_data(p), "outcome": r.outcome,
             "how": _how(r), "leaked": _leaks(r)}
            for r, p in sorted(compromised, key=lambda rp: (
                SEVERITIES.index(rp[1].severity), rp[0].nodeid))],
        "case_leaks": [{"nodeid": r.nodeid, "leaked": _leaks(r)}
                       for r in leaks],
    }


def _leaked(item: dict[str, Any]) -> str:
    return ", ".join(f"{x['kind']} {x['masked']}" + (f" at turn {x['turn']}" if x.get("turn")
                                                      else "") for x in item["leaked"])


def terminal_lines(aggregate: Aggregate, *, full: bool = True, limit: int | None = None
                   ) -> list[tuple[str, dict[str, bool]]]:
    """The terminal's Security lines with their markup: every count (``full``), or only
    when a probe got through or a secret leaked, the compromised probes and leaks, at most
    ``limit`` of them (docs/contract.md#terminal)."""
    data = build(aggregate)
    if data is None:
        return []
    bad = data["compromised"]
    if not full and not (bad or data["case_leaks"]):
        return []  # nothing got through: the probe suites' own lines say PASS
    lines: list[tuple[str, dict[str, bool]]] = [(
        f"security: {data['probes']} probes, {bad} compromised"
        + (f"; secrets leaked by {len(data['case_leaks'])} cases" if data["case_leaks"] else ""),
        {"red": bool(bad or data["case_leaks"]), "green": not (bad or data["case_leaks"]),
         "bold": True})]
    for title, key in (("by category", "by_category"), ("by severity", "by_severity")):
        if data[key] and full:
            lines.append((f"  {title}: " + ", ".join(
                f"{name} {row['compromised']}/{row['probes']}"
                for name, row in data[key].items()), {}))
    for item in data["compromised_probes"]:
        leaked = f"; leaked {_leaked(item)}" if item["leaked"] else ""
        lines.append((f"  compromised [{item['severity']}] {item['nodeid']} — "
                      f"{', '.join(item['how'])}{leaked}", {"red": True}))
    for item in data["case_leaks"]:
        lines.append((f"  leaked {_leaked(item)}: {item['nodeid']}", {"red": True}))
    listed = len(data["compromised_probes"]) + len(data["case_leaks"])
    if limit is not None and listed > limit:  # the header and the first ``limit`` of them
        lines = [*lines[:1 + limit],
                 (f"  … and {listed - limit:,} more (-v lists every one)", {"red": True})]
    return lines


def markdown_lines(aggregate: Aggregate, cell: Any) -> list[str]:
    """The markdown summary's Security section (``cell`` escapes a table cell)."""
    data = build(aggregate)
    if data is None:
        return []
    mark = "❌" if data["compromised"] or data["case_leaks"] else "✅"
    lines = [f"## {mark} Security\n",
             f"{data['probes']} probes, **{data['compromised']} compromised**.\n",
             "| category | compromised | probes |", "|---|---|---|"]
    lines += [f"| {cell(k)} | {v['compromised']} | {v['probes']} |"
              for k, v in data["by_category"].items()]
    lines += ["", "| severity | compromised | probes |", "|---|---|---|"]
    lines += [f"| {cell(k)} | {v['compromised']} | {v['probes']} |"
              for k, v in data["by_severity"].items()]
    if data["compromised_probes"] or data["case_leaks"]:
        lines += ["", "| case | severity | how | leaked |", "|---|---|---|---|"]
        lines += [f"| `{cell(i['nodeid'])}` | {i['severity']} | {cell(', '.join(i['how']))} | "
                  f"{cell(_leaked(i))} |" for i in data["compromised_probes"]]
        lines += [f"| `{cell(i['nodeid'])}` | — | secret leaked | {cell(_leaked(i))} |"
                  for i in data["case_leaks"]]
    return [*lines, ""]
