"""The blind grading sheet: each answer under a seeded random alias, question and answer only,
rows shuffled, optional calibration pairs (two forms of one answer); and its key."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import random
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from grade_kit.cache import keys_dir
from grade_kit.schema import Run, Task
from grade_kit.text import visible

ANONYMITY_NOTE = ("Anonymity is limited: an alias hides the setup, run id, timing and "
                  "tools, never the answer itself, so its wording, format, length or links "
                  "can still reveal which setup wrote it.")
"""What every blind-grading surface states (docs/methodology.md §4 "Blind grading")."""

FORMS = ("short_long", "paragraph_table", "swapped_order")
GRADE_FIELDS = ("core_conclusion", "request_fulfilment", "material_error", "claim", "evidence",
                "effect", "grader", "reason")
ASKS_FIELD = "needs_more_information"
"""The sheet's optional last column: ``yes`` when the answer asks the user for more
information (the standard's interaction state), ``no``, or empty (not recorded)."""
SHEET_COLUMNS = ("row", "sheet", "alias", "question", "answer", *GRADE_FIELDS, ASKS_FIELD)
"""Columns of the sheet; graders fill the last nine (the last optional). ``sheet`` binds
each row to its key."""

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "'")


def neutralise_cell(value: object) -> str:
    """A CSV cell a spreadsheet will not run (OWASP CSV injection) and that shows what it
    holds: every control and bidirectional character but tab, line feed and carriage return
    written as its escape (:func:`~grade_kit.text.visible`: a NUL, an ESC sequence or a
    U+202E of an answer never reaches the grader's screen raw), then text starting with
    ``=``, ``+``, ``-``, ``@``, a tab or a carriage return (or a quote, so the rule is
    reversible) gets a leading ``'``. :func:`restore_cell` undoes the guard exactly; the
    escapes stay (a grader never types one)."""
    text = visible("" if value is None else str(value))
    return "'" + text if text.startswith(_FORMULA_START) else text


def restore_cell(text: str) -> str:
    """The value :func:`neutralise_cell` was given."""
    return text[1:] if text.startswith("'") else text


def sheet_id(key: dict[str, Any]) -> str:
    """A hash of the sheet's aliases (with their runs and forms) and seed: recorded in the key
    and in every row, so a key can only map grades back onto its own sheet."""
    basis = {"seed": key["seed"],
             "aliases": sorted((a, v["run_id"], v["form"]) for a, v in key["aliases"].items())}
    return hashlib.sha256(json.dumps(basis, sort_keys=True).encode()).hexdigest()[:16]


def answer_text(run: Run, form: str = "full") -> str:
    """The answer as a grader reads it.

    Args:
        run: A delivered run.
        form: ``full`` (findings, limitations, recommendations as lists, then the text),
            ``short`` (findings only), ``paragraph`` (findings as one paragraph), ``table``
            (findings as a Markdown table), ``swapped`` (full, findings reversed).
    """
    response = run.response
    if response is None:
        return ""
    findings = list(response.key_findings)
    if form == "swapped":
        findings = findings[::-1]
    if form == "short":
        return "\n".join(f"- {f}" for f in findings) or response.text
    if form == "paragraph":
        return " ".join(findings) or response.text
    if form == "table":
        rows = "\n".join(f"| {i} | {f.replace('|', '/')} |" for i, f in enumerate(findings, 1))
        return f"| # | finding |\n|---|---|\n{rows}" if findings else response.text
    parts = []
    for title, items in (("Findings", findings), ("Limitations", response.limitations),
                         ("Recommendations", response.recommendations)):
        if items:
            parts.append(title + ":\n" + "\n".join(f"- {i}" for i in items))
    if response.text.strip():
        parts.append(response.text.strip())
    return "\n\n".join(parts)


_PAIR_FORMS = {"short_long": ("full", "short"), "paragraph_table": ("paragraph", "table"),
               "swapped_order": ("full", "swapped")}


def _alias(rng: random.Random, taken: set[str]) -> str:
    alphabet = string.ascii_uppercase + string.digits
    while True:
        alias = "".join(rng.choice(alphabet) for _ in range(6))
        if alias not in taken:
            taken.add(alias)
            return alias


