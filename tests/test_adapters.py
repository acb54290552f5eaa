"""Adapters on real third-party logs (tests/data/realdata), through import and score."""

from __future__ import annotations

import json
from pathlib import Path

from grade_kit.adapters.inspect_ai import import_inspect
from grade_kit.adapters.tau_bench import import_tau2_bench, import_tau_bench
from grade_kit.cli import main

ROOT = Path(__file__).resolve().parents[1]


REAL = ROOT / "tests" / "data" / "realdata"
"""Copies of ../shared/realdata, each folder with its upstream LICENSE (see its README)."""
TAU = REAL / "tau_bench_gpt4o_airline" / "gpt-4o-airline.json"
TAU2 = REAL / "tau2_grok_airline_relaxed_task8"
INSPECT = REAL / "inspect_ai_testlogs"


def import_and_score(source: str, paths: list[Path], tmp: Path) -> dict:
    assert main(["import", source, *map(str, paths), "--out", str(tmp / "imp")]) == 0
    for name in ("tasks", "runs", "grades"):
        assert (tmp / "imp" / f"{name}.jsonl").is_file()
    assert main(["score", str(tmp / "imp" / "tasks.jsonl"), str(tmp / "imp" / "runs.jsonl"),
                 "--grades", str(tmp / "imp" / "grades.jsonl"), "--strict",
                 "--out", str(tmp / "out")]) == 0
    return json.loads((tmp / "out" / "results.json").read_text())


def test_tau_bench_gpt4o_airline(tmp_path: Path) -> None:
    results = import_and_score("tau-bench", [TAU], tmp_path)
    g = results["setups"]["gpt-4o"]["grades"]
    assert g["N"] == 200
    assert g["counts"]["resolved"] == 84
    assert g["counts"]["unresolved"] == 116
    assert g["stable_resolution"] == {"count": 10, "questions": 50, "repeats": 4}
    tc = results["setups"]["gpt-4o"]["tool_calls"]
    # 1,164 recorded calls; ids repeat within 49 runs, so 1,091 unique (run, id) pairs
    assert tc["recorded_calls"] == 1164 and tc["unique_calls"] == 1091
    assert tc["runs_with_repeated_ids"] == 49
    timing = results["setups"]["gpt-4o"]["timing"]
    assert timing["e2e_s"]["n"] == 0 and timing["missing_timestamps"] == 200


def test_tau_bench_mapping_details() -> None:
    imported = import_tau_bench(TAU)
    run = imported.runs[0]
    assert (run.setup, run.task_id, run.repeat) == ("gpt-4o", "airline-0", 1)
    assert run.events == {}
    assert all(t.kind == "plain" for t in imported.tasks)
    assert imported.tasks[0].prompt.startswith("You are mia_li_3668")


def test_tau2_bench_two_setups(tmp_path: Path) -> None:
    files = sorted(TAU2.glob("*.json"))
    results = import_and_score("tau-bench", files, tmp_path)
    assert set(results["setups"]) == {"xai/grok-3-mini", "xai/grok-4-fast-reasoning"}
    for setup in results["setups"].values():
        assert setup["grades"]["N"] == 4  # one task x 4 trials
        assert setup["timing"]["e2e_s"]["n"] == 4
        assert setup["tool_calls"]["recorded_calls"] == setup["tool_calls"]["unique_calls"]
    imported = import_tau2_bench(files[0])
    sim = json.loads(files[0].read_text())["simulations"][0]
    run = next(r for r in imported.runs if r.repeat == sim["trial"] + 1)
    assert run.events["submitted"] == sim["start_time"] + "+00:00"
    e2e = results["setups"]["xai/grok-3-mini"]["timing"]["e2e_s"]
    durations = sorted(s["duration"] for s in json.loads(files[0].read_text())["simulations"])
    # end - start agrees with tau2's own duration (a separate clock) to within 10 ms
    assert abs(e2e["max"] - durations[-1]) < 0.01


def test_inspect_logs(tmp_path: Path) -> None:
    files = sorted(p for p in INSPECT.iterdir() if p.suffix in (".eval", ".json"))
    results = import_and_score("inspect", files, tmp_path)
    setups = results["setups"]
    assert len(setups) == 2  # the two popularity logs of one model are kept apart
    eval_log = import_inspect(files[0])
    assert len(eval_log.runs) == 10 and len(eval_log.grades) == 10
    run = eval_log.runs[0]
    assert run.events["submitted"].endswith("-05:00") and "received" in run.events
    security = import_inspect(INSPECT / "2025-05-12T20-28-26-04-00_security-guide.json")
    assert {g.grader for g in security.grades} == {"model:model_graded_fact"}
    assert all(r.metadata["total_time"] is not None for r in security.runs)
