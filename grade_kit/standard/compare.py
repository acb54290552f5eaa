"""Comparison of two setups (docs/methodology.md §5: every improvement figure is labelled
*measured*, *conditional estimate* (formula and assumptions shown) or *untested direction*),
on all questions (paired over the questions both setups ran) and on the common subset.

- measured: a paired difference (B - A) per question (or cluster) of the subset: a grade
  rate or pass^k with its paired sign-flip test and that test's inversion (the interval set
  at its Holm level, :func:`verdict_intervals`), any other figure with a seeded percentile
  bootstrap interval over questions;
- conditional estimate: a measured mean difference scaled to the whole plan, valid only under
  the stated assumption that the common subset represents the other questions;
- untested direction: a direction nobody measured (questions outside the subset, or a
  metric with no paired questions).
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Iterator, Sequence
from typing import Any, Literal

import numpy as np
import polars as pl

from grade_kit.exact import fmean
from grade_kit.frames import model_columns
from grade_kit.schema import Comparison, Figure, Interval
from grade_kit.standard.headline import ALPHA
from grade_kit.standard.significance import (
    Inversion,
    PairedUnits,
    holm_adjusted,
    units_tests,
)

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

def better_side(metric: str) -> str | None:
    """The better side of a tested figure (``"higher"``, ``"lower"`` or None): a grade
    rate's (:data:`GRADE_RATES`), pass^k's the resolved rate's (higher)."""
    return GRADE_RATES.get("resolved" if metric == "pass_hat_k"
                           else metric.removesuffix("_rate"))


METRICS = {
    "e2e_median_s": ("per-question median E2E seconds (lower is faster)", "lower"),
    "working_median_s": ("per-question median working seconds, as the source recorded them "
                         "(lower is faster)", "lower"),
    "tool_calls_per_run": ("per-question mean tool calls per run", None),
    "composite": ("GRADE task composite (higher is better)", "higher"),
    "tokens_per_run": ("per-question mean tokens per run", None),
    "cost_per_run": ("per-question mean dollars per run (lower is cheaper)", "lower"),
}


RESAMPLE_CACHE_BYTES = 64 << 20
"""The most memory the seeded resample indices of one size may keep between comparisons
(``resamples x n`` int32 indices: 2,000 x 8,000 questions); past it each comparison draws
them again, block by block, so memory does not grow with the questions."""


@functools.lru_cache(maxsize=2)
def _resample_indices(seed: int, n: int, resamples: int) -> np.ndarray:
    """The resampled question indices: ``default_rng(seed).integers(0, n, (resamples, n))``
    as int32 (the same draws: numpy draws int32 and int64 bounds below 2^31 alike), drawn
    once per (seed, n, resamples) and reused (read-only) by every comparison of that size,
    so each gets exactly the draws it would have made itself."""
    indices = np.random.default_rng(seed).integers(0, n, size=(resamples, n), dtype=np.int32)
    indices.flags.writeable = False
    return indices


_DRAWING = threading.Lock()
"""Two comparison threads asking for the same indices draw them once."""


def resample_blocks(seed: int, n: int, resamples: int, step: int) -> Iterator[np.ndarray]:
    """The rows of :func:`_resample_indices`, ``step`` at a time: from the cache while they
    fit :data:`RESAMPLE_CACHE_BYTES`, else drawn from the same seeded stream block by block
    (a block of rows drawn after another is the rows that follow it in one draw)."""
    if resamples * n * 4 <= RESAMPLE_CACHE_BYTES:
        with _DRAWING:
            indices = _resample_indices(seed, n, resamples)
        for at in range(0, resamples, step):
            yield indices[at:at + step]
        return
    rng = np.random.default_rng(seed)
    for at in range(0, resamples, step):
        yield rng.integers(0, n, size=(min(step, resamples - at), n), dtype=np.int32)


def forget_resamples() -> None:
    """Let go of the cached resampled indices (at most 2 x :data:`RESAMPLE_CACHE_BYTES`)
    once a set of comparisons is done; the next comparison draws them again, the same."""
    _resample_indices.cache_clear()


