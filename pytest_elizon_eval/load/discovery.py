"""Which package a file belongs to, and who a case is — read once per session.

A suite file is run with the package whose ``elizon.yaml`` (in a folder above
it) names it, or as a stand-alone suite. :class:`PackageIndex` reads each
manifest and suite file at most once per process (errors are remembered
too), says which package owns a suite, and rebuilds a case's identity from
its node id alone — what the xdist controller needs for a case whose worker
crashed, since the controller never collects items. No pytest import here.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from .. import errors
from ..decide.outcomes import CaseIdentity, SuiteInfo
from ..errors import ElizonError
from ..run.cassette import suite_key
from . import datafiles
from .packages import (
    MANIFEST_NAME,
    LoadedSuite,
    Package,
    SuiteSpec,
    load_manifest,
    load_suite,
    standalone,
)

if TYPE_CHECKING:
    from .suite_cache import SuiteCache

__all__ = ["PackageIndex", "display_path", "matches", "read_once"]


def matches(path: Path, globs: tuple[str, ...]) -> bool:
    """Whether ``path`` is a stand-alone suite by ini ``elizon_suite_files`` (a glob with a
    ``/`` matches the whole path, one without the file name)."""
    return any(fnmatch.fnmatch(path.as_posix() if "/" in g else path.name, g) for g in globs)


def display_path(rootpath: Path, path: Path) -> str:
    """``path`` as node ids and messages show it: relative to the rootdir, with ``/``."""
    try:
        return path.relative_to(rootpath).as_posix()
    except ValueError:
        return path.as_posix()


_K = TypeVar("_K")
_T = TypeVar("_T")


def read_once(cache: dict[_K, _T | ElizonError], key: _K, read: Callable[[], _T]) -> _T:
    """``read()`` once per key; its ElizonError is remembered and raised again too."""
    if key not in cache:
        try:
            cache[key] = read()
        except ElizonError as exc:
            cache[key] = exc
    found = cache[key]
    if isinstance(found, ElizonError):
        raise found
    return found


class PackageIndex:
    """Manifests and suites of a session, each read once."""

    def __init__(self, rootpath: Path, strict: bool, cache: SuiteCache | None = None) -> None:
        self.rootpath = rootpath
        #: ``--elizon-strict``: advisory suites count as must-pass.
        self.strict = strict
        #: Files validated in earlier sessions (None: validate every file, as without one).
        self.cache = cache
        self._packages: dict[Path, Package | ElizonError] = {}
        self._suites: dict[Path, tuple[LoadedSuite, SuiteInfo] | ElizonError] = {}
        self._applications: dict[Path, str | None] = {}

    def application(self, package: Package) -> str | None:
        """The fingerprint of the package's code and version (docs/contract.md#history),
        read once per session."""
        if package.folder not in self._applications:
            from .application import fingerprint  # deferred: only a run with history asks

            self._applications[package.folder] = fingerprint(package.folder, package.version)
        return self._applications[package.folder]

    def advisory(self, spec: SuiteSpec) -> bool:
        """Whether the suite's failures are advisory: its gate says so and the run is not
        ``--elizon-strict``."""
        return spec.gate == "advisory" and not self.strict

    def display(self, path: Path) -> str:
        return display_path(self.rootpath, path)

    def package(self, manifest: Path) -> Package:
        """The package of ``manifest``; its ElizonError if it is invalid."""
        return read_once(self._packages, manifest,
                     lambda: load_manifest(manifest, self.display(manifest), self.cache))

    @staticmethod
    def is_manifest(path: Path) -> bool:
        return path.name == MANIFEST_NAME

    def checked(self, manifest: Path) -> Package:
        """The package of ``manifest``, with every suite it names present."""
        package = self.package(manifest)
        missing = [s for s in package.suites if not s.path.is_file()]
        if missing:
            where = self.display(manifest)
            raise ElizonError(errors.EVALUATION_SUITE_MISSING, [
                f"{self.display(s.path)} (named in {where}:{s.declared_at})"
                for s in missing])
        return package

    def collected_suite(self, path: Path, globs: tuple[str, ...]
                        ) -> tuple[Package, SuiteSpec] | None:
        """What pytest's directory walk collects ``path`` as: a suite of the package that
        names it, a stand-alone suite (``globs``), or nothing (an operator's probe file is
        its manifest's to collect)."""
        if path.suffix not in (".yaml", ".yml") and not datafiles.is_data_file(path):
            return None
        owner = self.owner(path)
        if owner is not None:
            return None if owner[1].probe_source is not None else owner
        if matches(path, globs):
            package = standalone(path)
            return package, package.suites[0]
        return None

    def owner(self, suite: Path) -> tuple[Package, SuiteSpec] | None:
        """The package whose ``elizon.yaml`` (in a folder above ``suite``) names it."""
        resolved = suite.resolve()
        for folder in resolved.parents:
            manifest = folder / MANIFEST_NAME
            if manifest.is_file():
                try:
                    package = self.package(manifest)
                except ElizonError:
                    continue  # reported by the manifest's own collector
                for spec in package.suites:
                    if spec.path == resolved:
                        return package, spec
            if folder == self.rootpath:
                break
        return None

    def manifest_above(self, path: Path) -> Path | None:
        """The nearest ``elizon.yaml`` in a folder above ``path``, up to the rootdir."""
        for folder in path.resolve().parents:
            manifest = folder / MANIFEST_NAME
            if manifest.is_file():
                return manifest
            if folder == self.rootpath:
                break
        return None

    def suite(self, path: Path, package: Package, spec: SuiteSpec
              ) -> tuple[LoadedSuite, SuiteInfo]:
        """A suite file's cases and what its cases share; its ElizonError if invalid."""
        def read() -> tuple[LoadedSuite, SuiteInfo]:
            display = self.display(path)
            loaded = load_suite(path, display, self.cache)
            return loaded, SuiteInfo(
                path=display, package=package.name, gate=spec.gate,
                advisory=self.advisory(spec),
                baseline=spec.baseline, sha256=loaded.sha256,
                key=suite_key(package.name, package.folder, path),
                case_count=len(loaded.cases), content_hash=loaded.content_hash,
                baseline_dataset_hash=spec.baseline_dataset)

        return read_once(self._suites, path, read)

    def identity(self, nodeid: str, standalone: Package | None = None) -> CaseIdentity:
        """Who the case ``nodeid`` is, from the files alone (line 1 and a must-pass suite of
        its own if they cannot be read: the case is still reported)."""
        path_text, _, case_id = nodeid.rpartition("::")
        variant = None
        if case_id.endswith("]") and "[" in case_id:  # case[variant] (docs/format.md#variants)
            case_id, _, variant = case_id[:-1].partition("[")
        path = self.rootpath / path_text
        fallback = CaseIdentity(nodeid, case_id, 1, SuiteInfo(path_text, "", "must-pass",
                                                              False, key=path_text), variant)
        try:
            owner = self.owner(path)
            if owner is None:
                if standalone is None:
                    return fallback
                owner = standalone, standalone.suites[0]
            loaded, info = self.suite(path, *owner)
        except (ElizonError, OSError, ValueError):
            return fallback
        for case, line in zip(loaded.cases, loaded.lines, strict=True):
            if case.id == case_id:
                return CaseIdentity(nodeid, case_id, line, info, variant)
        return CaseIdentity(nodeid, case_id, 1, info, variant)
