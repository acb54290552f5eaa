"""The explorer: ipywidgets over an :class:`~grade_kit.Evaluation` (filter runs, read one
run's answer, scores and :meth:`~grade_kit.Evaluation.explain`), and a blind-grading panel
(``blind_grading.ipynb``) that appends each grade to a blind grading sheet as it is entered.

Each displays as two outputs: a static copy (HTML tables), then the live widget. While the
widget is on screen it hides the copy; where it cannot be (an nbconvert export, a notebook
saved without widget state and opened again, an untrusted notebook, a front end without
widgets) the copy shows, and the live view's "model not found" placeholder is hidden. Model
text is always escaped.
"""

from __future__ import annotations

import csv
import html
import io
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import polars as pl

from grade_kit.frames import Frame, like, to_polars
from grade_kit.schema import GRADE_STATES, Grade, InputError, Run, Task, material_error_of
from grade_kit.standard.blind.sheet import ANONYMITY_NOTE, answer_text, default_key_path
from grade_kit.views.tables import (
    cell_text,
    column_label,
    in_setup_order,
    table,
    where_to_look,
)

if TYPE_CHECKING:  # a parameter's type only: the explorer is handed an evaluation, a diff
    from grade_kit.pipeline.diff import Diff
    from grade_kit.pipeline.scored import Evaluation

FILTERS = ("setup", "track", "pack", "task_id", "grade")
"""The columns of :attr:`Evaluation.runs` the explorer filters on."""

ALL = "(all)"


def filter_runs(runs: Frame, **chosen: Any) -> Frame:
    """The rows of ``runs`` (the :attr:`Evaluation.runs` frame) whose columns equal the chosen
    values; a filter left at None (or ``"(all)"``) keeps every row.

    Args:
        runs: The runs frame (pandas or polars; the same kind is returned).
        **chosen: Any of :data:`FILTERS` (``setup="hasty", grade="material_error"``).

    Raises:
        ValueError: for a name that is not one of :data:`FILTERS`.
    """
    unknown = set(chosen) - set(FILTERS)
    if unknown:
        raise ValueError(f"unknown filter(s) {sorted(unknown)}; filters: {list(FILTERS)}")
    frame = to_polars(runs)
    for column, value in chosen.items():
        if value is not None and value != ALL:
            frame = frame.filter(pl.col(column) == value)
    return like(frame, runs)


SHOWN = ("run_id", "setup", "task_id", "repeat", "status", "grade", "composite", "e2e_s",
         "tool_calls")
"""The columns of the static explorer's run table."""

LISTED = ("run_id", "setup", "grade", "composite", "e2e_s", "tool_calls")
"""The columns of the live explorer's run list (the rest of a run is in its details)."""

_GRADE_ORDER = {"material_error": 0, "partially_resolved": 1, "unresolved": 2,
                "pending_verification": 3, "resolved": 4}

INFORMATIVE = "most informative first"
SORTS: dict[str, list[tuple[str, bool]]] = {
    INFORMATIVE: [],
    "lowest composite first": [("composite", False)],
    "highest composite first": [("composite", True)],
    "slowest first": [("e2e_s", True)],
    "fastest first": [("e2e_s", False)],
    "most tool calls first": [("tool_calls", True)],
    "setup, task, repeat": [],
    "run id": [("run_id", False)],
}
"""The live explorer's orders: (column, descending) keys, ties by setup, task and repeat;
nulls always last. :data:`INFORMATIVE` is :func:`most_informative_first`."""


def most_informative_first(runs: pl.DataFrame) -> pl.DataFrame:
    """``runs`` (rows of ``ev.runs``) with the most informative first: material errors, then
    partial, unresolved and pending runs, then resolved ones; within each, runs of questions
    the setups disagree on (resolved by some, not by others) first, then the lowest
    composite; then setup, task and repeat."""
    disagree = (runs.filter(pl.col("is_primary")).group_by("task_id")
                .agg(pl.col("grade").eq("resolved").any().alias("some"),
                     pl.col("grade").eq("resolved").all().alias("every"))
                .select("task_id", disagreement=pl.col("some") & ~pl.col("every")))
    return (runs.join(disagree, on="task_id", how="left", maintain_order="left")
            .with_columns(_rank=pl.col("grade").replace_strict(_GRADE_ORDER, default=5))
            .sort(["_rank", "disagreement", "composite", "setup", "task_id", "repeat"],
                  descending=[False, True, False, False, False, False], nulls_last=True)
            .drop("_rank", "disagreement"))


