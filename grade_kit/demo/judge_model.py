"""The demo server's judge model (``judge``): answers grade_kit's judge, grader, pairwise and
claim prompts deterministically from the pack's ground truth, like a temperature-0 model,
so ``make demo`` exercises the model judge and grader over HTTP with no paid service.

- **judge prompts**: the rule judge's evidence-linkage and structure & usability verdicts on
  the answer the prompt carries;
- **grader prompts** (request fulfilment, core conclusion): the rule grader's record of that
  answer (:mod:`grade_kit.judges.rule_grader`; ground-truth gold facts, insights and forbidden
  claims). The records of every recorded demo answer and of its calibration forms are
  computed in one batch on first use; any other answer is graded on its own;
- **pairwise prompts**: the answer whose rule-grader record ranks higher (correct and full >
  correct and partial > no conclusion or not met > material error), or a tie; never the
  position;
- **claim prompts**: stated when every token of the claim (docs/methodology.md §3 "Text")
  appears in one of the texts.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from grade_kit.judges.calibration_review import CALIBRATION_FORMS, restated
from grade_kit.judges.llm import CLAIM_PROMPT_MARK, JUDGE_PROMPT_MARK, answer_json
from grade_kit.judges.llm_grader import (
    CONCLUSION_STEP,
    FULFILMENT_STEP,
    GRADER_PROMPT_MARK,
    PAIRWISE_STEP,
)
from grade_kit.judges.rule_grader import RuleGrader
from grade_kit.schema import Grade, Run, Task
from grade_kit.text import tokenize

DEMO_REPEATS = 5
"""Repeats whose recorded answers are graded in the first batch (the demo fetches 5)."""

_ANSWER = re.compile(r"\n(?:FIRST |SECOND )?ANSWER [A-Z0-9-]+: ")
_ALIAS = re.compile(r"\nANSWER ([A-Z0-9-]+): ")
"""The alias of a judge or grader prompt's one answer (the verdict names it)."""


def _answers(content: str) -> list[dict[str, Any]]:
    """The answers a prompt carries (each a JSON line after its ``ANSWER <alias>:``)."""
    return [json.loads(part.split("\n", 1)[0]) for part in _ANSWER.split(content)[1:]]


def _question(content: str) -> str:
    after = content.split("\nQUESTION:\n", 1)[-1]
    return re.split(r"\n(?:GUIDANCE|REFERENCE): ", after, maxsplit=1)[0].strip()


def _canonical(answer: dict[str, Any]) -> str:
    return json.dumps(answer, ensure_ascii=False, sort_keys=True)


def _rank(grade: Grade) -> int:
    if grade.core_conclusion == "material_error":
        return 0
    if grade.core_conclusion != "correct" or grade.request_fulfilment == "not_met":
        return 1
    return 2 if grade.request_fulfilment == "partial" else 3


class DemoJudgeModel:
    """Answers grade_kit's prompts for the demo (see the module docs).

    Args:
        tasks: The fixture tasks, keyed by their prompt (stripped).
        recorded: Yields the recorded run records of every demo slot (called once, on the
            first grader prompt).
    """

    def __init__(self, tasks: dict[str, Task],
                 recorded: Callable[[], Iterable[dict[str, Any]]] | None = None) -> None:
        self.tasks = tasks
        self._recorded = recorded
        self._grades: dict[tuple[str, str], Grade] | None = None
        self._lock = threading.Lock()

    def _grade_table(self) -> dict[tuple[str, str], Grade]:
        with self._lock:
            if self._grades is None:
                runs = []
                for record in (self._recorded() if self._recorded else []):
                    if record.get("status") != "delivered" or record.get("response") is None:
                        continue
                    answered = Run.model_validate(record)
                    for form in CALIBRATION_FORMS:
                        runs.append(Run.model_validate({
                            "run_id": f"{record['run_id']}:{form}", "setup": "-",
                            "task_id": record["task_id"], "repeat": 1, "status": "delivered",
                            "response": restated(answered, form)}))
                self._grades = self._grade(runs)
            return self._grades

    def _grade(self, runs: Sequence[Run]) -> dict[tuple[str, str], Grade]:
        tasks = list(self.tasks.values())
        by_run = {r.run_id: r for r in runs}
        out = {}
        for grade in RuleGrader()(tasks, runs):
            run = by_run[grade.run_id]
            assert run.response is not None
            answer = json.loads(answer_json(run))
            out[(run.task_id, _canonical(answer))] = grade
        return out

    def grade_of(self, task: Task, answer: dict[str, Any]) -> Grade:
        """The rule grader's record of ``answer`` to ``task``."""
        key = (task.task_id, _canonical(answer))
        table = self._grade_table()
        if key not in table:
            run = Run.model_validate({"run_id": "asked", "setup": "-", "task_id": task.task_id,
                                      "repeat": 1, "status": "delivered", "response": answer})
            found = self._grade([run])
            with self._lock:
                table.update(found)
        return table[key]

    def answer(self, content: str) -> dict[str, Any] | None:
        """The verdict (a JSON object) for one prompt, or None for a prompt it does not
        know."""
        if content.startswith(CLAIM_PROMPT_MARK):
            claim = content.split("\nCLAIM: ", 1)[-1].split("\nTEXTS: ", 1)[0]
            texts = json.loads(content.split("\nTEXTS: ", 1)[-1])
            wanted = set(tokenize(claim))
            stated = bool(wanted) and any(wanted <= set(tokenize(str(t))) for t in texts)
            return {"stated": stated, "reason": "every word of the claim is in one text"
                    if stated else "no text has every word of the claim"}
        task = self.tasks.get(_question(content))
        if task is None:
            return None
        answers = _answers(content)
        alias = _ALIAS.search(content)
        named = {"answer": alias.group(1)} if alias else {}
        verdict = self._verdict(content, task, answers)
        return None if verdict is None else {**named, **verdict}

    def _verdict(self, content: str, task: Task,
                 answers: list[dict[str, Any]]) -> dict[str, Any] | None:
        if content.startswith(JUDGE_PROMPT_MARK):
            from grade_kit.judges.rules import evidence_linkage, structure_usability

            run = Run.model_validate({"run_id": "judged", "setup": "-",
                                      "task_id": task.task_id, "repeat": 1,
                                      "status": "delivered", "response": answers[0]})
            ev_score, ev_reason = evidence_linkage(task, run)
            su_score, su_reason = structure_usability(task, run)
            return {"evidence_linkage": {"score": ev_score, "reason": ev_reason},
                    "structure_usability": {"score": su_score, "reason": su_reason}}
        if not content.startswith(GRADER_PROMPT_MARK):
            return None
        step = content.split("\n", 2)[1]
        if step == PAIRWISE_STEP:
            first, second = (_rank(self.grade_of(task, a)) for a in answers[:2])
            better = "first" if first > second else "second" if second > first else "tie"
            return {"better": better, "reason": f"rule-grader ranks {first} and {second}"}
        grade = self.grade_of(task, answers[0])
        if step == FULFILMENT_STEP:
            return {"request_fulfilment": grade.request_fulfilment,
                    "needs_more_information": grade.needs_more_information,
                    "reason": grade.reason}
        if step == CONCLUSION_STEP:
            return {"core_conclusion": grade.core_conclusion, "claim": grade.claim,
                    "evidence": grade.evidence, "effect": grade.effect, "reason": grade.reason}
        return None


