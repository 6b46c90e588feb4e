"""pytest nodes for Elizon files: the manifest, the suite file and the case.

Which node collects a suite (SPEC §1.3 — one node id per case, however the
suite is reached, never twice):

* A suite file is collected where it lives, by pytest's own directory walk
  (``pytest pkg/``, ``pytest pkg/eval/``, ``pytest pkg/eval/suite.yaml::case``),
  with the package of the ``elizon.yaml`` above it that names it.
* ``elizon.yaml`` is validated wherever it is reached, and collects only the
  suites the walk will not reach itself (``pytest pkg/elizon.yaml``, or a
  suite outside the package folder or in an ignored folder).

Either way a case's node id is ``<suite file path>::<case id>``.
"""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Callable, Iterator
from concurrent.futures import CancelledError
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from . import _pytest_compat as compat
from . import errors
from .binding import ENTRY, JUDGE, BindContext, Bound, Candidate, Kind, bind
from .calling import EntryCall, ErrorInfo
from .cassette import CassetteMiss, call_to_data, input_sha256
from .concurrency import CaseScheduler
from .entries import DeadlineEntry
from .errors import ElizonError
from .model import Case
from .options import SETTINGS
from .outcomes import ERROR, FAILED, PASSED, REPORT_ATTR, TIMEOUT, CaseResult, SuiteInfo
from .outcomes import failure_message as render_failure
from .packages import MANIFEST_NAME, Package, SuiteSpec, load_manifest, load_suite, standalone
from .running import CaseRun, run_case

__all__ = ["SCHEDULER", "CaseItem", "ManifestCollector", "SuiteFile", "annotate_report",
           "collect_file", "prefetch"]

ENTRY_FIXTURE = ENTRY.fixture
JUDGE_FIXTURE = JUDGE.fixture
#: The case scheduler of a session with --elizon-concurrency > 1.
SCHEDULER = pytest.StashKey[CaseScheduler]()
#: Values of session-wide entry/judge fixtures, by fixture identity, once set up.
_SESSION_VALUES = pytest.StashKey[dict[int, object]]()
_BINDINGS = pytest.StashKey[dict[tuple[object, ...], Bound]]()
_PACKAGES = pytest.StashKey[dict[Path, "Package | ElizonError"]]()


def display_path(config: pytest.Config, path: Path) -> str:
    """``path`` as node ids and messages show it: relative to the rootdir, with ``/``."""
    try:
        return path.relative_to(config.rootpath).as_posix()
    except ValueError:
        return path.as_posix()


def _package(config: pytest.Config, manifest: Path) -> Package:
    """The package of ``manifest``, read once per session (errors are remembered too)."""
    cache = config.stash.setdefault(_PACKAGES, {})
    if manifest not in cache:
        try:
            cache[manifest] = load_manifest(manifest, display_path(config, manifest))
        except ElizonError as exc:
            cache[manifest] = exc
    found = cache[manifest]
    if isinstance(found, ElizonError):
        raise found
    return found


def _owner(config: pytest.Config, suite: Path) -> tuple[Package, SuiteSpec] | None:
    """The package whose ``elizon.yaml`` (in a folder above ``suite``) names it."""
    resolved = suite.resolve()
    for folder in resolved.parents:
        manifest = folder / MANIFEST_NAME
        if manifest.is_file():
            try:
                package = _package(config, manifest)
            except ElizonError:
                continue  # reported by the manifest's own collector
            for spec in package.suites:
                if spec.path == resolved:
                    return package, spec
        if folder == config.rootpath:
            break
    return None


def _matches(path: Path, globs: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatch(path.as_posix() if "/" in g else path.name, g) for g in globs)


def collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """``pytest_collect_file``: a manifest, a suite named by one, or a stand-alone suite."""
    config = parent.config
    if file_path.name == MANIFEST_NAME:
        return ManifestCollector.from_parent(
            parent, name=file_path.name, path=file_path, nodeid=display_path(config, file_path))
    if file_path.suffix not in (".yaml", ".yml"):
        return None
    owner = _owner(config, file_path)
    if owner is not None:
        return SuiteFile.from_parent(parent, path=file_path, package=owner[0], spec=owner[1])
    if _matches(file_path, config.stash[SETTINGS].suite_globs):
        package = standalone(file_path)
        return SuiteFile.from_parent(parent, path=file_path, package=package,
                                     spec=package.suites[0])
    return None


