"""docs/methodology.md §3 "Consistency": clustering, finding and ranking stability, metric
variance."""

from __future__ import annotations

import math
import random
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import kendalltau

from benchmarks.plain import (
    clusters_by_definition,
    consistency_by_definition,
    ranking_by_definition,
)
from grade_kit.scorers import (
    cluster_findings,
    finding_stability,
    kendall_tau_b,
    metric_variance,
    ranking_stability,
)
from grade_kit.scorers.consistency import _finding_clusters
from grade_kit.text import parse_number, tokenize
from tests.conftest import make_run, make_task, score, task_row


def sets(*texts: str) -> list[frozenset[str]]:
    return [frozenset(tokenize(t)) for t in texts]


def test_clusters_join_the_first_cluster_by_its_first_finding() -> None:
    runs = [sets("a b c d", "x y"), sets("a b c e", "x y z w"), sets("a b e f")]
    # "a b c e" vs head "a b c d": 3/5 >= 0.5 -> cluster 0.
    # "x y z w" vs head "x y": 2/4 = 0.5, inclusive -> cluster 1.
    # "a b e f" vs head "a b c d": 2/6 < 0.5 (never compared with "a b c e") -> new cluster 2.
    assert cluster_findings(runs) == [[0, 1], [0, 1], [2]]


def test_finding_stability_hand_computed(approx: Any) -> None:
    assert finding_stability([[0, 1], [0, 1], [2]]) == approx((2 / 3 + 2 / 3 + 1 / 3) / 3)
    assert finding_stability([[0], []]) == approx(0.5)  # an empty run still counts
    assert finding_stability([[0, 1]]) is None  # one run
    assert finding_stability([[], []]) is None  # no findings at all


def test_ranking_stability_hand_computed(approx: Any) -> None:
    # Runs 1 and 2 share clusters 0,1,2 in the same order: tau 1 -> 1.
    # Run 3 has 2,1,0 reversed: tau -1 -> 0 with runs 1 and 2.
    assert ranking_stability([[0, 1, 2], [0, 1, 2], [2, 1, 0]]) == approx((1 + 0 + 0) / 3)
    # Positions use each run's first finding in a cluster: run 2 is [0, 1] by first position.
    assert ranking_stability([[0, 1], [0, 0, 1]]) == approx(1.0)
    # A pair sharing one cluster is skipped; none qualify -> None.
    assert ranking_stability([[0, 1], [0, 2]]) is None
    # tau 1/3 for three shared clusters with one swap: (1/3 + 1) / 2.
    assert ranking_stability([[0, 1, 2], [1, 0, 2]]) == approx((1 / 3 + 1) / 2)


def test_metric_variance_hand_computed(approx: Any) -> None:
    # mean 0.187, pop std 0.003 -> 1 / (1 + 0.003/0.187)
    assert metric_variance({"m": [0.184, 0.19]}) == approx(1 / (1 + 0.003 / 0.187))
    assert metric_variance({"m": [1.0]}) is None  # numeric in only one run
    assert metric_variance({}) is None


def test_metric_variance_zero_mean(approx: Any) -> None:
    assert metric_variance({"m": [0.0, 0.0, 0.0]}) == 1.0  # mean 0, std 0: CV 0
    assert metric_variance({"m": [1.0, -1.0]}) == 0.0  # mean 0, std > 0: scores 0
    assert metric_variance({"a": [0.0, 0.0], "b": [2.0, -2.0], "c": [1.0, 3.0]}) == approx(
        (1 + 0 + 1 / (1 + 1 / 2)) / 3)


def test_metric_variance_identical_values_is_exactly_one() -> None:
    assert metric_variance({"m": [0.1, 0.1, 0.1]}) == 1.0


@pytest.mark.parametrize(
    ("x", "y"),
    [
        ([0, 1, 2], [0, 1, 2]),
        ([0, 1, 2], [2, 1, 0]),
        ([0, 1, 2, 3], [1, 0, 3, 2]),
        ([1, 1, 2, 3], [1, 2, 2, 3]),  # ties on both sides
        ([1, 2], [2, 1]),
        ([3, 1, 4, 1, 5, 9, 2, 6], [2, 7, 1, 8, 2, 8, 1, 8]),
    ],
)
def test_kendall_tau_b_matches_scipy(x: list[int], y: list[int]) -> None:
    expected = kendalltau(x, y, variant="b").statistic
    assert kendall_tau_b(x, y) == pytest.approx(expected, abs=1e-12)


