"""Per-run grades, rates over honest denominators, stable resolution and the common subset
(docs/methodology.md §4 "Grades", "Rates")."""

from __future__ import annotations

import polars as pl

from grade_kit.frames import Frame, like, to_polars
from grade_kit.schema import (
    FOUR_GRADES,
    GRADE_STATES,
    GradeCounts,
    GradeRates,
    GradeSummary,
    MaterialError,
    Plan,
    StableResolution,
)
from grade_kit.standard.stats import wilson_interval

__all__ = [
    "FOUR_GRADES",
    "GRADE_STATES",
    "common_subset",
    "grade_summary",
    "plan_repeats",
    "planned_slots",
    "run_grades",
    "setup_plan",
]

INTERVAL_NOTE = ("95% Wilson score intervals over N; they assume independent slots, and the R "
                 "repeats of one question are not independent, so with R > 1 they are too "
                 "narrow")


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
    """The grade of every run, in the grading order of docs/methodology.md §4 "Grades".

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


def plan_repeats(runs: pl.DataFrame, repeats: int | None = None) -> Plan:
    """R: ``repeats`` when given, else the largest repeat of any primary run (at least 1),
    marked as inferred (docs/methodology.md §4 "Rates")."""
    if repeats is not None:
        if repeats < 1:
            raise ValueError("repeats must be at least 1")
        return Plan(repeats=repeats, inferred=False, rule="given (--repeats)")
    primary = runs.filter(pl.col("is_primary"))
    largest = primary.get_column("repeat").max() if primary.height else None
    r = max(1, int(str(largest))) if largest is not None else 1
    return Plan(repeats=r, inferred=True,
                rule="inferred: the largest repeat of any primary run (give --repeats to fix it)")


def setup_plan(runs: pl.DataFrame, tasks: pl.DataFrame) -> pl.DataFrame:
    """Which questions each setup is planned on (docs/methodology.md §4 "Rates"): every task
    without a suite, and every task of each suite the setup has a primary run in. Native task
    files have no suites, so every setup is planned on every task.

    Returns:
        setup, task_id (one row per planned question).
    """
    setups = runs.select("setup").unique()
    plain = tasks.filter(pl.col("suite").is_null()).select("task_id")
    ran = (runs.filter(pl.col("is_primary")).join(tasks.select("task_id", "suite"),
                                                  on="task_id")
           .filter(pl.col("suite").is_not_null()).select("setup", "suite").unique())
    suited = ran.join(tasks.filter(pl.col("suite").is_not_null()).select("suite", "task_id"),
                      on="suite").select("setup", "task_id")
    return pl.concat([setups.join(plain, how="cross"), suited]).unique().sort(
        "setup", "task_id")


def planned_slots(graded: pl.DataFrame, plan: pl.DataFrame, repeats: int) -> pl.DataFrame:
    """Every planned (setup, task, repeat) slot with its state: the primary run's grade, or
    ``not_run`` when no primary run fills it.

    Args:
        graded: :func:`run_grades`.
        plan: :func:`setup_plan` (setup, task_id).
        repeats: R.

    Returns:
        setup, task_id, repeat, run_id (null when not run), state.
    """
    slots = plan.select(pl.col("setup").cast(pl.String), pl.col("task_id").cast(pl.String)).join(
        pl.DataFrame({"repeat": list(range(1, repeats + 1))}, schema={"repeat": pl.Int64}),
        how="cross")
    filled = graded.filter(pl.col("is_primary")).select("setup", "task_id", "repeat", "run_id",
                                                        "grade")
    return slots.join(filled, on=["setup", "task_id", "repeat"], how="left").with_columns(
        state=pl.col("grade").fill_null("not_run")).drop("grade").sort(
        "setup", "task_id", "repeat")


def _counts(slots: pl.DataFrame) -> dict[str, int]:
    got = dict(slots.group_by("state").len().iter_rows())
    return {state: int(got.get(state, 0)) for state in GRADE_STATES}


def grade_summary(slots: pl.DataFrame, graded: pl.DataFrame, setup: str,
                  repeats: int) -> GradeSummary:
    """Rates over N = questions x repeats for one setup (docs/methodology.md §4 "Rates").

    Counts of the four grades + pending_verification + not_run = N; every rate divides by N and
    carries a 95% Wilson interval over N; graded coverage = four grades / N; stable resolution
    = questions whose R slots are all resolved (null when R = 1).

    Args:
        slots: :func:`planned_slots` (any subset of questions).
        graded: :func:`run_grades` (for ungraded, beyond-plan counts and material errors).
        setup: The setup to summarise.
        repeats: R.
    """
    mine = slots.filter(pl.col("setup") == setup)
    questions = mine.get_column("task_id").n_unique()
    n = mine.height
    counts = _counts(mine)
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
    errors = (in_plan.filter(pl.col("grade") == "material_error")
              .select("run_id", "task_id", "repeat", "claim", "evidence", "effect", "grader",
                      "grade_reason").sort("task_id", "repeat"))
    return GradeSummary(
        N=n,
        questions=questions,
        repeats=repeats,
        counts=GradeCounts(**counts),
        rates=GradeRates(**{k: (v / n if n else None) for k, v in counts.items()}),
        wilson95={k: wilson_interval(v, n) for k, v in counts.items()},
        interval_note=INTERVAL_NOTE,
        graded_coverage=four / n if n else None,
        ungraded=ungraded,
        beyond_plan=int(beyond),
        stable_resolution=StableResolution(count=stable_count, questions=questions,
                                           repeats=repeats),
        material_errors=[MaterialError(**row) for row in errors.iter_rows(named=True)],
    )


def common_subset(slots: pl.DataFrame) -> list[str]:
    """Tasks whose every planned slot is resolved for every setup, sorted. With suites, a
    task some setup is not planned on is not common (it was not resolved by every setup)."""
    if slots.is_empty():
        return []
    n_setups = slots.get_column("setup").n_unique()
    ok = slots.group_by("task_id").agg(
        (pl.col("state") == "resolved").all().alias("ok"),
        pl.col("setup").n_unique().alias("setups"))
    return sorted(ok.filter(pl.col("ok") & (pl.col("setups") == n_setups))
                  .get_column("task_id").to_list())
