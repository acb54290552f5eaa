"""Evaluating a packed store (docs/scaling.md): GRADE scores one partition at a time (the
map step, :func:`score_partition`, any executor's), then the reduce and the standard's
statistics; run files too big for one pass in memory go through a temporary store packed in
a fresh process. :func:`rule_grade_records` is the rule grader's step of either path."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import weakref
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeAlias, cast

import polars as pl

from grade_kit._gc import gc_paused
from grade_kit._progress import Step, stage_progress
from grade_kit.frames import EvalData
from grade_kit.judges.rule_grader import RULE_GRADER, rule_grades
from grade_kit.pipeline.scored import Evaluation, FrameKind, conclude
from grade_kit.reading.inputs import Inputs
from grade_kit.reading.io import Records, is_in_memory
from grade_kit.reading.packed import (
    StoreRuns,
    pack,
    partition_data,
    read_light_frames,
    read_manifest,
    read_task_frames,
    store_records,
)
from grade_kit.reading.prices import Prices
from grade_kit.schema import InputError
from grade_kit.scorers import (
    PartitionScores,
    combine_scores,
    fact_checks,
    partition_scores,
)
from grade_kit.standard.clustered import Cluster

"""The map step (:func:`score_partition`), the reduce step
(:func:`~grade_kit.scorers.combine_scores`) and a partition's frames
(:func:`~grade_kit.reading.packed.partition_data`) are the API of scaling out
(docs/scaling.md)."""

MapPartitions: TypeAlias = Callable[[Callable[[Any], Any], Iterable[Any]], Iterable[Any]]
"""A ``map(function, jobs)``: the built-in one, an executor's, or a distributed engine's."""

STORE_STAGES = ("read store", "GRADE scores", "standard statistics", "results")
"""The stages of :func:`evaluate` on a packed store, as its progress bar names them."""


_PACK_APART = """
import contextlib, json, os, sys, threading, time
from grade_kit.schema import InputError
from grade_kit.reading.packed import pack
arguments = json.loads(sys.argv[1])
parent = arguments.pop("parent")

def orphaned():  # the caller is gone (killed): nobody will read the store, so stop
    while os.getppid() == parent:
        time.sleep(0.2)
    os._exit(1)

threading.Thread(target=orphaned, daemon=True).start()
try:
    with contextlib.redirect_stdout(sys.stderr):  # its lines per chunk, when asked for
        pack(**arguments)
except Exception as error:
    print(json.dumps({"error": type(error).__name__, "message": str(error),
                      "input": isinstance(error, InputError)}))
    sys.exit(1)
"""


def _pack_apart(tasks: Records, runs: Records, store: Path, judgements: Records | None,
                grades: Records | None, packs: Path | str | None, progress: bool) -> None:
    """:func:`~grade_kit.reading.packed.pack` in a fresh Python process when every input is a path
    (so what packing held is not left in this one; a subprocess, not multiprocessing, so
    a script without a ``__main__`` guard works too), else here. With ``progress``, its
    line per chunk goes to stderr. The process stops when this one is gone (killed), and is
    killed when this call ends by an exception (SIGTERM too, in the CLI)."""
    given = {"tasks": tasks, "runs": runs, "judgements": judgements, "grades": grades}
    if any(is_in_memory(value) for value in given.values() if value is not None):
        pack(tasks, runs, store, judgements=judgements, grades=grades, packs=packs,
             progress=progress)
        return

    def plain(value: Records | Path | str | None) -> str | list[str] | None:
        if value is None or isinstance(value, str | Path):
            return None if value is None else str(value)
        return [str(path) for path in cast(Sequence[Path | str], value)]

    arguments = {**{name: plain(value) for name, value in given.items()},
                 "out": str(store), "packs": plain(packs), "progress": progress,
                 "parent": os.getpid()}
    done = subprocess.run([sys.executable, "-c", _PACK_APART, json.dumps(arguments)],
                          stdout=subprocess.PIPE, stderr=None if progress else subprocess.PIPE,
                          text=True, check=False)
    if done.returncode == 0:
        return
    lines = done.stdout.strip().splitlines()
    failure = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else None
    if failure is None:
        raise RuntimeError(f"packing the runs into a temporary store failed: "
                           f"{(done.stderr or 'see above').strip()[-2000:]}")
    if failure["input"]:
        raise InputError(failure["message"])
    raise RuntimeError(f"packing the runs into a temporary store failed: "
                       f"{failure['error']}: {failure['message']}")


def evaluate_through_store(tasks: Records, runs: Records, size: int,
                            judgements: Records | None, grades: Records | None,
                            packs: Path | str | None, grader: str | None,
                            repeats: int | None, frames: FrameKind, seed: int,
                            exclude_channel_overhead: bool,
                            map_partitions: MapPartitions | None, progress: bool,
                            arguments: dict[str, Any], *,
                            cluster: Cluster = "question",
                            prices: Prices | None = None) -> Evaluation:
    """:func:`evaluate` of run files too big for one pass in memory: packed into a
    temporary store (removed when the evaluation is), then scored as a store."""
    folder = Path(tempfile.mkdtemp(prefix="grade-kit-store-"))
    try:  # from here on, however the call ends (SIGTERM too, in the CLI), the folder goes
        print(f"grade_kit: {size / 1e9:.2f} GB of runs: scoring them through a temporary "
              f"packed store in {folder}, one partition at a time, to bound memory "
              "(docs/scaling.md)", file=sys.stderr, flush=True)
        _pack_apart(tasks, runs, folder / "store", judgements, grades, packs, progress)
        with gc_paused(), stage_progress(STORE_STAGES, progress) as step:
            evaluation = evaluate_store(folder / "store", grader, repeats, frames, seed,
                                         arguments, exclude_channel_overhead, map_partitions,
                                         step, cluster=cluster, prices=prices)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    weakref.finalize(evaluation, shutil.rmtree, folder, ignore_errors=True)
    return evaluation


def rule_grade_records(data: EvalData, per_run: pl.DataFrame,
                        matches: pl.DataFrame) -> pl.DataFrame:
    """The rule grader's records for every scored run of ``data`` that has none recorded."""
    grade_runs = data.runs.join(per_run.select("run_id"), on="run_id", how="semi")
    checks = fact_checks(data.facts, grade_runs, data.metrics)
    assert isinstance(checks, pl.DataFrame)
    return rule_grades(grade_runs, data.items, data.metrics, matches, checks, data.grades)


