"""Load runs, judgements and grades: their files, the checks across lines (a known task, a
first run_id, one primary attempt per slot, a re-run naming an accepted run of its slot, one
verdict per run and dimension; docs/methodology.md §2 and §6), each applied as a line is read.
"""

from __future__ import annotations

from collections.abc import Container, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

from pydantic import BaseModel

from grade_kit.frames import raw_records
from grade_kit.reading._fastread import LazyRecords
from grade_kit.reading.io import (
    Check,
    Line,
    Loaded,
    Records,
    Rejected,
    file_lines,
    is_in_memory,
    memory_lines,
    read_jsonl,
    record_lines,
)
from grade_kit.reading.sniff import file_kind, log_files, not_runs_error
from grade_kit.schema import Grade, InputError, Judgement, Run, Task

Model = TypeVar("Model", bound=BaseModel)


def run_files(paths: Path | str | Sequence[Path | str]) -> list[Path]:
    """The JSONL files named by ``paths``: files as given, folders as their ``*.jsonl``
    files in name order."""
    items = [paths] if isinstance(paths, str | Path) else list(paths)
    out: list[Path] = []
    for item in map(Path, items):
        if item.is_dir():
            found = sorted(item.glob("*.jsonl"))
            if not found:
                logs = _log_folder_hint(item)
                raise InputError(f"{item}: folder holds no .jsonl run files" + logs)
            out.extend(found)
        else:
            out.append(item)
    for path in out:
        if path.is_file():
            problem = not_runs_error(path, file_kind(path))
            if problem is not None:
                raise InputError(problem)
    return out


def _log_folder_hint(folder: Path) -> str:
    """What to do with a folder of other tools' logs given as runs (or nothing)."""
    try:
        found = log_files(folder)
    except ValueError:
        return ""
    if found is None:
        return ""
    return (f" but {found[0]} logs: score them directly (grade-kit score {folder} --out DIR) "
            f"or import them first (grade-kit import {found[0]} {folder} --out DIR)")


def record_sources(given: Records, name: str) -> list[tuple[str, Iterator[Line]]]:
    """(source name, lines) of JSONL files, records Parquet files (a ``.parquet`` file's
    :data:`~grade_kit.reading.io.RECORD_COLUMN`, numbered by row: a scored folder's state) or
    in-memory records; in-memory records are named ``<name>`` and numbered from 1."""
    if is_in_memory(given):
        return [(f"<{name}>",
                 memory_lines(cast(Sequence[Mapping[str, Any] | BaseModel], given)))]
    if isinstance(given, str | Path) and Path(given).suffix == ".parquet":
        return [(str(given), record_lines(Path(given)))]
    paths = cast(Path | str | Sequence[Path | str], given)
    return [(str(path), iter(file_lines(path))) for path in run_files(paths)]


