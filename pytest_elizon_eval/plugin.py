"""The pytest11 entry point: every hook implementation, thin, delegating.

Options and settings live in ``options``, the session's state in ``session``, the
plugin's own hooks in ``hookspecs``, nodes in ``collect``, the outcome in ``outcomes``,
reports in ``reporting``; a case's result goes on pytest's report here (:func:`annotate`,
its terminal category in :func:`teststatus`, from the report's data alone so the xdist
controller can decide it); the probe pack (``redteam_nodes``) is a
client of those hooks, registered here. The reporter is
registered only on the process that owns the session (never on an xdist
worker), so every report is written exactly once; it recognises a case
whose xdist worker crashed through xdist's own ``pytest_handlecrashitem``.
"""

from __future__ import annotations

import functools
from collections.abc import Generator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .bind.binding import Binder
from .collect import _pytest_compat as compat
from .collect import hookspecs, options, snapshotting
from .collect import nodes as collect
from .collect import session as elizon_session
from .decide import outcomes
from .load import discovery
from .load.discovery import PackageIndex
from .load.packages import Variant, standalone
from .load.suite_cache import for_pytest_cache
from .measures import hooks as measures_hooks
from .redteam import nodes as redteam_nodes
from .reporting.aggregate import Aggregate
from .run import concurrency, deadlines
from .trust import provenance

if TYPE_CHECKING:  # the report writers are imported where a run needs them (start-up cost)
    from .reporting.github import Guard
    from .reporting.regression import Regression

_REPORTER = "elizon-reporter"
_HISTORY = "elizon-history"


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    options.register(parser)


def pytest_configure(config: pytest.Config) -> None:
    problem = compat.unsupported_pytest()
    if problem:
        config.issue_config_time_warning(pytest.PytestConfigWarning(problem), stacklevel=2)
    settings = options.resolve(config)
    # the process's deadline state is this session's until its cleanup puts it back (a run
    # inside a test, pytester's, keeps deadlines by its own options, not its host's)
    config.add_cleanup(functools.partial(_restore_deadlines, deadlines.suspended(),
                                         deadlines.hung.cap))
    debugging = _debugging(config)
    deadlines.restore(debugging)
    if debugging is not None:
        # one case at a time: the person debugging steps through one call, not 64
        settings = replace(settings, concurrency=1, concurrency_auto=False)
    deadlines.hung.cap = max(settings.max_hung_calls, settings.concurrency)
    # per process: each xdist worker adapts its concurrency on its own
    gates = concurrency.Gates(settings.concurrency) if settings.concurrency_auto else None
    elizon_session.ElizonSession(
        settings=settings, index=PackageIndex(config.rootpath, settings.strict,
                                              for_pytest_cache(getattr(config, "cache", None))),
        binder=Binder(config.rootpath),
        retry=replace(settings.retry, on_refusal=gates.refused if gates is not None else None),
        gates=gates,
        scheduler=concurrency.CaseScheduler(settings.concurrency,
                                            queued=settings.concurrency if gates is None
                                            else 0)
        if settings.concurrency > 1 else None,
        suspended=debugging,
    ).start(config)
    # the probe pack: the run's canary (one for all xdist workers), its fixtures, its checks
    config.pluginmanager.register(redteam_nodes, "elizon-redteam")
    # the task measures: each case's label, passages and RAG scores (docs/contract.md#task-metrics)
    config.pluginmanager.register(measures_hooks, "elizon-measures")
    config.pluginmanager.import_plugin("pytest_elizon_eval.mock.fixtures")  # docs/mock.md
    # the elizon_prompt fixture (docs/format.md#prompts)
    config.pluginmanager.import_plugin("pytest_elizon_eval.collect.prompt_fixture")
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(SessionReporter(config, settings), _REPORTER)
        if settings.history is not None and not config.option.collectonly:
            # deferred: a session that runs no case (--collect-only) records nothing
            from .history.recorder import HistoryRecorder

            config.pluginmanager.register(HistoryRecorder(config, settings), _HISTORY)
    elif settings.resume:
        from .history.recorder import worker_resumable  # deferred: only a resumed run's

        worker_resumable(config)
    # snapshots: compared in every process, written by the owning one (docs/contract.md#snapshots)
    config.pluginmanager.register(snapshotting.SnapshotCases(config), "elizon-snapshots")
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(snapshotting.SnapshotWriter(config),
                                      "elizon-snapshot-writer")
    if config.pluginmanager.hasplugin("html") and getattr(config.option, "htmlpath", None):
        # pytest-html is active: its rows and summary get the Elizon details (workers too,
        # since the extras ride on the report).
        from .collect.pytest_html_glue import PytestHtmlExtras  # deferred: only with pytest-html

        config.pluginmanager.register(PytestHtmlExtras(_REPORTER), "elizon-pytest-html")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None
                            ) -> Generator[None, object, object]:
    running = elizon_session.of(item.config)
    if isinstance(item, collect.CaseItem):
        item.runs_now()
    scheduler = running.scheduler
    if scheduler is not None:
        stop = bool(item.session.shouldfail or item.session.shouldstop)  # -x, --maxfail
        if running.positions is None and not stop:
            running.positions = compat.positions(item.session)
        upcoming = [] if stop else compat.upcoming_items(item, nextitem, scheduler.ahead - 1,
                                                         running.positions or {})
        concurrency.prefetch(scheduler, [item, *upcoming], stop=stop)
    try:
        return (yield)
    finally:
        if scheduler is not None and (item.session.shouldfail or item.session.shouldstop):
            scheduler.stop()  # this item's failure ends the run (-x, --maxfail): start no more


