"""Speed at scale (``make bench-scale``): the full pipeline on seeded synthetic inputs as rich
as real ones, stage by stage, and the standard's statistics on 10M runs read from Parquet.
Prints figures and writes them to ``benchmarks/results/scale-<time>.json``; asserts nothing.

Part 1, per size (default 100k, 300k and 1M primary runs: tasks x 10 setups x 5 repeats):
runs with 3-6 findings of 10-25 words, 4-8 metrics (numbers and strings), limitations,
recommendations, timestamps and tool calls, two judgements and a grade per run, one bad line
per hundred. First ``gk.evaluate(...).write(...)`` as a user calls it, in a fresh process
(through a temporary packed store when the runs exceed 512 MiB: 1M runs do); then the
in-memory pipeline stage by stage (read and validate, flatten, GRADE scores, aggregation,
standard statistics, typed results, writing): wall time, runs per second and peak RSS for
each, and the scaling from the smallest to the largest size.

Part 2: 10M primary runs as the tidy runs table ``gk.evaluate(...).write()`` produces
(``runs.parquet``: setup, task, repeat, status, grade, e2e_s, tool calls), read from Parquet
and summarised per setup by the standard's rules (grade counts and rates over N, E2E mean,
P50 and nearest-rank P90, timeouts and failures, unique tool calls per run).

Usage: ``python -m benchmarks.scale [--sizes 100000 300000 1000000] [--stats 10000000]``.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from benchmarks.bench import (
    PeakRSS,
    figures_header,
    measure_in_fresh_process,
    save_figures,
    stage,
)
from grade_kit.frames import EvalData
from grade_kit.reading.inputs import read_inputs
from grade_kit.scorers import combine_scores, partition_scores
from tests.shapes import Shape, write_shape

SETUPS = 10
REPEATS = 5
_VOCABULARY = ("the cancellation rate rose sharply in october across every group while attendance "
         "stayed flat for most tutors but the weakest tutor completed fewer sessions than "
         "others and the subgroup of english learners was too small to report reliably so "
         "results are suppressed where fewer than ten students remain in the data for this "
         "quarter only")
WORDS = _VOCABULARY.split()
INSIGHTS = ("October cancellations spiked well above September",
            "Tutor T-07 has the lowest completion rate of all tutors",
            "The ELL subgroup is too small to report",
            "Results for groups under 10 students are suppressed")
LIMITS = ("The data cover a single quarter only", "Attendance is recorded for completed "
          "sessions only", "No causal claim can be made from this correlation")


def _pseudo_word(n: int) -> str:
    """A letters-only word for ``n`` (one token, unlike ``w12``)."""
    letters = ""
    while True:
        n, r = divmod(n, 26)
        letters += "bcdfghjklmnpqrstvwxyzaeiou"[r]
        if n == 0:
            return "zq" + letters


def _task_words(i: int) -> list[str]:
    """Task ``i``'s own 40 words (``--per-task-vocabulary``)."""
    return [_pseudo_word(i * 40 + k) for k in range(40)]


def _per_task_claims(i: int) -> dict[str, Any]:
    """Claims written in task ``i``'s own words: every task has different synonyms, as real
    tasks do (the shared claims give the whole input 10 distinct synonyms)."""
    w = _task_words(i)
    return {
        "gold_insights": [{"id": "i1", "text": f"{w[0]} {w[1]} spiked",
                           "patterns": [[f"{w[0]}|{w[2]}", f"{w[1]}|{w[3]}"]]},
                          {"id": "i2", "text": f"{w[4]} {w[5]} {w[6]}"}],
        "required_limitations": [{"id": "l1", "text": f"{w[7]} {w[8]}",
                                  "patterns": [[f"{w[7]}|{w[9]}", w[8]]]}],
        "forbidden_claims": [{"id": "x1", "text": f"{w[10]} {w[11]} {w[12]}"}],
    }


def _task(i: int, per_task: bool = False) -> dict[str, Any]:
    return {
        "task_id": f"t{i:06d}", "track": 1 + i % 5, "pack": f"pack{i % 7}",
        "prompt": f"Question {i}: what changed in the autumn term, and why?",
        "weights": {"grounding_accuracy": 0.35, "insight_quality": 0.2,
                    "evidence_linkage": 0.15, "calibration_limitation_handling": 0.15,
                    "consistency": 0.1, "structure_usability": 0.05},
        "gold_facts": [{"id": "f1", "metric": "oct_cancel_rate", "value": 0.184,
                        "abs_tol": 0.005},
                       {"id": "f2", "metric": "weakest_tutor", "value": "T-07"},
                       {"id": "f3", "metric": "ell_n", "value": 7}],
        "gold_insights": [{"id": "i1", "text": "october cancellations spiked",
                           "patterns": [["october|oct", "spike|spiked|rose"]]},
                          {"id": "i2", "text": "t 07 lowest completion"}],
        "required_limitations": [{"id": "l1", "text": "single quarter",
                                  "patterns": [["single|one", "quarter"]]}],
        "forbidden_claims": [{"id": "x1", "text": "year over year"}],
        "evidence": {"sources": ["sessions.csv"], "entity_ids": "T-"},
        **(_per_task_claims(i) if per_task else {}),
    }


