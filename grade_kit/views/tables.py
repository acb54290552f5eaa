"""Tables for people: any frame of an evaluation formatted for reading (and for the HTML
report), and the one-row-per-setup summary (``ev.summary``).

:func:`table` formats a frame without changing it: every row shown (no elision), numbers
rounded by what they are, one precision per kind (:func:`number_kind`: shares and other
quantities to 3 decimals, seconds by magnitude, p-values as ``< 0.001`` below that, counts
with thousands separators; a comparison's figures by the kind of its row's metric), a rate
and its 95% interval as ``0.737 [0.643, 0.814]``, null as ``—``, a column null in every row
left out (and named in a note), column headers in words, numbers right-aligned and the first
column kept in view. Every text is escaped. The raw frames (``ev.grades``, ...) stay as they
are; this is only how they read.
"""

from __future__ import annotations

import html
import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import polars as pl

from grade_kit.frames import to_polars
from grade_kit.schema import DIMENSIONS, GRADE_STATES, SHORT_LABELS, Results
from grade_kit.text import brief, md_cell

if TYPE_CHECKING:  # pandas is imported by whoever passes a pandas frame; never here
    import pandas as pd

OFFLINE_ENV = "GRADE_KIT_OFFLINE_HTML"
"""When this environment variable is ``1`` (``grade-kit report`` sets it for the notebooks it
runs), charts render as a bare ``vegaEmbed`` call whose libraries the report's page inlines
once (interactive, with tooltips); see :data:`grade_kit.presentation.charts.LIVE_VEGA_LITE`
otherwise. Here, not in :mod:`grade_kit.presentation.charts`, so the report command reads it
without importing altair (1.2 s)."""

def setup_order(grades: pl.DataFrame | pd.DataFrame) -> list[str]:
    """The setups in the order ``ev.grades`` lists them: the summary's (ranked setups by
    resolved rate on all questions, best first, ties by name; setups not ranked last), one
    rule (:func:`~grade_kit.views.tables.summary_table`). Pass it as ``order`` to every
    chart of an evaluation, so each setup keeps one place and one colour on all of them."""
    names = to_polars(grades).filter(pl.col("subset") == "all").get_column("setup").to_list()
    return list(dict.fromkeys(names))


def in_setup_order(frame: pl.DataFrame, order: Sequence[str]) -> pl.DataFrame:
    """``frame``'s rows by ``setup`` in ``order`` (:func:`setup_order`, the summary's),
    stable: each setup's rows keep their order; a setup ``order`` does not list comes after,
    by name."""
    if not frame.height or "setup" not in frame.columns:
        return frame
    place = {name: i for i, name in enumerate(order)}
    return frame.sort(pl.col("setup").replace_strict(place, default=len(place),
                                                     return_dtype=pl.Int64), "setup",
                      maintain_order=True)


def first_named(names: Sequence[str], shown: int = 3, sep: str = ", ") -> str:
    """``a, b, c and 2 more``: the first ``shown`` names, then how many more (a title's
    suites, a chart's pairs left out)."""
    more = len(names) - shown
    return sep.join(names[:shown]) + (f" and {more} more" if more > 0 else "")


def evaluation_title(results: Results, collections: Iterable[str | None]) -> str:
    """What an evaluation is, in one line (a page's default title): the collections its
    questions come from (each task's suite, else its pack; three named, then how many
    more), its setups (by name up to three, else how many) and its questions and repeats,
    e.g.
    ``airline: gpt-4o · 50 questions x 4 repeats``."""
    named = sorted({c for c in collections if c})
    setups = sorted(results.setups)
    questions, repeats = results.common_subset.of_questions, results.plan.repeats
    who = ", ".join(setups) if len(setups) <= 3 else f"{len(setups):,} setups"
    what = (f"{who} · {questions:,} question{'s' * (questions != 1)} x "
            f"{repeats} repeat{'s' * (repeats != 1)}")
    return f"{first_named(named)}: {what}" if named else what


def where_to_look(notebook: str, page: str) -> str:
    """Where a reader finds what a table or a line leaves out: ``notebook`` (a code hint,
    such as ``ev.warnings``) in a notebook, ``page`` (in words, with no code and no widget)
    on a page ``grade-kit report`` or ``grade-kit diff`` makes (:data:`OFFLINE_ENV`)."""
    return page if os.environ.get(OFFLINE_ENV) == "1" else notebook


MAX_TABLE_ROWS = 5_000
"""The most rows a table shows; a longer frame is cut there with a line that says so and
how many rows there are (the frames themselves always hold every row)."""

_WORDS = {"e2e": "E2E", "p50": "P50", "p90": "P90", "ci": "CI", "n": "n", "id": "id",
          "s": "", "diff": "difference", "b": "B", "a": "A", "num": "number"}
_SECONDS = ("e2e_", "working_", "span_", "waiting_", "outcome_")
_RATES = ("_rate", "coverage", "composite", "rubric_score", *DIMENSIONS,
          "finding_stability", "ranking_stability", "metric_variance", "mean_a", "mean_b")


COLLAPSE_ROWS = 25
"""A table of more rows shows folded on a page (``<details>``, every row in the file, one
click away), so a page's height grows with its sections, not with setups or pairs."""

LONG_TEXT = 40
"""A text cell longer than this wraps (a warning, a reason); shorter ones never break."""

FOLD_TEXT = 500
"""A text cell of several lines or longer than this (a log's error, a tool's stderr) shows
its first line (:func:`~grade_kit.text.brief`); on a page the full text is one click away
in the cell (``<details>``), so nothing is dropped from the file."""

_PLAIN_INTS = {"seed", "line", "repeat", "track", "position", "year"}
"""Integer columns that are labels, not quantities: no thousands separators."""


_LABELS = {"outcome_p50": "time to outcome P50 (s)", "run_coverage": "coverage (slots run)",
           "p_holm_vs_best": "Holm p vs best",
           "tool_calls_per_run": "tool calls per run",
           "change": "change (candidate - baseline)",
           "mean_diff_b_minus_a": "difference (compared - baseline)",
           "mean_a": "baseline mean", "mean_b": "compared mean", "pass_hat_k": "pass^k",
           "p_on_frontier": "P(on frontier)", "runs_with_cost": "runs with a cost",
           "cost_per_resolved": "cost per resolved slot",
           "user_cost_total": "simulated user's cost (logged)"}


def column_label(name: str) -> str:
    """A column name in words: ``e2e_p50`` -> ``E2E P50 (s)``, ``resolved_rate`` ->
    ``resolved rate``, a GRADE dimension -> its short label."""
    if name in SHORT_LABELS:
        return SHORT_LABELS[name]
    if name in _LABELS:
        return _LABELS[name]
    words = [_WORDS.get(w, w) for w in name.split("_")]
    text = " ".join(w for w in words if w)
    if name.startswith(_SECONDS) and not name.endswith("_n"):
        text += " (s)"
    return text


def _is_seconds(name: str) -> bool:
    return (name.startswith(_SECONDS) and not name.endswith("_n")) or name.endswith("_s")


_P_VALUES = {"p_value", "p_holm", "p", "p_holm_vs_best"}
_EXACT = {"gold", "parsed", "reported", "abs_tol", "rel_tol"}
"""A value a reader compares with a source as it is written (a gold answer, a tolerance,
number): shown in full, never rounded."""

_PER_ROW = {"mean_a", "mean_b", "mean_diff_b_minus_a", "change", "baseline", "candidate",
            "value", "mean"}
"""A comparison's figures: their kind is their row's ``metric`` (a difference of E2E medians
is seconds, a difference of resolved rates a share)."""


