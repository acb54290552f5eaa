"""Chart builders: valid Vega-Lite, titled, with tooltips and the palette, never over
Altair's row limit however many runs."""

from __future__ import annotations

import inspect
import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import polars as pl
import pytest

import grade_kit as gk
from grade_kit.pipeline.diff import SUMMARY_COLUMNS
from grade_kit.presentation import charts
from grade_kit.schema import DIMENSIONS
from grade_kit.views.tables import NO_COST, Absent
from tests.paths import REALDATA
from tests.specs import colour_maps, one_colour_each


@pytest.fixture(scope="module")
def ev() -> gk.Evaluation:
    return gk.evaluate("fixtures/tasks", "fixtures/runs", judge="rules", grader="rules")


def _spec(chart: Any) -> dict[str, Any]:
    spec: dict[str, Any] = chart.to_dict()  # validates against the Vega-Lite schema
    return spec


def _rows(spec: dict[str, Any]) -> int:
    return sum(len(v) for v in spec.get("datasets", {}).values())


def _has(spec: Any, key: str) -> bool:
    if isinstance(spec, dict):
        return key in spec or any(_has(v, key) for v in spec.values())
    if isinstance(spec, list):
        return any(_has(v, key) for v in spec)
    return False


def test_every_builder_gives_a_titled_chart_with_tooltips(ev: gk.Evaluation) -> None:
    built = [charts.composite_chart(ev.leaderboard), charts.dimensions_chart(ev.leaderboard),
             charts.track_heatmap(ev.tracks), charts.grade_distribution_chart(ev.grades),
             charts.rates_chart(ev.grades), charts.latency_chart(ev.runs, ev.timing),
             charts.tool_calls_chart(ev.runs), charts.consistency_chart(ev.tasks),
             charts.comparisons_chart(ev.comparisons),
             charts.significance_chart(ev.comparisons),
             charts.timing_charts(ev.runs, ev.timing)]
    for chart in built:
        spec = _spec(chart)
        assert spec.get("title"), type(chart).__name__
        assert _has(spec, "tooltip")
        assert 0 < _rows(spec) < 5_000


def test_pandas_frames_work_too(ev: gk.Evaluation) -> None:
    assert _spec(charts.composite_chart(ev.leaderboard.to_pandas()))
    assert _spec(charts.latency_chart(ev.runs.to_pandas(), ev.timing.to_pandas()))


def test_the_composite_chart_carries_every_setup_and_the_palette(ev: gk.Evaluation) -> None:
    spec = _spec(charts.composite_chart(ev.leaderboard))
    rows = next(iter(spec["datasets"].values()))
    assert [r["setup"] for r in rows] == ["careful", "hasty", "erratic"]
    assert spec["encoding"]["color"]["scale"]["range"] == charts.PALETTE[:3]


def test_a_missing_dimension_is_absent_not_zero(ev: gk.Evaluation) -> None:
    lb = ev.leaderboard.with_columns(pl.lit(None, pl.Float64).alias("evidence_linkage"))
    rows = next(iter(_spec(charts.dimensions_chart(lb))["datasets"].values()))
    assert not [r for r in rows if r["dimension"] == "evidence_linkage"]
    assert len(rows) == 3 * (len(DIMENSIONS) - 1)


def test_grade_bars_sum_to_n(ev: gk.Evaluation) -> None:
    rows = next(iter(_spec(charts.grade_distribution_chart(ev.grades))["datasets"].values()))
    for setup in ("careful", "hasty", "erratic"):
        mine = [r for r in rows if r["setup"] == setup]
        assert sum(r["slots"] for r in mine) == mine[0]["N"] == 200


