"""Adapters: other tools' logs -> task, run and grade records.

:func:`read_log` (``gk.read_log``) returns :class:`~grade_kit.reading.inputs.Inputs` that
:func:`grade_kit.evaluate` takes directly, the file kind recognised or named;
``grade-kit import`` writes the same records as ``tasks.jsonl``, ``runs.jsonl`` and
``grades.jsonl``. Field mappings, and what each source
lacks, are in ``docs/adapters.md``. Each adapter is one module of this package that
registers itself (:func:`register_adapter`); an adapter outside it registers the same way.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from grade_kit.adapters.common import (
    ADAPTERS,
    SETUP_BY,
    Adapter,
    Imported,
    SetupBy,
    grade_for_outcome,
    merge_imported,
    name_setups,
    one_source_metric_per_scorer,
    register_adapter,
    to_inputs,
    write_imported,
)
from grade_kit.reading.inputs import Inputs
from grade_kit.reading.io import sha256_of
from grade_kit.reading.sniff import FileHead, log_files
from grade_kit.schema import InputError, InputFile

# Every module of this package but common is an adapter that registers itself on import, in
# the order of their names (the order the sniffer asks them in): a new one is its own file
# (docs/adapters.md "Writing an adapter").
for _module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _module.name != "common":
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = [
    "ADAPTERS",
    "SETUP_BY",
    "Adapter",
    "FileHead",
    "Imported",
    "SetupBy",
    "adapter_named",
    "grade_for_outcome",
    "import_logs",
    "merge_imported",
    "name_setups",
    "read_log",
    "register_adapter",
    "to_inputs",
    "write_imported",
]


def adapter_named(source: str) -> Adapter:
    """The registered adapter ``source``.

    Raises:
        InputError: when none is registered by that name (naming those that are).
    """
    if source not in ADAPTERS:
        raise InputError(f"no adapter {source!r} (adapters: {', '.join(sorted(ADAPTERS))})")
    return ADAPTERS[source]


def _log_files(adapter: Adapter, paths: Path | str | Sequence[Path | str]) -> list[Path]:
    items = [paths] if isinstance(paths, str | Path) else list(paths)
    out: list[Path] = []
    for given in map(Path, items):
        if given.is_dir():
            found = sorted(p for p in given.iterdir()
                           if p.is_file() and p.suffix in adapter.suffixes)
            if not found:
                raise InputError(f"{given}: folder holds no file that could be "
                                 f"{adapter.describes} ({', '.join(adapter.suffixes)})")
            out.extend(found)
        elif given.is_file():
            out.append(given)
        else:
            raise InputError(f"{given}: no such file or folder")
    if not out:
        raise InputError(f"no {adapter.name} log given")
    return out


def import_logs(source: str, paths: Path | str | Sequence[Path | str], *,
                setup: str | None = None, setup_by: SetupBy = "auto",
                **options: Any) -> Imported:
    """Convert every log under ``paths`` (files or folders) with the adapter ``source``, name
    their setups by what they evaluate and merge them (docs/adapters.md "Setups and
    questions").

    Args:
        source: A registered adapter's name (:data:`ADAPTERS`): ``inspect``, ``tau-bench``.
        paths: Log files or folders of them.
        setup: One setup name for every log; default: named by ``setup_by``.
        setup_by: ``auto`` (default: the model, and the configuration that differs between
            its logs over the same questions), ``model``, ``file``, or a mapping from file
            name to setup name.
        options: The adapter's own options, such as Inspect's ``scorer`` (the score to
            grade by; default each sample's first) and ``datasets`` (the dataset each log's
            sample ids belong to, by task or file name; default each log's dataset name, and
            where it names none, the sample ids alone); None values are left out.

    Raises:
        InputError: naming the file, when a path is missing, a folder holds no log, or a file
            cannot be read as ``source`` (wrong kind, truncated, corrupt); nothing is half
            imported.
    """
    adapter = adapter_named(source)
    given = {name: value for name, value in options.items() if value is not None}
    parts = []
    for path in _log_files(adapter, paths):
        try:
            part = adapter.read(path, setup, given)
        except (ValueError, KeyError, TypeError, IndexError, AttributeError, OSError,
                RecursionError) as exc:
            raise InputError(f"{path}: cannot read as {adapter.describes}: {exc}") from exc
        if not part.runs:
            why = f": {part.rejected[0].message()}" if part.rejected else ""
            raise InputError(f"{path}: {adapter.describes} with no samples or trials{why}")
        part.files = [InputFile(kind=f"{source} log", path=str(path),
                                sha256=sha256_of(str(path)), records=len(part.runs),
                                rejected=len(part.rejected))]
        parts.append(part)
    named = {name for p in parts for name in (p.label, p.variant.get("task"))}
    unknown = sorted(set(given.get("datasets") or {}) - named)
    if unknown:  # a mapping that names no log would leave its logs keyed another way
        raise InputError(f"the dataset mapping names {', '.join(map(repr, unknown[:5]))}, "
                         f"neither a task nor a file among the logs")
    name_setups(parts, setup_by)
    one_source_metric_per_scorer(parts)
    return merge_imported(parts)


def read_log(paths: Path | str | Sequence[Path | str], *, source: str | None = None,
             setup: str | None = None, setup_by: SetupBy = "auto",
             **options: Any) -> Inputs:
    """Other tools' logs (files, or folders of them) as :class:`Inputs`, which
    :func:`grade_kit.evaluate` takes: :func:`import_logs` through the adapter registry.

    Args:
        paths: Log files or folders of them, all of one tool.
        source: A registered adapter's name (:data:`ADAPTERS`: ``inspect`` for Inspect AI's
            ``.eval`` and ``.json`` logs, ``tau-bench`` for tau-bench and tau2-bench result
            files); default None: each file's kind is recognised from its content, the way
            ``grade-kit score`` does.
        setup: One setup name for every log; default: named by ``setup_by``.
        setup_by: How logs group into setups: ``auto`` (default: the model, and the
            configuration that differs between its logs over the same questions; a
            continuation or retry log joins its setup), ``model``, ``file``, or a mapping
            from file name to setup name.
        options: The adapter's own options, such as Inspect's ``scorer`` (the score to grade
            by; default each sample's first) and ``datasets`` (a mapping from a log's task or
            file name to the dataset its sample ids belong to; default each log's dataset
            name, and where it names none, the sample ids alone).

    Raises:
        InputError: naming the file, when a path is missing or is not a log of the one tool
            (or of ``source``), or a log cannot be read.
    """
    if source is None:
        try:
            found = log_files(paths)
        except ValueError as exc:
            raise InputError(str(exc)) from exc
        if found is None:
            raise InputError(f"{_first(paths)}: not a log any adapter reads (adapters: "
                             f"{', '.join(sorted(ADAPTERS))})")
        source, paths = found
    return to_inputs(import_logs(source, paths, setup=setup, setup_by=setup_by, **options))


def _first(paths: Path | str | Sequence[Path | str]) -> str:
    return str(paths if isinstance(paths, str | Path) else (list(paths) or ["no path"])[0])
