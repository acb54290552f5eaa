"""gk.evaluate against the plain row-at-a-time implementation of docs/methodology.md §3
(``benchmarks/plain.py``): thousands of random runs written to JSONL with bad lines among
them, every GRADE figure per run and per (setup, task) compared bit for bit."""

from __future__ import annotations

import json
import math
import random
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

import grade_kit as gk
from benchmarks.plain import (
    aggregate_differences,
    differences,
    plain_aggregates,
    plain_rule_grades,
    plain_scores,
    plain_standard,
    read_grades,
    read_plain,
    standard_differences,
)
from grade_kit.schema import DIMENSIONS

START = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
WORDS = ["alpha", "beta", "october", "spike", "spiked", "2.6", "12.6", "18.4", "quarter",
         "single", "small", "sample", "year", "over", "causes", "t", "07", "rose"]
METRIC_VALUES: list[Any] = [0.184, "18.4%", 0.2, 0.1841, 7, "7", 8, "T-07", "t-07 ", "n/a",
                            True, None, 0, -0.0, 1e300, "1,234", 12.6, 2.6, [1], {"a": 1}]


def _words(rnd: random.Random, low: int, high: int) -> str:
    return " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(low, high)))


def _claim(rnd: random.Random, claim_id: str, calibration: bool = False) -> dict[str, Any]:
    claim: dict[str, Any] = {"id": claim_id, "text": _words(rnd, 1, 2)}
    if rnd.random() < 0.4:
        claim["patterns"] = [["|".join(_words(rnd, 1, 2) for _ in range(rnd.randint(1, 3)))
                              for _ in range(rnd.randint(1, 2))]
                             for _ in range(rnd.randint(1, 2))]
    if calibration:
        claim["calibration"] = True
    return claim


def _task(rnd: random.Random, index: int) -> dict[str, Any]:
    chosen = rnd.sample(DIMENSIONS, rnd.randint(1, 6))
    raw = [rnd.randint(1, 9) for _ in chosen]
    weights = {d: w / sum(raw) for d, w in zip(chosen, raw, strict=True)}
    facts = []
    for k in range(rnd.randint(0, 3)):
        fact: dict[str, Any] = {"id": f"f{k}", "metric": rnd.choice(["m", "n", "s", "k"])}
        if rnd.random() < 0.3:
            fact["value"] = rnd.choice(["T-07", "t-07", "18.4%"])
        else:
            fact["value"] = rnd.choice([0.184, 7, 2.6, 0, 1e300])
            tolerance = rnd.choice(["abs", "rel", "both", "none"])
            if tolerance in ("abs", "both"):
                fact["abs_tol"] = rnd.choice([0.0, 0.005, 0.01, 1.0])
            if tolerance in ("rel", "both"):
                fact["rel_tol"] = rnd.choice([0.0, 0.01, 0.1])
        facts.append(fact)
    # Up to 5 insights, 4 limitations and 4 forbidden claims: the three calibration shares
    # take values such as 1/3 and 3/4 whose sum left to right is not the exact sum.
    insights = [_claim(rnd, f"i{k}", calibration=rnd.random() < 0.5)
                for k in range(rnd.randint(0, 5))]
    limitations = [_claim(rnd, f"l{k}") for k in range(rnd.randint(0, 4))]
    forbidden = [_claim(rnd, f"x{k}") for k in range(rnd.randint(0, 4))]
    if not (facts or insights or limitations or forbidden):
        insights = [_claim(rnd, "i0")]
    return {"task_id": f"t{index}", "prompt": "What changed?", "weights": weights,
            "track": 1 + index % 5, "pack": f"pack{index % 3}",
            "gold_facts": facts, "gold_insights": insights,
            "required_limitations": limitations, "forbidden_claims": forbidden}