def score_partition(job: tuple[str, int, bool]) -> tuple[PartitionScores, pl.DataFrame | None]:
    """The map step of :func:`evaluate` on a packed store, for one partition: its
    :func:`~grade_kit.scorers.partition_scores` (the matched answer text left on disk, which
    :meth:`Evaluation.explain` reads back for one run) and, when asked, the rule grader's
    records. A module-level function of plain arguments, so any executor can run it.

    Args:
        job: (store folder, partition, whether to run the rule grader).
    """
    store, partition, rules = job
    data = partition_data(store, partition)
    scored = partition_scores(data)
    graded = rule_grade_records(data, scored.runs, scored.matches) if rules else None
    return PartitionScores(
        runs=scored.runs, consistency=scored.consistency,
        matches=scored.matches.with_columns(matched_text=pl.lit(None, pl.String))), graded


def evaluate_store(store: Path, grader: str | None, repeats: int | None, frames: FrameKind,
                    seed: int, arguments: dict[str, Any],
                    exclude_channel_overhead: bool,
                    map_partitions: MapPartitions | None = None,
                    step: Step = lambda _: None, *,
                    cluster: Cluster = "question",
                    prices: Prices | None = None) -> Evaluation:
    """:func:`evaluate` on a packed store (docs/scaling.md): GRADE scores one partition at a
    time (a task's runs never span two), then the reduce over tasks, tracks, packs and setups
    and the standard's statistics over the per-run frames, which are read whole."""
    step("read store")
    manifest = read_manifest(store)
    tf = read_task_frames(store)
    whole = read_light_frames(store)
    jobs = [(str(store), k, grader == "rules") for k in range(int(manifest["partitions"]))]
    step("GRADE scores")
    parts: list[PartitionScores] = []
    rule_records: list[pl.DataFrame] = []
    for scored, rules in (map_partitions or map)(score_partition, jobs):
        parts.append(scored)
        if rules is not None:
            rule_records.append(rules)
    scores = combine_scores(parts, tf["tasks"], tf["weights"])
    del parts  # combined: the partitions' own frames go before the statistics start
    graders = sorted(set(whole["grades"].get_column("grader").unique().to_list()))
    if grader == "rules":
        whole["grades"] = pl.concat([whole["grades"], *rule_records], how="vertical")
        graders.append(RULE_GRADER)
    del rule_records
    data = EvalData.from_frames({**tf, **whole}, extra={"store": str(store)})
    inputs = Inputs(runs=StoreRuns(store, manifest), **store_records(store, manifest))
    return conclude(
        inputs, data, scores, frames, repeats, seed, exclude_channel_overhead, step,
        cluster=cluster, prices=prices, arguments=dict(arguments),
        judges=sorted(set(whole["judgements"].get_column("judge").unique().to_list())),
        graders=graders)
