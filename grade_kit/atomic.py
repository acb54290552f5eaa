"""Files written whole or not at all: each to a temporary name beside it, then renamed into
place, so a reader never sees half a file; and the JSON and JSONL forms every records file
uses."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import msgspec
from pydantic import BaseModel


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
    plain way. ``tests/presentation/test_report.py`` checks the two agree on random values.
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
    (``tests/presentation/test_report.py``)."""
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
    return atomic_write(path, text_writer("".join(record_line(r) for r in records)))


def text_writer(text: str) -> Callable[[Path], None]:
    """A writer (for :func:`atomic_write`) of ``text`` (UTF-8)."""
    def write(path: Path) -> None:
        path.write_text(text, encoding="utf-8")
    return write


def atomic_write_text(path: Path, text: str) -> Path:
    """:func:`atomic_write` of ``text`` (UTF-8)."""
    return atomic_write(path, text_writer(text))


def pieces_writer(pieces: Iterator[str]) -> Callable[[Path], None]:
    """A writer (for :func:`atomic_write`) of ``pieces`` (UTF-8), one at a time."""
    def write(path: Path) -> None:
        with path.open("w", encoding="utf-8") as handle:
            for piece in pieces:
                handle.write(piece)
    return write
