"""Tables for people (grade_kit.views.tables): formatting by hand, every row shown, text
escaped, and the summary that adapts to the data."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import grade_kit as gk
from grade_kit.views.tables import column_label, table
from tests.paths import EXAMPLE, REALDATA, ROOT


def test_cells_are_formatted_by_what_they_are() -> None:
    frame = pl.DataFrame({
        "setup": ["<b>x</b>", "y"], "N": [1234, 5],
        "resolved_rate": [0.7368421, None], "resolved_ci_low": [0.643, None],
        "resolved_ci_high": [0.8141, None], "e2e_p50": [12.114, 3.0],
        "p_value": [0.0004, 0.0625], "nothing": [None, None]},
        schema_overrides={"nothing": pl.Float64})
    text = repr(table(frame, title="T"))
    lines = text.splitlines()
    assert lines[0] == "T"
    assert lines[1].split("  ")[0] == "setup" and "E2E P50 (s)" in lines[1]
    assert "1,234" in lines[2] and "0.737 [0.643, 0.814]" in lines[2]
    assert "12.1 " in lines[2] + " " and "< 0.001" in lines[2] and "0.0625" in lines[3]
    assert "—" in lines[3]  # a null rate
    assert lines[-1] == "Left out, with no value in any row: nothing."
    page = table(frame)._repr_html_()
    assert "&lt;b&gt;x&lt;/b&gt;" in page and "<b>x</b>" not in page
    assert 'class="gk-num">1,234<' in page and "nothing" not in page.split("Left out")[0]


def test_every_row_is_shown() -> None:
    frame = pl.DataFrame({"task_id": [f"t{i}" for i in range(300)], "n": list(range(300))})
    text = repr(table(frame))
    assert text.count("\n") == 300 and "t299" in text and "…" not in text
    assert table(frame)._repr_html_().count("<tr>") == 301


def test_column_labels_in_words() -> None:
    assert column_label("e2e_p50") == "E2E P50 (s)"
    assert column_label("e2e_n") == "E2E n"
    assert column_label("working_p90") == "working P90 (s)"
    assert column_label("grounding_accuracy") == "ground"
    assert column_label("mean_diff_b_minus_a") == "difference (compared - baseline)"


def test_the_summary_adapts_to_the_data() -> None:
    demo = gk.evaluate(ROOT / "fixtures" / "tasks", ROOT / "fixtures" / "runs", judge="rules",
                       grader="rules").summary
    assert demo.frame.get_column("setup").to_list() == ["careful", "hasty", "erratic"]
    assert {"e2e_p50", "composite", "tool_calls_per_run", "timeouts"} <= set(
        demo.frame.columns)
    tau = gk.evaluate(REALDATA / "tau_bench_gpt4o_airline").summary
    assert not {"e2e_p50", "composite", "working_p50", "timeouts"} & set(tau.frame.columns)
    row = repr(tau).splitlines()[2]
    # 84 of 200 slots (50 questions x 4 trials), clustered by question: design effect 2.19,
    # n_effective 91.2 (Wilson over N = 200 would say [0.354, 0.489])
    assert row.startswith("gpt-4o") and "0.420 [0.324, 0.523]" in row
    assert "R = 4, inferred" in repr(tau)
    # a grade no setup has is named in the note, not a column of zeros
    assert "unresolved_rate" in tau.frame.columns and "partial_rate" not in tau.frame.columns
    assert "left out: partial, material error, pending, not run." in repr(tau)


def test_a_table_whose_data_does_not_exist_says_why_in_one_marked_line() -> None:
    from grade_kit.views.tables import ABSENT_ATTRIBUTE

    frame = pl.DataFrame({"setup": ["a"], "composite": [None]}, schema_overrides={
        "composite": pl.Float64})
    shown = table(frame, title="Leaderboard", absent="No GRADE <rubric>.")
    page = shown._repr_html_()
    assert "<table" not in page
    assert f'{ABSENT_ATTRIBUTE}="No GRADE &lt;rubric&gt;."' in page
    assert "<b>Leaderboard</b>: No GRADE &lt;rubric&gt;." in page
    assert repr(shown) == "Leaderboard: No GRADE <rubric>."
    assert repr(table(frame, absent=None)).startswith("setup")  # None: shown as ever
    nothing = frame.clear()
    said = table(nothing, empty="No input record was rejected.")._repr_html_()
    assert "No input record was rejected." in said
    assert "<table" not in said  # a sentence, not a header over no row
    assert "No rows." in table(nothing)._repr_html_()
    assert repr(table(nothing, empty="None.")).splitlines()[-1] == "None."


def test_what_does_not_exist_is_said_once_per_kind() -> None:
    """tau-bench's airline log: one setup, no GRADE rubric, no timestamps, tool calls
    exposed; the example: every kind exists."""
    from grade_kit.views.tables import NO_COMPARISON, NO_GRADE

    evaluation = gk.evaluate(REALDATA / "tau_bench_gpt4o_airline"
                             / "gpt-4o-airline.json")
    assert repr(evaluation).startswith("Evaluation(1 setup, 50 tasks, 200 runs, R = 4")
    # its warnings are listed once, by .warnings: the evaluation's HTML counts them
    page = evaluation._repr_html_()
    assert "6 warnings: <code>.warnings</code> lists them." in page and "<li>" not in page
    assert evaluation.warnings.height == 6
    tau = evaluation.absent
    assert tau.grade == NO_GRADE and tau.comparison == NO_COMPARISON
    assert tau.timing == ("No E2E sample: 200 of 200 delivered runs lack a submitted or "
                          "received timestamp.")
    assert tau.tool_calls is None
    example = EXAMPLE
    full = gk.evaluate(example / "tasks", example / "runs.jsonl", judge="rules").absent
    assert (full.grade, full.timing, full.comparison, full.tool_calls) == (None,) * 4


def test_runs_pending_verification_are_said_first() -> None:
    """Without a grader the first thing a reader sees is why the resolved rate is low: the
    fixtures' 600 slots hold 592 delivered runs (8 timed out or failed), none graded."""
    from grade_kit.views.tables import pending_state

    fixtures = ROOT / "fixtures"
    ungraded = gk.evaluate(fixtures / "tasks", fixtures / "runs", judge="rules")
    state = pending_state(ungraded.results)
    assert state is not None and state.startswith("592 of N = 600 pending verification: no "
                                                  "grade records and no grader; pass "
                                                  "grader='rules'")
    assert repr(ungraded).splitlines()[1] == f"  {state}"
    assert ungraded._repr_html_().index(state.split(":")[0]) < ungraded._repr_html_().index(
        "Summary: one row per setup")
    assert ungraded.summary.note is not None and ungraded.summary.note.startswith(state)
    graded = gk.evaluate(fixtures / "tasks", fixtures / "runs", judge="rules", grader="rules")
    assert pending_state(graded.results) is None
    assert "pending" not in repr(graded).splitlines()[1]
    example = EXAMPLE
    partly = gk.evaluate(example / "tasks", example / "runs.jsonl",
                         grades=example / "grades.jsonl")
    assert pending_state(partly.results) == ("2 of N = 30 pending verification: these runs "
                                             "have no grade record.")


