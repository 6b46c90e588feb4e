"""What application a run evaluated: a fingerprint of a package's code, prompts and version.

The history keys flakiness and trends on it, and ``--elizon-resume`` takes a stored case
only under the same one (docs/contract.md#history, docs/contract.md#resume): a case that
failed before an edit of ``app.py`` (or of ``prompts/support.yaml``) and passes after it is
not flaky, its application changed. The fingerprint is the SHA-256 of the manifest's
``version:``, of every ``.py`` file under the package's folder, then of every prompt file
(``prompts/*.yaml``, as the registry reads them: docs/format.md#prompts), each by path and
bytes in path order. Left out: hidden folders and files, ``__pycache__`` and virtual
environments, and any file that is no regular file (a pipe, a device, a link out of the
folder: docs/cli.md#history). Code outside the folder (an installed library) is not read:
bump ``version:`` when only that changes. A folder with more than :data:`MAX_FILES` such
files or :data:`MAX_BYTES` of them has no fingerprint (None): the entry point's name alone
is the key, as before. A package without prompt files has the fingerprint it had before
prompts counted. No pytest import here.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from .prompts import PROMPTS_FOLDER

__all__ = ["MAX_BYTES", "MAX_FILES", "fingerprint"]

#: Beyond these the folder is not an application's own (a repository root, say).
MAX_FILES = 2000
MAX_BYTES = 20 * 1024 * 1024
#: Folders that are never an application's own code.
_SKIPPED = frozenset(("__pycache__", "node_modules", "site-packages", "venv", "env"))


def _regular(path: Path, root: Path) -> tuple[Path, int] | None:
    """What to open for ``path``, with its size: itself, or the regular file within
    ``root`` (the package folder, resolved) it links to; None for anything else. A pipe
    would wait for a writer forever, a device (a link to ``/dev/zero``) never end, and a
    link out of the folder is none of the package's."""
    try:
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            opened = path.resolve()
            if not opened.is_relative_to(root):
                return None
            info = os.stat(opened)
            path = opened
    except (OSError, RuntimeError):  # gone since it was listed, a link loop
        return None
    return (path, info.st_size) if stat.S_ISREG(info.st_mode) else None


def _python_files(folder: Path) -> list[tuple[Path, Path]] | None:
    """The ``.py`` files under ``folder`` in path order, each with what to open
    (:func:`_regular`). None past the limits."""
    found: list[tuple[Path, Path]] = []
    size = 0
    root: Path | None = None
    for current, folders, files in os.walk(folder):
        folders[:] = sorted(f for f in folders if not f.startswith(".") and f not in _SKIPPED
                            and not (Path(current, f) / "pyvenv.cfg").exists())
        for name in files:
            if not name.endswith(".py"):
                continue
            path = Path(current, name)
            root = root or folder.resolve()
            regular = _regular(path, root)
            if regular is None:
                continue
            size += regular[1]
            found.append((path, regular[0]))
            if len(found) > MAX_FILES or size > MAX_BYTES:
                return None
    return sorted(found)


def _prompt_files(folder: Path) -> list[tuple[Path, Path]] | None:
    """The package's prompt files (``prompts/*.yaml``, hidden ones left out, as the
    registry reads them: docs/format.md#prompts) in name order, each named under the
    ``prompts`` folder as the package names it (a linked folder by the link's name) and
    with what to open (:func:`_regular`). A ``prompts`` folder that resolves outside the
    package is none of its own (the registry refuses it): no files. None past
    :data:`MAX_FILES` names."""
    prompts = folder / PROMPTS_FOLDER
    if not prompts.exists():
        return []
    try:
        root = folder.resolve()
        if not prompts.resolve().is_relative_to(root) or not prompts.is_dir():
            return []
        names = []
        with os.scandir(prompts) as entries:
            for entry in entries:
                if entry.name.endswith(".yaml") and not entry.name.startswith("."):
                    names.append(entry.name)
                    if len(names) > MAX_FILES:
                        return None
    except (OSError, RuntimeError):  # unreadable, a link loop: no prompts to read
        return []
    found = []
    for name in sorted(names):
        path = prompts / name
        regular = _regular(path, root)
        if regular is not None:  # its bytes are counted as they are read
            found.append((path, regular[0]))
    return found


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
    prompts = _prompt_files(folder)
    if prompts is None or len(files) + len(prompts) > MAX_FILES:
        return None
    digest = hashlib.sha256(f"version={version}\n".encode())
    left = MAX_BYTES
    # after the code, so a package without prompts keeps the fingerprint it had; a prompt's
    # path ends in .yaml, never a code file's, so the two cannot read alike
    for path, opened in [*files, *prompts]:
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
