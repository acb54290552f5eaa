"""Fetching for real: the demo server on 127.0.0.1, the OpenAI-compatible responder, the run
store's crash safety and resumption, timing events, faults, and no key ever written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import grade_kit as gk
from grade_kit.demo.server import SQL_BY_TABLE, DemoServer
from grade_kit.fetching import (
    OpenAIChat,
    PythonCallable,
    Replay,
    RunStore,
    build_prompt,
    fetch,
    parse_answer,
)
from grade_kit.reading.records import load_runs
from grade_kit.reading.task_files import load_tasks
from grade_kit.schema import Task
from tests.paths import FIXTURES, ROOT

TASKS = load_tasks(FIXTURES / "tasks", FIXTURES / "packs").records
RECORDED = {json.loads(line)["run_id"]: json.loads(line)
            for setup in ("careful", "hasty", "erratic")
            for line in (FIXTURES / "runs" / f"{setup}.jsonl").read_text().splitlines()}


@pytest.fixture(scope="module")
def server() -> Iterator[DemoServer]:
    srv = DemoServer(TASKS, FIXTURES / "packs", latency_scale=0.02).start()
    yield srv
    srv.stop()


def _slot_of(status: str) -> tuple[str, Task, int]:
    """A (setup, task, repeat) whose recorded run has ``status``."""
    for run in sorted(RECORDED.values(), key=lambda r: r["run_id"]):
        if run["status"] == status:
            task = next(t for t in TASKS if t.task_id == run["task_id"])
            return run["setup"], task, run["repeat"]
    raise LookupError(status)


def test_the_models_are_the_setups(server: DemoServer) -> None:
    import urllib.request

    with urllib.request.urlopen(f"{server.url}/models") as reply:
        models = json.loads(reply.read())
    assert [m["id"] for m in models["data"]] == ["careful", "hasty", "erratic", "judge"]


def test_fetched_runs_are_the_recorded_answers_timed_and_tooled(server: DemoServer,
                                                                tmp_path: Path) -> None:
    tasks = [t for t in TASKS if t.pack == "riverbend"][:3]
    store = tmp_path / "runs.jsonl"
    report = fetch(tasks, OpenAIChat(server.url, "careful", packs=FIXTURES / "packs"), store,
                   setup="careful", repeats=2, timeout_s=server.timeout_s, progress=False)
    assert (report.planned, report.delivered) == (6, 6)
    loaded = load_runs(store, TASKS)
    assert not loaded.rejected and len(loaded.records) == 6
    order = ["submitted", "first_progress", "first_token", "model_text_finished",
             "runner_finished", "received"]
    for run in loaded.records:
        recorded = RECORDED[run.run_id]
        assert run.response is not None
        assert run.response.model_dump() == recorded["response"]  # the server's capture
        instants = [datetime.fromisoformat(run.events[e]) for e in order]  # type: ignore[arg-type]
        assert instants == sorted(instants) and all(i.tzinfo for i in instants)
        assert run.tool_calls is not None
        assert len(run.tool_calls) == len(recorded["tool_calls"])
        for i, call in enumerate(run.tool_calls):
            assert call.name == "sql" and call.started and call.ended
            # the arguments as the model streamed them
            assert call.arguments == json.dumps({"query": SQL_BY_TABLE[i % len(SQL_BY_TABLE)]})
        assert run.usage is not None and run.usage.input_tokens and run.usage.output_tokens
    ev = gk.evaluate(FIXTURES / "tasks", store, packs=FIXTURES / "packs")
    assert ev.timing.filter(ev.timing["subset"] == "all")["e2e_n"].item() == 6


def test_a_second_fetch_resumes_and_overwrites_nothing(server: DemoServer,
                                                       tmp_path: Path) -> None:
    tasks = TASKS[:2]
    store = tmp_path / "runs.jsonl"
    responder = OpenAIChat(server.url, "hasty")
    fetch(tasks, responder, store, setup="hasty", repeats=2, timeout_s=server.timeout_s,
          progress=False)
    before = store.read_bytes()
    again = fetch(tasks, responder, store, setup="hasty", repeats=3,
                  timeout_s=server.timeout_s, progress=False)
    assert (again.skipped, again.delivered) == (4, 2)  # only the new repeat is fetched
    assert store.read_bytes().startswith(before)


def test_a_torn_last_line_is_set_aside_and_its_slot_fetched_again(server: DemoServer,
                                                                   tmp_path: Path) -> None:
    tasks = TASKS[:1]
    store = tmp_path / "runs.jsonl"
    responder = OpenAIChat(server.url, "hasty")
    fetch(tasks, responder, store, setup="hasty", repeats=1, timeout_s=server.timeout_s,
          progress=False)
    with store.open("a") as handle:
        handle.write('{"run_id": "hasty-x", "setup": "hasty", "task_id": "')  # killed here
    report = fetch(tasks, responder, store, setup="hasty", repeats=2,
                   timeout_s=server.timeout_s, progress=False)
    assert len(report.torn) == 1 and report.delivered == 1
    assert (tmp_path / "runs.jsonl.torn").read_text().startswith('{"run_id": "hasty-x"')
    loaded = load_runs(store, TASKS)
    assert not loaded.rejected and len(loaded.records) == 2


def test_timeouts_and_failures_are_runs_never_latency_samples(server: DemoServer,
                                                              tmp_path: Path) -> None:
    t_setup, timed_out, repeat = _slot_of("timeout")
    f_setup, failed, f_repeat = _slot_of("failed")
    store = tmp_path / "runs.jsonl"
    fetch([timed_out], OpenAIChat(server.url, t_setup), store, setup=t_setup,
          repeats=repeat, timeout_s=server.timeout_s, progress=False)
    fetch([failed], OpenAIChat(server.url, f_setup), tmp_path / "f.jsonl", setup=f_setup,
          repeats=f_repeat, timeout_s=server.timeout_s, progress=False, retries=1)
    runs = [json.loads(line) for line in store.read_text().splitlines()]
    stalled = next(r for r in runs if r["task_id"] == timed_out.task_id
                   and r["repeat"] == repeat)
    assert stalled["status"] == "timeout" and "stopped" in stalled["events"]
    assert "received" not in stalled["events"]
    f_runs = [json.loads(line) for line in (tmp_path / "f.jsonl").read_text().splitlines()]
    broken = [r for r in f_runs if r["repeat"] == f_repeat]
    assert broken[0]["status"] == "failed" and broken[0]["attempt_of"] is None
    receipt = broken[0]["metadata"]["receipt"]
    if receipt["status"] is not None:  # an HTTP 502 is kept with its receipt, not retried
        assert receipt["status"] == 502 and len(broken) == 1
    else:  # a dropped connection before any byte is retried as its own linked attempt
        assert receipt["failure"].startswith("the connection failed")
        assert len(broken) == 2 and broken[1]["attempt_of"] == broken[0]["run_id"]
    ev = gk.evaluate(FIXTURES / "tasks", store, packs=FIXTURES / "packs", repeats=repeat)
    timing = ev.results.setups[t_setup].timing
    assert timing.timeouts.count == 1 and timing.timeouts.waiting_s.n == 1
    assert timing.e2e_s.n == sum(1 for r in runs if r["status"] == "delivered")


def test_no_api_key_value_is_ever_written(server: DemoServer, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-test-DO-NOT-WRITE-1234567890"
    monkeypatch.setenv("GK_TEST_KEY", secret)
    store = tmp_path / "runs.jsonl"
    fetch(TASKS[:1], OpenAIChat(server.url, "hasty", api_key_env="GK_TEST_KEY"), store,
          setup="hasty", repeats=1, timeout_s=server.timeout_s, progress=False)
    assert gk.evaluate(FIXTURES / "tasks", store, packs=FIXTURES / "packs").write(tmp_path / "out")
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
    missing = fetch(TASKS[1:2], OpenAIChat(server.url, "hasty", api_key_env="GK_NOT_SET"),
                    tmp_path / "b.jsonl", setup="hasty", timeout_s=server.timeout_s,
                    progress=False, retries=0)
    assert missing.failed == 1
    assert "GK_NOT_SET is not set" in (tmp_path / "b.jsonl").read_text()


def test_an_answer_that_is_not_the_format_is_kept_whole() -> None:
    response, problem = parse_answer("The rate was 18%.")
    assert response == {"text": "The rate was 18%."} and problem is not None
    response, problem = parse_answer('```json\n{"key_findings": ["a"], "text": "t"}\n```')
    assert problem is None and response["key_findings"] == ["a"]
    response, problem = parse_answer('{"key_findings": "not a list"}')
    assert response == {"text": '{"key_findings": "not a list"}'} and "not the response" in (
        problem or "")


def test_python_callable_and_replay_responders(tmp_path: Path) -> None:
    def answer(task: Task, prompt: str, repeat: int) -> dict[str, Any]:
        assert prompt == build_prompt(task)
        return {"key_findings": [f"{task.task_id} {repeat}"], "text": "x"}

    store = tmp_path / "callable.jsonl"
    report = fetch(TASKS[:2], PythonCallable(answer), store, setup="fn", repeats=2,
                   progress=False)
    assert report.delivered == 4
    runs = load_runs(store, TASKS).records
    assert {r.response.key_findings[0] for r in runs if r.response} == {
        f"{t.task_id} {k}" for t in TASKS[:2] for k in (1, 2)}
    replayed = tmp_path / "replay.jsonl"
    report = fetch(TASKS[:2], Replay(FIXTURES / "runs" / "careful.jsonl"), replayed,
                   setup="careful", repeats=5, progress=False)
    recorded = [r for r in RECORDED.values() if r["setup"] == "careful"
                and r["task_id"] in {t.task_id for t in TASKS[:2]}]
    assert report.delivered == sum(r["status"] == "delivered" for r in recorded) > 0
    assert report.failed == len(recorded) - report.delivered  # replayed failures stay failed
    for run in load_runs(replayed, TASKS).records:
        if run.status == "delivered" and run.response is not None:
            assert run.response.model_dump() == RECORDED[run.run_id]["response"]


def test_a_fetch_killed_at_any_moment_resumes_to_every_slot_once(server: DemoServer,
                                                                 tmp_path: Path) -> None:
    store = tmp_path / "runs.jsonl"
    script = (
        "import sys\n"
        "from grade_kit.fetching import OpenAIChat, fetch\n"
        "from grade_kit.reading.task_files import load_tasks\n"
        f"tasks = load_tasks({str(FIXTURES / 'tasks')!r}, "
        f"{str(FIXTURES / 'packs')!r}).records[:6]\n"
        f"fetch(tasks, OpenAIChat({server.url!r}, 'hasty'), {str(store)!r}, setup='hasty',"
        f" repeats=3, timeout_s={server.timeout_s}, progress=False, concurrency=4)\n")
    for delay in (0.15, 0.35, 0.6):
        proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT,
                                env={**os.environ, "PYTHONPATH": str(ROOT)})
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    final = subprocess.run([sys.executable, "-c", script], cwd=ROOT, timeout=120,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert final.returncode == 0
    assert store.read_bytes().endswith(b"\n")
    reopened = RunStore.open(store)
    assert reopened.torn == []
    primaries: dict[tuple[str, int], int] = {}
    for record in reopened.records:
        if record["attempt_of"] is None:
            key = (record["task_id"], record["repeat"])
            primaries[key] = primaries.get(key, 0) + 1
    assert len(primaries) == 18 and set(primaries.values()) == {1}


def test_a_responder_that_raises_fails_its_attempt_not_the_fetch(tmp_path: Path) -> None:
    def flaky(task: Task, prompt: str, repeat: int) -> dict[str, Any]:
        if repeat == 2:
            raise RuntimeError("boom")
        return {"key_findings": ["ok"], "text": "ok"}

    store = tmp_path / "runs.jsonl"
    report = fetch(TASKS[:1], PythonCallable(flaky), store, setup="fn", repeats=3,
                   progress=False)
    assert (report.delivered, report.failed, report.retries) == (2, 1, 0)
    failed = [json.loads(x) for x in store.read_text().splitlines()
              if json.loads(x)["status"] == "failed"]
    assert failed[0]["error"] == "RuntimeError: boom" and "stopped" in failed[0]["events"]


def test_a_missing_key_fails_without_retrying(server: DemoServer, tmp_path: Path) -> None:
    report = fetch(TASKS[:1], OpenAIChat(server.url, "hasty", api_key_env="GK_UNSET_KEY"),
                   tmp_path / "r.jsonl", setup="hasty", timeout_s=server.timeout_s,
                   progress=False)
    assert (report.failed, report.retries) == (1, 0)


def test_rerun_failed_adds_a_linked_attempt_and_the_primary_stays_scored(
        tmp_path: Path) -> None:
    state = {"broken": True}

    def sometimes(task: Task, prompt: str, repeat: int) -> dict[str, Any]:
        if state["broken"] and repeat == 2:
            raise RuntimeError("down")
        return {"key_findings": ["ok"], "text": "ok"}

    store = tmp_path / "runs.jsonl"
    fetch(TASKS[:1], PythonCallable(sometimes), store, setup="fn", repeats=2, progress=False)
    state["broken"] = False
    report = fetch(TASKS[:1], PythonCallable(sometimes), store, setup="fn", repeats=2,
                   rerun_failed=True, progress=False)
    assert (report.skipped, report.delivered) == (1, 1)
    runs = load_runs(store, TASKS).records
    primary = next(r for r in runs if r.repeat == 2 and r.attempt_of is None)
    rerun = next(r for r in runs if r.repeat == 2 and r.attempt_of is not None)
    assert primary.status == "failed" and rerun.attempt_of == primary.run_id
    assert (primary.run_id, rerun.run_id) == (f"fn-{TASKS[0].task_id}-r2",
                                              f"fn-{TASKS[0].task_id}-r2-a1")
    ev = gk.evaluate(FIXTURES / "tasks", store, packs=FIXTURES / "packs")
    graded = {r["run_id"]: r for r in ev.standard.graded.to_dicts()}
    assert graded[primary.run_id]["grade"] == "unresolved"  # the re-run never replaces it
    assert [r.run_id for r in ev.results.setups["fn"].reruns] == [rerun.run_id]


def test_an_http_agent_streams_events_into_runs(server: DemoServer, tmp_path: Path) -> None:
    from grade_kit.fetching import HTTPAgent

    base = server.url.removesuffix("/v1")
    tasks = [t for t in TASKS if t.pack == "northside"][:4]
    store = tmp_path / "agent.jsonl"
    report = fetch(tasks, HTTPAgent(f"{base}/agent/careful"), store, setup="careful",
                   repeats=2, timeout_s=server.timeout_s, progress=False)
    assert report.planned == 8
    loaded = load_runs(store, TASKS)
    assert not loaded.rejected and len(loaded.records) == 8
    order = ["submitted", "first_progress", "first_token", "model_text_finished",
             "received"]
    for run in loaded.records:
        recorded = RECORDED[run.run_id]
        assert run.status == recorded["status"]
        if run.status != "delivered":
            continue
        assert run.response is not None
        assert run.response.model_dump() == recorded["response"]
        instants = [datetime.fromisoformat(run.events[e]) for e in order]  # type: ignore[arg-type]
        assert instants == sorted(instants)
        assert run.events["channel_overhead_started"] and run.events["channel_overhead_ended"]
        assert run.tool_calls is not None
        assert [c.id for c in run.tool_calls] == [c["id"] for c in recorded["tool_calls"]]
        # an object the agent sent, kept as its JSON text with keys sorted
        assert [c.arguments for c in run.tool_calls] == [
            json.dumps({"query": SQL_BY_TABLE[i % len(SQL_BY_TABLE)]}, separators=(",", ":"))
            for i in range(len(run.tool_calls))]
    ev = gk.evaluate(FIXTURES / "tasks", store, packs=FIXTURES / "packs")
    timing = ev.results.setups["careful"].timing
    assert timing.channel_overhead_s is not None and timing.channel_overhead_s.n == 8
    without = gk.evaluate(FIXTURES / "tasks", store, packs=FIXTURES / "packs",
                          exclude_channel_overhead=True).results.setups["careful"].timing
    assert without.e2e_s.n == timing.e2e_s.n
    assert without.e2e_s.mean is not None and timing.e2e_s.mean is not None
    assert without.e2e_s.mean < timing.e2e_s.mean


def test_an_agent_stream_without_a_final_answer_fails_with_what_arrived(
        tmp_path: Path) -> None:
    from grade_kit.fetching import HTTPAgent

    body = ("event: progress\ndata: {}\n\nevent: token\ndata: {\"text\": \"half an \"}\n\n"
            "event: token\ndata: {\"text\": \"answer\"}\n\n")
    with _one_reply_server(200, body, "text/event-stream") as url:
        report = fetch(TASKS[:1], HTTPAgent(url), tmp_path / "r.jsonl", setup="x",
                       repeats=1, timeout_s=10, progress=False, retries=0)
    record = json.loads((tmp_path / "r.jsonl").read_text())
    assert report.failed == 1 and record["status"] == "failed"
    assert "before the final answer" in record["error"]
    assert "half an answer" in json.dumps(record)


def test_a_429_keeps_its_original_receipt(tmp_path: Path) -> None:
    headers = {"Retry-After": "20", "x-ratelimit-remaining-requests": "0",
               "x-request-id": "req-429-abc"}
    body = '{"error": {"message": "Rate limit reached", "type": "requests"}}'
    with _one_reply_server(429, body, "application/json", headers) as url:
        report = fetch(TASKS[:1], OpenAIChat(url, "m"), tmp_path / "r.jsonl", setup="m",
                       repeats=1, timeout_s=10, progress=False, retries=0)
    record = json.loads((tmp_path / "r.jsonl").read_text())
    assert report.failed == 1 and record["status"] == "failed"
    receipt = record["metadata"]["receipt"]
    assert receipt["status"] == 429 and receipt["body"] == body
    lowered = {k.lower(): v for k, v in receipt["headers"].items()}
    assert lowered["retry-after"] == "20" and lowered["x-request-id"] == "req-429-abc"
    assert lowered["x-ratelimit-remaining-requests"] == "0"
    ev = gk.evaluate(FIXTURES / "tasks", tmp_path / "r.jsonl", packs=FIXTURES / "packs")
    assert ev.results.setups["m"].timing.failures.count == 1
    assert ev.results.setups["m"].timing.e2e_s.n == 0  # never a latency sample


def _one_reply_server(status: int, body: str, content_type: str,
                      headers: dict[str, str] | None = None) -> Any:
    """A loopback server answering every POST with one fixed reply."""
    import threading
    from contextlib import contextmanager
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

    @contextmanager
    def serve() -> Iterator[str]:
        srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=srv.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
        finally:
            srv.shutdown()
            srv.server_close()

    return serve()


def test_the_follow_up_protocol_is_sent_once_and_identically(tmp_path: Path) -> None:
    from grade_kit.fetching.run import follow_up_prompt
    from tests.conftest import make_task

    message = "Use the autumn term, September to November 2026."
    task = make_task("t1", follow_up=message)
    bare = make_task("t2")
    prompts: list[tuple[str, str]] = []

    def asks_first(setup: str) -> Any:
        def answer(t: Task, prompt: str, repeat: int) -> dict[str, Any]:
            prompts.append((setup, prompt))
            if "FOLLOW-UP:" not in prompt:
                return {"key_findings": [], "text": "Could you tell me which term you mean?"}
            return {"key_findings": ["Cancellations spiked in October."], "text": "Done."}
        return answer

    for setup in ("s1", "s2"):
        fetch([task, bare], PythonCallable(asks_first(setup)), tmp_path / f"{setup}.jsonl",
              setup=setup, repeats=1, timeout_s=10, progress=False)
    followed = [p for s, p in prompts if "FOLLOW-UP:" in p]
    assert len(followed) == 2 and followed[0] == followed[1]  # the same for every setup
    assert followed[0].endswith("FOLLOW-UP: " + message)
    records = {json.loads(line)["task_id"]: json.loads(line)
               for line in (tmp_path / "s1.jsonl").read_text().splitlines()}
    run = records["t1"]
    assert run["response"]["key_findings"] == ["Cancellations spiked in October."]
    assert run["metadata"]["interaction"]["follow_up"] == "protocol"
    assert run["metadata"]["interaction"]["first_answer"]["text"].startswith("Could you")
    assert run["events"]["submitted"] < run["events"]["follow_up_sent"] <= run["events"][
        "received"]
    assert "interaction" not in records["t2"]["metadata"]  # no protocol: the answer stands
    assert records["t2"]["response"]["text"] == "Could you tell me which term you mean?"
    from grade_kit.fetching import Answer

    assert follow_up_prompt(task, Answer(response={"text": "?"})).startswith(
        build_prompt(task))
    ev = gk.evaluate([task, bare], tmp_path / "s1.jsonl", grader="rules")
    timing = ev.results.setups["s1"].timing
    assert timing.interaction == {"protocol_follow_up": 1, "ad_hoc_follow_up": 0, "resumed": 0}
    assert ev.results.setups["s1"].grades.needs_more_information == 1  # t2 only asked


def test_ad_hoc_follow_ups_and_resumed_runs_are_counted_apart() -> None:
    from tests.conftest import make_run, make_task

    runs = [make_run("a", findings=["x"], metadata={"interaction": {"follow_up": "ad_hoc"}}),
            make_run("b", repeat=2, findings=["x"], metadata={"interaction": {"resumed": True}}),
            make_run("c", repeat=3, findings=["x"])]
    timing = gk.evaluate([make_task()], runs).results.setups["A"].timing
    assert timing.interaction == {"protocol_follow_up": 0, "ad_hoc_follow_up": 1, "resumed": 1}


def test_each_fetch_records_its_clock_and_the_endpoints_offset(server: DemoServer,
                                                               tmp_path: Path) -> None:
    store = tmp_path / "runs.jsonl"
    fetch(TASKS[:2], OpenAIChat(server.url, "careful"), store, setup="careful", repeats=1,
          timeout_s=server.timeout_s, progress=False)
    records = [json.loads(line) for line in store.read_text().splitlines()]
    for record in records:
        clock = record["metadata"]["clock"]
        assert clock["precision"] == "1 us" and clock["source"].startswith("grade_kit fetch")
        assert -2.0 <= clock["endpoint_offset_s"] <= 1.0  # same machine: within a second
    # the same runs as if read on a second system whose clock runs 30 s ahead
    other = [dict(r, run_id=r["run_id"] + "-b", setup="careful", metadata={
        **r["metadata"], "clock": {"source": "other host", "precision": "1 ms",
                                   "endpoint_offset_s": r["metadata"]["clock"][
                                       "endpoint_offset_s"] - 30.0}}) for r in records]
    for r in other:
        r["repeat"] = 2
    (tmp_path / "other.jsonl").write_text("".join(json.dumps(r) + "\n" for r in other))
    ev = gk.evaluate(FIXTURES / "tasks", [store, tmp_path / "other.jsonl"],
                     packs=FIXTURES / "packs")
    timing = ev.results.setups["careful"].timing
    assert set(timing.clocks) == {records[0]["metadata"]["clock"]["source"], "other host"}
    offsets = timing.clock_offsets_s
    assert offsets["other host"] is not None
    mine = offsets[records[0]["metadata"]["clock"]["source"]]
    assert mine is not None and abs((mine - offsets["other host"]) - 30.0) < 1e-6
    card = (ev.write(tmp_path / "out")["scorecard"]).read_text()
    assert "Endpoint clock offset against each clock" in card and "other host: " in card


def test_a_follow_up_that_fails_keeps_the_first_answer(tmp_path: Path) -> None:
    from tests.conftest import make_task

    task = make_task("t1", follow_up="The autumn term.")

    def answer(t: Task, prompt: str, repeat: int) -> dict[str, Any]:
        if "FOLLOW-UP:" in prompt:
            raise RuntimeError("the setup crashed on the follow-up")
        return {"key_findings": [], "text": "Which term do you mean? Please clarify."}

    report = fetch([task], PythonCallable(answer), tmp_path / "r.jsonl", setup="s",
                   repeats=1, timeout_s=10, progress=False)
    record = json.loads((tmp_path / "r.jsonl").read_text())
    assert report.failed == 1 and record["status"] == "failed"
    assert "crashed on the follow-up" in record["error"]
    interaction = record["metadata"]["interaction"]
    assert interaction["follow_up"] == "protocol"
    assert interaction["first_answer"]["text"] == "Which term do you mean? Please clarify."
    assert record["events"]["follow_up_sent"] <= record["events"]["stopped"]


def test_a_line_that_is_not_a_run_is_listed_and_its_slot_fetched_again(
        server: DemoServer, tmp_path: Path) -> None:
    """A store line the scorer's reader refuses (an array; a run with a repeat of "x"; a
    run whose key repeats or that holds NaN, which Python's json reads but the one reader
    does not) never counts as a done slot, and is never dropped silently: the fetch lists
    it and fetches the slot again; the scorer's reader names its line."""
    tasks = TASKS[:1]
    store = tmp_path / "runs.jsonl"
    task = tasks[0].task_id
    run = {"run_id": "hasty-bad", "setup": "hasty", "task_id": task, "repeat": 1,
           "status": "delivered", "response": {"text": "x"}}
    store.write_text('[1, 2]\n' + json.dumps({**run, "repeat": "x"}) + "\n"
                     + json.dumps(run)[:-1] + ', "repeat": 1}\n'
                     + json.dumps({**run, "run_id": "hasty-nan", "working_s": float("nan")})
                     + "\n")
    report = fetch(tasks, OpenAIChat(server.url, "hasty"), store, setup="hasty", repeats=1,
                   timeout_s=server.timeout_s, progress=False)
    assert len(report.torn) == 4 and report.delivered == 1
    loaded = load_runs(store, TASKS)
    assert len(loaded.records) == 1
    assert sorted(r.line for r in loaded.rejected) == [1, 2, 3, 4]
