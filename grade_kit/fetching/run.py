"""Fetching answers: every planned (task, repeat) slot of one setup, through a responder, into
the run store, timed as the standard says (docs/methodology.md §4 "Timing").

- ``submitted`` is read just before the request, ``received`` when the responder returned the
  whole answer; a responder adds the events it sees (first progress, first token, model text
  finished, runner finished). None stands in for another.
- A timeout agreed before the run (default 600 s) stops an attempt: status ``timeout``, the
  ``stopped`` instant recorded, never a latency sample. A failure is status ``failed`` with its
  reason and receipt (status, headers that matter, body) and whatever bytes arrived.
- Resuming: a slot with a primary attempt is never fetched again as primary; with
  ``rerun_failed`` a failed or timed-out slot gets a new attempt whose ``attempt_of`` names the
  primary. A transport error before any answer byte is retried with backoff, each retry its
  own linked attempt.
- Concurrency is bounded (default 8) and requests are spaced by an optional rate limit.
- A task's follow-up protocol (``follow_up``) is applied identically to every setup: when an
  answer only asks for more information, the message is sent once (event
  ``follow_up_sent``), the second answer is the run's, and the run is labelled
  (``metadata.interaction.follow_up: protocol``, the first answer kept).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from grade_kit._progress import progress_bar
from grade_kit.fetching.responders import (
    RESPONSE_FORMAT_INSTRUCTION,
    Answer,
    AnswerFailed,
    OpenAIChat,
    Responder,
    build_prompt,
    now,
)
from grade_kit.fetching.store import RunStore, Slot, safe_file_names
from grade_kit.http import (
    RECEIPT_BODY_CHARS,
    check_positive,
    check_whole,
    redact,
    run_sync,
    secret_values,
)
from grade_kit.reading.parse import ParseError, loads_json
from grade_kit.schema import Run, Task, summed_usage
from grade_kit.text import only_asks

DEFAULT_TIMEOUT_S = 600.0
DEFAULT_CONCURRENCY = 8
RETRY_BACKOFF_S = (0.5, 2.0, 8.0)
"""Waits before each retry of a transport error that came before any answer byte."""

CLOCK = {"source": f"grade_kit fetch on {socket.gethostname()}: datetime.now(UTC)",
         "precision": "1 us"}
"""The clock every fetched event is read from, recorded on each run (``metadata.clock``)."""


@dataclass
class FetchReport:
    """What one fetch did, by slot state; ``torn`` lists lines set aside on opening."""

    store: Path
    setup: str
    planned: int
    skipped: int = 0
    delivered: int = 0
    failed: int = 0
    timeouts: int = 0
    retries: int = 0
    torn: list[str] = field(default_factory=list)
    instruction_sha256: str = ""

    def __repr__(self) -> str:
        return f"FetchReport({self}; store {self.store})"

    def __str__(self) -> str:
        return (f"{self.setup}: {self.planned} slots planned, {self.skipped} already there, "
                f"{self.delivered} delivered, {self.failed} failed, {self.timeouts} timeouts, "
                f"{self.retries} retries" + (f", {len(self.torn)} torn line(s) set aside"
                                             if self.torn else ""))


class _RateLimit:
    """At most ``per_second`` request starts per second (None: no limit)."""

    def __init__(self, per_second: float | None) -> None:
        self.gap = 0.0 if not per_second else 1.0 / per_second
        self.next = 0.0
        self.lock = asyncio.Lock()

    async def wait(self) -> None:
        if not self.gap:
            return
        async with self.lock:
            delay = self.next - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            self.next = max(self.next, time.monotonic()) + self.gap


def _iso(at: datetime) -> str:
    return at.isoformat(timespec="microseconds")


def _record(setup: str, task: Task, repeat: int, run_id: str, attempt_of: str | None,
            submitted: datetime) -> dict[str, Any]:
    return {"run_id": run_id, "setup": setup, "task_id": task.task_id, "repeat": repeat,
            "attempt_of": attempt_of, "events": {"submitted": _iso(submitted)},
            "metadata": {"clock": CLOCK}}


def follow_up_prompt(task: Task, first: Answer) -> str:
    """The prompt of the follow-up turn: the task's prompt (with the shared instruction), the
    setup's first answer, and the task's follow-up message; the same for every setup."""
    previous = json.dumps(first.response, ensure_ascii=False, sort_keys=True)
    return (f"{build_prompt(task)}\n\nYOUR PREVIOUS ANSWER: {previous}\n\n"
            f"FOLLOW-UP: {task.follow_up}")


async def _interaction(responder: Responder, task: Task, repeat: int,
                       seen: dict[str, Any]) -> Answer:
    """The responder's answer, with the task's follow-up protocol applied: when the answer
    only asks for more information (:func:`~grade_kit.text.only_asks`) and the task
    defines ``follow_up``, that message is sent once and the second answer is the run's; the
    first is kept in ``metadata.interaction`` (and in ``seen``, so a follow-up that fails or
    times out still keeps it)."""
    first = await responder(task, build_prompt(task), repeat)
    if task.follow_up is None or not only_asks(first.response):
        return first
    sent = now()
    seen["interaction"] = {"follow_up": "protocol", "message": task.follow_up,
                           "first_answer": first.response}
    seen["follow_up_sent"] = sent
    second = await responder(task, follow_up_prompt(task, first), repeat)
    events = {**second.events, **{k: v for k, v in first.events.items()
                                  if k in ("first_progress", "first_token")},
              "follow_up_sent": sent}
    calls = ([*(first.tool_calls or []), *(second.tool_calls or [])]
             if first.tool_calls is not None or second.tool_calls is not None else None)
    usage = summed_usage([first.usage, second.usage])
    interaction = {"follow_up": "protocol", "message": task.follow_up,
                   "first_answer": first.response}
    return Answer(response=second.response, events=events, tool_calls=calls, usage=usage,
                  metadata={**second.metadata, "interaction": interaction})


def _stopped(record: dict[str, Any], exc: Exception, timeout_s: float,
             seen: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The run record of an attempt that did not deliver, and whether it may be retried (a
    transport error before any answer byte): a timeout stops it at the agreed time; a failure
    keeps its reason, receipt and whatever arrived; a responder's own error fails this
    attempt, not the fetch. A follow-up's first answer is kept either way."""
    if "interaction" in seen:
        record["metadata"]["interaction"] = seen["interaction"]
        record["events"]["follow_up_sent"] = _iso(seen["follow_up_sent"])
    if isinstance(exc, TimeoutError):
        record.update(status="timeout", error=f"no answer within {timeout_s:g} s",
                      response=None, tool_calls=None)
        record["events"]["stopped"] = _iso(now())
        return record, False
    if isinstance(exc, AnswerFailed):
        stopped = now()
        record.update(status="failed", error=str(exc), response=None, tool_calls=None)
        record["events"].update({k: _iso(v) for k, v in exc.events.items()})
        record["events"]["stopped"] = _iso(stopped)
        if exc.kept:
            record["metadata"]["received_text"] = exc.kept
        if exc.receipt:
            record["metadata"]["receipt"] = exc.receipt
        return record, exc.retryable
    record.update(status="failed", error=f"{type(exc).__name__}: {exc}", response=None,
                  tool_calls=None)
    record["events"]["stopped"] = _iso(now())
    return record, False


