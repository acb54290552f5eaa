"""What every model judge and grader shares: asking an OpenAI-compatible chat endpoint at
temperature 0 for JSON, a verdict cache keyed by a hash of prompt, model and parameters, and
bounded concurrency with a progress bar (docs/methodology.md §4 "Model judges and graders").

The cache is an append-only JSONL file, flushed and fsynced per verdict, so re-running a
notebook asks nothing twice and a killed run keeps every verdict it received (a torn last
line is asked again). The API key is read from the environment variable *named* by
``api_key_env`` at request time and never stored: its value is redacted from every answer
and error before either is kept. A reply is read within the shared client's caps
(:mod:`grade_kit.http`) and a redirect is never followed.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from grade_kit.http import (
    TRANSPORT_ERRORS,
    Sessions,
    check_positive,
    check_whole,
    post,
    redact,
    request_headers,
    run_sync,
    secret_values,
)
from grade_kit.schema import Run, Task

PARAMETERS: dict[str, Any] = {"temperature": 0}
"""Sampling parameters of every judge and grader request (part of each cache key)."""


def answer_alias(seed: int, task_id: str, key: str) -> str:
    """The random alias an answer is shown under: six characters of an HMAC of the answer's
    key (a run id) keyed by ``seed`` and the question, so aliases differ per question and per
    seed, cannot be traced back without the seed, and do not depend on the order of runs."""
    digest = hmac.new(str(seed).encode(), f"{task_id}\x00{key}".encode(),
                      hashlib.sha256).hexdigest()
    return "A-" + digest[:6].upper()


def parse_json_object(answer: str | None) -> dict[str, Any] | None:
    """The JSON object a model answered, or None. A fenced block (```json ... ```) is
    unwrapped first; anything else that is not one JSON object is None."""
    if answer is None:
        return None
    text = answer.strip()
    if text.startswith("```"):
        text = text.strip("`")
        text = text[4:] if text.startswith("json") else text
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def alias_instruction(alias: str) -> str:
    """The prompt line that binds a verdict to its answer (docs/methodology.md §4 "Model
    judges and graders")."""
    return (f'Name the answer you scored: put its alias, "{alias}", in "answer". A verdict '
            "that names no answer, or another one, is not used.")


def unbound(data: dict[str, Any], alias: str) -> str | None:
    """Why the verdict ``data`` is not about the answer shown as ``alias`` (it names no
    answer, or another one), or None when it names that answer."""
    named = data.get("answer")
    if named is None:
        return f"the verdict does not name the answer it scored (expected {alias})"
    if named != alias:
        return f"the verdict names answer {str(named)[:40]!r}, not {alias}"
    return None


def read_answer(asked: Asked, who: str, alias: str | None = None
                ) -> tuple[dict[str, Any] | None, str | None]:
    """The JSON object of one answer, or why there is none: the request failed, the answer
    is not one JSON object, or (with ``alias``) the verdict names another answer or none.
    ``who`` names the asker in the reason ("judge", "grader")."""
    if asked.error is not None or asked.answer is None:
        return None, f"the {who} could not be asked ({asked.error})"
    data = parse_json_object(asked.answer)
    if data is None:
        return None, f"the {who}'s answer is not a JSON object ({asked.answer[:200]!r})"
    problem = None if alias is None else unbound(data, alias)
    return (None, f"not used: {problem}") if problem is not None else (data, None)


@dataclass(frozen=True)
class Asked:
    """One prompt's outcome: the answer text (None when the request failed), the error, the
    cache key (a SHA-256 of prompt, model and parameters) and whether it came from the
    cache."""

    key: str
    answer: str | None
    error: str | None
    cache_hit: bool

    def provenance(self, model: str) -> dict[str, Any]:
        """The provenance every verdict records."""
        return {"model": model, "prompt_sha256": self.key, "cache_hit": self.cache_hit}


ASK_ERRORS: tuple[type[BaseException], ...] = (
    *TRANSPORT_ERRORS, TimeoutError, RuntimeError, KeyError, IndexError, TypeError, ValueError)
"""What makes one verdict unusable (kept as its error) without stopping the others."""


class ModelClient:
    """Asks one model at an OpenAI-compatible endpoint, with a verdict cache.

    Args:
        base_url: For example ``http://127.0.0.1:8000/v1``.
        model: The model's name.
        api_key_env: NAME of the environment variable holding the key; default None (no
            ``Authorization`` header).
        cache: JSONL file of cached answers (read, then appended to); default None (no
            cache: every prompt is asked).
        concurrency: Requests in flight; default 8.
        timeout_s: Per request; default 120 s.
        progress: Show a progress bar (text, also in Jupyter) while asking; default True.
    """

    def __init__(self, base_url: str, model: str, *, api_key_env: str | None = None,
                 cache: Path | str | None = None, concurrency: int = 8,
                 timeout_s: float = 120.0, progress: bool = True) -> None:
        check_whole("concurrency", concurrency, 1)
        check_positive("timeout_s", timeout_s)
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key_env = api_key_env
        self.cache = None if cache is None else Path(cache)
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.progress = progress
        self.requests = 0
        """Requests actually sent (cache hits send none)."""
        self._cached: dict[str, str] = {}
        self._lock = threading.Lock()
        if self.cache is not None and self.cache.is_file():
            for line in self.cache.read_text(encoding="utf-8").splitlines():
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a torn last line: that verdict is asked again
                if isinstance(entry, dict) and isinstance(entry.get("answer"), str):
                    self._cached[str(entry.get("key"))] = entry["answer"]

    def key(self, prompt: str) -> str:
        """The cache key of ``prompt``: SHA-256 of prompt, model and :data:`PARAMETERS`."""
        basis = json.dumps({"prompt": prompt, "model": self.model, **PARAMETERS},
                           sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(basis.encode()).hexdigest()

    def _remember(self, key: str, answer: str) -> None:
        with self._lock:
            self._cached[key] = answer
            if self.cache is not None:
                self.cache.parent.mkdir(parents=True, exist_ok=True)
                entry = {"key": key, "model": self.model, "answer": answer}
                with self.cache.open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
                    handle.flush()
                    os.fsync(handle.fileno())

    async def _post(self, session: aiohttp.ClientSession, prompt: str) -> str:
        body = {"model": self.model, "messages": [{"role": "user", "content": prompt}],
                "response_format": {"type": "json_object"}, **PARAMETERS}
        async with asyncio.timeout(self.timeout_s), post(
                session, f"{self.base_url}/chat/completions", json=body,
                headers=request_headers(self.api_key_env)) as reply:
            raw = await reply.text()  # at most MAX_BODY_BYTES: a longer reply is an error
        if not 200 <= reply.status < 300:  # a redirect is never followed
            raise ValueError(f"HTTP {reply.status}: {raw[:200]}")
        self.requests += 1
        content = json.loads(raw)["choices"][0]["message"]["content"]
        return str(content or "")

    async def _ask_all(self, prompts: Sequence[str], desc: str) -> list[Asked]:
        semaphore = asyncio.Semaphore(max(1, self.concurrency))
        keys = [self.key(p) for p in prompts]
        todo = {k: p for k, p in zip(keys, prompts, strict=True) if k not in self._cached}
        bar = None
        if self.progress and todo:
            from grade_kit._progress import progress_bar

            bar = progress_bar(len(todo), f"{desc} ({self.model})", "prompt")
        sessions = Sessions()
        try:
            session = sessions.get()

            secrets = secret_values(self.api_key_env)

            async def one(key: str, prompt: str) -> Asked:
                async with semaphore:
                    try:
                        # the key's value never reaches a verdict, an error or the cache
                        answer = redact(await self._post(session, prompt), secrets)
                    except ASK_ERRORS as exc:
                        return Asked(key, None, redact(f"{type(exc).__name__}: {exc}",
                                                       secrets), False)
                    finally:
                        if bar is not None:
                            bar.update(1)
                self._remember(key, answer)
                return Asked(key, answer, None, False)

            asked = {a.key: a for a in await asyncio.gather(*(one(k, p)
                                                              for k, p in todo.items()))}
        finally:
            await sessions.aclose()
        if bar is not None:
            bar.close()
        out = []
        for key in keys:
            if key in asked:  # asked now: the first prompt with this key says so
                out.append(asked.pop(key))
            else:  # cached before, or a repeat of a prompt asked now
                answer = self._cached.get(key)
                out.append(Asked(key, answer, None if answer is not None else
                                 "the same prompt failed earlier in this batch", True))
        return out

    def ask_all(self, prompts: Sequence[str], desc: str = "judging") -> list[Asked]:
        """Ask every prompt (each distinct one at most once; cached ones not at all), from
        synchronous code or inside Jupyter's running loop.

        Returns:
            One :class:`Asked` per prompt, in order. A failed request is an :class:`Asked`
            with its error (never raised), so one bad verdict does not lose the others.
        """
        if not prompts:
            return []
        return run_sync(lambda: self._ask_all(prompts, desc))


class ModelVerdicts:
    """What a model judge and a model grader share: one :class:`ModelClient`, the model's
    name recorded as ``<prefix><model>``, and the seed of the answers' aliases.

    Args:
        base_url: For example ``http://127.0.0.1:8000/v1``.
        model: The model's name.
        api_key_env: NAME of the environment variable holding the key; default None.
        cache: JSONL file of cached verdicts (read, then appended to); default None (no
            cache).
        concurrency: Requests in flight; default 8.
        timeout_s: Per request; default 120 s.
        seed: Seed of the answers' aliases (recorded on every verdict); default 0.
        progress: Show a progress bar while asking; default True.
    """

    prefix = "model:"

    def __init__(self, base_url: str, model: str, *, api_key_env: str | None = None,
                 cache: Path | str | None = None, concurrency: int = 8,
                 timeout_s: float = 120.0, seed: int = 0, progress: bool = True) -> None:
        self.client = ModelClient(base_url, model, api_key_env=api_key_env, cache=cache,
                                  concurrency=concurrency, timeout_s=timeout_s,
                                  progress=progress)
        self.model = model
        self.name = f"{self.prefix}{model}"
        self.seed = seed

    @property
    def requests(self) -> int:
        """Requests actually sent (cache hits send none)."""
        return self.client.requests

    def answers(self, tasks: Sequence[Task], runs: Sequence[Run], *, grade_tasks_only: bool
                ) -> list[tuple[Task, Run, str]]:
        """Each delivered run with a response whose task is among ``tasks`` (only GRADE
        tasks with ``grade_tasks_only``), with its task and the alias it is shown under."""
        by_id = {t.task_id: t for t in tasks if t.kind == "grade" or not grade_tasks_only}
        return [(by_id[run.task_id], run, answer_alias(self.seed, run.task_id, run.run_id))
                for run in runs if run.task_id in by_id and run.status == "delivered"
                and run.response is not None]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.client.base_url!r}, {self.model!r})"
