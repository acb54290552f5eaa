"""Fetch figures (``make bench-fetch``). Prints figures; asserts nothing a test should.

1. Throughput: N requests at concurrency C against the demo server (its own process) at a
   fixed latency, against the ideal wall time N / C x latency.
2. Crash safety: a fetch killed with SIGKILL at random moments K times, then resumed; checks
   that every planned slot is present exactly once as a primary attempt and no line is torn.
3. A hostile peer first: the fetch's peak RSS against a 200 stream that never ends, and the
   time to the run's recorded failure.

Usage: ``python -m benchmarks.fetch_bench [--requests 2000] [--concurrency 64]
[--latency 0.2] [--kills 20]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from grade_kit.demo.server import demo_server_process
from grade_kit.fetching import OpenAIChat, RunStore, fetch_async
from grade_kit.reading.task_files import load_tasks

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "fixtures"


def throughput(requests: int, concurrency: int, latency: float) -> None:
    tasks = load_tasks(FIX / "tasks", FIX / "packs").records
    repeats = max(1, -(-requests // len(tasks)))
    with demo_server_process(FIX, fixed_latency_s=latency, faults=False,
                             warm_repeats=repeats, startup_s=120) as url, \
            tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "runs.jsonl"
        started = time.perf_counter()
        report = asyncio.run(fetch_async(
            tasks, OpenAIChat(url, "hasty"), store, setup="hasty", repeats=repeats,
            concurrency=concurrency, timeout_s=60, progress=False))
        wall = time.perf_counter() - started
    n = report.planned
    ideal = n / concurrency * latency
    print(f"throughput: {n:,} requests, concurrency {concurrency}, fixed {latency:g} s: "
          f"{wall:.2f} s wall, ideal {ideal:.2f} s, ratio {wall / ideal:.3f} "
          f"({report.delivered} delivered, {report.failed} failed, {report.timeouts} timeouts, "
          f"{report.retries} retries)")


def kills(times: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    with demo_server_process(FIX, latency_scale=0.01) as url, \
            tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "runs.jsonl"
        script = (
            "from grade_kit.fetching import OpenAIChat, fetch\n"
            "from grade_kit.reading.task_files import load_tasks\n"
            f"tasks = load_tasks({str(FIX / 'tasks')!r}, {str(FIX / 'packs')!r}).records\n"
            f"fetch(tasks, OpenAIChat({url!r}, 'careful'), {str(store)!r}, setup='careful',"
            " repeats=5, timeout_s=5, progress=False, concurrency=8)\n")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        torn_seen = 0
        for _ in range(times):
            proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, env=env)
            time.sleep(rng.uniform(0.3, 2.5))
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            if store.exists() and not store.read_bytes().endswith(b"\n"):
                torn_seen += 1
        subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, check=True)
        reopened = RunStore.open(store)
        primaries: dict[tuple[str, int], int] = {}
        for record in reopened.records:
            if record["attempt_of"] is None:
                key = (record["task_id"], record["repeat"])
                primaries[key] = primaries.get(key, 0) + 1
        aside = store.with_name(store.name + ".torn")
        set_aside = len(aside.read_text().splitlines()) if aside.exists() else 0
        ok = len(primaries) == 200 and set(primaries.values()) == {1}
        lines_ok = all(json.loads(x) for x in store.read_text().splitlines())
        print(f"crash safety: {times} SIGKILLs at random moments, {torn_seen} left a torn last "
              f"line, {set_aside} line(s) set aside on resume; after resuming: "
              f"{len(primaries)} of 200 slots, each exactly once as primary: {ok}; every line "
              f"whole JSON: {lines_ok}; {len(reopened.records)} attempts in all")


ENDLESS_PEER = """
import asyncio, json, sys
CHUNK = ("data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": "x" * 4000},
                                              "finish_reason": None}]}) + "\\n\\n").encode()
async def handle(reader, writer):
    while (await reader.readline()) not in (b"\\r\\n", b""):
        pass
    writer.write(b"HTTP/1.1 200 OK\\r\\nContent-Type: text/event-stream\\r\\n\\r\\n")
    try:
        while True:
            writer.write(CHUNK * 64)
            await writer.drain()
    except ConnectionError:
        pass
async def serve():
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()
asyncio.run(serve())
"""
"""A peer (in its own process) that answers every request with a 200 stream of valid chunks
that never ends."""


def hostile(timeout_s: float = 20.0) -> None:
    """Peak RSS of a fetch against an endless stream, and the time to the run's recorded
    failure (the stream cap), against the agreed timeout."""
    import psutil

    tasks = load_tasks(FIX / "tasks", FIX / "packs").records[:1]
    peer = subprocess.Popen([sys.executable, "-c", ENDLESS_PEER], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert peer.stdout is not None
        url = f"http://127.0.0.1:{peer.stdout.readline().strip()}/v1"
        me = psutil.Process()
        before = me.memory_info().rss
        peak = [before]
        done = False

        def sample() -> None:
            while not done:
                peak[0] = max(peak[0], me.memory_info().rss)
                time.sleep(0.01)

        import threading

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        with tempfile.TemporaryDirectory() as tmp:
            store = Path(tmp) / "runs.jsonl"
            started = time.perf_counter()
            asyncio.run(fetch_async(tasks, OpenAIChat(url, "endless"), store, setup="endless",
                                    timeout_s=timeout_s, progress=False, retries=0))
            wall = time.perf_counter() - started
            done = True
            sampler.join()
            record = json.loads(store.read_text().splitlines()[0])
    finally:
        peer.kill()
        peer.wait()
    print(f"hostile peer (an endless 200 stream of valid chunks): run {record['status']} in "
          f"{wall:.2f} s (agreed timeout {timeout_s:g} s): {record['error']!r}; peak RSS "
          f"{peak[0] / 2**20:.0f} MiB, {(peak[0] - before) / 2**20:+.0f} MiB over the "
          f"{before / 2**20:.0f} MiB before")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--kills", type=int, default=20)
    args = parser.parse_args()
    hostile()
    throughput(args.requests, args.concurrency, args.latency)
    kills(args.kills)


if __name__ == "__main__":
    main()
