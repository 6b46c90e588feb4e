"""Benchmark: a second run of a judged suite against the same suite without a judge.

Writes a package of N cases (default 200) whose every case has a ``judge:`` rubric, with
a judge that sleeps (default 20 ms, standing in for a model call) and counts its calls,
and the same cases without the rubric. Runs pytest on the judged package twice (the
first fills the grade cache in its ``.pytest_cache``) and on the unjudged one, each in
a fresh subprocess, best of K for the timed runs, and prints the judge calls of the
second run and its wall time against the unjudged run. The issue's bar: 0 calls, within
1.1x.

Usage: python benchmarks/grade_cache.py [--cases N] [--repeat K] [--sleep-ms MS] [--quick]
(--quick: 50 cases, best of 2.) Numbers are printed, never asserted; the script fails
only if a run fails.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

APP = "def answer(text):\n    return f'Reply to {text}: polite and brief.'\n"
JUDGE = """
import pathlib, time

def grade(rubric, case_input, output):
    with open(pathlib.Path(__file__).with_name("calls.log"), "a") as log:
        log.write("x\\n")
    time.sleep({sleep})
    return 0.9, "fine"
"""


def write(folder: Path, count: int, judged: bool, sleep_s: float) -> Path:
    folder.mkdir(parents=True)
    manifest = "name: bench\nentry: app:answer\nevaluation:\n  suite: ./suite.yaml\n"
    if judged:
        manifest += "judge: judges:grade\n"
        (folder / "judges.py").write_text(JUDGE.replace("{sleep}", repr(sleep_s)))
    (folder / "elizon.yaml").write_text(manifest)
    (folder / "app.py").write_text(APP)
    lines = ["cases:"]
    for index in range(count):
        lines += [f"  - id: case-{index}", f"    input: question {index}", "    expect:",
                  "      contains: [polite]"]
        if judged:
            lines.append("      judge: {rubric: Polite and brief., threshold: 0.5}")
    (folder / "suite.yaml").write_text("\n".join(lines) + "\n")
    return folder


def timed(folder: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "."],
                          cwd=folder, capture_output=True, text=True, check=False)
    took = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"pytest failed in {folder}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return took


def calls(folder: Path) -> int:
    log = folder / "calls.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sleep-ms", type=float, default=20.0)
    parser.add_argument("--quick", action="store_true", help="50 cases, best of 2")
    args = parser.parse_args()
    if args.quick:
        args.cases, args.repeat = 50, 2
    with tempfile.TemporaryDirectory() as tmp:
        judged = write(Path(tmp) / "judged", args.cases, True, args.sleep_ms / 1000)
        plain = write(Path(tmp) / "plain", args.cases, False, 0)
        first = timed(judged)
        first_calls = calls(judged)
        second = min(timed(judged) for _ in range(args.repeat))
        second_calls = (calls(judged) - first_calls) // args.repeat
        bare = min(timed(plain) for _ in range(args.repeat))
    print(f"{args.cases} judged cases, judge {args.sleep_ms:g} ms a call")
    print(f"first run:   {first:6.2f} s, {first_calls} judge calls")
    print(f"second run:  {second:6.2f} s, {second_calls} judge calls (best of {args.repeat})")
    print(f"no judge:    {bare:6.2f} s (best of {args.repeat})")
    print(f"second run / no judge: {second / bare:.2f}x (bar: 0 calls, within 1.1x)")


if __name__ == "__main__":
    main()
