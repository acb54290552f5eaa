"""Load tasks, runs, judgements and grades, keeping every bad record with file, line and field.

docs/methodology.md §6: bad input anywhere gives a clear error naming file, line and field; the good
records go on; the bad ones are kept verbatim (:func:`write_rejects`) and counted in the report.
Nothing is dropped silently.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import stat
from collections import Counter
from collections.abc import Callable, Container, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar, cast

import yaml
from pydantic import BaseModel, ValidationError

from grade_kit._fastread import LazyRecords, decode_fast, raw_records, struct_of
from grade_kit._gc import gc_paused
from grade_kit.parse import (
    ParseError,
    Undecodable,
    loads_json,
    loads_yaml,
    read_lines,
    read_text,
)
from grade_kit.schema import Grade, InputFile, Judgement, Reject, Run, Task, WarningItem
from grade_kit.sniff import file_kind, log_files, not_runs_error

__all__ = [
    "InputError",
    "Loaded",
    "Records",
    "Rejected",
    "describe_validation_error",
    "find_packs_dir",
    "input_files",
    "is_in_memory",
    "load_grades",
    "load_judgements",
    "load_runs",
    "load_tasks",
    "read_jsonl",
    "record_sources",
    "run_files",
    "task_as_data",
    "write_rejects",
]

TASK_SUFFIXES = (".yaml", ".yml", ".json")
Model = TypeVar("Model", bound=BaseModel)
T = TypeVar("T")

Records = Path | str | Sequence[Path | str] | Sequence[Mapping[str, Any] | BaseModel]
"""What a loader takes: a file, a folder, a list of either, or in-memory records (mappings or
validated models, checked by exactly the rules a file's lines are)."""

Line = tuple[int, str]
"""A 1-based line number and the line's text (an in-memory record is serialised to JSON, so it
meets exactly the checks a file's line does)."""


def is_in_memory(given: object) -> bool:
    """Whether ``given`` is a sequence of in-memory records rather than paths (an empty
    sequence is no records)."""
    if isinstance(given, str | Path) or not isinstance(given, Sequence):
        return False
    return not given or any(isinstance(item, Mapping | BaseModel) for item in given)


def _memory_lines(records: Sequence[Mapping[str, Any] | BaseModel]) -> Iterator[Line]:
    for number, record in enumerate(records, start=1):
        data = record.model_dump(mode="json") if isinstance(record, BaseModel) else record
        yield number, json.dumps(data, ensure_ascii=False, default=str)


class InputError(Exception):
    """An input that cannot be read at all (missing file or folder)."""


@dataclass(frozen=True)
class Rejected:
    """A rejected record: its source file, 1-based line (None for a whole file), field, reason
    and the record verbatim."""

    source: str
    line: int | None
    field: str | None
    error: str
    raw: str

    def message(self) -> str:
        """``file:line: field 'x': reason``, the form every error is shown in."""
        where = self.source if self.line is None else f"{self.source}:{self.line}"
        what = f"field '{self.field}': " if self.field else ""
        return f"{where}: {what}{self.error}"

    def as_reject(self) -> Reject:
        """The record as listed under ``rejected`` in results.json (without the raw text)."""
        return Reject(source=self.source, line=self.line, field=self.field, error=self.error)


@dataclass
class Loaded(Generic[T]):
    """Records that loaded, with their source lines, and those that were rejected."""

    records: Sequence[T] = field(default_factory=list)
    """The records: a list, or for runs, judgements and grades a
    :class:`~grade_kit._fastread.LazyRecords` (models built on first access)."""
    lines: list[int | None] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    """The file (or ``<runs>``-style name) each record came from."""
    rejected: list[Rejected] = field(default_factory=list)
    warnings: list[WarningItem] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.records)


# --------------------------------------------------------------------------- helpers


