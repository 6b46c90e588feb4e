"""Writes the report files a run asked for, each once, from the one aggregate.

Each file is written on its own: one that cannot be written (a missing
permission, a full disk) is named in the list of failures and the others
are still written.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..cassette import Cassette
from ..options import Settings
from . import junit, markdown, results
from .aggregate import Aggregate
from .regression import Regression

__all__ = ["write_all", "write_cassette"]


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # backslashreplace writes a lone surrogate as \udXXX: a valid escape in JSON, and
    # junit/markdown text has none left (they are made visible before).
    path.write_bytes(text.encode("utf-8", "backslashreplace"))


def _append_summary(path: Path, aggregate: Aggregate, regression: Regression | None) -> None:
    used = path.stat().st_size if path.exists() else 0
    text = markdown.render(aggregate, regression, limit=max(markdown.LIMIT_BYTES - used, 4096))
    with path.open("a", encoding="utf-8", errors="backslashreplace") as fh:
        fh.write(text)  # appended, never overwritten: other steps' summaries stay


def write_all(aggregate: Aggregate, regression: Regression | None, settings: Settings,
              recordings: list[dict[str, Any]]) -> tuple[list[tuple[str, Path]], list[str]]:
    """Write every requested file: (kind, path) of each written, and a line for each that
    could not be written."""
    jobs: list[tuple[str, Path | None, Callable[[Path], None]]] = [
        ("JUnit XML", settings.junit, lambda p: _write(p, junit.render(aggregate))),
        ("results JSON", settings.results, lambda p: _write(p, json.dumps(
            results.build(aggregate, regression), ensure_ascii=False, indent=2) + "\n")),
        ("markdown summary", settings.markdown,
         lambda p: _write(p, markdown.render(aggregate, regression))),
        ("step summary", settings.step_summary,
         lambda p: _append_summary(p, aggregate, regression)),
        ("cassette", settings.record, lambda p: write_cassette(p, recordings)),
    ]
    written: list[tuple[str, Path]] = []
    failed: list[str] = []
    for kind, path, write in jobs:
        if path is None:
            continue
        try:
            write(path)
        except OSError as exc:
            failed.append(f"cannot write the {kind} {path}: {exc.strerror or exc}")
        else:
            written.append((kind, path))
    return written, failed


def write_cassette(path: Path, recordings: list[dict[str, Any]]) -> None:
    """Merge this run's recordings into the cassette at ``path`` (other cases stay)."""
    try:
        cassette = Cassette.load(path) if path.exists() else Cassette()
    except ValueError:
        cassette = Cassette()  # not a cassette: replaced by one
    cassette.update(recordings)
    _write(path, cassette.dump())
