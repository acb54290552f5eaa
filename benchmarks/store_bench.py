"""Packed stores (``make bench-store``): memory and time of ``grade-kit pack`` and of
``gk.evaluate(store)`` (one partition after another, and on two worker processes) against
``gk.evaluate`` on the same JSONL in memory, whatever its size (in one pass, and split by
task on two workers), on the seeded rich inputs of ``benchmarks/scale.py``. Each
measurement runs in a fresh process (``benchmarks.bench.measure_in_fresh_process``), so its
peak RSS is its own. Prints figures and writes them to
``benchmarks/results/store-<time>.json``; asserts nothing.

Usage: ``python -m benchmarks.store_bench [--sizes 100000 300000] [--partitions 16]
[--no-memory]`` (``--no-memory`` skips the in-memory evaluation, for sizes that do not fit).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.bench import figures_header, measure_in_fresh_process, save_figures
from benchmarks.scale import write_inputs


def _same_results(folder: Path) -> bool:
    def load(name: str) -> dict[str, Any]:
        data = json.loads((folder / name / "results.json").read_text(encoding="utf-8"))
        data["provenance"].pop("created_at")
        data["provenance"].pop("arguments")
        return dict(data)
    memory = load("out-memory")
    return all(load(name) == memory
               for name in ("out-store", "out-store-2-workers", "out-memory-2-workers"))


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
                row[kind] = measure_in_fresh_process(kind, folder, args.partitions)
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