def grade_counts(runs: pl.DataFrame, order: Sequence[str]) -> pl.DataFrame:
    """Primary runs per setup (rows in ``order``, the summary's; setups not in it after, by
    name) and grade (columns in the grades' order, named in words; a grade no run has is
    left out; a run with no grade is counted under ``no grade``)."""
    primary = runs.filter(pl.col("is_primary")).with_columns(
        grade=pl.col("grade").fill_null("no grade"))
    present = set(primary.get_column("grade").to_list())
    grades = [g for g in (*GRADE_STATES, "no grade") if g in present]
    grades += sorted(present - set(grades))
    counts = (primary.group_by("setup", "grade").len()
              .pivot(on="grade", index="setup", values="len").fill_null(0))
    counts = counts.select("setup", *grades) if counts.height else counts
    return in_setup_order(counts, order).rename(
        {g: g.replace("_", " ") for g in grades})


def sort_runs(runs: pl.DataFrame, order: str = INFORMATIVE) -> pl.DataFrame:
    """``runs`` in one of the :data:`SORTS` orders (default the most informative first).

    Raises:
        ValueError: for an order that is not one of :data:`SORTS`.
    """
    if order not in SORTS:
        raise ValueError(f"unknown order {order!r}; orders: {list(SORTS)}")
    if order == INFORMATIVE:
        return most_informative_first(runs)
    keys = [*SORTS[order], ("setup", False), ("task_id", False), ("repeat", False),
            ("run_id", False)]
    return runs.sort([k for k, _ in keys], descending=[d for _, d in keys], nulls_last=True)


def _rows_html(shown: pl.DataFrame, rows: int) -> str:
    """The first ``rows`` of ``shown`` as a formatted table, saying how many more there are
    and where they are."""
    more = shown.height - rows
    reach = where_to_look("every run is in ev.runs, and the live explorer filters and pages "
                          "them", "every run is in runs.parquet of the scored folder, and "
                          "the notebook explorer.ipynb filters and pages them")
    return table(shown.head(rows), note=(f"{more:,} more runs: {reach}." if more > 0
                                         else None))._repr_html_()


def listing(page: pl.DataFrame) -> tuple[str, list[tuple[str, str]]]:
    """The run list's header and one ``(label, run_id)`` option per row of ``page`` (rows of
    ``ev.runs``): the :data:`LISTED` columns as every table formats them
    (:func:`~grade_kit.views.tables.cell_text`), padded to a common width (ipywidgets
    shows the spaces as no-break ones, so they line up), numbers right-aligned, run ids in full."""
    numeric = [page.schema[c].is_numeric() for c in LISTED]
    header = [column_label(c) for c in LISTED]
    cells = [[cell_text(v, c) for v, c in zip(row, LISTED, strict=True)]
             for row in page.select(*LISTED).iter_rows()]
    widths = [max([len(header[i]), *(len(r[i]) for r in cells)]) for i in range(len(LISTED))]

    def line(values: list[str]) -> str:
        return "  ".join(v.rjust(n) if right else v.ljust(n)
                         for v, n, right in zip(values, widths, numeric, strict=True)).rstrip()

    ids = page.get_column("run_id").to_list()
    return line(header), [(line(r), rid) for r, rid in zip(cells, ids, strict=True)]


KEYS_CLASS = "gk-keys"
"""The class of a live view whose keys are its own: in JupyterLab's command mode the arrow
keys, Enter and the letters move between cells, so a list box or a drop-down could not be
worked from the keyboard. A control of such a view marks itself
``data-lm-suppress-shortcuts`` (JupyterLab's own switch) when it takes the focus, and the
keys reach it."""

_KEYS_SCRIPT = ("<script>if(!window.gkKeys){window.gkKeys=true;document.addEventListener("
                "'focusin',function(e){var t=e.target;if(t&&t.closest&&t.closest("
                f"'.{KEYS_CLASS}')){{t.setAttribute('data-lm-suppress-shortcuts','true')}}"
                "},true)}</script>")


