"""docs/methodology.md §3 "Aggregation": task -> track -> pack -> overall, null never 0."""

from __future__ import annotations

from typing import Any

import polars as pl

from tests.conftest import ALL_DIMS, judgement, make_run, make_task, score, task_row


def test_composite_renormalises_over_non_null_dimensions(approx: Any) -> None:
    task = make_task(gold_facts=[{"id": "f", "metric": "m", "value": 1}],
                     gold_insights=[{"id": "i", "text": "alpha"}],
                     weights={**ALL_DIMS, "grounding_accuracy": 0.5, "insight_quality": 0.05})
    runs = [make_run("r1", findings=["alpha"], metrics={"m": 1}),
            make_run("r2", repeat=2, findings=["beta"], metrics={"m": 2})]
    row = task_row(score([task], runs))
    # grounding 0.5, insight 0.5, consistency: fs 0.5 (two clusters of one run), rs null,
    # mv 1/(1+0.5/1.5) = 0.75 -> (0.5*0.5 + 0.2*0.75)/0.7; calibration and judged dims null.
    consistency = (0.25 + 0.15) / 0.7
    assert row["consistency"] == approx(consistency)
    assert row["calibration_limitation_handling"] is None and row["evidence_linkage"] is None
    assert row["composite"] == approx(
        (0.35 * 0.5 + 0.20 * 0.5 + 0.10 * consistency) / (0.35 + 0.20 + 0.10))
    assert row["rubric_score"] == approx(
        (0.5 * 0.5 + 0.05 * 0.5 + 0.10 * consistency) / (0.5 + 0.05 + 0.10))


def test_all_null_dimensions_give_null_composite() -> None:
    task = make_task(gold_insights=[{"id": "i", "text": "alpha"}])
    scores = score([task], [make_run("r1", status="failed", error="boom")])
    row = task_row(scores)
    assert row["insight_quality"] == 0.0  # failed run scores 0 where the task defines it
    scores = score([make_task(weights=ALL_DIMS)], [make_run("r1", findings=["x"])])
    row = task_row(scores)
    assert all(row[d] is None for d in ALL_DIMS)
    assert row["composite"] is None and row["rubric_score"] is None


def test_zero_weight_on_every_computed_dimension_gives_null_rubric() -> None:
    weights = dict.fromkeys(ALL_DIMS, 0.0) | {"evidence_linkage": 1.0}
    task = make_task(gold_insights=[{"id": "i", "text": "alpha"}], weights=weights)
    row = task_row(score([task], [make_run("r1", findings=["alpha"])]))
    assert row["insight_quality"] == 1.0
    assert row["rubric_score"] is None
    assert row["composite"] == 1.0


def test_judged_dimensions_and_failed_runs(approx: Any) -> None:
    task = make_task(gold_insights=[{"id": "i", "text": "alpha"}])
    runs = [make_run("r1", findings=["alpha"]), make_run("r2", repeat=2, findings=["alpha"]),
            make_run("r3", repeat=3, status="timeout")]
    js = [judgement("r1", "evidence_linkage", 0.8), judgement("r3", "evidence_linkage", 0.9)]
    row = task_row(score([task], runs, js))
    # r1 0.8, r2 no judgement (null), r3 no response: 0 -> mean(0.8, 0) = 0.4
    assert row["evidence_linkage"] == approx(0.4)
    assert row["structure_usability"] is None  # never judged: null, not 0


def test_reruns_are_never_scored_in_place_of_the_first_attempt() -> None:
    task = make_task(gold_facts=[{"id": "f", "metric": "m", "value": 1}])
    runs = [make_run("r1", status="failed"),
            make_run("r1b", metrics={"m": 1}, attempt_of="r1")]
    scores = score([task], runs)
    row = task_row(scores)
    assert row["grounding_accuracy"] == 0.0
    assert row["runs"] == 1
    rerun = scores.runs.filter(pl.col("run_id") == "r1b").to_dicts()[0]
    assert rerun["is_primary"] is False and rerun["grounding_accuracy"] == 1.0


def test_aggregation_track_pack_overall(approx: Any) -> None:
    facts = [{"id": "f", "metric": "m", "value": 1}]
    insights = [{"id": "i", "text": "alpha"}]
    t1 = make_task("t1", track=1, pack="p1", gold_facts=facts, gold_insights=insights)
    t2 = make_task("t2", track=1, pack="p2", gold_facts=facts)
    t3 = make_task("t3", track=2, pack="p2", gold_insights=insights)
    plain = make_task("q", weights=None, track=None, pack=None)
    runs = [
        make_run("a", "t1", findings=["alpha"], metrics={"m": 1}),  # g 1, i 1
        make_run("b", "t2", metrics={"m": 0}),  # g 0
        make_run("c", "t3", findings=["beta"]),  # i 0
        make_run("d", "q", findings=["anything"]),
    ]
    scores = score([t1, t2, t3, plain], runs)
    c1 = 1.0  # t1: (0.35*1 + 0.2*1)/0.55
    c2 = 0.0
    c3 = 0.0
    assert set(scores.tasks["task_id"]) == {"t1", "t2", "t3"}  # plain task left out
    tracks = {r["track"]: r for r in scores.tracks.to_dicts()}
    assert tracks[1]["composite"] == approx((c1 + c2) / 2)
    assert tracks[1]["grounding_accuracy"] == approx(0.5)
    assert tracks[1]["insight_quality"] == approx(1.0)  # t2 has none: mean over t1 only
    assert tracks[1]["tasks"] == 2
    packs = {r["pack"]: r for r in scores.packs.to_dicts()}
    assert packs["p2"]["composite"] == approx((c2 + c3) / 2)
    overall = scores.overall.to_dicts()[0]
    assert overall["grounding_accuracy"] == approx(0.5)
    assert overall["insight_quality"] == approx(0.5)
    # overall composite = project weights on overall dimensions, not the mean of composites
    assert overall["composite"] == approx((0.35 * 0.5 + 0.2 * 0.5) / 0.55)
    assert overall["tasks"] == 3


def test_setups_are_scored_apart(approx: Any) -> None:
    task = make_task(gold_facts=[{"id": "f", "metric": "m", "value": 1}])
    scores = score([task], [make_run("a1", setup="A", metrics={"m": 1}),
                            make_run("b1", setup="B", metrics={"m": 2})])
    assert task_row(scores, setup="A")["grounding_accuracy"] == 1.0
    assert task_row(scores, setup="B")["grounding_accuracy"] == 0.0
