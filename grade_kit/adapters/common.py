"""What every adapter shares: the :class:`Imported` records, the outcome -> grade-record
mapping, the number checks, naming setups by what logs evaluate, merging several logs, and
writing or validating the result."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from grade_kit.reading.inputs import Inputs, read_inputs
from grade_kit.reading.io import Rejected
from grade_kit.reading.sniff import FileHead, LogKind, register_log_kind
from grade_kit.schema import (
    Grade,
    InputError,
    InputFile,
    Run,
    SourceRecord,
    Task,
    WarningItem,
)

SetupBy = Literal["auto", "model", "file"] | Mapping[str, str]
"""How logs group into setups (docs/adapters.md "Setups and questions"): ``auto`` (what they
evaluate: the model, and the configuration that differs between the model's logs over the
same questions), ``model`` (every log of a model is one setup), ``file`` (every log its own
setup, ``<model> [<file>]``), or a mapping from a log's file name to its setup name (logs it
does not name: ``auto``)."""

SETUP_BY = ("auto", "model", "file")

MAX_LOG_BYTES = 1 << 30
"""The most bytes one log may hold uncompressed (a ``.json`` file, or the members of an
``.eval`` read together): about 5x that in memory once parsed (docs/methodology.md §4
"Log bounds"). A larger log is refused naming the file: split it, or import it in parts."""


def question_id(dataset: str | None, sample: object) -> str:
    """The task id of a source's question as the source writes it: ``<dataset>/<sample
    id>``, or the sample id alone where the source names no dataset (docs/adapters.md
    "Setups and questions"). A sample id is taken as text: ``1`` and ``"1"`` are one.

    Two (dataset, sample) pairs can read the same (dataset ``pop/x`` sample ``1`` and
    dataset ``pop`` sample ``x/1``); where logs read together do, :func:`merge_imported`
    writes those ids with :func:`escaped_question_id` instead, so they stay two questions.
    """
    return "/".join(([] if dataset is None else [dataset]) + [str(sample)])


def escaped_question_id(dataset: str | None, sample: object) -> str:
    """:func:`question_id` with each part's ``%`` written ``%25`` and ``/`` written ``%2F``:
    a text no other (dataset, sample) pair has (dataset ``pop/x`` sample ``1`` is
    ``pop%2Fx/1``, dataset ``pop`` sample ``x/1`` is ``pop/x%2F1``)."""
    parts = ([] if dataset is None else [dataset]) + [str(sample)]
    return "/".join(p.replace("%", "%25").replace("/", "%2F") for p in parts)


def _sample_of(part: Imported, task_id: str) -> str:
    """The sample id of one of ``part``'s task ids (:func:`question_id` undone)."""
    return task_id if part.questions is None else task_id[len(part.questions) + 1:]


def _tell_colliding_questions_apart(parts: list[Imported]) -> list[str]:
    """Where two parts' (dataset, sample) pairs read as one task id, write every such id
    with :func:`escaped_question_id` (its tasks and runs), and say so; every other id stays
    as its source wrote it."""
    pairs: dict[str, set[tuple[str | None, str]]] = {}
    for part in parts:
        for task in part.tasks:
            pairs.setdefault(task.task_id, set()).add(
                (part.questions, _sample_of(part, task.task_id)))
    colliding = {task_id for task_id, found in pairs.items() if len(found) > 1}
    if not colliding:
        return []
    for part in parts:
        renamed = {t.task_id: escaped_question_id(part.questions, _sample_of(part, t.task_id))
                   for t in part.tasks if t.task_id in colliding}
        for task in part.tasks:
            task.task_id = renamed.get(task.task_id, task.task_id)
        for run in part.runs:
            run.task_id = renamed.get(run.task_id, run.task_id)
    shown = sorted(colliding)
    return [f"{len(shown)} question id(s) read the same for two (dataset, sample) pairs "
            f"({', '.join(shown[:3])}{' ...' if len(shown) > 3 else ''}): those are written "
            "with each part's '%' as %25 and '/' as %2F (dataset 'pop/x' sample '1' is "
            "'pop%2Fx/1'), so they stay apart; every other id is as its log wrote it"]


def log_json(data: bytes | str, what: str) -> Any:
    """``data`` parsed as JSON, for an adapter: nesting deeper than the decoder allows
    (about 1,000 levels) is a ``ValueError`` naming ``what``, never a ``RecursionError``."""
    try:
        return json.loads(data)
    except RecursionError as exc:
        raise ValueError(f"{what}: JSON nested deeper than the decoder allows (about 1,000 "
                         "levels)") from exc


