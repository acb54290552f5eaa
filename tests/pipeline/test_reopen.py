"""Score once, report many: gk.reopen(DIR) gives back the evaluation ev.write(DIR) wrote,
frame for frame, without scoring again."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import grade_kit as gk
from grade_kit.frames import frame_fields
from grade_kit.schema import InputError
from tests.paths import DATA, EXAMPLE


def _same(a: gk.Evaluation, b: gk.Evaluation) -> None:
    # every frame each part declares (a frame added to one is written and read back too)
    for part in ("data", "scores", "standard"):
        names = frame_fields(type(getattr(a, part)))
        assert len(names) >= 7
        for name in names:
            assert_frame_equal(getattr(getattr(a, part), name),
                               getattr(getattr(b, part), name))
    for name in ("leaderboard", "runs", "grades", "timing", "tool_calls", "comparisons",
                 "rejected", "warnings"):
        assert_frame_equal(getattr(a, name), getattr(b, name))
    assert a.results == b.results and a.standard.compared == b.standard.compared
    assert repr(a) == repr(b) and repr(a.summary) == repr(b.summary)
    assert a.inputs.rejected == b.inputs.rejected and a.inputs.files == b.inputs.files


def test_reopen_equals_the_evaluation_that_wrote_it(tmp_path: Path) -> None:
    ev = gk.evaluate(EXAMPLE / "tasks", EXAMPLE / "runs.jsonl",
                     judgements=EXAMPLE / "judgements.jsonl", grades=EXAMPLE / "grades.jsonl",
                     judge="rules")
    written = ev.write(tmp_path)
    assert written["state"] == tmp_path / "evaluation"
    again = gk.reopen(tmp_path)
    _same(ev, again)
    worst = ev.runs.sort("composite").get_column("run_id")[0]
    assert repr(ev.explain(worst)) == repr(again.explain(worst))
    # the records are read back only when asked for, and then equal
    assert len(again.inputs.runs) == len(ev.inputs.runs)
    assert [r.model_dump() for r in again.inputs.runs] == [
        r.model_dump() for r in gk.read_inputs(EXAMPLE / "tasks", EXAMPLE / "runs.jsonl").runs]
    pandas = gk.reopen(tmp_path, frames="pandas")
    assert not isinstance(pandas.runs, pl.DataFrame)


def test_an_imported_log_and_a_rewrite_reopen_too(tmp_path: Path) -> None:
    ev = gk.evaluate(DATA / "inspect_constructed" / "agentic.json")
    ev.write(tmp_path)
    ev.write(tmp_path)  # a second write replaces the state whole
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".evaluation")) == []
    _same(ev, gk.reopen(tmp_path))


def test_a_folder_without_state_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no scored evaluation"):
        gk.reopen(tmp_path)


def test_one_record_is_read_from_its_own_line(tmp_path: Path) -> None:
    """The explorer shows one run at a time: reading it does not read every record."""
    ev = gk.evaluate(EXAMPLE / "tasks", EXAMPLE / "runs.jsonl")
    ev.write(tmp_path)
    runs = gk.reopen(tmp_path).inputs.runs
    third = runs[2]
    assert list(runs._one) == [2]  # nothing else was read
    assert third.model_dump() == list(ev.inputs.runs)[2].model_dump()
    assert runs[-1].model_dump() == list(ev.inputs.runs)[-1].model_dump()
    with pytest.raises(IndexError):
        runs[len(runs)]
    # every line's start is written beside the records: each record, read alone, is its own
    fresh = gk.reopen(tmp_path).inputs.runs
    assert [fresh[i].run_id for i in range(len(fresh))] == [r.run_id for r in ev.inputs.runs]


def test_an_empty_records_file_has_no_line_to_read(tmp_path: Path) -> None:
    ev = gk.evaluate(EXAMPLE / "tasks", EXAMPLE / "runs.jsonl")  # no judgements recorded
    ev.write(tmp_path)
    judgements = gk.reopen(tmp_path).inputs.judgements
    assert len(judgements) == 0
    with pytest.raises(IndexError):
        judgements[0]


def test_a_first_line_with_a_byte_order_mark_reopens(tmp_path: Path) -> None:
    text = (EXAMPLE / "runs.jsonl").read_text(encoding="utf-8")
    runs = tmp_path / "runs.jsonl"
    runs.write_bytes(b"\xef\xbb\xbf" + text.encode())
    ev = gk.evaluate(EXAMPLE / "tasks", runs)
    ev.write(tmp_path / "out")
    again = gk.reopen(tmp_path / "out")
    assert [r.run_id for r in again.inputs.runs] == [r.run_id for r in ev.inputs.runs]
    assert oct((tmp_path / "out" / "evaluation").stat().st_mode & 0o777) == "0o755"


def test_a_page_reopens_a_scored_folder_or_evaluates(tmp_path: Path) -> None:
    """What each notebook calls: the scored folder when the report passes one, else the
    inputs evaluated, else the demo's; runs without tasks are a clear error."""
    ev = gk.evaluate(EXAMPLE / "tasks", EXAMPLE / "runs.jsonl")
    ev.write(tmp_path)
    _same(ev, gk.reopen_or_evaluate(tmp_path))
    fresh = gk.reopen_or_evaluate(None, EXAMPLE / "tasks", EXAMPLE / "runs.jsonl", judge=None)
    assert fresh.results.setups.keys() == ev.results.setups.keys()
    # evaluated: its records held in memory; reopened: read from the folder's records file
    assert not isinstance(fresh.inputs.runs.source, Path)
    assert gk.reopen(tmp_path).inputs.runs.source == tmp_path / "evaluation" / (
        "records-runs.parquet")
    with pytest.raises(ValueError, match="give the tasks of these runs"):
        gk.reopen_or_evaluate(None, None, EXAMPLE / "runs.jsonl")
    demo = gk.reopen_or_evaluate(None)  # neither: the demo suite and its recorded runs
    assert (len(demo.inputs.tasks), len(demo.inputs.runs)) == (40, 600)


