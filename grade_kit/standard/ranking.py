"""Which leaderboard places are separable, and how big a study would separate two setups
(docs/methodology.md §5 "Rank intervals" and "Planning").

- :func:`rank_intervals`: each setup's rank by its mean per-question figure over the
  questions every setup has it for, with a seeded percentile bootstrap interval of that rank
  over questions (resampling questions, the same draw for every setup, so the setups stay
  paired). Two setups whose rank intervals overlap are not separated by this evidence.
- :func:`questions_needed`: for each setup pair, the number of paired questions a two-sided
  test at level alpha would need for the given power at the observed mean paired
  difference and its standard deviation, n = ((z_{1-alpha/2} + z_power) x sd / |mean|)^2,
  rounded up. It is a *conditional estimate*: it assumes the observed difference and spread
  are the true ones, questions are independent, and the normal approximation holds. With R
  repeats per question the spread already includes the repeats' noise; more repeats shrink
  only that part (shown as ``repeats_note``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np
import polars as pl

from grade_kit.exact import fmean
from grade_kit.frames import Frame, like, to_polars
from grade_kit.standard.compare import DEFAULT_RESAMPLES, DEFAULT_SEED, GRADE_RATES

__all__ = ["MIN_RANK_QUESTIONS", "questions_needed", "rank_intervals", "rank_ranges"]

MIN_RANK_QUESTIONS = 10
"""Below this many paired questions a rank gets no interval (its ``basis`` says so): a
bootstrap over a handful of questions gives intervals that look certain and are not."""


def _matrix(per_question: pl.DataFrame, metric: str) -> tuple[list[str], list[str], np.ndarray]:
    wide = (per_question.filter(pl.col(metric).is_not_null())
            .pivot(on="setup", index="task_id", values=metric).drop_nulls().sort("task_id"))
    setups = sorted(c for c in wide.columns if c != "task_id")
    values = wide.select(setups).to_numpy().astype(float) if setups else np.empty((0, 0))
    return setups, wide.get_column("task_id").to_list(), values


def _ranks(means: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """Rank 1 = best; ties share the mean of their ranks (per row)."""
    keys = -means if higher_is_better else means
    order = keys.argsort(axis=-1, kind="stable")
    ranks = np.empty_like(keys)
    rows = np.arange(keys.shape[0])[:, None]
    ranks[rows, order] = np.arange(1, keys.shape[1] + 1)
    for r in range(keys.shape[0]):  # average ties (few setups: cheap)
        for value in np.unique(keys[r]):
            tied = keys[r] == value
            if tied.sum() > 1:
                ranks[r, tied] = ranks[r, tied].mean()
    return ranks


def rank_intervals(per_question: pl.DataFrame, metric: str = "composite", *,
                   higher_is_better: bool = True, seed: int = DEFAULT_SEED,
                   resamples: int = DEFAULT_RESAMPLES, level: float = 0.95) -> pl.DataFrame:
    """Each setup's rank with a percentile bootstrap interval over questions.

    Args:
        per_question: setup, task_id and ``metric`` (for example
            ``ev.standard.per_question``: composite, e2e_median_s, tool_calls_per_run).
        metric: The column ranked; default the GRADE task composite.
        higher_is_better: Rank 1 is the highest mean (default) or the lowest.
        seed: Seed of the resampling (``numpy.random.default_rng``).
        resamples: Bootstrap resamples; default 2,000.
        level: Interval level; default 0.95.

    Returns:
        setup, mean, rank (observed, 1 = best), rank_low, rank_high, questions (paired),
        basis (only when there is no interval: fewer than :data:`MIN_RANK_QUESTIONS`
        paired questions, and why), seed, resamples. Empty when no question has the metric
        for every setup.
    """
    setups, _, values = _matrix(per_question, metric)
    schema = {"setup": pl.String, "mean": pl.Float64, "rank": pl.Float64,
              "rank_low": pl.Float64, "rank_high": pl.Float64, "questions": pl.Int64,
              "basis": pl.String, "seed": pl.Int64, "resamples": pl.Int64}
    n = values.shape[0]
    if n == 0 or not setups:
        return pl.DataFrame(schema=schema)
    means = np.array([fmean(values[:, j].tolist()) for j in range(len(setups))])
    observed = _ranks(means[None, :], higher_is_better)[0]
    if n < MIN_RANK_QUESTIONS:
        why = (f"{n} paired question{'' if n == 1 else 's'}: fewer than "
               f"{MIN_RANK_QUESTIONS}, no interval (not a separable ranking)")
        return pl.DataFrame({
            "setup": setups, "mean": means.tolist(), "rank": observed.tolist(),
            "rank_low": [None] * len(setups), "rank_high": [None] * len(setups),
            "questions": [n] * len(setups), "basis": [why] * len(setups),
            "seed": [seed] * len(setups), "resamples": [resamples] * len(setups)},
            schema=schema).sort("rank", "setup")
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n, size=(resamples, n))
    boot = np.stack([values[draws, j].mean(axis=1) for j in range(len(setups))], axis=1)
    ranks = _ranks(boot, higher_is_better)
    alpha = (1 - level) / 2
    low, high = np.quantile(ranks, [alpha, 1 - alpha], axis=0, method="inverted_cdf")
    return pl.DataFrame({
        "setup": setups, "mean": means.tolist(), "rank": observed.tolist(),
        "rank_low": low.tolist(), "rank_high": high.tolist(), "questions": [n] * len(setups),
        "basis": [None] * len(setups), "seed": [seed] * len(setups),
        "resamples": [resamples] * len(setups)},
        schema=schema).drop("basis").sort("rank", "setup")


def questions_needed(per_question: pl.DataFrame, metric: str = "composite", *,
                     alpha: float = 0.05, power: float = 0.8,
                     pairs: Sequence[tuple[str, str]] | None = None) -> pl.DataFrame:
    """Paired questions needed to separate each pair of setups (a conditional estimate).

    Args:
        per_question: setup, task_id and ``metric``.
        metric: The compared column; default the GRADE task composite.
        alpha: Two-sided test level; default 0.05.
        power: Wanted power; default 0.8.
        pairs: (baseline, compared) pairs; default every pair, alphabetical.

    Returns:
        baseline, compared, questions (paired now), mean_diff, sd_diff, questions_needed
        (null when the observed difference is 0 or within rounding, past 10^12, or there
        are fewer than 2 questions), verdict (why it is null: "no difference", ...),
        label (``conditional estimate``), formula, assumptions, repeats_note.
    """
    # the standard library's normal quantile (Wichura's AS241, within 1e-15 of scipy's
    # norm.ppf): scipy.stats would cost a notebook's kernel 0.35-1.3 s to import
    quantile = NormalDist().inv_cdf
    z = quantile(1 - alpha / 2) + quantile(power)
    setups = sorted(set(per_question.get_column("setup").to_list()))
    wanted = pairs or [(a, b) for i, a in enumerate(setups) for b in setups[i + 1:]]
    rows = []
    for a, b in wanted:
        both = (per_question.filter(pl.col("setup") == a).select("task_id", x=metric)
                .join(per_question.filter(pl.col("setup") == b).select("task_id", y=metric),
                      on="task_id").drop_nulls())
        diffs = (both.get_column("y") - both.get_column("x")).to_list()
        n = len(diffs)
        mean = fmean(diffs) if n else None
        sd = (math.sqrt(math.fsum((d - mean) * (d - mean) for d in diffs) / (n - 1))
              if n >= 2 and mean is not None else None)  # squares as products: exact rounding
        # a difference within the rounding of the figures it is made of (2n ulps of the
        # largest of them) is no difference, never a huge count; a count past 10^12
        # questions is no study either (and would overflow Int64 squared)
        largest = max((abs(v) for v in (*both.get_column("x").to_list(),
                                        *both.get_column("y").to_list())), default=0.0)
        noise = 2 * n * math.ulp(largest)
        ratio = (z * sd / abs(mean) if sd is not None and mean is not None
                 and abs(mean) > noise else None)
        needed = (math.ceil(ratio * ratio) if ratio is not None and ratio < 1e6 else None)
        verdict = ("no difference: the observed mean difference is 0 or within rounding"
                   if n >= 2 and (mean is None or abs(mean) <= noise) else
                   "more than 10^12 questions: no study separates them"
                   if ratio is not None and needed is None else None)
        rows.append({
            "baseline": a, "compared": b, "questions": n, "mean_diff": mean, "sd_diff": sd,
            "questions_needed": needed, "verdict": verdict, "label": "conditional estimate",
            "formula": f"n = ((z_(1-{alpha}/2) + z_{power}) x sd / |mean|)^2 = "
                       f"({z:.4f} x sd / |mean|)^2",
            "assumptions": "the observed mean difference and spread are the true ones; "
                           "questions independent; normal approximation",
            "repeats_note": "the spread includes the repeats' noise; more repeats per "
                            "question shrink only that part"})
    return pl.DataFrame(rows, schema={
        "baseline": pl.String, "compared": pl.String, "questions": pl.Int64,
        "mean_diff": pl.Float64, "sd_diff": pl.Float64, "questions_needed": pl.Int64,
        "verdict": pl.String, "label": pl.String, "formula": pl.String, "assumptions": pl.String,
        "repeats_note": pl.String})


def rank_ranges(comparisons: Frame, metric: str = "resolved_rate", subset: str = "all",
                k: int | None = None) -> Frame:
    """Each compared setup's range of places from the same Holm-adjusted paired tests the
    headline, the comparisons table and the significance matrix read (docs/methodology.md §5
    "Rank ranges"): from 1 + the setups stated better than it to n - the setups it is stated
    better than. Tied setups (no stated direction) never push each other's range.

    Args:
        comparisons: ``ev.comparisons`` (polars or pandas).
        metric: A tested figure; default the resolved rate.
        subset: ``all`` (default) or ``common``.
        k: For ``pass_hat_k``, the k.

    Returns:
        setup, rank_low, rank_high, better_than (setups it is stated better than),
        worse_than, tested (pairs with a test), the same kind of frame as ``comparisons``,
        best range first.
    """
    frame = to_polars(comparisons)
    rows = frame.filter((pl.col("subset") == subset) & (pl.col("metric") == metric)
                        & (pl.col("k").is_null() if k is None else pl.col("k") == k))
    better = GRADE_RATES.get("resolved" if metric == "pass_hat_k"
                             else metric.removesuffix("_rate"))
    setups = sorted(set(rows.get_column("baseline").to_list())
                    | set(rows.get_column("compared").to_list()))
    wins = {s: 0 for s in setups}
    losses = {s: 0 for s in setups}
    tested = {s: 0 for s in setups}
    for row in rows.iter_rows(named=True):
        a, b = row["baseline"], row["compared"]
        if row["p_holm"] is not None:
            tested[a] += 1
            tested[b] += 1
        if row["direction"] is None or better is None or not row["mean_diff_b_minus_a"]:
            continue
        b_wins = (row["mean_diff_b_minus_a"] > 0) == (better == "higher")
        winner, loser = (b, a) if b_wins else (a, b)
        wins[winner] += 1
        losses[loser] += 1
    n = len(setups)
    out = pl.DataFrame({
        "setup": setups, "rank_low": [1 + losses[s] for s in setups],
        "rank_high": [n - wins[s] for s in setups], "better_than": [wins[s] for s in setups],
        "worse_than": [losses[s] for s in setups], "tested": [tested[s] for s in setups]},
        schema={"setup": pl.String, "rank_low": pl.Int64, "rank_high": pl.Int64,
                "better_than": pl.Int64, "worse_than": pl.Int64, "tested": pl.Int64})
    return like(out.sort("rank_low", "rank_high", "setup"), comparisons)
