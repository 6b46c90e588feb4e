"""A real PostgreSQL server in a temporary folder on a loopback port, for the history
store's tests and benchmark (docs/development.md#postgresql).

Debian's ``initdb`` and ``pg_ctl`` are found on PATH or under
``/usr/lib/postgresql/*/bin``. ``initdb`` refuses to run as root, so as root both run as
Debian's ``postgres`` user through ``runuser``, in a folder that user owns (made outside
root's private temporary folders). Where none of that can be had, :class:`Unavailable`
says why.
"""

from __future__ import annotations

import glob
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["Unavailable", "free_port", "running"]


class Unavailable(Exception):
    """No PostgreSQL server can be started here; the message says why."""


def _binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
                        key=lambda p: [int(x) for x in re.findall(r"\d+", p)])
    return candidates[-1] if candidates else None


def free_port() -> int:
    """A loopback port nothing listens on (now)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def running() -> Iterator[str]:
    """Start a server; yield ``postgresql://elizon:secret-pw@127.0.0.1:PORT`` (trust
    authentication: the password is there to show that messages never print it)."""
    initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    if initdb is None or pg_ctl is None:
        raise Unavailable("PostgreSQL's initdb and pg_ctl are not installed (Debian: apt-get "
                          "install postgresql; .ci/run does)")
    as_user: list[str] = []
    owner: pwd.struct_passwd | None = None
    if os.geteuid() == 0:
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            raise Unavailable("running as root, where initdb refuses to run, and there is no "
                              "postgres user to run it as") from None
        runuser = shutil.which("runuser")
        if runuser is None:
            raise Unavailable("running as root, where initdb refuses to run, and there is no "
                              "runuser to run it as postgres")
        as_user = [runuser, "-u", "postgres", "--"]
    folder = Path(tempfile.mkdtemp(prefix="elizon-pg-"))
    if owner is not None:
        os.chown(folder, owner.pw_uid, owner.pw_gid)
    data, port = folder / "data", free_port()
    try:
        made = subprocess.run([*as_user, initdb, "-D", str(data), "-U", "elizon",
                               "--auth=trust", "-E", "UTF8", "--no-sync"],
                              capture_output=True, text=True)
        if made.returncode:
            raise Unavailable(f"initdb failed: {made.stderr.strip()[-300:]}")
        started = subprocess.run([*as_user, pg_ctl, "-D", str(data), "-l",
                                  str(folder / "log"), "-w", "-o",
                                  f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 "
                                  "-c fsync=off", "start"], capture_output=True, text=True)
        if started.returncode:
            log = (folder / "log").read_text(errors="replace") if (folder / "log").exists() \
                else started.stderr
            raise Unavailable(f"pg_ctl start failed: {log.strip()[-300:]}")
        yield f"postgresql://elizon:secret-pw@127.0.0.1:{port}"
    finally:
        subprocess.run([*as_user, pg_ctl, "-D", str(data), "-m", "immediate", "stop"],
                       capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)