def test_a_scored_folder_asked_for_again_is_read_once(tmp_path: Path) -> None:
    """A kernel that runs several notebooks reads their one scored folder once; a folder
    written again since is read again."""
    ev = gk.evaluate(EXAMPLE / "tasks", EXAMPLE / "runs.jsonl")
    ev.write(tmp_path / "a")
    ev.write(tmp_path / "b")
    first = gk.reopen_or_evaluate(tmp_path / "a")
    assert gk.reopen_or_evaluate(str(tmp_path / "a")) is first
    other = gk.reopen_or_evaluate(tmp_path / "b")
    assert other is not first
    graded = gk.evaluate(EXAMPLE / "tasks", EXAMPLE / "runs.jsonl", grader="rules")
    graded.write(tmp_path / "b")  # the same folder, written again
    again = gk.reopen_or_evaluate(tmp_path / "b")
    assert again is not other
    assert_frame_equal(again.grades, graded.grades)


def test_values_json_allows_beyond_the_typed_fields_are_kept_as_read(tmp_path: Path) -> None:
    """An open field (reported metrics, metadata) may hold what Python's JSON reads and
    msgspec does not (NaN, infinities, integers past 64 bits): the records a scored folder
    and a packed store keep are the values read, not null (methodology §6), and the store's
    metrics frame is the in-memory one."""
    import json

    first = json.loads((EXAMPLE / "runs.jsonl").read_text(encoding="utf-8").splitlines()[0])
    odd = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf"),
           "big": 2**70 + 1, "negative_zero": -0.0}
    first["response"]["structured_metrics"].update(odd)
    first["metadata"] = {"odd": odd}
    runs = tmp_path / "runs.jsonl"
    runs.write_text(json.dumps(first) + "\n", encoding="utf-8")
    as_read = json.dumps(first["response"]["structured_metrics"])  # NaN, Infinity as Python writes
    ev = gk.evaluate(EXAMPLE / "tasks", runs)
    assert json.dumps(ev.inputs.runs[0].response.structured_metrics) == as_read
    ev.write(tmp_path / "scored")
    again = gk.reopen(tmp_path / "scored").inputs.runs[0]
    assert json.dumps(again.response.structured_metrics) == as_read
    assert json.dumps(again.metadata) == json.dumps(first["metadata"])
    metrics = ev.data.metrics.filter(pl.col("key").is_in(list(odd)))
    assert sorted(metrics.get_column("raw").to_list()) == sorted(
        ["NaN", "Infinity", "-Infinity", str(2**70 + 1), "-0.0"])
    gk.pack(EXAMPLE / "tasks", runs, tmp_path / "store", progress=False)
    stored = gk.evaluate(tmp_path / "store")
    assert json.dumps(stored.inputs.runs[0].response.structured_metrics) == as_read
    from grade_kit.reading.packed import read_store_frame

    model = gk.evaluate(EXAMPLE / "tasks", [gk.Run.model_validate(first)])  # in memory
    assert json.dumps(model.inputs.runs[0].response.structured_metrics) == as_read
    assert_frame_equal(model.data.metrics, ev.data.metrics)

    assert_frame_equal(read_store_frame(tmp_path / "store", "metrics").sort("run_id", "key"),
                       ev.data.metrics.sort("run_id", "key"))


def test_an_evaluation_holds_its_records_as_the_records_files_it_writes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once flattened, an evaluation's records are held as records files in memory (the
    same records, counted the same), and the state writes those very bytes."""
    import pyarrow as pa

    from grade_kit.reading.io import HeldRecords

    given = (EXAMPLE / "tasks", EXAMPLE / "runs.jsonl")
    ev = gk.evaluate(*given, judgements=EXAMPLE / "judgements.jsonl",
                     grades=EXAMPLE / "grades.jsonl")
    read = gk.read_inputs(*given, judgements=EXAMPLE / "judgements.jsonl",
                          grades=EXAMPLE / "grades.jsonl")
    assert repr(ev.inputs) == repr(read)
    for name in ("runs", "judgements", "grades"):
        held = getattr(ev.inputs, name)
        assert isinstance(held, HeldRecords) and isinstance(held.source, pa.Buffer)
        assert [r.model_dump() for r in held] == [r.model_dump() for r in getattr(read, name)]
    assert ev.inputs.runs[3].model_dump() == read.runs[3].model_dump()
    assert list(ev.inputs.runs._one) == [3]  # one record asked for, one read
    import grade_kit.pipeline.state as state

    def no_encoding(*_: object) -> None:
        raise AssertionError("held records were encoded again")

    monkeypatch.setattr(state, "write_record_file", no_encoding)
    ev.write(tmp_path)  # the held bytes, written as they are
    for name in ("runs", "judgements", "grades"):
        written = (tmp_path / "evaluation" / f"records-{name}.parquet").read_bytes()
        assert written == getattr(ev.inputs, name).source.to_pybytes()
