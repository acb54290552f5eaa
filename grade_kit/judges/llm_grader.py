"""An LLM grader for the standard's grades over any OpenAI-compatible endpoint, with the bias
controls of docs/methodology.md §4 "Model judges and graders".

Two separate judgements per delivered run, each its own prompt and cached verdict:

1. **request fulfilment**: ``full``, ``partial``, ``not_met`` or ``pending``, and whether the
   answer asks the user for more information (``needs_more_information``);
2. **core conclusion**: ``correct``, ``material_error`` (with the exact claim, the evidence
   against it and its effect), ``no_gradable_conclusion`` or ``pending`` (a deciding fact
   cannot be checked).

``material_error`` of the record is ``yes`` for a material error, ``pending`` for a pending
conclusion, else ``no``; the grading order of §4 "Grades" then derives the grade. The prompts
carry the task's reference answer, or its gold facts (metric, value, tolerance), gold
insights and forbidden claims, and the answer under a random alias (seed recorded); never the
setup, the run id, timing or tool counts. An unusable or failed verdict makes its field
``pending`` with the reason, so the run is pending verification, never silently graded.

:meth:`LLMGrader.compare` asks pairwise preferences in both orders and flags a verdict that
follows the position instead of the answer.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from grade_kit.judges.llm import answer_json
from grade_kit.judges.model import (
    ModelVerdicts,
    alias_instruction,
    answer_alias,
    read_answer,
)
from grade_kit.schema import Grade, Run, Task, material_error_of

GRADER_PROMPT_MARK = "You are grading one answer for grade_kit, as a grader."
"""The first line of every grader prompt (a grader model may recognise it)."""
FULFILMENT_STEP = "STEP: request fulfilment"
CONCLUSION_STEP = "STEP: core conclusion"
PAIRWISE_STEP = "STEP: pairwise preference"

_FULFILMENT = ("full", "partial", "not_met", "pending")
_CONCLUSION = ("correct", "material_error", "no_gradable_conclusion", "pending")


def reference_of(task: Task) -> str:
    """What the grader checks against: the reference answer, the gold facts with their
    tolerances, the gold insights and the forbidden claims, as JSON (``{}`` when the task has
    none, and the grader is told to use ``pending`` where a deciding fact cannot be
    checked)."""
    reference: dict[str, Any] = {}
    if task.reference is not None:
        reference["reference_answer"] = task.reference
    if task.gold_facts:
        reference["gold_facts"] = [
            {"metric": f.metric, "value": f.value,
             **{k: v for k, v in (("abs_tol", f.abs_tol), ("rel_tol", f.rel_tol))
                if v is not None}} for f in task.gold_facts]
    if task.gold_insights:
        reference["gold_insights"] = [c.text for c in task.gold_insights]
    if task.forbidden_claims:
        reference["unsupported_conclusions"] = [c.text for c in task.forbidden_claims]
    return json.dumps(reference, ensure_ascii=False, sort_keys=True)


def grader_prompts(task: Task, run: Run, alias: str = "A-000000") -> tuple[str, str]:
    """The two anonymised grader prompts for one delivered run: (fulfilment, conclusion)."""
    common = ["QUESTION:", task.prompt, "REFERENCE: " + reference_of(task),
              f"ANSWER {alias}: " + answer_json(run)]
    fulfilment = "\n".join([
        GRADER_PROMPT_MARK, FULFILMENT_STEP,
        "Judge only whether the answer does what the question asks. full: every part "
        "answered; partial: some part answered; not_met: nothing asked for is answered (an "
        "answer that only asks the user for more information is not_met); pending: a "
        "deciding fact cannot be checked. needs_more_information: true when the answer asks "
        "the user for more information.",
        f'Reply with JSON only: {{"answer": "{alias}", '
        '"request_fulfilment": "full|partial|not_met|pending", '
        '"needs_more_information": false, "reason": "..."}.',
        alias_instruction(alias), *common])
    conclusion = "\n".join([
        GRADER_PROMPT_MARK, CONCLUSION_STEP,
        "Judge only whether the answer's core conclusion holds against the reference. "
        "correct: it holds; material_error: a stated conclusion or figure is wrong in a way "
        "that changes the answer (quote the exact claim, give the evidence against it and its "
        "effect); no_gradable_conclusion: the answer concludes nothing; pending: a deciding "
        "fact cannot be checked against the reference.",
        f'Reply with JSON only: {{"answer": "{alias}", "core_conclusion": "correct|'
        'material_error|no_gradable_conclusion|pending", "claim": null, "evidence": null, '
        '"effect": null, "reason": "..."}.',
        alias_instruction(alias), *common])
    return fulfilment, conclusion


def pairwise_prompt(task: Task, first: Run, second: Run, aliases: tuple[str, str]) -> str:
    """The prompt asking which of two answers to one question is better (``first`` shown
    first)."""
    return "\n".join([
        GRADER_PROMPT_MARK, PAIRWISE_STEP,
        "Which answer better does what the question asks and holds up against the "
        "reference? Judge the content, not its length or its position.",
        'Reply with JSON only: {"better": "first|second|tie", "reason": "..."}.',
        "QUESTION:", task.prompt, "REFERENCE: " + reference_of(task),
        f"FIRST ANSWER {aliases[0]}: " + answer_json(first),
        f"SECOND ANSWER {aliases[1]}: " + answer_json(second)])


def _choice(data: dict[str, Any] | None, key: str, allowed: tuple[str, ...]) -> str | None:
    value = None if data is None else data.get(key)
    return value if isinstance(value, str) and value in allowed else None


def _text(data: dict[str, Any] | None, key: str) -> str | None:
    value = None if data is None else data.get(key)
    return value if isinstance(value, str) and value.strip() else None


@dataclass(frozen=True)
class PairwiseVerdict:
    """A pairwise preference asked in both orders.

    ``ab`` is the verdict with ``run_a`` shown first, ``ba`` with ``run_b`` first, each as
    the preferred run id, ``"tie"``, or None when unusable. ``flagged`` is true when the two
    orders disagree: the verdict followed the position, not the answer.
    """

    task_id: str
    run_a: str
    run_b: str
    ab: str | None
    ba: str | None
    reasons: tuple[str, str]

    @property
    def flagged(self) -> bool:
        """The two orders disagree (or one is unusable)."""
        return self.ab is None or self.ba is None or self.ab != self.ba

    @property
    def preferred(self) -> str | None:
        """The preferred run id or ``"tie"`` when both orders agree, else None."""
        return None if self.flagged else self.ab


class LLMGrader(ModelVerdicts):
    """The standard's grades by a model at an OpenAI-compatible endpoint (two judgements per
    run; see the module docs); records are written by ``llm-grader:<model>``. Arguments as
    :class:`~grade_kit.judges.model.ModelVerdicts` (base URL, model, key variable name, cache,
    concurrency, timeout, alias seed, progress).
    """

    prefix = "llm-grader:"

    def __call__(self, tasks: Sequence[Task], runs: Sequence[Run]) -> list[Grade]:
        """A grade record for every delivered run of a GRADE or plain task with a response."""
        items = self.answers(tasks, runs, grade_tasks_only=False)
        prompts = [p for task, run, alias in items for p in grader_prompts(task, run, alias)]
        asked = self.client.ask_all(prompts, desc="grade")
        out = []
        for index, (_, run, alias) in enumerate(items):
            fulfil, concl = asked[2 * index], asked[2 * index + 1]
            f_data, f_problem = read_answer(fulfil, "grader", alias)
            c_data, c_problem = read_answer(concl, "grader", alias)
            request_fulfilment = _choice(f_data, "request_fulfilment", _FULFILMENT)
            core = _choice(c_data, "core_conclusion", _CONCLUSION)
            reasons = [f"fulfilment: {_why(f_problem, f_data, request_fulfilment)}",
                       f"conclusion: {_why(c_problem, c_data, core)}"]
            core = core or "pending"
            asking = None if f_data is None else f_data.get("needs_more_information")
            out.append(Grade(
                run_id=run.run_id, core_conclusion=core,  # type: ignore[arg-type]
                request_fulfilment=request_fulfilment or "pending",  # type: ignore[arg-type]
                material_error=material_error_of(core),
                claim=_text(c_data, "claim") if core == "material_error" else None,
                evidence=_text(c_data, "evidence") if core == "material_error" else None,
                effect=_text(c_data, "effect") if core == "material_error" else None,
                grader=self.name, reason="; ".join(reasons),
                needs_more_information=asking if isinstance(asking, bool) else None,
                provenance={"model": self.model, "alias": alias, "alias_seed": self.seed,
                            "prompt_sha256": [fulfil.key, concl.key],
                            "cache_hit": [fulfil.cache_hit, concl.cache_hit]}))
        return out

    def compare(self, tasks: Sequence[Task], runs: Sequence[Run],
                pairs: Sequence[tuple[str, str]]) -> list[PairwiseVerdict]:
        """Pairwise preferences, each asked in both orders (a position-bias control).

        Args:
            tasks: The tasks.
            runs: The runs the pairs name (both delivered, same task).
            pairs: (run_a, run_b) run ids.

        Raises:
            ValueError: when a pair names an unknown or undelivered run, or two tasks.
        """
        by_task = {t.task_id: t for t in tasks}
        by_run = {r.run_id: r for r in runs if r.status == "delivered" and r.response}
        prompts = []
        for a, b in pairs:
            if a not in by_run or b not in by_run:
                raise ValueError(f"pair ({a}, {b}): both runs must be delivered answers")
            ra, rb = by_run[a], by_run[b]
            if ra.task_id != rb.task_id or ra.task_id not in by_task:
                raise ValueError(f"pair ({a}, {b}): the runs must answer one known task")
            task = by_task[ra.task_id]
            aliases = (answer_alias(self.seed, task.task_id, a),
                       answer_alias(self.seed, task.task_id, b))
            prompts.append(pairwise_prompt(task, ra, rb, aliases))
            prompts.append(pairwise_prompt(task, rb, ra, aliases[::-1]))
        asked = self.client.ask_all(prompts, desc="pairwise")
        out = []
        for index, (a, b) in enumerate(pairs):
            ab, ba = asked[2 * index], asked[2 * index + 1]
            verdicts, reasons = [], []
            for result, (first, second) in ((ab, (a, b)), (ba, (b, a))):
                data, problem = read_answer(result, "grader")
                better = _choice(data, "better", ("first", "second", "tie"))
                verdicts.append({"first": first, "second": second, "tie": "tie"}.get(
                    better or ""))
                reasons.append(_why(problem, data, better))
            out.append(PairwiseVerdict(by_run[a].task_id, a, b, verdicts[0], verdicts[1],
                                       (reasons[0], reasons[1])))
        return out


def _why(problem: str | None, data: dict[str, Any] | None, choice: str | None) -> str:
    """The reason a person can check for one step (or why the step is pending)."""
    if data is None:
        return f"{problem}; pending"
    if choice is None:
        return f"the grader's answer has no usable verdict ({json.dumps(data)[:200]}); pending"
    reason = data.get("reason")
    return f"{choice}: {reason}" if isinstance(reason, str) and reason else choice
