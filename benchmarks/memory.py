"""Peak memory of writing the reports of a large run, and the size of what is written.

Issue 27's memory goal: a run of 100,000 cases writes its results JSON
(``--elizon-results``) and its HTML page (``--elizon-html``) without holding a
second copy of every case, and the page stays under 10 MB. Measured as the
lead's ``benchmarks/run.py`` does: a synthetic package of N instant cases
(run.py's ``make_tree``), run in a fresh pytest process of the
given interpreter with the user's defaults (history store on, started afresh
each run) once without and once with both reports; peak RSS is the child's
``ru_maxrss`` from ``os.wait4``.

Usage: python benchmarks/memory.py [--quick] [--no-history] [--python PATH]
(--quick: 20,000 cases; else 100,000, about two minutes a run). Numbers are
printed, never asserted; the script fails only if a run fails.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# the benchmarks' one synthetic package and way of running pytest
from run import Run, make_tree


def run_with_rss(python: str, args: list[str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one pytest run in a fresh process, its history
    store started afresh (a store of earlier runs would be read for the page's trends)."""
    return Run(cwd, ("-p", "no:cacheprovider", *args), clear=(".elizon",)).once(python)


def measure(n: int, python: str, options: tuple[str, ...] = ()) -> dict[str, float]:
    """Peak RSS (MiB) and wall time (s) of a run of ``n`` instant cases without and with
    ``--elizon-results`` and ``--elizon-html``, what the reports added, and the sizes of
    the JSON and the page (MB, 10^6 bytes); ``options`` are given to both runs."""
    with tempfile.TemporaryDirectory(prefix="elizon-memory-") as tmp:
        tree, _ = make_tree(Path(tmp), n, 0.0)  # the plugin's package; its floor is unused
        json_path, html_path = Path(tmp) / "results.json", Path(tmp) / "report.html"
        run_with_rss(python, ["--collect-only", "-q"], tree)  # warm-up: bytecode, file cache
        wall_without, rss_without = run_with_rss(python, [*options], tree)
        wall_with, rss_with = run_with_rss(
            python, [*options, f"--elizon-results={json_path}", f"--elizon-html={html_path}"],
            tree)
        return {
            "cases": float(n),
            "rss_without_reports_mib": rss_without,
            "rss_with_reports_mib": rss_with,
            "rss_added_mib": rss_with - rss_without,
            "wall_without_s": wall_without,
            "wall_with_s": wall_with,
            "json_mb": json_path.stat().st_size / 1e6,
            "html_mb": html_path.stat().st_size / 1e6,
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20,000 cases, not 100,000")
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter whose pytest and plugin are measured")
    parser.add_argument("--no-history", action="store_true",
                        help="both runs with --elizon-history=off: what the reports cost "
                             "apart from the history store's own copy of the run")
    args = parser.parse_args(argv)
    n = 20_000 if args.quick else 100_000
    found = measure(n, args.python, ("--elizon-history=off",) if args.no_history else ())
    print(f"{n:,} instant cases, history store "
          f"{'off' if args.no_history else 'on (the default)'}")
    print(f"  without reports: peak RSS {found['rss_without_reports_mib']:.0f} MiB, "
          f"{found['wall_without_s']:.1f} s")
    print("  with --elizon-results and --elizon-html: peak RSS "
          f"{found['rss_with_reports_mib']:.0f} MiB (+{found['rss_added_mib']:.0f} MiB), "
          f"{found['wall_with_s']:.1f} s")
    print(f"  results JSON {found['json_mb']:.1f} MB, HTML page {found['html_mb']:.2f} MB "
          f"({'under' if found['html_mb'] < 10 else 'OVER'} 10 MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