def read_log_json(path: Path) -> Any:
    """A ``.json`` log read whole, within :data:`MAX_LOG_BYTES` (checked before reading)."""
    size = path.stat().st_size
    if size > MAX_LOG_BYTES:
        raise ValueError(f"{size:,} bytes, more than the {MAX_LOG_BYTES:,} one log may hold")
    return log_json(path.read_bytes(), "the log")


@dataclass
class Imported:
    """Records converted from another tool's output, with notes on what was assumed."""

    tasks: list[Task] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)
    grades: list[Grade] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    label: str = ""
    """Names the source (its file name)."""
    stated_repeats: dict[str, int] = field(default_factory=dict)
    """R as each source states it (what states it -> R), for the plan (docs/methodology.md
    §4 "Rates")."""
    files: list[InputFile] = field(default_factory=list)
    """The logs read, each with its SHA-256 and the runs it gave (the provenance)."""
    rejected: list[Rejected] = field(default_factory=list)
    """Records of the source refused, each naming the file and the field (a score that is
    not finite, a trial number that is not a whole number, ...): never coerced."""
    model: str = ""
    """What the source evaluated (its model): the first part of the setup's identity."""
    variant: dict[str, str] = field(default_factory=dict)
    """The configuration that can tell two setups of one model apart (task, task arguments,
    solver, generation settings), each as text."""
    questions: str | None = None
    """The dataset its question ids belong to (:func:`question_id`): logs of one model are
    told apart as setups only among logs over the same dataset; None where the source names
    none (its questions are its sample ids)."""
    created: str | None = None
    """When the source was made (Inspect's ``eval.created``): orders continuation logs."""
    fixed_setup: bool = False
    """The setup was given by the caller: naming leaves it as it is."""


@dataclass(frozen=True)
class Adapter:
    """Another tool's log format and how to read it (docs/adapters.md "Writing an adapter").

    Attributes:
        name: What ``grade-kit import NAME`` takes, and the kind the sniffer
            (:func:`~grade_kit.reading.sniff.file_kind`) gives its files (``inspect``,
            ``tau-bench``).
        describes: The format in words, for messages ("an Inspect AI log").
        suffixes: The suffixes of the files in a folder that may be such a log.
        recognises: Whether a file is such a log, from its head (a
            :class:`~grade_kit.reading.sniff.FileHead`): so ``grade-kit score LOG`` and
            :func:`grade_kit.evaluate` take it directly.
        read: One log file as :class:`Imported`: ``read(path, setup, options)`` where
            ``setup`` names every run's setup (None: the adapter's default, such as the
            model) and ``options`` are the caller's adapter options (``scorer``, ...). A
            ``ValueError``, ``KeyError``, ``TypeError``, ``IndexError``, ``AttributeError``
            or ``OSError`` it raises becomes one error naming the file.
    """

    name: str
    describes: str
    suffixes: tuple[str, ...]
    recognises: Callable[[FileHead], bool]
    read: Callable[[Path, str | None, Mapping[str, Any]], Imported]


ADAPTERS: dict[str, Adapter] = {}
"""Every registered adapter by name."""


def register_adapter(adapter: Adapter) -> Adapter:
    """Register ``adapter``: its files are then sniffed, scored directly and imported like
    the built-in ones (an adapter of the same name is replaced). Returns it."""
    register_log_kind(LogKind(adapter.name, adapter.describes, adapter.suffixes,
                              adapter.recognises))
    ADAPTERS[adapter.name] = adapter
    return adapter


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


def finite_number(value: Any) -> float | None:
    """``value`` as a float when it is a finite JSON number (not a boolean, not a string);
    else None: the one test every adapter applies to a score, reward or time."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def non_negative(value: Any) -> float | None:
    """``value`` as a float when it is a finite JSON number of at least 0 (a time, a limit's
    value), else None."""
    number = finite_number(value)
    return number if number is not None and number >= 0 else None


def whole_number(value: Any) -> int | None:
    """``value`` when it is a JSON integer (not a boolean, not a fraction, not a string),
    else None."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def _variant_label(key: str, value: str) -> str:
    text = value if key == "task" else f"{key}={value}"
    return text if len(text) <= 48 else text[:47] + "…"