_COUNTS = {"per_run_p50", "per_run_p90", "per_run_min", "per_run_max", "rank", "rank_low",
           "rank_high"}
"""Order statistics of a count (tool calls per run) and ranks: whole numbers, or halfway
between two (a median of an even number of runs, a tied rank)."""


def number_kind(name: str) -> str:
    """What a column (or a comparison's ``metric``) holds, which sets its precision:
    ``p`` (a p-value), ``seconds``, ``exact`` (a gold or parsed value, in full), ``effective``
    (an effective sample size, 1 decimal), ``count`` (a count's median, quantile or extreme:
    whole, or 1 decimal when it falls between two), ``dollars`` (4 significant digits, cents
    from $1,000), ``tokens`` (whole, 1 decimal for a mean) or ``quantity`` (a share, a rate, a
    score, a mean count, a design effect: 3 decimals)."""
    if name in _P_VALUES:
        return "p"
    if _is_seconds(name):
        return "seconds"
    if name in _EXACT:
        return "exact"
    if name.endswith("n_effective"):
        return "effective"
    if name in _COUNTS:
        return "count"
    if name.startswith(("cost", "user_cost")):
        return "dollars"
    if name.startswith("tokens") or name.endswith("tokens_total"):
        return "tokens"
    return "quantity"


def seconds_decimals(largest: float) -> int:
    """Decimals for seconds of this magnitude (the largest of a value and its interval):
    0 from 100 s, 1 from 10 s, 2 from 0.1 s, 3 below (1,532 s; 15.3 s; 0.27 s; 0.068 s)."""
    size = abs(largest)
    return 0 if size >= 100 else 1 if size >= 10 else 2 if size >= 0.1 else 3


def _number(value: float, name: str, largest: float | None = None) -> str:
    """``value`` of a column or metric ``name`` (:func:`number_kind`); ``largest`` sets the
    decimals of seconds shown together (a value and its interval), default ``value``."""
    if not math.isfinite(value):
        return str(value)
    kind = number_kind(name)
    if kind == "p":
        return p_text(value)
    if kind == "exact":
        return f"{value:,}"
    if kind == "dollars":  # $0.01627, $4.213, $1,532.40: small sums keep their digits
        return f"{value:,.2f}" if abs(value) >= 1000 else f"{value:.4g}"
    if kind == "tokens":
        return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"
    decimals = (seconds_decimals(value if largest is None else largest) if kind == "seconds"
                else 1 if kind == "effective" or (kind == "count" and not float(value).is_integer())
                else 0 if kind == "count" else 3)
    if value and not round(value, decimals):  # a figure that is not 0 never reads as 0 (an
        return f"{value:.2g}"  # interval's end beside a stated difference keeps its sign)
    return f"{value:,.{decimals}f}"


