"""Calibration & limitation handling (docs/methodology.md §3 "Calibration & limitation
handling")."""

from __future__ import annotations

import polars as pl

from grade_kit.exact import row_fmean
from grade_kit.frames import Frame, like, to_polars
from grade_kit.scorers.claims import role_share


def _calibration_scores(matches: pl.DataFrame, runs: pl.DataFrame,
                        tasks: pl.DataFrame) -> pl.DataFrame:
    del tasks  # which tasks define the dimension matters only to the no-response rule
    parts = [
        role_share(matches, pl.col("role") == "limitation", "limitations_found"),
        role_share(matches, pl.col("role") == "forbidden", "forbidden_absent", invert=True),
        role_share(matches, (pl.col("role") == "insight") & pl.col("calibration"),
                    "calibration_insights_found"),
    ]
    answered = runs.filter(pl.col("has_response")).select("run_id")
    for part in parts:
        answered = answered.join(part, on="run_id", how="left")
    components = ["limitations_found", "forbidden_absent", "calibration_insights_found"]
    methods = [f"{c}_method" for c in components]
    answered = answered.with_columns(
        row_fmean(answered, components).alias("calibration_limitation_handling"))
    scored = answered.with_columns(
        _joined_methods(answered, methods).alias("calibration_limitation_handling_method"),
    ).filter(pl.col("calibration_limitation_handling").is_not_null())
    out_cols = ["run_id", "calibration_limitation_handling",
                "calibration_limitation_handling_method", *components]
    return scored.select(out_cols)


def _joined_methods(frame: pl.DataFrame, columns: list[str]) -> pl.Series:
    """Per row, the distinct non-null values of ``columns``, sorted and "+"-joined ("" when
    all are null). Rows hold few distinct combinations of methods, so each combination is
    joined once and matched to its rows (on a 1M-row frame of three method columns,
    per-row list operations took 3.0 s, this 0.15 s)."""
    combos = frame.select(columns).unique()
    joined = ["+".join(sorted({m for m in row if m is not None})) for row in combos.iter_rows()]
    return (frame.select(columns)
            .join(combos.with_columns(pl.Series("joined", joined, dtype=pl.String)),
                  on=columns, how="left", nulls_equal=True, maintain_order="left")
            .get_column("joined"))


def calibration_scores(matches: Frame, runs: Frame, tasks: Frame) -> Frame:
    """Per-run calibration = mean of the non-null of three shares (docs/methodology.md §3).

    The shares are: required limitations found; forbidden claims absent; ``calibration: true``
    insights found. A share is null when the task has none of its claims; a task with none of
    the three gets no row (null). A run with no response gets no row here;
    :func:`grade_kit.scorers.no_response.no_response_zeros` scores it 0.

    Returns:
        run_id, calibration_limitation_handling, calibration_limitation_handling_method,
        limitations_found, forbidden_absent,
        calibration_insights_found.
    """
    result = _calibration_scores(to_polars(matches), to_polars(runs), to_polars(tasks))
    return like(result, runs)
