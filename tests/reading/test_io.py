"""Loaders: every bad record named by file, line and field; the good ones go on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

import grade_kit as gk
from grade_kit.frames import raw_records
from grade_kit.reading.io import (
    RecordFile,
    record_lines,
    record_texts,
    write_record_file,
    write_rejects,
)
from grade_kit.reading.records import load_grades, load_judgements, load_runs
from grade_kit.reading.task_files import load_tasks
from grade_kit.schema import InputError, Run
from tests.conftest import ALL_DIMS, make_task, score

GOOD_TASK = {"task_id": "t1", "track": 1, "pack": "p", "prompt": "q", "weights": ALL_DIMS,
             "gold_facts": [{"id": "f", "metric": "m", "value": 1}]}


def run_line(run_id: str = "r1", **changes: Any) -> str:
    record: dict[str, Any] = {
        "run_id": run_id, "setup": "A", "task_id": "t1", "repeat": 1, "attempt_of": None,
        "status": "delivered", "error": None,
        "events": {"submitted": "2026-11-02T09:00:00.000+00:00",
                   "received": "2026-11-02T09:00:10.500+01:00"},
        "response": {"key_findings": ["x"], "structured_metrics": {"m": 1}},
        "tool_calls": None,
    }
    record.update(changes)
    return json.dumps(record)


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_run_rejects_name_line_and_field(tmp_path: Path) -> None:
    lines = [
        run_line("r1"),
        '{"run_id": "r2", "setup": "A",',  # malformed JSON
        run_line("r3", repeat="two"),  # mistyped
        run_line("r4", events={"submitted": "2026-11-02T09:00:00"}),  # naive timestamp
        run_line("r5", task_id="nope"),  # unknown task
        run_line("r1", repeat=2),  # duplicate run_id
        run_line("r6"),  # second primary attempt for (A, t1, 1)
        run_line("r7", attempt_of="ghost"),  # re-run of an unknown run
        run_line("r8", response=None),  # delivered without response
        json.dumps({"setup": "A"}),  # missing fields
        run_line("r9", repeat=2),
        "",  # blank lines are not records
        run_line("r10", attempt_of="r1"),  # a proper re-run
    ]
    path = write(tmp_path / "runs.jsonl", lines)
    loaded = load_runs(path, [make_task()])
    assert [r.run_id for r in loaded.records] == ["r1", "r9", "r10"]
    assert loaded.lines == [1, 11, 13]
    got = {(r.line, r.field) for r in loaded.rejected}
    assert got == {(2, None), (3, "repeat"), (4, "events.submitted"), (5, "task_id"),
                   (6, "run_id"), (7, "attempt_of"), (8, "attempt_of"), (9, None),
                   (10, "run_id")}
    by_line = {r.line: r for r in loaded.rejected}
    assert "malformed JSON" in by_line[2].error
    assert "naive timestamp" in by_line[4].error
    assert "first on line 1" in by_line[6].error
    assert "delivered run needs a 'response'" in by_line[9].error
    assert "missing required field" in by_line[10].error
    assert by_line[4].message().startswith(f"{path}:4: field 'events.submitted': ")
    assert by_line[2].raw == lines[1]  # verbatim


def test_rejects_file_keeps_records_verbatim(tmp_path: Path) -> None:
    bad = '{"run_id": "r2", "setup": "A", "task_id": "t1", "repeat": 0, "status": "failed"}'
    path = write(tmp_path / "runs.jsonl", [run_line("r1"), bad])
    loaded = load_runs(path, [make_task()])
    out = write_rejects(tmp_path / "rejects.jsonl", loaded.rejected)
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert rows == [{"source": str(path), "line": 2, "field": "repeat",
                     "error": rows[0]["error"], "raw": bad}]


def test_ten_thousand_runs_one_bad_line_in_a_hundred(tmp_path: Path) -> None:
    lines = []
    for i in range(10_000):
        if i % 100 == 99:
            lines.append(run_line(f"r{i}", events={"received": "2026-11-02 09:00"}))
        else:
            lines.append(run_line(f"r{i}", repeat=i + 1))
    path = write(tmp_path / "runs.jsonl", lines)
    task = make_task(gold_facts=GOOD_TASK["gold_facts"])
    loaded = load_runs(path, [task])
    assert len(loaded.records) == 9_900
    assert [r.line for r in loaded.rejected] == list(range(100, 10_001, 100))
    assert all(r.field == "events.received" for r in loaded.rejected)
    assert {r.run_id for r in loaded.records} == {
        f"r{i}" for i in range(10_000) if i % 100 != 99}
    scores = score([task], loaded.records)
    assert scores.runs.height == 9_900
    assert scores.runs["grounding_accuracy"].to_list() == [1.0] * 9_900
    assert scores.tasks["runs"].to_list() == [9_900]


def test_timestamps_keep_offsets(tmp_path: Path) -> None:
    from grade_kit.frames import EvalData

    path = write(tmp_path / "runs.jsonl", [run_line("r1")])
    loaded = load_runs(path, [make_task()])
    # the record keeps the timestamp as written; the frame holds its instant in UTC
    assert loaded.records[0].events["received"] == "2026-11-02T09:00:10.500+01:00"
    events = EvalData.from_records([make_task()], loaded.records).events
    received = events.filter(events["event"] == "received").to_dicts()[0]
    assert received["at"].isoformat() == "2026-11-02T08:00:10.500000+00:00"


def task_file(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_task_rejects(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    packs = tmp_path / "packs" / "p"
    packs.mkdir(parents=True)
    (packs / "ground_truth.json").write_text(json.dumps({"a": {"b": 0.25}, "s": "T-07"}))
    task_file(tasks, "01-good.json", json.dumps(GOOD_TASK))
    task_file(tasks, "02-weights.yaml", """
