"""The review queue: every material error, pending item, partial resolution and borderline
call, plus a seeded spot check of resolved runs, exported as a blind sheet."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import grade_kit as gk
from grade_kit.cli import main
from grade_kit.review import review_queue, write_review_sheet
from tests.conftest import make_run, make_task

TASK = make_task(gold_facts=[{"id": "f", "metric": "m", "value": 1}],
                 gold_insights=[{"id": "i", "text": "alpha"}],
                 forbidden_claims=[{"id": "x", "text": "forever"}])


def grade(run_id: str, core: str = "correct", fulfil: str = "full",
          err: str = "no") -> dict[str, Any]:
    return {"run_id": run_id, "core_conclusion": core, "request_fulfilment": fulfil,
            "material_error": err, "grader": "human"}


def test_the_queue_holds_what_the_standard_says_to_review() -> None:
    good = {"findings": ["alpha"], "metrics": {"m": 1}}
    runs = [make_run("err", repeat=1, **good), make_run("pend", repeat=2, **good),
            make_run("part", repeat=3, **good), make_run("border", repeat=4,
                                                         findings=["beta"], metrics={"m": 1}),
            *[make_run(f"ok{i}", repeat=5 + i, **good) for i in range(10)],
            make_run("down", repeat=20, status="failed")]
    grades = [grade("err", core="material_error", err="yes"),
              grade("part", fulfil="partial"), grade("border"),
              *[grade(f"ok{i}") for i in range(10)]]
    ev = gk.evaluate([TASK], runs, grades=grades)
    queue = review_queue(ev, spot_check=0.1, seed=3)
    reasons = dict(zip(queue["run_id"], queue["reason"], strict=True))
    assert reasons["err"] == "material error"
    assert reasons["pend"] == "pending verification"  # no grade record
    assert reasons["part"] == "partial resolution"
    assert reasons["border"] == "borderline"  # resolved, but the insight was missed
    spot = [r for r, why in reasons.items() if why == "spot check"]
    assert len(spot) == 1 and spot[0].startswith("ok")  # ceil(0.1 x 10)
    assert "down" not in reasons  # not delivered: unresolved by rule
    assert review_queue(ev, spot_check=0.1, seed=3).equals(queue)  # seeded
    assert not [r for r in review_queue(ev, spot_check=0)["reason"] if r == "spot check"]


def test_the_review_sheet_round_trips_through_import_grades(tmp_path: Path) -> None:
    runs = [make_run("a", findings=["alpha"], metrics={"m": 1}),
            make_run("b", repeat=2, findings=["beta"], metrics={"m": 2})]
    ev = gk.evaluate([TASK], runs, grader="rules")
    queue, key = write_review_sheet(ev, tmp_path / "review.csv", seed=1)
    assert set(queue["run_id"]) == {"a", "b"}  # b: material error (m outside tolerance)
    assert json.loads(key.read_text())["sheet"]
    assert main(["import-grades", str(tmp_path / "review.csv"), "--out",
                 str(tmp_path / "g.jsonl")]) == 0
