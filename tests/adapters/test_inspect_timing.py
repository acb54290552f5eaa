"""Inspect timing by the log's own structure, limits, working time and tool-call ids
(docs/adapters.md "Inspect timing", docs/methodology.md §4 "Timing", "Limits", "Tool calls").

Expectations come from the raw JSON: by hand for the constructed log
(tests/data/inspect_constructed), and with a few lines of stdlib code for the real logs
(tests/data/realdata/inspect_ai_testlogs), never from grade_kit itself.
"""

from __future__ import annotations

import json
import math
import zipfile
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import grade_kit as gk
from grade_kit.adapters.inspect_ai import import_inspect
from tests.paths import DATA, REALDATA

CONSTRUCTED = DATA / "inspect_constructed" / "agentic.json"
REAL = REALDATA / "inspect_ai_testlogs"


def at(clock: str) -> str:
    return f"2026-03-01T10:{clock}+00:00"


@pytest.fixture(scope="module")
def constructed() -> gk.Evaluation:
    return gk.evaluate(gk.read_log(CONSTRUCTED, source="inspect"))


def _run(ev: gk.Evaluation, sample: str) -> Any:
    return next(r for r in ev.inputs.runs if r.task_id == sample)  # the log names no dataset


def test_intermediate_scores_inside_the_solver_are_not_the_end(
        constructed: gk.Evaluation) -> None:
    """The agent scores two submissions itself (10:00:20, 10:00:52); the solvers span ends
    at 10:01:00 and the scorers span begins at 10:01:01.25. Set-up (init span, sandbox)
    runs 10:00:00-10:00:05, the solvers span begins at 10:00:05.5."""
    run = _run(constructed, "intermediate")
    assert run.status == "delivered"
    assert run.events == {"submitted": at("00:05.500000"), "received": at("01:01.250000"),
                          "model_text_finished": at("00:50.000000"),
                          "runner_finished": at("01:00.000000")}
    e2e = constructed.runs.filter(pl.col("run_id") == run.run_id).row(0, named=True)
    assert e2e["e2e_s"] == 55.75  # 10:01:01.25 - 10:00:05.5, not 20 s to the first score
    assert e2e["working_s"] == 41.25  # working_start 41.25 at scoring - 0.0 at the solver
    assert e2e["e2e_s"] <= run.metadata["total_time"]


def test_the_sample_init_after_set_up_starts_a_log_without_spans(
        constructed: gk.Evaluation) -> None:
    """No spans or steps: two sample_init events (10:00:00, and 10:00:04 after the
    sandbox); the one score (no intermediate flag) at 10:00:07 ends it; no working clock."""
    run = _run(constructed, "old-style")
    assert run.events == {"submitted": at("00:04.000000"), "received": at("00:07.000000"),
                          "model_text_finished": at("00:06.000000"),
                          "runner_finished": None}
    row = constructed.runs.filter(pl.col("run_id") == run.run_id).row(0, named=True)
    assert (row["e2e_s"], row["working_s"]) == (3.0, None)


def test_a_message_limit_is_a_limit_graded_by_its_score(constructed: gk.Evaluation) -> None:
    """Stopped by its 30-message limit, yet its scorer marked it correct: status limit with
    type and value, graded resolved from the score, never a timeout or a latency sample."""
    run = _run(constructed, "limited")
    assert run.status == "limit" and run.limit is not None
    assert (run.limit.type, run.limit.value) == ("message", 30.0)
    assert run.events["stopped"] == at("02:01.000000") and "received" not in run.events
    row = constructed.runs.filter(pl.col("run_id") == run.run_id).row(0, named=True)
    assert (row["status"], row["limit_type"], row["limit_value"]) == ("limit", "message", 30.0)
    assert row["grade"] == "resolved" and row["e2e_s"] is None
    assert row["grade_reason"].startswith("limit: message limit of 30 reached; ")
    timing = constructed.results.setups["m/agent"].timing
    assert (timing.timeouts.count, timing.limits.count, timing.limits.by_type) == (
        0, 1, {"message": 1})
    assert timing.limits.rate == 0.25 and timing.limits.attempted == 4
    assert timing.limits.waiting_s.n == 1 and timing.limits.waiting_s.p50 == 118.0
    frame = constructed.timing.filter(pl.col("subset") == "all").row(0, named=True)
    assert (frame["timeouts"], frame["limits"], frame["limit_types"]) == (0, 1, "message 1")
    why = constructed.explain(run.run_id)
    assert "message limit of 30" in str(why) and "timeout" not in str(why)


