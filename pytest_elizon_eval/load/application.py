"""What application a run evaluated: a fingerprint of a package's Python code and version.

The history keys flakiness and trends on it (docs/contract.md#history): a case that failed
before an edit of ``app.py`` and passes after it is not flaky, its application changed.
The fingerprint is the SHA-256 of the manifest's ``version:`` and of every ``.py`` file
under the package's folder (path and bytes, in path order), leaving out hidden folders,
``__pycache__`` and virtual environments. Code outside the folder (an installed library)
is not read: bump ``version:`` when only that changes. A folder with more than
:data:`MAX_FILES` Python files or :data:`MAX_BYTES` of them has no fingerprint (None): the
entry point's name alone is the key, as before. No pytest import here.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

__all__ = ["MAX_BYTES", "MAX_FILES", "fingerprint"]

#: Beyond these the folder is not an application's own (a repository root, say).
MAX_FILES = 2000
MAX_BYTES = 20 * 1024 * 1024
#: Folders that are never an application's own code.
_SKIPPED = frozenset(("__pycache__", "node_modules", "site-packages", "venv", "env"))


def _python_files(folder: Path) -> list[Path] | None:
    """The ``.py`` files under ``folder`` in path order; None past the limits."""
    found: list[Path] = []
    size = 0
    for current, folders, files in os.walk(folder):
        folders[:] = sorted(f for f in folders if not f.startswith(".") and f not in _SKIPPED
                            and not (Path(current, f) / "pyvenv.cfg").exists())
        for name in files:
            if name.endswith(".py"):
                path = Path(current, name)
                try:
                    size += path.stat().st_size
                except OSError:
                    continue  # gone since the walk saw it: not part of what runs
                found.append(path)
                if len(found) > MAX_FILES or size > MAX_BYTES:
                    return None
    return sorted(found)


def fingerprint(folder: Path, version: str | None) -> str | None:
    """``code:`` and the first 16 hex digits of the application's SHA-256 (None when the
    folder is past the limits or cannot be read)."""
    files = _python_files(folder)
    if files is None:
        return None
    digest = hashlib.sha256(f"version={version}\n".encode())
    for path in files:
        try:
            content = path.read_bytes()
        except OSError:
            continue
        relative = path.relative_to(folder).as_posix()
        digest.update(f"{relative}\n{len(content)}\n".encode())
        digest.update(content)
    return f"code:{digest.hexdigest()[:16]}"
