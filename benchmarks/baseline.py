"""``grade-kit score`` of this checkout against an earlier revision, on the same inputs, in
the same run (``make bench-baseline``): the speed reference of docs/scaling.md is 07dee30.

The revision is checked out beside this one (``git worktree``, removed after) and both run
with this environment's Python and packages, each ``grade-kit score`` as a user runs it (a
fresh process: interpreter start to exit), the two alternating within each round (which goes
first alternates too) so both see the same machine. Inputs are the seeded ones of
``benchmarks/scale.py``, per shape (``per-task``: a vocabulary per task; ``rich``: one shared
vocabulary). Prints each timing and peak RSS, the medians and their ratio (this / baseline),
and writes them to ``benchmarks/results/baseline-<time>.json``; asserts nothing. The outputs
are not compared: a baseline from before a statistic was added does not compute it.

Usage: ``python -m benchmarks.baseline [--rev 07dee30] [--runs 100000] [--rounds 3]
[--shapes per-task rich] [--inputs DIR]`` (``--inputs`` keeps the generated inputs in
DIR/<shape>-<runs> and reuses them).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

from benchmarks.bench import figures_header, save_figures
from benchmarks.scale import write_inputs

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = "07dee30"
"""The revision docs/scaling.md measures against (main before issue 51's clustered
uncertainty and issue 52's layers)."""


def _score(checkout: Path, inputs: Path, out: Path) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one ``grade-kit score`` of ``inputs`` by the code
    of ``checkout`` (run from there: its ``grade_kit`` is the one imported)."""
    shutil.rmtree(out, ignore_errors=True)
    command = [sys.executable, "-m", "grade_kit.cli", "score",
               str(inputs / "tasks.jsonl"), str(inputs / "runs.jsonl"),
               "--judgements", str(inputs / "judgements.jsonl"),
               "--grades", str(inputs / "grades.jsonl"), "--out", str(out), "--quiet"]
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=checkout, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"grade-kit score at {checkout} exited {process.returncode}")
    return seconds, usage.ru_maxrss / 1024  # KiB on Linux


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rev", default=REFERENCE)
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--shapes", nargs="+", choices=("per-task", "rich"),
                        default=["per-task", "rich"])
    parser.add_argument("--inputs", type=Path, default=None)
    args = parser.parse_args()
    known = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{args.rev}^{{commit}}"],
                           cwd=ROOT, capture_output=True, check=False)
    if known.returncode != 0:
        sys.exit(f"error: {args.rev} is not a commit of this clone's history (a shallow "
                 "clone? `git fetch --unshallow`)")
    figures: dict[str, object] = {**figures_header(), "baseline": args.rev, "runs": args.runs}
    with tempfile.TemporaryDirectory() as tmp:
        baseline = Path(tmp) / "baseline"
        subprocess.run(["git", "worktree", "add", "--detach", str(baseline), args.rev],
                       cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        try:
            for shape in args.shapes:
                inputs = (args.inputs or Path(tmp)) / f"{shape}-{args.runs}"
                if not (inputs / "runs.jsonl").is_file():
                    inputs.mkdir(parents=True, exist_ok=True)
                    write_inputs(inputs, args.runs, per_task=shape == "per-task")
                builds = {args.rev: baseline, "this": ROOT}
                taken: dict[str, list[tuple[float, float]]] = {name: [] for name in builds}
                for k in range(args.rounds):
                    for name in (list(builds) if k % 2 == 0 else list(builds)[::-1]):
                        seconds, peak = _score(builds[name], inputs, Path(tmp) / "out")
                        taken[name].append((round(seconds, 2), round(peak)))
                        print(f"  {shape} {k + 1}/{args.rounds} {name:<8} {seconds:6.2f} s "
                              f"{peak:6.0f} MiB", flush=True)
                medians = {name: median(s for s, _ in runs) for name, runs in taken.items()}
                ratio = medians["this"] / medians[args.rev]
                print(f"{shape}, {args.runs:,} runs: {args.rev} {medians[args.rev]:.2f} s, "
                      f"this {medians['this']:.2f} s, x{ratio:.2f}")
                figures[shape] = {"timings_s_peak_mib": taken, "median_s": medians,
                                  "ratio": round(ratio, 3)}
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(baseline)],
                           cwd=ROOT, check=False)
    save_figures(figures, prefix="baseline-")


if __name__ == "__main__":
    main()
