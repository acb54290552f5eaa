"""Real logs read as their authors meant (docs/adapters.md "Setups and questions",
docs/methodology.md §4 "Coverage", "The source's own metric", "Timing", "Tool calls").

Every log here is a constructed Inspect (or tau) file written to disk in the layouts of the
public agentic benchmarks: a model's main log plus a continuation that re-runs its errored
samples, a one-sample retry and a cancelled log (NYU-CTF, cybench); two tasks over one
dataset (nl2bash's chat and completion variants); runs stopped by a message limit; ids that
are the function's name. Every expected figure is derived by hand in the test.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import grade_kit as gk
from grade_kit.cli import main
from grade_kit.schema import InputError
from grade_kit.standard import rank_intervals
from tests.paths import DATA

BASE = datetime(2025, 6, 1, 10, 0, 0, tzinfo=UTC)


def _at(seconds: float) -> str:
    return (BASE + timedelta(seconds=seconds)).isoformat()


def sample(sid: int, score: Any = "C", *, epoch: Any = 1, start: float = 0.0,
           e2e: float = 10.0, total: float | None = None, limit: bool = False,
           error: bool = False, calls: tuple[str, ...] = ()) -> dict[str, Any]:
    """One Inspect sample: sample_init at ``start``, a tool event per call id, and (unless
    it errored) the score event ``e2e`` seconds later."""
    events: list[dict[str, Any]] = [{"event": "sample_init", "timestamp": _at(start)}]
    for i, call in enumerate(calls):
        events.append({"event": "tool", "id": call, "function": call.split("-")[0],
                       "timestamp": _at(start + 1 + i), "completed": _at(start + 1.5 + i)})
    if not error:
        events.append({"event": "score", "timestamp": _at(start + e2e)})
    out: dict[str, Any] = {
        "id": sid, "epoch": epoch, "input": f"question {sid}", "target": "flag",
        "output": {"choices": [{"message": {"content": f"answer {sid}"}}]},
        "scores": {} if error or score is None else {"match": {"value": score}},
        "events": events, "total_time": total}
    if limit:
        out["limit"] = {"type": "message", "limit": 30}
    if error:
        out["error"] = {"message": "sandbox died"}
    return out


def write_log(path: Path, model: str, task: str, samples: list[dict[str, Any]],
              created: str, *, dataset: str | None = None, status: str = "success",
              metric: str = "accuracy", named: bool = True) -> Path:
    """An Inspect JSON log; its dataset is named ``dataset`` (default the task), or not named
    at all (``named=False``, as a memory dataset leaves it)."""
    header = {
        "version": 2, "status": status,
        "eval": {"eval_id": f"id-{path.stem}", "run_id": f"run-{path.stem}",
                 "created": created, "task": task, "model": model,
                 "dataset": {"name": dataset or task} if named else {"samples": len(samples)},
                 "config": {"epochs": 1}},
        "plan": {"name": "plan", "steps": [{"solver": "react", "params": {}}], "config": {}},
        "results": {"scores": [{"name": "match", "metrics": {
            metric: {"name": metric, "value": 0.0}, "stderr": {"name": "stderr", "value": 0}}}]},
        "samples": samples}
    path.write_text(json.dumps(header), encoding="utf-8")
    return path


@pytest.fixture()
def ctf(tmp_path: Path) -> Path:
    """Five CTF questions. o3: a main log where samples 2 and 4 errored, a continuation
    that re-ran them (2 solved, 4 errored again), a one-sample retry of 4 (solved) and a
    cancelled log holding sample 5 only. gpt-35: one complete log. mini: one sample of
    five (a cancelled log)."""
    logs = tmp_path / "logs"
    logs.mkdir()
    write_log(logs / "o3-main.json", "openai/o3", "ctf",
              [sample(1), sample(2, error=True), sample(3, "I"), sample(4, error=True)],
              "2025-06-01T10:00:00+00:00")
    write_log(logs / "o3-continue.json", "openai/o3", "ctf",
              [sample(2), sample(4, error=True)], "2025-06-02T10:00:00+00:00")
    write_log(logs / "o3-retry.json", "openai/o3", "ctf", [sample(4)],
              "2025-06-03T10:00:00+00:00")
    write_log(logs / "o3-cancelled.json", "openai/o3", "ctf", [sample(5)],
              "2025-06-04T10:00:00+00:00", status="cancelled")
    write_log(logs / "gpt35.json", "openai/gpt-3.5-turbo", "ctf",
              [sample(1), sample(2, "I"), sample(3, "I"), sample(4, "I"), sample(5, "I")],
              "2025-06-01T11:00:00+00:00")
    write_log(logs / "mini.json", "openai/gpt-4o-mini", "ctf", [sample(1, "I")],
              "2025-06-01T12:00:00+00:00", status="cancelled")
    return logs


def test_continuation_retry_and_cancelled_logs_are_one_setup(ctf: Path) -> None:
    ev = gk.evaluate(gk.read_log(ctf, source="inspect"))
    assert set(ev.results.setups) == {"openai/o3", "openai/gpt-3.5-turbo",
                                      "openai/gpt-4o-mini"}
    o3 = ev.results.setups["openai/o3"]
    # primary per question: 1 C (main), 2 C (continuation), 3 I (main), 4 C (retry),
    # 5 C (cancelled log): 4 of N = 5 x 1
    assert (o3.grades.N, o3.grades.counts.resolved, o3.grades.counts.not_run) == (5, 4, 0)
    primary = (ev.runs.filter((pl.col("setup") == "openai/o3") & pl.col("is_primary"))
               .sort("task_id").get_column("run_id").to_list())
    assert primary == ["id-o3-main/ctf/1/epoch-1", "id-o3-continue/ctf/2/epoch-1",
                       "id-o3-main/ctf/3/epoch-1", "id-o3-retry/ctf/4/epoch-1",
                       "id-o3-cancelled/ctf/5/epoch-1"]
    # the earlier attempts are listed, never counted: 2 (main), 4 (main), 4 (continuation)
    assert sorted((r.run_id, r.attempt_of) for r in o3.reruns) == [
        ("id-o3-continue/ctf/4/epoch-1", "id-o3-retry/ctf/4/epoch-1"),
        ("id-o3-main/ctf/2/epoch-1", "id-o3-continue/ctf/2/epoch-1"),
        ("id-o3-main/ctf/4/epoch-1", "id-o3-retry/ctf/4/epoch-1")]
    merged = [w for w in ev.warnings.get_column("message").to_list() if "logs merged" in w]
    assert merged == ["setup 'openai/o3': 4 logs merged (o3-main.json, o3-continue.json, "
                      "o3-retry.json, o3-cancelled.json); 2 sample(s) run in more than one "
                      "of them: the latest complete attempt counts, the others are listed "
                      "as its attempts"]
    # the source's own metric: match accuracy over the primary runs' scores 1,1,0,1,1:
    # mean 0.8; sample sd sqrt(((0.2^2) x 4 + 0.8^2) / 4) = sqrt(0.2); stderr sqrt(0.2/5)
    # = 0.2
    metric = o3.source_metrics["match accuracy"]
    assert (metric.questions, metric.runs, metric.mean) == (5, 5, 0.8)
    assert metric.stderr == pytest.approx(0.2, abs=1e-15)


def test_a_mostly_unrun_setup_is_shown_not_ranked(ctf: Path) -> None:
    ev = gk.evaluate(gk.read_log(ctf, source="inspect"))
    mini = ev.results.setups["openai/gpt-4o-mini"]
    assert mini.grades.run_coverage == 0.2  # 1 of 5 planned slots
    assert ev.results.plan.unranked == {"openai/gpt-4o-mini": 0.2}
    # one pair compared (o3 vs gpt-3.5), so the Holm family is that one pair
    pairs = {(c.baseline, c.compared) for c in ev.results.comparisons}
    assert pairs == {("openai/gpt-3.5-turbo", "openai/o3")}
    # common subset over the ranked setups: question 1 (resolved by both); mini's unresolved
    # question 1 would otherwise empty it
    assert ev.results.common_subset.tasks == ["ctf/1"]
    # the summary: ranked first by resolved rate, mini last with its coverage and no rate
    rows = ev.summary.frame.to_dicts()
    assert [r["setup"] for r in rows] == ["openai/o3", "openai/gpt-3.5-turbo",
                                          "openai/gpt-4o-mini"]
    assert rows[2]["run_coverage"] == 0.2 and rows[2]["resolved_rate"] is None
    assert rows[0]["resolved_rate"] == 0.8
    assert "Not ranked" in ev.summary.note and "openai/gpt-4o-mini" in ev.summary.note
    assert any("not ranked" in w for w in ev.warnings.get_column("message").to_list())
    ranks = rank_intervals(ev.standard.per_question, "resolved_rate")
    assert set(ranks.get_column("setup").to_list()) == {"openai/o3", "openai/gpt-3.5-turbo"}


def test_holm_family_counts_model_pairs_only(ctf: Path, tmp_path: Path) -> None:
    """With a phantom setup per extra log the family would be 10 pairs; by model it is 1,
    so p_holm equals p."""
    ev = gk.evaluate(gk.read_log(ctf, source="inspect"))
    figure = next(f for c in ev.results.comparisons if c.subset == "all"
                  for f in c.figures if f.metric == "resolved_rate")
    # McNemar on 5 paired questions: o3 alone resolved 2, 4, 5 (b = 3), gpt-3.5 alone
    # none (c = 0): p = 2 x C(3, 0) / 2^3 = 0.25
    assert figure.p_value == 0.25 and figure.p_holm == 0.25


def test_setup_by_overrides(ctf: Path) -> None:
    by_file = gk.read_log(ctf, setup_by="file", source="inspect")
    assert "openai/o3 [o3-retry.json]" in {r.setup for r in by_file.runs}
    mapped = gk.read_log(ctf, setup_by={"o3-retry.json": "o3 retry"}, source="inspect")
    assert {r.setup for r in mapped.runs if "o3" in r.setup} == {"openai/o3", "o3 retry"}
    with pytest.raises(ValueError, match="setup_by 'dataset'"):
        gk.read_log(ctf, setup_by="dataset", source="inspect")  # type: ignore[arg-type]
    # a mapping naming a file that is not among the logs is an error, not ignored
    with pytest.raises(InputError, match=r"names 1 file.* 'o3-retyr\.json'"):
        gk.read_log(ctf, setup_by={"o3-retyr.json": "o3 retry"}, source="inspect")


def test_cli_import_setup_by(ctf: Path, tmp_path: Path) -> None:
    assert main(["import", "inspect", str(ctf), "--out", str(tmp_path / "imp"),
                 "--setup-by", "file"]) == 0
    runs = [json.loads(x) for x in (tmp_path / "imp" / "runs.jsonl").read_text().splitlines()]
    assert len({r["setup"] for r in runs}) == 6
    mapping = tmp_path / "setups.json"
    mapping.write_text(json.dumps({"o3-retry.json": "o3 retry"}))
    assert main(["import", "inspect", str(ctf), "--out", str(tmp_path / "imp2"),
                 "--setup-by", str(mapping)]) == 0
    runs = [json.loads(x) for x in (tmp_path / "imp2" / "runs.jsonl").read_text().splitlines()]
    assert {r["setup"] for r in runs} == {"openai/o3", "o3 retry", "openai/gpt-3.5-turbo",
                                          "openai/gpt-4o-mini"}


def test_two_tasks_over_one_dataset_ask_the_same_questions(tmp_path: Path) -> None:
    """nl2bash-like: a chat and a completion task over the same 3 dataset ids, scores on
    0 / 0.5 / 1: two setups over 3 questions (not 6), compared pair by pair, with the
    source's mean score."""
    logs = tmp_path / "nl2bash"
    logs.mkdir()
    write_log(logs / "chat.json", "openai/gpt-4o", "nl2bash_chat",
              [sample(1, 1.0), sample(2, 0.5), sample(3, 0.0)], "2025-06-01T10:00:00+00:00",
              dataset="nl2bash", metric="mean")
    write_log(logs / "completion.json", "openai/gpt-4o", "nl2bash_completion",
              [sample(1, 0.5), sample(2, 0.0), sample(3, 0.0)], "2025-06-01T11:00:00+00:00",
              dataset="nl2bash", metric="mean")
    ev = gk.evaluate(gk.read_log(logs, source="inspect"))
    assert set(ev.results.setups) == {"openai/gpt-4o [nl2bash_chat]",
                                      "openai/gpt-4o [nl2bash_completion]"}
    assert ev.results.common_subset.of_questions == 3
    chat = ev.results.setups["openai/gpt-4o [nl2bash_chat]"]
    # mean score (1 + 0.5 + 0) / 3 = 0.5; sd 0.5, stderr 0.5 / sqrt 3
    metric = chat.source_metrics["match mean"]
    assert metric.mean == 0.5 and metric.stderr == pytest.approx(0.5 / math.sqrt(3), 1e-15)
    completion = ev.results.setups["openai/gpt-4o [nl2bash_completion]"].source_metrics
    assert completion["match mean"].mean == pytest.approx(0.5 / 3, abs=1e-15)
    all_pair = next(c for c in ev.results.comparisons if c.subset == "all")
    resolved = next(f for f in all_pair.figures if f.metric == "resolved_rate")
    assert resolved.n_questions == 3 and resolved.label == "measured"


