"""Each case's snapshot status in the reports (docs/contract.md#snapshots).

The terminal has its own section (:mod:`..collect.snapshotting`); the results JSON carries
the record as it is; this module gives the JUnit XML a ``snapshot`` property per test case,
the markdown summary its Snapshots section (status of every case that is not a plain
match, and the diffs), and the HTML report the snapshot item of a case's details.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Callable

from ..decide.outcomes import CaseResult
from ..text import cap, visible
from .aggregate import Aggregate

__all__ = ["html_item", "junit_properties", "markdown_lines"]

#: Characters of a diff shown in the markdown summary and the HTML report.
DIFF_SHOWN = 4000
_TESTCASE = re.compile(r"<testcase\b[^>]*?(/?)>")


def _results(aggregate: Aggregate) -> list[CaseResult]:
    return [r for s in aggregate.suites() for r in s.results]


def _attribute(value: str) -> str:
    return html.escape(visible(value, keep_newlines=False), quote=True)


def _properties(result: CaseResult, indent: str) -> str:
    record = result.snapshot
    assert record is not None
    values = {"snapshot": record.status, "snapshot.file": record.file,
              "snapshot.updated": str(record.updated).lower()}
    rows = "".join(
        f'{indent}\t<property name="{k}" value="{_attribute(v)}"/>\n' for k, v in values.items())
    return f"\n{indent}<properties>\n{rows}{indent}</properties>"


def junit_properties(text: str, aggregate: Aggregate) -> str:
    """The JUnit document with the snapshot properties of each case that has one (the
    junit-xml package writes no test-case properties; its test cases come in the
    aggregate's order, one ``<testcase`` each)."""
    results = _results(aggregate)
    if not any(r.snapshot is not None for r in results):
        return text
    found = iter(results)

    def add(match: re.Match[str]) -> str:
        result = next(found, None)
        if result is None or result.snapshot is None:
            return match.group(0)
        start = text.rfind("\n", 0, match.start()) + 1
        indent = text[start:match.start()]
        props = _properties(result, indent + "\t")
        if match.group(1):  # <testcase …/>: open it to hold the properties
            return f"{match.group(0)[:-2]}>{props}\n{indent}</testcase>"
        return match.group(0) + props

    return _TESTCASE.sub(add, text)


def _fence(text: str) -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}diff\n{text}\n{fence}"


def markdown_lines(aggregate: Aggregate, cell: Callable[[str], str]) -> list[str]:
    """The Snapshots section: counts, then every case that is new, changed or written."""
    results = [r for r in _results(aggregate) if r.snapshot is not None]
    if not results:
        return []
    counts = Counter(r.snapshot.status for r in results if r.snapshot is not None)
    lines = ["## Snapshots\n\n" + " · ".join(f"{counts[s]} {s}" for s in
                                            ("match", "new", "changed") if counts[s]) + "\n"]
    notable = [r for r in results if r.snapshot is not None
               and (r.snapshot.status != "match" or r.snapshot.updated)]
    if not notable:
        return lines
    lines.append("| case | status | written | file | why |\n|---|---|---|---|---|")
    for r in notable:
        s = r.snapshot
        assert s is not None
        where = f"{s.file}:{s.line}" if s.line else s.file
        lines.append(f"| `{cell(r.case_id)}` | {s.status} | {'yes' if s.updated else 'no'} | "
                     f"`{cell(where)}` | {cell(s.note or '')} |")
    lines.append("")
    for r in notable:
        if r.snapshot is not None and r.snapshot.diff:
            shown, _ = cap(r.snapshot.diff, DIFF_SHOWN)
            title = html.escape(f"{r.case_id}: snapshot diff")
            lines.append(f"<details><summary>{title}</summary>\n\n"
                         f"{_fence(visible(shown))}\n\n</details>\n")
    return lines


def html_item(result: CaseResult, esc: Callable[[str], str],
              pre: Callable[[str, int], str]) -> tuple[str, str] | None:
    """The ``snapshot`` item of a case's details in the HTML report."""
    s = result.snapshot
    if s is None:
        return None
    where = f"{s.file}:{s.line}" if s.line else s.file
    body = (f"snapshot: {esc(s.status)}{' (written by this run)' if s.updated else ''} "
            f"in <code>{esc(where)}</code>")
    if s.note:
        body += f"; {esc(s.note)}"
    if s.diff:
        body += pre(s.diff, DIFF_SHOWN)
    return "snapshot", body
