"""Benchmark pytest-elizon-eval against the plain-pytest floor: each goal of
docs/performance.md as a ratio, with its target and ✅/❌.

The floor is what a team would write without the plugin: one parametrized Python
test over the same YAML file (PyYAML's libyaml loader) doing the same checks against
the same fake entry point, run with ``-p no:elizon_eval`` so the plugin's own start-up
counts against the plugin. Every figure comes from fresh subprocesses; plugin and floor
runs are interleaved (a noisy machine's slow spells hit both alike) and the best of K
is kept.

Goals (docs/performance.md#measured-figures):
- warm start: a run of one case in a tree whose suite is in the suite cache;
- cold start: the same with ``.pytest_cache`` and ``.elizon`` removed before each run;
- ``pytest --collect-only -q`` of the example packages (what an IDE runs on every save),
  warm, against the floor's ``--collect-only`` of the same folders;
- per case: the marginal wall time of a case whose entry point returns at once,
  (wall(N) - wall(1)) / (N - 1), serially;
- replay: N recorded cases answered from a cassette (``--elizon-replay``) against the
  floor's run of the same N checks;
- concurrency: N cases whose entry point sleeps 50 ms at ``--elizon-concurrency`` 64 and
  16, against the ideal max(N·L/C, N × the floor's per-case cost) + the floor's fixed cost
  (one process cannot beat its own CPU), that fixed cost measured by the floor's one-case
  runs interleaved with these;
- memory: peak RSS of collecting many cases against the floor's, and of a run writing the
  results JSON and the HTML page against the same run without them (benchmarks/memory.py).

Usage: python benchmarks/run.py [--quick] [--repeat K] [--python PATH]
Run it with an interpreter whose environment holds only ``pip install -e .``: test-only
packages (hypothesis, pytest-html, SDKs) register pytest plugins that every pytest start
pays for, the floor's too. Numbers are printed, never asserted; the script fails only if
a run fails.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

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

#: pytest plugins a plain ``pip install -e .`` brings (ours, xdist's, and anyio's, which
#: comes with httpx); any other one is a start-up cost the user's CI would not pay.
OWN_PLUGINS = {"elizon_eval", "xdist", "xdist.looponfail", "anyio"}


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
CHILD_ENV = {k: v for k, v in os.environ.items()
             if k not in ("PYTHONDONTWRITEBYTECODE", "PYTEST_ADDOPTS",
                          "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_PLUGINS")}


@dataclass(frozen=True)
class Run:
    """One pytest command: its folder, its arguments, what to clear before it."""

    cwd: Path
    args: tuple[str, ...]
    clear: tuple[str, ...] = ()  # folders under cwd removed before each run (a cold start)
    codes: tuple[int, ...] = (0,)  # exit codes that count as success

    def once(self, python: str) -> tuple[float, float]:
        """(wall seconds, peak RSS MiB) of one run in a fresh process."""
        for name in self.clear:
            shutil.rmtree(self.cwd / name, ignore_errors=True)
        command = [python, "-m", "pytest", "-q", *self.args]
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=self.cwd, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, env=CHILD_ENV)
        assert process.stdout is not None
        output = process.stdout.read()
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        code = os.waitstatus_to_exitcode(status)
        if code not in self.codes:
            sys.stdout.write(output.decode(errors="replace")[-3000:])
            raise SystemExit(f"benchmark run failed ({code}): {' '.join(command)} "
                             f"in {self.cwd}")
        return wall, usage.ru_maxrss / 1024


def plugin_run(cwd: Path, *args: str, clear: tuple[str, ...] = ()) -> Run:
    return Run(cwd, args, clear)


def floor_run(cwd: Path, *args: str, clear: tuple[str, ...] = (),
              codes: tuple[int, ...] = (0,)) -> Run:
    return Run(cwd, ("-p", "no:elizon_eval", *args), clear, codes)


def paired(plugin: Run, floor: Run, repeat: int, python: str
           ) -> tuple[tuple[float, float], tuple[float, float]]:
    """Best (wall, RSS) of the plugin and of the floor after one warm-up run of each
    (bytecode, the suite cache, the file system's cache), their runs interleaved."""
    plugin.once(python)
    floor.once(python)
    plugin_runs, floor_runs = [], []
    for _ in range(repeat):
        plugin_runs.append(plugin.once(python))
        floor_runs.append(floor.once(python))
    return min(plugin_runs), min(floor_runs)


@dataclass
class Goal:
    name: str
    plugin: str
    floor: str
    ratio: float
    target: float

    @property
    def met(self) -> bool:
        return self.ratio <= self.target

    def row(self) -> str:
        mark = "✅" if self.met else "❌"
        return (f"| {self.name} | {self.plugin} | {self.floor} | {self.ratio:.2f}× | "
                f"≤ {self.target:.2f}× | {mark} |")


def seconds(value: float) -> str:
    return f"{value:.3f} s" if value < 1 else f"{value:.2f} s"


def foreign_plugins(python: str) -> list[str]:
    """pytest11 plugins in ``python``'s environment beyond ours and xdist's."""
    script = ("import importlib.metadata as m; print('\\n'.join(e.name for e in "
              "m.entry_points(group='pytest11')))")
    names = subprocess.run([python, "-c", script], capture_output=True, text=True,
                           check=True).stdout.split()
    return sorted(set(names) - OWN_PLUGINS)


def copy_examples(root: Path) -> Path:
    target = root / "example_suites"
    shutil.copytree(ROOT / "example_suites", target, ignore=shutil.ignore_patterns(
        "__pycache__", ".pytest_cache", ".elizon", "*.pyc"))
    return target.parent


def memory_goals(n: int, python: str) -> list[Goal]:
    """The writing of the results JSON and the HTML page of an n-case run, measured by
    benchmarks/memory.py."""
    path = Path(__file__).with_name("memory.py")
    spec = importlib.util.spec_from_file_location("elizon_bench_memory", path)
    if spec is None or spec.loader is None or not path.exists():
        return []
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    figures = module.measure(n, python)
    with_reports, without = figures["rss_with_reports_mib"], figures["rss_without_reports_mib"]
    html_mb = figures["html_mb"]
    return [
        Goal(f"peak RSS of a {n:,}-case run writing results JSON "
             f"({figures['json_mb']:.1f} MB) and HTML", f"{with_reports:.0f} MiB",
             f"{without:.0f} MiB without those reports", with_reports / without, 1.10),
        Goal(f"HTML page of {n:,} cases", f"{html_mb:.1f} MB", "10 MB", html_mb / 10, 1.0),
    ]


def step(text: str) -> None:
    """Progress, on stderr: the table on stdout stays clean to paste."""
    print(f"… {text}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="smaller sizes (about 3 minutes instead of about 10)")
    parser.add_argument("--repeat", type=int, default=5,
                        help="interleaved runs per figure; the best is kept (default 5)")
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter whose environment is measured")
    options = parser.parse_args(argv)
    python, repeat = options.python, max(options.repeat, 1)
    quick = options.quick
    many = 2_000 if quick else 10_000
    concurrent = 500 if quick else 2_000
    collected = 20_000 if quick else 100_000
    root = Path(tempfile.mkdtemp(prefix="elizon-bench-"))
    goals: list[Goal] = []
    notes: list[str] = []
    print(f"# pytest-elizon-eval benchmark ({os.cpu_count()} cores, Python "
          f"{sys.version.split()[0]}, {'quick' if quick else 'full'}, best of {repeat})\n")
    extra = foreign_plugins(python)
    if extra:
        print(f"⚠ this environment registers other pytest plugins ({', '.join(extra)}); "
              "every start pays for them. Measure in a virtualenv holding only "
              "`pip install -e .`.\n")
    try:
        one_plugin, one_floor = make_tree(root, 1, 0.0)
        step("warm start")
        (p_warm, _), (f_warm, _) = paired(plugin_run(one_plugin), floor_run(one_floor),
                                          max(repeat, 7), python)
        goals.append(Goal("warm start: run 1 case", seconds(p_warm), seconds(f_warm),
                          p_warm / f_warm, 1.15))
        step("cold start")
        cold = (".pytest_cache", ".elizon")
        (p_cold, _), (f_cold, _) = paired(plugin_run(one_plugin, clear=cold),
                                          floor_run(one_floor, clear=cold),
                                          max(repeat, 7), python)
        goals.append(Goal("cold start: run 1 case, no caches", seconds(p_cold),
                          seconds(f_cold), p_cold / f_cold, 1.25))
        step("--collect-only of the example packages")
        examples = copy_examples(root / "examples")
        (p_ide, _), (f_ide, _) = paired(
            plugin_run(examples, "--collect-only", "example_suites"),
            floor_run(examples, "--collect-only", "example_suites", codes=(0, 5)),
            max(repeat, 7), python)
        goals.append(Goal("`pytest --collect-only -q example_suites`, warm", seconds(p_ide),
                          seconds(f_ide), p_ide / f_ide, 1.15))
        step(f"per case: {many:,} instant cases")
        plugin_many, floor_many = make_tree(root, many, 0.0)
        (p_many, _), (f_many, _) = paired(plugin_run(plugin_many), floor_run(floor_many),
                                          repeat, python)
        p_case = (p_many - p_warm) / (many - 1)
        f_case = (f_many - f_warm) / (many - 1)
        goals.append(Goal(f"per case ({many:,} instant cases, serial)",
                          f"{p_case * 1000:.3f} ms", f"{f_case * 1000:.3f} ms",
                          p_case / f_case, 1.30))
        step(f"replay of {many:,} recorded cases")
        cassette = root / "cassette.json"
        plugin_run(plugin_many, f"--elizon-record={cassette}").once(python)
        (p_replay, _), (f_replay, _) = paired(
            plugin_run(plugin_many, f"--elizon-replay={cassette}"), floor_run(floor_many),
            repeat, python)
        goals.append(Goal(f"replay {many:,} recorded cases", seconds(p_replay),
                          seconds(f_replay), p_replay / f_replay, 1.15))
        delay = 0.050
        plugin_slow, _ = make_tree(root, concurrent, delay)
        for width, target in ((64, 1.25), (16, 1.15)):
            step(f"{concurrent:,} cases × 50 ms at concurrency {width}")
            # the floor's fixed cost is measured between these runs too: a slow spell of
            # the machine then raises the ideal with the run it slows
            (wall, _), (f_fixed, _) = paired(
                plugin_run(plugin_slow, f"--elizon-concurrency={width}"),
                floor_run(one_floor), repeat, python)
            ideal = max(concurrent * delay / width, concurrent * f_case) + f_fixed
            goals.append(Goal(f"{concurrent:,} cases × 50 ms at concurrency {width}",
                              seconds(wall), f"ideal {seconds(ideal)}", wall / ideal, target))
        step(f"collect {collected:,} cases")
        plugin_big, floor_big = make_tree(root, collected, 0.0)
        (p_wall, p_rss), (f_wall, f_rss) = paired(plugin_run(plugin_big, "--collect-only"),
                                                  floor_run(floor_big, "--collect-only"),
                                                  1, python)
        goals.append(Goal(f"peak RSS collecting {collected:,} cases", f"{p_rss:.0f} MiB",
                          f"{f_rss:.0f} MiB", p_rss / f_rss, 1.0))
        notes.append(f"collecting {collected:,} cases took {seconds(p_wall)} "
                     f"(floor {seconds(f_wall)}, {p_wall / f_wall:.2f}×)")
        step(f"writing the reports of {collected:,} cases")
        written = memory_goals(collected, python)
        if written:
            goals.extend(written)
        else:
            notes.append("benchmarks/memory.py is missing: report writing not measured")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("| goal | plugin | plain-pytest floor | ratio | target | met |")
    print("|---|---|---|---|---|---|")
    for goal in goals:
        print(goal.row())
    for note in notes:
        print(f"\n{note}")
    met = sum(goal.met for goal in goals)
    print(f"\n{met} of {len(goals)} goals met.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
