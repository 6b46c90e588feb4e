"""How reports show a suite's task measures (docs/contract.md#task-metrics): compact lines
for the terminal, markdown tables, and HTML with the confusion matrix as a heatmap.

Undefined values are shown as "—", never 0 or NaN. Every label and tool name comes from
files or answers: each renderer is given its own escaping (``cell`` / ``esc``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .suite import RAG_METRICS, SuiteMeasures

if TYPE_CHECKING:  # types only: the report exists only for suites with labels
    from .classification import ClassificationReport

__all__ = ["html_section", "markdown_lines", "number", "terminal_lines"]

Escape = Callable[[str], str]
#: Most labels (and tools) the terminal lists by name (the markdown and HTML reports list all).
_TERMINAL_LABELS = 8
#: Most labels a confusion matrix is drawn for in markdown and HTML: it grows with their
#: square, and both reports have a size limit. The results JSON always has it whole.
MATRIX_LABELS = 40
_MATRIX_LEFT_OUT = ("The confusion matrix of {n} labels is left out here (at most "
                    f"{MATRIX_LABELS} are drawn); the results JSON has it.")
_RAG_WORDS = {"faithfulness": "faithfulness", "answer_relevancy": "answer relevancy",
              "context_precision": "context precision", "context_recall": "context recall"}


def number(value: float | int | None) -> str:
    if value is None:
        return "—"
    return f"{value:,}" if isinstance(value, int) else f"{value:.3f}"


def _agent_parts(agents: dict[str, float | int | None]) -> list[str]:
    parts = [f"{number(agents['tool_calls'])} tool calls",
             f"success {number(agents['tool_success_rate'])}",
             f"{number(agents['tool_calls_per_case'])} per case",
             f"{number(agents['tool_calls_per_turn'])} per turn"]
    if agents["turns_per_conversation"] is not None:
        parts.append(f"{number(agents['turns_per_conversation'])} turns per conversation")
    if agents["first_tool_rate"] is not None:
        parts.append(f"expected first tool first {number(agents['first_tool_rate'])}")
    return parts


def _tools(agents: dict[str, float | int | None]) -> list[tuple[str, int, float | None]]:
    return [(name[len("tool_calls."):], int(count or 0),
             agents.get(f"tool_error_rate.{name[len('tool_calls.'):]}"))
            for name, count in agents.items() if name.startswith("tool_calls.")]


def terminal_lines(measures: SuiteMeasures) -> list[str]:
    """Compact: one line per kind of measure, per-label recall on one more. A breakdown
    with nothing to say is left out: no case classified, no RAG score, no tool called
    (a conversation's probes: docs/contract.md#terminal)."""
    lines = []
    report = measures.classification
    if report is not None and report.cases:
        lines.append(f"    classification ({report.cases} cases, {len(report.labels)} labels): "
                     f"accuracy {number(report.accuracy)}, macro F1 {number(report.macro[2])}, "
                     f"weighted F1 {number(report.weighted[2])}")
        shown = report.per_label[:_TERMINAL_LABELS]
        more = len(report.per_label) - len(shown)
        lines.append("      recall: " + ", ".join(f"{s.label} {number(s.recall)}"
                                                  for s in shown)
                     + (f", … {more} more" if more else ""))
    if measures.rag is not None and any(v is not None for v in measures.rag.values()):
        lines.append(f"    rag ({measures.rag_cases} cases): " + ", ".join(
            f"{_RAG_WORDS[m]} {number(measures.rag[m])}" for m in RAG_METRICS))
    if measures.agents is not None and measures.agents["tool_calls"]:
        lines.append("    agents: " + ", ".join(_agent_parts(measures.agents)))
        tools = _tools(measures.agents)
        if tools:
            more = len(tools) - _TERMINAL_LABELS
            lines.append("      tools: " + ", ".join(
                f"{name} {count}× (errors {number(rate)})"
                for name, count, rate in tools[:_TERMINAL_LABELS])
                + (f", … {more} more" if more > 0 else ""))
    return lines


def _markdown_classification(report: ClassificationReport, cell: Escape) -> list[str]:
    lines = [f"**Classification** ({report.cases} cases): accuracy "
             f"{number(report.accuracy)}\n",
             "| label | precision | recall | F1 | support |", "|---|---|---|---|---|"]
    lines += [f"| {cell(s.label)} | {number(s.precision)} | {number(s.recall)} | "
              f"{number(s.f1)} | {s.support} |" for s in report.per_label]
    total = sum(s.support for s in report.per_label)
    lines += [f"| *{kind} avg* | {number(p)} | {number(r)} | {number(f)} | {total} |"
              for kind, (p, r, f) in (("macro", report.macro), ("micro", report.micro),
                                      ("weighted", report.weighted))]
    if len(report.labels) > MATRIX_LABELS:
        return [*lines, "", _MATRIX_LEFT_OUT.format(n=len(report.labels)), ""]
    lines += ["", "Confusion matrix (rows actual, columns predicted):", "",
              "| actual \\ predicted | " + " | ".join(cell(x) for x in report.labels) + " |",
              "|---|" + "---|" * len(report.labels)]
    lines += [f"| {cell(label)} | " + " | ".join(str(n) for n in row) + " |"
              for label, row in zip(report.labels, report.matrix, strict=True)]
    return [*lines, ""]


def markdown_lines(measures: SuiteMeasures, cell: Escape) -> list[str]:
    lines: list[str] = []
    if measures.classification is not None:
        lines += _markdown_classification(measures.classification, cell)
    if measures.rag is not None:
        lines += [f"**RAG** ({measures.rag_cases} cases)\n",
                  "| " + " | ".join(_RAG_WORDS[m] for m in RAG_METRICS) + " |",
                  "|---|---|---|---|",
                  "| " + " | ".join(number(measures.rag[m]) for m in RAG_METRICS) + " |", ""]
    if measures.agents is not None:
        lines += ["**Agents**: " + ", ".join(_agent_parts(measures.agents)) + "\n"]
        tools = _tools(measures.agents)
        if tools:
            lines += ["| tool | calls | error rate |", "|---|---|---|"]
            lines += [f"| {cell(name)} | {count} | {number(rate)} |"
                      for name, count, rate in tools]
            lines.append("")
    return lines


def _short(label: str, limit: int = 14) -> str:
    return label if len(label) <= limit else label[:limit - 1] + "…"


def _heatmap(report: ClassificationReport, esc: Escape) -> str:
    """The confusion matrix as an SVG heatmap (the page's content policy allows no inline
    styles): each cell shaded by its share of the actual label's cases, green on the
    diagonal, red off it; each cell's title says what it counts."""
    # the column labels stand upright: written across, two 40-px columns hold no more
    # than a few letters each before they run into each other
    size, left, top = 40, 150, 96
    n = len(report.labels)
    if n > MATRIX_LABELS:
        return f'<p class="note">{_MATRIX_LEFT_OUT.format(n=n)}</p>'
    width, height = left + n * size + 10, top + n * size + 10
    body = []
    for j, label in enumerate(report.labels):
        x, y = left + j * size + size / 2 + 4, top - 6
        body.append(f'<text x="{x:.0f}" y="{y}" transform="rotate(-90 {x:.0f} {y})" '
                    f'font-size="10">{esc(_short(label))}'
                    f"<title>predicted {esc(label)}</title></text>")
    for i, (label, row) in enumerate(zip(report.labels, report.matrix, strict=True)):
        y = top + i * size
        body.append(f'<text x="{left - 6}" y="{y + size / 2 + 4:.0f}" text-anchor="end" '
                    f'font-size="11">{esc(_short(label, 20))}<title>actual {esc(label)}</title>'
                    "</text>")
        total = sum(row)
        for j, count in enumerate(row):
            share = count / total if total else 0.0
            color = "#2e7d32" if i == j else "#c62828"
            x = left + j * size
            body.append(
                f'<rect class="hm" data-actual="{esc(label)}" '
                f'data-predicted="{esc(report.labels[j])}" data-count="{count}" x="{x}" '
                f'y="{y}" width="{size - 2}" height="{size - 2}" fill="{color}" '
                f'fill-opacity="{0.08 + 0.8 * share:.3f}"><title>{esc(label)} predicted as '
                f"{esc(report.labels[j])}: {count}</title></rect>"
                f'<text x="{x + size / 2 - 1:.0f}" y="{y + size / 2 + 4:.0f}" '
                f'text-anchor="middle" font-size="12">{count}</text>')
    return (f'<figure class="heatmap"><figcaption>Confusion matrix: rows actual, columns '
            f'predicted</figcaption><svg xmlns="http://www.w3.org/2000/svg" '
            f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
            f'aria-label="confusion matrix">{"".join(body)}</svg></figure>')


def html_section(measures: SuiteMeasures, esc: Escape, cell: Escape | None = None) -> str:
    """The suite's task measures as HTML; ``cell`` writes a label or tool name in a table
    cell (the page passes one that lets a long name wrap between its words), ``esc``
    everywhere else (the heatmap's SVG text takes no markup)."""
    cell = cell or esc
    parts = []
    report = measures.classification
    if report is not None:
        rows = "".join(f"<tr><td>{cell(s.label)}</td><td>{number(s.precision)}</td>"
                       f"<td>{number(s.recall)}</td><td>{number(s.f1)}</td>"
                       f"<td>{s.support}</td></tr>" for s in report.per_label)
        rows += "".join(f"<tr><td><em>{kind} avg</em></td><td>{number(p)}</td>"
                        f"<td>{number(r)}</td><td>{number(f)}</td><td></td></tr>"
                        for kind, (p, r, f) in (("macro", report.macro),
                                                ("micro", report.micro),
                                                ("weighted", report.weighted)))
        parts.append(f'<div class="measures"><h3>Classification: accuracy '
                     f"{number(report.accuracy)} ({report.cases} cases)</h3>"
                     f"<table><tr><th>label</th><th>precision</th><th>recall</th><th>F1</th>"
                     f"<th>support</th></tr>{rows}</table>{_heatmap(report, esc)}</div>")
    if measures.rag is not None:
        cells = "".join(f"<tr><td>{_RAG_WORDS[m]}</td><td>{number(measures.rag[m])}</td></tr>"
                        for m in RAG_METRICS)
        parts.append(f'<div class="measures"><h3>RAG ({measures.rag_cases} cases)</h3>'
                     f"<table>{cells}</table></div>")
    if measures.agents is not None:
        tools = "".join(f"<tr><td>{cell(name)}</td><td>{count}</td><td>{number(rate)}</td></tr>"
                        for name, count, rate in _tools(measures.agents))
        parts.append(f'<div class="measures"><h3>Agents</h3><p>'
                     f"{esc(', '.join(_agent_parts(measures.agents)))}</p>"
                     + (f"<table><tr><th>tool</th><th>calls</th><th>error rate</th></tr>"
                        f"{tools}</table>" if tools else "") + "</div>")
    return "".join(parts)