def _run(rnd: random.Random, run_id: str, setup: str, task_id: str, repeat: int,
         attempt_of: str | None, easy: bool = False) -> dict[str, Any]:
    status = "delivered" if easy else rnd.choice(["delivered"] * 6 + ["failed", "timeout",
                                                                      "cancelled"])
    run: dict[str, Any] = {"run_id": run_id, "setup": setup, "task_id": task_id,
                           "repeat": repeat, "status": status}
    submitted = START + timedelta(seconds=rnd.randint(0, 10**6),
                                  microseconds=rnd.randint(0, 999_999))
    events = {"submitted": submitted.isoformat()}
    roll = rnd.random()
    if roll < 0.8:  # E2E in whole microseconds; now and then received before submitted
        e2e = timedelta(microseconds=rnd.randint(-2_000_000 if roll < 0.05 else 1, 90_000_000))
        events["received"] = (submitted + e2e).astimezone(
            rnd.choice([UTC, timezone(timedelta(hours=2))])).isoformat()
    if rnd.random() < 0.5:  # another event: its own metric (now and then before submitted)
        events["first_token"] = (submitted + timedelta(
            microseconds=rnd.randint(-500_000, 30_000_000))).isoformat()
    if status != "delivered" and rnd.random() < 0.8:  # waiting time, never latency
        events["stopped"] = (submitted + timedelta(
            microseconds=rnd.randint(-100_000, 600_000_000))).isoformat()
    if rnd.random() < 0.9:  # a run without a submitted event has no E2E
        run["events"] = events
    if rnd.random() < 0.7:  # tools exposed: calls counted by unique id (ids may repeat)
        calls = []
        for _ in range(rnd.randint(0, 6)):
            call: dict[str, Any] = {"id": f"c{rnd.randint(0, 4)}",
                                    "name": rnd.choice(["sql", "py"])}
            if rnd.random() < 0.7:
                started = submitted + timedelta(microseconds=rnd.randint(0, 10_000_000))
                call["started"] = started.isoformat()
                if rnd.random() < 0.7:
                    call["ended"] = (started + timedelta(
                        microseconds=rnd.randint(0, 5_000_000))).isoformat()
            calls.append(call)
        run["tool_calls"] = calls
    if attempt_of is not None:
        run["attempt_of"] = attempt_of
    if status == "delivered" or rnd.random() < 0.3:  # a failed run may carry a response
        run["response"] = {
            "key_findings": [_words(rnd, 0, 5) for _ in range(rnd.randint(0, 5))],
            "limitations": [_words(rnd, 1, 3) for _ in range(rnd.randint(0, 2))],
            "recommendations": [_words(rnd, 1, 3) for _ in range(rnd.randint(0, 2))],
            "structured_metrics": {k: rnd.choice(METRIC_VALUES)
                                   for k in rnd.sample(["m", "n", "s", "k"], rnd.randint(0, 4))},
            "text": _words(rnd, 0, 8)}
    return run


BAD_LINES = ['{"run_id": "bad-1", "setup": ', '{"run_id": "bad-2", "setup": "A", "task_id": "t0", '
             '"repeat": "2", "status": "failed"}', '{"run_id": "bad-3", "task_id": "t0", '
             '"repeat": 1, "status": "failed"}', '{"run_id": "bad-4", "setup": "A", "task_id": '
             '"t0", "repeat": 1, "status": "lost"}', "not json at all"]


def _grade_record(rnd: random.Random, run_id: str, easy: bool = False) -> dict[str, Any]:
    if easy:
        return {"run_id": run_id, "core_conclusion": "correct", "request_fulfilment": "full",
                "material_error": "no", "grader": "test"}
    core = rnd.choice(["correct"] * 6 + ["material_error", "no_gradable_conclusion",
                                         "pending"])
    return {"run_id": run_id, "core_conclusion": core,
            "request_fulfilment": rnd.choice(["full"] * 6 + ["partial", "not_met", "pending"]),
            "material_error": ("yes" if core == "material_error" else
                               rnd.choice(["no"] * 8 + ["yes", "pending"])),
            "grader": "test"}


