"""Comparison of two setups (docs/methodology.md §5: every improvement figure is labelled
*measured*, *conditional estimate* (formula and assumptions shown) or *untested direction*),
on all questions (paired over the questions both setups ran) and on the common subset.

- measured: a paired difference (B - A) per question of the subset, with a seeded
  percentile bootstrap confidence interval over questions;
- conditional estimate: a measured mean difference scaled to the whole plan, valid only under
  the stated assumption that the common subset represents the other questions;
- untested direction: a direction nobody measured (questions outside the subset, or a
  metric with no paired questions).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import polars as pl

from grade_kit.exact import fmean
from grade_kit.schema import Comparison, Figure, Interval
from grade_kit.standard.significance import paired_count_test

__all__ = [
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "GRADE_RATES",
    "bootstrap_count_cis",
    "bootstrap_mean_ci",
    "compare_setups",
    "direction_text",
    "forget_resamples",
]

DEFAULT_SEED = 20261130
DEFAULT_RESAMPLES = 2000

_BLOCK_VALUES = 1 << 16
"""Resampled values :func:`bootstrap_mean_ci` gathers at once (512 KB)."""

GRADE_RATES = {
    "resolved": "higher",
    "partially_resolved": None,
    "material_error": "lower",
    "unresolved": "lower",
}
"""The grade rates compared, with their better side (None: neither is better)."""

METRICS = {
    "e2e_median_s": ("per-question median E2E seconds (lower is faster)", "lower"),
    "working_median_s": ("per-question median working seconds, as the source recorded them "
                         "(lower is faster)", "lower"),
    "tool_calls_per_run": ("per-question mean unique tool calls per run", None),
    "composite": ("GRADE task composite (higher is better)", "higher"),
}


@functools.lru_cache(maxsize=2)
def _resample_indices(seed: int, n: int, resamples: int) -> np.ndarray:
    """The resampled question indices: ``default_rng(seed).integers(0, n, (resamples, n))``,
    drawn once per (seed, n, resamples) and reused (read-only) by every comparison of that
    size, so each gets exactly the draws it would have made itself."""
    indices = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    indices.flags.writeable = False
    return indices


@functools.lru_cache(maxsize=2)
def _resample_counts(seed: int, n: int, resamples: int) -> np.ndarray:
    """How many times each question is drawn in each resample (resamples x n, the smallest
    unsigned integer type that holds n), counted from :func:`_resample_indices`: the same
    draws."""
    indices = _resample_indices(seed, n, resamples)
    counts = np.empty((resamples, n), dtype=np.min_scalar_type(n))
    step = max(1, _BLOCK_VALUES // n)
    for at in range(0, resamples, step):
        block = indices[at:at + step]
        rows = np.arange(block.shape[0])[:, None] * n
        counts[at:at + step] = np.bincount((block + rows).ravel(),
                                           minlength=block.size).reshape(block.shape)
    counts.flags.writeable = False
    return counts


def forget_resamples() -> None:
    """Let go of the cached resampled indices and counts (up to 2 x 400 MB at 20,000
    questions) once a set of comparisons is done; the next comparison draws them again, the
    same."""
    _resample_indices.cache_clear()
    _resample_counts.cache_clear()


def bootstrap_mean_ci(diffs: np.ndarray, seed: int = DEFAULT_SEED,
                      resamples: int = DEFAULT_RESAMPLES,
                      level: float = 0.95) -> tuple[float, float] | None:
    """Percentile bootstrap CI of the mean of ``diffs`` (resampling questions with
    replacement, ``numpy.random.default_rng(seed)``); None with fewer than 2 values."""
    n = len(diffs)
    if n < 2:
        return None
    indices = _resample_indices(seed, n, resamples)
    # A few resamples at a time: each block of values stays in the cache, and no array of
    # resamples x n values is made (at n = 20,000 that is 320 MB, paged in at every call).
    # Each resample's mean is the same numpy row mean as over the whole array.
    means = np.empty(resamples)
    step = max(1, _BLOCK_VALUES // n)
    for at in range(0, resamples, step):
        means[at:at + step] = diffs[indices[at:at + step]].mean(axis=1)
    alpha = (1 - level) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return float(lo), float(hi)


def bootstrap_count_cis(differences: np.ndarray, per: int, seed: int = DEFAULT_SEED,
                        resamples: int = DEFAULT_RESAMPLES,
                        level: float = 0.95) -> list[tuple[float, float] | None]:
    """Percentile bootstrap CIs of the mean of integer per-question differences over
    ``per``, each resample's mean exact (docs/methodology.md §5 "Significance").

    The resamples are :func:`bootstrap_mean_ci`'s (the same seeded question draws); a
    resample's mean is (sum over questions of draws x difference) / (n x ``per``), the sum
    an integer made exactly and the division the one rounding.

    Args:
        differences: n questions x k columns of integers (one column per figure).
        per: The denominator of each difference (R, the repeats, for a grade rate).
        seed: Bootstrap seed.
        resamples: Bootstrap resamples.
        level: Interval level; default 0.95.

    Returns:
        Each column's (low, high); None for every column with fewer than 2 questions.
    """
    n, k = differences.shape
    if n < 2:
        return [None] * k
    counts = _resample_counts(seed, n, resamples)
    # Every product and partial sum is an integer of at most n x max|difference| (the draws
    # of a resample add up to n): exact in float32 up to 2^24 and in float64 up to 2^53, in
    # whatever order the matrix product adds.
    bound = n * int(np.abs(differences).max(initial=0))
    if bound > 2**53:
        raise ValueError(f"differences too large to sum exactly ({bound:,})")
    exact = np.dtype(np.float32 if bound <= 2**24 else np.float64)
    weights: np.ndarray = differences.astype(exact)
    sums = np.empty((resamples, k))
    step = max(1, _BLOCK_VALUES // n)
    for at in range(0, resamples, step):
        drawn: np.ndarray = counts[at:at + step].astype(exact)
        sums[at:at + step] = drawn @ weights
    means = sums / (n * per)
    alpha = (1 - level) / 2
    lows, highs = np.quantile(means, [alpha, 1 - alpha], axis=0)
    return [(float(lo), float(hi)) for lo, hi in zip(lows, highs, strict=True)]


SUBSET_MEANING = {
    "all": "questions both setups ran",
    "common": "the common subset (every slot resolved by every setup)",
}


def direction_text(better: str | None, diff: float | None, a: str, b: str) -> str | None:
    """``"<b> better than <a>"`` (or worse) for a difference B - A where the metric has a
    better side (``"higher"`` or ``"lower"``); None where it has none or the difference is
    0 or missing. Whether a direction is stated at all is the caller's rule (docs/
    methodology.md §5)."""
    if better is None or not diff:
        return None
    improves = (diff < 0) if better == "lower" else (diff > 0)
    return f"{b} {'better' if improves else 'worse'} than {a}"


def _measured(metric: str, meaning: str, n: int, ci: tuple[float, float] | None,
              mean_diff: float, better: str | None, a: str, b: str, **fields: Any) -> Figure:
    """A *measured* figure over ``n`` paired questions with its bootstrap interval ``ci``: a
    direction only when it excludes 0 and the metric has a better side (``fields``: means,
    p-value...)."""
    excludes = None if ci is None else bool(ci[0] > 0 or ci[1] < 0)
    direction = direction_text(better, mean_diff, a, b) if excludes else None
    return Figure(metric=metric, label="measured", meaning=meaning, n_questions=n,
                  mean_diff_b_minus_a=mean_diff,
                  ci95=None if ci is None else Interval(low=ci[0], high=ci[1]),
                  ci_excludes_zero=excludes, direction=direction, **fields)


def _grade_rate_figures(paired: pl.DataFrame, a: str, b: str, repeats: int, where: str,
                        seed: int, resamples: int) -> list[Figure]:
    """Each grade's rate on the paired questions, B - A, with its bootstrap interval
    (:func:`bootstrap_count_cis`, the grades paired on the same questions at once) and its
    paired test (:func:`~grade_kit.standard.significance.paired_count_test`): per question
    a setup's rate is its slots in the grade / R."""
    counts: dict[str, tuple[list[int], list[int]]] = {}
    by_questions: dict[bytes, list[str]] = {}  # the grades paired on the same questions
    for grade in GRADE_RATES:
        column = f"{grade}_slots"
        if column not in paired.columns:
            continue
        both = pl.col(column).is_not_null() & pl.col(f"{column}_b").is_not_null()
        rows = paired.select(both.alias("both")).to_series().to_numpy()
        on = paired.filter(both)
        counts[grade] = (on.get_column(column).to_list(), on.get_column(f"{column}_b").to_list())
        by_questions.setdefault(rows.tobytes(), []).append(grade)
    cis: dict[str, tuple[float, float] | None] = {}
    for grades in by_questions.values():
        differences = np.array([[y - x for x, y in zip(*counts[g], strict=True)]
                                for g in grades], dtype=np.int64).T.reshape(-1, len(grades))
        cis.update(zip(grades, bootstrap_count_cis(differences, repeats, seed, resamples),
                       strict=True))
    figures: list[Figure] = []
    for grade, (ca, cb) in counts.items():
        metric = f"{grade}_rate"
        meaning = (f"{grade.replace('_', ' ')} rate: per question, slots {grade} / R "
                   f"(R = {repeats})")
        if not ca:
            figures.append(Figure(metric=metric, label="untested direction", meaning=meaning,
                                  statement=f"no question of {where} was run by both {a} "
                                            f"and {b}"))
            continue
        slots = len(ca) * repeats  # the rates as counts over slots: one exact division each
        p, test = paired_count_test(ca, cb, repeats, seed)
        figures.append(_measured(
            metric, meaning, len(ca), cis[grade], (sum(cb) - sum(ca)) / slots,
            GRADE_RATES[grade], a, b, mean_a=sum(ca) / slots, mean_b=sum(cb) / slots,
            p_value=p, test=test))
    return figures


