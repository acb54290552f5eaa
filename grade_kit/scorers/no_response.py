"""The one rule for a run with no response (docs/methodology.md §3 "No response").

A run that is not ``delivered`` (or carries no response) scores 0 on every per-run dimension
the task *defines*, and stays null on the others (never 0):

- grounding accuracy: the task has gold facts;
- insight quality: the task has gold insights;
- calibration & limitation handling: the task has required limitations, forbidden claims or
  ``calibration: true`` insights;
- a judged dimension: some run of the task (any setup) has a non-null judgement for it.

Every scorer leaves such runs out; :func:`no_response_zeros` is the only place they are scored.
"""

from __future__ import annotations

import polars as pl

from grade_kit.schema import JUDGED_DIMENSIONS

NO_RESPONSE = "no_response"
"""The ``method`` recorded for a 0 given to a run with no response."""


def defined_dimensions(tasks: pl.DataFrame, judgements: pl.DataFrame,
                       runs: pl.DataFrame) -> pl.DataFrame:
    """Per GRADE task, which per-run dimensions it defines (see the module docstring).

    Returns:
        task_id and one boolean column per per-run dimension.
    """
    judged = (judgements.filter(pl.col("score").is_not_null())
              .join(runs.select("run_id", "task_id"), on="run_id")
              .group_by("task_id").agg(
                  [(pl.col("dimension") == d).any().alias(d) for d in JUDGED_DIMENSIONS]))
    return (tasks.filter(pl.col("kind") == "grade")
            .select("task_id",
                    grounding_accuracy=pl.col("n_facts") > 0,
                    insight_quality=pl.col("n_insights") > 0,
                    calibration_limitation_handling=(
                        pl.col("n_limitations") + pl.col("n_forbidden")
                        + pl.col("n_calibration")) > 0)
            .join(judged, on="task_id", how="left")
            .with_columns([pl.col(d).fill_null(False) for d in JUDGED_DIMENSIONS]))


def no_response_zeros(per_run: pl.DataFrame, defined: pl.DataFrame) -> pl.DataFrame:
    """``per_run`` with 0 (method ``no_response``) on every dimension a run without a response
    has and its task defines; every other value unchanged.

    Args:
        per_run: run_id, task_id, has_response and, per per-run dimension d, columns d and
            ``d_method``.
        defined: :func:`defined_dimensions`.
    """
    dims = [c for c in defined.columns if c != "task_id"]
    flags = defined.rename({d: f"_defines_{d}" for d in dims})
    out = per_run.join(flags, on="task_id", how="left")
    silent = ~pl.col("has_response")
    return out.with_columns(
        *[pl.when(silent & pl.col(f"_defines_{d}")).then(pl.lit(0.0)).otherwise(pl.col(d))
          .alias(d) for d in dims],
        *[pl.when(silent & pl.col(f"_defines_{d}")).then(pl.lit(NO_RESPONSE))
          .otherwise(pl.col(f"{d}_method")).alias(f"{d}_method") for d in dims],
    ).drop([f"_defines_{d}" for d in dims])
