"""Benchmark pytest-elizon-eval against the plain-pytest floor, and print the ratios.

The floor is what a team would write without the plugin: one parametrized
Python test over the same YAML file (loaded with PyYAML's libyaml loader),
doing the same checks against the same fake entry point. Every figure is a
ratio against it, measured in fresh subprocesses on this machine:

0. the fixed cost: a run of one case, start to exit (best of at least 5);
1. collection of N = 1,000 / 10,000 / 50,000 cases (wall and peak RSS);
2. per-case overhead: a full run of 10,000 cases whose entry point returns at once;
3. 200 cases whose entry point sleeps 50 ms, at --elizon-concurrency 1, 4, 16, 64,
   against the ideal N·L/C plus the floor's fixed cost;
4. the same with -n 2 and concurrency 16 (ideal: N·L/(2·16), plus the floor's fixed
   cost under -n 2, which includes starting the workers).

Usage: python benchmarks/run.py [--quick] [--repeat K]
Numbers are printed, never asserted; the script fails only if a run fails.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

APP = '''
import time

DELAY = {delay!r}

def answer(request):
    if DELAY:
        time.sleep(DELAY)
    return "Priority: routine. " + request
'''

FLOOR_TEST = '''
import pathlib, sys

import pytest
import yaml

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from app import answer  # noqa: E402

CASES = yaml.load(pathlib.Path(__file__).with_name("suite.yaml").read_text(),
                  Loader=yaml.CSafeLoader)["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_case(case):
    output = answer(**case["input"])
    for wanted in case["expect"]["contains"]:
        assert wanted.casefold() in output.casefold()
    for unwanted in case["expect"]["notContains"]:
        assert unwanted.casefold() not in output.casefold()
'''


def suite_yaml(n: int) -> str:
    lines = ["cases:"]
    for i in range(n):
        lines += [
            f"  - id: case-{i:06d}",
            f"    description: Synthetic case number {i}.",
            "    input:",
            f"      request: Please look at ticket {i} about the conveyor belt.",
            "    expect:",
            "      contains: [routine]",
            "      notContains: [immediate]",
        ]
    return "\n".join(lines) + "\n"


def make_tree(root: Path, n: int, delay_s: float) -> tuple[Path, Path]:
    """(plugin package dir, floor dir), both over the same suite file and app."""
    plugin = root / f"plugin-{n}-{delay_s}"
    floor = root / f"floor-{n}-{delay_s}"
    text = suite_yaml(n)
    for folder in (plugin, floor):
        (folder / "eval").mkdir(parents=True, exist_ok=True)
        (folder / "app.py").write_text(APP.format(delay=delay_s))
    (plugin / "eval" / "suite.yaml").write_text(text)
    (floor / "suite.yaml").write_text(text)
    (plugin / "elizon.yaml").write_text(textwrap.dedent("""
        name: bench
        entry: app:answer
        evaluation:
          suite: ./eval/suite.yaml
    """).lstrip())
    (floor / "test_floor.py").write_text(FLOOR_TEST)
    return plugin, floor


#: Children cache bytecode like a user's machine does, even where the parent was told not
#: to (PYTHONDONTWRITEBYTECODE would make every run recompile pytest and pydantic).
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def measured(args: list[str], cwd: Path, repeat: int) -> tuple[float, float]:
    """The best wall time over ``repeat`` runs (after one warm-up), with its peak RSS."""
    run_with_rss(args, cwd)  # warm-up: bytecode caches, file system caches
    best: tuple[float, float] | None = None
    for _ in range(repeat):
        wall, rss = run_with_rss(args, cwd)
        if best is None or wall < best[0]:
            best = (wall, rss)
    assert best is not None
    return best


def paired(plugin_args: list[str], plugin: Path, floor_args: list[str], floor: Path,
           repeat: int) -> tuple[tuple[float, float], tuple[float, float]]:
    """Best (wall, RSS) of the plugin and of the floor, their runs interleaved so that a
    noisy machine's slow spells hit both alike."""
    run_with_rss(plugin_args, plugin)
    run_with_rss(floor_args, floor)
    plugin_runs, floor_runs = [], []
    for _ in range(repeat):
        plugin_runs.append(run_with_rss(plugin_args, plugin))
        floor_runs.append(run_with_rss(floor_args, floor))
    return min(plugin_runs), min(floor_runs)


