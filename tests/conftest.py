"""Shared builders for hand-computed test cases."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from typing import Any

import pytest

from grade_kit.frames import EvalData
from grade_kit.schema import Judgement, Run, Task
from grade_kit.scorers import GradeScores, grade_scores

# a grading panel writes a new sheet's key outside the served folder, in the user's keys
# folder: the tests' (and the kernels and servers they start) is one of their own
os.environ["GRADE_KIT_KEYS"] = tempfile.mkdtemp(prefix="grade-kit-keys-")

ALL_DIMS = {"grounding_accuracy": 0.35, "insight_quality": 0.20, "evidence_linkage": 0.15,
            "calibration_limitation_handling": 0.15, "consistency": 0.10,
            "structure_usability": 0.05}


def make_task(task_id: str = "t1", **fields: Any) -> Task:
    """A GRADE task with project weights unless overridden."""
    data: dict[str, Any] = {"task_id": task_id, "track": 1, "pack": "p", "prompt": "q",
                            "weights": dict(ALL_DIMS)}
    data.update(fields)
    return Task.model_validate(data)


def make_run(run_id: str, task_id: str = "t1", repeat: int = 1, setup: str = "A",
             findings: Sequence[str] = (), limitations: Sequence[str] = (),
             recommendations: Sequence[str] = (), metrics: dict[str, Any] | None = None,
             text: str = "", status: str = "delivered", attempt_of: str | None = None,
             **extra: Any) -> Run:
    data: dict[str, Any] = {
        "run_id": run_id, "setup": setup, "task_id": task_id, "repeat": repeat,
        "attempt_of": attempt_of, "status": status,
        "response": None if status != "delivered" else {
            "key_findings": list(findings), "limitations": list(limitations),
            "recommendations": list(recommendations), "structured_metrics": metrics or {},
            "text": text},
    }
    data.update(extra)
    return Run.model_validate(data)


def judgement(run_id: str, dimension: str, score: float) -> Judgement:
    return Judgement(run_id=run_id, dimension=dimension, score=score,  # type: ignore[arg-type]
                     judge="test")


def score(tasks: Sequence[Task], runs: Sequence[Run],
          judgements: Sequence[Judgement] = ()) -> GradeScores:
    return grade_scores(EvalData.from_records(tasks, runs, judgements))


def task_row(scores: GradeScores, task_id: str = "t1", setup: str = "A") -> dict[str, Any]:
    rows = scores.tasks.filter((scores.tasks["setup"] == setup)
                               & (scores.tasks["task_id"] == task_id)).to_dicts()
    assert len(rows) == 1, rows
    return rows[0]


def run_row(scores: GradeScores, run_id: str) -> dict[str, Any]:
    rows = scores.runs.filter(scores.runs["run_id"] == run_id).to_dicts()
    assert len(rows) == 1
    return rows[0]


@pytest.fixture
def approx() -> Any:
    return lambda value: pytest.approx(value, abs=1e-12, rel=0)