def _loc(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        if part == "[key]":  # pydantic's marker for a bad mapping key
            continue
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def describe_validation_error(exc: ValidationError) -> tuple[str | None, str]:
    """(field, message) of a pydantic error, the one wording every loader uses: the first
    error's dotted field, "missing required field" or pydantic's message with the bad input,
    and how many more errors the record has."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    msg = first["msg"].removeprefix("Value error, ")
    if first["type"] == "missing":
        msg = "missing required field"
    elif "input" in first and first["type"] != "value_error":
        msg = f"{msg} (got {json.dumps(first['input'], default=str)[:80]})"
    if len(errors) > 1:
        others = ", ".join(_loc(e["loc"]) or "record" for e in errors[1:4])
        msg += f" (and {len(errors) - 1} more: {others})"
    return _loc(first["loc"]) or None, msg


def _validation_reject(source: str, line: int | None, raw: str,
                       exc: ValidationError) -> Rejected:
    field_name, msg = describe_validation_error(exc)
    return Rejected(source, line, field_name, msg, raw)


def _iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    if not path.is_file():
        raise InputError(f"{path}: no such file (or not a regular file)")
    try:
        yield from read_lines(path)
    except OSError as exc:
        raise InputError(f"{path}: cannot be read: {exc.strerror or exc}") from exc


Check = Callable[[Any, int, str], tuple[str | None, str] | None]
"""A loader's own check of a record that passed its model (a model or its fast struct, read
by field names only): None, or the (field, reason) of a reject."""


def read_jsonl(
    source: str,
    lines: Iterator[Line],
    model: type[Model],
    check: Check | None = None,
) -> Loaded[Any]:
    """Validate each line as ``model`` (a run, judgement or grade); ``check`` may reject
    more. A line is first tried as the model's struct
    (:func:`~grade_kit._fastread.decode_fast`); the records are structs where that
    succeeded, models elsewhere."""
    records: list[Any] = []
    out: Loaded[Any] = Loaded(records=records)
    with gc_paused():
        _validate_lines(lines, source, model, check, out, records)
    return out


def record_sources(given: Records, name: str) -> list[tuple[str, Iterator[Line]]]:
    """(source name, lines) of JSONL files or in-memory records; in-memory records are named
    ``<name>`` and numbered from 1."""
    if is_in_memory(given):
        return [(f"<{name}>",
                 _memory_lines(cast(Sequence[Mapping[str, Any] | BaseModel], given)))]
    paths = cast(Path | str | Sequence[Path | str], given)
    return [(str(path), iter(_iter_lines(path))) for path in run_files(paths)]


def _validate_lines(
    lines: Iterator[Line],
    source: str,
    model: type[Model],
    check: Check | None,
    out: Loaded[Any],
    records: list[Any],
) -> None:
    fast = struct_of(model)
    for number, text in lines:
        record: Any = None
        if not isinstance(text, Undecodable):
            record = decode_fast(text, fast)
        if record is None:
            record = _reference_record(source, number, text, model, out)
            if record is None:
                continue
        if check is not None:
            problem = check(record, number, text)
            if problem is not None:
                out.rejected.append(Rejected(source, number, problem[0], problem[1], text))
                continue
        records.append(record)
        out.lines.append(number)
        out.sources.append(source)


def _reference_record(source: str, number: int, text: str, model: type[Model],
                      out: Loaded[Any]) -> Model | None:
    """The reference path: strict JSON, then the pydantic model; a reject is recorded in
    ``out`` (and None returned)."""
    try:
        data = loads_json(text)
    except ParseError as exc:
        out.rejected.append(Rejected(source, number, None, str(exc), text))
        return None
    if not isinstance(data, dict):
        out.rejected.append(Rejected(source, number, None, "a record must be a JSON object",
                                     text))
        return None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        out.rejected.append(_validation_reject(source, number, text, exc))
        return None


def sha256_of(path: Path | str) -> str:
    """The SHA-256 of the file at ``path``, as hex."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def input_files(kind: str, sources: Sequence[str],
                rejected: Sequence[Rejected]) -> list[InputFile]:
    """The provenance of what was read (results.json ``provenance.inputs``): one entry per
    source, in first-seen order (sources of accepted records, then of rejects only), with
    its SHA-256 (files only), records and rejects.

    Args:
        kind: ``tasks``, ``runs``, ``judgements`` or ``grades``.
        sources: The source of every accepted record, in reading order.
        rejected: The rejects.
    """
    order = list(dict.fromkeys([*sources, *(r.source for r in rejected)]))
    counts = Counter(sources)
    bad = Counter(r.source for r in rejected)
    out = []
    for source in order:
        path = Path(source)
        out.append(InputFile(
            kind=kind, path=source,
            sha256=(sha256_of(path) if not source.startswith("<") and path.is_file()
                    else None),
            records=counts[source], rejected=bad[source]))
    return out