def test_logs_that_name_no_dataset_share_the_questions_whose_ids_they_share(
        tmp_path: Path) -> None:
    """A chat and a completion task over the same 3 sample ids, run by two models, in logs
    that name no dataset: 3 questions (not 6), both setups planned on all 3, question 2 in
    the common subset, and the two compared on all 3 (before: 6 questions, a common subset
    of 0, the pair untested)."""
    logs = tmp_path / "logs"
    logs.mkdir()
    write_log(logs / "a.json", "model-a", "bench_chat", [sample(1), sample(2), sample(3, "I")],
              "2025-06-01T10:00:00+00:00", named=False)
    write_log(logs / "b.json", "model-b", "bench_completion",
              [sample(1, "I"), sample(2), sample(3, "I")], "2025-06-01T11:00:00+00:00",
              named=False)
    ev = gk.evaluate(gk.read_log(logs, source="inspect"))
    assert sorted(t.task_id for t in ev.inputs.tasks) == ["1", "2", "3"]
    assert ev.results.common_subset.of_questions == 3
    assert ev.results.common_subset.tasks == ["2"]  # the one both resolved
    pair = next(c for c in ev.results.comparisons if c.subset == "all")
    resolved = next(f for f in pair.figures if f.metric == "resolved_rate")
    assert resolved.n_questions == 3 and resolved.label != "untested direction"
    # 2 of 3 against 1 of 3
    assert ev.results.setups["model-a"].grades.counts.resolved == 2
    assert ev.results.setups["model-b"].grades.counts.resolved == 1