def _write_inputs(folder: Path, seed: int, asking: bool = False,
                  suites: bool = False) -> dict[str, Path]:
    """Tasks, runs, judgements and grades; with ``asking``, fewer recorded grades (the rule
    grader writes the rest) and some answers that ask the user something; with ``suites``,
    tasks in suites s1 and s2 besides tasks in none, and setup C never runs suite s2."""
    rnd = random.Random(seed)
    tasks = [_task(rnd, i) for i in range(20)]
    tasks.append({"task_id": "plain", "prompt": "How many?"})  # a plain question: no GRADE
    lines: list[str] = []
    judgements: list[str] = []
    grades: list[str] = []
    if suites:
        for index, task in enumerate(tasks[2:-1], start=2):
            if index % 3:
                task["suite"] = f"s{index % 3}"
    for index, task in enumerate(tasks):
        easy = index < 2  # resolved in every slot by every setup: the common subset
        for setup in ("A", "B", "C"):
            if setup == "C" and task.get("suite") == "s2":
                continue  # C is not planned on suite s2
            top = rnd.choice([3, 3, 3, 2, 1]) if seed % 3 else rnd.randint(1, 4)
            if easy:
                top = 4
            elif rnd.random() < 0.02:
                top = 9  # a stray repeat: never raises R (beyond the plan)
            for repeat in range(1, top + 1):
                run_id = f"{setup}-{task['task_id']}-{repeat}"
                runs = [_run(rnd, run_id, setup, task["task_id"], repeat, None, easy)]
                if rnd.random() < 0.15:  # a re-run of the slot: never scored in its place
                    runs.append(_run(rnd, run_id + "-again", setup, task["task_id"], repeat,
                                     run_id))
                for run in runs:
                    lines.append(json.dumps(run))
                    if asking and run.get("response") and rnd.random() < 0.3:
                        where = rnd.choice(["key_findings", "text"])
                        phrase = rnd.choice(["Could you clarify", "please, let me know which"])
                        if where == "text":
                            run["response"]["text"] += f" {phrase}?"
                        else:
                            run["response"]["key_findings"].append(f"{phrase} one?")
                        lines[-1] = json.dumps(run)
                    if easy or rnd.random() < (0.3 if asking else 0.85):
                        grades.append(json.dumps(_grade_record(rnd, run["run_id"],
                                                               easy and run is runs[0])))
                    if rnd.random() < 0.05:
                        lines.append(rnd.choice(BAD_LINES))
                    for dimension in ("evidence_linkage", "structure_usability"):
                        roll = rnd.random()
                        if roll < 0.5:
                            judgements.append(json.dumps({
                                "run_id": run["run_id"], "dimension": dimension,
                                "score": round(rnd.random(), 3), "judge": "test"}))
                        elif roll < 0.6:
                            judgements.append(json.dumps({
                                "run_id": run["run_id"], "dimension": dimension,
                                "score": None, "judge": "test", "reason": "nothing to check"}))
    paths = {"tasks": folder / "tasks.jsonl", "runs": folder / "runs.jsonl",
             "judgements": folder / "judgements.jsonl", "grades": folder / "grades.jsonl"}
    paths["grades"].write_text("\n".join(grades) + "\n", encoding="utf-8")
    paths["tasks"].write_text("".join(json.dumps(t) + "\n" for t in tasks), encoding="utf-8")
    paths["runs"].write_text("\n".join(lines) + "\n", encoding="utf-8")
    paths["judgements"].write_text("\n".join(judgements) + "\n", encoding="utf-8")
    return paths


@pytest.mark.parametrize("seed", range(12))
def test_evaluate_equals_the_plain_row_at_a_time_rules(tmp_path: Path, seed: int) -> None:
    paths = _write_inputs(tmp_path, seed)
    evaluation = gk.evaluate(paths["tasks"], paths["runs"], judgements=paths["judgements"])
    plain_runs, plain_tasks = plain_scores(*read_plain(paths["tasks"], paths["runs"],
                                                       paths["judgements"]))
    assert evaluation.inputs.rejected  # bad lines were there, and were set aside
    assert len(evaluation.inputs.tasks) == 21 and len(plain_runs) > 150  # nothing vacuous
    assert differences(evaluation, plain_runs, plain_tasks) == []
    aggregates = plain_aggregates(evaluation.inputs.tasks, plain_tasks)
    assert aggregate_differences(evaluation, aggregates) == []