def bootstrap_mean_ci(diffs: np.ndarray, seed: int = DEFAULT_SEED,
                      resamples: int = DEFAULT_RESAMPLES,
                      level: float = 0.95) -> tuple[float, float] | None:
    """Percentile bootstrap CI of the mean of ``diffs`` (resampling questions with
    replacement, ``numpy.random.default_rng(seed)``); None with fewer than 2 values."""
    n = len(diffs)
    if n < 2:
        return None
    # A few resamples at a time: each block of values stays in the cache, and no array of
    # resamples x n values is made (at n = 20,000 that is 320 MB, paged in at every call).
    # Each resample's mean is the same numpy row mean as over the whole array.
    means = np.empty(resamples)
    step = max(1, _BLOCK_VALUES // n)
    for at, block in zip(range(0, resamples, step),
                         resample_blocks(seed, n, resamples, step), strict=True):
        means[at:at + step] = diffs[block].mean(axis=1)
    alpha = (1 - level) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return float(lo), float(hi)


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
                  ci_level=None if ci is None else 0.95,
                  ci_basis=None if ci is None else "percentile bootstrap over paired units",
                  ci_excludes_zero=excludes, direction=direction, **fields)


MAX_PASS_K_REPEATS = 20
"""pass^k is compared (and charted at every k) only while R is at most this: C(R, k) stays
an exact integer of int64, and a page of 20 curves' points stays readable."""


def pass_hat_ks(repeats: int) -> list[int]:
    """The k at which pass^k is compared between setups: 2..R (pass^1 is the resolved rate,
    compared already), none when R > :data:`MAX_PASS_K_REPEATS`."""
    return list(range(2, repeats + 1)) if repeats <= MAX_PASS_K_REPEATS else []


def paired_units(paired: pl.DataFrame, column: str, repeats: int, k: int | None = None,
                 clusters: pl.DataFrame | None = None) -> PairedUnits:
    """The units a paired test of a count figure flips (docs/methodology.md §5): per paired
    question with ``column`` for both setups, d = B's count - A's count (a grade's slots, or
    with ``k`` C(resolved slots, k), so pass^k = C(c, k) / C(R, k)); with ``clusters``
    (task_id, cluster) the questions' totals per cluster, m its questions."""
    both = paired.filter(pl.col(column).is_not_null() & pl.col(f"{column}_b").is_not_null())
    if k is None:
        per, a, b = repeats, pl.col(column), pl.col(f"{column}_b")
    else:
        combs = [math.comb(c, k) for c in range(repeats + 1)]
        per = combs[-1]
        a = pl.col(column).replace_strict(list(range(repeats + 1)), combs, return_dtype=pl.Int64)
        b = pl.col(f"{column}_b").replace_strict(list(range(repeats + 1)), combs,
                                                 return_dtype=pl.Int64)
    diffs = both.select("task_id", d=(b - a).cast(pl.Int64), m=pl.lit(1, dtype=pl.Int64))
    if clusters is not None:
        diffs = diffs.join(clusters, on="task_id").group_by("cluster").agg(
            pl.col("d").sum(), pl.col("m").sum()).sort("cluster")
    return PairedUnits(d=diffs.get_column("d").to_numpy(), m=diffs.get_column("m").to_numpy(),
                       per=per)


def _grade_rate_figures(paired: pl.DataFrame, a: str, b: str, repeats: int, where: str,
                        seed: int, clusters: pl.DataFrame | None
                        ) -> list[tuple[Figure, Inversion | None]]:
    """Each grade's rate on the paired questions, B - A, with its paired sign-flip test
    over questions (or clusters), and pass^k at each k of :func:`pass_hat_ks`: per question
    a setup's rate is its slots in the grade / R, its pass^k C(resolved, k) / C(R, k). Each
    tested figure comes with its test's :class:`~grade_kit.standard.significance.Inversion`
    (kept up to p = ALPHA), from which its interval is set once Holm has judged it
    (:func:`verdict_intervals`)."""
    jobs: list[tuple[str, str, int | None]] = [(g, "rate", None) for g in GRADE_RATES]
    jobs += [("resolved", "pass_hat", k) for k in pass_hat_ks(repeats)]
    planned: list[tuple[Figure, PairedUnits | None]] = []
    for grade, kind, k in jobs:
        column = f"{grade}_slots"
        if column not in paired.columns:
            continue
        metric = f"{grade}_rate" if kind == "rate" else "pass_hat_k"
        meaning = (f"{grade.replace('_', ' ')} rate: per question, slots {grade} / R "
                   f"(R = {repeats})" if kind == "rate" else
                   f"pass^{k}: per question C(resolved, {k}) / C({repeats}, {k}), the chance "
                   f"that {k} of its R = {repeats} slots drawn without replacement are all "
                   "resolved")
        units = paired_units(paired, column, repeats, k, clusters)
        if units.d.size == 0:
            planned.append((Figure(metric=metric, label="untested direction", meaning=meaning,
                                   k=k, statement=f"no question of {where} was run by both "
                                                  f"{a} and {b}"), None))
            continue
        figure = Figure(metric=metric, label="measured", meaning=meaning, k=k,
                        n_questions=int(units.m.sum()), mean_diff_b_minus_a=units.value)
        if kind == "rate":
            both = paired.filter(pl.col(column).is_not_null()
                                 & pl.col(f"{column}_b").is_not_null())
            slots = units.per * int(units.m.sum())
            figure.mean_a = int(both.get_column(column).sum()) / slots
            figure.mean_b = int(both.get_column(f"{column}_b").sum()) / slots
        planned.append((figure, units))
    tested = [planned_units for _, planned_units in planned if planned_units is not None]
    results = iter(units_tests(tested, seed, up_to=ALPHA))
    out: list[tuple[Figure, Inversion | None]] = []
    for figure, planned_units in planned:
        if planned_units is None:
            out.append((figure, None))
            continue
        tested_figure = next(results)
        figure.p_value, figure.log10_p = tested_figure.p, tested_figure.log10_p
        figure.test = tested_figure.how
        out.append((figure, tested_figure.inversion))
    return out


