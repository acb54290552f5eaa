"""Evidence linkage and structure & usability from recorded judgements (DESIGN.md §4)."""

from __future__ import annotations

import polars as pl

from grade_kit.frames import Frame, like, to_polars

__all__ = ["JUDGED_DIMENSIONS", "judged_scores"]

JUDGED_DIMENSIONS = ("evidence_linkage", "structure_usability")


def _judged_scores(judgements: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    available = set(judgements.get_column("dimension").unique().to_list())
    out = runs.select("run_id", "has_response")
    for dim in JUDGED_DIMENSIONS:
        part = judgements.filter(pl.col("dimension") == dim).select(
            "run_id", pl.col("score").alias(dim), pl.col("method").alias(f"{dim}_method"))
        out = out.join(part, on="run_id", how="left")
        if dim in available:
            out = out.with_columns(
                pl.when(pl.col("has_response")).then(pl.col(dim)).otherwise(0.0).alias(dim),
                pl.when(pl.col("has_response")).then(pl.col(f"{dim}_method"))
                .otherwise(pl.lit("no_response")).alias(f"{dim}_method"),
            )
    return out.drop("has_response")


def judged_scores(judgements: Frame, runs: Frame) -> Frame:
    """Per-run evidence linkage and structure & usability from recorded judgements.

    A dimension is scored only when some judgement for it was supplied (or produced by a
    judge); otherwise it is null for every run, never 0. Where it is scored, a run with no
    response scores 0 (DESIGN.md §4) and a delivered run without a judgement stays null.

    Returns:
        run_id, evidence_linkage, evidence_linkage_method, structure_usability,
        structure_usability_method (one row per run).
    """
    return like(_judged_scores(to_polars(judgements), to_polars(runs)), runs)
