"""What every adapter shares: the :class:`Imported` records, the outcome -> grade-record
mapping, merging several logs, and writing or validating the result."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from grade_kit.inputs import Inputs, read_inputs
from grade_kit.schema import Grade, InputFile, Run, Task, WarningItem

__all__ = ["Imported", "grade_for_outcome", "merge_imported", "to_inputs", "write_imported"]


@dataclass
class Imported:
    """Records converted from another tool's output, with notes on what was assumed."""

    tasks: list[Task] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)
    grades: list[Grade] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    label: str = ""
    """Names the source (its file name); used to tell apart logs that would collide."""
    stated_repeats: dict[str, int] = field(default_factory=dict)
    """R as each source states it (what states it -> R), for the plan (docs/methodology.md
    §4 "Rates")."""
    files: list[InputFile] = field(default_factory=list)
    """The logs read, each with its SHA-256 and the runs it gave (the provenance)."""


def grade_for_outcome(run_id: str, outcome: str, grader: str, reason: str) -> Grade:
    """A grade record for an imported pass/partial/fail outcome.

    ``resolved``: core correct, request met in full. ``partial``: core correct, request met in
    part. ``unresolved``: no gradable conclusion and request not met; the adapter never claims a
    material error the source did not state.
    """
    fields = {
        "resolved": ("correct", "full"),
        "partial": ("correct", "partial"),
        "unresolved": ("no_gradable_conclusion", "not_met"),
    }[outcome]
    return Grade.model_validate({"run_id": run_id, "core_conclusion": fields[0],
                                 "request_fulfilment": fields[1], "material_error": "no",
                                 "grader": grader, "reason": reason})


def merge_imported(parts: list[Imported]) -> Imported:
    """One :class:`Imported` from several; a task seen twice is kept once (the first).

    Two logs of the same setup, task and repeat (say, the same model run twice on the same
    task) would fill one slot twice; the later log's setup is then renamed
    ``<setup> [<label>]`` and a note says so, so that neither is lost nor mistaken for a
    re-run.
    """
    out = Imported()
    seen: set[str] = set()
    slots: set[tuple[str, str, int]] = set()
    for part in parts:
        mine = {(r.setup, r.task_id, r.repeat) for r in part.runs if r.attempt_of is None}
        if mine & slots:
            renamed = {r.setup for r in part.runs}
            for run in part.runs:
                run.setup = f"{run.setup} [{part.label}]"
            out.notes.append(f"{part.label}: fills the same (setup, task, repeat) slots as an "
                             f"earlier log; setup {sorted(renamed)} renamed with [{part.label}]")
            mine = {(r.setup, r.task_id, r.repeat) for r in part.runs if r.attempt_of is None}
        slots |= mine
        for task in part.tasks:
            if task.task_id not in seen:
                seen.add(task.task_id)
                out.tasks.append(task)
        out.runs.extend(part.runs)
        out.grades.extend(part.grades)
        out.notes.extend(part.notes)
        out.stated_repeats.update(part.stated_repeats)
        out.files.extend(part.files)
    return out


def write_imported(imported: Imported, out_dir: Path | str) -> dict[str, Path]:
    """Write ``tasks.jsonl``, ``runs.jsonl`` and ``grades.jsonl`` (and ``NOTES.md``)."""
    from grade_kit.atomic import atomic_write_text
    from grade_kit.report.markdown import md_cell

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {name: out / f"{name}.jsonl" for name in ("tasks", "runs", "grades")}
    for name, records in (("tasks", imported.tasks), ("runs", imported.runs),
                          ("grades", imported.grades)):
        lines = [json.dumps(r.model_dump(mode="json", exclude_none=name == "tasks",
                                         by_alias=False), ensure_ascii=False) + "\n"
                 for r in records]
        atomic_write_text(paths[name], "".join(lines))
    paths["notes"] = atomic_write_text(out / "NOTES.md", (
        "# Import notes\n\n"
        + "".join(f"- {md_cell(n)}\n" for n in dict.fromkeys(imported.notes))))
    return paths


def to_inputs(imported: Imported) -> Inputs:
    """The imported records as :class:`~grade_kit.inputs.Inputs`, validated by exactly the
    checks a file's records meet; every import note becomes a warning."""
    inputs = read_inputs(imported.tasks, imported.runs, grades=imported.grades)
    notes = [WarningItem(source=imported.label or None, message=n)
             for n in dict.fromkeys(imported.notes)]
    return Inputs(tasks=inputs.tasks, runs=inputs.runs, judgements=inputs.judgements,
                  grades=inputs.grades, rejected=inputs.rejected,
                  warnings=[*inputs.warnings, *notes], run_lines=inputs.run_lines,
                  files=[*imported.files, *inputs.files],
                  notes=list(dict.fromkeys(imported.notes)),
                  stated_repeats=dict(imported.stated_repeats))
