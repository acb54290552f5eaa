"""The explorer's filters and run view, and the blind-grading panel that appends each grade
as it is saved (widgets driven as a person would: set a value, click the button)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import grade_kit as gk
from grade_kit.explorer import BlindGradingPanel, Explorer, filter_runs
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


def test_the_explorer_follows_its_filters_and_escapes_answers() -> None:
    ex = Explorer(EV)
    # the most informative first: the material error, the unresolved run, then resolved ones
    options = list(ex.run_choice.options)
    assert options[:2] == ["b2", "b1"] and sorted(options[2:]) == ["a1", "a2"]
    ex.filters["setup"].value = "A"
    ex.filters["task_id"].value = "t2"
    assert list(ex.run_choice.options) == ["a2"] and ex.run_choice.value == "a2"
    assert "&lt;script&gt;" in ex.detail.value and "<script>" not in ex.detail.value
    assert "1 runs" in ex.table.value
    ex.filters["grade"].value = "resolved"
    assert list(ex.run_choice.options) == [] and ex.detail.value == ""
    bundle = ex._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "(static" in bundle["text/html"] and "<script>" not in bundle["text/html"]


def test_blind_grades_are_appended_at_once_and_never_offered_twice(tmp_path: Path) -> None:
    path = tmp_path / "blind.jsonl"
    panel = BlindGradingPanel(TASKS, RUNS, path, grader="ana", seed=3)
    assert len(panel.queue) == 3  # the failed run has no answer to grade
    shown = panel.answer.value
    first = panel.queue[0].run_id
    for leak in (first, "setup", "submitted", "tool"):
        assert leak not in shown
    assert f"Answer {panel.current_alias()}" in shown
    panel.core.value = "material_error"
    panel.fulfilment.value = "partial"
    panel.claim.value = "the claim"
    panel.asking.value = True
    panel.save_button.click()
    lines = path.read_text().splitlines()  # on disk before anything else happens
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert record == {"run_id": first, "core_conclusion": "material_error",
                      "request_fulfilment": "partial", "material_error": "yes",
                      "claim": "the claim", "grader": "ana", "needs_more_information": True}
    assert panel.claim.value == "" and len(panel.queue) == 2
    # every field starts empty for the next answer: nothing is carried over
    assert (panel.core.value, panel.fulfilment.value, panel.asking.value) == (None, None, False)
    assert "1 of 3 graded (1 saved here, 2 left)" in panel.answer.value
    with pytest.raises(ValueError, match="choose the core conclusion"):
        panel.save()
    panel.save_button.click()  # a click without a choice writes nothing and says why
    assert len(path.read_text().splitlines()) == 1 and "Not saved" in panel.status.value
    again = BlindGradingPanel(TASKS, RUNS, path, grader="ana", seed=3)  # a new kernel
    assert first not in {r.run_id for r in again.queue} and len(again.queue) == 2
    while again.queue:
        again.core.value, again.fulfilment.value = "correct", "full"
        again.save()
    assert "Every answer is graded" in again.answer.value and again.save() is None
    graded = gk.evaluate(TASKS, RUNS, grades=path)
    assert not graded.inputs.rejected
    assert graded.results.setups["A"].grades.ungraded == 0


def test_the_last_save_can_be_undone(tmp_path: Path) -> None:
    path = tmp_path / "blind.jsonl"
    path.write_text('{"run_id": "elsewhere", "core_conclusion": "correct"}\n')
    panel = BlindGradingPanel(TASKS, RUNS, path, seed=3)
    assert panel.undo() is None and panel.undo_button.disabled
    kept = path.read_bytes()
    first = panel.queue[0]
    panel.core.value, panel.fulfilment.value, panel.claim.value = "correct", "full", "x"
    panel.save()
    assert not panel.undo_button.disabled
    panel.undo_button.click()
    assert path.read_bytes() == kept  # exactly the line written, no more
    assert panel.queue[0] is first and panel.saved == 0 and panel.claim.value == ""
    panel.core.value, panel.fulfilment.value = "correct", "full"
    panel.save()
    with path.open("a") as handle:  # another writer appended since
        handle.write("{}\n")
    with pytest.raises(ValueError, match="changed since the last save"):
        panel.undo()
    assert len(path.read_text().splitlines()) == 3


def test_without_a_grades_file_the_panel_offers_nothing() -> None:
    panel = BlindGradingPanel(TASKS, RUNS, None)
    assert panel.queue == [] and panel.save() is None
    assert list(panel.widget.children) == [panel.answer]  # no form, no Save
    assert "set <code>grading_file</code>" in panel.answer.value
    assert "needs a live kernel and a grades file" in panel._repr_mimebundle_()["text/html"]
