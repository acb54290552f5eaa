"""Speed figures for the whole pipeline (``make bench``). Prints figures; asserts nothing.

Synthetic tasks clone the example tasks (fixtures/example); synthetic runs (4 setups x 5
repeats per task) answer them with varied findings and metrics, one bad line per hundred.
Each stage (read and validate, flatten, GRADE scoring, the standard, typed results, writing)
is timed separately, with runs per second and the process's peak RSS after it (sampled every
10 ms). The figures go to ``benchmarks/results/<time>.json`` so that ``make bench-compare``
can set the two newest side by side.

Usage: ``python -m benchmarks.bench [N ...]`` (default 10000 100000).
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

from grade_kit.frames import EvalData
from grade_kit.pipeline.evaluation import evaluate
from grade_kit.reading.inputs import read_inputs
from grade_kit.reading.task_files import load_tasks
from grade_kit.scorers import grade_scores
from grade_kit.standard import standard_results

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "fixtures" / "example"
RESULTS = ROOT / "benchmarks" / "results"
PHRASES = ["October cancellations spiked to 18.4%", "Tutor T-07 has the lowest completion",
           "Dosage and growth are positively correlated", "Correlation is not causation",
           "The ELL subgroup is too small to report", "Cancellations rose in Oct",
           "Single quarter only", "Results for groups under 10 students are suppressed"]

SETUPS = 4
REPEATS = 5


def write_tasks(path: Path, n_tasks: int) -> list[str]:
    """Clones of the example GRADE tasks (ground truth resolved) with fresh ids."""
    examples = [t for t in load_tasks(EXAMPLE / "tasks").records if t.kind == "grade"]
    ids = []
    with path.open("w") as f:
        for i in range(n_tasks):
            task = examples[i % len(examples)].model_copy(deep=True)
            task.task_id = f"{task.task_id}-{i}"
            for fact in task.gold_facts:
                fact.ground_truth = None
            f.write(task.model_dump_json(exclude_none=True) + "\n")
            ids.append(task.task_id)
    return ids


def write_runs(path: Path, task_ids: list[str], seed: int = 42) -> int:
    """SETUPS x REPEATS runs per task, one broken line in every hundred."""
    rng = random.Random(seed)
    n = 0
    with path.open("w") as f:
        for task in task_ids:
            for s in range(SETUPS):
                for repeat in range(1, REPEATS + 1):
                    n += 1
                    if n % 100 == 0:
                        f.write('{"run_id": "broken", "setup": \n')
                        continue
                    findings = rng.sample(PHRASES, 3)
                    status = "delivered" if rng.random() > 0.05 else "failed"
                    rec: dict[str, object] = {
                        "run_id": f"r{n}", "setup": f"setup-{s}", "task_id": task,
                        "repeat": repeat, "status": status,
                        "events": {"submitted": "2026-11-02T09:00:00+00:00",
                                   "received": "2026-11-02T09:00:12.5+00:00"},
                        "tool_calls": [{"id": "c1", "name": "sql"}]}
                    if status == "delivered":
                        rec["response"] = {
                            "key_findings": findings, "limitations": rng.sample(PHRASES, 1),
                            "structured_metrics": {
                                "oct_cancel_rate": rng.choice([0.184, "18.4%", 0.2]),
                                "weakest_tutor": rng.choice(["T-07", "T-08"]),
                                "ell_n": 7, "dosage_growth_r": 0.41},
                            "text": " ".join(findings)}
                    f.write(json.dumps(rec) + "\n")
    return n


class PeakRSS:
    """The peak resident set size of the process and its child processes together (the
    reading workers), sampled every 10 ms while running.

    Each sample reads the RSS of this process and of the children already known (one small
    /proc read each); the list of children is looked up anew every 0.25 s. Looking it up at
    every sample (``psutil``'s ``children`` reads every process of the machine) took a
    sixth of a core and the interpreter lock from what was measured (docs/scaling.md history)."""

    REFRESH = 25
    """Samples between two look-ups of the children (at 10 ms: 0.25 s)."""

    def __init__(self) -> None:
        self.process = psutil.Process()
        self._children: list[psutil.Process] = []
        self._samples = 0
        self.peak = self._rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _rss(self) -> int:
        if self._samples % self.REFRESH == 0:
            with contextlib.suppress(psutil.Error):
                self._children = self.process.children(recursive=True)
        self._samples += 1
        total = self.process.memory_info().rss
        for child in self._children:
            with contextlib.suppress(psutil.Error):  # a child exited since it was found
                total += child.memory_info().rss
        return total

    def _sample(self) -> None:
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, self._rss())

    def __enter__(self) -> PeakRSS:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def stage(name: str, n: int, fn: Callable[[], Any], stages: list[dict[str, Any]],
          echo: bool = False) -> Any:
    """Run ``fn`` and append its wall time, runs per second and peak RSS to ``stages``
    (printed at once with ``echo``)."""
    with PeakRSS() as rss:
        started = time.perf_counter()
        result = fn()
        seconds = time.perf_counter() - started
    stages.append({"stage": name, "seconds": round(seconds, 4),
                   "runs_per_s": round(n / seconds) if seconds else None,
                   "peak_rss_mb": round(rss.peak / 2**20, 1)})
    if echo:
        print(f"    {name:<40} {seconds:8.2f} s  {round(n / seconds) if seconds else 0:>10,} "
              f"runs/s  peak RSS {rss.peak / 2**20:>8,.0f} MB", flush=True)
    return result


FRESH_PROCESS = """
import json, resource, sys, threading, time
from pathlib import Path
import grade_kit as gk
MAIN = threading.main_thread().ident
peak = {"rss": 0, "where": []}
sampling = True
def _rss():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0
def _sample():  # the main thread's grade_kit frames at the highest RSS seen (every 0.2 s)
    while sampling:
        now = _rss()
        if now > peak["rss"]:
            frame, where = sys._current_frames().get(MAIN), []
            while frame is not None:
                if "grade_kit" in frame.f_code.co_filename:
                    where.append(Path(frame.f_code.co_filename).stem + "." + frame.f_code.co_name)
                frame = frame.f_back
            peak.update(rss=now, where=where[::-1])
        time.sleep(0.2)
threading.Thread(target=_sample, daemon=True).start()
import grade_kit.pipeline.evaluation
from grade_kit.reading.packed import pack
kind, folder, partitions = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
paths = {k: folder / f"{k}.jsonl" for k in ("tasks", "runs", "judgements", "grades")}
verdicts = {"judgements": paths["judgements"], "grades": paths["grades"]}
if kind.startswith("memory"):  # in memory whatever the size
    grade_kit.pipeline.evaluation.STORE_ABOVE_BYTES = 1 << 62
started = evaluated = time.perf_counter()
through_store = False
if kind == "pack":
    pack(paths["tasks"], paths["runs"], folder / "store", **verdicts, partitions=partitions,
         progress=False)
else:
    more = {}
    if kind.endswith("-2-workers"):
        from concurrent.futures import ProcessPoolExecutor
        from multiprocessing import get_context
        more["map_partitions"] = ProcessPoolExecutor(2, mp_context=get_context("spawn")).map
    ev = (gk.evaluate(folder / "store", **more) if kind.startswith("store")
          else gk.evaluate(paths["tasks"], paths["runs"], **verdicts, **more))
    evaluated = time.perf_counter()
    through_store = not kind.startswith("store") and "store" in ev.data.extra
    ev.write(folder / f"out-{kind}")
done = time.perf_counter()
sampling = False
print(json.dumps({
    "peak_stage": " > ".join(peak["where"][-4:]),
    "seconds": round(done - started, 2), "evaluate_s": round(evaluated - started, 2),
    "write_s": round(done - evaluated, 2), "through_store": through_store,
    "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    "worker_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024),
}))
"""
"""One measurement in a fresh process, so that its peak RSS is its own: ``pack`` the JSONL of
a folder into ``store``; ``gk.evaluate`` + ``write`` of the JSONL as a user calls it
(``as-called``: through a temporary store above the bound), forced in memory (``memory``),
or of the store (``store``); ``-2-workers``: the map step on two spawned processes. Writes
to ``out-<kind>``; ``worker_peak_rss_mb`` is the largest child process's peak (the packer,
through a temporary store); ``peak_stage`` the innermost grade_kit functions running when
the process's RSS was highest (sampled every 0.2 s)."""


