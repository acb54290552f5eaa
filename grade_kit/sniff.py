"""What kind of file an input is, from its first bytes: a JSONL run file, another tool's log
(an Inspect ``.eval`` zip or ``.json`` log, a tau-bench or tau2-bench results file), or
something that is no input at all (a zip, binary data, an HTML page).

So a log given where runs are expected is one clear error naming the file and the command
that reads it, never thousands of rejected lines; and ``grade-kit score`` / ``report`` /
:func:`grade_kit.evaluate` take other tools' logs directly.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

__all__ = ["HEAD_BYTES", "FileKind", "LogSource", "file_kind", "log_files", "lone_path_error",
           "not_runs_error"]

HEAD_BYTES = 65_536
"""How much of a file is read to tell its kind."""

FileKind = Literal["jsonl", "inspect", "tau-bench", "zip", "binary", "html", "json", "empty"]
LogSource = Literal["inspect", "tau-bench"]
LOG_SUFFIXES = (".eval", ".json")


def file_kind(path: Path | str) -> FileKind:
    """The kind of the file at ``path``, from its first :data:`HEAD_BYTES` bytes.

    ``inspect``: a zip holding ``header.json`` or ``_journal/start.json`` (an ``.eval`` log),
    or one JSON document (its first line opens it alone, or is longer than the head) whose
    head has ``"eval"`` and ``"version"`` keys; ``tau-bench``: such a document that is an
    array whose first record has ``"traj"``, ``"reward"`` or ``"task_id"`` keys (tau-bench),
    or an object with ``"simulations"`` (tau2-bench); ``jsonl``: a first line that is a JSON
    object on its own; ``zip``; ``binary`` (over 10% undecodable or control bytes);
    ``html``; ``json`` (any other text: the loaders read it line by line); ``empty``.
    """
    path = Path(path)
    with path.open("rb") as handle:
        head = handle.read(HEAD_BYTES)
    if head.startswith(b"PK\x03\x04"):
        try:
            with zipfile.ZipFile(path) as archive:
                names = set(archive.namelist())
        except zipfile.BadZipFile:
            return "zip"
        return "inspect" if names & {"header.json", "_journal/start.json"} else "zip"
    text = head.decode("utf-8", "replace")
    if _not_text(text) > len(text) // 10:  # a stray bad byte is a line's: reject that line
        return "binary"
    text = text.lstrip("\ufeff \t\r\n")
    if not text:
        return "empty"
    lowered = text[:200].lower()
    if lowered.startswith(("<!doctype html", "<html", "<?xml", "<head", "<body")):
        return "html"
    first, _, rest = text.partition("\n")
    first = first.strip()
    if first.startswith("{"):
        try:
            record: Any = json.loads(first)
        except (ValueError, RecursionError):  # too deep: the reader names it
            record = None
        if isinstance(record, dict):
            # a log written on one line is one document, not a one-record JSONL file
            if not rest.strip() and isinstance(record.get("eval"), dict) and "version" in record:
                return "inspect"
            if not rest.strip() and isinstance(record.get("simulations"), list):
                return "tau-bench"
            return "jsonl"
    # A log is one JSON document: its first line opens it alone (pretty-printed), or holds
    # more than the head (one long line). Anything else is read line by line by the loaders,
    # each bad line a reject (a JSONL file whose first line is broken is still JSONL).
    document = first in ("{", "[") or not rest
    if document and first.startswith("{"):
        if '"eval"' in text and '"version"' in text:
            return "inspect"
        if '"simulations"' in text:
            return "tau-bench"
    if document and first.startswith("[") and any(
            key in text for key in ('"traj"', '"reward"', '"task_id"')):
        return "tau-bench"
    return "json"  # text: the loaders read it line by line


def _not_text(text: str) -> int:
    """Characters no text file holds: undecodable bytes and control characters other than
    tab, line feed and carriage return."""
    return sum(1 for ch in text if ch == "\ufffd" or (ch < " " and ch not in "\t\n\r"))


def _candidates(item: Path) -> list[Path]:
    if item.is_dir():
        return sorted(p for p in item.iterdir() if p.is_file() and p.suffix in LOG_SUFFIXES)
    return [item] if item.is_file() else []


def log_files(paths: Path | str | Sequence[Path | str]) -> tuple[LogSource, list[Path]] | None:
    """Other tools' logs among ``paths`` (files, or folders of ``.eval``/``.json`` files):
    their source and files when every candidate is a log of one source, None when none is.

    Raises:
        ValueError: when some candidates are logs and others are not, or logs of two
            sources are mixed (naming the files).
    """
    items = [paths] if isinstance(paths, str | Path) else list(paths)
    files = [f for item in map(Path, items) for f in _candidates(item)]
    if not files:
        return None
    kinds = {f: file_kind(f) for f in files}
    logs = {f: k for f, k in kinds.items() if k in ("inspect", "tau-bench")}
    if not logs:
        return None
    sources = sorted(set(logs.values()))
    if len(sources) > 1:
        raise ValueError(f"logs of two tools given together ({', '.join(sources)}): "
                         "score them one tool at a time")
    others = [f for f in files if f not in logs]
    if others:
        raise ValueError(f"{others[0]}: given with {sources[0]} logs but is not one "
                         f"({kinds[others[0]]})")
    source: LogSource = "inspect" if sources[0] == "inspect" else "tau-bench"
    return source, files


def not_runs_error(path: Path | str, kind: FileKind) -> str | None:
    """Why ``path`` (of ``kind``) cannot be read as a JSONL file of records (runs,
    judgements, grades), naming the command that reads it; None for a file that may be
    one."""
    if kind in ("jsonl", "empty", "json"):
        return None  # lines the loaders read one by one, each rejected with its reason
    if kind in ("inspect", "tau-bench"):
        what = "an Inspect AI log" if kind == "inspect" else "a tau-bench results file"
        return (f"{path}: not a JSONL file of records but {what}: score it directly "
                f"(grade-kit score {path} --out DIR) or import it first "
                f"(grade-kit import {kind} {path} --out DIR)")
    what = {"zip": "a zip archive", "binary": "binary data (not text)",
            "html": "an HTML page"}[kind]
    return (f"{path}: not a JSONL file of records but {what}; run, judgement and grade files "
            "hold one JSON object a line (docs/methodology.md §2)")


def lone_path_error(path: Path | str) -> str:
    """Why ``path``, given alone where tasks and runs (or a log, or a packed store) go,
    cannot be evaluated, in one line naming the cause: no such path; an empty folder; a zip
    that is not an Inspect log; a CSV (a filled grading sheet goes to ``import-grades``);
    else that RUNS are required."""
    path = Path(path)
    if not path.exists():
        return f"{path}: no such file or folder"
    if path.is_dir():
        if not any(path.iterdir()):
            return f"{path}: an empty folder (no tasks, runs or logs in it)"
    elif path.suffix.lower() == ".csv":
        return (f"{path}: a CSV file, not tasks, runs or a log; a filled grading sheet goes "
                f"to grade-kit import-grades {path} --out GRADES.jsonl")
    else:
        kind = file_kind(path)
        if kind == "zip":
            return (f"{path}: a zip archive that is not an Inspect log (an .eval holds "
                    "header.json); give Inspect logs (grade-kit import inspect LOG... "
                    "--out DIR), or TASKS and RUNS")
        if kind in ("binary", "html", "empty"):
            what = {"binary": "binary data (not text)", "html": "an HTML page",
                    "empty": "an empty file"}[kind]
            return f"{path}: {what}, not tasks, runs or a log"
    return (f"{path}: RUNS is required (run JSONL files or folders), unless TASKS is a "
            "packed store or the paths are other tools' logs (Inspect, tau-bench)")
