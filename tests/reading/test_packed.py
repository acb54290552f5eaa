"""Packed run stores (grade_kit/reading/packed.py, docs/scaling.md): ``grade-kit pack`` keeps every
check and reject of the loaders, and ``gk.evaluate(store)``, one partition at a time, gives
the results of ``gk.evaluate`` on the same inputs in memory."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import grade_kit as gk
import grade_kit.judges
from grade_kit.frames import EvalData
from grade_kit.pipeline.partitioned import _PACK_APART
from grade_kit.reading.packed import (
    StoreRuns,
    is_store,
    pack,
    partition_of,
    read_manifest,
    split_by_task,
)
from grade_kit.schema import InputError
from grade_kit.scorers import combine_scores, grade_scores, partition_scores
from tests.paths import FIXTURES

TASKS = FIXTURES / "tasks"
RUN_FILES = sorted((FIXTURES / "runs").glob("*.jsonl"))


def _extra_runs(path: Path) -> Path:
    """Hostile and awkward lines beside the fixtures: malformed JSON, an unknown task, a
    repeated run_id, a second primary, a re-run naming a run that comes later in the file (it
    stands), one naming another slot and one naming nobody (both rejected)."""
    first = json.loads(RUN_FILES[0].read_text(encoding="utf-8").splitlines()[0])
    base = {**first, "setup": "extra"}

    def run(run_id: str, repeat: int, **fields: Any) -> str:
        return json.dumps({**base, "run_id": run_id, "repeat": repeat, **fields})

    lines = [
        run("x-rerun", 1, attempt_of="x-1", status="delivered"),  # names a later run
        '{"run_id": "broken", ',
        run("x-unknown", 1, task_id="no-such-task"),
        run("x-1", 1),
        run("x-1", 2),  # repeated run_id
        run("x-second", 1),  # a second primary for slot (extra, task, 1)
        run("x-2", 2),
        run("x-wrong-slot", 1, attempt_of="x-2"),
        run("x-nobody", 2, attempt_of="missing"),
        run("x-3", 3, events={"submitted": "2026-11-02T10:01:01"}),  # naive timestamp
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("packed")
    runs = [*RUN_FILES, _extra_runs(folder / "extra.jsonl")]
    loaded = gk.read_inputs(TASKS, runs)
    judged = gk.judges.JUDGES["rules"](loaded.tasks, loaded.runs)
    judgements = folder / "judgements.jsonl"
    with judgements.open("w", encoding="utf-8") as handle:
        for j in judged[: len(judged) // 2]:  # half recorded: the rest stay unjudged
            handle.write(j.model_dump_json() + "\n")
        handle.write('{"run_id": "nobody", "dimension": "evidence_linkage", "score": 1, '
                     '"judge": "x"}\n')
    store = folder / "store"
    report = pack(TASKS, runs, store, judgements=judgements, partitions=3, chunk_lines=37,
                  progress=False)
    return {"runs": runs, "judgements": judgements, "store": store, "report": report}


def _results(ev: gk.Evaluation) -> dict[str, Any]:
    data = ev.results.model_dump(mode="json")
    data["provenance"].pop("created_at")
    data["provenance"].pop("arguments")
    return data


@pytest.mark.parametrize("grader", [None, "rules"])
def test_a_store_scores_exactly_as_the_inputs_in_memory(inputs: dict[str, Any],
                                                        grader: str | None) -> None:
    memory = gk.evaluate(TASKS, inputs["runs"], judgements=inputs["judgements"],
                         grader=grader)
    packed = gk.evaluate(inputs["store"], grader=grader)
    assert _results(packed) == _results(memory)
    assert packed.results.provenance.arguments == {
        "store": str(inputs["store"]), "grader": grader, "repeats": None, "frames": "polars",
        "seed": 20261130, "exclude_channel_overhead": False, "cluster": "question"}
    assert packed.runs_frame.equals(memory.runs_frame)
    keys = ["setup", "task_id"]
    for name in ("runs", "tasks", "tracks", "packs", "overall"):
        assert getattr(packed.scores, name).equals(getattr(memory.scores, name)), name
    assert packed.scores.consistency.sort(keys).equals(memory.scores.consistency.sort(keys))
    assert packed.standard.graded.sort("run_id").equals(memory.standard.graded.sort("run_id"))


def test_run_files_over_the_bound_go_through_a_temporary_store_with_the_same_results(
        inputs: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Above ``STORE_ABOVE_BYTES`` of run files, ``gk.evaluate`` packs them into a temporary
    store and says so in one line; the results (provenance arguments included) are those
    of one pass in memory, and the store goes when the evaluation does. A judge keeps the
    evaluation in memory (a store is scored from recorded judgements)."""
    import gc

    from grade_kit.pipeline import evaluation

    memory = gk.evaluate(TASKS, inputs["runs"], judgements=inputs["judgements"],
                         grader="rules")
    capsys.readouterr()
    monkeypatch.setattr(evaluation, "STORE_ABOVE_BYTES", 1000)
    through = gk.evaluate(TASKS, inputs["runs"], judgements=inputs["judgements"],
                          grader="rules")
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and "temporary packed store" in said[0], said
    store = Path(through.data.extra["store"])
    assert store.is_dir() and store.parent.name.startswith("grade-kit-store-")
    a, b = _results(through), _results(memory)
    assert a == b
    assert (through.results.provenance.arguments == memory.results.provenance.arguments
            == {"judge": None, "grader": "rules", "claim_judge": None, "repeats": None,
                "packs": None, "frames": "polars", "seed": 20261130,
                "exclude_channel_overhead": False, "cluster": "question"})
    assert through.explain(through.runs_frame["run_id"][0]).run == memory.explain(
        memory.runs_frame["run_id"][0]).run
    expected = _written_with_state(through, tmp_path)
    del through
    gc.collect()
    assert not store.parent.exists()
    _reopens_as(tmp_path, expected)  # written, it needs the temporary store no more
    judged = gk.evaluate(TASKS, inputs["runs"], judge="rules")
    assert "store" not in judged.data.extra and capsys.readouterr().err == ""


