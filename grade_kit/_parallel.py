"""Reading large run files in several processes (docs/scaling.md "Reading in parallel").

Decoding and flattening a run line depends on that line alone; only the checks that span
lines (a known task is per line, but a first run_id, one primary attempt per slot and a
re-run naming an accepted run are not) need the lines in order. So :func:`load_runs_parallel`
cuts each file into newline-aligned byte ranges and has worker processes do the per-line
work in two steps:

1. each worker decodes its ranges (the loaders' own fast and reference paths, the same
   rejects) and sends back, per accepted line, its line number, text and the few fields the
   cross-line checks read;
2. the main process runs those checks (:class:`~grade_kit.io.RunChecks`, exactly as the
   sequential loader does) over the ranges in file order, then tells each worker which of
   its records stand; the worker flattens those into the run frames and sends them back.

The result equals the sequential loader's: the same records in the same order, the same
lines, the same rejects with the same messages, and frames equal to
:func:`~grade_kit.frames.run_frames` of the records (``tests/test_parallel.py``).
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
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, NamedTuple

import polars as pl

from grade_kit._fastread import FastRun, FlatRuns, RunKey
from grade_kit.frames import run_frames
from grade_kit.io import InputError, Loaded, Rejected, RunChecks, _read_jsonl
from grade_kit.parse import numbered_lines
from grade_kit.schema import Run

__all__ = ["PARALLEL_BYTES", "ByteRange", "byte_ranges", "load_runs_parallel",
           "read_workers"]

PARALLEL_BYTES = 64 * 2**20
"""Run files of at least this many bytes in all are read in parallel (smaller inputs do not
repay starting the worker processes: importing grade_kit alone takes 1.8 s)."""


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


def byte_ranges(paths: Sequence[Path], pieces: int) -> list[ByteRange]:
    """Each file cut into up to ``pieces`` ranges of about equal size, each ending just
    after a newline (or at the end of the file), in file order."""
    out: list[ByteRange] = []
    for path in paths:
        size = path.stat().st_size
        if size == 0:
            out.append(ByteRange(str(path), str(path), 0, 0, 1))
            continue
        with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0,
                                                  access=mmap.ACCESS_READ) as data:
            cuts = [0]
            for k in range(1, pieces):
                newline = data.find(b"\n", max(size * k // pieces, cuts[-1]))
                if newline == -1 or newline + 1 >= size:
                    break
                cuts.append(newline + 1)
            cuts.append(size)
            line = 1
            for start, end in itertools.pairwise(cuts):
                out.append(ByteRange(str(path), str(path), start, end, line))
                line += sum(data[at:min(at + _BLOCK, end)].count(b"\n")
                            for at in range(start, end, _BLOCK))
    return out


def _range_lines(part: ByteRange) -> tuple[list[bytes], list[int]]:
    """The range's lines (without their newlines) and the file offset of each."""
    with open(part.path, "rb") as handle:
        handle.seek(part.start)
        data = handle.read(part.end - part.start)
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()  # the text after the last newline belongs to no line
    offsets = []
    at = part.start
    for line in lines:
        offsets.append(at)
        at += len(line) + 1
    return lines, offsets


def line_text(path: str, line: int, offset: int, length: int) -> str:
    """The text of one line of ``path`` as the loaders read it (:func:`numbered_lines`)."""
    with open(path, "rb") as handle:
        handle.seek(offset)
        raw = handle.read(length)
    return next(iter(numbered_lines([raw], line)), (line, ""))[1]


class _Decoded(NamedTuple):
    """What a worker sends back per range: per accepted line its key, number, offset and
    length (the text stays in the file), the texts of re-runs (the second pass quotes them),
    and the rejects."""

    keys: list[RunKey]
    lines: list[int]
    offsets: list[int]
    lengths: list[int]
    rerun_texts: dict[int, str]
    rejected: list[Rejected]


def _decode(part: ByteRange) -> tuple[_Decoded, list[Any]]:
    """Step 1 in a worker: the range's lines through the loader's per-line checks."""
    raw_lines, offsets = _range_lines(part)
    rerun_texts: dict[int, str] = {}  # index among the accepted records -> text
    accepted = 0

    def note(record: Any, _line: int, text: str) -> None:
        nonlocal accepted
        if record.attempt_of is not None:
            rerun_texts[accepted] = text
        accepted += 1

    loaded = _read_jsonl(part.source, numbered_lines(raw_lines, part.first_line), Run, note,
                         FastRun)
    records = list(loaded.records)  # structs and models (a plain list here)
    keys = [RunKey(r.run_id, r.setup, r.task_id, r.repeat, r.attempt_of, r.status)
            for r in records]
    lines = [int(number) for number in loaded.lines if number is not None]
    index = [line - part.first_line for line in lines]
    return _Decoded(keys, lines, [offsets[i] for i in index],
                    [len(raw_lines[i]) for i in index], rerun_texts, loaded.rejected), records


def _serve(inbox: Connection, outbox: Connection) -> None:
    """A reading process: decode ranges, then flatten the records that stand and write
    their frames as Arrow IPC files the main process reads."""
    held: dict[int, tuple[list[Any], list[int]]] = {}
    while True:
        message = inbox.recv()
        try:
            if message[0] == "decode":
                _, index, part = message
                decoded, records = _decode(part)
                held[index] = (records, decoded.lines)
                outbox.send(decoded)
            elif message[0] == "flatten":
                _, index, keep, folder = message
                records, lines = held.pop(index)
                frames = run_frames([records[i] for i in keep], [lines[i] for i in keep])
                for name, frame in frames.items():
                    frame.write_ipc(Path(folder) / f"{index}-{name}.arrow")
                outbox.send(sorted(frames))
            else:
                return
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
            [sys.executable, "-c", "from grade_kit._parallel import worker_main; worker_main()"],
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


def load_runs_parallel(paths: Sequence[Path], checks: RunChecks,
                       workers: int) -> Loaded[Run]:
    """:func:`grade_kit.io.load_runs` of the files ``paths`` on ``workers`` processes.

    The records are a :class:`~grade_kit._fastread.FlatRuns` carrying the run frames."""
    ranges = byte_ranges(paths, workers)
    started: list[_Worker] = []
    try:
        for _ in range(min(workers, len(ranges))):
            started.append(_Worker())
        owner = [started[i % len(started)] for i in range(len(ranges))]
        for index, part in enumerate(ranges):
            owner[index].send(("decode", index, part))
        return _check_and_flatten(ranges, owner, checks)
    finally:
        for worker in started:
            worker.stop()


def _check_and_flatten(ranges: Sequence[ByteRange], owner: Sequence[_Worker],
                       checks: RunChecks) -> Loaded[Run]:
    """Step 2 in the main process: the cross-line checks in file order, then the frames of
    the records that stand, from their workers."""
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
    with tempfile.TemporaryDirectory(prefix="grade-kit-read-") as folder:
        for index in range(len(ranges)):
            owner[index].send(("flatten", index, keep[index], folder))
        names = [owner[index].receive() for index in range(len(ranges))]
        frames = {name: pl.concat([pl.read_ipc(Path(folder) / f"{index}-{name}.arrow")
                                   for index in range(len(ranges))], how="vertical",
                                  rechunk=False)
                  for name in names[0]}
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
