"""The simulated setups as a real OpenAI-compatible server on 127.0.0.1 (``grade-kit
demo serve``).

- ``GET /v1/models`` lists the setups (careful, hasty, erratic) and ``judge`` as models;
  ``GET /v1/models/<id>`` returns one. Every reply, streamed or not, has the shape of the
  official ``openai`` client's strict types (``ChatCompletion``, ``ChatCompletionChunk``,
  ``Model``), usage with ``total_tokens`` included (tests/fetching/test_openai_client.py).
- ``POST /v1/chat/completions`` answers a fixture task (found by its prompt) as the setup
  named by ``model`` would, on repeat ``seed`` (default 1): the same answer, timing, tool-call
  count and fault as the recorded fixture runs (:func:`grade_kit.demo.record.simulate_run`), so
  the recorded runs are a capture of this server and the two never drift apart.
- Streaming (server-sent events) or not; with ``tools`` in the request, the model first asks
  for one SQL call per recorded tool call, then answers once the results come back.
- Faults as recorded: a timed-out run stalls past the client's timeout and then drops the
  connection; a failed one returns HTTP 502 or drops the connection before any byte.
- ``POST /agent/<setup>`` is a generic HTTP agent: the same answers as server-sent events
  (progress, tool calls, tokens, a channel event, final).
- The ``judge`` model answers grade_kit's judge, grader, pairwise and claim prompts
  (:mod:`grade_kit.demo.judge_model`), streamed when asked, with usage.
- Latencies are the recorded ones times ``latency_scale`` (the demo uses 0.02), or one fixed
  latency for benchmarks (``faults=False`` then answers every slot).

It is an aiohttp.web application on its own event loop (in a background thread, or the
``grade-kit demo serve`` process): thousands of concurrent streams cost no threads.
"""

from __future__ import annotations

import asyncio
import asyncio.base_events
import json
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aiohttp import web

from grade_kit.demo.judge_model import DEMO_REPEATS, DemoJudgeModel
from grade_kit.demo.record import START, TIMEOUT_S, simulate_run
from grade_kit.demo.setups import SETUPS, answer_task
from grade_kit.fetching.responders import RESPONSE_FORMAT_INSTRUCTION
from grade_kit.schema import Task

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


class _Drop(Exception):
    """Drop the connection without a reply (a recorded fault)."""


def _error(status: int, message: str, kind: str = "invalid_request_error") -> web.Response:
    """An error body in the OpenAI shape (``error.message``, ``type``, ``param``, ``code``)."""
    return web.json_response({"error": {"message": message, "type": kind, "param": None,
                                        "code": None}}, status=status)