def check_options(*, repeats: int, concurrency: int, timeout_s: float,
                  rate_per_second: float | None, retries: int) -> None:
    """Refuse options no fetch could honour, before anything is written (a NaN or negative
    timeout would write every slot as a timeout into the append-only store).

    Raises:
        ValueError: naming the option and what it must be.
    """
    check_whole("repeats", repeats, 1)
    check_whole("concurrency", concurrency, 1)
    check_whole("retries", retries, 0)
    check_positive("timeout_s", timeout_s)
    if rate_per_second is not None:
        check_positive("rate_per_second", rate_per_second)


def _contract_problem(record: dict[str, Any]) -> str | None:
    """Why ``record``'s JSON line would be rejected by ``score`` (the same parser and run
    contract, docs/methodology.md §2, §6), as `` at <field>: <why>`` or ``: <why>``, or None
    when it would be accepted."""
    try:
        line = json.dumps(record, ensure_ascii=False, sort_keys=True, allow_nan=False)
        Run.model_validate(loads_json(line))
    except (ValueError, TypeError) as exc:  # pydantic's, the parser's, json's (a NaN, or an
        # object JSON cannot hold, in a responder's metadata)
        if isinstance(exc, ParseError | TypeError) or not hasattr(exc, "errors"):
            return ": " + str(exc).splitlines()[0]
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(the record)"
        return f" at {where}: {first['msg']}"
    return None


