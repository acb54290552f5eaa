"""``grade-kit report`` against ``grade-kit score`` on the same inputs (``make bench-report``):
wall time of each command as a user runs it (a fresh process, its own interpreter start and
exit), alternating score and report so both see the same machine, on the seeded rich inputs
of ``benchmarks/scale.py``. Prints each timing, the medians and their ratio (the report's
bound is 1.5x the score: docs/scaling.md), and writes them to
``benchmarks/results/report-<time>.json``; asserts nothing.

Usage: ``python -m benchmarks.report_bench [--runs 100000] [--repeats 3] [--inputs DIR]``
(``--inputs`` keeps the generated inputs in DIR/<runs> and reuses them).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

from benchmarks.bench import figures_header, save_figures
from benchmarks.scale import write_inputs


def _timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--inputs", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = (args.inputs or Path(tmp)) / str(args.runs)
        if not (folder / "runs.jsonl").is_file():
            folder.mkdir(parents=True, exist_ok=True)
            write_inputs(folder, args.runs)
        given = [str(folder / "tasks.jsonl"), str(folder / "runs.jsonl"),
                 "--judgements", str(folder / "judgements.jsonl"),
                 "--grades", str(folder / "grades.jsonl")]
        tool = [sys.executable, "-m", "grade_kit.cli"]
        timings: dict[str, list[float]] = {"score": [], "report": []}
        for k in range(args.repeats):
            for command in ("score", "report"):
                out = Path(tmp) / f"out-{command}"
                shutil.rmtree(out, ignore_errors=True)
                extra = ["--quiet"] if command == "score" else []
                seconds = _timed([*tool, command, *given, "--out", str(out), *extra])
                timings[command].append(round(seconds, 3))
                print(f"  {k + 1}/{args.repeats} {command:<7} {seconds:7.2f} s", flush=True)
    score, report = median(timings["score"]), median(timings["report"])
    print(f"{args.runs:,} runs: score median {score:.2f} s, report median {report:.2f} s, "
          f"report/score {report / score:.2f}x")
    save_figures({**figures_header(), "runs": args.runs, "timings_s": timings,
                  "score_median_s": score, "report_median_s": report,
                  "ratio": round(report / score, 3)}, prefix="report-")


if __name__ == "__main__":
    main()