def _paired(per_question: pl.DataFrame, a: str, b: str,
            questions: Sequence[str]) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """A's and B's rows of ``questions``, and the two side by side (B's columns ``_b``)."""
    wanted = pl.Series(list(questions), dtype=pl.String).implode()
    scoped = per_question.filter(pl.col("task_id").is_in(wanted))
    left = scoped.filter(pl.col("setup") == a).drop("setup")
    right = scoped.filter(pl.col("setup") == b).drop("setup")
    return left, right, left.join(right, on="task_id", suffix="_b")


FIGURE_COLUMNS = ("metric", "k", "label", "n_questions", "mean_a", "mean_b",
                  "mean_diff_b_minus_a", "ci_level", "direction", "value", "p_value", "p_holm",
                  "test")
"""The fields of a :class:`~grade_kit.schema.Figure` a figures frame carries as they are."""

FIGURES_COLUMNS = {
    **model_columns(Comparison, "baseline", "compared", "subset", "questions"),
    **model_columns(Figure, *FIGURE_COLUMNS[:7]),
    **model_columns(Interval, "low", "high", prefix="ci_"),
    **model_columns(Figure, *FIGURE_COLUMNS[7:]),
    "note": pl.String,
}
"""The columns of :func:`figures_frame` (``ev.comparisons``): a comparison's fields and its
figure's, each typed as its model states it; ``ci_low`` and ``ci_high`` are the figure's
``ci95`` (at ``ci_level``), ``k`` pass^k's k, ``note`` its formula or statement."""


def figures_frame(comparisons: Sequence[Comparison]) -> pl.DataFrame:
    """Every figure of ``comparisons``, one row each (:data:`FIGURES_COLUMNS`), in their
    order: what every table, chart and the headline read."""
    return pl.DataFrame([
        {**{k: getattr(c, k) for k in ("baseline", "compared", "subset", "questions")},
         **{k: getattr(f, k) for k in FIGURE_COLUMNS},
         "ci_low": None if f.ci95 is None else f.ci95.low,
         "ci_high": None if f.ci95 is None else f.ci95.high,
         "note": f.formula or f.statement}
        for c in comparisons for f in c.figures
    ], schema=FIGURES_COLUMNS)


def verdict_intervals(comparison: Comparison,
                      inversions: Sequence[Inversion | None]) -> None:
    """Set the interval of every tested figure of ``comparison`` once its ``p_holm`` is set
    (``inversions``: one per figure, from :func:`compare_pair`): the shifts its own
    sign-flip test does not reject at gamma = ALPHA / (its Holm multiplier p_holm / p, from
    their log10, in [1, m]), the level at which Holm judges it (docs/methodology.md §5 "One
    verdict"), so the interval excludes 0 exactly when p_holm < ALPHA and the direction is
    stated."""
    for figure, inversion in zip(comparison.figures, inversions, strict=True):
        if (inversion is None or figure.log10_p is None or figure.log10_p_holm is None
                or figure.p_holm is None):
            continue
        multiplier = 10.0 ** (figure.log10_p_holm - figure.log10_p)
        gamma = ALPHA / multiplier
        low, high = inversion.interval(gamma)
        stated = figure.p_holm < ALPHA
        positive = (figure.mean_diff_b_minus_a or 0.0) > 0
        if stated != (low > 0 or high < 0):  # rounding at the boundary: the test decides
            low, high = ((max(low, math.ulp(0.0)), high) if stated and positive else
                         (low, min(high, -math.ulp(0.0))) if stated else
                         (min(low, 0.0), max(high, 0.0)))
        figure.ci95 = Interval(low=low, high=high)
        figure.ci_level = 1 - gamma
        figure.ci_basis = ("sign-flip test inverted at its Holm level "
                           f"(1 - {ALPHA} / {multiplier:.4g} = {1 - gamma:.4g}), "
                           f"{inversion.basis}")
        figure.ci_excludes_zero = low > 0 or high < 0


