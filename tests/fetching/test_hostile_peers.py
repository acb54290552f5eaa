"""Hostile endpoints and agents on 127.0.0.1 (docs/methodology.md §4 "Fetching"): one test per
class of failure, each against a real socket server (tests/peers.py) or real files.

Every case ends the same way: the run is ``failed`` with a reason in words and a receipt, the
fetch's memory stays bounded, no file outside the output folder is written, the API key's
value is never on disk, and ``score`` reads every line fetch wrote."""

from __future__ import annotations

import asyncio
import json
import math
import os
import time
from pathlib import Path
from typing import Any

import pytest

import grade_kit as gk
from grade_kit.cli import main
from grade_kit.fetching import HTTPAgent, OpenAIChat, fetch, fetch_setups
from grade_kit.fetching.tools import PackTools
from grade_kit.http import (
    MAX_BODY_BYTES,
    MAX_STREAM_BYTES,
    RECEIPT_BODY_CHARS,
    REDACTED,
)
from grade_kit.reading.records import load_runs
from grade_kit.reading.task_files import load_tasks
from tests.paths import FIXTURES
from tests.peers import BUFFERED, Request, delta, endless, head, peer, sse

TASKS = load_tasks(FIXTURES / "tasks", FIXTURES / "packs").records
TASK = TASKS[0]
ANSWER = json.dumps({"key_findings": ["A finding."], "text": "An answer."})


def _fetch(url: str, tmp: Path, *, packs: bool = False, timeout_s: float = 20,
           api_key_env: str | None = None, **options: Any) -> dict[str, Any]:
    """One slot fetched from ``url``; its run record, after checking ``score`` reads it."""
    store = tmp / "runs.jsonl"
    fetch([TASK], OpenAIChat(url, "m", packs=FIXTURES / "packs" if packs else None,
                             api_key_env=api_key_env, max_rounds=3),
          store, setup="m", timeout_s=timeout_s, progress=False, retries=0, **options)
    loaded = load_runs(store)
    assert not loaded.rejected, loaded.rejected  # whatever fetch writes, score accepts
    (record,) = [json.loads(line) for line in store.read_text().splitlines()]
    return record


def _failed(record: dict[str, Any], *why: str) -> None:
    assert record["status"] == "failed", record
    assert "response" not in record or record["response"] is None
    for words in why:
        assert words in record["error"], record["error"]
    assert "Error:" not in record["error"].split(":")[0]  # words, not a Python exception
    receipt = record["metadata"]["receipt"]
    assert set(receipt) >= {"status", "headers", "body"}
    assert len(receipt["body"]) <= RECEIPT_BODY_CHARS


# ---------------------------------------------------------------- the SQL tool is a sandbox


@pytest.mark.parametrize("query", [
    "SELECT * FROM read_csv('{secret}')", "SELECT * FROM '{secret}'",
    "SELECT * FROM read_text('{secret}')", "SELECT * FROM glob('{folder}/*')",
    "COPY sessions TO '{folder}/out.csv'", "ATTACH '{folder}/x.db'", "INSTALL httpfs",
    "LOAD httpfs", "SET enable_external_access = true", "DROP TABLE sessions",
    "SELECT 1; SELECT * FROM read_csv('{secret}')", "CREATE TABLE t AS SELECT 1",
    "SELECT * FROM secret_frame",
])
def test_no_query_reaches_beyond_the_packs_tables(tmp_path: Path, query: str) -> None:
    secret = tmp_path / "secret.csv"
    secret.write_text("token\nTOPSECRET-42\n")
    secret_frame = {"token": ["TOPSECRET-42"]}  # a Python variable a scan could find  # noqa: F841
    tools = PackTools(FIXTURES / "packs" / TASK.pack)
    out = tools.call("sql", json.dumps({"query": query.format(secret=secret,
                                                               folder=tmp_path)}))
    assert out.startswith("error:") and "TOPSECRET" not in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["secret.csv"]
    assert tools.call("sql", json.dumps({"query": "SELECT COUNT(*) AS n FROM sessions"})
                      ).startswith("n\n")  # the tables are intact


