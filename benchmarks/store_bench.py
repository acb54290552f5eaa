"""Packed stores (``make bench-store``): memory and time of ``grade-kit pack`` and of
``gk.evaluate(store)`` (one partition after another, and on two worker processes) against
``gk.evaluate`` on the same JSONL in memory, whatever its size (in one pass, and split by
task on two workers), on the seeded rich inputs of ``benchmarks/scale.py``. Each measurement runs in
a fresh process, so its peak RSS is its own. Prints figures and writes them to
``benchmarks/results/store-<time>.json``; asserts nothing.

Usage: ``python -m benchmarks.store_bench [--sizes 100000 300000] [--partitions 16]
[--no-memory]`` (``--no-memory`` skips the in-memory evaluation, for sizes that do not fit).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.bench import figures_header, save_figures
from benchmarks.scale import write_inputs

CHILD = """
import json, resource, sys, time
from pathlib import Path
import grade_kit as gk
from grade_kit.packed import pack
kind, folder = sys.argv[1], Path(sys.argv[2])
if kind.startswith("memory"):  # in memory whatever the size: the comparison made here
    import grade_kit.evaluation
    grade_kit.evaluation.STORE_ABOVE_BYTES = 1 << 62
paths = {k: folder / f"{k}.jsonl" for k in ("tasks", "runs", "judgements", "grades")}
started = time.perf_counter()
if kind == "pack":
    pack(paths["tasks"], paths["runs"], folder / "store", judgements=paths["judgements"],
         grades=paths["grades"], partitions=int(sys.argv[3]), progress=False)
elif kind == "store":
    gk.evaluate(folder / "store").write(folder / "out-store")
elif kind == "store-2-workers":
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context
    with ProcessPoolExecutor(2, mp_context=get_context("spawn")) as pool:
        gk.evaluate(folder / "store", map_partitions=pool.map).write(folder / "out-workers")
elif kind == "memory-2-workers":
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context
    with ProcessPoolExecutor(2, mp_context=get_context("spawn")) as pool:
        gk.evaluate(paths["tasks"], paths["runs"], judgements=paths["judgements"],
                    grades=paths["grades"], map_partitions=pool.map).write(
                        folder / "out-memory-workers")
else:
    gk.evaluate(paths["tasks"], paths["runs"], judgements=paths["judgements"],
                grades=paths["grades"]).write(folder / "out-memory")
seconds = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps({"seconds": round(seconds, 2), "peak_rss_mb": round(peak),
                  "worker_peak_rss_mb": round(workers)}))
"""


def _measure(kind: str, folder: Path, partitions: int) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", CHILD, kind, str(folder), str(partitions)],
                          capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _same_results(folder: Path) -> bool:
    def load(name: str) -> dict[str, Any]:
        data = json.loads((folder / name / "results.json").read_text(encoding="utf-8"))
        data["provenance"].pop("created_at")
        data["provenance"].pop("arguments")
        return dict(data)
    memory = load("out-memory")
    return all(load(name) == memory
               for name in ("out-store", "out-workers", "out-memory-workers"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="*", default=[100_000, 300_000])
    parser.add_argument("--partitions", type=int, default=16)
    parser.add_argument("--no-memory", action="store_true")
    args = parser.parse_args()
    figures: dict[str, Any] = {**figures_header(), "partitions": args.partitions, "sizes": []}
    for n in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            started = time.perf_counter()
            write_inputs(folder, n)
            mb = (folder / "runs.jsonl").stat().st_size / 2**20
            print(f"{n:>11,} runs: {mb:,.0f} MB of runs JSONL (generated in "
                  f"{time.perf_counter() - started:.0f} s)", flush=True)
            row: dict[str, Any] = {"runs": n, "runs_jsonl_mb": round(mb)}
            kinds = ["pack", "store", "store-2-workers"] + (
                [] if args.no_memory else ["memory", "memory-2-workers"])
            for kind in kinds:
                row[kind] = _measure(kind, folder, args.partitions)
                workers = row[kind]["worker_peak_rss_mb"]
                print(f"    {kind:<16} {row[kind]['seconds']:8.2f} s  peak RSS "
                      f"{row[kind]['peak_rss_mb']:>7,} MB"
                      + (f" (each worker at most {workers:,} MB)" if workers else ""),
                      flush=True)
            if not args.no_memory:
                row["identical_results"] = _same_results(folder)
                print("    results.json identical (store, store on 2 workers, memory on 2 "
                      f"workers vs memory): {row['identical_results']}")
            figures["sizes"].append(row)
    save_figures(figures, prefix="store-")


if __name__ == "__main__":
    main()
