"""The one summary of a sample used for timing, waiting and tool-call counts
(docs/methodology.md §4 "Timing"): n, mean, P50 (median, mean of the middle two), nearest-rank
P90, min, max; and the Wilson score interval every grade rate carries (§4 "Rates")."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import polars as pl

from grade_kit.exact import fmean, segment_fmeans
from grade_kit.schema import Interval, Summary

WILSON_Z95 = 1.959963984540054
"""The standard normal quantile of 0.975 (scipy.stats.norm.ppf(0.975))."""


def nearest_rank(sorted_values: Sequence[float], q: float) -> float:
    """The ceil(q x n)-th smallest value (1-based) of an ascending, non-empty sequence."""
    rank = max(1, math.ceil(Fraction(str(q)) * len(sorted_values)))  # exact: no float drift
    return float(sorted_values[rank - 1])


def median(values: Sequence[float]) -> float | None:
    """The median (mean of the middle two for an even count); None when empty."""
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        return None
    mid = n // 2
    return float(ordered[mid]) if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def summarize(values: Sequence[float]) -> Summary:
    """n, mean, P50, P90, min and max of ``values``; every statistic null when n = 0.

    P90 is nearest-rank: the ceil(0.9 n)-th sorted value, so it is always an observed value.
    The mean is :func:`~grade_kit.exact.fmean` (``math.fsum`` / n, exactly rounded).
    """
    ordered = sorted(float(v) for v in values)
    n = len(ordered)
    if n == 0:
        return Summary(n=0)
    return Summary(n=n, mean=fmean(ordered), p50=median(ordered),
                   p90=nearest_rank(ordered, 0.9), min=ordered[0], max=ordered[-1])


def per_setup(setups: pl.DataFrame, frame: pl.DataFrame, **counts: pl.Expr) -> pl.DataFrame:
    """Counts over ``frame``'s rows per setup (its ``setup`` column), one row per row of
    ``setups`` in its order, 0 where a setup has no row: the columns named in ``counts``
    (Int64), without the setup."""
    return setups.join(frame.group_by("setup").agg(**counts), on="setup", how="left",
                       maintain_order="left").select(
        pl.col(name).fill_null(0).cast(pl.Int64) for name in counts)


def rows_by_setup(frame: pl.DataFrame) -> dict[str, list[dict[str, Any]]]:
    """``frame``'s rows (without their ``setup``) by setup, each setup's in frame order: what
    a typed summary reads its maps and lists from."""
    out: dict[str, list[dict[str, Any]]] = {}
    for row in frame.iter_rows(named=True):
        out.setdefault(row.pop("setup"), []).append(row)
    return out


def sorted_median(ordered: pl.Expr) -> pl.Expr:
    """:func:`median` of a group's values given in ascending order (an aggregation):
    (lower middle + upper middle) / 2, the same float operation as :func:`median` (for an
    odd count both are the middle value, and (x + x) / 2 == x exactly)."""
    n = pl.len()
    return (ordered.get((n - 1) // 2) + ordered.get(n // 2)) / 2


SUMMARY_FIELDS = ("n", "mean", "p50", "p90", "min", "max")
"""The statistics of :func:`summarize`, in order: the columns of :func:`summary_frame`."""


def summary_frame(frame: pl.DataFrame, keys: Sequence[str], value: str,
                  groups: pl.DataFrame | None = None, prefix: str = "") -> pl.DataFrame:
    """:func:`summarize` of ``value`` per group of ``keys``, every group at once: the same
    figures (n, the ``fsum`` mean, the median as the mean of the middle two, the nearest-rank
    P90 as the ceil(9n/10)-th value, min, max), nulls left out.

    Args:
        frame: The samples.
        keys: The grouping columns.
        value: The sampled column (cast to float).
        groups: The groups to summarise, in order (a group without a sample gets n = 0 and
            null statistics); default: the groups of ``frame`` with at least one non-null
            sample, sorted.
        prefix: Put before each statistic's name (``e2e_`` -> ``e2e_n``, ...).

    Returns:
        ``keys`` and one column per statistic of :data:`SUMMARY_FIELDS`.
    """
    keys = list(keys)
    samples = (frame.select(*keys, x=pl.col(value).cast(pl.Float64)).drop_nulls("x")
               .sort(*keys, "x"))
    ordered = pl.col("x")
    n = pl.len()
    stats = samples.group_by(keys, maintain_order=True).agg(
        n=n, p50=sorted_median(ordered), p90=ordered.get((9 * n + 9) // 10 - 1),
        min=ordered.first(), max=ordered.last())
    counts = stats.get_column("n").to_numpy().astype(np.int64)
    means = segment_fmeans(samples.get_column("x").to_numpy(), np.cumsum(counts) - counts) \
        if stats.height else np.empty(0)
    stats = stats.select(*keys, "n", pl.Series("mean", means, dtype=pl.Float64), "p50", "p90",
                         "min", "max")
    wanted = groups.select(keys) if groups is not None else stats.select(keys)
    out = wanted.join(stats, on=keys, how="left", maintain_order="left", nulls_equal=True)
    return out.with_columns(pl.col("n").fill_null(0).cast(pl.Int64)).rename(
        {name: prefix + name for name in SUMMARY_FIELDS})


def summary_of(row: dict[str, object], prefix: str = "") -> Summary:
    """The :class:`~grade_kit.schema.Summary` in a row of :func:`summary_frame`."""
    return Summary(**{name: row[prefix + name] for name in SUMMARY_FIELDS})


def wilson_bounds(p: float, n: float, z: float = WILSON_Z95) -> tuple[float, float]:
    """Wilson's score interval of a proportion ``p`` over ``n`` (docs/methodology.md §4
    "Rates"): (p + z²/2n ± z √(p(1-p)/n + z²/4n²)) / (1 + z²/n), exactly 0 (1) at p = 0
    (1), clipped to [0, 1]. ``n`` may be an effective size (not a whole number); with a
    whole n and p = k / n it is the classic interval.
    """
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    low = 0.0 if p == 0 else max(0.0, centre - half)
    high = 1.0 if p == 1 else min(1.0, centre + half)
    return low, high


def wilson_interval(successes: int, n: int, z: float = WILSON_Z95) -> Interval | None:
    """The Wilson score interval of a proportion ``successes / n`` (docs/methodology.md §4
    "Rates"): (p + z²/2n ± z √(p(1-p)/n + z²/4n²)) / (1 + z²/n), clipped to [0, 1].

    It assumes independent trials: the standard's rates use it over the effective size
    instead (:func:`~grade_kit.standard.clustered.clustered_rates`).

    Returns:
        The interval, or None when n = 0.
    """
    if n <= 0:
        return None
    low, high = wilson_bounds(successes / n, n, z)
    return Interval(low=low, high=high)
