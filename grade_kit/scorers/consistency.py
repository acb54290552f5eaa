"""Consistency across repeats (docs/methodology.md §3 "Consistency").

Per (setup, task), over its primary runs in repeat order. A run with no response counts as a run
with no findings and no metrics; with fewer than 2 runs every sub-metric is null.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from fractions import Fraction
from itertools import combinations

import numpy as np
import polars as pl

from grade_kit._chunks import in_pieces
from grade_kit._gc import gc_paused
from grade_kit.exact import fmean, segment_fmeans
from grade_kit.frames import Frame, like, to_polars

CONSISTENCY_WEIGHTS = {"finding_stability": 0.5, "ranking_stability": 0.3,
                       "metric_variance": 0.2}
"""docs/methodology.md §3: consistency = 0.5, 0.3, 0.2 weighted mean of the non-null sub-metrics."""

EXPAND_PAIRS = 10_000
"""Up to this many run pairs, ranking stability sums every pair's value with fsum."""

MAX_CONSISTENCY_RUNS = 1_000
"""The most primary runs of one (setup, task) whose consistency is computed: the clustering
compares every pair of their top findings (3,000 findings make 9 million pairs). Beyond it
the (setup, task)'s consistency is null and a warning names the cap (docs/methodology.md §3
"Consistency")."""

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


def cluster_findings(runs: Sequence[Sequence[Iterable[Hashable]]]) -> list[list[int]]:
    """Greedy clustering of top-3 findings in run order (docs/methodology.md §3).

    A finding joins the first cluster whose *first* finding has token-set Jaccard >= 0.50 with
    it, else it opens a new cluster.

    Args:
        runs: Per run (in repeat order), the tokens of each of its top-3 findings (a set or
            any iterable: repeats count once; tokens as strings, or as ids that are equal
            exactly when the tokens are).

    Returns:
        Per run, the cluster index of each of its findings.
    """
    # Each finding's token set as the bits of an integer (a bit per distinct token, in
    # first-seen order): the intersection is an AND, its size a bit count.
    bits: dict[Hashable, int] = {}
    heads: list[tuple[int, int]] = []
    out: list[list[int]] = []
    for findings in runs:
        assigned = []
        for tokens in findings:
            mask = 0
            for token in tokens:
                bit = bits.get(token)
                if bit is None:
                    bit = bits[token] = 1 << len(bits)
                mask |= bit
            size = mask.bit_count()
            for index, (head, head_size) in enumerate(heads):
                # Jaccard >= 0.5  <=>  2 |a ∩ b| >= |a ∪ b| = |a| + |b| - |a ∩ b|
                #                 <=>  3 |a ∩ b| >= |a| + |b|, exact in integers; and as
                # |a ∩ b| <= min(|a|, |b|), that needs 2 min(|a|, |b|) >= max(|a|, |b|).
                if (size <= 2 * head_size and head_size <= 2 * size
                        and 3 * (mask & head).bit_count() >= size + head_size):
                    assigned.append(index)
                    break
            else:
                heads.append((mask, size))
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
    return fmean(shares)


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
    scores = [_key_stability(values) for values in values_by_key.values() if len(values) >= 2]
    return fmean(scores) if scores else None


def _key_stability(values: Sequence[float]) -> float:
    """1 / (1 + CV) of one metric key's values (at least two; docs/methodology.md §3)."""
    n = len(values)
    if all(v == values[0] for v in values):
        mean, std = values[0], 0.0  # identical values: exactly no spread
    else:
        # CV is scale-free: rescale extreme magnitudes so squares cannot overflow.
        scale = max(abs(v) for v in values)
        xs = [v / scale for v in values] if not 1e-150 < scale < 1e150 else list(values)
        mean = fmean(xs)
        # Squares as d * d, correctly rounded (Python's ** 2 goes through libm's pow, one
        # unit in the last place off for about 1 value in 1,000).
        std = math.sqrt(math.fsum((x - mean) * (x - mean) for x in xs) / n)
    if mean == 0:
        return 1.0 if std == 0 else 0.0
    return 1.0 / (1.0 + std / abs(mean))


def weighted_consistency(parts: dict[str, float | None]) -> float | None:
    """0.5 / 0.3 / 0.2 weighted mean of the non-null sub-metrics, weights renormalised."""
    present = {k: v for k, v in parts.items() if v is not None}
    total = math.fsum(CONSISTENCY_WEIGHTS[k] for k in present)
    if not present or total == 0:
        return None
    return math.fsum(CONSISTENCY_WEIGHTS[k] * v for k, v in present.items()) / total


