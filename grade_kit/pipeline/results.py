"""results.json as a typed :class:`~grade_kit.schema.Results` (docs/methodology.md §5), built
from the GRADE frames and the standard's summaries; nothing here computes a rule."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import polars as pl

from grade_kit.reading.io import Rejected
from grade_kit.schema import (
    DIMENSIONS,
    Aggregate,
    Dimension,
    DimensionScores,
    Provenance,
    Results,
    SetupResults,
    TaskScore,
    WarningItem,
)
from grade_kit.scorers import GradeScores
from grade_kit.scorers.consistency import MAX_CONSISTENCY_RUNS
from grade_kit.standard import StandardResults
from grade_kit.standard.summary import MAX_COMPARED_SETUPS

WHY_MISSING: dict[Dimension, str] = {
    "grounding_accuracy": "no task has gold facts",
    "insight_quality": "no task has gold insights",
    "evidence_linkage": "no judgement recorded and no judge given (judge='rules' or "
                        "--judge rules fills it)",
    "calibration_limitation_handling": "no task has required limitations, forbidden claims "
                                       "or calibration insights",
    "consistency": "no task has 2 or more primary runs (or every task has more than "
                   f"{MAX_CONSISTENCY_RUNS:,}, the cap)",
    "structure_usability": "no judgement recorded and no judge given (judge='rules' or "
                           "--judge rules fills it)",
}
"""Why a dimension is null for a whole setup, in the usual cases."""


def _clean(value: Any) -> float | None:
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _dims(row: dict[str, Any]) -> DimensionScores:
    return DimensionScores(**{d: _clean(row.get(d)) for d in DIMENSIONS})


def _aggregate(row: dict[str, Any]) -> Aggregate:
    dims = _dims(row)
    values = dims.model_dump()
    missing = [d for d in DIMENSIONS if values[d] is None]
    return Aggregate(composite=_clean(row["composite"]), dimensions=dims,
                     tasks=int(row["tasks"]), dimensions_computed=len(DIMENSIONS) - len(missing),
                     missing_dimensions=missing)


def overall_frame(overall: pl.DataFrame, setups: Sequence[str]) -> pl.DataFrame:
    """One row per setup of ``setups`` (in that order): its overall GRADE aggregate, the
    composite and dimensions finite or null, ``dimensions_computed`` the dimensions not null,
    ``tasks`` 0 and every figure null for a setup with no GRADE task. The one frame both
    results.json's ``overall`` and the leaderboard are read from."""
    finite = [pl.when(pl.col(c).is_finite()).then(pl.col(c)).alias(c)
              for c in ("composite", *DIMENSIONS)]
    return (pl.DataFrame({"setup": list(setups)}, schema={"setup": pl.String})
            .join(overall.select("setup", "tasks", *finite), on="setup", how="left",
                  maintain_order="left")
            .with_columns(dimensions_computed=pl.sum_horizontal(
                pl.col(d).is_not_null() for d in DIMENSIONS).cast(pl.Int64),
                tasks=pl.col("tasks").fill_null(0).cast(pl.Int64))
            .select("setup", "composite", "dimensions_computed", *DIMENSIONS, "tasks"))


def missing_dimension_warnings(setups: dict[str, SetupResults]) -> list[WarningItem]:
    """One warning per setup whose overall composite is over fewer than six dimensions,
    naming each missing dimension and why (docs/methodology.md §3 "Aggregation")."""
    out = []
    for name, s in setups.items():
        o = s.overall
        if o.tasks == 0 or not o.missing_dimensions:
            continue
        why = "; ".join(f"{d}: {WHY_MISSING[d]}" for d in o.missing_dimensions)
        out.append(WarningItem(message=(
            f"setup {name!r}: composite over {o.dimensions_computed} of {len(DIMENSIONS)} "
            f"dimensions, renormalised; not computed: {why}")))
    return out


def duplicate_record_warnings(setups: dict[str, SetupResults]) -> list[WarningItem]:
    """One warning per setup whose runs record a call twice (docs/methodology.md §4 "Tool
    calls"): records that repeat an earlier record's id, name and arguments, counted once,
    with the share of runs affected and both means per run."""
    out = []
    for name, s in setups.items():
        tc = s.tool_calls
        if tc.runs_with_duplicate_records:
            out.append(WarningItem(message=(
                f"setup {name!r}: {tc.runs_with_duplicate_records} of {tc.runs_exposed} runs "
                f"({tc.runs_with_duplicate_records / tc.runs_exposed:.0%}) record a tool call "
                "more than once (the same id, name and arguments): "
                f"{tc.recorded_calls - tc.calls} such record(s) counted once, "
                f"{tc.calls} calls of {tc.recorded_calls} records; per run: calls mean "
                f"{_figure(tc.per_run.mean)}, records mean "
                f"{_figure(tc.recorded_per_run.mean)}")))
    return out


def consistency_cap_warnings(consistency: pl.DataFrame) -> list[WarningItem]:
    """One warning when some (setup, task) has more primary runs than
    :data:`~grade_kit.scorers.consistency.MAX_CONSISTENCY_RUNS`: its consistency is null."""
    over = consistency.filter(pl.col("runs") > MAX_CONSISTENCY_RUNS).sort("setup", "task_id")
    if not over.height:
        return []
    named = "; ".join(f"{s!r} / {t!r} ({n:,} runs)" for s, t, n in
                      over.select("setup", "task_id", "runs").head(5).iter_rows())
    return [WarningItem(message=(
        f"consistency is not computed for {over.height} (setup, task) pair(s) with more than "
        f"{MAX_CONSISTENCY_RUNS:,} primary runs (the cap: its clustering compares every pair "
        f"of their findings); their consistency is null: {named}"
        + (" ..." if over.height > 5 else "")))]


