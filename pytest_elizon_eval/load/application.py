"""What application a run evaluated: a fingerprint of a package's Python code and version.

The history keys flakiness and trends on it (docs/contract.md#history): a case that failed
before an edit of ``app.py`` and passes after it is not flaky, its application changed.
The fingerprint is the SHA-256 of the manifest's ``version:`` and of every ``.py`` file
under the package's folder (path and bytes, in path order), leaving out hidden folders,
``__pycache__`` and virtual environments, and any ``.py`` that is no regular file (a
pipe, a device, a link out of the folder: docs/cli.md#history). Code outside the
folder (an installed library) is not read: bump ``version:`` when only that changes. A
folder with more than :data:`MAX_FILES` Python files or :data:`MAX_BYTES` of them has no
fingerprint (None): the entry point's name alone is the key, as before. No pytest import
here.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

__all__ = ["MAX_BYTES", "MAX_FILES", "fingerprint"]

#: Beyond these the folder is not an application's own (a repository root, say).
MAX_FILES = 2000
MAX_BYTES = 20 * 1024 * 1024
#: Folders that are never an application's own code.
_SKIPPED = frozenset(("__pycache__", "node_modules", "site-packages", "venv", "env"))


def _python_files(folder: Path) -> list[tuple[Path, Path]] | None:
    """The ``.py`` files under ``folder`` in path order, each with what to open: itself, or
    the regular file within the folder it links to. None past the limits. Whatever else
    is named ``.py`` is left out: a pipe would wait for a writer forever, a device (a link
    to ``/dev/zero``) never end, and a link out of the folder is no code of the package's."""
    found: list[tuple[Path, Path]] = []
    size = 0
    root: Path | None = None
    for current, folders, files in os.walk(folder):
        folders[:] = sorted(f for f in folders if not f.startswith(".") and f not in _SKIPPED
                            and not (Path(current, f) / "pyvenv.cfg").exists())
        for name in files:
            if not name.endswith(".py"):
                continue
            path = opened = Path(current, name)
            try:
                info = os.lstat(path)
                if stat.S_ISLNK(info.st_mode):
                    root = root or folder.resolve()
                    opened = path.resolve()
                    if not opened.is_relative_to(root):
                        continue
                    info = os.stat(opened)
            except (OSError, RuntimeError):  # gone since the walk saw it, a link loop
                continue
            if not stat.S_ISREG(info.st_mode):
                continue
            size += info.st_size
            found.append((path, opened))
            if len(found) > MAX_FILES or size > MAX_BYTES:
                return None
    return sorted(found)


#: Opening never waits (a pipe put in a file's place since the walk is opened, then left),
#: nor follows a link (what is opened is a file, or the file a link resolved to).
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) \
    | getattr(os, "O_BINARY", 0)


def _read(path: Path, limit: int) -> bytes | None:
    """At most ``limit`` + 1 bytes of the regular file ``path`` (more than ``limit``: past
    the limit); None when it cannot be read or is no regular file now."""
    try:
        handle = os.open(path, _OPEN_FLAGS)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            return None
        chunks = []
        left = limit + 1
        while left > 0:
            chunk = os.read(handle, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(handle)


def fingerprint(folder: Path, version: str | None) -> str | None:
    """``code:`` and the first 16 hex digits of the application's SHA-256 (None when the
    folder is past the limits or cannot be read). The bytes read count against
    :data:`MAX_BYTES`, not the sizes the walk saw: a file written to meanwhile is never
    read past it."""
    files = _python_files(folder)
    if files is None:
        return None
    digest = hashlib.sha256(f"version={version}\n".encode())
    left = MAX_BYTES
    for path, opened in files:
        content = _read(opened, left)
        if content is None:
            continue
        if len(content) > left:
            return None
        left -= len(content)
        relative = path.relative_to(folder).as_posix()
        digest.update(f"{relative}\n{len(content)}\n".encode())
        digest.update(content)
    return f"code:{digest.hexdigest()[:16]}"
