"""docs/methodology.md §3 "Grounding accuracy": tolerances inclusive, abs vs rel, percent
strings, string facts."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from grade_kit.frames import EvalData
from grade_kit.scorers import fact_checks, grounding_scores
from grade_kit.scorers.grounding import _grounding_scores
from tests.conftest import make_run, make_task, run_row, score, task_row


def passed(gold: Any, pred: Any, **tol: float) -> bool:
    task = make_task(gold_facts=[{"id": "f", "metric": "m", "value": gold, **tol}])
    metrics = {} if pred is _MISSING else {"m": pred}
    data = EvalData.from_records([task], [make_run("r", metrics=metrics)])
    checks = fact_checks(data.facts, data.runs, data.metrics)
    return bool(checks["passed"].item())


_MISSING = object()


@pytest.mark.parametrize(
    ("gold", "pred", "tol", "expected"),
    [
        (0.50, 0.51, {"abs_tol": 0.01}, True),  # boundary inclusive, float slack 1e-12
        (0.50, 0.49, {"abs_tol": 0.01}, True),
        (0.50, 0.5101, {"abs_tol": 0.01}, False),
        (200, 210, {"rel_tol": 0.05}, True),  # 5% of 200 = 10: inclusive
        (200, 210.001, {"rel_tol": 0.05}, False),
        (-200, -190, {"rel_tol": 0.05}, True),  # rel uses |gold|
        (200, 212, {"abs_tol": 12, "rel_tol": 0.01}, True),  # either tolerance suffices
        (200, 203, {"abs_tol": 1, "rel_tol": 0.015}, True),
        (200, 204, {"abs_tol": 1, "rel_tol": 0.015}, False),
        (0.1, 0.1 + 1e-9, {}, True),  # neither given: |diff| <= 1e-9
        (0.1, 0.1 + 1.1e-9, {}, False),
        (0.184, "18.4%", {}, True),  # percent string divides by 100
        (0.184, 18.4, {"abs_tol": 0.005}, False),  # wrong unit fails
        (1234, "1,234", {}, True),  # thousands comma dropped
        (7, "7", {}, True),
        (1, True, {"abs_tol": 1}, False),  # booleans are not numbers
        (0.5, "about half", {"abs_tol": 1}, False),  # unparsable
        (0.5, None, {"abs_tol": 1}, False),
        (0.5, _MISSING, {"abs_tol": 1}, False),  # missing
        (0, 0.0, {}, True),
    ],
)
def test_numeric_facts(gold: Any, pred: Any, tol: dict[str, float], expected: bool) -> None:
    assert passed(gold, pred, **tol) is expected


@pytest.mark.parametrize(
    ("gold", "pred", "expected"),
    [
        ("T-07", "t-07", True),
        ("T-07", "  T-07 ", True),
        ("Straße", "STRASSE", True),  # casefold
        ("ﬁve", "five", True),  # NFKC
        ("T-07", "T07", False),
        ("7", 7, False),  # a string fact needs a string prediction
        ("T-07", _MISSING, False),
    ],
)
def test_string_facts(gold: str, pred: Any, expected: bool) -> None:
    assert passed(gold, pred) is expected


def test_run_score_is_mean_over_facts(approx: Any) -> None:
    task = make_task(gold_facts=[
        {"id": "a", "metric": "a", "value": 1.0},
        {"id": "b", "metric": "b", "value": 2.0},
        {"id": "c", "metric": "c", "value": "x"},
    ])
    scores = score([task], [make_run("r1", metrics={"a": 1.0, "b": 3.0, "c": "X"}),
                            make_run("r2", repeat=2, metrics={"a": "1"})])
    assert run_row(scores, "r1")["grounding_accuracy"] == approx(2 / 3)
    assert run_row(scores, "r2")["grounding_accuracy"] == approx(1 / 3)
    assert task_row(scores)["grounding_accuracy"] == approx(0.5)


def test_task_without_facts_has_null_grounding_even_for_failed_runs() -> None:
    task = make_task(gold_insights=[{"id": "i", "text": "spike"}])
    scores = score([task], [make_run("r1", findings=["spike"]),
                            make_run("r2", repeat=2, status="failed")])
    assert run_row(scores, "r1")["grounding_accuracy"] is None
    assert run_row(scores, "r2")["grounding_accuracy"] is None
    assert task_row(scores)["grounding_accuracy"] is None


def test_failed_run_scores_zero_on_grounding() -> None:
    task = make_task(gold_facts=[{"id": "a", "metric": "a", "value": 1.0}])
    scores = score([task], [make_run("r1", metrics={"a": 1}),
                            make_run("r2", repeat=2, status="timeout")])
    assert run_row(scores, "r2")["grounding_accuracy"] == 0.0
    assert run_row(scores, "r2")["grounding_accuracy_method"] == "no_response"
    assert task_row(scores)["grounding_accuracy"] == 0.5


def test_pandas_in_pandas_out() -> None:
    task = make_task(gold_facts=[{"id": "a", "metric": "a", "value": 1.0}])
    data = EvalData.from_records([task], [make_run("r1", metrics={"a": 1})])
    out = grounding_scores(data.facts.to_pandas(), data.runs.to_pandas(),
                           data.metrics.to_pandas())
    assert isinstance(out, pd.DataFrame)
    assert out.loc[0, "grounding_accuracy"] == 1.0


def test_checks_and_scores_keep_run_and_fact_order() -> None:
    # fact_checks (what explain shows) lists runs in their order, each run's facts in the
    # task's order; the scores come in the runs' order with the shares by hand.
    task = make_task(gold_facts=[{"id": f"f{k}", "metric": f"m{k}", "value": float(k)}
                                 for k in range(5)])
    runs = [make_run(f"r{i}", repeat=i + 1,
                     metrics={f"m{k}": float(k) for k in range(5) if (i + k) % 3})
            for i in range(6)]
    data = EvalData.from_records([task], runs)
    checks = fact_checks(data.facts, data.runs, data.metrics)
    assert list(zip(checks["run_id"], checks["fact_id"], strict=True)) == [
        (f"r{i}", f"f{k}") for i in range(6) for k in range(5)]
    ordered = _grounding_scores(data.facts, data.runs, data.metrics)
    assert ordered["run_id"].to_list() == [f"r{i}" for i in range(6)]
    # By hand: run i reports (and passes) fact k unless (i + k) % 3 == 0: r0 and r3 miss
    # k = 0, 3; r1 and r4 miss k = 2; r2 and r5 miss k = 1, 4.
    assert ordered["grounding_accuracy"].to_list() == [3 / 5, 4 / 5, 3 / 5, 3 / 5, 4 / 5, 3 / 5]
