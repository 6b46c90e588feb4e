"""pytest-html glue: each case's Elizon details in its row, the verdict in the summary.

Registered by ``plugin.py`` only when pytest-html is active (``--html``), so
nothing here runs, and pytest-html's hooks are never implemented, otherwise.
Uses pytest-html's public ``extras`` API on the report, from a
``pytest_runtest_makereport`` wrapper that runs after the one that puts the
case's data on the report (on an xdist worker too: the extras travel with
the report), and the ``pytest_html_results_summary`` hook on the controller.
The HTML comes from :mod:`.reporting.html`, escaped there.
"""

from __future__ import annotations

import html
from collections.abc import Generator
from typing import Any

import pytest

from ..decide import outcomes
from ..reporting import html as page
from ..reporting.aggregate import Aggregate
from ..reporting.regression import verdict as run_verdict

__all__ = ["PytestHtmlExtras"]


class PytestHtmlExtras:
    """Adds the Elizon details to pytest-html's report."""

    def __init__(self, reporter_name: str) -> None:
        self.reporter_name = reporter_name

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]
                                  ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        data = getattr(report, outcomes.REPORT_ATTR, None)
        if data is not None and report.when == "call":
            from pytest_html import extras  # present: this plugin is registered only with it

            result = outcomes.CaseResult.from_data(data)
            # ``extras`` is pytest-html's attribute, not pytest's: set it as pytest-html does.
            setattr(report, "extras",  # noqa: B010
                    [*getattr(report, "extras", []), extras.html(page.fragment(result))])
        return report

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_summary(self, prefix: list[str], summary: list[str],
                                    postfix: list[str], session: pytest.Session) -> None:
        reporter: Any = session.config.pluginmanager.get_plugin(self.reporter_name)
        aggregate = getattr(reporter, "aggregate", None)
        if not isinstance(aggregate, Aggregate) or not len(aggregate):
            return
        # with --elizon-fail-on-regression, the run's significant regressions have a say
        passed, paragraph = run_verdict(aggregate, getattr(reporter, "regression", None))
        verdict = "PASS" if passed else "FAIL"
        prefix.append(f"<p><strong>Elizon eval: {verdict}</strong> — "
                      f"{html.escape(paragraph)}</p>")
        for suite in aggregate.suites():
            counts = ", ".join(f"{sum(1 for r in suite.results if page.category(r) == c)} {c}"
                               for c in page.CATEGORIES)
            prefix.append(f"<p>{html.escape(suite.info.path)} [{html.escape(suite.info.gate)}]: "
                          f"{counts} — {suite.verdict.upper()}</p>")
