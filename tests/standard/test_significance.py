"""Significance on the grade rates (docs/methodology.md §5 "Significance"): hand-computed
McNemar, sign-flip and Holm values, checked against scipy and brute force, and the figures of
``ev.comparisons`` on small checked-in cases computed by hand."""

from __future__ import annotations

import itertools
import math
import random
from typing import Any

import numpy as np
import polars as pl
import pytest
from scipy.stats import binomtest

import grade_kit as gk
from grade_kit.standard.significance import (
    EXACT_CELLS,
    holm,
    mcnemar_exact,
    sign_flip_p,
)


def test_mcnemar_by_hand() -> None:
    # b = 1, c = 6: 2 (C(7,0) + C(7,1)) / 2^7 = 2 x 8 / 128
    assert mcnemar_exact(1, 6) == 0.125
    assert mcnemar_exact(0, 10) == 2 / 1024
    assert mcnemar_exact(3, 3) == 1.0 and mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(6, 1) == mcnemar_exact(1, 6)


def test_mcnemar_equals_scipys_exact_binomial_test() -> None:
    for b in range(0, 25):
        for c in range(0, 25):
            if b + c:
                assert mcnemar_exact(b, c) == pytest.approx(
                    binomtest(b, b + c).pvalue, rel=1e-12, abs=0)


def test_sign_flip_by_hand() -> None:
    # nonzero 2, 1, 3; observed |6|: only all + or all - reach it: 2 of 8
    assert sign_flip_p([2, 1, 0, 3], seed=0)[0] == 0.25
    # 2, -1, 1: sums 4, 2, 2, 0, 0, -2, -2, -4; |S| >= 2 in 6 of 8
    assert sign_flip_p([2, -1, 1], seed=0)[0] == 0.75
    assert sign_flip_p([1, -1], seed=0)[0] == 1.0
    assert sign_flip_p([0, 0], seed=0) == (1.0, "exact sign-flip permutation (no question "
                                                "differs)")


def test_exact_sign_flip_equals_brute_force() -> None:
    rng = random.Random(5)
    for _ in range(200):
        d = [rng.randint(-4, 4) for _ in range(rng.randint(1, 10))]
        observed = abs(sum(d))
        patterns = list(itertools.product((1, -1), repeat=len(d)))
        brute = sum(abs(sum(s * x for s, x in zip(signs, d, strict=True))) >= observed
                    for signs in patterns) / len(patterns)
        p, how = sign_flip_p(d, seed=0)
        assert how.startswith("exact") and p == pytest.approx(brute, rel=1e-12)


def test_exact_sign_flip_is_the_whole_range_convolution_bit_for_bit() -> None:
    # methodology §5: the distribution of S by convolving one question at a time, written
    # here over the whole range of the sum, as the words say; long inputs (beyond 2^-52)
    rng = random.Random(8)
    for _ in range(40):
        d = [rng.randint(-5, 5) for _ in range(rng.randint(1, 300))]
        nonzero = [abs(x) for x in d if x]
        total = sum(nonzero)
        dist = np.zeros(2 * total + 1)
        dist[total] = 1.0
        for k in nonzero:
            dist = 0.5 * (np.roll(dist, k) + np.roll(dist, -k))
        tail = dist[np.abs(np.arange(-total, total + 1)) >= abs(sum(d))]
        expected = min(1.0, math.fsum(tail.tolist())) if nonzero else 1.0
        assert sign_flip_p(d, seed=0)[0] == expected


def test_a_large_sign_flip_is_seeded_monte_carlo(monkeypatch: pytest.MonkeyPatch) -> None:
    d = [1, 2, -1, 3, 1, 1, 2] * 10
    exact, _ = sign_flip_p(d, seed=0)
    monkeypatch.setattr("grade_kit.standard.significance.EXACT_CELLS", 10)
    p, how = sign_flip_p(d, seed=3)
    assert how.startswith("seeded sign-flip") and p == sign_flip_p(d, seed=3)[0]
    assert p >= 1 / 10_001 and abs(p - exact) < 0.01
    assert EXACT_CELLS == 50_000_000


