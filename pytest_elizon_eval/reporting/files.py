"""Writes the report files a run asked for, each once, from the one aggregate."""

from __future__ import annotations

import json
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


def write_all(aggregate: Aggregate, regression: Regression | None, settings: Settings
              ) -> list[tuple[str, Path]]:
    """Write every requested file; return (kind, path) of each, for the terminal."""
    written: list[tuple[str, Path]] = []
    if settings.junit is not None:
        _write(settings.junit, junit.render(aggregate))
        written.append(("JUnit XML", settings.junit))
    if settings.results is not None:
        data = results.build(aggregate, regression)
        _write(settings.results, json.dumps(data, ensure_ascii=False, indent=2) + "\n")
        written.append(("results JSON", settings.results))
    if settings.markdown is not None:
        _write(settings.markdown, markdown.render(aggregate, regression))
        written.append(("markdown summary", settings.markdown))
    if settings.step_summary is not None:
        used = settings.step_summary.stat().st_size if settings.step_summary.exists() else 0
        text = markdown.render(aggregate, regression,
                               limit=max(markdown.LIMIT_BYTES - used, 4096))
        with settings.step_summary.open("a", encoding="utf-8", errors="backslashreplace") as fh:
            fh.write(text)  # appended, never overwritten: other steps' summaries stay
        written.append(("step summary", settings.step_summary))
    return written


def write_cassette(path: Path, recordings: list[dict[str, Any]]) -> None:
    """Merge this run's recordings into the cassette at ``path`` (other cases stay)."""
    try:
        cassette = Cassette.load(path) if path.exists() else Cassette()
    except ValueError:
        cassette = Cassette()  # not a cassette: replaced by one
    cassette.update(recordings)
    _write(path, cassette.dump())