def _sentence(rng: random.Random, words: list[str] = WORDS) -> str:
    return " ".join(rng.choice(words) for _ in range(rng.randint(10, 25))).capitalize() + "."


def write_inputs(folder: Path, n_runs: int, seed: int = 42,
                 per_task: bool = False, setups: int = SETUPS) -> dict[str, Path]:
    """Tasks, runs (1% bad lines), judgements (2 per run) and grades (1 per run).

    With ``per_task``, every task has 40 words of its own, which its claims use and its
    answers mix with the shared words (a vocabulary that grows with the tasks, as real
    ones do); by default all tasks share one 60-word vocabulary and the same claims."""
    rng = random.Random(seed)
    n_tasks = max(1, n_runs // (setups * REPEATS))
    paths = {k: folder / f"{k}.jsonl" for k in ("tasks", "runs", "judgements", "grades")}
    with paths["tasks"].open("w") as f:
        for i in range(n_tasks):
            f.write(json.dumps(_task(i, per_task)) + "\n")
    start = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
    line = 0
    with paths["runs"].open("w") as runs, paths["judgements"].open("w") as judged, \
            paths["grades"].open("w") as graded:
        for i in range(n_tasks):
            for s in range(setups):
                for repeat in range(1, REPEATS + 1):
                    line += 1
                    run_id = f"s{s}-t{i:06d}-r{repeat}"
                    if line % 100 == 0:
                        runs.write('{"run_id": "' + run_id + '", "setup": \n')
                        continue
                    roll = rng.random()
                    status = ("delivered" if roll > 0.04 else
                              "timeout" if roll > 0.02 else "failed")
                    submitted = start + timedelta(seconds=line)
                    e2e = rng.lognormvariate(2.0, 0.5)
                    record: dict[str, Any] = {
                        "run_id": run_id, "setup": f"setup-{s}", "task_id": f"t{i:06d}",
                        "repeat": repeat, "status": status,
                        "events": {"submitted": submitted.isoformat()}}
                    if status != "delivered":
                        record["events"]["stopped"] = (submitted + timedelta(
                            seconds=60)).isoformat()
                        record["error"] = "no answer within 60 s"
                        runs.write(json.dumps(record) + "\n")
                        continue
                    words = WORDS + _task_words(i) if per_task else WORDS
                    findings = [_sentence(rng, words) for _ in range(rng.randint(3, 6))]
                    if rng.random() < 0.6:
                        findings[0] = rng.choice(INSIGHTS) + ". " + findings[0]
                    metrics: dict[str, Any] = {
                        "oct_cancel_rate": rng.choice([0.184, "18.4%", 0.2, 0.1841]),
                        "weakest_tutor": rng.choice(["T-07", "T-08", "t-07"]),
                        "ell_n": rng.choice([7, 8, "7"])}
                    for k in range(rng.randint(1, 5)):
                        metrics[f"m{k}"] = round(rng.random(), 4)
                    record["events"].update({
                        "first_token": (submitted + timedelta(seconds=e2e / 4)).isoformat(),
                        "received": (submitted + timedelta(seconds=e2e)).isoformat()})
                    record["response"] = {
                        "key_findings": findings,
                        "limitations": rng.sample(LIMITS, rng.randint(0, 2)),
                        "recommendations": [_sentence(rng, words)
                                            for _ in range(rng.randint(0, 2))],
                        "structured_metrics": metrics, "text": " ".join(findings)}
                    record["tool_calls"] = [
                        {"id": f"c{k}", "name": rng.choice(["sql", "python"]),
                         "started": (submitted + timedelta(seconds=k)).isoformat(),
                         "ended": (submitted + timedelta(seconds=k + 0.5)).isoformat()}
                        for k in range(rng.randint(0, 4))]
                    runs.write(json.dumps(record) + "\n")
                    for dimension in ("evidence_linkage", "structure_usability"):
                        judged.write(json.dumps({
                            "run_id": run_id, "dimension": dimension,
                            "score": round(rng.random(), 2), "judge": "bench"}) + "\n")
                    core = rng.choice(["correct", "correct", "material_error"])
                    graded.write(json.dumps({
                        "run_id": run_id, "core_conclusion": core,
                        "request_fulfilment": rng.choice(["full", "partial"]),
                        "material_error": "yes" if core == "material_error" else "no",
                        "grader": "bench"}) + "\n")
    return paths


def pipeline(n_runs: int, inputs_folder: Path | None = None, per_task: bool = False,
             setups: int = SETUPS, as_called_only: bool = False) -> dict[str, Any]:
    """Every stage of ``gk.evaluate`` and ``write`` on ``n_runs`` synthetic runs over
    ``setups`` setups (generated in a temporary folder, or kept in
    ``inputs_folder/<n_runs>[-per-task][-<setups>-setups]`` and generated only when that
    folder has none: the same seed gives the same files); ``as_called_only``: the
    measurement as a user calls it alone (each process's peak RSS and the stage where the
    scorer's falls), not the in-memory stages."""
    from grade_kit import __version__
    from grade_kit.pipeline.results import build_results
    from grade_kit.pipeline.scored import Evaluation
    from grade_kit.schema import Provenance
    from grade_kit.scorers import GradeScores
    from grade_kit.standard import standard_results

    stages: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        kept = (None if inputs_folder is None
                else inputs_folder / (f"{n_runs}{'-per-task' if per_task else ''}"
                                      + (f"-{setups}-setups" if setups != SETUPS else "")))
        if kept is not None and (kept / "done").exists():
            paths = {k: kept / f"{k}.jsonl" for k in ("tasks", "runs", "judgements", "grades")}
            made = "kept from an earlier run"
        else:
            if kept is not None:
                kept.mkdir(parents=True, exist_ok=True)
            paths = write_inputs(kept or Path(tmp), n_runs, per_task=per_task, setups=setups)
            if kept is not None:
                (kept / "done").touch()
            made = f"generated in {time.perf_counter() - started:.0f} s"
        size = paths["runs"].stat().st_size
        print(f"{n_runs:>11,} runs: {size / 2**20:,.0f} MB of runs JSONL ({made})", flush=True)
        as_called = measure_in_fresh_process("as-called", paths["runs"].parent)
        print(f"    {'gk.evaluate + write, as a user calls it':<40} "
              f"{as_called['evaluate_s'] + as_called['write_s']:8.2f} s  "
              f"(evaluate {as_called['evaluate_s']:.1f} s, write {as_called['write_s']:.1f} s"
              f"{', through a temporary store' if as_called['through_store'] else ''})  "
              f"peak RSS {as_called['peak_rss_mb']:>8,} MB"
              + (f" (packing, in its own process: {as_called['worker_peak_rss_mb']:,} MB)"
                 if as_called["through_store"] else ""), flush=True)
        print(f"    {'the scorer peaks in':<40} {as_called['peak_stage']}", flush=True)
        if as_called_only:
            return {"runs": n_runs, "setups": setups, "runs_jsonl_mb": round(size / 2**20),
                    "as_called": as_called}
        print("    in memory, stage by stage:", flush=True)
        inputs = stage("read and validate", n_runs, lambda: read_inputs(
            paths["tasks"], paths["runs"], judgements=paths["judgements"],
            grades=paths["grades"]), stages, echo=True)
        data = stage("flatten", n_runs, lambda: EvalData.from_records(
            inputs.tasks, inputs.runs, inputs.judgements, inputs.grades, inputs.run_lines),
            stages, echo=True)

        scored = stage("GRADE scores: per run and consistency", n_runs,
                       lambda: partition_scores(data), stages, echo=True)

        def aggregate() -> GradeScores:
            return combine_scores([scored], data.tasks, data.weights)

        scores = stage("aggregation", n_runs, aggregate, stages, echo=True)
        standard = stage("standard statistics", n_runs,
                          lambda: standard_results(data, None, scores.tasks), stages, echo=True)
        provenance = Provenance(grade_kit_version=__version__,
                                created_at=datetime.now(UTC).isoformat(), inputs=inputs.files,
                                arguments={}, seeds={}, judges=[], graders=[])
        results = stage("typed results", n_runs, lambda: build_results(
            scores, standard, inputs.rejected, inputs.warnings, provenance), stages, echo=True)
        evaluation = Evaluation(inputs, data, scores, standard, results, "polars")
        stage("write", n_runs, lambda: evaluation.write(Path(tmp) / "out"), stages, echo=True)
    total = sum(s["seconds"] for s in stages)
    print(f"    {'end to end':<40} {total:8.2f} s  {round(n_runs / total):>10,} runs/s  "
          f"peak RSS {max(s['peak_rss_mb'] for s in stages):>8,} MB", flush=True)
    return {"runs": n_runs, "runs_jsonl_mb": round(size / 2**20), "as_called": as_called,
            "stages": stages,
            "end_to_end_s": round(total, 3), "rejected": len(inputs.rejected),
            "peak_rss_mb": max(s["peak_rss_mb"] for s in stages)}


def write_runs_table(path: Path, n_runs: int, seed: int = 7) -> None:
    """``n_runs`` primary runs as the tidy runs table (the columns the statistics need)."""
    rng = np.random.default_rng(seed)
    per_setup = n_runs // SETUPS
    index = np.arange(n_runs)
    setup = index // per_setup
    within = index % per_setup
    status = rng.choice(np.array(["delivered", "timeout", "failed"]), n_runs,
                        p=[0.96, 0.02, 0.02])
    delivered = status == "delivered"
    grade = np.where(delivered, rng.choice(np.array(
        ["resolved", "partially_resolved", "material_error", "unresolved",
         "pending_verification"]), n_runs, p=[0.5, 0.2, 0.15, 0.1, 0.05]), "unresolved")
    e2e = np.where(delivered, np.round(rng.lognormal(2.0, 0.5, n_runs), 6), np.nan)
    frame = pl.DataFrame({
        "setup": pl.Series(setup).cast(pl.String),
        "task_id": pl.Series(within // REPEATS),
        "repeat": pl.Series(within % REPEATS + 1),
        "is_primary": pl.Series(np.ones(n_runs, dtype=bool)),
        "status": pl.Series(status), "grade": pl.Series(grade),
        "e2e_s": pl.Series(e2e).fill_nan(None),
        "tool_calls": pl.Series(np.where(delivered, rng.integers(0, 5, n_runs), -1))
        .replace(-1, None),
    })
    frame = frame.with_columns(setup=pl.lit("setup-") + pl.col("setup"),
                               task_id=pl.lit("t") + pl.col("task_id").cast(pl.String))
    frame.write_parquet(path, row_group_size=1_000_000)


def statistics_from_parquet(path: Path, repeats: int = REPEATS) -> pl.DataFrame:
    """Per setup, from the runs table, by the standard's rules (docs/methodology.md §4): the
    grade counts and rates over N = questions x R; E2E of delivered runs: n, mean
    (``math.fsum`` / n), P50 (the mean of the middle two), nearest-rank P90; timeouts and
    failures over attempted runs; mean unique tool calls per delivered run. Four lazy
    queries collected together, so polars runs them at once."""
    runs = pl.scan_parquet(path).filter(pl.col("is_primary") & (pl.col("repeat") <= repeats))
    grades = runs.group_by("setup", "grade").len()
    statuses = runs.group_by("setup", "status").len()
    questions = runs.group_by("setup").agg(questions=pl.col("task_id").n_unique(),
                                           attempted=pl.len(),
                                           tool_calls_per_run=pl.col("tool_calls").mean())
    e2e = (runs.filter(pl.col("status") == "delivered").select("setup", "e2e_s").drop_nulls()
           .group_by("setup").agg(pl.col("e2e_s").sort()))
    g, st, q, e = pl.collect_all([grades, statuses, questions, e2e])
    rows = []
    for index, setup in enumerate(e.get_column("setup")):
        ordered = e.get_column("e2e_s")[index].to_numpy()  # one setup's sorted samples
        n = len(ordered)
        rows.append({"setup": setup, "e2e_n": n,
                     "e2e_mean": math.fsum(ordered.tolist()) / n if n else None,
                     "e2e_p50": (ordered[(n - 1) // 2] + ordered[n // 2]) / 2 if n else None,
                     "e2e_p90": ordered[-(-9 * n // 10) - 1] if n else None})
    timing = pl.DataFrame(rows, schema={"setup": pl.String, "e2e_n": pl.Int64,
                                        "e2e_mean": pl.Float64, "e2e_p50": pl.Float64,
                                        "e2e_p90": pl.Float64})
    out = (q.join(g.pivot(on="grade", index="setup", values="len"), on="setup", how="left")
           .join(st.pivot(on="status", index="setup", values="len"), on="setup", how="left")
           .join(timing, on="setup", how="left")
           .with_columns(N=pl.col("questions") * repeats))
    return out.with_columns(
        not_run=pl.col("N") - pl.col("attempted"),
        **{f"{state}_rate": pl.col(state) / pl.col("N") for state in
           ("resolved", "partially_resolved", "material_error", "unresolved",
            "pending_verification") if state in out.columns}).sort("setup")


def stats_part(n_runs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "runs.parquet"
        started = time.perf_counter()
        write_runs_table(path, n_runs)
        made = time.perf_counter() - started
        with PeakRSS() as rss:
            started = time.perf_counter()
            table = statistics_from_parquet(path)
            seconds = time.perf_counter() - started
    print(f"{n_runs:>11,} runs from Parquet ({made:.1f} s to write): the standard's "
          f"statistics per setup in {seconds:.2f} s, peak RSS {rss.peak / 2**20:,.0f} MB "
          f"({table.height} setups)", flush=True)
    return {"runs": n_runs, "seconds": round(seconds, 3),
            "peak_rss_mb": round(rss.peak / 2**20)}


HELD_OUT = Shape(4000, 5, 5, (0.45, 0.45, 0.45, 0.45, 0.7), seed=62,
                 name="held-out-like: 4,000 task files x 5 setups x R 5, one setup better")
"""The held-out-like shape (issue 62): one JSON file a question, 100,000 runs, one setup
clearly better, so its comparisons reach p far below a double's range."""


def held_out_part(shape: Shape = HELD_OUT) -> dict[str, Any]:
    """``grade-kit score`` and ``grade-kit report`` of :data:`HELD_OUT`, each a fresh
    process, as a user calls them: wall time and the process's peak RSS."""
    out: dict[str, Any] = {"shape": shape.name,
                           "runs": shape.questions * shape.setups * shape.repeats}
    cli = str(Path(sys.executable).parent / "grade-kit")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        tasks = write_shape(shape, folder / "inputs")
        for command in ("score", "report"):
            started = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-c", _TIMED, cli, command, str(tasks),
                 str(folder / "inputs" / "runs.jsonl"), "--grades",
                 str(folder / "inputs" / "grades.jsonl"), "--out", str(folder / command)],
                capture_output=True, text=True, check=True)
            seconds = time.perf_counter() - started
            peak = int(done.stdout.strip().splitlines()[-1])
            out[command] = {"wall_s": round(seconds, 2), "peak_rss_mb": round(peak / 2**10)}
            print(f"held-out {command}: {seconds:.1f} s, peak RSS {peak / 2**10:.0f} MB")
    return out


_TIMED = """
import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""
"""Runs a command and prints its peak RSS in KiB (Linux's ru_maxrss)."""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="*", default=[100_000, 300_000, 1_000_000])
    parser.add_argument("--stats", type=int, default=10_000_000)
    parser.add_argument("--inputs", type=Path, default=None,
                        help="keep the generated inputs in INPUTS/<size> and reuse them "
                             "(default: a temporary folder, generated every time)")
    parser.add_argument("--per-task-vocabulary", action="store_true",
                        help="every task has words and claims of its own (default: all "
                             "tasks share one vocabulary and the same claims)")
    parser.add_argument("--setups", type=int, default=SETUPS,
                        help=f"setups (default {SETUPS}); the tasks are runs / (setups x "
                             f"{REPEATS} repeats)")
    parser.add_argument("--as-called-only", action="store_true",
                        help="only the measurement as a user calls it (each process's peak "
                             "RSS, the stage of the scorer's), not the in-memory stages")
    parser.add_argument("--held-out-only", action="store_true",
                        help="only the held-out-like shape (4,000 task files x 5 setups x "
                             "R 5), scored and reported as a user calls them")
    args = parser.parse_args()
    if args.held_out_only:
        save_figures({**figures_header(), "held_out": held_out_part()}, "scale-held-out-")
        return
    figures: dict[str, Any] = {**figures_header(),
                               "vocabulary": ("per task" if args.per_task_vocabulary
                                              else "shared"),
                               "sizes": [pipeline(size, args.inputs, args.per_task_vocabulary,
                                                  args.setups, args.as_called_only)
                                         for size in args.sizes]}
    if len(figures["sizes"]) > 1 and not args.as_called_only:
        small, large = figures["sizes"][0], figures["sizes"][-1]
        ratio = large["end_to_end_s"] / small["end_to_end_s"]
        print(f"scaling {small['runs']:,} -> {large['runs']:,} runs "
              f"(x{large['runs'] / small['runs']:g}): time x{ratio:.2f}")
        figures["scaling"] = round(ratio, 3)
    if args.stats:
        figures["statistics"] = stats_part(args.stats)
    save_figures(figures, "scale-")


if __name__ == "__main__":
    main()
