"""The one reader of records: lines (of files or in-memory records) to validated records,
every bad one kept with its file, line and field (docs/methodology.md §6).

Bad input anywhere gives a clear error naming file, line and field; the good records go on;
the bad ones are kept verbatim (:func:`write_rejects`) and counted in the report. Nothing is
dropped silently. Tasks load through :mod:`grade_kit.reading.task_files`; runs, judgements and
grades through :mod:`grade_kit.reading.records`, with their checks across lines.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import json
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeAlias, TypeVar

import msgspec
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pydantic import BaseModel, ValidationError

from grade_kit._gc import gc_paused
from grade_kit.frames import raw_records
from grade_kit.reading._fastread import LazyRecords, decode_fast, struct_of
from grade_kit.reading.parse import ParseError, Undecodable, loads_json, read_lines
from grade_kit.schema import InputError, InputFile, Reject, Run, WarningItem

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


def memory_lines(records: Sequence[Mapping[str, Any] | BaseModel]) -> Iterator[Line]:
    """In-memory records as numbered lines of JSON (from 1), which meet every check a file's
    lines do; a model's values are written as Python's decoder reads them back (NaN and
    infinities too, where pydantic's JSON mode would make them null)."""
    for number, record in enumerate(records, start=1):
        data = record.model_dump() if isinstance(record, BaseModel) else record
        yield number, json.dumps(data, ensure_ascii=False, default=str)


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
    :class:`~grade_kit.reading._fastread.LazyRecords` (models built on first access)."""
    lines: list[int | None] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    """The file (or ``<runs>``-style name) each record came from."""
    rejected: list[Rejected] = field(default_factory=list)
    warnings: list[WarningItem] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.records)


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


def validation_reject(source: str, line: int | None, raw: str,
                       exc: ValidationError) -> Rejected:
    field_name, msg = describe_validation_error(exc)
    return Rejected(source, line, field_name, msg, raw)


def file_lines(path: Path) -> Iterator[Line]:
    """The numbered non-blank lines of the file at ``path``
    (:func:`~grade_kit.reading.parse.read_lines`).

    Raises:
        InputError: when it is missing, not a regular file, or cannot be read.
    """
    if not path.is_file():
        raise InputError(f"{path}: no such file (or not a regular file)")
    try:
        yield from read_lines(path)
    except OSError as exc:
        raise InputError(f"{path}: cannot be read: {exc.strerror or exc}") from exc


Check = Callable[[Any, int, str], tuple[str | None, str] | None]
"""A loader's own check of a record that passed its model (a model or its fast struct, read
by field names only): None, or the (field, reason) of a reject."""


RECORD_COLUMN = "record"
"""The column of a records Parquet file (a packed store's runs, a scored folder's state) that
holds each record's JSON text: read back line by line through :func:`read_jsonl`."""
_RECORD_ROWS = 4096
"""Rows per row group of a records file: one record is read without the rest."""


def _record_json(record: Any) -> msgspec.Raw:
    """A pydantic model among the structs, as the JSON text Python's decoder reads back to
    the same values: a model was read by the reference path, whose open fields may hold NaN,
    infinities or integers past 64 bits (written as Python writes them, where pydantic's own
    JSON would write null)."""
    if isinstance(record, BaseModel):
        return msgspec.Raw(json.dumps(record.model_dump(), ensure_ascii=False,
                                     separators=(",", ":")).encode())
    raise TypeError(f"not a record: {type(record).__name__}")


_RECORD_ENCODER = msgspec.json.Encoder(enc_hook=_record_json)


def _record_blocks(records: Sequence[Any]) -> Iterator[pa.LargeStringArray]:
    """The records' JSON texts (a struct as msgspec encodes it, a model as
    :func:`_record_json` writes it), a block of :data:`_RECORD_ROWS` at a time: each block
    encoded in one call into one buffer, never a Python string per record."""
    for first in range(0, len(records), _RECORD_ROWS):
        block = _RECORD_ENCODER.encode_lines(records[first:first + _RECORD_ROWS])
        # a JSON line holds no raw newline: the lines end at the newlines, which are cut
        ends = np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 10) + 1
        offsets = np.concatenate(([0], ends)).astype(np.int64)
        lines = pa.LargeStringArray.from_buffers(
            len(ends), pa.py_buffer(offsets.tobytes()), pa.py_buffer(block))
        yield pc.utf8_rtrim(lines, characters="\n")


def record_texts(records: Sequence[Any]) -> pl.Series:
    """Each record's JSON text, as a String series named :data:`RECORD_COLUMN`."""
    parts = [pl.Series(RECORD_COLUMN, block) for block in _record_blocks(records)]
    if not parts:
        return pl.Series(RECORD_COLUMN, [], dtype=pl.String)
    return pl.concat(parts, rechunk=False)


def write_record_file(path: Path | pa.NativeFile, records: Sequence[Any]) -> None:
    """``records`` as a records Parquet file (:data:`RECORD_COLUMN`, zstd, a row group per
    block of records, written as it is encoded: the whole text is never held) at ``path``,
    or into an Arrow output stream."""
    schema = pa.schema([(RECORD_COLUMN, pa.large_string())])
    # zstd at level 1: as small as the default level here (193 MB of runs' JSON -> 28 MB at
    # 100k per-task runs), and faster; no dictionary: records are distinct
    with pq.ParquetWriter(path, schema, compression="zstd", compression_level=1,
                          use_dictionary=False) as writer:
        for block in _record_blocks(records):
            writer.write_table(pa.table([block], schema=schema))


RecordSource: TypeAlias = Path | pa.Buffer
"""Where a records Parquet file is: a path, or its bytes held in memory."""


