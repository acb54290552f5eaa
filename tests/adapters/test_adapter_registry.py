"""A new adapter is its own file: one registered from tests/ (``toy_adapter.py``, touching
no grade_kit file) is sniffed, scored directly, imported and refused like the built-in
ones."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import grade_kit as gk
from grade_kit.adapters import ADAPTERS, read_log, register_adapter
from grade_kit.cli import main
from grade_kit.reading.sniff import LOG_KINDS, file_kind, log_files
from grade_kit.schema import InputError
from tests.toy_adapter import TOY

PACKAGE = Path(gk.__file__).parent
TOY_LOG = """TOYLOG toy-7b
q1 | What is 2 + 2? | 4 | resolved
q2 | Capital of France? | Lyon | unresolved
q1 | What is 2 + 2? | four | partial
q2 | Capital of France? | Paris | resolved
"""


@pytest.fixture(autouse=True)
def toy() -> Iterator[None]:
    register_adapter(TOY)
    yield
    del ADAPTERS["toy"], LOG_KINDS["toy"]


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "logs" / "a.toylog"
    path.parent.mkdir()
    path.write_text(TOY_LOG, encoding="utf-8")
    return path


def test_the_built_in_adapters_register_themselves() -> None:
    assert {"inspect", "tau-bench"} <= set(ADAPTERS)


def test_a_registered_adapters_files_are_sniffed_as_its_kind(log: Path) -> None:
    assert file_kind(log) == "toy"
    assert log_files(log.parent) == ("toy", [log])  # a folder: by the adapter's suffix
    jsonl = log.parent / "runs.jsonl"
    jsonl.write_text('{"run_id": "r"}\n', encoding="utf-8")
    assert file_kind(jsonl) == "jsonl"


def test_evaluate_reads_a_registered_log_directly(log: Path) -> None:
    ev = gk.evaluate(log)
    grades = ev.grades.filter(ev.grades["subset"] == "all").row(0, named=True)
    # 4 runs of toy-7b over 2 questions, R = 2: 2 resolved, 1 partial, 1 unresolved
    assert ev.leaderboard["setup"].to_list() == ["toy-7b"]
    assert (grades["resolved"], grades["partially_resolved"], grades["unresolved"]) == (2, 1, 1)
    assert grades["resolved_rate"] == pytest.approx(2 / 4)


def test_the_cli_scores_and_imports_a_registered_log(log: Path, tmp_path: Path) -> None:
    assert main(["score", str(log), "--out", str(tmp_path / "scored"), "--quiet"]) == 0
    results = json.loads((tmp_path / "scored" / "results.json").read_text())
    assert list(results["setups"]) == ["toy-7b"]
    assert main(["import", "toy", str(log.parent), "--out", str(tmp_path / "imp")]) == 0
    runs = (tmp_path / "imp" / "runs.jsonl").read_text().splitlines()
    assert [json.loads(r)["run_id"] for r in runs] == [  # in the log's order
        "toy-7b/q1/1", "toy-7b/q2/1", "toy-7b/q1/2", "toy-7b/q2/2"]


def test_a_registered_logs_problems_are_named(log: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty.toylog"
    empty.write_text("TOYLOG m\nnot a line of a toy log\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"empty\.toylog: a toy log with no samples or "
                                         r"trials: .*empty\.toylog:2: field .outcome."):
        read_log(empty, source="toy")
    with pytest.raises(InputError, match=r"folder holds no file that could be a toy log "
                                         r"\(\.toylog\)"):
        read_log(_empty(tmp_path), source="toy")
    with pytest.raises(InputError, match=r"runs\.jsonl: not a JSONL file of records but a "
                                         r"toy log: score it directly"):
        gk.read_inputs(PACKAGE.parent / "fixtures" / "tasks", _renamed(log))
    with pytest.raises(InputError, match=r"no adapter 'nope' \(adapters: inspect, tau-bench, "
                                         r"toy\)"):
        read_log(log, source="nope")


def _empty(tmp_path: Path) -> Path:
    folder = tmp_path / "no-logs"
    folder.mkdir()
    return folder


def _renamed(log: Path) -> Path:
    """The toy log given where runs go."""
    target = log.with_name("runs.jsonl")
    target.write_text(log.read_text(encoding="utf-8"), encoding="utf-8")
    return target


def test_no_grade_kit_file_names_the_test_adapter() -> None:
    # it is registered from tests/ alone: grade_kit holds no trace of it
    assert not [p for p in PACKAGE.rglob("*.py") if "toylog" in p.read_text(encoding="utf-8")]


def test_a_file_two_adapters_could_claim_is_the_first_registered_ones(tmp_path: Path) -> None:
    # An Inspect log whose head mentions "simulations" (a tau2 key) is an Inspect log: the
    # package's adapters are asked in the order of their module names, inspect_ai first
    one_line = tmp_path / "one.json"
    one_line.write_text(json.dumps({"eval": {"task": "t"}, "version": 2,
                                    "simulations": []}), encoding="utf-8")
    pretty = tmp_path / "pretty.json"
    pretty.write_text('{\n  "version": 2,\n  "eval": {"task": "t"},\n  "samples": [{"input": '
                      '"run the simulations"}]\n}\n', encoding="utf-8")
    tau2 = tmp_path / "tau2.json"
    tau2.write_text('{\n  "simulations": []\n}\n', encoding="utf-8")
    assert [file_kind(p) for p in (one_line, pretty, tau2)] == ["inspect", "inspect",
                                                                 "tau-bench"]
    assert list(ADAPTERS)[:2] == ["inspect", "tau-bench"]
