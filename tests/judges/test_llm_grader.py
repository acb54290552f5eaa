"""The LLM grader, its bias controls and the claim fallback over a loopback
chat-completions server: the demo server's judge model (which answers with the rule grader's
records) and a deliberately biased model that always prefers the first answer and grades
long answers higher. No paid service, no network."""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

import grade_kit as gk
from grade_kit.demo.server import DemoServer
from grade_kit.judges import JUDGES
from grade_kit.judges.calibration_review import CALIBRATION_FORMS, calibration_review
from grade_kit.judges.llm import LLMClaimJudge
from grade_kit.judges.llm_grader import (
    CONCLUSION_STEP,
    FULFILMENT_STEP,
    PAIRWISE_STEP,
    LLMGrader,
    grader_prompts,
)
from grade_kit.judges.rule_grader import RuleGrader
from grade_kit.reading.records import load_runs
from grade_kit.reading.task_files import load_tasks
from tests.conftest import make_run, make_task
from tests.paths import FIXTURES

TASKS = load_tasks(FIXTURES / "tasks", FIXTURES / "packs").records
SOME = {t.task_id for t in TASKS[:4]}
RUNS = [r for s in ("careful", "hasty", "erratic")
        for r in load_runs(FIXTURES / "runs" / f"{s}.jsonl", TASKS).records if r.task_id in SOME]


@pytest.fixture(scope="module")
def server() -> Iterator[DemoServer]:
    srv = DemoServer(TASKS, FIXTURES / "packs").start()
    yield srv
    srv.stop()


