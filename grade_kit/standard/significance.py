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
from dataclasses import dataclass

import numpy as np

__all__ = ["EXACT_CELLS", "EXACT_WORK", "FLIPS", "PairedUnits", "holm", "mcnemar_exact",
           "paired_count_test", "sign_flip_p", "units_interval", "units_test"]

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


# ---------------------------------------------------------------- tests over paired units

EXACT_WORK = 10_000_000
"""A paired test is exact, and its interval is the exact inversion, while (units) x (sizes
+ 1) x (range of the sum + 1) stays within this many cells (the (size, sum) table of every
subset of units, docs/methodology.md §5 "One verdict"); beyond, both come from the same
:data:`FLIPS` seeded sign flips."""


@dataclass(frozen=True)
class PairedUnits:
    """What a paired test of a count figure flips: per unit (a question, or a cluster of
    them), the integer difference B - A of its numerators and its questions; the figure is
    sum(d) / (per x sum(m)).

    Attributes:
        d: Per unit, B's count minus A's (slots in a grade, or C(c, k) for pass^k).
        m: Per unit, its paired questions (1 for question clusters).
        per: The denominator of one question's figure (R for a grade rate, C(R, k) for
            pass^k).
    """

    d: np.ndarray
    m: np.ndarray
    per: int

    @property
    def value(self) -> float:
        """The figure's difference: sum(d) / (per x sum(m)), one exact division."""
        return int(self.d.sum()) / (self.per * int(self.m.sum()))

    @property
    def exact(self) -> bool:
        """Whether the test and its interval are counted exactly (:data:`EXACT_WORK`)."""
        return (self.d.size * (int(self.m.sum()) + 1) * (int(np.abs(self.d).sum()) + 1)
                <= EXACT_WORK)


def units_test(units: PairedUnits, seed: int, flips: int = FLIPS) -> tuple[float, str]:
    """The two-sided sign-flip p of B against A over the paired units: McNemar's exact test
    for single-question units at R = 1, the exact sign-flip test while the units are few
    enough (:attr:`PairedUnits.exact`), else ``(1 + #{|S*| >= |s|}) / (flips + 1)`` over the
    seeded flips that :func:`units_interval` inverts (the same flips: one verdict)."""
    d = units.d
    if units.exact:
        if units.per == 1 and bool((units.m == 1).all()):
            only_a, only_b = int((d < 0).sum()), int((d > 0).sum())
            return mcnemar_exact(only_a, only_b), (
                f"exact McNemar on {only_a + only_b} discordant questions "
                f"(baseline only {only_a}, compared only {only_b})")
        p, how = sign_flip_p(d.tolist(), seed)
        return p, how + ("" if bool((units.m == 1).all()) else " (whole clusters flipped)")
    total = int(d.sum())
    if total == 0:
        return 1.0, "sign-flip permutation (the differences sum to 0)"
    extreme = 0
    for block in _flip_blocks(seed, d.size, flips):
        flipped = block @ d.astype(np.float64)  # s_S: the flipped units' sum, exact integers
        extreme += int(np.count_nonzero(np.abs(total - 2 * flipped) >= abs(total)))
    return (1 + extreme) / (flips + 1), (
        f"seeded sign-flip permutation over {d.size:,} paired units ({flips:,} flips)")


