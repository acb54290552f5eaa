"""GRADE dimensions and their aggregation (DESIGN.md §4).

:func:`grade_scores` runs every scorer over an :class:`~grade_kit.frames.EvalData` and returns
per-run, per-task and aggregated frames; each scorer is also public on its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from grade_kit.frames import EvalData
from grade_kit.grade.calibration import calibration_scores
from grade_kit.grade.claims import ClaimJudge, claim_matches, insight_scores
from grade_kit.grade.composite import PER_RUN, aggregate_scores, composite_expr, task_scores
from grade_kit.grade.consistency import (
    cluster_findings,
    consistency_scores,
    finding_stability,
    kendall_tau_b,
    metric_variance,
    ranking_stability,
)
from grade_kit.grade.grounding import fact_checks, grounding_scores
from grade_kit.grade.judged import judged_scores

__all__ = [
    "ClaimJudge",
    "GradeScores",
    "aggregate_scores",
    "calibration_scores",
    "claim_matches",
    "cluster_findings",
    "composite_expr",
    "consistency_scores",
    "fact_checks",
    "finding_stability",
    "grade_scores",
    "grounding_scores",
    "insight_scores",
    "judged_scores",
    "kendall_tau_b",
    "long_scores",
    "metric_variance",
    "ranking_stability",
    "run_scores",
    "task_scores",
]


def run_scores(data: EvalData, judge: ClaimJudge | None = None) -> pl.DataFrame:
    """Per-run scores of every run of a GRADE task (primary runs and re-runs alike).

    Only primary runs feed the task scores; re-runs are scored so they can be reported beside
    the attempt they repeat, never in its place.

    Args:
        data: The evaluation's frames.
        judge: Optional claim fallback (see :class:`ClaimJudge`); default deterministic only.

    Returns:
        run_id, setup, task_id, repeat, is_primary, status, the five per-run dimensions and
        a ``<dimension>_method`` column for each; calibration's three shares.
    """
    grade_ids = data.tasks.filter(pl.col("kind") == "grade").select("task_id")
    runs = data.runs.join(grade_ids, on="task_id", how="inner")
    matches = claim_matches(data.claims, data.claim_terms, runs, data.items, judge)
    grounding = grounding_scores(data.facts, runs, data.metrics).with_columns(
        grounding_accuracy_method=pl.lit("deterministic"))
    out = runs.select("run_id", "setup", "task_id", "repeat", "is_primary", "status",
                      "has_response")
    for part in (grounding, insight_scores(matches, runs, data.tasks),
                 calibration_scores(matches, runs, data.tasks),
                 judged_scores(data.judgements, runs)):
        out = out.join(part, on="run_id", how="left")
    grounding_no_response = (~pl.col("has_response")) & pl.col("grounding_accuracy").is_not_null()
    return out.with_columns(
        grounding_accuracy_method=pl.when(grounding_no_response).then(pl.lit("no_response"))
        .otherwise(pl.col("grounding_accuracy_method"))
    ).sort("setup", "task_id", "repeat", "is_primary", descending=[False, False, False, True])


def long_scores(per_run: pl.DataFrame) -> pl.DataFrame:
    """The per-run scores as the long ``scores`` frame: run_id, dimension, score, method
    (null scores are left out)."""
    parts = [
        per_run.select("run_id", pl.lit(d).alias("dimension"), pl.col(d).alias("score"),
                       pl.col(f"{d}_method").alias("method"))
        for d in PER_RUN
    ]
    return pl.concat(parts).filter(pl.col("score").is_not_null())


@dataclass
class GradeScores:
    """Every GRADE frame of one evaluation."""

    runs: pl.DataFrame
    consistency: pl.DataFrame
    tasks: pl.DataFrame
    tracks: pl.DataFrame
    packs: pl.DataFrame
    overall: pl.DataFrame


def grade_scores(data: EvalData, judge: ClaimJudge | None = None) -> GradeScores:
    """Score every GRADE task of ``data`` per run, per task, per track, per pack and overall."""
    per_run = run_scores(data, judge)
    grade_ids = data.tasks.filter(pl.col("kind") == "grade").select("task_id")
    consistency = consistency_scores(
        data.runs.join(grade_ids, on="task_id", how="inner"), data.items, data.metrics)
    per_task = task_scores(per_run, consistency, data.tasks, data.weights)
    return GradeScores(
        runs=per_run,
        consistency=consistency,
        tasks=per_task,
        tracks=aggregate_scores(per_task, "track"),
        packs=aggregate_scores(per_task, "pack"),
        overall=aggregate_scores(per_task, "overall"),
    )
