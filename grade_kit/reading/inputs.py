"""Everything an evaluation reads, validated: :class:`Inputs` and :func:`read_inputs`.

Inputs come from files (the CLI's paths), from in-memory records, or from another tool's logs
(:func:`grade_kit.read_inspect`, :func:`grade_kit.read_tau_bench`); all three meet the same
checks (docs/methodology.md §2), and every reject names its file (or ``<runs>``-style name),
line and field.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from grade_kit._gc import gc_paused
from grade_kit.frames import raw_records
from grade_kit.reading._fastread import LazyRecords
from grade_kit.reading.io import HeldRecords, Loaded, Records, Rejected, input_files
from grade_kit.reading.packed import StoreRuns
from grade_kit.reading.records import load_grades, load_judgements, load_runs
from grade_kit.reading.task_files import load_tasks
from grade_kit.schema import Grade, InputFile, Judgement, Run, Task, WarningItem


@dataclass(frozen=True, repr=False)
class Inputs:
    """Validated tasks, runs, judgements and grade records, with every reject and warning.

    Build one with :func:`read_inputs` (paths or records) or an importer; pass it to
    :func:`grade_kit.evaluate`. ``run_lines`` holds each run's source line; ``files`` what was
    read (path, SHA-256, records, rejected) for the results' provenance.
    """

    tasks: Sequence[Task]
    runs: Sequence[Run]
    judgements: Sequence[Judgement] = field(default_factory=list)
    grades: Sequence[Grade] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    warnings: list[WarningItem] = field(default_factory=list)
    run_lines: list[int | None] = field(default_factory=list)
    files: list[InputFile] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What an importer assumed (see docs/adapters.md); empty for native inputs."""
    stated_repeats: dict[str, int] = field(default_factory=dict)
    """R as the sources state it (what states it -> R; an Inspect log's epochs, a tau2 file's
    trials); the plan takes it when ``repeats`` is not given and every source agrees."""

    def _counts(self) -> str:
        if isinstance(self.runs, StoreRuns):  # counted when packed, not read again
            reruns, setups = self.runs.reruns, self.runs.setups
            verdicts = (f"{self.runs.judgements} judgements, {self.runs.grades} grade records "
                        f"(in the store)")
        elif isinstance(self.runs, HeldRecords) and self.runs.setups is not None:
            reruns, setups = self.runs.reruns or 0, self.runs.setups  # counted when held
            verdicts = f"{len(self.judgements)} judgements, {len(self.grades)} grade records"
        else:
            runs = raw_records(self.runs)
            reruns = sum(1 for r in runs if r.attempt_of is not None)
            setups = len({r.setup for r in runs})
            verdicts = f"{len(self.judgements)} judgements, {len(self.grades)} grade records"
        return (f"{len(self.tasks)} tasks, {len(self.runs)} runs ({reruns} re-runs) of "
                f"{setups} setups, {verdicts}, {len(self.rejected)} rejected, "
                f"{len(self.warnings)} warnings")

    def held(self) -> Inputs:
        """These inputs with their runs, judgements and grades held as records files in
        memory (:class:`~grade_kit.reading.io.HeldRecords`: compressed JSON texts, each
        record read back when asked for), for once they are flattened into frames; records
        held elsewhere already (a store, a scored folder) stay as they are."""
        def held(records: Sequence[Any], model: type[Run | Judgement | Grade]) -> Any:
            if isinstance(records, list) or type(records) is LazyRecords:
                return HeldRecords.of(records, model, f"{model.__name__.lower()} records "
                                                      "held in memory")
            return records
        return replace(self, runs=held(self.runs, Run),
                       judgements=held(self.judgements, Judgement),
                       grades=held(self.grades, Grade))

    def __repr__(self) -> str:
        return f"Inputs({self._counts()})"

    def _repr_html_(self) -> str:
        lines = [f"<p><b>Inputs</b>: {html.escape(self._counts())}</p>"]
        if self.rejected:
            items = "".join(f"<li>{html.escape(r.message())}</li>" for r in self.rejected[:10])
            more = (f"<li>… and {len(self.rejected) - 10} more</li>"
                    if len(self.rejected) > 10 else "")
            lines.append(f"<ul>{items}{more}</ul>")
        return "".join(lines)


def read_inputs(
    tasks: Records,
    runs: Records,
    *,
    judgements: Records | None = None,
    grades: Records | None = None,
    packs: Path | str | None = None,
) -> Inputs:
    """Read and validate an evaluation's inputs, keeping every reject.

    Runs are checked against the tasks that loaded, judgements and grade records against the
    runs that loaded, so a record that depends on a rejected one is rejected too, with its
    reason.

    Args:
        tasks: Folder of task files, a tasks JSONL file, or task records (mappings or
            :class:`~grade_kit.schema.Task`).
        runs: A runs JSONL file, a folder of them, a list of either, or run records.
        judgements: Recorded judgements, as files or records; default None (the judged
            dimensions stay null unless a judge fills them).
        grades: Grade records, as files or records; default None (every run ungraded).
        packs: Folder of packs for ``ground_truth`` keys; default found next to ``tasks``.

    Returns:
        The :class:`Inputs`; rejects are listed in file order, tasks first.
    """
    task_load = load_tasks(tasks, packs)
    with gc_paused():  # millions of small objects; see grade_kit._gc
        run_load = load_runs(runs, task_load.records)
        j_load = None if judgements is None else load_judgements(judgements, run_load.records)
        g_load = None if grades is None else load_grades(grades, run_load.records)
    parts: list[tuple[str, Loaded[Any]]] = [("tasks", task_load), ("runs", run_load)]
    j_records: Sequence[Judgement] = []
    g_records: Sequence[Grade] = []
    if j_load is not None:
        j_records = j_load.records
        parts.append(("judgements", j_load))
    if g_load is not None:
        g_records = g_load.records
        parts.append(("grades", g_load))
    rejected = [r for _, loaded in parts for r in loaded.rejected]
    files = [f for kind, loaded in parts
             for f in input_files(kind, loaded.sources, loaded.rejected)]
    return Inputs(tasks=task_load.records, runs=run_load.records, judgements=j_records,
                  grades=g_records, rejected=rejected, warnings=list(task_load.warnings),
                  run_lines=run_load.lines, files=files)
