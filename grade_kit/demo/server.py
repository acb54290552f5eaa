"""The simulated setups as a real OpenAI-compatible server on 127.0.0.1 (``grade-kit
demo-server``).

- ``GET /v1/models`` lists the setups (careful, hasty, erratic) as models.
- ``POST /v1/chat/completions`` answers a fixture task (found by its prompt) as the setup
  named by ``model`` would, on repeat ``seed`` (default 1): the same answer, timing, tool-call
  count and fault as the recorded fixture runs (:func:`grade_kit.demo.record.simulate_run`), so
  the recorded runs are a capture of this server and the two never drift apart.
- Streaming (server-sent events) or not; with ``tools`` in the request, the model first asks
  for one SQL call per recorded tool call, then answers once the results come back.
- Faults as recorded: a timed-out run stalls past the client's timeout and then drops the
  connection; a failed one returns HTTP 502 or drops the connection before any byte.
- Latencies are the recorded ones times ``latency_scale`` (the demo uses 0.01), or one fixed
  latency for benchmarks.
"""

from __future__ import annotations

import json
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from grade_kit.demo.judge_model import DEMO_REPEATS, DemoJudgeModel
from grade_kit.demo.record import START, TIMEOUT_S, simulate_run
from grade_kit.demo.setups import SETUPS, answer_task
from grade_kit.fetch.responders import RESPONSE_FORMAT_INSTRUCTION
from grade_kit.schema import Task

__all__ = ["DEMO_LATENCY_SCALE", "LOOPBACK_ALLOWANCE_S", "DemoServer", "agreed_timeout",
           "demo_server", "demo_server_process", "fetch_demo_runs"]

JUDGE_MODEL = "judge"
"""The demo server's judge model: answers judge prompts with the rule judge's verdicts."""

DEMO_LATENCY_SCALE = 0.02
"""``make demo`` runs the recorded latencies at 2% (careful's 12 s median takes 0.24 s)."""

LOOPBACK_ALLOWANCE_S = 1.0
"""Added to the scaled timeout: loopback HTTP and the agent loop's tool calls take time that
the recorded latencies (up to 59 s of 60) do not include."""


def agreed_timeout(latency_scale: float) -> float:
    """The timeout a client agrees on with the demo server: the recorded 60 s, scaled, plus
    :data:`LOOPBACK_ALLOWANCE_S`. A recorded timeout stalls for twice that."""
    return TIMEOUT_S * latency_scale + LOOPBACK_ALLOWANCE_S

