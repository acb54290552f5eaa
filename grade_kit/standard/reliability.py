"""Reliability at every k (docs/methodology.md §4 "Reliability"): pass@k and pass^k per
setup with question-clustered Wilson intervals, and the flaky questions (resolved in some
of their R slots, not all)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from grade_kit.standard.clustered import effective_size
from grade_kit.standard.compare import MAX_PASS_K_REPEATS
from grade_kit.standard.stats import wilson_bounds

RELIABILITY_COLUMNS: dict[str, type[pl.DataType]] = {
    "setup": pl.String, "subset": pl.String, "k": pl.Int64, "pass_at_k": pl.Float64,
    "pass_at_k_low": pl.Float64, "pass_at_k_high": pl.Float64, "pass_hat_k": pl.Float64,
    "pass_hat_k_low": pl.Float64, "pass_hat_k_high": pl.Float64, "questions": pl.Int64,
}
"""The columns of :func:`reliability_frame`."""


def reliability_ks(repeats: int) -> list[int]:
    """The k of the reliability curve: 1..R while R is at most 20, else 1 and R."""
    return list(range(1, repeats + 1)) if repeats <= MAX_PASS_K_REPEATS else [1, repeats]


def _mean_and_interval(numerators: np.ndarray, per: int, cluster_ids: np.ndarray,
                       slots: int) -> tuple[float, float, float]:
    """The mean m of per-question values a_q / per over Q questions, and Wilson's interval
    over n_effective = min(N, m (1 - m) / SE²) with SE² = Σ_c (Σ_{q in c} (v_q - m))² / Q²:
    :func:`~grade_kit.standard.clustered.effective_size` of each cluster's Σ a_q over its
    Q_c x per (the same rational as the rates', so pass^1 is exactly the resolved rate and
    its interval), capped at N = ``slots``."""
    total = int(numerators.sum())
    m = total / (int(numerators.size) * per)
    questions = np.bincount(cluster_ids, minlength=int(cluster_ids.max()) + 1)
    present = questions > 0
    successes = np.zeros(present.size, dtype=np.int64)
    np.add.at(successes, cluster_ids, numerators)
    _, _, n_eff = effective_size(successes[present], questions[present].astype(np.int64) * per,
                                 cap=slots)
    low, high = wilson_bounds(m, n_eff)
    return m, low, high


def _combinations(repeats: int, k: int) -> np.ndarray:
    """C(c, k) for every c in 0..R (int64, exact: C(20, 10) = 184,756 at most while k runs
    1..R with R <= 20; beyond, k is 1 (C(c, 1) = c) or R (1 at c = R only), made without a
    million binomials at R = 1,000,000)."""
    if k == 1:
        return np.arange(repeats + 1, dtype=np.int64)
    if k == repeats:
        last: np.ndarray = np.zeros(repeats + 1, dtype=np.int64)
        last[repeats] = 1
        return last
    return np.array([math.comb(c, k) for c in range(repeats + 1)], dtype=np.int64)


def reliability_frame(states: pl.DataFrame, repeats: int, subset: str,
                      clusters: pl.DataFrame | None = None) -> pl.DataFrame:
    """pass@k and pass^k at every k of :func:`reliability_ks`, per setup (docs/methodology.md
    §4 "Reliability").

    Per question with c resolved of its R planned slots (not run is not resolved):
    pass@k = 1 - C(R - c, k) / C(R, k), pass^k = C(c, k) / C(R, k) (the unbiased
    estimators); a setup's figure is their mean over its questions, with Wilson's interval
    over the clustered effective size. pass^1 is the resolved rate and pass^R the
    stable-resolution rate.

    Args:
        states: :func:`~grade_kit.standard.grade_rates.question_states` (setup, task_id,
            resolved, ...), one row per planned question.
        repeats: R.
        subset: The subset's name (``all``, ``common``).
        clusters: task_id, cluster; default None (each question its own cluster).

    Returns:
        The frame of :data:`RELIABILITY_COLUMNS`, by setup and k.
    """
    ks = reliability_ks(repeats)
    frame = states.select("setup", "task_id", "resolved").sort("setup", "task_id")
    if clusters is not None:
        frame = frame.join(clusters, on="task_id", how="left").with_columns(
            pl.col("cluster").fill_null(pl.col("task_id")))
    else:
        frame = frame.with_columns(cluster=pl.col("task_id"))
    rows = []
    frame = frame.with_columns(cluster_id=pl.col("cluster").rank("dense").cast(pl.Int64))
    tables = {k: _combinations(repeats, k) for k in ks}  # once, not per setup
    for (setup,), part in frame.group_by("setup", maintain_order=True):
        resolved = part.get_column("resolved").to_numpy().astype(np.int64)
        keys = np.unique(part.get_column("cluster_id").to_numpy(),
                         return_inverse=True)[1].astype(np.int64)
        slots = int(resolved.size) * repeats
        for k in ks:
            per, combs = math.comb(repeats, k), tables[k]
            hat = combs[resolved]
            at = per - combs[repeats - resolved]
            m_at, at_low, at_high = _mean_and_interval(at, per, keys, slots)
            m_hat, hat_low, hat_high = _mean_and_interval(hat, per, keys, slots)
            rows.append({"setup": setup, "subset": subset, "k": k, "pass_at_k": m_at,
                         "pass_at_k_low": at_low, "pass_at_k_high": at_high,
                         "pass_hat_k": m_hat, "pass_hat_k_low": hat_low,
                         "pass_hat_k_high": hat_high, "questions": int(resolved.size)})
    return pl.DataFrame(rows, schema=RELIABILITY_COLUMNS)


def flaky_questions(states: pl.DataFrame, repeats: int) -> pl.DataFrame:
    """The questions each setup resolved in some of their R planned slots but not all
    (none when R = 1): setup, task_id, resolved (slots), repeats, share (resolved / R),
    by setup and share."""
    flaky = states.filter((pl.col("resolved") > 0) & (pl.col("resolved") < repeats))
    shares = [c / repeats for c in flaky.get_column("resolved").to_list()]
    return flaky.select("setup", "task_id", "resolved").with_columns(
        repeats=pl.lit(repeats, dtype=pl.Int64),
        share=pl.Series(shares, dtype=pl.Float64)).sort("setup", "share", "task_id")
