"""The validated suite cache: files validated in an earlier session, loaded without pydantic.

A manifest or suite file whose bytes were validated before is read back from
``.pytest_cache/d/elizon/suites/`` (pytest's cache dir) instead of being parsed and
validated again (docs/contract.md#suite-cache). Each file has one entry (named by its
path, so an edit replaces it), good only for what shapes what loading produces from the
file: its bytes (SHA-256), how it is read (YAML or which data-file format, by its
suffix), what kind of file it is, the plugin's version and the source of the modules that
load and validate (so an edited checkout never reads an entry its old code wrote). What
a file refers to by path (suites, alignment labels, the probe pack) is not part of an
entry: those are read and checked every session.

Only files that loaded without a problem are stored: a file with any error is validated,
and its error reported, exactly as in a session without the cache. Any entry that cannot
be read back as this version's (missing, truncated, corrupt, written by another version,
unreadable) is a miss, never an error. Entries are written to a temporary file and
renamed into place, so xdist workers reading and writing at once never see a torn one.

Entries are pickles of the plugin's own plain classes (:mod:`.runtime`): the fastest way
back to those objects, and trusted like ``__pycache__`` is — a file in the project's own
cache folder that only this plugin writes. No pytest import here.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from functools import cache
from pathlib import Path
from typing import Any, Protocol

__all__ = ["CACHE_NAME", "SuiteCache", "for_pytest_cache"]

#: The plugin's folder under pytest's cache dir (``.pytest_cache/d/``); entries are in
#: its ``suites`` folder.
CACHE_NAME = "elizon"

#: Modules whose code shapes what loading a file produces, besides this folder's.
_LOADING_CODE = ("run/checks.py", "run/answer_parts.py", "run/chat_body.py",
                 "redteam/probe_names.py", "redteam/pack.py", "redteam/probe_model.py")


class _PytestCache(Protocol):
    def mkdir(self, name: str) -> Path: ...


@cache
def _code_version() -> str:
    """The plugin's version and the size and mtime of the loading code: an entry is only
    good for the code that wrote it (an editable install changes code, not version)."""
    from .. import __version__  # deferred: the package's own metadata, read once

    package = Path(__file__).resolve().parent.parent
    files = sorted((package / "load").glob("*.py")) + [package / p for p in _LOADING_CODE]
    parts = [__version__, f"pickle{pickle.HIGHEST_PROTOCOL}"]
    for path in files:
        try:
            status = path.stat()
        except OSError:
            continue
        parts.append(f"{path.name}:{status.st_size}:{status.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


class SuiteCache:
    """Validated files in one folder: one entry per file, for its latest content."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def entry(self, kind: str, path: Path) -> Path:
        """Where the entry of a file is: one per file, so an edit replaces it."""
        name = hashlib.sha256(f"{kind}\0{path.resolve()}".encode()).hexdigest()
        return self.folder / f"{name[:32]}.pickle"

    @staticmethod
    def key(kind: str, path: Path, raw: bytes) -> bytes:
        """What an entry is good for: the file's kind and reader (its suffix), its bytes,
        this plugin version's loading code; the first line of the entry."""
        text = f"{kind}\0{path.suffix.lower()}\0{hashlib.sha256(raw).hexdigest()}\0" \
               f"{_code_version()}"
        return hashlib.sha256(text.encode()).hexdigest().encode() + b"\n"

    def get(self, kind: str, path: Path, raw: bytes) -> Any | None:
        """What was stored for the file with these bytes, or None when there is nothing
        this code can use."""
        key = self.key(kind, path, raw)
        try:
            data = self.entry(kind, path).read_bytes()
            if not data.startswith(key):
                return None
            return pickle.loads(data[len(key):])
        except Exception:
            return None

    def put(self, kind: str, path: Path, raw: bytes, value: Any) -> None:
        """Store ``value`` as what the file with these bytes loads as: written aside, then
        renamed into place (atomic, so a concurrent reader sees the old entry or the new)."""
        try:
            key = self.key(kind, path, raw)
            handle, temporary = tempfile.mkstemp(dir=self.folder, prefix=".", suffix=".tmp")
            try:
                with os.fdopen(handle, "wb") as file:
                    file.write(key)
                    pickler = pickle.Pickler(file, pickle.HIGHEST_PROTOCOL)
                    # No memo: remembering every object written would cost more memory than
                    # the suite itself (the data holds no cycles; shared values are copied).
                    pickler.fast = True
                    pickler.dump(value)
                os.replace(temporary, self.entry(kind, path))
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        except Exception:
            pass


def for_pytest_cache(pytest_cache: _PytestCache | None) -> SuiteCache | None:
    """The suite cache in pytest's cache dir (``config.cache``, ``.pytest_cache/d/elizon/
    suites``); None without one (``-p no:cacheprovider``) or when it cannot be made."""
    if pytest_cache is None:
        return None
    try:
        folder = pytest_cache.mkdir(CACHE_NAME) / "suites"
        folder.mkdir(exist_ok=True)
    except OSError:
        return None
    return SuiteCache(folder)