def test_timing_figures_of_the_constructed_log(constructed: gk.Evaluation) -> None:
    """E2E over the three delivered runs 55.75, 3.0 and 10.0 s (10:00:11 - 10:00:01);
    working time over the two that carry a working clock, 41.25 and 9.5 s."""
    timing = constructed.results.setups["m/agent"].timing
    e2e, working = timing.e2e_s, timing.working_s
    assert (e2e.n, e2e.p50, e2e.p90, e2e.min, e2e.max) == (3, 10.0, 55.75, 3.0, 55.75)
    assert e2e.mean == math.fsum([55.75, 3.0, 10.0]) / 3
    assert (working.n, working.p50, working.p90, working.mean) == (2, 25.375, 41.25, 25.375)
    row = constructed.timing.filter(pl.col("subset") == "all").row(0, named=True)
    assert (row["working_n"], row["working_p50"], row["e2e_p50"]) == (2, 25.375, 10.0)
    grades = constructed.results.setups["m/agent"].grades
    assert (grades.N, grades.counts.resolved, grades.counts.unresolved) == (4, 3, 1)


def test_the_plan_takes_r_from_the_log(constructed: gk.Evaluation) -> None:
    plan = constructed.results.plan
    assert (plan.repeats, plan.inferred) == (1, False)
    assert "epochs" in plan.rule
    assert not any("inferred" in w for w in constructed.warnings.get_column("message"))
    given = gk.evaluate(gk.read_log(CONSTRUCTED, source="inspect"), repeats=2).results.plan
    assert (given.repeats, given.rule) == (2, "given (--repeats)")


def test_tool_call_ids_that_are_names_are_each_a_call(constructed: gk.Evaluation) -> None:
    """ids-are-names makes four calls under the ids bash, bash, bash, submit: an id that is
    the tool's name names no call, so each record is one (4; unique ids would say 2);
    intermediate makes 2; old-style none: 6 calls over 3 exposed runs, no duplicate."""
    tc = constructed.results.setups["m/agent"].tool_calls
    assert (tc.runs_exposed, tc.calls, tc.recorded_calls) == (3, 6, 6)
    assert tc.runs_with_duplicate_records == 0
    assert tc.per_run.mean == 2.0 and tc.recorded_per_run.mean == 2.0
    row = constructed.tool_calls.filter(pl.col("subset") == "all").row(0, named=True)
    assert (row["per_run_mean"], row["recorded_per_run_mean"]) == (2.0, 2.0)
    assert not [w for w in constructed.warnings.get_column("message") if "more than once" in w]


def test_message_limits_are_limits_in_the_scorecard(constructed: gk.Evaluation,
                                                    tmp_path: Path) -> None:
    constructed.write(tmp_path)
    card = (tmp_path / "scorecard.md").read_text(encoding="utf-8")
    # the timing table's limits, limit rate and limit types (1 of 4 runs, a message limit)
    assert "| 1 | 0.250 | message 1 |" in card
    assert "| working P50 (s) |" in card
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    timing = results["setups"]["m/agent"]["timing"]
    assert timing["limits"]["by_type"] == {"message": 1} and timing["timeouts"]["count"] == 0
    assert timing["working_s"]["n"] == 2


# ---------------------------------------------------------------- the real logs, by stdlib


def _samples(path: Path) -> list[dict[str, Any]]:
    if path.suffix == ".eval":
        with zipfile.ZipFile(path) as archive:
            return [json.loads(archive.read(n)) for n in archive.namelist()
                    if n.startswith("samples/")]
    return list(json.loads(path.read_text(encoding="utf-8"))["samples"])


def _starts(event: dict[str, Any], kind: str) -> bool:
    return ((event["event"] == "span_begin" and event.get("type") == kind)
            or (event["event"] == "step" and event.get("action") == "begin"
                and event.get("type") == kind))


@pytest.mark.parametrize("name", sorted(p.name for p in REAL.iterdir()
                                        if p.suffix in (".eval", ".json")))
def test_real_logs_time_from_solver_start_to_scorer_start(name: str) -> None:
    """Every real sample: submitted = its first solver span or step, received = its first
    scorer span or step (these logs have no solvers/scorers spans), E2E within total_time,
    working time = the working clock between the two where the events carry it."""
    path = REAL / name
    runs = {(r.task_id.split("/", 1)[1], r.repeat): r for r in import_inspect(path).runs}
    samples = _samples(path)
    assert len(runs) == len(samples) > 0
    for sample in samples:
        run = runs[(str(sample["id"]), sample["epoch"])]
        solver = next(e for e in sample["events"] if _starts(e, "solver"))
        scorer = next(e for e in sample["events"] if _starts(e, "scorer"))
        assert run.events["submitted"] == solver["timestamp"]
        assert run.events["received"] == scorer["timestamp"]
        e2e = (datetime.fromisoformat(scorer["timestamp"])
               - datetime.fromisoformat(solver["timestamp"])).total_seconds()
        if sample.get("total_time") is not None:
            assert e2e <= sample["total_time"] + 0.1
        if "working_start" in solver:
            assert run.working_s == round(scorer["working_start"] - solver["working_start"], 6)
        else:
            assert run.working_s is None
        assert run.status == "delivered" and run.limit is None


