"""Reading large run files in several processes (docs/scaling.md "Reading in parallel").

Decoding and flattening a run line depends on that line alone; only the checks that span
lines (a known task is per line, but a first run_id, one primary attempt per slot and a
re-run naming an accepted run are not) need the lines in order. So :func:`load_runs_parallel`
cuts each file into newline-aligned byte ranges of about :data:`RANGE_BYTES` and has worker
processes read them, one range after another:

1. a worker decodes a range (the loaders' own fast and reference paths, the same rejects),
   flattens every record it accepted into the run frames, each row tagged with its record's
   index in the range, writes the frames as Arrow IPC files, and sends back, per accepted
   line, its line number, byte offset and the few fields the cross-line checks read;
2. meanwhile the main process runs those checks (:class:`~grade_kit.io.RunChecks`, exactly
   as the sequential loader does) over the ranges in file order, then reads the frames and
   keeps the rows of the records that stand.

A worker holds one range at a time, and the main process checks while the workers read.
The result equals the sequential loader's: the same records in the same order, the same
lines, the same rejects with the same messages, and frames equal to
:func:`~grade_kit.frames.run_frames` of the records (``tests/test_parallel.py``).

Judgement and grade files given with the runs are cut into ranges too and decoded by the same
workers after the runs (:func:`_read_verdict_range`: the lines in bulk, those it leaves
through the loaders' fast and reference paths, the records sent back as their frame); their
checks across lines (a known run, one judgement per run and dimension, one grade per run)
need the runs that stand, so the main process applies them to all ranges at once, over
columns, and keeps the records as a :class:`~grade_kit._fastread.FlatVerdicts`
(:class:`VerdictChecks`). Last, the workers hash the input files for results.json while the
main process checks.
"""

from __future__ import annotations

import contextlib
import itertools
import mmap
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Generic, NamedTuple, TypeVar, cast

import msgspec
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.ipc
from pydantic import BaseModel

from grade_kit._fastread import (
    FastGrade,
    FastJudgement,
    FastRun,
    FlatRuns,
    FlatVerdicts,
    LazySequence,
    RunKey,
    decode_lines_fast,
)
from grade_kit.frames import COLUMNS, RECORD, RUN_FRAMES, run_frames, verdict_frames
from grade_kit.io import (
    InputError,
    Loaded,
    Rejected,
    RunChecks,
    VerdictCheck,
    _read_jsonl,
    sha256_of,
)
from grade_kit.parse import numbered_lines
from grade_kit.schema import Grade, Judgement, Run

__all__ = [
    "PARALLEL_BYTES",
    "RANGE_BYTES",
    "ByteRange",
    "VerdictChecks",
    "VerdictPart",
    "byte_ranges",
    "line_text",
    "load_runs_parallel",
    "read_workers",
]

PARALLEL_BYTES = 64 * 2**20
"""Run files of at least this many bytes in all are read in parallel (smaller inputs do not
repay starting the worker processes, each of which imports polars, pydantic and the
loaders: 0.55-0.76 s)."""


RANGE_BYTES = 32 * 2**20
"""About how many bytes of a run file a worker reads at once (it holds one range's records,
a few hundred MB at the most, while it flattens them)."""

_BLOCK = 16 * 2**20


def read_workers() -> int:
    """How many processes read a large input: 2 on a machine with 2 or more cores (the
    gain beyond two was not measured), else 1 (sequential)."""
    return min(2, os.cpu_count() or 1)


@dataclass(frozen=True)
class ByteRange:
    """Bytes ``start:end`` of ``path`` (whole lines), whose first line is ``first_line``."""

    path: str
    source: str
    start: int
    end: int
    first_line: int


