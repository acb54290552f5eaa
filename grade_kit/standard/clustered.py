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

import polars as pl

from grade_kit.exact import group_fmean
from grade_kit.schema import GRADE_STATES
from grade_kit.standard.stats import WILSON_Z95, wilson_bounds

__all__ = ["CLUSTERS", "Cluster", "cluster_of_tasks", "clustered_mean_ci", "clustered_rates",
           "interval_basis"]

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


def _effective(k: int, total: int, square_sum: int, cross_sum: int, size_square_sum: int,
               clusters: int, mean_size: float) -> tuple[float | None, float | None, float]:
    """(design effect, icc, n_effective) of k successes over ``total`` slots from integer
    cluster sums: W = N² Σ s_c² - 2 N K Σ s_c n_c + K² Σ n_c² = N⁴ SE² (Python integers,
    exact), design effect = W / (N K (N - K)), n_effective = min(N, N² K (N - K) / W)."""
    if k in (0, total):  # p(1 - p) = 0: the design effect is undefined
        return None, None, float(clusters)
    w = (total * total * square_sum - 2 * total * k * cross_sum + k * k * size_square_sum)
    binomial = total * k * (total - k)
    if w == 0:  # every cluster exactly at p: no between-cluster variance
        return 0.0, (None if mean_size == 1 else -1 / (mean_size - 1)), float(total)
    design = w / binomial
    icc = None if mean_size == 1 else (design - 1) / (mean_size - 1)
    # n_effective = p (1 - p) / SE² = N x binomial / W, at most N (one exact division)
    n_eff = float(total) if binomial >= w else total * binomial / w
    return design, icc, n_eff


def clustered_rates(counts: pl.DataFrame, setups: list[str]) -> pl.DataFrame:
    """Per setup, for every grade state: its design effect, icc, effective size and Wilson's
    interval over the effective size (docs/methodology.md §4 "Rates").

    For one setup with C clusters, s_c the cluster's slots in the state, n_c its planned
    slots (R x its questions), N = Σ n_c, p = Σ s_c / N: SE² = Σ (s_c - p n_c)² / N² (CR0);
    design effect = SE² / (p (1 - p) / N); icc = (design effect - 1) / (N / C - 1), null
    when N / C = 1 (R = 1 with question clusters); n_effective = min(N, p (1 - p) / SE²), C
    when p is 0 or 1; the interval is :func:`~grade_kit.standard.stats.wilson_bounds` (p,
    n_effective). With R = 1
    and question clusters W = N K (N - K) exactly, so the interval is Wilson's over N.

    Args:
        counts: setup, cluster, slots (the cluster's planned slots) and one column per grade
            state (the cluster's slots in it), one row per planned (setup, cluster).
        setups: The setups, in order (one without a row gets nulls).

    Returns:
        setup and per state ``<state>_design_effect``, ``<state>_icc``,
        ``<state>_n_effective``, ``<state>_ci_low``, ``<state>_ci_high``.
    """
    sums = counts.group_by("setup").agg(
        total=pl.col("slots").sum(), clusters=pl.len(),
        size_square=(pl.col("slots").cast(pl.Int64) ** 2).sum(),
        **{f"{g}_k": pl.col(g).sum() for g in GRADE_STATES},
        **{f"{g}_sq": (pl.col(g).cast(pl.Int64) ** 2).sum() for g in GRADE_STATES},
        **{f"{g}_cross": (pl.col(g).cast(pl.Int64) * pl.col("slots")).sum()
           for g in GRADE_STATES})
    by_setup = {row["setup"]: row for row in sums.iter_rows(named=True)}
    columns: dict[str, list[object]] = {"setup": list(setups)}
    for g in GRADE_STATES:
        for name in ("design_effect", "icc", "n_effective", "ci_low", "ci_high"):
            columns[f"{g}_{name}"] = []
    for setup in setups:
        row = by_setup.get(setup)
        for g in GRADE_STATES:
            if row is None or not row["total"]:
                values: tuple[object, ...] = (None,) * 5
            else:
                total, k = int(row["total"]), int(row[f"{g}_k"])
                design, icc, n_eff = _effective(
                    k, total, int(row[f"{g}_sq"]), int(row[f"{g}_cross"]),
                    int(row["size_square"]), int(row["clusters"]),
                    total / int(row["clusters"]))
                low, high = wilson_bounds(k / total, n_eff)
                values = (design, icc, n_eff, low, high)
            for name, value in zip(("design_effect", "icc", "n_effective", "ci_low",
                                    "ci_high"), values, strict=True):
                columns[f"{g}_{name}"].append(value)
    return pl.DataFrame(columns, schema={"setup": pl.String, **{
        f"{g}_{name}": pl.Float64 for g in GRADE_STATES
        for name in ("design_effect", "icc", "n_effective", "ci_low", "ci_high")}})


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