def name_setups(parts: Sequence[Imported], setup_by: SetupBy = "auto") -> None:
    """Give every part's runs their setup (docs/adapters.md "Setups and questions").

    ``auto``: a setup is a model and the configuration that tells its logs over the same
    questions apart: the model's name alone when nothing does, else the model followed by
    the differing values in brackets (``gpt-4o [nl2bash_chat]``, ``o3 [temperature=0.7]``).
    Logs that agree on them are one setup, whatever file they are in.
    """
    mapping = dict(setup_by) if isinstance(setup_by, Mapping) else {}
    mode = "auto" if isinstance(setup_by, Mapping) else setup_by
    if mode not in SETUP_BY:
        raise ValueError(f"setup_by {mode!r}: one of {', '.join(SETUP_BY)}, or a mapping "
                         "from file name to setup")
    unknown = sorted(set(mapping) - {part.label for part in parts})
    if unknown:  # a mapping that names no log would leave its logs named another way
        raise InputError(f"the setup mapping names {len(unknown)} file(s) that are not among "
                         f"the logs: {', '.join(repr(u) for u in unknown[:5])}"
                         f"{' ...' if len(unknown) > 5 else ''} (the logs: "
                         f"{', '.join(sorted(part.label for part in parts)[:10])})")
    groups: dict[tuple[str, str | None], list[Imported]] = {}
    for part in parts:
        groups.setdefault((part.model, part.questions), []).append(part)
    differing: dict[str, set[str]] = {}
    for (model, _), members in groups.items():
        keys = {k for m in members for k in m.variant}
        differing.setdefault(model, set()).update(
            k for k in keys if len({m.variant.get(k, "") for m in members}) > 1)
    for part in parts:
        if part.fixed_setup:
            continue
        if part.label in mapping:
            name = mapping[part.label]
        elif mode == "model":
            name = part.model
        elif mode == "file":
            name = f"{part.model} [{part.label}]"
        else:
            order = sorted(differing.get(part.model, set()))
            name = part.model + (" [" + ", ".join(_variant_label(k, part.variant.get(k, "-"))
                                                  for k in order) + "]" if order else "")
        for run in part.runs:
            run.setup = name


def one_source_metric_per_scorer(parts: Sequence[Imported]) -> None:
    """One name for a scorer's metric within a setup (docs/adapters.md "The source's own
    metric"): where logs of one setup name a scorer's metric differently (a complete log
    reports ``accuracy``, a cancelled one reports nothing, read as ``mean``), every run of
    that setup and scorer takes the name the logs give it most (ties: the first by name),
    so the setup has one figure per scorer over all its questions. Runs say their scorer in
    ``metadata["scorer"]`` and whether their log named the metric in
    ``metadata["metric_named_by_log"]``; others are left as they are."""
    groups: dict[tuple[str, str], list[tuple[SourceRecord, bool]]] = {}
    for part in parts:
        for run in part.runs:
            scorer = run.metadata.get("scorer")
            if run.source is not None and run.source.metric is not None and scorer:
                groups.setdefault((run.setup, str(scorer)), []).append(
                    (run.source, bool(run.metadata.get("metric_named_by_log"))))
    for sources in groups.values():
        named = Counter(source.metric for source, by_log in sources if by_log)
        if named:
            chosen = min(named, key=lambda name: (-named[name], str(name)))
            for source, _ in sources:
                source.metric = chosen


def _in_time_order(attempts: list[Run]) -> list[Run]:
    """The attempts of one slot by when each was submitted, where every one records it (ties
    and otherwise: in the order of their logs)."""
    instants = [r.events.get("submitted") for r in attempts]
    if any(i is None for i in instants):
        return attempts
    order = sorted(range(len(attempts)),
                   key=lambda k: datetime.fromisoformat(str(instants[k])))
    return [attempts[k] for k in order]