def checked(record: dict[str, Any], secrets: tuple[str, ...] = ()) -> dict[str, Any]:
    """The run record fetch writes: the API key's value redacted from every string
    (:func:`~grade_kit.http.redact`), and only what ``score`` accepts. A delivered
    record that breaks the run contract (a token count out of range, a tool call's id that
    is not text, an agent's timestamp that is no instant) becomes a failed one naming the
    field, its reply kept as text; so every line of a run store is a line ``score`` reads.
    """
    record = redact(record, secrets)
    problem = _contract_problem(record)
    if problem is None:
        return record
    kept = {k: record.get(k) for k in ("response", "tool_calls", "usage")
            if record.get(k) is not None}
    events = dict(record.get("events") or {})
    if "received" in events:
        events["stopped"] = events.pop("received")
    failed = {**record, "status": "failed", "response": None, "tool_calls": None,
              "usage": None, "events": events,
              "error": f"the reply breaks the run contract{problem}",
              "metadata": {**(record.get("metadata") or {}), "received_text": json.dumps(
                  kept, ensure_ascii=False, default=str)[:RECEIPT_BODY_CHARS]}}
    if _contract_problem(failed) is None:
        return failed
    # what is left can only be the free-form metadata: keep its text, not its shape
    failed["metadata"] = {"clock": CLOCK, "received_text": json.dumps(
        record.get("metadata"), ensure_ascii=False, default=str)[:RECEIPT_BODY_CHARS]}
    return failed


async def _attempt(responder: Responder, task: Task, repeat: int, setup: str, run_id: str,
                   attempt_of: str | None, timeout_s: float,
                   limit: _RateLimit) -> tuple[dict[str, Any], bool]:
    """One attempt as a run record, and whether it may be retried (transport, no byte)."""
    await limit.wait()
    submitted = now()
    record = _record(setup, task, repeat, run_id, attempt_of, submitted)
    seen: dict[str, Any] = {}
    try:
        async with asyncio.timeout(timeout_s):  # agreed before the run
            answer = await _interaction(responder, task, repeat, seen)
    except Exception as exc:  # a timeout, a failure, or a responder's own error
        return _stopped(record, exc, timeout_s, seen)
    received = now()
    record["events"].update({k: _iso(v) for k, v in answer.events.items()})
    record["events"]["received"] = _iso(received)
    record.update(status="delivered", error=None, response=answer.response,
                  tool_calls=answer.tool_calls)
    if answer.usage is not None:
        record["usage"] = answer.usage
    metadata = dict(answer.metadata)
    offset = metadata.pop("endpoint_offset_s", None)
    if isinstance(offset, float):
        record["metadata"]["clock"] = {**CLOCK, "endpoint_offset_s": offset}
    record["metadata"].update(metadata)
    return record, False


