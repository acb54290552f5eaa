"""Each failure mode of the simulated setups hurts the dimension it should (one at a time)."""

from __future__ import annotations

from typing import Any

import pytest

from grade_kit.demo.setups import FAILURE_MODES, SetupProfile, answer_task
from grade_kit.frames import EvalData
from grade_kit.judges.rules import rule_judgements
from grade_kit.reading.task_files import load_tasks
from grade_kit.schema import Run, Task
from grade_kit.scorers import grade_scores
from tests.paths import ROOT

PACKS = ROOT / "fixtures" / "packs"
TASKS = {t.task_id: t for t in load_tasks(ROOT / "fixtures" / "tasks").records}
COACH = "northside-t3-coach-tutor"  # strict evidence, ids, rates, limitations, recommendations


def dims(task: Task, profile: SetupProfile, repeats: int = 3) -> dict[str, Any]:
    runs = []
    for repeat in range(1, repeats + 1):
        response = answer_task(task, PACKS, profile, repeat)
        response.pop("_modes")
        runs.append(Run.model_validate({
            "run_id": f"r{repeat}", "setup": profile.name, "task_id": task.task_id,
            "repeat": repeat, "status": "delivered", "response": response}))
    data = EvalData.from_records([task], runs, rule_judgements([task], runs))
    return dict(grade_scores(data).tasks.to_dicts()[0])


def only(mode: str) -> SetupProfile:
    return SetupProfile("probe", {mode: 1.0}, latency_s=1.0, spread=0.0)


CLEAN = SetupProfile("probe", {}, latency_s=1.0, spread=0.0)


def test_clean_answers_score_full_marks() -> None:
    for task_id in (COACH, "northside-t1-oct-cancellations", "riverbend-t4-iep-growth",
                    "northside-t5-dosage-causal"):
        d = dims(TASKS[task_id], CLEAN)
        for key in ("grounding_accuracy", "insight_quality", "calibration_limitation_handling",
                    "consistency", "evidence_linkage", "structure_usability"):
            assert d[key] == 1.0, (task_id, key, d[key])


@pytest.mark.parametrize(
    ("mode", "hurt"),
    [
        ("misread", ["grounding_accuracy"]),
        ("wrong_units", ["grounding_accuracy", "structure_usability"]),
        ("no_citations", ["evidence_linkage"]),
        ("no_entity_ids", ["evidence_linkage"]),
        ("no_limitations", ["calibration_limitation_handling"]),
        ("forbidden", ["calibration_limitation_handling"]),
        ("unstable", ["consistency"]),
        ("empty", ["grounding_accuracy", "insight_quality", "calibration_limitation_handling",
                   "evidence_linkage", "structure_usability"]),
        ("merged", ["structure_usability", "calibration_limitation_handling"]),
    ],
)
def test_failure_mode_hurts_its_dimension(mode: str, hurt: list[str]) -> None:
    clean = dims(TASKS[COACH], CLEAN)
    broken = dims(TASKS[COACH], only(mode))
    for key in hurt:
        assert broken[key] is not None and broken[key] < clean[key], (mode, key, broken[key])


def test_every_failure_mode_is_tested() -> None:
    params = test_failure_mode_hurts_its_dimension.pytestmark[0].args[1]  # type: ignore[attr-defined]
    assert {m for m, _ in params} == set(FAILURE_MODES)


def test_missing_entity_ids_zero_evidence_on_strict_tasks() -> None:
    assert dims(TASKS[COACH], only("no_entity_ids"))["evidence_linkage"] == 0.0


def test_wrong_units_reports_percent_numbers() -> None:
    response = answer_task(TASKS["northside-t1-oct-cancellations"], PACKS, only("wrong_units"),
                           1)
    assert response["structured_metrics"]["oct_cancel_rate"] == pytest.approx(18.1, abs=0.05)
    assert "18.1%" not in response["text"] and "18.1" in response["text"]


def test_answers_are_reproducible_and_setups_differ() -> None:
    task = TASKS["riverbend-t2-cancel-trend"]
    assert answer_task(task, PACKS, "erratic", 2) == answer_task(task, PACKS, "erratic", 2)
    assert answer_task(task, PACKS, "careful", 1) != answer_task(task, PACKS, "hasty", 1)