def test_question_ids_tell_every_dataset_and_sample_apart(tmp_path: Path) -> None:
    """Dataset ``pop/x`` sample ``1`` and dataset ``pop`` sample ``x/1`` are two questions (a
    joined string made them one): read together, those two ids alone are escaped; a log whose
    ids collide with none keeps them as it wrote them (``intercode-ctf_crypto/task_12``)."""
    from grade_kit.adapters.common import escaped_question_id, question_id

    assert question_id("pop/x", "1") == "pop/x/1" == question_id("pop", "x/1")
    assert escaped_question_id("pop/x", "1") == "pop%2Fx/1"
    assert escaped_question_id("pop", "x/1") == "pop/x%2F1"
    assert escaped_question_id("a%2Fb", 1) == "a%252Fb/1" != escaped_question_id("a/b", 1)
    assert question_id(None, 7) == "7" and question_id(None, "a/b") == "a/b"
    assert escaped_question_id(None, "a/b") == "a%2Fb"
    logs = tmp_path / "logs"
    logs.mkdir()
    write_log(logs / "a.json", "m", "t1", [{**sample(1), "id": "1"}],
              "2025-06-01T10:00:00+00:00", dataset="pop/x")
    write_log(logs / "b.json", "m", "t2", [{**sample(1), "id": "x/1"}],
              "2025-06-01T11:00:00+00:00", dataset="pop")
    write_log(logs / "c.json", "m", "t3", [{**sample(1), "id": "intercode-ctf_crypto/task_12"},
                                          {**sample(2), "id": "50%"}],
              "2025-06-01T12:00:00+00:00", named=False)
    inputs = gk.read_log(logs, source="inspect")
    assert sorted(t.task_id for t in inputs.tasks) == [
        "50%", "intercode-ctf_crypto/task_12", "pop%2Fx/1", "pop/x%2F1"]
    assert {r.task_id for r in inputs.runs} == {t.task_id for t in inputs.tasks}
    assert any("read the same for two (dataset, sample) pairs (pop/x/1)" in n
               for n in inputs.notes), inputs.notes


