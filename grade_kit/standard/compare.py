"""Comparison of two setups on the common subset (DESIGN.md §5: every improvement figure is
labelled *measured*, *conditional estimate* (formula and assumptions shown) or *untested
direction*).

- measured: a paired difference (B - A) per question of the common subset, with a seeded
  percentile bootstrap confidence interval over questions;
- conditional estimate: a measured mean difference scaled to the whole plan, valid only under
  the stated assumption that the common subset represents the other questions;
- untested direction: a direction nobody measured (questions outside the common subset, or a
  metric with no paired questions).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl

__all__ = ["DEFAULT_RESAMPLES", "DEFAULT_SEED", "bootstrap_mean_ci", "compare_setups"]

DEFAULT_SEED = 20261130
DEFAULT_RESAMPLES = 2000

METRICS = {
    "e2e_median_s": ("per-question median E2E seconds (lower is faster)", "lower"),
    "tool_calls_per_run": ("per-question mean unique tool calls per run", None),
    "composite": ("GRADE task composite (higher is better)", "higher"),
}


def bootstrap_mean_ci(diffs: np.ndarray, seed: int = DEFAULT_SEED,
                      resamples: int = DEFAULT_RESAMPLES,
                      level: float = 0.95) -> tuple[float, float] | None:
    """Percentile bootstrap CI of the mean of ``diffs`` (resampling questions with
    replacement, ``numpy.random.default_rng(seed)``); None with fewer than 2 values."""
    n = len(diffs)
    if n < 2:
        return None
    rng = np.random.default_rng(seed)
    means = diffs[rng.integers(0, n, size=(resamples, n))].mean(axis=1)
    alpha = (1 - level) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return float(lo), float(hi)


def compare_setups(per_question: pl.DataFrame, a: str, b: str, common: list[str],
                   all_questions: int, seed: int = DEFAULT_SEED,
                   resamples: int = DEFAULT_RESAMPLES) -> dict[str, Any]:
    """Compare setup ``b`` with baseline ``a`` on the common subset.

    Args:
        per_question: setup, task_id and one column per metric of :data:`METRICS`
            (null where unmeasured), restricted to the common subset.
        a: Baseline setup.
        b: Compared setup.
        common: The common subset's task ids.
        all_questions: Questions in the whole plan (for the conditional estimate).
        seed: Bootstrap seed (recorded in the output).
        resamples: Bootstrap resamples.

    Returns:
        ``{baseline, compared, questions, seed, resamples, figures: [...]}``; each figure
        has a ``label``.
    """
    left = per_question.filter(pl.col("setup") == a).drop("setup")
    right = per_question.filter(pl.col("setup") == b).drop("setup")
    paired = left.join(right, on="task_id", suffix="_b")
    figures: list[dict[str, Any]] = []
    for metric, (meaning, better) in METRICS.items():
        if metric not in left.columns:
            continue
        both = paired.filter(pl.col(metric).is_not_null() & pl.col(f"{metric}_b").is_not_null())
        if both.is_empty():
            figures.append({
                "metric": metric, "label": "untested direction", "meaning": meaning,
                "statement": f"no common-subset question has {metric} for both {a} and {b}",
            })
            continue
        xa = both.get_column(metric).to_numpy().astype(float)
        xb = both.get_column(f"{metric}_b").to_numpy().astype(float)
        diffs = xb - xa
        mean_diff = math.fsum(diffs.tolist()) / len(diffs)
        ci = bootstrap_mean_ci(diffs, seed, resamples)
        figure: dict[str, Any] = {
            "metric": metric, "label": "measured", "meaning": meaning,
            "n_questions": len(diffs), "mean_a": math.fsum(xa.tolist()) / len(xa),
            "mean_b": math.fsum(xb.tolist()) / len(xb), "mean_diff_b_minus_a": mean_diff,
            "ci95": None if ci is None else list(ci),
            "ci_excludes_zero": None if ci is None else bool(ci[0] > 0 or ci[1] < 0),
        }
        if better is not None and ci is not None and figure["ci_excludes_zero"]:
            improves = (mean_diff < 0) if better == "lower" else (mean_diff > 0)
            figure["direction"] = f"{b} {'better' if improves else 'worse'} than {a}"
        figures.append(figure)
        if metric == "e2e_median_s":
            figures.append({
                "metric": "e2e_seconds_over_plan", "label": "conditional estimate",
                "value": mean_diff * all_questions,
                "formula": f"mean paired E2E difference ({mean_diff:.6g} s) x "
                           f"{all_questions} planned questions",
                "assumptions": "the common-subset questions represent every planned question; "
                               "one median-time answer per question",
            })
    outside = all_questions - len(common)
    if outside > 0:
        figures.append({
            "metric": "questions outside the common subset", "label": "untested direction",
            "statement": f"{outside} of {all_questions} questions were not resolved in every "
                         f"slot by every setup; no paired comparison of {a} and {b} is made "
                         "on them",
        })
    return {"baseline": a, "compared": b, "questions": len(common), "seed": seed,
            "resamples": resamples, "figures": figures}
