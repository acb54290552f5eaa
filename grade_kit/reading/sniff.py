"""What kind of file an input is, from its first bytes: a JSONL run file, another tool's log
(a kind each adapter registers, :func:`register_log_kind`: an Inspect ``.eval`` or ``.json``
log, a tau-bench or tau2-bench results file, ...), or something that is no input at all (a
zip, binary data, an HTML page).

So a log given where runs are expected is one clear error naming the file and the command
that reads it, never thousands of rejected lines; and ``grade-kit score`` / ``report`` /
:func:`grade_kit.evaluate` take other tools' logs directly.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HEAD_BYTES = 65_536
"""How much of a file is read to tell its kind."""


@dataclass(frozen=True)
class FileHead:
    """What :func:`file_kind` read of a file, for a log kind to recognise its own.

    Attributes:
        path: The file.
        text: Its first :data:`HEAD_BYTES` bytes as text, leading whitespace and byte-order
            mark dropped ("" for a zip).
        zip_names: The member names of a zip archive, or None for any other file.
        record: The first line as a JSON object when it holds one alone, else None.
        alone: The first line is the whole head (nothing follows it).
        document: The head opens one JSON document that is not a JSON-lines record: its
            first line is ``{`` or ``[`` alone, or is the whole head.
    """

    path: Path
    text: str
    zip_names: frozenset[str] | None
    record: dict[str, Any] | None
    alone: bool
    document: bool


@dataclass(frozen=True)
class LogKind:
    """Another tool's log, as its adapter registers it (docs/adapters.md "Writing an
    adapter").

    Attributes:
        name: The kind's name (``grade-kit import NAME``), such as ``inspect``.
        describes: The kind in words, for messages: "an Inspect AI log".
        suffixes: The suffixes of the files in a folder that may be such a log.
        recognises: Whether a file is such a log, from its head.
    """

    name: str
    describes: str
    suffixes: tuple[str, ...]
    recognises: Callable[[FileHead], bool]


LOG_KINDS: dict[str, LogKind] = {}
"""Every registered log kind by name (each adapter registers its own on import)."""

_OWN_KINDS = ("jsonl", "zip", "binary", "html", "json", "empty")


def register_log_kind(kind: LogKind) -> None:
    """Add ``kind`` to :data:`LOG_KINDS` (a kind of the same name is replaced).

    Raises:
        ValueError: when its name is one of this module's own kinds.
    """
    if kind.name in _OWN_KINDS:
        raise ValueError(f"{kind.name!r} names a kind of file grade_kit reads itself")
    LOG_KINDS[kind.name] = kind


def _recognised(head: FileHead) -> str | None:
    """The first kind, in the order they were registered (the package's adapters in the
    order of their module names), that recognises the file."""
    return next((kind.name for kind in LOG_KINDS.values() if kind.recognises(head)), None)


def file_kind(path: Path | str) -> str:
    """The kind of the file at ``path``, from its first :data:`HEAD_BYTES` bytes: the name of
    the registered log kind (:data:`LOG_KINDS`) that recognises it, else one of: ``zip``;
    ``binary`` (over 10% undecodable or control bytes); ``empty``; ``html``; ``jsonl`` (a
    first line that is a JSON object on its own); ``json`` (any other text: the loaders read
    it line by line).
    """
    path = Path(path)
    with path.open("rb") as handle:
        head = handle.read(HEAD_BYTES)
    if head.startswith(b"PK\x03\x04"):
        try:
            with zipfile.ZipFile(path) as archive:
                names = frozenset(archive.namelist())
        except zipfile.BadZipFile:
            return "zip"
        return _recognised(FileHead(path, "", names, None, False, False)) or "zip"
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
    record: Any = None
    if first.startswith("{"):
        try:
            record = json.loads(first)
        except (ValueError, RecursionError):  # too deep: the reader names it
            record = None
    if not isinstance(record, dict):
        record = None
    alone = not rest.strip()
    # A log is one JSON document: its first line opens it alone (pretty-printed), or holds
    # more than the head (one long line). Anything else is read line by line by the loaders,
    # each bad line a reject (a JSONL file whose first line is broken is still JSONL).
    document = record is None and (first in ("{", "[") or not rest)
    found = _recognised(FileHead(path, text, None, record, alone, document))
    if found is not None:
        return found
    return "jsonl" if record is not None else "json"


def _not_text(text: str) -> int:
    """Characters no text file holds: undecodable bytes and control characters other than
    tab, line feed and carriage return."""
    return sum(1 for ch in text if ch == "\ufffd" or (ch < " " and ch not in "\t\n\r"))


def _candidates(item: Path) -> list[Path]:
    if item.is_dir():
        suffixes = {suffix for kind in LOG_KINDS.values() for suffix in kind.suffixes}
        return sorted(p for p in item.iterdir() if p.is_file() and p.suffix in suffixes)
    return [item] if item.is_file() else []


def log_files(paths: Path | str | Sequence[Path | str]) -> tuple[str, list[Path]] | None:
    """Other tools' logs among ``paths`` (files, or folders of files with a registered log
    kind's suffix): their kind and files when every candidate is a log of one kind, None
    when none is.

    Raises:
        ValueError: when some candidates are logs and others are not, or logs of two
            kinds are mixed (naming the files).
    """
    items = [paths] if isinstance(paths, str | Path) else list(paths)
    files = [f for item in map(Path, items) for f in _candidates(item)]
    if not files:
        return None
    kinds = {f: file_kind(f) for f in files}
    logs = {f: k for f, k in kinds.items() if k in LOG_KINDS}
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
    return sources[0], files


def not_runs_error(path: Path | str, kind: str) -> str | None:
    """Why ``path`` (of ``kind``) cannot be read as a JSONL file of records (runs,
    judgements, grades), naming the command that reads it; None for a file that may be
    one."""
    if kind in ("jsonl", "empty", "json"):
        return None  # lines the loaders read one by one, each rejected with its reason
    if kind in LOG_KINDS:
        return (f"{path}: not a JSONL file of records but {LOG_KINDS[kind].describes}: score "
                f"it directly (grade-kit score {path} --out DIR) or import it first "
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
            "packed store or the paths are other tools' logs "
            f"({', '.join(sorted(LOG_KINDS))})")
