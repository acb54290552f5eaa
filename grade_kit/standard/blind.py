"""Blind grading: export a sheet of aliased answers, import the filled sheet, check calibration.

The sheet shows a grader the question and the answer only: no setup, time, tool count or
earlier score. Each answer gets a random alias (seeded; the seed is recorded in the key), and
the rows are shuffled. The key (alias -> run id) is a separate file the graders never see.

Calibration: the sheet can carry extra rows that restate an answer's facts in another form
(``short_long``: findings alone vs the full answer; ``paragraph_table``: findings as a
paragraph vs a table; ``swapped_order``: findings in reverse order). A grader who is calibrated
gives both forms the same verdict; :func:`calibration_report` lists where they differ. When every
grader of the pairs is a model, the report is titled an internal consistency review, since no
human judgement was checked.
"""

from __future__ import annotations

import csv
import json
import random
import string
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from grade_kit.frames import run_frames, verdict_frames
from grade_kit.io import describe_validation_error
from grade_kit.schema import Grade, Run, Task
from grade_kit.standard.grades import run_grades

__all__ = [
    "FORMS",
    "SHEET_COLUMNS",
    "SheetImport",
    "answer_text",
    "calibration_report",
    "grading_sheet",
    "import_grading_sheet",
    "write_grading_sheet",
]

FORMS = ("short_long", "paragraph_table", "swapped_order")
GRADE_FIELDS = ("core_conclusion", "request_fulfilment", "material_error", "claim", "evidence",
                "effect", "grader", "reason")
SHEET_COLUMNS = ("row", "alias", "question", "answer", *GRADE_FIELDS)
"""Columns of the sheet; graders fill the last eight."""


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
    rows = []
    for number, entry in enumerate(entries, start=1):
        run = entry["run"]
        rows.append({"row": number, "alias": entry["alias"],
                     "question": prompts.get(run.task_id, ""),
                     "answer": answer_text(run, entry["form"]),
                     **dict.fromkeys(GRADE_FIELDS, "")})
    key = {
        "seed": seed,
        "aliases": {e["alias"]: {"run_id": e["run"].run_id, "form": e["form"],
                                 "canonical": e["canonical"]} for e in entries},
        "pairs": pairs,
    }
    return rows, key


def write_grading_sheet(rows: Sequence[dict[str, Any]], key: dict[str, Any], sheet: Path,
                        key_path: Path) -> None:
    """Write the sheet as CSV (UTF-8, one row per answer) and the key as JSON."""
    sheet.parent.mkdir(parents=True, exist_ok=True)
    with sheet.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(SHEET_COLUMNS))
        writer.writeheader()
        writer.writerows(rows)
    key_path.write_text(json.dumps(key, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


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
    out.calibration = _pair_verdicts(key, dict(pending))
    return out


def _verdict(grade: Grade) -> str:
    """The grade that the grading order gives a delivered run with this record."""
    run = Run.model_validate({"run_id": "x", "setup": "-", "task_id": "-", "repeat": 1,
                              "status": "delivered", "response": {}})
    runs = run_frames([run])["runs"]
    frame = verdict_frames(grades=[grade.model_copy(update={"run_id": "x"})])["grades"]
    return str(run_grades(runs, frame).get_column("grade").item())


def _pair_verdicts(key: dict[str, Any], graded: dict[str, Grade]) -> list[dict[str, Any]]:
    rows = []
    for pair in key["pairs"]:
        a, b = pair["aliases"]
        if a not in graded or b not in graded:
            rows.append({**pair, "status": "not graded in both forms"})
            continue
        ga, gb = graded[a], graded[b]
        fields = [f for f in ("core_conclusion", "request_fulfilment", "material_error")
                  if getattr(ga, f) != getattr(gb, f)]
        va, vb = _verdict(ga), _verdict(gb)
        rows.append({**pair, "graders": sorted({ga.grader, gb.grader}),
                     "verdicts": [va, vb], "differing_fields": fields,
                     "status": "agree" if va == vb and not fields else "disagree"})
    return rows


def calibration_report(calibration: Sequence[dict[str, Any]],
                       model_graders: Sequence[str] = ()) -> str:
    """Markdown report of the calibration pairs.

    Titled *Internal consistency review* when every grader of the graded pairs is a model
    (named in ``model_graders`` or written ``model:<name>``), else *Grader calibration check*.
    """
    graders = {g for row in calibration for g in row.get("graders", [])}
    models_only = bool(graders) and all(g.startswith("model:") or g in model_graders
                                        for g in graders)
    title = "Internal consistency review" if models_only else "Grader calibration check"
    lines = [f"# {title}", ""]
    if models_only:
        lines += ["Every grader of these pairs is a model: this checks the model grader "
                  "against itself, not against human judgement.", ""]
    done = [r for r in calibration if r["status"] != "not graded in both forms"]
    disagree = [r for r in done if r["status"] == "disagree"]
    lines.append(f"{len(calibration)} pairs of answers carrying the same facts in two forms; "
                 f"{len(done)} graded in both forms; {len(disagree)} disagree.")
    lines.append("")
    if calibration:
        lines += ["| form pair | run | aliases | graders | verdicts | differing fields | "
                  "status |", "|---|---|---|---|---|---|---|"]
        for r in calibration:
            lines.append(
                f"| {r['pair_form']} | {r['run_id']} | {' / '.join(r['aliases'])} | "
                f"{', '.join(r.get('graders', [])) or '—'} | "
                f"{' / '.join(r.get('verdicts', [])) or '—'} | "
                f"{', '.join(r.get('differing_fields', [])) or '—'} | {r['status']} |")
    return "\n".join(lines) + "\n"
