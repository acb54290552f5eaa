"""Adapters: other tools' logs -> task, run and grade records.

:func:`read_inspect` and :func:`read_tau_bench` return :class:`~grade_kit.inputs.Inputs` that
:func:`grade_kit.evaluate` takes directly; ``grade-kit import`` writes the same records as
``tasks.jsonl``, ``runs.jsonl`` and ``grades.jsonl``. Field mappings, and what each source
lacks, are in ``docs/adapters.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from grade_kit.adapters.common import (
    SETUP_BY,
    Imported,
    SetupBy,
    grade_for_outcome,
    merge_imported,
    name_setups,
    to_inputs,
    write_imported,
)
from grade_kit.adapters.inspect_ai import import_inspect
from grade_kit.adapters.tau_bench import import_tau2_bench, import_tau_bench, import_tau_file
from grade_kit.inputs import Inputs
from grade_kit.io import InputError, sha256_of
from grade_kit.schema import InputFile

__all__ = [
    "SETUP_BY",
    "Imported",
    "SetupBy",
    "grade_for_outcome",
    "import_inspect",
    "import_logs",
    "import_tau2_bench",
    "import_tau_bench",
    "import_tau_file",
    "merge_imported",
    "name_setups",
    "read_inspect",
    "read_tau_bench",
    "to_inputs",
    "write_imported",
]

Source = Literal["inspect", "tau-bench"]
SUFFIXES: dict[Source, tuple[str, ...]] = {"inspect": (".eval", ".json"),
                                           "tau-bench": (".json",)}
NAMES: dict[Source, str] = {"inspect": "an Inspect AI log",
                            "tau-bench": "a tau-bench or tau2-bench results file"}


def _log_files(source: Source, paths: Path | str | Sequence[Path | str]) -> list[Path]:
    items = [paths] if isinstance(paths, str | Path) else list(paths)
    out: list[Path] = []
    for given in map(Path, items):
        if given.is_dir():
            found = sorted(p for p in given.iterdir()
                           if p.is_file() and p.suffix in SUFFIXES[source])
            if not found:
                raise InputError(f"{given}: folder holds no file that could be "
                                 f"{NAMES[source]} ({', '.join(SUFFIXES[source])})")
            out.extend(found)
        elif given.is_file():
            out.append(given)
        else:
            raise InputError(f"{given}: no such file or folder")
    if not out:
        raise InputError(f"no {source} log given")
    return out


def import_logs(source: Source, paths: Path | str | Sequence[Path | str], *,
                setup: str | None = None, scorer: str | None = None,
                setup_by: SetupBy = "auto") -> Imported:
    """Convert every log under ``paths`` (files or folders), name their setups by what they
    evaluate and merge them (docs/adapters.md "Setups and questions").

    Args:
        source: ``inspect`` or ``tau-bench``.
        paths: Log files or folders of them.
        setup: One setup name for every log; default: named by ``setup_by``.
        scorer: Inspect: the score to grade by; default each sample's first.
        setup_by: ``auto`` (default: the model, and the configuration that differs between
            its logs over the same questions), ``model``, ``file``, or a mapping from file
            name to setup name.

    Raises:
        InputError: naming the file, when a path is missing, a folder holds no log, or a file
            cannot be read as ``source`` (wrong kind, truncated, corrupt); nothing is half
            imported.
    """
    parts = []
    for path in _log_files(source, paths):
        try:
            if source == "inspect":
                part = import_inspect(path, setup, scorer)
            else:
                part = import_tau_file(path, setup)
        except (ValueError, KeyError, TypeError, IndexError, AttributeError, OSError,
                RecursionError) as exc:
            raise InputError(f"{path}: cannot read as {NAMES[source]}: {exc}") from exc
        if not part.runs:
            why = f": {part.rejected[0].message()}" if part.rejected else ""
            raise InputError(f"{path}: {NAMES[source]} with no samples or trials{why}")
        part.files = [InputFile(kind=f"{source} log", path=str(path),
                                sha256=sha256_of(str(path)), records=len(part.runs),
                                rejected=len(part.rejected))]
        parts.append(part)
    name_setups(parts, setup_by)
    return merge_imported(parts)


def read_inspect(paths: Path | str | Sequence[Path | str], *, setup: str | None = None,
                 scorer: str | None = None, setup_by: SetupBy = "auto") -> Inputs:
    """Inspect AI logs (``.eval`` or ``.json``, files or folders) as :class:`Inputs`.

    Args:
        paths: Log files or folders of them.
        setup: Setup name for every log; default: named by ``setup_by``.
        scorer: The score to grade by; default each sample's first score.
        setup_by: How logs group into setups: ``auto`` (default: the model, and the
            configuration that differs between its logs over the same questions; a
            continuation or retry log joins its setup), ``model``, ``file``, or a mapping
            from file name to setup name.
    """
    return to_inputs(import_logs("inspect", paths, setup=setup, scorer=scorer,
                                 setup_by=setup_by))


def read_tau_bench(paths: Path | str | Sequence[Path | str], *,
                   setup: str | None = None, setup_by: SetupBy = "auto") -> Inputs:
    """tau-bench or tau2-bench result files (detected per file) as :class:`Inputs`.

    Args:
        paths: Result files or folders of them.
        setup: Setup name for every file; default from the file (model and domain).
        setup_by: As for :func:`read_inspect`.
    """
    return to_inputs(import_logs("tau-bench", paths, setup=setup, setup_by=setup_by))
