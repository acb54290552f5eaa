"""Question-clustered rate intervals (docs/methodology.md §4 "Rates", "Clusters"):
hand-computed cases, the R = 1 identity with today's Wilson over N, and the edges (p = 0,
p = 1, no variance, no planned question)."""

from __future__ import annotations

import math

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grade_kit.schema import GRADE_STATES
from grade_kit.standard import cluster_of_tasks, clustered_mean_ci, clustered_rates
from grade_kit.standard.stats import WILSON_Z95, wilson_interval

Z = WILSON_Z95


def _counts(resolved: list[int], repeats: int, setup: str = "a") -> pl.DataFrame:
    """One row per question: its resolved slots, the rest unresolved."""
    rows = [{"setup": setup, "cluster": f"q{i}", "slots": repeats,
             **{g: 0 for g in GRADE_STATES}} for i in range(len(resolved))]
    for row, k in zip(rows, resolved, strict=True):
        row["resolved"] = k
        row["unresolved"] = repeats - k
    return pl.DataFrame(rows)


def test_hand_computed_case() -> None:
    # Q = 3, R = 2, resolved 2, 0, 1: N = 6, p = 1/2, SE² = (1 + 1 + 0) / 36 = 1/18,
    # binomial p(1-p)/N = 1/24, design effect 4/3, icc 1/3, n_effective 0.25 / (1/18) = 4.5
    row = clustered_rates(_counts([2, 0, 1], 2), ["a"]).row(0, named=True)
    assert row["resolved_design_effect"] == pytest.approx(4 / 3, abs=1e-15)
    assert row["resolved_icc"] == pytest.approx(1 / 3, abs=1e-15)
    assert row["resolved_n_effective"] == 4.5
    n = 4.5
    half = Z * math.sqrt(0.25 / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    assert row["resolved_ci_low"] == pytest.approx(0.5 - half, abs=1e-15)
    assert row["resolved_ci_high"] == pytest.approx(0.5 + half, abs=1e-15)
    # wider than Wilson over N = 6, which treats the repeats as independent
    naive = wilson_interval(3, 6)
    assert naive is not None and row["resolved_ci_low"] < naive.low


def test_p_zero_and_one_use_the_clusters() -> None:
    # every slot unresolved: p = 0, n_effective = Q = 4, Wilson's upper bound z²/(n + z²)
    row = clustered_rates(_counts([0, 0, 0, 0], 3), ["a"]).row(0, named=True)
    assert row["resolved_n_effective"] == 4.0
    assert row["resolved_design_effect"] is None and row["resolved_icc"] is None
    assert row["resolved_ci_low"] == 0.0
    assert row["resolved_ci_high"] == pytest.approx(Z * Z / (4 + Z * Z), abs=1e-15)
    assert row["unresolved_ci_high"] == 1.0 and row["unresolved_n_effective"] == 4.0


def test_no_between_question_variance_keeps_n() -> None:
    # every question resolved in exactly 1 of 2 slots: SE² = 0, n_effective = N = 8
    row = clustered_rates(_counts([1, 1, 1, 1], 2), ["a"]).row(0, named=True)
    assert row["resolved_design_effect"] == 0.0
    assert row["resolved_icc"] == -1.0
    assert row["resolved_n_effective"] == 8.0


def test_a_setup_without_a_planned_question_is_null() -> None:
    out = clustered_rates(_counts([1], 1), ["a", "b"])
    assert out.row(1, named=True)["resolved_ci_low"] is None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 1), min_size=1, max_size=40))
def test_r1_is_wilson_over_n_exactly(outcomes: list[int]) -> None:
    row = clustered_rates(_counts(outcomes, 1), ["a"]).row(0, named=True)
    k, n = sum(outcomes), len(outcomes)
    expected = wilson_interval(k, n)
    assert expected is not None
    assert (row["resolved_ci_low"], row["resolved_ci_high"]) == (expected.low, expected.high)
    if 0 < k < n:
        assert row["resolved_design_effect"] == 1.0
        assert row["resolved_n_effective"] == float(n)
    assert row["resolved_icc"] is None