def merge_imported(parts: list[Imported]) -> Imported:
    """One :class:`Imported` from several (their setups already named, :func:`name_setups`);
    a task seen twice is kept once (the first), and a later log that gives it another gold
    answer is named in a note.

    Logs are taken in the order they were made (``created``, where every log states it; else
    as given). A (setup, task, repeat) slot that several logs fill is one slot: its primary
    run is the latest *complete* attempt (delivered or stopped by a limit), else the latest
    attempt; every other one names it in ``attempt_of`` (listed, never counted). Each setup
    made of more than one log gets one note naming its files and the samples they repeat.
    Within a slot the attempts are ordered by when each was submitted (where all record it).
    An attempt that a later log carries over unchanged (the same Inspect sample ``uuid``, as
    ``eval-retry`` copies completed samples) is one attempt, kept once (the later copy).
    A run id an earlier log already used (a retry log that keeps its original's ids) becomes
    ``<run_id>@<file name>``, its grades with it. Question ids stay as the logs wrote them,
    but where two (dataset, sample) pairs would read the same (those alone escaped,
    :func:`escaped_question_id`).
    """
    out = Imported()
    if all(p.created for p in parts):
        parts = sorted(parts, key=lambda p: str(p.created))
    out.notes.extend(_tell_colliding_questions_apart(parts))
    seen: dict[str, tuple[Task, str]] = {}  # task id -> the task kept, and its log
    golds: dict[tuple[str, str], list[str]] = {}  # (first log, later log) -> ids they differ on
    slots: dict[tuple[str, str, int], list[Run]] = {}
    files: dict[str, list[str]] = {}
    run_ids: set[str] = set()
    for part in parts:
        renamed = {r.run_id: f"{r.run_id}@{part.label}" for r in part.runs
                   if r.run_id in run_ids}  # a log that reuses its original's ids (a retry)
        for run in part.runs:
            run.run_id = renamed.get(run.run_id, run.run_id)
            run_ids.add(run.run_id)
        for grade in part.grades:
            grade.run_id = renamed.get(grade.run_id, grade.run_id)
        for run in part.runs:
            if run.attempt_of is None:
                slots.setdefault((run.setup, run.task_id, run.repeat), []).append(run)
        for setup in dict.fromkeys(r.setup for r in part.runs):
            files.setdefault(setup, []).append(part.label)
        for task in part.tasks:
            if task.task_id not in seen:
                seen[task.task_id] = (task, part.label)
                out.tasks.append(task)
            elif task.reference != seen[task.task_id][0].reference:
                golds.setdefault((seen[task.task_id][1], part.label), []).append(task.task_id)
        out.runs.extend(part.runs)
        out.grades.extend(part.grades)
        out.notes.extend(part.notes)
        out.stated_repeats.update(part.stated_repeats)
        out.files.extend(part.files)
        out.rejected.extend(part.rejected)
    repeated: dict[str, int] = {}
    copies: set[int] = set()  # the same attempt carried into a later log (Inspect's retry)
    for (setup, _, _), attempts in slots.items():
        if len(attempts) < 2:
            continue
        ordered = _in_time_order(attempts)
        latest = {r.metadata.get("sample_uuid") or f"run:{r.run_id}": r for r in ordered}
        kept = [r for r in ordered if any(r is k for k in latest.values())]
        copies.update(id(r) for r in ordered if all(r is not k for k in kept))
        complete = [r for r in kept if r.status in ("delivered", "limit")]
        primary = (complete or kept)[-1]
        for run in kept:
            if run is not primary:
                run.attempt_of = primary.run_id
        if len(kept) > 1:
            repeated[setup] = repeated.get(setup, 0) + 1
    carried: dict[str, int] = {}
    for run in out.runs:
        if id(run) in copies:
            carried[run.setup] = carried.get(run.setup, 0) + 1
    if copies:
        dropped = {r.run_id for r in out.runs if id(r) in copies}
        out.runs = [r for r in out.runs if id(r) not in copies]
        out.grades = [g for g in out.grades if g.run_id not in dropped]
    for setup, names in files.items():
        if len(names) > 1:
            n = repeated.get(setup, 0)
            out.notes.append(
                f"setup {setup!r}: {len(names)} logs merged ({', '.join(names)}); "
                + (f"{n} sample(s) run in more than one of them: the latest complete attempt "
                   "counts, the others are listed as its attempts" if n
                   else "no sample is in more than one of them")
                + (f"; {carried[setup]} completed sample(s) carried over unchanged by a retry "
                   "log (the same sample uuid) are counted once" if carried.get(setup)
                   else ""))
    for (earlier, later), ids in golds.items():
        out.notes.append(
            f"{later} gives {len(ids)} question(s) another gold answer than {earlier} does "
            f"({', '.join(ids[:3])}{' ...' if len(ids) > 3 else ''}): the first log's is kept; "
            "if they are different datasets whose sample ids coincide, name each log's "
            "dataset (docs/adapters.md \"Setups and questions\")")
    return out


def write_imported(imported: Imported, out_dir: Path | str) -> dict[str, Path]:
    """Write ``tasks.jsonl``, ``runs.jsonl`` and ``grades.jsonl`` (and ``NOTES.md``)."""
    from grade_kit.atomic import atomic_write_text
    from grade_kit.text import md_cell

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
        + "".join(f"- {md_cell(n)}\n" for n in dict.fromkeys(imported.notes))
        + ("\n## Rejected\n\n" + "".join(f"- {md_cell(r.message())}\n"
                                          for r in imported.rejected)
           if imported.rejected else "")))
    return paths


def to_inputs(imported: Imported) -> Inputs:
    """The imported records as :class:`~grade_kit.reading.inputs.Inputs`, validated by exactly the
    checks a file's records meet; every import note becomes a warning."""
    inputs = read_inputs(imported.tasks, imported.runs, grades=imported.grades)
    notes = [WarningItem(source=imported.label or None, message=n)
             for n in dict.fromkeys(imported.notes)]
    return Inputs(tasks=inputs.tasks, runs=inputs.runs, judgements=inputs.judgements,
                  grades=inputs.grades, rejected=[*imported.rejected, *inputs.rejected],
                  warnings=[*inputs.warnings, *notes], run_lines=inputs.run_lines,
                  files=[*imported.files, *inputs.files],
                  notes=list(dict.fromkeys(imported.notes)),
                  stated_repeats=dict(imported.stated_repeats))
