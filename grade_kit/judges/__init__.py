"""Judges: whatever scores the judged dimensions (evidence linkage, structure & usability) per
run. A judge is an object with a ``name`` that maps tasks and runs to judgement records
(:class:`Judge`); ``"rules"`` names the offline rule judge (:mod:`grade_kit.judges.rules`).
Recorded judgements load through :mod:`grade_kit.reading.records`.

Vocabulary: a *judge* fills judged dimensions; a *claim judge* (:class:`grade_kit.ClaimJudge`)
is asked only whether a claim the deterministic matcher missed is stated; a *grader* writes
grade records (the standard's verdicts). See docs/methodology.md §0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from grade_kit.frames import raw_records
from grade_kit.judges.rules import JUDGE as RULES_JUDGE_NAME
from grade_kit.judges.rules import rule_judgements
from grade_kit.reading._fastread import select_records
from grade_kit.reading.inputs import Inputs
from grade_kit.schema import MODEL_GRADER_PREFIXES, Grade, Judgement, Run, Task

__all__ = ["JUDGES", "Grader", "Judge", "RuleJudge", "grading_label", "new_grades",
           "new_judgements", "resolve_grader", "resolve_judge", "rule_judgements"]


@runtime_checkable
class Judge(Protocol):
    """Scores the judged dimensions of runs; ``name`` is recorded on every judgement."""

    name: str

    def __call__(self, tasks: Sequence[Task], runs: Sequence[Run]) -> list[Judgement]:
        """Judgements for the runs it can judge (a run it cannot judge gets none)."""
        ...


@runtime_checkable
class Grader(Protocol):
    """Writes grade records (the standard's verdicts) for runs; ``name`` is recorded as each
    record's ``grader``. ``"rules"`` names the offline rule grader
    (:mod:`grade_kit.judges.rule_grader`), which works on frames inside :func:`grade_kit.evaluate`;
    :class:`~grade_kit.judges.llm_grader.LLMGrader` is one of these."""

    name: str

    def __call__(self, tasks: Sequence[Task], runs: Sequence[Run]) -> list[Grade]:
        """Grade records for the runs it can grade (a run it cannot grade gets none)."""
        ...


def resolve_grader(grader: str | Grader | None) -> str | Grader | None:
    """``"rules"``, None, or a :class:`Grader`, checked.

    Raises:
        ValueError: for an unknown name or an object that is not a :class:`Grader`.
    """
    if grader is None or grader == "rules":
        return grader
    if isinstance(grader, str) or not isinstance(grader, Grader):
        raise ValueError(f"unknown grader {grader!r}; choose 'rules', None or a Grader (an "
                         "object with a name that maps tasks and runs to grade records)")
    return grader


class RuleJudge:
    """The offline, deterministic rule judge (``rules@1``); see :mod:`grade_kit.judges.rules`."""

    name = RULES_JUDGE_NAME

    def __call__(self, tasks: Sequence[Task], runs: Sequence[Run]) -> list[Judgement]:
        return rule_judgements(tasks, runs)

    def __repr__(self) -> str:
        return f"RuleJudge({self.name!r})"


JUDGES: dict[str, Judge] = {"rules": RuleJudge()}
"""Judges selectable by name (``gk.evaluate(judge="rules")``, ``grade-kit score --judge``)."""


def resolve_judge(judge: str | Judge) -> Judge:
    """The judge named ``judge`` in :data:`JUDGES`, or ``judge`` itself when it is one.

    Raises:
        ValueError: for an unknown name or an object that is not a :class:`Judge`.
    """
    if isinstance(judge, str):
        if judge not in JUDGES:
            raise ValueError(f"unknown judge {judge!r}; choose from {sorted(JUDGES)} or pass "
                             "a Judge object")
        return JUDGES[judge]
    if not isinstance(judge, Judge):
        raise ValueError(f"judge must be a name in {sorted(JUDGES)} or a Judge (an object "
                         f"with a name that maps tasks and runs to judgements), not "
                         f"{type(judge).__name__}")
    return judge


def new_judgements(judge: Judge, inputs: Inputs) -> list[Judgement]:
    """The judgements ``judge`` gives the runs of ``inputs``, for every (run, dimension) not
    recorded there already: a recorded judgement is never replaced (``grade-kit judge`` and
    :func:`grade_kit.evaluate` both add these)."""
    recorded = {(j.run_id, j.dimension) for j in raw_records(inputs.judgements)}
    return [j for j in judge(inputs.tasks, inputs.runs)
            if (j.run_id, j.dimension) not in recorded]


def new_grades(grader: Grader, inputs: Inputs) -> list[Grade]:
    """The grade records ``grader`` writes for the runs of ``inputs`` without one: a recorded
    grade is never replaced (``grade-kit grade`` and :func:`grade_kit.evaluate` both add
    these)."""
    graded = {g.run_id for g in raw_records(inputs.grades)}
    return grader(inputs.tasks, select_records(inputs.runs, lambda r: r.run_id not in graded))


def grading_label(graders: Sequence[str]) -> str:
    """One sentence naming who graded, labelled an *internal consistency review* when every
    grader is a model (docs/methodology.md §4 "Model judges and graders")."""
    if not graders:
        return "No grader: every delivered run without a grade record is pending verification."
    names = ", ".join(graders)
    if all(g.startswith(MODEL_GRADER_PREFIXES) for g in graders):
        return (f"Graded by {names}: every grader is a model, so read these grades as an "
                "internal consistency review, not a verified grading.")
    return f"Graded by {names}."