def test_kendall_tau_b_undefined() -> None:
    assert kendall_tau_b([1, 1], [1, 2]) is None
    assert kendall_tau_b([1], [1]) is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=2, max_size=12))
def test_kendall_tau_b_matches_scipy_property(pairs: list[tuple[int, int]]) -> None:
    x, y = [p[0] for p in pairs], [p[1] for p in pairs]
    expected = kendalltau(x, y, variant="b").statistic
    got = kendall_tau_b(x, y)
    if math.isnan(expected):
        assert got is None
    else:
        assert got == pytest.approx(expected, abs=1e-12)


def test_task_consistency_weights_and_failed_runs(approx: Any) -> None:
    task = make_task(gold_insights=[{"id": "i", "text": "alpha"}])
    runs = [
        make_run("r1", findings=["alpha beta", "gamma delta", "eps"], metrics={"m": 1.0}),
        make_run("r2", repeat=2, findings=["alpha beta", "gamma delta", "zeta"],
                 metrics={"m": 3.0}),
        make_run("r3", repeat=3, status="failed"),
    ]
    scores = score([task], runs)
    c = scores.consistency.to_dicts()[0]
    # clusters: {alpha beta}: r1,r2; {gamma delta}: r1,r2; {eps}: r1; {zeta}: r2; runs = 3
    fs = (2 / 3 + 2 / 3 + 1 / 3 + 1 / 3) / 4
    rs = 1.0  # r1-r2 share two clusters in the same order; pairs with r3 skipped
    mv = 1 / (1 + 1 / 2)  # mean 2, std 1
    assert c["finding_stability"] == approx(fs)
    assert c["ranking_stability"] == approx(rs)
    assert c["metric_variance"] == approx(mv)
    assert c["consistency"] == approx(0.5 * fs + 0.3 * rs + 0.2 * mv)
    assert task_row(scores)["consistency"] == approx(0.5 * fs + 0.3 * rs + 0.2 * mv)


def test_metric_variance_per_key_when_multisets_repeat_across_groups(approx: Any) -> None:
    # Setups A and B report the same multiset {1, 2, 4} in other orders (one score for
    # both); C reports {1.5, 2.5}, D {1.25, 2.25} (close values, not the same multiset);
    # E reports one value twice, and 0.0 with -0.0 (no spread: 1 each).
    per_setup = {"A": ([1, 2, 4], None), "B": ([4, 1, 2], None), "C": ([1.5, 2.5], None),
                 "D": ([1.25, 2.25], None), "E": ([7, 7], [0.0, -0.0])}
    runs = [make_run(f"{setup}{i}", repeat=i + 1, setup=setup,
                     metrics={"m": m, **({} if n is None else {"n": n[i]})})
            for setup, (ms, ns) in per_setup.items() for i, m in enumerate(ms)
            for n in [ns]]
    got = {c["setup"]: c["metric_variance"]
           for c in score([make_task()], runs).consistency.to_dicts()}
    one_two_four = 1 / (1 + math.sqrt(14 / 9) / (7 / 3))  # mean 7/3, variance 14/9
    assert got["A"] == approx(one_two_four) and got["B"] == got["A"]
    assert got["C"] == approx(1 / (1 + 0.5 / 2))  # mean 2, std 0.5
    assert got["D"] == approx(1 / (1 + 0.5 / 1.75))  # mean 1.75, std 0.5
    assert got["E"] == 1.0
    for setup, (ms, ns) in per_setup.items():  # bit for bit the rule's function
        keys = {"m": [float(m) for m in ms], **({} if ns is None else {"n": ns})}
        assert got[setup] == metric_variance(keys)


def test_consistency_renormalises_and_is_null_with_one_run(approx: Any) -> None:
    task = make_task(gold_insights=[{"id": "i", "text": "alpha"}])
    scores = score([task], [make_run("r1", findings=["alpha"]),
                            make_run("r2", repeat=2, findings=["beta"])])
    # fs = (1/2 + 1/2)/2 = 0.5; rs null; mv null -> consistency = fs
    assert task_row(scores)["consistency"] == approx(0.5)
    scores = score([task], [make_run("r1", findings=["alpha"], metrics={"m": 1})])
    assert task_row(scores)["consistency"] is None
    assert scores.consistency.to_dicts()[0]["finding_stability"] is None


def test_top3_skips_empty_findings_and_reruns_never_count(approx: Any) -> None:
    task = make_task(gold_insights=[{"id": "i", "text": "alpha"}])
    runs = [
        make_run("r1", findings=["", "a1", "b1", "c1", "d1"]),
        make_run("r2", repeat=2, findings=["a1", "b1", "c1"]),
        make_run("r2b", repeat=2, findings=["zz"], attempt_of="r2"),
    ]
    scores = score([task], runs)
    c = scores.consistency.to_dicts()[0]
    assert c["runs"] == 2
    assert c["finding_stability"] == approx(1.0)
    assert c["ranking_stability"] == approx(1.0)


