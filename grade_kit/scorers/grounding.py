"""Grounding accuracy: reported metrics against gold facts (docs/methodology.md §3
"Grounding accuracy")."""

from __future__ import annotations

import polars as pl

from grade_kit.frames import Frame, like, to_polars

FLOAT_SLACK = 1e-12
"""docs/methodology.md §3: each comparison allows 1e-12 for floating-point representation."""

NO_TOLERANCE = 1e-9
"""docs/methodology.md §3: with neither tolerance given, a numeric fact passes at |diff| <= 1e-9."""


def _fact_checks_query(facts: pl.DataFrame, runs: pl.DataFrame,
                       metrics: pl.DataFrame) -> pl.LazyFrame:
    """:func:`fact_checks` as one lazy query (runs in order, each run's facts in order), so
    a caller that reads only ``passed`` (the scores) never makes the text columns."""
    pairs = runs.lazy().select("run_id", "task_id").join(facts.lazy(), on="task_id",
                                                          how="inner", maintain_order="left")
    pairs = pairs.join(
        metrics.lazy().select("run_id", "key", "num", "str_key", "raw"),
        left_on=["run_id", "metric"], right_on=["run_id", "key"], how="left",
        maintain_order="left",
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
        parsed=pl.when(pl.col("gold_key").is_not_null()).then(pl.col("str_key"))
        .otherwise(pl.col("num").cast(pl.String)),
        gold=pl.coalesce(pl.col("gold_str"), pl.col("gold_num").cast(pl.String)),
    ).select("run_id", "task_id", "fact_id", "metric", "gold", "abs_tol", "rel_tol",
             "reported", "parsed", "passed")


def fact_checks(facts: Frame, runs: Frame, metrics: Frame) -> Frame:
    """Pass or fail of every (run, gold fact) pair (docs/methodology.md §3 "Grounding accuracy").

    The predicted value is ``structured_metrics[metric]``. A string fact passes when the
    NFKC + strip + casefold forms are equal; a non-string prediction fails it. A numeric fact
    passes when |pred - gold| <= abs_tol or <= rel_tol x |gold| (either given tolerance
    suffices; neither given: <= 1e-9), each with a 1e-12 slack. Missing or unparsable: fail.

    Args:
        facts: The ``facts`` frame.
        runs: The ``runs`` frame (every run is checked; a run with no response fails all).
        metrics: The ``metrics`` frame.

    Returns:
        One row per (run, fact): run_id, task_id, fact_id, metric, gold (the gold value as
        text), abs_tol, rel_tol, reported (raw JSON or null when missing), parsed (the number
        or normalised string compared, null when unparsable), passed.
    """
    return like(_fact_checks_query(to_polars(facts), to_polars(runs), to_polars(metrics))
                .collect(), runs)


def _grounding_scores(facts: pl.DataFrame, runs: pl.DataFrame,
                      metrics: pl.DataFrame) -> pl.DataFrame:
    checks = _fact_checks_query(facts, runs, metrics)
    return checks.group_by("run_id", maintain_order=True).agg(
        grounding_accuracy=pl.col("passed").cast(pl.Float64).mean(),
        facts_passed=pl.col("passed").sum().cast(pl.Int64),
        facts_total=pl.len().cast(pl.Int64),
    ).collect()


def grounding_scores(facts: Frame, runs: Frame, metrics: Frame) -> Frame:
    """Per-run grounding accuracy = mean over the task's gold facts of pass (1) or fail (0).

    Runs of tasks without gold facts get no row (their grounding is null, never 0). A run with
    no response reports nothing, so it fails every fact and scores 0 by this rule too
    (:func:`grade_kit.scorers.no_response.no_response_zeros` records its method).

    Args:
        facts: The ``facts`` frame.
        runs: The ``runs`` frame.
        metrics: The ``metrics`` frame.

    Returns:
        run_id, grounding_accuracy, facts_passed, facts_total, runs in their order.
    """
    return like(_grounding_scores(to_polars(facts), to_polars(runs), to_polars(metrics)), runs)
