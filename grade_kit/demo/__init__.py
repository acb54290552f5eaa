"""The embedded default (README "The embedded default"): fixture packs, the task suite,
simulated setups and their recorded runs.

``grade-kit fixtures`` regenerates everything from seed 42 (:func:`build_fixtures`).
"""

from __future__ import annotations

from pathlib import Path

from grade_kit.demo.packs import PACKS, SEED, generate_packs
from grade_kit.demo.record import REPEATS, record_runs
from grade_kit.demo.setups import FAILURE_MODES, SETUPS, answer_task, solve
from grade_kit.demo.tasks import TRACK_WEIGHTS, write_task_suite

__all__ = [
    "FAILURE_MODES",
    "PACKS",
    "REPEATS",
    "SEED",
    "SETUPS",
    "TRACK_WEIGHTS",
    "answer_task",
    "build_fixtures",
    "generate_packs",
    "record_runs",
    "solve",
    "write_task_suite",
]


def build_fixtures(root: Path) -> dict[str, list[Path]]:
    """Regenerate ``root/packs``, ``root/tasks`` and ``root/runs`` (byte-identical each time).

    Tasks are written from the generated ground truth, and the runs from the tasks.
    """
    from grade_kit.io import load_tasks

    packs = generate_packs(root / "packs")
    tasks = write_task_suite(root / "packs", root / "tasks")
    loaded = load_tasks(root / "tasks", root / "packs")
    if loaded.rejected:
        raise ValueError("generated tasks were rejected: "
                         + "; ".join(r.message() for r in loaded.rejected))
    runs = record_runs(loaded.records, root / "packs", root / "runs")
    return {"packs": packs, "tasks": tasks, "runs": runs}
