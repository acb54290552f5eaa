"""Score once, report many: an evaluation's state written beside its outputs, and read back
as the same :class:`~grade_kit.pipeline.scored.Evaluation` without scoring again (:func:`reopen`).

``ev.write(DIR)`` writes ``DIR/evaluation/``: every frame of the evaluation as Parquet (the
tidy input frames, the GRADE scores, the standard's frames), the input records (the runs,
judgements and grade records as accepted, for the explorer and the review sheet) as records
Parquet files, each record's JSON in one column as a packed store keeps its runs
(:func:`~grade_kit.reading.io.write_record_file`, read back through the one reader), and
``state.json`` (the tasks, rejects, warnings, input files, import notes and the setups
compared). An evaluation of a packed store (given, or the temporary one of large inputs)
keeps its answer text and run records in the store: a copy of the store,
``evaluation/store/``, takes the place of the records files, so the folder reopens on its
own. The typed results come from
``DIR/results.json``. Reopening reads Parquet and JSON only; the run records are read when
something asks for them.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import polars as pl
import pyarrow as pa
from pydantic import BaseModel, ConfigDict, ValidationError

from grade_kit.atomic import restore_folder
from grade_kit.frames import EvalData, frame_fields, raw_records
from grade_kit.reading.inputs import Inputs
from grade_kit.reading.io import HeldRecords, Rejected, sha256_of, write_record_file
from grade_kit.reading.packed import StoreRuns, read_manifest
from grade_kit.reading.task_files import CompactTasks, task_as_data
from grade_kit.schema import (
    Grade,
    InputError,
    InputFile,
    Judgement,
    Results,
    Run,
    SubsetSetup,
    Task,
    WarningItem,
)
from grade_kit.scorers import GradeScores
from grade_kit.standard import StandardResults
from grade_kit.views.tables import evaluation_title

STATE_DIR = "evaluation"
"""The folder under an output folder that holds the evaluation's state."""
STATE_VERSION = 11
"""11: each run's usage by model and its cost (``usage``, ``run_costs``, ``cost``); a state of
10 or before is refused, naming its version."""

MAX_STATE_BYTES = 512 * 2**20
"""The largest ``state.json`` a reopen parses (its tasks, rejects and hashes: 2.2 MB at 100k
runs, 2,000 tasks and 1,000 rejects); a larger one is refused before it is read."""

_DATA = frame_fields(EvalData)
_SCORES = frame_fields(GradeScores)
_STANDARD = frame_fields(StandardResults)


def write_state(out: Path, inputs: Inputs, data: EvalData, scores: GradeScores,
                standard: StandardResults, kind: str,
                outputs: Mapping[str, Path] | None = None) -> Path:
    """Write the state of one evaluation under ``out`` (``out/evaluation``, which must not
    exist: the caller builds a new folder whole, :func:`~grade_kit.atomic.replaced_folder`).

    ``state.json`` records the SHA-256 of every file of the state and of every output
    ``outputs`` names (results.json, ...), by its path relative to ``out``: a reader checks
    them all before it trusts anything (:func:`verify_state`)."""
    store = data.extra.get("store")
    staging = out / STATE_DIR
    staging.mkdir(mode=0o755)
    try:
        if store is not None:  # its runs and answer text, read back by explain and the explorer
            shutil.copytree(store, staging / "store")
        kept = {} if store is not None else {
            "runs": inputs.runs, "judgements": inputs.judgements, "grades": inputs.grades}
        counts = {name: len(records) for name, records in kept.items()}
        writes: list[Callable[[], object]] = [
            partial(_write_records, staging / f"records-{name}.parquet", records)
            for name, records in kept.items()]
        writes.extend(partial(getattr(owner, name).write_parquet,
                              staging / f"{prefix}-{name}.parquet")
                      for prefix, names, owner in (("data", _DATA, data),
                                                   ("scores", _SCORES, scores),
                                                   ("standard", _STANDARD, standard))
                      for name in names)
        # Two threads: most of a file's writing is compression, which releases the GIL. A
        # store's evaluation (the path that bounds memory) writes one file at a time.
        with ThreadPoolExecutor(max_workers=1 if store is not None else 2) as pool:
            for _ in pool.map(lambda write: write(), writes):
                pass
        state = {
            "version": STATE_VERSION, "frames": kind, "counts": counts,
            "store": None if store is None else "store",
            "tasks": list(inputs.tasks.as_data() if isinstance(inputs.tasks, CompactTasks)
                          else map(task_as_data, inputs.tasks)),
            "rejected": [asdict(r) for r in inputs.rejected],
            "warnings": [w.model_dump(mode="json") for w in inputs.warnings],
            "files": [f.model_dump(mode="json") for f in inputs.files],
            "notes": list(inputs.notes), "stated_repeats": dict(inputs.stated_repeats),
            "compared": list(standard.compared),
            "sha256": {**{path.name: sha256_of(path) for path in (outputs or {}).values()},
                       **{f"{STATE_DIR}/{path.relative_to(staging).as_posix()}":
                          sha256_of(path) for path in sorted(staging.rglob("*"))
                          if path.is_file()}}}
        state["own_sha256"] = _own_digest(state)
        (staging / "state.json").write_text(json.dumps(state, ensure_ascii=False),
                                            encoding="utf-8")
        return staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