def pytest_sessionfinish(session: pytest.Session) -> None:
    running = session.config.stash.get(elizon_session.SESSION, None)
    if running is None:
        return
    if running.scheduler is not None:
        running.scheduler.stop()  # cases started ahead of an item that never ran are abandoned
    running.binder.close()


def _debugging(config: pytest.Config) -> str | None:
    """Why this session's deadlines are suspended from its start: a debugging option, or a
    debugger already tracing (docs/contract.md#at-the-deadline)."""
    if config.getoption("usepdb", False):
        return "--pdb"
    if config.getoption("trace", False):
        return "--trace"
    return deadlines.debugger_in_use()


def pytest_report_header(config: pytest.Config) -> str | None:
    running = config.stash.get(elizon_session.SESSION, None)
    why = running.suspended if running is not None else None
    if why is None:
        return None
    return (f"elizon: deadlines suspended ({why}): Python entry points, judges and checks "
            "are waited for without limit, one case at a time")


def _selection(config: pytest.Config) -> str:
    """The options that selected this run's cases, for the terminal's "3 of 9 cases
    selected (-k)" (docs/contract.md#terminal); empty when none did."""
    option = config.option
    how = [flag for flag, chosen in (
        ("-k", getattr(option, "keyword", "")), ("-m", getattr(option, "markexpr", "")),
        ("--deselect", getattr(option, "deselect", None)), ("--lf", getattr(option, "lf", False)))
        if chosen]
    if any("::" in str(arg) for arg in config.args):
        how.append("node ids")
    return ", ".join(how)


def pytest_enter_pdb(config: pytest.Config) -> None:
    # a breakpoint() in an entry point: whoever waits for it waits for the person at it
    deadlines.suspend("a debugger was entered")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter,
                            config: pytest.Config) -> None:
    why = deadlines.suspended()
    running = config.stash.get(elizon_session.SESSION, None)
    if why is not None and running is not None and why != running.suspended:
        terminalreporter.write_line(f"elizon: deadlines were suspended during the run ({why}): "
                                    "calls from then on were waited for without limit")


def _restore_deadlines(suspended: str | None, cap: int) -> None:
    deadlines.restore(suspended)
    deadlines.hung.cap = cap


