"""Snapshots on the pytest side (docs/contract.md#snapshots): built on the plugin's own hooks.

:class:`SnapshotCases` runs in every process: at a case's setup it reads the suite's
snapshot file (once per file; a bad file or a bad entry of the case is the case's
``ELIZON_SNAPSHOT_INVALID``), after its run it compares every run's output with the pin
(:func:`~.snapshots.compare`, in the form that keeps the case's declared secrets out of
the file), and it puts on the case's report what an update run writes
and which snapshots of the suite no case uses — and, on the first case's report, the
snapshot files collection found whose suite file is gone (all of theirs unused).
:class:`SnapshotWriter` runs only in the
session's owning process (the xdist controller, or the one process): it gathers that
from the reports, writes each snapshot file once at the end of an update run (workers
never touch the files, so they cannot race), and prints the ``elizon snapshots`` section.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .. import errors
from ..decide import outcomes
from ..errors import ElizonError
from ..load.discovery import matches
from ..load.packages import run_variants
from ..run import snapshots
from ..run.planning import CaseChecks, recorded_input
from ..run.running import Attempt, CaseRun
from . import options, session
from .nodes import CaseItem, SuiteFile

__all__ = ["REPORT_KEY", "SnapshotCases", "SnapshotWriter", "update_requested"]

#: Cases listed in the terminal section without -v.
LISTED = 20
#: The key of a case's report data that carries its suite's snapshot file to the owner.
REPORT_KEY = "snapshot_file"
#: The key of a case's report data that carries the snapshot files without a suite.
ORPHANS_KEY = "snapshot_orphans"


@dataclass
class _CaseState:
    """What a case's snapshot check keeps from its setup to its report."""

    #: Its suite's snapshot file, when the case has ``expect.snapshot``.
    file: snapshots.SnapshotFile | None = None
    #: Its suite's snapshot file for the owner: path, display, suite, unused ids.
    suite: dict[str, Any] | None = None
    #: What an update run writes for it.
    write: dict[str, Any] | None = None


_STATE = pytest.StashKey[_CaseState]()


def update_requested(config: pytest.Config) -> bool:
    return bool(config.getoption("elizon_snapshot_update", False))


def _text(attempt: Attempt) -> str | None:
    """What a run pins: its output text; for a conversation, every turn's answer, each under
    its number. None when the run gave no output (an error or a timeout)."""
    calls = [t.call for t in attempt.turns] or [attempt.call]
    if any(c.text is None or c.timed_out or c.error is not None for c in calls):
        return None
    if not attempt.turns:
        return calls[0].text
    return "\n".join(f"--- turn {n} ---\n{c.text}" for n, c in enumerate(calls, 1))