def units_interval(units: PairedUnits, gamma: float, seed: int,
                   flips: int = FLIPS) -> tuple[float, float]:
    """The shifts delta of the figure that the same sign-flip test does not reject at level
    ``gamma`` (docs/methodology.md §5 "One verdict"): the test of delta flips the units'
    d - per x delta x m, and its acceptance set is [L, U] with L the smallest subset-mean
    sum_S d / (per sum_S m) at which 2 P(mean_S <= delta) reaches gamma (Hartigan's subset
    means; exact over every subset while :attr:`PairedUnits.exact`, else over the seeded
    flips of :func:`units_test`), clipped to [-1, 1]. So 0 is inside exactly when the test's
    p at 0 is at least ``gamma``."""
    if units.exact:
        ratios, mass, empty = _subset_means(units)
        need_low = need_high = gamma / 2 - empty  # P(S empty) counts on both sides
        lows, highs = ratios, ratios[::-1]
        low_mass, high_mass = np.cumsum(mass), np.cumsum(mass[::-1])
        low = -1.0 if need_low <= 0 else float(lows[np.searchsorted(low_mass, need_low)])
        high = 1.0 if need_high <= 0 else float(highs[np.searchsorted(high_mass, need_high)])
    else:
        w_low, w_high = _flip_means(units, seed, flips)
        need = math.ceil(gamma * (flips + 1) - 1 - 1e-9)
        low = -1.0 if need <= 0 else float(np.partition(w_low, need - 1)[need - 1])
        high = 1.0 if need <= 0 else float(-np.partition(-w_high, need - 1)[need - 1])
    return max(-1.0, low), min(1.0, high)


def _subset_means(units: PairedUnits) -> tuple[np.ndarray, np.ndarray, float]:
    """Every non-empty subset S of the units as (sum_S d / (per sum_S m), its probability
    2^-n), grouped by mean and sorted ascending; and the empty set's probability.

    The (size, sum) table is built one unit at a time, T' = (T + T shifted by (m, d)) / 2,
    exact in binary floating point while n <= 52 (every value k / 2^n)."""
    d, m = units.d.astype(np.int64), units.m.astype(np.int64)
    negative = int(d[d < 0].sum())
    width = int(np.abs(d).sum()) + 1
    table = np.zeros((int(m.sum()) + 1, width))
    table[0, -negative] = 1.0
    size = 0
    for mu, du in zip(m.tolist(), d.tolist(), strict=True):
        shifted = np.zeros_like(table)
        rows = slice(mu, size + mu + 1)
        if du >= 0:
            shifted[rows, du:] = table[:size + 1, :width - du]
        else:
            shifted[rows, :width + du] = table[:size + 1, -du:]
        table = (table + shifted) * 0.5
        size += mu
    sizes, sums = np.nonzero(table[1:])
    mass = table[1:][sizes, sums]
    means = (sums + negative) / (units.per * (sizes + 1.0))
    order = np.argsort(means, kind="stable")
    return means[order], mass[order], float(table[0, -negative])


def _flip_blocks(seed: int, n: int, flips: int):  # type: ignore[no-untyped-def]
    """The seeded flips in blocks: 1 where a unit's sign is flipped (float64, to multiply
    exactly); the same flips for a test and its interval."""
    rng = np.random.default_rng(seed)
    step = max(1, (1 << 22) // max(n, 1))
    for at in range(0, flips, step):
        yield rng.integers(0, 2, size=(min(step, flips - at), n)).astype(np.float64)


def _flip_means(units: PairedUnits, seed: int, flips: int) -> tuple[np.ndarray, np.ndarray]:
    """Per seeded flip f with flipped set S: min and max of (mean of S, mean of the rest),
    an empty set's mean being -inf for the min and +inf for the max: the flip counts as
    extreme at delta below the mean exactly when its min is at most delta."""
    d = units.d.astype(np.float64)
    m = units.m.astype(np.float64)
    total_d, total_m = float(d.sum()), float(m.sum())
    lows, highs = [], []
    with np.errstate(divide="ignore", invalid="ignore"):
        for block in _flip_blocks(seed, d.size, flips):
            s, size = block @ d, block @ m
            inside = s / (units.per * size)
            rest = (total_d - s) / (units.per * (total_m - size))
            inside_lo = np.where(size == 0, -np.inf, inside)
            rest_lo = np.where(size == total_m, -np.inf, rest)
            inside_hi = np.where(size == 0, np.inf, inside)
            rest_hi = np.where(size == total_m, np.inf, rest)
            lows.append(np.minimum(inside_lo, rest_lo))
            highs.append(np.maximum(inside_hi, rest_hi))
    return np.concatenate(lows), np.concatenate(highs)
