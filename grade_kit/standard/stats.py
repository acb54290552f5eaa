"""The one summary of a sample used for timing, waiting and tool-call counts (DESIGN.md §4
"Timing"): n, mean, P50 (median, mean of the middle two), nearest-rank P90, min, max."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

__all__ = ["median", "nearest_rank", "summarize"]


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


def summarize(values: Sequence[float]) -> dict[str, Any]:
    """``{n, mean, p50, p90, min, max}`` of ``values``; every statistic null when n = 0.

    P90 is nearest-rank: the ceil(0.9 n)-th sorted value, so it is always an observed value.
    """
    ordered = sorted(float(v) for v in values)
    n = len(ordered)
    if n == 0:
        return {"n": 0, "mean": None, "p50": None, "p90": None, "min": None, "max": None}
    return {
        "n": n,
        "mean": math.fsum(ordered) / n,
        "p50": median(ordered),
        "p90": nearest_rank(ordered, 0.9),
        "min": ordered[0],
        "max": ordered[-1],
    }
