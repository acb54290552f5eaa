"""Blind grading round trip: sheet without setup/time/tools, seeded aliases, strict import."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from grade_kit.cli import main
from grade_kit.standard.blind import STATEMENT
from tests.paths import EXAMPLE, ROOT


def export(tmp: Path, *extra: str) -> tuple[Path, Path]:
    sheet = tmp / "sheet.csv"
    assert main(["grading-sheet", str(EXAMPLE / "tasks"), str(EXAMPLE / "runs.jsonl"),
                 "--out", str(sheet), "--seed", "11", *extra]) == 0
    return sheet, tmp / "sheet.key.json"


def read(sheet: Path) -> list[dict[str, str]]:
    """The rows of a sheet as a grader's spreadsheet reads them: the first row is the
    anonymity statement in one cell, then the header."""
    with sheet.open(newline="", encoding="utf-8") as handle:
        statement = next(csv.reader([handle.readline()]))
        assert statement == [STATEMENT]
        return list(csv.DictReader(handle))


def write(sheet: Path, rows: list[dict[str, str]]) -> None:
    """A sheet saved back as a spreadsheet saves it: the statement's row padded with empty
    cells to the header's width."""
    with sheet.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerow([STATEMENT] + [""] * (len(rows[0]) - 1))
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def line_of(sheet: Path, row: dict[str, str]) -> int:
    """The line a row starts on: answers hold line breaks, so rows and lines differ."""
    text = sheet.read_text(encoding="utf-8")
    return text[:text.index(f"\n{row['row']},{row['sheet']},") + 1].count("\n") + 1


def test_sheet_is_blind_seeded_and_shuffled(tmp_path: Path) -> None:
    sheet, key_path = export(tmp_path)
    rows = read(sheet)
    key = json.loads(key_path.read_text())
    assert key["seed"] == 11
    assert set(rows[0]) == {"row", "sheet", "alias", "question", "answer", "core_conclusion",
                            "request_fulfilment", "material_error", "claim", "evidence",
                            "effect", "grader", "reason", "needs_more_information"}
    text = sheet.read_text().split("\n", 1)[1]  # after the statement (which says "tools")
    for leak in ("careful", "hasty", "submitted", "call_", "tool"):
        assert leak not in text  # no setup, time or tool information
    assert len(rows) == 29  # delivered primary runs only
    assert len({r["alias"] for r in rows}) == 29
    run_order = [key["aliases"][r["alias"]]["run_id"] for r in rows]
    assert run_order != sorted(run_order)  # shuffled
    again, _ = export(tmp_path / "again")
    assert again.read_text() == sheet.read_text()  # same seed, same sheet