def _parquet(source: RecordSource) -> pq.ParquetFile:
    return pq.ParquetFile(pa.BufferReader(source) if isinstance(source, pa.Buffer) else source)


def record_lines(path: RecordSource) -> Iterator[Line]:
    """The records of a Parquet file's :data:`RECORD_COLUMN`, numbered from 1 by row, as
    lines for :func:`read_jsonl` (a batch of rows at a time).

    Raises:
        InputError: when it is missing or not a Parquet file with that column.
    """
    try:
        file = _parquet(path)
        kind = file.schema_arrow.field(RECORD_COLUMN).type
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)
                or pa.types.is_string_view(kind)):
            raise InputError(f"{path}: not a records file (its {RECORD_COLUMN} column holds "
                             f"{kind}, not text)")
        number = 0
        for batch in file.iter_batches(batch_size=_RECORD_ROWS, columns=[RECORD_COLUMN]):
            for text in batch.column(0).to_pylist():
                number += 1
                # a missing value is no record: the reader refuses it, naming its row
                yield number, "null" if text is None else text
    except (OSError, KeyError, pa.ArrowException) as exc:
        raise InputError(f"{path}: not a records file ({exc})") from exc


def kept_records(source: str, lines: Iterator[Line], model: type[Model]) -> list[Any]:
    """Records grade_kit kept on disk itself (a packed store's runs, a scored folder's
    records), read through the one reader; each must pass.

    Raises:
        InputError: for the first that does not, naming its file, row and field.
    """
    loaded = read_jsonl(source, lines, model)
    if loaded.rejected:
        bad = loaded.rejected[0]
        raise InputError(f"{bad.source}: row {bad.line}, field '{bad.field or '-'}': "
                         f"{bad.error} (changed after grade_kit wrote it)")
    return list(loaded.records)


class RecordFile:
    """One record of a records Parquet file at a time, by index: its row group is read (the
    last one read is kept), not the file."""

    def __init__(self, path: RecordSource) -> None:
        self.path = path
        self._file: pq.ParquetFile | None = None
        self._starts: list[int] = []
        self._group: tuple[int, list[str]] | None = None

    def text(self, index: int) -> str:
        """The JSON text of the record at 0-based ``index``."""
        if self._file is None:
            self._file = _parquet(self.path)
            meta = self._file.metadata
            self._starts = list(itertools.accumulate(
                (meta.row_group(k).num_rows for k in range(meta.num_row_groups)), initial=0))
        group = bisect.bisect_right(self._starts, index) - 1
        if self._group is None or self._group[0] != group:
            table = self._file.read_row_group(group, columns=[RECORD_COLUMN])
            self._group = (group, table.column(0).to_pylist())
        return self._group[1][index - self._starts[group]]


class HeldRecords(LazyRecords[Any]):
    """Validated records held as a records Parquet file (:func:`write_record_file`): a file
    (a scored folder's), or its compressed bytes in memory (an evaluation's, once its records
    are flattened into frames: 28 MB for 100k runs that took 500 MB decoded). Each record is
    read back through the one reader when asked for: one alone from its own row group (the
    explorer shows one run at a time), all at once for iteration.

    Args:
        source: The file's path, or its bytes.
        count: How many records it holds.
        model: Their model.
        name: The source named in an error (a path names itself).
    """

    def __init__(self, source: RecordSource, count: int, model: type[BaseModel],
                 name: str | None = None) -> None:
        super().__init__(model, [])
        self.source = source
        self._count = count
        self._name = name or str(source)
        self._file = RecordFile(source)
        self._one: dict[int, Any] = {}
        self.reruns: int | None = None
        """Runs only, when counted as they were held: the re-runs among them."""
        self.setups: int | None = None
        """Runs only, when counted as they were held: their setups."""

    @classmethod
    def of(cls, records: Sequence[Any], model: type[BaseModel], name: str) -> HeldRecords:
        """``records`` encoded into a records Parquet file in memory."""
        raw = raw_records(records)
        sink = pa.BufferOutputStream()
        write_record_file(sink, raw)
        held = cls(sink.getvalue(), len(raw), model, name)
        if model is Run:
            held.reruns = sum(1 for run in raw if run.attempt_of is not None)
            held.setups = len({run.setup for run in raw})
        return held

    def __len__(self) -> int:
        return self._count

    def _item_at(self, index: int) -> Any:
        if index not in self._one:
            text = self._file.text(index)
            kept = kept_records(self._name, iter([(index + 1, text)]), self._model)
            self._one[index] = LazyRecords(self._model, kept)[0]
        return self._one[index]

    def __iter__(self) -> Iterator[Any]:
        return iter(LazyRecords(self._model, self.raw))

    @property
    def raw(self) -> list[Any]:
        """Every record's value (fields only, no model built): the whole file is read."""
        return kept_records(self._name, record_lines(self.source), self._model)

    def __repr__(self) -> str:
        return f"HeldRecords({self._model.__name__} x {self._count})"


def read_jsonl(
    source: str,
    lines: Iterator[Line],
    model: type[Model],
    check: Check | None = None,
) -> Loaded[Any]:
    """Validate each line as ``model`` (a run, judgement or grade); ``check`` may reject
    more. A line is first tried as the model's struct
    (:func:`~grade_kit.reading._fastread.decode_fast`); the records are structs where that
    succeeded, models elsewhere."""
    records: list[Any] = []
    out: Loaded[Any] = Loaded(records=records)
    with gc_paused():
        _validate_lines(lines, source, model, check, out, records)
    return out


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
        out.rejected.append(validation_reject(source, number, text, exc))
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


def line_chunks(lines: Iterator[Line], size: int) -> Iterator[list[Line]]:
    """``lines`` in lists of ``size`` (the last one shorter)."""
    while chunk := list(itertools.islice(lines, size)):
        yield chunk