def test_a_hundred_thousand_runs_stay_under_the_row_limit() -> None:
    rnd = random.Random(3)
    runs = pl.DataFrame({
        "setup": [f"s{i % 4}" for i in range(100_000)],
        "is_primary": [True] * 100_000, "status": ["delivered"] * 100_000,
        "e2e_s": [rnd.lognormvariate(1, 0.5) for _ in range(100_000)],
        "tool_calls": [rnd.randint(0, 6) for _ in range(100_000)]})
    timing = pl.DataFrame({"setup": [f"s{i}" for i in range(4)], "subset": ["all"] * 4,
                           "e2e_n": [25_000] * 4, "e2e_p50": [2.7] * 4, "e2e_p90": [5.1] * 4,
                           "timeouts": [0] * 4, "limits": [0] * 4, "failures": [0] * 4})
    latency = _spec(charts.latency_chart(runs, timing))
    assert _rows(latency) <= 4 * charts.ECDF_POINTS + 8
    ecdf = next(v for v in latency["datasets"].values() if "fraction" in v[0])
    top = [r for r in ecdf if r["fraction"] == 1.0]
    assert {r["n"] for r in top} == {25_000}
    assert _rows(_spec(charts.tool_calls_chart(runs))) <= 4 * 7


def test_the_significance_matrix_holds_the_holm_p_of_every_pair(ev: gk.Evaluation) -> None:
    spec = _spec(charts.significance_chart(ev.comparisons))
    cells = [r for rows in spec["datasets"].values() for r in rows]
    resolved = ev.comparisons.filter((pl.col("subset") == "all")
                                     & (pl.col("metric") == "resolved_rate"))
    assert len(cells) == 2 * resolved.height  # each pair in both cells of the matrix
    for row in resolved.iter_rows(named=True):
        mine = [c for c in cells if {c["row"], c["column"]} == {row["baseline"],
                                                                 row["compared"]}]
        assert len(mine) == 2 and {c["p_holm"] for c in mine} == {row["p_holm"]}
        forward = next(c for c in mine if c["row"] == row["compared"])
        assert forward["difference"] == row["mean_diff_b_minus_a"]


def test_many_tasks_are_binned_and_no_grade_says_why() -> None:
    rnd = random.Random(3)
    tasks = pl.DataFrame({"setup": [f"s{i % 5}" for i in range(20_000)],
                          "task_id": [f"t{i}" for i in range(20_000)],
                          "consistency": [rnd.random() for _ in range(20_000)]})
    spec = _spec(charts.consistency_chart(tasks))
    assert _rows(spec) <= 5 * 50 and "bins of 0.02" in spec["title"]
    counted = sum(r["tasks"] for rows in spec["datasets"].values() for r in rows)
    assert counted == 20_000  # every task in some bin
    plain = gk.evaluate([{"task_id": "q", "prompt": "?"}],
                        [{"run_id": "r", "setup": "s", "task_id": "q", "repeat": 1,
                          "status": "delivered", "response": {"text": "x"}}])
    for chart in (charts.composite_chart(plain.leaderboard),
                  charts.dimensions_chart(plain.leaderboard), charts.track_heatmap(plain.tracks),
                  charts.consistency_chart(plain.tasks)):
        spec = _spec(chart)
        text = next(iter(spec["datasets"].values()))[0]["text"]
        assert spec["mark"]["type"] == "text" and text == charts.NO_GRADE
    for chart in (charts.comparisons_chart(plain.comparisons),
                  charts.significance_chart(plain.comparisons)):
        spec = _spec(chart)
        assert next(iter(spec["datasets"].values()))[0]["text"] == charts.NO_COMPARISON
    # a note carries its sentence: a report page shows that line, marked, not a chart
    note = charts.tool_calls_chart(plain.runs)
    assert _spec(note)["usermeta"] == {charts.ABSENT_META: charts.NO_TOOL_CALLS}
    shown = charts._offline_renderer(_spec(note))["text/html"]
    assert shown.startswith('<p class="gk-note gk-absent" data-gk-absent="No tool calls:')
    assert "<b>Tool calls per run</b>" in shown and "vegaEmbed" not in shown
    drawn = charts._offline_renderer(_spec(charts.rates_chart(plain.grades)))["text/html"]
    assert "vegaEmbed" in drawn and "data-gk-absent" not in drawn
    # in a live notebook too: the one line (HTML, and text), never an empty chart frame
    live, meta = charts._live_renderer(_spec(note))
    assert sorted(live) == ["text/html", "text/plain"] and meta == {}
    assert live["text/plain"] == f"Tool calls per run: {charts.NO_TOOL_CALLS}"