_MODELS: dict[str, type[BaseModel]] = {"runs": Run, "judgements": Judgement, "grades": Grade}


def _write_records(path: Path, records: Sequence[Any]) -> None:
    """``records`` as a records file: the bytes already held as one (an evaluation's records
    once flattened, :meth:`Inputs.held`), or encoded now."""
    if isinstance(records, HeldRecords) and isinstance(records.source, pa.Buffer):
        path.write_bytes(memoryview(records.source))
    else:
        write_record_file(path, raw_records(records))


class StateFile(BaseModel):
    """``evaluation/state.json``, as :func:`write_state` writes it: every field typed, no
    other field; ``store`` is the folder's own copy or none (never a path elsewhere)."""

    model_config = ConfigDict(extra="forbid")

    version: int
    frames: Literal["polars", "pandas"]
    counts: dict[str, int]
    store: Literal["store"] | None
    tasks: list[dict[str, Any]]
    rejected: list[dict[str, Any]]
    warnings: list[dict[str, Any]]
    files: list[dict[str, Any]]
    notes: list[str]
    stated_repeats: dict[str, int]
    compared: list[str]
    sha256: dict[str, str]
    own_sha256: str
    """SHA-256 of the file's other fields (:func:`_own_digest`): a field edited after the
    write (a reject list emptied, a task's prompt changed) fails :func:`verify_state`."""


def _own_digest(fields: dict[str, Any]) -> str:
    """SHA-256 of ``fields`` but ``own_sha256``, as canonical JSON (sorted keys, UTF-8)."""
    body = {k: v for k, v in fields.items() if k != "own_sha256"}
    return hashlib.sha256(json.dumps(body, ensure_ascii=False, sort_keys=True)
                          .encode("utf-8")).hexdigest()


def _expected_files(meta: StateFile) -> list[str]:
    """The files a state of ``meta``'s kind must vouch for (relative to the folder)."""
    names = ["results.json"]
    names += [f"{STATE_DIR}/{prefix}-{name}.parquet" for prefix, group in
              (("data", _DATA), ("scores", _SCORES), ("standard", _STANDARD))
              for name in group]
    if meta.store is None:
        names += [f"{STATE_DIR}/records-{name}.parquet"
                  for name in ("runs", "judgements", "grades")]
    return names


