"""Score a packed store on a Dask cluster (docs/scaling.md "More than one machine"). Needs the
``dask`` extra (``pip install 'grade_kit[dask]'``). Runs locally from the repository root:

    .venv/bin/python docs/examples/dask_cluster.py

``gk.evaluate(store, map_partitions=...)`` hands each partition to ``map_partitions`` (the map
step, ``grade_kit.pipeline.partitioned.score_partition``: one partition in, its per-run scores,
consistency and claim matches out) and combines what comes back with the standard's
statistics (the reduce step).
Here the map runs on a ``dask.distributed.LocalCluster`` of two worker processes; on a real
cluster, pass ``Client("tcp://scheduler:8786")`` instead and keep the store on storage every
worker mounts at the same path (each worker reads its own partition from it).
``tests/pipeline/test_dask.py`` runs this file's :func:`score_on_dask` and checks it gives the
in-memory results figure for figure.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import grade_kit as gk

ROOT = Path(__file__).resolve().parents[2]


def score_on_dask(store: Path, workers: int = 2, **evaluate: Any) -> gk.Evaluation:
    """``gk.evaluate(store)`` with the map step on a local Dask cluster of ``workers``
    processes (one thread each); ``evaluate`` goes to ``gk.evaluate`` as it is."""
    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:

        def on_the_cluster(function: Callable[[Any], Any], jobs: Iterable[Any]) -> list[Any]:
            return list(client.gather(client.map(function, list(jobs), pure=False)))

        return gk.evaluate(store, map_partitions=on_the_cluster, **evaluate)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        gk.pack(ROOT / "fixtures" / "tasks", ROOT / "fixtures" / "runs", store, partitions=4,
                progress=False)
        ev = score_on_dask(store, grader="rules")
        in_memory = gk.evaluate(ROOT / "fixtures" / "tasks", ROOT / "fixtures" / "runs",
                                grader="rules")
        assert ev.leaderboard.equals(in_memory.leaderboard)
        print(ev.summary)
        print("the store, scored on a Dask cluster of two worker processes, gives the "
              "in-memory results")


if __name__ == "__main__":
    main()