task_id: t2
track: 1
pack: p
prompt: q
weights: {grounding_accuracy: 0.5, insight_quality: 0.4999}
""")
    task_file(tasks, "03-truth.yaml", """
task_id: t3
track: 1
pack: p
prompt: q
weights: {grounding_accuracy: 1.0}
gold_facts:
  - {id: f1, metric: m, ground_truth: a.b}
  - {id: f2, metric: m2, ground_truth: a.missing}
""")
    task_file(tasks, "04-notoken.yaml", """
task_id: t4
track: 1
pack: p
prompt: q
weights: {grounding_accuracy: 1.0}
gold_insights:
  - {id: i1, text: "alpha", patterns: [["alpha|--"]]}
""")
    task_file(tasks, "05-dupe.json", json.dumps(GOOD_TASK))
    task_file(tasks, "06-bad.yaml", "task_id: [unclosed\n")
    task_file(tasks, "sub/07-ok.yaml", """
task_id: t7
track: 2
pack: p
prompt: q
weights: {grounding_accuracy: 0.6, calibration_limitation_handling: 0.4000005}
gold_facts: [{id: f, metric: m, ground_truth: s}]
typo_field: 1
""")
    task_file(tasks, "08-plain.yaml", "task_id: q1\nprompt: what?\nreference_answer: 12\n")
    task_file(tasks, "09-dim.yaml", """