class _ShowsElizonErrors(pytest.Collector):
    """A collector whose ElizonErrors show as their ``CODE: file:line: …`` lines alone."""

    def repr_failure(  # type: ignore[override]
        self, excinfo: pytest.ExceptionInfo[BaseException]
    ) -> str | Any:
        if isinstance(excinfo.value, ElizonError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


class ManifestCollector(_ShowsElizonErrors):
    """``elizon.yaml``: validates the manifest and that its suites exist.

    Not a ``pytest.File`` on purpose: ``--lf`` skips files without failures,
    and the failures of a package live in its suite files, not here.
    """

    def collect(self) -> Iterator[pytest.Collector]:
        package = _package(self.config, self.path)
        missing = [s for s in package.suites if not s.path.is_file()]
        if missing:
            manifest = display_path(self.config, self.path)
            raise ElizonError(errors.EVALUATION_SUITE_MISSING, [
                f"{display_path(self.config, s.path)} (named in {manifest}:{s.declared_at})"
                for s in missing])
        for spec in package.suites:
            if not self._walk_reaches(spec.path):
                yield SuiteFile.from_parent(self, path=spec.path, package=package, spec=spec)

    def _walk_reaches(self, path: Path) -> bool:
        """Whether pytest's directory walk of this session will reach ``path`` itself."""
        chain = [path, *path.parents]
        for depth, candidate in enumerate(chain):
            if self.session.isinitpath(candidate):
                return not any(
                    self.ihook.pytest_ignore_collect(collection_path=p, config=self.config)
                    for p in chain[:depth])
        return False


class SuiteFile(_ShowsElizonErrors, pytest.File):
    """A suite file: validated as a whole, then one :class:`CaseItem` per case."""

    def __init__(self, *, package: Package, spec: SuiteSpec, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.package = package
        self.spec = spec
        # Every case requests the entry fixture (the plugin's default returns None); cases
        # with a judge assertion add the judge fixture themselves.
        self.add_marker(pytest.mark.usefixtures(ENTRY_FIXTURE))
        #: Fixture closures, the same for every case of the file: by "needs the judge".
        self.fixture_infos: dict[bool, compat.FuncFixtureInfo] = {}

    def collect(self) -> Iterator[CaseItem]:
        display = display_path(self.config, self.path)
        loaded = load_suite(self.path, display)
        gate = self.spec.gate
        info = SuiteInfo(
            path=display, package=self.package.name, gate=gate,
            advisory=gate == "advisory" and not self.config.stash[SETTINGS].strict,
            baseline=self.spec.baseline, sha256=loaded.sha256)
        registered = set(self.config.getini("markers"))
        for tag in sorted({t for case in loaded.cases for t in case.tags or ()}):
            marker = f"{tag}: Elizon case tag"
            if marker not in registered:  # registered, so --strict-markers accepts tags
                self.config.addinivalue_line("markers", marker)
        for case, line in zip(loaded.cases, loaded.lines, strict=True):
            yield CaseItem.from_parent(self, name=case.id, case=case, line=line, suite_info=info)


class CaseNotPassed(Exception):
    """Raised by :meth:`CaseItem.runtest` so pytest records a failure or a timeout."""

    def __init__(self, result: CaseResult) -> None:
        super().__init__(result.outcome)
        self.result = result


class CaseItem(pytest.Item):
    """One case of a suite: binds the entry point in setup, runs and grades it."""

    parent: SuiteFile

    def __init__(self, *, case: Case, line: int, suite_info: SuiteInfo, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.line = line
        self.suite_info = suite_info
        self.entry: Bound | None = None
        self.judge: Bound | None = None
        self.result: CaseResult | None = None
        self.replay: list[EntryCall] | None = None
        #: The entry point's calls as the cassette keeps them (with --elizon-record).
        self.recording: dict[str, Any] | None = None
        for tag in case.tags or ():
            self.add_marker(tag)
        judged = JUDGE_FIXTURE in self._fixtures_needed()
        if judged:
            self.add_marker(pytest.mark.usefixtures(JUDGE_FIXTURE))
        infos = self.parent.fixture_infos
        if judged not in infos:  # computed once per file and kind of case
            infos[judged] = compat.fixture_info(self)
        self._fixture_closure = infos[judged]
        self._initrequest()

    def _initrequest(self) -> None:  # called again by pytest when an item is re-run
        compat.init_request(self, self._fixture_closure)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.line - 1, f"case {self.name}"

    def base_result(self, entry: Bound | None = None) -> CaseResult:
        """This case's identity and limits, before it has run."""
        settings = self.config.stash[SETTINGS]
        return CaseResult(
            nodeid=self.nodeid, case_id=self.name, line=self.line, suite=self.suite_info,
            outcome=PASSED, timeout_s=settings.timeout_s,
            timeout_source=settings.timeout_source,
            entry=entry.description if entry else
            ("cassette" if settings.replay is not None else ""))

    @property
    def repeat(self) -> tuple[int, float]:
        """(runs, minPassRate): the case's own, else its suite's defaults, else (1, 1.0)."""
        spec = self.parent.spec
        runs = self.case.repeat or spec.repeat or 1
        rate = self.case.min_pass_rate if self.case.min_pass_rate is not None \
            else spec.min_pass_rate if spec.min_pass_rate is not None else 1.0
        return runs, rate

    def _fixtures_needed(self) -> list[str]:
        judged = self.case.expect is not None and self.case.expect.judge is not None
        return [ENTRY_FIXTURE, JUDGE_FIXTURE] if judged else [ENTRY_FIXTURE]

    def setup(self) -> None:
        self.result = None
        self.replay = None
        self.recording = None
        compat.fill_fixtures(self)
        settings = self.config.stash[SETTINGS]
        if SCHEDULER in self.config.stash:  # for the cases that may start ahead of their turn
            known = self.config.stash.setdefault(_SESSION_VALUES, {})
            for name in self._fixtures_needed():
                wide = compat.session_wide_fixture(self, name)
                if wide is not None:
                    known[wide[0]] = self.funcargs[name]  # type: ignore[attr-defined]
        if settings.replay is not None:  # answered from the cassette: no entry point is called
            try:
                self.replay = settings.replay.answers(self.suite_info.path, self.name,
                                                      self.case.input, self.repeat[0])
            except CassetteMiss as exc:
                raise ElizonError(exc.code, [str(exc)]) from None
        self.entry, self.judge = self._bindings(
            self.funcargs, entry=settings.replay is None)  # type: ignore[attr-defined]

    def _bindings(self, fixture_values: dict[str, object], *, entry: bool = True
                  ) -> tuple[Bound | None, Bound | None]:
        """The entry point and, if the case has a judge assertion, the judge."""
        settings = self.config.stash[SETTINGS]
        package = self.parent.package
        bound_entry = self._bind(ENTRY, fixture_values[ENTRY_FIXTURE], settings.cli_entry,
                                 package.entry, package.entry_line, settings.ini_entry,
                                 settings.ini_entry_source) if entry else None
        bound_judge = None
        if JUDGE_FIXTURE in self._fixtures_needed():
            bound_judge = self._bind(JUDGE, fixture_values[JUDGE_FIXTURE], settings.cli_judge,
                                     package.judge, package.judge_line, settings.ini_judge,
                                     settings.ini_judge_source)
        return bound_entry, bound_judge

    def _bind(self, kind: Kind, fixture_value: object, cli: str | None, manifest: object,
              manifest_line: int | None, ini: str | None, ini_source: str) -> Bound:
        """Bind by precedence: command line > fixture > manifest > ini.

        Bindings made only of text (no callable from a fixture) are the same for every case
        of a package, so each is made once per session."""
        package = self.parent.package
        cache = self.config.stash.setdefault(_BINDINGS, {})
        key: tuple[object, ...] | None = None
        if fixture_value is None or isinstance(fixture_value, str):
            key = (kind.noun, cli, fixture_value, repr(manifest), ini, package.folder)
            if key in cache:
                return cache[key]
        fixture_source = f"the {kind.fixture} fixture"
        if fixture_value is not None and cli is None:
            fixture_source += f" ({compat.fixture_location(self, kind.fixture)})"
        manifest_file = display_path(self.config, package.manifest) if package.manifest else None
        manifest_source = (f"{kind.key}: in {manifest_file}:{manifest_line}" if manifest_file
                           else f"{kind.key}: in elizon.yaml")
        bound = bind([
            Candidate(cli, kind.option),
            Candidate(fixture_value, fixture_source),
            Candidate(manifest, manifest_source),
            Candidate(ini, ini_source),
        ], BindContext(package.folder, self.config.rootpath, package.output_json), kind=kind)
        if key is not None:
            cache[key] = bound
        return bound

    def background_work(self) -> Callable[[], CaseRun] | None:
        """This case's run, to start before its turn — or None when it must wait for its own
        setup: its entry (or judge) fixture is not session-wide or has not been set up yet,
        or binding fails (its setup then reports why)."""
        if self.config.stash[SETTINGS].replay is not None:
            return None  # a replay answers at once
        known = self.config.stash.get(_SESSION_VALUES, {})
        values: dict[str, object] = {}
        for name in self._fixtures_needed():
            wide = compat.session_wide_fixture(self, name)
            if wide is None or not (wide[1] or wide[0] in known):
                return None
            values[name] = None if wide[1] else known[wide[0]]
        try:
            entry, judge = self._bindings(values)
        except ElizonError:
            return None
        return functools.partial(self._run, entry, judge, None)

    def _run(self, entry: Bound | None, judge: Bound | None,
             replay: list[EntryCall] | None) -> CaseRun:
        settings = self.config.stash[SETTINGS]
        runs, rate = self.repeat
        judge_call = judge.call if judge else None
        assert not isinstance(judge_call, DeadlineEntry)  # a judge is always a callable
        return run_case(
            self.case, entry.call if entry else None, self.base_result(entry),
            judge=judge_call,
            judge_name=f"judge {judge.description}" if judge else "the judge",
            route_key=settings.route_key, repeat=runs, min_pass_rate=rate, replay=replay)

    def runtest(self) -> None:
        scheduler = self.config.stash.get(SCHEDULER, None)
        future = scheduler.take(self.nodeid) if scheduler is not None else None
        try:
            run = future.result() if future is not None else None  # waits; Ctrl-C still stops
        except CancelledError:
            run = None
        if not isinstance(run, CaseRun):
            run = self._run(self.entry, self.judge, self.replay)
        result = run.result
        self.result = result
        if self.config.stash[SETTINGS].record is not None:
            self.recording = {"suite": self.suite_info.path, "case": self.name,
                              "input_sha256": input_sha256(self.case.input),
                              "runs": [call_to_data(c) for c in run.calls]}
        self.user_properties.append(("elizon_outcome", result.outcome))
        if result.outcome != PASSED:
            raise CaseNotPassed(result)

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | Any:
        if isinstance(excinfo.value, CaseNotPassed):
            return render_failure(excinfo.value.result)
        if isinstance(excinfo.value, ElizonError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)


def annotate_report(report: pytest.TestReport, item: pytest.Item, call: pytest.CallInfo[None]
                    ) -> None:
    """Put the case's result on its report as plain data; apply the advisory gate."""
    if not isinstance(item, CaseItem):
        return
    if call.when == "call" and item.result is not None:
        result = item.result
    elif call.when == "setup" and report.failed and call.excinfo is not None:
        exc = call.excinfo.value
        if isinstance(exc, ElizonError):
            report.longrepr = str(exc)  # the code and message, not a traceback into the plugin
        result = replace(item.base_result(item.entry), outcome=ERROR,
                         error=ErrorInfo(type(exc).__name__, str(exc)))
    else:
        return
    data = result.to_data()
    if item.recording is not None and call.when == "call":
        data["recording"] = item.recording  # the controller writes the one cassette
    setattr(report, REPORT_ATTR, data)
    if result.outcome in (FAILED, TIMEOUT) and result.suite.advisory:
        report.outcome = "passed"  # shown as advisory everywhere; never fails the run


def prefetch(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """With --elizon-concurrency=N: make sure this item and the next N-1 are under way."""
    scheduler = item.config.stash.get(SCHEDULER, None)
    if scheduler is None:
        return
    if item.session.shouldfail or item.session.shouldstop:
        scheduler.stop()  # -x / --maxfail: nothing new starts
        return
    for upcoming in [item, *compat.upcoming_items(item, nextitem, scheduler.slots - 1)]:
        if isinstance(upcoming, CaseItem) and not scheduler.started(upcoming.nodeid):
            work = upcoming.background_work()
            if work is not None:
                scheduler.start(upcoming.nodeid, work)
