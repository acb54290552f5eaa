"""Altair chart builders over the frames of :func:`grade_kit.evaluate` (``ev.leaderboard``,
``ev.tracks``, ``ev.grades``, ``ev.runs``, ``ev.timing``, ``ev.tasks``, ``ev.comparisons``).

Every builder takes a polars or pandas frame with the documented columns and returns a chart
with a title, axis units, tooltips and the Okabe-Ito colour-blind-safe palette. Charts over
runs aggregate first (an ECDF at fixed quantiles, counts per value), so no chart ever holds
more than a few thousand rows and none silently drops any: Altair's 5,000-row limit is never
reached, whatever the number of runs.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from typing import Any, Literal, cast

import altair as alt
import pandas as pd
import polars as pl

from grade_kit.frames import to_polars
from grade_kit.presentation.embed import VEGA_MIME, vega_embed_html
from grade_kit.schema import COVERAGE_MIN, DIMENSIONS, GRADE_STATES, SHORT_LABELS
from grade_kit.views.tables import (
    NO_COMPARISON,
    NO_COST,
    NO_GRADE,
    NO_TOOL_CALLS,
    OFFLINE_ENV,
    PAIRED_SETUPS,
    absent_html,
    column_label,
    first_named,
    no_timing,
    p_precise_column,
)
from grade_kit.views.tables import setup_order as setup_order  # every chart's order, here too

PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000"]
"""Okabe-Ito without its yellow (too faint on white): distinguishable with every common
colour-vision deficiency. Beyond seven setups the colours repeat and a second encoding (a
line's dash, a point's shape) tells the setups apart."""

COLOUR_NAMES = {"#0072B2": "blue", "#E69F00": "orange", "#009E73": "bluish green",
                "#CC79A7": "reddish purple", "#56B4E9": "sky blue", "#D55E00": "vermillion",
                "#000000": "black"}
"""Each colour of :data:`PALETTE` in words, as Okabe and Ito name them: what a table says."""

DASHES = [[1, 0], [6, 3], [2, 2], [8, 3, 2, 3]]
SHAPES = ["circle", "square", "triangle-up", "diamond"]
LABEL_CHARS = 30
"""The longest setup label a chart shows (full names in tooltips and in the legend table)."""

STATE_COLOURS = {"resolved": "#009E73", "partially_resolved": "#56B4E9",
                 "material_error": "#D55E00", "unresolved": "#E69F00",
                 "pending_verification": "#CC79A7", "not_run": "#999999"}

ECDF_POINTS = 101
"""An ECDF is drawn at the 0th, 1st, ..., 100th percentile of each setup's sample."""


Chart = alt.Chart | alt.LayerChart | alt.FacetChart | alt.VConcatChart
"""What every builder returns: a single, layered, faceted or stacked Altair chart."""


def short_labels(names: Sequence[str]) -> dict[str, str]:
    """A short, unique label per setup name, the same rule for every name on every page: the
    name after its last ``/`` (the vendor or provider path dropped; the model's family,
    version and any bracketed configuration kept), cut in the middle to
    :data:`LABEL_CHARS`; where that is not unique, the uncut short names; where those are
    not unique either, the full names."""
    names = list(dict.fromkeys(names))
    short = {n: n.rsplit("/", 1)[-1] or n for n in names}
    if len(set(short.values())) < len(names):
        return {n: n for n in names}
    cut = {n: _middle_cut(s) for n, s in short.items()}
    return cut if len(set(cut.values())) == len(names) else short