def _consistency_scores(runs: pl.DataFrame, items: pl.DataFrame,
                       metrics: pl.DataFrame) -> pl.DataFrame:
    # Groups and runs get dense ordinals in (setup, task_id, repeat) order, and the findings
    # are joined to them and sorted by polars, so every step below works on flat columns.
    primary = (runs.filter(pl.col("is_primary")).select("run_id", "setup", "task_id", "repeat")
               .sort("setup", "task_id", "repeat")
               .with_columns(group=pl.struct("setup", "task_id").rle_id())
               .with_columns(slot=pl.int_range(pl.len()).over("group")))
    ordinals = primary.select("run_id", "group", "slot")
    groups = primary.group_by("group", maintain_order=True).agg(
        pl.col("setup").first(), pl.col("task_id").first(), runs=pl.len())
    # A text's tokens as ids (one categorical cast maps equal tokens to equal ids), each
    # finding's distinct ids once: the token set the rule compares.
    # (In chunks, so that the split and the cast run on every thread.)
    capped = groups.filter(pl.col("runs") <= MAX_CONSISTENCY_RUNS).select("group")
    ordinals = ordinals.join(capped, on="group", how="semi")
    groups = groups.with_columns(pl.when(pl.col("runs") <= MAX_CONSISTENCY_RUNS)
                                 .then(pl.col("runs")).alias("scored_runs"))
    top = (in_pieces(items.filter((pl.col("field") == "finding") & (pl.col("norm") != ""))
                     .join(ordinals, on="run_id").sort("group", "slot", "position")
                     .filter(pl.int_range(pl.len()).over("group", "slot") < TOP_K))
           .select("group", "slot", tokens=pl.col("norm").str.split(" ")
                   .cast(pl.List(pl.Categorical)).list.eval(pl.element().to_physical())
                   .list.unique()))
    top = top.with_columns(cluster=pl.Series(_finding_clusters(top), dtype=pl.Int64))
    parts = (groups.join(_stability_scores(top, groups.filter(
                pl.col("scored_runs").is_not_null())), on="group", how="left",
                         maintain_order="left")
             .join(_key_scores(metrics, ordinals), on="group", how="left",
                   maintain_order="left"))
    consistency = [weighted_consistency(dict(zip(CONSISTENCY_WEIGHTS, row, strict=True)))
                   for row in parts.select(list(CONSISTENCY_WEIGHTS)).iter_rows()]
    return parts.select(
        "setup", "task_id", pl.col("runs").cast(pl.Int64), "finding_stability",
        "ranking_stability", "metric_variance",
        consistency=pl.Series(consistency, dtype=pl.Float64))


def _finding_clusters(top: pl.DataFrame) -> list[int]:
    """:func:`cluster_findings` of every group of ``top`` (columns ``group`` and ``tokens``,
    a finding's token ids; rows sorted by group, then in run and position order): the
    cluster index of each row. The greedy pass runs over a group's findings in order, so
    its runs need not be told apart."""
    out: list[int] = []
    for tokens in (top.group_by("group", maintain_order=True).agg("tokens")
                   .get_column("tokens").to_list()):
        out.extend(cluster_findings([tokens])[0])
    return out


def _stability_scores(top: pl.DataFrame, groups: pl.DataFrame) -> pl.DataFrame:
    """Finding and ranking stability per group of ``groups`` with 2 or more runs, from the
    clusters of ``top``. Both depend only on the group's runs and each run's list of
    clusters, so each distinct such shape is scored once (by :func:`finding_stability` and
    :func:`ranking_stability`) and the score is joined to every group of that shape."""
    shapes = (groups.select("group", "runs").filter(pl.col("runs") >= 2)
              .join(top.group_by("group").agg(pl.col("slot"), pl.col("cluster")), on="group",
                    how="left"))
    distinct = shapes.select("runs", "slot", "cluster").unique(maintain_order=True)
    finding: list[float | None] = []
    ranking: list[float | None] = []
    for n_runs, slots, clusters in distinct.iter_rows():
        assignments: list[list[int]] = [[] for _ in range(n_runs)]
        for slot, cluster in zip(slots or (), clusters or (), strict=True):
            assignments[slot].append(cluster)
        finding.append(finding_stability(assignments))
        ranking.append(ranking_stability(assignments))
    scored = distinct.with_columns(finding_stability=pl.Series(finding, dtype=pl.Float64),
                                   ranking_stability=pl.Series(ranking, dtype=pl.Float64))
    return shapes.join(scored, on=["runs", "slot", "cluster"], how="left",
                       nulls_equal=True).select("group", "finding_stability",
                                                "ranking_stability")


def _key_scores(metrics: pl.DataFrame, ordinals: pl.DataFrame) -> pl.DataFrame:
    """Metric variance per group of ``ordinals`` that has a key numeric in >= 2 of its runs
    (:func:`metric_variance`, group by group; groups with fewer than 2 runs have none)."""
    values = (metrics.filter(pl.col("num").is_not_null()).join(ordinals, on="run_id")
              .group_by("group", "key").agg(pl.col("num"))
              .join(ordinals.group_by("group").agg(size=pl.len()), on="group")
              .filter((pl.col("size") >= 2) & (pl.col("num").list.len() >= 2))
              .sort("group"))
    group = values.get_column("group").to_numpy().astype(np.int64)
    if not len(group):
        return pl.DataFrame(schema={"group": pl.UInt32, "metric_variance": pl.Float64})
    scores = np.array([_key_stability(v) for v in values.get_column("num").to_list()],
                      dtype=np.float64)
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    return pl.DataFrame({"group": group[starts],
                         "metric_variance": segment_fmeans(scores, starts)},
                        schema={"group": pl.UInt32, "metric_variance": pl.Float64})


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
    with gc_paused():  # many small sets and lists: the cyclic GC would rescan them
        result = _consistency_scores(to_polars(runs), to_polars(items), to_polars(metrics))
    return like(result, runs)