class RunChecks:
    """The checks a run line meets beyond its model, with their state across lines and files
    (docs/methodology.md §2): a known task, a first run_id, one primary attempt per slot, and
    (in a second pass, :meth:`rerun_pass`) a re-run naming an accepted run of its slot.

    :func:`load_runs` uses one for a whole input; ``grade-kit pack`` feeds it chunk by chunk.
    Its state is one entry per accepted run (its id and where it was seen).
    """

    def __init__(self, tasks: Sequence[Task] | None, n_sources: int) -> None:
        self.task_ids = None if tasks is None else {t.task_id for t in tasks}
        self.n_sources = n_sources
        self.seen_ids: dict[str, str] = {}
        self.slots: dict[tuple[str, str, int], tuple[str, str]] = {}
        self.rerun_texts: dict[tuple[str, int], str] = {}

    def checker(self, source: str) -> Check:
        """The first-pass check of lines from ``source``."""
        where = Path(source).name if self.n_sources > 1 else "line"

        def check(run: Any, line: int, text: str) -> tuple[str | None, str] | None:
            at = f"{where} {line}" if where == "line" else f"{where}:{line}"
            if self.task_ids is not None and run.task_id not in self.task_ids:
                return "task_id", f"unknown task {run.task_id!r}"
            if run.run_id in self.seen_ids:
                return "run_id", (f"duplicate run_id {run.run_id!r} "
                                  f"(first on {self.seen_ids[run.run_id]})")
            if run.attempt_of is None:
                slot = (run.setup, run.task_id, run.repeat)
                if slot in self.slots:
                    first_id, first_at = self.slots[slot]
                    return "attempt_of", (
                        f"second primary attempt for setup {run.setup!r}, task "
                        f"{run.task_id!r}, repeat {run.repeat} (run {first_id!r} on {first_at} "
                        "fills it; a re-run must name it in attempt_of)"
                    )
                self.slots[slot] = (run.run_id, at)
            else:
                self.rerun_texts[(source, line)] = text
            self.seen_ids[run.run_id] = at
            return None

        return check

    @staticmethod
    def rerun_problem(run: Any, slot_of: Mapping[str, tuple[str, str, int]]) -> str | None:
        """Why re-run ``run`` is rejected in the second pass (None when it is not a re-run or
        names an accepted run of its own slot); ``slot_of`` maps every run accepted in the
        first pass to its (setup, task_id, repeat)."""
        if run.attempt_of is None:
            return None
        target = slot_of.get(run.attempt_of)
        if target is None or run.attempt_of == run.run_id:
            return f"attempt_of {run.attempt_of!r} names no accepted run"
        if target != (run.setup, run.task_id, run.repeat):
            return f"attempt_of {run.attempt_of!r} names a run of another setup, task or repeat"
        return None

    def rerun_pass(self, runs: Sequence[Any], lines: Sequence[int | None],
                   sources: Sequence[str],
                   slot_of: Mapping[str, tuple[str, str, int]] | None = None,
                   ) -> tuple[list[int], list[Rejected]]:
        """The second pass over first-pass-accepted ``runs`` (with their lines and sources):
        the indices of those that stand, and the rejects of re-runs naming no accepted run
        of their slot. ``slot_of`` maps every run accepted in the first pass to its slot;
        default: built from ``runs`` (when they are all of them)."""
        if slot_of is None:
            slot_of = {run.run_id: (run.setup, run.task_id, run.repeat) for run in runs}
        kept: list[int] = []
        rejected: list[Rejected] = []
        for index, (run, line, source) in enumerate(zip(runs, lines, sources, strict=True)):
            why = self.rerun_problem(run, slot_of)
            if why is None:
                kept.append(index)
            else:
                rejected.append(Rejected(source, line, "attempt_of", why,
                                         self.rerun_texts.get((source, line or 0), "")))
        return kept, rejected


def load_runs(paths: Records, tasks: Sequence[Task] | None = None) -> Loaded[Run]:
    """Load run records (one attempt per JSONL line, docs/methodology.md §2) from one or more
    files, or from in-memory records.

    Rejected, naming the file, line and field: malformed JSON; a missing or mistyped field; a
    naive timestamp; a delivered run without a response; a task_id not among ``tasks``; a
    run_id seen before, in any of the files (the first stands); a second primary attempt for a
    (setup, task, repeat) slot already filled; a re-run whose ``attempt_of`` names no accepted
    run of the same slot.

    Args:
        paths: A JSONL file, a folder of them, a list of either, or in-memory run records
            (mappings or :class:`~grade_kit.schema.Run`; named ``<runs>`` in rejects).
        tasks: The loaded tasks; when None, task ids are not checked.

    Returns:
        Accepted runs in file order, their lines, and the rejects.
    """
    sources_ = record_sources(paths, "runs")
    checks = RunChecks(tasks, len(sources_))
    accepted: list[Any] = []  # Run structs and models, read by field names only
    lines: list[int | None] = []
    sources: list[str] = []
    rejected: list[Rejected] = []
    for source, source_lines in sources_:
        part = read_jsonl(source, source_lines, Run, checks.checker(source))
        accepted.extend(part.records)
        lines.extend(part.lines)
        rejected.extend(part.rejected)
        sources.extend(part.sources)
    # Second pass: a re-run must name an accepted run of the same slot.
    keep, rerun_rejects = checks.rerun_pass(accepted, lines, sources)
    out: Loaded[Run] = Loaded(records=LazyRecords(Run, [accepted[i] for i in keep]),
                              rejected=[*rejected, *rerun_rejects])
    out.lines.extend(lines[i] for i in keep)
    out.sources.extend(sources[i] for i in keep)
    out.rejected.sort(key=lambda r: (r.source, r.line or 0))
    return out


