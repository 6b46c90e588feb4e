"""What a results file says about how it was made: its ``provenance`` section.

Owns docs/contract.md#provenance: when the run started and ended; the
plugin, pytest and Python versions; the Elizon options of the command line
(entry points and judges as their descriptions, never header or
environment values, and a URL's user name and password never); and per package its
name and version, the manifest's
SHA-256, the entry points the cases were given to (their descriptions, as
every report shows them), its suites with the dataset each one's cases are (name,
version, case count, content hash: docs/format.md#dataset-hash) and, when the package
sits in a git work tree, the commit and whether the package's files differ from it.

Also merges the provenance of the shards of a CI matrix into one. No pytest
import here: :mod:`.plugin` passes in what only pytest knows.
"""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the plugin's side only: elizon-eval merges provenance without them
    from ..bind.binding import Kind
    from ..load.discovery import PackageIndex
    from ..load.packages import Package
from .. import __version__
from ..errors import ElizonError
from ..reporting.aggregate import Aggregate
from ..text import without_userinfo

__all__ = ["command_options", "entry_models", "git_state", "merge", "now", "packages",
           "record"]

#: A git that does not answer within this is treated as absent.
_GIT_TIMEOUT_S = 10.0
#: Option values that are not worth recording (the option was not given).
_DEFAULTS = (None, False, "auto")
#: Options for which ``auto`` is a choice made, not the default (``--elizon-concurrency``
#: defaults to 1 and adapts only when asked to).
_AUTO_CHOSEN = frozenset({"elizon_concurrency"})


def now() -> str:
    """The current time as results files write it (ISO 8601, UTC, seconds)."""
    global _last_now
    second = int(time.time())
    if second != _last_now[0]:  # asked for every case: written once a second
        _last_now = (second, datetime.fromtimestamp(second, timezone.utc).isoformat())
    return _last_now[1]


_last_now: tuple[int, str] = (-1, "")


def plugin_version() -> str:
    return __version__


def _describe(raw: str, kind: Kind) -> str:
    """An entry or judge option as its description: the spec, the command or the URL —
    never the headers or environment it names."""
    # deferred: elizon-eval starts without the binding stack
    from ..bind.binding import parse_text
    from ..bind.entries import HttpEntry, ProcessEntry
    from ..bind.judging import EndpointJudge
    from ..load.runtime import CommandEntry, JudgeEndpoint, UrlEntry

    try:
        value = parse_text(raw, kind)
    except ValueError:
        return "(not a valid spec)"
    # each kind says what it is called, as in every other report
    if isinstance(value, CommandEntry):
        return ProcessEntry.describe(value)
    if isinstance(value, UrlEntry):
        return HttpEntry.describe(value)
    if isinstance(value, JudgeEndpoint):
        return EndpointJudge.describe(value)
    return str(value)  # a module:attribute spec, described as written


def command_options(values: Mapping[str, object]) -> dict[str, str | bool]:
    """The ``--elizon-*`` options given (``values``: option destinations to values, as pytest
    parsed them), by option name; those left at their defaults are left out."""
    from ..bind.binding import ENTRY, JUDGE  # deferred: only the plugin describes options

    described = {"elizon_entry": ENTRY, "elizon_judge": JUDGE}
    out: dict[str, str | bool] = {}
    for dest in sorted(values):
        value = values[dest]
        if not dest.startswith("elizon_") or (
                any(value is d or value == d for d in _DEFAULTS)
                and not (dest in _AUTO_CHOSEN and value == "auto")):
            continue
        name = "--" + dest.replace("_", "-")
        if dest in described:
            out[name] = _describe(str(value), described[dest])
        elif isinstance(value, bool):
            out[name] = value
        elif dest == "elizon_history":  # the store, not its login (libpq's ?password= too)
            from ..history.store import describe  # deferred: only a named store needs it

            out[name] = describe(str(value))
        else:
            out[name] = without_userinfo(str(value))
    return out


