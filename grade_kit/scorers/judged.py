"""Evidence linkage and structure & usability from judgements (docs/methodology.md §3)."""

from __future__ import annotations

import polars as pl

from grade_kit.frames import Frame, like, to_polars
from grade_kit.schema import JUDGED_DIMENSIONS


def _judged_scores(judgements: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    out = runs.filter(pl.col("has_response")).select("run_id")
    for dim in JUDGED_DIMENSIONS:
        part = judgements.filter(pl.col("dimension") == dim).select(
            "run_id", pl.col("score").alias(dim), pl.col("method").alias(f"{dim}_method"))
        out = out.join(part, on="run_id", how="left")
    return out


def judged_scores(judgements: Frame, runs: Frame) -> Frame:
    """Per-run evidence linkage and structure & usability from recorded judgements.

    A delivered run without a judgement, or with a null one, stays null. A run with no
    response gets no row here; :func:`grade_kit.scorers.no_response.no_response_zeros` scores it
    0 where the task defines the dimension.

    Returns:
        run_id, evidence_linkage, evidence_linkage_method, structure_usability,
        structure_usability_method (one row per run with a response).
    """
    return like(_judged_scores(to_polars(judgements), to_polars(runs)), runs)
