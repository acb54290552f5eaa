"""The embedded default's model verdicts: the demo server's judge model, asked over HTTP
through the same LLM judge and grader a team points at a real endpoint, with the bias
controls (aliases, pairwise in both orders, calibration samples) and a cache per kind."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from grade_kit.atomic import write_records
from grade_kit.judges.calibration_review import CalibrationReview, calibration_review
from grade_kit.judges.llm import LLMJudge
from grade_kit.judges.llm_grader import LLMGrader, PairwiseVerdict
from grade_kit.schema import Run, Task


@dataclass(frozen=True)
class DemoVerdicts:
    """Where the verdicts went, and what the bias controls found."""

    judgements: Path
    grades: Path
    pairwise: Path
    calibration: Path
    judge: str
    grader: str
    pairs: int
    flagged: int
    review: CalibrationReview


def setup_pairs(runs: Sequence[Run], repeat: int = 1) -> list[tuple[str, str]]:
    """Per task, every pair of setups' delivered primary answers on ``repeat`` (run ids,
    setups in alphabetical order)."""
    by_task: dict[str, dict[str, str]] = {}
    for run in runs:
        if (run.status == "delivered" and run.attempt_of is None and run.repeat == repeat
                and run.response is not None):
            by_task.setdefault(run.task_id, {})[run.setup] = run.run_id
    pairs = []
    for task_id in sorted(by_task):
        setups = sorted(by_task[task_id])
        pairs += [(by_task[task_id][a], by_task[task_id][b])
                  for i, a in enumerate(setups) for b in setups[i + 1:]]
    return pairs


def model_verdicts(url: str, model: str, tasks: Sequence[Task], runs: Sequence[Run],
                   out: Path, *, seed: int = 0, concurrency: int = 16,
                   progress: bool = True) -> DemoVerdicts:
    """Judge and grade ``runs`` by ``model`` at ``url`` and run the bias controls.

    Writes under ``out``: ``judgements.jsonl``, ``grades.jsonl`` (the records, read back by
    :func:`grade_kit.evaluate` like any recorded ones), ``pairwise.jsonl`` (each pair asked in
    both orders, flips flagged), ``calibration.md`` (the internal consistency review) and the
    verdict caches under ``out/cache``. ``progress`` shows the judge's and grader's bars;
    default True.
    """
    out.mkdir(parents=True, exist_ok=True)
    cache = out / "cache"
    judge = LLMJudge(url, model, cache=cache / "judge.jsonl", concurrency=concurrency,
                     seed=seed, progress=progress)
    grader = LLMGrader(url, model, cache=cache / "grader.jsonl", concurrency=concurrency,
                       seed=seed, progress=progress)
    paths = {name: out / name for name in ("judgements.jsonl", "grades.jsonl",
                                           "pairwise.jsonl", "calibration.md")}
    write_records(paths["judgements.jsonl"], judge(tasks, runs))
    write_records(paths["grades.jsonl"], grader(tasks, runs))
    verdicts: list[PairwiseVerdict] = grader.compare(tasks, runs, setup_pairs(runs))
    paths["pairwise.jsonl"].write_text("".join(
        json.dumps({"task_id": v.task_id, "run_a": v.run_a, "run_b": v.run_b,
                    "a_first": v.ab, "b_first": v.ba, "flagged": v.flagged,
                    "preferred": v.preferred, "reasons": list(v.reasons)}) + "\n"
        for v in verdicts), encoding="utf-8")
    review = calibration_review(tasks, runs, grader=grader, judge=judge, seed=seed)
    paths["calibration.md"].write_text(review.markdown(), encoding="utf-8")
    return DemoVerdicts(paths["judgements.jsonl"], paths["grades.jsonl"],
                        paths["pairwise.jsonl"], paths["calibration.md"], judge.name,
                        grader.name, len(verdicts), sum(v.flagged for v in verdicts), review)
