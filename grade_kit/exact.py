"""Exact, order-free arithmetic for the figures every report shows (docs/methodology.md §3
"Aggregation"): a mean is ``math.fsum(values) / n`` over the non-null values (the sum exactly
rounded, as ``statistics.fmean``), and a weighted sum of a few columns is added left to right
in a fixed order. A figure therefore depends only on its own values, never on how many other
rows a frame holds or how it is chunked.

Division is done here, by numpy, and never in a polars expression: polars (2.x) may compute
``a / b`` as ``a * (1 / b)`` (for a literal divisor, and for some column shapes), which is
off by one unit in the last place for about a third of all values; numpy divides as IEEE 754
does, the way Python's ``/`` does.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import polars as pl


def fmean(values: Iterable[float]) -> float:
    """The mean of docs/methodology.md §3 "Aggregation": ``math.fsum(values) / n`` (the sum
    exactly rounded, then one division), the one place a list of values is averaged.

    Raises:
        ZeroDivisionError: when ``values`` is empty (callers decide what no value means).
    """
    listed = list(values)
    return math.fsum(listed) / len(listed)


def group_fmean(frame: pl.DataFrame, keys: Sequence[str],
                columns: Sequence[str]) -> pl.DataFrame:
    """Per group of ``keys``: ``fsum`` / count of the non-null values of each column (null
    when a group has none).

    Returns:
        The keys (one row per group of ``frame``, sorted by the keys) and one column each.
    """
    keys = list(keys)
    out = frame.select(keys).unique().sort(keys)
    for column in columns:
        values = frame.select(*keys, column).drop_nulls(column).sort(keys)
        lengths = values.group_by(keys, maintain_order=True).len()
        flat = values.get_column(column).cast(pl.Float64).to_numpy(allow_copy=True)
        counts = lengths.get_column("len").to_numpy().astype(np.int64)
        means = segment_fmeans(flat, np.cumsum(counts) - counts)
        part = lengths.drop("len").with_columns(pl.Series(column, means, dtype=pl.Float64))
        out = out.join(part, on=keys, how="left", nulls_equal=True)
    return out


def row_fmean(frame: pl.DataFrame, columns: Sequence[str]) -> pl.Series:
    """Per row of ``frame``: ``fsum`` / count of the non-null values of ``columns`` (null
    when a row has none)."""
    means = []
    for row in frame.select([pl.col(c).cast(pl.Float64) for c in columns]).iter_rows():
        present = [value for value in row if value is not None]
        means.append(fmean(present) if present else None)
    return pl.Series(means, dtype=pl.Float64)


def segment_fmeans(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """``math.fsum(segment) / len(segment)`` of each segment of ``values`` (segment k is
    ``values[starts[k]:starts[k + 1]]``, the last running to the end; none empty)."""
    listed = np.asarray(values, dtype=np.float64).tolist()
    bounds = np.asarray(starts, dtype=np.int64).tolist()
    return np.array([math.fsum(listed[a:b]) / (b - a)
                     for a, b in zip(bounds, [*bounds[1:], len(listed)], strict=False)],
                    dtype=np.float64)


def row_sum(terms: Sequence[pl.Expr]) -> pl.Expr:
    """``terms[0] + terms[1] + ...`` left to right, a null term counting as 0 (adding 0.0
    leaves a sum unchanged): the same float operations whatever the frame's shape."""
    total = pl.lit(0.0)
    for term in terms:
        total = total + term.fill_null(0.0)
    return total


def divide(frame: pl.DataFrame, numerator: pl.Expr, denominator: pl.Expr) -> pl.Series:
    """``numerator / denominator`` per row of ``frame``, correctly rounded; null where the
    denominator is 0 or either side is null."""
    parts = frame.select(n=numerator.cast(pl.Float64), d=denominator.cast(pl.Float64))
    num = parts.get_column("n").to_numpy(allow_copy=True).astype(np.float64)
    den = parts.get_column("d").to_numpy(allow_copy=True).astype(np.float64)
    ok = np.isfinite(num) & np.isfinite(den) & (den != 0)
    quotient = np.full(len(num), np.nan)
    np.divide(num, den, out=quotient, where=ok)
    return pl.Series(quotient).fill_nan(None)


def seconds_between(frame: pl.DataFrame, later: pl.Expr, earlier: pl.Expr) -> pl.Series:
    """``later - earlier`` in seconds (microseconds / 10^6, correctly rounded, as Python's
    ``timedelta.total_seconds()``); null where either instant is null."""
    micros = frame.select(us=(later - earlier).dt.total_microseconds()).get_column("us")
    values = micros.cast(pl.Float64).to_numpy(allow_copy=True).astype(np.float64)
    return pl.Series(values / 1e6).fill_nan(None)