def pytest_unconfigure(config: pytest.Config) -> None:
    reporter = config.pluginmanager.get_plugin(_REPORTER)
    if reporter is not None:
        config.pluginmanager.unregister(reporter)
    history = config.pluginmanager.get_plugin(_HISTORY)
    if history is not None:
        history.close()  # what was written is kept, if the session's end never came
        config.pluginmanager.unregister(history)
    running = config.stash.get(elizon_session.SESSION, None)
    if running is not None:
        running.end()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    return collect.collect_file(file_path, parent)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if isinstance(item, collect.CaseItem):
        found = item.result_for(call.when, call.excinfo if report.failed else None)
        if found is not None:
            faithful = annotate(report, *found)
            if elizon_session.of(item.config).settings.history is not None:
                # for the history store
                setattr(report, outcomes.HISTORY_KEY_ATTR, item.history_key())
            reporter = item.config.pluginmanager.get_plugin(_REPORTER)
            if faithful is not None and isinstance(reporter, SessionReporter):
                reporter.hand(report, faithful)  # this process owns the session
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_report_teststatus(
    report: pytest.CollectReport | pytest.TestReport, config: pytest.Config
) -> tuple[str, str, str] | None:
    data = getattr(report, outcomes.REPORT_ATTR, None)
    if data is None or not isinstance(report, pytest.TestReport):
        return None
    status = teststatus(data, report.when)
    # The short summary, written after the reporter's summary started, keeps pytest's words.
    summarizing = getattr(config.pluginmanager.get_plugin(_REPORTER), "summarizing", False)
    if report.when == "call" and config.get_verbosity() > 0 and not summarizing:
        return with_usage(status, data, report)
    return status


_WORDS = {"passed": (".", "PASSED", {"green": True}), "failed": ("F", "FAILED", {"red": True})}


def with_usage(status: tuple[str, str, str] | None, data: Mapping[str, Any],
               report: pytest.TestReport) -> tuple[str, str, Any] | None:
    """The ``-v`` word with the case's tokens and cost after it (docs/contract.md#terminal)."""
    from .reporting.usage_text import usage_line  # deferred: only verbose runs need it

    shown = usage_line(data.get("usage"))
    if shown is None:
        return status
    if status is None:
        if report.outcome not in _WORDS:
            return None
        letter, word, markup = _WORDS[report.outcome]
        return report.outcome, letter, (f"{word} ({shown})", markup)
    return status[0], status[1], f"{status[2]} ({shown})"


# -- the case's result on pytest's reports -----------------------------------------------

def annotate(report: Any, result: outcomes.CaseResult, recording: Mapping[str, Any] | None = None
             ) -> outcomes.CaseResult | None:
    """Put ``result`` on a pytest test report as plain data; apply the advisory gate: an
    advisory case that did not pass never fails the run, and its message is kept as a
    section of the passing report (where tools show a passed test's details).

    Returns ``result`` when the data says exactly what it holds (nothing in it had to be
    escaped or written as text), so that a reader in this process may take the object
    rather than rebuild it from the data; else None."""
    faithful: outcomes.CaseResult | None = None
    try:
        data = result.to_data()
        # Data that was plain already shares the result's strings (a JSON round trip makes
        # new ones): then nothing was escaped or rewritten, and the result is what it says.
        if len(result.nodeid) > 1 and data.get("nodeid") is result.nodeid:
            faithful = result
        if recording is not None:  # the controller writes the one cassette
            data["recording"] = outcomes.encodable(recording)
    except Exception as exc:  # a value no serialiser foresaw: the case is still reported
        identity = outcomes.CaseIdentity(result.nodeid, result.case_id, result.line,
                                         result.suite)
        result = outcomes.escaped(identity, (result.timeout_s, result.timeout_source), exc)
        data = result.to_data()
        faithful = None
        report.outcome, report.longrepr = "failed", outcomes.failure_message(result)
    setattr(report, outcomes.REPORT_ATTR, data)
    if result.outcome in (outcomes.FAILED, outcomes.TIMEOUT, outcomes.INCONCLUSIVE) \
            and (result.suite.advisory or result.advisory is not None):
        report.outcome = "passed"
        report.sections.append(("elizon advisory " + result.outcome,
                                outcomes.failure_message(result)))
    return faithful