async def fetch_async(tasks: Sequence[Task], responder: Responder, store: Path | str, *,
                      setup: str, repeats: int = 1,
                      concurrency: int = DEFAULT_CONCURRENCY,
                      timeout_s: float = DEFAULT_TIMEOUT_S,
                      rate_per_second: float | None = None, retries: int = 2,
                      rerun_failed: bool = False, progress: bool = True) -> FetchReport:
    """Fetch every (task, repeat) slot of ``setup`` into ``store`` (see the module docstring).

    Args:
        tasks: The tasks to ask.
        responder: What answers.
        store: The runs JSONL file (appended to; resumed when it exists).
        setup: The setup name written on every run.
        repeats: R; default 1.
        concurrency: Attempts in flight at once; default 8.
        timeout_s: Agreed before the run; default 600 s.
        rate_per_second: Request starts per second for this endpoint; default no limit.
        retries: Retries of a transport error before any answer byte; default 2.
        rerun_failed: Also re-run slots whose primary attempt failed or timed out (a linked
            attempt; the primary stays the scored one); default False.
        progress: Show a progress bar (text, also in Jupyter); default True.
    """
    check_options(repeats=repeats, concurrency=concurrency, timeout_s=timeout_s,
                  rate_per_second=rate_per_second, retries=retries)
    run_store = RunStore.open(store)
    report = FetchReport(store=Path(store), setup=setup, planned=len(tasks) * repeats,
                         torn=list(run_store.torn),
                         instruction_sha256=hashlib.sha256(
                             RESPONSE_FORMAT_INSTRUCTION.encode()).hexdigest())
    existing = run_store.by_slot()
    taken = run_store.run_ids()
    todo: list[tuple[Task, int, str, str | None]] = []
    for task in tasks:
        for repeat in range(1, repeats + 1):
            slot: Slot = (setup, task.task_id, repeat)
            attempts = existing.get(slot, [])
            primary = next((a for a in attempts if a.get("attempt_of") is None), None)
            base = f"{setup}-{task.task_id}-r{repeat}"
            if primary is None:
                todo.append((task, repeat, _fresh_id(base, taken, primary=True), None))
            elif rerun_failed and not any(a.get("status") == "delivered" for a in attempts):
                todo.append((task, repeat, _fresh_id(base, taken), primary["run_id"]))
            else:
                report.skipped += 1
    secrets = secret_values(getattr(responder, "api_key_env", None))
    limit = _RateLimit(rate_per_second)
    semaphore = asyncio.Semaphore(concurrency)
    committer = _GroupCommit(run_store)
    bar = _progress_bar(len(todo), setup) if progress else None
    running = [0]

    async def one(task: Task, repeat: int, run_id: str, attempt_of: str | None) -> None:
        async with semaphore:
            running[0] += 1
            for attempt in range(retries + 1):
                record, retryable = await _attempt(responder, task, repeat, setup, run_id,
                                                   attempt_of, timeout_s, limit)
                record = checked(record, secrets)
                await committer.commit(record)  # durable (fsynced) before going on
                if not (retryable and attempt < retries):
                    break
                report.retries += 1
                await asyncio.sleep(RETRY_BACKOFF_S[min(attempt, len(RETRY_BACKOFF_S) - 1)])
                attempt_of = attempt_of or run_id
                run_id = _fresh_id(f"{setup}-{task.task_id}-r{repeat}", taken)
            running[0] -= 1
            status = record["status"]
            if status == "delivered":
                report.delivered += 1
            elif status == "timeout":
                report.timeouts += 1
            else:
                report.failed += 1
            if bar is not None:
                bar.update(1)
                bar.set_postfix(failed=report.failed + report.timeouts, running=running[0])

    try:
        await asyncio.gather(*(one(*item) for item in todo))
    finally:
        await committer.close()
        run_store.close()
        close = getattr(responder, "aclose", None)
        if close is not None:  # the responder's keep-alive session of this loop
            await close()
        if bar is not None:
            bar.close()
    return report