def test_the_monte_carlo_sign_flip_is_the_documented_draw(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # methodology §5 "Significance": flips = default_rng(seed) signs +-1 on the nonzero
    # |d_q|, p = (1 + #{|S*| >= |S|}) / (flips + 1); written here as the words say
    d = [1, 2, -1, 3, 0, 1, -2, 2, 0, -1] * 7
    nonzero = np.abs(np.array([x for x in d if x], dtype=np.int64))
    signs = np.random.default_rng(11).integers(0, 2, size=(500, nonzero.size)) * 2 - 1
    extreme = int(np.count_nonzero(np.abs(signs @ nonzero) >= abs(sum(d))))
    monkeypatch.setattr("grade_kit.standard.significance.EXACT_CELLS", 10)
    assert sign_flip_p(d, seed=11, flips=500)[0] == (1 + extreme) / 501


def test_one_repeat_is_mcnemar_and_more_are_sign_flips() -> None:
    from grade_kit.standard.significance import PairedUnits, units_test

    # per question B - A of 0/1 outcomes at R = 1: -1, 0, +1, -1
    ones = np.ones(4, dtype=np.int64)
    p, how = units_test(PairedUnits(d=np.array([-1, 0, 1, -1]), m=ones, per=1), seed=0)
    assert p == mcnemar_exact(2, 1) == 1.0
    assert how == "exact McNemar on 3 discordant questions (baseline only 2, compared only 1)"
    # R = 2: differences -2, -1, 0: sums +-2 +-1, |S| >= 3 in 2 of 4 sign patterns
    p, how = units_test(PairedUnits(d=np.array([-2, -1, 0]), m=ones[:3], per=2), seed=0)
    assert p == 0.5 and how.startswith("exact sign-flip")
    # clusters: whole clusters flipped, said so
    p, how = units_test(PairedUnits(d=np.array([-2, -1]), m=np.array([2, 1]), per=2), seed=0)
    assert p == 0.5 and how.endswith("(whole clusters flipped)")


def test_holm_by_hand() -> None:
    # ascending 0.01 x 4 = 0.04; 0.03 x 3 = 0.09; 0.04 x 2 = 0.08 -> 0.09 (monotone); 0.5 x 1
    assert holm([0.01, 0.04, 0.03, None, 0.5]) == [0.04, 0.09, 0.09, None, 0.5]
    assert holm([0.5, 0.6]) == [1.0, 1.0] and holm([]) == [] and holm([None]) == [None]


# ---------------------------------------------------------------- ev.comparisons, by hand


def _evaluate(outcomes: dict[str, list[list[bool]]]) -> gk.Evaluation:
    """Setups whose runs of questions q1.. (a list of repeats each) are resolved or not."""
    questions = len(next(iter(outcomes.values())))
    tasks = [{"task_id": f"q{i + 1}", "prompt": "?"} for i in range(questions)]
    runs: list[dict[str, Any]] = []
    grades: list[dict[str, Any]] = []
    for setup, per_question in outcomes.items():
        for i, repeats in enumerate(per_question):
            for r, resolved in enumerate(repeats):
                run_id = f"{setup}-q{i + 1}-{r + 1}"
                runs.append({"run_id": run_id, "setup": setup, "task_id": f"q{i + 1}",
                             "repeat": r + 1, "status": "delivered",
                             "response": {"text": "x"}})
                grades.append({"run_id": run_id, "grader": "g", "material_error": "no",
                               "core_conclusion": "correct" if resolved
                               else "no_gradable_conclusion",
                               "request_fulfilment": "full" if resolved else "not_met"})
    return gk.evaluate(tasks, runs, grades=grades)


def _resolved(ev: gk.Evaluation, a: str, b: str) -> dict[str, Any]:
    rows = ev.comparisons.filter((pl.col("baseline") == a) & (pl.col("compared") == b)
                                 & (pl.col("subset") == "all")
                                 & (pl.col("metric") == "resolved_rate"))
    return rows.row(0, named=True)


def test_resolved_rate_comparisons_of_three_setups_by_hand() -> None:
    """A resolves q1-q6, B only q1, C q1-q5 (R = 1).
    A vs B: A only on 5 questions, B on none: p = 2 / 2^5 = 0.0625.
    A vs C: A only on q6: p = 1. B vs C: C only on 4: p = 2 / 2^4 = 0.125.
    Holm over the three: 0.0625 x 3 = 0.1875, 0.125 x 2 = 0.25, 1 x 1 = 1."""
    yes, no = [True], [False]
    ev = _evaluate({"A": [yes] * 6, "B": [yes] + [no] * 5, "C": [yes] * 5 + [no]})
    ab, ac, bc = _resolved(ev, "A", "B"), _resolved(ev, "A", "C"), _resolved(ev, "B", "C")
    assert (ab["p_value"], ac["p_value"], bc["p_value"]) == (0.0625, 1.0, 0.125)
    assert (ab["p_holm"], ac["p_holm"], bc["p_holm"]) == (0.1875, 1.0, 0.25)
    assert (ab["mean_a"], ab["mean_b"], ab["mean_diff_b_minus_a"]) == (1.0, 1 / 6, -5 / 6)
    assert ab["test"].startswith("exact McNemar on 5 discordant questions")
    assert ab["label"] == "measured" and ab["n_questions"] == 6
    unresolved = ev.comparisons.filter((pl.col("baseline") == "A")
                                       & (pl.col("compared") == "B")
                                       & (pl.col("subset") == "all")
                                       & (pl.col("metric") == "unresolved_rate")).row(
        0, named=True)
    assert unresolved["p_value"] == 0.0625 and unresolved["mean_diff_b_minus_a"] == 5 / 6
    results = ev.results.model_dump(mode="json")
    figure = next(f for c in results["comparisons"] if c["baseline"] == "A"
                  and c["compared"] == "B" and c["subset"] == "all"
                  for f in c["figures"] if f["metric"] == "resolved_rate")
    assert (figure["p_value"], figure["p_holm"]) == (0.0625, 0.1875)


def test_resolved_rate_with_repeats_is_a_sign_flip_test_by_hand() -> None:
    """R = 2: A resolves 2, 2, 1 slots of q1-q3, B 0, 1, 1: differences -2, -1, 0;
    |S| >= 3 for 2 of the 4 sign patterns: p = 0.5; rates 5/6 and 2/6."""
    ev = _evaluate({"A": [[True, True], [True, True], [True, False]],
                    "B": [[False, False], [True, False], [False, True]]})
    ab = _resolved(ev, "A", "B")
    assert ab["p_value"] == 0.5 and ab["p_holm"] == 0.5
    assert ab["test"] == "exact sign-flip permutation on per-question differences"
    assert (ab["mean_a"], ab["mean_b"], ab["mean_diff_b_minus_a"]) == (5 / 6, 2 / 6, -3 / 6)


# ------------------------------------------------- one verdict: the test inverted (§5)


def _brute_p(d: list[int], m: list[int], per: int, delta: object) -> float:
    """The two-sided sign-flip p of H0: the figure is delta, by enumerating every pattern
    of the units' d - per x delta x m (no shortcut: the definition)."""
    import itertools
    from fractions import Fraction

    y = [Fraction(di) - per * Fraction(delta) * mi for di, mi in zip(d, m, strict=True)]  # type: ignore[arg-type]
    observed = abs(sum(y))
    hits = sum(1 for signs in itertools.product((1, -1), repeat=len(y))
               if abs(sum(s * v for s, v in zip(signs, y, strict=True))) >= observed)
    return hits / 2 ** len(y)


@pytest.mark.parametrize(("d", "m", "per", "gamma"), [
    ([-1] * 5 + [0] * 3, [1] * 8, 1, 0.05),
    ([2, 1, 0, 3, -1, 2], [1] * 6, 3, 0.1),
    ([3, -2, 5, 1], [2, 1, 3, 1], 2, 0.25),  # clusters of unequal size
    ([1, 1, -1, 0, 2], [1] * 5, 3, 0.5),
])
def test_the_interval_is_the_set_the_test_does_not_reject(d: list[int], m: list[int],
                                                           per: int, gamma: float) -> None:
    import itertools
    from fractions import Fraction

    from grade_kit.standard.significance import PairedUnits, units_interval

    units = PairedUnits(d=np.array(d), m=np.array(m), per=per)
    low, high = units_interval(units, gamma, seed=0)
    # every candidate endpoint is a subset mean; the acceptance set {p >= gamma} is an
    # interval whose ends are the smallest and largest accepted subset means
    means = sorted({Fraction(sum(d[i] for i in s), per * sum(m[i] for i in s))
                    for r in range(1, len(d) + 1)
                    for s in itertools.combinations(range(len(d)), r)})
    accepted = [x for x in means if _brute_p(d, m, per, x) >= gamma]
    expected_low = float(accepted[0]) if _brute_p(d, m, per, -1) < gamma else -1.0
    expected_high = float(accepted[-1]) if _brute_p(d, m, per, 1) < gamma else 1.0
    assert (low, high) == pytest.approx((expected_low, expected_high), abs=1e-12)
    assert (low <= 0 <= high) == (_brute_p(d, m, per, 0) >= gamma)


def test_the_monte_carlo_interval_agrees_with_its_own_p() -> None:
    from grade_kit.standard.significance import EXACT_CELLS, PairedUnits, units_interval, units_test

    rng = np.random.default_rng(5)
    d = rng.integers(-3, 4, size=5000)  # past the exact convolution: p over the flips too
    units = PairedUnits(d=d, m=np.ones(5000, dtype=np.int64), per=3)
    assert np.count_nonzero(d) * (2 * int(np.abs(d).sum()) + 1) > EXACT_CELLS
    p, how = units_test(units, seed=9)
    assert how.startswith("seeded sign-flip")
    for gamma in (p * 0.999, p * 1.001, 0.05, 0.5):
        low, high = units_interval(units, gamma, seed=9)
        assert (low <= 0 <= high) == (p >= gamma), gamma


def test_the_middle_range_keeps_an_exact_p() -> None:
    """Past the exact inversion but within the exact convolution (07dee30's exact range),
    p is still counted exactly; only the interval comes from the seeded flips."""
    from grade_kit.standard.significance import PairedUnits, units_tests

    rng = np.random.default_rng(3)
    d = rng.integers(-3, 4, size=400)
    units = PairedUnits(d=d, m=np.ones(400, dtype=np.int64), per=3)
    assert not units.exact
    ((p, _, how, inversion),) = units_tests([units], seed=9, up_to=0.05)
    assert (p, how.split(";")[0]) == sign_flip_p(d.tolist(), seed=9)
    assert how.endswith("interval over 10,000 seeded sign flips")
    assert inversion.basis == "over 10,000 seeded sign flips"


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_the_interval_never_contradicts_the_holm_verdict_at_the_boundary(seed: int) -> None:
    """Middle range (exact p, interval over the flips): with Holm's p just below and just
    above 0.05, the interval excludes 0 exactly when the verdict is stated, however close
    the flips' boundary falls to the exact one (docs/methodology.md §5 "One verdict")."""
    from grade_kit.schema import Comparison, Figure
    from grade_kit.standard.compare import verdict_intervals
    from grade_kit.standard.significance import PairedUnits, units_tests

    rng = np.random.default_rng(seed)
    d = rng.integers(-3, 4, size=300) + (rng.random(300) < 0.08)  # a small lead
    units = PairedUnits(d=d, m=np.ones(300, dtype=np.int64), per=3)
    ((p, _, _, inversion),) = units_tests([units], seed=seed, up_to=0.05)
    for p_holm in (0.05 * (1 - 1e-9), 0.05 * (1 + 1e-9), 0.049, 0.051, min(1.0, 3 * p)):
        p_holm = max(p_holm, p)
        figure = Figure(metric="resolved_rate", label="measured", p_value=p, p_holm=p_holm,
                        log10_p=math.log10(p), log10_p_holm=math.log10(p_holm),
                        mean_diff_b_minus_a=units.value, n_questions=300)
        comparison = Comparison(baseline="a", compared="b", subset="all", questions=300,
                                seed=seed, resamples=1, figures=[figure])
        verdict_intervals(comparison, [inversion])
        assert figure.ci95 is not None
        excludes = figure.ci95.low > 0 or figure.ci95.high < 0
        assert excludes == (p_holm < 0.05), (p, p_holm, figure.ci95)


def test_a_p_past_a_doubles_range_keeps_its_size_and_is_never_0() -> None:
    """McNemar with 5,000 discordant questions all one way: p = 2 / 2^5000, log10 p =
    -4999 log10 2 = -1504.8578...; as a float it is the floor 2.2e-308, never 0.0."""
    from grade_kit.standard.significance import P_FLOOR, mcnemar_log10

    assert mcnemar_log10(0, 5000) == pytest.approx(-4999 * math.log10(2), abs=1e-9)
    assert mcnemar_exact(0, 5000) == P_FLOOR > 0
    assert mcnemar_log10(3, 3) == 0.0 and mcnemar_log10(0, 0) == 0.0
    # within a double's range the log is the float's own: 2/1024
    assert mcnemar_log10(0, 10) == pytest.approx(math.log10(2 / 1024), abs=1e-12)


def test_the_sign_flip_tail_is_counted_in_log_space_where_it_underflows() -> None:
    """With differences of +-1 the sign-flip test is McNemar's (S = 2 (#kept) - n): two
    independent computations, the log-space convolution and exact integers, agree far
    past where the halving convolution's doubles underflow (p about 10^-340 and 10^-602)."""
    from grade_kit.standard.significance import P_FLOOR, mcnemar_log10, sign_flip_log10

    for a, b in ((1300, 40), (2000, 0)):
        d = [1] * a + [-1] * b
        log10_p = sign_flip_log10(d, seed=0)
        assert log10_p == pytest.approx(mcnemar_log10(b, a), abs=1e-9)
        assert log10_p < -300 and sign_flip_p(d, seed=0)[0] == P_FLOOR
    # above the floor nothing changes: 2/2^12 exactly, as the float convolution counts it
    assert sign_flip_p([1] * 12, seed=0)[0] == 2 / 4096
    assert sign_flip_log10([1] * 12, seed=0) == math.log10(2 / 4096)


def test_holm_in_log_space_is_holm() -> None:
    """The hand case of :func:`holm` given with its log10: 0.01, 0.04, 0.03, -, 0.5 -> 0.04,
    0.09, 0.09, -, 0.5 in both; and a family of three p = 10^-1000, 10^-999, 0.5 (the first
    two floored as floats) keeps its sizes in log10: 3 x 10^-1000, max(that, 2 x 10^-999),
    0.5, in the order of the exact p, not of the tied floats."""
    from grade_kit.standard.significance import P_FLOOR, holm_adjusted

    ps = [0.01, 0.04, 0.03, None, 0.5]
    floats, logs = holm_adjusted(ps, [None if p is None else math.log10(p) for p in ps])
    assert floats == holm(ps) == [0.04, 0.09, 0.09, None, 0.5]
    assert [None if g is None else 10 ** g for g in logs] == pytest.approx(floats)
    floats, logs = holm_adjusted([P_FLOOR, P_FLOOR, 0.5], [-999.0, -1000.0, math.log10(0.5)])
    assert logs == pytest.approx([math.log10(2) - 999, math.log10(3) - 1000, math.log10(0.5)])
    assert floats == [3 * P_FLOOR, 3 * P_FLOOR, 0.5]  # bounds: at least p, never 0
    assert holm_adjusted([], []) == ([], []) and holm_adjusted([None], [None]) == ([None],
                                                                                 [None])


def test_an_all_against_none_comparison_of_2000_questions_has_its_interval() -> None:
    """R = 1, 2,000 questions, A resolves none and B all: McNemar p = 2/2^2000 (log10 =
    -1999 log10 2), floored as a float; Holm over one pair keeps it (multiplier 1), so the
    interval is at 95%, excludes 0 and holds the difference +1."""
    import polars as pl

    from grade_kit.standard.compare import compare_setups
    from grade_kit.standard.significance import P_FLOOR

    ids = [f"q{i}" for i in range(2000)]
    per_question = pl.DataFrame({
        "setup": ["A"] * 2000 + ["B"] * 2000, "task_id": ids * 2,
        "resolved_slots": [0] * 2000 + [1] * 2000})
    comparison = compare_setups(per_question, "A", "B", ids, 2000, "all", repeats=1)
    (figure,) = [f for f in comparison.figures if f.metric == "resolved_rate"]
    assert figure.p_value == figure.p_holm == P_FLOOR
    assert figure.log10_p == figure.log10_p_holm == pytest.approx(-1999 * math.log10(2))
    assert figure.ci_level == 0.95 and figure.ci95 is not None
    assert 0 < figure.ci95.low <= 1.0 == figure.ci95.high
    assert figure.direction == "B better than A"