class _Biased(BaseHTTPRequestHandler):
    """Prefers the first answer whatever it says; grades an answer with a text as full and
    one without as partial (swayed by length); counts requests."""

    asked: ClassVar[list[str]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        content = body["messages"][-1]["content"]
        type(self).asked.append(content)
        if PAIRWISE_STEP in content:
            verdict: dict[str, Any] = {"better": "first", "reason": "it came first"}
        elif FULFILMENT_STEP in content:
            long = '"text": ""' not in content
            verdict = {"request_fulfilment": "full" if long else "partial",
                       "needs_more_information": False, "reason": "looks thorough" if long
                       else "looks thin"}
        elif CONCLUSION_STEP in content:
            verdict = {"core_conclusion": "correct", "reason": "fine"}
        else:
            verdict = {"stated": True, "reason": "close enough"}
        alias = re.search(r"\nANSWER ([A-Z0-9-]+): ", content)
        if alias:  # a verdict names the answer it scored
            verdict["answer"] = alias.group(1)
        data = json.dumps({"choices": [{"message": {"role": "assistant",
                                                    "content": json.dumps(verdict)}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture()
def biased() -> Iterator[str]:
    _Biased.asked = []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Biased)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()
    srv.server_close()


def test_the_demo_judge_model_grades_as_the_rule_grader(server: DemoServer,
                                                         tmp_path: Path) -> None:
    grader = LLMGrader(server.url, "judge", cache=tmp_path / "grades.jsonl", progress=False)
    ours = {g.run_id: g for g in grader(TASKS, RUNS)}
    rules = {g.run_id: g for g in RuleGrader()(TASKS, RUNS)}
    assert ours.keys() == rules.keys() and len(ours) > 20
    for run_id, g in ours.items():
        r = rules[run_id]
        assert (g.core_conclusion, g.request_fulfilment, g.material_error, g.claim,
                g.evidence, g.needs_more_information) == (
            r.core_conclusion, r.request_fulfilment, r.material_error, r.claim, r.evidence,
            r.needs_more_information), run_id
        assert g.grader == "llm-grader:judge"
        assert g.provenance and g.provenance["cache_hit"] == [False, False]
    assert grader.requests == 2 * len(ours)  # two separate judgements per run
    ev = gk.evaluate(TASKS, RUNS, grader=grader)
    assert ev.results.provenance.graders == ["llm-grader:judge"]
    assert sum(s.grades.ungraded for s in ev.results.setups.values()) == 0


def test_cached_grades_are_not_requested_again(server: DemoServer, tmp_path: Path) -> None:
    cache = tmp_path / "grades.jsonl"
    LLMGrader(server.url, "judge", cache=cache, progress=False)(TASKS, RUNS[:6])
    again = LLMGrader(server.url, "judge", cache=cache, progress=False)
    grades = again(TASKS, RUNS[:6])
    assert again.requests == 0 and grades
    assert all(g.provenance and g.provenance["cache_hit"] == [True, True] for g in grades)


def test_the_grader_prompts_are_anonymised_and_carry_the_reference() -> None:
    run = next(r for r in RUNS if r.status == "delivered")
    task = next(t for t in TASKS if t.task_id == run.task_id)
    for prompt in grader_prompts(task, run, "A-XYZ123"):
        for leak in (run.run_id, run.setup, "submitted", "received", "call_"):
            assert leak not in prompt, leak
        assert "ANSWER A-XYZ123: " in prompt and task.prompt in prompt
        assert '"gold_facts"' in prompt and str(task.gold_facts[0].metric) in prompt


def test_aliases_are_seeded_per_question_and_recorded(tmp_path: Path, biased: str) -> None:
    runs = [make_run("r1", text="x", findings=["a"]), make_run("r2", repeat=2, text="y")]
    task = make_task()
    first = {g.run_id: g.provenance for g in LLMGrader(biased, "m", seed=1, progress=False)(
        [task], runs)}
    again = {g.run_id: g.provenance for g in LLMGrader(biased, "m", seed=1, progress=False)(
        [task], runs[::-1])}
    other = {g.run_id: g.provenance for g in LLMGrader(biased, "m", seed=2, progress=False)(
        [task], runs)}
    assert first == {k: {**v, "cache_hit": [False, False]} for k, v in again.items()}
    assert first["r1"]["alias"] != first["r2"]["alias"]  # type: ignore[index]
    assert first["r1"]["alias"] != other["r1"]["alias"]  # type: ignore[index]
    assert first["r1"]["alias_seed"] == 1  # type: ignore[index]


def test_a_position_swap_that_changes_the_verdict_is_flagged(biased: str,
                                                             server: DemoServer) -> None:
    a, b = _two_answers()
    verdicts = LLMGrader(biased, "m", progress=False).compare(TASKS, RUNS, [(a, b)])
    assert len(verdicts) == 1 and verdicts[0].flagged and verdicts[0].preferred is None
    assert (verdicts[0].ab, verdicts[0].ba) == (a, b)
    fair = LLMGrader(server.url, "judge", progress=False).compare(TASKS, RUNS, [(a, b)])
    assert not fair[0].flagged and fair[0].preferred in (a, b, "tie")


def _two_answers() -> tuple[str, str]:
    delivered = [r for r in RUNS if r.status == "delivered" and r.repeat == 1]
    first = delivered[0]
    second = next(r for r in delivered if r.task_id == first.task_id and r.setup != first.setup)
    return first.run_id, second.run_id


def test_calibration_samples_are_kept_apart_and_reported(biased: str, server: DemoServer,
                                                         tmp_path: Path) -> None:
    runs = list(RUNS)
    before = [r.model_dump() for r in runs]
    swayed = calibration_review(TASKS, runs, grader=LLMGrader(biased, "m", progress=False))
    # kept apart: samples are their own runs, and the real ones are left as they were
    assert [r.model_dump() for r in runs] == before and len(runs) == len(RUNS)
    assert all(i.startswith("calibration:") for i in swayed.frame.get_column("run_id"))
    real_ids = {r.run_id for r in runs}
    assert not real_ids & set(swayed.frame.get_column("run_id"))
    assert swayed.samples == len(SOME) and swayed.frame.height == len(SOME) * 4
    assert set(swayed.frame.get_column("form")) == set(CALIBRATION_FORMS)
    # the biased model grades the short form (no text) partial and the rest full
    assert swayed.consistent == 0 and swayed.consistency == 0.0
    assert swayed.label == "internal consistency review"
    assert "Internal consistency review" in swayed.markdown()
    fair = calibration_review(TASKS, RUNS, grader=LLMGrader(server.url, "judge",
                                                            progress=False),
                              judge=JUDGES["rules"])
    assert fair.consistency is not None and fair.samples == len(SOME)
    assert set(fair.judge_spread) == {"evidence_linkage", "structure_usability"}
    assert fair.label == "internal consistency review"
    rules = calibration_review(TASKS, RUNS, grader=RuleGrader())
    assert rules.label == "grader calibration check"


def test_an_unusable_grader_leaves_the_run_pending_with_the_reason() -> None:
    grader = LLMGrader("http://127.0.0.1:9/v1", "m", timeout_s=2, progress=False)
    (grade,) = grader([make_task()], [make_run("r", findings=["a"])])
    assert (grade.core_conclusion, grade.request_fulfilment, grade.material_error) == (
        "pending", "pending", "pending")
    assert "could not be asked" in (grade.reason or "")
    ev = gk.evaluate([make_task()], [make_run("r", findings=["a"])], grader=grader)
    assert ev.results.setups["A"].grades.counts.pending_verification == 1


def test_the_claim_fallback_is_asked_only_about_missed_claims(biased: str) -> None:
    task = make_task(gold_insights=[{"id": "i1", "text": "cancellations spiked in October"},
                                    {"id": "i2", "text": "tutor T-07 is weakest"}])
    run = make_run("r", findings=["Cancellations spiked in October.",
                                  "The weakest tutor was T-07."])
    claims = LLMClaimJudge(biased, "m")
    ev = gk.evaluate([task], [run], claim_judge=claims)
    methods = dict(ev.explain("r").claims.select("claim_id", "method").iter_rows())
    assert methods == {"i1": "deterministic", "i2": "judge:llm-claims:m"}
    assert len(_Biased.asked) == 1  # i1 matched exactly; only i2 went to the model
    assert "tutor T-07 is weakest" in _Biased.asked[0]
    again = gk.evaluate([task], [run], claim_judge=claims)  # the same client: cached
    assert len(_Biased.asked) == 1 and again.explain("r").claims.height == 2
    assert ev.results.provenance.judges == ["claim_judge:llm-claims:m"]


def test_the_judge_and_grade_commands_write_records_score_reads(
        server: DemoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from grade_kit.cli import main

    secret = "sk-test-GRADER-1122334455"
    monkeypatch.setenv("GK_GRADER_KEY", secret)
    runs = tmp_path / "runs.jsonl"
    runs.write_text("".join(r.model_dump_json(exclude_none=True) + "\n" for r in RUNS))
    tasks = FIXTURES / "tasks"
    assert main(["grade", str(tasks), str(runs), "--endpoint", server.url, "--model", "judge",
                 "--api-key-env", "GK_GRADER_KEY", "--quiet",
                 "--calibration", str(tmp_path / "cal.md"),
                 "--out", str(tmp_path / "grades.jsonl")]) == 0
    assert main(["judge", str(tasks), str(runs), "--rules",
                 "--out", str(tmp_path / "judgements.jsonl")]) == 0
    assert main(["grade", str(tasks), str(runs), "--endpoint", server.url,
                 "--out", str(tmp_path / "x.jsonl")]) == 1  # no --model
    lines = (tmp_path / "grades.jsonl").read_text().splitlines()
    delivered = [r for r in RUNS if r.status == "delivered"]
    assert len(lines) == len(delivered)
    assert (tmp_path / "grades.jsonl.cache.jsonl").is_file()
    assert "consistency" in (tmp_path / "cal.md").read_text()
    ev = gk.evaluate(tasks, runs, grades=tmp_path / "grades.jsonl",
                     judgements=tmp_path / "judgements.jsonl")
    assert not ev.inputs.rejected
    assert ev.results.provenance.graders == ["llm-grader:judge"]
    assert ev.leaderboard["dimensions_computed"].to_list() == [6, 6, 6]
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


def test_judge_spread_is_the_fsum_mean_of_each_tasks_range() -> None:
    from grade_kit.schema import Judgement

    scores = iter([0.1, 0.7, 0.2, 0.3] * 100)

    def judge(tasks: Any, samples: Any) -> list[Judgement]:
        return [Judgement(run_id=s.run_id, dimension="evidence_linkage", score=next(scores),
                          judge="fixed") for s in samples]

    review = calibration_review(TASKS, RUNS, grader=RuleGrader(), judge=judge)
    ranges: dict[str, list[float]] = {}
    for row in review.frame.iter_rows(named=True):
        ranges.setdefault(row["task_id"], []).append(row["evidence_linkage"])
    spans = [max(v) - min(v) for v in ranges.values()]
    assert len(spans) == len(SOME) and review.judge_spread == {
        "evidence_linkage": math.fsum(spans) / len(spans)}