def _static_copy(key: str, inner: str) -> str:
    """A widget's static copy, shown where its live view cannot be: ``inner`` marked with
    ``key``; a style that hides the live view's "model not found" placeholder in the same
    cell (a notebook saved without widget state and opened again shows the copy instead);
    and the one-line script that gives a live view's keys to its controls
    (:data:`KEYS_CLASS`; it runs only where the notebook is trusted)."""
    return (f'<div data-gk-static="{key}">{inner}</div><style>'
            f'.jp-Cell:has([data-gk-static="{key}"]) .jp-OutputArea-child:has('
            "> .jp-OutputArea-output.jupyter-widgets){display:none}</style>" + _KEYS_SCRIPT)


def _live_style(key: str) -> str:
    """The style the live view carries: it hides the static copy marked ``key`` while the
    live view is on screen (and with it, when the view goes, the copy shows again)."""
    return (f'<style>.jp-OutputArea-child:has([data-gk-static="{key}"]){{display:none}}'
            ".gk-run-list select,.gk-run-head{font-family:var(--jp-code-font-family,monospace);"
            "font-size:var(--jp-code-font-size,13px)}"
            ".gk-run-list select{width:max-content;min-width:100%}"
            ".gk-run-head{white-space:pre;padding:0 6px;font-weight:bold;"
            "border-bottom:1px solid var(--jp-border-color1,#ccc)}"
            ".gk-run-detail .widget-html-content{white-space:normal;min-width:0;width:100%}"
            ".gk-run-detail pre{white-space:pre-wrap;overflow-wrap:break-word;word-break:normal}"
            "</style>")


def _display_live(widget: Any, static_html: str, key: str, text: str) -> None:
    """Display a widget as two outputs: its static copy (HTML; what nbconvert, an untrusted
    or reopened notebook and a front end without widgets show), then the live view (with an
    empty HTML alternative, so the copy is never shown twice)."""
    from IPython.display import display

    show = cast(Callable[..., None], display)  # IPython's display is untyped
    show({"text/html": _static_copy(key, static_html), "text/plain": text}, raw=True)
    bundle: dict[str, Any] = dict(widget._repr_mimebundle_() or {})
    bundle["text/html"] = ""
    show(bundle, raw=True)