def test_a_live_chart_is_a_vega_5_spec_with_its_svg_copy_and_a_legend_selection() -> None:
    """In a notebook a chart goes out as a Vega 5 spec (JupyterLab's own vega draws it, live,
    offline, also when the saved notebook is reopened) with an SVG copy beside it; a click on
    a setup in the legend keeps it and fades the others."""
    frame = pl.DataFrame({"setup": ["a", "b"], "subset": ["all", "all"], "N": [10, 10],
                          "resolved_rate": [0.5, 0.7], "resolved_ci_low": [0.2, 0.4],
                          "resolved_ci_high": [0.8, 0.9]})
    chart = charts.rates_chart(frame)
    bundle, meta = charts._live_renderer(_spec(chart))
    assert sorted(bundle) == ["application/vnd.vega.v5+json", "image/svg+xml", "text/plain"]
    vega = bundle["application/vnd.vega.v5+json"]
    assert vega["$schema"] == "https://vega.github.io/schema/vega/v5.json"
    assert bundle["image/svg+xml"].lstrip().startswith("<svg")
    assert meta["application/vnd.vega.v5+json"]["embed_options"]["actions"] is False
    # the selection: defined once, bound to the legend; every view coloured by setup fades
    selected = charts._select_setups(_spec(chart))
    units = charts._units(selected)
    params = [p for u in units for p in u.get("params", [])]
    assert params == [{"name": "gk_setup", "select": {"type": "point", "fields": ["label"]},
                       "bind": "legend"}]
    faded = [u["encoding"]["opacity"] for u in units if "opacity" in u.get("encoding", {})]
    assert faded and all(o["condition"]["param"] == "gk_setup" and o["value"] == 0.15
                         for o in faded)
    assert "gk_setup" in json.dumps(vega["signals"])  # compiled: the legend drives it
    assert "params" not in json.dumps(_spec(chart))  # the chart itself is left as it was
    # a chart with no setup colour (the significance matrix) is sent as it is
    matrix = _spec(charts.significance_chart(pl.DataFrame(schema={
        "setup_a": pl.String, "setup_b": pl.String, "subset": pl.String, "metric": pl.String,
        "p_holm": pl.Float64, "mean_diff_b_minus_a": pl.Float64})))
    assert charts._select_setups(matrix) == matrix


def test_short_labels_keep_family_and_version() -> None:
    """One rule on every page: the vendor path dropped, the model's own name kept whole (no
    bare "mini", no "3-mini"), cut in the middle past 30 characters, unique or full names."""
    names = ["anthropic/claude-3-5-sonnet-20241022", "anthropic/claude-3-5-haiku-20241022"]
    assert charts.short_labels(names) == {names[0]: "claude-3-5-sonnet-20241022",
                                          names[1]: "claude-3-5-haiku-20241022"}
    assert charts.short_labels(["openai/gpt-4o", "openai/gpt-4o-mini"]) == {
        "openai/gpt-4o": "gpt-4o", "openai/gpt-4o-mini": "gpt-4o-mini"}
    assert charts.short_labels(["xai/grok-3-mini", "xai/grok-4-fast-reasoning"]) == {
        "xai/grok-3-mini": "grok-3-mini", "xai/grok-4-fast-reasoning": "grok-4-fast-reasoning"}
    assert charts.short_labels(["a"]) == {"a": "a"}
    assert charts.short_labels(["a/x", "b/x"]) == {"a/x": "a/x", "b/x": "b/x"}  # not unique
    long = [f"provider/family-of-models-variant-number-{i:02d}-2026-01-01" for i in range(12)]
    labels = charts.short_labels(long)
    assert len(set(labels.values())) == 12 and all(len(v) <= 30 for v in labels.values())
    assert labels[long[3]] == "family-of-model…-03-2026-01-01"
    # a name that is another's prefix keeps labels unique
    assert len(set(charts.short_labels(["m", "m-large"]).values())) == 2