SQL_BY_TABLE = ("SELECT COUNT(*) AS n FROM sessions", "SELECT * FROM tutors LIMIT 5",
                "SELECT status, COUNT(*) AS n FROM sessions GROUP BY status")


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"  # keep-alive: a pooled client reuses its connections

    def log_message(self, format: str, *args: Any) -> None:
        return  # quiet: the fetch records what matters

    def _json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _drop(self) -> None:
        with suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)
        self.close_connection = True

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            self._json(200, {"object": "list", "data": [
                {"id": name, "object": "model", "owned_by": "grade_kit-demo"}
                for name in [*SETUPS, JUDGE_MODEL]]})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        path = self.path.rstrip("/")
        agent = path.startswith("/agent/")
        if path != "/v1/chat/completions" and not agent:
            self._json(404, {"error": {"message": f"no route {self.path}"}})
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
        except (ValueError, json.JSONDecodeError):
            self._json(400, {"error": {"message": "the body is not JSON"}})
            return
        if agent:
            self.server.owner.agent(self, path.removeprefix("/agent/"), body)
        else:
            self.server.owner.answer(self, body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # the default (5) refuses connections under a concurrent fetch
    owner: DemoServer


class DemoServer:
    """The demo setups over HTTP (see the module docstring).

    Args:
        tasks: The fixture tasks (found by their prompts).
        packs: The packs folder.
        port: 0 picks a free port; see :attr:`url`.
        latency_scale: Multiplies every recorded latency; default 1.0 (the real figures).
        fixed_latency_s: When set, every answer takes this long (benchmarks).
        faults: Serve the recorded timeouts and failures; default True. False answers every
            slot (a faulted slot gets the answer its setup would have given), for the
            throughput benchmark, which measures the client, not fault handling.
    """

    def __init__(self, tasks: list[Task], packs: Path | str, *, port: int = 0,
                 latency_scale: float = 1.0, fixed_latency_s: float | None = None,
                 faults: bool = True) -> None:
        self.tasks = {t.prompt.strip(): t for t in tasks if t.kind == "grade"}
        if len(self.tasks) != sum(1 for t in tasks if t.kind == "grade"):
            raise ValueError("two tasks share a prompt: the server could not tell them apart")
        self.packs = Path(packs)
        self.latency_scale = latency_scale
        self.fixed_latency_s = fixed_latency_s
        self.faults = faults
        self._records: dict[tuple[str, str, int], dict[str, Any]] = {}
        self._lock = threading.Lock()
        self.judge_model = DemoJudgeModel(self.tasks, self._recorded_answers)
        self._server = _Server(("127.0.0.1", port), _Handler)
        self._server.owner = self
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The base URL, ``http://127.0.0.1:<port>/v1``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def timeout_s(self) -> float:
        """The timeout a client should agree on (:func:`agreed_timeout`)."""
        return agreed_timeout(self.latency_scale)

    def start(self) -> DemoServer:
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True,
                                        name="grade-kit-demo-server")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def serve_forever(self) -> None:
        """Serve in this thread until interrupted."""
        try:
            self._server.serve_forever()
        finally:
            self._server.server_close()

    # ------------------------------------------------------------------ answering

    def _task_of(self, body: dict[str, Any]) -> Task | None:
        for message in body.get("messages") or []:
            if isinstance(message, dict) and message.get("role") == "user":
                content = str(message.get("content") or "")
                prompt = content.split("\n\n" + RESPONSE_FORMAT_INSTRUCTION)[0].strip()
                return self.tasks.get(prompt)
        return None

    def _record(self, task: Task, setup: str, repeat: int) -> dict[str, Any]:
        """The recorded run of this slot (computed once: the answer is deterministic); with
        faults off, a faulted slot is answered as its setup answers (status delivered)."""
        key = (setup, task.task_id, repeat)
        with self._lock:
            if key not in self._records:
                record = simulate_run(task, self.packs, setup, repeat, START)
                if not self.faults and record["status"] != "delivered":
                    response = answer_task(task, self.packs, setup, repeat)
                    response.pop("_modes", None)
                    record = {**record, "status": "delivered", "error": None,
                              "response": response, "tool_calls": [],
                              "events": {"submitted": record["events"]["submitted"],
                                         "first_token": record["events"]["submitted"],
                                         "received": record["events"]["submitted"]}}
                self._records[key] = record
            return self._records[key]

    def _recorded_answers(self) -> list[dict[str, Any]]:
        """Every recorded demo slot's record (the judge model grades them in one batch)."""
        return [self._record(task, setup, repeat) for setup in SETUPS
                for task in self.tasks.values() for repeat in range(1, DEMO_REPEATS + 1)]

    def _judge(self, handler: _Handler, body: dict[str, Any]) -> None:
        """The demo judge model (:mod:`grade_kit.demo.judge_model`): deterministic verdicts
        on judge, grader, pairwise and claim prompts, like a temperature-0 model."""
        content = str(((body.get("messages") or [{}])[-1] or {}).get("content") or "")
        try:
            verdict = self.judge_model.answer(content)
        except (ValueError, KeyError, IndexError) as exc:  # a prompt it cannot read
            verdict, why = None, f"unreadable prompt: {type(exc).__name__}: {exc}"
        else:
            why = "the judge model answers grade_kit's judge, grader and claim prompts"
        if verdict is None:
            handler._json(400, {"error": {"message": why}})
            return
        handler._json(200, {"id": "chatcmpl-judge", "object": "chat.completion",
                            "created": int(time.time()), "model": JUDGE_MODEL,
                            "choices": [{"index": 0, "finish_reason": "stop",
                                         "message": {"role": "assistant",
                                                     "content": json.dumps(verdict)}}]})

    def answer(self, handler: _Handler, body: dict[str, Any]) -> None:
        setup = body.get("model")
        if setup == JUDGE_MODEL:
            self._judge(handler, body)
            return
        if setup not in SETUPS:
            handler._json(404, {"error": {"message": f"unknown model {setup!r}; models: "
                                                     f"{sorted(SETUPS)}"}})
            return
        task = self._task_of(body)
        if task is None:
            handler._json(400, {"error": {"message": "not a fixture task's prompt"}})
            return
        seed = body.get("seed", 1)
        repeat = seed if isinstance(seed, int) and seed >= 1 else 1
        record = self._record(task, str(setup), repeat)
        scale = self.latency_scale
        if record["status"] == "timeout":
            time.sleep(2 * self.timeout_s + 0.05)
            handler._drop()
            return
        if record["status"] == "failed":
            time.sleep(_offset(record, "stopped") * scale)
            if random.Random(f"grade_kit-fault:{setup}:{task.task_id}:{repeat}").random() < 0.5:
                handler._json(502, {"error": {"message": "upstream model unavailable"}})
            else:
                handler._drop()
            return
        latency = (self.fixed_latency_s if self.fixed_latency_s is not None
                   else _offset(record, "received") * scale)
        first = (latency * 0.2 if self.fixed_latency_s is not None
                 else _offset(record, "first_token") * scale)
        tools_offered = bool(body.get("tools"))
        asked = sum(1 for m in body.get("messages") or []
                    if isinstance(m, dict) and m.get("role") == "tool")
        calls = record.get("tool_calls") or []
        if tools_offered and calls and asked == 0:
            # the first token's wait is split between the tool turn and the answer turn, so
            # the whole exchange takes the recorded latency
            self._send(handler, body, setup, tool_calls=[
                {"index": i, "id": c["id"], "type": "function",
                 "function": {"name": "sql", "arguments": json.dumps(
                     {"query": SQL_BY_TABLE[i % len(SQL_BY_TABLE)]})}}
                for i, c in enumerate(calls)], delay=first / 2)
            return
        content = json.dumps(record["response"], ensure_ascii=False)
        self._send(handler, body, setup, content=content,
                   delay=first / 2 if tools_offered and calls else first,
                   rest=max(0.0, latency - first))

    def agent(self, handler: _Handler, setup: str, body: dict[str, Any]) -> None:
        """The generic HTTP agent endpoint (``POST /agent/<setup>``): the same recorded answer
        streamed as server-sent events: ``progress``, one ``tool_call`` per recorded call,
        ``token`` pieces, a ``channel`` event (the reply card the agent posts, 5% of the
        latency) and ``final``; a recorded failure is HTTP 502, a timeout a stall then a
        dropped connection (:mod:`grade_kit.fetch.responders` ``HTTPAgent`` reads it)."""
        if setup not in SETUPS:
            handler._json(404, {"error": {"message": f"unknown agent {setup!r}; agents: "
                                                     f"{sorted(SETUPS)}"}})
            return
        task = self.tasks.get(str(body.get("prompt") or "").split(
            "\n\n" + RESPONSE_FORMAT_INSTRUCTION)[0].strip())
        if task is None:
            handler._json(400, {"error": {"message": "not a fixture task's prompt"}})
            return
        repeat = body.get("repeat", 1)
        repeat = repeat if isinstance(repeat, int) and repeat >= 1 else 1
        record = self._record(task, setup, repeat)
        scale = self.latency_scale
        if record["status"] == "timeout":
            time.sleep(2 * self.timeout_s + 0.05)
            handler._drop()
            return
        if record["status"] == "failed":
            time.sleep(_offset(record, "stopped") * scale)
            handler._json(502, {"error": {"message": "upstream agent unavailable"}})
            return
        latency = (self.fixed_latency_s if self.fixed_latency_s is not None
                   else _offset(record, "received") * scale)
        first = (latency * 0.2 if self.fixed_latency_s is not None
                 else _offset(record, "first_token") * scale)
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()

        def send(event: str, data: dict[str, Any]) -> None:
            raw = f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()
            handler.wfile.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
            handler.wfile.flush()

        def stamp() -> str:
            return datetime.now(UTC).isoformat()

        try:
            send("progress", {"message": "reading the pack"})
            calls = record.get("tool_calls") or []
            for call in calls:
                started = stamp()
                time.sleep(first / (2 * max(1, len(calls))))
                send("tool_call", {"id": call["id"], "name": call["name"],
                                   "started": started, "ended": stamp()})
            time.sleep(first / 2 if calls else first)
            content = json.dumps(record["response"], ensure_ascii=False)
            pieces = _pieces(content, 8)
            rest = max(0.0, latency - first) * 0.95
            for piece in pieces:
                send("token", {"text": piece})
                time.sleep(rest / len(pieces))
            started = stamp()
            time.sleep(max(0.0, latency - first) * 0.05)
            send("channel", {"kind": "reply_card", "started": started, "ended": stamp()})
            send("final", {"answer": record["response"], "usage": record.get("usage")})
            handler.wfile.write(b"0\r\n\r\n")
            handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return

    def _send(self, handler: _Handler, body: dict[str, Any], model: str, *,
              content: str = "", tool_calls: list[dict[str, Any]] | None = None,
              delay: float = 0.0, rest: float = 0.0) -> None:
        created = int(time.time())
        usage = {"prompt_tokens": sum(len(str(m.get("content") or "")) // 4
                                      for m in body.get("messages") or []
                                      if isinstance(m, dict)),
                 "completion_tokens": max(1, len(content) // 4)}
        finish = "tool_calls" if tool_calls else "stop"
        time.sleep(delay)
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": content or None}
            if tool_calls:
                message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"}
                                         for c in tool_calls]
            handler._json(200, {"id": "chatcmpl-demo", "object": "chat.completion",
                                "created": created, "model": model, "usage": usage,
                                "choices": [{"index": 0, "message": message,
                                             "finish_reason": finish}]})
            return
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()

        def send(text: str) -> None:  # one HTTP/1.1 chunk per server-sent event
            data = text.encode()
            handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            handler.wfile.flush()

        def chunk(delta: dict[str, Any], reason: str | None = None,
                  extra: dict[str, Any] | None = None) -> None:
            data = {"id": "chatcmpl-demo", "object": "chat.completion.chunk",
                    "created": created, "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": reason}],
                    **(extra or {})}
            send(f"data: {json.dumps(data)}\n\n")

        try:
            chunk({"role": "assistant"})
            if tool_calls:
                chunk({"tool_calls": tool_calls})
            else:
                pieces = _pieces(content, 8)
                for piece in pieces:
                    chunk({"content": piece})
                    time.sleep(rest / len(pieces))
            chunk({}, finish)
            if (body.get("stream_options") or {}).get("include_usage"):
                send("data: " + json.dumps(
                    {"id": "chatcmpl-demo", "object": "chat.completion.chunk",
                     "created": created, "model": model, "choices": [],
                     "usage": usage}) + "\n\n")
            send("data: [DONE]\n\n")
            handler.wfile.write(b"0\r\n\r\n")
            handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return  # the client gave up (its timeout): nothing to do


