"""Load an evaluation from files and score it: the one path ``grade-kit score`` and the
notebooks share."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from grade_kit.frames import EvalData, verdict_frames
from grade_kit.grade import ClaimJudge, GradeScores, grade_scores
from grade_kit.io import Rejected, load_grades, load_judgements, load_runs, load_tasks
from grade_kit.schema import Grade, Judgement, Run, Task
from grade_kit.standard import StandardResults, standard_results

__all__ = ["Evaluation", "apply_judge", "load_evaluation", "score_evaluation",
           "standard_evaluation"]


@dataclass
class Evaluation:
    """Loaded records, their frames, and everything rejected or warned about on the way."""

    tasks: list[Task]
    runs: list[Run]
    judgements: list[Judgement]
    grades: list[Grade]
    data: EvalData
    rejected: list[Rejected] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)


def load_evaluation(
    tasks: Path | str,
    runs: Path | str | Sequence[Path | str],
    judgements: Path | str | None = None,
    grades: Path | str | None = None,
    packs: Path | str | None = None,
) -> Evaluation:
    """Load tasks, runs and (optionally) judgements and grades, keeping every reject.

    Runs are checked against the tasks that loaded, judgements and grades against the runs
    that loaded, so a record that depends on a rejected one is rejected too, with its reason.

    Args:
        tasks: Folder of task files, or a JSONL file of tasks.
        runs: JSONL file of run records, a folder of them, or a list of either.
        judgements: JSONL file of judgements; default None (judged dimensions stay null).
        grades: JSONL file of grades; default None.
        packs: Folder of packs for ``ground_truth`` keys; default found next to ``tasks``.

    Returns:
        The :class:`Evaluation`; rejects are listed in file order, tasks first.
    """
    task_load = load_tasks(tasks, packs)
    run_load = load_runs(runs, task_load.records)
    judgement_load = (load_judgements(judgements, run_load.records) if judgements else None)
    grade_load = load_grades(grades, run_load.records) if grades else None
    rejected = [*task_load.rejected, *run_load.rejected]
    j_records: list[Judgement] = []
    g_records: list[Grade] = []
    if judgement_load is not None:
        rejected.extend(judgement_load.rejected)
        j_records = judgement_load.records
    if grade_load is not None:
        rejected.extend(grade_load.rejected)
        g_records = grade_load.records
    data = EvalData.from_records(task_load.records, run_load.records, j_records, g_records,
                                 run_load.lines)
    run_paths = [runs] if isinstance(runs, str | Path) else list(runs)
    sources = {"tasks": str(tasks), "runs": ", ".join(map(str, run_paths))}
    if judgements:
        sources["judgements"] = str(judgements)
    if grades:
        sources["grades"] = str(grades)
    return Evaluation(
        tasks=task_load.records, runs=run_load.records, judgements=j_records,
        grades=g_records, data=data, rejected=rejected, warnings=task_load.warnings,
        sources=sources,
    )


def apply_judge(evaluation: Evaluation, judge: str) -> Evaluation:
    """Add a judge's judgements for every (run, dimension) that has no recorded one.

    Recorded judgements win over the judge's: a human's score is never replaced.

    Args:
        evaluation: The loaded evaluation (changed in place and returned).
        judge: A name in :data:`grade_kit.judges.JUDGES` (``rules``).
    """
    from grade_kit.judges import JUDGES

    if judge not in JUDGES:
        raise ValueError(f"unknown judge {judge!r}; choose from {sorted(JUDGES)}")
    recorded = {(j.run_id, j.dimension) for j in evaluation.judgements}
    added = [j for j in JUDGES[judge](evaluation.tasks, evaluation.runs)
             if (j.run_id, j.dimension) not in recorded]
    evaluation.judgements = [*evaluation.judgements, *added]
    evaluation.data.judgements = verdict_frames(evaluation.judgements)["judgements"]
    evaluation.sources["judge"] = judge
    return evaluation


def score_evaluation(evaluation: Evaluation, judge: ClaimJudge | None = None) -> GradeScores:
    """The GRADE scores of a loaded evaluation (see :func:`grade_kit.grade.grade_scores`)."""
    return grade_scores(evaluation.data, judge)


def standard_evaluation(evaluation: Evaluation, scores: GradeScores | None = None,
                        repeats: int | None = None) -> StandardResults:
    """The grading and timing standard of a loaded evaluation; with ``scores`` the common
    subset comparison includes GRADE composites."""
    composites = None if scores is None else scores.tasks
    return standard_results(evaluation.data, repeats, composites)