def test_one_colour_and_one_place_per_setup_on_every_chart(ev: gk.Evaluation) -> None:
    order = charts.setup_order(ev.grades)
    resolved = dict(ev.grades.filter(pl.col("subset") == "all")
                    .select("setup", "resolved_rate").iter_rows())
    assert order == sorted(resolved, key=lambda s: (-resolved[s], s))
    built = [charts.composite_chart(ev.leaderboard, order=order),
             charts.dimensions_chart(ev.leaderboard, order=order),
             charts.rates_chart(ev.grades, order=order),
             charts.timing_charts(ev.runs, ev.timing, order=order),
             charts.tool_calls_chart(ev.runs, order=order),
             charts.consistency_chart(ev.tasks, order=order)]
    maps = [one_colour_each(colour_maps(_spec(chart))) for chart in built]
    assert all(m == maps[0] for m in maps) and len(maps[0]) == len(order)
    assert "#F0E442" not in maps[0].values()  # the faint yellow is never used
    legend = charts.legend_table(order)
    assert legend.get_column("setup").to_list() == order
    named = {hex_: name for hex_, name in charts.COLOUR_NAMES.items()}
    assert dict(zip(legend["label"], legend["colour"], strict=True)) == {
        label: named[colour] for label, colour in maps[0].items()}  # in words, no hex code
    assert set(charts.COLOUR_NAMES) == set(charts.PALETTE)


def test_a_wide_latency_span_is_drawn_on_a_log_axis_and_many_setups_get_dashes() -> None:
    setups = [f"org/model-{i:02d}" for i in range(12)]
    runs = pl.DataFrame({"setup": [s for s in setups for _ in range(20)],
                         "is_primary": True, "status": "delivered",
                         "e2e_s": [(100.0 if s == setups[0] else 1.0) + k / 10
                                   for s in setups for k in range(20)]})
    timing = pl.DataFrame({"setup": setups, "subset": "all", "e2e_n": 20,
                           "e2e_p50": [101.0] + [2.0] * 11, "e2e_p90": [102.0] + [2.8] * 11,
                           "timeouts": 0, "limits": 0, "failures": 0})
    spec = _spec(charts.latency_chart(runs, timing, order=setups))
    line = spec["layer"][0]["encoding"]
    assert line["x"]["scale"]["type"] == "log" and "log scale" in line["x"]["title"]
    assert "strokeDash" in line  # 12 setups: colours repeat, dashes tell them apart
    texts = [r["mark"] for rows in spec["datasets"].values() for r in rows if "mark" in r]
    assert sorted(set(texts)) == ["P50", "P90"]  # both percentiles are marked
    # issue 55, item 3: by their dash, with no text layer over the curves
    kinds = [layer["mark"] for layer in spec["layer"]]
    assert all(k["type"] != "text" for k in kinds if isinstance(k, dict))
    assert [k["strokeDash"] for k in kinds[1:]] == [list(d) for d in charts.PERCENTILE_DASHES]


@pytest.mark.parametrize(("before", "env", "active"), [
    (None, None, "grade_kit"), (None, "1", "grade_kit_offline"), ("html", None, "html")])
def test_the_renderer_is_chosen_once_on_import(before: str | None, env: str | None,
                                               active: str) -> None:
    """In a notebook a chart draws without the network (a Vega 5 spec and its SVG copy, never
    a CDN script);
    in grade-kit report's kernels it is the offline page's vegaEmbed call; a renderer the
    user chose first is kept."""
    import os
    import subprocess
    import sys

    code = ("import altair as alt\n"
            + (f"alt.renderers.enable({before!r})\n" if before else "")
            + "import grade_kit.presentation.charts as c, polars as pl\n"
            "chart = c.rates_chart(pl.DataFrame({'setup': ['a'], 'subset': ['all'], 'N': [10],"
            " 'resolved_rate': [0.5], 'resolved_ci_low': [0.4], 'resolved_ci_high': [0.6]}))\n"
            "bundle = chart._repr_mimebundle_()\n"
            "bundle = bundle[0] if isinstance(bundle, tuple) else bundle\n"
            "print(alt.renderers.active, sorted(bundle), 'cdn.jsdelivr' in str(bundle))")
    environment = {k: v for k, v in os.environ.items() if k != "GRADE_KIT_OFFLINE_HTML"}
    if env:
        environment["GRADE_KIT_OFFLINE_HTML"] = env
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=environment, check=True).stdout.split()
    assert out[0] == active
    if active == "grade_kit":
        assert out[1:-1] == ["['application/vnd.vega.v5+json',", "'image/svg+xml',",
                             "'text/plain']"] and out[-1] == "False"
    if active == "grade_kit_offline":
        assert out[1:-1] == ["['text/html']"] and out[-1] == "False"