def write_rejects(path: Path, rejected: Sequence[Rejected]) -> Path:
    """Write rejected records as JSONL: ``{source, line, field, error, raw}``, raw verbatim."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for item in rejected:
            handle.write(
                json.dumps(
                    {"source": item.source, "line": item.line, "field": item.field,
                     "error": item.error, "raw": item.raw},
                    ensure_ascii=False,
                )
                + "\n"
            )
    return path


# --------------------------------------------------------------------------- tasks


def find_packs_dir(tasks_path: Path) -> Path | None:
    """Where the packs' ground_truth.json files are looked for when no folder is given.

    Tried in order: ``<tasks>/../packs`` and ``<tasks>/packs`` (for a tasks file, its folder
    stands for ``<tasks>``). Returns the first that exists, else None.
    """
    base = tasks_path if tasks_path.is_dir() else tasks_path.parent
    for candidate in (base.parent / "packs", base / "packs"):
        if candidate.is_dir():
            return candidate
    return None


def _yaml_line(text: str, loc: Sequence[int | str]) -> int | None:
    """1-based line of the node at ``loc`` in a YAML/JSON document, best effort."""
    try:
        node: Any = yaml.compose(text)
    except (yaml.YAMLError, RecursionError):
        return None
    line = None if node is None else node.start_mark.line + 1
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            match = [v for k, v in node.value if getattr(k, "value", None) == part]
            if not match:
                break
            node = match[0]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                break
            node = node.value[part]
        else:
            break
        line = node.start_mark.line + 1
    return line


def _lookup(data: Any, dotted: str) -> Any:
    if isinstance(data, dict) and dotted in data:
        return data[dotted]
    node = data
    for part in dotted.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise KeyError(dotted)
    return node


def task_as_data(record: Mapping[str, Any] | BaseModel) -> Any:
    """A task record as plain data (a model dumped as JSON, nulls left out; a mapping as
    it is): the form a tasks file holds."""
    if not isinstance(record, BaseModel):
        return record
    data = record.model_dump(mode="json", exclude_none=True)
    for fact in data.get("gold_facts", []):
        if "value" in fact:  # already resolved from its pack
            fact.pop("ground_truth", None)
    return data


def _file_text(path: Path) -> str:
    """A task file's text, or an :class:`~grade_kit.parse.Undecodable` saying why not."""
    try:
        return read_text(path)
    except (ParseError, OSError) as exc:
        bad = Undecodable(path.read_bytes().decode("utf-8", "backslashreplace")
                          if isinstance(exc, ParseError) else "")
        bad.error = str(exc) if isinstance(exc, ParseError) else (
            f"cannot be read: {exc.strerror or exc}")
        return bad


def _task_files(folder: Path, out: Loaded[Task]) -> list[Path]:
    """Task files under ``folder`` (recursive, ``packs`` folders skipped), in name order.

    Symbolic links to files are followed; a link that loops or dangles, and a non-regular
    file with a task suffix, are rejected; a linked folder is not followed and is warned
    about; other non-regular files are warned about. Nothing is skipped silently.
    """
    found: list[Path] = []
    for root, dirs, files in os.walk(folder, followlinks=False):
        base = Path(root)
        for name in sorted(dirs):
            if (base / name).is_symlink():
                out.warnings.append(WarningItem(source=str(base / name), message=(
                    "a linked folder is not followed (link the task files, or pass it "
                    "as its own tasks folder)")))
        dirs[:] = sorted(d for d in dirs if d != "packs" and not (base / d).is_symlink())
        for name in sorted(files):
            file = base / name
            is_task = file.suffix.lower() in TASK_SUFFIXES
            try:
                mode = file.stat().st_mode  # follows a link
            except (OSError, RuntimeError) as exc:
                if is_task or file.is_symlink():
                    out.rejected.append(Rejected(str(file), None, None, (
                        f"a link that loops or points nowhere ({exc.__class__.__name__})"),
                        ""))
                continue
            if not stat.S_ISREG(mode):
                if is_task:
                    out.rejected.append(Rejected(str(file), None, None,
                                                 "not a regular file", ""))
                else:
                    out.warnings.append(WarningItem(source=str(file),
                                                    message="not a regular file; ignored"))
                continue
            if is_task:
                found.append(file)
    return sorted(found)


