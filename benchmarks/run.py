"""Benchmark pytest-elizon-eval against the plain-pytest floor: each goal of
docs/performance.md as a ratio, with its target and ✅/❌.

The floor is what a team would write without the plugin: one parametrized Python test
over the same YAML file (PyYAML's libyaml loader) doing the same checks against the same
fake entry point, run with ``-p no:elizon_eval`` so the plugin's own start-up counts
against the plugin. Every figure comes from fresh subprocesses.

How a timing goal is measured: after one warm-up run of each command (bytecode, the
suite cache, the file system's cache), ``--pairs`` N (default 11, at least 11) pairs.
In a pair the plugin's runs and the floor's run back to back, the plugin's first in the
1st, 3rd, … pair and the floor's first in the others, so a noisy machine's slow spell
hits both sides of a pair alike and neither side always runs first. Each pair gives one
ratio; the goal's ratio is the **median** of the N per-pair ratios, printed with their
spread (min–max) and the median absolute figures of the plugin and the floor, and ✅/❌
compares the median with the target. Never the best of K: a best-of keeps the one run the
machine happened to be fast for. The peak-RSS goals are the exception: one run of each
after a warm-up (RSS does not move with the machine's load), shown as 1 pair, no spread.

Goals (docs/performance.md#measured-figures):
- warm start: a run of one case in a tree whose suite is in the suite cache;
- cold start: the same with ``.pytest_cache`` and ``.elizon`` removed before each run;
- ``pytest --collect-only -q`` of the example packages (what an IDE runs on every save),
  warm, against the floor's ``--collect-only`` of the same folders;
- per case: the marginal wall time of a case whose entry point returns at once,
  (wall(N) - wall(1)) / (N - 1), serially; a pair is the plugin's N-case and one-case
  runs and the floor's, its ratio the plugin's marginal cost over the floor's;
- replay: N recorded cases answered from a cassette (``--elizon-replay``) against the
  floor's run of the same N checks;
- concurrency: N cases whose entry point sleeps 50 ms at ``--elizon-concurrency`` 64 and
  16, against the ideal max(N·L/C, N × the floor's per-case cost) + the floor's fixed cost
  (one process cannot beat its own CPU). Each pair's ideal comes from that pair's floor
  runs: the floor's one-case run (its fixed cost) and its run of the same N cases with an
  instant entry point (its per-case cost, (wall(N) - wall(1)) / (N - 1));
- variants: N cases × V variants (docs/format.md#variants) whose entry point sleeps 50 ms,
  at ``--elizon-concurrency`` C, take about N·V/C latency slots: the plugin's wall time
  less its own one-case run's (its fixed cost, so the ratio is the slots alone), against
  N·V·L/C. The one-case run stands where the floor stands in the other goals: the two
  runs of a pair alternate which goes first;
- memory: peak RSS of collecting many cases against the floor's, and of a run writing the
  results JSON and the HTML page against the same run without them (benchmarks/memory.py).
  Peak RSS does not move with the machine's load, so these stay one run each after a
  warm-up (and collecting 100,000 cases takes about a minute a pair); their rows say
  1 pair and show no spread.

Sizes and time on a 2-core machine: the full run is 10,000 cases for per case and replay,
2,000 for concurrency, 24 × 3 for variants and 100,000 for memory, about 20–30 minutes at
11 pairs (per case and replay about 5 minutes each, memory about 7, variants half a
minute). ``--quick`` is 2,000, 500, 24 × 3 and 20,000 cases and 3 pairs by default, about
3 minutes: a smoke test of the script whose figures are not reportable, and it says so.

Usage: python benchmarks/run.py [--quick] [--pairs N] [--python PATH] [--json PATH]
[--only GOAL ...]
``--only`` measures only the goals named (warm, cold, collect, per-case, replay,
concurrency, variants, memory; repeatable), at the sizes and pairs of a full or quick run.
``--json PATH`` writes every goal's median, min and max ratio, the plugin's and the
floor's medians, the per-pair figures and the pair count, for the docs to take figures
from a file. Progress goes to stderr, the table to stdout. Run it with an interpreter
whose environment holds only ``pip install -e .``: test-only packages (hypothesis,
pytest-html, SDKs) register pytest plugins that every pytest start pays for, the floor's
too. Numbers are printed, never asserted; the script fails only if a run fails.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


VARIANT_APP = '''
import time

def answer(request, model):
    time.sleep({delay!r})
    return "Priority: routine. " + request + " (" + model + ")"
'''


def make_variant_tree(root: Path, n: int, variants: int, delay_s: float) -> Path:
    """A package of ``n`` cases and ``variants`` variants, each passing its own ``model``
    to an entry point that sleeps ``delay_s`` (docs/format.md#variants)."""
    plugin = root / f"variants-{n}x{variants}-{delay_s}"
    (plugin / "eval").mkdir(parents=True, exist_ok=True)
    (plugin / "app.py").write_text(VARIANT_APP.format(delay=delay_s))
    (plugin / "eval" / "suite.yaml").write_text(suite_yaml(n))
    declared = "".join(f"  - name: v{i}\n    params: {{model: m{i}}}\n"
                       for i in range(variants))
    (plugin / "elizon.yaml").write_text("name: bench\nentry: app:answer\nvariants:\n"
                                        f"{declared}evaluation:\n  suite: ./eval/suite.yaml\n")
    return plugin


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


#: Pairs a reportable run needs (the project's standard for a speed figure).
MIN_PAIRS = 11
#: Pairs of a ``--quick`` run unless ``--pairs`` says otherwise.
QUICK_PAIRS = 3

#: (wall seconds, peak RSS MiB) of each run of one side of a pair, in the order given.
Side = tuple[tuple[float, float], ...]
#: A pair's (plugin figure, reference figure) from its plugin side and its floor side.
Figures = Callable[[Side, Side], tuple[float, float]]


def walls(plugin: Side, floor: Side) -> tuple[float, float]:
    """The wall time of a pair's one plugin run and its one floor run."""
    return plugin[0][0], floor[0][0]


@dataclass(frozen=True)
class Pairs:
    """The figures of a goal's pairs, in the order they ran: the plugin's, and the floor's
    (or whatever the plugin is held against: an ideal, a limit)."""

    plugin: tuple[float, ...]
    reference: tuple[float, ...]
    sides: tuple[tuple[Side, Side], ...] = ()  # each pair's raw runs, for notes

    @property
    def ratios(self) -> tuple[float, ...]:
        return tuple(p / r for p, r in zip(self.plugin, self.reference, strict=True))


def interleaved(label: str, plugin: Sequence[Run], floor: Sequence[Run], count: int,
                python: str, figures: Figures = walls) -> Pairs:
    """``count`` pairs after one warm-up run of each command (bytecode, the suite cache,
    the file system's cache). In a pair the plugin's runs and the floor's run back to
    back; which side goes first alternates, so neither always has the machine as the
    other left it."""
    for run in (*plugin, *floor):
        run.once(python)
    plugin_figures, reference_figures, sides = [], [], []
    for index in range(count):
        plugin_first = index % 2 == 0
        order = (plugin, floor) if plugin_first else (floor, plugin)
        done = [tuple(run.once(python) for run in side) for side in order]
        plugin_side, floor_side = done if plugin_first else done[::-1]
        mine, theirs = figures(plugin_side, floor_side)
        plugin_figures.append(mine)
        reference_figures.append(theirs)
        sides.append((plugin_side, floor_side))
        step(f"  {label}: pair {index + 1}/{count} "
             f"({'plugin' if plugin_first else 'floor'} first) {mine / theirs:.2f}×")
    return Pairs(tuple(plugin_figures), tuple(reference_figures), tuple(sides))


#: How a figure of each unit is printed.
FORMATS: dict[str, Callable[[float], str]] = {
    "s": lambda value: f"{value:.3f} s" if value < 1 else f"{value:.2f} s",
    "ms": lambda value: f"{value:.3f} ms",
    "MiB": lambda value: f"{value:.0f} MiB",
    "MB": lambda value: f"{value:.1f} MB",
}


@dataclass(frozen=True)
class Goal:
    """One row: the plugin's figures against the floor's (``reference`` says what the
    floor column holds when it is not the floor itself: "ideal", a limit)."""

    name: str
    target: float
    unit: str
    pairs: Pairs
    reference: str = "{}"  # the floor column's text around its figure: "ideal {}"
    floor_is: str = "floor"  # what the floor column holds, for --json

    @property
    def ratio(self) -> float:
        return statistics.median(self.pairs.ratios)

    @property
    def met(self) -> bool:
        return self.ratio <= self.target

    def figure(self, values: Sequence[float]) -> str:
        return FORMATS[self.unit](statistics.median(values))

    def row(self) -> str:
        ratios = self.pairs.ratios
        spread = f"{min(ratios):.2f}–{max(ratios):.2f}×" if len(ratios) > 1 else "—"
        floor = self.reference.format(self.figure(self.pairs.reference))
        mark = "✅" if self.met else "❌"
        return (f"| {self.name} | {self.figure(self.pairs.plugin)} | {floor} | "
                f"{self.ratio:.2f}× | {spread} | {len(ratios)} | ≤ {self.target:.2f}× | "
                f"{mark} |")

    def data(self) -> dict[str, Any]:
        """The row as JSON-ready values: figures in ``unit``, ratios as plain numbers."""
        ratios = self.pairs.ratios
        return {
            "name": self.name,
            "target": self.target,
            "met": self.met,
            "pairs": len(ratios),
            "ratio_median": self.ratio,
            "ratio_min": min(ratios),
            "ratio_max": max(ratios),
            "unit": self.unit,
            "plugin_median": statistics.median(self.pairs.plugin),
            "floor_median": statistics.median(self.pairs.reference),
            "floor_is": self.floor_is,
            "ratios": list(ratios),
            "plugin": list(self.pairs.plugin),
            "floor": list(self.pairs.reference),
        }


def seconds(value: float) -> str:
    return FORMATS["s"](value)


def copy_examples(root: Path) -> Path:
    target = root / "example_suites"
    shutil.copytree(ROOT / "example_suites", target, ignore=shutil.ignore_patterns(
        "__pycache__", ".pytest_cache", ".elizon", "*.pyc"))
    return target.parent


def memory_goals(n: int, python: str) -> list[Goal]:
    """The writing of the results JSON and the HTML page of an n-case run, measured by
    benchmarks/memory.py: one run without the reports and one with them, after a warm-up
    (peak RSS barely moves from run to run; a run of 100,000 cases takes minutes)."""
    path = Path(__file__).with_name("memory.py")
    spec = importlib.util.spec_from_file_location("elizon_bench_memory", path)
    if spec is None or spec.loader is None or not path.exists():
        return []
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    figures = module.measure(n, python)
    with_reports, without = figures["rss_with_reports_mib"], figures["rss_without_reports_mib"]
    return [
        Goal(f"peak RSS of a {n:,}-case run writing results JSON "
             f"({figures['json_mb']:.1f} MB) and HTML", 1.10, "MiB",
             Pairs((with_reports,), (without,)), "{} without those reports",
             "the same run without the reports"),
        Goal(f"HTML page of {n:,} cases", 1.0, "MB", Pairs((figures["html_mb"],), (10.0,)),
             "{} limit", "limit"),
    ]


def variant_goal(root: Path, one_plugin: Path, count: int, python: str) -> Goal:
    """N cases × V variants of 50 ms at concurrency C against N·V/C latency slots
    (docs/performance.md#measured-figures): each pair's figure is the variants run's wall
    less the plugin's one-case run's (what any run costs), next to it in the pair."""
    n, v, delay, width = VARIANT_CASES, VARIANT_COUNT, VARIANT_DELAY, VARIANT_WIDTH
    tree = make_variant_tree(root, n, v, delay)
    slots = n * v * delay / width

    def used(plugin: Side, fixed: Side) -> tuple[float, float]:
        return plugin[0][0] - fixed[0][0], slots

    label = (f"{n} cases × {v} variants × {delay * 1000:.0f} ms at concurrency {width}, "
             f"against {n * v // width} latency slots")
    step(label)
    # 1.25×, not 16's 1.15×: this ideal leaves out the CPU of the N·V cases (about 2 ms
    # each, the per-case row), which those rows' ideal holds; the slots are what is claimed
    return Goal(label, 1.25, "s", interleaved(
        "variants", [plugin_run(tree, f"--elizon-concurrency={width}")],
        [plugin_run(one_plugin)], count, python, used),
        "ideal {} (N·V/C × L)", "ideal: N·V/C latency slots")


STARTED = time.monotonic()


def step(text: str) -> None:
    """Progress, on stderr, with the time since the start: the table on stdout stays
    clean to paste."""
    elapsed = int(time.monotonic() - STARTED)
    print(f"… [{elapsed // 60}:{elapsed % 60:02d}] {text}", file=sys.stderr, flush=True)


def environment(python: str, cwd: Path) -> tuple[str, Path, list[str]]:
    """``python``'s version, the folder its runs import the plugin from (a PYTHONPATH can
    put another copy before the editable install), and the pytest11 plugins in its
    environment beyond ours and xdist's; asked in ``cwd``, as the runs are (``-c`` puts the
    current folder first on the path, and this checkout holds a copy)."""
    script = ("import importlib.metadata as m, importlib.util as u, platform; "
              "print(platform.python_version()); "
              "print(u.find_spec('pytest_elizon_eval').submodule_search_locations[0]); "
              "print('\\n'.join(e.name for e in m.entry_points(group='pytest11')))")
    version, package, *names = subprocess.run(
        [python, "-c", script], cwd=cwd, capture_output=True, text=True, check=True,
        env=CHILD_ENV).stdout.split("\n")
    return version, Path(package), sorted(set(filter(None, names)) - OWN_PLUGINS)


def commit(package: Path) -> tuple[str | None, bool | None]:
    """The commit of this checkout and whether its package differs from it, when the runs
    import the package from this checkout; else (None, None)."""
    if not package.resolve().is_relative_to(ROOT):
        return None, None

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""
    changed = git("status", "--porcelain", "--", str(package))
    return git("rev-parse", "--short", "HEAD") or None, bool(changed)


#: The goals ``--only`` selects, in the order they run.
GOALS = ("warm", "cold", "collect", "per-case", "replay", "concurrency", "variants", "memory")
#: The variants goal's shape: N cases × V variants of L seconds at concurrency C, N·V a
#: multiple of C so that N·V/C whole slots are the least it can take.
VARIANT_CASES, VARIANT_COUNT, VARIANT_DELAY, VARIANT_WIDTH = 24, 3, 0.050, 8


def pair_count(text: str) -> int:
    count = int(text)
    if count < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {count}")
    return count


def parser() -> argparse.ArgumentParser:
    """The options; --help shows the docstring's summary, how a figure is measured, and
    the sizes and time."""
    paragraphs = __doc__.split("\n\n")
    sizes = next(p for p in paragraphs if p.startswith("Sizes and time"))
    result = argparse.ArgumentParser(description=f"{paragraphs[0]}\n\n{paragraphs[2]}",
                                     epilog=sizes,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    result.add_argument("--quick", action="store_true",
                        help="smaller sizes and, unless --pairs says otherwise, "
                             f"{QUICK_PAIRS} pairs: about 3 minutes, a smoke test whose "
                             "figures are not reportable")
    result.add_argument("--pairs", type=pair_count, metavar="N",
                        help="interleaved plugin/floor pairs per timing goal; the ratio is "
                             "the median of the pairs' ratios, shown with their min–max "
                             f"(default {MIN_PAIRS}; fewer than {MIN_PAIRS} only with "
                             "--quick)")
    result.add_argument("--python", default=sys.executable, metavar="PATH",
                        help="the interpreter whose environment is measured "
                             "(default: this one)")
    result.add_argument("--only", action="append", choices=GOALS, metavar="GOAL",
                        help="measure only this goal (repeatable): "
                             f"{', '.join(GOALS)}; default all")
    result.add_argument("--json", type=Path, metavar="PATH",
                        help="also write every goal's median, min and max ratio, the "
                             "plugin's and the floor's medians and the pair count here")
    return result


def main(argv: Sequence[str] | None = None) -> int:
    arguments = parser()
    options = arguments.parse_args(argv)
    quick: bool = options.quick
    count: int = options.pairs or (QUICK_PAIRS if quick else MIN_PAIRS)
    if count < MIN_PAIRS and not quick:
        arguments.error(f"--pairs {count}: a reportable figure needs at least {MIN_PAIRS} "
                       "pairs (add --quick for a smoke test)")
    python: str = options.python
    wanted = set(options.only or GOALS)
    many = 2_000 if quick else 10_000
    concurrent = 500 if quick else 2_000
    collected = 20_000 if quick else 100_000
    goals: list[Goal] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="elizon-bench-") as where:
        version, package, extra = environment(python, Path(where))
    step(f"measuring pytest_elizon_eval from {package}")
    mode = (f"QUICK, NOT REPORTABLE: smaller sizes, {count} pairs" if quick else
            f"full, median of {count} interleaved pairs")
    if wanted != set(GOALS):
        mode += f"; only {', '.join(g for g in GOALS if g in wanted)}"
    print(f"# pytest-elizon-eval benchmark ({os.cpu_count()} cores, Python {version}, "
          f"{mode})\n")
    if extra:
        print(f"⚠ this environment registers other pytest plugins ({', '.join(extra)}); "
              "every start pays for them. Measure in a virtualenv holding only "
              "`pip install -e .`.\n")
    root = Path(tempfile.mkdtemp(prefix="elizon-bench-"))
    try:
        one_plugin, one_floor = make_tree(root, 1, 0.0)
        if "warm" in wanted:
            step("warm start")
            goals.append(Goal("warm start: run 1 case", 1.15, "s", interleaved(
                "warm start", [plugin_run(one_plugin)], [floor_run(one_floor)], count,
                python)))
        if "cold" in wanted:
            step("cold start")
            cold = (".pytest_cache", ".elizon")
            goals.append(Goal("cold start: run 1 case, no caches", 1.25, "s", interleaved(
                "cold start", [plugin_run(one_plugin, clear=cold)],
                [floor_run(one_floor, clear=cold)], count, python)))
        if "collect" in wanted:
            step("--collect-only of the example packages")
            examples = copy_examples(root / "examples")
            goals.append(Goal("`pytest --collect-only -q example_suites`, warm", 1.15, "s",
                              interleaved(
                "--collect-only", [plugin_run(examples, "--collect-only", "example_suites")],
                [floor_run(examples, "--collect-only", "example_suites", codes=(0, 5))],
                count, python)))

        def per_case(plugin: Side, floor: Side) -> tuple[float, float]:
            """Each side's (wall(N) - wall(1)) / (N - 1) in ms, its N-case run first."""
            def marginal(side: Side) -> float:
                return (side[0][0] - side[1][0]) / (many - 1) * 1000
            return marginal(plugin), marginal(floor)

        if "per-case" in wanted or "replay" in wanted:
            plugin_many, floor_many = make_tree(root, many, 0.0)
        if "per-case" in wanted:
            step(f"per case: {many:,} instant cases")
            goals.append(Goal(f"per case ({many:,} instant cases, serial)", 1.30, "ms",
                              interleaved(
                "per case", [plugin_run(plugin_many), plugin_run(one_plugin)],
                [floor_run(floor_many), floor_run(one_floor)], count, python, per_case)))
        if "replay" in wanted:
            step(f"replay of {many:,} recorded cases")
            cassette = root / "cassette.json"
            plugin_run(plugin_many, f"--elizon-record={cassette}").once(python)
            goals.append(Goal(f"replay {many:,} recorded cases", 1.15, "s", interleaved(
                "replay", [plugin_run(plugin_many, f"--elizon-replay={cassette}")],
                [floor_run(floor_many)], count, python)))
        delay = 0.050
        if "concurrency" in wanted:
            plugin_slow, _ = make_tree(root, concurrent, delay)
            _, floor_instant = make_tree(root, concurrent, 0.0)
        for width, target in ((64, 1.25), (16, 1.15)) if "concurrency" in wanted else ():

            def ideal(plugin: Side, floor: Side, width: int = width) -> tuple[float, float]:
                """The plugin's wall, and the ideal from this pair's floor runs: N instant
                cases (its per-case cost) and one case (its fixed cost)."""
                fixed = floor[1][0]
                floor_case = (floor[0][0] - fixed) / (concurrent - 1)
                return plugin[0][0], (max(concurrent * delay / width, concurrent * floor_case)
                                      + fixed)

            label = f"{concurrent:,} cases × 50 ms at concurrency {width}"
            step(label)
            # the floor runs next to each of the plugin's, so a slow spell of the machine
            # raises that pair's ideal with the run it slows
            goals.append(Goal(label, target, "s", interleaved(
                f"concurrency {width}",
                [plugin_run(plugin_slow, f"--elizon-concurrency={width}")],
                [floor_run(floor_instant), floor_run(one_floor)], count, python, ideal),
                "ideal {}", "ideal"))
        if "variants" in wanted:
            goals.append(variant_goal(root, one_plugin, count, python))
        if "memory" in wanted:
            step(f"collect {collected:,} cases (peak RSS: one pair)")
            plugin_big, floor_big = make_tree(root, collected, 0.0)
            collect = interleaved(
                f"collect {collected:,}", [plugin_run(plugin_big, "--collect-only")],
                [floor_run(floor_big, "--collect-only")], 1, python,
                lambda plugin, floor: (plugin[0][1], floor[0][1]))
            goals.append(Goal(f"peak RSS collecting {collected:,} cases", 1.0, "MiB",
                              collect))
            (((p_wall, _),), ((f_wall, _),)) = collect.sides[0]
            notes.append(f"collecting {collected:,} cases took {seconds(p_wall)} "
                         f"(floor {seconds(f_wall)}, {p_wall / f_wall:.2f}×; one run each)")
            step(f"writing the reports of {collected:,} cases (peak RSS: one run each)")
            written = memory_goals(collected, python)
            if written:
                goals.extend(written)
            else:
                notes.append("benchmarks/memory.py is missing: report writing not measured")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("| goal | plugin | plain-pytest floor | ratio (median) | spread (min–max) | pairs "
          "| target | met |")
    print("|---|---|---|---|---|---|---|---|")
    for goal in goals:
        print(goal.row())
    for note in notes:
        print(f"\n{note}")
    met = sum(goal.met for goal in goals)
    print(f"\n{met} of {len(goals)} goals met (each on its median ratio).")
    if quick:
        print("\nA --quick run: smaller sizes and fewer pairs, a smoke test of this script. "
              "Do not report its figures.")
    elapsed = time.monotonic() - STARTED
    step(f"done in {elapsed / 60:.1f} minutes")
    if options.json:
        head, dirty = commit(package)
        options.json.write_text(json.dumps({
            "reportable": not quick,
            "mode": "quick" if quick else "full",
            "pairs": count,
            "cores": os.cpu_count(),
            "python": python,
            "python_version": version,
            "package": str(package),
            "commit": head,  # null when the package is not this checkout's
            "package_changed_since_commit": dirty,
            "elapsed_s": round(elapsed, 1),
            "goals": [goal.data() for goal in goals],
            "notes": notes,
        }, ensure_ascii=False, indent=2) + "\n")
        step(f"wrote {options.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