def grading_sheet(tasks: Sequence[Task], runs: Sequence[Run], seed: int = 0,
                  calibration_pairs: int = 0) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Rows of a blind grading sheet and its key.

    Args:
        tasks: The tasks (for the question text).
        runs: The runs to grade; only delivered runs with a response are put on the sheet.
        seed: Seed of aliases, row order and calibration picks (recorded in the key).
        calibration_pairs: How many answers to restate in a second form (cycling through
            :data:`FORMS`); default 0.

    Returns:
        (rows, key). ``key`` maps each alias to its run and form and lists the pairs.
    """
    rng = random.Random(seed)
    prompts = {t.task_id: t.prompt for t in tasks}
    gradable = [r for r in runs if r.status == "delivered" and r.response is not None]
    taken: set[str] = set()
    entries: list[dict[str, Any]] = []
    for run in gradable:
        entries.append({"alias": _alias(rng, taken), "run": run, "form": "full",
                        "canonical": True})
    pairs = []
    picks = rng.sample(gradable, min(calibration_pairs, len(gradable)))
    for index, run in enumerate(picks):
        pair_form = FORMS[index % len(FORMS)]
        first, second = _PAIR_FORMS[pair_form]
        members = []
        for form in (first, second):
            entry: dict[str, Any] = {"alias": _alias(rng, taken), "run": run, "form": form,
                                     "canonical": False}
            entries.append(entry)
            members.append(entry["alias"])
        pairs.append({"pair_form": pair_form, "run_id": run.run_id, "aliases": members})
    rng.shuffle(entries)
    key: dict[str, Any] = {
        "seed": seed,
        "aliases": {e["alias"]: {"run_id": e["run"].run_id, "form": e["form"],
                                 "canonical": e["canonical"]} for e in entries},
        "pairs": pairs,
    }
    key["sheet"] = sheet_id(key)
    rows = []
    for number, entry in enumerate(entries, start=1):
        run = entry["run"]
        rows.append({"row": number, "sheet": key["sheet"], "alias": entry["alias"],
                     "question": prompts.get(run.task_id, ""),
                     "answer": answer_text(run, entry["form"]),
                     **dict.fromkeys((*GRADE_FIELDS, ASKS_FIELD), "")})
    return rows, key


STATEMENT = f"# {ANONYMITY_NOTE}"
"""The sheet's first row, one quoted cell: what a grader reads before any answer, in the file
itself (a spreadsheet shows it in the first cell)."""


def write_sheet_rows(handle: IO[str], rows: Iterable[Mapping[str, Any]], *,
                     header: bool) -> None:
    """Write ``rows`` to an open sheet (CSV, the :data:`SHEET_COLUMNS`, every cell
    neutralised against formula injection), after :data:`STATEMENT` and the header when
    ``header``: the one way a sheet row is written, whole by :func:`write_grading_sheet` or
    one at a time by the notebook's grading panel."""
    writer = csv.DictWriter(handle, fieldnames=list(SHEET_COLUMNS))
    if header:
        csv.writer(handle).writerow([STATEMENT])
        writer.writeheader()
    writer.writerows({k: neutralise_cell(v) for k, v in row.items()} for row in rows)


@dataclass(frozen=True)
class SheetRows:
    """A sheet's CSV as read by :func:`read_sheet_rows`."""

    preamble: list[list[str]]
    """The rows before the header whose first cell starts with ``#`` (:data:`STATEMENT`, as
    written or as a spreadsheet saved it back)."""
    header: list[str]
    header_line: int
    rows: list[tuple[int, list[str]]]
    """Each row after the header with the line it starts on (a cell may hold line breaks)."""


def read_sheet_rows(text: str) -> SheetRows:
    """The one way a sheet's CSV is read: statement rows (first cell starting with ``#``,
    trailing empty cells allowed) before the header set apart, then the header, then every
    row with its first line; a blank line is no row.

    Raises:
        csv.Error: for text that is not CSV (the caller names the file).
    """
    reader = csv.reader(io.StringIO(text, newline=""))
    preamble: list[list[str]] = []
    header: list[str] = []
    header_line = 0
    rows: list[tuple[int, list[str]]] = []
    start = 1
    for cells in reader:
        if not cells:
            start = reader.line_num + 1
            continue
        if not header and cells[0].startswith("#"):
            preamble.append(cells)
        elif not header:
            header, header_line = cells, start
        else:
            rows.append((start, cells))
        start = reader.line_num + 1
    return SheetRows(preamble, header, header_line, rows)


def write_grading_sheet(rows: Sequence[dict[str, Any]], key: dict[str, Any], sheet: Path,
                        key_path: Path) -> None:
    """Write the sheet as CSV (UTF-8, one row per answer, every cell neutralised against
    formula injection) and the key as JSON, each to a temporary name renamed into place."""
    from grade_kit.atomic import atomic_write

    def write_sheet(path: Path) -> None:
        with path.open("w", encoding="utf-8", newline="") as handle:
            write_sheet_rows(handle, rows, header=True)

    sheet.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(sheet, write_sheet)
    write_key(key, key_path)


def default_key_path(sheet: Path | str) -> Path:
    """Where a sheet's key is when none is named: ``<sheet stem>.key.json`` beside the sheet
    where that file exists (``grade-kit grading-sheet`` writes it there, for the person who
    sends the sheet out), else in :func:`~grade_kit.cache.keys_dir` under the sheet's name
    and a digest of its absolute path (``blind_grades-1a2b3c4d5e6f.key.json``): a grading
    panel's key is never one double-click from its grader."""
    sheet = Path(sheet)
    beside = sheet.with_suffix(".key.json")
    if beside.is_file():
        return beside
    digest = hashlib.sha256(str(sheet.resolve()).encode("utf-8")).hexdigest()[:12]
    return keys_dir() / f"{sheet.stem}-{digest}.key.json"


def write_key(key: dict[str, Any], key_path: Path) -> None:
    """Write a sheet's key as JSON (to a temporary name renamed into place; its folder made
    if needed): the one way a key is written, read back by :func:`read_key`."""
    from grade_kit.atomic import atomic_write_text

    key_path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(key_path, json.dumps(key, indent=2, ensure_ascii=False) + "\n")