def adjust_by_holm(comparisons: list[Comparison]) -> None:
    """Set every tested figure's ``p_holm``: Holm's adjustment across the setup pairs of
    its figure, subset and k (docs/methodology.md §5 "Significance"), so adding a figure
    never changes another's verdict; and its direction from that test alone: stated only
    when p_holm < :data:`ALPHA` and the grade has a better side, so the table, the matrix
    and the headline give one answer."""
    families: dict[tuple[str, str, int | None], list[tuple[Comparison, Figure]]] = {}
    for comparison in comparisons:
        for figure in comparison.figures:
            if figure.p_value is not None:
                key = (comparison.subset, figure.metric, figure.k)
                families.setdefault(key, []).append((comparison, figure))
    for members in families.values():
        adjusted, logged = holm_adjusted([f.p_value for _, f in members],
                                         [f.log10_p for _, f in members])
        for (comparison, figure), p_holm, log10_p_holm in zip(members, adjusted, logged,
                                                              strict=True):
            figure.p_holm, figure.log10_p_holm = p_holm, log10_p_holm
            figure.direction = (direction_text(
                better_side(figure.metric), figure.mean_diff_b_minus_a, comparison.baseline,
                comparison.compared)
                if p_holm is not None and p_holm < ALPHA else None)


def compare_setups(per_question: pl.DataFrame, a: str, b: str, questions: Sequence[str],
                   all_questions: int, subset: Literal["all", "common"] = "common",
                   seed: int = DEFAULT_SEED, resamples: int = DEFAULT_RESAMPLES,
                   repeats: int | None = None,
                   clusters: pl.DataFrame | None = None) -> Comparison:
    """:func:`compare_pair` of one pair on its own: each tested figure is judged as a family
    of one (p_holm = p, its direction and its interval at 95%)."""
    comparison, inversions = compare_pair(per_question, a, b, questions, all_questions,
                                          subset, seed, resamples, repeats, clusters)
    adjust_by_holm([comparison])
    verdict_intervals(comparison, inversions)
    return comparison


def compare_pair(per_question: pl.DataFrame, a: str, b: str, questions: Sequence[str],
                   all_questions: int, subset: Literal["all", "common"] = "common",
                   seed: int = DEFAULT_SEED, resamples: int = DEFAULT_RESAMPLES,
                   repeats: int | None = None,
                   clusters: pl.DataFrame | None = None
                   ) -> tuple[Comparison, list[Inversion | None]]:
    """Compare setup ``b`` with baseline ``a`` on the questions ``questions``; the tested
    figures' p-values are set, their Holm adjustment, direction and interval are the
    caller's (:func:`verdict_intervals` with the inversions returned).

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
            rate and pass^k is compared too, with its paired test; default None (none).
        clusters: task_id, cluster: pair clusters instead of questions (a cluster's figure
            is its paired questions' total, or mean for times and the composite); default
            None (every question its own cluster).

    Returns:
        The :class:`~grade_kit.schema.Comparison` (each figure has a ``label``) and per
        figure its test's inversion (None for a figure with no test).
    """
    left, _, paired = _paired(per_question, a, b, questions)
    where = SUBSET_MEANING[subset]
    tested = ([] if repeats is None else
              _grade_rate_figures(paired, a, b, repeats, where, seed, clusters))
    figures: list[Figure] = [figure for figure, _ in tested]
    if clusters is not None:  # times and the composite: each cluster's mean of its questions
        numeric = [c for c in paired.columns if c.removesuffix("_b") in METRICS]
        paired = paired.join(clusters, on="task_id").group_by("cluster").agg(
            pl.col(numeric).mean()).rename({"cluster": "task_id"}).sort("task_id")
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
    inversions = [inversion for _, inversion in tested]
    inversions += [None] * (len(figures) - len(inversions))
    return Comparison(baseline=a, compared=b, subset=subset, questions=len(questions),
                      seed=seed, resamples=resamples, figures=figures), inversions