def test_warnings_are_grouped_by_kind_with_every_file_named_once() -> None:
    from grade_kit.views.tables import warnings_table

    messages = ["a.json: the log's status is 'cancelled'; its 3 samples are imported",
                "b.eval: the log's status is 'cancelled'; its 12 samples are imported",
                "a.json: the log's status is 'cancelled'; its 3 samples are imported",
                "R = 5 repeats per question was inferred"]
    frame = pl.DataFrame({"source": [None] * 4, "line": [None] * 4, "message": messages},
                         schema={"source": pl.String, "line": pl.Int64, "message": pl.String})
    view = warnings_table(frame)
    assert view.frame.to_dicts() == [
        {"warning": messages[0], "count": 3, "files": "a.json, b.eval"},
        {"warning": messages[3], "count": 1, "files": None}]  # no setup named: no column
    assert view.note is not None and view.note.startswith("4 warnings in 2 kinds")
    empty = warnings_table(frame.clear())
    assert empty.frame.height == 0 and "No warning." in empty._repr_html_()


def test_a_long_or_many_line_cell_shows_its_first_line_and_folds_the_rest() -> None:
    from grade_kit.views.tables import FOLD_TEXT, table

    stderr = "Error: compose up failed\n" + "\n".join(f"layer {k} <pulled>" for k in range(12))
    long = "word " * (FOLD_TEXT // 5 + 20)
    view = table(pl.DataFrame({"run_id": ["r1", "r2", "r3"], "why": [stderr, long, "short"]}))
    text = repr(view).splitlines()
    assert text[1].split(None, 1)[1] == "Error: compose up failed … (+12 lines)"
    assert text[2].split(None, 1)[1].endswith(" … (+100 characters)")
    assert text[3].split(None, 1)[1] == "short"
    page = view._repr_html_()
    # the first line shown, the whole text (escaped) one click away: nothing dropped
    assert "Error: compose up failed … (+12 lines)<details" in page
    assert "layer 11 &lt;pulled&gt;</pre></details>" in page
    assert page.count("<details class=\"gk-full\">") == 2


def test_a_wide_table_shows_its_key_columns_first() -> None:
    """Past WIDE_COLUMNS columns the pair, the subset and the figure, then the difference and
    its Holm p come first (as they are in the frame otherwise); a narrow table, or a view
    built in its order (the summary), keeps its columns."""
    from grade_kit.views.tables import WIDE_COLUMNS, key_columns_first, table

    wide = ["baseline", "compared", "subset", "n_questions", "mean_a", "mean_b", "note",
            "test", "value", "p_value", "p_holm", "mean_diff_b_minus_a", "metric", "direction"]
    assert len(wide) > WIDE_COLUMNS
    assert key_columns_first(wide) == [
        "compared", "baseline", "subset", "metric", "direction", "mean_diff_b_minus_a",
        "p_holm", "n_questions", "mean_a", "mean_b", "note", "test", "value", "p_value"]
    narrow = ["subset", "p_holm", "setup"]
    assert key_columns_first(narrow) == narrow
    assert key_columns_first(narrow, wide=0) == ["setup", "subset", "p_holm"]
    frame = pl.DataFrame({c: [1.0] for c in wide})
    assert table(frame)._cells()[0][:3] == ["compared", "baseline", "subset"]
    assert repr(table(frame)).splitlines()[0].split()[:2] == ["compared", "baseline"]
    example = EXAMPLE  # the summary keeps the order it is built in
    summary = gk.evaluate(example / "tasks", example / "runs.jsonl").summary
    assert summary._cells()[0][:3] == ["setup", "N", "resolved rate"]


def test_both_subsets_comparisons_tables_start_with_the_pair() -> None:
    """A subset whose pairs are all untested leaves most columns empty (eight or fewer
    shown): its table still opens with compared, baseline, subset, metric, as the wide one
    does (seen on the tau2 report's common subset, which opened with baseline)."""
    from grade_kit.views.tables import comparisons_table

    frame = pl.DataFrame({
        "baseline": ["a", "a"], "compared": ["b", "b"], "subset": ["all", "common"],
        "metric": ["resolved_rate", "resolved_rate"], "label": ["measured", "untested direction"],
        "n_questions": [3, 0], "p_holm": [0.5, None], "note": [None, "no question"]})
    for subset in ("all", "common"):
        assert comparisons_table(frame, subset)._cells()[0][:4] == [
            "compared", "baseline", "subset", "metric"]


def test_a_table_as_markdown_has_the_cells_of_its_html_and_text() -> None:
    """scorecard.md's tables are the pages' (Table.markdown): the same cells, numbers right
    aligned, every cell escaped, an empty or absent table as its sentence."""
    frame = pl.DataFrame({"setup": ["a | b", "c"], "resolved_rate": [0.5, 0.25],
                          "resolved_ci_low": [0.25, 0.1], "resolved_ci_high": [0.75, 0.5],
                          "note": [None, None]})
    shown = gk.table(frame, title="Rates", note="A note.")
    text = shown.markdown()
    assert text.splitlines() == [
        "**Rates**", "",
        "| setup | resolved rate |",
        "|---|---:|",
        "| a \\| b | 0.500 \\[0.250, 0.750\\] |",
        "| c | 0.250 \\[0.100, 0.500\\] |",
        "",
        "A note.",
        "Left out, with no value in any row: note.",
    ]
    assert gk.table(frame.head(0), empty="Nothing.").markdown() == "Nothing."
    assert gk.table(frame, absent="No <data>.").markdown() == "No &lt;data&gt;."


def test_a_table_wider_than_the_page_folds_its_last_columns() -> None:
    """Issue 55, item 1: 30 numeric columns of about 90 px each cannot fit 1,250 px: the
    first part shows the first column and as many as fit, each folded part repeats the
    first column, and every column is shown exactly once besides it."""
    from grade_kit.views.tables import PAGE_WIDTH_PX, _column_px, column_groups

    header = ["setup"] + [f"figure {i:02d}" for i in range(30)]
    rows = [["careful"] + ["0.123456"] * 30, ["hasty"] + ["12.5"] * 30]
    groups = column_groups(header, rows)
    assert len(groups) > 1 and all(g[0] == 0 for g in groups)
    assert sorted(i for g in groups for i in g[1:]) == list(range(1, 31))
    for group in groups:
        assert sum(_column_px(header[i], [r[i] for r in rows]) for i in group) <= PAGE_WIDTH_PX
    page = table(pl.DataFrame({h: [r[i] for r in rows] for i, h in enumerate(header)}),
                 title="Wide")._repr_html_()
    assert page.count("<caption>Wide (continued)</caption>") == len(groups) - 1
    assert f"{30 - (len(groups[0]) - 1)} more columns: figure" in page
    # 15 columns of about 80 px beside the first: 14 fit, one is folded, said in the singular
    page = table(pl.DataFrame({"setup": ["careful"], **{f"figure {i:02d}": ["0.123456"]
                                                        for i in range(15)}}))._repr_html_()
    assert "1 more column: figure 14<" in page
    narrow = column_groups(["setup", "N"], [["careful", "200"]])
    assert narrow == [[0, 1]]


def test_one_precision_per_kind_and_a_comparison_by_its_metric() -> None:
    from grade_kit.views.tables import cell_text

    # seconds by magnitude; every other quantity to 3 decimals; an effective n to 1
    assert [cell_text(v, "e2e_p50") for v in (1531.599, 15.34, 0.2712, 0.06783)] == [
        "1,532", "15.3", "0.27", "0.068"]
    assert [cell_text(v, "resolved_icc") for v in (0.03775, 0.3799)] == ["0.038", "0.380"]
    assert cell_text(2.52, "resolved_design_effect") == "2.520"
    assert cell_text(173.8, "resolved_n_effective") == "173.8"
    assert [cell_text(v, "per_run_p50") for v in (5.0, 5.5, 1200.0)] == ["5", "5.5", "1,200"]
    assert cell_text(3.14159, "gold") == "3.14159"  # compared with a source: in full
    assert cell_text(-0.0004, "mean_diff_b_minus_a") == "-0.0004"  # not 0 never reads 0
    assert cell_text(0.0, "mean_diff_b_minus_a") == "0.000"
    frame = pl.DataFrame({
        "compared": ["b", "b"], "baseline": ["a", "a"],
        "metric": ["e2e_median_s", "resolved_rate"], "mean_a": [1200.0, 0.5],
        "mean_diff_b_minus_a": [-0.06783, -0.57], "ci_low": [-0.08969, -0.7158],
        "ci_high": [-0.04593, -0.0004], "ci_level": [0.95, 0.9833]})
    text = repr(table(frame))
    # the seconds row at the decimals of its largest end, the rate row at 3
    assert "-0.068 [-0.090, -0.046]" in text and "1,200" in text
    assert "-0.570 [-0.716, -0.0004] at 98.33%" in text and "0.500" in text
    assert "difference (compared - baseline)" in text and "baseline mean" in text
    # a column of seconds at the decimals of its largest value (the explorer's E2E column
    # read 0.083 beside 0.14); a figure that is not 0 still never reads as 0
    column = repr(table(pl.DataFrame({"run_id": ["a", "b", "c"],
                                      "e2e_s": [0.083, 0.14, 0.0004]}))).splitlines()
    assert [line.split()[-1] for line in column[1:]] == ["0.08", "0.14", "0.0004"]
    ranks = repr(table(pl.DataFrame({"setup": ["a", "b"], "metric": ["e2e_median_s"] * 2,
                                     "mean": [1531.599, 0.2712], "rank": [1.0, 1.5]})))
    # a rank table's mean in its metric's unit (1531.599 s is not a share), ranks whole
    assert ranks.splitlines()[1].split()[-2:] == ["1,532", "1"]
    assert ranks.splitlines()[2].split()[-2:] == ["0.27", "1.5"]


def test_the_common_subsets_figures_fixed_by_construction_are_left_out_and_said() -> None:
    from grade_kit.views.tables import comparisons_table, grades_table

    grades = pl.DataFrame({"setup": ["a", "b", "a", "b"], "subset": ["all", "all", "common",
                                                                   "common"],
                           "N": [20, 20, 6, 6], "questions": [10, 10, 3, 3],
                           "resolved_rate": [0.5, 0.4, 1.0, 1.0]})
    shown = grades_table(grades)
    assert repr(shown).splitlines()[2].split() == ["a", "all", "20", "10", "0.500"]
    assert "common" not in "\n".join(repr(shown).splitlines()[1:4])
    assert "its rows (3 questions, 6 slots per setup) are not shown." in repr(shown)
    assert repr(grades_table(grades.filter(pl.col("subset") == "all"))).count("not shown") == 0
    empty = grades.with_columns(questions=pl.when(pl.col("subset") == "common").then(0)
                                .otherwise(pl.col("questions")))
    assert "The common subset is empty" in repr(grades_table(empty))
    comparisons = pl.DataFrame({
        "baseline": ["a"] * 3, "compared": ["b"] * 3, "subset": ["common"] * 3,
        "metric": ["resolved_rate", "pass_hat_k", "e2e_median_s"],
        "mean_diff_b_minus_a": [0.0, 0.0, -0.5], "ci_low": [0.0, 0.0, -0.9],
        "ci_high": [0.0, 0.0, -0.1], "value": [None, None, -12.345]})
    text = repr(comparisons_table(comparisons, "common"))
    rows = text.splitlines()[2:-1]
    assert len(rows) == 1 and "E2E median (s)" in rows[0]
    assert "-0.50 [-0.90, -0.10]" in text and "-12.3" in text  # seconds by its metric
    assert "their differences, all 0, are not shown." in text
    assert "not shown" not in repr(comparisons_table(comparisons.with_columns(
        subset=pl.lit("all")), "all"))


def test_every_per_setup_frame_keeps_the_summarys_order() -> None:
    demo = gk.evaluate(ROOT / "fixtures" / "tasks", ROOT / "fixtures" / "runs", judge="rules",
                       grader="rules")
    # hasty leads erratic on the resolved rate, though erratic comes first by name
    assert demo.setup_order == ["careful", "hasty", "erratic"]
    for frame in (demo.packs, demo.tracks, demo.tasks, demo.flaky, demo.weakest_tasks(2),
                  demo.reliability):
        shown = list(dict.fromkeys(frame.get_column("setup").to_list()))
        assert shown == demo.setup_order, shown
    assert demo.weakest_tasks(2).get_column("composite").to_list()[:2] == sorted(
        demo.tasks.filter(pl.col("setup") == "careful").get_column("composite").to_list())[:2]


def test_an_evaluations_title_says_what_it_is() -> None:
    tau2 = gk.evaluate(REALDATA / "tau2_grok_airline_relaxed_task8")
    assert tau2.title == ("airline-relaxed: xai/grok-3-mini, xai/grok-4-fast-reasoning · "
                          "1 question x 4 repeats")
    inspect = gk.evaluate(REALDATA / "inspect_ai_testlogs")
    assert inspect.title == ("popularity, security_guide: openai/gpt-4o-mini · 13 questions x "
                             "1 repeat")


def test_warnings_about_setups_are_one_row_naming_every_setup() -> None:
    from grade_kit.views.tables import warnings_table

    messages = ["setup 'gpt-4o': 2 of 200 runs (1%) record a tool call more than once",
                "setup \"o'brien\": 5 of 10 runs (50%) record a tool call more than once",
                "setup 'gpt-4o': composite over 5 of 6 dimensions, renormalised",
                "/data/evals/logs/a.json: the log's status is 'cancelled'"]
    frame = pl.DataFrame({"source": ["/data/evals/logs/a.json", None, None, None],
                          "line": [None] * 4, "message": messages},
                         schema={"source": pl.String, "line": pl.Int64, "message": pl.String})
    rows = warnings_table(frame).frame.to_dicts()
    assert rows == [
        {"warning": "2 of 200 runs (1%) record a tool call more than once", "count": 2,
         "setups": "gpt-4o, o'brien", "files": None},
        {"warning": "composite over 5 of 6 dimensions, renormalised", "count": 1,
         "setups": "gpt-4o", "files": None},
        {"warning": "/data/evals/logs/a.json: the log's status is 'cancelled'", "count": 1,
         "setups": None, "files": "/data/evals/logs/a.json"}]


def test_a_page_names_input_files_relative_to_the_inputs(tmp_path: Path) -> None:
    import shutil

    from grade_kit.views.tables import input_name, inputs_folder, rejected_table

    shutil.copytree(ROOT / "fixtures" / "example" / "tasks", tmp_path / "tasks" / "mini")
    (tmp_path / "tasks" / "mini" / "broken.yaml").write_text("task_id: [\n")
    (tmp_path / "runs.jsonl").write_text('{"run_id": 5}\n')
    ev = gk.evaluate(tmp_path / "tasks", tmp_path / "runs.jsonl", judge="rules",
                     grader="rules")
    assert inputs_folder(ev.results) == str(tmp_path)
    shown = repr(rejected_table(ev.rejected, ev.results))
    assert str(tmp_path) not in shown
    assert "tasks/mini/broken.yaml" in shown and "runs.jsonl" in shown
    assert str(tmp_path) in repr(rejected_table(ev.rejected))  # no results: as given
    assert input_name("/x/y/a/b.yaml", "/x/y") == "a/b.yaml"
    assert input_name("/x/yz/c.yaml", "/x/y") == "c.yaml"  # a folder's prefix, not a name's
    assert input_name("<runs>", "/x/y") == "<runs>"
    assert input_name("/x/y/a/b.yaml", None) == "b.yaml"


def test_a_sections_intro_names_only_what_the_evaluation_has() -> None:
    from grade_kit.views.tables import Absent, section_intro

    every = Absent(grade=None, timing=None, comparison=None, tool_calls=None)
    text = repr(section_intro("scorecard", every))
    assert "who leads on the resolved rate" in text and "six GRADE dimensions" in text
    tau = gk.evaluate(REALDATA / "tau_bench_gpt4o_airline")  # one setup, no rubric, no times
    text = repr(section_intro("scorecard", tau.absent))
    assert text == ("Every setup's four grades over honest denominators; and every rejected "
                    "input. The rules are in `docs/methodology.md`.")
    timing = repr(section_intro("timing", tau.absent))
    assert timing.startswith("Tool calls are decided per call") and "latency" not in timing
    compare = section_intro("compare", tau.absent)._repr_html_()
    assert "No comparison" in compare  # marked absent: the report leaves the page out
    nothing = Absent(grade="g", timing="No E2E sample.", comparison="c", tool_calls="t")
    assert "No E2E sample." in section_intro("timing", nothing)._repr_html_()
    assert "the composite" in repr(section_intro("compare", every))
    with pytest.raises(ValueError, match="no intro for section 'x'"):
        section_intro("x", every)


def test_a_title_counts_setups_past_three() -> None:
    from grade_kit.views.tables import evaluation_title

    results = gk.evaluate(ROOT / "fixtures" / "example" / "tasks",
                          ROOT / "fixtures" / "example" / "runs.jsonl").results
    many = results.model_copy(update={"setups": {f"s{i}": v for i, v in enumerate(
        list(results.setups.values()) * 2)}})
    assert evaluation_title(many, ["a", "b", "c", "d"]) == (
        "a, b, c and 1 more: 4 setups · 5 questions x 3 repeats")