def test_a_heavy_query_is_bounded_in_memory_and_time() -> None:
    # 416^3 = 72 million rows sorted: bounded to MAX_ROWS inside DuckDB (a top-N, never the
    # whole sort), its text cut at MAX_RESULT_CHARS (given the default time, as the top-N
    # takes about half a second on a quiet machine and more on a loaded one) ...
    roomy = PackTools(FIXTURES / "packs" / TASK.pack)
    out = roomy.call("sql", json.dumps({"query": "SELECT a.*, b.*, c.* FROM sessions a, "
                                                 "sessions b, sessions c ORDER BY random()"}))
    assert out.startswith("session_id,") and len(out) == 20_000
    tools = PackTools(FIXTURES / "packs" / TASK.pack, query_seconds=1.0)
    started = time.monotonic()
    # ... while a distinct count over them meets the memory limit (or, on a loaded machine,
    # the time limit first)
    out = tools.call("sql", json.dumps({"query": "SELECT count(DISTINCT a.session_id || "
                                                 "b.session_id || c.session_id) AS n FROM "
                                                 "sessions a, sessions b, sessions c"}))
    assert out.startswith(("error: OutOfMemoryException", "error: the query was stopped"))
    slow = tools.call("sql", json.dumps({"query": "SELECT count(*) FROM range(1000000000000)"}))
    assert slow.startswith("error: the query was stopped")
    assert time.monotonic() - started < 10
    rows = tools.call("sql", json.dumps({"query": "SELECT * FROM range(100000)"}))
    assert rows.count("\n") == 201  # a header and MAX_ROWS rows


def test_a_huge_value_fails_the_call_not_the_process() -> None:
    """A 300,000,000-character value is cut inside DuckDB before it reaches Python: the call
    fails with a message for the model, and the next call works."""
    import resource

    tools = PackTools(FIXTURES / "packs" / TASK.pack)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = tools.call("sql", json.dumps({"query": "SELECT repeat('x', 300000000) AS big"}))
    assert out == ("error: a value of column 'big' is longer than 2,000 characters; select "
                   "less of it")
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 1_500  # DuckDB's own string (about 0.6-1.2 GB), never Python copies too
    fine = tools.call("sql", json.dumps({"query": "SELECT repeat('y', 2000) AS ok -- note;"}))
    assert fine == "ok\n" + "y" * 2000 + "\n"


def test_no_setting_or_path_of_the_machine_is_in_a_result() -> None:
    tools = PackTools(FIXTURES / "packs" / TASK.pack)
    out = tools.call("sql", json.dumps({"query": "SELECT name, value FROM duckdb_settings()"}))
    assert out.startswith("name,value\n")
    for private in (str(Path.home()), str(Path.cwd()), "/root", "/home/"):
        assert private not in out, private


def test_no_path_of_the_machine_is_in_an_error() -> None:
    """Queries whose errors name a folder (the extensions' folder under the home, a file
    beside the pack, the working or temporary folder) tell the model the error without it."""
    import sys
    import tempfile

    pack = FIXTURES / "packs" / TASK.pack
    tools = PackTools(pack)
    private = [str(Path.home()), str(Path.cwd()), tempfile.gettempdir(),
               str(pack.resolve()), sys.prefix, "/root", "/home/"]
    queries = ["SELECT * FROM duckdb_extensions()",
               f"SELECT * FROM read_csv('{pack.resolve() / 'sessions.csv'}')",
               f"SELECT * FROM read_csv('{Path.cwd() / 'x.csv'}')",
               f"SELECT * FROM read_csv('{Path(tempfile.gettempdir()) / 'x.csv'}')",
               f"SELECT * FROM read_csv('{Path.home() / '.bashrc'}')",
               "SELECT * FROM glob('*')", "SELECT * FROM read_csv('x.csv')"]
    for query in queries:
        out = tools.call("sql", json.dumps({"query": query}))
        assert out.startswith("error: "), (query, out)
        for folder in private:
            assert folder not in out, (query, folder, out)


def test_a_local_file_never_leaves_through_the_tool_and_a_query_ends_with_its_run(
        tmp_path: Path) -> None:
    secret = tmp_path / "secret.csv"
    secret.write_text("token\nTOPSECRET-42\n")
    queries = [f"SELECT * FROM read_csv('{secret}')",
               "SELECT count(*) FROM range(1000000000000) a, range(1000) b"]

    async def reply(request: Request, writer: asyncio.StreamWriter) -> None:
        writer.write(head(200, content_type="text/event-stream"))
        if request.index < len(queries):
            call = {"index": 0, "id": f"call-{request.index}", "type": "function",
                    "function": {"name": "sql",
                                 "arguments": json.dumps({"query": queries[request.index]})}}
            writer.write(sse(delta(tool_calls=[call], finish="tool_calls")))
        else:
            writer.write(sse(delta(ANSWER, finish="stop")))

    with peer(reply) as p:
        started = time.monotonic()
        record = _fetch(p.url, tmp_path, packs=True, timeout_s=3)
        took = time.monotonic() - started
    sent_back = json.dumps([r.body for r in p.requests])
    assert "TOPSECRET" not in sent_back and "Permission Error" in sent_back
    assert record["status"] == "timeout"
    assert took < 8  # the endless query was interrupted when the run timed out (else ~10 s+)