def test_clustered_mean_by_hand() -> None:
    # values 1, 3 in cluster x and 5 in cluster y: mean 3; T_x = -2 + 0 = -2, T_y = 2;
    # SE² = (4 + 4) / 9, interval 3 ± z √8 / 3
    frame = pl.DataFrame({"setup": ["a"] * 3, "cluster": ["x", "x", "y"], "v": [1.0, 3.0, 5.0]})
    row = clustered_mean_ci(frame, ["setup"], "v").row(0, named=True)
    assert row["v_se"] == pytest.approx(math.sqrt(8) / 3, abs=1e-15)
    assert row["v_ci_low"] == pytest.approx(3 - Z * math.sqrt(8) / 3, abs=1e-14)
    single = clustered_mean_ci(frame.with_columns(cluster=pl.lit("x")), ["setup"], "v")
    assert single.row(0, named=True)["v_se"] is None


def test_cluster_keys() -> None:
    tasks = pl.DataFrame({"task_id": ["t1", "t2", "t3"], "track": [1, 1, None],
                          "pack": ["p", "q", None]})
    assert cluster_of_tasks(tasks, "track").get_column("cluster").to_list() == [
        "track:p/1", "track:q/1", "task:t3"]
    assert cluster_of_tasks(tasks, "pack").get_column("cluster").to_list() == [
        "pack:p", "pack:q", "task:t3"]
    with pytest.raises(ValueError, match="cluster must be one of"):
        cluster_of_tasks(tasks, "setup")  # type: ignore[arg-type]


def test_reliability_by_hand_and_pass1_is_the_resolved_rate() -> None:
    from grade_kit.standard.reliability import flaky_questions, reliability_frame

    states = pl.DataFrame({"setup": ["a"] * 3, "task_id": ["q1", "q2", "q3"],
                           "resolved": [3, 1, 0]})
    frame = reliability_frame(states, 3, "all")
    by_k = {row["k"]: row for row in frame.iter_rows(named=True)}
    assert by_k[2]["pass_hat_k"] == 1 / 3 and by_k[2]["pass_at_k"] == 5 / 9
    assert by_k[3]["pass_hat_k"] == 1 / 3 and by_k[3]["pass_at_k"] == 2 / 3
    # pass^1 and its interval are the resolved rate's, to the last bit
    rate = clustered_rates(_counts([3, 1, 0], 3), ["a"]).row(0, named=True)
    assert by_k[1]["pass_hat_k"] == 4 / 9
    assert (by_k[1]["pass_hat_k_low"], by_k[1]["pass_hat_k_high"]) == (
        rate["resolved_ci_low"], rate["resolved_ci_high"])
    assert flaky_questions(states, 3).select("task_id", "share").rows() == [("q2", 1 / 3)]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=25))
def test_pass1_interval_equals_the_rates(resolved: list[int]) -> None:
    from grade_kit.standard.reliability import reliability_frame

    states = pl.DataFrame({"setup": ["a"] * len(resolved),
                           "task_id": [f"q{i:02d}" for i in range(len(resolved))],
                           "resolved": resolved})
    one = reliability_frame(states, 4, "all").row(0, named=True)
    rate = clustered_rates(_counts(resolved, 4), ["a"]).row(0, named=True)
    assert (one["pass_hat_k_low"], one["pass_hat_k_high"]) == (rate["resolved_ci_low"],
                                                              rate["resolved_ci_high"])


def test_questions_against_repeats_by_hand() -> None:
    from grade_kit.standard import questions_and_repeats

    grades = pl.DataFrame({"setup": ["a", "b"], "subset": ["all", "all"],
                           "resolved_rate": [0.5, 1.0], "resolved_icc": [0.5, None]})
    plan = questions_and_repeats(grades, half_width=0.1, repeats=(1, 2))
    rows = {(r["setup"], r["repeats"]): r for r in plan.iter_rows(named=True)}
    # z² = 3.8415: R = 1, 0.25 / 0.01 x z² = 96.04 -> 97; R = 2, 0.25 x 1.5 / 2 -> 72.03 -> 73
    assert (rows[("a", 1)]["questions"], rows[("a", 1)]["runs"]) == (97, 97)
    assert (rows[("a", 2)]["questions"], rows[("a", 2)]["runs"]) == (73, 146)
    assert rows[("a", 2)]["design_effect"] == 1.5
    assert rows[("b", 1)]["questions"] is None  # a rate of 1: no variance observed
    assert rows[("b", 1)]["verdict"] == "rate 1: no variance observed"
    with pytest.raises(ValueError, match="positive"):
        questions_and_repeats(grades, half_width=0.0)
    with pytest.raises(ValueError, match="at least 1"):
        questions_and_repeats(grades, repeats=(0, 2))
    # a half-width too small for any study: no count, nothing overflows
    tiny = questions_and_repeats(grades, half_width=1e-20, repeats=(1,))
    assert tiny.get_column("questions").to_list() == [None, None]