def test_a_dataset_mapping_keys_logs_by_the_dataset_named(tmp_path: Path) -> None:
    """Two tasks whose logs name different datasets are one dataset when the caller says so,
    by task name or by file name; a mapping naming no log is an error; the CLI takes it as
    ``--dataset TASK=DATASET``."""
    logs = tmp_path / "logs"
    logs.mkdir()
    write_log(logs / "chat.json", "m", "bench_chat", [sample(1), sample(2)],
              "2025-06-01T10:00:00+00:00", dataset="bench_chat_v1")
    write_log(logs / "comp.json", "m", "bench_completion", [sample(1, "I"), sample(2)],
              "2025-06-01T11:00:00+00:00", dataset="bench_completion_v1")
    apart = gk.read_log(logs, source="inspect")
    assert len(apart.tasks) == 4
    for mapping in ({"bench_chat": "bench", "bench_completion": "bench"},
                    {"chat.json": "bench", "bench_completion": "bench"}):
        together = gk.read_log(logs, source="inspect", datasets=mapping)
        assert sorted(t.task_id for t in together.tasks) == ["bench/1", "bench/2"]
        assert sorted({r.setup for r in together.runs}) == ["m [bench_chat]",
                                                           "m [bench_completion]"]
    with pytest.raises(InputError, match="'nope'"):
        gk.read_log(logs, source="inspect", datasets={"nope": "bench"})
    out = tmp_path / "imported"
    assert main(["import", "inspect", str(logs), "--out", str(out),
                 "--dataset", "bench_chat=bench", "--dataset", "bench_completion=bench"]) == 0
    lines = (out / "tasks.jsonl").read_text().splitlines()
    ids = {json.loads(line)["task_id"] for line in lines}
    assert ids == {"bench/1", "bench/2"}
    assert main(["import", "inspect", str(logs), "--out", str(tmp_path / "x"),
                 "--dataset", "bench_chat"]) == 1  # an input error, named


