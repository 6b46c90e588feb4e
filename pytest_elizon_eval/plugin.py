"""The pytest11 entry point: every hook implementation, thin, delegating.

Options and settings live in ``options``, nodes in ``collect``, outcome
categories in ``outcomes``, reports in ``reporting``. Reporters are
registered only on the process that owns the session (never on an xdist
worker), so every report is written exactly once.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

import pytest

from . import collect, options, outcomes
from .reporting import terminal
from .reporting.aggregate import Aggregate

_REPORTER = "elizon-reporter"


def pytest_addoption(parser: pytest.Parser) -> None:
    options.register(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.stash[options.SETTINGS] = options.resolve(config)
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(SessionReporter(), _REPORTER)


def pytest_unconfigure(config: pytest.Config) -> None:
    reporter = config.pluginmanager.get_plugin(_REPORTER)
    if reporter is not None:
        config.pluginmanager.unregister(reporter)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    return collect.collect_file(file_path, parent)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    collect.annotate_report(report, item, call)
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_report_teststatus(
    report: pytest.CollectReport | pytest.TestReport, config: pytest.Config
) -> tuple[str, str, str] | None:
    data = getattr(report, outcomes.REPORT_ATTR, None)
    if data is None or not isinstance(report, pytest.TestReport):
        return None
    return outcomes.teststatus(data, report.when)


@pytest.fixture(scope="session")
def elizon_entry() -> object:
    """The entry point every case is given to; override it in conftest.py.

    Return a callable (sync or async) or a ``'module.path:attribute'`` string.
    The default, None, defers to the manifest's ``entry:`` and the ini option;
    ``--elizon-entry`` on the command line beats any fixture.
    """
    return None


@pytest.fixture(scope="session")
def elizon_judge() -> object:
    """The judge for ``judge:`` assertions; override it in conftest.py.

    Return a callable ``(rubric, input, output) -> score | (score, reasoning)`` (sync or
    async), a ``'module.path:attribute'`` string, or an endpoint mapping
    ``{"url": …, "model": …, "apiKeyEnv": …}``. The default, None, defers to the
    manifest's ``judge:`` and the ini option; ``--elizon-judge`` beats any fixture.
    """
    return None


class SessionReporter:
    """Collects every case result from the reports and renders the run's reports."""

    def __init__(self) -> None:
        self.aggregate = Aggregate()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, outcomes.REPORT_ATTR, None)
        if data is not None:
            self.aggregate.add(data)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        lines = terminal.render(self.aggregate)
        if not lines:
            return
        terminalreporter.write_sep("=", "elizon eval")
        for text, markup in lines:
            terminalreporter.write_line(text, **markup)
