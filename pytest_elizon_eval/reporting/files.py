"""Writes the report files a run asked for, each once, from the one aggregate.

Each file is written on its own: one that cannot be written (a missing
permission, a full disk, a value its writer cannot render) is named in the
list of failures and the others are still written.
"""

from __future__ import annotations

import itertools
import os
import secrets
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..decide.results_data import CaseResult
from ..decide.wording import outcome_name
from ..run.cassette import Cassette

if TYPE_CHECKING:  # types only: each writer is imported when its file is asked for
    from ..collect.options import Settings
    from ..history.queries import History
    from .aggregate import Aggregate
    from .regression import Regression

__all__ = ["write_all", "write_cassette"]


class _NotWritten(Exception):
    """A file that depends on another one that could not be written."""


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink():  # replaced, never written through: a planted link cannot redirect
        path.unlink()      # a report outside where it was asked for
    # backslashreplace writes a lone surrogate as \udXXX: a valid escape in JSON, and
    # junit/markdown text has none left (they are made visible before).
    path.write_bytes(text.encode("utf-8", "backslashreplace"))


def _write_chunks(path: Path, chunks: Iterable[str]) -> None:
    """``chunks`` written as they come into a new file beside ``path``, then moved over it:
    a report of 100,000 cases is never one string in memory, and a reader (or a crash
    half-way) never sees half a file. A link at ``path`` is replaced, never written
    through, as :func:`_write` does."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # the name cut short: a target's name near the file system's limit still gets one
    temp = path.with_name(f".{path.name[:120]}.{secrets.token_hex(6)}.tmp")
    # O_EXCL: never through a file or link someone placed there; 0o666 less the umask, as
    # a file written in place would get
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        # backslashreplace as in _write; newline="": "\n" written as it is on every OS
        with open(fd, "w", encoding="utf-8", errors="backslashreplace", newline="") as fh:
            for chunk in chunks:
                fh.write(chunk)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def _append_summary(path: Path, aggregate: Aggregate, regression: Regression | None) -> None:
    from . import markdown  # deferred: costs import time on every run, needed by few

    used = path.stat().st_size if path.exists() else 0
    text = markdown.render(aggregate, regression, limit=max(markdown.LIMIT_BYTES - used, 4096))
    with path.open("a", encoding="utf-8", errors="backslashreplace") as fh:
        fh.write(text)  # appended, never overwritten: other steps' summaries stay


def write_all(aggregate: Aggregate, regression: Regression | None, settings: Settings,
              recordings: list[dict[str, Any]], provenance: Mapping[str, Any] | None = None,
              canary: str | None = None, history: History | None = None,
              entry_models: Iterable[str] = ()
              ) -> tuple[list[tuple[str, Path]], list[str]]:
    """Write every requested file: (kind, path) of each written, and a line for each that
    could not be written. ``entry_models``: the models the run's ``output: openai`` entry
    points ask for (the attestation names them with those the answers named)."""
    # the results as written (each suite's cases made again when walked): the signature
    # covers exactly their canonical form
    document: list[dict[str, Any]] = []

    def write_junit(path: Path) -> None:
        from . import junit  # deferred: costs import time on every run, needed by few

        _write(path, junit.render(aggregate, regression))

    def write_results(path: Path) -> None:
        from . import results  # deferred: costs import time on every run, needed by few

        data = results.stream(aggregate, regression, provenance=provenance)
        _write_chunks(path, itertools.chain(results.chunks(data), ["\n"]))
        document.append(data)

    def write_signature(path: Path) -> None:
        from ..trust import signing  # loaded already: the settings hold a signing key
        from . import results  # loaded already: the results file was written

        if not document:
            raise _NotWritten("the results file it signs was not written")
        if settings.sign_key is not None:
            cases = signing.CaseDigests()

            def digest(text: str) -> None:
                # each case's canonical text, as the signed bytes are made: no third walk
                cases.add(text.encode("utf-8", "surrogatepass"))

            signed = settings.sign_key.sign_canonical(
                (chunk.encode("utf-8", "surrogatepass")
                 for chunk in results.chunks(document[0], canonical=True, on_case=digest)),
                cases)
            _write(path, signing.signature_file(signed))

    def write_attestation(path: Path) -> None:
        from ..trust import attestation  # deferred: only a run asked to attest its cases

        if settings.attestation_secret is None:  # resolve() never leaves the path without it
            raise _NotWritten("no shared secret to key it with")
        # node-id order: a serial run and an xdist run of the same cases chain alike
        ordered = sorted((r for s in aggregate.suites() for r in s.results),
                         key=lambda r: r.nodeid)
        models = set(entry_models)
        for result in ordered:  # and those the answers named
            model = result.usage.model if result.usage is not None else None
            if model:
                models.add(model)
        suites = [{"path": s.info.path, "gate": s.info.gate, "advisory": s.info.advisory,
                   "sha256": s.info.sha256, "content_hash": s.info.content_hash}
                  for s in aggregate.suites()]
        _write_chunks(path, attestation.lines((_as_filed(r) for r in ordered), len(ordered),
                                              settings.attestation_secret,
                                              provenance=provenance, suites=suites,
                                              models=models))

    def write_markdown(path: Path) -> None:
        from . import markdown  # deferred: costs import time on every run, needed by few

        _write(path, markdown.render(aggregate, regression))

    def write_html(path: Path) -> None:
        from . import html  # deferred: costs import time on every run, needed by few

        _write_chunks(path, html.chunks(aggregate, regression, history=history))

    signature: Path | None = None
    if settings.results is not None and settings.sign_key is not None:
        from ..trust import signing  # loaded already: the settings hold a signing key

        signature = signing.signature_path(settings.results)
    jobs: list[tuple[str, Path | None, Callable[[Path], None]]] = [
        ("JUnit XML", settings.junit, write_junit),
        ("results JSON", settings.results, write_results),
        ("results signature", signature, write_signature),
        ("markdown summary", settings.markdown, write_markdown),
        ("HTML report", settings.html, write_html),
        ("step summary", settings.step_summary,
         lambda p: _append_summary(p, aggregate, regression)),
        ("cassette", settings.record, lambda p: write_cassette(p, recordings, canary)),
        ("attestation", settings.attestation, write_attestation),
    ]
    written: list[tuple[str, Path]] = []
    failed: list[str] = []
    for kind, path, write in jobs:
        if path is None:
            continue
        try:
            write(path)
        except _NotWritten as exc:
            failed.append(f"cannot write the {kind} {path}: {exc}")
        except OSError as exc:
            failed.append(f"cannot write the {kind} {path}: {exc.strerror or exc}")
        except Exception as exc:  # a value no writer foresaw costs that file, never the others
            failed.append(f"cannot write the {kind} {path}: {type(exc).__name__}: {exc} "
                          "(a bug in pytest-elizon-eval: please report it)")
        else:
            written.append((kind, path))
    return written, failed


def _as_filed(result: CaseResult) -> dict[str, Any]:
    """A case's data with its outcome named as the results file names it (advisory_failed…),
    so the attestation's record and the file's case agree (docs/contract.md#attestations)."""
    data = result.to_data()
    data["outcome"] = outcome_name(result)
    return data


def write_cassette(path: Path, recordings: list[dict[str, Any]], canary: str | None = None
                   ) -> None:
    """Merge this run's recordings into the cassette at ``path`` (other cases stay), with
    the canary they were made with."""
    try:
        cassette = Cassette.load(path) if path.exists() else Cassette()
    except ValueError:
        cassette = Cassette()  # not a cassette: replaced by one
    cassette.update(recordings)
    if canary is not None:
        cassette.canary = canary
    _write(path, cassette.dump())