def test_logs_giving_one_question_two_golds_are_said(tmp_path: Path) -> None:
    """Two logs that name no dataset and whose sample 1 has different targets: the first
    log's question is kept and a warning names both logs and the question."""
    logs = tmp_path / "logs"
    logs.mkdir()
    write_log(logs / "a.json", "a", "t1", [sample(1)], "2025-06-01T10:00:00+00:00",
              named=False)
    write_log(logs / "b.json", "b", "t2", [{**sample(1), "target": "other"}],
              "2025-06-01T11:00:00+00:00", named=False)
    inputs = gk.read_log(logs, source="inspect")
    assert [t.reference for t in inputs.tasks] == ["flag"]
    (note,) = [w.message for w in inputs.warnings if "gold" in w.message]
    assert note.startswith("b.json gives 1 question(s) another gold answer than a.json")
    assert "(1)" in note


def test_time_to_outcome_and_the_source_total(tmp_path: Path) -> None:
    """Delivered E2E 10 s and 20 s; a third delivered run's E2E of 100 s exceeds its
    total_time of 50 s (a host sleep): left out of E2E and counted; a message-limit run
    stopped after 40 s. E2E n = 2 (10, 20); time to outcome n = 3 (10, 20, 40), P50 20."""
    path = write_log(tmp_path / "agent.json", "m", "cyber", [
        sample(1, e2e=10.0, total=12.0, calls=("bash", "bash", "python")),
        sample(2, e2e=20.0, total=25.0),
        sample(3, e2e=100.0, total=50.0),
        sample(4, "I", e2e=40.0, total=41.0, limit=True,
               calls=("c1", "c2", "c3", "c4", "c5"))], "2025-06-01T10:00:00+00:00")
    ev = gk.evaluate(gk.read_log(path, source="inspect"))
    timing = ev.results.setups["m"].timing
    assert (timing.e2e_s.n, timing.e2e_s.mean) == (2, 15.0)
    assert timing.e2e_beyond_source_total == 1 and timing.e2e_out_of_order == 0
    assert timing.time_to_outcome_s is not None
    assert (timing.time_to_outcome_s.n, timing.time_to_outcome_s.p50,
            timing.time_to_outcome_s.max) == (3, 20.0, 40.0)
    assert timing.limits.count == 1
    assert ev.standard.e2e.filter(pl.col("task_id") == "cyber/3").height == 0
    # tool calls: ids are function names in run 1 (bash, bash, python), so each record is
    # a call: delivered runs 3, 0, 0 -> mean 1.0 (unique ids would say 2/3);
    # over every attempt (the limit run's 5 calls too): 3, 0, 0, 5 -> mean 2.0
    calls = ev.results.setups["m"].tool_calls
    assert calls.per_run.mean == 1.0 and calls.runs_with_duplicate_records == 0
    assert calls.attempted_runs_exposed == 4
    assert calls.attempted_per_run is not None and calls.attempted_per_run.mean == 2.0
    row = ev.summary.frame.to_dicts()[0]
    assert row["tool_calls_per_run"] == 1.0 and row["outcome_p50"] == 20.0


