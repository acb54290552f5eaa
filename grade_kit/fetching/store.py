"""The run store: an append-only JSONL file of attempts, safe against a kill at any moment.

Every attempt is one line, written whole and then flushed and fsynced before the next starts,
so after a crash the file holds every finished attempt and at most one torn last line. Opening
the store sets a torn last line aside (``<store>.torn``, reported) and truncates the file to
its last complete line; nothing already written is ever rewritten.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from grade_kit.reading._fastread import LazyRecords
from grade_kit.reading.io import read_jsonl
from grade_kit.reading.parse import numbered_lines
from grade_kit.schema import InputError, Run


class StoreLocked(InputError):
    """Another writer holds the store (one writer per store: two fetches into one file would
    each fill the same slots)."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+|\.{2,}")
MAX_NAME_CHARS = 100
"""The longest file name (before the suffix) made from a name."""


def safe_file_names(names: Sequence[str], suffix: str = ".jsonl") -> dict[str, str]:
    """A file name inside one folder for each of ``names`` (setup or model names), never a
    path: every run of characters other than letters, digits, ``.``, ``_`` and ``-``
    becomes ``_`` (so no separator and no ``..`` survives), leading dots are dropped, an
    empty result is ``unnamed``, at most :data:`MAX_NAME_CHARS` characters are kept, and
    names that would share a file (case ignored) get ``-2``, ``-3``, ... in order.

    Returns:
        Each name's file name (with ``suffix``), in the order given.
    """
    out: dict[str, str] = {}
    taken: set[str] = set()
    for name in names:
        if name in out:
            continue
        stem = _UNSAFE.sub("_", name).lstrip(".")[:MAX_NAME_CHARS] or "unnamed"
        candidate, n = stem, 1
        while f"{candidate}{suffix}".casefold() in taken:
            n += 1
            candidate = f"{stem}-{n}"
        taken.add(f"{candidate}{suffix}".casefold())
        out[name] = f"{candidate}{suffix}"
    return out

Slot = tuple[str, str, int]
"""(setup, task_id, repeat)."""


@dataclass
class RunStore:
    """An append-only file of run records (one attempt a line).

    Attributes:
        path: The JSONL file (created on first write).
        torn: What was set aside when the store was opened: the bytes of a torn last line
            (moved to ``<store>.torn``), and every line that is not a run record (left in
            place, its slot fetched again; the scorer's reader names its line).
        records: Every complete record, in file order.
    """

    path: Path
    torn: list[str] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    _lock: IO[str] | None = field(default=None, repr=False)

    @classmethod
    def open(cls, path: Path | str) -> RunStore:
        """Open (or create) the store for writing: take its exclusive lock (an ``flock`` of
        the file, held until :meth:`close` or the process ends), then recover from a torn
        last line.

        Raises:
            StoreLocked: naming the store and its lock, when another writer holds it.
        """
        store = cls(Path(path))
        store._take_lock()
        store._recover()
        return store

    def _take_lock(self) -> None:
        """Lock the store file itself (created if needed): no second file beside it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = self.path.open("a", encoding="utf-8")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise StoreLocked(f"{self.path}: another writer holds this store (its lock); "
                              "wait for it to finish, or write to another store") from None
        self._lock = handle

    def close(self) -> None:
        """Let the store go (its lock released); appending after this is an error."""
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def _recover(self) -> None:
        if not self.path.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end < len(data):  # a line without its newline: torn by a kill
            tail = data[end:]
            aside = self.path.with_name(self.path.name + ".torn")
            with aside.open("ab") as handle:
                handle.write(tail + b"\n")
                handle.flush()
                os.fsync(handle.fileno())
            with self.path.open("r+b") as handle:
                handle.truncate(end)
                handle.flush()
                os.fsync(handle.fileno())
            self.torn.append(tail.decode("utf-8", "backslashreplace"))
        # The one reader, as the scorer will read the store: a line it refuses (not strict
        # JSON, not a run) is listed (the fetch's report counts it) and its slot fetched
        # again, never taken for a done slot; the scorer names its line.
        loaded = read_jsonl(str(self.path), numbered_lines(io.BytesIO(data[:end])), Run)
        self.torn.extend(reject.raw for reject in loaded.rejected)
        self.records.extend(run.model_dump(mode="json")
                            for run in LazyRecords(Run, list(loaded.records)))

    def append(self, record: dict[str, Any]) -> None:
        """Write one record as one line, then flush and fsync (durable before returning)."""
        self.append_many([record])

    def append_many(self, records: list[dict[str, Any]]) -> None:
        """Write each record as one line, then flush and fsync once (a group commit: every
        record is durable before returning; a kill mid-write can tear only the last line,
        which the next open sets aside)."""
        if not records:
            return
        if self._lock is None:
            raise RuntimeError(f"{self.path}: the store was closed")
        lines = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n"
                        for r in records)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(lines)
            handle.flush()
            os.fsync(handle.fileno())
        self.records.extend(records)

    def by_slot(self) -> dict[Slot, list[dict[str, Any]]]:
        """Every slot's attempts, in file order."""
        out: dict[Slot, list[dict[str, Any]]] = {}
        for record in self.records:
            key = (str(record.get("setup")), str(record.get("task_id")),
                   int(record.get("repeat") or 0))
            out.setdefault(key, []).append(record)
        return out

    def run_ids(self) -> set[str]:
        """Every run_id already written."""
        return {str(r.get("run_id")) for r in self.records}
