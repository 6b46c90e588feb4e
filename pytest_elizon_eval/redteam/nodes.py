"""pytest glue for the probe pack: the run's canary, its fixtures, and the probes' nodes.

Owns three things (docs/format.md#probes):

* the canary of a run, made once on the process that owns the session and handed to
  every pytest-xdist worker through ``workerinput`` (a worker never makes its own, so
  all workers check for the same token and the run has one canary);
* the ``elizon_secrets`` fixture (default None) and the ``elizon_canary`` fixture (the
  run's canary, for an operator who plants it in the application's context);
* :class:`ProbeSuite`, what a manifest collects for a ``probes:`` test set: node id
  ``<manifest path>::elizon:probes/<category>.yaml``, with one :class:`ProbeItem` per
  probe named by the probe's id, tagged with its category and severity. Its path is the
  manifest's, so ``--lf`` keeps it, and its cases report at the manifest line that
  included the pack;
* the leak checks of every case (the run's canary, ``secrets:`` and the
  ``elizon_secrets`` fixture), and the masking of what they watch for in every report.

A client of the core: everything here reaches it through the plugin's hooks
(:mod:`.hookspecs`, docs/hooks.md). Registered by :mod:`.plugin` in ``pytest_configure``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from ..collect import session
from ..collect.nodes import CaseItem, SuiteFile
from ..decide.outcomes import SuiteInfo
from ..errors import ElizonError
from ..load.discovery import read_once
from ..load.packages import Package, SuiteSpec
from ..run import cassette_secrets
from ..run.assertions import AssertionResult
from ..run.cassette import Cassette, suite_key
from ..run.planning import CaseChecks
from ..run.running import CaseRun
from . import pack as redteam

__all__ = ["SECRETS_FIXTURE", "ProbeItem", "ProbePack", "ProbeSuite", "canary", "elizon_canary",
           "elizon_secrets"]


@dataclass(eq=False)
class ProbePack:
    """The probe pack's state in a session: the run's canary and the probe files read."""

    canary: str
    probes: dict[str, tuple[redteam.Probe, ...] | ElizonError] = field(default_factory=dict)


_PACK = pytest.StashKey[ProbePack]()
#: What a case is checked for after it ran (from its setup).
_WATCH = pytest.StashKey[redteam.Watch]()
_WORKER_KEY = "elizon_canary"
#: The fixture listing secrets no answer may reveal.
SECRETS_FIXTURE = "elizon_secrets"


def _recorded_canary(config: pytest.Config) -> str | None:
    """The canary of the cassette this run replays or adds to: a probe's input holds it,
    so its recordings only answer (and only stay consistent) with the same one."""
    running = config.stash.get(session.SESSION, None)
    if running is None:
        return None
    settings = running.settings
    if settings.replay is not None:
        return settings.replay.canary
    if settings.record is not None and settings.record.is_file():
        try:
            return Cassette.load(settings.record).canary
        except ValueError:
            return None
    return None


def pytest_configure(config: pytest.Config) -> None:
    workerinput: dict[str, Any] = getattr(config, "workerinput", {})
    config.stash[_PACK] = ProbePack(workerinput.get(_WORKER_KEY) or _recorded_canary(config)
                                    or redteam.new_canary())


def canary(config: pytest.Config) -> str | None:
    """The run's canary (None before the pack is configured)."""
    pack = config.stash.get(_PACK, None)
    return pack.canary if pack is not None else None


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist, on the controller: every worker gets this run's canary."""
    node.workerinput[_WORKER_KEY] = node.config.stash[_PACK].canary


@pytest.fixture(scope="session")
def elizon_canary(pytestconfig: pytest.Config) -> str:
    """This run's canary: plant it in your application's context; no answer may show it."""
    return pytestconfig.stash[_PACK].canary


@pytest.fixture(scope="session")
def elizon_secrets() -> object:
    """Strings planted in your application that no answer may reveal; override it in
    conftest.py with a list of strings (each at least 8 characters). Checked by every
    probe and every case of every package, with the manifest's ``secrets:``."""
    return None


@pytest.hookimpl
def pytest_elizon_collect_test_set(collector: pytest.Collector, package: Package,
                                   spec: SuiteSpec) -> pytest.Collector | None:
    """A manifest's ``probes:`` item: its :class:`ProbeSuite`."""
    return ProbeSuite.of(collector, package, spec) if spec.probe_source is not None else None


@pytest.hookimpl
def pytest_elizon_case_fixtures(suite: SuiteFile) -> list[str]:
    return [SECRETS_FIXTURE]  # every case is checked for the fixture's secrets


@pytest.hookimpl
def pytest_elizon_case_setup(item: CaseItem) -> None:
    """What the case is checked for after it ran: the package's secrets and the
    ``elizon_secrets`` fixture's (docs/contract.md#security); a bad fixture value fails
    the case's setup."""
    watch = _watch(item)
    item.secrets = watch.secrets  # for every plugin that stores what the case output
    plan = item.plan
    if plan is not None and plan.replay is not None and watch.secrets:
        # the live values go back in place of the placeholders, so a leak recorded once is
        # a leak on every replay
        watch = replace(watch, cassette_holds_secret=cassette_secrets.holds_secret(
            plan.replay, watch.secrets))
        item.plan = replace(plan, replay=cassette_secrets.restore(plan.replay, watch.secrets))
    item.stash[_WATCH] = watch


