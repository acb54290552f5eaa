"""Packed run stores: validated inputs as Parquet, partitioned by task, for evaluations
bigger than memory (docs/scaling.md).

``grade-kit pack`` (:func:`pack`) reads tasks, runs, judgements and grades chunk by chunk
with exactly the loaders' checks (docs/methodology.md §2 and §6: every reject names its file,
line and field and is kept in ``rejected.jsonl``), flattens each chunk into the tidy frames
(:data:`grade_kit.frames.COLUMNS`) and writes them under ``<store>/<frame>/p=<k>/``, where
``k = crc32(task_id) mod partitions``. A task's runs, and so its every GRADE score, live in
one partition; :func:`grade_kit.evaluate` on a store scores one partition at a time and
reduces (docs/scaling.md states the memory bound).

Layout::

    <store>/manifest.json       format, partitions, counts, inputs (path, SHA-256), warnings
    <store>/tasks.jsonl         the validated tasks (ground truth resolved)
    <store>/task_frames/*.parquet   their frames (tasks, weights, facts, claims, claim_terms)
    <store>/rejected.jsonl      every rejected record: source, line, field, error, raw
    <store>/<frame>/p=<k>/chunk-<n>.parquet   runs (with each run's record as JSON), items,
                                              metrics, events, tool_calls, judgements, grades

The manifest is written last: a folder without one is not a store.
"""

from __future__ import annotations

import json
import shutil
import zlib
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from grade_kit.frames import (
    COLUMNS,
    RUN_FRAMES,
    EvalData,
    run_frames,
    task_frames,
    verdict_frames,
)
from grade_kit.reading._fastread import LazyRecords
from grade_kit.reading.io import (
    Records,
    Rejected,
    input_files,
    kept_records,
    line_chunks,
    read_jsonl,
    record_lines,
    record_texts,
    write_rejects,
)
from grade_kit.reading.records import RunChecks, VerdictCheck, record_sources
from grade_kit.reading.task_files import CompactTasks, load_tasks, task_as_data
from grade_kit.schema import Grade, InputError, InputFile, Judgement, Run, WarningItem

STORE_FORMAT = "grade-kit-store/1"
MANIFEST = "manifest.json"
DEFAULT_PARTITIONS = 16
"""Partitions of a new store: each holds about 1/16 of the tasks (and their runs)."""
DEFAULT_CHUNK_LINES = 100_000
"""Lines read, checked and written at a time by :func:`pack` (its working set)."""
VERDICT_FRAMES = ("judgements", "grades")
HEAVY_FRAMES = ("items", "metrics")
"""The frames an evaluation of a store reads one partition at a time (the answers' text);
the others (one or a few small rows per run) are read whole."""


def partition_of(task_id: str, partitions: int) -> int:
    """The partition of a task: CRC-32 of its UTF-8 id, modulo ``partitions`` (stable across
    machines and versions)."""
    return zlib.crc32(task_id.encode("utf-8")) % partitions


def task_partitions(task_ids: pl.Series, partitions: int) -> pl.Series:
    """:func:`partition_of` each task id of ``task_ids`` (computed once per distinct id)."""
    mapping = {t: partition_of(t, partitions) for t in task_ids.unique().to_list()}
    return task_ids.replace_strict(mapping, return_dtype=pl.Int64)


def is_store(path: object) -> bool:
    """Whether ``path`` is a folder written by :func:`pack` (it holds a manifest)."""
    return isinstance(path, str | Path) and (Path(path) / MANIFEST).is_file()


def read_manifest(store: Path | str) -> dict[str, Any]:
    """The store's manifest.

    Raises:
        InputError: when ``store`` is not a store of this format.
    """
    path = Path(store) / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a readable store manifest ({exc})") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != STORE_FORMAT:
        raise InputError(f"{path}: not a {STORE_FORMAT} store")
    return manifest


def read_store_frame(store: Path | str, name: str,
                     partition: int | None = None) -> pl.DataFrame:
    """Frame ``name`` of the store, whole or one ``partition`` (the columns of
    :data:`grade_kit.frames.COLUMNS`; ``runs`` without the record column)."""
    folder = Path(store) / name
    pattern = f"p={partition:03d}/*.parquet" if partition is not None else "p=*/*.parquet"
    columns = list(COLUMNS[name])
    files = sorted(folder.glob(pattern))
    if not files:
        return pl.DataFrame(schema=COLUMNS[name])
    return pl.read_parquet(files, columns=columns).cast(pl.Schema(COLUMNS[name]))


TASK_FRAMES = ("tasks", "weights", "facts", "claims", "claim_terms")


def read_task_frames(store: Path | str) -> dict[str, pl.DataFrame]:
    """The task frames of the store's tasks (:func:`grade_kit.frames.task_frames`, written
    by :func:`pack`, so a worker need not validate the tasks again)."""
    return {name: pl.read_parquet(Path(store) / "task_frames" / f"{name}.parquet")
            .cast(pl.Schema(COLUMNS[name])) for name in TASK_FRAMES}


