"""Responders: what answers a task, behind one interface (:class:`Responder`).

- :class:`OpenAIChat`: any OpenAI-compatible chat-completions endpoint, by base URL and model
  name; streaming; tool calls answered by an agent loop over the pack's tools
  (:class:`~grade_kit.fetch.tools.PackTools`), each call recorded with its id and start/end;
  the API key read from an environment variable whose *name* is given, never a value.
- :class:`HTTPAgent`: a generic HTTP agent endpoint that streams server-sent events
  (``progress``, ``tool_call``, ``token``, ``channel``, ``final``, ``error``).
- :class:`PythonCallable`: a function of (task, prompt, repeat) returning a response.
- :class:`Replay`: a recorded runs file, answered again as it was.

Every responder gets the same prompt, :func:`build_prompt`: the task's prompt plus one shared
response-format instruction. Each captures its own events where they happen (first token,
model text finished, runner finished); the fetch layer adds submitted, received and stopped.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar

from grade_kit.fetch.http import (
    TRANSPORT_ERRORS,
    Reply,
    Sessions,
    endpoint_offset,
    post,
    receipt,
)
from grade_kit.fetch.tools import SQL_TOOL, PackTools
from grade_kit.schema import Response, Task, parse_timestamp

__all__ = [
    "RESPONSE_FORMAT_INSTRUCTION",
    "Answer",
    "AnswerFailed",
    "HTTPAgent",
    "MissingKeyError",
    "OpenAIChat",
    "PythonCallable",
    "Replay",
    "Responder",
    "build_prompt",
    "parse_answer",
    "request_headers",
    "run_sync",
]

T = TypeVar("T")

RESPONSE_FORMAT_INSTRUCTION = (
    "Answer with one JSON object and nothing else, with these keys: "
    '"key_findings" (a list of short findings, most important first), '
    '"limitations" (a list of caveats about the data or the conclusion), '
    '"recommendations" (a list of actions, if the question asks for any), '
    '"structured_metrics" (an object of metric name to value, numbers as numbers), '
    '"text" (the full answer as prose).'
)
"""The one response-format instruction every setup is sent (recorded with each fetch)."""


def build_prompt(task: Task) -> str:
    """The text sent for ``task``: its prompt, a blank line, the shared instruction."""
    return f"{task.prompt}\n\n{RESPONSE_FORMAT_INSTRUCTION}"


def now() -> datetime:
    """The current instant, time-zone aware (UTC); the clock every event is read from."""
    return datetime.now(UTC)


@dataclass
class Answer:
    """What a responder got back (the fetch layer turns it into a run record)."""

    response: dict[str, Any]
    events: dict[str, datetime] = field(default_factory=dict)
    tool_calls: list[dict[str, Any]] | None = None
    usage: dict[str, int] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


class AnswerFailed(Exception):
    """A failed attempt. ``retryable`` is true only for a transport error before any answer
    byte (the one case the fetch retries); ``kept`` holds whatever was received."""

    def __init__(self, message: str, *, retryable: bool = False, kept: str = "",
                 receipt: dict[str, Any] | None = None,
                 events: dict[str, datetime] | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.kept = kept
        self.receipt = receipt or {}
        self.events = events or {}


class Responder(Protocol):
    """Answers one task; ``name`` is recorded with the fetch."""

    name: str

    async def __call__(self, task: Task, prompt: str, repeat: int) -> Answer:
        """The answer to ``prompt`` (the task's, with the shared instruction)."""
        ...


class MissingKeyError(RuntimeError):
    """The environment variable named for the API key is not set."""


def request_headers(api_key_env: str | None) -> dict[str, str]:
    """JSON headers, with ``Authorization: Bearer <key>`` when ``api_key_env`` names an
    environment variable: the key is read at request time and never stored or written.

    Raises:
        MissingKeyError: when the named variable is not set.
    """
    headers = {"Content-Type": "application/json"}
    if api_key_env:
        key = os.environ.get(api_key_env)
        if not key:
            raise MissingKeyError(f"environment variable {api_key_env} is not set")
        headers["Authorization"] = f"Bearer {key}"
    return headers


def run_sync(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run the coroutine ``make()`` from synchronous code, also inside a running event loop
    (Jupyter's): it then runs on its own loop in a worker thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    result: dict[str, Any] = {}

    def work() -> None:
        try:
            result["value"] = asyncio.run(make())
        except BaseException as exc:  # re-raised in the caller's thread
            result["error"] = exc

    thread = threading.Thread(target=work, name="grade-kit-async")
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    value: T = result["value"]
    return value


def parse_answer(text: str) -> tuple[dict[str, Any], str | None]:
    """The response format from a model's text, or the text kept whole.

    Returns:
        (response, problem): the parsed response and None; or ``{"text": text}`` and why the
        text is not the response format (it is then scored as what it is).
    """
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`")
        body = body.removeprefix("json").strip()
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        return {"text": text}, f"not JSON: {exc.msg} at column {exc.colno}"
    if not isinstance(data, dict):
        return {"text": text}, "JSON, but not an object"
    try:
        response = Response.model_validate(data).model_dump()
    except Exception as exc:  # pydantic's error: keep the text, say why
        return {"text": text}, f"not the response format: {str(exc).splitlines()[0]}"
    return response, None


def _sse_events(line: str) -> dict[str, Any] | None:
    if not line.startswith("data:"):
        return None
    payload = line[5:].strip()
    if payload == "[DONE]":
        return {"done": True}
    try:
        data = json.loads(payload)
    except json.JSONDecodeError as exc:
        raise ValueError(f"malformed stream chunk: {payload[:120]!r}") from exc
    return data if isinstance(data, dict) else None


class OpenAIChat:
    """An OpenAI-compatible chat-completions endpoint, streamed, with an agent loop.

    Args:
        base_url: For example ``http://127.0.0.1:8000/v1`` or ``https://api.openai.com/v1``.
        model: The model name sent.
        api_key_env: Name of the environment variable holding the API key (read per request,
            never stored); default None (no key).
        packs: Folder of packs; when given, the pack's SQL tool is offered and every call is
            answered locally and recorded (an agent loop of at most ``max_rounds`` rounds).
        max_rounds: Model turns in the agent loop; default 8.
        sessions: Sessions to share with other responders; default its own (one keep-alive
            session per event loop, closed by :meth:`aclose`, which a fetch calls).
    """

    def __init__(self, base_url: str, model: str, *, api_key_env: str | None = None,
                 packs: Path | str | None = None, max_rounds: int = 8,
                 sessions: Sessions | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.name = f"openai-chat:{model}@{self.base_url}"
        self.api_key_env = api_key_env
        self.packs = None if packs is None else Path(packs)
        self.max_rounds = max_rounds
        self.sessions = sessions or Sessions()
        self._tools: dict[str, PackTools] = {}

    def _headers(self) -> dict[str, str]:
        try:
            return request_headers(self.api_key_env)
        except MissingKeyError as exc:
            raise AnswerFailed(str(exc)) from exc

    def _pack_tools(self, task: Task) -> PackTools | None:
        if self.packs is None or task.pack is None:
            return None
        folder = self.packs / task.pack
        if not folder.is_dir():
            return None
        return self._tools.setdefault(task.pack, PackTools(folder))

    async def __call__(self, task: Task, prompt: str, repeat: int) -> Answer:
        return await self._converse(task, prompt, repeat)

    async def aclose(self) -> None:
        """Close this event loop's keep-alive session."""
        await self.sessions.aclose()

    async def _converse(self, task: Task, prompt: str, repeat: int) -> Answer:
        tools = self._pack_tools(task)
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        events: dict[str, datetime] = {}
        calls: list[dict[str, Any]] = []
        usage = {"input_tokens": 0, "output_tokens": 0}
        usage_seen = False
        text = ""
        offset = None
        for _ in range(self.max_rounds):
            body: dict[str, Any] = {"model": self.model, "messages": messages, "stream": True,
                                    "seed": repeat, "temperature": 0,
                                    "stream_options": {"include_usage": True},
                                    "response_format": {"type": "json_object"}}
            if tools is not None:
                body["tools"] = [SQL_TOOL]
            turn = await self._stream(body, events)
            offset = turn["offset"] if offset is None else offset
            if turn["usage"]:
                usage_seen = True
                usage["input_tokens"] += int(turn["usage"].get("prompt_tokens", 0))
                usage["output_tokens"] += int(turn["usage"].get("completion_tokens", 0))
            text = turn["content"]
            if not turn["tool_calls"] or tools is None:
                break
            messages.append({"role": "assistant", "content": text or None,
                             "tool_calls": turn["tool_calls"]})
            for call in turn["tool_calls"]:
                started = now()
                result = await asyncio.to_thread(tools.call, call["function"]["name"],
                                                 call["function"]["arguments"])
                ended = now()
                calls.append({"id": call["id"], "name": call["function"]["name"],
                              "started": started.isoformat(), "ended": ended.isoformat()})
                messages.append({"role": "tool", "tool_call_id": call["id"],
                                 "content": result})
        events["model_text_finished"] = events.get("model_text_finished", now())
        response, problem = parse_answer(text)
        metadata: dict[str, Any] = {"responder": self.name}
        if problem is not None:
            metadata["parse_problem"] = problem
        if offset is not None:
            metadata["endpoint_offset_s"] = offset
        events["runner_finished"] = now()
        return Answer(response=response, events=events,
                      tool_calls=calls if tools is not None else None,
                      usage=usage if usage_seen else None, metadata=metadata)

    async def _stream(self, body: dict[str, Any],
                      events: dict[str, datetime]) -> dict[str, Any]:
        content: list[str] = []
        tool_calls: dict[int, dict[str, Any]] = {}
        usage: dict[str, Any] | None = None
        offset = None
        reply = None
        try:
            async with post(self.sessions.get(), f"{self.base_url}/chat/completions",
                            headers=self._headers(), json=body) as reply:
                offset = endpoint_offset(reply.headers)
                if reply.status >= 400:
                    raw = await reply.text()
                    raise AnswerFailed(
                        f"HTTP {reply.status} from the endpoint", kept=raw[:10_000],
                        receipt=receipt(reply.status, reply.headers, raw))
                async for line in reply.lines():
                    if "first_progress" not in events:
                        events["first_progress"] = now()
                    chunk = _sse_events(line)
                    if chunk is None or chunk.get("done"):
                        continue
                    if chunk.get("usage"):
                        usage = chunk["usage"]
                    for choice in chunk.get("choices") or []:
                        delta = choice.get("delta") or {}
                        if delta.get("content"):
                            if "first_token" not in events:
                                events["first_token"] = now()
                            content.append(delta["content"])
                        for tc in delta.get("tool_calls") or []:
                            slot = tool_calls.setdefault(int(tc.get("index", 0)), {
                                "id": "", "type": "function",
                                "function": {"name": "", "arguments": ""}})
                            slot["id"] = tc.get("id") or slot["id"]
                            fn = tc.get("function") or {}
                            slot["function"]["name"] += fn.get("name") or ""
                            slot["function"]["arguments"] += fn.get("arguments") or ""
                        if choice.get("finish_reason") and not tool_calls:
                            events["model_text_finished"] = now()
        except AnswerFailed:
            raise
        except STREAM_ERRORS as exc:
            raise _stream_failure(exc, reply, "".join(content)) from exc
        return {"content": "".join(content), "tool_calls": [tool_calls[i] for i in
                                                            sorted(tool_calls)],
                "usage": usage, "offset": offset}


STREAM_ERRORS: tuple[type[BaseException], ...] = (*TRANSPORT_ERRORS, ValueError)
"""A stream's transport or framing errors, and a malformed event (ValueError)."""


def _stream_failure(exc: BaseException, reply: Reply | None, kept: str) -> AnswerFailed:
    """The failed attempt a stream error makes, with what arrived kept: a transport error
    is retryable only before any answer byte; a malformed stream never is."""
    if isinstance(exc, TRANSPORT_ERRORS):
        return AnswerFailed(f"{type(exc).__name__}: {exc}", kept=kept,
                            retryable=reply is None or not reply.received_any)
    return AnswerFailed(f"malformed stream: {exc}", kept=kept)


def _agent_events(lines: list[str]) -> tuple[str, dict[str, Any]] | None:
    """One server-sent event (``event:`` and ``data:`` lines) as (name, data)."""
    name, data = "message", []
    for line in lines:
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
    if not data:
        return None
    try:
        payload = json.loads("\n".join(data))
    except json.JSONDecodeError as exc:
        raise ValueError(f"malformed {name} event: {data[0][:120]!r}") from exc
    if not isinstance(payload, dict):
        raise ValueError(f"malformed {name} event: not a JSON object")
    return name, payload


class HTTPAgent:
    """A generic HTTP agent endpoint streaming server-sent events (docs/methodology.md §4
    "Timing"; the demo server serves one at ``/agent/<setup>``).

    The request is ``POST url`` with JSON ``{"task_id", "prompt", "repeat", "pack"}``; the
    reply is ``text/event-stream`` of events, each ``event: <name>`` and ``data: <JSON>``:

    - ``progress`` (any data): the first one is ``first_progress``;
    - ``tool_call`` ``{"id", "name", "started", "ended"}``: recorded as the agent reports it
      (its timestamps are the agent's clock);
    - ``token`` ``{"text"}``: the first one is ``first_token``; the texts make the answer
      when ``final`` carries none;
    - ``channel`` ``{"kind", "started", "ended"}``: channel overhead (reply cards, link
      resolution), kept as ``channel_overhead_started`` / ``_ended`` (earliest start, latest
      end) and excluded from E2E only by the explicit option;
    - ``final`` ``{"answer": <response object or text>, "usage": {...}}``: model text
      finished; the answer;
    - ``interaction`` ``{"kind": "ad_hoc_follow_up" | "resumed"}``: labels the run
      (``metadata.interaction``) when the agent followed up ad hoc or resumed a session;
    - ``error`` ``{"message"}``: a failed attempt, with what arrived kept.

    A stream that ends without ``final``, or a malformed event, is a failed attempt with the
    bytes received kept.

    Args:
        url: The agent's endpoint.
        api_key_env: NAME of the environment variable holding the key; default None.
        sessions: Sessions to share; default its own (see :class:`OpenAIChat`).
    """

    def __init__(self, url: str, *, api_key_env: str | None = None,
                 sessions: Sessions | None = None) -> None:
        self.url = url
        self.name = f"http-agent:{url}"
        self.api_key_env = api_key_env
        self.sessions = sessions or Sessions()

    async def aclose(self) -> None:
        """Close this event loop's keep-alive session."""
        await self.sessions.aclose()

    async def __call__(self, task: Task, prompt: str, repeat: int) -> Answer:
        try:
            headers = request_headers(self.api_key_env)
        except MissingKeyError as exc:
            raise AnswerFailed(str(exc)) from exc
        body = {"task_id": task.task_id, "prompt": prompt, "repeat": repeat, "pack": task.pack}
        events: dict[str, datetime] = {}
        tokens: list[str] = []
        calls: list[dict[str, Any]] = []
        channel: list[tuple[datetime, datetime]] = []
        final: dict[str, Any] | None = None
        labels: dict[str, Any] = {}
        offset: float | None = None
        reply = None
        try:
            async with post(self.sessions.get(), self.url, headers=headers,
                            json=body) as reply:
                offset = endpoint_offset(reply.headers)
                if reply.status >= 400:
                    raw = await reply.text()
                    raise AnswerFailed(f"HTTP {reply.status} from the agent",
                                       kept=raw[:10_000],
                                       receipt=receipt(reply.status, reply.headers, raw))
                pending: list[str] = []
                async for line in reply.lines():
                    if line.strip():
                        pending.append(line)
                        continue
                    parsed = _agent_events(pending)
                    pending = []
                    if parsed is None:
                        continue
                    name, data = parsed
                    if name == "progress":
                        events.setdefault("first_progress", now())
                    elif name == "token":
                        events.setdefault("first_progress", now())
                        events.setdefault("first_token", now())
                        tokens.append(str(data.get("text") or ""))
                    elif name == "tool_call":
                        calls.append({k: data[k] for k in ("id", "name", "started", "ended")
                                      if data.get(k) is not None})
                    elif name == "channel":
                        started = _instant(data.get("started"))
                        ended = _instant(data.get("ended"))
                        if started is not None and ended is not None:
                            channel.append((started, ended))
                    elif name == "interaction":
                        kind = data.get("kind")
                        if kind == "ad_hoc_follow_up":
                            labels["follow_up"] = "ad_hoc"
                        elif kind == "resumed":
                            labels["resumed"] = True
                    elif name == "error":
                        raise AnswerFailed(f"the agent reported an error: "
                                           f"{str(data.get('message'))[:500]}",
                                           kept="".join(tokens))
                    elif name == "final":
                        events["model_text_finished"] = now()
                        final = data
        except AnswerFailed:
            raise
        except STREAM_ERRORS as exc:
            raise _stream_failure(exc, reply, "".join(tokens)) from exc
        if final is None:
            raise AnswerFailed("the stream ended before the final answer",
                               kept="".join(tokens))
        answer = final.get("answer")
        metadata: dict[str, Any] = {"responder": self.name}
        if isinstance(answer, dict):
            try:
                response = Response.model_validate(answer).model_dump()
            except Exception as exc:  # kept whole as text, the problem said
                response = {"text": json.dumps(answer, ensure_ascii=False)}
                metadata["parse_problem"] = (f"not the response format: "
                                             f"{str(exc).splitlines()[0]}")
        else:
            response, problem = parse_answer(str(answer) if answer is not None
                                             else "".join(tokens))
            if problem is not None:
                metadata["parse_problem"] = problem
        if labels:
            metadata["interaction"] = labels
        if offset is not None:
            metadata["endpoint_offset_s"] = offset
        if channel:
            events["channel_overhead_started"] = min(a for a, _ in channel)
            events["channel_overhead_ended"] = max(b for _, b in channel)
            metadata["channel"] = len(channel)
        usage = final.get("usage")
        events["runner_finished"] = now()
        return Answer(response=response, events=events, tool_calls=calls,
                      usage=({"input_tokens": int(usage.get("input_tokens", 0)),
                              "output_tokens": int(usage.get("output_tokens", 0))}
                             if isinstance(usage, dict) else None),
                      metadata=metadata)


def _instant(value: object) -> datetime | None:
    """An instant an agent reported, by the run contract's own rule
    (:func:`~grade_kit.schema.parse_timestamp`: ISO 8601, a time zone, representable in
    UTC), or None when it is not one."""
    if not isinstance(value, str):
        return None
    try:
        return parse_timestamp(value)
    except ValueError:
        return None


class PythonCallable:
    """A Python function as a responder: ``fn(task, prompt, repeat)`` returns the response
    (a mapping in the response format, or text), synchronously or as a coroutine."""

    def __init__(self, fn: Callable[[Task, str, int], Any], name: str | None = None) -> None:
        self.fn = fn
        self.name = name or f"python:{getattr(fn, '__name__', 'callable')}"

    async def __call__(self, task: Task, prompt: str, repeat: int) -> Answer:
        result = self.fn(task, prompt, repeat)
        if inspect.isawaitable(result):
            result = await result
        events = {"first_token": now()}
        if isinstance(result, str):
            response, problem = parse_answer(result)
        else:
            response, problem = dict(result), None
        events["model_text_finished"] = now()
        metadata: dict[str, Any] = {"responder": self.name}
        if problem:
            metadata["parse_problem"] = problem
        return Answer(response=response, events=events, metadata=metadata)


class Replay:
    """Answers again what a recorded runs file answered (by task and repeat, first attempt).

    Args:
        path: A runs JSONL file.
        setup: Whose runs to replay; default every run in the file.
    """

    def __init__(self, path: Path | str, setup: str | None = None) -> None:
        self.name = f"replay:{path}"
        self._by_slot: dict[tuple[str, int], dict[str, Any]] = {}
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            record = json.loads(line)
            if setup is not None and record.get("setup") != setup:
                continue
            if record.get("attempt_of") is None:
                self._by_slot.setdefault((record["task_id"], int(record["repeat"])), record)

    async def __call__(self, task: Task, prompt: str, repeat: int) -> Answer:
        record = self._by_slot.get((task.task_id, repeat))
        if record is None or record.get("status") != "delivered":
            why = "no recorded answer" if record is None else f"recorded {record['status']}"
            raise AnswerFailed(f"{why} for {task.task_id} repeat {repeat}")
        return Answer(response=dict(record["response"]), tool_calls=record.get("tool_calls"),
                      metadata={"responder": self.name, "replayed": record["run_id"]})