def test_reliability_beyond_20_repeats_is_k_1_and_r() -> None:
    from grade_kit.standard.compare import pass_hat_ks
    from grade_kit.standard.reliability import reliability_frame

    states = pl.DataFrame({"setup": ["a"] * 2, "task_id": ["q1", "q2"], "resolved": [25, 3]})
    frame = reliability_frame(states, 25, "all")
    assert frame.get_column("k").to_list() == [1, 25]
    # pass^25 = stable resolution (1 of 2), pass@25 = resolved at all (2 of 2)
    assert frame.row(1, named=True)["pass_hat_k"] == 0.5
    assert frame.row(1, named=True)["pass_at_k"] == 1.0
    assert pass_hat_ks(25) == [] and pass_hat_ks(3) == [2, 3]


def test_edge_units_give_an_interval_that_agrees_with_the_test() -> None:
    import numpy as np

    from grade_kit.standard.significance import PairedUnits, units_interval, units_test

    one = PairedUnits(d=np.array([2]), m=np.array([1]), per=3)  # one question: p = 1
    assert units_test(one, seed=0)[0] == 1.0
    assert units_interval(one, 0.05, seed=0) == (-1.0, 1.0)
    flat = PairedUnits(d=np.zeros(5, dtype=np.int64), m=np.ones(5, dtype=np.int64), per=2)
    assert units_test(flat, seed=0)[0] == 1.0
    # any other shift puts every unit on one side: p = 2 / 2^5 = 0.0625, not below 0.05
    assert units_interval(flat, 0.05, seed=0) == (-1.0, 1.0)
    assert units_interval(flat, 0.1, seed=0) == (0.0, 0.0)


def test_reliability_at_a_million_repeats_is_immediate() -> None:
    """A hostile plan (R = 1,000,000, the contract's bound) costs no million binomials per
    setup: k = 1 and R only, each from a closed form."""
    from grade_kit.standard.reliability import reliability_frame

    states = pl.DataFrame({"setup": [f"s{i}" for i in range(50)], "task_id": ["q"] * 50,
                           "resolved": [i * 20_000 for i in range(50)]})
    frame = reliability_frame(states, 1_000_000, "all")
    assert frame.height == 100
    assert frame.filter(pl.col("k") == 1_000_000).get_column("pass_hat_k").sum() == 0.0
    assert frame.filter(pl.col("k") == 1).row(1, named=True)["pass_hat_k"] == 0.02


def test_one_question_is_one_independent_unit() -> None:
    """A single cluster has no spread between clusters: CR0's SE² is 0 there, which would
    claim all N slots independent (tau2's one task x 4 trials showed [0.301, 0.954]). Its
    effective size is the one cluster: Wilson's interval of 3/4 over n = 1."""
    from grade_kit.standard.reliability import reliability_frame
    from grade_kit.standard.stats import wilson_bounds

    row = clustered_rates(_counts([3], 4), ["a"]).row(0, named=True)
    assert (row["resolved_design_effect"], row["resolved_icc"]) == (None, None)
    assert row["resolved_n_effective"] == 1.0
    assert (row["resolved_ci_low"], row["resolved_ci_high"]) == wilson_bounds(0.75, 1.0)
    one = reliability_frame(pl.DataFrame({"setup": ["a"], "task_id": ["q"], "resolved": [3]}),
                            4, "all").row(0, named=True)
    assert (one["pass_hat_k_low"], one["pass_hat_k_high"]) == wilson_bounds(0.75, 1.0)