finding_text = st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "2.6", "x"]),
                        min_size=0, max_size=4).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(findings=st.lists(finding_text, max_size=5),
       metrics=st.dictionaries(st.sampled_from(["a", "b"]),
                               st.floats(-1e6, 1e6, allow_nan=False) | st.text(max_size=3)),
       repeats=st.integers(2, 4))
def test_identical_repeats_score_consistency_one(findings: list[str], metrics: dict[str, Any],
                                                 repeats: int) -> None:
    task = make_task(gold_insights=[{"id": "i", "text": "alpha"}])
    runs = [make_run(f"r{i}", repeat=i, findings=findings, metrics=metrics)
            for i in range(1, repeats + 1)]
    c = score([task], runs).consistency.to_dicts()[0]
    for key in ("finding_stability", "ranking_stability", "metric_variance", "consistency"):
        assert c[key] in (None, 1.0), (key, c)
    has_findings = any(tokenize(f) for f in findings)
    has_numbers = any(parse_number(v) is not None for v in metrics.values())
    assert (c["consistency"] == 1.0) == (has_findings or has_numbers)


def test_metric_variance_extreme_magnitudes(approx: Any) -> None:
    # found by hypothesis: squares of 1e308 overflow; CV is scale-free
    assert metric_variance({"m": [1.7e308, 0.85e308]}) == approx(1 / (1 + 1 / 3))
    assert metric_variance({"m": [1e307, 3e307]}) == approx(1 / (1 + 1 / 2))
    assert metric_variance({"m": [1e-310, 3e-310]}) == approx(1 / (1 + 1 / 2))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.integers(0, 4), max_size=3), max_size=12))
def test_ranking_stability_equals_the_pairwise_mean_exactly(runs: list[list[int]]) -> None:
    assert ranking_stability(runs) == ranking_by_definition(runs)


def test_ranking_stability_of_many_identical_repeats_is_fast_and_exact() -> None:
    runs = [[0, 1, 2]] * 5_000 + [[1, 0, 2]] * 3
    # pairs: C(5000, 2) identical (tau 1 -> 1), C(3, 2) identical, 5000 x 3 with tau 1/3 -> 2/3
    same = 5_000 * 4_999 // 2 + 3
    mixed = 5_000 * 3
    from fractions import Fraction

    expected = float((Fraction(same) + Fraction(2 / 3) * mixed) / (same + mixed))
    assert ranking_stability(runs) == expected


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(st.frozensets(st.sampled_from("abcdefgh"), max_size=8), max_size=3),
                max_size=6))
def test_clustering_skips_only_pairs_that_cannot_match(
        runs: list[list[frozenset[str]]]) -> None:
    assert cluster_findings(runs) == clusters_by_definition(runs)


def _stacked_clusters(groups: list[list[list[frozenset[int]]]]) -> list[list[list[int]]]:
    """The clusters of :func:`_finding_clusters`, all groups in one frame, back per run."""
    rows = [(g, slot, sorted(tokens)) for g, runs in enumerate(groups)
            for slot, findings in enumerate(runs) for tokens in findings]
    top = pl.DataFrame(rows, schema={"group": pl.UInt32, "slot": pl.Int64,
                                     "tokens": pl.List(pl.UInt32)}, orient="row")
    clusters = iter(_finding_clusters(top))
    return [[[next(clusters) for _ in findings] for findings in runs] for runs in groups]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.lists(st.frozensets(st.integers(0, 300), max_size=40), max_size=3),
                         max_size=8), max_size=8))
def test_all_groups_at_once_cluster_as_the_rule(
        groups: list[list[list[frozenset[int]]]]) -> None:
    assert _stacked_clusters(groups) == [clusters_by_definition(runs) for runs in groups]


def test_one_large_group_clusters_as_the_rule() -> None:
    rnd = random.Random(5)
    vocabulary = list(range(2_000))
    runs = [[frozenset(rnd.sample(vocabulary[:60 + 40 * (i % 3)], rnd.randint(1, 25)))
             for _ in range(3)] for i in range(200)]  # 600 findings, up to 3 words a mask
    got = _stacked_clusters([runs])
    assert got == [clusters_by_definition(runs)]
    assert len({c for run in got[0] for c in run}) > 10  # many clusters, many joins
    assert sum(len(run) for run in got[0]) - len({c for run in got[0] for c in run}) > 10


