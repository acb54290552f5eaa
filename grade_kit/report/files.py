"""The files ``grade-kit score`` and :meth:`grade_kit.Evaluation.write` write, each to a
temporary name beside it and renamed into place, so a reader never sees half a file."""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec
import polars as pl
from pydantic import BaseModel

from grade_kit.grade import long_scores_query
from grade_kit.io import InputError, Rejected, write_rejects
from grade_kit.report.markdown import scorecard_markdown

if TYPE_CHECKING:
    from grade_kit.evaluate import Evaluation

__all__ = ["OUTPUT_FILES", "atomic_write", "atomic_write_text", "indented_json",
           "indented_model_pieces", "output_folder", "record_line", "write_outputs",
           "write_records"]

LOCK_FILE = ".grade-kit.lock"
"""Held while a run writes its files into a folder."""

OUTPUT_FILES = {
    "results": "results.json",
    "scorecard": "scorecard.md",
    "scores": "scores.parquet",
    "run_scores": "run_scores.parquet",
    "run_grades": "run_grades.parquet",
    "runs": "runs.parquet",
    "rejects": "rejects.jsonl",
}
"""What is written, by name: results.json (schema in grade_kit/schemas), the scorecard, per-run
scores long (run x dimension) and wide, every run's grade, the tidy runs frame, rejects."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: Path, write: Callable[[Path], None]) -> Path:
    """Run ``write`` on a temporary file beside ``path``, then rename it into place (a
    symbolic link already at ``path`` is replaced, never followed)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual mode
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def indented_json(value: object) -> str:
    """``json.dumps(value, indent=2, ensure_ascii=False)``, character for character, fast.

    With an indent, Python's json falls back to its pure-Python encoder (3.3 s for a 56 MB
    results.json). Here the C encoder writes the compact text, which keeps every number's and
    string's text as ``json.dumps`` writes it, and msgspec re-indents it without touching a
    token (1.1 s for the same file); text msgspec cannot take (a lone surrogate) goes the
    plain way. ``tests/test_report.py`` checks the two agree on random values.
    """
    compact = json.dumps(value, ensure_ascii=False)
    try:
        return msgspec.json.format(compact, indent=2)
    except (UnicodeEncodeError, msgspec.DecodeError):
        return json.dumps(value, indent=2, ensure_ascii=False)


def _nested(value: object, depth: int) -> str:
    """:func:`indented_json` of ``value`` as it stands ``depth`` levels deep in an indented
    document (compact JSON holds no raw line break, so every break is the formatter's)."""
    return indented_json(value).replace("\n", "\n" + "  " * depth)


def _key(name: str) -> str:
    return json.dumps(name, ensure_ascii=False)


def indented_model_pieces(model: BaseModel) -> Iterator[str]:
    """``indented_json(model.model_dump(mode="json")) + "\n"`` in pieces: one field, and one
    entry of a field holding a mapping, dumped at a time, so the whole dump (about 1 GB of
    Python objects and two copies of a 185 MB text for results.json of 1M runs) is never
    held at once. Joined, the pieces are that text character for character
    (``tests/test_report.py``)."""
    yield "{"
    first = True
    for name in type(model).model_fields:
        yield ("\n  " if first else ",\n  ") + _key(name) + ": "
        first = False
        value = getattr(model, name)
        if not isinstance(value, dict) or not value:
            yield _nested(model.model_dump(mode="json", include={name})[name], 1)
            continue
        for i, key in enumerate(value):
            # the entry as the whole dump writes it (its key as JSON mode writes keys)
            (text_key, entry), = model.model_dump(mode="json",
                                                  include={name: {key}})[name].items()
            yield ("{\n    " if i == 0 else ",\n    ") + _key(text_key) + ": " + _nested(entry, 2)
        yield "\n  }"
    yield "}\n" if first else "\n}\n"


def record_line(record: BaseModel) -> str:
    """One record as a JSONL line (nulls left out), the form every records file uses."""
    return json.dumps(record.model_dump(mode="json", exclude_none=True),
                      ensure_ascii=False) + "\n"


def write_records(path: Path, records: Sequence[BaseModel]) -> Path:
    """Write records (judgements, grades) as JSONL, atomically (a reader never sees half a
    file); the folder is made when missing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write(path, _text("".join(record_line(r) for r in records)))


def _text(text: str) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        path.write_text(text, encoding="utf-8")
    return write


def atomic_write_text(path: Path, text: str) -> Path:
    """:func:`atomic_write` of ``text`` (UTF-8)."""
    return atomic_write(path, _text(text))


def _pieces(pieces: Iterator[str]) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        with path.open("w", encoding="utf-8") as handle:
            for piece in pieces:
                handle.write(piece)
    return write


def _parquet(frame: Callable[[], pl.DataFrame]) -> Callable[[Path], None]:
    """Writes the frame ``frame()`` makes, made only then (and let go once written)."""
    def write(path: Path) -> None:
        frame().write_parquet(path)
    return write


def _sink(query: Callable[[], pl.LazyFrame]) -> Callable[[Path], None]:
    """Writes the rows of the query ``query()`` makes a part at a time (polars' streaming
    sink), never the whole frame at once."""
    def write(path: Path) -> None:
        query().sink_parquet(path)
    return write


def _rejects(rejected: list[Rejected]) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        write_rejects(path, rejected)
    return write


def output_folder(out_dir: Path | str) -> Path:
    """``out_dir``, created if needed, once it is known to be a writable folder.

    Raises:
        InputError: naming the folder, when it is a file, cannot be created or is not
            writable (``grade-kit score`` asks before it evaluates, so a long evaluation
            never ends on a folder it cannot write).
    """
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except FileExistsError as exc:
        raise InputError(f"{out}: exists and is not a folder") from exc
    except OSError as exc:
        raise InputError(f"{out}: cannot create the output folder: "
                         f"{exc.strerror or exc}") from exc
    if not os.access(out, os.W_OK | os.X_OK):
        raise InputError(f"{out}: the output folder is not writable")
    return out


def write_outputs(out_dir: Path | str, evaluation: Evaluation) -> dict[str, Path]:
    """Write every file of :data:`OUTPUT_FILES` under ``out_dir`` (created if needed).

    Returns:
        The written paths by name.
    """
    out = output_folder(out_dir)
    results = evaluation.results
    per_run = evaluation.scores.runs

    def long() -> pl.LazyFrame:
        return long_scores_query(per_run.lazy(), ("run_id", "setup", "task_id", "repeat",
                                                   "is_primary"))

    # The large contents are made as they are written, not all before the first file is
    # written: at 1M runs the long scores are about 0.5 GB, the dump of results.json about
    # 1 GB of Python objects (docs/scaling.md).
    writers: dict[str, Callable[[Path], None]] = {
        "results": _pieces(indented_model_pieces(results)),
        "scorecard": _text(scorecard_markdown(results, rejects_file=OUTPUT_FILES["rejects"])),
        "scores": _sink(long),
        "run_scores": _parquet(lambda: per_run),
        "run_grades": _parquet(lambda: evaluation.standard.graded),
        "runs": _parquet(lambda: evaluation.runs_frame),
        "rejects": _rejects(evaluation.inputs.rejected),
    }
    # One writer at a time per folder: a second run waits, then writes its whole set, so
    # the folder never holds a mix of two runs' files.
    with (out / LOCK_FILE).open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return {name: atomic_write(out / OUTPUT_FILES[name], write)
                    for name, write in writers.items()}
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