def cell_text(value: Any, name: str, largest: float | None = None) -> str:
    """One value of column ``name`` as every table shows it: ``—`` for null, ``yes``/``no``,
    thousands separators (not for labels such as ``repeat``), floats by
    :func:`number_kind` (seconds by magnitude, other quantities to 3 decimals, p-values to 3
    significant digits, ``< 0.001`` below); a grade in words (``material error``); a
    ``metric`` named by its column name in words (``e2e_median_s`` -> ``E2E median (s)``).
    ``largest``: the largest magnitude shown beside it (seconds take their decimals from it,
    so a column reads at one precision); default the value's own."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value) if name in _PLAIN_INTS else f"{value:,}"
    if isinstance(value, float):
        return _number(value, name, largest)
    if isinstance(value, list | tuple):
        return ", ".join(cell_text(v, name) for v in value)
    if name in ("metric", "statistic"):  # a column's name as a value: in words too
        return column_label(str(value))
    if name in ("grade", "state") and value in GRADE_STATES:  # a grade in words
        return str(value).replace("_", " ")
    return str(value)


_DIFFERENCES = ("mean_diff_b_minus_a", "change")
"""Columns of a paired difference whose interval is ``ci_low``/``ci_high`` at ``ci_level``."""


def _interval_text(value: float, low: float | None, high: float | None, name: str) -> str:
    """``0.737 [0.643, 0.814]``: a value and its interval at one precision (seconds by the
    largest of the three)."""
    if low is None or high is None:
        return _number(value, name)
    largest = max(abs(value), abs(low), abs(high))
    return (f"{_number(value, name, largest)} [{_number(low, name, largest)}, "
            f"{_number(high, name, largest)}]")


def _merge_intervals(frame: pl.DataFrame) -> tuple[pl.DataFrame, set[str]]:
    """``X_rate`` with ``X_ci_low`` and ``X_ci_high`` as one text column ``X_rate``
    (``0.737 [0.643, 0.814]``); a mean ``X`` with ``X_ci_low`` and ``X_ci_high`` the same way;
    also a difference (``mean_diff_b_minus_a``, a diff's ``change``) with ``ci_low``/``ci_high``
    and its level."""
    merged: set[str] = set()
    pairs = [(c, c.removesuffix("_rate") + "_ci_low", c.removesuffix("_rate") + "_ci_high")
             for c in frame.columns if c.endswith("_rate")]
    pairs += [(c, f"{c}_ci_low", f"{c}_ci_high") for c in frame.columns  # a mean's interval
              if not c.endswith("_rate") and f"{c}_ci_low" in frame.columns]
    pairs += [(c, "ci_low", "ci_high") for c in _DIFFERENCES]
    for value, low, high in pairs:
        if {value, low, high} <= set(frame.columns):
            # a tested figure's interval is at its Holm level (docs/methodology.md §5 "One
            # verdict"): the level is part of the interval's text
            levels = (frame.get_column("ci_level").to_list()
                      if value in _DIFFERENCES and "ci_level" in frame.columns
                      else [None] * frame.height)
            kinds = (frame.get_column("metric").cast(pl.String).to_list()
                     if value in _PER_ROW and "metric" in frame.columns
                     else [value] * frame.height)
            texts = [None if v is None else _interval_text(v, lo, hi, kind) + (
                "" if level is None or lo is None or level == 0.95
                else f" at {level_text(level)}")
                for (v, lo, hi), level, kind in zip(
                    frame.select(value, low, high).iter_rows(), levels, kinds, strict=True)]
            frame = frame.with_columns(pl.Series(value, texts, dtype=pl.String)).drop(low, high)
            if value in _DIFFERENCES and "ci_level" in frame.columns:
                frame = frame.drop("ci_level")
            merged.add(value)
    return frame, merged


WIDE_COLUMNS = 10
"""A table of more columns than this shows its key columns first (:data:`KEY_COLUMNS`)."""

KEY_COLUMNS = ("setup", "compared", "baseline", "subset", "metric", "direction",
               "mean_diff_b_minus_a", "p_holm", "N", "resolved_rate", "composite",
               "e2e_p50", "e2e_p90", "per_run_mean")
"""What a wide table shows first, in this order, where it has them: who (the setup, or the
pair), on which questions and figure, then the answer (the difference and its Holm p; the
resolved rate; the composite; latency; tool calls). The other columns follow as they are,
so the figures a reader looks for stay in view beside the first column."""


def key_columns_first(columns: Sequence[str], wide: int = WIDE_COLUMNS) -> list[str]:
    """``columns`` with those of :data:`KEY_COLUMNS` first, in that order, then the rest as
    they were; at most ``wide`` columns (default :data:`WIDE_COLUMNS`) come back as they
    are."""
    if len(columns) <= wide:
        return list(columns)
    first = [c for c in KEY_COLUMNS if c in columns]
    return first + [c for c in columns if c not in first]


@dataclass(frozen=True)
class Table:
    """A frame formatted for reading: shows as an HTML table in Jupyter and in the report,
    as aligned text elsewhere. ``frame`` is the frame as given (unchanged)."""

    frame: pl.DataFrame
    title: str | None = None
    note: str | None = None
    absent: str | None = None
    """Why this table's data does not exist; shown instead of the table (one sentence)."""
    empty: str | None = None
    """What an empty frame shows instead of "No rows."."""
    ordered: bool = False
    """The columns are in the order to show (a view built for a page); otherwise a wide
    table shows its key columns first (:func:`key_columns_first`)."""

    def _empty_columns(self) -> list[str]:
        """Columns null in every row (left out of the table, and named in a note)."""
        if not self.frame.height:
            return []
        return [c for c in self.frame.columns
                if self.frame.get_column(c).null_count() == self.frame.height]

    def _cells(self) -> tuple[list[str], list[list[str]], list[bool]]:
        kept = self.frame.drop(self._empty_columns()).head(MAX_TABLE_ROWS)
        if not self.ordered:
            kept = kept.select(key_columns_first(kept.columns))
        shown, merged = _merge_intervals(kept)
        numeric = [dtype.is_numeric() or name in merged
                   for name, dtype in shown.schema.items()]
        header = [column_label(c) for c in shown.columns]
        metric = shown.columns.index("metric") if "metric" in shown.columns else None

        def kind(name: str, row: tuple[Any, ...]) -> str:  # a comparison's figure: its metric
            return (str(row[metric]) if metric is not None and name in _PER_ROW
                    and row[metric] is not None else name)

        # a column of seconds at the decimals of its largest value: 0.083 beside 0.140,
        # not beside 0.14
        largest = {name: shown.get_column(name).abs().max() for name, dtype
                   in shown.schema.items() if dtype.is_float() and name not in _PER_ROW
                   and number_kind(name) == "seconds"}
        rows = [[cell_text(v, kind(name, row), cast(float | None, largest.get(name)))
                 for v, name in zip(row, shown.columns, strict=True)]
                for row in shown.iter_rows()]
        return header, rows, numeric

    def _notes(self) -> list[str]:
        out = [self.note] if self.note else []
        empty = self._empty_columns()
        if empty:
            out.append("Left out, with no value in any row: "
                       + ", ".join(column_label(c) for c in empty) + ".")
        if self.frame.height > MAX_TABLE_ROWS:
            out.append(f"The first {MAX_TABLE_ROWS:,} of {self.frame.height:,} rows are "
                       "shown; the frame holds them all.")
        return out

    def _repr_html_(self) -> str:
        if self.absent is not None:
            return absent_html(self.absent, self.title)
        header, rows, numeric = self._cells()
        cls = ["gk-num" if n else "gk-text" for n in numeric]

        def part(columns: Sequence[int], caption: str | None) -> str:
            head = "".join(f'<th class="{cls[i]}">{html.escape(header[i])}</th>'
                           for i in columns)
            body = "".join("<tr>" + "".join(
                f'<td class="{cls[i]}{" gk-long" if len(row[i]) > LONG_TEXT else ""}">'
                f"{_cell_html(row[i])}</td>" for i in columns) + "</tr>" for row in rows)
            title = f"<caption>{html.escape(caption)}</caption>" if caption else ""
            return (f"<div class=\"gk-table-wrap\"><table class=\"gk-table\">{title}"
                    f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>")

        foot = "".join(f'<p class="gk-note">{html.escape(n)}</p>' for n in self._notes())
        if not rows:  # a sentence, not a header over nothing
            title = f"<p><b>{html.escape(self.title)}</b></p>" if self.title else ""
            return (f'{_STYLE}{title}<p class="gk-note">'
                    f'{html.escape(self.empty or "No rows.")}</p>{foot}')
        groups = column_groups(header, rows)
        table = part(groups[0], self.title)
        if len(groups) > 1:  # the columns past the page's width, each part with the first
            folded = [header[i] for group in groups[1:] for i in group[1:]]
            continued = f"{self.title} (continued)" if self.title else None
            plural = "s" * (len(folded) != 1)
            table += (f'<details class="gk-more"><summary>{len(folded)} more column{plural}: '
                      f"{html.escape(', '.join(folded))}</summary>"
                      + "".join(part(group, continued) for group in groups[1:]) + "</details>")
        if len(rows) > COLLAPSE_ROWS:  # the page's height grows with sections, not rows
            what = html.escape(self.title) if self.title else "The table"
            table = (f'<details class="gk-more"><summary>{what}: {len(rows):,} rows '
                     f"(open to read them all)</summary>{table}</details>")
        return f"{_STYLE}{table}{foot}"

    def markdown(self) -> str:
        """The table as Markdown (scorecard.md): the same cells, notes and sentences as its
        HTML and text, every one through :func:`~grade_kit.text.md_cell`, so no value can add
        a row, a column, a heading or a tag."""
        title = [f"**{md_cell(self.title)}**", ""] if self.title else []
        if self.absent is not None:
            return "\n".join([*title, md_cell(self.absent)])
        header, rows, numeric = self._cells()
        notes = [md_cell(n) for n in self._notes()]
        if not rows:
            return "\n".join([*title, md_cell(self.empty or "No rows."), *notes])
        lines = [*title, "| " + " | ".join(md_cell(h) for h in header) + " |",
                 "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
        lines += ["| " + " | ".join(md_cell(v) for v in row) + " |" for row in rows]
        return "\n".join(lines + (["", *notes] if notes else []))

    def __repr__(self) -> str:
        if self.absent is not None:
            return f"{self.title}: {self.absent}" if self.title else self.absent
        header, rows, numeric = self._cells()

        def line(cells: Sequence[str]) -> str:
            return "  ".join(c.rjust(w) if n else c.ljust(w)
                             for c, w, n in zip(cells, widths, numeric, strict=True)).rstrip()

        rows = [[brief(v, FOLD_TEXT) for v in row] for row in rows]
        widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]
        out = ([self.title] if self.title else []) + [line(header)]
        out += [line(r) for r in rows] or [self.empty or "(no rows)"]
        out += self._notes()
        return "\n".join(out)


PAGE_WIDTH_PX = 1_250
"""The widest a table may be drawn (a page read at 1,400 px gives its tables 1,319):
:func:`column_groups` folds the columns past it."""


def _column_px(header: str, cells: Sequence[str]) -> float:
    """About how wide a column draws at the tables' 13 px font: its widest cell (a long text
    wraps at 24em), or its header's longest word (headers wrap), plus its padding."""
    widest = max((min(len(c), LONG_TEXT) if len(c) > LONG_TEXT else len(c) for c in cells),
                 default=0)
    if any(len(c) > LONG_TEXT for c in cells):
        widest = max(widest, 44)  # min-width 24em of a long text
    word = max((len(w) for w in header.split()), default=0)
    return 18 + 7.8 * max(widest, word)


def column_groups(header: Sequence[str], rows: Sequence[Sequence[str]],
                  width: float = PAGE_WIDTH_PX) -> list[list[int]]:
    """The columns of a table split so each part fits ``width`` (default
    :data:`PAGE_WIDTH_PX`): the first part shows as many of the columns, in order, as fit;
    each further part repeats the first column (what the row is) beside the next ones. A
    table that fits is one part."""
    widths = [_column_px(h, [row[i] for row in rows]) for i, h in enumerate(header)]
    groups: list[list[int]] = [[0]] if header else [[]]
    used = widths[0] if widths else 0.0
    for i in range(1, len(header)):
        if used + widths[i] > width and len(groups[-1]) > 1:
            groups.append([0])
            used = widths[0]
        groups[-1].append(i)
        used += widths[i]
    return groups


def _cell_html(text: str) -> str:
    """One cell's text as HTML: escaped; a long or many-line text (:data:`FOLD_TEXT`) as its
    first line, the whole text folded beneath it."""
    shown = brief(text, FOLD_TEXT)
    if shown == text:
        return html.escape(text)
    return (f'{html.escape(shown)}<details class="gk-full"><summary>full text</summary>'
            f"<pre>{html.escape(text)}</pre></details>")


_STYLE = ("<style>.gk-table-wrap{overflow-x:auto;max-width:100%}"
          "table.gk-table{border-collapse:collapse;font-size:13px;margin:0.5em 0}"
          "table.gk-table caption{text-align:left;font-weight:bold;padding:0.3em 0}"
          "details.gk-more>summary{cursor:pointer;font-size:13px;padding:0.3em 0;"
          "color:#0b4f8a}"
          "table.gk-table th,table.gk-table td{padding:3px 9px;border:none;"
          "border-bottom:1px solid #ddd;white-space:nowrap;vertical-align:top}"
          "table.gk-table th{background:#f4f4f4;font-weight:600;white-space:normal}"
          "table.gk-table th.gk-num,table.gk-table td.gk-num{text-align:right;"
          "font-variant-numeric:tabular-nums}"
          "table.gk-table th.gk-text,table.gk-table td.gk-text{text-align:left}"
          "table.gk-table td.gk-long{white-space:normal;min-width:24em;max-width:48em;"
          "overflow-wrap:break-word}"
          "table.gk-table tr>:first-child{position:sticky;left:0;background:#fff}"
          "table.gk-table thead tr>:first-child{background:#f4f4f4}"
          "details.gk-full>summary{cursor:pointer;font-size:12px;color:#0b4f8a}"
          "details.gk-full>pre{white-space:pre-wrap;max-height:20em;overflow:auto;"
          "font-size:12px;margin:0.3em 0}"
          ".gk-note{font-size:12px;color:#555;margin:0.2em 0 0.8em}</style>")
"""The tables' look: specific enough (``table.gk-table td.gk-text``) to win over the
notebook page's own table rules (JupyterLab right-aligns every cell)."""


def table(frame: pl.DataFrame | pd.DataFrame, *, title: str | None = None,
          note: str | None = None, absent: str | None = None,
          empty: str | None = None) -> Table:
    """``frame`` formatted for reading (see the module docstring).

    Args:
        frame: Any frame of an evaluation (polars or pandas).
        title: A caption; default none.
        note: A line under the table; default none.
        absent: Why the data of this table does not exist (one of :class:`Absent`'s
            sentences, e.g. ``ev.absent.grade``); when given, that sentence is shown instead
            of the table, and ``grade-kit report`` leaves out a section that holds only
            such sentences. Default none: the table is shown.
        empty: What an empty frame shows; default "No rows.".
    """
    polars_frame = to_polars(frame)
    return Table(polars_frame, title, note, absent, empty)


ABSENT_ATTRIBUTE = "data-gk-absent"
"""Marks the HTML of an output whose data does not exist; its value is the reason."""

NO_GRADE = ("No GRADE scores: these runs' tasks carry no GRADE rubric (plain questions, as in "
            "every imported log), so only grades, timing and tool calls are scored.")
"""Why GRADE figures (composite, dimensions, consistency) do not exist."""

NO_COMPARISON = ("No comparison: it needs two setups with questions both ran (here there is "
                 "one setup, or no paired question).")
"""Why comparisons (paired differences, significance, ranks, planning) do not exist."""


NO_TOOL_CALLS = ("No tool calls: no delivered primary run exposed its tool events (the runs "
                 "record none, or they used no tool).")
"""Why tool-call figures do not exist."""


def no_timing(delivered: int, missing: int) -> str:
    """Why E2E latency does not exist: how many delivered runs lack a timestamp."""
    return (f"No E2E sample: {missing} of {delivered} delivered runs lack a submitted or "
            "received timestamp." if missing else f"No E2E sample: {delivered} delivered runs.")


def absent_html(reason: str, title: str | None = None) -> str:
    """One sentence shown where a table or chart has no data: ``title: reason``, marked
    (:data:`ABSENT_ATTRIBUTE`) so a report can leave out a section made only of them."""
    lead = f"<b>{html.escape(title)}</b>: " if title else ""
    return (f'<p class="gk-note gk-absent" {ABSENT_ATTRIBUTE}="{html.escape(reason)}">'
            f"{lead}{html.escape(reason)}</p>")


@dataclass(frozen=True)
class Absent:
    """Why a kind of figure does not exist in an evaluation (None: it does): the sentence a
    table (``gk.table(..., absent=ev.absent.grade)``) or chart shows instead, the same one
    ``grade-kit report`` gives for a section it leaves out."""

    grade: str | None
    """No setup has a GRADE composite: :data:`NO_GRADE`."""
    timing: str | None
    """No delivered primary run has an E2E sample: :func:`no_timing`."""
    comparison: str | None
    """No pair of setups has a question both ran: :data:`NO_COMPARISON`."""
    tool_calls: str | None
    """No delivered primary run exposed its tool events: :data:`NO_TOOL_CALLS`."""
    cost: str | None = None
    """No run records tokens or a cost: :data:`NO_COST`."""


def absences(results: Results) -> Absent:
    """What :class:`Absent` says of these results."""
    setups = results.setups.values()
    delivered = sum(s.timing.delivered for s in setups)
    missing = sum(s.timing.missing_timestamps for s in setups)
    return Absent(
        grade=None if any(s.overall.composite is not None for s in setups) else NO_GRADE,
        timing=None if any(s.timing.e2e_s.n for s in setups) else no_timing(delivered, missing),
        comparison=None if results.comparisons else NO_COMPARISON,
        tool_calls=None if any(s.tool_calls.runs_exposed for s in setups) else NO_TOOL_CALLS,
        cost=None if any(s.cost is not None and (s.cost.runs_with_tokens or s.cost.runs_with_cost)
                         for s in setups) else NO_COST)


@dataclass(frozen=True)
class Prose:
    """A paragraph a notebook shows as Markdown (and as text outside Jupyter)."""

    text: str

    def _repr_markdown_(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text


def section_intro(section: str, absent: Absent) -> Prose | Table:
    """What a notebook's section says first, naming only what this evaluation has
    (``absent``: :attr:`Evaluation.absent`): ``scorecard`` (the grades; who leads, with its
    test, where setups are compared; the GRADE dimensions where the tasks carry a rubric),
    ``timing`` (latency where there is a sample; tool calls where runs exposed them) or
    ``compare`` (the kinds of figure and how each is tested). A section with nothing to say
    gives the reason it is left out (a marked sentence, :func:`absent_html`).

    Raises:
        ValueError: for another section.
    """
    if section == "scorecard":
        leads = ("" if absent.comparison else " and who leads on the resolved rate (with the "
                 "paired test that says whether the lead is real)")
        grade = ("" if absent.grade else "; the six GRADE dimensions and their weighted "
                 "composite by track and pack and the weakest tasks")
        return Prose(f"Every setup's four grades over honest denominators{leads}{grade}; and "
                     "every rejected input. The rules are in `docs/methodology.md`.")
    if section == "timing":
        parts = []
        if not absent.timing:
            parts.append("End-to-end latency (received - submitted) of delivered primary "
                         "runs, on all questions and on the common subset, every denominator "
                         "shown; working time (the system's own work, without waiting on rate "
                         "limits and queues) beside it where the source records it; timeouts, "
                         "limits and failures are counted apart and are never latency "
                         "samples.")
        if not absent.tool_calls:
            parts.append("Tool calls are decided per call (a record repeating an earlier "
                         "one's id, name and arguments is that call again), with the records "
                         "beside them.")
        return (Prose(" ".join(parts)) if parts
                else Table(pl.DataFrame(), absent=absent.timing))
    if section == "compare":
        if absent.comparison:
            return Table(pl.DataFrame(), absent=absent.comparison)
        return Prose(
            "Every pair of setups, compared - baseline, on the questions both ran and on the "
            "common subset. Each figure is *measured* (paired, with n and an interval), a "
            "*conditional estimate* (formula and assumption shown) or an *untested "
            "direction*. A tested figure (the grade rates, pass^k) states a direction only "
            "when its Holm-adjusted paired test does, and its interval is that test inverted "
            "at its Holm level, so the two never disagree"
            + ("; times, the composite and tool calls have" if not absent.grade
               else "; times and tool calls have")
            + " a seeded 95% bootstrap interval over paired questions.")
    raise ValueError(f"no intro for section {section!r}: scorecard, timing or compare")


def pending_state(results: Results) -> str | None:
    """The grade state, said first where a run is pending verification (a delivered run
    with no grade record, docs/methodology.md §4 "Grades"): how many of N, and why, with
    what to pass when no grader ran; None when nothing is pending."""
    setups = results.setups.values()
    pending = sum(s.grades.counts.pending_verification for s in setups)
    if not pending:
        return None
    total = sum(s.grades.N for s in setups)
    if results.provenance.graders:
        return (f"{pending:,} of N = {total:,} pending verification: these runs have no "
                "grade record.")
    return (f"{pending:,} of N = {total:,} pending verification: no grade records and no "
            "grader; pass grader='rules' (grade-kit: --grader rules), a model grader, or "
            "grade records, or the resolved rate counts none of them.")


def summary_table(results: Results, grades: pl.DataFrame, timing: pl.DataFrame,
                  tool_calls: pl.DataFrame, overall: pl.DataFrame) -> Table:
    """One row per setup, ranked setups first by resolved rate (ties by name): N, the resolved
    rate with its 95% Wilson interval, the other grades' rates, the source's own headline
    metric where the logs carry one (with its standard error), and where measured E2E P50
    and P90, time to outcome P50 (delivered and limit runs), working-time P50, timeouts,
    limits and failures, tool calls per run (decided per call);
    the GRADE composite and dimensions where some task has a GRADE rubric. A setup below the
    coverage threshold (docs/methodology.md §4 "Coverage") comes last, its coverage shown
    first and its rates left blank: they would read as measured zeros.

    Read from the standard's frames on all questions (``grades``, ``timing``,
    ``tool_calls``: ``ev.grades``, ``ev.timing``, ``ev.tool_calls``), the overall GRADE
    aggregates (``overall``: ``ev.leaderboard``'s columns) and the plan and source metrics
    of ``results``; the setups in the order of ``results``."""
    def on_all(frame: pl.DataFrame) -> dict[str, dict[str, Any]]:
        if "subset" in frame.columns:
            frame = frame.filter(pl.col("subset") == "all")
        return {row["setup"]: row for row in frame.iter_rows(named=True)}

    g_rows, t_rows, c_rows, o_rows = map(on_all, (grades, timing, tool_calls, overall))
    setups = results.setups
    plan = results.plan
    unranked = plan.unranked
    rows: list[dict[str, Any]] = []
    t_all, c_all = list(t_rows.values()), list(c_rows.values())
    timed = any(t["e2e_n"] for t in t_all)
    limited = any(t["limits"] for t in t_all)
    working = any(t["working_n"] for t in t_all)
    stopped = any(t["timeouts"] or t["limits"] or t["failures"] for t in t_all)
    tools = any(c["runs_exposed"] for c in c_all)
    duplicated = any(c["runs_with_duplicate_records"] for c in c_all)
    graded = any((o["tasks"] or 0) for o in o_rows.values())
    metrics = sorted({m for s in setups.values() for m in s.source_metrics})
    for name, s in setups.items():
        g, t = g_rows[name], t_rows[name]
        shown = name not in unranked
        row: dict[str, Any] = {"setup": name, "N": g["N"]}
        if unranked:
            row["run_coverage"] = g["run_coverage"]
        row.update(resolved_rate=g["resolved_rate"] if shown else None,
                   resolved_ci_low=g["resolved_ci_low"] if shown else None,
                   resolved_ci_high=g["resolved_ci_high"] if shown else None)
        row.update(partial_rate=g["partially_resolved_rate"],
                   material_error_rate=g["material_error_rate"],
                   unresolved_rate=g["unresolved_rate"],
                   pending_rate=g["pending_verification_rate"],
                   not_run_rate=g["not_run_rate"])
        if not shown:
            row.update(partial_rate=None, material_error_rate=None, unresolved_rate=None,
                       pending_rate=None)
        for metric in metrics:
            figure = s.source_metrics.get(metric)
            row[metric] = None if figure is None or not shown else figure.mean
            row[f"{metric} stderr"] = None if figure is None or not shown else figure.stderr
        if timed:
            row.update(e2e_n=t["e2e_n"], e2e_p50=t["e2e_p50"], e2e_p90=t["e2e_p90"])
        if limited:
            row.update(outcome_p50=t["outcome_p50"])
        if working:
            row.update(working_p50=t["working_p50"])
        if stopped:
            row.update(timeouts=t["timeouts"], limits=t["limits"], failures=t["failures"])
        if tools:
            row.update(tool_calls_per_run=c_rows[name]["per_run_mean"])
        if graded:
            o = o_rows.get(name, {})
            row.update(composite=o.get("composite"), **{d: o.get(d) for d in DIMENSIONS})
        rows.append(row)
    frame = pl.DataFrame(rows, infer_schema_length=None) if rows else pl.DataFrame(
        schema={"setup": pl.String})
    zero: list[str] = []
    if rows:
        frame = (frame.with_columns(_unranked=pl.col("setup").is_in(list(unranked)))
                 .sort(["_unranked", "resolved_rate", "setup"],
                       descending=[False, True, False], nulls_last=True)
                 .drop("_unranked"))
        # a grade no setup has is a word in the note, not a column of zeros (the page stays
        # as wide as a reader's screen)
        zero = [c for c in ("partial_rate", "material_error_rate", "unresolved_rate",
                            "pending_rate", "not_run_rate")
                if frame.get_column(c).fill_null(0).eq(0).all()]
        frame = frame.drop(zero)
    pending = pending_state(results)
    note = ((f"{pending} " if pending else "")
            + f"Rates over N = questions × R (R = {plan.repeats}, "
            + ("inferred" if plan.inferred else "stated by the source"
               if plan.rule.startswith("stated") else "given")
            + "); the resolved rate with its 95% Wilson interval over its effective sample "
            + f"size ({rates_interval_basis(results)}: repeats of one question are not "
            + "independent evidence). Sorted by resolved rate."
            + (" Rate 0 for every setup, left out: "
               + ", ".join(column_label(c).removesuffix(" rate") for c in zero) + "."
               if zero else "")
            + (" " + ", ".join(f"{m!r}" for m in metrics) + ": the source's own headline "
               "metric (mean over questions of each question's mean score, with its "
               "standard error), as the source names it." if metrics else "")
            + (" Time to outcome: received or stopped − submitted over delivered and "
               "limit-stopped runs (E2E covers delivered runs only)." if limited else "")
            + (" Tool calls per run: a call recorded twice (the same id, name and "
               "arguments) counts once." if duplicated else "")
            + (f" Not ranked (coverage below {plan.coverage_min:.0%} of the planned slots, "
               "listed last, rates left blank; not in the comparisons or the common "
               "subset): " + ", ".join(sorted(unranked)) + "." if unranked else ""))
    return Table(frame, "Summary: one row per setup", note, ordered=True)


def provenance_table(results: Results) -> Table:
    """What made these figures, for a page's footer: the grade_kit version and time, each
    input file relative to the inputs' folder (:func:`inputs_folder`; never an absolute
    path) with its SHA-256 prefix and records, R and how it
    was set, the seeds, the judges and the graders."""
    prov, plan = results.provenance, results.plan
    folder = inputs_folder(results)
    rows = [("grade_kit", prov.grade_kit_version), ("made", prov.created_at)]
    rows += [(f"input: {f.kind}", f"{input_name(f.path, folder)} "
              f"({f'sha256 {f.sha256[:12]}…' if f.sha256 else 'no file: records given'}, "
              f"{f.records:,} records, {f.rejected:,} rejected)") for f in prov.inputs]
    rows.append(("R", f"{plan.repeats} ({plan.rule})"))
    rows += [(f"seed: {name}", str(seed)) for name, seed in sorted(prov.seeds.items())]
    rows.append(("judges", ", ".join(prov.judges) or "none"))
    rows.append(("graders", ", ".join(prov.graders) or "none"))
    frame = pl.DataFrame(rows, schema={"item": pl.String, "value": pl.String}, orient="row")
    return Table(frame, "Provenance")


P_SHOWN_DOWN_TO = 1e-300
"""The smallest p a page writes as a number: below it (a p stored at its floor, its size in
``log10_p``) it says ``< 1e-300``."""


def p_precise(p: float | None) -> str | None:
    """A p-value for a tooltip or a line of text: three significant digits, ``< 1e-300``
    below :data:`P_SHOWN_DOWN_TO`; None where there is none."""
    return None if p is None else ("< 1e-300" if p < P_SHOWN_DOWN_TO else f"{p:.3g}")


def p_text(p: float | None, missing: str = "—") -> str:
    """A p-value as a table shows it: :func:`p_precise`, but ``< 0.001`` below that;
    ``missing`` (default —) where there is none."""
    return missing if p is None else ("< 0.001" if p < 0.001 else str(p_precise(p)))


def p_precise_column(column: str) -> pl.Expr:
    """:func:`p_precise` of a frame's p-value column, as a string column of that name."""
    return pl.col(column).map_elements(p_precise, return_dtype=pl.String, skip_nulls=True)


@dataclass
class HeadlineView:
    """The page's first words (docs/methodology.md §5 "The headline"): a few sentences and
    one compact table. ``sentences`` are plain text; bold marks setup names in HTML."""

    sentences: list[str]
    table: Table | None
    """The ranked setups with their groups; None with fewer than two (the sentence says
    it all)."""
    names: list[str]

    def _repr_html_(self) -> str:
        def bold(text: str) -> str:
            out = html.escape(text)
            for name in sorted(self.names, key=len, reverse=True):
                quoted = html.escape(f"«{name}»")
                out = out.replace(quoted, f"<b>{html.escape(name)}</b>")
            return out

        return ('<div class="gk-headline">'
                + "".join(f"<p>{bold(s)}</p>" for s in self.sentences)
                + ("" if self.table is None else self.table._repr_html_()) + "</div>")

    def __repr__(self) -> str:
        return "\n".join([*(s.replace("«", "").replace("»", "") for s in self.sentences),
                          *([] if self.table is None else [repr(self.table)])])


NAMED_SETUPS = 6
"""Up to this many ranked setups, the headline names each group's members in its sentence;
beyond, it gives the groups' sizes and the table names them (a sentence of 20 model names
is not read)."""


def rates_interval_basis(results: Results) -> str:
    """What the evaluation's rate intervals account for, as its grade summaries say."""
    bases = sorted({s.grades.interval_basis for s in results.setups.values()} - {""})
    return "; ".join(bases) or f"clustered by question, R = {results.plan.repeats}"


def level_text(level: float | None) -> str:
    """An interval's confidence level as a percentage: 95%, 99.17%, 99.9998%."""
    if level is None:
        return "—"
    for digits in (4, 6, 10):
        text = f"{level * 100:.{digits}g}"
        if text != "100":
            return text + "%"
    return "100%"


def headline_view(results: Results, grades: pl.DataFrame, comparisons: pl.DataFrame,
                  reliability: pl.DataFrame, compared: Sequence[str]) -> HeadlineView:
    """The headline: the best setup on the resolved rate and its margin over the next with
    its interval and Holm-adjusted p, the statistically tied groups, the setups not ranked;
    and a table of every ranked setup by group, then resolved rate (group, resolved rate
    with its interval, N, Holm-adjusted p against the best). Read from the standard's
    frames (``grades``, ``comparisons``: ``ev.comparisons``, ``reliability``) and the plan
    of ``results``."""
    from grade_kit.standard.headline import ALPHA, headline
    from grade_kit.standard.ranking import MIN_RANK_QUESTIONS

    figures = headline(grades, comparisons, list(compared))
    setups = results.setups
    unranked = results.plan.unranked
    sentences: list[str] = []
    on_all = {row["setup"]: row for row in grades.filter(pl.col("subset") == "all").select(
        "setup", "N", "resolved_rate", "resolved_ci_low", "resolved_ci_high")
        .iter_rows(named=True)}

    def rate(name: str) -> str:
        g = on_all[name]
        r, low = g["resolved_rate"], g["resolved_ci_low"]
        return ("—" if r is None else f"{r:.3f}"
                + ("" if low is None else f" [{low:.3f}, {g['resolved_ci_high']:.3f}]")
                + f" of N = {g['N']:,}")

    if not figures.order:
        sentences.append("No setup is ranked: " + ("each ran less than "
                         f"{results.plan.coverage_min:.0%} of its planned slots."
                         if unranked else "there is no setup."))
    elif figures.runner_up is None:
        sentences.append(f"«{figures.order[0]}» is the only ranked setup: resolved "
                         f"{rate(figures.order[0])}.")
    else:
        best, second = figures.best, figures.runner_up
        assert best is not None and second is not None
        between = figures.order[1:figures.order.index(second)]
        sentences.append(f"«{best}» has the highest resolved rate, {rate(best)}; next is "
                         f"«{second}», {rate(second)}"
                         + (" (the next that ran any of its questions: "
                            + ", ".join(f"«{s}»" for s in between) + " ran none of them, "
                            "and rates over other questions are not compared)"
                            if between else "") + ".")
        if figures.margin is None:
            sentences.append("Their difference is untested: no question was run by both.")
        else:
            interval = ("no interval" if figures.margin_ci is None else
                        f"interval [{figures.margin_ci[0]:+.3f}, {figures.margin_ci[1]:+.3f}] "
                        f"at {level_text(figures.margin_level)}, the paired test's Holm "
                        "level")
            verdict = ("a significant lead" if figures.significant else
                       f"not significant at the {ALPHA:g} level: the two are statistically "
                       "tied")
            way = "higher" if figures.margin >= 0 else "lower"
            n = figures.questions or 0
            few = (f" They ran only {n} question{'' if n == 1 else 's'} in common, fewer "
                   f"than {MIN_RANK_QUESTIONS}: too few to separate setups."
                   if n < MIN_RANK_QUESTIONS else "")
            sentences.append(
                f"On the {n:,} question{'' if n == 1 else 's'} both ran, the resolved rate of "
                f"«{best}» is {way} by {abs(figures.margin):.3f} ({interval}) than that of "
                f"«{second}» (paired test, Holm-adjusted "
                f"p {p_text(figures.p_holm, 'untested')}): {verdict}.{few}")
        repeats = results.plan.repeats
        if repeats > 1:
            at_r = {row["setup"]: row for row in reliability.filter(
                (pl.col("subset") == "all") & (pl.col("k") == repeats)).iter_rows(named=True)}

            def stable(name: str) -> str:
                point = at_r.get(name)
                return ("—" if point is None else f"{point['pass_hat_k']:.3f} "
                        f"[{point['pass_hat_k_low']:.3f}, {point['pass_hat_k_high']:.3f}]")
            sentences.append(f"Resolved in every one of the R = {repeats} repeats (pass^"
                             f"{repeats}): «{best}» {stable(best)}, «{second}» "
                             f"{stable(second)}.")
        rule = (f"each led by the best setup left; a setup joins when its Holm-adjusted "
                f"paired test against the leader gives p ≥ {ALPHA:g}; setups with no "
                "question in common are never tied")
        if len(figures.order) <= NAMED_SETUPS:
            groups = "; ".join(f"{k}. " + ", ".join(f"«{s}»" for s in tier)
                               for k, tier in enumerate(figures.tiers, start=1))
            sentences.append(f"Statistically tied groups ({rule}): {groups}.")
        else:
            sizes = ", ".join(str(len(tier)) for tier in figures.tiers)
            sentences.append(f"{len(figures.order)} ranked setups fall into "
                             f"{len(figures.tiers)} statistically tied groups of {sizes} "
                             f"({rule}); the table gives each setup's group.")
    if unranked:
        sentences.append("Not ranked, coverage below "
                         f"{results.plan.coverage_min:.0%} of the planned slots: "
                         + ", ".join(f"«{s}»" for s in sorted(unranked)) + ".")
    skipped = [s for s in setups if s not in compared and s not in unranked]
    if skipped:
        sentences.append(f"{len(skipped):,} more ranked setups are summarised but not "
                         "compared (only the 20 with the highest resolved rate are).")
    group_of = {s: k for k, tier in enumerate(figures.tiers, start=1) for s in tier}
    ranked = sorted(figures.order, key=lambda s: group_of[s])  # by group, then rate
    frame = pl.DataFrame({
        "group": [group_of[s] for s in ranked], "setup": ranked,
        **{c: [on_all[s][c] for s in ranked]
           for c in ("N", "resolved_rate", "resolved_ci_low", "resolved_ci_high")},
        "p_holm_vs_best": [figures.p_vs_best.get(s) for s in ranked]},
        schema={"group": pl.Int64, "setup": pl.String, "N": grades.schema["N"],
                **{c: pl.Float64 for c in ("resolved_rate", "resolved_ci_low",
                                           "resolved_ci_high", "p_holm_vs_best")}})
    rows = ranked
    table = Table(frame, "The answer: resolved rate, ranked setups",
                  "Groups: statistically tied setups (Holm-adjusted paired tests on the "
                  f"questions both ran, level {ALPHA:g}); p against the best is the same "
                  "test the comparisons table and the significance matrix show.")
    return HeadlineView(sentences, table if len(rows) > 1 else None, list(setups))


_LOG_PREFIX = re.compile(r"^(?P<file>[^\s:]+\.(?:eval|json|jsonl|csv|yaml|yml)): ")
_FIGURES = re.compile(r"\d+(?:[.,]\d+)*")


def inputs_folder(results: Results) -> str | None:
    """The folder every input file is under (the common folder of their folders), from the
    provenance; None when no input is a file with an absolute path, or the only such folder
    is the file system's root."""
    folders = [os.path.dirname(f.path) for f in results.provenance.inputs
               if f.path and os.path.isabs(f.path)]
    try:
        common = os.path.commonpath(folders) if folders else None
    except ValueError:  # paths on two drives
        return None
    return None if common is None or common == os.path.dirname(common) else common


def input_name(path: str, folder: str | None) -> str:
    """How a page names an input file: relative to the inputs' ``folder``
    (:func:`inputs_folder`), else by its name; never by an absolute path."""
    if folder and path.startswith(folder.rstrip(os.sep) + os.sep):
        return path[len(folder.rstrip(os.sep)) + 1:]
    return os.path.basename(path) if os.path.isabs(path) else path


def relative_to_inputs(frame: pl.DataFrame, results: Results | None) -> pl.DataFrame:
    """``frame`` with every input file's path in its text columns (a reject's source, a
    warning naming a file) as a page names it (:func:`input_name`), and the inputs' folder
    dropped wherever else it occurs; as it is without ``results``."""
    if results is None:
        return frame
    folder = inputs_folder(results)
    paths = sorted({f.path for f in results.provenance.inputs
                    if f.path and os.path.isabs(f.path)}, key=len, reverse=True)
    text = [c for c, dtype in frame.schema.items() if dtype == pl.String]

    # one pass over each text, whatever the number of files: an automaton of every path
    # that takes the first listed of those matching at a place, the longest first, so no
    # path is cut inside a longer one; then the folder wherever else it occurs
    names = [input_name(path, folder) for path in paths]

    def named(column: pl.Expr) -> pl.Expr:
        if paths:
            column = column.str.replace_many(paths, names, leftmost=True)
        if folder:
            column = column.str.replace_all(folder.rstrip(os.sep) + os.sep, "", literal=True)
        return column

    return frame.with_columns(named(pl.col(c)).alias(c) for c in text)


def rejected_table(rejected: pl.DataFrame | pd.DataFrame,
                   results: Results | None = None) -> Table:
    """``ev.rejected`` for a page: every rejected record, its source relative to the folder
    of ``results``' inputs (:func:`relative_to_inputs`; without ``results``, as given)."""
    return Table(relative_to_inputs(to_polars(rejected), results),
                 empty="No input record was rejected.")


_SETUP_PREFIX = re.compile(r"^setup (?P<q>['\"])(?P<setup>.*?)(?P=q): ")
"""A warning about one setup starts ``setup 'name': ``."""


def warnings_table(warnings: pl.DataFrame | pd.DataFrame,
                   results: Results | None = None) -> Table:
    """The warnings grouped by kind for a page (``ev.warnings`` keeps every one): messages
    that differ only in the file they name (a ``file.json: `` prefix), the setup they are
    about (a ``setup 'name': `` prefix) and their figures are one row, with how many there
    are, every file and every setup named once, and the first message in full (without its
    setup, which the setups column names). Files relative to the folder of ``results``'
    inputs (:func:`relative_to_inputs`; without ``results``, as given)."""
    frame = relative_to_inputs(to_polars(warnings), results)
    rows: dict[str, dict[str, Any]] = {}
    for message in frame.get_column("message").to_list() if frame.height else []:
        text = str(message)
        match = _LOG_PREFIX.match(text)
        rest = text[match.end():] if match else text
        about = _SETUP_PREFIX.match(rest)
        if about:
            rest = rest[about.end():]
            text = (text[:match.end()] if match else "") + rest
        kind = _FIGURES.sub("#", rest)
        row = rows.setdefault(kind, {"warning": text, "count": 0, "files": [], "setups": []})
        row["count"] += 1
        if match and match.group("file") not in row["files"]:
            row["files"].append(match.group("file"))
        if about and about.group("setup") not in row["setups"]:
            row["setups"].append(about.group("setup"))
    shown = pl.DataFrame(
        [{"warning": r["warning"], "count": r["count"],
          "setups": ", ".join(r["setups"]) or None,
          "files": ", ".join(r["files"]) or None} for r in rows.values()],
        schema={"warning": pl.String, "count": pl.Int64, "setups": pl.String,
                "files": pl.String})
    for column in ("setups", "files"):  # no warning names one: no column to say so
        if shown.height and shown.get_column(column).null_count() == shown.height:
            shown = shown.drop(column)
    note = (f"{frame.height:,} warnings in {shown.height:,} kinds; messages that differ "
            "only in their file, setup and figures are one row, the first shown ("
            + where_to_look("ev.warnings lists every one", "results.json lists every one")
            + ")." if shown.height < frame.height else None)
    return Table(shown, "Warnings", note, empty="No warning.", ordered=True)


BY_CONSTRUCTION = (*(f"{state}_rate" for state in GRADE_STATES), "pass_hat_k")
"""The figures fixed on the common subset by how it is chosen (docs/methodology.md §5
"Common subset"): every slot resolved, so 1 or 0 for every setup."""

COMMON_BY_CONSTRUCTION = ("On the common subset every slot is resolved by every setup (that "
                          "is how it is chosen), so its grade rates and pass^k are 1 or 0 by "
                          "construction:")


def grades_table(grades: pl.DataFrame | pd.DataFrame) -> Table:
    """``ev.grades`` for a page: every setup's grades on all questions; the common subset's
    rows, whose rates are 1 or 0 by construction (docs/methodology.md §5 "Common subset"),
    left out with one line saying so and how many questions and slots it holds (its timing,
    tool calls and composite are in their own tables)."""
    frame = to_polars(grades)
    common = frame.filter(pl.col("subset") == "common") if frame.height else frame
    if not common.height:
        return Table(frame, "Grades per setup")
    questions, slots = common.select(pl.col("questions").max(), pl.col("N").max()).row(0)
    note = (f"{COMMON_BY_CONSTRUCTION} its rows ({questions:,} questions, {slots:,} slots per "
            "setup) are not shown." if questions else
            "The common subset is empty (no question has every slot resolved by every "
            "setup): its rows are not shown.")
    return Table(frame.filter(pl.col("subset") != "common"), "Grades per setup", note)


NO_COST = ("No cost: no run records tokens or a cost (the logs carry no usage, or the "
           "endpoint returned none).")
"""Why token and cost figures do not exist."""


def cost_table(cost: pl.DataFrame | pd.DataFrame, subset: str = "all") -> Table:
    """``ev.cost`` for a page (docs/methodology.md §4 "Cost"): per setup on ``subset`` (default
    all questions), dollars per run, per question and per resolved question with their
    question-clustered bootstrap intervals, the total, tokens per run, how many runs have a
    cost, the share of resamples on the cost-accuracy frontier, where the costs came from and
    why a run has none (never priced at 0)."""
    frame = to_polars(cost)
    frame = frame.filter(pl.col("subset") == subset) if frame.height else frame
    if not frame.height or not frame.select(
            pl.col("runs_with_tokens").sum() + pl.col("runs_with_cost").sum()).item():
        return Table(frame, absent=NO_COST)
    shown = frame.select(
        "setup", "runs", "runs_with_cost",
        cost_per_run=pl.col("cost_per_run_mean"), cost_per_run_ci_low="cost_per_run_ci_low",
        cost_per_run_ci_high="cost_per_run_ci_high",
        cost_per_question="cost_per_question", cost_per_question_ci_low="cost_per_question_ci_low",
        cost_per_question_ci_high="cost_per_question_ci_high",
        cost_per_resolved="cost_per_resolved",
        cost_per_resolved_ci_low="cost_per_resolved_ci_low",
        cost_per_resolved_ci_high="cost_per_resolved_ci_high",
        cost_total="cost_total",
        tokens_per_run=pl.col("tokens_per_run_mean"),
        tokens_per_run_ci_low="tokens_per_run_ci_low",
        tokens_per_run_ci_high="tokens_per_run_ci_high",
        p_on_frontier="p_on_frontier", basis="basis", unpriced="unpriced")
    if frame.get_column("runs_with_user_cost").sum():
        shown = shown.with_columns(frame.get_column("user_cost_total"))
    keep = [c for c in shown.columns if shown.get_column(c).null_count() < shown.height
            or c in ("setup", "cost_per_run")]
    where = "all questions" if subset == "all" else "the common subset"
    return Table(shown.select(keep), f"Cost per setup on {where} (dollars)",
                 "Intervals: 95% percentile bootstrap over questions (their repeats resampled "
                 "together). Cost per question: what one question's repeats cost; per resolved "
                 "slot: total / resolved slots (a slot is one repeat of a question). A run "
                 "without a cost is counted in "
                 "'unpriced' with the reason, never priced at 0.")


PAIRED_SETUPS = 4
"""Up to this many setups a page's comparisons (table and chart) show every pair; beyond,
the pairs of each setup with the first of the order (the best), so they grow with setups,
not pairs."""


def diff_table(summary: pl.DataFrame | pd.DataFrame) -> Table:
    """A diff's figures for a page (``d.summary``, docs/methodology.md §5 "Against an
    earlier evaluation"): per matched setup and figure, the baseline's and the candidate's
    value on the paired questions, the change (candidate - baseline) with its interval, the
    Holm-adjusted p where tested and the verdict (the figure's label where it is not
    measured); the candidate's setup shown only where it is named differently; pass^k at
    every k is in ``d.summary``, not here."""
    frame = to_polars(summary)
    frame = frame.filter(pl.col("k").is_null() & (pl.col("label") != "untested direction"))
    renamed = frame.select(
        "setup", "candidate_setup", "metric", "n_questions", "baseline", "candidate",
        "change", "ci_low", "ci_high", "ci_level",
        "p_holm", "verdict")
    if renamed.height and (renamed.get_column("setup")
                           == renamed.get_column("candidate_setup")).all():
        renamed = renamed.drop("candidate_setup")
    return Table(renamed, "Changes: candidate - baseline on the paired questions",
                 "Tested rates: exact paired tests (McNemar at R = 1, sign-flip over questions "
                 "at R > 1), each figure Holm-adjusted across the matched setups; the "
                 "interval is the test inverted at its Holm level. E2E, tool calls and the "
                 "composite: 95% bootstrap interval over paired questions, no test.",
                 ordered=True)


def comparisons_table(comparisons: pl.DataFrame | pd.DataFrame, subset: str = "all",
                      order: Sequence[str] | None = None, *,
                      absent: str | None = None) -> Table:
    """The comparisons of one subset for a page: every pair up to :data:`PAIRED_SETUPS`
    setups; beyond, only each setup's pair with the first of ``order`` (default by name),
    as compared - baseline like every pair (``ev.comparisons`` and the significance matrix hold them
    all). ``absent``: as for :func:`table`."""
    frame = to_polars(comparisons)
    rows = frame.filter(pl.col("subset") == subset) if frame.height else frame
    names = sorted(set(rows.get_column("baseline").to_list())
                   | set(rows.get_column("compared").to_list())) if rows.height else []
    note = None
    if len(names) > PAIRED_SETUPS:
        best = next((s for s in (order or []) if s in names), names[0])
        rows = rows.filter((pl.col("baseline") == best) | (pl.col("compared") == best))
        note = (f"{len(names)} setups: each one's pair with {best} (the best by resolved "
                "rate); every pair is in "
                + where_to_look("ev.comparisons", "results.json")
                + ", and the significance matrix tests "
                "them all.")
    if subset == "common" and rows.height:  # docs/methodology.md §5 "Common subset"
        constant = pl.col("metric").is_in(list(BY_CONSTRUCTION))
        if rows.filter(constant).height:
            rows = rows.filter(~constant)
            note = " ".join(filter(None, [note, COMMON_BY_CONSTRUCTION
                                          + " their differences, all 0, are not shown."]))
    # the pair first however few columns have values (a subset with no tested pair shows
    # as few as eight): both subsets' tables read alike
    rows = rows.select(key_columns_first(rows.columns, wide=0))
    return Table(rows, f"Comparisons on {subset} questions", note, absent)
