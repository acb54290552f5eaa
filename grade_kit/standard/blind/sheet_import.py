"""Reading a filled blind grading sheet back: every row validated, nothing imported while any
row is wrong, calibration pairs compared."""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from grade_kit.reading.io import describe_validation_error
from grade_kit.reading.parse import ParseError, loads_json, read_text
from grade_kit.schema import Grade, InputError
from grade_kit.standard.blind.pairs import pair_verdicts
from grade_kit.standard.blind.sheet import (
    ASKS_FIELD,
    GRADE_FIELDS,
    read_sheet_rows,
    restore_cell,
    sheet_id,
)


@dataclass
class SheetImport:
    """The result of reading a filled sheet: grades, errors (nothing imports while any), the
    rows left blank, and the calibration verdicts."""

    grades: list[Grade] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    blank: list[str] = field(default_factory=list)
    calibration: list[dict[str, Any]] = field(default_factory=list)


class _AliasEntry(BaseModel):
    model_config = ConfigDict(strict=True)

    run_id: str
    form: str
    canonical: bool


class _Pair(BaseModel):
    pair_form: str
    run_id: str
    aliases: list[str] = Field(min_length=2, max_length=2)


class SheetKey(BaseModel):
    """The key of a blind sheet (alias -> run), as :func:`grading_sheet` writes it."""

    model_config = ConfigDict(strict=True)

    seed: int
    sheet: str
    aliases: dict[str, _AliasEntry]
    pairs: list[_Pair]


def read_key(path: Path) -> dict[str, Any]:
    """Read and check a sheet key.

    Raises:
        InputError: naming the file and field when it is not a key this tool wrote, or when
            its sheet id does not match its own aliases and seed (an edited key).
    """
    try:
        data = loads_json(read_text(path))
        key = SheetKey.model_validate(data).model_dump()
    except (ParseError, OSError) as exc:
        raise InputError(f"{path}: not a readable grading key: {exc}") from exc
    except ValidationError as exc:
        loc, msg = describe_validation_error(exc)
        raise InputError(f"{path}: not a grading key: field '{loc}': {msg}") from exc
    if sheet_id(key) != key["sheet"]:
        raise InputError(f"{path}: the key's sheet id {key['sheet']!r} does not match its "
                         "aliases and seed (the key was edited)")
    return key


def import_grading_sheet(sheet: Path, key: dict[str, Any]) -> SheetImport:
    """Map a filled sheet back to run ids, validating every field of every row.

    A row is blank when all eight grade fields are empty (the answer stays ungraded and is
    listed); the optional ``needs_more_information`` column reads ``yes``, ``no`` or empty.
    Any other row must be a valid grade. A sheet made with another key (its ``sheet``
    column differs from the key's), a repeated or missing header column, unknown aliases, a
    repeated alias, a bad value or a missing field are errors naming the row; with any error,
    ``grades`` is empty. Cells are read back through :func:`restore_cell`.
    """
    out = SheetImport()
    aliases: dict[str, dict[str, Any]] = key["aliases"]
    seen: dict[str, int] = {}
    pending: list[tuple[str, Grade]] = []
    try:
        text = read_text(sheet)
    except (ParseError, OSError) as exc:
        out.errors.append(f"{sheet}: cannot be read: {exc}")
        return out
    try:
        read = read_sheet_rows(text)
    except csv.Error as exc:
        out.errors.append(f"{sheet}: malformed CSV: {exc}")
        return out
    header, at = read.header, read.header_line or 1
    repeated = sorted({c for c in header if header.count(c) > 1})
    if repeated:
        out.errors.append(f"{sheet}:{at}: header repeats column(s) {repeated}")
        return out
    missing = [c for c in ("sheet", "alias", *GRADE_FIELDS) if c not in header]
    if missing:
        out.errors.append(f"{sheet}:{at}: header lacks column(s) {missing}")
        return out
    records = [(line, dict(zip(header, cells, strict=False))) for line, cells in read.rows]
    for line, raw in records:
        row = {k: restore_cell(v) if isinstance(v, str) else "" for k, v in raw.items()
               if k is not None}
        where = f"{sheet}:{line} (row {row.get('row') or '?'})"
        if row.get("sheet") != key["sheet"]:
            out.errors.append(f"{where}: field 'sheet': this row belongs to sheet "
                              f"{row.get('sheet')!r}, the key to sheet {key['sheet']!r}")
            continue
        alias = (row.get("alias") or "").strip()
        if alias not in aliases:
            out.errors.append(f"{where}: field 'alias': unknown alias {alias!r}")
            continue
        if alias in seen:
            out.errors.append(f"{where}: field 'alias': alias {alias!r} repeats line "
                              f"{seen[alias]}")
            continue
        seen[alias] = line
        values = {f: (row.get(f) or "").strip() for f in GRADE_FIELDS}
        if not any(values.values()):
            out.blank.append(alias)
            continue
        record: dict[str, Any] = {k: v for k, v in values.items() if v}
        asks = (row.get(ASKS_FIELD) or "").strip().lower()
        if asks not in ("", "yes", "no"):
            out.errors.append(f"{where}: field '{ASKS_FIELD}': {asks!r} is not yes, no or "
                              "empty")
            continue
        if asks:
            record[ASKS_FIELD] = asks == "yes"
        try:
            grade = Grade.model_validate({"run_id": aliases[alias]["run_id"], **record})
        except ValidationError as exc:
            loc, msg = describe_validation_error(exc)
            out.errors.append(f"{where}: field '{loc}': {msg}")
            continue
        pending.append((alias, grade))
    if out.errors:
        return out
    out.grades = [g for alias, g in pending if aliases[alias]["canonical"]]
    out.calibration = pair_verdicts(key, dict(pending))
    return out