def _middle_cut(text: str) -> str:
    if len(text) <= LABEL_CHARS:
        return text
    keep = LABEL_CHARS - 1
    return text[:keep - keep // 2] + "…" + text[len(text) - keep // 2:]


def legend_table(order: Sequence[str]) -> pl.DataFrame:
    """Each setup's short label, full name and colour in words (:data:`COLOUR_NAMES`), in
    ``order`` (one table for the page; charts show the labels)."""
    labels = short_labels(order)
    return pl.DataFrame({"label": [labels[s] for s in order], "setup": list(order),
                         "colour": [COLOUR_NAMES[PALETTE[i % len(PALETTE)]]
                                    for i in range(len(order))]},
                        schema={"label": pl.String, "setup": pl.String, "colour": pl.String})


def _order(frame: pl.DataFrame, order: Sequence[str] | None) -> list[str]:
    """``order`` with any setup of ``frame`` it lacks appended (sorted); default the frame's
    setups sorted by name."""
    present = sorted(set(frame.get_column("setup").to_list()))
    given = list(order or [])
    return given + [s for s in present if s not in given]


def _labelled(frame: pl.DataFrame, order: list[str]) -> pl.DataFrame:
    """``frame`` with each setup's short label (``label``) beside its full name."""
    labels = short_labels(order)
    return frame.with_columns(label=pl.col("setup").replace_strict(
        labels, default=pl.col("setup"), return_dtype=pl.String))


def _setup_colour(order: list[str]) -> alt.Color:
    """One colour per setup, the same on every chart given the same ``order``."""
    labels = short_labels(order)
    domain = [labels[s] for s in order]
    return alt.Color("label:N", title="setup", sort=domain,
                     scale=alt.Scale(domain=domain, range=[
                         PALETTE[i % len(PALETTE)] for i in range(max(1, len(domain)))]),
                     legend=alt.Legend(labelLimit=260, symbolLimit=0))


def _setup_axis(order: list[str], channel: type[Any] = alt.Y) -> Any:
    """A setup axis (labels, in ``order``); an offset channel has no axis of its own."""
    labels = short_labels(order)
    sort = [labels[s] for s in order]
    if channel is alt.XOffset:
        return channel("label:N", sort=sort, title=None)
    return channel("label:N", sort=sort, title=None, axis=alt.Axis(labelLimit=260))


def _second(order: list[str]) -> dict[str, Any]:
    """Beyond the palette's colours, a dash per setup (for lines); empty otherwise."""
    return _beyond_palette(order, "strokeDash", alt.StrokeDash, DASHES)


def _shape(order: list[str]) -> dict[str, Any]:
    """Beyond the palette's colours, a shape per setup (for points); empty otherwise."""
    return _beyond_palette(order, "shape", alt.Shape, SHAPES)


def _beyond_palette(order: list[str], name: str, channel: Any,
                    values: Sequence[Any]) -> dict[str, Any]:
    """A second encoding of the setups (the colours repeat past the palette: each repeat of
    a colour gets the next of ``values``); empty with no more setups than colours."""
    if len(order) <= len(PALETTE):
        return {}
    labels = short_labels(order)
    domain = [labels[s] for s in order]
    # the same legend as the colour's (one legend: each setup's colour with its dash or
    # shape); a legend left out here would conflict with it (a Vega warning)
    return {name: channel("label:N", sort=domain, title="setup",
                          legend=alt.Legend(labelLimit=260, symbolLimit=0),
                          scale=alt.Scale(domain=domain,
                                          range=[values[(i // len(PALETTE)) % len(values)]
                                                 for i in range(len(domain))]))}


MAX_TICKS = 2_000
"""The most tasks a consistency chart draws one by one; beyond, it shows each setup's
distribution in bins of 0.02 (and says so)."""


Order = Sequence[str] | None
"""Setups in the order (and colours) every chart of an evaluation shares
(:func:`setup_order`); None: each chart's own setups by name."""


def composite_chart(leaderboard: pl.DataFrame | pd.DataFrame, order: Order = None) -> Chart:
    """The GRADE composite per setup, with how many dimensions it is over (one line saying
    why, where no setup has a composite)."""
    lb = to_polars(leaderboard).select("setup", "composite", "dimensions_computed", "tasks")
    if lb.get_column("composite").null_count() == lb.height:
        return _note("GRADE composite per setup", NO_GRADE)
    setups = _order(lb, order)
    chart = alt.Chart(_labelled(lb, setups).to_pandas(), title="GRADE composite per setup"
                      ).mark_bar().encode(
        x=alt.X("composite:Q", title="composite (0-1)", scale=alt.Scale(domain=[0, 1])),
        y=_setup_axis(setups), color=_setup_colour(setups),
        tooltip=["setup", alt.Tooltip("composite:Q", format=".3f"),
                 alt.Tooltip("dimensions_computed:Q", title="over dimensions"), "tasks"],
    )
    return cast(Chart, chart)


def dimensions_chart(leaderboard: pl.DataFrame | pd.DataFrame, order: Order = None) -> Chart:
    """The six GRADE dimensions per setup (a missing dimension is absent, never 0)."""
    lb = to_polars(leaderboard)
    long = lb.unpivot(index="setup", on=list(DIMENSIONS), variable_name="dimension",
                      value_name="score").drop_nulls("score").with_columns(
        dimension_label=pl.col("dimension").replace_strict(SHORT_LABELS))
    if not long.height:
        return _note("GRADE dimensions per setup", NO_GRADE)
    setups = _order(lb, order)
    chart = alt.Chart(_labelled(long, setups).to_pandas(), title="GRADE dimensions per setup"
                      ).mark_bar().encode(
        x=alt.X("dimension_label:N", title="dimension",
                sort=[SHORT_LABELS[d] for d in DIMENSIONS]),
        xOffset=_setup_axis(setups, alt.XOffset),
        y=alt.Y("score:Q", title="score (0-1)", scale=alt.Scale(domain=[0, 1])),
        color=_setup_colour(setups),
        tooltip=["setup", "dimension", alt.Tooltip("score:Q", format=".3f")],
    )
    return cast(Chart, chart)


def track_heatmap(tracks: pl.DataFrame | pd.DataFrame, order: Order = None) -> Chart:
    """Track x dimension heatmap, one panel per setup."""
    frame = to_polars(tracks)
    long = frame.unpivot(index=["setup", "track"], on=list(DIMENSIONS),
                         variable_name="dimension", value_name="score").drop_nulls("score")
    if not long.height:
        return _note("Dimensions by track", NO_GRADE)
    setups = _order(long, order)
    labels = short_labels(setups)
    long = _labelled(long, setups).with_columns(
        dimension_label=pl.col("dimension").replace_strict(SHORT_LABELS),
        track=pl.col("track").cast(pl.String))
    chart = alt.Chart(long.to_pandas(), title="Dimensions by track").mark_rect().encode(
        x=alt.X("dimension_label:N", title="dimension",
                sort=[SHORT_LABELS[d] for d in DIMENSIONS]),
        y=alt.Y("track:O", title="track"),
        color=alt.Color("score:Q", title="score", scale=alt.Scale(scheme="viridis",
                                                                   domain=[0, 1])),
        facet=alt.Facet("label:N", title=None, columns=3, sort=[labels[s] for s in setups]),
        tooltip=["setup", "track", "dimension", alt.Tooltip("score:Q", format=".3f")],
    )
    return cast(Chart, chart)


def grade_distribution_chart(grades: pl.DataFrame | pd.DataFrame, subset: str = "all",
                             order: Order = None) -> Chart:
    """Slots per grade state as stacked bars over N (pending and not run shown), each state
    named in words (``partially resolved``, ``not run``)."""
    frame = to_polars(grades).filter(pl.col("subset") == subset)
    words = {state: state.replace("_", " ") for state in GRADE_STATES}
    long = frame.unpivot(index=["setup", "N"], on=list(GRADE_STATES), variable_name="state",
                         value_name="slots").with_columns(
        pl.col("state").replace_strict(words, return_dtype=pl.String))
    states = list(words.values())
    setups = _order(frame, order)
    chart = alt.Chart(_labelled(long, setups).to_pandas(),
                      title=f"Grades over N = questions x repeats ({subset} questions)"
                      ).mark_bar().encode(
        x=alt.X("slots:Q", title="slots (of N)", stack="zero"),
        y=_setup_axis(setups),
        color=alt.Color("state:N", title="state", sort=states,
                        scale=alt.Scale(domain=states,
                                        range=[STATE_COLOURS[s] for s in GRADE_STATES])),
        order=alt.Order("state_rank:Q"),
        tooltip=["setup", "state", "slots", "N"],
    ).transform_calculate(state_rank=f"indexof({states!r}, datum.state)")
    return cast(Chart, chart)


def rates_chart(grades: pl.DataFrame | pd.DataFrame, state: str = "resolved",
                subset: str = "all", order: Order = None) -> Chart:
    """One grade rate per setup with its 95% Wilson interval over its clustered effective
    size (the frame's ``interval_basis``, docs/methodology.md §4 "Rates"). A setup below the
    coverage threshold (``run_coverage``, docs/methodology.md §4 "Coverage") is not drawn:
    its rate over N is mostly not-run slots, not a measurement; the title names it."""
    rows = to_polars(grades).filter(pl.col("subset") == subset)
    unranked: list[str] = []
    if "run_coverage" in rows.columns:
        low_coverage = pl.col("run_coverage").fill_null(0.0) < COVERAGE_MIN
        unranked = rows.filter(low_coverage).get_column("setup").to_list()
        rows = rows.filter(~low_coverage)
    frame = rows.select(
        "setup", "N", rate=pl.col(f"{state}_rate"), low=pl.col(f"{state}_ci_low"),
        high=pl.col(f"{state}_ci_high"))
    setups = [s for s in _order(frame, order) if s not in unranked]
    base = alt.Chart(_labelled(frame, setups).to_pandas())
    points = base.mark_point(filled=True, size=70).encode(
        x=alt.X("rate:Q", title=f"{state.replace('_', ' ')} rate",
                scale=alt.Scale(domain=[0, 1])),
        y=_setup_axis(setups), color=_setup_colour(setups), **_shape(setups),
        tooltip=["setup", "N", alt.Tooltip("rate:Q", format=".3f"),
                 alt.Tooltip("low:Q", format=".3f", title="95% low"),
                 alt.Tooltip("high:Q", format=".3f", title="95% high")])
    bars = base.mark_rule().encode(x="low:Q", x2="high:Q", y=_setup_axis(setups),
                                   color=_setup_colour(setups))
    basis = (rows.get_column("interval_basis")[0] if "interval_basis" in rows.columns
             and rows.height else "over N")
    title = (f"{state.replace('_', ' ')} rate with 95% Wilson interval, {basis} "
             f"({subset} questions)")
    return cast(Chart, alt.layer(bars, points).properties(
        title=alt.TitleParams(title, subtitle=[
            f"Not ranked (coverage below {COVERAGE_MIN:.0%}), not drawn: "
            + ", ".join(unranked)]) if unranked else title))


def frontier_chart(cost: pl.DataFrame | pd.DataFrame, grades: pl.DataFrame | pd.DataFrame,
                   order: Order = None) -> Chart:
    """The cost-accuracy frontier on all questions (docs/methodology.md §4 "The frontier"):
    each compared setup's cost per question (x, with its question-clustered bootstrap 95%
    interval) against its resolved rate (y, with its Wilson interval), the frontier's setups
    joined by a line, and in the tooltip each setup's share of resamples on the frontier."""
    rows = to_polars(cost)
    rows = rows.filter((pl.col("subset") == "all") & pl.col("cost_per_question").is_not_null()
                       & pl.col("on_frontier").is_not_null()) if rows.height else rows
    if not rows.height:
        return _note("Cost-accuracy frontier", NO_COST if not to_polars(cost).height else
                     "No compared setup has a cost per question: no cost logged, and no "
                     "price for its models (give a price file: --prices).")
    rates = to_polars(grades).filter(pl.col("subset") == "all").select(
        "setup", rate="resolved_rate", rate_low="resolved_ci_low", rate_high="resolved_ci_high")
    frame = rows.select(
        "setup", "on_frontier", "p_on_frontier", "runs_with_cost", cost="cost_per_question",
        cost_low=pl.coalesce("cost_per_question_ci_low", "cost_per_question"),
        cost_high=pl.coalesce("cost_per_question_ci_high", "cost_per_question"),
    ).join(rates, on="setup", how="left").with_columns(
        frontier=pl.when(pl.col("on_frontier")).then(pl.lit("on the frontier"))
        .otherwise(pl.lit("dominated")))
    setups = _order(frame, order)
    base = alt.Chart(_labelled(frame, setups).to_pandas())
    x = alt.X("cost:Q", title="dollars per question (all its repeats)",
              scale=alt.Scale(zero=True), axis=alt.Axis(format="$.3g"))
    y = alt.Y("rate:Q", title="resolved rate", scale=alt.Scale(domain=[0, 1]))
    tooltip = ["setup", alt.Tooltip("cost:Q", format="$.4g", title="$ per question"),
               alt.Tooltip("cost_low:Q", format="$.4g", title="95% low"),
               alt.Tooltip("cost_high:Q", format="$.4g", title="95% high"),
               alt.Tooltip("rate:Q", format=".3f", title="resolved rate"),
               alt.Tooltip("rate_low:Q", format=".3f", title="Wilson low"),
               alt.Tooltip("rate_high:Q", format=".3f", title="Wilson high"),
               "frontier", alt.Tooltip("p_on_frontier:Q", format=".0%",
                                       title="P(on frontier)"),
               alt.Tooltip("runs_with_cost:Q", title="runs with a cost")]
    line = alt.Chart(frame.filter(pl.col("on_frontier")).sort("cost").to_pandas()).mark_line(
        color="#999999", strokeDash=[4, 3]).encode(x="cost:Q", y="rate:Q")
    across = base.mark_rule().encode(x="cost_low:Q", x2="cost_high:Q", y=y,
                                     color=_setup_colour(setups))
    up = base.mark_rule().encode(x=x, y="rate_low:Q", y2="rate_high:Q",
                                 color=_setup_colour(setups))
    marks = {"filled": (True, "datum.on_frontier"), "hollow": (False, "!datum.on_frontier")}
    points = [base.transform_filter(keep).mark_point(size=110, filled=filled, strokeWidth=2,
                                                     opacity=1).encode(
        x=x, y=y, color=_setup_colour(setups), **_shape(setups), tooltip=tooltip)
        for filled, keep in marks.values()]
    return cast(Chart, alt.layer(line, across, up, *points).properties(
        title=alt.TitleParams("Cost and accuracy: the frontier (filled: not dominated)",
                              subtitle=["Bars: 95% intervals (cost: bootstrap over questions;",
                                        "rate: Wilson). Tooltip: P(on frontier), the share of",
                                        "2,000 resamples in which no setup is cheaper and",
                                        "at least as accurate."])))


def reliability_chart(reliability: pl.DataFrame | pd.DataFrame, subset: str = "all",
                      order: Order = None) -> Chart:
    """pass^k (every one of k repeats resolved) and pass@k (at least one) against k per
    setup, side by side, each with its clustered 95% Wilson band (docs/methodology.md §4
    "Reliability"): how fast pass^k falls is how much a setup's success depends on the
    draw. With one repeat per question, one line saying so (both are the resolved rate)."""
    rows = to_polars(reliability).filter(pl.col("subset") == subset)
    title = f"Reliability by k ({subset} questions)"
    if not rows.height or rows.get_column("k").max() == 1:
        return _note(title, "One repeat per question: pass^1 and pass@1 are the resolved rate "
                            "(above); run questions more than once to measure reliability.")
    long = pl.concat([
        rows.select("setup", "k", "questions", pl.lit(label).alias("measure"),
                    value=pl.col(column), low=pl.col(f"{column}_low"),
                    high=pl.col(f"{column}_high"))
        for column, label in (("pass_hat_k", "pass^k: all k repeats resolved"),
                              ("pass_at_k", "pass@k: at least one of k resolved"))])
    setups = _order(long, order)
    base = alt.Chart().encode(x=alt.X("k:O", title="k (repeats drawn)",
                                      axis=alt.Axis(labelAngle=0)),
                              color=_setup_colour(setups))
    # the band's opacity as an encoding: the legend selection keeps it (_select_setups)
    band = base.mark_area().encode(y="low:Q", y2="high:Q", opacity=alt.value(0.18))
    lines = base.mark_line(point=True).encode(
        y=alt.Y("value:Q", title="share of questions", scale=alt.Scale(domain=[0, 1])),
        tooltip=["setup", "measure", "k", "questions",
                 alt.Tooltip("value:Q", format=".3f"),
                 alt.Tooltip("low:Q", format=".3f", title="95% low"),
                 alt.Tooltip("high:Q", format=".3f", title="95% high")])
    return cast(Chart, alt.layer(band, lines, data=_labelled(long, setups).to_pandas())
                .properties(width=260, height=220).facet(
                    column=alt.Column("measure:N", title=None, sort="descending",
                                      header=alt.Header(labelFontWeight="bold")))
                .properties(title=alt.TitleParams(
                    title,
                    subtitle=["Bands: 95% Wilson intervals, clustered by question. "
                              "pass^1 = pass@1 = the resolved rate; pass^R = stable "
                              "resolution."])))


def _ecdf(values: pl.DataFrame, column: str) -> pl.DataFrame:
    """Per setup: the sample of ``column`` at each percentile 0..100 (nearest rank), at most
    101 rows."""
    out = []
    for (setup,), part in values.group_by("setup", maintain_order=True):
        ordered = part.get_column(column).sort().to_list()
        n = len(ordered)
        for q in range(ECDF_POINTS):
            rank = max(1, -(-q * n // (ECDF_POINTS - 1)))
            out.append({"setup": setup, "fraction": q / (ECDF_POINTS - 1),
                        "seconds": ordered[rank - 1], "n": n})
    return pl.DataFrame(out, schema={"setup": pl.String, "fraction": pl.Float64,
                                     "seconds": pl.Float64, "n": pl.Int64})


LATENCY_METRICS = {
    "e2e": ("e2e_s", "e2e", "end-to-end seconds (received - submitted)", "E2E latency"),
    "working": ("working_s", "working", "working seconds (as the source recorded them)",
                "Working time"),
}
"""What :func:`latency_chart` can show: run column, timing-frame prefix, axis and title."""


PERCENTILE_DASHES = ([2, 3], [7, 3])
"""The dash of a latency chart's P50 rule and its P90 rule: told apart with no label over
the curves."""


def _decades(values: list[float]) -> list[float]:
    """The powers of ten a log axis over ``values`` ticks at (1, 10, 100, ...)."""
    low = math.floor(math.log10(min(values)))
    high = math.ceil(math.log10(max(values)))
    return [10.0 ** k for k in range(low, high + 1)]


SPAN_FOR_LOG = 10.0
"""A latency axis is logarithmic when its largest value is more than this times its
smallest (one slow setup would otherwise squash the others into a sliver)."""


def latency_chart(runs: pl.DataFrame | pd.DataFrame, timing: pl.DataFrame | pd.DataFrame,
                  metric: Literal["e2e", "working"] = "e2e", order: Order = None) -> Chart:
    """Latency ECDF per setup (primary runs with a sample), P50 and P90 marked by rules of
    two dashes (:data:`PERCENTILE_DASHES`; no text over the curves);
    a log axis when the values span more than :data:`SPAN_FOR_LOG` times; timeouts, limits
    and failures are never samples: their counts are in the marks' tooltips.

    Args:
        runs: ``ev.runs``.
        timing: ``ev.timing``.
        metric: ``"e2e"`` (default; received - submitted) or ``"working"`` (working time,
            where the source records it; docs/methodology.md §4 "Timing").
        order: The setups' order and colours (:func:`setup_order`); default by name.
    """
    column, prefix, axis, title = LATENCY_METRICS[metric]
    frame = to_polars(runs).filter(pl.col("is_primary") & (pl.col("status") == "delivered")
                                 & pl.col(column).is_not_null())
    if not frame.height:  # one line saying why, never an empty frame
        every = to_polars(timing).filter(pl.col("subset") == "all")
        delivered = int(every.get_column("delivered").sum())
        return _note(title, no_timing(delivered, int(every.get_column(
            "missing_timestamps").sum())) if metric == "e2e" else
            f"No working-time sample: none of {delivered} delivered runs records its "
            "working time.")
    stats = to_polars(timing).filter(pl.col("subset") == "all").select(
        "setup", pl.col(f"{prefix}_n").alias("n"), f"{prefix}_p50", f"{prefix}_p90",
        "timeouts", "limits", "failures")
    setups = _order(stats, order)
    curve = _labelled(_ecdf(frame.select("setup", column), column), setups)
    positive = curve.filter(pl.col("seconds") > 0).get_column("seconds").to_list()
    spans = bool(positive) and max(positive) > SPAN_FOR_LOG * min(positive)
    scale = (alt.Scale(type="symlog" if len(positive) < curve.height else "log")
             if spans else alt.Scale(zero=True))
    lines = alt.Chart(curve.to_pandas()).mark_line(interpolate="step-after").encode(
        x=alt.X("seconds:Q", title=axis + (" (log scale)" if spans else ""), scale=scale,
                axis=alt.Axis(values=_decades(positive)) if spans else alt.Axis()),
        y=alt.Y("fraction:Q", title="share of runs at or below", scale=alt.Scale(
            domain=[0, 1])),
        color=_setup_colour(setups), **_second(setups),
        tooltip=["setup", alt.Tooltip("seconds:Q", format=".2f"),
                 alt.Tooltip("fraction:Q", format=".2f"), "n"])
    marks = _labelled(stats.unpivot(index=["setup", "n", "timeouts", "limits", "failures"],
                                    on=[f"{prefix}_p50", f"{prefix}_p90"],
                                    variable_name="statistic", value_name="seconds")
                      .drop_nulls("seconds").with_columns(
        mark=pl.col("statistic").str.slice(len(prefix) + 1).str.to_uppercase()), setups)
    # P50 and P90 told apart by their dash, never by a label over the curves (a label
    # printed over a line, or over another label, at many setups); values in the tooltips
    rules = [alt.Chart(marks.filter(pl.col("mark") == mark).to_pandas()).mark_rule(
        strokeDash=dash).encode(
        x=alt.X("seconds:Q", scale=scale), color=_setup_colour(setups),
        tooltip=["setup", "statistic", alt.Tooltip("seconds:Q", format=".2f"),
                 alt.Tooltip("n:Q", title="n"), "timeouts", "limits", "failures"])
        for mark, dash in (("P50", PERCENTILE_DASHES[0]), ("P90", PERCENTILE_DASHES[1]))]
    return cast(Chart, alt.layer(lines, *rules).properties(
        title=alt.TitleParams(f"{title} (ECDF)", subtitle=[
            "Dotted: P50; dashed: nearest-rank P90 (values in their tooltips and the table); "
            "timeouts, limits and failures excluded."])))


ABSENT_META = "grade_kit_absent"
"""The key of a note chart's ``usermeta``: why the chart has nothing to draw."""


def _note(title: str, text: str) -> alt.Chart:
    """A chart of one line of text: why a chart has nothing to draw (never an empty axis).
    Its ``usermeta`` carries the sentence: a report page shows it as one marked line of text
    (:func:`~grade_kit.views.tables.absent_html`) instead of a chart."""
    chart = alt.Chart(pd.DataFrame({"text": [text]}), title=title).mark_text(
        align="left", baseline="middle", fontSize=13, x=5).encode(
        text="text:N").properties(width=520, height=30, usermeta={ABSENT_META: text})
    return cast(alt.Chart, chart)


def timing_charts(runs: pl.DataFrame | pd.DataFrame, timing: pl.DataFrame | pd.DataFrame,
                  order: Order = None) -> Chart:
    """The E2E latency ECDF (:func:`latency_chart`) and, below it, the working-time ECDF when
    some delivered primary run records working time. Where a metric has no sample, one line
    says why instead of an empty chart (runs without timestamps: no E2E)."""
    frame = to_polars(timing).filter(pl.col("subset") == "all")
    parts: list[Any] = [latency_chart(runs, timing, order=order)]
    if int(frame.get_column("working_n").sum()):
        parts.append(latency_chart(runs, timing, metric="working", order=order))
    return cast(Chart, parts[0] if len(parts) == 1 else alt.vconcat(*parts))


def tool_calls_chart(runs: pl.DataFrame | pd.DataFrame, order: Order = None) -> Chart:
    """Tool calls (decided per call, docs/methodology.md §4 "Tool calls") per delivered
    primary run that exposed tool events, per setup: the runs and the count the tool-call
    table summarises (runs stopped by a limit, failed or timed out are counted there apart,
    as ``attempted_per_run``): bars side by side, or past the palette's seven setups one row
    of cells per setup (the runs as a shade), so no text shrinks below readable."""
    frame = (to_polars(runs).filter(pl.col("is_primary") & (pl.col("status") == "delivered")
                                    & pl.col("tool_calls").is_not_null())
             .group_by("setup", "tool_calls").len().sort("setup", "tool_calls"))
    if not frame.height:
        return _note("Tool calls per run", NO_TOOL_CALLS)
    if frame.get_column("tool_calls").max() == 0:  # one bar at 0: a line says it
        return _note("Tool calls per run", NO_CALL_MADE.format(
            runs=int(frame.get_column("len").sum())))
    setups = _order(frame, order)
    title = alt.TitleParams("Tool calls per run", subtitle=[
        "Delivered primary runs that exposed tool events, as the table counts them."])
    tooltip = ["setup", alt.Tooltip("tool_calls:Q", title="calls"),
               alt.Tooltip("len:Q", title="runs")]
    data = _labelled(frame, setups).to_pandas()
    if len(setups) > len(PALETTE):  # bars side by side would shrink past readable text
        return cast(Chart, alt.Chart(data, title=title).mark_rect().encode(
            x=alt.X("tool_calls:O", title="tool calls in the run"),
            y=_setup_axis(setups), tooltip=tooltip,
            color=alt.Color("len:Q", title="runs", scale=alt.Scale(scheme="blues")),
        ).properties(height=alt.Step(18)))
    chart = alt.Chart(data, title=title).mark_bar().encode(
        x=alt.X("tool_calls:O", title="tool calls in the run"),
        xOffset=_setup_axis(setups, alt.XOffset),
        y=alt.Y("len:Q", title="runs"), color=_setup_colour(setups), tooltip=tooltip)
    return cast(Chart, chart)


def consistency_chart(tasks: pl.DataFrame | pd.DataFrame, order: Order = None) -> Chart:
    """Consistency per task and setup (null where a task has fewer than 2 runs): one tick a
    task up to :data:`MAX_TICKS` tasks, else each setup's tasks counted in bins of 0.02."""
    frame = to_polars(tasks).select("setup", "task_id", "consistency").drop_nulls("consistency")
    title = "Consistency across repeats, per task"
    if not frame.height:
        return _note(title, "No consistency: no GRADE task has 2 or more runs of one setup."
                     if to_polars(tasks).height else NO_GRADE)
    setups = _order(frame, order)
    if frame.height > MAX_TICKS:
        binned = (frame.with_columns(bin=(pl.col("consistency") * 50).floor().clip(0, 49) / 50)
                  .group_by("setup", "bin").agg(tasks=pl.len()).sort("setup", "bin"))
        chart = alt.Chart(_labelled(binned, setups).to_pandas(), title=(
            f"{title} ({frame.height:,} tasks: counted in bins of 0.02)")).mark_bar().encode(
            x=alt.X("bin:Q", title="consistency (0-1, bins of 0.02)",
                    scale=alt.Scale(domain=[0, 1])),
            y=alt.Y("tasks:Q", title="tasks", stack=None),
            color=_setup_colour(setups), opacity=alt.value(0.7),
            tooltip=["setup", alt.Tooltip("bin:Q", format=".2f", title="from"), "tasks"])
        return cast(Chart, chart)
    chart = alt.Chart(_labelled(frame, setups).to_pandas(), title=title).mark_tick(
        thickness=2).encode(
        x=alt.X("consistency:Q", title="consistency (0-1)", scale=alt.Scale(domain=[0, 1])),
        y=_setup_axis(setups), color=_setup_colour(setups),
        tooltip=["setup", "task_id", alt.Tooltip("consistency:Q", format=".3f")])
    return cast(Chart, chart)


def interval_rule(value: str) -> dict[str, pl.Expr]:
    """The ends of an interval's rule (``rule_low``, ``rule_high``): the interval, or where a
    figure has none (one paired question) the point itself, a rule of no length; so no
    panel's scale is asked to span a field with no value (Vega's "Infinite extent"), and the
    tooltip still reads the interval's own null."""
    return {"rule_low": pl.coalesce("ci_low", value), "rule_high": pl.coalesce("ci_high", value)}


DIFFERENCE = "a stated difference"
UNSIDED_DIFFERENCE = "a difference, neither side better"
NO_DIFFERENCE = "no stated difference"
"""The comparisons chart's colours, the words the table and the headline use: a stated
difference (its ``direction`` column: a grade rate's where its Holm-adjusted paired test has
p < 0.05, a measured figure's where its interval excludes 0; docs/methodology.md §5); a
difference of a figure with no better side (the partially resolved rate: its interval
excludes 0, so its test found one, but no direction is stated); or none (the interval
crosses 0)."""


def comparisons_chart(comparisons: pl.DataFrame | pd.DataFrame,
                      subset: str = "all", order: Order = None) -> Chart:
    """Measured paired differences (compared - baseline) with their intervals, per metric (one line
    saying why, where nothing was measured): a tested figure's interval is its test
    inverted at its Holm level, so it crosses 0 exactly when no difference is stated
    (docs/methodology.md §5 "One verdict"); the others' a 95% bootstrap interval. pass^k is
    drawn at k = R only (every k is in ``ev.comparisons``). Past :data:`PAIRED_SETUPS`
    setups, only each setup against the first of ``order`` (default: by name), as setup -
    it."""
    frame = to_polars(comparisons)
    top_k = (int(cast(int, frame.get_column("k").max())) if "k" in frame.columns
             and frame.get_column("k").drop_nulls().len() else None)
    frame = frame.filter((pl.col("subset") == subset) & (pl.col("label") == "measured"))
    if top_k is not None:  # pass^k at k = R only (every k is in ev.comparisons)
        frame = frame.filter(pl.col("k").is_null() | (pl.col("k") == top_k))
    if not frame.height:
        return _note(f"Paired differences on {subset} questions", NO_COMPARISON)
    # a difference over one question is that question's difference: no spread, and an
    # interval that says nothing (a tested rate's is [-1, 1]): such pairs are left out
    single = frame.filter(pl.col("n_questions") < MIN_DRAWN_QUESTIONS)
    frame = frame.filter(pl.col("n_questions") >= MIN_DRAWN_QUESTIONS)
    lone = sorted({f"{c} - {b}" for c, b in single.select("compared", "baseline").iter_rows()})
    lone_pairs = first_named(lone, sep="; ")
    if not frame.height:
        return _note(f"Paired differences on {subset} questions",
                     ONE_QUESTION.format(pairs=lone_pairs))
    # a metric whose every pair is 0 with no spread (no setup has a material error) draws
    # a column of points on 0: left out, and named in one line
    flat = (frame.group_by("metric").agg(
        flat=(pl.col("mean_diff_b_minus_a").fill_null(0) == 0).all()
        & (pl.col("ci_low").fill_null(0) == 0).all()
        & (pl.col("ci_high").fill_null(0) == 0).all())
        .filter(pl.col("flat")).get_column("metric").sort().to_list())
    frame = frame.filter(~pl.col("metric").is_in(pl.Series(flat, dtype=pl.String).implode()))
    flat_words = ", ".join(column_label(m) for m in flat)
    if not frame.height:
        return _note(f"Paired differences on {subset} questions",
                     f"Every pair's difference is 0 with no spread ({flat_words}).")
    names = sorted(set(frame.get_column("baseline").to_list())
                   | set(frame.get_column("compared").to_list()))
    labels = short_labels(_order(pl.DataFrame({"setup": names}), order))
    against = ""
    if len(names) > PAIRED_SETUPS:
        reference = next(s for s in _order(pl.DataFrame({"setup": names}), order)
                         if s in names)
        against = f"; each setup against {labels[reference]}"
        turned = pl.col("compared") == reference
        frame = frame.filter((pl.col("baseline") == reference) | turned).with_columns(
            compared=pl.when(turned).then(pl.col("baseline")).otherwise(pl.col("compared")),
            baseline=pl.lit(reference),
            mean_diff_b_minus_a=pl.when(turned).then(-pl.col("mean_diff_b_minus_a"))
            .otherwise(pl.col("mean_diff_b_minus_a")),
            ci_low=pl.when(turned).then(-pl.col("ci_high")).otherwise(pl.col("ci_low")),
            ci_high=pl.when(turned).then(-pl.col("ci_low")).otherwise(pl.col("ci_high")))
    words = {m: column_label(m) for m in frame.get_column("metric").unique().to_list()}
    if "pass_hat_k" in words:
        words["pass_hat_k"] = f"pass^{top_k} (resolved in all {top_k} repeats)"
    frame = frame.with_columns(pair=pl.col("compared").replace_strict(labels) + " - "
                               + pl.col("baseline").replace_strict(labels),
                               metric=pl.col("metric").replace_strict(words),
                               finding=pl.when(pl.col("direction").is_not_null())
                               .then(pl.lit(DIFFERENCE))
                               .when((pl.col("ci_low") > 0) | (pl.col("ci_high") < 0))
                               .then(pl.lit(UNSIDED_DIFFERENCE))
                               .otherwise(pl.lit(NO_DIFFERENCE)),
                               **interval_rule("mean_diff_b_minus_a"))
    data: Any = frame.to_pandas()
    base = alt.Chart(data)
    # coloured by the comparisons' own word (their direction column): the chart, the table
    # and the headline say the same
    finding = alt.Color("finding:N", title=None, scale=alt.Scale(
        domain=[DIFFERENCE, UNSIDED_DIFFERENCE, NO_DIFFERENCE],
        range=[PALETTE[0], PALETTE[3], "#999999"]),
        legend=alt.Legend(orient="top"))
    points = base.mark_point(filled=True, size=70).encode(
        x=alt.X("mean_diff_b_minus_a:Q", title="mean paired difference (compared - baseline)",
                axis=alt.Axis(tickCount=5, labelOverlap="greedy", labelFlush=True)),
        y=alt.Y("pair:N", title=None), color=finding,
        tooltip=["compared", "baseline", "metric", "n_questions",
                 alt.Tooltip("mean_diff_b_minus_a:Q", format=".4g", title="difference"),
                 alt.Tooltip("ci_low:Q", format=".4g"), alt.Tooltip("ci_high:Q", format=".4g"),
                 alt.Tooltip("ci_level:Q", format=".4%", title="interval level"),
                 "direction"])
    bars = base.mark_rule().encode(x="rule_low:Q", x2="rule_high:Q", y="pair:N",
                                   color=finding)
    zero = base.mark_rule(color="#999999", strokeDash=[2, 2]).encode(x=alt.datum(0))
    return cast(Chart, alt.layer(zero, bars, points).facet(
        row=alt.Row("metric:N", title=None, header=alt.Header(
            labelAngle=0, labelAlign="left", labelOrient="top", labelFontWeight="bold"))
    ).resolve_scale(x="independent").properties(
        title=alt.TitleParams(
            f"Paired differences on {subset} questions (measured{against})",
            subtitle=["Tested rates and pass^k: the paired test's interval at its Holm level "
                      "(crosses 0 exactly when no difference is stated); times, composite "
                      "and tool calls: 95% bootstrap interval over paired questions.",
                      *([f"Left out, every pair 0 with no spread: {flat_words}."]
                        if flat else []),
                      *([f"Left out, one question in common: {lone_pairs}."]
                        if lone else [])])))


MIN_DRAWN_QUESTIONS = 2
"""The fewest paired questions a pair's difference is drawn on: over one question the
difference has no spread and its interval says nothing; the table still lists it."""

ONE_QUESTION = ("Not drawn: every pair has one question in common ({pairs}), and a difference "
                "over one question has no spread to show; the table lists each figure.")
"""Why the comparisons chart is one line when every pair has a single paired question."""


NO_CALL_MADE = ("No tool call: none of the {runs:,} delivered runs that exposed tool events "
                "made one.")
"""Why the tool-call chart is one line when no run made a call."""

NO_CHANGE = "No matched setup has this figure on paired questions."
"""Why a diff's changes chart has nothing to draw."""

VERDICT_COLOURS = {"regressed": "#D55E00", "improved": "#009E73",
                   "no significant change": "#999999", "no clear change": "#999999"}
"""The colour of each verdict of a diff (:func:`changes_chart`): colour-blind safe."""


def changes_chart(summary: pl.DataFrame | pd.DataFrame, metric: str = "resolved_rate") -> Chart:
    """One metric's change per matched setup of a diff (``d.summary``, docs/methodology.md
    §5 "Against an earlier evaluation"): candidate - baseline with its interval (the paired
    test inverted at its Holm level for a tested rate, so it crosses 0 exactly when no
    change is stated), coloured by the verdict; one line saying why where nothing was
    measured."""
    frame = to_polars(summary).filter((pl.col("metric") == metric) & pl.col("k").is_null()
                                      & (pl.col("label") == "measured"))
    name = column_label(metric)
    if not frame.height:
        return _note(f"Change in {name}", NO_CHANGE)
    frame = frame.with_columns(pair=pl.when(pl.col("setup") == pl.col("candidate_setup"))
                               .then(pl.col("setup"))
                               .otherwise(pl.col("setup") + " -> " + pl.col("candidate_setup")),
                               **interval_rule("change"), p_holm_text=p_precise_column("p_holm"))
    data: Any = frame.to_pandas()
    base = alt.Chart(data)
    shown = [v for v in VERDICT_COLOURS if v in set(frame.get_column("verdict").to_list())]
    verdict = alt.Color("verdict:N", title=None, legend=alt.Legend(orient="top"),
                        scale=alt.Scale(domain=shown, range=[VERDICT_COLOURS[v] for v in shown]))
    y = alt.Y("pair:N", title=None, sort=sorted(frame.get_column("pair").to_list()),
              axis=alt.Axis(labelLimit=320))
    points = base.mark_point(filled=True, size=70).encode(
        x=alt.X("change:Q", title=f"change in {name} (candidate - baseline)",
                axis=alt.Axis(tickCount=5, labelOverlap="greedy", labelFlush=True)),
        y=y, color=verdict,
        tooltip=["setup", "candidate_setup", "n_questions",
                 alt.Tooltip("baseline:Q", format=".4g"),
                 alt.Tooltip("candidate:Q", format=".4g"),
                 alt.Tooltip("change:Q", format=".4g"), alt.Tooltip("ci_low:Q", format=".4g"),
                 alt.Tooltip("ci_high:Q", format=".4g"),
                 alt.Tooltip("p_holm_text:N", title="Holm p"), "verdict"])
    bars = base.mark_rule().encode(x="rule_low:Q", x2="rule_high:Q", y=y, color=verdict)
    zero = base.mark_rule(color="#999999", strokeDash=[2, 2]).encode(x=alt.datum(0))
    return cast(Chart, alt.layer(zero, bars, points).properties(
        width=420, height=alt.Step(22),
        title=alt.TitleParams(f"Change in {name}, per matched setup", subtitle=[
            "Interval: the paired test inverted at its Holm level (crosses 0 exactly when "
            "no change is stated)."])))


def headline_matrix(comparisons: pl.DataFrame | pd.DataFrame, order: Order = None) -> Chart:
    """The headline's significance matrix (:func:`significance_chart` of the resolved rate
    on all questions); one line saying why when fewer than two setups were compared."""
    frame = to_polars(comparisons)
    tested = frame.filter((pl.col("subset") == "all") & (pl.col("metric") == "resolved_rate")
                          & pl.col("p_holm").is_not_null())
    if not tested.height:
        return _note("Significance of the resolved rate", NO_COMPARISON)
    return significance_chart(frame, "resolved_rate", "all", order)


def significance_chart(comparisons: pl.DataFrame | pd.DataFrame,
                       metric: str = "resolved_rate", subset: str = "all",
                       order: Order = None) -> Chart:
    """A setup x setup matrix of one grade rate's paired test: each cell the Holm-adjusted
    p-value of the pair (docs/methodology.md §5 "Significance"), coloured by it (darker: a
    smaller p), with the row setup's rate minus the column setup's in the tooltip."""
    frame = to_polars(comparisons).filter((pl.col("subset") == subset)
                                        & (pl.col("metric") == metric)
                                        & pl.col("p_holm").is_not_null())
    if not frame.height:
        return _note(f"Is the {metric.removesuffix('_rate').replace('_', ' ')} rate "
                     "difference real?", NO_COMPARISON)
    one = frame.select(row="compared", column="baseline", difference="mean_diff_b_minus_a",
                       p="p_value", p_holm="p_holm", n="n_questions")
    other = frame.select(row="baseline", column="compared",
                         difference=-pl.col("mean_diff_b_minus_a"), p="p_value",
                         p_holm="p_holm", n="n_questions")
    setups = _order(pl.DataFrame({"setup": one.get_column("row").to_list()
                                  + one.get_column("column").to_list()}), order)
    labels = short_labels(setups)
    cells = pl.concat([one, other]).with_columns(
        label=pl.when(pl.col("p_holm") < 0.001).then(pl.lit("<0.001"))
        .otherwise(pl.col("p_holm").round(3).cast(pl.String)),
        row_label=pl.col("row").replace_strict(labels, return_dtype=pl.String),
        column_label=pl.col("column").replace_strict(labels, return_dtype=pl.String),
        p_text=p_precise_column("p"), p_holm_text=p_precise_column("p_holm"))
    sort = [labels[s] for s in setups if s in set(cells.get_column("row").to_list())]
    data: Any = cells.to_pandas()
    name = metric.removesuffix("_rate").replace("_", " ")
    base = alt.Chart(data).encode(
        x=alt.X("column_label:N", sort=sort, title="against (column)",
                axis=alt.Axis(labelAngle=-30, labelLimit=160)),
        y=alt.Y("row_label:N", sort=sort, title=None, axis=alt.Axis(labelLimit=200)),
        tooltip=[alt.Tooltip("row:N", title="setup"), alt.Tooltip("column:N", title="against"),
                 alt.Tooltip("difference:Q", format="+.3f", title=f"{name} rate difference"),
                 alt.Tooltip("p_text:N", title="p"),
                 alt.Tooltip("p_holm_text:N", title="p (Holm)"),
                 alt.Tooltip("n:Q", title="paired questions")])
    heat = base.mark_rect(stroke="white").encode(
        color=alt.Color("p_holm:Q", title="p (Holm)", scale=alt.Scale(
            domain=[0, 0.05, 1], range=["#08519c", "#9ecae1", "#f7f7f7"])))
    text = base.mark_text(fontSize=12).encode(
        text="label:N", color=alt.condition("datum.p_holm < 0.05", alt.value("white"),
                                            alt.value("black")))
    # cells narrower past 16 setups, so the matrix fits a page's 1,319 px unscaled (a
    # scaled chart's text falls below 10 px)
    side = max(90, min(60, max(36, 960 // max(1, len(sort)))) * len(sort))
    return cast(Chart, alt.layer(heat, text).properties(
        width=side, height=side,
        title=f"Is the {name} rate difference real? Holm-adjusted p of each pair ({subset} "
              "questions)"))


LIVE_VEGA_LITE = "5.21"
"""The Vega-Lite that compiles a chart for a live front end. Importing this module switches
Altair from its default renderer (which loads vega from a CDN, so draws nothing offline, and
whose Vega-Lite 6 specs JupyterLab's own renderer does not take) to ``grade_kit`` (in
``grade-kit report``'s kernels, :data:`~grade_kit.views.tables.OFFLINE_ENV`, to the
report page's ``grade_kit_offline``); a renderer the user enabled before the import is kept, and
``alt.renderers.enable(...)`` after it chooses another. The ``grade_kit`` renderer sends
each chart as a Vega 5 spec (``application/vnd.vega.v5+json``, compiled by vl-convert with
this Vega-Lite), which JupyterLab, Notebook 7 and VS Code draw with the vega they bundle:
offline, interactive (tooltips, the legend selects a setup), in a trusted or untrusted
notebook, and again when a saved notebook is opened with no kernel. Beside it goes the same
chart as an SVG image (vl-convert), for what draws no vega (nbconvert's HTML, GitHub)."""


SELECT_PARAM = "gk_setup"
"""The legend selection of every chart coloured by setup (:func:`_select_setups`)."""


def _units(spec: Any) -> list[dict[str, Any]]:
    """The unit views of a Vega-Lite spec (those with a ``mark``), in order, at any depth
    (layers, facets, concatenations)."""
    if isinstance(spec, list):
        return [u for item in spec for u in _units(item)]
    if not isinstance(spec, dict):
        return []
    if "mark" in spec:
        return [spec]
    return [u for key in ("layer", "spec", "concat", "vconcat", "hconcat")
            for u in _units(spec.get(key, []))]


def _select_setups(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec`` with a click on the setup legend selecting that setup (shift-click adds
    one, a click on nothing clears): every mark coloured by setup fades but the chosen
    setups'. One point selection over the setup label, bound to the legend, defined in the
    first view coloured by setup and read by all (a selection is the whole chart's). A spec
    with no view coloured by setup comes back as it is."""
    coloured = [u for u in _units(spec)
                if (u.get("encoding") or {}).get("color", {}).get("field") == "label"]
    if not coloured:
        return spec
    spec = json.loads(json.dumps(spec))  # the caller's spec is left as it was
    coloured = [u for u in _units(spec)
                if (u.get("encoding") or {}).get("color", {}).get("field") == "label"]
    coloured[0].setdefault("params", []).append(
        {"name": SELECT_PARAM, "select": {"type": "point", "fields": ["label"]},
         "bind": "legend"})
    for unit in coloured:
        encoding = unit["encoding"]
        base = encoding.get("opacity", {}).get("value", 1)
        encoding["opacity"] = {"condition": {"param": SELECT_PARAM, "value": base},
                               "value": 0.15}
    return spec


def _absent_bundle(spec: dict[str, Any]) -> dict[str, str] | None:
    """A note chart (:func:`_note`) as its one line of text, for any front end; ``None`` for
    a chart."""
    absent = (spec.get("usermeta") or {}).get(ABSENT_META)
    if not absent:
        return None
    title = spec.get("title")
    title = title if isinstance(title, str) else (title or {}).get("text")
    return {"text/html": absent_html(str(absent), title),
            "text/plain": f"{title}: {absent}" if title else str(absent)}


def _offline_renderer(spec: dict[str, Any], **_: Any) -> dict[str, str]:
    absent = _absent_bundle(spec)
    if absent is not None:
        return {"text/html": absent["text/html"]}
    return {"text/html": vega_embed_html(_select_setups(spec))}


def _live_renderer(spec: dict[str, Any], **_: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    import vl_convert

    absent = _absent_bundle(spec)
    if absent is not None:
        return absent, {}
    title = spec.get("title")
    title = title if isinstance(title, str) else (title or {}).get("text") or "a chart"
    bundle = {VEGA_MIME: vl_convert.vegalite_to_vega(_select_setups(spec),
                                                     vl_version=LIVE_VEGA_LITE),
              "image/svg+xml": vl_convert.vegalite_to_svg(spec),
              "text/plain": f"<chart: {title}>"}
    return bundle, {VEGA_MIME: {"embed_options": {"actions": False, "renderer": "svg"}}}


alt.renderers.register("grade_kit_offline", _offline_renderer)
alt.renderers.register("grade_kit", _live_renderer)
if os.environ.get(OFFLINE_ENV) == "1":
    alt.renderers.enable("grade_kit_offline")
elif alt.renderers.active == "default":  # chosen once, here (see OFFLINE_ENV)
    alt.renderers.enable("grade_kit")
