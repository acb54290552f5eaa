"""Evidence linkage and structure & usability from recorded judgements (DESIGN.md §4)."""

from __future__ import annotations

import polars as pl

from grade_kit.frames import Frame, like, to_polars
from grade_kit.schema import JUDGED_DIMENSIONS

__all__ = ["JUDGED_DIMENSIONS", "judged_scores"]



def _judged_scores(judgements: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    out = runs.select("run_id", "task_id", "has_response")
    for dim in JUDGED_DIMENSIONS:
        part = judgements.filter(pl.col("dimension") == dim).select(
            "run_id", pl.col("score").alias(dim), pl.col("method").alias(f"{dim}_method"))
        out = out.join(part, on="run_id", how="left")
        defined = pl.col(dim).is_not_null().any().over("task_id")
        silent = ~pl.col("has_response") & defined
        out = out.with_columns(
            pl.when(silent).then(0.0).when(pl.col("has_response")).then(pl.col(dim))
            .otherwise(None).alias(dim),
            pl.when(silent).then(pl.lit("no_response"))
            .when(pl.col("has_response")).then(pl.col(f"{dim}_method"))
            .otherwise(None).alias(f"{dim}_method"),
        )
    return out.drop("has_response", "task_id")


def judged_scores(judgements: Frame, runs: Frame) -> Frame:
    """Per-run evidence linkage and structure & usability from recorded judgements.

    A task defines a judged dimension when some run of that task (any setup) has a non-null
    judgement for it; otherwise the dimension is null for every run of the task, never 0.
    Where it is defined, a run with no response scores 0 (DESIGN.md §4) and a delivered run
    without a judgement, or with a null one, stays null.

    Returns:
        run_id, evidence_linkage, evidence_linkage_method, structure_usability,
        structure_usability_method (one row per run).
    """
    return like(_judged_scores(to_polars(judgements), to_polars(runs)), runs)