def test_import_maps_back_and_leaves_blanks_pending(tmp_path: Path) -> None:
    sheet, key_path = export(tmp_path)
    rows = read(sheet)
    key = json.loads(key_path.read_text())
    for row in rows[:-1]:
        row.update(core_conclusion="correct", request_fulfilment="full", material_error="no",
                   grader="ana")
    rows[0].update(material_error="yes", claim="18.4 reported for 0.184",
                   evidence="sessions.csv", effect="overstates by 100x")
    write(sheet, rows)
    out = tmp_path / "grades.jsonl"
    assert main(["import-grades", str(sheet), "--out", str(out)]) == 0
    grades = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(grades) == 28
    first = next(g for g in grades if g["run_id"] == key["aliases"][rows[0]["alias"]]["run_id"])
    assert first["material_error"] == "yes" and first["effect"] == "overstates by 100x"
    blank_run = key["aliases"][rows[-1]["alias"]]["run_id"]
    assert blank_run not in {g["run_id"] for g in grades}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"alias": "ZZZZZZ"}, "field 'alias': unknown alias 'ZZZZZZ'"),
        ({"core_conclusion": "right"}, "field 'core_conclusion'"),
        ({"grader": ""}, "field 'grader': missing required field"),
    ],
)
def test_bad_row_names_the_row_and_imports_nothing(tmp_path: Path, change: dict[str, str],
                                                   message: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    sheet, _ = export(tmp_path)
    rows = read(sheet)
    for row in rows:
        row.update(core_conclusion="correct", request_fulfilment="full", material_error="no",
                   grader="ana")
    rows[4].update(change)
    write(sheet, rows)
    out = tmp_path / "grades.jsonl"
    assert main(["import-grades", str(sheet), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert line_of(sheet, rows[4]) > 7  # the earlier answers span several lines each
    assert f"sheet.csv:{line_of(sheet, rows[4])} (row 5): {message}" in err
    assert "nothing imported" in err
    assert not out.exists()


def test_duplicate_alias_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sheet, _ = export(tmp_path)
    rows = read(sheet)
    rows[2]["alias"] = rows[1]["alias"]
    write(sheet, rows)
    assert main(["import-grades", str(sheet), "--out", str(tmp_path / "g.jsonl")]) == 1
    assert (f"sheet.csv:{line_of(sheet, rows[2])} (row 3): field 'alias'"
            in capsys.readouterr().err)


def test_calibration_pairs_report(tmp_path: Path) -> None:
    sheet, key_path = export(tmp_path, "--calibration-pairs", "3")
    key = json.loads(key_path.read_text())
    assert [p["pair_form"] for p in key["pairs"]] == ["short_long", "paragraph_table",
                                                      "swapped_order"]
    rows = read(sheet)
    assert len(rows) == 29 + 6
    disagree_alias = key["pairs"][0]["aliases"][1]
    for row in rows:
        row.update(core_conclusion="correct", request_fulfilment="full", material_error="no",
                   grader="model:gpt-judge")
        if row["alias"] == disagree_alias:
            row["request_fulfilment"] = "partial"
    write(sheet, rows)
    out = tmp_path / "grades.jsonl"
    assert main(["import-grades", str(sheet), "--out", str(out)]) == 0
    assert len(out.read_text().splitlines()) == 29  # variant rows never become grades
    report = (tmp_path / "calibration.md").read_text()
    assert report.startswith("# Internal consistency review")
    assert "1 disagree" in report
    assert "resolved / partially_resolved" in report
    for row in rows:
        row["grader"] = "ana"
    write(sheet, rows)
    assert main(["import-grades", str(sheet), "--out", str(out)]) == 0
    assert (tmp_path / "calibration.md").read_text().startswith("# Grader calibration check")


def test_formula_cells_are_neutralised_and_round_trip(tmp_path: Path) -> None:
    from grade_kit.standard.blind import neutralise_cell, restore_cell

    for value in ("=HYPERLINK(\"http://x\")", "+1", "-2", "@SUM(A1)", "\tx", "\rx", "'quoted",
                  "plain", ""):
        cell = neutralise_cell(value)
        assert not cell.startswith(("=", "+", "-", "@", "\t", "\r"))
        assert restore_cell(cell) == value
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"task_id": "q", "prompt": "=cmd|' /C calc'!A0"}) + "\n")
    runs = tmp_path / "runs.jsonl"
    runs.write_text(json.dumps({"run_id": "r", "setup": "A", "task_id": "q", "repeat": 1,
                                "status": "delivered",
                                "response": {"text": "-2+3 @evil =1+1"}}) + "\n")
    sheet = tmp_path / "s.csv"
    assert main(["grading-sheet", str(tasks), str(runs), "--out", str(sheet)]) == 0
    rows = read(sheet)
    for row in rows:
        for value in row.values():
            assert not value.startswith(("=", "+", "-", "@", "\t", "\r")), value
    assert rows[0]["question"] == "'=cmd|' /C calc'!A0"
    rows[0].update(core_conclusion="correct", request_fulfilment="full", material_error="no",
                   grader="h", claim="'=1+1")
    write(sheet, rows)
    out = tmp_path / "g.jsonl"
    assert main(["import-grades", str(sheet), "--out", str(out)]) == 0
    assert json.loads(out.read_text())["claim"] == "=1+1"


