"""The HTML report's trend strip: a suite's last runs from the history store, inline SVG.

One bar per run, its height the pass rate, a whisker for its 95 % Wilson interval, the
current run outlined, green when every case passed and light red (half or more passed) or
red otherwise; each bar's tooltip says the run, its rate, interval and cases; a dashed
blue line between two runs marks where the application changed (its code's fingerprint:
docs/cli.md#history) (docs/contract.md#html-report). Pure: it is given what
:mod:`..history.queries` found.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..history.queries import History, Point

__all__ = ["MOST_FAILED_COLOR", "PASSED_COLOR", "RUNS_SHOWN", "SOME_FAILED_COLOR", "flaky_nodeids",
           "strip"]

#: How many of a suite's last runs a strip shows.
RUNS_SHOWN = 20


#: A run's bar: every case passed; some did not (half or more passed); most did not. None
#: of them is another legend's colour (the page's orange is a timeout).
PASSED_COLOR, SOME_FAILED_COLOR, MOST_FAILED_COLOR = "#2e7d32", "#e57373", "#c62828"


def _bar_color(point: Point) -> str:
    if point.passed == point.cases:
        return PASSED_COLOR
    return SOME_FAILED_COLOR if point.pass_rate >= 0.5 else MOST_FAILED_COLOR


def strip(path: str, points: Sequence[Point], current: int | None) -> str:
    """The figure for suite ``path``; ``current`` is this session's run."""
    shown = list(points)[-RUNS_SHOWN:]
    width, height, top, step = 560, 70, 6, 26
    plot = height - top - 18
    body = [f'<line x1="0" y1="{top + plot}" x2="{width}" y2="{top + plot}" stroke="#ddd"/>']
    for i, p in enumerate(shown):
        x = 8 + i * step
        if i and p.application != shown[i - 1].application:  # a boundary, not a trend
            body.append(f'<line class="app-changed" x1="{x - 5}" y1="{top - 4}" x2="{x - 5}" '
                        f'y2="{top + plot}" stroke="#1565c0" stroke-dasharray="3,2">'
                        f"<title>the application changed before run {p.run}</title></line>")
        h = max(1.0, plot * p.pass_rate)
        lo, hi = (top + plot * (1 - p.interval[1]), top + plot * (1 - p.interval[0]))
        title = (f"run {p.run}{' (this run)' if p.run == current else ''}: pass rate "
                 f"{p.pass_rate:.3f} [{p.interval[0]:.3f}, {p.interval[1]:.3f}], "
                 f"{p.passed} of {p.cases} cases")  # no timestamp: xdist's page is serial's
        outline = ' stroke="#000" stroke-width="2"' if p.run == current else ""
        body.append(f'<g class="run" data-run="{p.run}" data-pass-rate="{p.pass_rate:.6f}">'
                    f"<title>{escape(title)}</title>"
                    f'<rect x="{x}" y="{top + plot - h:.1f}" width="16" height="{h:.1f}" '
                    f'fill="{_bar_color(p)}"{outline}/>'
                    f'<line x1="{x + 8}" y1="{lo:.1f}" x2="{x + 8}" y2="{hi:.1f}" '
                    'stroke="#333"/>'
                    f'<text x="{x + 8}" y="{height - 4}" text-anchor="middle" '
                    f'font-size="9">{p.run}</text></g>')
    label = f"pass rate of {path} over its last {len(shown)} runs"
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
           f'width="{width}" height="{height}" role="img" aria-label="{escape(label)}">'
           + "".join(body) + "</svg>")
    return (f'<figure class="chart-trend" data-path="{escape(path)}"><figcaption>Trend: '
            f"{escape(path)} (last {len(shown)} runs, pass rate and 95% interval)"
            f"</figcaption>{svg}</figure>")


def flaky_nodeids(history: History | None) -> set[str]:
    return {f.nodeid for f in history.flaky} if history is not None else set()