def _runs_over_the_row_limit() -> gk.Evaluation:
    """12,000 runs of a real evaluation: 1,200 tasks x 5 setups x 2 repeats (runs and
    (setup, task) rows both over vega-lite's 5,000-row limit), every run timed and with 0-4
    tool calls, graded by the rule grader (every section has data)."""
    rnd = random.Random(11)
    weights = dict.fromkeys(DIMENSIONS, 1 / len(DIMENSIONS))
    tasks = [{"task_id": f"t{i:04d}", "track": 1 + i % 3, "pack": f"p{i % 4}", "prompt": "q",
              "weights": weights} for i in range(1200)]
    start = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
    runs: list[dict[str, Any]] = []
    for i in range(1200):
        for s in range(5):
            for repeat in range(1, 3):
                sent = start + timedelta(seconds=len(runs))
                back = sent + timedelta(seconds=rnd.lognormvariate(2, 0.5))
                runs.append({
                    "run_id": f"s{s}-t{i:04d}-r{repeat}", "setup": f"setup-{s}",
                    "task_id": f"t{i:04d}", "repeat": repeat, "status": "delivered",
                    "events": {"submitted": sent.isoformat(), "received": back.isoformat()},
                    "tool_calls": [{"id": f"c{k}", "name": f"tool{k}"}
                                   for k in range(rnd.randint(0, 4))],
                    "response": {"key_findings": [f"finding {rnd.randint(0, 9)}"]}})
    return gk.evaluate(tasks, runs, grader="rules")


def test_every_chart_of_an_evaluation_over_the_row_limit_renders() -> None:
    import vl_convert

    ev = _runs_over_the_row_limit()
    priced = gk.evaluate(REALDATA / "tau2_grok_airline_relaxed_task8")
    assert ev.runs.height == 12_000 and ev.absent == Absent(None, None, None, None, NO_COST)
    order = charts.setup_order(ev.grades)
    built = {
        "composite_chart": charts.composite_chart(ev.leaderboard, order=order),
        "dimensions_chart": charts.dimensions_chart(ev.leaderboard, order=order),
        "track_heatmap": charts.track_heatmap(ev.tracks, order=order),
        "grade_distribution_chart": charts.grade_distribution_chart(ev.grades, order=order),
        "rates_chart": charts.rates_chart(ev.grades, order=order),
        "timing_charts": charts.timing_charts(ev.runs, ev.timing, order=order),
        "latency_chart": charts.latency_chart(ev.runs, ev.timing, order=order),
        "tool_calls_chart": charts.tool_calls_chart(ev.runs, order=order),
        "consistency_chart": charts.consistency_chart(ev.tasks, order=order),
        "reliability_chart": charts.reliability_chart(ev.reliability, order=order),
        "comparisons_chart": charts.comparisons_chart(ev.comparisons),
        "significance_chart": charts.significance_chart(ev.comparisons, "resolved_rate",
                                                        order=order),
        "changes_chart": charts.changes_chart(gk.diff(ev, ev).summary),
        # these runs record no usage: the frontier is drawn on the real tau2 log's costs
        "frontier_chart": charts.frontier_chart(priced.cost, priced.grades),
    }
    # every chart builder the module defines
    public = {n for n, f in vars(charts).items() if inspect.isfunction(f)
              and f.__module__ == charts.__name__ and not n.startswith("_")}
    assert set(built) == {n for n in public if n.endswith(("_chart", "_charts"))
                          or n == "track_heatmap"}
    for name, chart in built.items():
        spec = _spec(chart)  # Altair's own check: no MaxRowsError
        assert _rows(spec) <= 5_000, (name, _rows(spec))
        svg = vl_convert.vegalite_to_svg(spec)
        assert "<path" in svg or "<rect" in svg or "<line" in svg, name  # marks drawn
        assert charts.ABSENT_META not in spec.get("usermeta", {}), name  # a chart, not a note
    # the 6,000 task consistencies are counted in bins, and the chart says so
    title = _spec(built["consistency_chart"])["title"]
    assert "6,000 tasks: counted in bins of 0.02" in str(title)