def partition_data(store: Path | str, partition: int) -> EvalData:
    """The frames of one partition, with every task frame: the input of
    :func:`grade_kit.scorers.partition_scores` (docs/scaling.md)."""
    return EvalData.from_frames({**read_task_frames(store), **{
        name: read_store_frame(store, name, partition)
        for name in (*RUN_FRAMES, *VERDICT_FRAMES)}})


def split_by_task(data: EvalData, partitions: int = DEFAULT_PARTITIONS) -> list[EvalData]:
    """``data`` split as a store is (:func:`partition_of` its task): every run of a task, with
    its answer frames and verdicts, in one part, and every task frame in each part. Empty
    parts are left out (one part is kept when all are empty)."""
    keys = data.runs.select(
        "run_id", part=task_partitions(data.runs.get_column("task_id"), partitions))
    tasks = {name: getattr(data, name) for name in TASK_FRAMES}
    split: dict[int, dict[str, pl.DataFrame]] = {}
    for name in (*RUN_FRAMES, *VERDICT_FRAMES):
        frame = getattr(data, name)
        tagged = frame.join(keys, on="run_id", how="inner", maintain_order="left")
        for (part,), rows in tagged.partition_by("part", as_dict=True).items():
            split.setdefault(int(part), {})[name] = rows.drop("part")
    if not split:
        return [data]
    return [EvalData.from_frames({**tasks, **{name: frames.get(
        name, getattr(data, name).head(0)) for name in (*RUN_FRAMES, *VERDICT_FRAMES)}})
        for _, frames in sorted(split.items())]


@dataclass(frozen=True)
class PackReport:
    """What :func:`pack` wrote."""

    store: Path
    partitions: int
    tasks: int
    runs: int
    judgements: int
    grades: int
    rejected: int

    def __str__(self) -> str:
        return (f"{self.store}: {self.tasks} tasks, {self.runs} runs, {self.judgements} "
                f"judgements, {self.grades} grades in {self.partitions} partitions; "
                f"{self.rejected} rejected (see rejected.jsonl)")


class _Writer:
    """Writes frames chunk by chunk into the store's partition folders."""

    def __init__(self, root: Path, partitions: int) -> None:
        self.root = root
        self.partitions = partitions
        self.chunks: Counter[str] = Counter()
        self.run_partition: list[pl.DataFrame] = []
        self.rows: Counter[str] = Counter()
        self.partition_rows: dict[int, int] = {}

    def write(self, name: str, frame: pl.DataFrame) -> None:
        """Write ``frame`` (with a ``partition`` column) as one chunk file per partition."""
        if frame.is_empty():
            return
        chunk = self.chunks[name]
        self.chunks[name] += 1
        self.rows[name] += frame.height
        for (partition,), part in frame.partition_by("partition", as_dict=True).items():
            folder = self.root / name / f"p={partition:03d}"
            folder.mkdir(parents=True, exist_ok=True)
            part.drop("partition").write_parquet(folder / f"chunk-{chunk:05d}.parquet")
            if name == "runs":
                key = int(partition)
                self.partition_rows[key] = self.partition_rows.get(key, 0) + part.height

    def write_runs(self, records: Sequence[Any], lines: Sequence[int | None]) -> None:
        if not records:
            return
        frames = run_frames(LazyRecords(Run, list(records)), lines)
        runs = frames["runs"].with_columns(
            record_texts(records),
            partition=task_partitions(frames["runs"].get_column("task_id"), self.partitions))
        self.write("runs", runs)
        keys = runs.select("run_id", "partition")
        self.run_partition.append(keys)
        for name in RUN_FRAMES[1:]:
            self.write(name, frames[name].join(keys, on="run_id", how="left"))


