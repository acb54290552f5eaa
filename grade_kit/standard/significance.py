"""Paired tests of the grade rates of two setups, and the Holm adjustment
(docs/methodology.md §5 "Significance").

The unit is the question: per paired question, each setup's count of slots in the grade
(its R repeats; a slot not run is not in it). With R = 1 each count is 0 or 1 and the test is
McNemar's exact test on the discordant questions; with R > 1 it is the sign-flip permutation
test on the per-question differences, exact where the permutation distribution is small
enough to count, else seeded Monte Carlo. Both are two-sided; both work on integers, so no
float comparison decides a tie.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["EXACT_CELLS", "FLIPS", "holm", "mcnemar_exact", "paired_count_test",
           "sign_flip_p"]

EXACT_CELLS = 50_000_000
"""The sign-flip test is counted exactly while (questions with a difference) x (range of
the sum) stays within this many cells; beyond, it is seeded Monte Carlo."""

FLIPS = 10_000
"""Random sign flips of the Monte Carlo sign-flip test."""


def mcnemar_exact(b: int, c: int) -> float:
    """McNemar's exact two-sided p: min(1, 2 P(X <= min(b, c))), X ~ Binomial(b + c, 1/2);
    1 with no discordant question.

    Args:
        b: Questions the baseline got and the compared setup did not.
        c: Questions the compared setup got and the baseline did not.
    """
    n = b + c
    if n == 0:
        return 1.0
    # integers to the one division, which Python rounds correctly however large they are
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / (1 << n)
    return min(1.0, 2.0 * tail)


def sign_flip_p(differences: Sequence[int], seed: int,
                flips: int = FLIPS) -> tuple[float, str]:
    """The two-sided sign-flip permutation p of the sum of integer per-question
    differences: P(|S| >= |s|) where S flips each difference's sign with probability 1/2.

    Exact (the distribution of S counted by convolution) while the work stays within
    :data:`EXACT_CELLS`; else ``(1 + #{|S*| >= |s|}) / (flips + 1)`` over ``flips`` seeded
    random flips (``numpy.random.default_rng(seed)``).

    Returns:
        (p, how it was computed).
    """
    d = np.abs(np.asarray([x for x in differences if x != 0], dtype=np.int64))
    observed = abs(int(np.sum(np.asarray(differences, dtype=np.int64))))
    if d.size == 0:
        return 1.0, "exact sign-flip permutation (no question differs)"
    total = int(d.sum())
    if d.size * (2 * total + 1) <= EXACT_CELLS:
        # counts of sign patterns per sum, as probabilities halved at each step (exact in
        # binary floating point: every value is k / 2^n with k < 2^53 while n <= 52; beyond,
        # the relative rounding is about 1e-16 per step)
        dist = _sign_sum_distribution(d.tolist())
        sums = np.arange(-total, total + 1)
        p = float(math.fsum(dist[np.abs(sums) >= observed].tolist()))
        return min(1.0, p), "exact sign-flip permutation on per-question differences"
    rng = np.random.default_rng(seed)
    extreme = 0
    block = max(1, (1 << 22) // d.size)  # flips drawn at once: about 4 million signs
    for at in range(0, flips, block):
        kept = rng.integers(0, 2, size=(min(block, flips - at), d.size))  # 1: sign kept
        # the flipped sum: the kept differences minus the others, 2 (kept @ d) - total (the
        # same integers as (2 kept - 1) @ d, without that array)
        extreme += int(np.count_nonzero(np.abs(2 * (kept @ d) - total) >= observed))
    return (1 + extreme) / (flips + 1), (
        f"seeded sign-flip permutation on per-question differences ({flips:,} flips)")


def _sign_sum_distribution(differences: list[int]) -> np.ndarray:
    """P(S = s) for s = -total..total, S the sum of the differences each with a random sign,
    one difference at a time: P'(s) = 0.5 (P(s - k) + P(s + k)). Only the support so far
    (|s| <= the differences taken) is touched, so each step costs its width, not the whole
    range; each value is the same 0.5 (a + b) of the same two numbers as over the whole
    range (outside the support both are 0)."""
    dist = np.ones(1)
    for k in differences:
        wider = np.zeros(dist.size + 2 * k)
        wider[:dist.size] = dist  # P(s + k) at s
        wider[2 * k:] += dist  # + P(s - k)
        wider *= 0.5
        dist = wider
    return dist


def paired_count_test(a: Sequence[int], b: Sequence[int], repeats: int,
                      seed: int) -> tuple[float, str]:
    """The p-value of B against A on paired questions, from each setup's count of slots in
    the grade per question (0..R): McNemar's exact test when R = 1, else the sign-flip test
    on the per-question differences (:func:`sign_flip_p`)."""
    if repeats == 1:
        only_a = sum(1 for x, y in zip(a, b, strict=True) if x and not y)
        only_b = sum(1 for x, y in zip(a, b, strict=True) if y and not x)
        return mcnemar_exact(only_a, only_b), (
            f"exact McNemar on {only_a + only_b} discordant questions "
            f"(baseline only {only_a}, compared only {only_b})")
    return sign_flip_p([y - x for x, y in zip(a, b, strict=True)], seed)


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of the non-null p-values (m of them): in ascending order,
    p_(i) -> max over j <= i of min(1, (m - j + 1) p_(j)); nulls stay null."""
    given = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(given)
    out: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, index) in enumerate(given):
        running = max(running, min(1.0, (m - rank) * p))
        out[index] = running
    return out
