"""The ``elizon-eval dataset hash`` verb (docs/cli.md#dataset-hash).

Prints, per suite file (or data file) of a package, its path, the package's version, its
number of cases and its content hash (docs/format.md#dataset-hash): what an author writes
as ``authorBaseline.datasetHash``, and what a run records in its results' provenance. The
parser entries are added to :mod:`.cli`'s by :func:`add_parser`; this module keeps the
work, and imports the loader only when the verb runs. No pytest import here.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .load.packages import Package

__all__ = ["DatasetTrouble", "add_parser", "hash_package", "run"]


class DatasetTrouble(Exception):
    """A path or file that cannot be used: the command's error lines, exit status 2."""


class _Out(Protocol):
    def line(self, text: str = "", markup: dict[str, bool] | None = None) -> None: ...


def add_parser(verbs: Any, run: Callable[[argparse.Namespace, Any], int]) -> None:
    """Add ``dataset hash`` to ``verbs`` (the command's sub-parsers); ``run`` is what the
    command calls for it (the command turns :class:`DatasetTrouble` into its exit 2)."""
    p = verbs.add_parser("dataset", help="datasets pinned by content: dataset hash PACKAGE",
                         description="The cases of a package's suites as datasets.")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    q = actions.add_parser(
        "hash", help="each suite's case count and content hash",
        description="Print, per suite file of the package, its path, the package's version, "
                    "its number of cases and its content hash: sha256 of the cases' canonical "
                    "JSON as written (defaults left out) sorted by id, the same whatever their "
                    "order in the file. Write it as "
                    "authorBaseline.datasetHash to pin the cases a baseline was measured on.")
    q.add_argument("package", metavar="PACKAGE",
                   help="the package folder, its elizon.yaml, or one suite or data file")
    q.add_argument("--json", action="store_true", help="print the package and its suites as JSON")
    q.set_defaults(run=run)


def _display(path: Path) -> str:
    """``path`` as the command shows it: relative to the current folder when inside it, as
    results files name suites when pytest runs from there."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _package(given: str) -> Package:
    """The package ``given`` names (a folder, its manifest, or one stand-alone suite file);
    DatasetTrouble when there is none there or it is not valid."""
    # deferred: the command's other verbs start without the loader
    from .errors import ElizonError
    from .load import datafiles
    from .load.packages import MANIFEST_NAME, load_manifest, standalone

    path = Path(given)
    if not path.exists():
        raise DatasetTrouble(f"{given}: no such file or folder")
    if path.is_dir():
        path = path / MANIFEST_NAME
        if not path.is_file():
            raise DatasetTrouble(f"{given}: not a package (no {MANIFEST_NAME} in it)")
    if path.name != MANIFEST_NAME:
        if path.suffix.lower() not in (".yaml", ".yml") and not datafiles.is_data_file(path):
            raise DatasetTrouble(f"{given}: not a package, an {MANIFEST_NAME}, or a suite or "
                                 "data file (.yaml, .yml, .jsonl, .json, .csv)")
        return standalone(path.resolve())
    try:
        return load_manifest(path.resolve(), _display(path))
    except ElizonError as exc:
        raise DatasetTrouble(_one_line(exc)) from None


def _one_line(exc: Exception) -> str:
    """An ElizonError's problems on the one line the command's error is: each still starts
    with its code, so a CI log search finds it."""
    return "; ".join(getattr(exc, "lines", None) or [str(exc)])


def hash_package(given: str) -> dict[str, Any]:
    """The package ``given`` names and, per suite file, its dataset record: ``name`` (the
    path), ``version`` (the package's), ``case_count`` and ``content_hash`` — the record
    results files keep in ``provenance.packages[].datasets``. DatasetTrouble for a path
    that is not a package or a file that is not valid."""
    # deferred: the command's other verbs start without the loader
    from . import errors
    from .errors import ElizonError
    from .load.packages import load_suite

    package = _package(given)
    datasets: list[dict[str, Any]] = []
    probes: list[str] = []
    for spec in package.suites:
        if spec.probe_source is not None:  # the plugin's cases, not the package's
            probes.append(spec.probe_source)
            continue
        name = _display(spec.path)
        if not spec.path.is_file():
            where = f" (named in {_display(package.manifest)}:{spec.declared_at})" \
                if package.manifest is not None else ""
            raise DatasetTrouble(f"{errors.EVALUATION_SUITE_MISSING}: {name}{where}")
        try:
            loaded = load_suite(spec.path, name)
        except ElizonError as exc:
            raise DatasetTrouble(_one_line(exc)) from None
        datasets.append({"name": name, "version": package.version,
                         "case_count": len(loaded.cases), "content_hash": loaded.content_hash})
    return {"package": package.name, "version": package.version,
            "manifest": _display(package.manifest) if package.manifest is not None else None,
            "datasets": datasets, "probes_not_hashed": sorted(set(probes))}


def run(args: argparse.Namespace, out: _Out) -> int:
    """``elizon-eval dataset hash PACKAGE [--json]``; the exit status (0)."""
    from .text import visible  # deferred: with the verb's other imports

    found = hash_package(args.package)
    if args.json:
        out.line(json.dumps(found, ensure_ascii=False, indent=2))
        return 0
    where = found["manifest"] or "a stand-alone suite"
    out.line(visible(f"package {found['package']} ({where})", keep_newlines=False),
             {"bold": True})
    rows = [(visible(d["name"], keep_newlines=False),
             "no version" if d["version"] is None else
             visible(f"version {d['version']}", keep_newlines=False),
             f"{d['case_count']:,} case{'s' if d['case_count'] != 1 else ''}",
             d["content_hash"] or "no hash (a case cannot be written as JSON)")
            for d in found["datasets"]]
    widths = [max((len(row[i]) for row in rows), default=0) for i in range(3)]
    for name, version, count, content in rows:
        out.line(f"  {name.ljust(widths[0])}  {version.ljust(widths[1])}  "
                 f"{count.rjust(widths[2])}  {content}")
    if not rows:
        out.line("  no suite files")
    for source in found["probes_not_hashed"]:
        out.line(f"  {visible(source, keep_newlines=False)}: the probe pack's cases, not "
                 "hashed")
    return 0