def test_a_key_from_another_sheet_imports_nothing(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    sheet, key_path = export(tmp_path / "a")
    other_sheet, other_key = export(tmp_path / "b", "--setups", "careful")
    rows = read(sheet)
    for row in rows:
        row.update(core_conclusion="correct", request_fulfilment="full", material_error="no",
                   grader="h")
    write(sheet, rows)
    out = tmp_path / "g.jsonl"
    assert main(["import-grades", str(sheet), "--key", str(other_key), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "field 'sheet': this row belongs to sheet" in err and "nothing imported" in err
    assert not out.exists()
    del other_sheet, key_path


@pytest.mark.parametrize(("content", "message"), [
    ("not json", "not a readable grading key: malformed JSON"),
    ('{"seed": 1}', "not a grading key: field 'sheet': missing required field"),
    ('{"seed": "1", "sheet": "x", "aliases": {}, "pairs": []}',
     "not a grading key: field 'seed'"),
])
def test_a_malformed_key_is_one_clear_error(tmp_path: Path, content: str, message: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    sheet, key_path = export(tmp_path)
    key_path.write_text(content)
    assert main(["import-grades", str(sheet), "--out", str(tmp_path / "g.jsonl")]) == 1
    assert message in capsys.readouterr().err


def test_an_edited_key_or_a_repeated_header_column_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sheet, key_path = export(tmp_path)
    key = json.loads(key_path.read_text())
    first = next(iter(key["aliases"]))
    second = list(key["aliases"])[1]
    key["aliases"][first]["run_id"], key["aliases"][second]["run_id"] = (
        key["aliases"][second]["run_id"], key["aliases"][first]["run_id"])
    key_path.write_text(json.dumps(key))
    assert main(["import-grades", str(sheet), "--out", str(tmp_path / "g.jsonl")]) == 1
    assert "does not match its aliases and seed (the key was edited)" in capsys.readouterr().err
    sheet2, _ = export(tmp_path / "x")
    lines = sheet2.read_text().splitlines()
    lines[1] = lines[1] + ",grader"  # line 1 is the anonymity statement, line 2 the header
    sheet2.write_text("\n".join(lines) + "\n")
    assert main(["import-grades", str(sheet2), "--out", str(tmp_path / "h.jsonl")]) == 1
    assert "sheet.csv:2: header repeats column(s) ['grader']" in capsys.readouterr().err


def test_every_blind_surface_says_anonymity_is_limited(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/methodology.md §4 "Blind grading": the sheet's command, the notebook panel and
    the report's section each state it, in the standard's words."""
    from grade_kit.presentation.explorer import BlindGradingPanel
    from grade_kit.reading.inputs import read_inputs
    from grade_kit.standard.blind import ANONYMITY_NOTE

    assert ANONYMITY_NOTE.startswith("Anonymity is limited: an alias hides the setup")
    assert main(["grading-sheet", str(EXAMPLE / "tasks"), str(EXAMPLE / "runs.jsonl"),
                 "--out", str(tmp_path / "sheet.csv")]) == 0
    assert f"note: {ANONYMITY_NOTE}" in capsys.readouterr().out
    inputs = read_inputs(EXAMPLE / "tasks", EXAMPLE / "runs.jsonl")
    panel = BlindGradingPanel(inputs.tasks, inputs.runs, tmp_path / "grades.csv")
    texts = [getattr(child, "value", "") for child in panel.widget.children]
    assert any(ANONYMITY_NOTE in str(text) for text in texts)
    for folder in ("notebooks", "grade_kit/notebooks"):
        notebook = json.loads((ROOT / folder / "blind_grading.ipynb").read_text(
            encoding="utf-8"))
        section = "".join(notebook["cells"][0]["source"])
        assert section.startswith("# Blind grading") and ANONYMITY_NOTE in section


def test_a_sheet_shows_control_characters_as_escapes(tmp_path: Path) -> None:
    """An answer holding NUL, BEL, an ESC sequence and U+202E reaches the grading sheet as
    escapes, never raw; tab and line breaks stay."""
    hostile = "a\x00b\x07c\x1b[31md\u202ee\tf\ng"
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"task_id": "q", "prompt": "question"}) + "\n")
    runs = tmp_path / "runs.jsonl"
    runs.write_text(json.dumps({"run_id": "r", "setup": "A", "task_id": "q", "repeat": 1,
                                "status": "delivered", "response": {"text": hostile}}) + "\n")
    sheet = tmp_path / "s.csv"
    assert main(["grading-sheet", str(tasks), str(runs), "--out", str(sheet)]) == 0
    raw = sheet.read_text(encoding="utf-8")
    assert not any(c in raw for c in ("\x00", "\x07", "\x1b", "\u202e"))
    (row,) = read(sheet)
    assert "a\\x00b\\x07c\\x1b[31md\\u202ee\tf\ng" in row["answer"]


def test_the_sheet_states_its_anonymity_first_and_imports_without_it(tmp_path: Path) -> None:
    sheet, _ = export(tmp_path)
    first = sheet.read_text(encoding="utf-8").split("\n", 1)[0]
    # one quoted cell: a spreadsheet shows the whole statement in its first cell
    assert first == f'"{STATEMENT}"' and STATEMENT.startswith("# Anonymity is limited")
    rows = read(sheet)
    for row in rows:
        row.update(core_conclusion="correct", request_fulfilment="full", material_error="no",
                   grader="ana")
    with sheet.open("w", newline="", encoding="utf-8") as handle:  # the grader deleted it
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    out = tmp_path / "grades.jsonl"
    assert main(["import-grades", str(sheet), "--out", str(out)]) == 0
    assert len(out.read_text().splitlines()) == 29
