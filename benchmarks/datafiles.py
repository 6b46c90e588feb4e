"""Benchmark: a JSONL suite against the same cases written as YAML, and print the ratio.

Writes N cases (default 100,000) both ways, each with an input mapping and a few
assertions, and times reading and validating each file (``load_suite``: what
collection does with a suite before it makes items) in a fresh subprocess, best of
K runs. With ``--pytest`` it also times ``pytest --collect-only -q`` on both
(items and all; slower). The issue's bar: JSONL within 1.5x of YAML.

Usage: python benchmarks/datafiles.py [--cases N] [--repeat K] [--pytest]
Numbers are printed, never asserted; the script fails only if a run fails.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LOAD = """
import sys, time
from pathlib import Path
from pytest_elizon_eval.load.packages import load_suite
path = Path(sys.argv[1])
start = time.perf_counter()
suite = load_suite(path, path.name)
print(time.perf_counter() - start, len(suite.cases))
"""


def case(index: int) -> dict[str, object]:
    return {"id": f"case-{index}",
            "description": f"Case number {index} of the benchmark.",
            "input": {"request": f"Question {index}: is the press on line {index % 7} running?",
                      "customer": f"C-{index:06d}"},
            "expect": {"contains": ["routine"], "notContains": ["emergency", "urgent"],
                       "maxLatencyMs": 5000}}


def write(folder: Path, count: int) -> tuple[Path, Path]:
    cases = [case(i) for i in range(count)]
    yaml_path = folder / "suite.eval.yaml"
    with yaml_path.open("w", encoding="utf-8") as out:
        out.write("cases:\n")
        for c in cases:  # block style, as people write suites
            inp = c["input"]
            assert isinstance(inp, dict)
            out.write(f"  - id: {c['id']}\n    description: {c['description']}\n"
                      f"    input:\n      request: \"{inp['request']}\"\n"
                      f"      customer: {inp['customer']}\n"
                      f"    expect:\n      contains: [routine]\n"
                      f"      notContains: [emergency, urgent]\n      maxLatencyMs: 5000\n")
    jsonl_path = folder / "suite.eval.jsonl"
    with jsonl_path.open("w", encoding="utf-8") as out:
        for c in cases:
            out.write(json.dumps(c) + "\n")
    return yaml_path, jsonl_path


def timed_load(path: Path, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        done = subprocess.run([sys.executable, "-c", LOAD, str(path)], check=True,
                              capture_output=True, text=True)
        best = min(best, float(done.stdout.split()[0]))
    return best


def timed_collect(path: Path, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p",
                        "no:cacheprovider", "-o", "elizon_suite_files=*.eval.yaml *.eval.jsonl",
                        str(path)], check=True, capture_output=True, cwd=path.parent)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pytest", action="store_true", help="also time pytest --collect-only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        yaml_path, jsonl_path = write(Path(tmp), args.cases)
        y = timed_load(yaml_path, args.repeat)
        j = timed_load(jsonl_path, args.repeat)
        print(f"{args.cases:,} cases, read + validate (load_suite), best of {args.repeat}:")
        print(f"  YAML  {y:7.2f} s\n  JSONL {j:7.2f} s\n  ratio JSONL/YAML {j / y:.2f} "
              "(bar: 1.5)")
        if args.pytest:
            y = timed_collect(yaml_path, args.repeat)
            j = timed_collect(jsonl_path, args.repeat)
            print(f"pytest --collect-only, best of {args.repeat}:")
            print(f"  YAML  {y:7.2f} s\n  JSONL {j:7.2f} s\n  ratio JSONL/YAML {j / y:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