# ---------------------------------------------------------------- every byte is bounded


def test_an_endless_stream_fails_at_its_cap(tmp_path: Path) -> None:
    piece = sse(delta("x" * 4000), done=False) * 16

    async def reply(request: Request, writer: asyncio.StreamWriter) -> None:
        writer.write(head(200, content_type="text/event-stream"))
        await endless(writer, piece, p.sent)

    with peer(reply) as p:
        record = _fetch(p.url, tmp_path, timeout_s=60)
        deadline = time.monotonic() + 5
        while not p.sent and time.monotonic() < deadline:
            time.sleep(0.05)
    _failed(record, "over a cap", f"{MAX_STREAM_BYTES:,} bytes")
    assert p.sent and p.sent[0] < MAX_STREAM_BYTES + BUFFERED
    assert len(record["metadata"]["received_text"]) <= MAX_STREAM_BYTES


def test_a_huge_error_body_is_not_read_whole(tmp_path: Path) -> None:
    async def reply(request: Request, writer: asyncio.StreamWriter) -> None:
        writer.write(head(500, {"Content-Length": str(2 << 30)}))
        await endless(writer, b"e" * 65536, p.sent)

    with peer(reply) as p:
        record = _fetch(p.url, tmp_path)
        deadline = time.monotonic() + 5
        while not p.sent and time.monotonic() < deadline:
            time.sleep(0.05)
    _failed(record, "HTTP 500", f"larger than {MAX_BODY_BYTES:,} bytes")
    assert record["metadata"]["receipt"]["status"] == 500
    assert p.sent and p.sent[0] < MAX_BODY_BYTES + BUFFERED


def test_oversized_headers_fail_with_a_receipt_not_a_fake_400(tmp_path: Path) -> None:
    async def reply(request: Request, writer: asyncio.StreamWriter) -> None:
        writer.write(head(429, {"Retry-After": "1", "X-Junk": "j" * 20_000}))

    with peer(reply) as p:
        record = _fetch(p.url, tmp_path)
    _failed(record, "could not be read as HTTP")
    assert record["metadata"]["receipt"]["status"] is None
    assert "400" not in record["error"].split(":")[0]


def test_a_judge_reply_that_never_ends_is_an_error_not_a_verdict(tmp_path: Path) -> None:
    from grade_kit.judges.model import ModelClient

    async def reply(request: Request, writer: asyncio.StreamWriter) -> None:
        writer.write(head(200))
        await endless(writer, b'{"choices": [' * 4096, p.sent)

    with peer(reply) as p:
        client = ModelClient(p.url, "judge", cache=tmp_path / "cache.jsonl", progress=False)
        (asked,) = client.ask_all(["a prompt"])
        deadline = time.monotonic() + 5
        while not p.sent and time.monotonic() < deadline:
            time.sleep(0.05)
    assert asked.answer is None and "larger than" in str(asked.error)
    assert p.sent and p.sent[0] < MAX_BODY_BYTES + BUFFERED
    assert not (tmp_path / "cache.jsonl").exists()


# ---------------------------------------------------------------- only a valid answer


def _completion() -> dict[str, Any]:
    return {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": ANSWER},
                         "finish_reason": "stop"}]}


GARBAGE: dict[str, tuple[bytes, str, tuple[str, ...]]] = {
    "plain JSON to a streaming request": (
        json.dumps(_completion()).encode(), "application/json",
        ("not a stream", "application/json")),
    "invalid JSON to a streaming request": (b"{not json", "application/json",
                                            ("not a stream",)),
    "chunks that are arrays": (sse([1, 2, 3]), "text/event-stream",
                               ("malformed stream", "not a JSON object")),
    "a completion inside a stream": (sse(_completion()), "text/event-stream",
                                     ("malformed stream", "whole completion")),
    "a delta that is text": (sse({"choices": [{"delta": "oops"}]}), "text/event-stream",
                             ("malformed stream", "'delta' is not an object")),
    "negative usage": (sse(delta(ANSWER, finish="stop"),
                           {"choices": [], "usage": {"prompt_tokens": -5,
                                                      "completion_tokens": 10**18}}),
                       "text/event-stream", ("malformed stream", "usage")),
    "a stream cut before its end": (sse(delta("half an ans"), done=False),
                                    "text/event-stream", ("the stream was cut",)),
    "an empty answer": (sse(delta(None, finish="stop")), "text/event-stream",
                        ("an empty answer",)),
    "an error inside the stream": (sse({"error": {"message": "overloaded"}}),
                                   "text/event-stream", ("reported an error", "overloaded")),
}