def teststatus(data: Mapping[str, Any], when: str) -> tuple[str, str, str] | None:
    """pytest's (category, letter, word) for a report carrying case data, if not the default.
    The word stays pytest's own (``FAILED``), so summary lines keep their shape."""
    if when != "call":
        return None
    outcome = data["outcome"]
    # an advisory suite's case, or a must-pass one only an unaligned judge failed
    advisory = data["suite"]["advisory"] or data.get("advisory") is not None
    if outcome == outcomes.TIMEOUT:
        return ("advisory_timeout", "t", "ADVISORY TIMEOUT") if advisory \
            else ("timeout", "T", "TIMEOUT")
    if outcome == outcomes.FAILED and advisory:
        return "advisory_failed", "a", "ADVISORY FAILED"
    if outcome == outcomes.INCONCLUSIVE:  # undecided at max: its own count, like timeout
        return ("advisory_inconclusive", "i", "ADVISORY INCONCLUSIVE") if advisory \
            else ("inconclusive", "I", "INCONCLUSIVE")
    return None


@pytest.fixture(scope="session")
def elizon_entry() -> object:
    """The entry point every case is given to; override it in conftest.py.

    Return a callable (sync or async), a ``'module.path:attribute'`` string, or a
    ``{"command": [...]}`` / ``{"url": ...}`` mapping (each may add ``"output": "json"``).
    The default, None, defers to the manifest's ``entry:`` and then the ini option
    ``elizon_entry``; ``--elizon-entry`` on the command line beats any fixture.
    """
    return None


@pytest.fixture(scope="session")
def elizon_judge() -> object:
    """The judge for ``judge:`` assertions; override it in conftest.py.

    Return a callable ``(rubric, input, output) -> score | (score, reasoning)`` (sync or
    async), a ``'module.path:attribute'`` string, or an endpoint mapping
    ``{"url": …, "model": …, "apiKeyEnv": …}``. The default, None, defers to the
    manifest's ``judge:`` and then the ini option; ``--elizon-judge`` beats any fixture.
    """
    return None


@pytest.fixture(scope="session")
def elizon_checks() -> object:
    """The checks a suite may name in ``expect.checks``; override it in conftest.py.

    Return a mapping of check name to function (sync or async), e.g.
    ``{"polite": polite}``. Only cases that name a check without ``:`` use it.
    """
    return {}


@pytest.fixture
def elizon_variant(request: pytest.FixtureRequest) -> Variant | None:
    """The package variant the requesting case runs under (its ``name``, ``params``,
    ``prompts``, ``reference``, ``advisory``), or None when its package has no variants
    (docs/format.md#variants). A function-scoped ``elizon_entry`` fixture may ask for it
    to choose the entry point per variant."""
    found = getattr(request.node, "variant", None)
    return found if isinstance(found, Variant) else None


