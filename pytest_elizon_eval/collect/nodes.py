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
setup builds its :class:`~.running.CasePlan` (:func:`~.planning.plan_case`, kept
in ``item.plan``); its run returns what happened; :mod:`.outcomes` decides, with the
checks other plugins add through the hooks of :mod:`.hookspecs`. Session state is the
:class:`~.session.ElizonSession`'s. Nothing else is here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..decide import outcomes
from ..errors import EVALUATION_SUITE_INVALID, ElizonError
from ..run import planning
from ..run.running import CaseRun, run_ahead, run_case, run_without_first_call
from . import _pytest_compat as compat
from . import session

if TYPE_CHECKING:
    from ..decide.outcomes import CaseResult, SuiteInfo
    from ..decide.results_data import PromptRecord
    from ..load.packages import Package, SuiteSpec, Variant
    from ..load.runtime import Case
    from ..run.running import CasePlan
    from ..run.slots import SlotCall

__all__ = ["CaseItem", "ManifestCollector", "SuiteFile", "collect_file"]

_DEFAULTS_MODULE = "pytest_elizon_eval.plugin"
_ENTRY_FIXTURE, _JUDGE_FIXTURE = planning.ENTRY_FIXTURE, planning.JUDGE_FIXTURE


def collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """``pytest_collect_file``: a manifest, a suite named by one, or a stand-alone suite."""
    running = session.of(parent.config)
    index = running.index
    if index.is_manifest(file_path):
        return ManifestCollector.from_parent(
            parent, name=file_path.name, path=file_path, nodeid=index.display(file_path))
    found = index.collected_suite(file_path, running.settings.suite_globs)
    if found is not None:
        return SuiteFile.from_parent(parent, path=file_path, package=found[0], spec=found[1])
    if parent.session.isinitpath(file_path) and file_path.suffix in (".yaml", ".yml"):
        manifest = index.manifest_above(file_path)
        if manifest is not None and index.owner(file_path) is None:
            # named on the command line, in a package that does not name it: said so, where
            # pytest would only say "not found" (docs/format.md#several-suites)
            return UnnamedSuite.from_parent(parent, path=file_path, manifest=manifest)
    return None