MOSTLY_WAITING = 2.0
"""A setup whose E2E P50 exceeds this multiple of its working-time P50 is warned about as
mostly waiting (docs/methodology.md §4 "Timing")."""


def waiting_warnings(setups: dict[str, SetupResults]) -> list[WarningItem]:
    """One warning per setup whose E2E P50 is more than :data:`MOSTLY_WAITING` times its
    working-time P50: most of its end-to-end time was spent waiting (rate limits, queues),
    so E2E compares the waits more than the systems."""
    out = []
    for name, s in setups.items():
        e2e, working = s.timing.e2e_s.p50, s.timing.working_s.p50
        if e2e is not None and working is not None and e2e > MOSTLY_WAITING * working:
            out.append(WarningItem(message=(
                f"{name!r} is mostly waiting: E2E P50 {e2e:.3g} s is more than "
                f"{MOSTLY_WAITING:g}x its working-time P50 {working:.3g} s (time the source "
                "records as work, without waiting on rate limits and queues); compare "
                "working time as well as E2E")))
    return out


def _share(coverage: float | None) -> str:
    return "(no planned slot)" if coverage is None else f"(coverage {coverage:.0%})"


def _figure(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}"


def build_results(scores: GradeScores, standard: StandardResults,
                  rejected: Sequence[Rejected], warnings: Sequence[WarningItem],
                  provenance: Provenance) -> Results:
    """Assemble results.json from the scored frames and the standard's summaries.

    Every setup seen in the runs gets an entry; a setup with no GRADE task has null
    dimensions and ``tasks: 0``. Warnings gain one line per setup whose composite is over
    fewer than six dimensions, and one when R was inferred.
    """
    out: dict[str, SetupResults] = {}
    overall = {row["setup"]: row for row in
               overall_frame(scores.overall, list(standard.setups)).iter_rows(named=True)}
    for setup, summary in standard.setups.items():
        mine = pl.col("setup") == setup
        tasks = {
            str(r["task_id"]): TaskScore(composite=_clean(r["composite"]),
                                         rubric_score=_clean(r["rubric_score"]),
                                         dimensions=_dims(r), runs=int(r["runs"]))
            for r in scores.tasks.filter(mine).to_dicts()
        }
        out[setup] = SetupResults(
            overall=_aggregate(overall[setup]),
            tracks={str(r["track"]): _aggregate(r)
                    for r in scores.tracks.filter(mine).to_dicts()},
            packs={str(r["pack"]): _aggregate(r) for r in scores.packs.filter(mine).to_dicts()},
            tasks=tasks, grades=summary.grades, timing=summary.timing,
            tool_calls=summary.tool_calls, reruns=standard.reruns[setup],
            source_metrics=summary.source_metrics, cost=summary.cost)
    notes = list(warnings)
    if standard.plan.inferred and out:
        notes.append(WarningItem(message=(
            f"R = {standard.plan.repeats} repeats per question was inferred ("
            f"{standard.plan.rule.removeprefix('inferred: ')}); pass repeats (--repeats) to "
            "state the plan")))
    beyond = {name: s.grades.beyond_plan for name, s in out.items() if s.grades.beyond_plan}
    if beyond:
        notes.append(WarningItem(message=(
            f"{sum(beyond.values())} primary run(s) have a repeat above R = "
            f"{standard.plan.repeats} and are outside the plan (never counted in N): "
            + ", ".join(f"{name!r} {n}" for name, n in sorted(beyond.items())))))
    notes += missing_dimension_warnings(out)
    clocks = sorted({c for s in out.values() for c in s.timing.clocks if c != "unrecorded"})
    if len(clocks) > 1:
        notes.append(WarningItem(message=(
            f"E2E samples come from {len(clocks)} clocks ({'; '.join(clocks)}): the skew "
            "between them is unknown; compare latencies across them with care")))
    notes += duplicate_record_warnings(out) + waiting_warnings(out)
    notes += consistency_cap_warnings(scores.consistency)
    unranked = standard.plan.unranked
    if unranked:
        notes.append(WarningItem(message=(
            f"{len(unranked)} setup(s) ran less than {standard.plan.coverage_min:.0%} of their "
            "planned slots and are not ranked: their coverage and counts are shown, never a "
            "rate (over N it would be mostly not-run slots), and they are left out of the "
            "common subset, the comparisons and the Holm family: " + ", ".join(
                f"{name!r} {_share(c)}" for name, c in sorted(unranked.items())))))
    if len(standard.compared) < len(out) - len(unranked):
        notes.append(WarningItem(message=(
            f"{len(out):,} setups: the pairwise comparisons are made among the "
            f"{len(standard.compared)} with the highest resolved rate only "
            f"({', '.join(repr(s) for s in standard.compared)}); the others are summarised "
            f"but not compared (at most {MAX_COMPARED_SETUPS} setups are compared pair by "
            "pair)")))
    return Results(plan=standard.plan, setups=out, common_subset=standard.common,
                   comparisons=standard.comparisons, rejected=[r.as_reject() for r in rejected],
                   warnings=notes, provenance=provenance)