def _task_sources(path: Records,
                  out: Loaded[Task]) -> Iterator[tuple[str, int | None, str, str]]:
    """(source, line, text, format) of every task record under ``path``."""
    if is_in_memory(path):
        records = cast(Sequence[Mapping[str, Any] | BaseModel], path)
        for number, record in enumerate(records, start=1):
            text = json.dumps(task_as_data(record), ensure_ascii=False, default=str)
            yield "<tasks>", number, text, ".jsonl"
        return
    path = Path(path)  # type: ignore[arg-type]
    if path.is_dir():
        for file in _task_files(path, out):
            yield str(file), None, _file_text(file), file.suffix.lower()
    elif path.is_file() and path.suffix.lower() == ".jsonl":
        for number, text in _iter_lines(path):
            yield str(path), number, text, ".jsonl"
    elif path.is_file() and path.suffix.lower() in TASK_SUFFIXES:
        yield str(path), None, _file_text(path), path.suffix.lower()
    else:
        raise InputError(f"{path}: not a tasks folder, task file or JSONL file")


def load_tasks(path: Records, packs: Path | str | None = None) -> Loaded[Task]:
    """Load tasks from a folder of YAML/JSON files (one task each, recursive) or a JSONL file.

    ``ground_truth: "dotted.key"`` in a gold fact is resolved from
    ``<packs>/<pack>/ground_truth.json`` (``packs`` defaults to :func:`find_packs_dir`).
    A file or line is rejected, naming file, line and field, when it is not valid YAML/JSON,
    fails the Task model (weights off 1 by more than 1e-6, a claim text or synonym with no
    token, ...), names a ground_truth key its pack lacks, or repeats an earlier task_id.

    Args:
        path: Folder of task files, one task file, a JSONL file of tasks, or in-memory task
            records (mappings or :class:`~grade_kit.schema.Task`; named ``<tasks>``).
        packs: Folder holding one sub-folder per pack; default: found next to ``path`` (none
            for in-memory tasks).

    Returns:
        The loaded tasks (in file order) with their rejects and warnings.
    """
    in_memory = is_in_memory(path)
    packs_dir = (Path(packs) if packs is not None
                 else None if in_memory else find_packs_dir(Path(path)))  # type: ignore[arg-type]
    truth_cache: dict[str, Any] = {}
    tasks: list[Task] = []
    out: Loaded[Task] = Loaded(records=tasks)
    seen: dict[str, str] = {}
    known = set(Task.model_fields) | {"reference_answer"}
    for source, line, text, fmt in _task_sources(path, out):
        try:
            if isinstance(text, Undecodable):
                raise ParseError(text.error)
            data = loads_json(text) if fmt in (".json", ".jsonl") else loads_yaml(text)
        except ParseError as exc:
            out.rejected.append(Rejected(source, line, None, str(exc), text))
            continue
        if not isinstance(data, dict):
            out.rejected.append(Rejected(source, line, None, "a task must be a mapping", text))
            continue
        try:
            task = Task.model_validate(data)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]["loc"]
            at = line if line is not None else _yaml_line(text, first)
            out.rejected.append(_validation_reject(source, at, text, exc))
            continue
        problem = _resolve_ground_truth(task, data, packs_dir, truth_cache)
        if problem is not None:
            fld, msg = problem
            at = line if line is not None else _yaml_line(text, _split_loc(fld))
            out.rejected.append(Rejected(source, at, fld, msg, text))
            continue
        if task.task_id in seen:
            out.rejected.append(Rejected(
                source, line, "task_id",
                f"duplicate task_id {task.task_id!r} (first in {seen[task.task_id]})", text))
            continue
        seen[task.task_id] = source if line is None else f"{source}:{line}"
        unknown = sorted(set(data) - known)
        if unknown:
            out.warnings.append(WarningItem(
                source=source, line=line,
                message=f"unknown task field(s) kept but unused: {unknown}"))
        tasks.append(task)
        out.lines.append(line)
        out.sources.append(source)
    return out