def test_every_chart_builder_with_nothing_to_draw_says_why_in_one_line() -> None:
    """One setup whose one run failed: no GRADE score, no timestamp, no tool call, nothing to
    compare. Every builder returns a note chart (its sentence in ``usermeta``: a page and a
    notebook show that line), never an empty frame and never None."""
    failed = gk.evaluate([{"task_id": "q", "prompt": "x"}],
                         [{"run_id": "r", "setup": "s", "task_id": "q", "repeat": 1,
                           "status": "failed", "error": "boom"}])
    built = {
        "composite_chart": charts.composite_chart(failed.leaderboard),
        "dimensions_chart": charts.dimensions_chart(failed.leaderboard),
        "track_heatmap": charts.track_heatmap(failed.tracks),
        "consistency_chart": charts.consistency_chart(failed.tasks),
        "latency_chart": charts.latency_chart(failed.runs, failed.timing),
        "working latency_chart": charts.latency_chart(failed.runs, failed.timing,
                                                      metric="working"),
        "timing_charts": charts.timing_charts(failed.runs, failed.timing),
        "tool_calls_chart": charts.tool_calls_chart(failed.runs),
        "comparisons_chart": charts.comparisons_chart(failed.comparisons),
        "significance_chart": charts.significance_chart(failed.comparisons),
        "headline_matrix": charts.headline_matrix(failed.comparisons),
        "changes_chart": charts.changes_chart(pl.DataFrame(schema=SUMMARY_COLUMNS)),
        "frontier_chart": charts.frontier_chart(failed.cost, failed.grades),
    }
    reasons = {name: _spec(chart).get("usermeta", {}).get(charts.ABSENT_META)
               for name, chart in built.items()}
    assert reasons == {
        **dict.fromkeys(("composite_chart", "dimensions_chart", "track_heatmap",
                         "consistency_chart"), charts.NO_GRADE),
        "latency_chart": "No E2E sample: 0 delivered runs.",
        "working latency_chart": ("No working-time sample: none of 0 delivered runs records "
                                  "its working time."),
        "timing_charts": "No E2E sample: 0 delivered runs.",
        "tool_calls_chart": charts.NO_TOOL_CALLS,
        **dict.fromkeys(("comparisons_chart", "significance_chart", "headline_matrix"),
                        charts.NO_COMPARISON),
        "changes_chart": charts.NO_CHANGE, "frontier_chart": NO_COST}
    # the builders of a chart every evaluation has (its grades) still draw it
    assert "usermeta" not in _spec(charts.rates_chart(failed.grades))


def test_the_comparisons_chart_colours_what_the_comparisons_state() -> None:
    """A point is blue where its comparison states a direction and grey where not, whatever
    its interval alone would say (a grade rate's interval can exclude 0 while its Holm p does
    not: one answer, as in the table)."""
    rows = [("careful", "hasty", "e2e_median_s", -3.0, -4.0, -2.0, "hasty better than careful"),
            ("careful", "hasty", "unresolved_rate", 0.03, -0.005, 0.055, None),
            # no better side: a difference (the interval excludes 0), no direction stated
            ("careful", "hasty", "partially_resolved_rate", 0.2, 0.1, 0.3, None)]
    frame = pl.DataFrame([{"baseline": a, "compared": b, "subset": "all", "metric": m,
                           "label": "measured", "mean_diff_b_minus_a": d, "ci_low": lo,
                           "ci_high": hi, "direction": t, "n_questions": 40}
                          for a, b, m, d, lo, hi, t in rows])
    spec = _spec(charts.comparisons_chart(frame))
    data = next(iter(spec["datasets"].values()))
    assert {r["metric"]: r["finding"] for r in data} == {
        "E2E median (s)": charts.DIFFERENCE, "unresolved rate": charts.NO_DIFFERENCE,
        "partially resolved rate": charts.UNSIDED_DIFFERENCE}
    colour = spec["spec"]["layer"][2]["encoding"]["color"]
    assert colour["scale"]["domain"] == [charts.DIFFERENCE, charts.UNSIDED_DIFFERENCE,
                                         charts.NO_DIFFERENCE]


