"""An LLM judge for the judged dimensions over any OpenAI-compatible endpoint (a
:class:`~grade_kit.judges.Judge`).

- The prompt is anonymised: the question, the task's judge guidance and evidence spec, and
  the answer (findings, limitations, recommendations, metrics, text); never the setup, the
  run id, timing or tool counts. Temperature 0.
- The answer asked for is JSON: per dimension a score in [0, 1] and a reason a person can
  check. An unusable answer gives a null score with the reason (never a silent 0).
- Every verdict is cached by a hash of the prompt, the model and the parameters
  (``cache``, an append-only JSONL file), so re-running a notebook asks nothing twice; each
  judgement's ``provenance`` records the model, the prompt hash and whether it was a cache hit.
- The API key is read from the environment variable *named* by ``api_key_env``, never stored.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from grade_kit.fetch.responders import request_headers, run_sync
from grade_kit.schema import JUDGED_DIMENSIONS, Judgement, Run, Task

__all__ = ["JUDGE_PROMPT_MARK", "LLMJudge", "judge_prompt"]

JUDGE_PROMPT_MARK = "You are grading one answer for grade_kit."
"""The first line of every judge prompt (a judge model may recognise it)."""

PARAMETERS = {"temperature": 0}


def judge_prompt(task: Task, run: Run) -> str:
    """The anonymised judge prompt for one delivered run (no setup, id, timing or tools)."""
    response = run.response
    assert response is not None
    answer = {"key_findings": response.key_findings, "limitations": response.limitations,
              "recommendations": response.recommendations,
              "structured_metrics": response.structured_metrics, "text": response.text}
    guidance = {d: task.judge_guidance.get(d, "") for d in JUDGED_DIMENSIONS}
    return "\n".join([
        JUDGE_PROMPT_MARK,
        "Score each dimension from 0 to 1 and give a reason a person can check.",
        "evidence_linkage: are the figures and claims tied to the named sources, columns and "
        "entity ids? structure_usability: are findings, limitations and recommendations "
        "kept apart, units right, findings short and scannable?",
        'Reply with JSON only: {"evidence_linkage": {"score": 0.0, "reason": "..."}, '
        '"structure_usability": {"score": 0.0, "reason": "..."}}.',
        "QUESTION:", task.prompt,
        "GUIDANCE: " + json.dumps(guidance, ensure_ascii=False, sort_keys=True),
        "EVIDENCE SPEC: " + json.dumps(task.evidence, ensure_ascii=False, sort_keys=True),
        "ANSWER: " + json.dumps(answer, ensure_ascii=False, sort_keys=True),
    ])


class LLMJudge:
    """The judged dimensions by a model at an OpenAI-compatible endpoint.

    Args:
        base_url: For example ``http://127.0.0.1:8000/v1``.
        model: The judge model's name.
        api_key_env: NAME of the environment variable holding the key; default None.
        cache: JSONL file of cached verdicts (read, then appended to); default None (no
            cache).
        concurrency: Requests in flight; default 8.
        timeout_s: Per request; default 120 s.
    """

    def __init__(self, base_url: str, model: str, *, api_key_env: str | None = None,
                 cache: Path | str | None = None, concurrency: int = 8,
                 timeout_s: float = 120.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.name = f"llm:{model}"
        self.api_key_env = api_key_env
        self.cache = None if cache is None else Path(cache)
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.requests = 0
        """Requests actually sent (cache hits send none)."""
        self._cached: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        if self.cache is not None and self.cache.is_file():
            for line in self.cache.read_text(encoding="utf-8").splitlines():
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a torn last line: that verdict is asked again
                if isinstance(entry, dict) and "key" in entry:
                    self._cached[str(entry["key"])] = entry

    def _key(self, prompt: str) -> str:
        basis = json.dumps({"prompt": prompt, "model": self.model, **PARAMETERS},
                           sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(basis.encode()).hexdigest()

    def _remember(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self._cached[entry["key"]] = entry
            if self.cache is not None:
                self.cache.parent.mkdir(parents=True, exist_ok=True)
                with self.cache.open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
                    handle.flush()
                    os.fsync(handle.fileno())

    async def _ask(self, client: httpx.AsyncClient, prompt: str) -> str:
        headers = request_headers(self.api_key_env)
        body = {"model": self.model, "messages": [{"role": "user", "content": prompt}],
                "response_format": {"type": "json_object"}, **PARAMETERS}
        reply = await client.post(f"{self.base_url}/chat/completions", json=body,
                                  headers=headers, timeout=self.timeout_s)
        reply.raise_for_status()
        self.requests += 1
        content = reply.json()["choices"][0]["message"]["content"]
        return str(content or "")

    async def _judge_all(self, items: list[tuple[Run, str]]) -> list[dict[str, Any]]:
        semaphore = asyncio.Semaphore(max(1, self.concurrency))
        async with httpx.AsyncClient() as client:
            async def one(prompt: str) -> dict[str, Any]:
                key = self._key(prompt)
                if key in self._cached:
                    return {**self._cached[key], "cache_hit": True}
                async with semaphore:
                    try:
                        text = await self._ask(client, prompt)
                    except (httpx.HTTPError, RuntimeError, KeyError, ValueError) as exc:
                        return {"key": key, "error": f"{type(exc).__name__}: {exc}",
                                "cache_hit": False}
                entry = {"key": key, "model": self.model, "answer": text}
                self._remember(entry)
                return {**entry, "cache_hit": False}

            return list(await asyncio.gather(*(one(p) for _, p in items)))

    def __call__(self, tasks: Sequence[Task], runs: Sequence[Run]) -> list[Judgement]:
        by_id = {t.task_id: t for t in tasks if t.kind == "grade"}
        items = [(run, judge_prompt(by_id[run.task_id], run)) for run in runs
                 if run.task_id in by_id and run.status == "delivered"
                 and run.response is not None]
        results = run_sync(lambda: self._judge_all(items))
        out = []
        for (run, _), result in zip(items, results, strict=True):
            provenance = {"model": self.model, "prompt_sha256": result["key"],
                          "cache_hit": result["cache_hit"]}
            verdicts = _parse_verdicts(result.get("answer"), result.get("error"))
            for dimension in JUDGED_DIMENSIONS:
                score, reason = verdicts[dimension]
                out.append(Judgement(run_id=run.run_id, dimension=dimension, score=score,
                                     judge=self.name, reason=reason, provenance=provenance))
        return out


def _parse_verdicts(answer: str | None, error: str | None
                    ) -> dict[str, tuple[float | None, str]]:
    if error is not None or answer is None:
        why = f"the judge could not be asked: {error}"
        return dict.fromkeys(JUDGED_DIMENSIONS, (None, why))
    try:
        data = json.loads(answer)
    except json.JSONDecodeError:
        return dict.fromkeys(JUDGED_DIMENSIONS, (None, f"the judge's answer is not JSON: "
                                                       f"{answer[:200]!r}"))
    out: dict[str, tuple[float | None, str]] = {}
    for dimension in JUDGED_DIMENSIONS:
        verdict = data.get(dimension) if isinstance(data, dict) else None
        score = verdict.get("score") if isinstance(verdict, dict) else None
        reason = verdict.get("reason") if isinstance(verdict, dict) else None
        if (isinstance(score, int | float) and not isinstance(score, bool)
                and 0.0 <= float(score) <= 1.0):
            out[dimension] = (float(score), str(reason or "no reason given"))
        else:
            out[dimension] = (None, f"the judge gave no usable {dimension} score: "
                                    f"{json.dumps(verdict)[:200]}")
    return out
