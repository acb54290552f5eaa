"""The shape sweep (issue 62): plain generated evaluations of every size and effect
(``tests/shapes.py``) through evaluate, write, diff and (some) report, every figure checked
against what must hold whatever the data: no crash, p in (0, 1], p_holm >= p, intervals
ordered and holding their estimate, a direction stated exactly when the interval excludes 0,
rates in [0, 1], grade counts summing to N.

``make test`` runs the small grid and a few hypothesis-drawn shapes (shrunk to the smallest
failing one); ``make sweep`` (``GRADE_KIT_SWEEP=full``) the full grid, its time in
docs/scaling.md."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import os
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grade_kit as gk
from grade_kit.cli import main
from grade_kit.standard.compare import METRICS, better_side
from tests.shapes import Shape, write_shape

SMALL = [
    Shape(1, 1, 1, name="one question, one setup, one run"),
    Shape(1500, 2, 1, (1.0, 0.0), name="1,500 task files, all against none"),
    Shape(60, 3, 3, (0.2, 0.5, 0.8), skipping=0.3, partial=0.2, slashed=True,
          name="3 setups, one skipping, partials, ids with / and %"),
    Shape(200, 2, 10, (0.5,), name="no effect, R = 10"),
    Shape(2000, 2, 1, (1.0, 0.0), task_folder=False, name="p past a double, one task file"),
    Shape(30, 50, 1, (0.3, 0.7), name="50 setups"),
    Shape(300, 2, 4, (1.0, 0.0), name="total effect at R = 4"),
    Shape(1200, 2, 3, (0.9, 0.1), per_question=False, name="exact sign flip in log space"),
    Shape(5, 3, 2, (0.0,), name="nothing resolved: every figure ties"),
    Shape(50, 2, 2, (1.0,), name="everything resolved"),
]
"""The grid of ``make test``."""

REPORTED = {SMALL[1].name, SMALL[2].name}
"""The shapes of the small grid also made into pages (a notebook each: slow)."""


def _full_grid() -> list[Shape]:
    """``make sweep``: questions 1 to 5,000 x setups 1 to 50 x repeats 1 to 10 x effects
    from none to total, task folder and task file, within 100,000 runs a shape."""
    shapes = []
    for questions, setups, repeats, rates in itertools.product(
            (1, 7, 100, 1200, 5000), (1, 2, 5, 50), (1, 3, 10),
            ((0.5,), (0.45, 0.55), (0.2, 0.8), (1.0, 0.0))):
        if questions * setups * repeats > 100_000:
            continue
        shapes.append(Shape(questions, setups, repeats, rates,
                            task_folder=questions % 2 == 0, skipping=0.1 * (setups > 2),
                            partial=0.1 * (repeats == 3), slashed=questions == 7,
                            seed=questions + setups + repeats,
                            name=f"{questions}q x {setups} setups x R{repeats} {rates}"))
    return shapes


GRID = _full_grid() if os.environ.get("GRADE_KIT_SWEEP") == "full" else SMALL


def check_figures(frame: pl.DataFrame, estimate: str) -> None:
    """What holds of every figure of ``ev.comparisons`` or ``d.summary`` (``estimate``: the
    column of its point estimate)."""
    for row in frame.iter_rows(named=True):
        where = (row.get("baseline") if estimate != "change" else row.get("setup"),
                 row.get("compared") or row.get("candidate_setup"), row.get("subset"),
                 row["metric"], row.get("k"))
        p, p_holm = row.get("p_value"), row.get("p_holm")
        if p is not None:
            assert 0 < p <= 1 and p <= p_holm <= 1, (where, p, p_holm)
        low, high, value = row.get("ci_low"), row.get("ci_high"), row.get(estimate)
        assert (low is None) == (high is None), where
        if low is None:  # no interval: no direction either
            assert row.get("direction") is None, where
            continue
        assert -math.inf < low <= value <= high < math.inf, (where, low, value, high)
        excludes = low > 0 or high < 0
        if p is not None:  # a tested figure: its interval and its Holm verdict agree
            assert excludes == (p_holm < 0.05), (where, low, high, p_holm)
        if "direction" not in row:
            continue
        side = (better_side(row["metric"]) if row["metric"] not in METRICS
                else METRICS[row["metric"]][1])
        stated = row["direction"] is not None
        assert stated == (excludes and side is not None and value != 0), (where, row)


def check_rates(ev: gk.Evaluation) -> None:
    """Every setup's grade counts sum to its N; every rate and interval is in [0, 1] and
    every interval holds its rate."""
    for name, setup in ev.results.setups.items():
        grades = setup.grades
        assert sum(grades.counts.model_dump().values()) == grades.N, name
        for grade, rate in grades.rates.model_dump().items():
            if rate is None:  # a setup not ranked (coverage) states no rate
                assert grades.wilson95[grade] is None, (name, grade)
                continue
            assert 0 <= rate <= 1, (name, grade, rate)
            interval = grades.wilson95[grade]  # none for a setup not ranked (coverage)
            assert interval is None or 0 <= interval.low <= rate <= interval.high <= 1, (
                name, grade, interval)


def _evaluate(shape: Shape, folder: Path) -> gk.Evaluation:
    tasks = write_shape(shape, folder)
    return gk.evaluate(tasks, folder / "runs.jsonl", grades=folder / "grades.jsonl")


def _through_everything(shape: Shape, folder: Path, report: bool = False) -> None:
    ev = _evaluate(shape, folder / "a")
    check_rates(ev)
    check_figures(ev.comparisons, "mean_diff_b_minus_a")
    ev.write(folder / "scored")
    written = json.loads((folder / "scored" / "results.json").read_text(encoding="utf-8"))
    ids = set(ev.runs.get_column("task_id").to_list())
    assert ids == {shape.task_id(q) for q in range(shape.questions)}  # as written
    for comparison in written["comparisons"]:
        for figure in comparison["figures"]:
            if figure.get("p_value") is not None:
                assert 0 < figure["p_value"] <= figure["p_holm"] <= 1
                assert figure["log10_p"] <= figure["log10_p_holm"] <= 0
    later = _evaluate(dataclasses.replace(shape, seed=shape.seed + 1), folder / "b")
    d = gk.diff(ev, later)
    check_figures(d.summary, "change")
    assert main(["diff", str(folder / "scored"), str(folder / "scored"),
                 "--fail-on-regression", "0"]) == 0  # against itself: nothing regressed
    if report:
        code = main(["report", str(write_shape(shape, folder / "c")), str(folder / "c" /
                     "runs.jsonl"), "--grades", str(folder / "c" / "grades.jsonl"), "--out",
                     str(folder / "report")])
        assert code == 0 and (folder / "report" / "report.html").stat().st_size > 0


@pytest.mark.parametrize("shape", GRID, ids=[s.name for s in GRID])
def test_every_shape_reaches_its_page_with_figures_that_hold(shape: Shape,
                                                            tmp_path: Path) -> None:
    _through_everything(shape, tmp_path, report=shape.name in REPORTED)


@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(questions=st.integers(1, 40), setups=st.integers(1, 4), repeats=st.integers(1, 4),
       rates=st.lists(st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0]), min_size=1, max_size=4),
       skipping=st.sampled_from([0.0, 0.5]), partial=st.sampled_from([0.0, 0.3]),
       seed=st.integers(0, 1000))
def test_drawn_small_shapes_hold_too(tmp_path_factory: pytest.TempPathFactory,
                                     questions: int, setups: int, repeats: int,
                                     rates: list[float], skipping: float, partial: float,
                                     seed: int) -> None:
    """Hypothesis draws small shapes and, on a failure, shrinks to the smallest that fails."""
    shape = Shape(questions, setups, repeats, tuple(rates), skipping=skipping,
                  partial=partial, seed=seed)
    folder = tmp_path_factory.mktemp("drawn")
    ev = _evaluate(shape, folder)
    check_rates(ev)
    check_figures(ev.comparisons, "mean_diff_b_minus_a")