class _GroupCommit:
    """Durable appends without one fsync in the way of every attempt: records that arrive
    while a write is under way are written together, with one fsync, by a single writer;
    :meth:`commit` returns once its record is on disk (so a slot is never counted before its
    line is durable)."""

    def __init__(self, store: RunStore) -> None:
        self.store = store
        self.pending: list[tuple[dict[str, Any], asyncio.Future[None]]] = []
        self.wake = asyncio.Event()
        self.writer: asyncio.Task[None] | None = None

    async def _write(self) -> None:
        while True:
            await self.wake.wait()
            self.wake.clear()
            batch, self.pending = self.pending, []
            if not batch:
                continue
            try:
                await asyncio.to_thread(self.store.append_many, [r for r, _ in batch])
            except BaseException as exc:
                for _, done in batch:
                    if not done.done():
                        done.set_exception(exc)
                raise
            for _, done in batch:
                if not done.done():
                    done.set_result(None)

    async def commit(self, record: dict[str, Any]) -> None:
        if self.writer is None:
            self.writer = asyncio.ensure_future(self._write())
        if self.writer.done():
            self.writer.result()  # the writer failed: raise its error here
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.pending.append((record, done))
        self.wake.set()
        await done

    async def close(self) -> None:
        if self.writer is not None and not self.writer.done():
            self.writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.writer


def _fresh_id(base: str, taken: set[str], primary: bool = False) -> str:
    """``<setup>-<task>-r<repeat>`` for a slot's first attempt, ``...-a<n>`` (the first
    free n) for every later one; never an id already in the store."""
    candidate, n = (base if primary else f"{base}-a1"), 1
    while candidate in taken:
        n += 1
        candidate = f"{base}-a{n}"
    taken.add(candidate)
    return candidate


def _progress_bar(total: int, setup: str) -> Any:
    return progress_bar(total, f"fetch {setup}", "run")


def fetch(tasks: Sequence[Task], responder: Responder, store: Path | str, *, setup: str,
          **options: Any) -> FetchReport:
    """:func:`fetch_async` from synchronous code, including inside Jupyter's running event
    loop (the fetch then runs on its own loop in a worker thread)."""
    return run_sync(lambda: fetch_async(tasks, responder, store, setup=setup, **options))


def fetch_setups(tasks: Sequence[Task], endpoint: str, models: Sequence[str],
                 out_dir: Path | str, *, packs: Path | str | None = None,
                 api_key_env: str | None = None, **options: Any) -> dict[str, FetchReport]:
    """Every model at one OpenAI-compatible endpoint, fetched at once, each into its own run
    store in ``out_dir``, named from the model by
    :func:`~grade_kit.fetching.store.safe_file_names` (``gpt-4o.jsonl``; ``../x`` becomes
    ``_x.jsonl``, never a path outside ``out_dir``; each report's ``store`` says which). The
    model name is the setup name.

    Args:
        tasks: The tasks to ask.
        endpoint: Base URL, for example ``http://127.0.0.1:8000/v1``.
        models: Model names; each is one setup.
        out_dir: Folder of the run stores (appended to; a second fetch resumes).
        packs: Packs folder for the agent's SQL tool; default None (no tool).
        api_key_env: NAME of the environment variable holding the key; default None.
        **options: Passed to :func:`fetch_async` (repeats, concurrency, timeout_s, ...).

    Returns:
        Each model's :class:`FetchReport`; its ``store`` is the run file.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = safe_file_names(models)

    async def every_model() -> list[FetchReport]:
        return list(await asyncio.gather(*(
            fetch_async(tasks, OpenAIChat(endpoint, model, packs=packs,
                                          api_key_env=api_key_env),
                        out / files[model], setup=model, **options)
            for model in models)))

    return dict(zip(models, run_sync(every_model), strict=True))
