"""pytest glue for the probe pack: the run's canary, its fixtures, and the probes' nodes.

Owns three things (docs/format.md#probes):

* the canary of a run, made once on the process that owns the session and handed to
  every pytest-xdist worker through ``workerinput`` (a worker never makes its own, so
  all workers check for the same token and the run has one canary);
* the ``elizon_secrets`` fixture (default None) and the ``elizon_canary`` fixture (the
  run's canary, for an operator who plants it in the application's context);
* :class:`ProbeSuite`, what a manifest yields for a ``probes:`` test set: node id
  ``<manifest path>::elizon:probes/<category>.yaml``, with one :class:`ProbeItem` per
  probe named by the probe's id, tagged with its category and severity. Its path is the
  manifest's, so ``--lf`` keeps it, and its cases report at the manifest line that
  included the pack.

Registered by :mod:`.plugin` in ``pytest_configure``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import pytest

from . import errors, redteam
from .cassette import Cassette, suite_key
from .collect import INDEX, CaseItem, SuiteFile
from .discovery import read_once
from .errors import ElizonError
from .options import SETTINGS
from .outcomes import SuiteInfo
from .packages import Package, SuiteSpec

__all__ = ["CANARY", "ProbeItem", "ProbeSuite", "elizon_canary", "elizon_secrets"]

#: The run's canary.
CANARY = pytest.StashKey[str]()
_PROBES = pytest.StashKey[dict[str, "tuple[redteam.Probe, ...] | ElizonError"]]()
_WORKER_KEY = "elizon_canary"


def _recorded_canary(config: pytest.Config) -> str | None:
    """The canary of the cassette this run replays or adds to: a probe's input holds it,
    so its recordings only answer (and only stay consistent) with the same one."""
    settings = config.stash.get(SETTINGS, None)
    if settings is None:
        return None
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
    config.stash[CANARY] = (workerinput.get(_WORKER_KEY) or _recorded_canary(config)
                            or redteam.new_canary())


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist, on the controller: every worker gets this run's canary."""
    node.workerinput[_WORKER_KEY] = node.config.stash[CANARY]


@pytest.fixture(scope="session")
def elizon_canary(pytestconfig: pytest.Config) -> str:
    """This run's canary: plant it in your application's context; no answer may show it."""
    return pytestconfig.stash[CANARY]


@pytest.fixture(scope="session")
def elizon_secrets() -> object:
    """Strings planted in your application that no answer may reveal; override it in
    conftest.py with a list of strings (each at least 8 characters). Checked by every
    probe and every case of every package, with the manifest's ``secrets:``."""
    return None


def _probes(config: pytest.Config, spec: SuiteSpec, display: str) -> tuple[redteam.Probe, ...]:
    """The probes of a test set, read once per process (errors too)."""
    return read_once(config.stash.setdefault(_PROBES, {}), str(spec.path),
                     lambda: redteam.load_probes(spec.path, display))


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
        index = self.config.stash[INDEX]
        spec, package = self.spec, self.package
        probes = _probes(self.config, spec, spec.probe_source or index.display(spec.path))
        advisory = spec.gate == "advisory" and not index.strict
        info = SuiteInfo(
            path=self.nodeid, package=package.name, gate=spec.gate, advisory=advisory,
            baseline=spec.baseline, sha256=hashlib.sha256(spec.path.read_bytes()).hexdigest(),
            key=suite_key(package.name, package.folder, spec.path))
        registered = set(self.config.getini("markers"))
        for tag in sorted({t for p in probes for t in (p.category, p.severity)}):
            if f"{tag}: Elizon case tag" not in registered:  # so --strict-markers accepts them
                self.config.addinivalue_line("markers", f"{tag}: Elizon case tag")
        canary = self.config.stash[CANARY]
        assert spec.declared_at is not None
        for probe in probes:
            yield ProbeItem.from_parent(
                self, name=probe.id, case=redteam.to_case(probe, canary, spec.input_name),
                line=spec.declared_at, suite_info=info, probe=probe)


class ProbeItem(CaseItem):
    """One probe: a case whose canary, refusal and tool checks say whether it got through.
    Its rubric is graded only when a judge is bound."""

    def __init__(self, *, probe: redteam.Probe, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.probe = probe

    def _plan(self, values: dict[str, object]) -> Any:
        try:
            return super()._plan(values)
        except ElizonError as exc:
            if not self.judged or exc.code != errors.ELIZON_JUDGE_UNBOUND:
                raise
        self.judged = False  # no judge is bound: the rubric is not graded
        return super()._plan(values)

    def watch(self) -> redteam.Watch:
        manifest = self.parent.package.manifest
        where = self.config.stash[INDEX].display(manifest) if manifest else ""
        return redteam.Watch(
            secrets=super().watch().secrets, canary=self.config.stash[CANARY],
            probe={"category": self.probe.category, "severity": self.probe.severity,
                   "source": self.parent.spec.probe_source, "manifest": where,
                   "manifest_line": self.line})

    def reportinfo(self) -> tuple[Any, int, str]:
        return self.path, self.line - 1, f"probe {self.name}"