def pack(
    tasks: Records,
    runs: Records,
    out: Path | str,
    *,
    judgements: Records | None = None,
    grades: Records | None = None,
    packs: Path | str | None = None,
    partitions: int = DEFAULT_PARTITIONS,
    chunk_lines: int = DEFAULT_CHUNK_LINES,
    progress: bool = True,
) -> PackReport:
    """Validate inputs chunk by chunk and write them as a partitioned Parquet store.

    Every line meets exactly the checks of :func:`grade_kit.read_inputs` (the same rejects,
    with file, line and field, kept in ``rejected.jsonl``); memory holds one chunk of lines,
    one small entry per accepted run (its id, slot and partition) and the re-runs until every
    run is read (a re-run may name a run later in the input).

    Args:
        tasks: Tasks, as :func:`grade_kit.read_inputs` takes them.
        runs: Run JSONL file(s) or folder(s), or run records.
        out: The store folder to create (it must not exist, or be empty).
        judgements: Recorded judgements; default None.
        grades: Grade records; default None.
        packs: Folder of packs for ``ground_truth`` keys; default found next to ``tasks``.
        partitions: How many partitions (by task); default 16.
        chunk_lines: Lines read and written at a time; default 100,000.
        progress: Print a line per chunk; default True.

    Returns:
        What was written.

    Raises:
        InputError: when ``out`` exists and is not an empty folder, or an input is missing
            (then nothing is left in ``out``).
    """
    if partitions < 1 or chunk_lines < 1:
        raise ValueError("partitions and chunk_lines must be at least 1")
    root = Path(out)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise InputError(f"{root}: exists and is not an empty folder (a store is written "
                         "into a new folder)")
    existed = root.is_dir()
    root.mkdir(parents=True, exist_ok=True)
    try:
        return _pack(root, tasks, runs, judgements, grades, packs, partitions, chunk_lines,
                     progress)
    except BaseException:
        # remove only what this call wrote (the folder was new or empty)
        for child in list(root.iterdir()) if existed else [root]:
            if child.is_dir():
                shutil.rmtree(child, ignore_errors=True)
            else:
                child.unlink(missing_ok=True)
        raise


def _pack(root: Path, tasks: Records, runs: Records, judgements: Records | None,
          grades: Records | None, packs: Path | str | None, partitions: int,
          chunk_lines: int, progress: bool) -> PackReport:
    task_load = load_tasks(tasks, packs)
    with (root / "tasks.jsonl").open("w", encoding="utf-8") as handle:
        for task in task_load.records:
            handle.write(json.dumps(task_as_data(task), ensure_ascii=False) + "\n")
    (root / "task_frames").mkdir()
    for name, frame in task_frames(task_load.records).items():
        frame.write_parquet(root / "task_frames" / f"{name}.parquet")
    writer = _Writer(root, partitions)
    run_sources = record_sources(runs, "runs")
    checks = RunChecks(task_load.records, len(run_sources))
    slot_of: dict[str, tuple[str, str, int]] = {}
    held: list[tuple[Any, int | None, str]] = []
    run_rejects: list[Rejected] = []
    accepted_by_source: Counter[str] = Counter()
    read = 0
    for source, lines in run_sources:
        check = checks.checker(source)
        for chunk in line_chunks(lines, chunk_lines):
            part = read_jsonl(source, iter(chunk), Run, check)
            run_rejects.extend(part.rejected)
            primaries, primary_lines = [], []
            for record, line in zip(part.records, part.lines, strict=True):
                slot_of[record.run_id] = (record.setup, record.task_id, record.repeat)
                if record.attempt_of is None:
                    primaries.append(record)
                    primary_lines.append(line)
                    accepted_by_source[source] += 1
                else:
                    held.append((record, line, source))
            writer.write_runs(primaries, primary_lines)
            read += len(chunk)
            if progress:
                print(f"pack: {read:,} run lines read, {writer.rows['runs']:,} runs written",
                      flush=True)
    standing, rerun_rejects = checks.rerun_pass([h[0] for h in held], [h[1] for h in held],
                                                [h[2] for h in held], slot_of)
    run_rejects.extend(rerun_rejects)
    reruns = [held[i][0] for i in standing]
    dropped = {record.run_id for record, _, _ in held} - {r.run_id for r in reruns}
    accepted_by_source.update(held[i][2] for i in standing)
    writer.write_runs(reruns, [held[i][1] for i in standing])
    run_rejects.sort(key=lambda r: (r.source, r.line or 0))
    keys = (pl.concat(writer.run_partition) if writer.run_partition
            else pl.DataFrame(schema={"run_id": pl.String, "partition": pl.Int64}))
    accepted = slot_of.keys() - dropped  # the run ids verdicts may name
    rejected = [*task_load.rejected, *run_rejects]
    files = input_files("tasks", task_load.sources, task_load.rejected)
    # sources in reading order, as read_inputs lists them (a file whose runs were all
    # re-runs is still listed where it was read)
    files += input_files("runs", [source for source, _ in run_sources
                                   for _ in range(accepted_by_source[source])], run_rejects)
    verdict_counts = {}
    for name, given, model, check_ in (
            ("judgements", judgements, Judgement, VerdictCheck("judgements", accepted)),
            ("grades", grades, Grade, VerdictCheck("grades", accepted))):
        if given is None:
            continue
        sources: list[str] = []
        rejects: list[Rejected] = []
        for source, lines in record_sources(given, name):
            for chunk in line_chunks(lines, chunk_lines):
                part = read_jsonl(source, iter(chunk), model, check_.check)
                rejects.extend(part.rejected)
                sources.extend(part.sources)
                frame = verdict_frames(**{name: part.records})[name]
                writer.write(name, frame.join(keys, on="run_id", how="inner"))
        verdict_counts[name] = len(sources)
        rejected.extend(rejects)
        files += input_files(name, sources, rejects)
    write_rejects(root / "rejected.jsonl", rejected)
    report = PackReport(store=root, partitions=partitions, tasks=len(task_load.records),
                        runs=writer.rows["runs"], judgements=verdict_counts.get("judgements", 0),
                        grades=verdict_counts.get("grades", 0), rejected=len(rejected))
    manifest = {
        "format": STORE_FORMAT, "partitions": partitions,
        "created_at": datetime.now(UTC).isoformat(),
        "counts": {"tasks": report.tasks, "runs": report.runs, "judgements": report.judgements,
                   "grades": report.grades, "rejected": report.rejected,
                   "reruns": len(reruns),
                   "setups": sorted({slot[0] for rid, slot in slot_of.items()
                                     if rid not in dropped})},
        "partition_runs": {str(k): v for k, v in sorted(writer.partition_rows.items())},
        "inputs": [f.model_dump(mode="json") for f in files],
        "warnings": [w.model_dump(mode="json") for w in task_load.warnings],
    }
    (root / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n",
                                 encoding="utf-8")
    return report