@pytest.mark.parametrize("case", sorted(GARBAGE))
def test_garbage_is_never_a_delivered_answer(tmp_path: Path, case: str) -> None:
    body, kind, why = GARBAGE[case]

    async def reply(request: Request, writer: asyncio.StreamWriter) -> None:
        writer.write(head(200, content_type=kind) + body)

    with peer(reply) as p:
        record = _fetch(p.url, tmp_path)
    _failed(record, *why)
    ev = gk.evaluate(FIXTURES / "tasks", tmp_path / "runs.jsonl", packs=FIXTURES / "packs")
    assert ev.results.setups["m"].timing.e2e_s.n == 0  # never a latency sample


def test_a_tool_loop_is_bounded(tmp_path: Path) -> None:
    async def reply(request: Request, writer: asyncio.StreamWriter) -> None:
        call = {"index": 0, "id": f"c{request.index}", "type": "function",
                "function": {"name": "sql", "arguments": json.dumps(
                    {"query": "SELECT COUNT(*) AS n FROM sessions"})}}
        writer.write(head(200, content_type="text/event-stream")
                     + sse(delta(tool_calls=[call], finish="tool_calls")))

    with peer(reply) as p:
        record = _fetch(p.url, tmp_path, packs=True)
    assert record["status"] == "failed" and "tool loop" in record["error"]
    assert "after 3 rounds" in record["error"] and len(p.requests) == 3


# ---------------------------------------------------------------- redirects


def test_a_redirect_is_a_failure_and_never_followed(tmp_path: Path) -> None:
    async def elsewhere(request: Request, writer: asyncio.StreamWriter) -> None:
        writer.write(head(200, content_type="text/event-stream")
                     + sse(delta(ANSWER, finish="stop")))

    with peer(elsewhere) as other:
        async def reply(request: Request, writer: asyncio.StreamWriter) -> None:
            writer.write(head(302, {"Location": other.url + "/chat/completions",
                                    "Content-Length": "0"}))

        with peer(reply) as p:
            record = _fetch(p.url, tmp_path)
    _failed(record, "HTTP 302 redirect", "not followed")
    assert record["metadata"]["receipt"]["status"] == 302
    assert other.requests == []  # the prompt never went anywhere else


# ---------------------------------------------------------------- agents: order and contract


def _agent_reply(events: list[tuple[str, Any]]) -> Any:
    async def reply(request: Request, writer: asyncio.StreamWriter) -> None:
        writer.write(head(200, content_type="text/event-stream"))
        for name, data in events:
            writer.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())

    return reply


def _agent_fetch(events: list[tuple[str, Any]], tmp: Path) -> dict[str, Any]:
    with peer(_agent_reply(events)) as p:
        store = tmp / "runs.jsonl"
        fetch([TASK], HTTPAgent(p.url + "/agent"), store, setup="a", timeout_s=20,
              progress=False, retries=0)
    loaded = load_runs(store)
    assert not loaded.rejected, loaded.rejected
    (record,) = [json.loads(line) for line in store.read_text().splitlines()]
    return record


FINAL = ("final", {"answer": json.loads(ANSWER)})


@pytest.mark.parametrize(("events", "why"), [
    ([FINAL, ("token", {"text": "late"})], "a token event after the final answer"),
    ([("progress", {}), FINAL, FINAL], "a final event after the final answer"),
    ([("progress", {})], "ended before the final answer"),
])
def test_agent_events_out_of_order_fail_the_run(tmp_path: Path, events: list[Any],
                                                why: str) -> None:
    record = _agent_fetch(events, tmp_path)
    _failed(record, why)


