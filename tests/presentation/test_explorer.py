"""The explorer's filters and run view, and the blind-grading panel that appends each grade
as it is saved (widgets driven as a person would: set a value, click the button)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pandas as pd
import polars as pl
import pytest

import grade_kit as gk
from grade_kit.cache import keys_dir
from grade_kit.presentation.explorer import (
    KEYS_CLASS,
    BlindGradingPanel,
    Explorer,
    filter_runs,
    listing,
    sort_runs,
)
from grade_kit.schema import InputError
from grade_kit.standard.blind import STATEMENT
from tests.conftest import make_run, make_task

HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)>"
TASKS = [make_task("t1", track=1, pack="p1"), make_task("t2", track=2, pack="p1")]
RUNS = [make_run("a1", "t1", setup="A", findings=["x"]),
        make_run("a2", "t2", setup="A", findings=[HOSTILE], text=HOSTILE),
        make_run("b1", "t1", setup="B", status="failed"),
        make_run("b2", "t2", setup="B", findings=["y"])]
EV = gk.evaluate(TASKS, RUNS, grades=[
    {"run_id": "a1", "core_conclusion": "correct", "request_fulfilment": "full",
     "material_error": "no", "grader": "p"},
    {"run_id": "b2", "core_conclusion": "material_error", "request_fulfilment": "full",
     "material_error": "yes", "grader": "p"}])


def test_filters_keep_the_rows_that_match_and_return_the_same_kind() -> None:
    assert sorted(filter_runs(EV.runs, setup="A")["run_id"].to_list()) == ["a1", "a2"]
    assert filter_runs(EV.runs, track=2, grade="material_error")["run_id"].to_list() == ["b2"]
    assert filter_runs(EV.runs, grade="unresolved")["run_id"].to_list() == ["b1"]
    assert filter_runs(EV.runs, setup="(all)", task_id=None).height == 4
    assert filter_runs(EV.runs, pack="nowhere").height == 0
    as_pandas = filter_runs(EV.runs.to_pandas(), setup="B")
    assert isinstance(as_pandas, pd.DataFrame) and sorted(as_pandas["run_id"]) == ["b1", "b2"]
    with pytest.raises(ValueError, match="unknown filter"):
        filter_runs(EV.runs, colour="red")


def _ids(ex: Explorer) -> list[str]:
    return [run_id for _label, run_id in ex.run_choice.options]


def test_the_explorer_follows_its_filters_and_escapes_answers() -> None:
    ex = Explorer(EV)
    # the most informative first: the material error, the unresolved run, then resolved ones
    assert _ids(ex)[:2] == ["b2", "b1"] and sorted(_ids(ex)[2:]) == ["a1", "a2"]
    assert ex.run_choice.value == "b2" and "Answer of run b2" in ex.detail.value
    ex.filters["setup"].value = "A"
    ex.filters["task_id"].value = "t2"
    assert _ids(ex) == ["a2"] and ex.run_choice.value == "a2"
    assert "&lt;script&gt;" in ex.detail.value and "<script>" not in ex.detail.value
    assert "<b>1</b> of 4 runs" in ex.count.value
    ex.run_choice.value = None  # nothing picked: the details say how to pick
    assert ex.detail.value == "<p>Pick a run to read it here.</p>"


def test_each_filter_offers_only_what_the_others_leave_with_counts() -> None:
    ex = Explorer(EV)
    assert list(ex.filters["setup"].options) == [("(all) 4", "(all)"), ("A 2", "A"),
                                                 ("B 2", "B")]
    ex.filters["setup"].value = "B"
    # B's runs: b1 unresolved (failed), b2 material error; a1/a2's grades are not offered
    grades = list(ex.filters["grade"].options)
    assert [v for _, v in grades] == ["(all)", "material_error", "unresolved"]
    assert grades[1] == ("material error 1", "material_error")  # a grade in words
    ex.filters["grade"].value = "unresolved"
    # the setup filter narrows in turn: only B has an unresolved run; B stays chosen
    assert list(ex.filters["setup"].options) == [("(all) 1", "(all)"), ("B 1", "B")]
    assert ex.filters["setup"].value == "B" and _ids(ex) == ["b1"]
    ex.filters["grade"].value = "(all)"
    assert sorted(_ids(ex)) == ["b1", "b2"]


def test_the_run_list_pages_and_sorts() -> None:
    ex = Explorer(EV, rows=3)
    assert ex.pages == 2 and ex.previous.disabled and not ex.next.disabled
    assert ex.where.value == "runs 1–3 of 4 (page 1 of 2)"
    ex.next.click()
    assert ex.page == 1 and len(ex.run_choice.options) == 1 and ex.next.disabled
    assert ex.where.value == "runs 4–4 of 4 (page 2 of 2)"
    assert ex.run_choice.value == _ids(ex)[0]  # a new page shows its first run
    ex.turn(5)  # never past the last page
    assert ex.page == 1
    ex.sort.value = "run id"  # a new order starts on the first page
    assert ex.page == 0 and _ids(ex) == ["a1", "a2", "b1"]
    ex.sort.value = "highest composite first"
    composite = dict(zip(EV.runs["run_id"], EV.runs["composite"], strict=True))
    shown = [composite[r] for r in _ids(ex)]
    scored = [c for c in shown if c is not None]
    assert shown == [*sorted(scored, reverse=True), *[None] * (len(shown) - len(scored))]
    assert len(scored) < len(shown)  # a run without a composite comes last
    with pytest.raises(ValueError, match="unknown order"):
        sort_runs(EV.runs, "alphabetical")


def test_the_listing_aligns_its_columns_and_keeps_run_ids_whole() -> None:
    page = pl.DataFrame({"run_id": ["a-very-long-run-id-kept-whole", "b"], "setup": ["A", "B"],
                         "grade": ["resolved", None], "composite": [0.5, 0.25],
                         "e2e_s": [12.345, None], "tool_calls": [3, 10]})
    header, options = listing(page)
    assert header == ("run id                         setup  grade     composite  E2E (s)"
                      "  tool calls")
    assert [v for _, v in options] == ["a-very-long-run-id-kept-whole", "b"]
    assert [label for label, _ in options] == [
        "a-very-long-run-id-kept-whole  A      resolved      0.500     12.3           3",
        "b                              B      —             0.250        —          10"]


def test_an_evaluation_without_runs_says_so() -> None:
    ex = Explorer(gk.evaluate(TASKS, []))
    assert "No run matches" in ex.count.value and "holds no runs" in ex.count.value
    assert ex.run_choice.options == () and ex.detail.value == "" and ex.where.value == ""


def test_a_widget_shows_as_its_static_copy_then_its_live_view(monkeypatch) -> None:
    import IPython.display

    shown: list[dict[str, object]] = []
    monkeypatch.setattr(IPython.display, "display",
                        lambda bundle, raw=False: shown.append(bundle))
    ex = Explorer(EV)
    ex._ipython_display_()
    static, live = shown
    assert f'data-gk-static="{ex.key}"' in str(static["text/html"])
    assert "the notebook <code>explorer.ipynb</code> filters them" in str(static["text/html"])
    assert "<script>alert" not in str(static["text/html"])  # the hostile answer is escaped
    # the live view: the widget, and no HTML of its own (the copy is never shown twice)
    assert "application/vnd.jupyter.widget-view+json" in live and live["text/html"] == ""
    # while on screen it hides its copy; a reopened notebook hides the orphaned view instead
    assert f'[data-gk-static="{ex.key}"]){{display:none}}' in ex.widget.children[0].value
    assert ".jp-OutputArea-output.jupyter-widgets){display:none}" in str(static["text/html"])
    # its controls take their own keys (JupyterLab's command mode would move between cells)
    assert KEYS_CLASS in ex.widget._dom_classes
    assert "data-lm-suppress-shortcuts" in str(static["text/html"])


def test_blind_grades_are_appended_under_aliases_with_the_key_apart(tmp_path: Path) -> None:
    """The grading file holds aliases only (no run id, no setup); the key is a file of its
    own; every save is on disk at once; a new kernel resumes in the same order, its progress
    counted from the file; ``import-grades`` maps the file back to run ids."""
    from grade_kit.cli import main

    path = tmp_path / "blind.csv"
    panel = BlindGradingPanel(TASKS, RUNS, path, grader="ana", seed=3)
    # the key is outside the grading file's folder (in the user's keys folder), and the
    # panel says where
    assert panel.key_path is not None and panel.key_path.parent == keys_dir()
    assert panel.key_path.name.startswith("blind-") and list(tmp_path.iterdir()) == []
    assert f"key in {panel.key_path}" in panel.status.value
    key = json.loads(panel.key_path.read_text())
    assert len(panel.queue) == 3 == panel.total  # the failed run has no answer to grade
    order = list(panel.queue)
    assert order == [a for a in key["aliases"]]  # the key's seeded order
    shown = panel.answer.value
    first = key["aliases"][order[0]]["run_id"]
    for leak in (first, "setup", "submitted", "tool"):
        assert leak not in shown
    assert f"Answer {panel.current_alias()}" in shown
    # the placeholders render as a label (every option a pair), and start chosen
    assert panel.core.options[0] == ("— choose —", "") and panel.core.value == ""
    assert all(isinstance(o, tuple) for o in (*panel.core.options, *panel.fulfilment.options))
    panel.core.value = "material_error"
    panel.fulfilment.value = "partial"
    panel.claim.value = "the claim"
    panel.asking.value = True
    panel.save_button.click()
    statement, text = path.read_text().split("\n", 1)  # on disk before anything else
    assert statement == f'"{STATEMENT}"'  # the file graders open states its anonymity
    rows = list(csv.DictReader(io.StringIO(text)))
    cells = {v for row in rows for v in row.values()}
    assert not {"run_id", "setup"} & set(rows[0])
    assert not cells & {r.run_id for r in RUNS} and not cells & {r.setup for r in RUNS}
    assert [(r["alias"], r["core_conclusion"], r["material_error"], r["claim"], r["grader"],
             r["needs_more_information"]) for r in rows] == [
        (order[0], "material_error", "yes", "the claim", "ana", "yes")]
    assert panel.claim.value == "" and len(panel.queue) == 2
    # every field starts empty for the next answer: nothing is carried over
    assert (panel.core.value, panel.fulfilment.value, panel.asking.value) == ("", "", False)
    assert "1 of 3 graded (1 saved here, 2 left)" in panel.answer.value
    with pytest.raises(ValueError, match="choose the core conclusion"):
        panel.save()
    panel.save_button.click()  # a click without a choice writes nothing and says why
    assert len(list(csv.reader(io.StringIO(path.read_text())))) == 3  # statement, header, row
    assert "Not saved" in panel.status.value
    again = BlindGradingPanel(TASKS, RUNS, path, grader="ana", seed=99)  # a new kernel
    assert again.queue == order[1:]  # the key's order, whatever seed is given now
    assert "1 of 3 graded (0 saved here, 2 left)" in again.answer.value
    while again.queue:
        again.core.value, again.fulfilment.value = "correct", "full"
        again.save()
    assert "Every answer is graded" in again.answer.value and again.save() is None
    out = tmp_path / "grades.jsonl"
    assert main(["import-grades", str(path), "--out", str(out)]) == 0
    imported = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(g["run_id"] for g in imported) == sorted(
        key["aliases"][a]["run_id"] for a in order)
    assert next(g for g in imported if g["run_id"] == first)["needs_more_information"] is True
    graded = gk.evaluate(TASKS, RUNS, grades=out)
    assert not graded.inputs.rejected
    assert graded.results.setups["A"].grades.ungraded == 0


def test_undo_takes_the_files_last_row_back_whichever_session_saved_it(
        tmp_path: Path) -> None:
    path = tmp_path / "blind.csv"
    panel = BlindGradingPanel(TASKS, RUNS, path, seed=3)
    assert panel.undo() is None and panel.undo_button.disabled
    first, second = panel.queue[:2]
    panel.core.value, panel.fulfilment.value, panel.claim.value = "correct", "full", "x"
    panel.save()
    kept = path.read_bytes()
    panel.core.value, panel.fulfilment.value = "correct", "partial"
    panel.save()
    assert not panel.undo_button.disabled
    panel.undo_button.click()
    assert path.read_bytes() == kept  # exactly the last row out
    assert panel.queue[0] == second and panel.saved_here == [first]
    assert panel.claim.value == ""
    again = BlindGradingPanel(TASKS, RUNS, path, seed=3)  # after a restart: still undoable
    assert again.undo() == first and again.queue[:2] == [first, second]
    # a row an earlier session saved was not saved here: no "-1 saved here"
    assert again.saved_here == [] and "(0 saved here, 3 left)" in again.answer.value
    assert list(csv.reader(io.StringIO(path.read_text()))) == list(
        csv.reader(io.StringIO(kept.decode())))[:2]  # the statement and the header alone
    with path.open("a") as handle:  # a row of another sheet
        handle.write("1,othersheet,ZZZZZZ,q,a,correct,full,no,,,,p,,no\n")
    with pytest.raises(InputError, match="belongs to sheet 'othersheet'"):
        BlindGradingPanel(TASKS, RUNS, path, seed=3)


def test_the_key_and_the_file_go_where_asked_and_no_answer_is_no_form(tmp_path: Path) -> None:
    panel = BlindGradingPanel(TASKS, RUNS, tmp_path / "a" / "g.csv",
                              key_file=tmp_path / "keys" / "deep" / "k.json")
    assert (tmp_path / "keys" / "deep" / "k.json").is_file() and panel.total == 3
    panel.core.value, panel.fulfilment.value = "correct", "full"
    panel.save()
    assert (tmp_path / "a" / "g.csv").is_file()
    none = BlindGradingPanel(TASKS, [r for r in RUNS if r.status != "delivered"],
                             tmp_path / "none.csv")
    assert none.total == 0 and "Every answer is graded" in none.answer.value
    assert none.save() is None and none.save_button.disabled


def test_a_key_of_another_evaluation_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "blind.csv"
    BlindGradingPanel(TASKS, RUNS, path, seed=3)
    with pytest.raises(InputError, match="names 1 runs this evaluation does not have"):
        BlindGradingPanel(TASKS, [r for r in RUNS if r.run_id != RUNS[0].run_id], path)


def test_without_a_grades_file_the_panel_offers_nothing() -> None:
    panel = BlindGradingPanel(TASKS, RUNS, None)
    assert panel.queue == [] and panel.save() is None
    assert list(panel.widget.children)[1:] == [panel.answer]  # its style; no form, no Save
    assert "set <code>grading_file</code>" in panel.answer.value
    assert ("is done in the notebook <code>blind_grading.ipynb</code> with a grading file"
            in panel.static_html())


def test_an_empty_answer_is_said_not_left_blank(tmp_path: Path) -> None:
    """Issue 55, item 12: a delivered run with no text shows "(empty answer ...)" under its
    heading, not a heading with nothing under it."""
    empty = [make_run("e1", "t1", setup="A")]  # delivered, no finding and no text
    panel = BlindGradingPanel(TASKS, empty, tmp_path / "blind.csv", grader="ana", seed=1)
    assert panel.queue and "(empty answer: the run delivered no text)" in panel.answer.value


def test_the_static_counts_follow_the_summary_and_name_grades_in_words() -> None:
    from grade_kit.presentation.explorer import grade_counts

    runs = pl.DataFrame({
        "setup": ["a", "a", "b", "b", "b", "c"], "is_primary": [True] * 5 + [False],
        "grade": ["unresolved", "resolved", "material_error", "resolved", None, "resolved"],
        "run_id": list("123456")})
    counts = grade_counts(runs, ["b", "a"])  # b leads the summary; c made no primary run
    assert counts.columns == ["setup", "resolved", "material error", "unresolved", "no grade"]
    assert counts.rows() == [("b", 1, 1, 0, 1), ("a", 1, 0, 1, 0)]
