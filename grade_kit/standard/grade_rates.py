"""Per-run grades, rates over honest denominators, stable resolution and the common subset
(docs/methodology.md §4 "Grades", "Rates")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl
from pydantic import TypeAdapter

from grade_kit.exact import divide
from grade_kit.frames import Frame, like, to_polars
from grade_kit.schema import (
    COVERAGE_MIN,
    FOUR_GRADES,
    GRADE_STATES,
    MAX_REPEAT,
    ClusteredRate,
    GradeCounts,
    GradeRates,
    GradeSummary,
    Interval,
    MaterialError,
    Plan,
    ReliabilityPoint,
    StableResolution,
)
from grade_kit.standard.clustered import clustered_rates
from grade_kit.standard.stats import per_setup, rows_by_setup

INTERVAL_NOTE = ("95% Wilson score intervals over the effective sample size: the repeats of "
                 "one cluster (a question by default) are not independent, so N is divided "
                 "by the design effect (CR0, clustered; docs/methodology.md §4 \"Rates\")")


def _number_text(value: pl.Expr) -> pl.Expr:
    """A float as text, whole numbers without a decimal part (30, not 30.0)."""
    whole = value.is_finite() & (value == value.floor()) & (value.abs() < 2.0**53)
    return (pl.when(whole).then(value.cast(pl.Int64).cast(pl.String))
            .otherwise(value.cast(pl.String)))


def _run_grades(runs: pl.DataFrame, grades: pl.DataFrame) -> pl.DataFrame:
    joined = runs.select("run_id", "setup", "task_id", "repeat", "attempt_of", "is_primary",
                         "status", "error", "limit_type", "limit_value").join(
        grades, on="run_id", how="left")
    has_grade = pl.col("core_conclusion").is_not_null()
    pending = ((pl.col("core_conclusion") == "pending")
               | (pl.col("request_fulfilment") == "pending")
               | (pl.col("material_error") == "pending"))
    stopped = ~pl.col("status").is_in(["delivered", "limit"])
    limit_ungraded = (pl.col("status") == "limit") & ~has_grade
    grade = (
        pl.when(stopped | limit_ungraded).then(pl.lit("unresolved"))
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
    limit_reason = pl.concat_str(
        [pl.lit("limit: "), pl.col("limit_type"), pl.lit(" limit"),
         pl.when(pl.col("limit_value").is_not_null())
         .then(pl.format(" of {}", _number_text(pl.col("limit_value"))))
         .otherwise(pl.lit("")),
         pl.lit(" reached")], ignore_nulls=True)
    return joined.with_columns(
        grade=grade,
        graded=has_grade,
        grade_reason=pl.when(stopped).then(not_delivered_reason)
        .when(limit_ungraded).then(pl.concat_str([limit_reason, pl.lit(", no grade record")]))
        .when(pl.col("status") == "limit").then(
            pl.concat_str([limit_reason, pl.lit("; "), pl.col("reason").fill_null("graded")]))
        .when(~has_grade).then(pl.lit("no grade record"))
        .otherwise(pl.col("reason")),
    ).select(
        "run_id", "setup", "task_id", "repeat", "attempt_of", "is_primary", "status", "error",
        "grade", "grade_reason", "graded", "core_conclusion", "request_fulfilment",
        "material_error", "claim", "evidence", "effect", "grader", "needs_more_information",
    )


def run_grades(runs: Frame, grades: Frame) -> Frame:
    """The grade of every run, in the grading order of docs/methodology.md §4 "Grades".

    1. timed out, failed or cancelled -> ``unresolved`` (reason kept: status and error);
       stopped by a limit (status ``limit``) without a grade record -> ``unresolved``; with
       one, graded by the steps below, the limit named in the reason;
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


STRAY_SHARE = 0.05
"""When R is inferred, a repeat reached by no more than this share of (setup, task) pairs is
a stray: beyond the plan, warned about, never raising every setup's N."""