def test_a_temporary_store_packs_with_its_progress_on_stderr_when_asked(
        inputs: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
        capfd: pytest.CaptureFixture[str]) -> None:
    from grade_kit.pipeline import evaluation

    monkeypatch.setattr(evaluation, "STORE_ABOVE_BYTES", 1000)
    gk.evaluate(TASKS, inputs["runs"], judgements=inputs["judgements"], progress=True)
    out, err = capfd.readouterr()
    assert "run lines read" in err and "run lines read" not in out
    gk.evaluate(TASKS, inputs["runs"], judgements=inputs["judgements"])
    assert "run lines read" not in "".join(capfd.readouterr())


def test_a_temporary_store_that_cannot_be_packed_raises_the_packers_input_error(
        inputs: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from grade_kit.pipeline import evaluation

    monkeypatch.setattr(evaluation, "STORE_ABOVE_BYTES", 1000)
    missing = tmp_path / "no-such-tasks"
    with pytest.raises(InputError, match="no-such-tasks"):
        gk.evaluate(missing, inputs["runs"], judgements=inputs["judgements"])


def test_every_reject_is_kept_with_file_line_and_field(inputs: dict[str, Any]) -> None:
    memory = gk.read_inputs(TASKS, inputs["runs"], judgements=inputs["judgements"])
    packed = gk.evaluate(inputs["store"])
    assert ([r.message() for r in packed.inputs.rejected]
            == [r.message() for r in memory.rejected])
    assert [r.raw for r in packed.inputs.rejected] == [r.raw for r in memory.rejected]
    messages = "\n".join(r.message() for r in packed.inputs.rejected)
    for expected in ("extra.jsonl:2: malformed JSON",
                     "extra.jsonl:3: field 'task_id': unknown task 'no-such-task'",
                     "extra.jsonl:5: field 'run_id': duplicate run_id 'x-1'",
                     "extra.jsonl:6: field 'attempt_of': second primary attempt",
                     "extra.jsonl:8: field 'attempt_of': attempt_of 'x-2' names a run of "
                     "another setup",
                     "extra.jsonl:9: field 'attempt_of': attempt_of 'missing' names no "
                     "accepted run",
                     "extra.jsonl:10: field 'events.submitted'",
                     "field 'run_id': unknown run 'nobody'"):
        assert expected in messages
    assert inputs["report"].rejected == len(memory.rejected) == 8
    assert packed.inputs.files == memory.files  # the same paths, SHA-256 and counts


def test_explain_reads_one_run_back_from_its_partition(inputs: dict[str, Any]) -> None:
    memory = gk.evaluate(TASKS, inputs["runs"], judgements=inputs["judgements"])
    packed = gk.evaluate(inputs["store"])
    for run_id in ("x-rerun", memory.runs_frame.get_column("run_id")[5]):
        a, b = packed.explain(run_id), memory.explain(run_id)
        assert a.facts.equals(b.facts) and a.claims.equals(b.claims)
        assert a.judgements.equals(b.judgements)
    assert packed.scores.matches.get_column("matched_text").null_count() == \
        packed.scores.matches.height  # the answers' text stays on disk


def _written_with_state(ev: gk.Evaluation, out: Path) -> tuple[Any, ...]:
    """``ev`` (of a store) written to ``out``, whose state holds a copy of the store; what
    reopening must give back."""
    written = ev.write(out)
    assert (written["state"] / "store" / "manifest.json").is_file()
    return (ev.results, ev.runs_frame, ev.explain("x-rerun"),
            sorted(r.run_id for r in ev.inputs.runs))


def _reopens_as(out: Path, expected: tuple[Any, ...]) -> None:
    """``out`` reopens, explains and gives back its runs from its own copy of the store,
    the store it was scored from gone (``grade-kit report`` reopens it for every page)."""
    again = gk.reopen(out)
    assert again.results == expected[0] and again.runs_frame.equals(expected[1])
    explained = again.explain("x-rerun")
    assert explained.run == expected[2].run and explained.claims.equals(expected[2].claims)
    assert sorted(r.run_id for r in again.inputs.runs) == expected[3]
    assert Path(again.data.extra["store"]) == out / "evaluation" / "store"


def test_a_store_evaluation_written_reopens_on_its_own(inputs: dict[str, Any],
                                                       tmp_path: Path) -> None:
    given = tmp_path / "given"
    shutil.copytree(inputs["store"], given)
    expected = _written_with_state(gk.evaluate(given), tmp_path / "out")
    shutil.rmtree(given)
    _reopens_as(tmp_path / "out", expected)


def test_the_store_gives_back_every_run_record(inputs: dict[str, Any]) -> None:
    memory = gk.read_inputs(TASKS, inputs["runs"])
    packed = gk.evaluate(inputs["store"]).inputs.runs
    assert isinstance(packed, StoreRuns) and len(packed) == len(memory.runs) == 603
    assert sorted((r.model_dump() for r in packed), key=lambda r: r["run_id"]) == sorted(
        (r.model_dump() for r in memory.runs), key=lambda r: r["run_id"])
    everything = list(packed)
    assert packed[-1] == everything[-1] and packed[-603] == everything[0]
    with pytest.raises(IndexError):
        packed[-604]  # one before the first: not wrapped into a partition
    assert packed[600:] == everything[600:]
    assert "603 runs (1 re-runs) of 4 setups" in repr(gk.evaluate(inputs["store"]).inputs)


def test_partitions_hold_whole_tasks(inputs: dict[str, Any]) -> None:
    manifest = read_manifest(inputs["store"])
    assert manifest["partitions"] == 3 and sum(manifest["partition_runs"].values()) == 603
    for folder in sorted((inputs["store"] / "runs").iterdir()):
        k = int(folder.name.removeprefix("p="))
        tasks = pl.read_parquet(list(folder.glob("*.parquet"))).get_column("task_id").unique()
        assert all(partition_of(t, 3) == k for t in tasks.to_list())
    # CRC-32's published check value: crc32("123456789") = 0xCBF43926 = 3421780262
    assert partition_of("123456789", 16) == 0x6 and partition_of("123456789", 1000) == 262


def test_map_and_reduce_equal_one_pass() -> None:
    """combine_scores over partition_scores of any split by task = grade_scores."""
    loaded = gk.read_inputs(TASKS, RUN_FILES)
    data = EvalData.from_records(loaded.tasks, loaded.runs)
    whole = grade_scores(data)
    task_ids = data.tasks.get_column("task_id").to_list()
    parts = []
    for half in (task_ids[::2], task_ids[1::2]):
        keep = pl.col("task_id").is_in(half)
        runs = data.runs.filter(keep)
        ids = pl.col("run_id").is_in(runs.get_column("run_id").implode())
        parts.append(partition_scores(EvalData.from_frames({
            **{k: getattr(data, k) for k in ("tasks", "weights", "facts", "claims",
                                             "claim_terms")},
            "runs": runs, **{k: getattr(data, k).filter(ids) for k in
                             ("items", "metrics", "events", "tool_calls", "usage", "judgements",
                              "grades")}})))
    split = combine_scores(parts, data.tasks, data.weights)
    for name in ("runs", "tasks", "tracks", "packs", "overall"):
        assert getattr(split, name).equals(getattr(whole, name)), name


def test_pack_never_writes_into_a_folder_with_files(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(InputError, match="not an empty folder"):
        pack(TASKS, RUN_FILES, tmp_path, progress=False)
    assert (tmp_path / "keep.txt").read_text() == "mine" and not is_store(tmp_path)


def test_a_store_is_passed_alone(inputs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="pass it alone"):
        gk.evaluate(inputs["store"], RUN_FILES)
    with pytest.raises(ValueError, match="pass it alone"):
        gk.evaluate(TASKS, inputs["store"])
    with pytest.raises(ValueError, match="judge or grade the runs first"):
        gk.evaluate(inputs["store"], judge="rules")


def test_cli_pack_then_score(tmp_path: Path) -> None:
    store, out = tmp_path / "store", tmp_path / "out"
    cli = [sys.executable, "-m", "grade_kit.cli"]
    packed = subprocess.run([*cli, "pack", str(TASKS), *map(str, RUN_FILES), "--partitions",
                             "4", "--out", str(store)], capture_output=True, text=True,
                            check=False)
    assert packed.returncode == 0, packed.stderr
    assert "600 runs" in packed.stdout and "4 partitions" in packed.stdout
    scored = subprocess.run([*cli, "score", str(store), "--out", str(out)],
                            capture_output=True, text=True, check=False)
    assert scored.returncode == 0, scored.stderr
    memory = gk.evaluate(TASKS, RUN_FILES)
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["setups"] == memory.results.model_dump(mode="json")["setups"]
    twice = subprocess.run([*cli, "score", str(store), str(RUN_FILES[0]), "--out", str(out)],
                           capture_output=True, text=True, check=False)
    assert twice.returncode != 0 and "give no RUNS" in twice.stderr


def test_partitions_scored_in_worker_processes_give_the_same_results(
        inputs: dict[str, Any]) -> None:
    """The map step on an executor (spawned workers: each reads its own partition)."""
    one_by_one = gk.evaluate(inputs["store"], grader="rules")
    with ProcessPoolExecutor(max_workers=2, mp_context=get_context("spawn")) as pool:
        parallel = gk.evaluate(inputs["store"], grader="rules", map_partitions=pool.map)
    assert _results(parallel) == _results(one_by_one)
    assert parallel.runs_frame.equals(one_by_one.runs_frame)


def test_cli_scores_with_worker_processes(inputs: dict[str, Any],
                                                  tmp_path: Path) -> None:
    cli = [sys.executable, "-m", "grade_kit.cli", "score"]
    done = subprocess.run([*cli, str(inputs["store"]), "--workers", "2", "--out",
                           str(tmp_path / "out")], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    memory = gk.evaluate(TASKS, inputs["runs"], judgements=inputs["judgements"])
    results = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert results["setups"] == memory.results.model_dump(mode="json")["setups"]
    in_memory = subprocess.run([*cli, str(TASKS), *map(str, inputs["runs"]), "--judgements",
                                str(inputs["judgements"]), "--workers", "2", "--out",
                                str(tmp_path / "memory")], capture_output=True, text=True,
                               check=False)
    assert in_memory.returncode == 0, in_memory.stderr
    again = json.loads((tmp_path / "memory" / "results.json").read_text(encoding="utf-8"))
    assert again["setups"] == results["setups"]


def test_the_map_reduce_example_of_the_docs_runs() -> None:
    """docs/examples/map_reduce.py: the map and the reduce by hand and through gk.evaluate on
    two spawned processes, each checked against the in-memory evaluation."""
    example = FIXTURES.parent / "docs" / "examples" / "map_reduce.py"
    done = subprocess.run([sys.executable, str(example)], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert "gives the in-memory results" in done.stdout


def test_a_pack_that_fails_leaves_no_half_store(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with pytest.raises(InputError, match="no such file"):
        pack(TASKS, [RUN_FILES[0], tmp_path / "missing.jsonl"], store, progress=False)
    assert not store.exists() and not is_store(store)
    pack(TASKS, RUN_FILES[:1], store, progress=False)  # the same folder, once the input is right
    assert is_store(store)


def test_in_memory_inputs_split_by_task_and_mapped_give_the_same_results(
        inputs: dict[str, Any]) -> None:
    """gk.evaluate(tasks, runs, map_partitions=...) splits the frames by task as a store is
    split, maps partition_scores, combines: the results of one pass, bit for bit."""
    one_pass = gk.evaluate(TASKS, inputs["runs"], judgements=inputs["judgements"],
                           grader="rules")
    with ProcessPoolExecutor(max_workers=2, mp_context=get_context("spawn")) as pool:
        mapped = gk.evaluate(TASKS, inputs["runs"], judgements=inputs["judgements"],
                             grader="rules", map_partitions=pool.map)
    assert _results(mapped) == _results(one_pass)
    assert mapped.runs_frame.equals(one_pass.runs_frame)
    for name in ("runs", "tasks", "tracks", "packs", "overall"):
        assert getattr(mapped.scores, name).equals(getattr(one_pass.scores, name)), name
    keys = ["run_id", "claim_id"]
    assert mapped.scores.matches.sort(keys).equals(one_pass.scores.matches.sort(keys))
    assert mapped.standard.graded.sort("run_id").equals(one_pass.standard.graded.sort("run_id"))
    parts = split_by_task(mapped.data)
    assert 1 < len(parts) <= 16 and sum(p.runs.height for p in parts) == mapped.data.runs.height
    for part in parts:  # whole tasks in each part
        assert part.runs.get_column("task_id").unique().is_in(
            pl.concat([q.runs for q in parts if q is not part]).get_column("task_id")
            .implode()).sum() == 0


def test_a_store_record_changed_on_disk_is_named_when_read(inputs: dict[str, Any],
                                                           tmp_path: Path) -> None:
    # The store's run records pass the one reader as any file's do: a record edited after
    # packing is refused with its file, row and field, not handed out.
    store = tmp_path / "store"
    shutil.copytree(inputs["store"], store)
    chunk = sorted((store / "runs" / "p=000").glob("*.parquet"))[0]
    frame = pl.read_parquet(chunk)
    bad = json.loads(frame["record"][1])
    bad["repeat"] = "twice"
    records = frame["record"].to_list()
    frame.with_columns(pl.Series("record", [records[0], json.dumps(bad), *records[2:]])
                       ).write_parquet(chunk)
    runs = StoreRuns(store, read_manifest(store))
    with pytest.raises(InputError, match=rf"{re.escape(str(chunk))}: row 2, field 'repeat'"):
        runs[0]
    # a record missing (null), or a column of numbers, is refused as plainly
    frame.with_columns(pl.Series("record", [records[0], None, *records[2:]])
                       ).write_parquet(chunk)
    with pytest.raises(InputError, match=rf"{re.escape(str(chunk))}: row 2, field '-': a "
                                         "record must be a JSON object"):
        StoreRuns(store, read_manifest(store))[0]
    frame.with_columns(pl.Series("record", range(frame.height))).write_parquet(chunk)
    with pytest.raises(InputError, match=r"not a records file \(its record column holds int64"):
        StoreRuns(store, read_manifest(store))[0]


def test_the_packing_process_stops_once_its_caller_is_gone(tmp_path: Path) -> None:
    """The process that packs large run files into a temporary store watches its caller:
    once that is gone (killed, so nobody will read the store), it stops at once, without
    a word and without finishing the store. Here it is told of a caller that is not its
    parent, as after the caller's death."""
    arguments = {"tasks": str(FIXTURES / "tasks"),
                 "runs": str(FIXTURES / "runs"), "judgements": None,
                 "grades": None, "out": str(tmp_path / "store"), "packs": None,
                 "progress": False, "parent": -1}
    done = subprocess.run([sys.executable, "-c", _PACK_APART, json.dumps(arguments)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert (done.returncode, done.stdout) == (1, "")
    assert not (tmp_path / "store" / "manifest.json").exists()
