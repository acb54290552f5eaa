"""Exact arithmetic: every mean is fsum / n, every division correctly rounded, every figure
independent of what else a frame holds (docs/methodology.md §3 "Aggregation")."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grade_kit.exact import (
    divide,
    group_fmean,
    row_fmean,
    row_sum,
    seconds_between,
    segment_fmeans,
)
from grade_kit.schema import DIMENSIONS, PROJECT_WEIGHTS
from grade_kit.scorers import with_composite


def test_group_mean_is_fsum_over_n_not_a_running_sum() -> None:
    values = [1e16, 1.0, -1e16, 1.0]  # a running sum gives 0.5 or 0; fsum gives 2 / 4
    frame = pl.DataFrame({"g": ["a"] * 4 + ["b"], "v": [*values, None]})
    out = dict(group_fmean(frame, ["g"], ["v"]).iter_rows())
    assert out == {"a": 0.5, "b": None}


def test_division_is_correctly_rounded_where_polars_is_not() -> None:
    rnd = random.Random(1)
    micros = [rnd.randrange(10**12) for _ in range(5_000)]
    frame = pl.DataFrame({"u": micros, "d": [10**6] * len(micros)})
    ours = divide(frame, pl.col("u"), pl.col("d")).to_list()
    assert ours == [u / 10**6 for u in micros]
    naive = frame.select(pl.col("u").cast(pl.Float64) / 1_000_000).get_column("u").to_list()
    assert naive != ours  # the reason grade_kit.exact exists (polars 2.x)
    assert divide(pl.DataFrame({"n": [1.0], "d": [0.0]}), pl.col("n"), pl.col("d")).to_list() \
        == [None]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-10**15, 10**15), min_size=1, max_size=50))
def test_seconds_are_python_total_seconds(offsets: list[int]) -> None:
    base = datetime(2026, 1, 1, tzinfo=UTC)
    frame = pl.DataFrame({
        "a": [base for _ in offsets],
        "b": [base + timedelta(microseconds=o) for o in offsets]},
        schema={"a": pl.Datetime("us", "UTC"), "b": pl.Datetime("us", "UTC")})
    got = seconds_between(frame, pl.col("b"), pl.col("a")).to_list()
    assert got == [timedelta(microseconds=o).total_seconds() for o in offsets]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(*[st.one_of(st.none(), st.floats(0, 1)) for _ in DIMENSIONS]),
                min_size=1, max_size=40))
def test_composite_is_the_python_formula_whatever_the_frame_size(
        rows: list[tuple[float | None, ...]]) -> None:
    frame = pl.DataFrame(rows, schema={d: pl.Float64 for d in DIMENSIONS}, orient="row")
    got = with_composite(frame, "c", PROJECT_WEIGHTS).get_column("c").to_list()
    for row, value in zip(rows, got, strict=True):
        num = den = 0.0
        for d, x in zip(DIMENSIONS, row, strict=True):
            if x is not None:
                num += PROJECT_WEIGHTS[d] * x
                den += PROJECT_WEIGHTS[d]
        assert value == (num / den if den > 0 else None)
    alone = [with_composite(frame.slice(i, 1), "c", PROJECT_WEIGHTS)["c"][0]
             for i in range(len(rows))]
    assert alone == got


def test_row_sum_counts_null_as_zero_left_to_right() -> None:
    frame = pl.DataFrame({"a": [0.1, None], "b": [0.2, 0.3], "c": [0.3, None]})
    got = frame.select(s=row_sum([pl.col("a"), pl.col("b"), pl.col("c")]))["s"].to_list()
    assert got == [0.1 + 0.2 + 0.3, 0.3]
    assert math.isclose(got[0], 0.6)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.one_of(st.none(), st.floats(0, 1), st.floats(-1e300, 1e300)),
                         min_size=3, max_size=3), max_size=30))
def test_row_fmean_is_fsum_over_the_non_null_values(rows: list[list[float | None]]) -> None:
    frame = pl.DataFrame(rows, schema={"a": pl.Float64, "b": pl.Float64, "c": pl.Float64},
                         orient="row")
    got = row_fmean(frame, ["a", "b", "c"]).to_list()
    expected = [math.fsum(v for v in row if v is not None)
                / sum(v is not None for v in row) if any(v is not None for v in row) else None
                for row in rows]
    assert got == expected


def test_row_fmean_by_hand() -> None:
    frame = pl.DataFrame({"a": [1 / 12, None, 0.5, None], "b": [1 / 11, None, None, 0.25],
                          "c": [1 / 10, None, 0.25, None]})
    # left to right, the first row would be 0.09141414141414143
    assert row_fmean(frame, ["a", "b", "c"]).to_list() == [0.0914141414141414, None, 0.375,
                                                            0.25]


def test_segment_fmeans_by_hand() -> None:
    # fsum / n per segment: 0.1 + 0.2 + 0.3 is 0.6 exactly rounded (left to right
    # 0.6000000000000001), and 1e16 + 1 - 1e16 is 1 (left to right 0)
    means = segment_fmeans(np.array([0.1, 0.2, 0.3, 5.0, 1e16, 1.0, -1e16]),
                           np.array([0, 3, 4]))
    assert means.tolist() == [0.6 / 3, 5.0, 1 / 3]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.one_of(st.floats(-1e200, 1e200), st.sampled_from(
    [0.1, 0.2, 0.3, 1e16, -1e16, 5e-324, 2.0**-1000])), min_size=1, max_size=9), max_size=20))
def test_segment_fmeans_are_fsum_over_n(segments: list[list[float]]) -> None:
    # The one fsum mean of sorted segments (group_fmean and consistency's key means use it)
    flat = np.array([v for segment in segments for v in segment], dtype=float)
    starts = np.array([sum(map(len, segments[:k])) for k in range(len(segments))],
                      dtype=np.int64)
    assert segment_fmeans(flat, starts).tolist() == [math.fsum(s) / len(s) for s in segments]


def test_group_fmean_of_nothing_and_of_null_groups() -> None:
    frame = pl.DataFrame({"g": ["a", "b"], "v": [None, None]}, schema={"g": pl.String,
                                                                       "v": pl.Float64})
    assert group_fmean(frame, ["g"], ["v"]).to_dicts() == [{"g": "a", "v": None},
                                                           {"g": "b", "v": None}]
    assert group_fmean(frame.head(0), ["g"], ["v"]).height == 0


def test_fmean_is_the_exactly_rounded_sum_over_n() -> None:
    from grade_kit.exact import fmean

    # hand-computed: the sum of ten 0.1 is exactly rounded to 1.0, so the mean is 0.1
    # (left to right the sum is 0.9999999999999999 and the mean 0.09999999999999999)
    assert sum([0.1] * 10) / 10 != 0.1
    assert fmean([0.1] * 10) == 0.1
    assert fmean([1e16, 1.0, -1e16]) == 1 / 3  # left to right: 0.0
    assert fmean(iter([2.0])) == 2.0
    with pytest.raises(ZeroDivisionError):
        fmean([])