def verify_state(folder: Path | str) -> StateFile:
    """Check a scored folder before anything of it is trusted (docs/methodology.md §6):
    ``state.json`` is JSON of the documented shape and version; every file it vouches for
    is inside the folder (no absolute path, no ``..``, no symbolic link) and has the SHA-256
    recorded when it was written, results.json and every frame among them; every file a
    state needs is vouched for. An edited, truncated or replaced file, or a folder whose
    write was interrupted between its files (a mix of two evaluations), fails here.

    Raises:
        InputError: one line naming the file and what is wrong with it.
    """
    folder = Path(folder)
    restore_folder(folder.resolve())
    state_dir = folder / STATE_DIR
    meta_path = state_dir / "state.json"
    links = [p for p in (folder, state_dir, meta_path, *(
        sorted(state_dir.rglob("*")) if state_dir.is_dir() and not state_dir.is_symlink()
        else [])) if p.is_symlink()]
    if links:  # nothing of the folder is read through a link
        raise InputError(f"{links[0]}: a symbolic link in a scored folder; a scored folder "
                         "holds only the files grade_kit wrote")
    if not meta_path.is_file() or not (folder / "results.json").is_file():
        raise InputError(f"{folder}: no scored evaluation (written by ev.write or grade-kit "
                         "score: results.json and evaluation/state.json)")
    size = meta_path.stat().st_size
    if size > MAX_STATE_BYTES:  # checked before a byte of it is parsed
        raise InputError(f"{meta_path}: {size:,} bytes, more than the {MAX_STATE_BYTES:,} a "
                         "state file may hold: not the file grade_kit wrote")
    try:
        raw = json.loads(meta_path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise InputError(f"{meta_path}: not a state file (not JSON: {exc})") from exc
    version = raw.get("version") if isinstance(raw, dict) else None
    if version != STATE_VERSION:
        raise InputError(f"{folder}: evaluation state of version {version}, this grade_kit "
                         f"reads version {STATE_VERSION}: score the inputs again")
    try:
        meta = StateFile.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InputError(f"{meta_path}: field '{where}': {first['msg']}") from exc
    if _own_digest(raw) != meta.own_sha256:
        raise InputError(f"{meta_path}: its fields are not the ones this evaluation wrote "
                         "(its own SHA-256 differs: edited after the write); score again")
    missing = [name for name in _expected_files(meta) if name not in meta.sha256]
    if missing:
        raise InputError(f"{meta_path}: does not vouch for {missing[0]} (a state file that "
                         "was not written by grade_kit)")
    root = folder.resolve()
    for name, digest in meta.sha256.items():
        relative = PurePosixPath(name)
        if relative.is_absolute() or ".." in relative.parts or not relative.parts:
            raise InputError(f"{meta_path}: names {name!r}, a path outside the folder")
        path = folder.joinpath(*relative.parts)
        if path.is_symlink() or not path.resolve().is_relative_to(root):
            raise InputError(f"{path}: a symbolic link or a path outside the folder")
        if not path.is_file():
            raise InputError(f"{path}: missing (the folder was changed after it was written)")
        if sha256_of(path) != digest:
            raise InputError(f"{path}: not the file this evaluation wrote (its SHA-256 "
                             "differs: edited, truncated, or a write into the folder was "
                             "interrupted); score again")
    return meta


def _results(folder: Path) -> Results:
    return Results.model_validate_json((folder / "results.json").read_text(encoding="utf-8"))


def scored_title(folder: Path | str, state: StateFile | None = None) -> str:
    """What the evaluation in a scored folder is, in one line (a report's default title,
    :func:`~grade_kit.views.tables.evaluation_title`), read from its results and task list
    without reopening it; ``state``: the folder's :func:`verify_state`, checked here when
    not given."""
    folder = Path(folder)
    meta = state or verify_state(folder)
    return evaluation_title(_results(folder),
                            [t.get("suite") or t.get("pack") for t in meta.tasks])


def read_state(folder: Path | str) -> tuple[Inputs, EvalData, GradeScores,
                                             StandardResults, Results, str]:
    """The parts of the evaluation written under ``folder`` (an output folder of
    ``ev.write`` or ``grade-kit score``), once :func:`verify_state` has checked it.

    Raises:
        InputError: when the folder holds no evaluation state (or another version's), or
            any of its files is not the one written.
    """
    folder = Path(folder)
    state_dir = folder / STATE_DIR
    meta = verify_state(folder).model_dump()

    def frames(prefix: str, names: list[str]) -> dict[str, pl.DataFrame]:
        return {n: pl.read_parquet(state_dir / f"{prefix}-{n}.parquet") for n in names}

    results = _results(folder)
    tasks = CompactTasks(Task.model_validate(t) for t in meta["tasks"])
    counts = meta["counts"]
    store = state_dir / meta["store"] if meta.get("store") else None

    def records(name: str) -> Any:
        return HeldRecords(state_dir / f"records-{name}.parquet", counts[name], _MODELS[name])

    inputs = Inputs(  # a store's judgements and grades are frames only, as when scored
        tasks=tasks,
        runs=records("runs") if store is None else StoreRuns(store, read_manifest(store)),
        judgements=[] if store is not None else records("judgements"),
        grades=[] if store is not None else records("grades"),
        rejected=[Rejected(**r) for r in meta["rejected"]],
        warnings=[WarningItem.model_validate(w) for w in meta["warnings"]],
        files=[InputFile.model_validate(f) for f in meta["files"]],
        notes=list(meta["notes"]), stated_repeats=dict(meta["stated_repeats"]))
    data = EvalData.from_frames(frames("data", _DATA),
                                extra=None if store is None else {"store": str(store)})
    scores = GradeScores(**frames("scores", _SCORES))
    standard = StandardResults(
        **frames("standard", _STANDARD), plan=results.plan,
        setups={name: SubsetSetup(grades=s.grades, timing=s.timing, tool_calls=s.tool_calls,
                                  cost=s.cost,
                                  source_metrics=s.source_metrics)
                for name, s in results.setups.items()},
        reruns={name: list(s.reruns) for name, s in results.setups.items()},
        common=results.common_subset, comparisons=list(results.comparisons),
        compared=list(meta["compared"]))
    return inputs, data, scores, standard, results, str(meta["frames"])