def byte_ranges(paths: Sequence[Path], pieces: int,
                piece_bytes: int | None = None) -> Sequence[ByteRange]:
    """Each file cut into up to ``pieces`` ranges of about equal size (more, of about
    ``piece_bytes`` each, for a file larger than ``pieces * piece_bytes``), each ending just
    after a newline (or at the end of the file), in file order.

    The cuts are found at once (a newline looked for near each); a range's first line
    number, which needs the newlines of every range before it counted, only when that range
    is first asked for, so a range can go to a reading process while the next are counted.
    """
    cuts: list[tuple[Path, int, int]] = []
    for path in paths:
        size = path.stat().st_size
        cut = pieces if piece_bytes is None else max(pieces, -(-size // piece_bytes))
        if size == 0:
            cuts.append((path, 0, 0))
            continue
        with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0,
                                                  access=mmap.ACCESS_READ) as data:
            at = [0]
            for k in range(1, cut):
                newline = data.find(b"\n", max(size * k // cut, at[-1]))
                if newline == -1 or newline + 1 >= size:
                    break
                at.append(newline + 1)
            at.append(size)
        cuts.extend((path, start, end) for start, end in itertools.pairwise(at))
    return _NumberedRanges(cuts)


class _NumberedRanges(LazySequence[ByteRange]):
    """:func:`byte_ranges`' result: ranges numbered in order as they are first asked for."""

    def __init__(self, cuts: list[tuple[Path, int, int]]) -> None:
        self._cuts = cuts
        self._ranges: list[ByteRange] = []

    def __len__(self) -> int:
        return len(self._cuts)

    def _item_at(self, index: int) -> ByteRange:
        for path, start, end in self._cuts[len(self._ranges):index + 1]:
            line = 1  # a file's first range starts at 0; the others go on from the last
            if start > 0:
                last = self._ranges[-1]
                line = last.first_line + _newlines(path, last.start, last.end)
            self._ranges.append(ByteRange(str(path), str(path), start, end, line))
        return self._ranges[index]


def _newlines(path: Path, start: int, end: int) -> int:
    """How many newlines bytes ``start:end`` of ``path`` hold."""
    with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0,
                                              access=mmap.ACCESS_READ) as data:
        return sum(data[at:min(at + _BLOCK, end)].count(b"\n")
                   for at in range(start, end, _BLOCK))


def _range_lines(part: ByteRange) -> tuple[list[bytes], list[int]]:
    """The range's lines (without their newlines) and the file offset of each."""
    with open(part.path, "rb") as handle:
        handle.seek(part.start)
        data = handle.read(part.end - part.start)
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()  # the text after the last newline belongs to no line
    newlines = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == ord("\n"))
    offsets = np.concatenate(([0], newlines[:len(lines) - 1] + 1)) + part.start
    return lines, offsets.tolist()


def line_text(path: str, line: int, offset: int, length: int) -> str:
    """The text of one line of ``path`` as the loaders read it (:func:`numbered_lines`)."""
    with open(path, "rb") as handle:
        handle.seek(offset)
        raw = handle.read(length)
    return next(iter(numbered_lines([raw], line)), (line, ""))[1]


class _Decoded(NamedTuple):
    """What a worker sends back per range: per accepted line its key, number, offset and
    length (the text stays in the file), the texts of re-runs (the second pass quotes them),
    and the rejects. The range's frames are in Arrow files named after its index."""

    keys: list[RunKey]
    lines: list[int]
    offsets: list[int]
    lengths: list[int]
    rerun_texts: dict[int, str]
    rejected: list[Rejected]


class _RangeRecords(NamedTuple):
    """A range's lines through the loaders' fast and reference paths: the records that passed
    their model, with their lines and their index among the range's lines, and the rejects."""

    records: list[Any]
    lines: list[int]
    index_of: list[int]
    rejected: list[Rejected]


def _range_records(part: ByteRange, raw_lines: list[bytes], model: type[BaseModel],
                   fast: type[msgspec.Struct], bulk: bool) -> _RangeRecords:
    """The range's lines as the loaders read them (their text, numbering and rejects:
    :func:`~grade_kit.io._read_jsonl`), in line order; with ``bulk``, first all at once
    (:func:`~grade_kit._fastread.decode_lines_fast`), the lines it leaves then one by one.

    Bulk decoding pays for short lines (a 32 MB range of 317,000 judgements: 3.2-4.5 us a
    line in all, against 4.3-5.8 one by one), not for long ones (runs of 1.8 KB: 29-36 us a line
    either way, measured on one range, and bulk holds the range's plain JSON at once)."""
    records: list[Any] = (decode_lines_fast(raw_lines, fast) if bulk
                          else [None] * len(raw_lines))
    others = [i for i, record in enumerate(records) if record is None]
    lines = (numbered_lines(raw_lines, part.first_line) if not bulk else
             (line for i in others for line in numbered_lines([raw_lines[i]],
                                                                part.first_line + i)))
    loaded = _read_jsonl(part.source, lines, model, None, fast)
    for record, number in zip(loaded.records, loaded.lines, strict=True):
        records[cast(int, number) - part.first_line] = record
    index_of = [i for i, record in enumerate(records) if record is not None]
    return _RangeRecords([records[i] for i in index_of],
                         [part.first_line + i for i in index_of], index_of, loaded.rejected)


def _read_range(index: int, part: ByteRange, folder: str) -> _Decoded:
    """A worker's whole job for one range: the loader's per-line checks, then every
    accepted record flattened, rows tagged with the record's index (:data:`RECORD`)."""
    raw_lines, offsets = _range_lines(part)
    got = _range_records(part, raw_lines, Run, FastRun, bulk=False)
    rerun_texts = {  # index among the accepted records -> text (the second pass quotes it)
        k: next(numbered_lines([raw_lines[got.index_of[k]]], got.lines[k]))[1]
        for k, record in enumerate(got.records) if record.attempt_of is not None}
    keys = [RunKey(r.run_id, r.setup, r.task_id, r.repeat, r.attempt_of, r.status)
            for r in got.records]
    for name, frame in run_frames(got.records, got.lines, tag_records=True).items():
        frame.write_ipc(Path(folder) / f"{index}-{name}.arrow")
    return _Decoded(keys, got.lines, [offsets[i] for i in got.index_of],
                    [len(raw_lines[i]) for i in got.index_of], rerun_texts, got.rejected)


class VerdictPart(NamedTuple):
    """A range of a judgements or grades file as a worker decoded it: the records that passed
    their model as their frame (:func:`~grade_kit.frames.verdict_frames`' columns, and each
    record's ``line``, byte ``offset`` and ``length``), and the rejects of the model stage,
    in line order."""

    source: str
    path: str
    frame: pl.DataFrame
    rejected: list[Rejected]


_VERDICT_MODELS: dict[str, tuple[type[Judgement] | type[Grade],
                                 type[FastJudgement] | type[FastGrade]]] = {
    "judgements": (Judgement, FastJudgement), "grades": (Grade, FastGrade)}
"""The verdict kinds a worker decodes: model and fast struct of each."""


def _read_verdict_range(part: ByteRange, kind: str) -> VerdictPart:
    """A worker's job for a range of a judgements or grades file: each line through the
    loaders' fast and reference paths, the records that pass flattened into their frame,
    without the checks across lines (the main process applies them, :class:`VerdictChecks`)."""
    raw_lines, offsets = _range_lines(part)
    model, fast = _VERDICT_MODELS[kind]
    got = _range_records(part, raw_lines, model, fast, bulk=True)
    frame = verdict_frames(**{kind: got.records})[kind].with_columns(
        line=pl.Series(got.lines, dtype=pl.Int64),
        offset=pl.Series([offsets[i] for i in got.index_of], dtype=pl.Int64),
        length=pl.Series([len(raw_lines[i]) for i in got.index_of], dtype=pl.Int64))
    return VerdictPart(part.source, part.path, frame, got.rejected)


Model = TypeVar("Model", Judgement, Grade)


class VerdictChecks(Generic[Model]):
    """The loader's result for decoded verdict ranges given in file order (:meth:`add`):
    ``check`` applied to all their rows at once, its rejects merged with the model stage's by
    line, exactly as :func:`grade_kit.io.load_judgements` or
    :func:`~grade_kit.io.load_grades` would have it, and the records that stand as a
    :class:`~grade_kit._fastread.FlatVerdicts` over their frame (:meth:`checked`). A
    reject's text is read back from the file."""

    def __init__(self, model: type[Model], check: VerdictCheck) -> None:
        self._model: type[Model] = model
        self._check = check
        self._parts: list[VerdictPart] = []

    def add(self, part: VerdictPart) -> None:
        """The next range, as a worker decoded it."""
        self._parts.append(part)

    def checked(self) -> Loaded[Model]:
        """The ranges added so far, checked (all at once: call it after the last)."""
        parts = self._parts
        kind = self._check.kind
        columns = list(COLUMNS[kind])
        where = ["part", "line", "offset", "length"]
        rows = pl.concat([pl.DataFrame(schema={**COLUMNS[kind], "part": pl.UInt32,
                                               "line": pl.Int64, "offset": pl.Int64,
                                               "length": pl.Int64})]
                         + [p.frame.select(*columns, part=pl.lit(i, pl.UInt32),
                                           line="line", offset="offset", length="length")
                            for i, p in enumerate(parts)], how="vertical")
        standing, failed = self._check.frame_rejects(rows)
        rejected = [(i, r) for i, p in enumerate(parts) for r in p.rejected]
        failed_at = rows.select(where)[[row for row, _, _ in failed]]
        for (_, field_, message), (part, line, offset, length) in zip(
                failed, failed_at.iter_rows(), strict=True):
            rejected.append((part, Rejected(parts[part].source, line, field_, message,
                                            line_text(parts[part].path, line, offset,
                                                      length))))
        rejected.sort(key=lambda pair: (pair[0], pair[1].line or 0))
        kept = rows.filter(standing)
        counts = kept.get_column("part").value_counts(sort=False).sort("part")
        records = FlatVerdicts(self._model, _VERDICT_MODELS[kind][1], kept.select(columns),
                               [p.path for p in parts], kept.select(where), line_text)
        return Loaded(records=records, lines=kept.get_column("line").to_list(),
                      sources=[s for part, n in counts.iter_rows()
                               for s in itertools.repeat(parts[part].source, n)],
                      rejected=[r for _, r in rejected])


def _serve(inbox: Connection, outbox: Connection) -> None:
    """A reading process: read ranges as they are asked for, until told to stop."""
    jobs: dict[str, Callable[..., Any]] = {"read": _read_range,
                                           "verdicts": _read_verdict_range,
                                           "sha256": sha256_of}
    while True:
        message = inbox.recv()
        job = jobs.get(message[0])
        if job is None:
            return
        try:
            outbox.send(job(*message[1:]))
        except Exception as exc:  # the main process raises it (a file that became unreadable)
            outbox.send(exc)


def worker_main() -> None:
    """Entry point of a reading process: messages come on stdin and go back on stdout
    (anything printed goes to stderr instead)."""
    out_fd = os.dup(1)
    os.dup2(2, 1)
    _serve(Connection(0, writable=False), Connection(out_fd, readable=False))
    sys.stderr.flush()
    os._exit(0)  # nothing to clean up: skip freeing every record one by one


class _Worker:
    """A reading process, started as ``python -c`` (not by multiprocessing's spawn, which
    would run the caller's main script again in the worker when it lacks a
    ``__main__`` guard)."""

    def __init__(self) -> None:
        # One polars thread per worker: two workers already keep two cores busy.
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
               "POLARS_MAX_THREADS": "1"}
        self.process = subprocess.Popen(
            # -P: the working folder is not put first on the path, so the worker imports the
            # grade_kit this process did (the path is passed on), not one found there.
            [sys.executable, "-P", "-c",
             "from grade_kit._parallel import worker_main; worker_main()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        assert self.process.stdin is not None and self.process.stdout is not None
        self.outbox = Connection(os.dup(self.process.stdin.fileno()), readable=False)
        self.inbox = Connection(os.dup(self.process.stdout.fileno()), writable=False)
        self.process.stdin.close()
        self.process.stdout.close()

    def send(self, message: tuple[Any, ...]) -> None:
        self.outbox.send(message)

    def receive(self) -> Any:
        try:
            got = self.inbox.recv()
        except EOFError:
            raise RuntimeError(f"a reading process stopped (exit code "
                               f"{self.process.wait()}); see its messages above") from None
        if isinstance(got, OSError):  # a file that went away or became unreadable
            raise InputError(f"{got.filename}: cannot be read: {got.strerror or got}") from got
        if isinstance(got, Exception):
            raise got
        return got

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.outbox.send(("stop",))
        self.outbox.close()
        self.inbox.close()
        # Reaped in the background: a process holding a large heap takes a moment to exit.
        threading.Thread(target=self._reap, daemon=True).start()

    def _reap(self) -> None:
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def load_runs_parallel(
    paths: Sequence[Path], checks: RunChecks | Callable[[], RunChecks], workers: int,
    verdicts: Mapping[str, Sequence[Path]] | None = None,
    verdict_checks: Callable[[Loaded[Run]], Mapping[str, VerdictChecks[Any]]] | None = None,
) -> tuple[Loaded[Run], dict[str, Loaded[Any]]]:
    """:func:`grade_kit.io.load_runs` of the files ``paths`` on ``workers`` processes, and the
    judgement and grade files ``verdicts`` (by kind) decoded by the same workers after them.

    Args:
        paths: The run files.
        checks: The runs' checks across lines, or a function that makes them (called once
            every range is sent, so that what it does, loading the tasks, say, overlaps the
            reading).
        workers: Reading processes.
        verdicts: Judgement and grade files by kind (``judgements``, ``grades``); default
            none.
        verdict_checks: Given the runs that stand, a :class:`VerdictChecks` per kind of
            ``verdicts``: each range is checked as it comes, while the workers read on.

    Returns:
        The runs (records a :class:`~grade_kit._fastread.FlatRuns` carrying the run frames),
        and per verdict kind what its loader would return.
    """
    if verdicts and verdict_checks is None:
        raise ValueError("verdict files need their checks (verdict_checks)")
    ranges = byte_ranges(paths, workers, RANGE_BYTES)
    verdict_files = [(kind, byte_ranges(files, workers, RANGE_BYTES))
                     for kind, files in (verdicts or {}).items()]
    verdict_ranges: list[tuple[str, ByteRange]] = []
    # On an error a worker may still be writing a range's files while the folder goes:
    # that is no reason to hide the error.
    with tempfile.TemporaryDirectory(prefix="grade-kit-read-",
                                     ignore_cleanup_errors=True) as folder:
        started: list[_Worker] = []
        try:
            for _ in range(min(workers, len(ranges))):
                started.append(_Worker())
            hashed = list(dict.fromkeys([*(str(p) for p in paths),
                                         *(str(f) for files in (verdicts or {}).values()
                                           for f in files)]))
            jobs = len(ranges) + sum(len(parts) for _, parts in verdict_files) + len(hashed)
            owner = [started[i % len(started)] for i in range(jobs)]
            # Each range is sent as soon as its first line is counted, the next counted while
            # the workers read.
            for index, part in enumerate(ranges):
                owner[index].send(("read", index, part, folder))
            for kind, parts in verdict_files:
                for part in parts:
                    owner[len(ranges) + len(verdict_ranges)].send(("verdicts", part, kind))
                    verdict_ranges.append((kind, part))
            # Then the SHA-256 of each file (results.json provenance.inputs), while the
            # checks below keep this process busy.
            hash_jobs = len(ranges) + len(verdict_ranges)
            for index, path in enumerate(hashed, start=hash_jobs):
                owner[index].send(("sha256", path))
            if not isinstance(checks, RunChecks):
                checks = checks()
            runs = _check_and_collect(ranges, owner, checks, Path(folder))
            checkers = {} if verdict_checks is None else verdict_checks(runs)
            for index, (kind, _) in enumerate(verdict_ranges, start=len(ranges)):
                checkers[kind].add(owner[index].receive())
            loaded = {kind: checker.checked() for kind, checker in checkers.items()}
            digests = {path: owner[index].receive()
                       for index, path in enumerate(hashed, start=hash_jobs)}
            for one in (runs, *loaded.values()):
                one.digests.update(digests)
            return runs, loaded
        finally:
            for worker in started:
                worker.stop()


def _check_and_collect(ranges: Sequence[ByteRange], owner: Sequence[_Worker],
                       checks: RunChecks, folder: Path) -> Loaded[Run]:
    """In the main process: the cross-line checks in file order, range by range as the
    workers finish them, then the frames' rows of the records that stand."""
    rejected: list[Rejected] = []
    accepted: list[tuple[int, int]] = []  # (range, index in range), in file order
    decoded: list[_Decoded] = []
    for index, part in enumerate(ranges):
        got: _Decoded = owner[index].receive()
        decoded.append(got)
        rejected.extend(got.rejected)
        check = checks.checker(part.source)
        for i, (key, line) in enumerate(zip(got.keys, got.lines, strict=True)):
            problem = check(key, line, got.rerun_texts.get(i, ""))
            if problem is not None:
                text = line_text(part.path, line, got.offsets[i], got.lengths[i])
                rejected.append(Rejected(part.source, line, problem[0], problem[1], text))
            else:
                accepted.append((index, i))
    standing, rerun_rejects = checks.rerun_pass(
        [decoded[r].keys[i] for r, i in accepted], [decoded[r].lines[i] for r, i in accepted],
        [ranges[r].source for r, _ in accepted])
    rejected.extend(rerun_rejects)
    keep: list[list[int]] = [[] for _ in ranges]
    for r, i in (accepted[j] for j in standing):
        keep[r].append(i)
    frames = {name: pl.concat([_kept_rows(folder / f"{index}-{name}.arrow", keep[index],
                                          len(decoded[index].keys))
                               for index in range(len(ranges))], how="vertical",
                              rechunk=False)
              for name in RUN_FRAMES}
    kept = [(r, i) for r in range(len(ranges)) for i in keep[r]]
    records = FlatRuns(
        keys=[decoded[r].keys[i] for r, i in kept],
        locations=[(ranges[r].path, decoded[r].lines[i], decoded[r].offsets[i],
                    decoded[r].lengths[i]) for r, i in kept],
        frames=frames, read=line_text)
    out: Loaded[Run] = Loaded(records=records, rejected=rejected)
    out.lines.extend(decoded[r].lines[i] for r, i in kept)
    out.sources.extend(ranges[r].source for r, _ in kept)
    out.rejected.sort(key=lambda x: (x.source, x.line or 0))
    return out


def _mapped_frame(path: Path) -> pl.DataFrame:
    """An Arrow IPC file of a reading process as a frame over the file's pages, not a copy
    (``pl.read_ipc`` copies every buffer: 13 s for the 3.7 GB of frames of 1M runs). The
    pages stay mapped while the frame (or a frame sharing its buffers) lives, also after the
    file is removed; the operating system may drop and re-read them, as for any file."""
    with pa.memory_map(str(path)) as source:  # closing keeps the buffers' mapping
        table = pa.ipc.open_file(source).read_all()
    return cast(pl.DataFrame, pl.from_arrow(table))


def _kept_rows(path: Path, keep: list[int], records: int) -> pl.DataFrame:
    """The rows of a range's frame whose records are in ``keep`` (of ``records``)."""
    frame = _mapped_frame(path)
    if len(keep) < records:
        standing = np.zeros(records, dtype=bool)
        standing[keep] = True
        frame = frame.filter(standing[frame.get_column(RECORD).to_numpy()])
    return frame.drop(RECORD)