def _git(folder: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            # core.fsmonitor off: git status never runs a hook the package's repo configures.
            ["git", "-c", "core.fsmonitor=false", *args], cwd=folder, capture_output=True,
            text=True, timeout=_GIT_TIMEOUT_S, check=False,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"})
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return done.stdout if done.returncode == 0 else None


def git_state(folder: Path) -> dict[str, Any] | None:
    """``{"commit", "dirty"}`` of the git work tree ``folder`` is in (commit None before the
    first commit; dirty: a file of the folder differs from it or is untracked), or None."""
    inside = _git(folder, "rev-parse", "--is-inside-work-tree")
    if inside is None or inside.strip() != "true":
        return None
    head = _git(folder, "rev-parse", "--verify", "--quiet", "HEAD")
    status = _git(folder, "status", "--porcelain", "--untracked-files=normal", "--", ".")
    return {"commit": head.strip() if head else None,
            "dirty": True if status is None else bool(status.strip())}


class GitLookahead:
    """:func:`git_state` of the run's package folders, asked in a background thread while
    the cases run: up to three git processes per folder would otherwise be started, one
    after the other, when the session ends (docs/performance.md#measured-figures)."""

    def __init__(self, folders: Iterable[Path]) -> None:
        self._folders = sorted(set(folders))
        self._states: dict[Path, dict[str, Any] | None] = {}
        self._done = threading.Event()
        threading.Thread(target=self._ask, name="elizon-git", daemon=True).start()

    def _ask(self) -> None:
        try:
            for folder in self._folders:
                self._states[folder] = git_state(folder) if folder.is_dir() else None
        finally:
            self._done.set()

    def state(self, folder: Path) -> dict[str, Any] | None:
        """The folder's state, as :func:`git_state` says it (asked now if it was not)."""
        # each git call is bounded by its own timeout: the thread ends
        if self._done.wait(_GIT_TIMEOUT_S * 3 * max(len(self._folders), 1)) \
                and folder in self._states:
            return self._states[folder]
        return git_state(folder) if folder.is_dir() else None


def _manifest_sha256(path: Path) -> str | None:
    """The manifest's SHA-256, None if it cannot be read now."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _owner(index: PackageIndex, suite_path: str) -> Package | None:
    """The package a suite of the run (as results name it) belongs to, None for a
    stand-alone suite or one that cannot be read now."""
    from ..load.packages import MANIFEST_NAME  # deferred: elizon-eval starts without the loader

    # A probe pack's suite is named after the manifest that includes it
    # (``pkg/elizon.yaml::elizon:probes/…``): that manifest is its package's.
    path = index.rootpath / suite_path.split("::", 1)[0]
    try:
        if path.name == MANIFEST_NAME:
            return index.package(path)
        found_owner = index.owner(path)
        return found_owner[0] if found_owner else None
    except (OSError, ValueError, ElizonError):
        return None


def entry_models(aggregate: Aggregate, index: PackageIndex, cli: object, ini: object
                 ) -> list[str]:
    """The models the run's ``output: openai`` entry points ask for (``model:``): the
    command line's entry (``cli``, as checked) if it is one, else each package's
    manifest entry, else the ini's (``ini``). An ``elizon_entry`` fixture's is not known
    here; its answers name their model."""
    from ..load.runtime import UrlEntry  # deferred: elizon-eval starts without the loader

    found: set[str] = set()
    for path in {summary.info.path for summary in aggregate.suites()}:
        owner = _owner(index, path)
        entry = cli if cli is not None else (
            owner.entry if owner is not None and owner.entry is not None else ini)
        output = entry.output if isinstance(entry, UrlEntry) and entry.output else (
            owner.output if owner is not None else "text")
        if isinstance(entry, UrlEntry) and output == "openai" and entry.model:
            found.add(entry.model)
    return sorted(found)


def packages(aggregate: Aggregate, index: PackageIndex,
             lookahead: GitLookahead | None = None) -> list[dict[str, Any]]:
    """One record per package the run's suites belong to, in suite-path order; the git
    states from ``lookahead`` where it asked for them."""
    found: dict[str, dict[str, Any]] = {}
    git_cache: dict[Path, dict[str, Any] | None] = {}
    for summary in aggregate.suites():
        info = summary.info
        path = index.rootpath / info.path.split("::", 1)[0]
        owner = _owner(index, info.path)
        manifest = owner.manifest if owner else None
        folder = owner.folder if owner else path.parent
        key = str(manifest) if manifest else f"{info.package}:{info.path}"
        record = found.get(key)
        if record is None:
            # the version as validated when collected (a string: the format says so)
            sha = _manifest_sha256(manifest) if manifest else None
            version = owner.version if owner else None
            if folder not in git_cache:
                git_cache[folder] = lookahead.state(folder) if lookahead is not None \
                    else git_state(folder) if folder.is_dir() else None
            record = found[key] = {
                "name": owner.name if owner else info.package,
                "version": version,
                "manifest": index.display(manifest) if manifest else None,
                "manifest_sha256": sha,
                "entries": [],
                "suites": [],
                "git": git_cache[folder],
            }
        record["suites"].append(info.path)
        if info.content_hash is not None and info.case_count is not None:
            # what each case says was hashed once, when its file was validated: nothing is
            # read again here (the xdist controller never loads the suites)
            record.setdefault("datasets", []).append(
                {"name": info.path, "version": record["version"],
                 "case_count": info.case_count, "content_hash": info.content_hash})
        record["entries"] = sorted({*record["entries"],
                                    *(r.entry for r in summary.results if r.entry)})
        record["judges"] = sorted({*record.get("judges", ()),
                                   *(j.judge for r in summary.results for j in r.judges)})
        rendered = {(p.name, p.version, p.sha256) for r in summary.results
                    for p in r.prompts or ()}
        if rendered:  # docs/format.md#prompts: which prompt texts this run scored
            known = {(p["name"], p["version"], p["sha256"]) for p in record.get("prompts", ())}
            record["prompts"] = [{"name": n, "version": v, "sha256": h}
                                 for n, v, h in sorted(known | rendered)]
    return list(found.values())


def record(*, started: str, finished: str, pytest_version: str,
           options: Mapping[str, str | bool], package_records: Sequence[Mapping[str, Any]]
           ) -> dict[str, Any]:
    """The ``provenance`` section of a results file."""
    return {
        "started": started,
        "finished": finished,
        "plugin": plugin_version(),
        "pytest": pytest_version,
        "python": platform.python_version(),
        "options": dict(options),
        "packages": [dict(p) for p in package_records],
    }


def _joined(values: Iterable[str]) -> str:
    return ", ".join(sorted(set(values))) or "unknown"


def _merged_datasets(old: Iterable[Mapping[str, Any]], new: Iterable[Mapping[str, Any]],
                     package: str, old_file: str, new_file: str) -> list[dict[str, Any]]:
    """Two shards' dataset records of one package, joined by suite (in suite order); a
    suite whose cases hash differently in the two raises ValueError."""
    joined = {d["name"]: dict(d) for d in old}
    for dataset in new:
        known = joined.get(dataset["name"])
        if known is not None and known["content_hash"] != dataset["content_hash"]:
            raise ValueError(f"package {package!r}: the cases of {dataset['name']} differ "
                             f"between {old_file} ({known['content_hash']}) and {new_file} "
                             f"({dataset['content_hash']}); the shards ran different "
                             "datasets")
        joined.setdefault(dataset["name"], dict(dataset))
    return [joined[name] for name in sorted(joined)]


def merge(shards: Sequence[tuple[str, str, Mapping[str, Any] | None]]) -> dict[str, Any]:
    """One provenance from the shards' (file, document sha256, provenance or None).

    Raises ValueError when the shards ran different packages: a manifest whose SHA-256
    or a git commit that differs between shards.
    """
    known = [(name, sha, p) for name, sha, p in shards if p is not None]
    packages_by_key: dict[str, dict[str, Any]] = {}
    seen_in: dict[str, str] = {}
    for name, _, prov in known:
        for package in prov["packages"]:
            key = package["manifest"] or f"{package['name']}:{','.join(package['suites'])}"
            current = packages_by_key.get(key)
            if current is None:
                packages_by_key[key] = {**package, "entries": list(package["entries"]),
                                        "suites": list(package["suites"])}
                seen_in[key] = name
                continue
            for field, what in (("manifest_sha256", "manifest SHA-256"), ("version", "version")):
                if current[field] != package[field]:
                    raise ValueError(f"package {package['name']!r}: its {what} differs between "
                                     f"{seen_in[key]} and {name}; the shards ran different "
                                     "packages")
            old_git, new_git = current["git"], package["git"]
            if old_git and new_git and old_git["commit"] != new_git["commit"]:
                raise ValueError(f"package {package['name']!r}: git commit "
                                 f"{old_git['commit']} in {seen_in[key]}, {new_git['commit']} in "
                                 f"{name}; the shards ran different code")
            if old_git and new_git:
                current["git"] = {"commit": old_git["commit"],
                                  "dirty": bool(old_git["dirty"] or new_git["dirty"])}
            current["entries"] = sorted({*current["entries"], *package["entries"]})
            current["judges"] = sorted({*current.get("judges", ()), *package.get("judges", ())})
            prompts = {(p["name"], p["version"], p["sha256"])
                       for p in (*current.get("prompts", ()), *package.get("prompts", ()))}
            if prompts:  # every prompt text either shard's cases rendered
                current["prompts"] = [{"name": n, "version": v, "sha256": h}
                                      for n, v, h in sorted(prompts)]
            current["suites"] = sorted({*current["suites"], *package["suites"]})
            datasets = _merged_datasets(current.get("datasets", ()), package.get("datasets", ()),
                                        package["name"], seen_in[key], name)
            if datasets:
                current["datasets"] = datasets
    common: dict[str, str | bool] = {}
    if known:
        first = known[0][2]["options"]
        common = {k: v for k, v in first.items()
                  if all(p["options"].get(k) == v for _, _, p in known)}
    return {
        "started": min((p["started"] for _, _, p in known), default=now()),
        "finished": max((p["finished"] for _, _, p in known), default=now()),
        "plugin": _joined(p["plugin"] for _, _, p in known),
        "pytest": _joined(p["pytest"] for _, _, p in known),
        "python": _joined(p["python"] for _, _, p in known),
        "options": common,
        "packages": sorted(packages_by_key.values(), key=lambda p: p["suites"][0]
                           if p["suites"] else ""),
        "merged_from": [
            {"file": name, "document_sha256": sha,
             "started": p["started"] if p else None, "finished": p["finished"] if p else None,
             "options": dict(p["options"]) if p else {}}
            for name, sha, p in shards],
    }