def test_native_working_time_is_its_own_metric_and_mostly_waiting_is_warned() -> None:
    """Two setups, two questions each: fast waits 10 s end to end for 2 s of work (mostly
    waiting: E2E P50 10 > 2 x 2), slow works 8 of 9 s. Per-question working medians are
    compared like E2E."""
    tasks = [{"task_id": t, "prompt": "q"} for t in ("q1", "q2")]

    def run(setup: str, task: str, e2e: int, working: float) -> dict[str, Any]:
        return {"run_id": f"{setup}-{task}", "setup": setup, "task_id": task, "repeat": 1,
                "status": "delivered", "response": {"text": "a"}, "working_s": working,
                "events": {"submitted": "2026-01-01T00:00:00+00:00",
                           "received": f"2026-01-01T00:00:{e2e:02d}+00:00"}}

    runs = [run("fast", "q1", 10, 2.0), run("fast", "q2", 10, 2.0),
            run("slow", "q1", 9, 8.0), run("slow", "q2", 9, 7.0)]
    ev = gk.evaluate(tasks, runs)
    timing = {s: ev.results.setups[s].timing for s in ("fast", "slow")}
    assert (timing["fast"].working_s.p50, timing["slow"].working_s.p50) == (2.0, 7.5)
    waiting = [w for w in ev.warnings.get_column("message") if "mostly waiting" in w]
    assert len(waiting) == 1 and waiting[0].startswith("'fast' is mostly waiting")
    working = ev.comparisons.filter((pl.col("metric") == "working_median_s")
                                    & (pl.col("subset") == "all")).row(0, named=True)
    assert (working["baseline"], working["compared"]) == ("fast", "slow")
    assert (working["mean_a"], working["mean_b"], working["mean_diff_b_minus_a"]) == (
        2.0, 7.5, 5.5)
    assert ev.runs.get_column("working_s").to_list() == [2.0, 2.0, 8.0, 7.0]


def test_without_working_time_no_working_comparison_is_made() -> None:
    ev = gk.evaluate("fixtures/tasks", "fixtures/runs")
    assert "working_median_s" not in ev.comparisons.get_column("metric").to_list()
    assert ev.runs.get_column("working_s").null_count() == ev.runs.height


@pytest.mark.parametrize(("record", "message"), [
    ({"status": "limit"}, "needs a 'limit'"),
    ({"status": "failed", "limit": {"type": "message", "value": 3}}, "only on a run of status"),
    ({"status": "limit", "limit": {"type": "", "value": 3}}, "at least 1 character"),
    ({"status": "limit", "limit": {"type": "time", "value": -1}}, "greater than or equal"),
    ({"status": "failed", "working_s": True}, "valid number"),
    ({"status": "failed", "working_s": -0.5}, "greater than or equal"),
])
def test_limit_and_working_time_contract(tmp_path: Path, record: dict[str, Any],
                                         message: str) -> None:
    line = {"run_id": "r1", "setup": "s", "task_id": "q1", "repeat": 1, **record}
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    loaded = gk.read_inputs([{"task_id": "q1", "prompt": "q"}], path)
    assert not loaded.runs and len(loaded.rejected) == 1
    assert message in loaded.rejected[0].message()


def test_the_latency_chart_shows_working_time(constructed: gk.Evaluation) -> None:
    from grade_kit.presentation import charts

    spec = charts.latency_chart(constructed.runs, constructed.timing, metric="working").to_dict()
    data = [row for rows in spec["datasets"].values() for row in rows]
    curve = [r for r in data if "fraction" in r]
    assert {r["seconds"] for r in curve} == {9.5, 41.25} and {r["n"] for r in curve} == {2}
    rules = {r["statistic"]: r["seconds"] for r in data if "statistic" in r}
    assert rules == {"working_p50": 25.375, "working_p90": 41.25}
    assert all(r["limits"] == 1 for r in data if "statistic" in r)
    assert spec["title"]["text"].startswith("Working time")


def test_timing_charts_show_working_time_or_say_why_there_is_no_e2e(
        constructed: gk.Evaluation) -> None:
    from grade_kit.presentation import charts

    both = charts.timing_charts(constructed.runs, constructed.timing).to_dict()
    titles = [part["title"]["text"] for part in both["vconcat"]]
    assert titles[0].startswith("E2E latency") and titles[1].startswith("Working time")
    tau = gk.evaluate(gk.read_log(REALDATA
                                        / "tau_bench_gpt4o_airline", source="tau-bench"))
    note = charts.timing_charts(tau.runs, tau.timing).to_dict()
    assert note["mark"]["type"] == "text" and "vconcat" not in note
    text = next(iter(note["datasets"].values()))[0]["text"]
    assert text == ("No E2E sample: 200 of 200 delivered runs lack a submitted or received "
                    "timestamp.")
