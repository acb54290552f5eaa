"""Frames: the column contract, and pandas in -> pandas out for every public scorer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, get_args

import pandas as pd
import polars as pl
import pytest

from grade_kit.frames import (
    COLUMNS,
    RUN_FIELDS,
    EvalData,
    frame_fields,
    model_columns,
    run_frames,
)
from grade_kit.schema import Grade, Judgement, Run, RunLimit
from grade_kit.scorers import (
    aggregate_scores,
    calibration_scores,
    claim_matches,
    consistency_scores,
    insight_scores,
    judged_scores,
    run_scores,
    task_scores,
)
from tests.conftest import judgement, make_run, make_task


def sample() -> EvalData:
    task = make_task(gold_facts=[{"id": "f", "metric": "m", "value": 1}],
                     gold_insights=[{"id": "i", "text": "alpha"}],
                     forbidden_claims=[{"id": "x", "text": "beta"}])
    runs = [make_run("r1", findings=["alpha"], metrics={"m": 1}),
            make_run("r2", repeat=2, findings=["beta"], metrics={"m": 2})]
    return EvalData.from_records([task], runs, [judgement("r1", "evidence_linkage", 0.5)])


def test_frames_follow_the_column_contract() -> None:
    data = sample()
    for name in COLUMNS:
        if name == "scores":
            continue
        frame = getattr(data, name)
        assert dict(frame.schema) == {k: v if isinstance(v, pl.DataType) else v()
                                      for k, v in COLUMNS[name].items()}, name


def test_columns_that_restate_a_field_take_its_type_from_the_model() -> None:
    """The frames' contract cannot drift from the input models: each such column's dtype is
    read off the model's annotation (hand-checked here), and a non-scalar field is refused."""
    assert model_columns(Run, "repeat", "attempt_of", "status", "working_s") == {
        "repeat": pl.Int64, "attempt_of": pl.String, "status": pl.String,
        "working_s": pl.Float64}
    assert model_columns(RunLimit, prefix="limit_") == {"limit_type": pl.String,
                                                        "limit_value": pl.Float64}
    assert model_columns(Grade, "needs_more_information") == {
        "needs_more_information": pl.Boolean}
    assert COLUMNS["grades"] == model_columns(Grade, *(
        n for n in Grade.model_fields if n != "provenance"))
    assert COLUMNS["judgements"]["score"] == pl.Float64
    for name in ("events", "response", "provenance"):
        with pytest.raises(TypeError, match="not a scalar column"):
            model_columns(Run if name != "provenance" else Judgement, name)


def test_every_runs_column_read_off_the_record_is_tied_to_its_field() -> None:
    """Each path of RUN_FIELDS names a scalar field of the run contract (through a nested
    model where it has a dot), and the column's dtype is that field's; the other columns of
    ``runs`` are the computed ones, named once."""
    for column, path in RUN_FIELDS.items():
        model: Any = Run
        *parents, leaf = path.split(".")
        for parent in parents:
            annotation = model.model_fields[parent].annotation
            model = next(a for a in get_args(annotation) if a is not type(None))
        assert model_columns(model, leaf, prefix="")[leaf] == COLUMNS["runs"][column], column
    computed = set(COLUMNS["runs"]) - set(RUN_FIELDS)
    assert computed == {"is_primary", "has_response", "tools_exposed", "clock",
                        "endpoint_offset_s", "follow_up", "resumed", "line"}


@dataclass
class _Bundle:
    first: pl.DataFrame
    note: str
    maybe: pl.DataFrame | None
    second: pl.DataFrame


def test_frame_fields_are_the_frames_a_bundle_declares_in_order() -> None:
    """What a bundle of frames writes and reads back (an evaluation's state) is read off
    its annotations: the DataFrame fields, in order; a text or an optional frame is not
    one. EvalData's are the column contract's frames."""
    assert frame_fields(_Bundle) == ["first", "second"]
    assert frame_fields(EvalData) == [name for name in COLUMNS if name != "scores"]


def test_pandas_in_pandas_out() -> None:
    d = sample()
    pd_ = {name: getattr(d, name).to_pandas() for name in
           ("tasks", "claims", "claim_terms", "runs", "items", "metrics", "judgements",
            "weights")}
    matches = claim_matches(pd_["claims"], pd_["claim_terms"], pd_["runs"], pd_["items"])
    assert isinstance(matches, pd.DataFrame)
    assert isinstance(insight_scores(matches, pd_["runs"], pd_["tasks"]), pd.DataFrame)
    assert isinstance(calibration_scores(matches, pd_["runs"], pd_["tasks"]), pd.DataFrame)
    assert isinstance(judged_scores(pd_["judgements"], pd_["runs"]), pd.DataFrame)
    consistency = consistency_scores(pd_["runs"], pd_["items"], pd_["metrics"])
    assert isinstance(consistency, pd.DataFrame)
    per_run = run_scores(d).to_pandas()
    per_task = task_scores(per_run, consistency, pd_["tasks"], pd_["weights"])
    assert isinstance(per_task, pd.DataFrame)
    overall = aggregate_scores(per_task, "overall")
    assert isinstance(overall, pd.DataFrame)
    polars_overall = aggregate_scores(task_scores(run_scores(d), consistency_scores(
        d.runs, d.items, d.metrics), d.tasks, d.weights), "overall")
    assert isinstance(polars_overall, pl.DataFrame)
    assert overall["composite"].iloc[0] == polars_overall["composite"].item()


def test_null_response_fields_read_as_absent() -> None:
    run = Run.model_validate({"run_id": "r", "setup": "A", "task_id": "t", "repeat": 1,
                              "status": "delivered",
                              "response": {"key_findings": None, "text": None,
                                           "structured_metrics": None}})
    assert run.response is not None
    assert run.response.key_findings == [] and run.response.text == ""


def test_metric_values_that_compare_equal_keep_their_own_columns() -> None:
    """Each distinct metric value is parsed once, and values Python counts as equal keys
    (1, 1.0, True; 0.0 and -0.0) still get their own raw text and number."""
    values = [0.0, -0.0, 0, 1, 1.0, True, -0.0, 0.0, "1", 1, 1.0, 2.5, 2.5, "x", "x", None]
    runs = [make_run(f"r{i}", metrics={"m": value}) for i, value in enumerate(values)]
    metrics = run_frames(runs)["metrics"]
    assert metrics.get_column("raw").to_list() == [
        "0.0", "-0.0", "0", "1", "1.0", "true", "-0.0", "0.0", '"1"', "1", "1.0", "2.5", "2.5",
        '"x"', '"x"', "null"]
    numbers = metrics.get_column("num").to_list()
    assert numbers == [0.0, -0.0, 0.0, 1.0, 1.0, None, -0.0, 0.0, 1.0, 1.0, 1.0, 2.5, 2.5,
                       None, None, None]
    assert [str(n) for n in numbers[:3]] == ["0.0", "-0.0", "0.0"]  # the signs kept
    assert metrics.get_column("str").to_list()[8] == "1"
