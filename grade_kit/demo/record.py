"""Recorded runs of the simulated setups (``fixtures/runs/<setup>.jsonl``).

Each run is what the setup answered (:func:`grade_kit.demo.setups.answer_task`) with seeded,
realistic timing: a lognormal end-to-end latency around the setup's median, a first token after
10-25% of it, tool calls inside the answer window, and the setup's occasional timeouts (given up
after :data:`TIMEOUT_S`) and failures. The failure modes that fired are kept in the run's
``metadata`` (never scored).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from grade_kit.demo.setups import SETUPS, answer_task
from grade_kit.schema import Task

REPEATS = 5
TIMEOUT_S = 60.0
START = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
TOOLS = ("sql", "read_csv", "python")


def _ts(at: datetime) -> str:
    return at.isoformat(timespec="milliseconds")


def simulate_run(task: Task, packs_dir: Path, setup: str, repeat: int,
                 submitted: datetime) -> dict[str, Any]:
    """One run record of ``setup`` answering ``task`` (docs/methodology.md §2 run format)."""
    profile = SETUPS[setup]
    rng = random.Random(f"grade_kit-timing:{setup}:{task.task_id}:{repeat}")
    run_id = f"{setup}-{task.task_id}-r{repeat}"
    record: dict[str, Any] = {"run_id": run_id, "setup": setup, "task_id": task.task_id,
                              "repeat": repeat, "attempt_of": None}
    roll = rng.random()
    if roll < profile.timeout_rate:
        record.update(status="timeout", error=f"no answer within {TIMEOUT_S:.0f} s",
                      events={"submitted": _ts(submitted),
                              "stopped": _ts(submitted + timedelta(seconds=TIMEOUT_S))},
                      response=None, tool_calls=None)
        return record
    if roll < profile.timeout_rate + profile.failure_rate:
        waited = rng.uniform(0.5, 3.0)
        record.update(status="failed", error="HTTP 502 from the model endpoint",
                      events={"submitted": _ts(submitted),
                              "stopped": _ts(submitted + timedelta(seconds=waited))},
                      response=None, tool_calls=None)
        return record
    latency = min(TIMEOUT_S - 1, profile.latency_s * math.exp(rng.gauss(0.0, profile.spread)))
    first_token = latency * rng.uniform(0.10, 0.25)
    n_tools = rng.randint(*profile.tools)
    calls = []
    for i in range(n_tools):
        start = first_token * (i + 0.2) / max(1, n_tools)
        calls.append({"id": f"call_{run_id}_{i + 1}", "name": rng.choice(TOOLS),
                      "started": _ts(submitted + timedelta(seconds=start)),
                      "ended": _ts(submitted + timedelta(seconds=start + rng.uniform(0.05,
                                                                                   0.4)))})
    response = answer_task(task, packs_dir, setup, repeat)
    modes = response.pop("_modes")
    record.update(status="delivered", error=None,
                  events={"submitted": _ts(submitted),
                          "first_token": _ts(submitted + timedelta(seconds=first_token)),
                          "received": _ts(submitted + timedelta(seconds=latency))},
                  response=response, tool_calls=calls, metadata={"failure_modes": modes})
    return record


def record_runs(tasks: Sequence[Task], packs_dir: Path, out_dir: Path,
                setups: Sequence[str] = tuple(SETUPS), repeats: int = REPEATS) -> list[Path]:
    """Write ``out_dir/<setup>.jsonl``: every GRADE task x ``repeats`` (default 5)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for s_index, setup in enumerate(setups):
        path = out_dir / f"{setup}.jsonl"
        clock = START + timedelta(hours=s_index)
        with path.open("w", encoding="utf-8") as handle:
            for task in sorted((t for t in tasks if t.kind == "grade"),
                               key=lambda t: t.task_id):
                for repeat in range(1, repeats + 1):
                    clock += timedelta(seconds=61)
                    record = simulate_run(task, packs_dir, setup, repeat, clock)
                    handle.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
        written.append(path)
    return written
