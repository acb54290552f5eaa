"""Paired tests of the grade rates and pass^k of two setups, their inversion into
intervals, and the Holm adjustment (docs/methodology.md §5 "Significance", "One verdict").

The unit is the question (or a cluster of them): per paired unit, the difference of the two
setups' counts (slots in the grade over its R repeats, a slot not run not in it; or
C(resolved, k) for pass^k). With R = 1 and question units the test is McNemar's exact test
on the discordant questions; otherwise the sign-flip permutation test on the units'
differences, exact where the permutation distribution is small enough to count, else seeded
Monte Carlo. Both are two-sided and work on integers, so no float comparison decides a tie.
Its interval is the same test inverted (:class:`Inversion`): the shifts it does not reject.
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

EXACT_CELLS = 50_000_000
"""The sign-flip test is counted exactly while (questions with a difference) x (range of
the sum) stays within this many cells; beyond, it is seeded Monte Carlo."""

FLIPS = 10_000
"""Random sign flips of the Monte Carlo sign-flip test."""


P_FLOOR = sys.float_info.min
"""The smallest p stored as a float (2.2e-308, the smallest normal double): a p below it is
stored as this bound, never as 0.0, and its exact size is its ``log10_p``
(docs/methodology.md §5 "Significance")."""

_LOG_BELOW = 1e-250
"""A float sign-flip distribution's p below this is counted again in log space: its tail
may have passed through numbers too small for a double."""


def p_of(log10_p: float) -> float:
    """The float p of a log10 p: 10^log10_p, at least :data:`P_FLOOR`, at most 1."""
    return min(1.0, max(P_FLOOR, math.pow(10.0, log10_p)))  # 10^-400 is 0.0, no error


def mcnemar_exact(b: int, c: int) -> float:
    """McNemar's exact two-sided p: min(1, 2 P(X <= min(b, c))), X ~ Binomial(b + c, 1/2);
    1 with no discordant question; never below :data:`P_FLOOR` (its exact size:
    :func:`mcnemar_log10`).

    Args:
        b: Questions the baseline got and the compared setup did not.
        c: Questions the compared setup got and the baseline did not.
    """
    return max(P_FLOOR, _mcnemar(b, c)[0])


def mcnemar_log10(b: int, c: int) -> float:
    """log10 of McNemar's exact two-sided p (:func:`mcnemar_exact`), from the same exact
    integers: it does not underflow however many questions are discordant."""
    return _mcnemar(b, c)[1]


def _mcnemar(b: int, c: int) -> tuple[float, float]:
    """McNemar's p (as a float, 0.0 where it underflows) and its log10, from the exact
    integer tail 2 sum_{i <= min(b, c)} C(n, i) over 2^n."""
    n = b + c
    if n == 0:
        return 1.0, 0.0
    # integers to the one division, which Python rounds correctly however large they are;
    # C(n, i + 1) = C(n, i) (n - i) / (i + 1) exactly, so the tail costs min(b, c) steps
    term = tail = 1
    for i in range(min(b, c)):
        term = term * (n - i) // (i + 1)
        tail += term
    p = min(1.0, (2 * tail) / (1 << n))
    return p, min(0.0, math.log10(2 * tail) - n * math.log10(2))


def sign_flip_p(differences: Sequence[int], seed: int,
                flips: int = FLIPS) -> tuple[float, str]:
    """The two-sided sign-flip permutation p of the sum of integer per-question
    differences: P(|S| >= |s|) where S flips each difference's sign with probability 1/2;
    never below :data:`P_FLOOR` (its exact size: :func:`sign_flip_log10`).

    Exact (the distribution of S counted by convolution) while the work stays within
    :data:`EXACT_CELLS`; else ``(1 + #{|S*| >= |s|}) / (flips + 1)`` over ``flips`` seeded
    random flips (``numpy.random.default_rng(seed)``).

    Returns:
        (p, how it was computed).
    """
    p, _, how = _sign_flip(differences, seed, flips)
    return p, how


def sign_flip_log10(differences: Sequence[int], seed: int, flips: int = FLIPS) -> float:
    """log10 of :func:`sign_flip_p`'s p, counted in log space where the float tail would
    underflow: exact however many questions differ."""
    return _sign_flip(differences, seed, flips)[1]


def _sign_flip(differences: Sequence[int], seed: int, flips: int) -> tuple[float, float, str]:
    """:func:`sign_flip_p`'s p (floored at :data:`P_FLOOR`), its log10 and how."""
    d = np.abs(np.asarray([x for x in differences if x != 0], dtype=np.int64))
    observed = abs(int(np.sum(np.asarray(differences, dtype=np.int64))))
    if d.size == 0:
        return 1.0, 0.0, "exact sign-flip permutation (no question differs)"
    total = int(d.sum())
    if d.size * (2 * total + 1) <= EXACT_CELLS:
        # counts of sign patterns per sum, as probabilities halved at each step (exact in
        # binary floating point: every value is k / 2^n with k < 2^53 while n <= 52; beyond,
        # the relative rounding is about 1e-16 per step)
        how = "exact sign-flip permutation on per-question differences"
        dist = _sign_sum_distribution(d.tolist())
        sums = np.arange(-total, total + 1)
        p = min(1.0, float(math.fsum(dist[np.abs(sums) >= observed].tolist())))
        if p >= _LOG_BELOW:
            return p, math.log10(p), how
        # a tail this far out may have passed through subnormal doubles: count it again in
        # log space, where nothing underflows
        log_dist = _sign_sum_log_distribution(d.tolist())
        log_p = float(np.logaddexp.reduce(log_dist[np.abs(sums) >= observed]))
        log10_p = min(0.0, log_p / math.log(10))
        return p_of(log10_p), log10_p, how
    rng = np.random.default_rng(seed)
    extreme = 0
    block = max(1, (1 << 22) // d.size)  # flips drawn at once: about 4 million signs
    for at in range(0, flips, block):
        kept = rng.integers(0, 2, size=(min(block, flips - at), d.size))  # 1: sign kept
        # the flipped sum: the kept differences minus the others, 2 (kept @ d) - total (the
        # same integers as (2 kept - 1) @ d, without that array)
        extreme += int(np.count_nonzero(np.abs(2 * (kept @ d) - total) >= observed))
    p = (1 + extreme) / (flips + 1)
    return p, math.log10(p), (
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


def _sign_sum_log_distribution(differences: list[int]) -> np.ndarray:
    """ln P(S = s) of :func:`_sign_sum_distribution`, the same recursion in log space:
    ln P'(s) = ln(e^ln P(s - k) + e^ln P(s + k)) - ln 2 (-inf where P is 0)."""
    dist = np.zeros(1)
    half = math.log(0.5)
    for k in differences:
        wider = np.full(dist.size + 2 * k, -np.inf)
        wider[:dist.size] = dist
        wider[2 * k:] = np.logaddexp(wider[2 * k:], dist)
        wider += half
        dist = wider
    return dist


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of the non-null p-values (m of them): in ascending order,
    p_(i) -> max over j <= i of min(1, (m - j + 1) p_(j)); nulls stay null
    (:func:`holm_adjusted` of the floats alone)."""
    return holm_adjusted(p_values, [None if p is None else -math.inf if p == 0
                                    else math.log10(p) for p in p_values])[0]


def holm_adjusted(p_values: Sequence[float | None], log10_p: Sequence[float | None]
                  ) -> tuple[list[float | None], list[float | None]]:
    """Holm's adjustment of the p-values and, in the same steps, of their log10 (so a p
    floored at :data:`P_FLOOR` keeps its size): in ascending order of the exact p, p_(i) ->
    max over j <= i of min(1, (m - j + 1) p_(j)), and log10 p_(i) -> max over j <= i of
    min(0, log10(m - j + 1) + log10 p_(j)); nulls stay null. The Holm multiplier p_holm / p
    is 10^(log10 p_holm - log10 p), in [1, m].

    Returns:
        (p_holm, log10 p_holm), one each per p-value.
    """
    given = sorted((lg, p, i) for i, (p, lg) in enumerate(zip(p_values, log10_p, strict=True))
                   if p is not None and lg is not None)
    m = len(given)
    out: list[float | None] = [None] * len(p_values)
    logged: list[float | None] = [None] * len(p_values)
    running, running_log = 0.0, -math.inf
    for rank, (lg, p, index) in enumerate(given):
        running = max(running, min(1.0, (m - rank) * p))
        running_log = max(running_log, min(0.0, math.log10(m - rank) + lg))
        out[index], logged[index] = running, running_log
    return out, logged


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


@dataclass(frozen=True)
class Inversion:
    """The sign-flip test of every shift delta of a figure, as two step functions: below the
    observed figure its p rises with delta (``low_values`` ascending, ``low_p`` the p from
    each on), above it falls (``high_values`` descending); ``floor`` is the p beyond every
    value (delta past every subset mean). Kept up to the p :func:`invert` was asked for."""

    low_values: np.ndarray
    low_p: np.ndarray
    high_values: np.ndarray
    high_p: np.ndarray
    floor: float
    basis: str = "exact, over every subset of the units"

    def interval(self, gamma: float) -> tuple[float, float]:
        """The shifts the test does not reject at level ``gamma`` (p >= gamma), clipped to
        [-1, 1] (docs/methodology.md §5 "One verdict")."""
        def end(values: np.ndarray, p: np.ndarray, outer: float) -> float:
            if self.floor >= gamma:
                return outer
            at = int(np.searchsorted(p, gamma, side="left"))
            return float(values[min(at, values.size - 1)])

        low = end(self.low_values, self.low_p, -1.0)
        high = end(self.high_values, self.high_p, 1.0)
        return max(-1.0, low), min(1.0, high)


def _kept(values: np.ndarray, p: np.ndarray, up_to: float) -> tuple[np.ndarray, np.ndarray]:
    """The step function up to and including its first p at or past ``up_to``."""
    stop = int(np.searchsorted(p, up_to, side="left")) + 1
    return values[:stop], p[:stop]


def _exact_inversion(units: PairedUnits, up_to: float) -> Inversion:
    """Every non-empty subset S of the units by its mean sum_S d / (per sum_S m), with its
    probability 2^-n; below the figure p(delta) = 2 (P(S empty) + P(mean_S <= delta)), above
    it 2 (P(S empty) + P(mean_S >= delta)) (Hartigan's subset means; the (size, sum) table
    built one unit at a time, T' = (T + T shifted by (m, d)) / 2, exact in binary floating
    point while n <= 52)."""
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
    empty = float(table[0, -negative])
    sizes, sums = np.nonzero(table[1:])
    mass = table[1:][sizes, sums]
    means = (sums + negative) / (units.per * (sizes + 1.0))
    order = np.argsort(means, kind="stable")
    means, mass = means[order], mass[order]
    low = _kept(means, np.minimum(1.0, 2 * (empty + np.cumsum(mass))), up_to)
    high = _kept(means[::-1], np.minimum(1.0, 2 * (empty + np.cumsum(mass[::-1]))), up_to)
    return Inversion(*low, *high, floor=min(1.0, 2 * empty))


@functools.lru_cache(maxsize=2)
def _packed_flips(seed: int, n: int, flips: int) -> np.ndarray:
    """The seeded flips, 1 where a unit's sign is flipped (``default_rng(seed).integers(0,
    2, (flips, n))``, drawn in blocks), packed eight to a byte: one draw shared by every
    comparison of n units (41 MB at 33,000 units)."""
    rng = np.random.default_rng(seed)
    step = max(1, (1 << 22) // max(n, 1))
    blocks = [np.packbits(rng.integers(0, 2, size=(min(step, flips - at), n), dtype=np.uint8),
                          axis=1) for at in range(0, flips, step)]
    packed = np.concatenate(blocks)
    packed.flags.writeable = False
    return packed


def forget_flips() -> None:
    """Let go of the cached seeded flips once a set of comparisons is done."""
    _packed_flips.cache_clear()


def _flip_blocks(seed: int, n: int, flips: int, exact_below: float):  # type: ignore[no-untyped-def]
    """The seeded flips in blocks of rows, as floats in which every flipped sum below
    ``exact_below`` is exact (float32 below 2^24, else float64)."""
    packed = _packed_flips(seed, n, flips)
    kind = np.float32 if exact_below <= 2**24 else np.float64
    step = max(1, (1 << 21) // max(n, 1))
    for at in range(0, flips, step):
        yield np.unpackbits(packed[at:at + step], axis=1, count=n).astype(kind)


class Tested(NamedTuple):
    """One figure's paired test: its p (never below :data:`P_FLOOR`), the exact log10 of
    that p, how it was computed, and its inversion."""

    p: float
    log10_p: float
    how: str
    inversion: Inversion


def _monte_carlo(group: list[PairedUnits], seed: int, flips: int, up_to: float
                 ) -> list[Tested]:
    """The seeded sign-flip test and its inversion of every figure of ``group`` (units of
    one shape: the same sizes), from one pass over the same flips: with S a flip's flipped
    set, it is extreme at delta below the figure when min(mean S, mean of the rest) <= delta
    (an empty set's mean -inf), above it when the max is >= delta; p = (1 + #extreme) /
    (flips + 1), at 0 the count of |sum - 2 s_S| >= |sum|."""
    m = group[0].m
    weights = np.stack([*(u.d for u in group), m], axis=1)
    bound = float(np.abs(weights).sum(axis=0).max())
    flipped = np.concatenate([block @ weights.astype(block.dtype)
                              for block in _flip_blocks(seed, m.size, flips, bound)])
    size, total_m = flipped[:, -1].astype(np.float64), float(m.sum())
    out = []
    for column, units in enumerate(group):
        s = flipped[:, column].astype(np.float64)
        total = float(units.d.sum())
        if total == 0:
            p, how = 1.0, "sign-flip permutation (the differences sum to 0)"
            log10_p = 0.0
        else:
            extreme = int(np.count_nonzero(np.abs(total - 2 * s) >= abs(total)))
            p, how = (1 + extreme) / (flips + 1), (
                f"seeded sign-flip permutation over {m.size:,} paired units "
                f"({flips:,} flips)")
            log10_p = math.log10(p)
        with np.errstate(divide="ignore", invalid="ignore"):
            inside = s / (units.per * size)
            rest = (total - s) / (units.per * (total_m - size))
        lows = np.sort(np.minimum(np.where(size == 0, -np.inf, inside),
                                  np.where(size == total_m, -np.inf, rest)))
        highs = -np.sort(-np.maximum(np.where(size == 0, np.inf, inside),
                                     np.where(size == total_m, np.inf, rest)))
        steps = (2 + np.arange(flips)) / (flips + 1)  # p from the k-th value on
        out.append(Tested(p, log10_p, how, Inversion(
            *_kept(lows, steps, up_to), *_kept(highs, steps, up_to), floor=1 / (flips + 1),
            basis=f"over {flips:,} seeded sign flips")))
    return out


def _exact_p(units: PairedUnits, seed: int) -> tuple[float, float, str] | None:
    """The exact test's p where it can be counted (McNemar's for single-question units at
    R = 1; the sign-flip distribution by convolution within :data:`EXACT_CELLS`), else
    None."""
    d = units.d
    single = bool((units.m == 1).all())
    if units.per == 1 and single:
        only_a, only_b = int((d < 0).sum()), int((d > 0).sum())
        p, log10_p = _mcnemar(only_a, only_b)
        return max(P_FLOOR, p), log10_p, (
            f"exact McNemar on {only_a + only_b} discordant questions "
            f"(baseline only {only_a}, compared only {only_b})")
    nonzero = int(np.count_nonzero(d))
    if nonzero * (2 * int(np.abs(d).sum()) + 1) > EXACT_CELLS:
        return None
    p, log10_p, how = _sign_flip(d.tolist(), seed, FLIPS)
    return p, log10_p, how if single else how.replace(
        "per-question differences", "per-cluster differences (whole clusters flipped)")


def units_tests(group: list[PairedUnits], seed: int, flips: int = FLIPS,
                up_to: float = 1.0) -> list[Tested]:
    """The two-sided sign-flip test of each figure over its paired units, with its
    inversion (:class:`Inversion`, kept up to p = ``up_to``; the pipeline keeps what Holm's
    levels can ask, up to 0.05).

    p is exact wherever it can be counted (McNemar's test for single-question units at
    R = 1, the sign-flip distribution by convolution within :data:`EXACT_CELLS`), else
    ``(1 + #{|S*| >= |s|}) / (flips + 1)`` over seeded flips. The inversion is exact within
    :data:`EXACT_WORK`, else over the same seeded flips (shared by the figures of one shape):
    where its interval and an exact p disagree about 0, only within the flips' error of the
    boundary, the exact test decides (:func:`~grade_kit.standard.compare.verdict_intervals`).
    """
    out: list[Tested | None] = [None] * len(group)
    shapes: dict[bytes, list[int]] = {}
    for index, units in enumerate(group):
        if not units.exact:
            shapes.setdefault(units.m.astype(np.int64).tobytes(), []).append(index)
            continue
        exact = _exact_p(units, seed)
        assert exact is not None  # within EXACT_WORK the convolution is smaller still
        out[index] = Tested(*exact, _exact_inversion(units, up_to))
    for members in shapes.values():
        for index, seeded in zip(
                members, _monte_carlo([group[i] for i in members], seed, flips, up_to),
                strict=True):
            exact = _exact_p(group[index], seed)
            out[index] = seeded if exact is None else Tested(
                exact[0], exact[1], f"{exact[2]}; interval {seeded.inversion.basis}",
                seeded.inversion)
    return [result for result in out if result is not None]


def units_test(units: PairedUnits, seed: int, flips: int = FLIPS) -> tuple[float, str]:
    """:func:`units_tests` of one figure: its p and how it was computed."""
    tested = units_tests([units], seed, flips)[0]
    return tested.p, tested.how


def units_interval(units: PairedUnits, gamma: float, seed: int,
                   flips: int = FLIPS) -> tuple[float, float]:
    """The shifts of the figure that its sign-flip test does not reject at ``gamma``
    (docs/methodology.md §5 "One verdict"): 0 is inside exactly when the test's p at 0 is at
    least ``gamma``."""
    return units_tests([units], seed, flips)[0].inversion.interval(gamma)