class SnapshotCases:
    """The per-case side, in every process."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.update = update_requested(config)
        #: Per suite file: its snapshot file (or why it cannot be read) and the ids of the
        #: snapshots no case with ``expect.snapshot`` uses.
        self._suites: dict[Path, tuple[snapshots.SnapshotFile | ElizonError, list[str]]] = {}
        #: Snapshot files seen at collection whose suite file is gone; told the owner once.
        self._orphans: list[Path] | None = []

    def pytest_ignore_collect(self, collection_path: Path) -> bool | None:
        # a snapshot file is data, never a suite, whatever elizon_suite_files matches
        if not snapshots.is_snapshot_file(collection_path):
            return None
        if self._orphans is not None and snapshots.suite_gone(collection_path):
            self._orphans.append(collection_path)
        return True

    def _orphan_data(self) -> list[dict[str, Any]]:
        """The snapshot files without a suite, for the owner (once per process: under xdist
        every worker collects them, and the owner keeps one of each)."""
        found, self._orphans = self._orphans or [], None
        index = session.of(self.config).index
        told = []
        for path in found:
            display = index.display(path)
            try:
                file = snapshots.load(path, display)
            except ElizonError:
                continue  # not readable as snapshots: not ours to list or remove
            if file.raw:
                told.append({"path": str(path), "display": display,
                             "suite": path.name.removesuffix(snapshots.SUFFIX),
                             "unused": sorted(file.raw)})
        return told

    def _suite(self, suite: SuiteFile) -> tuple[snapshots.SnapshotFile | ElizonError, list[str]]:
        found = self._suites.get(suite.path)
        if found is None:
            index = session.of(self.config).index
            path = snapshots.snapshot_path(suite.path)
            file: snapshots.SnapshotFile | ElizonError
            try:
                self._refuse_shared(suite.path, path)
                file = snapshots.load(path, index.display(path))
            except ElizonError as exc:
                file = exc
            unused: list[str] = []
            if isinstance(file, snapshots.SnapshotFile) and file.raw:
                loaded, _ = index.suite(suite.path, suite.package, suite.spec)
                # a case's pin per variant, of every variant the package has, run or not
                # (docs/format.md#variants): a selection never makes a pin unused
                added = session.of(self.config).settings.variants_added
                names = [v.name for v in run_variants(suite.package, (), added)]
                pinned = {f"{c.id}[{n}]" if names else c.id
                          for c in loaded.cases if c.expect and c.expect.snapshot
                          for n in names or [""]}
                unused = sorted(k for k in file.raw if k not in pinned)
            found = self._suites[suite.path] = (file, unused)
        return found

    def _refuse_shared(self, suite: Path, path: Path) -> None:
        """ElizonError when another suite's snapshots would live in ``path`` too (its twin,
        :func:`~.snapshots.twin_of`), whether or not this run collects it: its pins would be
        unused here, and an update run would remove them (docs/contract.md#snapshots)."""
        twin = snapshots.twin_of(suite)
        if twin is None or not twin.is_file():
            return
        running = session.of(self.config)
        if running.index.owner(twin) is None and not matches(twin,
                                                             running.settings.suite_globs):
            return  # a file of that name that is no suite has no snapshots
        first, second = sorted((suite, twin), key=lambda p: p.name)
        display = running.index.display
        raise ElizonError(errors.ELIZON_SNAPSHOT_INVALID, [
            f"{display(path)}: the snapshots of {display(first)} and {display(second)} would "
            "share this file; rename one of the two suite files, and each has a snapshot "
            "file of its own"])

    def pytest_elizon_case_setup(self, item: CaseItem) -> None:
        suite = item.parent
        if not isinstance(suite, SuiteFile):
            return
        file, unused = self._suite(suite)
        expect = item.case.expect
        pinned = expect is not None and bool(expect.snapshot)
        if not (pinned or unused):  # nothing to check, nothing to tell: most cases
            return
        state = item.stash[_STATE] = _CaseState()
        shared = {"path": str(file.path), "display": file.display, "suite": suite.path.name,
                  "unused": unused} if isinstance(file, snapshots.SnapshotFile) else None
        if unused:  # every case of the suite tells the owner, whichever of them runs
            state.suite = shared
        if not pinned:
            return
        if isinstance(file, ElizonError):
            raise ElizonError(file.code, file.messages)
        # a case's pin per variant: its node id's name (docs/format.md#variants)
        bad = file.bad.get(item.name)
        if bad is not None and not self.update:  # an update run writes the entry again
            raise ElizonError(errors.ELIZON_SNAPSHOT_INVALID, [bad])
        state.file, state.suite = file, shared
        # --elizon-resume: a changed pin re-runs the case, and an update run runs every
        # snapshot case (a case taken from the store would write nothing)
        item.history_extra["snapshot"] = file.raw.get(item.name)
        item.resumable = item.resumable and not self.update

    def pytest_elizon_case_checks(self, item: CaseItem, run: CaseRun) -> CaseChecks | None:
        state = item.stash.get(_STATE, None)
        file = state.file if state is not None else None
        if state is None or file is None or item.plan is None:
            return None
        compared = snapshots.compare(
            file, item.name, [_text(a) for a in run.attempts], recorded_input(item.case),
            item.plan.entry_description, update=self.update, secrets=item.secrets)
        state.write = compared.write
        return CaseChecks(assertions=(compared.assertion,), snapshot=compared.record)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]
                                  ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        # outermost wrapper: the case's data is on the report by now
        data = getattr(report, outcomes.REPORT_ATTR, None)
        if call.when != "call" or not isinstance(data, dict):
            return report
        state = item.stash.get(_STATE, None)
        if state is not None and state.suite is not None:
            data[REPORT_KEY] = outcomes.encodable({
                **state.suite, "case": item.name, "write": state.write})
        if self._orphans is not None:
            orphans = self._orphan_data()
            if orphans:
                data[ORPHANS_KEY] = orphans
        return report


