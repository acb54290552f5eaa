"""The review queue (docs/methodology.md §4 "The review queue"): the primary runs a person
should look at, each with why, exported as a blind grading sheet.

In the queue, in this order of reasons (a run appears once, with its first reason):

1. ``material error``: its grade is material_error;
2. ``pending verification``: its grade is pending_verification (a field pending, or no grade
   record);
3. ``partial resolution``: its grade is partially_resolved;
4. ``borderline``: its grade and the GRADE checks disagree: resolved with a gold fact failed,
   a gold insight missed or a forbidden claim stated;
5. ``spot check``: a seeded random share of the remaining resolved runs (at least one when
   any remain), so resolved grades are checked too.

Runs that were not delivered are unresolved by rule and not queued.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import polars as pl

from grade_kit.pipeline.scored import Evaluation
from grade_kit.reading._fastread import select_records
from grade_kit.standard.blind import grading_sheet, write_grading_sheet

REASONS = ("material error", "pending verification", "partial resolution", "borderline",
           "spot check")


def review_queue(ev: Evaluation, *, spot_check: float = 0.1, seed: int = 0) -> pl.DataFrame:
    """The runs to review, with why (see the module docstring).

    Args:
        ev: An evaluation.
        spot_check: Share of the remaining resolved runs sampled for a spot check; default
            0.1 (at least one when any remain; 0 turns it off).
        seed: Seed of the spot-check sample; default 0.

    Returns:
        run_id, setup, task_id, repeat, grade, reason (sorted by reason, then run).
    """
    graded = ev.standard.graded.filter(pl.col("is_primary") & (pl.col("status") == "delivered"))
    checks = ev.runs_frame.select("run_id", "grounding_accuracy", "insight_quality")
    forbidden = (ev.scores.matches.filter((pl.col("role") == "forbidden") & pl.col("found"))
                 .select("run_id").unique().with_columns(stated=pl.lit(True)))
    frame = (graded.join(checks, on="run_id", how="left")
             .join(forbidden, on="run_id", how="left")
             .with_columns(pl.col("stated").fill_null(False)))
    disagrees = ((pl.col("grade") == "resolved")
                 & ((pl.col("grounding_accuracy").fill_null(1.0) < 1.0)
                    | (pl.col("insight_quality").fill_null(1.0) < 1.0) | pl.col("stated")))
    reason = (pl.when(pl.col("grade") == "material_error").then(pl.lit("material error"))
              .when(pl.col("grade") == "pending_verification")
              .then(pl.lit("pending verification"))
              .when(pl.col("grade") == "partially_resolved").then(pl.lit("partial resolution"))
              .when(disagrees).then(pl.lit("borderline")).otherwise(None))
    frame = frame.with_columns(reason=reason)
    rest = sorted(frame.filter(pl.col("reason").is_null() & (pl.col("grade") == "resolved"))
                  .get_column("run_id").to_list())
    picked: set[str] = set()
    if rest and spot_check > 0:
        k = max(1, math.ceil(spot_check * len(rest)))
        picked = set(random.Random(seed).sample(rest, min(k, len(rest))))
    frame = frame.with_columns(reason=pl.when(pl.col("run_id").is_in(
        pl.Series(sorted(picked), dtype=pl.String).implode())).then(pl.lit("spot check"))
        .otherwise(pl.col("reason")))
    order = {r: i for i, r in enumerate(REASONS)}
    out = frame.filter(pl.col("reason").is_not_null()).select(
        "run_id", "setup", "task_id", "repeat", "grade", "reason")
    return out.with_columns(_order=pl.col("reason").replace_strict(order)).sort(
        "_order", "run_id").drop("_order")


def write_review_sheet(ev: Evaluation, sheet: Path | str, *, key: Path | str | None = None,
                       spot_check: float = 0.1, seed: int = 0) -> tuple[pl.DataFrame, Path]:
    """The review queue as a blind grading sheet (aliases, question, answer only; the key
    apart), ready for ``grade-kit import-grades``.

    Returns:
        The queue and the key's path.
    """
    queue = review_queue(ev, spot_check=spot_check, seed=seed)
    wanted = set(queue.get_column("run_id").to_list())
    runs = select_records(ev.inputs.runs, lambda r: r.run_id in wanted)
    rows, sheet_key = grading_sheet(ev.inputs.tasks, runs, seed=seed)
    sheet_path = Path(sheet)
    key_path = Path(key) if key is not None else sheet_path.with_suffix(".key.json")
    write_grading_sheet(rows, sheet_key, sheet_path, key_path)
    return queue, key_path
