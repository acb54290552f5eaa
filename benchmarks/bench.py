"""Speed figures for loading and scoring (``make bench``). Prints timings; asserts nothing.

Synthetic tasks clone the example tasks (fixtures/example); synthetic runs (4 setups x 5
repeats per task) answer them with varied findings and metrics, one bad line per hundred.
Usage: ``python -m benchmarks.bench [N ...]`` (default 10000 100000).
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
from pathlib import Path

from grade_kit.evaluate import evaluate
from grade_kit.inputs import read_inputs
from grade_kit.io import load_tasks

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "fixtures" / "example"
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


def bench(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp) / "runs.jsonl"
        tasks = Path(tmp) / "tasks.jsonl"
        n = write_runs(runs, write_tasks(tasks, max(1, n // (SETUPS * REPEATS))))
        t0 = time.perf_counter()
        inputs = read_inputs(tasks, runs)
        t1 = time.perf_counter()
        ev = evaluate(inputs)
        t2 = time.perf_counter()
        ev.write(Path(tmp) / "out")
        t3 = time.perf_counter()
    print(f"{n:>9,} runs: read+validate {t1 - t0:7.2f} s ({n / (t1 - t0):>9,.0f} runs/s) | "
          f"evaluate (flatten, GRADE, standard) {t2 - t1:6.2f} s "
          f"({n / (t2 - t1):>9,.0f} runs/s) | write {t3 - t2:5.2f} s | "
          f"total {t3 - t0:6.2f} s | rejected {len(ev.inputs.rejected):,}")


if __name__ == "__main__":
    sizes = [int(a) for a in sys.argv[1:]] or [10_000, 100_000]
    for size in sizes:
        bench(size)
