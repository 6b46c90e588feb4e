"""pytest nodes for Elizon files: the manifest, the suite file and the case.

Which node collects a suite (docs/format.md#node-ids — one node id per case,
however the suite is reached, never twice):

* A suite file is collected where it lives, by pytest's own directory walk
  (``pytest pkg/``, ``pytest pkg/eval/``, ``pytest pkg/eval/suite.yaml::case``),
  with the package of the ``elizon.yaml`` above it that names it.
* ``elizon.yaml`` is validated wherever it is reached, and collects only the
  suites the walk will not reach itself (``pytest pkg/elizon.yaml``, or a
  suite outside the package folder or in an ignored folder).

Either way a case's node id is ``<suite file path>::<case id>``. A case's
setup builds its :class:`~.running.CasePlan` (kept in ``item.stash``); its
run returns what happened; :mod:`.outcomes` decides. Nothing else is here.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterator
from concurrent.futures import CancelledError
from pathlib import Path
from typing import Any

import pytest

from . import _pytest_compat as compat
from . import checks, datafiles, errors, outcomes, redteam
from .binding import ENTRY, JUDGE, Binder, Kind, Source
from .calls import ErrorInfo
from .cassette import CassetteMiss, recording
from .concurrency import CaseScheduler
from .discovery import PackageIndex
from .errors import ElizonError
from .model import Case
from .options import SETTINGS, Settings
from .outcomes import CaseIdentity, CaseResult, SuiteInfo
from .packages import MANIFEST_NAME, Package, SuiteSpec, standalone
from .running import CasePlan, CaseRun, run_case

__all__ = ["BINDER", "INDEX", "SCHEDULER", "CaseItem", "ManifestCollector", "SuiteFile",
           "collect_file", "is_standalone"]

#: The session's package index, binder and (with --elizon-concurrency > 1) case scheduler.
INDEX = pytest.StashKey[PackageIndex]()
BINDER = pytest.StashKey[Binder]()
SCHEDULER = pytest.StashKey[CaseScheduler]()
#: Values of session-wide entry/judge fixtures, by fixture identity, once set up.
_SESSION_VALUES = pytest.StashKey[dict[int, object]]()
#: A case's plan (from its setup) and its result (from its run).
_PLAN = pytest.StashKey[CasePlan]()
_RESULT = pytest.StashKey[CaseResult]()
#: The plan a case was started ahead of its turn with, and the fixture values it used.
_EARLY_PLAN = pytest.StashKey[tuple[dict[str, object], CasePlan]]()
_RECORDING = pytest.StashKey[dict[str, Any]]()
_DEFAULTS_MODULE = "pytest_elizon_eval.plugin"
#: The fixture listing secrets no answer may reveal, and a case's checks for them.
SECRETS_FIXTURE = "elizon_secrets"
_WATCH = pytest.StashKey[redteam.Watch]()
#: The fixture that names Python checks (``expect.checks``) for a directory.
CHECKS_FIXTURE = "elizon_checks"


def _matches(path: Path, globs: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatch(path.as_posix() if "/" in g else path.name, g) for g in globs)


def is_standalone(config: pytest.Config, path: Path) -> bool:
    """Whether ``path`` is collected as a stand-alone suite (ini ``elizon_suite_files``)."""
    return _matches(path, config.stash[SETTINGS].suite_globs)


def collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """``pytest_collect_file``: a manifest, a suite named by one, or a stand-alone suite."""
    config = parent.config
    index = config.stash[INDEX]
    if file_path.name == MANIFEST_NAME:
        return ManifestCollector.from_parent(
            parent, name=file_path.name, path=file_path, nodeid=index.display(file_path))
    if file_path.suffix not in (".yaml", ".yml") and not datafiles.is_data_file(file_path):
        return None
    owner = index.owner(file_path)
    if owner is not None:
        if owner[1].probe_source is not None:
            return None  # an operator's probe file: collected by its manifest
        return SuiteFile.from_parent(parent, path=file_path, package=owner[0], spec=owner[1])
    if is_standalone(config, file_path):
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
        index = self.config.stash[INDEX]
        package = index.package(self.path)
        missing = [s for s in package.suites if not s.path.is_file()]
        if missing:
            manifest = index.display(self.path)
            raise ElizonError(errors.EVALUATION_SUITE_MISSING, [
                f"{index.display(s.path)} (named in {manifest}:{s.declared_at})"
                for s in missing])
        for spec in package.suites:
            if spec.probe_source is not None:  # the walk never collects probes: the manifest does
                from .redteam_nodes import ProbeSuite  # defined there, on top of SuiteFile

                yield ProbeSuite.of(self, package, spec)
            elif not self._walk_reaches(spec.path):
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
        self.add_marker(pytest.mark.usefixtures(ENTRY.fixture, SECRETS_FIXTURE))
        #: Fixture closures, the same for every case of the file: by "needs the judge"
        #: and "names a check from the elizon_checks fixture".
        self.fixture_infos: dict[tuple[bool, bool], Any] = {}
        #: The suite's ``module:function`` checks, imported at collection.
        self.check_functions: dict[str, checks.CheckFunction] = {}
        self.check_refs: tuple[checks.CheckRef, ...] = ()

    def collect(self) -> Iterator[CaseItem]:
        loaded, info = self.config.stash[INDEX].suite(self.path, self.package, self.spec)
        self.check_refs = loaded.check_refs
        # a check that cannot be imported is a collection error, unless its import exits:
        # then the cases that name it are errors at their setup (docs/contract.md#checks)
        if loaded.check_refs:
            self.check_functions = checks.resolve_specs(
                loaded.check_refs, [self.package.folder, self.path.parent, self.config.rootpath],
                info.path)
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


class CaseItem(compat.FixtureItem):
    """One case of a suite: plans its run in setup, runs it, and lets outcomes decide."""

    parent: SuiteFile

    def __init__(self, *, case: Case, line: int, suite_info: SuiteInfo, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.line = line
        self.identity = CaseIdentity(self.nodeid, case.id, line, suite_info)
        for tag in case.tags or ():
            self.add_marker(tag)
        self.judged = case.judged
        if self.judged:
            self.add_marker(pytest.mark.usefixtures(JUDGE.fixture))
        self.checks_fixture = checks.uses_fixture(case)
        if self.checks_fixture:
            self.add_marker(pytest.mark.usefixtures(CHECKS_FIXTURE))
        infos, key = self.parent.fixture_infos, (self.judged, self.checks_fixture)
        infos[key] = self.init_fixtures(infos.get(key))  # once per file

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.line - 1, f"case {self.name}"

    @property
    def _kinds(self) -> tuple[Kind, ...]:
        return (ENTRY, JUDGE) if self.judged else (ENTRY,)

    # -- setup: the plan --------------------------------------------------------------------

    def setup(self) -> None:
        self.fill_fixtures()
        values = self.fixture_values
        if SCHEDULER in self.config.stash:  # for the cases that may start ahead of their turn
            known = self.config.stash.setdefault(_SESSION_VALUES, {})
            for kind in self._kinds:
                wide = compat.session_wide_fixture(self, kind.fixture, _DEFAULTS_MODULE)
                if wide is not None:
                    known[wide[0]] = values[kind.fixture]
        early = self.stash.get(_EARLY_PLAN, None)
        if early is not None and all(early[0][k.fixture] is values[k.fixture]
                                     for k in self._kinds):
            self.stash[_PLAN] = early[1]  # started ahead with these very fixture values
        else:
            self.stash[_PLAN] = self._plan(values)
        self.stash[_WATCH] = self.watch()

    def watch(self) -> redteam.Watch:
        """What the case is checked for after it ran: the package's secrets and the
        ``elizon_secrets`` fixture's (docs/contract.md#security)."""
        value = self.fixture_values.get(SECRETS_FIXTURE)
        found = () if value is None else redteam.check_secrets(
            value, f"the {SECRETS_FIXTURE} fixture "
                   f"({compat.fixture_location(self, SECRETS_FIXTURE)})")
        return redteam.Watch(secrets=tuple(dict.fromkeys(self.parent.package.secrets + found)))

    def _sources(self, kind: Kind, settings: Settings, fixture_value: object) -> list[Source]:
        package = self.parent.package
        fixture_where = f"the {kind.fixture} fixture"
        if fixture_value is not None:
            fixture_where += f" ({compat.fixture_location(self, kind.fixture)})"
        manifest_value, manifest_line = ((package.entry, package.entry_line) if kind is ENTRY
                                         else (package.judge, package.judge_line))
        if package.manifest is None:
            manifest_where = f"{kind.key}: in a manifest (this suite has none)"
        else:
            where = self.config.stash[INDEX].display(package.manifest)
            manifest_where = (f"{kind.key}: in {where}:{manifest_line}" if manifest_line
                              else f"{kind.key}: in {where} (not set)")
        return [settings.cli[kind.key], Source(fixture_value, fixture_where),
                Source(manifest_value, manifest_where), settings.ini[kind.key]]

    def _plan(self, values: dict[str, object]) -> CasePlan:
        """The case's plan from the fixture values; ElizonError when it cannot be made."""
        settings = self.config.stash[SETTINGS]
        binder = self.config.stash[BINDER]
        package, spec = self.parent.package, self.parent.spec
        timeout_s, timeout_source = settings.timeout_s, settings.timeout_source
        runs = self.case.repeat or spec.repeat or 1
        rate = next((r for r in (self.case.min_pass_rate, spec.min_pass_rate) if r is not None),
                    1.0)
        entry = replay = None
        if settings.replay is not None:  # answered from the cassette: no entry point is called
            try:
                replay, recorded_limit = settings.replay.answers(
                    self.identity.suite.key, self.name, self._recorded_input, runs)
            except CassetteMiss as exc:
                raise ElizonError(exc.code, [str(exc)]) from None
            if recorded_limit is not None:
                timeout_s, timeout_source = recorded_limit, "the limit it was recorded under"
        else:
            entry = binder.entry(self._sources(ENTRY, settings, values[ENTRY.fixture]),
                                 package.folder,
                                 package.output)
        judge = binder.judge(self._sources(JUDGE, settings, values[JUDGE.fixture]),
                             package.folder) if self.judged else None
        functions = self.parent.check_functions
        checks.refuse_unimportable(self.case, self.parent.check_refs, functions,
                                   self.identity.suite.path)
        if self.checks_fixture:
            functions = {**functions, **checks.fixture_checks(
                self.case, self.parent.check_refs, values.get(CHECKS_FIXTURE),
                f"the {CHECKS_FIXTURE} fixture ({compat.fixture_location(self, CHECKS_FIXTURE)})",
                self.identity.suite.path)}
        return CasePlan(
            case=self.case, entry=entry, judge=judge,
            entry_description=entry.description if entry else "cassette",
            timeout_s=timeout_s, timeout_source=timeout_source, route_key=settings.route_key,
            repeat=runs, min_pass_rate=rate, replay=replay,
            prices={**settings.prices, **package.prices}, checks=functions)

    @property
    def _recorded_input(self) -> object:
        """What a cassette checks has not changed: the input, or every turn's input."""
        return {"turns": self.case.inputs} if self.case.conversation else self.case.input

    def background_work(self) -> Callable[[], CaseRun] | None:
        """This case's run, to start before its turn — or None when it must wait for its own
        setup: its entry (or judge) fixture is not session-wide or has not been set up yet,
        or planning fails (its setup then reports why)."""
        if self.config.stash[SETTINGS].replay is not None or self.checks_fixture:
            return None  # a replay answers at once; fixture checks come with its setup
        known = self.config.stash.get(_SESSION_VALUES, {})
        values: dict[str, object] = {}
        for kind in self._kinds:
            wide = compat.session_wide_fixture(self, kind.fixture, _DEFAULTS_MODULE)
            if wide is None or not (wide[1] or wide[0] in known):
                return None
            values[kind.fixture] = None if wide[1] else known[wide[0]]
        try:
            plan = self._plan(values)
        except ElizonError:
            return None
        self.stash[_EARLY_PLAN] = (values, plan)
        return lambda: run_case(plan)

    # -- the run ----------------------------------------------------------------------------

    def runtest(self) -> None:
        try:
            result = self._run()
        except Exception as exc:  # whatever escapes, the case still reaches every report
            result = outcomes.escaped(self.identity, self._limits(), exc)
            self.stash[_RESULT] = result
        self.user_properties.append(("elizon_outcome", result.outcome))
        if result.outcome != outcomes.PASSED:
            raise CaseNotPassed(result)

    def _limits(self) -> tuple[float, str]:
        plan = self.stash.get(_PLAN, None)
        if plan is not None:
            return plan.timeout_s, plan.timeout_source
        settings = self.config.stash[SETTINGS]
        return settings.timeout_s, settings.timeout_source

    def _run(self) -> CaseResult:
        plan = self.stash[_PLAN]
        scheduler = self.config.stash.get(SCHEDULER, None)
        future = scheduler.take(self.nodeid) if scheduler is not None else None
        try:
            run = future.result() if future is not None else None  # waits; Ctrl-C still stops
        except CancelledError:
            run = None
        if not isinstance(run, CaseRun):
            run = run_case(plan)
        watch = self.stash[_WATCH]
        leaks, security = redteam.leak_checks(run, watch)
        result = redteam.redact(outcomes.decide(self.identity, plan, run, also=leaks,
                                                security=security), watch.values)
        self.stash[_RESULT] = result
        if self.config.stash[SETTINGS].record is not None:
            self.stash[_RECORDING] = recording(
                self.identity.suite.key, self.name, self._recorded_input,
                [list(a.entry_calls) for a in run.attempts], plan.timeout_s,
                conversation=self.case.conversation)
        return result

    def result_for(self, when: str, excinfo: pytest.ExceptionInfo[BaseException] | None
                   ) -> tuple[CaseResult, dict[str, Any] | None] | None:
        """The result a report of phase ``when`` carries (with the cassette recording)."""
        if when == "call":
            result = self.stash.get(_RESULT, None)
            if result is None and excinfo is not None:  # raised before a result was made
                result = outcomes.escaped(self.identity, self._limits(), excinfo.value)
            return (result, self.stash.get(_RECORDING, None)) if result else None
        if when == "setup" and excinfo is not None:
            exc = excinfo.value
            error = (ErrorInfo(exc.code, "\n".join(exc.messages))
                     if isinstance(exc, ElizonError)
                     else ErrorInfo(type(exc).__name__, outcomes.described(exc)))
            settings = self.config.stash[SETTINGS]
            return outcomes.setup_error(self.identity, (settings.timeout_s,
                                                        settings.timeout_source), error), None
        return None

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | Any:
        if isinstance(excinfo.value, CaseNotPassed):
            result = excinfo.value.result
            return compat.failure_repr(outcomes.failure_message(result), self.path, self.line,
                                       outcomes.display_reason(result))
        return self.short_failure(excinfo) or super().repr_failure(excinfo, style=style)

    def short_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:
        if isinstance(excinfo.value, ElizonError):  # the code and message, no traceback
            error = excinfo.value
            return compat.failure_repr(str(error), self.path, self.line, error.lines[0])
        return None
