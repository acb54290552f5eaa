"""The files ``grade-kit score`` and :meth:`grade_kit.Evaluation.write` write, into a folder
built whole beside the output folder and swapped in (:func:`grade_kit.atomic.replaced_folder`),
so a reader never sees half a file nor a mix of two evaluations."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import polars as pl

from grade_kit.atomic import atomic_write, indented_model_pieces, pieces_writer, text_writer
from grade_kit.reading.io import Rejected, write_rejects
from grade_kit.schema import InputError, Results
from grade_kit.scorers import long_scores_query

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


def _rejects(rejected: Sequence[Rejected]) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        write_rejects(path, rejected)
    return write


def output_folder(out_dir: Path | str, *, create: bool = True) -> Path:
    """``out_dir`` once it is known to be a folder that can be written (created if needed;
    with ``create`` False, only checked: a command that fails later leaves nothing behind)
    and may be replaced whole: not the current folder nor one holding it, not a git
    checkout's root.

    Raises:
        InputError: naming the folder, when it is a file, cannot be created or is not
            writable (``grade-kit score`` asks before it evaluates, so a long evaluation
            never ends on a folder it cannot write).
    """
    out = Path(out_dir)
    if out.exists() or out.is_symlink():
        if not out.is_dir():
            raise InputError(f"{out}: exists and is not a folder")
        # an output folder is replaced whole (grade_kit.atomic.replaced_folder): never the
        # folder a shell stands in, nor a project's root
        if Path.cwd().resolve().is_relative_to(out.resolve()):
            raise InputError(f"{out}: the current folder, or a folder that holds it; an "
                             "output folder is replaced whole: give one of its own")
        if (out / ".git").exists():
            raise InputError(f"{out}: a git checkout's root; an output folder is replaced "
                             "whole: give one of its own")
        if not os.access(out, os.W_OK | os.X_OK):
            raise InputError(f"{out}: the output folder is not writable")
        return out
    ancestor = next(p for p in out.absolute().parents if p.exists() or p.is_symlink())
    if not ancestor.is_dir():
        raise InputError(f"{out}: cannot create the output folder: {ancestor} is not a "
                         "folder")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise InputError(f"{out}: cannot create the output folder: {ancestor} is not "
                         "writable")
    try:
        if create:
            out.mkdir(parents=True, exist_ok=True)
        else:  # a folder made and removed where it will go: permissions alone can mislead
            os.rmdir(tempfile.mkdtemp(prefix=".grade-kit-probe-", dir=ancestor))
    except OSError as exc:
        raise InputError(f"{out}: cannot create the output folder: "
                         f"{exc.strerror or exc}") from exc
    return out


def refuse_links(out: Path, names: Iterable[str]) -> None:
    """Refuse, before anything is written, an output folder where one of the entries
    ``names`` is a symbolic link: a planted link must never decide where an output goes.

    Raises:
        InputError: naming the entry and where it points.
    """
    for name in names:
        entry = out / name
        if entry.is_symlink():
            raise InputError(f"{entry}: a symbolic link (to {os.readlink(entry)}) where an "
                             "output goes; remove it, nothing was written")


def write_outputs(out_dir: Path | str, results: Results, scorecard: Callable[[], str],
                  per_run: pl.DataFrame, graded: pl.DataFrame,
                  runs: Callable[[], pl.DataFrame], rejected: Sequence[Rejected]
                  ) -> dict[str, Path]:
    """Write every file of :data:`OUTPUT_FILES` under ``out_dir`` (created if needed), each
    whole or not at all; :meth:`grade_kit.Evaluation.write` calls it on a folder it swaps in
    whole.

    Args:
        out_dir: The output folder.
        results: The typed results (results.json).
        scorecard: The Markdown scorecard, made when written (scorecard.md).
        per_run: The per-run GRADE scores (run_scores.parquet, scores.parquet).
        graded: Each run's grade (run_grades.parquet).
        runs: The tidy runs table, made when written (runs.parquet).
        rejected: Every reject (rejects.jsonl).

    Returns:
        The written paths by name.
    """
    out = output_folder(out_dir)
    refuse_links(out, OUTPUT_FILES.values())

    def long() -> pl.LazyFrame:
        return long_scores_query(per_run.lazy(), ("run_id", "setup", "task_id", "repeat",
                                                   "is_primary"))

    # The large contents are made as they are written, not all before the first file is
    # written: at 1M runs the long scores are about 0.5 GB, the dump of results.json about
    # 1 GB of Python objects (docs/scaling.md).
    writers: dict[str, Callable[[Path], None]] = {
        "results": pieces_writer(indented_model_pieces(results)),
        "scorecard": lambda path: text_writer(scorecard())(path),
        "scores": _sink(long),
        "run_scores": _parquet(lambda: per_run),
        "run_grades": _parquet(lambda: graded),
        "runs": _parquet(runs),
        "rejects": _rejects(rejected),
    }
    return {name: atomic_write(out / OUTPUT_FILES[name], write)
            for name, write in writers.items()}
