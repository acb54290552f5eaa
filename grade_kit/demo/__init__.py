"""The embedded default (README "The embedded default"): fixture packs, the task suite,
simulated setups and their recorded runs.

``grade-kit demo fixtures`` regenerates everything from seed 42 (:func:`build_fixtures`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from importlib.metadata import version
from pathlib import Path

from grade_kit.cache import cache_dir
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
    "demo_fixtures",
    "generate_packs",
    "record_runs",
    "solve",
    "tasks_or_demo",
    "write_task_suite",
]


def build_fixtures(root: Path) -> dict[str, list[Path]]:
    """Regenerate ``root/packs``, ``root/tasks`` and ``root/runs`` (byte-identical each time).

    Tasks are written from the generated ground truth, and the runs from the tasks.
    """
    from grade_kit.reading.task_files import load_tasks

    packs = generate_packs(root / "packs")
    tasks = write_task_suite(root / "packs", root / "tasks")
    loaded = load_tasks(root / "tasks", root / "packs")
    if loaded.rejected:
        raise ValueError("generated tasks were rejected: "
                         + "; ".join(r.message() for r in loaded.rejected))
    runs = record_runs(loaded.records, root / "packs", root / "runs")
    return {"packs": packs, "tasks": tasks, "runs": runs}


def demo_fixtures() -> Path:
    """The embedded default's fixtures folder (``packs/``, ``tasks/``, ``runs/``), wherever
    grade_kit runs: the checkout's ``fixtures/`` when grade_kit is imported from a checkout,
    else built once (:func:`build_fixtures`, seed 42: the same bytes as the checkout's) into
    the cache folder (:func:`~grade_kit.cache.cache_dir`), one per grade_kit version.
    """
    checkout = Path(__file__).resolve().parents[2]
    fixtures = checkout / "fixtures"
    if (checkout / "pyproject.toml").is_file() and all(
            (fixtures / part).is_dir() for part in ("packs", "tasks", "runs")):
        return fixtures
    kept = cache_dir() / f"fixtures-{version('grade_kit')}"
    if kept.is_dir():
        return kept
    kept.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{kept.name}-", dir=kept.parent))
    try:
        build_fixtures(staging)
        os.chmod(staging, 0o755)  # readable as the files in it (mkdtemp makes it 0700)
        os.replace(staging, kept)  # whole or not at all
    except OSError:
        if not kept.is_dir():  # not another process that built it first
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return kept


def tasks_or_demo(tasks: Path | str | None,
                  packs: Path | str | None) -> tuple[Path | str, Path | str | None]:
    """What a notebook fetches: ``tasks`` and ``packs`` as given; with ``tasks`` None, the
    demo suite's tasks (:func:`demo_fixtures`) and, unless ``packs`` is given, its packs
    (with tasks of one's own, ``packs`` None stays None: no SQL tool)."""
    if tasks is not None:
        return tasks, packs
    fixtures = demo_fixtures()
    return fixtures / "tasks", fixtures / "packs" if packs is None else packs