class SessionReporter:
    """Collects every case result from the reports and writes the run's reports, once."""

    def __init__(self, config: pytest.Config, settings: options.Settings) -> None:
        self.config = config
        self.settings = settings
        self.aggregate = Aggregate(settings.confidence, settings.alpha)
        self.aggregate.framework = options.compliance_framework(config)
        self.regression: Regression | None = None
        self.written: list[tuple[str, Path]] = []
        #: Set when the terminal summary starts: the -v words then lose their usage.
        self.summarizing = False
        #: Why --elizon-fail-on-regression could not gate this run (it had nothing to compare).
        self.ungated: str | None = None
        self.unwritten: list[str] = []
        self.recordings: list[dict[str, Any]] = []
        #: By suite path, the cases of each suite file some of whose cases were deselected
        #: (-k, -m…): the terminal's summary says how many of them ran.
        self._deselected: dict[str, int] = {}
        self._handed: tuple[pytest.TestReport, outcomes.CaseResult] | None = None
        self.started = provenance.now()
        self.git: provenance.GitLookahead | None = None
        self.guard: Guard | None = None
        if settings.annotations:
            from .reporting.github import Guard  # deferred: only with --elizon-annotations

            self.guard = Guard.new()
        self.previous: dict[str, Any] | None = None
        if settings.baseline is not None:
            from .reporting.results import load as load_results  # deferred: only with a baseline

            try:
                self.previous = load_results(settings.baseline)
            except ValueError as exc:
                raise pytest.UsageError(f"--elizon-baseline={settings.baseline}: {exc}") from None

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if (self.settings.results is None and self.settings.history is None
                and self.settings.attestation is None) or session.config.option.collectonly:
            return  # no provenance is written
        folders = {item.parent.package.folder for item in session.items
                   if isinstance(item.parent, collect.SuiteFile)}
        if folders:  # git is asked while the cases run, not after them
            self.git = provenance.GitLookahead(folders)

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        for item in items:
            if isinstance(item, collect.CaseItem) and item.identity.suite.item_count:
                self._deselected[item.identity.suite.path] = item.identity.suite.item_count

    def _terminal(self) -> pytest.TerminalReporter | None:
        plugin = self.config.pluginmanager.get_plugin("terminalreporter")
        return plugin if isinstance(plugin, pytest.TerminalReporter) else None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.started = provenance.now()
        writer = self._terminal()
        if self.guard is not None and writer is not None:
            # Nothing printed from here on can run a workflow command.
            writer.ensure_newline()
            writer.write_line(self.guard.stop)

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport,
                               sched: object) -> None:
        """pytest-xdist: the worker running ``crashitem`` died; report the case at its own
        line as a crash, in every report."""
        running = elizon_session.of(self.config)
        index = running.index
        path = self.config.rootpath / crashitem.rpartition("::")[0]
        alone = standalone(path) if discovery.matches(path, running.settings.suite_globs) \
            else None
        identity = index.identity(crashitem, alone)
        said = [line for line in report.longreprtext.splitlines() if line.strip()]
        message = (f"the pytest-xdist worker running it died ({said[-1] if said else 'no word'}); "
                   "nothing the case did could be reported")
        result = outcomes.crashed(identity, message)
        report.longrepr = compat.failure_repr(outcomes.failure_message(result),
                                              self.config.rootpath / identity.suite.path,
                                              identity.line, outcomes.display_reason(result))
        report.location = (identity.suite.path, identity.line - 1, f"case {identity.case_id}")
        annotate(report, result)

    def hand(self, report: pytest.TestReport, result: outcomes.CaseResult) -> None:
        """``result``, which ``report`` (made in this process) carries as data: its
        log report takes the object instead of rebuilding it (one copy of each case)."""
        self._handed = (report, result)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, outcomes.REPORT_ATTR, None)
        handed, self._handed = self._handed, None
        if report.when == "teardown" and report.failed:  # a fixture's teardown raised
            self.aggregate.teardown_failed(report.nodeid, report.longrepr)
        if data is not None:
            if handed is not None and handed[0] is report:
                self.aggregate.add_result(handed[1])
            else:  # made by an xdist worker, or by another plugin: the data is the result
                self.aggregate.add(data)
            if "recording" in data:
                self.recordings.append(data["recording"])

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.aggregate.gate_variants = self.settings.fail_on_regression
        if self.aggregate.variant_note() and session.exitstatus == pytest.ExitCode.OK:
            # a variant significantly worse than its reference (the summary says which)
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.config.getoption("elizon_fail_on_regression") and len(self.aggregate) \
                and self.settings.baseline is None \
                and not self.aggregate.variant_comparisons():
            # the gate asked for had nothing to compare: never a silent pass
            self.ungated = ("--elizon-fail-on-regression had nothing to compare: it compares "
                            "this run with an earlier one (give --elizon-baseline=PATH, an "
                            "earlier --elizon-results file) and variants with their "
                            "reference (docs/format.md#variants); this run has neither")
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
        ran = {r.variant for s in self.aggregate.suites() for r in s.results}
        unknown = [n for n in self.settings.variants_selected if n not in ran]
        if unknown and len(self.aggregate) and not ran - {None}:
            # selected, in a run whose packages declare no variant at all: a typing slip
            # is never a silent full run (docs/format.md#variants)
            self.ungated = (f"--elizon-variant {unknown[0]}: no package of this run declares "
                            "variants; the option selects among the names of elizon.yaml's "
                            "variants: (NAME=module:function adds one)")
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
        if self.previous is not None and self.settings.baseline is not None:
            from .reporting.regression import compare  # deferred: only with a baseline

            self.regression = compare(self.previous, self.aggregate, str(self.settings.baseline),
                                      fail_on_regression=self.settings.fail_on_regression)
            if self.regression.fails_run and session.exitstatus == pytest.ExitCode.OK:
                # a clear non-zero status: tests failed (the message is in the summary)
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        history = self.config.pluginmanager.get_plugin(_HISTORY)
        if not len(self.aggregate) and self.regression is None:
            if history is not None:
                history.finish(session, self.aggregate, None)
            return
        made = self._provenance() if self.settings.results is not None \
            or self.settings.attestation is not None or history is not None else None
        if history is not None:
            history.finish(session, self.aggregate, made)
        from .reporting import files  # deferred: it imports each writer only when asked for

        # the models an attestation names besides those the answers named
        models = provenance.entry_models(
            self.aggregate, elizon_session.of(self.config).index,
            self.settings.cli["entry"].value, self.settings.ini["entry"].value) \
            if self.settings.attestation is not None else []
        self.written, self.unwritten = files.write_all(self.aggregate, self.regression,
                                                       self.settings, self.recordings, made,
                                                       redteam_nodes.canary(self.config),
                                                       history.history if history else None,
                                                       entry_models=models)
        if self.unwritten:
            session.exitstatus = pytest.ExitCode.USAGE_ERROR

    def _provenance(self) -> dict[str, Any]:
        """What the results file says about how it was made (docs/contract.md#provenance)."""
        return provenance.record(
            started=self.started, finished=provenance.now(), pytest_version=pytest.__version__,
            options=provenance.command_options(vars(self.config.option)),
            package_records=provenance.packages(self.aggregate,
                                                elizon_session.of(self.config).index,
                                                self.git))

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        self.summarizing = True
        if self.ungated:
            terminalreporter.write_line(f"ERROR: {self.ungated}", red=True, bold=True)
        lines: list[tuple[str, dict[str, bool]]] = []
        detail = options.report_detail(self.config)
        # nothing to say without results, a baseline or a framework (--collect-only: what
        # an IDE runs on every save does not import the report writers)
        if len(self.aggregate) or self.regression is not None \
                or self.aggregate.framework is not None:
            from .reporting import terminal  # deferred: needed at the end of the session only

            ran = {s.info.path for s in self.aggregate.suites()}
            run = terminal.RunFacts(
                how=_selection(self.config),
                unselected=sum(n for path, n in self._deselected.items() if path not in ran),
                replay=self.config.getoption("elizon_replay", None),
                baseline=self.config.getoption("elizon_baseline", None))
            lines = terminal.render(self.aggregate, self.regression, detail=detail, run=run)
        if lines and detail == "line":  # -q: the one line, as pytest's own last one
            text, markup = lines[0]
            terminalreporter.write_line(text, **markup)
        elif lines:
            terminalreporter.write_sep("=", "elizon eval")
            for text, markup in lines:
                terminalreporter.write_line(text, **markup)
        if terminalreporter.hasopt("P"):  # -rP / -rA: advisory failures, as passes show
            for report in self._advisory_reports(terminalreporter):
                terminalreporter.write_sep("_", report.nodeid, yellow=True)
                for title, text in report.sections:
                    if title.startswith("elizon advisory"):
                        terminalreporter.write_line(text)
        for kind, path in self.written:
            terminalreporter.write_sep("-", f"generated {kind}: {path}")
        history = self.config.pluginmanager.get_plugin(_HISTORY)
        for text, markup in history.summary_lines() if history is not None else ():
            terminalreporter.write_line(text, **markup)
        for problem in self.unwritten:
            terminalreporter.write_line(f"elizon: {problem}", red=True)
        if self.guard is not None:
            from .reporting import github  # loaded already: self.guard is one of its Guards

            terminalreporter.ensure_newline()
            terminalreporter.write_line(self.guard.resume)
            for line in github.annotation_lines(self.aggregate):
                terminalreporter.write_line(line)
            # Fenced again, for good: whatever is printed after this (an abandoned call that
            # keeps printing, pytest's own last lines) cannot run a workflow command.
            terminalreporter.write_line(github.Guard.new().stop)

    @staticmethod
    def _advisory_reports(terminalreporter: pytest.TerminalReporter) -> list[pytest.TestReport]:
        found: list[pytest.TestReport] = []
        for category in ("advisory_failed", "advisory_timeout", "advisory_inconclusive"):
            found.extend(r for r in terminalreporter.stats.get(category, [])
                         if isinstance(r, pytest.TestReport))
        return found
