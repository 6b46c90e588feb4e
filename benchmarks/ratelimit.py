"""Benchmark runs against a rate-limited, OpenAI-compatible loopback server; print ratios.

The script starts a chat-completions server on 127.0.0.1 that admits R requests per
second (a token bucket, burst R/10), answers each admitted one after L seconds, and
refuses the rest with ``429``, ``Retry-After`` (whole seconds, rounded up) and
``retry-after-ms`` / ``x-ratelimit-reset-requests`` (the precise wait), as OpenAI does.
Then, in fresh pytest processes:

1. N = 1,000 cases, L = 50 ms, R = 100/s with ``--elizon-concurrency=auto`` and at fixed
   4, 16, 64: errors, 429s answered, wall, and wall / (N/R);
2. N = 1,000 cases, L = 200 ms, no rate limit, at 64: wall / (N·L/C + fixed cost), where
   the fixed cost is a one-case run of the same suite.

Usage: python benchmarks/ratelimit.py [--cases N] [--rate R]
Numbers are printed, never asserted; the script fails only if a run cannot start.
"""

from __future__ import annotations

import argparse
import http.server
import json
import math
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


class Bucket:
    """R tokens a second, at most ``burst`` saved up."""

    def __init__(self, rate: float | None) -> None:
        self.rate = rate
        self.burst = max((rate or 1) / 10, 1.0)
        self.tokens = self.burst
        self.at = time.monotonic()
        self.lock = threading.Lock()
        self.refused = 0
        self.admitted = 0

    def take(self) -> float:
        """0 when admitted, else the seconds until a token is there."""
        if self.rate is None:
            with self.lock:
                self.admitted += 1
            return 0.0
        with self.lock:
            now = time.monotonic()
            self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
            self.at = now
            if self.tokens >= 1:
                self.tokens -= 1
                self.admitted += 1
                return 0.0
            self.refused += 1
            return (1 - self.tokens) / self.rate


def serve(bucket: Bucket, latency: float) -> http.server.ThreadingHTTPServer:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            wait = bucket.take()
            if wait:
                body = b'{"error": {"message": "Rate limit reached", "type": "requests"}}'
                self.send_response(429)
                self.send_header("Retry-After", str(math.ceil(wait)))
                self.send_header("retry-after-ms", f"{wait * 1000:.0f}")
                self.send_header("x-ratelimit-reset-requests", f"{wait * 1000:.0f}ms")
            else:
                time.sleep(latency)
                body = json.dumps({"id": "x", "object": "chat.completion", "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": "ok"},
                     "finish_reason": "stop"}]}).encode()
                self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    httpd.request_queue_size = 512
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    return httpd


def tree(root: Path, url: str, n: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "elizon.yaml").write_text(
        f"entry: {{url: '{url}/v1/chat/completions', output: openai}}\n"
        "evaluation:\n  suite: ./suite.yaml\n")
    cases = "".join(f"  - id: c{i:05d}\n    input: question {i}\n    expect: {{contains: [ok]}}\n"
                    for i in range(n))
    (root / "suite.yaml").write_text("cases:\n" + cases)
    (root / "pytest.ini").write_text("[pytest]\n")


def run(root: Path, *args: str) -> tuple[float, dict[str, object]]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "--elizon-results=r.json", *args], cwd=root, capture_output=True,
                          text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode not in (0, 1):
        sys.exit(f"pytest failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr}")
    data = json.loads((root / "r.json").read_text())
    return wall, data


def summary(data: dict[str, object]) -> tuple[int, int, int]:
    suites = data["suites"]  # type: ignore[index]
    cases = [c for s in suites for c in s["cases"]]  # type: ignore[union-attr]
    bad = sum(1 for c in cases if c["outcome"] != "passed")
    return bad, sum(c["retries"] for c in cases), sum(1 for c in cases if c["rate_limited"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--modes", default="auto,4,16,64")
    parser.add_argument("--skip-unlimited", action="store_true")
    options = parser.parse_args()
    n, rate = options.cases, options.rate
    with tempfile.TemporaryDirectory() as tmp:
        print(f"1. {n:,} cases, L = 50 ms, R = {rate:g}/s: ideal N/R = {n / rate:.2f} s")
        print("   concurrency | not passed | retries | rate-limited cases | 429s | wall | "
              "wall/(N/R)")
        for mode in options.modes.split(","):
            bucket = Bucket(rate)
            httpd = serve(bucket, 0.05)
            root = Path(tmp, f"limited-{mode}")
            tree(root, f"http://127.0.0.1:{httpd.server_port}", n)
            wall, data = run(root, f"--elizon-concurrency={mode}")
            bad, retries, limited = summary(data)
            print(f"   {mode:>11} | {bad:>10} | {retries:>7} | {limited:>18} | "
                  f"{bucket.refused:>4} | {wall:6.2f} s | {wall / (n / rate):.2f}x", flush=True)
            httpd.shutdown()
        if options.skip_unlimited:
            return
        bucket = Bucket(None)
        httpd = serve(bucket, 0.2)
        root = Path(tmp, "one")
        tree(root, f"http://127.0.0.1:{httpd.server_port}", 1)
        fixed = min(run(root)[0] for _ in range(3))
        root = Path(tmp, "unlimited")
        tree(root, f"http://127.0.0.1:{httpd.server_port}", n)
        wall, data = run(root, "--elizon-concurrency=64")
        ideal = n * 0.2 / 64
        print(f"2. {n:,} cases, L = 200 ms, no limit, concurrency 64: {wall:.2f} s; ideal "
              f"{ideal:.2f} s + fixed {fixed:.2f} s (one-case run incl. its 0.2 s call) -> "
              f"{wall / (ideal + fixed):.2f}x; not passed: {summary(data)[0]}")
        httpd.shutdown()


if __name__ == "__main__":
    main()