@pytest.mark.parametrize(("field", "value", "where"), [
    ("score", float("nan"), "samples[1].scores.match.value"),
    ("score", float("inf"), "samples[1].scores.match.value"),
    ("epoch", 1.5, "samples[1].epoch"),
    ("epoch", "2", "samples[1].epoch"),
    ("epoch", True, "samples[1].epoch"),
])
def test_inspect_values_are_rejected_not_coerced(tmp_path: Path, field: str, value: Any,
                                                 where: str) -> None:
    bad = sample(2)
    if field == "score":
        bad["scores"]["match"]["value"] = value
    else:
        bad["epoch"] = value
    path = write_log(tmp_path / "log.json", "m", "t", [sample(1), bad],
                     "2025-06-01T10:00:00+00:00")
    inputs = gk.read_log(path, source="inspect")
    assert [r.task_id for r in inputs.runs] == ["t/1"]  # the good sample goes on
    assert len(inputs.rejected) == 1
    message = inputs.rejected[0].message()
    assert message.startswith(f"{path}: field '{where}': ")


@pytest.mark.parametrize(("key", "value"), [
    ("reward", float("inf")), ("reward", float("nan")), ("reward", "1"), ("reward", True),
    ("trial", 0.5), ("trial", "0"),
])
def test_tau_bench_values_are_rejected_not_coerced(tmp_path: Path, key: str,
                                                   value: Any) -> None:
    def trial(task: int, reward: Any = 1.0, number: Any = 0) -> dict[str, Any]:
        return {"task_id": task, "reward": reward, "trial": number, "info": {},
                "traj": [{"role": "assistant", "content": "done"}]}

    bad = trial(2, **({"reward": value} if key == "reward" else {"number": value}))
    path = tmp_path / "m-airline.json"
    path.write_text(json.dumps([trial(1), bad]), encoding="utf-8")
    inputs = gk.read_log(path, source="tau-bench")
    assert [r.task_id for r in inputs.runs] == ["airline/1"]
    assert [r.message() for r in inputs.rejected] == [
        f"{path}: field '[1].{key}': {key} {value!r} is not a "
        + ("finite number" if key == "reward" else "whole number >= 0")]


def test_tau2_reward_must_be_finite(tmp_path: Path) -> None:
    source = sorted((DATA / "realdata"
                     / "tau2_grok_airline_relaxed_task8").glob("*.json"))[0]
    data = json.loads(source.read_text(encoding="utf-8"))
    data["simulations"][0]["reward_info"]["reward"] = float("inf")
    path = tmp_path / "tau2.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    inputs = gk.read_log(path, source="tau-bench")
    assert len(inputs.runs) == len(data["simulations"]) - 1
    assert [r.field for r in inputs.rejected] == ["simulations[0].reward_info.reward"]


def test_logs_written_on_one_line_are_read_as_logs(ctf: Path) -> None:
    """Each constructed log is one line of JSON (a short one-line log once passed for a
    one-record JSONL file): given where tasks go, the folder is read as Inspect logs."""
    assert (ctf / "gpt35.json").read_text(encoding="utf-8").count("\n") == 0
    ev = gk.evaluate(ctf)
    assert set(ev.results.setups) == {"openai/o3", "openai/gpt-3.5-turbo",
                                      "openai/gpt-4o-mini"}
    frame = ev.timing.filter(pl.col("subset") == "all").sort("setup")
    assert frame.get_column("outcome_n").to_list() == [5, 1, 5]