MODELS_CREATED = 1767225600
"""The ``created`` time every demo model reports (2026-01-01T00:00:00Z): fixed, so replies
are reproducible."""


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
        warm_repeats: Compute the answers of repeats 1..N of every setup and task before
            serving; default 0 (each on first use, about 1 ms). The throughput benchmark
            warms them, so the fixed latency is all a request waits for.
    """

    def __init__(self, tasks: Sequence[Task], packs: Path | str, *, port: int = 0,
                 latency_scale: float = 1.0, fixed_latency_s: float | None = None,
                 faults: bool = True, warm_repeats: int = 0) -> None:
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
        for repeat in range(1, warm_repeats + 1):
            for setup in SETUPS:
                for task in self.tasks.values():
                    self._record(task, setup, repeat)
        self._port = port
        self._bound: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._stopped = threading.Event()

    @property
    def url(self) -> str:
        """The base URL, ``http://127.0.0.1:<port>/v1``."""
        if self._bound is None:
            raise RuntimeError("the server is not started")
        return f"http://127.0.0.1:{self._bound}/v1"

    @property
    def timeout_s(self) -> float:
        """The timeout a client should agree on (:func:`agreed_timeout`)."""
        return agreed_timeout(self.latency_scale)

    def _app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/v1/models/{model}", self._model)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/agent/{setup}", self._agent)
        return app

    async def _open(self) -> None:
        # a stalled "timeout" answer is not waited for when stopping
        self._runner = web.AppRunner(self._app(), access_log=None, handle_signals=False,
                                     shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self._port, backlog=1024)
        await site.start()
        server = site._server  # the bound port, when 0 was asked for
        assert isinstance(server, asyncio.base_events.Server)
        self._bound = server.sockets[0].getsockname()[1]

    def _run(self, ready: threading.Event, failed: list[BaseException]) -> None:
        loop = self._loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(self._open())
        except BaseException as exc:  # reported to start()
            failed.append(exc)
            ready.set()
            loop.close()
            return
        ready.set()
        try:
            loop.run_forever()
        finally:
            if self._runner is not None:
                loop.run_until_complete(self._runner.cleanup())
            loop.close()
            self._stopped.set()

    def start(self) -> DemoServer:
        """Serve from a background thread (its own event loop); returns once listening."""
        ready = threading.Event()
        failed: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, args=(ready, failed), daemon=True,
                                        name="grade-kit-demo-server")
        self._thread.start()
        ready.wait()
        if failed:
            raise failed[0]
        return self

    def stop(self) -> None:
        """Stop serving and close every connection."""
        if self._loop is not None and self._thread is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)

    def serve_forever(self) -> None:
        """Serve until interrupted (Ctrl-C); starts the server first if needed."""
        if self._thread is None:
            self.start()
        try:
            while not self._stopped.wait(0.5):
                pass
        finally:
            self.stop()

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

    @staticmethod
    def _model_entry(name: str) -> dict[str, Any]:
        return {"id": name, "object": "model", "created": MODELS_CREATED,
                "owned_by": "grade_kit-demo"}

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [
            self._model_entry(name) for name in [*SETUPS, JUDGE_MODEL]]})

    async def _model(self, request: web.Request) -> web.Response:
        name = request.match_info["model"]
        if name not in (*SETUPS, JUDGE_MODEL):
            return _error(404, f"The model '{name}' does not exist", "model_not_found")
        return web.json_response(self._model_entry(name))

    @staticmethod
    async def _body(request: web.Request) -> dict[str, Any] | None:
        try:
            body = json.loads(await request.read() or b"{}")
        except (ValueError, UnicodeDecodeError):
            return None
        return body if isinstance(body, dict) else None

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await self._body(request)
        if body is None:
            return _error(400, "the body is not JSON")
        try:
            if body.get("model") == JUDGE_MODEL:
                return await self._judge(request, body)
            return await self.answer(request, body)
        except _Drop:
            _drop(request)
            raise web.HTTPInternalServerError() from None  # never sent: the socket is gone

    async def _agent(self, request: web.Request) -> web.StreamResponse:
        body = await self._body(request)
        if body is None:
            return _error(400, "the body is not JSON")
        try:
            return await self.agent(request, request.match_info["setup"], body)
        except _Drop:
            _drop(request)
            raise web.HTTPInternalServerError() from None

    async def _judge(self, request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        """The demo judge model (:mod:`grade_kit.demo.judge_model`): deterministic verdicts
        on judge, grader, pairwise and claim prompts, like a temperature-0 model; streamed
        when asked, with usage, like every other model."""
        content = str(((body.get("messages") or [{}])[-1] or {}).get("content") or "")
        loop = asyncio.get_running_loop()
        try:  # the first grader prompt grades every recorded answer: off the event loop
            verdict = await loop.run_in_executor(None, self.judge_model.answer, content)
        except (ValueError, KeyError, IndexError) as exc:  # a prompt it cannot read
            verdict, why = None, f"unreadable prompt: {type(exc).__name__}: {exc}"
        else:
            why = "the judge model answers grade_kit's judge, grader and claim prompts"
        if verdict is None:
            return _error(400, why)
        return await self._send(request, body, JUDGE_MODEL, content=json.dumps(verdict))

    async def _slot(self, task: Task, setup: str, repeat: object, *, may_drop: bool,
                    what: str) -> tuple[dict[str, Any], float, float] | web.Response:
        """The recorded slot (repeat 1 unless a positive integer is asked for) with its
        latency and first-token wait, or its fault: a timeout stalls past the agreed timeout
        and drops the connection; a failure answers HTTP 502 after the recorded wait (or, when
        ``may_drop``, drops the connection half the time, seeded per slot)."""
        slot = repeat if isinstance(repeat, int) and repeat >= 1 else 1
        record = self._record(task, setup, slot)
        scale = self.latency_scale
        if record["status"] == "timeout":
            await asyncio.sleep(2 * self.timeout_s + 0.05)
            raise _Drop
        if record["status"] == "failed":
            await asyncio.sleep(_offset(record, "stopped") * scale)
            fault = random.Random(f"grade_kit-fault:{setup}:{task.task_id}:{slot}")
            if not may_drop or fault.random() < 0.5:
                return _error(502, f"upstream {what} unavailable")
            raise _Drop
        latency = (self.fixed_latency_s if self.fixed_latency_s is not None
                   else _offset(record, "received") * scale)
        first = (latency * 0.2 if self.fixed_latency_s is not None
                 else _offset(record, "first_token") * scale)
        return record, latency, first

    async def answer(self, request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        """A setup's answer to a chat-completions request (streamed or not)."""
        setup = body.get("model")
        if setup not in SETUPS:
            return _error(404, f"unknown model {setup!r}; models: {sorted(SETUPS)}")
        task = self._task_of(body)
        if task is None:
            return _error(400, "not a fixture task's prompt")
        seed = body.get("seed", 1)
        slot = await self._slot(task, str(setup), seed, may_drop=True, what="model")
        if isinstance(slot, web.Response):
            return slot
        record, latency, first = slot
        tools_offered = bool(body.get("tools"))
        asked = sum(1 for m in body.get("messages") or []
                    if isinstance(m, dict) and m.get("role") == "tool")
        calls = record.get("tool_calls") or []
        if tools_offered and calls and asked == 0:
            # the first token's wait is split between the tool turn and the answer turn, so
            # the whole exchange takes the recorded latency
            return await self._send(request, body, str(setup), tool_calls=[
                {"index": i, "id": c["id"], "type": "function",
                 "function": {"name": "sql", "arguments": json.dumps(
                     {"query": SQL_BY_TABLE[i % len(SQL_BY_TABLE)]})}}
                for i, c in enumerate(calls)], delay=first / 2)
        content = json.dumps(record["response"], ensure_ascii=False)
        return await self._send(request, body, str(setup), content=content,
                                delay=first / 2 if tools_offered and calls else first,
                                rest=max(0.0, latency - first))

    async def agent(self, request: web.Request, setup: str,
                    body: dict[str, Any]) -> web.StreamResponse:
        """The generic HTTP agent endpoint (``POST /agent/<setup>``): the same recorded answer
        streamed as server-sent events: ``progress``, one ``tool_call`` per recorded call,
        ``token`` pieces, a ``channel`` event (the reply card the agent posts, 5% of the
        latency) and ``final``; a recorded failure is HTTP 502, a timeout a stall then a
        dropped connection (:class:`grade_kit.fetching.HTTPAgent` reads it)."""
        if setup not in SETUPS:
            return _error(404, f"unknown agent {setup!r}; agents: {sorted(SETUPS)}")
        task = self.tasks.get(str(body.get("prompt") or "").split(
            "\n\n" + RESPONSE_FORMAT_INSTRUCTION)[0].strip())
        if task is None:
            return _error(400, "not a fixture task's prompt")
        slot = await self._slot(task, setup, body.get("repeat", 1), may_drop=False,
                                what="agent")
        if isinstance(slot, web.Response):
            return slot
        record, latency, first = slot
        reply = await _event_stream(request)

        async def send(event: str, data: dict[str, Any]) -> None:
            await reply.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())

        def stamp() -> str:
            return datetime.now(UTC).isoformat()

        try:
            await send("progress", {"message": "reading the pack"})
            calls = record.get("tool_calls") or []
            for i, call in enumerate(calls):
                started = stamp()
                await asyncio.sleep(first / (2 * max(1, len(calls))))
                await send("tool_call", {"id": call["id"], "name": call["name"],
                                         "arguments": {"query": SQL_BY_TABLE[i % len(
                                             SQL_BY_TABLE)]},
                                         "started": started, "ended": stamp()})
            await asyncio.sleep(first / 2 if calls else first)
            content = json.dumps(record["response"], ensure_ascii=False)
            pieces = _pieces(content, 8)
            rest = max(0.0, latency - first) * 0.95
            for piece in pieces:
                await send("token", {"text": piece})
                await asyncio.sleep(rest / len(pieces))
            started = stamp()
            await asyncio.sleep(max(0.0, latency - first) * 0.05)
            await send("channel", {"kind": "reply_card", "started": started, "ended": stamp()})
            await send("final", {"answer": record["response"], "usage": record.get("usage")})
            await reply.write_eof()
        except (ConnectionResetError, ConnectionError):
            pass  # the client gave up (its timeout): nothing to do
        return reply

    async def _send(self, request: web.Request, body: dict[str, Any], model: str, *,
                    content: str = "", tool_calls: list[dict[str, Any]] | None = None,
                    delay: float = 0.0, rest: float = 0.0) -> web.StreamResponse:
        created = int(time.time())
        usage = {"prompt_tokens": sum(len(str(m.get("content") or "")) // 4
                                      for m in body.get("messages") or []
                                      if isinstance(m, dict)),
                 "completion_tokens": max(1, len(content) // 4)}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        finish = "tool_calls" if tool_calls else "stop"
        await asyncio.sleep(delay)
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": content or None}
            if tool_calls:
                message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"}
                                         for c in tool_calls]
            return web.json_response({"id": "chatcmpl-demo", "object": "chat.completion",
                                      "created": created, "model": model, "usage": usage,
                                      "choices": [{"index": 0, "message": message,
                                                   "finish_reason": finish}]})
        reply = await _event_stream(request)
        held: list[bytes] = []  # fixed latency: the rest goes out in one write
        held_back = False

        async def chunk(delta: dict[str, Any], reason: str | None = None) -> None:
            data = {"id": "chatcmpl-demo", "object": "chat.completion.chunk",
                    "created": created, "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": reason}]}
            await send(f"data: {json.dumps(data)}\n\n")

        async def send(text: str) -> None:  # one HTTP/1.1 chunk per server-sent event
            if held_back:
                held.append(text.encode())
            else:
                await reply.write(text.encode())

        try:
            await chunk({"role": "assistant"})
            if tool_calls:
                await chunk({"tool_calls": tool_calls})
            elif self.fixed_latency_s is not None:
                # benchmarks: the first piece at the first token, then one wait and every
                # other event in one write (the same events; fewer wake-ups on both sides)
                pieces = _pieces(content, 8)
                await chunk({"content": pieces[0]})
                await asyncio.sleep(rest)
                held_back = True
                for piece in pieces[1:]:
                    await chunk({"content": piece})
            else:
                pieces = _pieces(content, 8)
                for piece in pieces:
                    await chunk({"content": piece})
                    await asyncio.sleep(rest / len(pieces))
            await chunk({}, finish)
            if (body.get("stream_options") or {}).get("include_usage"):
                await send("data: " + json.dumps(
                    {"id": "chatcmpl-demo", "object": "chat.completion.chunk",
                     "created": created, "model": model, "choices": [],
                     "usage": usage}) + "\n\n")
            await send("data: [DONE]\n\n")
            if held:
                await reply.write(b"".join(held))
            await reply.write_eof()
        except (ConnectionResetError, ConnectionError):
            pass  # the client gave up (its timeout): nothing to do
        return reply