@pytest.mark.parametrize("seed", range(12))
def test_the_standard_equals_the_plain_row_at_a_time_rules(tmp_path: Path, seed: int) -> None:
    paths = _write_inputs(tmp_path, seed)
    evaluation = gk.evaluate(paths["tasks"], paths["runs"], grades=paths["grades"])
    tasks, runs, _ = read_plain(paths["tasks"], paths["runs"])
    _, per_task = plain_scores(tasks, runs, [])
    plain = plain_standard(tasks, runs, read_grades(paths["grades"]),
                           composites={k: v["composite"] for k, v in per_task.items()})
    assert plain["all"]["A"]["counts"]["resolved"] and plain["all"]["A"]["e2e_s"]["n"] > 10
    assert plain["common"] == ["t0", "t1"] or plain["repeats"] > 4  # a common subset
    assert standard_differences(evaluation, plain) == []


@pytest.mark.parametrize(("seed", "repeats"), [(20, None), (21, None), (22, 3), (23, 2)])
def test_suites_and_a_given_r_equal_the_plain_rules(tmp_path: Path, seed: int,
                                                   repeats: int | None) -> None:
    paths = _write_inputs(tmp_path, seed, suites=True)
    evaluation = gk.evaluate(paths["tasks"], paths["runs"], grades=paths["grades"],
                             repeats=repeats)
    tasks, runs, _ = read_plain(paths["tasks"], paths["runs"])
    _, per_task = plain_scores(tasks, runs, [])
    plain = plain_standard(tasks, runs, read_grades(paths["grades"]),
                           composites={k: v["composite"] for k, v in per_task.items()},
                           repeats=repeats)
    assert plain["all"]["C"]["questions"] < plain["all"]["A"]["questions"]  # C: no s2
    assert standard_differences(evaluation, plain) == []


@pytest.mark.parametrize("seed", range(6))
def test_the_rule_grader_equals_its_plain_wording(tmp_path: Path, seed: int) -> None:
    paths = _write_inputs(tmp_path, seed, asking=True)
    evaluation = gk.evaluate(paths["tasks"], paths["runs"], grades=paths["grades"],
                             grader="rules")
    tasks, runs, _ = read_plain(paths["tasks"], paths["runs"])
    recorded = read_grades(paths["grades"])
    ruled = plain_rule_grades(tasks, runs, recorded)
    assert {g.core_conclusion for g in ruled} >= {"correct", "material_error"}
    assert {g.request_fulfilment for g in ruled} >= {"partial", "not_met"}  # full: seeds 1, 2, 5
    assert any(g.needs_more_information for g in ruled)
    fields = ("core_conclusion", "request_fulfilment", "material_error",
              "needs_more_information")
    written = {row["run_id"]: tuple(row[f] for f in fields) for row in
               evaluation.data.grades.filter(grader="rules-grader@1").iter_rows(named=True)}
    assert written == {g.run_id: tuple(getattr(g, f) for f in fields) for g in ruled}
    _, per_task = plain_scores(tasks, runs, [])
    plain = plain_standard(tasks, runs, [*recorded, *ruled],
                           composites={k: v["composite"] for k, v in per_task.items()})
    assert standard_differences(evaluation, plain) == []


def test_a_figure_off_in_the_last_place_is_a_difference(tmp_path: Path) -> None:
    paths = _write_inputs(tmp_path, 0)
    evaluation = gk.evaluate(paths["tasks"], paths["runs"], judgements=paths["judgements"])
    plain_runs, plain_tasks = plain_scores(*read_plain(paths["tasks"], paths["runs"],
                                                       paths["judgements"]))
    run_id, figures = next((k, v) for k, v in plain_runs.items() if v["composite"])
    plain_runs[run_id] = {**figures, "composite": math.nextafter(figures["composite"], 2.0)}
    del plain_tasks[next(iter(plain_tasks))]
    found = differences(evaluation, plain_runs, plain_tasks)
    assert len(found) == 2
    assert found[0].startswith(f"run {run_id}: composite") and "not in the plain" in found[1]


