"""Reading run files in several processes (grade_kit._parallel, docs/scaling.md): the same
records, lines, rejects and frames as the sequential loader, on random and hostile lines."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import msgspec
import pytest
from pydantic import BaseModel

import grade_kit as gk
from grade_kit import _parallel
from grade_kit._fastread import FlatRuns, FlatVerdicts, raw_records
from grade_kit.explorer import Explorer
from grade_kit.frames import run_frames, verdict_frames
from grade_kit.io import InputError, Loaded, RunChecks, load_runs
from grade_kit.schema import Run, Task

from .test_fastread import TASKS, _run_lines, _verdict_lines

ROOT = Path(__file__).resolve().parents[1]


def _hostile_files(folder: Path) -> list[Path]:
    """Two run files of random and hostile lines (test_fastread's), with what only a byte
    reader meets: a byte-order mark, blank lines, CRLF endings, bytes that are not UTF-8,
    no final newline, and run ids repeated across the files."""
    first = _run_lines(11, 1200)
    second = _run_lines(12, 800)  # its run ids r0... repeat the first file's
    one = folder / "a.jsonl"
    one.write_bytes(b"\xef\xbb\xbf" + "\n".join(first[:600]).encode() + b"\n\n  \n"
                    + "\r\n".join(first[600:]).encode() + b"\n\xff\xfe{}\n")
    two = folder / "b.jsonl"
    two.write_bytes("\n".join(second).encode())  # no final newline
    return [one, two]


def _same(parallel: Loaded[Run], sequential: Loaded[Run]) -> None:
    assert isinstance(parallel.records, FlatRuns)
    assert [r.message() for r in parallel.rejected] == [r.message() for r in
                                                        sequential.rejected]
    assert [r.raw for r in parallel.rejected] == [r.raw for r in sequential.rejected]
    assert parallel.lines == sequential.lines and parallel.sources == sequential.sources
    assert [m.model_dump() for m in parallel.records] == [m.model_dump() for m in
                                                          sequential.records]
    expected = run_frames(sequential.records, sequential.lines)
    got = run_frames(parallel.records, parallel.lines)
    for name, frame in expected.items():
        assert got[name].equals(frame, null_equal=True), name


@pytest.mark.parametrize("workers", [2, 3])
def test_parallel_read_equals_sequential_read(tmp_path: Path, workers: int,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    files = _hostile_files(tmp_path)
    tasks = [Task(task_id=t, prompt="q") for t in TASKS[:-1]]  # one task id is unknown
    sequential = load_runs(files, tasks, workers=1)
    assert not isinstance(sequential.records, FlatRuns)
    monkeypatch.setattr(_parallel, "PARALLEL_BYTES", 0)
    parallel = load_runs(files, tasks, workers=workers)
    # hostile enough to matter: every kind of reject, re-runs kept and refused
    reasons = {r.field for r in sequential.rejected}
    assert {"run_id", "attempt_of", "task_id", None} <= reasons
    assert len(sequential.records) > 300 and len(sequential.rejected) > 300
    _same(parallel, sequential)
    keys = [(k.run_id, k.setup, k.attempt_of) for k in parallel.records.raw]
    assert keys == [(r.run_id, r.setup, r.attempt_of) for r in sequential.records]


def test_inputs_read_with_verdicts_decoded_meanwhile_are_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Judgement and grade files decoded by the reading processes (in two ranges each) and
    checked afterwards: every reject of the sequential loader, in its order, with its text
    (bad lines, unknown runs, a repeated judgement and a repeated grade, a byte-order mark,
    blank lines, CRLF endings, bytes that are not UTF-8, no final newline), and the same
    records."""
    files = _hostile_files(tmp_path)
    judged, graded = _verdict_lines(13, 1200)
    (tmp_path / "judgements.jsonl").write_bytes(
        ("\n".join(judged[:700]) + "\n\n" + "\r\n".join(judged[700:]) + "\n").encode())
    graded += graded[:300]  # repeated grades: rejects naming both lines
    (tmp_path / "grades.jsonl").write_bytes(b"\xef\xbb\xbf" + "\n".join(graded[:500]).encode()
                                            + b"\n\xff\xfe{}\n\r\n"
                                            + "\n".join(graded[500:]).encode())
    tasks = [Task(task_id=t, prompt="q") for t in TASKS[:-1]]

    def read(workers: int) -> gk.Inputs:
        return gk.read_inputs(tasks, files, judgements=tmp_path / "judgements.jsonl",
                              grades=tmp_path / "grades.jsonl", workers=workers)

    sequential = read(1)
    monkeypatch.setattr(_parallel, "PARALLEL_BYTES", 0)
    decoded_by_workers: list[str] = []
    add = _parallel.VerdictChecks.add

    def counted(self: Any, part: _parallel.VerdictPart) -> None:
        decoded_by_workers.append(Path(part.source).name)
        add(self, part)

    monkeypatch.setattr(_parallel.VerdictChecks, "add", counted)
    parallel = read(2)
    # judgements and grades, two ranges each
    assert decoded_by_workers == ["judgements.jsonl"] * 2 + ["grades.jsonl"] * 2
    assert isinstance(parallel.runs, FlatRuns)
    reasons = {(r.source.rsplit("/", 1)[-1], r.error.split(" ")[0]) for r in sequential.rejected}
    assert {("judgements.jsonl", "unknown"), ("judgements.jsonl", "second"),
            ("grades.jsonl", "unknown"), ("grades.jsonl", "duplicate"),
            ("grades.jsonl", "invalid")} <= reasons  # invalid UTF-8
    assert [r.message() for r in parallel.rejected] == [r.message() for r in
                                                        sequential.rejected]
    assert [r.raw for r in parallel.rejected] == [r.raw for r in sequential.rejected]
    assert {r.source for r in sequential.rejected} >= {str(tmp_path / "judgements.jsonl"),
                                                       str(tmp_path / "grades.jsonl")}
    assert parallel.run_lines == sequential.run_lines and parallel.files == sequential.files
    for name in ("runs", "judgements", "grades"):
        got, expected = getattr(parallel, name), getattr(sequential, name)
        assert [m.model_dump() for m in got] == [m.model_dump() for m in expected], name
    for name in ("judgements", "grades"):  # their frame as the loaders' records give it
        got, expected = getattr(parallel, name), getattr(sequential, name)
        assert isinstance(got, FlatVerdicts) and not isinstance(expected, FlatVerdicts)
        assert got.frame.equals(verdict_frames(**{name: expected})[name], null_equal=True)
        assert [_plain(r) for r in raw_records(got)] == [_plain(r) for r in
                                                         raw_records(expected)], name


def _plain(record: Any) -> Any:
    return record.model_dump() if isinstance(record, BaseModel) else msgspec.to_builtins(record)


def test_a_verdict_msgspec_cannot_read_is_read_back_as_the_reference_path_reads_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An integer beyond 64 bits in a provenance (msgspec refuses it, Python's JSON reads
    it): the same records read in parallel (their models read back from the lines)."""
    files = _hostile_files(tmp_path)
    lines = [json.dumps({"run_id": f"r{i}", "dimension": "evidence_linkage", "score": 0.5,
                         "judge": "j", "provenance": {"n": 10**30 if i % 3 == 0 else i}})
             for i in range(40)]
    (tmp_path / "judgements.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    tasks = [Task(task_id=t, prompt="q") for t in TASKS[:-1]]
    read = [gk.read_inputs(tasks, files, judgements=tmp_path / "judgements.jsonl",
                           workers=1)]
    monkeypatch.setattr(_parallel, "PARALLEL_BYTES", 0)
    read.append(gk.read_inputs(tasks, files, judgements=tmp_path / "judgements.jsonl",
                               workers=2))
    sequential, parallel = ([j.model_dump() for j in r.judgements] for r in read)
    assert parallel == sequential and {"n": 10**30} in [j["provenance"] for j in sequential]


def test_a_missing_verdict_file_is_named_as_the_sequential_reader_names_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _hostile_files(tmp_path)
    tasks = [Task(task_id=t, prompt="q") for t in TASKS[:-1]]
    errors = []
    for workers, parallel_bytes in ((1, _parallel.PARALLEL_BYTES), (2, 0)):
        monkeypatch.setattr(_parallel, "PARALLEL_BYTES", parallel_bytes)
        with pytest.raises(InputError) as raised:
            gk.read_inputs(tasks, files, judgements=tmp_path / "missing.jsonl",
                           workers=workers)
        errors.append(str(raised.value))
    assert errors[0] == errors[1] and "missing.jsonl" in errors[0]


def test_small_inputs_are_read_in_this_process(tmp_path: Path) -> None:
    files = _hostile_files(tmp_path)
    assert not isinstance(load_runs(files, workers=2).records, FlatRuns)  # under 64 MB


def test_evaluation_is_the_same_read_either_way(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    fixtures = ROOT / "fixtures"
    sequential = gk.evaluate(fixtures / "tasks", fixtures / "runs")
    monkeypatch.setattr(_parallel, "PARALLEL_BYTES", 0)
    parallel = gk.evaluate(fixtures / "tasks", fixtures / "runs")
    assert isinstance(parallel.inputs.runs, FlatRuns)
    got, expected = parallel.results.model_dump(), sequential.results.model_dump()
    for results in (got, expected):
        del results["provenance"]["created_at"]
    assert got == expected
    run_id = sequential.runs.get_column("run_id")[7]
    assert str(parallel.explain(run_id)) == str(sequential.explain(run_id))
    assert Explorer(parallel).run_html(run_id) == Explorer(sequential).run_html(run_id)


@pytest.mark.parametrize("size, pieces", [(0, 2), (1, 2), (5, 4), (200, 3), (1000, 7)])
def test_byte_ranges_cut_at_newlines_and_number_lines(tmp_path: Path, size: int,
                                                      pieces: int) -> None:
    path = tmp_path / "runs.jsonl"
    lines = [("x" * (i % 13)).encode() for i in range(size)]
    path.write_bytes(b"\n".join(lines) + (b"\n" if size % 2 else b""))
    ranges = _parallel.byte_ranges([path], pieces)
    data = path.read_bytes()
    assert ranges[0].start == 0 and ranges[-1].end == len(data)
    assert len(ranges) <= pieces
    for a, b in itertools.pairwise(ranges):
        assert a.end == b.start and data[b.start - 1:b.start] == b"\n"
    for part in ranges:
        assert part.first_line == data[:part.start].count(b"\n") + 1
    twice = _parallel.byte_ranges([path, path], pieces)  # each file numbered from line 1
    assert len(twice) == 2 * len(ranges)
    assert [p.first_line for p in twice] == 2 * [p.first_line for p in ranges]
    assert twice[-1] == ranges[-1] and twice[1:3] == list(twice)[1:3]


def test_a_model_is_read_back_from_its_line_and_a_changed_file_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(
        f'{{"run_id": "r{i}", "setup": "A", "task_id": "t", "repeat": {i + 1}, '
        f'"status": "failed"}}\n' for i in range(4)), encoding="utf-8")
    monkeypatch.setattr(_parallel, "PARALLEL_BYTES", 0)
    runs = load_runs(path, workers=2).records
    assert [r.run_id for r in runs] == ["r0", "r1", "r2", "r3"]
    assert runs[-1].repeat == 4
    fresh = load_runs(path, workers=2).records
    path.write_text(path.read_text().replace('"r2"', '"zz"'), encoding="utf-8")
    with pytest.raises(ValueError, match=r"runs.jsonl:3: the file changed since it was read"):
        fresh[2]


def test_a_file_gone_before_a_reader_opens_it_is_named(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    gone = tmp_path / "gone.jsonl"
    monkeypatch.setattr(_parallel, "byte_ranges", lambda paths, pieces, size=None: [
        _parallel.ByteRange(str(gone), str(gone), 0, 10, 1)])
    with pytest.raises(InputError, match=r"gone.jsonl: cannot be read: No such file"):
        _parallel.load_runs_parallel([gone], RunChecks(None, 1), 2)


def test_readers_import_this_grade_kit_not_one_in_the_working_folder(tmp_path: Path) -> None:
    files = _hostile_files(tmp_path)
    decoy = tmp_path / "grade_kit"
    decoy.mkdir()
    (decoy / "__init__.py").write_text("raise ImportError('the decoy was imported')\n")
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    script = scripts / "read.py"
    script.write_text(textwrap.dedent(f"""
        from grade_kit import _parallel
        from grade_kit.io import load_runs
        _parallel.PARALLEL_BYTES = 0
        print(type(load_runs({[str(f) for f in files]!r}, workers=2).records).__name__)
    """), encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "FlatRuns"


def test_a_script_without_a_main_guard_can_read_in_parallel(tmp_path: Path) -> None:
    files = _hostile_files(tmp_path)
    script = tmp_path / "script.py"  # no `if __name__ == "__main__":`, as scripts often are
    script.write_text(textwrap.dedent(f"""
        from grade_kit import _parallel
        from grade_kit.io import load_runs
        _parallel.PARALLEL_BYTES = 0
        loaded = load_runs({[str(f) for f in files]!r}, workers=2)
        print(type(loaded.records).__name__, len(loaded.records))
    """), encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("FlatRuns ")