def _load_verdicts(given: Records, name: str, model: type[Model],
                   runs: Sequence[Run] | None) -> Loaded[Model]:
    """Judgement or grade records (``name``) checked by a :class:`VerdictCheck` against the
    ids of ``runs`` (the loaded runs; None: every run is known)."""
    check = VerdictCheck(name, None if runs is None else {r.run_id for r in raw_records(runs)})
    kept: list[Any] = []
    out: Loaded[Model] = Loaded(records=LazyRecords(model, kept))
    for source, lines in record_sources(given, name):
        part = read_jsonl(source, lines, model, check.check)
        kept.extend(part.records)
        out.lines.extend(part.lines)
        out.sources.extend(part.sources)
        out.rejected.extend(part.rejected)
    return out


class VerdictCheck:
    """The checks of judgement and grade records beyond their model (docs/methodology.md
    §6), one line at a time as :class:`RunChecks`' are: a known run (when the runs are
    given), and one judgement per (run, dimension) or one grade per run, the first standing.
    What stood is remembered across lines and files.

    Args:
        kind: ``judgements`` or ``grades``.
        run_ids: The ids of the runs that loaded, or None (every run is known).
    """

    def __init__(self, kind: str, run_ids: Container[str] | None) -> None:
        if kind not in ("judgements", "grades"):
            raise ValueError(f"no verdict kind {kind!r}")
        self.kind = kind
        self._run_ids = run_ids
        self._first: dict[Any, int | None] = {}
        """The line of each standing verdict, by (run_id, dimension) or run_id."""

    def check(self, verdict: Any, line: int | None,
              text: str = "") -> tuple[str | None, str] | None:
        """None when ``verdict`` (read on ``line``) stands, else (field, reason): a verdict of a
        run not loaded: ``run_id`` "unknown run 'r'"; a second judgement of a (run,
        dimension): ``dimension`` "second d judgement for run 'r' (first on line n)"; a
        second grade of a run: ``run_id`` "duplicate grade for run 'r' on lines n and m"."""
        run_id = verdict.run_id
        if self._run_ids is not None and run_id not in self._run_ids:
            return "run_id", f"unknown run {run_id!r}"
        key = (run_id, verdict.dimension) if self.kind == "judgements" else run_id
        if key not in self._first:
            self._first[key] = line
            return None
        first = self._first[key]
        if self.kind == "judgements":
            return "dimension", (f"second {verdict.dimension} judgement for run {run_id!r} "
                                 f"(first on line {first})")
        return "run_id", f"duplicate grade for run {run_id!r} on lines {first} and {line}"


def load_judgements(path: Records, runs: Sequence[Run] | None = None) -> Loaded[Judgement]:
    """Load recorded judgements (files, folders or in-memory records); an unknown run_id or a
    repeated (run_id, dimension) is rejected."""
    return _load_verdicts(path, "judgements", Judgement, runs)


def load_grades(path: Records, runs: Sequence[Run] | None = None) -> Loaded[Grade]:
    """Load grade records (files, folders or in-memory records); an unknown run_id is rejected,
    and a second grade record for a run is an error that names both lines (the first
    stands)."""
    return _load_verdicts(path, "grades", Grade, runs)