def test_the_reliability_chart_draws_both_curves_of_every_setup() -> None:
    import polars as pl

    from grade_kit.presentation import charts

    frame = pl.DataFrame({
        "setup": ["a", "a", "b", "b"], "subset": ["all"] * 4, "k": [1, 2, 1, 2],
        "pass_at_k": [0.5, 0.75, 0.2, 0.3], "pass_at_k_low": [0.3, 0.5, 0.1, 0.1],
        "pass_at_k_high": [0.7, 0.9, 0.4, 0.5], "pass_hat_k": [0.5, 0.25, 0.2, 0.1],
        "pass_hat_k_low": [0.3, 0.1, 0.1, 0.0], "pass_hat_k_high": [0.7, 0.5, 0.4, 0.3],
        "questions": [4, 4, 4, 4]})
    spec = charts.reliability_chart(frame).to_dict()
    rows = [r for data in spec["datasets"].values() for r in data]
    assert len(rows) == 8  # 2 setups x 2 k x 2 measures
    assert {r["measure"] for r in rows} == {"pass^k: all k repeats resolved",
                                           "pass@k: at least one of k resolved"}
    hat = [r for r in rows if r["measure"].startswith("pass^k") and r["setup"] == "a"]
    assert [(r["k"], r["value"]) for r in sorted(hat, key=lambda r: r["k"])] == [
        (1, 0.5), (2, 0.25)]


def test_the_reliability_chart_at_one_repeat_says_why_it_draws_nothing() -> None:
    import polars as pl

    from grade_kit.presentation import charts

    frame = pl.DataFrame({
        "setup": ["a"], "subset": ["all"], "k": [1], "pass_at_k": [0.5],
        "pass_at_k_low": [0.3], "pass_at_k_high": [0.7], "pass_hat_k": [0.5],
        "pass_hat_k_low": [0.3], "pass_hat_k_high": [0.7], "questions": [4]})
    spec = charts.reliability_chart(frame).to_dict()
    assert "One repeat per question" in str(spec["usermeta"])


def test_the_tool_call_chart_counts_what_its_table_counts() -> None:
    """Issue 55: the chart counted every attempt (limit hits included) while the table beside
    it counts delivered primary runs. Two delivered runs with 1 and 3 calls and a run stopped
    by a limit after 9: the chart's runs and mean are the table's, 2 runs, mean 2.0."""
    runs = [{"run_id": f"r{k}", "setup": "s", "task_id": f"q{k}", "repeat": 1,
             "status": status, "response": {"text": "x"} if status == "delivered" else None,
             "limit": {"type": "message", "value": 9} if status == "limit" else None,
             "tool_calls": [{"id": f"c{k}-{j}", "name": "sql"} for j in range(n)]}
            for k, (status, n) in enumerate((("delivered", 1), ("delivered", 3),
                                             ("limit", 9)))]
    ev = gk.evaluate([{"task_id": f"q{k}", "prompt": "x"} for k in range(3)], runs)
    data = next(iter(_spec(charts.tool_calls_chart(ev.runs))["datasets"].values()))
    drawn = {row["tool_calls"]: row["len"] for row in data}
    table = ev.tool_calls.filter(pl.col("subset") == "all").row(0, named=True)
    assert drawn == {1: 1, 3: 1}
    assert sum(drawn.values()) == table["per_run_n"] == 2
    assert sum(k * n for k, n in drawn.items()) / 2 == table["per_run_mean"] == 2.0