def compare_setups(per_question: pl.DataFrame, a: str, b: str, questions: Sequence[str],
                   all_questions: int, subset: Literal["all", "common"] = "common",
                   seed: int = DEFAULT_SEED, resamples: int = DEFAULT_RESAMPLES,
                   repeats: int | None = None) -> Comparison:
    """Compare setup ``b`` with baseline ``a`` on the questions ``questions``.

    Args:
        per_question: setup, task_id and one column per metric of :data:`METRICS`
            (null where unmeasured).
        a: Baseline setup.
        b: Compared setup.
        questions: The task ids of the subset (only these are paired).
        all_questions: Questions in the whole plan (for the conditional estimate and the
            untested direction).
        subset: ``all`` (questions both setups ran) or ``common`` (the common subset).
        seed: Bootstrap seed (recorded in the output); also the seed of a Monte Carlo
            sign-flip test.
        resamples: Bootstrap resamples.
        repeats: R; with it and ``per_question``'s ``<grade>_slots`` columns, each grade
            rate is compared too, with its paired test; default None (no grade rates).

    Returns:
        The :class:`~grade_kit.schema.Comparison`; each figure has a ``label``.
    """
    wanted = pl.Series(list(questions), dtype=pl.String).implode()
    scoped = per_question.filter(pl.col("task_id").is_in(wanted))
    left = scoped.filter(pl.col("setup") == a).drop("setup")
    right = scoped.filter(pl.col("setup") == b).drop("setup")
    paired = left.join(right, on="task_id", suffix="_b")
    where = SUBSET_MEANING[subset]
    figures: list[Figure] = ([] if repeats is None else
                             _grade_rate_figures(paired, a, b, repeats, where, seed, resamples))
    for metric, (meaning, better) in METRICS.items():
        if metric not in left.columns:
            continue
        both = paired.filter(pl.col(metric).is_not_null() & pl.col(f"{metric}_b").is_not_null())
        if both.is_empty():
            figures.append(Figure(
                metric=metric, label="untested direction", meaning=meaning,
                statement=f"no question of {where} has {metric} for both {a} and {b}"))
            continue
        xa = both.get_column(metric).to_numpy().astype(float)
        xb = both.get_column(f"{metric}_b").to_numpy().astype(float)
        diffs = xb - xa
        mean_diff = fmean(diffs.tolist())
        figures.append(_measured(metric, meaning, len(diffs),
                                 bootstrap_mean_ci(diffs, seed, resamples), mean_diff, better,
                                 a, b, mean_a=fmean(xa.tolist()), mean_b=fmean(xb.tolist())))
        if metric == "e2e_median_s":
            figures.append(Figure(
                metric="e2e_seconds_over_plan", label="conditional estimate",
                value=mean_diff * all_questions,
                formula=f"mean paired E2E difference ({mean_diff:.6g} s over {len(diffs)} "
                        f"questions) x {all_questions} planned questions",
                assumptions=f"the {len(diffs)} paired questions represent every planned "
                            "question; one median-time answer per question"))
    outside = all_questions - len(questions)
    if outside > 0:
        figures.append(Figure(
            metric="questions outside the subset", label="untested direction",
            statement=f"{outside} of {all_questions} questions are outside {where}; no paired "
                      f"comparison of {a} and {b} is made on them"))
    return Comparison(baseline=a, compared=b, subset=subset, questions=len(questions),
                      seed=seed, resamples=resamples, figures=figures)