@pytest.mark.parametrize(("event", "field"), [
    (("final", {"answer": json.loads(ANSWER), "usage": {"input_tokens": -1}}),
     "usage.input_tokens"),
    (("final", {"answer": json.loads(ANSWER), "usage": {"input_tokens": 10**18}}),
     "usage.input_tokens"),
    (("tool_call", {"id": 7, "name": "sql"}), "tool_calls.0.id"),
    (("tool_call", {"id": "c1", "name": None}), "tool_calls.0.name"),
    (("tool_call", {"id": "c1", "name": "sql", "started": "yesterday"}),
     "tool_calls.0.started"),
])
def test_what_score_would_reject_is_never_written_as_delivered(
        tmp_path: Path, event: tuple[str, Any], field: str) -> None:
    events = [event, FINAL] if event[0] != "final" else [event]
    record = _agent_fetch(events, tmp_path)
    assert record["status"] == "failed"
    assert record["error"].startswith(f"the reply breaks the run contract at {field}")
    assert "received_text" in record["metadata"]


# ---------------------------------------------------------------- the key never reaches disk


def test_the_api_key_is_redacted_from_everything_written(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    key = "sk-test-SECRET-0123456789"
    monkeypatch.setenv("GK_TEST_KEY", key)
    from grade_kit.judges.llm import LLMJudge

    async def refuse(request: Request, writer: asyncio.StreamWriter) -> None:
        auth = request.headers.get("authorization", "")
        body = json.dumps({"error": {"message": f"bad key {auth}"}}).encode()
        writer.write(head(401, {"X-Request-Id": auth, "Content-Length": str(len(body))})
                     + body)

    async def echo(request: Request, writer: asyncio.StreamWriter) -> None:
        auth = request.headers.get("authorization", "")
        text = json.dumps({"key_findings": [f"the key is {auth}"], "text": auth})
        if request.body and not request.body.get("stream"):  # the judge: plain JSON
            verdict = json.dumps({"evidence_linkage": {"score": 1, "reason": auth},
                                  "structure_usability": {"score": 1, "reason": auth}})
            completion = {"choices": [{"message": {"content": verdict}}]}
            writer.write(head(200) + json.dumps(completion).encode())
        else:
            writer.write(head(200, content_type="text/event-stream")
                         + sse(delta(text, finish="stop")))

    with peer(refuse) as bad:
        refused = _fetch(bad.url, tmp_path / "refused", api_key_env="GK_TEST_KEY")
    assert refused["status"] == "failed" and refused["metadata"]["receipt"]["status"] == 401
    assert REDACTED in json.dumps(refused)
    with peer(echo) as good:
        delivered = _fetch(good.url, tmp_path / "echo", api_key_env="GK_TEST_KEY")
        assert delivered["status"] == "delivered" and REDACTED in delivered["response"]["text"]
        judge = LLMJudge(good.url, "judge", api_key_env="GK_TEST_KEY",
                         cache=tmp_path / "verdicts.jsonl", progress=False)
        ev = gk.evaluate(FIXTURES / "tasks", tmp_path / "echo" / "runs.jsonl", judge=judge,
                         packs=FIXTURES / "packs")
        ev.write(tmp_path / "scored")
    assert judge.requests >= 1
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(written) > 5
    for path in written:
        assert key.encode() not in path.read_bytes(), path


# ---------------------------------------------------------------- options and file names


@pytest.mark.parametrize(("option", "value"), [
    ("--timeout", "nan"), ("--timeout", "-1"), ("--timeout", "0"), ("--timeout", "inf"),
    ("--rate", "0"), ("--rate", "nan"), ("--concurrency", "0"), ("--repeats", "-2"),
])
def test_bad_fetch_options_exit_2_naming_the_option(tmp_path: Path, option: str, value: str,
                                                    capsys: pytest.CaptureFixture[str]
                                                    ) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["fetch", str(FIXTURES / "tasks"), "--endpoint", "http://127.0.0.1:9/v1", "--model",
              "m", option, value, "--out", str(tmp_path / "runs.jsonl")])
    assert stop.value.code == 2
    assert option in capsys.readouterr().err
    assert not (tmp_path / "runs.jsonl").exists()


@pytest.mark.parametrize("options", [{"timeout_s": math.nan}, {"timeout_s": -1.0},
                                     {"concurrency": 0}, {"repeats": 0},
                                     {"rate_per_second": math.inf}, {"retries": -1}])
def test_bad_fetch_options_are_a_value_error_before_anything_is_written(
        tmp_path: Path, options: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(options))):
        fetch([TASK], OpenAIChat("http://127.0.0.1:9/v1", "m"), tmp_path / "r.jsonl",
              setup="m", progress=False, **options)
    assert not (tmp_path / "r.jsonl").exists()