def _write(folder: Path, name: str, records: list[dict[str, Any]]) -> Path:
    path = folder / f"{name}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _all_differences(folder: Path, tasks: list[dict[str, Any]], runs: list[dict[str, Any]],
                     grades: list[dict[str, Any]]) -> list[str]:
    """gk.evaluate against every plain figure, on records written as JSONL."""
    paths = {"tasks": _write(folder, "tasks", tasks), "runs": _write(folder, "runs", runs),
             "grades": _write(folder, "grades", grades)}
    evaluation = gk.evaluate(paths["tasks"], paths["runs"], grades=paths["grades"])
    plain_tasks, plain_runs, _ = read_plain(paths["tasks"], paths["runs"])
    per_run, per_task = plain_scores(plain_tasks, plain_runs, [])
    standard = plain_standard(plain_tasks, plain_runs, read_grades(paths["grades"]),
                              composites={k: v["composite"] for k, v in per_task.items()})
    return [*differences(evaluation, per_run, per_task),
            *aggregate_differences(evaluation, plain_aggregates(plain_tasks, per_task)),
            *standard_differences(evaluation, standard)]


def _boundary_run(run_id: str, setup: str, repeat: int, status: str = "delivered",
                  findings: tuple[str, ...] = ("alpha beta",), metrics: Any = None,
                  e2e_us: int | None = 1_500_000) -> dict[str, Any]:
    run: dict[str, Any] = {"run_id": run_id, "setup": setup, "task_id": "t0",
                           "repeat": repeat, "status": status,
                           "events": {"submitted": START.isoformat()}}
    if e2e_us is not None:
        run["events"]["received"] = (START + timedelta(microseconds=e2e_us)).isoformat()
    if status == "delivered":
        run["response"] = {"key_findings": list(findings),
                           "structured_metrics": metrics if metrics is not None else {"m": 1}}
    return run


BOUNDARY_TASK = {"task_id": "t0", "prompt": "What changed?", "track": 1, "pack": "p",
                 "weights": {"grounding_accuracy": 0.5, "insight_quality": 0.5},
                 "gold_facts": [{"id": "f", "metric": "m", "value": 0, "abs_tol": 0.0}],
                 "gold_insights": [{"id": "i", "text": "alpha"}]}
CORRECT = {"core_conclusion": "correct", "request_fulfilment": "full", "material_error": "no",
           "grader": "test"}

BOUNDARIES: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {
    "no run at all": ([], []),
    "one run": ([_boundary_run("a1", "A", 1)], [{"run_id": "a1", **CORRECT}]),
    "no delivered run": ([_boundary_run("a1", "A", 1, "failed"),
                          _boundary_run("a2", "A", 2, "timeout"),
                          _boundary_run("b1", "B", 1, "cancelled")], []),
    "one repeat, two setups, ties": (
        [_boundary_run("a1", "A", 1, e2e_us=2_000_000),
         _boundary_run("b1", "B", 1, e2e_us=2_000_000)],
        [{"run_id": "a1", **CORRECT}, {"run_id": "b1", **CORRECT}]),
    "zero mean, with and without spread": (
        [_boundary_run(f"a{k}", "A", k, metrics={"m": 0, "n": v, "k": -v})
         for k, v in ((1, -1.0), (2, 1.0), (3, 0.0))],
        [{"run_id": "a1", **CORRECT}]),
    "identical repeats": (
        [_boundary_run(f"a{k}", "A", k, findings=("alpha beta", "gamma", "delta epsilon"),
                       e2e_us=1) for k in (1, 2, 3, 4)],
        [{"run_id": f"a{k}", **CORRECT} for k in (1, 2, 3, 4)]),
    "no events, no findings": (
        [{**_boundary_run(f"a{k}", "A", k, findings=(), metrics={}), "events": {}}
         for k in (1, 2)], []),
}


@pytest.mark.parametrize("case", sorted(BOUNDARIES))
def test_boundary_inputs_equal_the_plain_rules(tmp_path: Path, case: str) -> None:
    runs, grades = BOUNDARIES[case]
    assert _all_differences(tmp_path, [BOUNDARY_TASK], runs, grades) == []