class Explorer:
    """Filter, sort and page the runs of an evaluation, and read one run in full beside them.

    Each filter lists only the values that exist among the runs the other filters keep, with
    their counts, so every combination offered matches some run. The run list is a list box:
    click a run, or move through it with the arrow keys, and its details show on the right.
    The first view is the most informative runs first (:func:`most_informative_first`).

    Args:
        evaluation: The :class:`~grade_kit.Evaluation` to explore.
        rows: Runs listed per page; default 20.
    """

    def __init__(self, evaluation: Evaluation, rows: int = 20) -> None:
        import uuid

        import ipywidgets as w

        self.evaluation = evaluation
        self.rows = max(1, rows)
        self.page = 0
        self.key = uuid.uuid4().hex
        self._runs = to_polars(evaluation.runs)
        self._records = evaluation.inputs.runs
        # the runs frame holds the records' ids in their order: no record is read for it
        self._index = {rid: i for i, rid in enumerate(
            evaluation.data.runs.get_column("run_id").to_list())}
        self._quiet = False
        self._ordered = self._runs
        label = {"description_width": "3.5em"}
        self.filters = {c: w.Dropdown(options=[(ALL, ALL)], value=ALL, style=label,
                                      description=c.removesuffix("_id"),
                                      layout=w.Layout(width="15em"))
                        for c in FILTERS}
        self.sort = w.Dropdown(options=list(SORTS), value=INFORMATIVE, description="order",
                               style=label, layout=w.Layout(width="17em"))
        self.count = w.HTML()
        self.count.add_class("gk-explorer-count")
        self.head = w.HTML()
        self.run_choice = w.Select(options=[], rows=self.rows, layout=w.Layout(width="auto"))
        self.run_choice.add_class("gk-run-list")
        self.previous = w.Button(description="◀ previous", layout=w.Layout(width="8em"),
                                 tooltip="the previous page of runs")
        self.next = w.Button(description="next ▶", layout=w.Layout(width="8em"),
                             tooltip="the next page of runs")
        self.where = w.HTML()
        self.detail = w.HTML(layout=w.Layout(flex="1 1 24em", min_width="24em", max_height="46em",
                                             overflow="auto", padding="0 0 0 1em"))
        self.detail.add_class("gk-run-detail")
        for widget in self.filters.values():
            widget.observe(self._refresh, names="value")
        self.sort.observe(self._refresh, names="value")
        self.run_choice.observe(self._show_run, names="value")
        self.previous.on_click(lambda _b: self.turn(-1))
        self.next.on_click(lambda _b: self.turn(1))
        runs = w.VBox([self.count, w.Box([w.VBox([self.head, self.run_choice])],
                                         layout=w.Layout(overflow="auto")),
                       w.HBox([self.previous, self.next, self.where])],
                      # at most 58%: from a 1,200 px window (or 1,500 px with JupyterLab's
                      # file browser open) the run's details stay beside the list, which
                      # scrolls sideways when its run ids are longer
                      layout=w.Layout(flex="0 1 auto", max_width="58%"))
        self.widget = w.VBox([
            w.HTML(_live_style(self.key)),
            w.HBox([*self.filters.values(), self.sort],
                   layout=w.Layout(flex_flow="row wrap")),
            w.HBox([runs, self.detail], layout=w.Layout(flex_flow="row wrap",
                                                        align_items="flex-start"))])
        self.widget.add_class(KEYS_CLASS)
        self._refresh()

    def chosen(self) -> dict[str, Any]:
        """The filters' current values."""
        return {c: widget.value for c, widget in self.filters.items()}

    def selected(self) -> pl.DataFrame:
        """The runs the filters keep."""
        frame = filter_runs(self._runs, **self.chosen())
        assert isinstance(frame, pl.DataFrame)
        return frame

    def _narrow(self) -> None:
        """Each filter's options: the values among the runs the other filters keep, with
        their counts; the chosen value stays (with a count of 0 if nothing has it)."""
        chosen = self.chosen()
        for column, widget in self.filters.items():
            others = filter_runs(self._runs, **{c: v for c, v in chosen.items()
                                                if c != column})
            assert isinstance(others, pl.DataFrame)
            counts = dict(others.get_column(column).drop_nulls().value_counts().iter_rows())
            value = chosen[column]
            if value != ALL and value not in counts:
                counts[value] = 0
            options = [(f"{ALL} {others.height:,}", ALL),
                       *((f"{cell_text(v, column)} {counts[v]:,}", v)
                         for v in sorted(counts))]
            if tuple(widget.options) != tuple(options):
                widget.options = options
                widget.value = value

    def _refresh(self, _change: Any = None) -> None:
        if self._quiet:
            return
        self._quiet = True
        try:
            self._narrow()
        finally:
            self._quiet = False
        self._ordered = sort_runs(self.selected(), self.sort.value)
        self.page = 0
        self._show_page()

    @property
    def pages(self) -> int:
        """How many pages the runs the filters keep fill (at least 1)."""
        return max(1, -(-self._ordered.height // self.rows))

    def turn(self, by: int) -> None:
        """Show the page ``by`` pages on (negative: back), within the first and last."""
        self.page = min(max(self.page + by, 0), self.pages - 1)
        self._show_page()

    def _show_page(self) -> None:
        total = self._ordered.height
        page = self._ordered.slice(self.page * self.rows, self.rows)
        header, options = listing(page)
        self.count.value = (f"<b>{total:,}</b> of {self._runs.height:,} runs, "
                            f"{html.escape(self.sort.value)}" if total else
                            "<b>No run matches</b>: this evaluation holds no runs."
                            if not self._runs.height else
                            f"<b>No run matches</b> these filters: set one back to {ALL}.")
        self.head.value = f"<div class='gk-run-head'>{html.escape(header)}</div>"
        first = page.height and self.page * self.rows + 1
        self.where.value = (f"runs {first:,}–{self.page * self.rows + page.height:,} of "
                            f"{total:,} (page {self.page + 1:,} of {self.pages:,})"
                            if total else "")
        self.previous.disabled = self.page == 0
        self.next.disabled = self.page >= self.pages - 1
        self._quiet = True
        try:
            self.run_choice.options = options
            self.run_choice.value = options[0][1] if options else None
        finally:
            self._quiet = False
        self._show_run()

    def run_html(self, run_id: str) -> str:
        """One run as HTML: its answer (escaped), then :meth:`Evaluation.explain`."""
        at = self._index.get(run_id)
        run = None if at is None else self._records[at]  # the one model built, on demand
        answer = (answer_text(run) if run is not None and run.response is not None
                  else "(no answer delivered)")
        return (f"<h4>Answer of run {html.escape(run_id)}</h4>"
                f"<pre style='white-space:pre-wrap'>{html.escape(answer)}</pre>"
                + self.evaluation.explain(run_id)._repr_html_())

    def _show_run(self, _change: Any = None) -> None:
        if self._quiet:
            return
        run_id = self.run_choice.value
        self.detail.value = (self.run_html(run_id) if run_id is not None
                             else "<p>Pick a run to read it here.</p>"
                             if self.run_choice.options else "")

    def static_html(self) -> str:
        """What a page without a kernel shows: runs per setup and grade, and the first runs."""
        counts = grade_counts(self._runs, self.evaluation.setup_order)
        shown = most_informative_first(self._runs).select(*SHOWN)
        return ("<p><b>Explorer</b>: primary runs per setup and grade (the notebook "
                "<code>explorer.ipynb</code> filters them and shows each run whole):</p>"
                + table(counts)._repr_html_()
                + f"<p>The {min(self.rows, self._runs.height)} most informative of "
                f"{self._runs.height} runs (material errors, then questions the setups "
                "disagree on, then the weakest):</p>" + _rows_html(shown, self.rows))

    def _ipython_display_(self) -> None:
        _display_live(self.widget, self.static_html(), self.key, repr(self))

    def __repr__(self) -> str:
        return f"Explorer({self._runs.height} runs; filters {', '.join(FILTERS)})"


_CHOOSE = "— choose —"
"""The placeholder every grade menu shows until a value is chosen."""


def _menu(options: Sequence[str]) -> list[tuple[str, str]]:
    """A grade menu's options as (label, value) pairs, the placeholder first (value ``""``):
    every option a pair, so each shows its label (a mix shows a pair as a raw tuple)."""
    return [(_CHOOSE, ""), *((o.replace("_", " "), o) for o in options)]


class BlindGradingPanel:
    """Grade answers blind, as a blind grading sheet filled one answer at a time
    (docs/methodology.md §4 "Blind grading"): each answer is shown with its question under its
    alias only; the grading file holds aliases only, never a setup or run id; the key that
    maps aliases to runs is a file of its own (``key_file``), kept from the graders.

    The first panel on a grading file makes the sheet's key (:func:`grading_sheet`: the
    seeded aliases and their order) and writes it to ``key_file``; every later panel reads
    that key, so the answers come in the same order after a kernel restart and the progress
    is counted from the file. Each Save appends one row of the sheet (CSV, cells neutralised
    against spreadsheet formulas) and fsyncs it; Undo takes the file's last row back out,
    whichever session saved it. Every field starts empty for each answer, and Save asks for
    both the core conclusion and the request fulfilment. ``grade-kit import-grades FILE
    --key KEY_FILE --out grades.jsonl`` maps the file back to run ids.

    Args:
        tasks: The tasks.
        runs: The runs: delivered primary answers are graded.
        grading_file: The grading sheet (CSV) to append to; None shows how to start, with
            no form and no answer.
        key_file: The key; default :func:`~grade_kit.standard.blind.default_key_path`: a
            key beside the grading file where one is, else a file in the user's keys folder
            (``~/.local/share/grade_kit/keys``, or ``$GRADE_KIT_KEYS``), outside the folder
            JupyterLab serves; the panel's status line says where it is.
        grader: Written in each row's ``grader``; default ``"person"``.
        seed: Seed of the aliases and the order of a new sheet; default 0 (a sheet's key
            keeps its own).

    Raises:
        InputError: when the key is not a key this tool wrote, or names runs the evaluation
            does not have, or the grading file has a row that is not a valid grade of it.
    """

    def __init__(self, tasks: Sequence[Task], runs: Sequence[Run],
                 grading_file: Path | str | None, *, key_file: Path | str | None = None,
                 grader: str = "person", seed: int = 0) -> None:
        import uuid

        import ipywidgets as w

        self.path = None if grading_file is None else Path(grading_file)
        self.key_path = (None if self.path is None else Path(key_file) if key_file is not None
                         else default_key_path(self.path))
        self.grader = grader
        self.seed = seed
        self._answers: dict[str, tuple[str, str, int]] = {}  # alias -> question, answer, row
        self.queue: list[str] = []  # aliases to grade, in the key's order
        self.total = 0
        self.saved_here: list[str] = []
        """The aliases this panel saved and did not undo (its progress counts them)."""
        if self.path is not None and self.key_path is not None:
            self.sheet = self._open_sheet(tasks, runs)
        wide = w.Layout(width="100%")
        label = {"description_width": "9em"}
        self.core = w.Dropdown(options=_menu(["correct", "material_error",
                                              "no_gradable_conclusion", "pending"]),
                               value="", description="core", style=label)
        self.fulfilment = w.Dropdown(options=_menu(["full", "partial", "not_met", "pending"]),
                                     value="", description="fulfilment", style=label)
        self.asking = w.Checkbox(description="asks for more information")
        self.claim = w.Text(description="claim", layout=wide, style=label)
        self.evidence = w.Text(description="evidence", layout=wide, style=label)
        self.effect = w.Text(description="effect", layout=wide, style=label)
        self.reason = w.Textarea(description="reason", layout=w.Layout(width="100%",
                                                                         height="5em"),
                                 style=label)
        self.save_button = w.Button(description="Save grade", button_style="primary")
        self.save_button.on_click(lambda _b: self._save_clicked())
        self.undo_button = w.Button(description="Undo last save")
        self.undo_button.on_click(lambda _b: self._undo_clicked())
        self.status = w.HTML()
        self.answer = w.HTML()
        form = [w.HBox([self.core, self.fulfilment, self.asking]), self.claim, self.evidence,
                self.effect, self.reason, w.HBox([self.save_button, self.undo_button]),
                self.status]
        self.key = uuid.uuid4().hex
        notice = w.HTML(f'<p class="gk-note">{html.escape(ANONYMITY_NOTE)}</p>')
        self.widget = w.VBox([w.HTML(_live_style(self.key)),
                              *([notice, self.answer, *form] if self.path is not None
                                else [self.answer])])
        self.widget.add_class(KEYS_CLASS)
        self._show()

    def _open_sheet(self, tasks: Sequence[Task], runs: Sequence[Run]) -> str:
        """Read the key (or make and write it) and the file's graded aliases; returns the
        sheet id."""
        from grade_kit.standard.blind import grading_sheet, read_key, write_key

        assert self.path is not None and self.key_path is not None
        gradable = [r for r in runs if r.attempt_of is None]
        if self.key_path.is_file():
            key = read_key(self.key_path)
        else:
            _rows, key = grading_sheet(tasks, gradable, seed=self.seed)
            write_key(key, self.key_path)
        by_id = {r.run_id: r for r in gradable}
        prompts = {t.task_id: t.prompt for t in tasks}
        lacking = [e["run_id"] for e in key["aliases"].values() if e["run_id"] not in by_id]
        if lacking:
            raise InputError(f"{self.key_path}: names {len(lacking)} runs this evaluation does "
                             f"not have (first {lacking[0]!r}): the key of another "
                             "evaluation; start a new grading file")
        canonical = [a for a, e in key["aliases"].items() if e["canonical"]]
        for row, alias in enumerate(key["aliases"], start=1):
            entry = key["aliases"][alias]
            run = by_id[entry["run_id"]]
            self._answers[alias] = (prompts.get(run.task_id, ""),
                                    answer_text(run, entry["form"]), row)
        self._key_data = key
        graded = self._graded_aliases()
        self.queue = [a for a in canonical if a not in graded]
        self.total = len(canonical)
        return str(key["sheet"])

    def _graded_aliases(self) -> set[str]:
        """The aliases the grading file grades, read by the one sheet reader."""
        from grade_kit.standard.blind import import_grading_sheet

        assert self.path is not None
        if not self.path.is_file() or not self.path.stat().st_size:
            return set()
        result = import_grading_sheet(self.path, self._key_data)
        if result.errors:
            raise InputError(f"{result.errors[0]} ({len(result.errors)} problem"
                             f"{'' if len(result.errors) == 1 else 's'} in the grading file)")
        graded = {g.run_id for g in result.grades}
        return {a for a, e in self._key_data["aliases"].items()
                if e["canonical"] and e["run_id"] in graded}

    def current_alias(self) -> str | None:
        """The alias of the answer on screen (None when every answer is graded)."""
        return self.queue[0] if self.queue else None

    def _progress(self) -> str:
        return (f"{self.total - len(self.queue)} of {self.total} graded "
                f"({len(self.saved_here)} saved here, {len(self.queue)} left)")

    def _clear(self) -> None:
        """Every field back to empty: the next answer starts ungraded."""
        self.core.value = ""
        self.fulfilment.value = ""
        self.asking.value = False
        for box in (self.claim, self.evidence, self.effect, self.reason):
            box.value = ""

    def _show(self) -> None:
        if self.path is None:
            self.answer.value = ("<p>No grading file: set <code>grading_file</code> (the "
                                 "notebook's parameter) to grade blind.</p>")
            return
        self.undo_button.disabled = not (self.path.is_file() and self.total > len(self.queue))
        where = (f"grades in {html.escape(self.path.name)} (aliases only); key in "
                 f"{html.escape(str(self.key_path))}")
        if not self.queue:
            self.answer.value = "<p>Every answer is graded.</p>"
            self.save_button.disabled = True
            self.status.value = f"{html.escape(self._progress())}; {where}"
            return
        self.save_button.disabled = False
        if not self.status.value:  # until the first save or undo: where the files are
            self.status.value = where
        alias = self.queue[0]
        question, answer, _row = self._answers[alias]
        self.answer.value = (
            f"<h4>Answer {html.escape(alias)}: {html.escape(self._progress())}</h4>"
            f"<p><b>Question</b></p><pre style='white-space:pre-wrap'>"
            f"{html.escape(question)}</pre><p><b>Answer</b></p>"
            + (f"<pre style='white-space:pre-wrap'>{html.escape(answer)}</pre>"
               if answer.strip() else "<p><i>(empty answer: the run delivered no text)</i></p>"))

    def _save_clicked(self) -> None:
        try:
            self.save()
        except ValueError as exc:
            self.status.value = f"<b>Not saved</b>: {html.escape(str(exc))}"

    def _undo_clicked(self) -> None:
        try:
            self.undo()
        except ValueError as exc:
            self.status.value = f"<b>Not undone</b>: {html.escape(str(exc))}"

    def save(self) -> dict[str, str] | None:
        """Save the grade entered for the answer on screen (one row appended and fsynced at
        once), then clear every field and show the next answer. Returns the row written, or
        None when nothing is left (or there is no grading file).

        Raises:
            ValueError: when the core conclusion or the request fulfilment is not chosen, or
                the entry is not a valid grade (the answer stays, nothing is written).
        """
        from grade_kit.standard.blind import ASKS_FIELD, write_sheet_rows

        if not self.queue or self.path is None:
            return None
        core, fulfilment = self.core.value, self.fulfilment.value
        if not core or not fulfilment:
            raise ValueError("choose the core conclusion and the request fulfilment first")
        alias = self.queue[0]
        fields = {
            "core_conclusion": core, "request_fulfilment": fulfilment,
            "material_error": material_error_of(core),
            "claim": self.claim.value or None, "evidence": self.evidence.value or None,
            "effect": self.effect.value or None, "grader": self.grader,
            "reason": self.reason.value or None}
        Grade.model_validate({"run_id": alias, **fields})  # the row imports as a grade
        question, answer, row = self._answers[alias]
        record = {"row": str(row), "sheet": self.sheet, "alias": alias, "question": question,
                  "answer": answer, **{k: v or "" for k, v in fields.items()},
                  ASKS_FIELD: "yes" if self.asking.value else "no"}
        new = not self.path.is_file() or not self.path.stat().st_size
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8", newline="") as handle:
            write_sheet_rows(handle, [record], header=new)
            handle.flush()
            os.fsync(handle.fileno())
        self.queue.pop(0)
        self.saved_here.append(alias)
        self._clear()
        self.status.value = f"saved: {html.escape(self._progress())}"
        self._show()
        return record

    def undo(self) -> str | None:
        """Take the grading file's last row back out (saved in this session or an earlier
        one) and offer its answer again, first, with every field empty. Returns its alias,
        or None when the file grades nothing.

        Raises:
            ValueError: when the file's last row is not a grade of this sheet.
        """
        from grade_kit.atomic import atomic_write_text

        if self.path is None or not self.path.is_file():
            return None
        from grade_kit.standard.blind import read_sheet_rows

        read = read_sheet_rows(self.path.read_text(encoding="utf-8"))
        if not read.rows:
            return None
        header, last = read.header, dict(zip(read.header, read.rows[-1][1], strict=False))
        alias = last.get("alias", "")
        if last.get("sheet") != self.sheet or alias not in self._answers:
            raise ValueError(f"{self.path}: its last row is not a grade of this sheet: "
                             "nothing undone")
        kept = io.StringIO(newline="")
        csv.writer(kept).writerows([*read.preamble, header, *(r for _, r in read.rows[:-1])])
        atomic_write_text(self.path, kept.getvalue())
        if alias not in self.queue:
            self.queue.insert(0, alias)
        if alias in self.saved_here:  # a row of an earlier session is not one saved here
            self.saved_here.remove(alias)
        self._clear()
        self.status.value = f"undone: {html.escape(self._progress())}"
        self._show()
        return alias

    def static_html(self) -> str:
        """What a page without a kernel shows."""
        if self.path is None:
            return ("<p><b>Blind grading</b> is done in the notebook "
                    "<code>blind_grading.ipynb</code> with a grading file; this page offers no "
                    "answer to grade.</p>")
        return (f"<p><b>Blind grading</b>: {len(self.queue)} of {self.total} answers await a "
                "grade in the notebook <code>blind_grading.ipynb</code>; its grades go to "
                f"<code>{html.escape(self.path.name)}</code> under aliases.</p>")

    def _ipython_display_(self) -> None:
        _display_live(self.widget, self.static_html(), self.key, repr(self))

    def __repr__(self) -> str:
        return (f"BlindGradingPanel({len(self.queue)} of {self.total} answers to grade -> "
                f"{self.path})")


FLIPS_SHOWN = 200
"""Flips a page lists (every one is in ``d.flips``)."""

ANSWER_CHARS = 4000
"""The most characters of one answer a flip shows (the rest is in the runs)."""


class FlipsView:
    """A diff's flips for a page (``d.flips``, docs/methodology.md §5 "Against an earlier
    evaluation"): regressions first, each row's two answers side by side on demand (a
    ``<details>`` per repeat), every text escaped; at most :data:`FLIPS_SHOWN` rows."""

    def __init__(self, d: Diff, limit: int = FLIPS_SHOWN) -> None:
        self.d = d
        self.limit = limit

    def _answers(self, row: dict[str, Any]) -> str:
        pairs = zip((row["baseline_run_ids"] or "").split(", "),
                    (row["candidate_run_ids"] or "").split(", "), strict=False)
        parts = []
        for i, (left, right) in enumerate(pairs, start=1):
            texts = self.d.answers(left, right)
            cells = "".join(
                f"<div><b>{html.escape(side)}</b> ({html.escape(rid)})<pre style='white-space:"
                f"pre-wrap;max-height:24em;overflow:auto'>"
                f"{html.escape(text[:ANSWER_CHARS]) or '(no answer delivered)'}"
                f"{' …' if len(text) > ANSWER_CHARS else ''}</pre></div>"
                for side, rid, text in (("baseline", left, texts[0]),
                                        ("candidate", right, texts[1])))
            parts.append(f"<details class='gk-answers'><summary>answers, repeat {i}</summary>"
                         "<div style='display:grid;grid-template-columns:1fr 1fr;gap:1em'>"
                         f"{cells}</div></details>")
        return "".join(parts)

    def _repr_html_(self) -> str:
        flips = self.d.flips_frame
        if not flips.height:
            return "<p>No paired question changed its resolved share.</p>"
        counts = flips.group_by("change").len()
        said = ", ".join(f"{n:,} {c}" for c, n in sorted(counts.iter_rows(), reverse=True))
        renamed = (flips.get_column("setup") != flips.get_column("candidate_setup")).any()
        heads = ["setup", *(["candidate setup"] if renamed else []), "task id", "change",
                 "resolved share", "baseline grades", "candidate grades", "answers"]
        body = []
        for row in flips.head(self.limit).iter_rows(named=True):
            share = (f"{cell_text(row['baseline_resolved'], 'share')} → "
                     f"{cell_text(row['candidate_resolved'], 'share')}")
            cells = [row["setup"], *([row["candidate_setup"]] if renamed else []),
                     row["task_id"], row["change"], share, row["baseline_grades"],
                     row["candidate_grades"]]
            body.append("<tr>" + "".join(
                f"<td style='text-align:left;overflow-wrap:anywhere'>{html.escape(str(c))}</td>"
                for c in cells)
                        + f"<td style='min-width:20em'>{self._answers(row)}</td></tr>")
        more = (f"<p>{flips.height - self.limit:,} more flips: every one is in "
                + where_to_look("d.flips", "flips.parquet beside this page") + ".</p>"
                if flips.height > self.limit else "")
        return (f"<p><b>Flips</b>: paired questions whose resolved share changed ({said}); "
                "regressions first.</p><div style='overflow-x:auto'><table><thead><tr>"
                + "".join(f"<th style='text-align:left'>{h}</th>" for h in heads)
                + "</tr></thead><tbody>"
                + "".join(body) + "</tbody></table></div>" + more)
