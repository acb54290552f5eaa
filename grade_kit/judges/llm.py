"""An LLM judge for the judged dimensions over any OpenAI-compatible endpoint (a
:class:`~grade_kit.judges.Judge`).

- The prompt is anonymised: the question, the task's judge guidance and evidence spec, and
  the answer (findings, limitations, recommendations, metrics, text) under a random alias
  (:func:`~grade_kit.judges.model.answer_alias`, seed recorded); never the setup, the run id,
  timing or tool counts. Temperature 0.
- The answer asked for is JSON: per dimension a score in [0, 1] and a reason a person can
  check. An unusable answer gives a null score with the reason (never a silent 0).
- Every verdict is cached by a hash of the prompt, the model and the parameters
  (:class:`~grade_kit.judges.model.ModelClient`), so re-running a notebook asks nothing
  twice; each judgement's ``provenance`` records the model, the prompt hash, the alias and
  its seed, and whether it was a cache hit.
- The API key is read from the environment variable *named* by ``api_key_env``, never stored.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from grade_kit.judges.model import (
    ModelClient,
    ModelVerdicts,
    alias_instruction,
    parse_json_object,
    read_answer,
)
from grade_kit.schema import JUDGED_DIMENSIONS, Judgement, Run, Task

JUDGE_PROMPT_MARK = "You are grading one answer for grade_kit."
"""The first line of every judge prompt (a judge model may recognise it)."""


def answer_json(run: Run) -> str:
    """The answer as a model judge or grader reads it: the response's five fields as JSON
    (sorted keys), nothing about the setup, the run, timing or tools."""
    response = run.response
    assert response is not None
    answer = {"key_findings": response.key_findings, "limitations": response.limitations,
              "recommendations": response.recommendations,
              "structured_metrics": response.structured_metrics, "text": response.text}
    return json.dumps(answer, ensure_ascii=False, sort_keys=True)


def judge_prompt(task: Task, run: Run, alias: str = "A-000000") -> str:
    """The anonymised judge prompt for one delivered run (no setup, id, timing or tools)."""
    guidance = {d: task.judge_guidance.get(d, "") for d in JUDGED_DIMENSIONS}
    return "\n".join([
        JUDGE_PROMPT_MARK,
        "Score each dimension from 0 to 1 and give a reason a person can check.",
        "evidence_linkage: are the figures and claims tied to the named sources, columns and "
        "entity ids? structure_usability: are findings, limitations and recommendations "
        "kept apart, units right, findings short and scannable?",
        f'Reply with JSON only: {{"answer": "{alias}", '
        '"evidence_linkage": {"score": 0.0, "reason": "..."}, '
        '"structure_usability": {"score": 0.0, "reason": "..."}}.',
        alias_instruction(alias),
        "QUESTION:", task.prompt,
        "GUIDANCE: " + json.dumps(guidance, ensure_ascii=False, sort_keys=True),
        "EVIDENCE SPEC: " + json.dumps(task.evidence, ensure_ascii=False, sort_keys=True),
        f"ANSWER {alias}: " + answer_json(run),
    ])


class LLMJudge(ModelVerdicts):
    """The judged dimensions by a model at an OpenAI-compatible endpoint; judgements are
    written by ``llm:<model>``. Arguments as :class:`~grade_kit.judges.model.ModelVerdicts`
    (base URL, model, key variable name, cache, concurrency, timeout, alias seed, progress).
    """

    prefix = "llm:"

    def __call__(self, tasks: Sequence[Task], runs: Sequence[Run]) -> list[Judgement]:
        items = self.answers(tasks, runs, grade_tasks_only=True)
        asked = self.client.ask_all([judge_prompt(task, run, alias)
                                     for task, run, alias in items], desc="judge")
        out = []
        for (_, run, alias), result in zip(items, asked, strict=True):
            provenance = {**result.provenance(self.model), "alias": alias,
                          "alias_seed": self.seed}
            verdicts = _parse_verdicts(*read_answer(result, "judge", alias))
            for dimension in JUDGED_DIMENSIONS:
                score, reason = verdicts[dimension]
                out.append(Judgement(run_id=run.run_id, dimension=dimension, score=score,
                                     judge=self.name, reason=reason, provenance=provenance))
        return out


def _parse_verdicts(data: dict[str, Any] | None, why: str | None
                    ) -> dict[str, tuple[float | None, str]]:
    if data is None:
        return dict.fromkeys(JUDGED_DIMENSIONS, (None, str(why)))
    out: dict[str, tuple[float | None, str]] = {}
    for dimension in JUDGED_DIMENSIONS:
        verdict: Any = data.get(dimension)
        score = verdict.get("score") if isinstance(verdict, dict) else None
        reason = verdict.get("reason") if isinstance(verdict, dict) else None
        if (isinstance(score, int | float) and not isinstance(score, bool)
                and 0.0 <= float(score) <= 1.0):
            out[dimension] = (float(score), str(reason or "no reason given"))
        else:
            out[dimension] = (None, f"the judge gave no usable {dimension} score: "
                                    f"{json.dumps(verdict)[:200]}")
    return out


CLAIM_PROMPT_MARK = "You are checking one claim for grade_kit."
"""The first line of every claim-fallback prompt."""


def claim_prompt(claim: str, targets: Sequence[str]) -> str:
    """The prompt asking whether ``claim`` is stated (in other words) in any target text."""
    return "\n".join([
        CLAIM_PROMPT_MARK,
        "Is the CLAIM stated, in these or other words, in any of the TEXTS? A text that "
        "mentions the topic without stating the claim does not count.",
        'Reply with JSON only: {"stated": true, "reason": "..."}.',
        "CLAIM: " + claim,
        "TEXTS: " + json.dumps(list(targets), ensure_ascii=False)])


class LLMClaimJudge:
    """The claim validator's paraphrase fallback by a model (a
    :class:`~grade_kit.scorers.ClaimJudge`): asked only about claims the deterministic match
    missed; the deciding method is recorded as ``judge:llm-claims:<model>``. Verdicts are
    cached like every model verdict; an unusable answer counts as not stated.

    Args:
        base_url: For example ``http://127.0.0.1:8000/v1``.
        model: The model's name.
        api_key_env: NAME of the environment variable holding the key; default None.
        cache: JSONL file of cached verdicts; default None.
        timeout_s: Per request; default 120 s.
    """

    def __init__(self, base_url: str, model: str, *, api_key_env: str | None = None,
                 cache: Path | str | None = None, timeout_s: float = 120.0) -> None:
        self.client = ModelClient(base_url, model, api_key_env=api_key_env, cache=cache,
                                  timeout_s=timeout_s, progress=False)
        self.name = f"llm-claims:{model}"
        self.unusable = 0
        """Answers that could not be read (counted as not stated)."""

    def __call__(self, claim: str, targets: Sequence[str]) -> bool:
        if not targets:
            return False
        (asked,) = self.client.ask_all([claim_prompt(claim, targets)], desc="claims")
        data = parse_json_object(asked.answer)
        stated = None if data is None else data.get("stated")
        if not isinstance(stated, bool):
            self.unusable += 1
            return False
        return stated