task_id: t9
track: 1
pack: p
prompt: q
weights: {grounding: 1.0}
""")
    loaded = load_tasks(tasks)
    assert [t.task_id for t in loaded.records] == ["t1", "q1", "t7"]  # sorted file order
    t7 = next(t for t in loaded.records if t.task_id == "t7")
    assert t7.gold_facts[0].value == "T-07"
    rejects = {Path(r.source).name: r for r in loaded.rejected}
    assert set(rejects) == {"02-weights.yaml", "03-truth.yaml", "04-notoken.yaml",
                            "05-dupe.json", "06-bad.yaml", "09-dim.yaml"}
    assert "sum to 0.9999" in rejects["02-weights.yaml"].error
    assert rejects["02-weights.yaml"].line == 2  # the record starts on line 2
    assert rejects["03-truth.yaml"].field == "gold_facts[1].ground_truth"
    assert rejects["03-truth.yaml"].line == 9
    assert "'a.missing' is not in pack 'p'" in rejects["03-truth.yaml"].error
    assert rejects["04-notoken.yaml"].field == "gold_insights[0].patterns"
    assert rejects["04-notoken.yaml"].line == 8
    assert "has no token" in rejects["04-notoken.yaml"].error
    assert "duplicate task_id 't1'" in rejects["05-dupe.json"].error
    assert "malformed YAML" in rejects["06-bad.yaml"].error
    assert rejects["09-dim.yaml"].field == "weights"
    assert "unknown weight key(s) ['grounding']" in rejects["09-dim.yaml"].error
    assert "'calibration_limitation_handling'" in rejects["09-dim.yaml"].error
    assert any("typo_field" in w.message for w in loaded.warnings)
    q1 = next(t for t in loaded.records if t.task_id == "q1")
    assert q1.kind == "plain"
    assert q1.reference == 12


def test_the_old_calibration_weight_key_is_rejected_naming_the_expected_keys(
        tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(
        "task_id: t\ntrack: 1\npack: p\nprompt: q\n"
        "weights: {grounding_accuracy: 0.85, calibration: 0.15}\n")
    loaded = load_tasks(tmp_path)
    assert not loaded.records
    (reject,) = loaded.rejected
    assert reject.field == "weights"
    assert "unknown weight key(s) ['calibration']" in reject.error
    for key in ("grounding_accuracy", "insight_quality", "evidence_linkage",
                "calibration_limitation_handling", "consistency", "structure_usability"):
        assert repr(key) in reject.error


def test_claim_text_with_no_token_rejects_task(tmp_path: Path) -> None:
    bad = dict(GOOD_TASK, forbidden_claims=[{"id": "x", "text": " -- "}])
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(GOOD_TASK | {"task_id": "ok"}) + "\n" + json.dumps(bad) + "\n")
    loaded = load_tasks(path)
    assert [t.task_id for t in loaded.records] == ["ok"]
    assert loaded.rejected[0].line == 2
    assert loaded.rejected[0].field == "forbidden_claims[0].text"


@pytest.mark.parametrize("weights", [{"grounding_accuracy": 1.000001},
                                     {"grounding_accuracy": 0.999999}])
def test_weights_tolerance_is_inclusive(weights: dict[str, float], tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(GOOD_TASK | {"weights": weights}) + "\n")
    assert len(load_tasks(path).records) == 1


def test_judgement_and_grade_rejects(tmp_path: Path) -> None:
    runs = load_runs(write(tmp_path / "runs.jsonl", [run_line("r1")]), [make_task()]).records
    j = write(tmp_path / "j.jsonl", [
        json.dumps({"run_id": "r1", "dimension": "evidence_linkage", "score": 0.5, "judge": "h"}),
        json.dumps({"run_id": "r1", "dimension": "evidence_linkage", "score": 0.7, "judge": "h"}),
        json.dumps({"run_id": "r1", "dimension": "structure_usability", "score": 1.5,
                    "judge": "h"}),
        json.dumps({"run_id": "zz", "dimension": "structure_usability", "score": 1,
                    "judge": "h"}),
        '{"run_id": "r1", "dimension": "structure_usability", "score": NaN, "judge": "h"}',
    ])
    loaded = load_judgements(j, runs)
    assert len(loaded.records) == 1
    assert [(r.line, r.field) for r in loaded.rejected] == [
        (2, "dimension"), (3, "score"), (4, "run_id"), (5, "score")]
    grade = {"run_id": "r1", "core_conclusion": "correct", "request_fulfilment": "full",
             "material_error": "no", "grader": "g"}
    g = write(tmp_path / "g.jsonl", [json.dumps(grade), json.dumps(grade),
                                     json.dumps(grade | {"core_conclusion": "right"})])
    loaded_g = load_grades(g, runs)
    assert len(loaded_g.records) == 1
    assert "lines 1 and 2" in loaded_g.rejected[0].error
    assert loaded_g.rejected[1].field == "core_conclusion"


@pytest.mark.parametrize(("change", "field", "message"), [
    ({"gold_insights": [{"id": "c", "text": "a"}], "required_limitations": [{"id": "c",
                                                                              "text": "b"}]},
     None, "claim ids repeat within the task: ['c']"),
    ({"gold_facts": [{"id": "f", "metric": "m", "value": 1},
                     {"id": "f", "metric": "n", "value": 2}]},
     None, "gold fact ids repeat within the task: ['f']"),
    ({"weights": {"grounding_accuracy": 1.5, "insight_quality": -0.5}},
     None, "weights must be finite and non-negative"),
    ({"weights": {"grounding_accuracy": float("inf")}}, None,
     "weights must be finite and non-negative"),
    ({"weights": None, "gold_facts": [{"id": "f", "metric": "m", "value": 1}]},
     None, "a task with gold facts or claims needs 'weights'"),
    ({"weights": {"grounding_accuracy": 0.5, "consistency": 0.4}}, None,
     "sum to 0.9, not 1"),
    ({"gold_facts": [{"id": "f", "metric": "m", "value": 1, "abs_tol": -0.1}]},
     "gold_facts[0].abs_tol", "greater than or equal to 0"),
])
def test_task_validators_reject_with_their_reason(change: dict[str, Any], field: str | None,
                                                  message: str) -> None:
    record = {"task_id": "t", "track": 1, "pack": "p", "prompt": "q",
              "weights": {"grounding_accuracy": 1.0}, **change}
    loaded = load_tasks([record])
    assert not loaded.records
    (reject,) = loaded.rejected
    assert reject.source == "<tasks>" and reject.line == 1
    assert message in reject.error, reject.error
    if field is not None:
        assert reject.field == field


def test_token_counts_are_bounded_so_frames_cannot_overflow(tmp_path: Path) -> None:
    """usage counts up to 10^15 load; a larger one (or a negative one) is a reject naming
    the field, never a crash when the 64-bit frames are built."""
    lines = [run_line("r1", usage={"input_tokens": 10**15, "output_tokens": 0}),
             run_line("r2", repeat=2, usage={"input_tokens": 10**15 + 1}),
             run_line("r3", repeat=3, usage={"output_tokens": 10**20}),
             run_line("r4", repeat=4, usage={"output_tokens": -1})]
    loaded = load_runs(write(tmp_path / "runs.jsonl", lines), [make_task()])
    assert [r.run_id for r in loaded.records] == ["r1"]
    assert [(r.line, r.field) for r in loaded.rejected] == [
        (2, "usage.input_tokens"), (3, "usage.output_tokens"), (4, "usage.output_tokens")]
    assert "less than or equal to 1000000000000000" in loaded.rejected[0].error


def test_a_clock_offset_too_large_for_a_float_is_unknown_not_a_crash() -> None:
    """metadata is free-form: an offset of 10^400 (a JSON integer) or a boolean reads as
    unknown, a finite number as itself."""
    from grade_kit.frames import run_frames

    runs = [{"run_id": f"r{i}", "setup": "A", "task_id": "t1", "repeat": i + 1,
             "status": "failed", "metadata": {"clock": {"source": "x",
                                                        "endpoint_offset_s": offset}}}
            for i, offset in enumerate([10**400, True, -0.25, 3, "2"])]
    loaded = load_runs(runs)
    assert not loaded.rejected
    offsets = run_frames(loaded.records)["runs"].get_column("endpoint_offset_s").to_list()
    assert offsets == [None, None, -0.25, 3.0, None]


def test_a_number_too_long_for_python_is_a_reject_not_a_crash(tmp_path: Path) -> None:
    """Python refuses integers of more than 4,300 digits; in JSON or YAML that is a reject
    naming the file and line, and the other records go on."""
    huge = "9" * 5000
    runs = write(tmp_path / "runs.jsonl", [
        run_line("r1"), run_line("r2", repeat=2).replace('{"m": 1}', '{"m": ' + huge + "}")])
    loaded = load_runs(runs, [make_task()])
    assert [r.run_id for r in loaded.records] == ["r1"]
    assert [r.message() for r in loaded.rejected] == [
        f"{runs}:2: a number too long to read (more than 4,300 digits)"]
    folder = tmp_path / "tasks"
    folder.mkdir()
    (folder / "a.yaml").write_text(f"task_id: a\nprompt: q\ntrack: {huge}\n")
    (folder / "b.yaml").write_text("task_id: b\nprompt: q\n")
    tasks = load_tasks(folder)
    assert [t.task_id for t in tasks.records] == ["b"]
    assert "a number too long to read" in tasks.rejected[0].message()


def test_verdict_checks_remember_what_stood_from_line_to_line() -> None:
    from grade_kit.reading.records import VerdictCheck

    class J:
        def __init__(self, run_id: str, dimension: str) -> None:
            self.run_id, self.dimension = run_id, dimension

    check = VerdictCheck("judgements", frozenset(["r1", "r2"]))
    lines = [("r1", "evidence_linkage", 1), ("zz", "evidence_linkage", 2),
             ("r1", "evidence_linkage", 3), ("r1", "structure_usability", 4),
             ("r1", "structure_usability", 7), ("zz", "evidence_linkage", 8),
             ("r2", "evidence_linkage", 1), ("r2", "evidence_linkage", 1)]  # another file
    assert [check.check(J(run, dim), line) for run, dim, line in lines] == [
        None, ("run_id", "unknown run 'zz'"),
        ("dimension", "second evidence_linkage judgement for run 'r1' (first on line 1)"),
        None,
        ("dimension", "second structure_usability judgement for run 'r1' (first on line 4)"),
        ("run_id", "unknown run 'zz'"),  # a repeat of an unknown run is unknown again
        None, ("dimension", "second evidence_linkage judgement for run 'r2' (first on line 1)")]

    grades = VerdictCheck("grades", None)  # no runs given: every run is known
    assert [grades.check(J("x", ""), line) for line in (3, 5, 9)] == [
        None, ("run_id", "duplicate grade for run 'x' on lines 3 and 5"),
        ("run_id", "duplicate grade for run 'x' on lines 3 and 9")]
    with pytest.raises(ValueError, match="no verdict kind"):
        VerdictCheck("scores", None)


def test_the_loaders_check_verdicts_in_line_order(tmp_path: Path) -> None:
    runs = load_runs(write(tmp_path / "runs.jsonl", [run_line("r1"), run_line("r2", repeat=2)]),
                     [make_task()]).records
    judgement = {"run_id": "r1", "dimension": "evidence_linkage", "score": 0.5, "judge": "h"}
    j = write(tmp_path / "j.jsonl", [
        json.dumps(judgement), "not json", json.dumps(judgement | {"run_id": "zz"}),
        json.dumps(judgement | {"score": 0.1}), json.dumps(judgement | {"run_id": "r2"}),
        json.dumps(judgement | {"score": 2})])
    for loaded in (load_judgements(j, runs),):
        assert [r.run_id for r in loaded.records] == ["r1", "r2"]
        assert loaded.lines == [1, 5]
        assert [(r.line, r.field, r.error[:22]) for r in loaded.rejected] == [
            (2, None, "malformed JSON: Expect"), (3, "run_id", "unknown run 'zz'"),
            (4, "dimension", "second evidence_linkag"), (6, "score", "Input should be less t")]
        assert loaded.rejected[2].error.endswith("(first on line 1)")
        assert loaded.rejected[2].raw == json.dumps(judgement | {"score": 0.1})


def test_records_files_hold_each_record_as_its_json(tmp_path: Path) -> None:
    # A records Parquet file (a scored folder's state, a store's runs) holds each record's
    # JSON text: structs as msgspec writes them, models as pydantic does, one row each; it
    # is read back line by line (numbered by row) and one record alone by index, across
    # row groups (4,096 rows each).
    lines = [json.dumps(json.loads(run_line(
        f"r{i}", repeat=i, response={"key_findings": [f"é {i}\nzwei"],
                                     "structured_metrics": {"m": i}})), ensure_ascii=False)
             for i in range(1, 5002)]
    loaded = load_runs(write(tmp_path / "runs.jsonl", lines))
    assert not loaded.rejected
    raw = list(raw_records(loaded.records))
    raw[3] = loaded.records[3]  # a model among the structs
    assert isinstance(raw[3], Run) and not isinstance(raw[4], Run)
    path = tmp_path / "runs.parquet"
    write_record_file(path, raw)
    texts = [text for _, text in record_lines(path)]
    assert len(texts) == 5001 and [n for n, _ in record_lines(path)][-1] == 5001
    assert texts[3] == raw[3].model_dump_json()
    assert texts[4] == msgspec.json.encode(raw[4]).decode()
    assert json.loads(texts[0])["response"]["key_findings"] == ["é 1\nzwei"]
    one = RecordFile(path)
    for index in (0, 4095, 4096, 5000, 7):
        assert one.text(index) == texts[index]
    again = load_runs(path)  # the one reader, rows numbered as lines
    assert not again.rejected and again.lines[-1] == 5001
    assert [r.model_dump() for r in again.records[:3]] == [
        r.model_dump() for r in loaded.records[:3]]


def test_an_empty_records_file_reads_as_no_records(tmp_path: Path) -> None:
    path = tmp_path / "none.parquet"
    write_record_file(path, [])
    assert list(record_lines(path)) == [] and record_texts([]).len() == 0


def test_a_records_file_that_is_not_one_is_named(tmp_path: Path) -> None:
    path = write(tmp_path / "runs.parquet", [run_line()])
    with pytest.raises(InputError, match=r"runs\.parquet: not a records file"):
        load_runs(path)


def test_names_equal_in_nfc_are_one_name(tmp_path: Path) -> None:
    """§2: setup, task and run ids are read in Unicode NFC: a setup written composed and
    decomposed is one setup, and a run names its task in either form (both on the fast path
    and the reference path)."""
    import unicodedata

    composed, decomposed = "modèle", unicodedata.normalize("NFD", "modèle")
    task_nfc, task_nfd = "café-q", unicodedata.normalize("NFD", "café-q")
    assert composed != decomposed and task_nfc != task_nfd
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"task_id": task_nfc, "prompt": "q"}) + "\n", encoding="utf-8")
    runs = tmp_path / "runs.jsonl"
    runs.write_text("\n".join(json.dumps({
        "run_id": f"r{k}", "setup": setup, "task_id": task, "repeat": k + 1,
        "status": "delivered", "response": {"text": "a"}}, ensure_ascii=ascii)
        for k, (setup, task, ascii) in enumerate([(composed, task_nfd, False),
                                                  (decomposed, task_nfc, False),
                                                  (decomposed, task_nfd, True)])) + "\n",
        encoding="utf-8")
    ev = gk.evaluate(tasks, runs)
    assert ev.rejected.height == 0
    assert set(ev.runs.get_column("setup").to_list()) == {composed}
    assert set(ev.runs.get_column("task_id").to_list()) == {task_nfc}


def test_a_line_past_the_bound_is_rejected_unread(tmp_path: Path) -> None:
    """§6: a records line longer than MAX_LINE_BYTES (16 MiB) is rejected by line, before it
    is decoded and without being held whole (a 40 MB line adds little to the peak, where
    decoding it took about 15 times its size); the lines around it go on."""
    import subprocess
    import sys

    from grade_kit.reading.parse import MAX_LINE_BYTES

    def run(i: int, text: str) -> str:
        return json.dumps({"run_id": f"r{i}", "setup": "A", "task_id": "t1", "repeat": i,
                           "status": "delivered", "response": {"text": text}})

    long_file, short_file = tmp_path / "long.jsonl", tmp_path / "short.jsonl"
    long_file.write_text("\n".join([run(1, "a"), run(2, "x" * 40_000_000), run(3, "b")]) + "\n")
    short_file.write_text("\n".join([run(1, "a"), run(3, "b")]) + "\n")
    code = ("import json, resource, sys; from grade_kit.reading.records import load_runs; "
            "l = load_runs([sys.argv[1]]); "
            "print(json.dumps([len(l.records), [r.message()[:160] for r in l.rejected], "
            "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024]))")
    peaks = {}
    for path in (long_file, short_file):
        done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                              text=True, check=True)
        kept, rejects, peak = json.loads(done.stdout)
        peaks[path.name] = peak
        if path == long_file:
            assert kept == 2 and len(rejects) == 1
            assert "long.jsonl:2: the line is 40,000,1" in rejects[0]
            assert f"longer than the {MAX_LINE_BYTES:,}" in rejects[0]
    assert peaks["long.jsonl"] - peaks["short.jsonl"] < 100  # MiB


def test_compact_tasks_give_the_same_tasks_and_data() -> None:
    """Issue 56: a store's or a reopened evaluation's tasks are held as their JSON text and
    built when asked for; they are the tasks loaded, and their data is the file's."""
    from grade_kit.reading.task_files import CompactTasks, load_tasks, task_as_data
    from grade_kit.schema import Task
    from tests.paths import FIXTURES

    # as a store or a scored folder keeps them: their data (a fact's resolved value, not
    # the ground_truth key it came from)
    loaded = [Task.model_validate(task_as_data(t))
              for t in load_tasks(FIXTURES / "tasks", FIXTURES / "packs").records]
    compact = CompactTasks(loaded)
    assert len(compact) == len(loaded) and compact == loaded
    assert compact[3] == loaded[3] and compact[-1] == loaded[-1]
    assert compact[1:3] == loaded[1:3]
    assert list(compact.as_data()) == [task_as_data(t) for t in loaded]
    assert compact[0] is not compact[0]  # built when asked for, not kept
