"""The per-case cost as instructions, counted by valgrind's callgrind: a figure that
does not move with the machine's load, for telling two commits apart on a shared
machine whose wall-clock figures move by a fifth from minute to minute.

The same trees as benchmarks/run.py (one case, and N instant cases); each is run once to
warm its caches (bytecode, the suite cache), then once under callgrind, the plugin's and
the floor's (``-p no:elizon_eval``) alike. The per-case figure is
(instructions(N) - instructions(1)) / (N - 1); its ratio is the plugin's per-case
instructions over the floor's. Instructions are not time (a cache miss costs more than
an add), so this complements the wall-clock goal of benchmarks/run.py, it does not
replace it. The store's background writer is a second thread: its instructions count.

Usage: python benchmarks/instructions.py [--cases N] [--python PATH]
Needs valgrind (Debian: ``apt-get install valgrind``); about 3 minutes for N = 300.
Numbers are printed, never asserted.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import CHILD_ENV, make_tree  # this folder's own script

_REFS = re.compile(rb"I\s+refs:\s+([\d,]+)")


def instructions(python: str, cwd: Path, *args: str) -> int:
    """Instructions of one pytest run under callgrind, after one run that warms caches."""
    command = [python, "-m", "pytest", "-q", *args]
    subprocess.run(command, cwd=cwd, env=CHILD_ENV, check=True, capture_output=True)
    counted = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                              *command], cwd=cwd, env=CHILD_ENV, capture_output=True)
    if counted.returncode != 0:
        sys.stdout.write(counted.stdout.decode(errors="replace")[-3000:])
        raise SystemExit(f"the run under callgrind failed in {cwd}")
    found = _REFS.search(counted.stderr)
    if found is None:
        raise SystemExit("callgrind printed no instruction count")
    return int(found.group(1).replace(b",", b""))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=300, help="N (default 300)")
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter whose environment is measured")
    options = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    many = max(options.cases, 2)
    root = Path(tempfile.mkdtemp(prefix="elizon-instructions-"))
    try:
        one_plugin, one_floor = make_tree(root, 1, 0.0)
        many_plugin, many_floor = make_tree(root, many, 0.0)
        plugin = [instructions(options.python, one_plugin),
                  instructions(options.python, many_plugin)]
        floor = [instructions(options.python, one_floor, "-p", "no:elizon_eval"),
                 instructions(options.python, many_floor, "-p", "no:elizon_eval")]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    per_plugin = (plugin[1] - plugin[0]) / (many - 1)
    per_floor = (floor[1] - floor[0]) / (many - 1)
    print(f"# instructions (callgrind), 1 and {many:,} instant cases\n")
    print("| run | plugin | plain-pytest floor | ratio |")
    print("|---|---|---|---|")
    print(f"| one case | {plugin[0] / 1e6:,.0f} M | {floor[0] / 1e6:,.0f} M | "
          f"{plugin[0] / floor[0]:.2f}× |")
    print(f"| per case | {per_plugin / 1e6:.2f} M | {per_floor / 1e6:.2f} M | "
          f"{per_plugin / per_floor:.2f}× |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
