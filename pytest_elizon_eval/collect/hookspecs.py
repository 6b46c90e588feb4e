"""The plugin's own hooks: where other plugins (and conftest.py files) extend it.

Registered by :mod:`.plugin` in ``pytest_addhooks``, as pytest-xdist's ``newhooks`` and
pytest-timeout's hooks are. The probe pack (:mod:`.redteam_nodes`) is built on them alone;
docs/hooks.md describes each with an example.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy
import pytest

if TYPE_CHECKING:
    from ..load.packages import Package, SuiteSpec
    from ..run.planning import CaseChecks
    from ..run.running import CaseRun
    from .nodes import CaseItem, SuiteFile

__all__ = ["pytest_elizon_case_checks", "pytest_elizon_case_fixtures",
           "pytest_elizon_case_setup", "pytest_elizon_collect_test_set"]

hookspec = pluggy.HookspecMarker("pytest")


@hookspec(firstresult=True)
def pytest_elizon_collect_test_set(collector: pytest.Collector, package: Package,
                                   spec: SuiteSpec) -> pytest.Collector | None:
    """Collect a test set of ``package`` that its manifest (``collector``) collects — one the
    directory walk does not reach, or one the core does not read itself (a ``probes:``
    item, whose ``spec.probe_source`` is set). Return its collector, or None to leave it to
    the next implementation (the core collects a suite file as a :class:`~.collect.SuiteFile`;
    a test set nobody collects is left out). Stops at the first non-None result."""


def pytest_elizon_case_fixtures(suite: SuiteFile) -> list[str] | None:
    """Fixture names every case of ``suite`` requests (after the entry fixture), so an
    implementation can read their values in :func:`pytest_elizon_case_setup`. Called once
    per suite file, at collection."""


def pytest_elizon_case_setup(item: CaseItem) -> None:
    """A case has its fixtures and its plan (``item.plan``); raise to fail its setup (an
    :class:`~.errors.ElizonError` shows as its code and message). Keep what the case's
    checks need on ``item.stash``."""


def pytest_elizon_case_checks(item: CaseItem, run: CaseRun) -> CaseChecks | None:
    """Checks of the whole case after it ran, decided with its own: return a
    :class:`~.planning.CaseChecks` (its assertions, a security record, strings every
    report must mask), or None to add nothing. Runs in the case's call phase."""