class SnapshotWriter:
    """The owning process's side: statuses for the terminal, and the files written once."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.update = update_requested(config)
        self.statuses: Counter[str] = Counter()
        #: (node id, status, updated) of every case that is not a plain match.
        self.notable: list[tuple[str, str, bool]] = []
        #: By snapshot file path: its display, its suite's, the unused ids, the writes.
        self.files: dict[str, dict[str, Any]] = {}
        self.written: list[str] = []
        self.problems: list[str] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, outcomes.REPORT_ATTR, None)
        if not isinstance(data, dict):
            return
        record = data.get("snapshot")
        if isinstance(record, dict):
            self.statuses[record["status"]] += 1
            if record["status"] != snapshots.MATCH or record.get("updated"):
                self.notable.append((data["nodeid"], record["status"],
                                     bool(record.get("updated"))))
        for orphan in data.get(ORPHANS_KEY) or ():
            self.files.setdefault(orphan["path"], {
                "display": orphan["display"], "suite": orphan["suite"],
                "unused": set(orphan["unused"]), "writes": {}, "gone": True})
        shared = data.get(REPORT_KEY)
        if isinstance(shared, dict):
            state = self.files.setdefault(shared["path"], {
                "display": shared["display"], "suite": shared["suite"],
                "unused": set(shared["unused"]), "writes": {}})
            if shared.get("write") is not None:
                state["writes"][shared["case"]] = shared["write"]

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.update:
            return
        for path_text, state in sorted(self.files.items()):
            if not state["writes"] and not state["unused"]:
                continue
            try:
                changed = self._write(Path(path_text), state)
            except (ElizonError, OSError) as exc:
                self.problems.append(f"{state['display']} not updated: {exc}")
                continue
            if changed:
                self.written.append(f"{state['display']} ({len(state['writes'])} written, "
                                    f"{len(state['unused'])} unused removed)")
        if self.problems:
            session.exitstatus = pytest.ExitCode.USAGE_ERROR

    @staticmethod
    def _write(path: Path, state: dict[str, Any]) -> bool:
        """Apply a file's writes and removals; whether the file changed."""
        # read again: the file as it is now, not as the workers saw it
        file = snapshots.load(path, state["display"])
        text = snapshots.updated_text(file, state["suite"], state["writes"], state["unused"])
        if text is None:  # no snapshot left: the file goes, and its folder when empty
            path.unlink(missing_ok=True)
            if path.parent.is_dir() and not any(path.parent.iterdir()):
                path.parent.rmdir()
            return True
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return True

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        unused = [(state["display"], sorted(state["unused"]), state.get("gone", False))
                  for _, state in sorted(self.files.items()) if state["unused"]]
        if not self.statuses and not unused and not self.problems:
            return
        if not (self.notable or unused or self.written or self.problems) \
                and options.report_detail(self.config) != "full":
            return  # every pin matched: said with -v only (docs/contract.md#terminal)
        terminalreporter.write_sep("=", "elizon snapshots")
        counts = ", ".join(f"{self.statuses[s]} {s}" for s in
                           (snapshots.MATCH, snapshots.NEW, snapshots.CHANGED)
                           if self.statuses[s])
        if counts:
            terminalreporter.write_line(counts)
        hint = "" if self.update else " (run pytest with --elizon-snapshot-update to accept it)"
        shown = sorted(self.notable)
        if terminalreporter.verbosity <= 0 and len(shown) > LISTED:
            shown = shown[:LISTED]
        for nodeid, status, updated in shown:
            said = "written" if updated else ("not written" if self.update else "")
            line = f"{status}: {nodeid}" + (f" — {said}" if said else "")
            failing = status != snapshots.MATCH and not updated
            terminalreporter.write_line(line + (hint if failing and not self.update else ""),
                                        red=failing, green=updated)
        if len(shown) < len(self.notable):
            terminalreporter.write_line(f"… and {len(self.notable) - len(shown)} more (-v "
                                        "lists every one)")
        for display, ids, gone in unused:
            why = "its suite file is gone" if gone else "not used by any case"
            what = "removed" if self.update else f"{why}; --elizon-snapshot-update removes them"
            terminalreporter.write_line(f"unused in {display}: {', '.join(ids)} ({what})",
                                        yellow=True)
        for line in self.written:
            terminalreporter.write_line(f"updated {line}", green=True)
        for problem in self.problems:
            terminalreporter.write_line(f"elizon: {problem}", red=True)