def plan_repeats(runs: pl.DataFrame, repeats: int | None = None,
                 stated: Mapping[str, int] | None = None) -> Plan:
    """R, the planned repeats per question (docs/methodology.md §4 "Rates").

    Given: ``repeats``. Stated: else, when the sources state R (``stated``: what states it
    -> R, such as an Inspect log's epochs) and all agree. Inferred: else the largest repeat
    reached by more than 5% of the (setup, task) pairs that have a primary run, that is,
    the (⌊0.05 P⌋ + 1)-th largest of the pairs' highest repeats (P pairs): the largest
    repeat when every pair shares it, and not a stray that a few pairs reach. Primary runs
    above R are outside the plan (``beyond_plan``).
    """
    if repeats is not None:
        if repeats < 1 or repeats > MAX_REPEAT:
            raise ValueError(f"repeats must be between 1 and {MAX_REPEAT:,}")
        return Plan(repeats=repeats, inferred=False, rule="given (--repeats)")
    values = set((stated or {}).values())
    if len(values) == 1 and 1 <= (r := values.pop()) <= MAX_REPEAT:
        sources = "; ".join(sorted(stated or {}))
        return Plan(repeats=r, inferred=False, rule=f"stated by the source: {sources}")
    disagree = (" (the sources state different R: "
                + "; ".join(f"{k} = {v}" for k, v in sorted((stated or {}).items())) + ")"
                if len(set((stated or {}).values())) > 1 else "")
    highest = (runs.filter(pl.col("is_primary")).group_by("setup", "task_id")
               .agg(pl.col("repeat").max()).get_column("repeat").sort(descending=True))
    if highest.is_empty():
        return Plan(repeats=1, inferred=True,
                    rule=f"inferred: no primary run, so R = 1{disagree}")
    r = int(highest[int(STRAY_SHARE * highest.len())])
    return Plan(repeats=r, inferred=True, rule=(
        "inferred: the largest repeat reached by more than 5% of (setup, task) pairs "
        f"(give --repeats to fix it){disagree}"))


def setup_plan(runs: pl.DataFrame, tasks: pl.DataFrame) -> pl.DataFrame:
    """Which questions each setup is planned on (docs/methodology.md §4 "Rates"): every task
    without a suite, and every task of each suite the setup has a primary run in. Native task
    files have no suites, so every setup is planned on every task.

    Returns:
        setup, task_id (one row per planned question).
    """
    setups = runs.select("setup").unique()
    plain = tasks.filter(pl.col("suite").is_null()).select("task_id")
    # the two columns needed, then the rows: filtering the whole runs frame first copied
    # every column of a million runs (docs/scaling.md)
    ran = (runs.select("setup", "task_id", "is_primary").filter(pl.col("is_primary"))
           .join(tasks.select("task_id", "suite"), on="task_id")
           .filter(pl.col("suite").is_not_null()).select("setup", "suite").unique())
    suited = ran.join(tasks.filter(pl.col("suite").is_not_null()).select("suite", "task_id"),
                      on="suite").select("setup", "task_id")
    return pl.concat([setups.join(plain, how="cross"), suited]).unique().sort(
        "setup", "task_id")


def planned_slots(graded: pl.DataFrame, plan: pl.DataFrame, repeats: int) -> pl.DataFrame:
    """The planned (setup, task, repeat) slots that a primary run fills, with its grade as
    the slot's state. Unfilled slots are ``not_run``; they are counted (N minus the filled
    slots), never listed, so the work grows with the runs, not with R.

    Args:
        graded: :func:`run_grades`.
        plan: :func:`setup_plan` (setup, task_id).
        repeats: R.

    Returns:
        setup, task_id, repeat, run_id, state (one row per filled slot).
    """
    filled = graded.filter(pl.col("is_primary") & (pl.col("repeat") <= repeats)).select(
        "setup", "task_id", "repeat", "run_id", pl.col("grade").alias("state"))
    return (filled.join(plan.select("setup", "task_id"), on=["setup", "task_id"], how="semi")
            .sort("setup", "task_id", "repeat"))


