"""Work bounded at unusual scale (docs/methodology.md §3 "Consistency", §4 "Rates", §5): many
setups, many repeats of one question. Each bound is tested at its edge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import grade_kit as gk
from grade_kit.cli import main
from grade_kit.schema import InputError
from grade_kit.scorers.consistency import MAX_CONSISTENCY_RUNS
from grade_kit.standard.summary import MAX_COMPARED_SETUPS, MAX_SETUPS
from tests.paths import FIXTURES

PLAIN = [{"task_id": "q1", "prompt": "What?"}, {"task_id": "q2", "prompt": "Why?"}]


def _plain_run(i: int, setup: str, task: str = "q1", repeat: int = 1) -> dict[str, Any]:
    return {"run_id": f"r{i}", "setup": setup, "task_id": task, "repeat": repeat,
            "status": "delivered", "response": {"text": "x"},
            "events": {"submitted": "2026-01-01T00:00:00+00:00",
                       "received": f"2026-01-01T00:00:0{i % 10}+00:00"}}


def _repeats_of_one_answer(n: int) -> list[dict[str, Any]]:
    """``n`` repeats of one recorded fixture answer to one GRADE task."""
    lines = [json.loads(x) for x in (FIXTURES / "runs" / "careful.jsonl").read_text().splitlines()]
    first = next(r for r in lines if r["status"] == "delivered" and r["attempt_of"] is None)
    return [{**first, "run_id": f"r{i}", "repeat": i + 1} for i in range(n)]


@pytest.mark.parametrize("n", [MAX_CONSISTENCY_RUNS, MAX_CONSISTENCY_RUNS + 1])
def test_consistency_beyond_its_cap_is_null_and_named(n: int) -> None:
    runs = _repeats_of_one_answer(n)
    ev = gk.evaluate(FIXTURES / "tasks", runs, repeats=n)
    row = ev.scores.consistency.filter(pl.col("task_id") == runs[0]["task_id"]).row(
        0, named=True)
    warned = [w for w in ev.warnings.get_column("message") if "consistency is not computed" in w]
    if n <= MAX_CONSISTENCY_RUNS:
        assert row["consistency"] == 1.0 and not warned  # one answer, repeated: stable
    else:
        assert row["runs"] == n and row["consistency"] is None
        assert row["finding_stability"] is None and row["metric_variance"] is None
        assert len(warned) == 1 and f"more than {MAX_CONSISTENCY_RUNS:,}" in warned[0]
        assert f"({n:,} runs)" in warned[0]


def test_more_setups_than_the_cap_are_one_clear_error(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    runs = [_plain_run(i, f"s{i:05d}") for i in range(MAX_SETUPS + 1)]
    with pytest.raises(InputError, match=f"{MAX_SETUPS + 1:,} setups"):
        gk.evaluate(PLAIN, runs)
    (tmp_path / "runs.jsonl").write_text("\n".join(json.dumps(r) for r in runs) + "\n")
    (tmp_path / "tasks.jsonl").write_text("\n".join(json.dumps(t) for t in PLAIN) + "\n")
    assert main(["score", str(tmp_path / "tasks.jsonl"), str(tmp_path / "runs.jsonl"),
                 "--quiet", "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {MAX_SETUPS + 1:,} setups")


def test_comparisons_beyond_the_cap_are_among_the_best_resolved_only() -> None:
    """MAX_COMPARED_SETUPS + 1 setups, each resolving a different share of two questions:
    the last setup (resolving nothing) is summarised, never compared."""
    n = MAX_COMPARED_SETUPS + 1
    runs, grades = [], []
    for k in range(n):
        setup = f"s{k:02d}"
        for j, task in enumerate(("q1", "q2")):
            run = _plain_run(2 * k + j, setup, task)
            runs.append(run)
            resolved = k < n - 1
            grades.append({"run_id": run["run_id"], "grader": "g", "material_error": "no",
                           "core_conclusion": "correct" if resolved else
                           "no_gradable_conclusion",
                           "request_fulfilment": "full" if resolved else "not_met"})
    ev = gk.evaluate(PLAIN, runs, grades=grades)
    compared = set(ev.comparisons.get_column("baseline")) | set(
        ev.comparisons.get_column("compared"))
    assert len(compared) == MAX_COMPARED_SETUPS and f"s{n - 1:02d}" not in compared
    pairs = ev.comparisons.select("baseline", "compared").unique().height
    assert pairs == MAX_COMPARED_SETUPS * (MAX_COMPARED_SETUPS - 1) // 2
    assert len(ev.results.setups) == n  # every setup is still summarised
    warned = [w for w in ev.warnings.get_column("message") if "pairwise comparisons" in w]
    assert len(warned) == 1 and warned[0].startswith(f"{n} setups")
