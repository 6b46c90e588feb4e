"""The pytest11 entry point: every hook implementation, thin, delegating.

Options and settings live in ``options``, nodes in ``collect``, outcome
categories in ``outcomes``, reports in ``reporting``. The reporter is
registered only on the process that owns the session (never on an xdist
worker), so every report is written exactly once.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from . import collect, options, outcomes
from .concurrency import CaseScheduler
from .reporting import files, github, terminal
from .reporting.aggregate import Aggregate
from .reporting.regression import Regression, compare
from .reporting.results import load as load_results

_REPORTER = "elizon-reporter"


def pytest_addoption(parser: pytest.Parser) -> None:
    options.register(parser)


def pytest_configure(config: pytest.Config) -> None:
    settings = options.resolve(config)
    config.stash[options.SETTINGS] = settings
    if settings.concurrency > 1:
        config.stash[collect.SCHEDULER] = CaseScheduler(settings.concurrency)
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(SessionReporter(config, settings), _REPORTER)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None
                            ) -> Generator[None, object, object]:
    collect.prefetch(item, nextitem)
    return (yield)


def pytest_sessionfinish(session: pytest.Session) -> None:
    scheduler = session.config.stash.get(collect.SCHEDULER, None)
    if scheduler is not None:
        scheduler.stop()  # cases started ahead of an item that never ran are abandoned


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


def _is_suite_node(nodeid: str) -> bool:
    return nodeid.split("::")[0].endswith((".yaml", ".yml"))


class SessionReporter:
    """Collects every case result from the reports and writes the run's reports, once."""

    def __init__(self, config: pytest.Config, settings: options.Settings) -> None:
        self.config = config
        self.settings = settings
        self.aggregate = Aggregate()
        self.regression: Regression | None = None
        self.written: list[tuple[str, Path]] = []
        self.recordings: list[dict[str, Any]] = []
        self.guard = github.Guard.new() if settings.annotations else None
        self.previous: dict[str, Any] | None = None
        if settings.baseline is not None:
            try:
                self.previous = load_results(settings.baseline)
            except ValueError as exc:
                raise pytest.UsageError(f"--elizon-baseline={settings.baseline}: {exc}") from None

    def _terminal(self) -> pytest.TerminalReporter | None:
        plugin = self.config.pluginmanager.get_plugin("terminalreporter")
        return plugin if isinstance(plugin, pytest.TerminalReporter) else None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        writer = self._terminal()
        if self.guard is not None and writer is not None:
            # Nothing printed from here on can run a workflow command (SPEC §8).
            writer.ensure_newline()
            writer.write_line(self.guard.stop)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, outcomes.REPORT_ATTR, None)
        if data is not None:
            self.aggregate.add(data)
            if "recording" in data:
                self.recordings.append(data["recording"])
        elif report.failed and _is_suite_node(report.nodeid) \
                and getattr(report, "when", None) == "???":
            # pytest-xdist's report for a case whose worker crashed.
            self.aggregate.add_crash(report.nodeid, report.longreprtext)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.previous is not None and self.settings.baseline is not None:
            self.regression = compare(self.previous, self.aggregate, str(self.settings.baseline))
        if not len(self.aggregate) and self.regression is None:
            return
        try:
            self.written = files.write_all(self.aggregate, self.regression, self.settings)
            if self.settings.record is not None:
                files.write_cassette(self.settings.record, self.recordings)
                self.written.append(("cassette", self.settings.record))
        except OSError as exc:
            writer = self._terminal()
            if writer is not None:
                writer.write_line(f"elizon: cannot write a report: {exc}", red=True)
            session.exitstatus = pytest.ExitCode.USAGE_ERROR

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        lines = terminal.render(self.aggregate, self.regression)
        if lines:
            terminalreporter.write_sep("=", "elizon eval")
            for text, markup in lines:
                terminalreporter.write_line(text, **markup)
        for kind, path in self.written:
            terminalreporter.write_sep("-", f"generated {kind}: {path}")
        if self.guard is not None:
            terminalreporter.ensure_newline()
            terminalreporter.write_line(self.guard.resume)
            for line in github.annotation_lines(self.aggregate):
                terminalreporter.write_line(line)
