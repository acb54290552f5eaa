"""GRADE dimensions and their aggregation (docs/methodology.md §3).

:func:`grade_scores` runs every scorer over an :class:`~grade_kit.frames.EvalData` and returns
per-run, per-task and aggregated frames; each scorer is also public on its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import polars as pl

from grade_kit.frames import COLUMNS, EvalData, frames_repr, frames_repr_html, in_run_order
from grade_kit.schema import PER_RUN_DIMENSIONS
from grade_kit.scorers.calibration import calibration_scores
from grade_kit.scorers.claims import (
    DETERMINISTIC,
    ClaimJudge,
    claim_matches,
    insight_scores,
)
from grade_kit.scorers.composite import (
    aggregate_scores,
    run_composites,
    task_scores,
    with_composite,
)
from grade_kit.scorers.consistency import (
    cluster_findings,
    consistency_scores,
    finding_stability,
    kendall_tau_b,
    metric_variance,
    ranking_stability,
)
from grade_kit.scorers.grounding import fact_checks, grounding_scores
from grade_kit.scorers.judged import judged_scores
from grade_kit.scorers.no_response import defined_dimensions, no_response_zeros

__all__ = [
    "ClaimJudge",
    "GradeScores",
    "PartitionScores",
    "aggregate_scores",
    "calibration_scores",
    "claim_matches",
    "cluster_findings",
    "combine_scores",
    "consistency_scores",
    "defined_dimensions",
    "fact_checks",
    "finding_stability",
    "grade_scores",
    "grounding_scores",
    "insight_scores",
    "judged_scores",
    "kendall_tau_b",
    "long_scores",
    "long_scores_query",
    "metric_variance",
    "no_response_zeros",
    "partition_scores",
    "ranking_stability",
    "run_composites",
    "run_scores",
    "task_scores",
    "with_composite",
]


def run_scores(data: EvalData, claim_judge: ClaimJudge | None = None) -> pl.DataFrame:
    """Per-run scores of every run of a GRADE task (primary runs and re-runs alike).

    Only primary runs feed the task scores; re-runs are scored so they can be reported beside
    the attempt they repeat, never in its place. A run with no response is scored by the one
    rule of :mod:`grade_kit.scorers.no_response`.

    Args:
        data: The evaluation's frames.
        claim_judge: Optional claim judge, asked only about claims the deterministic match
            missed (see :class:`ClaimJudge`); default None (deterministic only).

    Returns:
        run_id, setup, task_id, repeat, is_primary, status, has_response, the five per-run
        dimensions and a ``<dimension>_method`` column for each, the three calibration shares,
        facts_passed and facts_total.
    """
    runs = _grade_runs(data)
    matches = claim_matches(data.claims, data.claim_terms, runs, data.items, claim_judge)
    return _run_scores(data, runs, matches)


def _grade_runs(data: EvalData) -> pl.DataFrame:
    grade_ids = data.tasks.filter(pl.col("kind") == "grade").select("task_id")
    return data.runs.join(grade_ids, on="task_id", how="inner")


def _run_scores(data: EvalData, runs: pl.DataFrame, matches: pl.DataFrame) -> pl.DataFrame:
    # (Any row order: every part is joined to ``out`` by run_id, and in_run_order sorts.)
    grounding = grounding_scores(data.facts, runs, data.metrics).with_columns(
        grounding_accuracy_method=pl.lit(DETERMINISTIC))
    out = runs.select("run_id", "setup", "task_id", "repeat", "is_primary", "status",
                      "has_response")
    for part in (grounding, insight_scores(matches, runs, data.tasks),
                 calibration_scores(matches, runs, data.tasks),
                 judged_scores(data.judgements, runs)):
        out = out.join(part, on="run_id", how="left")
    out = no_response_zeros(out, defined_dimensions(data.tasks, data.judgements, data.runs))
    return in_run_order(out)


def long_scores(per_run: pl.DataFrame, keys: Sequence[str] = ("run_id",)) -> pl.DataFrame:
    """The per-run scores as the long ``scores`` frame: run_id, dimension, score, method
    (null scores are left out), one dimension after another, runs in ``per_run``'s order.

    Args:
        per_run: :func:`run_scores`.
        keys: The per-run columns each row starts with; default just ``run_id``.
    """
    return long_scores_query(per_run.lazy(), keys).collect()


def long_scores_query(per_run: pl.LazyFrame,
                      keys: Sequence[str] = ("run_id",)) -> pl.LazyFrame:
    """:func:`long_scores` as a lazy query, which a streaming sink writes a part at a time
    (``scores.parquet`` at 1M runs: 0.9 GB less at its peak than a collected frame,
    docs/scaling.md)."""
    parts = [
        per_run.select(*keys, pl.lit(d).alias("dimension"), pl.col(d).alias("score"),
                       pl.col(f"{d}_method").alias("method"))
        for d in PER_RUN_DIMENSIONS
    ]
    return pl.concat(parts).filter(pl.col("score").is_not_null()).cast(
        pl.Schema(COLUMNS["scores"]))


@dataclass(frozen=True, repr=False)
class GradeScores:
    """Every GRADE frame of one evaluation (polars).

    Attributes:
        runs: :func:`run_scores` (one row per run of a GRADE task).
        consistency: Per (setup, task): the three sub-metrics and consistency.
        tasks: Per (setup, task): six dimensions, composite, rubric score.
        tracks: Per (setup, track) aggregates.
        packs: Per (setup, pack) aggregates.
        overall: Per setup: the overall aggregate (the leaderboard's GRADE part).
        matches: Every (run, claim) decision (:func:`claim_matches`), for explanations.
    """

    runs: pl.DataFrame
    consistency: pl.DataFrame
    tasks: pl.DataFrame
    tracks: pl.DataFrame
    packs: pl.DataFrame
    overall: pl.DataFrame
    matches: pl.DataFrame

    def __repr__(self) -> str:
        return frames_repr("GradeScores", vars(self))

    def _repr_html_(self) -> str:
        return frames_repr_html("GradeScores", vars(self))


@dataclass(frozen=True, repr=False)
class PartitionScores:
    """The GRADE frames of one partition of runs (every run of a task in the same one):
    what :func:`partition_scores` maps and :func:`combine_scores` reduces.

    Attributes:
        runs: :func:`run_scores` of the partition.
        consistency: Per (setup, task) of the partition.
        matches: Every (run, claim) decision of the partition.
    """

    runs: pl.DataFrame
    consistency: pl.DataFrame
    matches: pl.DataFrame

    def __repr__(self) -> str:
        return frames_repr("PartitionScores", vars(self))


def partition_scores(data: EvalData, claim_judge: ClaimJudge | None = None) -> PartitionScores:
    """The per-run scores, consistency and claim matches of ``data`` (docs/methodology.md §3):
    the map step. Every figure depends only on the runs of one task, so any split of the runs
    that keeps each task's runs together gives the same rows (docs/scaling.md)."""
    grade_runs = _grade_runs(data)
    # Consistency is independent of the claims: it runs on a second thread, its Python
    # (the clustering) while the claim matching's polars queries run here.
    with ThreadPoolExecutor(max_workers=1) as pool:
        consistency = pool.submit(consistency_scores, grade_runs, data.items, data.metrics)
        matches = claim_matches(data.claims, data.claim_terms, grade_runs, data.items,
                                claim_judge)
        runs = _run_scores(data, grade_runs, matches)
        return PartitionScores(runs=runs, consistency=consistency.result(), matches=matches)


def combine_scores(parts: Sequence[PartitionScores], tasks: pl.DataFrame,
                   weights: pl.DataFrame) -> GradeScores:
    """The reduce step: the partitions' frames stacked, then scored per task, track, pack and
    overall (docs/methodology.md §3 "Aggregation").

    Args:
        parts: At least one :class:`PartitionScores` (their tasks disjoint).
        tasks: The ``tasks`` frame of every task.
        weights: The ``weights`` frame of every task.
    """
    if not parts:
        raise ValueError("combine_scores needs at least one partition")
    per_run = in_run_order(pl.concat([p.runs for p in parts]))
    consistency = pl.concat([p.consistency for p in parts])
    per_task = task_scores(per_run, consistency, tasks, weights)
    return GradeScores(
        runs=per_run,
        consistency=consistency,
        tasks=per_task,
        tracks=aggregate_scores(per_task, "track"),
        packs=aggregate_scores(per_task, "pack"),
        overall=aggregate_scores(per_task, "overall"),
        matches=pl.concat([p.matches for p in parts]),
    )


def grade_scores(data: EvalData, claim_judge: ClaimJudge | None = None) -> GradeScores:
    """Score every GRADE task of ``data`` per run, per task, per track, per pack and overall
    (docs/methodology.md §3). A claim judge, when given, is asked once per missed claim.

    The same as :func:`combine_scores` over :func:`partition_scores` of any split of ``data``
    by task (this is the one-partition case)."""
    return combine_scores([partition_scores(data, claim_judge)], data.tasks, data.weights)
