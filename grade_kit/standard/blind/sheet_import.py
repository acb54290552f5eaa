"""Reading a filled blind grading sheet back: every row validated, nothing imported while any
row is wrong, calibration pairs compared."""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from grade_kit.io import describe_validation_error
from grade_kit.schema import Grade
from grade_kit.standard.blind.pairs import pair_verdicts
from grade_kit.standard.blind.sheet import GRADE_FIELDS

__all__ = ["SheetImport", "import_grading_sheet"]


@dataclass
class SheetImport:
    """The result of reading a filled sheet: grades, errors (nothing imports while any), the
    rows left blank, and the calibration verdicts."""

    grades: list[Grade] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    blank: list[str] = field(default_factory=list)
    calibration: list[dict[str, Any]] = field(default_factory=list)


def import_grading_sheet(sheet: Path, key: dict[str, Any]) -> SheetImport:
    """Map a filled sheet back to run ids, validating every field of every row.

    A row is blank when all eight grade fields are empty (the answer stays ungraded and is
    listed). Any other row must be a valid grade. Unknown aliases, a repeated alias, a bad value
    or a missing field are errors naming the row; with any error, ``grades`` is empty.
    """
    out = SheetImport()
    aliases: dict[str, dict[str, Any]] = key["aliases"]
    seen: dict[str, int] = {}
    pending: list[tuple[str, Grade]] = []
    with sheet.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in ("alias", *GRADE_FIELDS) if c not in (reader.fieldnames or [])]
        if missing:
            out.errors.append(f"{sheet}: header lacks column(s) {missing}")
            return out
        for line, row in enumerate(reader, start=2):
            where = f"{sheet}:{line} (row {row.get('row') or '?'})"
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
            record = {k: v for k, v in values.items() if v}
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
