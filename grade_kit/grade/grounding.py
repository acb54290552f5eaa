"""Grounding accuracy: reported metrics against gold facts (DESIGN.md §4 "Grounding")."""

from __future__ import annotations

import polars as pl

from grade_kit.frames import Frame, like, to_polars

__all__ = ["FLOAT_SLACK", "NO_TOLERANCE", "fact_checks", "grounding_scores"]

FLOAT_SLACK = 1e-12
"""DESIGN.md §4: each comparison allows a slack of 1e-12 for floating-point representation."""

NO_TOLERANCE = 1e-9
"""DESIGN.md §4: with neither abs_tol nor rel_tol given, a numeric fact passes at |diff| <= 1e-9."""


def _fact_checks(facts: pl.DataFrame, runs: pl.DataFrame, metrics: pl.DataFrame) -> pl.DataFrame:
    pairs = runs.select("run_id", "task_id").join(facts, on="task_id", how="inner")
    pairs = pairs.join(
        metrics.select("run_id", "key", "num", "str_key", "raw"),
        left_on=["run_id", "metric"], right_on=["run_id", "key"], how="left",
    )
    diff = (pl.col("num") - pl.col("gold_num")).abs()
    abs_ok = pl.col("abs_tol").is_not_null() & (diff <= pl.col("abs_tol") + FLOAT_SLACK)
    rel_ok = pl.col("rel_tol").is_not_null() & (
        diff <= pl.col("rel_tol") * pl.col("gold_num").abs() + FLOAT_SLACK
    )
    exact_ok = (pl.col("abs_tol").is_null() & pl.col("rel_tol").is_null()
                & (diff <= NO_TOLERANCE + FLOAT_SLACK))
    numeric_pass = pl.col("num").is_not_null() & (abs_ok | rel_ok | exact_ok)
    string_pass = pl.col("str_key").is_not_null() & (pl.col("str_key") == pl.col("gold_key"))
    return pairs.with_columns(
        passed=pl.when(pl.col("gold_key").is_not_null())
        .then(string_pass)
        .otherwise(numeric_pass)
        .fill_null(False),
        reported=pl.col("raw"),
    ).select("run_id", "task_id", "fact_id", "metric", "reported", "passed")


def fact_checks(facts: Frame, runs: Frame, metrics: Frame) -> Frame:
    """Pass or fail of every (run, gold fact) pair (DESIGN.md §4 "Grounding").

    The predicted value is ``structured_metrics[metric]``. A string fact passes when the
    NFKC + strip + casefold forms are equal; a non-string prediction fails it. A numeric fact
    passes when |pred - gold| <= abs_tol or <= rel_tol x |gold| (either given tolerance
    suffices; neither given: <= 1e-9), each with a 1e-12 slack. Missing or unparsable: fail.

    Args:
        facts: The ``facts`` frame.
        runs: The ``runs`` frame (every run is checked; a run with no response fails all).
        metrics: The ``metrics`` frame.

    Returns:
        One row per (run, fact): run_id, task_id, fact_id, metric, reported (raw JSON or
        null when missing), passed.
    """
    return like(_fact_checks(to_polars(facts), to_polars(runs), to_polars(metrics)), runs)


def _grounding_scores(
    facts: pl.DataFrame, runs: pl.DataFrame, metrics: pl.DataFrame
) -> pl.DataFrame:
    checks = _fact_checks(facts, runs, metrics)
    return checks.group_by("run_id", maintain_order=True).agg(
        grounding_accuracy=pl.col("passed").cast(pl.Float64).mean(),
        facts_passed=pl.col("passed").sum().cast(pl.Int64),
        facts_total=pl.len().cast(pl.Int64),
    )


def grounding_scores(facts: Frame, runs: Frame, metrics: Frame) -> Frame:
    """Per-run grounding accuracy = mean over the task's gold facts of pass (1) or fail (0).

    Runs of tasks without gold facts get no row (their grounding is null, never 0); a run with
    no response fails every fact and scores 0.

    Returns:
        run_id, grounding_accuracy, facts_passed, facts_total.
    """
    return like(_grounding_scores(to_polars(facts), to_polars(runs), to_polars(metrics)), runs)