def test_a_retry_log_that_reuses_its_originals_ids_keeps_both(tmp_path: Path) -> None:
    """Two logs with one eval id (a retry that kept its original's ids): the retry's run
    gets ``@<file>``, its grade follows it, and it is primary over the errored original."""
    first = write_log(tmp_path / "a.json", "m", "t", [sample(1, error=True), sample(2)],
                      "2025-06-01T10:00:00+00:00")
    second = write_log(tmp_path / "b.json", "m", "t", [sample(1)], "2025-06-02T10:00:00+00:00")
    for path in (first, second):
        data = json.loads(path.read_text(encoding="utf-8"))
        data["eval"]["eval_id"] = "same"
        path.write_text(json.dumps(data), encoding="utf-8")
    inputs = gk.read_log(tmp_path, source="inspect")
    assert not inputs.rejected
    ev = gk.evaluate(inputs)
    primary = ev.runs.filter(pl.col("is_primary")).sort("task_id")
    assert primary.get_column("run_id").to_list() == ["same/t/1/epoch-1@b.json",
                                                      "same/t/2/epoch-1"]
    assert primary.get_column("grade").to_list() == ["resolved", "resolved"]


GENERATED = DATA / "inspect_generated"


def test_logs_written_by_inspect_read_as_inspects_analysis_reads_them() -> None:
    """Logs Inspect 0.3.285 wrote itself (zstd .eval members; an eval-retry continuation
    that carries completed samples over by uuid; a one-sample retry; message limits; two
    tasks over one dataset). Expected per model: what Inspect's own analysis API gives with
    the latest complete sample winning (tests/data/inspect_generated/compare.py), and the
    accuracy or mean and stderr each final log states in its own results."""
    ev = gk.evaluate(gk.read_log([GENERATED / "ctf", GENERATED / "nl2bash"], source="inspect"))
    assert ev.rejected.height == 0
    got = {name: (s.grades.N, s.grades.counts.resolved, s.timing.limits.count,
                  s.timing.failures.count)
           for name, s in ev.results.setups.items()}
    assert got == {"mockllm/alpha": (6, 4, 1, 0), "mockllm/beta": (6, 2, 2, 0),
                   "mockllm/gamma [nl2bash_chat]": (5, 1, 0, 0),
                   "mockllm/gamma [nl2bash_completion]": (5, 2, 0, 0)}
    metrics = {name: {k: (m.mean, m.stderr) for k, m in s.source_metrics.items()}
               for name, s in ev.results.setups.items()}
    assert metrics == {
        "mockllm/alpha": {"flag accuracy": (0.6666666666666666, 0.210818510677892)},
        "mockllm/beta": {"flag accuracy": (0.3333333333333333, 0.210818510677892)},
        "mockllm/gamma [nl2bash_chat]": {"graded mean": (0.5, 0.18439088914585774)},
        "mockllm/gamma [nl2bash_completion]": {
            "graded mean": (0.44000000000000006, 0.2315167380558045)}}
    alpha = ev.results.setups["mockllm/alpha"]
    # attempts listed: the main log's errored 2 and 4 (the retry re-ran them) and the
    # retry's carried-over copy of 3 (the one-sample retry re-ran it); the 4 other copies
    # the retry carried over unchanged are one attempt each, not re-runs
    assert sorted((r.task_id, r.status) for r in alpha.reruns) == [
        ("ctf/2", "failed"), ("ctf/3", "delivered"), ("ctf/4", "failed")]
    (merged,) = [w for w in ev.warnings.get_column("message").to_list() if "merged" in w]
    assert "3 logs merged" in merged and "4 completed sample(s) carried over" in merged
    # the two nl2bash tasks ask the same 5 questions: compared on all 5
    pair = next(c for c in ev.results.comparisons if c.subset == "all"
                and "gamma" in c.baseline)
    assert pair.questions == 5


def test_an_infinite_time_or_limit_is_no_figure(tmp_path: Path) -> None:
    """total_time and working_time of Infinity, a limit of Infinity: read as absent (one
    rule, adapters.common.non_negative), never a crash of the whole log."""
    limited = sample(2, limit=True)
    limited["limit"]["limit"] = float("inf")
    timed = sample(1, total=float("inf"))
    timed["working_time"] = float("inf")
    path = write_log(tmp_path / "log.json", "m", "t", [timed, limited],
                     "2025-06-01T10:00:00+00:00")
    inputs = gk.read_log(path, source="inspect")
    assert not inputs.rejected and len(inputs.runs) == 2
    first, second = sorted(inputs.runs, key=lambda r: r.task_id)
    assert first.source is not None and first.source.total_s is None
    assert first.metadata["working_time"] is None
    assert second.limit is not None and second.limit.value is None
