"""The LLM judge over an OpenAI-compatible endpoint (the demo server's judge model on
127.0.0.1): same verdicts as the rule judge it stands for, anonymised prompts, a verdict
cache that asks nothing twice, and unusable answers kept as null with a reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import grade_kit as gk
from grade_kit.demo.server import DemoServer
from grade_kit.judges import JUDGES
from grade_kit.judges.llm import LLMJudge, judge_prompt
from grade_kit.reading.records import load_runs
from grade_kit.reading.task_files import load_tasks
from tests.paths import FIXTURES

TASKS = load_tasks(FIXTURES / "tasks", FIXTURES / "packs").records
RUNS = [r for r in load_runs(FIXTURES / "runs" / "hasty.jsonl", TASKS).records
        if r.task_id in {t.task_id for t in TASKS[:3]}]


@pytest.fixture(scope="module")
def server() -> DemoServer:
    srv = DemoServer(TASKS, FIXTURES / "packs").start()
    yield srv  # type: ignore[misc]
    srv.stop()


def test_the_judge_model_gives_the_rule_judges_verdicts(server: DemoServer,
                                                          tmp_path: Path) -> None:
    judge = LLMJudge(server.url, "judge", cache=tmp_path / "cache.jsonl")
    ours = {(j.run_id, j.dimension): j for j in judge(TASKS, RUNS)}
    rules = {(j.run_id, j.dimension): j for j in JUDGES["rules"](TASKS, RUNS)}
    assert ours.keys() == rules.keys() and ours
    for key, judgement in ours.items():
        assert judgement.score == rules[key].score and judgement.reason == rules[key].reason
        assert judgement.judge == "llm:judge"
        assert judgement.provenance is not None and judgement.provenance["cache_hit"] is False
    assert judge.requests == len({r.run_id for r in RUNS if r.status == "delivered"})


def test_cached_verdicts_are_not_requested_again(server: DemoServer, tmp_path: Path) -> None:
    cache = tmp_path / "cache.jsonl"
    first = LLMJudge(server.url, "judge", cache=cache)
    first(TASKS, RUNS)
    again = LLMJudge(server.url, "judge", cache=cache)
    judgements = again(TASKS, RUNS)
    assert again.requests == 0
    assert all(j.provenance and j.provenance["cache_hit"] for j in judgements)
    ev = gk.evaluate(TASKS, RUNS, judge=again)
    assert ev.leaderboard["dimensions_computed"].to_list() == [6]


def test_the_prompt_is_anonymised() -> None:
    run = RUNS[0]
    task = next(t for t in TASKS if t.task_id == run.task_id)
    prompt = judge_prompt(task, run)
    for leak in (run.run_id, run.setup, "submitted", "received", "tool", "call_"):
        assert leak not in prompt, leak
    assert task.prompt in prompt


def test_an_unusable_judge_gives_null_with_a_reason(tmp_path: Path) -> None:
    judge = LLMJudge("http://127.0.0.1:9/v1", "judge", timeout_s=2)
    judgements = judge(TASKS, RUNS[:1])
    assert judgements and all(j.score is None and j.reason for j in judgements)
    assert "could not be asked" in (judgements[0].reason or "")
    json.dumps([j.model_dump() for j in judgements])