def test_grade_states_are_named_in_words(ev: gk.Evaluation) -> None:
    """Issue 55, item 7: the legend says "partially resolved" and "not run", not the
    column names, each with its own colour."""
    spec = _spec(charts.grade_distribution_chart(ev.grades))
    colour = spec["encoding"]["color"]["scale"]
    assert colour["domain"] == ["resolved", "partially resolved", "material error",
                                "unresolved", "pending verification", "not run"]
    assert colour["range"][1] == charts.STATE_COLOURS["partially_resolved"]
    states = {row["state"] for rows in spec["datasets"].values() for row in rows}
    assert states == set(colour["domain"])


def test_a_metric_that_is_zero_for_every_pair_is_left_out_and_named() -> None:
    """Issue 55, item 4: no setup has a material error, so every pair's difference is 0
    with no spread: that panel is left out and its name said in the subtitle; when every
    metric is so, the chart is one line saying it."""
    rows = [("a", "b", "e2e_median_s", -3.0, -4.0, -2.0),
            ("a", "b", "material_error_rate", 0.0, 0.0, 0.0),
            ("a", "c", "material_error_rate", 0.0, None, None)]
    frame = pl.DataFrame([{"baseline": a, "compared": b, "subset": "all", "metric": m,
                           "label": "measured", "mean_diff_b_minus_a": d, "ci_low": lo,
                           "ci_high": hi, "direction": None, "n_questions": 40}
                          for a, b, m, d, lo, hi in rows])
    spec = _spec(charts.comparisons_chart(frame))
    data = next(iter(spec["datasets"].values()))
    assert {r["metric"] for r in data} == {"E2E median (s)"}
    assert "Left out, every pair 0 with no spread: material error rate." in spec["title"][
        "subtitle"]
    flat = _spec(charts.comparisons_chart(frame.filter(
        pl.col("metric") == "material_error_rate")))
    assert flat["usermeta"][charts.ABSENT_META] == (
        "Every pair's difference is 0 with no spread (material error rate).")


def test_a_tool_call_chart_of_zeros_is_one_line() -> None:
    """Issue 55, item 4: every delivered run exposed its tools and made no call (the
    shipped Inspect logs): one bar at 0 says nothing; the chart is one line saying so."""
    runs = pl.DataFrame({"setup": ["s"] * 3, "is_primary": True, "status": "delivered",
                         "tool_calls": [0, 0, 0]})
    spec = _spec(charts.tool_calls_chart(runs))
    assert spec["usermeta"][charts.ABSENT_META] == charts.NO_CALL_MADE.format(runs=3)
    assert "No tool call: none of the 3 delivered runs" in charts.NO_CALL_MADE.format(runs=3)


def test_a_pair_with_one_question_in_common_is_not_drawn_and_is_named() -> None:
    """Issue 55, items 2 and 4 (the tau2 logs: one question in common): a difference over
    one question has no spread, and a tested rate's interval there is [-1, 1]; such pairs
    are left out and named, and a chart of nothing else is one line saying why."""
    rows = [("a", "b", "resolved_rate", 0.75, -1.0, 1.0, 1),
            ("a", "c", "resolved_rate", 0.25, 0.05, 0.45, 30)]
    frame = pl.DataFrame([{"baseline": a, "compared": b, "subset": "all", "metric": m,
                           "label": "measured", "mean_diff_b_minus_a": d, "ci_low": lo,
                           "ci_high": hi, "direction": None, "n_questions": n}
                          for a, b, m, d, lo, hi, n in rows])
    spec = _spec(charts.comparisons_chart(frame))
    data = next(iter(spec["datasets"].values()))
    assert [(r["compared"], r["baseline"]) for r in data] == [("c", "a")]
    assert "Left out, one question in common: b - a." in spec["title"]["subtitle"]
    lone = _spec(charts.comparisons_chart(frame.filter(pl.col("compared") == "b")))
    assert lone["usermeta"][charts.ABSENT_META] == charts.ONE_QUESTION.format(pairs="b - a")