_WORDS = ("rate", "rose", "fell", "october", "tutor", "t-07", "18.4", "small", "ell", "group")
_FINDINGS = st.lists(st.lists(st.sampled_from(_WORDS), max_size=6).map(" ".join), max_size=5)
_METRIC_VALUES = st.one_of(st.sampled_from([0, 0.0, -0.0, 1, 2.5, "3.5", "12%", "n/a", 1e300,
                                            -1e300, 1e-300, True, None]),
                           st.floats(-1e6, 1e6), st.integers(-10**6, 10**6))
_RUN = st.tuples(st.sampled_from(["A", "B"]), st.sampled_from(["t1", "t2", "t3"]),
                 st.integers(1, 4), _FINDINGS,
                 st.dictionaries(st.sampled_from(["m", "n", "k"]), _METRIC_VALUES, max_size=3),
                 st.sampled_from(["delivered", "delivered", "delivered", "failed"]))


def _plain_consistency(runs: list[Any]) -> dict[tuple[str, str], tuple[Any, ...]]:
    """The rule read one (setup, task) at a time over the records, as worded
    (``benchmarks.plain``): the plain form the frame path must equal bit for bit."""
    groups: dict[tuple[str, str], list[Any]] = {}
    for run in sorted((r for r in runs if r.attempt_of is None),
                      key=lambda r: (r.setup, r.task_id, r.repeat)):
        groups.setdefault((run.setup, run.task_id), []).append(run)
    out = {}
    for key, members in groups.items():
        parts = consistency_by_definition(members)
        out[key] = (len(members), parts["finding_stability"], parts["ranking_stability"],
                    parts["metric_variance"], parts["consistency"])
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(_RUN, max_size=30))
def test_consistency_frame_equals_the_plain_rule(rows: list[tuple[Any, ...]]) -> None:
    runs, slots = [], set()
    for i, (setup, task_id, repeat, findings, metrics, status) in enumerate(rows):
        slot = (setup, task_id, repeat)
        runs.append(make_run(f"r{i}", task_id, repeat, setup, findings=findings,
                             metrics=metrics, status=status,
                             attempt_of=next((r.run_id for r in runs if slot == (
                                 r.setup, r.task_id, r.repeat)), None) if slot in slots
                             else None))
        slots.add(slot)
    tasks = [make_task(t) for t in ("t1", "t2", "t3")]
    got = {(c["setup"], c["task_id"]): (c["runs"], c["finding_stability"],
                                        c["ranking_stability"], c["metric_variance"],
                                        c["consistency"])
           for c in score(tasks, runs).consistency.to_dicts()}
    assert got == _plain_consistency(runs)


def test_findings_without_tokens_cluster_as_the_rule() -> None:
    # An empty token set joins an empty head (3 * 0 >= 0 + 0) and nothing else; a group
    # where no finding has a token leaves the token table empty.
    groups = [[[frozenset()], [frozenset()]], [[frozenset({5})], [frozenset(), frozenset()]]]
    assert _stacked_clusters(groups) == [[[0], [0]], [[0], [1, 1]]]
    assert _stacked_clusters(groups[:1]) == [[[0], [0]]]


def test_metric_variance_squares_are_correctly_rounded() -> None:
    # Population std over d * d (each square correctly rounded); Python's d ** 2 goes through
    # libm's pow, one unit in the last place off here, and gives 0.6899680231387444.
    values = [0.4183, 0.4676, 0.1247]
    mean = math.fsum(values) / 3
    std = math.sqrt(math.fsum((v - mean) * (v - mean) for v in values) / 3)
    assert metric_variance({"m": values}) == 1 / (1 + std / abs(mean)) == 0.6899680231387443




def test_cluster_findings_takes_any_iterable_of_tokens_and_counts_a_repeat_once() -> None:
    # {a, b} vs {a, b, c}: |∩| = 2, 3 * 2 >= 2 + 3, so the second joins the first cluster;
    # {c, d, e, f, g} vs {a, b}: sizes 5 and 2 (5 > 2 * 2), a new cluster; an empty finding
    # opens its own cluster (0 >= 0 with no head of size 0 before it), and a later empty one
    # joins it
    runs = [[["a", "a", "b"], ("a", "b", "c")], [iter("cdefg"), [], set()]]
    assert cluster_findings(runs) == [[0, 0], [1, 2, 2]]
    assert cluster_findings([[frozenset("ab"), frozenset("abc")]]) == [[0, 0]]
