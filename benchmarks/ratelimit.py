"""Benchmark runs against a rate-limited, OpenAI-compatible loopback server; print ratios.

The script starts a chat-completions server on 127.0.0.1 that admits R requests per
second (a token bucket, burst R/10), answers each admitted one after L seconds, and
refuses the rest with ``429``, ``Retry-After`` (whole seconds, rounded up) and
``retry-after-ms`` / ``x-ratelimit-reset-requests`` (the precise wait), as OpenAI does.
Then, in fresh pytest processes:

1. N = 1,000 cases, L = 50 ms, R = 100/s with ``--elizon-concurrency=auto`` and at fixed
   4, 16, 64: errors, 429s answered, wall, and wall / (N/R);
2. N = 1,000 cases, L = 200 ms, no rate limit, at 64: wall / (N·L/C + the floor's fixed
   cost), the floor being plain pytest making the same N calls to the same server with
   L = 0 (one parametrized test over the same YAML, httpx; ``-p no:elizon_eval``).

Usage: python benchmarks/ratelimit.py [--cases N] [--rate R]
Numbers are printed, never asserted; the script fails only if a run cannot start.
"""

from __future__ import annotations

import argparse
import asyncio
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


_OK = json.dumps({"id": "x", "object": "chat.completion", "choices": [
    {"index": 0, "message": {"role": "assistant", "content": "ok"},
     "finish_reason": "stop"}]}).encode()
_REFUSED = b'{"error": {"message": "Rate limit reached", "type": "requests"}}'


class Server:
    """The loopback server: one asyncio loop in a daemon thread, HTTP/1.1 kept alive, each
    reply written at once (a thread per connection and split writes would make the
    server, not the plugin, what is measured)."""

    def __init__(self, bucket: Bucket, latency: float) -> None:
        self.bucket, self.latency = bucket, latency
        self.loop = asyncio.new_event_loop()
        started = threading.Event()
        threading.Thread(target=self._serve, args=(started,), daemon=True).start()
        started.wait()

    def _serve(self, started: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(
            asyncio.start_server(self._connection, "127.0.0.1", 0, backlog=1024))
        self.port = self.server.sockets[0].getsockname()[1]
        started.set()
        self.loop.run_forever()

    async def _connection(self, reader: asyncio.StreamReader,
                          writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                await reader.readexactly(length)
                wait = self.bucket.take()
                if wait:
                    status, body = "429 Too Many Requests", _REFUSED
                    extra = (f"Retry-After: {math.ceil(wait)}\r\n"
                             f"retry-after-ms: {wait * 1000:.0f}\r\n"
                             f"x-ratelimit-reset-requests: {wait * 1000:.0f}ms\r\n")
                else:
                    await asyncio.sleep(self.latency)
                    status, body, extra = "200 OK", _OK, ""
                writer.write(f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
                             f"Content-Length: {len(body)}\r\n{extra}\r\n".encode() + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def shutdown(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)


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
    parser.add_argument("--repeat", type=int, default=2, help="runs of part 2 (best kept)")
    options = parser.parse_args()
    n, rate = options.cases, options.rate
    with tempfile.TemporaryDirectory() as tmp:
        print(f"1. {n:,} cases, L = 50 ms, R = {rate:g}/s: ideal N/R = {n / rate:.2f} s")
        print("   concurrency | not passed | retries | rate-limited cases | 429s | wall | "
              "wall/(N/R)")
        for mode in options.modes.split(","):
            bucket = Bucket(rate)
            httpd = Server(bucket, 0.05)
            root = Path(tmp, f"limited-{mode}")
            tree(root, f"http://127.0.0.1:{httpd.port}", n)
            wall, data = run(root, f"--elizon-concurrency={mode}")
            bad, retries, limited = summary(data)
            print(f"   {mode:>11} | {bad:>10} | {retries:>7} | {limited:>18} | "
                  f"{bucket.refused:>4} | {wall:6.2f} s | {wall / (n / rate):.2f}x", flush=True)
            httpd.shutdown()
        if options.skip_unlimited:
            return
        # 2. no limit: against the floor, the same calls from plain pytest with L = 0
        server = Server(Bucket(None), 0.0)
        floor_root = Path(tmp, "floor")
        floor_tree(floor_root, f"http://127.0.0.1:{server.port}", n)
        floor = min(timed(floor_root, "-p", "no:elizon_eval") for _ in range(options.repeat))
        server.shutdown()
        server = Server(Bucket(None), 0.2)
        root = Path(tmp, "unlimited")
        tree(root, f"http://127.0.0.1:{server.port}", n)
        walls = []
        for _ in range(options.repeat):
            wall, data = run(root, "--elizon-concurrency=64")
            walls.append(wall)
        server.shutdown()
        ideal = n * 0.2 / 64
        print(f"2. {n:,} cases, L = 200 ms, no limit, concurrency 64: {min(walls):.2f} s "
              f"(best of {options.repeat}); ideal N·L/C {ideal:.2f} s + the floor's fixed cost "
              f"{floor:.2f} s (plain pytest making the same {n:,} calls with L = 0) -> "
              f"{min(walls) / (ideal + floor):.2f}x; not passed: {summary(data)[0]}")


FLOOR_TEST = """
import pathlib

import httpx
import pytest
import yaml

URL = {url!r}
CASES = yaml.load(pathlib.Path(__file__).with_name("suite.yaml").read_text(),
                  Loader=yaml.CSafeLoader)["cases"]
client = httpx.Client()


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_case(case):
    reply = client.post(URL, json={{"model": "m", "messages": [
        {{"role": "user", "content": case["input"]}}]}})
    reply.raise_for_status()
    text = reply.json()["choices"][0]["message"]["content"]
    for wanted in case["expect"]["contains"]:
        assert wanted in text
"""


def floor_tree(root: Path, url: str, n: int) -> None:
    """What a team would write without the plugin: one parametrized test over the same YAML,
    posting each case to the same server with httpx."""
    tree(root, url, n)
    (root / "elizon.yaml").unlink()
    (root / "test_floor.py").write_text(FLOOR_TEST.format(url=f"{url}/v1/chat/completions"))


def timed(root: Path, *args: str) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           *args], cwd=root, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"the floor failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr}")
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