class _ShowsElizonErrors(pytest.Collector):
    """A collector whose ElizonErrors show as their ``CODE: file:line: …`` lines alone."""

    def repr_failure(  # type: ignore[override]
        self, excinfo: pytest.ExceptionInfo[BaseException]
    ) -> str | Any:
        if isinstance(excinfo.value, ElizonError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


class UnnamedSuite(_ShowsElizonErrors, pytest.File):
    """A YAML file given on the command line inside a package whose ``elizon.yaml`` does
    not name it: collecting it is an error that says how to name it."""

    def __init__(self, *, manifest: Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.manifest = manifest

    def collect(self) -> Iterator[pytest.Item]:
        index = session.of(self.config).index
        suite = self.path.resolve().relative_to(self.manifest.parent.resolve()).as_posix()
        raise ElizonError(EVALUATION_SUITE_INVALID, [
            f"{index.display(self.path)}: not a suite of its package: "
            f"{index.display(self.manifest)} does not name it; add '- suite: ./{suite}' to "
            "the evaluation block's suites there (docs/format.md, several suites), or run "
            f"the whole package: pytest {index.display(self.manifest.parent)}"])


class ManifestCollector(_ShowsElizonErrors):
    """``elizon.yaml``: validates the manifest and that its suites exist.

    Not a ``pytest.File`` on purpose: ``--lf`` skips files without failures,
    and the failures of a package live in its suite files, not here.
    """

    def collect(self) -> Iterator[pytest.Collector]:
        package = session.of(self.config).index.checked(self.path)
        for spec in package.suites:
            # the walk never collects probes: the manifest offers them to the hook
            if spec.probe_source is None and self._walk_reaches(spec.path):
                continue
            node = self.ihook.pytest_elizon_collect_test_set(
                collector=self, package=package, spec=spec)
            if node is None and spec.probe_source is None:
                node = SuiteFile.from_parent(self, path=spec.path, package=package, spec=spec)
            if node is not None:
                yield node

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
        # Every case requests the entry fixture (the plugin's default returns None) and what
        # plugins ask for; cases with a judge assertion add the judge fixture themselves.
        extra = [name for names in self.ihook.pytest_elizon_case_fixtures(suite=self)
                 for name in names or ()]
        self.add_marker(pytest.mark.usefixtures(_ENTRY_FIXTURE, *extra))
        #: Fixture closures, the same for every case of the file: by "needs the judge"
        #: and "names a check from the elizon_checks fixture".
        self.fixture_infos: dict[tuple[bool, bool], Any] = {}
        #: What its cases' plans share (their checks are imported at collection).
        self.context = planning.SuiteContext(package, spec, "", "")
        self._run_hooks: Any = None

    def run_hooks(self) -> Any:
        """The hook proxy of its path, found once its cases run (the conftest files that
        apply to it are known then): each case's hooks are called through it a dozen
        times, and finding it anew each time is a set difference of every conftest."""
        if self._run_hooks is None:
            self._run_hooks = self.session.gethookproxy(self.path)
        return self._run_hooks

    def collect(self) -> Iterator[CaseItem]:
        index = session.of(self.config).index
        loaded, info = index.suite(self.path, self.package, self.spec)
        planning.check_labels(self.package, loaded)
        self.prepare(info, loaded.check_refs)
        registered = set(self.config.getini("markers"))
        for tag in sorted({t for case in loaded.cases for t in case.tags or ()}):
            marker = f"{tag}: Elizon case tag"
            if marker not in registered:  # registered, so --strict-markers accepts tags
                self.config.addinivalue_line("markers", marker)
        settings = session.of(self.config).settings
        variants = planning.variants_of(self.package, settings, index.display)
        if variants:  # its cases run once per variant; the reference named first
            ordered = sorted(variants, key=lambda v: not v.reference)
            info = dataclasses.replace(
                info, variants=tuple(v.name for v in ordered),
                advisory_variants=tuple(v.name for v in ordered if v.advisory))
        for case, line, text in zip(loaded.cases, loaded.lines, loaded.case_texts,
                                    strict=True):
            if not variants:
                yield CaseItem.from_parent(self, name=case.id, case=case, line=line,
                                           suite_info=info, case_text=text)
            # once per variant, named as pytest's parametrization names a test's ids
            # (docs/format.md#variants): -k, --lf, -n and JUnit see ordinary items
            for variant in variants:
                # the node id given whole, as text: pytest 9 parses it, so its bracket is
                # the id's parameter part as a parametrized test's (what --lf reads back)
                name = f"{case.id}[{variant.name}]"
                yield CaseItem.from_parent(self, name=name, nodeid=f"{self.nodeid}::{name}",
                                           case=case, line=line, suite_info=info,
                                           case_text=text, variant=variant)

    def prepare(self, info: SuiteInfo, refs: tuple[Any, ...] = ()) -> None:
        """What the cases' plans share: a check that cannot be imported is a collection
        error, unless its import exits: then the cases that name it are errors at their
        setup (docs/contract.md#checks)."""
        manifest = self.package.manifest
        self.context = planning.SuiteContext(
            self.package, self.spec, info.path, info.key,
            manifest_display=session.of(self.config).index.display(manifest)
            if manifest is not None else None,
            check_functions=planning.suite_checks(
                refs, [self.package.folder, self.path.parent, self.config.rootpath], info.path),
            check_refs=refs)


class CaseNotPassed(Exception):
    """Raised by :meth:`CaseItem.runtest` so pytest records a failure or a timeout."""

    def __init__(self, result: CaseResult) -> None:
        super().__init__(result.outcome)
        self.result = result


class CaseItem(compat.FixtureItem):
    """One case of a suite: plans its run in setup, runs it, and lets outcomes decide.

    Its state is in plain attributes, as pytest's own DoctestItem keeps its: ``plan``
    (from its setup), ``result`` and ``recording`` (from its run)."""

    parent: SuiteFile
    #: Whether a judge must be bound for the case's rubrics (else they go ungraded).
    judge_required = True

    def __init__(self, *, case: Case, line: int, suite_info: SuiteInfo,
                 case_text: bytes | None = None, variant: Variant | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.line = line
        #: Its content as its suite file's validation wrote it (resume's hash of it).
        self.case_text = case_text
        #: The package variant it runs under (docs/format.md#variants); None without.
        self.variant = variant
        #: The registry prompts its run rendered (the ``elizon_prompt`` fixture adds them).
        self.rendered_prompts: list[PromptRecord] = []
        self.identity = outcomes.CaseIdentity(self.nodeid, case.id, line, suite_info,
                                              variant.name if variant is not None else None)
        for tag in case.tags or ():
            self.add_marker(tag)
        self.judged = case.judged
        if self.judged:
            self.add_marker(pytest.mark.usefixtures(_JUDGE_FIXTURE))
        self.checks_fixture = planning.uses_checks_fixture(case)
        if self.checks_fixture:
            self.add_marker(pytest.mark.usefixtures(planning.CHECKS_FIXTURE))
        infos, key = self.parent.fixture_infos, (self.judged, self.checks_fixture)
        infos[key] = self.init_fixtures(infos.get(key))  # once per file
        self.plan: CasePlan | None = None
        self.result: CaseResult | None = None
        #: The cassette entry of its run (``--elizon-record``).
        self.recording: dict[str, Any] | None = None
        #: The plan it was started ahead of its turn with, and the fixture values it used.
        self._early: tuple[dict[str, object], CasePlan] | None = None
        self._case_sha: str | None = None
        #: Its first call when it was started ahead on a slot thread (run/slots.py).
        self.slot_call: SlotCall | None = None
        #: What plugins add at the case's setup to its effective content (its snapshot
        #: pin), and whether ``--elizon-resume`` may take it from the store at all (not
        #: when its run must happen: a snapshot update writes what it outputs).
        self.history_extra: dict[str, Any] = {}
        self.resumable = True
        #: The declared secrets it is checked for (``secrets:`` and the ``elizon_secrets``
        #: fixture), set at its setup by the probe pack: what a snapshot never stores in
        #: plain text (docs/contract.md#snapshots).
        self.secrets: tuple[str, ...] = ()
        self._hooks: Any = None

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.line - 1, f"case {self.name}"

    @property
    def ihook(self) -> Any:
        """Its file's hook proxy once the run has begun (:meth:`SuiteFile.run_hooks`)."""
        hooks = self._hooks
        return hooks if hooks is not None else super().ihook

    @property
    def _fixtures(self) -> tuple[str, ...]:
        return (_ENTRY_FIXTURE, _JUDGE_FIXTURE) if self.judged else (_ENTRY_FIXTURE,)

    # -- setup: the plan --------------------------------------------------------------------

    def runs_now(self) -> None:
        """Its run begins (its hooks are found once: :meth:`SuiteFile.run_hooks`)."""
        if self._hooks is None and isinstance(self.parent, SuiteFile):
            self._hooks = self.parent.run_hooks()

    def setup(self) -> None:
        self.runs_now()
        self.fill_fixtures()
        values = self.fixture_values
        running = session.of(self.config)
        if running.scheduler is not None:  # for the cases that may start ahead of their turn
            for name in self._fixtures:
                wide = compat.session_wide_fixture(self, name, _DEFAULTS_MODULE)
                if wide is not None:
                    running.fixture_values[wide[0]] = values[name]
        early = self._early
        if early is not None and all(early[0][name] is values[name] for name in self._fixtures):
            self.plan = early[1]  # started ahead with these very fixture values
        else:
            self.plan = self._plan(values)
        self.ihook.pytest_elizon_case_setup(item=self)

    def _plan(self, values: dict[str, object]) -> CasePlan:
        """The case's plan from the fixture values; ElizonError when it cannot be made."""
        running = session.of(self.config)
        plan = planning.plan_case(
            self.case, self.parent.context, running.settings, running.binder, values,
            self.fixture_location, judged=self.judged,
            judge_optional=not self.judge_required, variant=self.variant)
        if self.judged and plan.judge is None:
            self.judged = False  # no judge is bound and none is required: rubrics go ungraded
        return plan

    def fixture_location(self, name: str) -> str:
        """``file:line`` of the definition of fixture ``name`` that this case uses."""
        return compat.fixture_location(self, name)

    def background_work(self) -> Callable[[], CaseRun] | None:
        """This case's run, to start before its turn — or None when it must wait for its own
        setup: its entry (or judge) fixture is not session-wide or has not been set up yet,
        or planning fails (its setup then reports why)."""
        running = session.of(self.config)
        if running.settings.replay is not None or self.checks_fixture:
            return None  # a replay answers at once; fixture checks come with its setup
        if session.of(self.config).resumable:
            return None  # a resumed run may answer it from the store: decided at its turn
        values: dict[str, object] = {}
        for name in self._fixtures:
            wide = compat.session_wide_fixture(self, name, _DEFAULTS_MODULE)
            if wide is None or not (wide[1] or wide[0] in running.fixture_values):
                return None
            values[name] = None if wide[1] else running.fixture_values[wide[0]]
        try:
            plan = self._plan(values)
        except ElizonError:
            return None
        self._early = (values, plan)
        work, self.slot_call = run_ahead(plan)  # the scheduler keeps its deadline
        return work

    # -- the run ----------------------------------------------------------------------------

    def runtest(self) -> None:
        try:
            result = self._run()
        except pytest.exit.Exception:
            raise  # quitting pdb (q) or pytest.exit(): the session stops, as for any test
        except Exception as exc:  # whatever escapes, the case still reaches every report
            result = outcomes.escaped(self.identity, self._limits(), exc)
            self.result = result
        self.user_properties.append(("elizon_outcome", result.outcome))
        if result.usage is not None:  # JUnit's per-case tokens and cost (contract.md#cost)
            if result.usage.tokens is not None:
                self.user_properties.append(("elizon_tokens", result.usage.tokens))
            if result.usage.cost_usd is not None:
                self.user_properties.append(("elizon_cost_usd", result.usage.cost_usd))
        if result.repeat is not None:  # JUnit properties: the pass rate and its interval
            self.user_properties.extend(outcomes.repeat_properties(result.repeat))
        if self.case.controls:  # the compliance controls it evidences (contract.md#junit-xml)
            self.user_properties.append(("elizon_controls", ",".join(self.case.controls)))
        if result.outcome != outcomes.PASSED and (outcomes.blocks(result)
                                                  or result.outcome != outcomes.INCONCLUSIVE):
            raise CaseNotPassed(result)

    def _limits(self) -> tuple[float, str]:
        if self.plan is not None:
            return self.plan.timeout_s, self.plan.timeout_source
        settings = session.of(self.config).settings
        return settings.timeout_s, settings.timeout_source

    def _run(self) -> CaseResult:
        plan = self.plan
        assert plan is not None  # made by setup, which pytest ran first
        running = session.of(self.config)
        stored = planning.stored_result(running.resumable, self.identity,
                                        *self.history_key()) \
            if self.resumable and running.resumable else None
        if stored is not None:  # --elizon-resume: finished by the run this one continues
            variant = self.variant
            if variant is not None and (stored.advisory or "").startswith(
                    f"variant {variant.name} is "):
                # how its variant is gated is this session's to say (its gate, the flag)
                stored = dataclasses.replace(stored, advisory=None)
            stored = self._variant_record(stored)
            self.result = stored
            return stored
        scheduler = running.scheduler
        run = scheduler.result(self.nodeid, self.slot_call) if scheduler is not None \
            else None  # waits; Ctrl-C still stops
        if scheduler is not None and run is scheduler.ABANDONED and self._early is not None:
            # its first call outlived its time on the slot: the plan it was started with
            # runs again here, without that call
            run = run_without_first_call(self._early[1])
        elif not isinstance(run, CaseRun):
            run = run_case(plan)
        added = [found for found in self.ihook.pytest_elizon_case_checks(item=self, run=run)
                 if found is not None]
        result = planning.decided(self.identity, plan, run, added)
        result = self._variant_record(result)
        self.result = result
        if running.settings.record is not None:
            self.recording = planning.recording_of(self.identity, self.case, plan, run,
                                                   self.secrets, self.variant)
        return result

    def _variant_record(self, result: CaseResult) -> CaseResult:
        """``result`` with the prompts its run rendered, and, under an advisory variant,
        a failure that does not fail the run (docs/format.md#variants)."""
        changes: dict[str, Any] = {}
        if self.rendered_prompts:
            changes["prompts"] = tuple(self.rendered_prompts)
        variant = self.variant
        if variant is not None and result.outcome not in (outcomes.PASSED, outcomes.ERROR) \
                and result.advisory is None:
            if variant.advisory:
                changes["advisory"] = f"variant {variant.name} is advisory"
            elif not variant.reference and session.of(self.config).settings.fail_on_regression:
                # gated by its comparison with the reference instead, case by case
                # advisory (docs/contract.md#variant-comparison)
                changes["advisory"] = outcomes.GATED_BY_COMPARISON.format(
                    variant=variant.name)
        return dataclasses.replace(result, **changes) if changes else result

    def history_key(self) -> tuple[str, str]:
        """(the case content's SHA-256, the entry point's identity: its name and the
        fingerprint of its package's code) as the history keeps them: what must be
        unchanged for ``--elizon-resume`` to take a finished case. The
        content is the effective one: the case with what its plan resolved for it (the
        suite's defaults, the time limit, the judge…)."""
        plan = self.plan
        entry = plan.entry_description if plan is not None else ""
        application = session.of(self.config).index.application(self.parent.package)
        if application is not None and plan is not None:  # what ran, not only its name
            entry = f"{entry} {application}"
        if self._case_sha is None:  # asked at the run and again for its report
            extra = self.history_extra
            if self.variant is not None:  # what its variant changes is its content too
                extra = {**extra, "variant": planning.variant_key(self.variant)}
            self._case_sha = planning.case_sha256(
                self.case, {**planning.effective(plan), **extra}
                if plan is not None else None, self.case_text)
        return self._case_sha, entry

    def result_for(self, when: str, excinfo: pytest.ExceptionInfo[BaseException] | None
                   ) -> tuple[CaseResult, dict[str, Any] | None] | None:
        """The result a report of phase ``when`` carries (with the cassette recording)."""
        if when == "call":
            result = self.result
            if result is None and excinfo is not None:  # raised before a result was made
                result = outcomes.escaped(self.identity, self._limits(), excinfo.value)
            return (self._controlled(result), self.recording) if result else None
        if when == "setup" and excinfo is not None:
            return self._controlled(planning.setup_failed(
                self.identity, session.of(self.config).settings, excinfo.value)), None
        return None

    def _controlled(self, result: CaseResult) -> CaseResult:
        """``result`` with the controls the case declares, whatever way it ended."""
        controls = tuple(self.case.controls or ())
        return dataclasses.replace(result, controls=controls) if controls else result

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
