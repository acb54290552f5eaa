"""Files and folders written whole or not at all: a file to a temporary name beside it, then
renamed into place, so a reader never sees half a file; a folder built whole beside it, then
swapped in (:func:`replaced_folder`), so a reader never sees a mix of two versions; and the
JSON and JSONL forms every records file uses."""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
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


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def exchange_paths(a: Path, b: Path) -> bool:
    """Swap two existing paths in one atomic step (Linux ``renameat2`` with
    ``RENAME_EXCHANGE``); False, with nothing changed, where the system or the file system
    cannot."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), str(a), None, str(b))


def _beside(final: Path, kind: str) -> list[Path]:
    """The folders :func:`replaced_folder` leaves beside ``final``: ``.<name>.<kind>-*``."""
    return sorted(final.parent.glob(f".{final.name}.{kind}-*"))


def recover_folder(final: Path) -> None:
    """Finish what a :func:`replaced_folder` killed between its two renames left (where the
    system cannot swap in one step): ``final`` is missing and its previous version waits
    beside it, so that version is put back. Builds that never completed (``.<name>.new-*``)
    and previous versions already replaced (``.<name>.old-*`` beside an existing ``final``)
    are removed. Call it holding :func:`folder_lock`."""
    kept = [aside / final.name for aside in _beside(final, "old")
            if (aside / final.name).exists()]
    if not final.exists() and kept:
        os.rename(kept[-1], final)
    for leftover in (*_beside(final, "new"), *_beside(final, "old")):
        shutil.rmtree(leftover, ignore_errors=True)


def restore_folder(final: Path) -> None:
    """Before ``final`` is read: where it is missing and its previous version waits beside
    it (a replacement killed between its two renames), put that version back, under the
    folder's lock (:func:`recover_folder`)."""
    if not final.exists() and _beside(final, "old"):
        with folder_lock(final):
            pass


@contextmanager
def folder_lock(final: Path) -> Iterator[None]:
    """Hold the writer lock of the folder ``final``: one writer at a time, a second one
    waits, then replaces the folder whole. The lock is a file beside the folder
    (``.<name>.grade-kit.lock``, since the folder itself is swapped), removed when the lock
    is let go: a waiter that then holds a removed file's lock takes the lock again.
    Taking it finishes a killed replacement first (:func:`recover_folder`)."""
    lock = final.parent / f".{final.name}.grade-kit.lock"
    final.parent.mkdir(parents=True, exist_ok=True)
    while True:
        if lock.is_symlink():
            raise OSError(errno.ELOOP, "the lock file is a symbolic link", str(lock))
        handle = lock.open("a")
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            if os.path.samestat(os.fstat(handle.fileno()), os.stat(lock)):
                break  # the file the lock is on is still the lock
        except FileNotFoundError:
            pass
        handle.close()
    try:
        recover_folder(final)
        yield
    finally:
        lock.unlink(missing_ok=True)
        handle.close()  # lets the lock go


def _carry_over(final: Path, stage: Path) -> None:
    """Give ``stage`` every entry of ``final`` it has not written (a page of another
    command, a file of the user's) as a hard link (a copy where links are refused); links
    are kept as links, never followed. Temporaries of killed writes are left behind."""
    def link(source: str, target: str) -> None:
        try:
            os.link(source, target, follow_symlinks=False)
        except OSError:
            shutil.copy2(source, target, follow_symlinks=False)

    for entry in final.iterdir():
        if (stage / entry.name).exists() or entry.name.endswith(".tmp"):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.copytree(entry, stage / entry.name, symlinks=True, copy_function=link)
        else:
            link(str(entry), str(stage / entry.name))


@contextmanager
def replaced_folder(final: Path) -> Iterator[Path]:
    """Build the next version of the folder ``final`` whole, then put it in place in one
    step: yields an empty folder beside ``final`` (``.<name>.new-*``, on its file system)
    to write into; on a clean exit, the entries of ``final`` it did not write are carried
    over (:func:`_carry_over`) and the two are swapped (:func:`exchange_paths`); where the
    system cannot swap, ``final`` is renamed aside (``.<name>.old-*``) and the new one
    renamed in, a kill between the two being undone by :func:`recover_folder`. The previous
    version is removed only once the new one is in place. On an error (a full disk, an
    interrupt) the new folder is removed and ``final`` is as it was.

    Hold :func:`folder_lock` around it. A ``final`` that is a mount point (which no rename
    can replace) gets the new entries one by one instead.
    """
    stage = Path(tempfile.mkdtemp(prefix=f".{final.name}.new-", dir=final.parent))
    try:
        os.chmod(stage, 0o777 & ~_umask())  # mkdtemp makes 0700; give the usual mode
        yield stage
        if not final.exists():
            os.rename(stage, final)
            return
        if os.stat(final).st_dev != os.stat(final.parent).st_dev:
            for entry in stage.iterdir():  # a mount point: entry by entry
                _replace_entry(entry, final / entry.name)
            shutil.rmtree(stage)
            return
        _carry_over(final, stage)
        if exchange_paths(stage, final):
            shutil.rmtree(stage, ignore_errors=True)  # the previous version, now beside
            return
        _replace_entry(stage, final)  # aside, then in: recover_folder undoes a kill between
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise


def _replace_entry(new: Path, path: Path) -> None:
    """``new`` renamed over ``path`` (a folder moved aside first, then removed)."""
    if path.is_dir() and not path.is_symlink():
        aside = Path(tempfile.mkdtemp(prefix=f".{path.name}.old-", dir=path.parent))
        os.rename(path, aside / path.name)
        os.rename(new, path)
        shutil.rmtree(aside, ignore_errors=True)
    else:
        os.replace(new, path)


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
