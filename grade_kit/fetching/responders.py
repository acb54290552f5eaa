"""Responders: what answers a task, behind one interface (:class:`Responder`).

- :class:`OpenAIChat`: any OpenAI-compatible chat-completions endpoint, by base URL and model
  name; streaming; tool calls answered by an agent loop over the pack's tools
  (:class:`~grade_kit.fetching.tools.PackTools`), each call recorded with its id and start/end;
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
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import aiohttp

from grade_kit.fetching.tools import SQL_TOOL, PackTools
from grade_kit.http import (
    RECEIPT_BODY_CHARS,
    TRANSPORT_ERRORS,
    MissingKeyError,
    Reply,
    ReplyTooLarge,
    Sessions,
    endpoint_offset,
    post,
    receipt,
    request_headers,
)
from grade_kit.schema import (
    MAX_TOKENS,
    Response,
    Task,
    Usage,
    arguments_text,
    openai_usage,
    parse_timestamp,
    summed_usage,
)

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
    usage: dict[str, Any] | None = None
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


_DONE: dict[str, Any] = {"done": True}


def _chunk(line: str) -> dict[str, Any] | None:
    """One line of a chat-completions stream as a checked chunk; None for a line that is no
    ``data:`` line; :data:`_DONE` for ``data: [DONE]``.

    Raises:
        ValueError: naming in words what is wrong (not JSON, not an object, a whole
            completion instead of a chunk, a field of the wrong kind, an error reported).
    """
    if not line.startswith("data:"):
        return None
    payload = line[5:].strip()
    if payload == "[DONE]":
        return _DONE
    try:
        data = json.loads(payload)
    except json.JSONDecodeError as exc:
        raise ValueError(f"a chunk is not JSON ({exc.msg}): {payload[:120]!r}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"a chunk is not a JSON object: {payload[:120]!r}")
    if "error" in data:
        raise ValueError(f"the stream reported an error: {str(data['error'])[:500]}")
    choices = data.get("choices", [])
    if not isinstance(choices, list):
        raise ValueError("a chunk's 'choices' is not a list")
    for choice in choices:
        if not isinstance(choice, dict):
            raise ValueError("a chunk's choice is not an object")
        if "delta" not in choice and "message" in choice:
            raise ValueError("a whole completion ('message') inside a stream, not a chunk "
                             "('delta')")
        delta = choice.get("delta", {})
        if not isinstance(delta, dict):
            raise ValueError("a choice's 'delta' is not an object")
        if not isinstance(delta.get("content", ""), str | None):
            raise ValueError("a delta's 'content' is not text")
        calls = delta.get("tool_calls") or []
        if not isinstance(calls, list) or not all(
                isinstance(c, dict) and isinstance(c.get("index", 0), int)
                and isinstance(c.get("function") or {}, dict)
                and isinstance(c.get("id") or "", str)
                and all(isinstance((c.get("function") or {}).get(k) or "", str)
                        for k in ("name", "arguments"))
                for c in calls):
            raise ValueError("a delta's 'tool_calls' is not a list of calls (index, id, "
                             "function name and arguments as text)")
    usage = data.get("usage")
    if usage is not None and not (isinstance(usage, dict) and all(
            isinstance(usage.get(k, 0), int) and not isinstance(usage.get(k, 0), bool)
            and 0 <= usage.get(k, 0) <= MAX_TOKENS
            for k in ("prompt_tokens", "completion_tokens"))):
        raise ValueError(f"the usage is not token counts from 0 to {MAX_TOKENS:,}: "
                         f"{str(usage)[:200]}")
    return data


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
        turn_usage: list[dict[str, Any] | None] = []
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
            turn_usage.append(openai_usage(turn["usage"], self.model) if turn["usage"]
                              else None)
            text = turn["content"]
            if not turn["tool_calls"] or tools is None:
                break
            messages.append({"role": "assistant", "content": text or None,
                             "tool_calls": turn["tool_calls"]})
            for call in turn["tool_calls"]:
                started = now()
                running = tools.prepare(call["function"]["name"],
                                        call["function"]["arguments"])
                try:
                    result = await asyncio.to_thread(running.run)
                except asyncio.CancelledError:  # the run ended: so does its query
                    running.interrupt()
                    raise
                ended = now()
                calls.append({"id": call["id"], "name": call["function"]["name"],
                              "arguments": call["function"]["arguments"],
                              "started": started.isoformat(), "ended": ended.isoformat()})
                messages.append({"role": "tool", "tool_call_id": call["id"],
                                 "content": result})
        else:
            why = (f"tool loop: the model still called tools after {self.max_rounds} rounds "
                   "(max_rounds), with no answer")
            raise AnswerFailed(why, kept=text, events=events,
                               receipt=_stream_receipt(turn["reply"], why))
        if not text.strip():
            why = "an empty answer: the reply held no text"
            raise AnswerFailed(why, events=events, receipt=_stream_receipt(turn["reply"], why))
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
                      usage=summed_usage(turn_usage), metadata=metadata)

    async def _stream(self, body: dict[str, Any],
                      events: dict[str, datetime]) -> dict[str, Any]:
        """One streamed turn: its text, tool calls, usage and the endpoint's clock offset.
        Only a well-formed chat-completions stream is a turn: anything else fails the
        attempt with a reason in words, a receipt and what arrived."""
        content: list[str] = []
        tool_calls: dict[int, dict[str, Any]] = {}
        usage: dict[str, Any] | None = None
        offset = None
        reply = None
        ended = False
        try:
            async with post(self.sessions.get(), f"{self.base_url}/chat/completions",
                            headers=self._headers(), json=body) as reply:
                offset = endpoint_offset(reply.headers)
                await _refuse_unless_stream(reply, "the endpoint")
                async for line in reply.lines():
                    if "first_progress" not in events:
                        events["first_progress"] = now()
                    chunk = _chunk(line)
                    if chunk is None:
                        continue
                    if chunk is _DONE:
                        ended = True
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
                            slot = tool_calls.setdefault(tc.get("index", 0), {
                                "id": "", "type": "function",
                                "function": {"name": "", "arguments": ""}})
                            slot["id"] = tc.get("id") or slot["id"]
                            fn = tc.get("function") or {}
                            slot["function"]["name"] += fn.get("name") or ""
                            slot["function"]["arguments"] += fn.get("arguments") or ""
                        if choice.get("finish_reason"):
                            ended = True
                            if not tool_calls:
                                events["model_text_finished"] = now()
        except AnswerFailed:
            raise
        except STREAM_ERRORS as exc:
            raise _stream_failure(exc, reply, "".join(content)) from exc
        if not ended:
            raise AnswerFailed(
                "the stream was cut: it ended with no finish_reason and no [DONE]",
                kept="".join(content), receipt=_stream_receipt(reply, "cut stream"))
        return {"content": "".join(content), "tool_calls": [tool_calls[i] for i in
                                                            sorted(tool_calls)],
                "usage": usage, "offset": offset, "reply": reply}


STREAM_ERRORS: tuple[type[BaseException], ...] = (*TRANSPORT_ERRORS, ValueError,
                                                   aiohttp.ClientResponseError)
"""A stream's transport or framing errors, a reply over a cap or malformed (ValueError), and
an HTTP reply that cannot be read at all (headers over their cap)."""


def _stream_receipt(reply: Reply | None, why: str) -> dict[str, Any]:
    """The receipt of a reply that failed while (or after) its body was read."""
    if reply is None:
        return receipt(None, {}, "", why)
    return receipt(reply.status, reply.headers, reply.head, why)


async def _refuse_unless_stream(reply: Reply, who: str) -> None:
    """Fail the attempt unless ``reply`` is a 2xx server-sent event stream: a redirect (never
    followed), an HTTP error, or a body of another kind, each with its receipt and the body's
    first characters (read within the body cap)."""
    if 200 <= reply.status < 300 and reply.headers.get("content-type", "").startswith(
            "text/event-stream"):
        return
    try:
        raw = await reply.text()
        cut = ""
    except ReplyTooLarge as exc:
        raw, cut = exc.kept, f" ({exc})"
    if 300 <= reply.status < 400:
        why = (f"HTTP {reply.status} redirect from {who} to "
               f"{reply.headers.get('location', '(no location)')[:200]}, not followed")
    elif reply.status >= 300 or reply.status < 200:
        why = f"HTTP {reply.status} from {who}"
    else:
        kind = reply.headers.get("content-type") or "no content type"
        why = f"not a stream: {who} answered {kind[:100]} to a streaming request"
    raise AnswerFailed(why + cut, kept=raw[:RECEIPT_BODY_CHARS],
                       receipt=receipt(reply.status, reply.headers, raw, why + cut))


def _stream_failure(exc: BaseException, reply: Reply | None, kept: str) -> AnswerFailed:
    """The failed attempt a stream error makes, with what arrived kept and a receipt: a
    transport error is retryable only before any answer byte; a malformed, oversized or
    unreadable reply never is."""
    if isinstance(exc, TRANSPORT_ERRORS):
        why = f"the connection failed: {type(exc).__name__}: {exc}"
        return AnswerFailed(why, kept=kept, receipt=_stream_receipt(reply, why),
                            retryable=reply is None or not reply.received_any)
    if isinstance(exc, aiohttp.ClientResponseError):
        why = f"the reply could not be read as HTTP: {exc.message}"
        return AnswerFailed(why, kept=kept, receipt=_stream_receipt(reply, why))
    if isinstance(exc, ReplyTooLarge):
        why = f"the reply is over a cap: {exc}"
        return AnswerFailed(why, kept=kept or exc.kept, receipt=_stream_receipt(reply, why))
    why = f"malformed stream: {exc}"
    return AnswerFailed(why, kept=kept, receipt=_stream_receipt(reply, why))


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
    - ``tool_call`` ``{"id", "name", "arguments", "started", "ended"}``: recorded as the
      agent reports it (its timestamps are the agent's clock);
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

    ``final`` is the last event and comes once: any event after it fails the attempt, as
    does a stream that ends without it, a malformed event, or a reply over a cap, each with
    the bytes received kept and a receipt. What the agent reports (tool calls, usage,
    timestamps) is checked by the run contract before the run is written.

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
                await _refuse_unless_stream(reply, "the agent")
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
                    if final is not None:
                        raise ValueError(f"a {name} event after the final answer (the final "
                                         "answer is the last event, and there is one)")
                    if name == "progress":
                        events.setdefault("first_progress", now())
                    elif name == "token":
                        events.setdefault("first_progress", now())
                        events.setdefault("first_token", now())
                        tokens.append(str(data.get("text") or ""))
                    elif name == "tool_call":
                        calls.append({k: data[k] for k in ("id", "name", "started", "ended")
                                      if data.get(k) is not None}
                                     | {"arguments": arguments_text(data.get("arguments"))})
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
                        why = f"the agent reported an error: {str(data.get('message'))[:500]}"
                        raise AnswerFailed(why, kept="".join(tokens),
                                           receipt=_stream_receipt(reply, why))
                    elif name == "final":
                        events["model_text_finished"] = now()
                        final = data
        except AnswerFailed:
            raise
        except STREAM_ERRORS as exc:
            raise _stream_failure(exc, reply, "".join(tokens)) from exc
        if final is None:
            why = "the stream ended before the final answer"
            raise AnswerFailed(why, kept="".join(tokens), receipt=_stream_receipt(reply, why))
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
        # usage as the agent reported it: the run contract checks it before it is written
        return Answer(response=response, events=events, tool_calls=calls,
                      usage=({k: v for k, v in usage.items() if k in Usage.model_fields}
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

