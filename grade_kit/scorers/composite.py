"""Composite scores and aggregation task -> track -> pack -> overall (docs/methodology.md §3
"Aggregation").

- task dimension = mean of its primary runs' non-null values (consistency is per task);
- task composite = project weights over the non-null dimensions, renormalised; task rubric
  score = the same with the task's own weights;
- track and pack: dimension = mean of task dimensions, composite = mean of task composites;
- overall: dimension = mean over all tasks; composite = project weights applied to the overall
  dimensions (renormalised over the non-null).

A dimension that cannot be computed is null, never 0.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from grade_kit.exact import divide, group_fmean, row_sum
from grade_kit.frames import Frame, like, to_polars
from grade_kit.schema import DIMENSIONS, PER_RUN_DIMENSIONS, PROJECT_WEIGHTS, Dimension

PER_RUN = PER_RUN_DIMENSIONS

DIMENSIONS_COMPUTED = pl.sum_horizontal(  # integers: exact in any order
    [pl.col(d).is_not_null().cast(pl.Int64) for d in DIMENSIONS]).alias("dimensions_computed")
"""How many of the six dimensions are non-null: the composite is over these alone."""


def with_composite(frame: pl.DataFrame, name: str,
                   weights: Mapping[Dimension, float] | Mapping[Dimension, pl.Expr]
                   ) -> pl.DataFrame:
    """``frame`` with column ``name`` = sum(w_d x d) / sum(w_d) over the non-null dimensions
    d; null when the sum of weights is 0 (no dimension computed, or only zero-weighted ones).

    Each sum is added left to right in the order of ``weights``
    (:func:`grade_kit.exact.row_sum`), the products are materialised first, so no optimiser
    can fuse a multiply and an add, and the division is correctly rounded
    (:func:`grade_kit.exact.divide`): a row's composite is the float Python computes, whatever
    else the frame holds.
    """
    products = {f"_w_{d}": (w if isinstance(w, pl.Expr) else pl.lit(w)) for d, w in
                weights.items()}
    staged = frame.with_columns(
        *[(pl.col(d) * w).alias(f"_p_{d}") for d, w in zip(weights, products.values(),
                                                          strict=True)],
        *[pl.when(pl.col(d).is_not_null()).then(w).otherwise(0.0).alias(f"_w_{d}")
          for d, w in zip(weights, products.values(), strict=True)],
    )
    numerator = row_sum([pl.col(f"_p_{d}") for d in weights])
    denominator = row_sum([pl.col(f"_w_{d}") for d in weights])
    quotient = divide(staged, numerator, denominator).alias(name)
    return staged.with_columns(quotient).drop(
        [f"_p_{d}" for d in weights] + [f"_w_{d}" for d in weights])


def _task_scores(run_scores: pl.DataFrame, consistency: pl.DataFrame, tasks: pl.DataFrame,
                 weights: pl.DataFrame) -> pl.DataFrame:
    grade_tasks = tasks.filter(pl.col("kind") == "grade").select("task_id", "track", "pack")
    primary = run_scores.filter(pl.col("is_primary")).join(grade_tasks, on="task_id")
    keys = ["setup", "task_id", "track", "pack"]
    per_task = (primary.group_by(keys).agg(pl.len().cast(pl.Int64).alias("runs"))
                .join(group_fmean(primary, keys, PER_RUN), on=keys, nulls_equal=True))
    per_task = per_task.join(
        consistency.select("setup", "task_id", "consistency"), on=["setup", "task_id"],
        how="left",
    )
    wide_weights = weights.group_by("task_id").agg(
        [pl.col("weight").filter(pl.col("dimension") == d).first().alias(f"w_{d}")
         for d in DIMENSIONS]
    )
    per_task = per_task.join(wide_weights, on="task_id", how="left")
    per_task = with_composite(per_task, "composite", PROJECT_WEIGHTS)
    per_task = with_composite(per_task, "rubric_score",
                              {d: pl.col(f"w_{d}") for d in DIMENSIONS})
    return per_task.with_columns(
        dimensions_computed=DIMENSIONS_COMPUTED,
    ).select("setup", "task_id", "track", "pack", "runs", *DIMENSIONS, "composite",
             "rubric_score", "dimensions_computed").sort("setup", "task_id")


def _run_composites(per_run: pl.DataFrame, weights: pl.DataFrame) -> pl.DataFrame:
    wide_weights = weights.group_by("task_id").agg(
        [pl.col("weight").filter(pl.col("dimension") == d).first().alias(f"w_{d}")
         for d in PER_RUN_DIMENSIONS])
    out = per_run.join(wide_weights, on="task_id", how="left")
    out = with_composite(out, "composite", {d: PROJECT_WEIGHTS[d] for d in PER_RUN_DIMENSIONS})
    out = with_composite(out, "rubric_score",
                         {d: pl.col(f"w_{d}") for d in PER_RUN_DIMENSIONS})
    return out.select("run_id", "composite", "rubric_score")


def run_composites(run_scores: Frame, weights: Frame) -> Frame:
    """Per run: the composite and rubric score over its five per-run dimensions
    (docs/methodology.md §3 "Per-run composite").

    Consistency is a property of a (setup, task), not of one run, so a run's composite is the
    project weights renormalised over its non-null per-run dimensions, and its rubric score
    the same with the task's weights. The task composite is not their mean.

    Returns:
        run_id, composite, rubric_score.
    """
    return like(_run_composites(to_polars(run_scores), to_polars(weights)), run_scores)


def task_scores(run_scores: Frame, consistency: Frame, tasks: Frame, weights: Frame) -> Frame:
    """Per (setup, GRADE task): the six dimensions, composite and rubric score.

    Args:
        run_scores: Per-run scores (run_id, setup, task_id, is_primary and the five per-run
            dimensions), as returned by :func:`grade_kit.scorers.run_scores`.
        consistency: Per (setup, task) consistency (:func:`consistency_scores`).
        tasks: The ``tasks`` frame; plain tasks are left out.
        weights: The ``weights`` frame (the tasks' rubric weights).

    Returns:
        setup, task_id, track, pack, runs (primary runs scored), the six dimensions,
        composite, rubric_score, dimensions_computed.
    """
    result = _task_scores(to_polars(run_scores), to_polars(consistency), to_polars(tasks),
                          to_polars(weights))
    return like(result, run_scores)


def _aggregate(per_task: pl.DataFrame, level: str) -> pl.DataFrame:
    keys = ["setup"] if level == "overall" else ["setup", level]
    out = (per_task.group_by(keys).agg(pl.len().cast(pl.Int64).alias("tasks"))
           .join(group_fmean(per_task, keys, [*DIMENSIONS, "composite"]), on=keys,
                 nulls_equal=True))
    if level == "overall":
        out = with_composite(out, "composite", PROJECT_WEIGHTS)
    return out.with_columns(dimensions_computed=DIMENSIONS_COMPUTED).sort(keys)


def aggregate_scores(task_scores: Frame, level: str) -> Frame:
    """Aggregate task scores to ``track``, ``pack`` or ``overall`` per setup.

    Track and pack: each dimension is the mean of the task dimensions, the composite the mean
    of the task composites. Overall: each dimension is the mean over all tasks, the composite
    the project weights applied to those overall dimensions (renormalised over non-null).

    Returns:
        setup, [track | pack,] tasks, the six dimensions, composite, dimensions_computed.
    """
    if level not in ("track", "pack", "overall"):
        raise ValueError(f"level must be track, pack or overall, not {level!r}")
    return like(_aggregate(to_polars(task_scores), level), task_scores)