def run_with_rss(args: list[str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one pytest run in a fresh process."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, env=CHILD_ENV)
    assert process.stdout is not None
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.stdout.write(output.decode(errors="replace")[-3000:])
        raise SystemExit(f"benchmark run failed ({code}): {' '.join(command)} in {cwd}")
    return wall, usage.ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, one run each")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (best is kept)")
    options = parser.parse_args()
    repeat = 1 if options.quick else options.repeat
    sizes = [1_000, 10_000] if options.quick else [1_000, 10_000, 50_000]
    root = Path(tempfile.mkdtemp(prefix="elizon-bench-"))
    rows: list[tuple[str, str, str, str]] = []
    try:
        print(f"# pytest-elizon-eval benchmark ({os.cpu_count()} cores, "
              f"Python {sys.version.split()[0]})\n")
        # 0. fixed cost: one case, start to exit (the plugin's start-up counts against it)
        plugin, floor = make_tree(root, 1, 0.0)
        (p_wall, _), (f_wall, _) = paired([], plugin, ["-p", "no:elizon_eval"], floor,
                                          max(repeat, 5))
        rows.append(("run 1 case (fixed cost)", f"{p_wall:.3f} s", f"{f_wall:.3f} s",
                     f"{p_wall / f_wall:.2f}x"))
        # 1. collection
        for n in sizes:
            plugin, floor = make_tree(root, n, 0.0)
            (p_wall, p_rss), (f_wall, f_rss) = paired(
                ["--collect-only"], plugin, ["--collect-only", "-p", "no:elizon_eval"], floor,
                repeat)
            rows.append((f"collect {n:,} cases", f"{p_wall:.2f} s / {p_rss:.0f} MiB",
                         f"{f_wall:.2f} s / {f_rss:.0f} MiB",
                         f"wall {p_wall / f_wall:.2f}x, RSS {p_rss / f_rss:.2f}x"))
        # 2. per-case overhead
        n = 2_000 if options.quick else 10_000
        plugin, floor = make_tree(root, n, 0.0)
        (p_wall, _), (f_wall, _) = paired([], plugin, ["-p", "no:elizon_eval"], floor, repeat)
        rows.append((f"run {n:,} cases, L = 0", f"{p_wall:.2f} s", f"{f_wall:.2f} s",
                     f"{p_wall / f_wall:.2f}x"))
        # 3. and 4. concurrency
        n, delay = 200, 0.050
        plugin, floor = make_tree(root, n, delay)
        _, zero_floor = make_tree(root, n, 0.0)
        fixed, _ = measured(["-p", "no:elizon_eval"], zero_floor, repeat)
        serial_floor, _ = measured(["-p", "no:elizon_eval"], floor, 1)
        rows.append((f"floor: {n} cases, L = 50 ms, serial", "", f"{serial_floor:.2f} s",
                     f"fixed cost {fixed:.2f} s"))
        for concurrency in (1, 4, 16, 64):
            wall, _ = measured([f"--elizon-concurrency={concurrency}"], plugin, repeat)
            ideal = n * delay / concurrency
            rows.append((f"{n} cases, L = 50 ms, concurrency {concurrency}", f"{wall:.2f} s",
                         f"ideal {ideal:.2f} s + {fixed:.2f} s",
                         f"{wall / ideal:.2f}x ideal, {wall / (ideal + fixed):.2f}x ideal+fixed"))
        # With -n 2 the fixed cost includes starting the xdist workers: the floor's own.
        fixed_xdist, _ = measured(["-p", "no:elizon_eval", "-n", "2"], zero_floor, repeat)
        wall, _ = measured(["-n", "2", "--elizon-concurrency=16"], plugin, repeat)
        ideal = n * delay / 32
        rows.append((f"{n} cases, L = 50 ms, -n 2 + concurrency 16", f"{wall:.2f} s",
                     f"ideal {ideal:.2f} s + {fixed_xdist:.2f} s (-n 2)",
                     f"{wall / ideal:.2f}x ideal, {wall / (ideal + fixed_xdist):.2f}x "
                     "ideal+fixed"))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("| measurement | plugin | plain-pytest floor | ratio |")
    print("|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
