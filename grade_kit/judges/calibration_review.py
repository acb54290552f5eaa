"""Calibration samples: the same facts in four forms, run through the same grader and judge,
kept apart from the real questions (docs/methodology.md §4 "Model judges and graders").

Per GRADE task, a seeded pick of one delivered answer with a finding is restated as:

- ``long``: the answer as delivered;
- ``short``: its findings and metrics only (limitations, recommendations and text dropped);
- ``paragraph``: its findings as one paragraph;
- ``table``: its findings as a Markdown table.

The facts do not change, so a grader that is not swayed by length or layout gives every form
of a sample the same grade. The **consistency figure** is the share of samples whose four
forms get the same derived grade; the judge's figure is the mean, over samples, of the
largest score spread across forms per dimension. Samples are runs of setup ``calibration``
with run ids ``calibration:<task>:<form>``; they never enter a run store, the grades or any
setup's statistics. When the grader is a model, the review is labelled an *internal
consistency review*: it checks the model against itself, not against people.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from grade_kit.exact import fmean
from grade_kit.frames import run_frames, verdict_frames
from grade_kit.judges import Grader, Judge
from grade_kit.schema import MODEL_GRADER_PREFIXES, Run, Task
from grade_kit.standard.blind.sheet import answer_text
from grade_kit.standard.grade_rates import run_grades

CALIBRATION_FORMS = ("long", "short", "paragraph", "table")
CALIBRATION_SETUP = "calibration"


def restated(run: Run, form: str) -> dict[str, Any]:
    """The response of ``run`` (delivered) restated in ``form`` of :data:`CALIBRATION_FORMS`,
    the facts unchanged: ``short`` drops limitations, recommendations and text; ``paragraph``
    and ``table`` put the findings in one finding, rendered as the blind sheet renders them
    (:func:`~grade_kit.standard.blind.sheet.answer_text`); ``long`` is the response itself."""
    assert run.response is not None
    response = run.response.model_dump(mode="json")
    if form == "short":
        return {**response, "limitations": [], "recommendations": [], "text": ""}
    if form in ("paragraph", "table"):
        return {**response, "key_findings": [answer_text(run, form)]}
    return response


def calibration_samples(tasks: Sequence[Task], runs: Sequence[Run], *, seed: int = 0
                        ) -> list[Run]:
    """The calibration samples: per GRADE task with a delivered primary answer that has a
    finding, one seeded pick restated in each of :data:`CALIBRATION_FORMS`.

    Args:
        tasks: The tasks.
        runs: The runs to pick from.
        seed: Seed of the picks (``random.Random(f"{seed}:{task_id}")``, so one task's pick
            does not depend on the others); default 0.
    """
    by_task: dict[str, list[Run]] = {}
    for run in runs:
        if (run.status == "delivered" and run.attempt_of is None and run.response is not None
                and any(f.strip() for f in run.response.key_findings)):
            by_task.setdefault(run.task_id, []).append(run)
    out = []
    for task in tasks:
        candidates = sorted(by_task.get(task.task_id, []), key=lambda r: r.run_id)
        if task.kind != "grade" or not candidates:
            continue
        pick = random.Random(f"{seed}:{task.task_id}").choice(candidates)
        for form in CALIBRATION_FORMS:
            out.append(Run.model_validate({
                "run_id": f"calibration:{task.task_id}:{form}", "setup": CALIBRATION_SETUP,
                "task_id": task.task_id, "repeat": 1, "status": "delivered",
                "response": restated(pick, form),
                "metadata": {"calibration_form": form}}))
    return out


@dataclass(frozen=True)
class CalibrationReview:
    """The calibration samples' verdicts and their consistency figures.

    ``frame`` has one row per sample and form: task_id, form, grade, core_conclusion,
    request_fulfilment and, when a judge ran, one column per judged dimension.
    """

    frame: pl.DataFrame
    samples: int
    consistent: int
    consistency: float | None
    """Share of samples whose forms all got the same grade (None without samples)."""
    judge_spread: dict[str, float | None]
    """Per judged dimension: mean over samples of the largest score spread across forms."""
    label: str
    graders: tuple[str, ...]

    def markdown(self) -> str:
        """The review as Markdown (title, figure, per-sample table)."""
        lines = [f"# {self.label.capitalize()}", ""]
        if self.label == "internal consistency review":
            lines += ["Every grader here is a model: this checks the model against itself "
                      "(the same facts in four forms), not against people.", ""]
        figure = "—" if self.consistency is None else f"{self.consistency:.3f}"
        lines += [f"Graders: {', '.join(self.graders) or '—'}. {self.samples} samples, each "
                  f"in {len(CALIBRATION_FORMS)} forms ({', '.join(CALIBRATION_FORMS)}); "
                  f"{self.consistent} got the same grade in every form: consistency "
                  f"{figure}.", ""]
        for dimension, spread in self.judge_spread.items():
            shown = "—" if spread is None else f"{spread:.3f}"
            lines.append(f"- Judge {dimension}: mean largest spread across forms {shown}.")
        if self.judge_spread:
            lines.append("")
        if self.samples:
            wide = (self.frame.pivot(on="form", index="task_id", values="grade")
                    .select("task_id", *CALIBRATION_FORMS).sort("task_id"))
            lines += ["| task | " + " | ".join(CALIBRATION_FORMS) + " |",
                      "|---" * (len(CALIBRATION_FORMS) + 1) + "|"]
            for row in wide.iter_rows():
                lines.append("| " + " | ".join(str(v) for v in row) + " |")
        return "\n".join(lines) + "\n"


def calibration_review(tasks: Sequence[Task], runs: Sequence[Run], *, grader: Grader,
                       judge: Judge | None = None, seed: int = 0) -> CalibrationReview:
    """Run the calibration samples of ``runs`` through ``grader`` (and ``judge``) and report
    their consistency (see the module docs).

    Args:
        tasks: The tasks.
        runs: The real runs (samples are picked from them and never added to them).
        grader: A :class:`~grade_kit.judges.Grader` (a model grader, usually).
        judge: A :class:`~grade_kit.judges.Judge` to check too; default None.
        seed: Seed of the picks; default 0.
    """
    samples = calibration_samples(tasks, runs, seed=seed)
    grades = grader(tasks, samples)
    frame = run_grades(run_frames(samples)["runs"], verdict_frames(grades=grades)["grades"])
    assert isinstance(frame, pl.DataFrame)
    frame = (frame.join(pl.DataFrame({"run_id": [s.run_id for s in samples],
                                      "form": [s.run_id.rsplit(":", 1)[1] for s in samples]},
                                     schema={"run_id": pl.String, "form": pl.String}),
                        on="run_id")
             .select("run_id", "task_id", "form", "grade", "core_conclusion",
                     "request_fulfilment"))
    spread: dict[str, float | None] = {}
    if judge is not None:
        judged = pl.DataFrame([{"run_id": j.run_id, "dimension": j.dimension, "score": j.score}
                               for j in judge(tasks, samples)],
                              schema={"run_id": pl.String, "dimension": pl.String,
                                      "score": pl.Float64})
        wide = judged.pivot(on="dimension", index="run_id", values="score")
        frame = frame.join(wide, on="run_id", how="left")
        for dimension in sorted(set(judged.get_column("dimension").to_list())):
            per_task = (frame.group_by("task_id")
                        .agg((pl.col(dimension).max() - pl.col(dimension).min()).alias("s")))
            values = per_task.get_column("s").drop_nulls().to_list()
            spread[dimension] = fmean(values) if values else None
    per_sample = frame.group_by("task_id").agg(pl.col("grade").n_unique().alias("kinds"))
    consistent = int(per_sample.filter(pl.col("kinds") == 1).height)
    names = tuple(sorted({g.grader for g in grades} or {getattr(grader, "name", "?")}))
    models_only = bool(names) and all(n.startswith(MODEL_GRADER_PREFIXES) for n in names)
    return CalibrationReview(
        frame=frame.sort("task_id", "form"), samples=per_sample.height, consistent=consistent,
        consistency=consistent / per_sample.height if per_sample.height else None,
        judge_spread=spread,
        label="internal consistency review" if models_only else "grader calibration check",
        graders=names)
