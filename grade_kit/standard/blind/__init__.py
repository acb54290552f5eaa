"""Blind grading: export a sheet of aliased answers, import the filled sheet, check calibration.

The sheet shows a grader the question and the answer only: no setup, time, tool count or
earlier score. Each answer gets a random alias (seeded; the seed is recorded in the key), and
the rows are shuffled. The key (alias -> run id) is a separate file the graders never see.
Anonymity is limited (:data:`ANONYMITY_NOTE`): an answer's own wording, format or links can
reveal its setup, and every surface says so.

Calibration: the sheet can carry extra rows that restate an answer's facts in another form
(``short_long``: findings alone vs the full answer; ``paragraph_table``: findings as a
paragraph vs a table; ``swapped_order``: findings in reverse order). A grader who is calibrated
gives both forms the same verdict; :func:`calibration_report` lists where they differ. When every
grader of the pairs is a model, the report is titled an internal consistency review, since no
human judgement was checked.
"""

from grade_kit.standard.blind.pairs import calibration_report, pair_verdicts
from grade_kit.standard.blind.sheet import (
    ANONYMITY_NOTE,
    ASKS_FIELD,
    FORMS,
    GRADE_FIELDS,
    SHEET_COLUMNS,
    STATEMENT,
    answer_text,
    default_key_path,
    grading_sheet,
    neutralise_cell,
    read_sheet_rows,
    restore_cell,
    sheet_id,
    write_grading_sheet,
    write_key,
    write_sheet_rows,
)
from grade_kit.standard.blind.sheet_import import (
    SheetImport,
    SheetKey,
    import_grading_sheet,
    read_key,
)

__all__ = [
    "ANONYMITY_NOTE",
    "ASKS_FIELD",
    "FORMS",
    "GRADE_FIELDS",
    "SHEET_COLUMNS",
    "STATEMENT",
    "SheetImport",
    "SheetKey",
    "answer_text",
    "calibration_report",
    "default_key_path",
    "grading_sheet",
    "import_grading_sheet",
    "neutralise_cell",
    "pair_verdicts",
    "read_key",
    "read_sheet_rows",
    "restore_cell",
    "sheet_id",
    "write_grading_sheet",
    "write_key",
    "write_sheet_rows",
]
