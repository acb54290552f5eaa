"""Per-run grades, rates over honest denominators, stable resolution and the common subset
(DESIGN.md §4 "Grades", "Rates")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from grade_kit.frames import Frame, like, to_polars

__all__ = [
    "FOUR_GRADES",
    "GRADE_STATES",
    "common_subset",
    "grade_summary",
    "plan_repeats",
    "planned_slots",
    "run_grades",
]

FOUR_GRADES = ("resolved", "partially_resolved", "material_error", "unresolved")
"""The four grades; graded coverage counts these."""

GRADE_STATES = (*FOUR_GRADES, "pending_verification", "not_run")
"""Every state a planned slot can be in; their counts sum to N."""


def _run_grades(runs: pl.DataFrame, grades: pl.DataFrame) -> pl.DataFrame:
    joined = runs.join(grades, on="run_id", how="left")
    has_grade = pl.col("core_conclusion").is_not_null()
    pending = ((pl.col("core_conclusion") == "pending")
               | (pl.col("request_fulfilment") == "pending")
               | (pl.col("material_error") == "pending"))
    grade = (
        pl.when(pl.col("status") != "delivered").then(pl.lit("unresolved"))
        .when((pl.col("material_error") == "yes")
              | (pl.col("core_conclusion") == "material_error")).then(pl.lit("material_error"))
        .when(pending).then(pl.lit("pending_verification"))
        .when(~has_grade).then(pl.lit("pending_verification"))
        .when((pl.col("core_conclusion") == "correct")
              & (pl.col("request_fulfilment") == "full")).then(pl.lit("resolved"))
        .when((pl.col("core_conclusion") == "correct")
              & (pl.col("request_fulfilment") == "partial")).then(pl.lit("partially_resolved"))
        .otherwise(pl.lit("unresolved"))
    )
    not_delivered_reason = pl.concat_str(
        [pl.col("status"), pl.lit(": "), pl.col("error").fill_null("(no error given)")])
    return joined.with_columns(
        grade=grade,
        graded=has_grade,
        grade_reason=pl.when(pl.col("status") != "delivered").then(not_delivered_reason)
        .when(~has_grade).then(pl.lit("no grade record"))
        .otherwise(pl.col("reason")),
    ).select(
        "run_id", "setup", "task_id", "repeat", "attempt_of", "is_primary", "status", "error",
        "grade", "grade_reason", "graded", "core_conclusion", "request_fulfilment",
        "material_error", "claim", "evidence", "effect", "grader",
    )


def run_grades(runs: Frame, grades: Frame) -> Frame:
    """The grade of every run, in the grading order of DESIGN.md §4.

    1. not delivered -> ``unresolved`` (reason kept: status and error);
    2. material_error yes, or core_conclusion material_error -> ``material_error``;
    3. any field pending -> ``pending_verification``;
    4. no grade record -> ``pending_verification`` (``graded`` false: counted as ungraded);
    5. core correct + full -> ``resolved``; core correct + partial -> ``partially_resolved``;
    6. otherwise ``unresolved``.

    Re-runs are graded too, so they can be listed beside the attempt they repeat; only
    primary runs count in rates.

    Returns:
        One row per run: run_id, setup, task_id, repeat, attempt_of, is_primary, status,
        error, grade, grade_reason, graded and the grade record's fields (material-error
        claim, evidence and effect are carried through).
    """
    return like(_run_grades(to_polars(runs), to_polars(grades)), runs)


def plan_repeats(runs: pl.DataFrame, repeats: int | None = None) -> int:
    """R: ``repeats`` when given, else the largest repeat of any primary run (at least 1)."""
    if repeats is not None:
        if repeats < 1:
            raise ValueError("repeats must be at least 1")
        return repeats
    primary = runs.filter(pl.col("is_primary"))
    largest = primary.get_column("repeat").max() if primary.height else None
    return max(1, int(str(largest))) if largest is not None else 1


def planned_slots(graded: pl.DataFrame, task_ids: Sequence[str], setups: Sequence[str],
                  repeats: int) -> pl.DataFrame:
    """Every planned (setup, task, repeat) slot with its state: the primary run's grade, or
    ``not_run`` when no primary run fills it.

    Returns:
        setup, task_id, repeat, run_id (null when not run), state.
    """
    plan = (pl.DataFrame({"setup": list(setups)}, schema={"setup": pl.String})
            .join(pl.DataFrame({"task_id": list(task_ids)}, schema={"task_id": pl.String}),
                  how="cross")
            .join(pl.DataFrame({"repeat": list(range(1, repeats + 1))},
                               schema={"repeat": pl.Int64}), how="cross"))
    filled = graded.filter(pl.col("is_primary")).select("setup", "task_id", "repeat", "run_id",
                                                        "grade")
    return plan.join(filled, on=["setup", "task_id", "repeat"], how="left").with_columns(
        state=pl.col("grade").fill_null("not_run")).drop("grade")


def _counts(slots: pl.DataFrame) -> dict[str, int]:
    got = dict(slots.group_by("state").len().iter_rows())
    return {state: int(got.get(state, 0)) for state in GRADE_STATES}


def grade_summary(slots: pl.DataFrame, graded: pl.DataFrame, setup: str,
                  repeats: int) -> dict[str, Any]:
    """Rates over N = questions x repeats for one setup (DESIGN.md §4 "Rates").

    Counts of the four grades + pending_verification + not_run = N; every rate divides by N;
    graded coverage = four grades / N; stable resolution = questions whose R slots are all
    resolved (null when R = 1).

    Args:
        slots: :func:`planned_slots` (any subset of questions).
        graded: :func:`run_grades` (for ungraded and beyond-plan counts).
        setup: The setup to summarise.
        repeats: R.
    """
    mine = slots.filter(pl.col("setup") == setup)
    questions = mine.get_column("task_id").n_unique()
    n = mine.height
    counts = _counts(mine)
    rates = {k: (v / n if n else None) for k, v in counts.items()}
    four = sum(counts[g] for g in FOUR_GRADES)
    run_ids = mine.get_column("run_id").drop_nulls()
    in_plan = graded.filter(pl.col("run_id").is_in(run_ids.implode()))
    ungraded = int(in_plan.filter(~pl.col("graded") & (pl.col("status") == "delivered")).height)
    task_ids = mine.get_column("task_id").unique().implode()
    beyond = graded.filter((pl.col("setup") == setup) & pl.col("is_primary")
                           & (pl.col("repeat") > repeats)
                           & pl.col("task_id").is_in(task_ids)).height
    stable_count = None
    if repeats > 1:
        stable_count = int(
            mine.group_by("task_id").agg((pl.col("state") == "resolved").all().alias("ok"))
            .get_column("ok").sum())
    return {
        "N": n,
        "questions": questions,
        "repeats": repeats,
        "counts": counts,
        "rates": rates,
        "graded_coverage": four / n if n else None,
        "ungraded": ungraded,
        "beyond_plan": int(beyond),
        "stable_resolution": {"count": stable_count, "questions": questions,
                              "repeats": repeats},
    }


def common_subset(slots: pl.DataFrame) -> list[str]:
    """Tasks whose every planned slot is resolved for every setup, sorted."""
    if slots.is_empty():
        return []
    ok = slots.group_by("task_id").agg((pl.col("state") == "resolved").all().alias("ok"))
    return sorted(ok.filter(pl.col("ok")).get_column("task_id").to_list())