async def _event_stream(request: web.Request) -> web.StreamResponse:
    reply = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream",
                                                    "Cache-Control": "no-cache"})
    reply.enable_chunked_encoding()
    await reply.prepare(request)
    return reply


def _drop(request: web.Request) -> None:
    """Close the connection at once, before any reply byte."""
    transport = request.transport
    if transport is not None:
        transport.abort()


def _offset(record: dict[str, Any], event: str) -> float:
    events = record["events"]
    return (datetime.fromisoformat(events[event])
            - datetime.fromisoformat(events["submitted"])).total_seconds()


def _pieces(text: str, n: int) -> list[str]:
    size = max(1, -(-len(text) // n))
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


@contextmanager
def demo_server_process(fixtures: Path | str, *, latency_scale: float = 1.0,
                        fixed_latency_s: float | None = None, faults: bool = True,
                        warm_repeats: int = 0,
                        startup_s: float = 30.0) -> Iterator[str]:
    """``grade-kit demo serve`` in its own process (so it never shares an interpreter with
    the client), on a free port; yields its base URL and stops it on exit."""
    import subprocess
    import sys
    import urllib.error
    import urllib.request

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    args = [sys.executable, "-m", "grade_kit.cli", "demo", "serve", "--port", str(port),
            "--latency-scale", str(latency_scale), "--fixtures", str(fixtures)]
    if fixed_latency_s is not None:
        args += ["--fixed-latency", str(fixed_latency_s)]
    if not faults:
        args.append("--no-faults")
    if warm_repeats:
        args += ["--warm-repeats", str(warm_repeats)]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + startup_s
        while True:
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=1.0):
                    break
            except (urllib.error.URLError, OSError) as exc:
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
    from grade_kit.fetching import fetch_setups
    from grade_kit.reading.task_files import load_tasks

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
