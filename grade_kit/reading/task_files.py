"""Load tasks: YAML or JSON task files (one task each, a folder searched recursively) or a
tasks JSONL file, with ground-truth values resolved from their packs (docs/methodology.md §2),
every bad file or line kept with its file, line and field."""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast, overload

import yaml
from pydantic import BaseModel, ValidationError

from grade_kit.reading.io import (
    Loaded,
    Records,
    Rejected,
    file_lines,
    is_in_memory,
    validation_reject,
)
from grade_kit.reading.parse import ParseError, Undecodable, loads_json, loads_yaml, read_text
from grade_kit.schema import InputError, Task, WarningItem

TASK_SUFFIXES = (".yaml", ".yml", ".json")
"""The suffixes of task files in a tasks folder."""


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


class CompactTasks(Sequence[Task]):
    """Validated tasks held as their JSON text (:func:`task_as_data`, about 1 KB a task), each
    built as a :class:`~grade_kit.schema.Task` when asked for and not kept: 40,000 tasks are
    about 40 MB held, where 40,000 models were 450 MB (docs/scaling.md). Indexing and
    iterating give models; :meth:`as_data` gives the plain data without building one."""

    def __init__(self, tasks: Iterable[Task | Mapping[str, Any]]) -> None:
        self._texts = [json.dumps(task_as_data(t), ensure_ascii=False)
                       .encode("utf-8") for t in tasks]

    def __len__(self) -> int:
        return len(self._texts)

    @overload
    def __getitem__(self, index: int) -> Task: ...

    @overload
    def __getitem__(self, index: slice) -> list[Task]: ...

    def __getitem__(self, index: int | slice) -> Task | list[Task]:
        if isinstance(index, slice):
            return [Task.model_validate_json(t) for t in self._texts[index]]
        return Task.model_validate_json(self._texts[index])

    def __iter__(self) -> Iterator[Task]:
        for text in self._texts:
            yield Task.model_validate_json(text)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def as_data(self) -> Iterator[Any]:
        """Each task as plain data, as :func:`task_as_data` gives it."""
        for text in self._texts:
            yield json.loads(text)

    def __repr__(self) -> str:
        return f"CompactTasks({len(self)} tasks)"


def _file_text(path: Path) -> str:
    """A task file's text, or an :class:`~grade_kit.reading.parse.Undecodable` saying why not."""
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
        for number, text in file_lines(path):
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
            out.rejected.append(validation_reject(source, at, text, exc))
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