def store_records(store: Path | str, manifest: dict[str, Any]) -> dict[str, Any]:
    """What a store holds besides its runs and frames, as :class:`~grade_kit.reading.inputs.Inputs`
    fields: its validated ``tasks``, the ``rejected`` records :func:`pack` kept, the task
    ``warnings`` and the input ``files`` (path, SHA-256, records, rejected)."""
    loaded = load_tasks(Path(store) / "tasks.jsonl")
    if loaded.rejected:  # pragma: no cover - written by pack from validated tasks
        raise InputError(loaded.rejected[0].message())
    with (Path(store) / "rejected.jsonl").open(encoding="utf-8") as handle:
        rejected = [Rejected(**{k: item[k] for k in ("source", "line", "field", "error", "raw")})
                    for item in map(json.loads, handle)]
    return {"tasks": CompactTasks(loaded.records), "rejected": rejected,
            "warnings": [WarningItem.model_validate(w) for w in manifest.get("warnings", [])],
            "files": [InputFile.model_validate(f) for f in manifest.get("inputs", [])]}


class StoreRuns(LazyRecords[Run]):
    """The runs of a store as :class:`~grade_kit.schema.Run` models, read one partition at a
    time when asked for (the last partition read is kept)."""

    def __init__(self, store: Path | str, manifest: dict[str, Any]) -> None:
        super().__init__(Run, [])
        self.store = Path(store)
        counts = manifest.get("partition_runs", {})
        self._sizes = [int(counts.get(str(k), 0)) for k in range(int(manifest["partitions"]))]
        self.reruns = int(manifest["counts"].get("reruns", 0))
        self.setups = len(manifest["counts"].get("setups", []))
        self.judgements = int(manifest["counts"].get("judgements", 0))
        self.grades = int(manifest["counts"].get("grades", 0))
        self._cached: tuple[int, LazyRecords[Run]] | None = None

    def __len__(self) -> int:
        return sum(self._sizes)

    def _partition(self, partition: int) -> LazyRecords[Run]:
        if self._cached is None or self._cached[0] != partition:
            # each record through the one reader: a store on disk is trusted no more than
            # a file of runs
            records: list[Any] = []
            for path in sorted((self.store / "runs" / f"p={partition:03d}").glob("*.parquet")):
                records.extend(kept_records(str(path), record_lines(path), Run))
            self._cached = (partition, LazyRecords(Run, records))
        return self._cached[1]

    def _item_at(self, index: int) -> Run:
        for partition, size in enumerate(self._sizes):
            if index < size:
                return self._partition(partition)[index]
            index -= size
        raise IndexError("run index out of range")  # pragma: no cover - checked before

    def __iter__(self) -> Iterator[Run]:
        for partition, size in enumerate(self._sizes):
            if size:
                yield from self._partition(partition)

    @property
    def raw(self) -> list[Any]:
        """Every run as a decoded struct (fields only, no model built), in index order: all
        partitions are read, so this holds every run in memory."""
        return [item for partition, size in enumerate(self._sizes) if size
                for item in self._partition(partition).raw]

    def __repr__(self) -> str:
        return f"StoreRuns({self.store}, {len(self)} runs)"


def read_light_frames(store: Path | str) -> dict[str, pl.DataFrame]:
    """Every run and verdict frame of the whole store but the heavy ones, which come empty
    (an evaluation of a store reads those one partition at a time)."""
    return {name: (pl.DataFrame(schema=COLUMNS[name]) if name in HEAVY_FRAMES
                   else read_store_frame(store, name))
            for name in (*RUN_FRAMES, *VERDICT_FRAMES)}
