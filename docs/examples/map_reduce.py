"""Score a packed store's partitions on worker processes, the way a distributed engine would
(docs/scaling.md "More than one machine"). Runs locally from the repository root:

    .venv/bin/python docs/examples/map_reduce.py

The map step is ``score_partition`` (one partition in, its per-run scores, consistency and
claim matches out); the reduce step is ``combine_scores`` and the standard's statistics, in
``gk.evaluate``. Any ``map(function, jobs)`` can run the map step: here a process pool; with
Dask, ``lambda f, jobs: client.gather(client.map(f, list(jobs)))``; with Ray,
``lambda f, jobs: ray.get([ray.remote(f).remote(job) for job in jobs])``. The workers read
their partition from the store's folder, so on a cluster the store sits on storage every
worker mounts at the same path.
"""

from __future__ import annotations

import tempfile
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import grade_kit as gk
from grade_kit.pipeline.partitioned import combine_scores, partition_data, score_partition

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        report = gk.pack(ROOT / "fixtures" / "tasks", ROOT / "fixtures" / "runs", store,
                         partitions=4, progress=False)
        print(f"packed {report}")

        # 1. The map and the reduce by hand: one partition per job, then combine.
        jobs = [(str(store), partition, False) for partition in range(report.partitions)]
        with ProcessPoolExecutor(2, mp_context=get_context("spawn")) as pool:
            parts = [scores for scores, _ in pool.map(score_partition, jobs)]
        tasks = partition_data(store, 0)  # every partition carries all task frames
        combined = combine_scores(parts, tasks.tasks, tasks.weights)
        print(combined.overall.select("setup", "composite").sort("setup"))

        # 2. The same through gk.evaluate, which also computes the standard's statistics.
        with ProcessPoolExecutor(2, mp_context=get_context("spawn")) as pool:
            ev = gk.evaluate(store, map_partitions=pool.map)
        print(ev.leaderboard.select("setup", "composite", "tasks").sort("setup"))
        in_memory = gk.evaluate(ROOT / "fixtures" / "tasks", ROOT / "fixtures" / "runs")
        assert ev.leaderboard.equals(in_memory.leaderboard)
        assert combined.overall.equals(in_memory.scores.overall)
        print("the store, scored on two processes, gives the in-memory results")


if __name__ == "__main__":
    main()