def measure_in_fresh_process(kind: str, folder: Path, partitions: int = 16) -> dict[str, Any]:
    """:data:`FRESH_PROCESS` of ``kind`` on the inputs in ``folder``: its figures."""
    done = subprocess.run([sys.executable, "-c", FRESH_PROCESS, kind, str(folder),
                           str(partitions)], capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def figures_header() -> dict[str, Any]:
    """When, at which commit and on what machine the figures were taken."""
    return {"created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "commit": _commit(), "python": platform.python_version(),
            "machine": f"{platform.machine()}, {psutil.cpu_count()} cores",
            # Settings that change the figures (docs/scaling.md history): recorded so
            # that two figure files are compared like with like.
            "environment": {name: os.environ.get(name) for name in ENVIRONMENT}}


ENVIRONMENT = ("GLIBC_TUNABLES", "_RJEM_MALLOC_CONF", "POLARS_MAX_THREADS")
"""Environment variables :func:`figures_header` records with the figures."""


def save_figures(figures: dict[str, Any], prefix: str = "") -> Path:
    """Write ``figures`` to ``benchmarks/results/<prefix><time>.json`` and say where."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{prefix}{figures['created_at'].replace(':', '-')}.json"
    path.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    print(f"figures -> {path}")
    return path


def bench(n: int) -> dict[str, Any]:
    stages: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp) / "runs.jsonl"
        tasks = Path(tmp) / "tasks.jsonl"
        n = write_runs(runs, write_tasks(tasks, max(1, n // (SETUPS * REPEATS))))
        inputs = stage("read and validate", n, lambda: read_inputs(tasks, runs), stages)
        data = stage("flatten", n, lambda: EvalData.from_records(
            inputs.tasks, inputs.runs, inputs.judgements, inputs.grades, inputs.run_lines),
            stages)
        scores = stage("GRADE scoring", n, lambda: grade_scores(data), stages)
        stage("standard", n, lambda: standard_results(data, None, scores.tasks), stages)
        ev = stage("evaluate (all of the above but reading, and results)", n,
                    lambda: evaluate(inputs), stages)
        stage("write", n, lambda: ev.write(Path(tmp) / "out"), stages)
    total = sum(s["seconds"] for s in stages if s["stage"] in (
        "read and validate", "evaluate (all of the above but reading, and results)", "write"))
    print(f"{n:>9,} runs:")
    for s in stages:
        print(f"    {s['stage']:<55} {s['seconds']:8.2f} s  {s['runs_per_s'] or 0:>10,} runs/s"
              f"  peak RSS {s['peak_rss_mb']:>8,.0f} MB")
    print(f"    {'end to end (read + evaluate + write)':<55} {total:8.2f} s")
    return {"runs": n, "stages": stages, "end_to_end_s": round(total, 4),
            "rejected": len(ev.inputs.rejected)}


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [10_000, 100_000]
    save_figures({**figures_header(), "sizes": [bench(size) for size in sizes]})


if __name__ == "__main__":
    main()