def test_model_names_become_safe_file_names(tmp_path: Path) -> None:
    async def reply(request: Request, writer: asyncio.StreamWriter) -> None:
        writer.write(head(200, content_type="text/event-stream")
                     + sse(delta(ANSWER, finish="stop")))

    out = tmp_path / "deep" / "out"
    with peer(reply) as p:
        reports = fetch_setups([TASK], p.url, ["../../evil", "a/b", "A/B", "/etc/x"], out,
                               timeout_s=20, progress=False)
    assert sorted(os.listdir(tmp_path)) == ["deep"] and os.listdir(tmp_path / "deep") == ["out"]
    names = {model: r.store.name for model, r in reports.items()}
    assert names == {"../../evil": "____evil.jsonl", "a/b": "a_b.jsonl", "A/B": "A_B-2.jsonl",
                     "/etc/x": "_etc_x.jsonl"}
    assert sorted(os.listdir(out)) == sorted(names.values())
    assert all(r.delivered == 1 for r in reports.values())


# ---------------------------------------------------------------- verdicts bound to answers


@pytest.mark.parametrize(("bind", "why"), [
    (lambda alias: {"answer": "A-000000"}, "names answer 'A-000000'"),
    (lambda alias: {}, "does not name the answer it scored"),
    (lambda alias: {"A-OTHER1": "nested"}, "does not name the answer it scored"),
])
def test_a_verdict_about_another_answer_is_not_used(bind: Any, why: str) -> None:
    """A judge or grader reply naming another alias (or none, or nesting its scores under
    another answer) is a null with the reason, never this answer's score."""
    import re

    from grade_kit.judges.llm import LLMJudge
    from grade_kit.judges.llm_grader import LLMGrader

    async def reply(request: Request, writer: asyncio.StreamWriter) -> None:
        prompt = request.body["messages"][-1]["content"]
        alias = re.search(r"\nANSWER ([A-Z0-9-]+): ", prompt).group(1)  # type: ignore[union-attr]
        scores = {"score": 1.0, "reason": "fine"}
        verdict = {"evidence_linkage": scores, "structure_usability": scores,
                   "request_fulfilment": "full", "core_conclusion": "correct",
                   "reason": "fine", **bind(alias)}
        if "A-OTHER1" in verdict:  # the scores nested under another answer
            verdict = {"A-OTHER1": {k: v for k, v in verdict.items() if k != "A-OTHER1"}}
        body = json.dumps({"choices": [{"message": {"content": json.dumps(verdict)}}]})
        writer.write(head(200) + body.encode())

    runs = [r for r in load_runs(FIXTURES / "runs" / "careful.jsonl").records
            if r.status == "delivered"][:2]
    with peer(reply) as p:
        judgements = LLMJudge(p.url, "j", progress=False)(TASKS, runs)
        grades = LLMGrader(p.url, "g", progress=False)(TASKS, runs)
    assert judgements and all(j.score is None and why in str(j.reason) for j in judgements)
    assert grades and all(g.core_conclusion == "pending" and g.request_fulfilment == "pending"
                          and why in str(g.reason) for g in grades)


@pytest.mark.parametrize("options", [{"timeout_s": math.nan}, {"timeout_s": 0},
                                     {"concurrency": 0}, {"concurrency": 1.5}])
def test_bad_judge_options_are_a_value_error(options: dict[str, Any]) -> None:
    from grade_kit.judges.llm import LLMJudge

    with pytest.raises(ValueError, match=next(iter(options))):
        LLMJudge("http://127.0.0.1:9/v1", "j", **options)


def test_a_record_json_cannot_hold_is_failed_in_words() -> None:
    """A responder's own metadata may hold a NaN or an object JSON cannot write: the record
    is written failed with the reason, never a crash of the fetch or a line score rejects."""
    from datetime import datetime

    from grade_kit.fetching.run import checked

    record = {"run_id": "r", "setup": "s", "task_id": "t", "repeat": 1,
              "status": "delivered", "response": {"text": "x"},
              "events": {"submitted": "2026-01-01T00:00:00+00:00"},
              "metadata": {"when": datetime(2026, 1, 1), "ratio": math.nan}}
    out = checked(record)
    assert out["status"] == "failed" and out["response"] is None
    assert out["error"].startswith("the reply breaks the run contract: ")
    assert set(out["metadata"]) == {"clock", "received_text"}
    json.dumps(out, allow_nan=False)  # a line score reads