def resolved_questions(plan: pl.DataFrame, slots: pl.DataFrame,
                       repeats: int) -> pl.DataFrame:
    """Per planned (setup, task): whether all R slots are resolved.

    Returns:
        setup, task_id, all_resolved.
    """
    resolved = (slots.filter(pl.col("state") == "resolved").group_by("setup", "task_id")
                .agg(pl.len().alias("resolved")))
    return plan.select("setup", "task_id").join(resolved, on=["setup", "task_id"],
                                                how="left").select(
        "setup", "task_id", all_resolved=pl.col("resolved").fill_null(0) == repeats)


_MATERIAL_ERRORS = TypeAdapter(list[MaterialError])
"""Builds a setup's material errors from its frame's rows in one call (pydantic's compiled
validator: 1.4 s for 300,000 rows, where a ``model_construct`` per row took 3.5 s)."""

_EVERY_FIELD = set(MaterialError.model_fields)


def _material_errors(rows: list[dict[str, object]]) -> list[MaterialError]:
    """The records of ``rows`` (every field given), validated in one call.

    Each record then shares one set of its set fields (all of them) instead of holding its
    own copy: pydantic keeps a set per model, 728 of the 1,088 bytes of a record (measured
    on 100,000 records); the 1M-run store held 0.2 GB less after the standard's statistics
    (docs/scaling.md). Nothing changes in what a
    record says: its fields set are all of them either way, and setting a field adds a name
    the set holds already (a copy of a record gets a set of its own)."""
    errors = _MATERIAL_ERRORS.validate_python(rows)
    for error in errors:
        if error.model_fields_set == _EVERY_FIELD:
            object.__setattr__(error, "__pydantic_fields_set__", _EVERY_FIELD)
    return errors


GRADE_COLUMNS: dict[str, type[pl.DataType]] = {
    "setup": pl.String, "N": pl.Int64, "questions": pl.Int64, "repeats": pl.Int64,
    **{name: dtype for state in GRADE_STATES for name, dtype in (
        (state, pl.Int64), (f"{state}_rate", pl.Float64), (f"{state}_ci_low", pl.Float64),
        (f"{state}_ci_high", pl.Float64), (f"{state}_design_effect", pl.Float64),
        (f"{state}_icc", pl.Float64), (f"{state}_n_effective", pl.Float64))},
    "interval_basis": pl.String,
    "run_coverage": pl.Float64, "graded_coverage": pl.Float64, "ungraded": pl.Int64,
    "beyond_plan": pl.Int64, "needs_more_information": pl.Int64, "stable_resolved": pl.Int64,
}
"""The columns of :func:`grade_frame`: one row per setup, every denominator a column."""

_ERROR_FIELDS = ("run_id", "task_id", "repeat", "claim", "evidence", "effect", "grader",
                 "grade_reason")


def question_states(plan: pl.DataFrame, slots: pl.DataFrame, repeats: int) -> pl.DataFrame:
    """Per planned (setup, question): its R planned slots by state, every slot in exactly one
    (the four grades, pending_verification, not_run = R - the filled slots).

    Returns:
        setup, task_id and one Int64 column per grade state.
    """
    state = pl.col("state")
    filled = slots.group_by("setup", "task_id").agg(
        filled=pl.len(), **{g: (state == g).sum() for g in GRADE_STATES if g != "not_run"})
    return plan.select("setup", "task_id").join(
        filled, on=["setup", "task_id"], how="left").with_columns(
        pl.col(g).fill_null(0).cast(pl.Int64) for g in GRADE_STATES if g != "not_run").select(
        "setup", "task_id", *(
            (pl.lit(repeats, dtype=pl.Int64) - pl.col("filled").fill_null(0)).alias(g)
            if g == "not_run" else pl.col(g) for g in GRADE_STATES))


