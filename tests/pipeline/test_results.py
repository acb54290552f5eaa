"""results.json's overall aggregates and the leaderboard come from one frame
(:func:`grade_kit.pipeline.results.overall_frame`): checked by hand on the edge cases."""

from __future__ import annotations

import math

import polars as pl

from grade_kit.pipeline.results import overall_frame
from grade_kit.schema import DIMENSIONS


def test_the_overall_frame_by_hand() -> None:
    dims = {d: [0.5, math.nan] for d in DIMENSIONS}
    dims["consistency"] = [None, math.inf]
    overall = pl.DataFrame({"setup": ["a", "b"], "tasks": [2, 1], **dims,
                            "composite": [0.5, math.nan]},
                           schema_overrides={"consistency": pl.Float64})
    out = overall_frame(overall, ["b", "none", "a"])  # the order given; "none" ran no task
    assert out.columns == ["setup", "composite", "dimensions_computed", *DIMENSIONS, "tasks"]
    assert out.get_column("setup").to_list() == ["b", "none", "a"]
    rows = {r["setup"]: r for r in out.iter_rows(named=True)}
    # a: five finite dimensions, consistency null
    assert rows["a"]["composite"] == 0.5 and rows["a"]["dimensions_computed"] == 5
    assert rows["a"]["consistency"] is None and rows["a"]["tasks"] == 2
    # b: NaN and infinity are no figure: null, and not counted as computed
    assert rows["b"]["composite"] is None and rows["b"]["dimensions_computed"] == 0
    assert all(rows["b"][d] is None for d in DIMENSIONS) and rows["b"]["tasks"] == 1
    # a setup with no GRADE task: every figure null, 0 tasks, 0 dimensions
    assert rows["none"]["composite"] is None and rows["none"]["tasks"] == 0
    assert rows["none"]["dimensions_computed"] == 0


def test_the_overall_frame_of_no_setup_is_empty_and_typed() -> None:
    overall = pl.DataFrame(schema={"setup": pl.String, "tasks": pl.Int64,
                                   **dict.fromkeys(DIMENSIONS, pl.Float64),
                                   "composite": pl.Float64})
    out = overall_frame(overall, [])
    assert out.height == 0
    assert out.schema["dimensions_computed"] == pl.Int64 and out.schema["tasks"] == pl.Int64
