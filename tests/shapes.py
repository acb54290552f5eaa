"""Plain generated evaluations of any shape (issue 62): one JSON file a question in
``tasks/`` (or one ``tasks.jsonl``), ``runs.jsonl`` and ``grades.jsonl``, seeded, for the
shape sweep (``tests/pipeline/test_shapes.py``, ``make sweep``) and bench-scale's held-out
shape. Nothing here is unusual input: real benchmarks have thousands of questions and setups
that differ by tens of points."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class Shape:
    """One generated evaluation.

    Attributes:
        questions: Questions planned.
        setups: Setups, each running every planned slot (but ``skipping``'s).
        repeats: R, slots per question.
        rates: Per setup its chance of resolving a slot (cycled over the setups); ``(1, 0)``
            is all against none, ``(0.5,)`` no effect.
        per_question: Whether a question's difficulty is shared by the setups (a setup
            resolves a slot when its draw is below rate + the question's offset): repeats
            and setups then agree within a question, as on real benchmarks.
        task_folder: One JSON file a question under ``tasks/`` (else one ``tasks.jsonl``).
        skipping: Share of the questions the last setup never ran (0: none).
        partial: Share of the graded slots that are partially resolved instead.
        slashed: Question ids with a ``/`` and a ``%`` in them, as Inspect's dataset/sample
            ids are (``intercode-ctf_crypto/task_12``).
        seed: The generator's seed.
    """

    questions: int
    setups: int = 2
    repeats: int = 1
    rates: tuple[float, ...] = (0.5,)
    per_question: bool = True
    task_folder: bool = True
    skipping: float = 0.0
    partial: float = 0.0
    slashed: bool = False
    seed: int = 0
    name: str = field(default="", compare=False)

    def task_id(self, q: int) -> str:
        """The id of question ``q``."""
        return f"suite_{q % 7}/task {q}%2F" if self.slashed else f"q{q:05d}"


def write_shape(shape: Shape, folder: Path) -> Path:
    """Write ``shape`` under ``folder`` (tasks, runs.jsonl, grades.jsonl); returns the
    tasks' path (the folder of task files or tasks.jsonl)."""
    rng = np.random.default_rng(shape.seed)
    folder.mkdir(parents=True, exist_ok=True)
    ids = [shape.task_id(q) for q in range(shape.questions)]
    if shape.task_folder:
        tasks = folder / "tasks"
        tasks.mkdir()
        for q, task_id in enumerate(ids):
            (tasks / f"task-{q:05d}.json").write_text(
                json.dumps({"task_id": task_id, "prompt": f"question {q}"}), encoding="utf-8")
    else:
        tasks = folder / "tasks.jsonl"
        tasks.write_text("".join(json.dumps({"task_id": t, "prompt": f"question {q}"}) + "\n"
                                 for q, t in enumerate(ids)), encoding="utf-8")
    offsets = (rng.uniform(-0.3, 0.3, shape.questions) if shape.per_question
               else np.zeros(shape.questions))
    skipped = rng.random(shape.questions) < shape.skipping
    base = datetime(2026, 1, 1, tzinfo=UTC)
    with (folder / "runs.jsonl").open("w", encoding="utf-8") as runs, \
            (folder / "grades.jsonl").open("w", encoding="utf-8") as grades:
        for s in range(shape.setups):
            setup = f"setup-{s:02d}"
            rate = shape.rates[s % len(shape.rates)]
            for q, task_id in enumerate(ids):
                if s == shape.setups - 1 and shape.setups > 1 and skipped[q]:
                    continue
                chance = min(1.0, max(0.0, rate + offsets[q])) if 0 < rate < 1 else rate
                for r in range(1, shape.repeats + 1):
                    run_id = f"{setup}-{q}-{r}"
                    start = base + timedelta(seconds=float(rng.uniform(0, 86_400)))
                    seconds = float(rng.lognormal(1.0 + 0.1 * s, 0.5))
                    runs.write(json.dumps({
                        "run_id": run_id, "setup": setup, "task_id": task_id, "repeat": r,
                        "status": "delivered", "response": {"text": "answer"},
                        "tool_calls": [{"id": f"c{j}", "name": "sql"}
                                       for j in range(int(rng.integers(0, 4)))],
                        "events": {"submitted": start.isoformat(),
                                   "received": (start + timedelta(seconds=seconds))
                                   .isoformat()}}) + "\n")
                    ok = bool(rng.random() < chance)
                    part = bool(rng.random() < shape.partial)
                    grades.write(json.dumps({
                        "run_id": run_id, "grader": "generated", "material_error": "no",
                        "core_conclusion": "correct" if ok or part else "no_gradable_conclusion",
                        "request_fulfilment": ("partial" if part else "full") if ok or part
                        else "not_met"}) + "\n")
    return tasks
