"""Consistency across repeats (docs/methodology.md §3 "Consistency").

Per (setup, task), over its primary runs in repeat order. A run with no response counts as a run
with no findings and no metrics; with fewer than 2 runs every sub-metric is null.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from fractions import Fraction
from itertools import combinations

import polars as pl

from grade_kit._gc import gc_paused
from grade_kit.frames import Frame, like, to_polars

__all__ = [
    "CONSISTENCY_WEIGHTS",
    "cluster_findings",
    "consistency_scores",
    "finding_stability",
    "kendall_tau_b",
    "metric_variance",
    "ranking_stability",
]

CONSISTENCY_WEIGHTS = {"finding_stability": 0.5, "ranking_stability": 0.3,
                       "metric_variance": 0.2}
"""docs/methodology.md §3: consistency = 0.5, 0.3, 0.2 weighted mean of the non-null sub-metrics."""

EXPAND_PAIRS = 10_000
"""Up to this many run pairs, ranking stability sums every pair's value with fsum."""

TOP_K = 3
"""docs/methodology.md §3: top-3 = first three non-empty key findings."""


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's tau-b of two paired sequences (ties corrected).

    tau_b = (concordant - discordant) / sqrt((n0 - ties_x) (n0 - ties_y)), n0 = n(n-1)/2.

    Returns:
        tau_b in [-1, 1], or None when fewer than 2 pairs or either side is all ties.
    """
    n = len(x)
    if n != len(y):
        raise ValueError("x and y must have the same length")
    concordant = discordant = ties_x = ties_y = 0
    for i, j in combinations(range(n), 2):
        dx = x[i] - x[j]
        dy = y[i] - y[j]
        if dx == 0:
            ties_x += 1
        if dy == 0:
            ties_y += 1
        if dx * dy > 0:
            concordant += 1
        elif dx * dy < 0:
            discordant += 1
    n0 = n * (n - 1) // 2
    denominator = math.sqrt((n0 - ties_x) * (n0 - ties_y))
    if denominator == 0:
        return None
    return (concordant - discordant) / denominator


def cluster_findings(runs: Sequence[Sequence[frozenset[str]]]) -> list[list[int]]:
    """Greedy clustering of top-3 findings in run order (docs/methodology.md §3).

    A finding joins the first cluster whose *first* finding has token-set Jaccard >= 0.50 with
    it, else it opens a new cluster.

    Args:
        runs: Per run (in repeat order), the token sets of its top-3 findings.

    Returns:
        Per run, the cluster index of each of its findings.
    """
    heads: list[tuple[frozenset[str], int]] = []
    out: list[list[int]] = []
    for findings in runs:
        assigned = []
        for tokens in findings:
            size = len(tokens)
            for index, (head, head_size) in enumerate(heads):
                # Jaccard >= 0.5  <=>  2 |a ∩ b| >= |a ∪ b| = |a| + |b| - |a ∩ b|
                #                 <=>  3 |a ∩ b| >= |a| + |b|, exact in integers; and as
                # |a ∩ b| <= min(|a|, |b|), that needs 2 min(|a|, |b|) >= max(|a|, |b|).
                if (size <= 2 * head_size and head_size <= 2 * size
                        and 3 * len(tokens & head) >= size + head_size):
                    assigned.append(index)
                    break
            else:
                heads.append((tokens, size))
                assigned.append(len(heads) - 1)
        out.append(assigned)
    return out


def finding_stability(assignments: Sequence[Sequence[int]]) -> float | None:
    """Mean over clusters of (runs with a top-3 finding in the cluster / runs).

    Returns:
        The stability, or None with fewer than 2 runs or no findings at all.
    """
    n_runs = len(assignments)
    clusters = sorted({c for run in assignments for c in run})
    if n_runs < 2 or not clusters:
        return None
    shares = [sum(1 for run in assignments if c in run) / n_runs for c in clusters]
    return math.fsum(shares) / len(shares)


def ranking_stability(assignments: Sequence[Sequence[int]]) -> float | None:
    """Mean over run pairs sharing >= 2 clusters of (tau_b + 1) / 2 (docs/methodology.md §3).

    A run's position for a cluster is the position of its first finding in it; tau_b is taken
    over the shared clusters' positions. Pairs sharing fewer than 2 clusters are skipped.

    Returns:
        The stability, or None when no pair qualifies.
    """
    # Runs with the same cluster -> position map give the same tau against any other run, so
    # each distinct map is compared once and its pairs are counted: the work grows with the
    # distinct orderings, not with the square of the repeats. The sum is exact either way
    # (fsum over every pair's value while there are few pairs, else Fraction over the
    # distinct values), so the mean is the pair-by-pair mean bit for bit.
    maps: Counter[tuple[tuple[int, int], ...]] = Counter()
    for run in assignments:
        first: dict[int, int] = {}
        for position, cluster in enumerate(run):
            first.setdefault(cluster, position)
        maps[tuple(sorted(first.items()))] += 1
    distinct = list(maps.items())
    weights: Counter[float] = Counter()
    for i, (map_a, count_a) in enumerate(distinct):
        a = dict(map_a)
        others = [(map_a, count_a * (count_a - 1) // 2), *((m, count_a * c)
                                                          for m, c in distinct[i + 1:])]
        for map_b, weight in others:
            if weight == 0:
                continue
            b = dict(map_b)
            shared = sorted(set(a) & set(b))
            if len(shared) < 2:
                continue
            tau = kendall_tau_b([a[c] for c in shared], [b[c] for c in shared])
            if tau is not None:
                weights[(tau + 1) / 2] += weight
    pairs = sum(weights.values())
    if not pairs:
        return None
    if pairs <= EXPAND_PAIRS:
        return math.fsum(v for v, w in weights.items() for _ in range(w)) / pairs
    return float(sum(Fraction(v) * w for v, w in weights.items())) / pairs


def metric_variance(values_by_key: Mapping[str, Sequence[float]]) -> float | None:
    """Mean over metric keys numeric in >= 2 runs of 1 / (1 + CV) (docs/methodology.md §3).

    CV = population std / |mean|; mean 0 with std 0 gives CV 0, mean 0 otherwise scores 0.

    Args:
        values_by_key: Per structured_metrics key, its parsed numeric values (one per run
            where it parsed).

    Returns:
        The score, or None when no key is numeric in 2 or more runs.
    """
    scores = []
    for values in values_by_key.values():
        n = len(values)
        if n < 2:
            continue
        if all(v == values[0] for v in values):
            mean, std = values[0], 0.0  # identical values: exactly no spread
        else:
            # CV is scale-free: rescale extreme magnitudes so squares cannot overflow.
            scale = max(abs(v) for v in values)
            xs = [v / scale for v in values] if not 1e-150 < scale < 1e150 else list(values)
            mean = math.fsum(xs) / n
            std = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / n)
        if mean == 0:
            scores.append(1.0 if std == 0 else 0.0)
        else:
            scores.append(1.0 / (1.0 + std / abs(mean)))
    return math.fsum(scores) / len(scores) if scores else None


def weighted_consistency(parts: dict[str, float | None]) -> float | None:
    """0.5 / 0.3 / 0.2 weighted mean of the non-null sub-metrics, weights renormalised."""
    present = {k: v for k, v in parts.items() if v is not None}
    total = math.fsum(CONSISTENCY_WEIGHTS[k] for k in present)
    if not present or total == 0:
        return None
    return math.fsum(CONSISTENCY_WEIGHTS[k] * v for k, v in present.items()) / total


def _consistency_scores(runs: pl.DataFrame, items: pl.DataFrame,
                        metrics: pl.DataFrame) -> pl.DataFrame:
    with gc_paused():  # many small sets and lists: the cyclic GC would rescan them
        return _consistency_frame(runs, items, metrics)


def _consistency_frame(runs: pl.DataFrame, items: pl.DataFrame,
                       metrics: pl.DataFrame) -> pl.DataFrame:
    primary = (runs.filter(pl.col("is_primary")).select("run_id", "setup", "task_id", "repeat")
               .sort("setup", "task_id", "repeat"))
    top = (items.filter((pl.col("field") == "finding") & (pl.col("norm") != ""))
           .sort("run_id", "position").group_by("run_id", maintain_order=True).head(TOP_K))
    top3: dict[str, list[frozenset[str]]] = defaultdict(list)
    for run_id, norm in zip(top.get_column("run_id").to_list(),
                            top.get_column("norm").to_list(), strict=True):
        top3[run_id].append(frozenset(norm.split(" ")))
    numeric = metrics.filter(pl.col("num").is_not_null())
    numbers: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for run_id, key, num in zip(*(numeric.get_column(c).to_list()
                                  for c in ("run_id", "key", "num")), strict=True):
        numbers[run_id].append((key, num))
    groups: dict[tuple[str, str], list[str]] = {}
    for run_id, setup, task_id in zip(*(primary.get_column(c).to_list()
                                        for c in ("run_id", "setup", "task_id")), strict=True):
        groups.setdefault((setup, task_id), []).append(run_id)
    rows = []
    for (setup, task_id), run_ids in groups.items():
        n_runs = len(run_ids)
        if n_runs < 2:
            fs = rs = mv = None
        else:
            assignments = cluster_findings([top3.get(r, []) for r in run_ids])
            fs = finding_stability(assignments)
            rs = ranking_stability(assignments)
            by_key: dict[str, list[float]] = {}
            for r in run_ids:
                for key, value in numbers.get(r, []):
                    by_key.setdefault(key, []).append(value)
            mv = metric_variance(by_key)
        parts = {"finding_stability": fs, "ranking_stability": rs, "metric_variance": mv}
        rows.append((setup, task_id, n_runs, fs, rs, mv, weighted_consistency(parts)))
    return pl.DataFrame(
        rows, orient="row",
        schema={"setup": pl.String, "task_id": pl.String, "runs": pl.Int64,
                "finding_stability": pl.Float64, "ranking_stability": pl.Float64,
                "metric_variance": pl.Float64, "consistency": pl.Float64},
    )


def consistency_scores(runs: Frame, items: Frame, metrics: Frame) -> Frame:
    """Consistency per (setup, task) over its primary runs in repeat order (docs/methodology.md §3).

    Args:
        runs: The ``runs`` frame; only primary runs are used (re-runs never count).
        items: The ``items`` frame (key findings are read from it).
        metrics: The ``metrics`` frame (numeric values are read from it).

    Returns:
        setup, task_id, runs, finding_stability, ranking_stability, metric_variance,
        consistency; every score null with fewer than 2 runs.
    """
    result = _consistency_scores(to_polars(runs), to_polars(items), to_polars(metrics))
    return like(result, runs)