def _offset(record: dict[str, Any], event: str) -> float:
    events = record["events"]
    return (datetime.fromisoformat(events[event])
            - datetime.fromisoformat(events["submitted"])).total_seconds()


def _pieces(text: str, n: int) -> list[str]:
    size = max(1, -(-len(text) // n))
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


@contextmanager
def demo_server(tasks: list[Task], packs: Path | str, **options: Any) -> Iterator[DemoServer]:
    """A started :class:`DemoServer`, stopped on exit."""
    server = DemoServer(tasks, packs, **options).start()
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def demo_server_process(fixtures: Path | str, *, latency_scale: float = 1.0,
                        fixed_latency_s: float | None = None, faults: bool = True,
                        startup_s: float = 30.0) -> Iterator[str]:
    """``grade-kit demo-server`` in its own process (so it never shares an interpreter with
    the client), on a free port; yields its base URL and stops it on exit."""
    import subprocess
    import sys

    import httpx

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    args = [sys.executable, "-m", "grade_kit.cli", "demo-server", "--port", str(port),
            "--latency-scale", str(latency_scale), "--fixtures", str(fixtures)]
    if fixed_latency_s is not None:
        args += ["--fixed-latency", str(fixed_latency_s)]
    if not faults:
        args.append("--no-faults")
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + startup_s
        while True:
            try:
                httpx.get(f"{url}/models", timeout=1.0).raise_for_status()
                break
            except httpx.HTTPError as exc:
                if proc.poll() is not None or time.monotonic() > deadline:
                    err = proc.stderr.read().decode() if proc.stderr else ""
                    raise RuntimeError(f"the demo server did not start: {err[-500:]}") from exc
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def fetch_demo_runs(fixtures: Path | str, runs_dir: Path | str, *,
                    latency_scale: float = DEMO_LATENCY_SCALE, repeats: int = 5,
                    concurrency: int = 8, progress: bool = True,
                    then: Callable[[str], Any] | None = None) -> list[Path]:
    """The embedded default's runs, fetched for real: the demo server in its own process,
    the three setups fetched at once through the OpenAI-compatible responder (with the pack's
    SQL tool), one run store per setup under ``runs_dir`` (replaced).

    Args:
        then: Called with the server's base URL after the fetch, while the server still runs
            (the demo judges through its judge model then).

    Returns:
        The run files, one per setup.
    """
    from grade_kit.fetch import fetch_setups
    from grade_kit.io import load_tasks

    root = Path(fixtures)
    tasks = load_tasks(root / "tasks", root / "packs").records
    out = Path(runs_dir)
    out.mkdir(parents=True, exist_ok=True)
    stores = {name: out / f"{name}.jsonl" for name in SETUPS}
    for path in stores.values():
        path.unlink(missing_ok=True)
        path.with_name(path.name + ".torn").unlink(missing_ok=True)
    with demo_server_process(root, latency_scale=latency_scale) as url:
        fetch_setups(tasks, url, list(stores), out, packs=root / "packs", repeats=repeats,
                     concurrency=concurrency, timeout_s=agreed_timeout(latency_scale),
                     progress=progress)
        if then is not None:
            then(url)
    return list(stores.values())