def _split_loc(dotted: str) -> list[int | str]:
    parts: list[int | str] = []
    for chunk in dotted.replace("]", "").split("."):
        name, *idx = chunk.split("[")
        parts.append(name)
        parts.extend(int(i) for i in idx)
    return parts


@dataclass(frozen=True)
class _Unreadable:
    """A pack's ground truth that could not be read, and why (cached like a good one)."""

    why: str


def _resolve_ground_truth(
    task: Task, data: dict[str, Any], packs_dir: Path | None, cache: dict[str, Any]
) -> tuple[str, str] | None:
    """Fill each ``ground_truth`` fact's value from its pack; (field, error) on failure."""
    for index, fact in enumerate(task.gold_facts):
        if fact.ground_truth is None:
            continue
        fld = f"gold_facts[{index}].ground_truth"
        if packs_dir is None:
            return fld, "ground_truth needs the packs folder (none found; pass --packs)"
        pack = str(task.pack)
        if pack not in cache:
            truth_file = packs_dir / pack / "ground_truth.json"
            if not truth_file.is_file():
                return fld, f"pack {pack!r} has no ground truth at {truth_file}"
            try:
                cache[pack] = loads_json(read_text(truth_file))
            except (ParseError, OSError) as exc:
                cache[pack] = _Unreadable(f"{truth_file}: {exc}")
        truth = cache[pack]
        if isinstance(truth, _Unreadable):
            return fld, f"pack {pack!r} ground truth cannot be read: {truth.why}"
        try:
            value = _lookup(truth, fact.ground_truth)
        except KeyError:
            return fld, f"ground_truth key {fact.ground_truth!r} is not in pack {pack!r}"
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            return fld, (f"ground_truth key {fact.ground_truth!r} holds "
                         f"{type(value).__name__}, not a number or string")
        if isinstance(value, float) and not math.isfinite(value):
            return fld, (f"ground_truth key {fact.ground_truth!r} holds {value!r}: a gold "
                         "value must be finite")
        fact.value = value
    return None


# --------------------------------------------------------------------------- runs


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


def line_chunks(lines: Iterator[Line], size: int) -> Iterator[list[Line]]:
    """``lines`` in lists of ``size`` (the last one shorter)."""
    while chunk := list(itertools.islice(lines, size)):
        yield chunk


def _load_verdicts(given: Records, name: str, model: type[Model],
                   check: VerdictCheck) -> Loaded[Model]:
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


def _run_ids(runs: Sequence[Run]) -> set[str]:
    """The ids of the loaded runs, which judgements and grades must name."""
    return {r.run_id for r in raw_records(runs)}


def load_judgements(path: Records, runs: Sequence[Run] | None = None) -> Loaded[Judgement]:
    """Load recorded judgements (files, folders or in-memory records); an unknown run_id or a
    repeated (run_id, dimension) is rejected."""
    run_ids = None if runs is None else _run_ids(runs)
    return _load_verdicts(path, "judgements", Judgement, VerdictCheck("judgements", run_ids))


def load_grades(path: Records, runs: Sequence[Run] | None = None) -> Loaded[Grade]:
    """Load grade records (files, folders or in-memory records); an unknown run_id is rejected,
    and a second grade record for a run is an error that names both lines (the first
    stands)."""
    run_ids = None if runs is None else _run_ids(runs)
    return _load_verdicts(path, "grades", Grade, VerdictCheck("grades", run_ids))
