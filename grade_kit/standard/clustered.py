"""Question-clustered uncertainty (docs/methodology.md §4 "Rates" and "Clusters"): the
repeats of one question are not independent samples, so every rate's interval and every
mean's interval is built from cluster totals (CR0, Miller 2024, "Adding Error Bars to
Evals"), with the cluster a question by default, or a track or a pack.

- :func:`clustered_rates`: per setup and grade state, the design effect, the intra-cluster
  correlation, the effective sample size and Wilson's interval over it;
- :func:`clustered_mean_ci`: a mean over runs with its CR0 standard error and normal interval;
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import polars as pl

from grade_kit.exact import group_fmean
from grade_kit.schema import GRADE_STATES
from grade_kit.standard.stats import WILSON_Z95, wilson_bounds

Cluster = Literal["question", "track", "pack"]
CLUSTERS: tuple[Cluster, ...] = ("question", "track", "pack")
"""The cluster keys: every question its own cluster (the default), or a task's track or
pack (docs/methodology.md §4 "Clusters")."""


def cluster_of_tasks(tasks: pl.DataFrame, cluster: Cluster = "question") -> pl.DataFrame:
    """Each task's cluster: task_id, cluster (the task id itself; its pack and track, a
    track named within its pack; or its pack). A task without one is its own cluster, so no
    two unrelated tasks are merged.

    Raises:
        ValueError: for a cluster key other than :data:`CLUSTERS`.
    """
    if cluster not in CLUSTERS:
        raise ValueError(f"cluster must be one of {', '.join(CLUSTERS)}, not {cluster!r}")
    task = pl.col("task_id")
    if cluster == "question":
        return tasks.select(task, cluster=task)
    # a track is named within its pack (track 1 of two packs is two clusters)
    key = (pl.concat_str([pl.col("pack").cast(pl.String), pl.lit("/"),
                          pl.col("track").cast(pl.String)]) if cluster == "track"
           else pl.col("pack").cast(pl.String))
    return tasks.select(task, cluster=pl.when(key.is_null())
                        .then(pl.concat_str([pl.lit("task:"), task]))
                        .otherwise(pl.concat_str([pl.lit(f"{cluster}:"), key])))


def interval_basis(cluster: Cluster, repeats: int) -> str:
    """What an interval accounts for, as every table states it: ``clustered by question,
    R = 3``."""
    return f"clustered by {cluster}, R = {repeats}"


def _exact_sum(values: np.ndarray) -> int:
    """Σ of integers exactly: int64 where it cannot overflow, else Python integers."""
    bound = int(np.abs(values).max(initial=0)) * max(values.size, 1)
    return int(values.sum()) if bound < 2**62 else sum(int(v) for v in values.tolist())


def effective_size(successes: np.ndarray, sizes: np.ndarray,
                   cap: int | None = None) -> tuple[float | None, float | None, float]:
    """(design effect, icc, n_effective) of per-cluster successes s_c over per-cluster
    sizes n_c (integers; docs/methodology.md §4 "Rates"), exactly: with N = Σ n_c, K = Σ s_c
    and W = N² Σ s_c² - 2 N K Σ s_c n_c + K² Σ n_c² = N⁴ SE² (CR0), design effect =
    W / (N K (N - K)), icc = (design effect - 1) / (N / C - 1) (null when N / C = 1) and
    n_effective = min(cap, N² K (N - K) / W), one division each.

    n_effective is C, and the design effect and icc null, when p is 0 or 1 (no variance to
    measure) or there are fewer than 2 clusters (one cluster has no spread between
    clusters: CR0's zero there would claim all N slots are independent); it is ``cap``
    (default N) when W = 0 with 0 < p < 1.
    """
    clusters = int(sizes.size)
    total = _exact_sum(sizes)
    k = _exact_sum(successes)
    cap = total if cap is None else cap
    if k in (0, total) or clusters < 2:
        return None, None, float(clusters)
    square = _exact_sum(successes.astype(object) ** 2) if successes.size else 0
    cross = _exact_sum(successes.astype(object) * sizes.astype(object))
    size_square = _exact_sum(sizes.astype(object) ** 2)
    w = total * total * square - 2 * total * k * cross + k * k * size_square
    binomial = total * k * (total - k)
    mean_size = total / clusters
    if w == 0:  # every cluster exactly at p: no between-cluster variance
        return 0.0, (None if mean_size == 1 else -1 / (mean_size - 1)), float(cap)
    design = w / binomial
    icc = None if mean_size == 1 else (design - 1) / (mean_size - 1)
    # n_effective = p (1 - p) / SE² = N x binomial / W, at most cap (one exact division)
    n_eff = float(cap) if total * binomial >= cap * w else total * binomial / w
    return design, icc, n_eff


def clustered_rates(counts: pl.DataFrame, setups: list[str]) -> pl.DataFrame:
    """Per setup, for every grade state: its design effect, icc, effective size and Wilson's
    interval over the effective size (docs/methodology.md §4 "Rates").

    For one setup with C clusters, s_c the cluster's slots in the state, n_c its planned
    slots (R x its questions), N = Σ n_c, p = Σ s_c / N: SE² = Σ (s_c - p n_c)² / N² (CR0);
    design effect, icc and n_effective by :func:`effective_size`; the interval is
    :func:`~grade_kit.standard.stats.wilson_bounds` (p, n_effective). With R = 1 and
    question clusters W = N K (N - K) exactly, so the interval is Wilson's over N.

    Args:
        counts: setup, cluster, slots (the cluster's planned slots) and one column per grade
            state (the cluster's slots in it), one row per planned (setup, cluster).
        setups: The setups, in order (one without a row gets nulls).

    Returns:
        setup and per state ``<state>_design_effect``, ``<state>_icc``,
        ``<state>_n_effective``, ``<state>_ci_low``, ``<state>_ci_high``.
    """
    names = ("design_effect", "icc", "n_effective", "ci_low", "ci_high")
    by_setup = {part.get_column("setup")[0]: part
                for part in counts.partition_by("setup", maintain_order=True)}
    columns: dict[str, list[object]] = {"setup": list(setups)}
    columns.update({f"{g}_{name}": [] for g in GRADE_STATES for name in names})
    for setup in setups:
        part = by_setup.get(setup)
        sizes = None if part is None else part.get_column("slots").to_numpy().astype(np.int64)
        for g in GRADE_STATES:
            if sizes is None or not sizes.sum():
                values: tuple[object, ...] = (None,) * 5
            else:
                assert part is not None
                successes = part.get_column(g).to_numpy().astype(np.int64)
                design, icc, n_eff = effective_size(successes, sizes)
                low, high = wilson_bounds(_exact_sum(successes) / _exact_sum(sizes), n_eff)
                values = (design, icc, n_eff, low, high)
            for name, value in zip(names, values, strict=True):
                columns[f"{g}_{name}"].append(value)
    return pl.DataFrame(columns, schema={"setup": pl.String, **{
        f"{g}_{name}": pl.Float64 for g in GRADE_STATES for name in names}})


def clustered_mean_ci(frame: pl.DataFrame, keys: list[str], value: str,
                      z: float = WILSON_Z95) -> pl.DataFrame:
    """A mean over samples with its question-clustered standard error (CR0) and normal
    interval, per group of ``keys`` (docs/methodology.md §4 "Clusters"): with n samples,
    mean m and T_c the sum of (x - m) over cluster c's samples, SE² = Σ T_c² / n² and the
    interval m ± z SE; null SE below 2 clusters.

    Args:
        frame: ``keys``, ``cluster`` and ``value`` (nulls left out).
        keys: The grouping columns.
        value: The sampled column.

    Returns:
        ``keys``, ``<value>_se``, ``<value>_ci_low``, ``<value>_ci_high``, ``<value>_clusters``.
    """
    # sorted, so every sum is over the same order however the rows came (a store's
    # partitions, worker processes): the same figures to the last bit
    samples = (frame.select(*keys, "cluster", x=pl.col(value).cast(pl.Float64))
               .drop_nulls("x").sort(*keys, "cluster", "x"))
    means = group_fmean(samples, keys, ["x"]).rename({"x": "mean"})  # the exact mean (§3)
    centred = samples.join(means, on=keys, how="left").with_columns(
        d=pl.col("x") - pl.col("mean"))
    per_cluster = centred.group_by(*keys, "cluster", maintain_order=True).agg(
        t=pl.col("d").sum(), n=pl.len())
    out = per_cluster.group_by(keys, maintain_order=True).agg(
        ss=(pl.col("t") ** 2).sum(), n=pl.col("n").sum(), clusters=pl.len()).join(
        means, on=keys)
    se = pl.when(pl.col("clusters") >= 2).then(pl.col("ss").sqrt() / pl.col("n"))
    return out.select(
        *keys, se.alias(f"{value}_se"),
        (pl.col("mean") - z * se).alias(f"{value}_ci_low"),
        (pl.col("mean") + z * se).alias(f"{value}_ci_high"),
        pl.col("clusters").cast(pl.Int64).alias(f"{value}_clusters")).sort(keys)
