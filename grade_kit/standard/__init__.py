"""The grading and timing standard (DESIGN.md §4): grades, rates over honest denominators,
stable resolution, the common subset, timing, tool calls and setup comparison.

:func:`standard_results` assembles the per-setup ``grades``, ``timing``, ``tool_calls`` and
``reruns`` entries of results.json and its ``common_subset``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from grade_kit.frames import EvalData
from grade_kit.standard.compare import (
    DEFAULT_SEED,
    bootstrap_mean_ci,
    compare_setups,
)
from grade_kit.standard.grades import (
    FOUR_GRADES,
    GRADE_STATES,
    common_subset,
    grade_summary,
    plan_repeats,
    planned_slots,
    run_grades,
)
from grade_kit.standard.stats import median, nearest_rank, summarize
from grade_kit.standard.timing import (
    e2e_frame,
    event_offsets,
    timing_summary,
    tool_call_summary,
)

__all__ = [
    "FOUR_GRADES",
    "GRADE_STATES",
    "StandardResults",
    "bootstrap_mean_ci",
    "common_subset",
    "compare_setups",
    "e2e_frame",
    "event_offsets",
    "grade_summary",
    "median",
    "nearest_rank",
    "plan_repeats",
    "planned_slots",
    "run_grades",
    "standard_results",
    "summarize",
    "timing_summary",
    "tool_call_summary",
]


@dataclass
class StandardResults:
    """The standard's frames and summaries for one evaluation: every run's grade, every
    planned slot's state, R, the per-setup summaries, the common subset, the comparisons and
    the per-question figures they pair."""

    graded: pl.DataFrame
    slots: pl.DataFrame
    repeats: int
    setups: dict[str, dict[str, Any]]
    common: dict[str, Any]
    comparisons: list[dict[str, Any]]
    per_question: pl.DataFrame


def _per_question(data: EvalData, sub_slots: pl.DataFrame,
                  task_composites: pl.DataFrame | None) -> pl.DataFrame:
    """Per (setup, common-subset task): median E2E, mean unique tool calls, composite."""
    runs = sub_slots.filter(pl.col("run_id").is_not_null()).select("setup", "task_id",
                                                                   "run_id")
    e2e = e2e_frame(data.runs, data.events).select("run_id", "seconds")
    per_q = (runs.join(e2e, on="run_id", how="left").group_by("setup", "task_id")
             .agg(e2e_median_s=pl.col("seconds").drop_nulls().median()))
    exposed = data.runs.filter(pl.col("tools_exposed")).select("run_id")
    calls = (runs.join(exposed, on="run_id").join(
        data.tool_calls.group_by("run_id").agg(n=pl.col("call_id").n_unique()),
        on="run_id", how="left").with_columns(pl.col("n").fill_null(0))
        .group_by("setup", "task_id").agg(tool_calls_per_run=pl.col("n").mean()))
    per_q = per_q.join(calls, on=["setup", "task_id"], how="left")
    if task_composites is not None:
        per_q = per_q.join(task_composites.select("setup", "task_id", "composite"),
                           on=["setup", "task_id"], how="left")
    return per_q.sort("setup", "task_id")


def _material_errors(graded: pl.DataFrame, run_ids: pl.Series) -> list[dict[str, Any]]:
    rows = graded.filter(pl.col("run_id").is_in(run_ids.implode())
                         & (pl.col("grade") == "material_error"))
    return rows.select("run_id", "task_id", "repeat", "claim", "evidence", "effect", "grader",
                       "grade_reason").sort("task_id", "repeat").to_dicts()


def _reruns(graded: pl.DataFrame, e2e: pl.DataFrame, setup: str) -> list[dict[str, Any]]:
    rows = (graded.filter((pl.col("setup") == setup) & ~pl.col("is_primary"))
            .join(e2e.select("run_id", e2e_s=pl.col("seconds")), on="run_id", how="left"))
    return rows.select("run_id", "attempt_of", "task_id", "repeat", "status", "grade",
                       "e2e_s").sort("task_id", "repeat", "run_id").to_dicts()


def standard_results(data: EvalData, repeats: int | None = None,
                     task_composites: pl.DataFrame | None = None,
                     seed: int = DEFAULT_SEED) -> StandardResults:
    """Grades, rates, timing and tool calls per setup, and the common subset.

    Args:
        data: The evaluation's frames (runs, events, tool_calls, grades, tasks).
        repeats: R, the planned repeats per task; default the largest repeat seen.
        task_composites: Per (setup, task) GRADE composites to compare on the common subset;
            default None (timing and tool calls only).
        seed: Seed of the comparison bootstrap (recorded in results.json).

    Returns:
        A :class:`StandardResults` whose ``setups[s]`` holds ``grades``, ``timing``,
        ``tool_calls`` and ``reruns`` and whose ``common`` is results.json's
        ``common_subset``.
    """
    r = plan_repeats(data.runs, repeats)
    setups = sorted(set(data.runs.get_column("setup").to_list()))
    task_ids = data.tasks.get_column("task_id").to_list()
    graded = run_grades(data.runs, data.grades)
    slots = planned_slots(graded, task_ids, setups, r)
    e2e = e2e_frame(data.runs, data.events)
    out: dict[str, dict[str, Any]] = {}
    for setup in setups:
        run_ids = (slots.filter(pl.col("setup") == setup).get_column("run_id").drop_nulls())
        summary = grade_summary(slots, graded, setup, r)
        summary["material_errors"] = _material_errors(graded, run_ids)
        out[setup] = {
            "grades": summary,
            "timing": timing_summary(data.runs, data.events, run_ids.to_list()),
            "tool_calls": tool_call_summary(data.runs, data.tool_calls, run_ids.to_list()),
            "reruns": _reruns(graded, e2e, setup),
        }
    subset = common_subset(slots)
    sub_slots = slots.filter(pl.col("task_id").is_in(subset))
    common: dict[str, Any] = {
        "tasks": subset,
        "questions": len(subset),
        "of_questions": len(task_ids),
        "repeats": r,
        "rule": "tasks whose every planned slot is resolved for every setup",
        "setups": {},
    }
    for setup in setups:
        run_ids = sub_slots.filter(pl.col("setup") == setup).get_column("run_id").drop_nulls()
        common["setups"][setup] = {
            "grades": grade_summary(sub_slots, graded, setup, r),
            "timing": timing_summary(data.runs, data.events, run_ids.to_list()),
        }
    per_question = _per_question(data, sub_slots, task_composites)
    comparisons = [
        compare_setups(per_question, a, b, subset, len(task_ids), seed=seed)
        for i, a in enumerate(setups) for b in setups[i + 1:]
    ]
    return StandardResults(graded, slots, r, out, common, comparisons, per_question)