def grade_frame(plan: pl.DataFrame, slots: pl.DataFrame, graded: pl.DataFrame,
                setups: Sequence[str], repeats: int, clusters: pl.DataFrame | None = None,
                basis: str | None = None,
                states: pl.DataFrame | None = None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Rates over N = questions x repeats, every setup at once (docs/methodology.md §4
    "Rates").

    Per setup, counts of the four grades + pending_verification + not_run = N; every rate
    divides by N and carries a 95% Wilson interval over its effective size, clustered
    (:func:`~grade_kit.standard.clustered.clustered_rates`, null when N = 0); graded coverage
    = four grades / N; run coverage = filled slots / N; stable resolution = questions whose
    R slots are all resolved (null when R = 1); ungraded delivered runs, primary runs beyond
    R and runs whose answer asks for more information, in the plan.

    Args:
        plan: :func:`setup_plan`, or the part of it a subset keeps.
        slots: :func:`planned_slots` (filled slots of the same questions).
        graded: :func:`run_grades` (for ungraded, beyond-plan counts and material errors).
        setups: The setups summarised, in order (a setup with no planned question gets a
            row with N = 0).
        repeats: R.
        clusters: task_id, cluster (:func:`~grade_kit.standard.clustered.cluster_of_tasks`);
            default None: every question its own cluster.
        basis: The intervals' ``interval_basis``; default "clustered by question, R = <R>".
        states: :func:`question_states` of ``plan`` and ``slots`` when already made;
            default None (made here).

    Returns:
        The frame of :data:`GRADE_COLUMNS` (one row per setup of ``setups``), and each
        setup's material errors (setup and the fields of
        :class:`~grade_kit.schema.MaterialError`, by setup, task and repeat).
    """
    keys = pl.DataFrame({"setup": list(setups)}, schema={"setup": pl.String})

    in_plan = graded.join(slots.select("run_id"), on="run_id", how="semi")
    beyond = graded.filter(pl.col("is_primary") & (pl.col("repeat") > repeats)).join(
        plan.select("setup", "task_id"), on=["setup", "task_id"], how="semi")
    state = pl.col("state")
    parts = [
        per_setup(keys, plan, questions=pl.len()),
        per_setup(keys, slots, filled=pl.len(), **{g: (state == g).sum() for g in GRADE_STATES
                                             if g != "not_run"}),
        per_setup(keys, in_plan, ungraded=(~pl.col("graded") & (pl.col("status") == "delivered"))
                  .sum(), needs_more_information=(
                      pl.col("is_primary") & pl.col("needs_more_information").fill_null(False))
                  .sum()),
        per_setup(keys, beyond, beyond_plan=pl.len()),
    ]
    if repeats > 1:
        parts.append(per_setup(keys, resolved_questions(plan, slots, repeats),
                               stable_resolved=pl.col("all_resolved").sum()))
    counts = pl.concat([keys, *parts], how="horizontal")
    counts = counts.with_columns(N=pl.col("questions") * repeats, repeats=pl.lit(repeats))
    counts = counts.with_columns(not_run=pl.col("N") - pl.col("filled"),
                                 stable_resolved=pl.col("stable_resolved") if repeats > 1
                                 else pl.lit(None, dtype=pl.Int64))
    n = pl.col("N")  # every share over N divided as IEEE 754 does (grade_kit.exact.divide)
    rows = counts.with_columns(
        *(divide(counts, pl.col(g), n).alias(f"{g}_rate") for g in GRADE_STATES),
        divide(counts, pl.col("filled"), n).alias("run_coverage"),
        divide(counts, pl.sum_horizontal(*FOUR_GRADES), n).alias("graded_coverage"))
    per_question = question_states(plan, slots, repeats) if states is None else states
    if clusters is None:
        by_cluster = per_question.rename({"task_id": "cluster"})
    else:
        by_cluster = per_question.join(clusters, on="task_id").group_by(
            "setup", "cluster").agg(pl.col(g).sum() for g in GRADE_STATES)
    by_cluster = by_cluster.with_columns(slots=pl.sum_horizontal(*GRADE_STATES))
    rows = rows.join(
        clustered_rates(by_cluster, list(setups)), on="setup", how="left",
        maintain_order="left").with_columns(
        interval_basis=pl.lit(basis or f"clustered by question, R = {repeats}"))
    errors = (in_plan.filter(pl.col("grade") == "material_error")
              .select("setup", *_ERROR_FIELDS).sort("setup", "task_id", "repeat"))
    return rows.select(list(GRADE_COLUMNS)).cast(GRADE_COLUMNS), errors  # type: ignore[arg-type]


def grade_summaries(rows: pl.DataFrame, errors: pl.DataFrame,
                    reliability: pl.DataFrame | None = None,
                    flaky: pl.DataFrame | None = None) -> dict[str, GradeSummary]:
    """The typed summary of each row of :func:`grade_frame`, by setup, with its points of
    ``reliability`` (:func:`~grade_kit.standard.reliability.reliability_frame`) and its
    count of ``flaky`` questions when given."""
    by_setup = rows_by_setup(errors)
    points = rows_by_setup(reliability.drop("subset")) if reliability is not None else {}
    flaky_counts = (dict(flaky.group_by("setup").len().iter_rows())
                    if flaky is not None else {})
    out: dict[str, GradeSummary] = {}
    for row in rows.iter_rows(named=True):
        out[row["setup"]] = GradeSummary(
            N=row["N"], questions=row["questions"], repeats=row["repeats"],
            counts=GradeCounts(**{g: row[g] for g in GRADE_STATES}),
            rates=GradeRates(**{g: row[f"{g}_rate"] for g in GRADE_STATES}),
            wilson95={g: (None if row[f"{g}_ci_low"] is None else
                          Interval(low=row[f"{g}_ci_low"], high=row[f"{g}_ci_high"]))
                      for g in GRADE_STATES},
            clustered={g: ClusteredRate(design_effect=row[f"{g}_design_effect"],
                                        icc=row[f"{g}_icc"],
                                        n_effective=row[f"{g}_n_effective"])
                       for g in GRADE_STATES},
            interval_basis=row["interval_basis"],
            interval_note=INTERVAL_NOTE, graded_coverage=row["graded_coverage"],
            ungraded=row["ungraded"], beyond_plan=row["beyond_plan"],
            needs_more_information=row["needs_more_information"],
            stable_resolution=StableResolution(count=row["stable_resolved"],
                                               questions=row["questions"],
                                               repeats=row["repeats"]),
            material_errors=_material_errors(by_setup.get(row["setup"], [])),
            run_coverage=row["run_coverage"],
            reliability=[ReliabilityPoint(**point) for point in points.get(row["setup"], [])],
            flaky_questions=flaky_counts.get(row["setup"], 0))
    return out


def ranked_setups(coverage: Mapping[str, float | None], setups: list[str]) -> list[str]:
    """The setups of ``setups`` whose run coverage (:func:`grade_frame`'s ``run_coverage``)
    reaches :data:`COVERAGE_MIN`, in order."""
    return [s for s in setups if (coverage.get(s) or 0.0) >= COVERAGE_MIN]


def common_subset(plan: pl.DataFrame, slots: pl.DataFrame, repeats: int) -> list[str]:
    """Tasks whose every planned slot is resolved for every setup, sorted. A task some setup
    is not planned on is not common (it was not resolved by every setup)."""
    setups = plan.get_column("setup").n_unique()
    if setups == 0:
        return []
    ok = (resolved_questions(plan, slots, repeats).group_by("task_id")
          .agg(pl.col("all_resolved").all().alias("ok"), pl.len().alias("setups")))
    return sorted(ok.filter(pl.col("ok") & (pl.col("setups") == setups))
                  .get_column("task_id").to_list())