@pytest.hookimpl
def pytest_elizon_case_checks(item: CaseItem, run: CaseRun) -> CaseChecks | None:
    """The canary and secret checks of the run (reading everything the entry point
    returned, not just what reports keep), its security record, and what to mask."""
    watch = item.stash.get(_WATCH, None)
    if watch is None:
        return None
    leaks, security = redteam.leak_checks(run, watch)
    if watch.cassette_holds_secret:
        leaks = (*leaks, AssertionResult(
            "cassette", False, "the cassette holds no declared secret",
            "the recording holds a declared secret in plain text (recorded before secrets "
            "were kept out of cassettes): record this case again with --elizon-record"))
    return CaseChecks(leaks, security, tuple(watch.values))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A fixture's teardown error (and what it printed) masked as the case's result is, in
    the process that ran it, before any report or xdist's controller sees it
    (docs/contract.md#security)."""
    report = yield
    watch = item.stash.get(_WATCH, None)
    if call.when != "teardown" or not report.failed or watch is None or not watch.values:
        return report
    hook = item.config.hook
    data = hook.pytest_report_to_serializable(config=item.config, report=report)
    if data is None:
        return report
    for name in ("longrepr", "sections"):  # xdist's own round trip, with the text masked
        data[name] = redteam.masked_strings(data.get(name), watch.values)
    masked = hook.pytest_report_from_serializable(config=item.config, data=data)
    return masked if isinstance(masked, pytest.TestReport) else report


def _watch(item: CaseItem) -> redteam.Watch:
    value = item.fixture_values.get(SECRETS_FIXTURE)
    found = () if value is None else redteam.check_secrets(
        value, f"the {SECRETS_FIXTURE} fixture ({item.fixture_location(SECRETS_FIXTURE)})")
    secrets = tuple(dict.fromkeys(item.parent.package.secrets + found))
    if not isinstance(item, ProbeItem):
        return redteam.Watch(secrets=secrets)
    manifest = item.parent.package.manifest
    where = session.of(item.config).index.display(manifest) if manifest else ""
    return redteam.Watch(
        secrets=secrets, canary=item.config.stash[_PACK].canary,
        probe={"category": item.probe.category, "severity": item.probe.severity,
               "source": item.parent.spec.probe_source, "manifest": where,
               "manifest_line": item.line})


def _probes(config: pytest.Config, spec: SuiteSpec, display: str) -> tuple[redteam.Probe, ...]:
    """The probes of a test set, read once per process (errors too)."""
    return read_once(config.stash[_PACK].probes, str(spec.path),
                     lambda: redteam.load_probes(spec.path, display,
                                                 session.of(config).index.cache))


class ProbeSuite(SuiteFile):
    """The probes a manifest's ``probes:`` item includes, from one pack file."""

    @classmethod
    def of(cls, parent: pytest.Collector, package: Package, spec: SuiteSpec) -> ProbeSuite:
        assert spec.probe_source is not None
        suite: ProbeSuite = cls.from_parent(
            parent, name=spec.probe_source, path=parent.path, package=package, spec=spec,
            nodeid=f"{parent.nodeid}::{spec.probe_source}")
        return suite

    def collect(self) -> Iterator[CaseItem]:
        index = session.of(self.config).index
        spec, package = self.spec, self.package
        probes = _probes(self.config, spec, spec.probe_source or index.display(spec.path))
        info = SuiteInfo(
            path=self.nodeid, package=package.name, gate=spec.gate, advisory=index.advisory(spec),
            baseline=spec.baseline, sha256=hashlib.sha256(spec.path.read_bytes()).hexdigest(),
            key=suite_key(package.name, package.folder, spec.path))
        self.prepare(info)
        registered = set(self.config.getini("markers"))
        for tag in sorted({t for p in probes for t in p.tags}):
            if f"{tag}: Elizon case tag" not in registered:  # so --strict-markers accepts them
                self.config.addinivalue_line("markers", f"{tag}: Elizon case tag")
        canary = self.config.stash[_PACK].canary
        assert spec.declared_at is not None
        for probe in probes:
            yield ProbeItem.from_parent(
                self, name=probe.id, case=redteam.to_case(probe, canary, spec.input_name),
                line=spec.declared_at, suite_info=info, probe=probe)


class ProbeItem(CaseItem):
    """One probe: a case whose canary, refusal and tool checks say whether it got through.
    Its rubric is graded only when a judge is bound."""

    judge_required = False

    def __init__(self, *, probe: redteam.Probe, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.probe = probe

    def reportinfo(self) -> tuple[Any, int, str]:
        return self.path, self.line - 1, f"probe {self.name}"
