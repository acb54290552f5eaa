"""The stage progress bar of gk.evaluate and grade-kit score: each stage named in the order
it runs, the bar only when asked (the CLI asks unless --quiet), and never a miscount."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import grade_kit as gk
from grade_kit._progress import stage_progress
from grade_kit.cli import main
from tests.paths import EXAMPLE


def _shown(err: str) -> list[tuple[int, str]]:
    """(stages done, stage running) of the bar in ``err``, each state once (tqdm may draw
    one state more than once)."""
    states = [(int(done), name.strip()) for done, name in
              re.findall(r"evaluate: (\d+)/\d+ stages \|[^|]*\| [0-9:]+, ([^\r\n]+)", err)]
    return [s for i, s in enumerate(states) if i == 0 or s != states[i - 1]]


def test_a_stage_out_of_order_is_refused_even_without_a_bar() -> None:
    with stage_progress(["read", "score"], enabled=False) as step:
        step("read")
        with pytest.raises(ValueError, match="'results' out of order"):
            step("results")
    with stage_progress(["read"], enabled=False) as step:
        step("read")
        with pytest.raises(ValueError, match="out of order"):
            step("read")  # one stage too many


def test_evaluate_names_each_stage_as_it_runs(capsys: pytest.CaptureFixture[str]) -> None:
    gk.evaluate(EXAMPLE / "tasks", EXAMPLE / "runs.jsonl", judge="rules", grader="rules",
                progress=True)
    shown = _shown(capsys.readouterr().err)
    assert [(n, s) for n, s in shown if s] == [
        (0, "read"), (1, "judge"), (2, "flatten"), (3, "GRADE scores"), (4, "rule grades"),
        (5, "standard statistics"), (6, "results"), (7, "done")]


def test_without_a_judge_or_grader_those_stages_are_not_counted(
        capsys: pytest.CaptureFixture[str]) -> None:
    gk.evaluate(EXAMPLE / "tasks", EXAMPLE / "runs.jsonl", progress=True)
    err = capsys.readouterr().err
    assert "evaluate: 5/5 stages" in err
    assert [s for _, s in _shown(err)] == ["read", "flatten", "GRADE scores",
                                           "standard statistics", "results", "done"]


def test_no_bar_unless_asked(capsys: pytest.CaptureFixture[str]) -> None:
    gk.evaluate(EXAMPLE / "tasks", EXAMPLE / "runs.jsonl", judge="rules")
    assert "stages" not in capsys.readouterr().err


def test_a_store_has_its_own_stages(tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "store"
    gk.pack(EXAMPLE / "tasks", EXAMPLE / "runs.jsonl", store, progress=False)
    gk.evaluate(store, progress=True)
    err = capsys.readouterr().err
    assert [s for _, s in _shown(err)] == ["read store", "GRADE scores",
                                           "standard statistics", "results", "done"]


def test_the_cli_shows_the_bar_unless_quiet(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    args = ["score", str(EXAMPLE / "tasks"), str(EXAMPLE / "runs.jsonl")]
    assert main([*args, "--out", str(tmp_path / "log")]) == 0  # stderr is no terminal here
    err = capsys.readouterr().err
    assert "stages" not in err and "writing" in err  # a log gets lines, never a bar's redraws
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # as at a terminal
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    assert "evaluate: 5/5 stages" in err and "writing" in err
    assert main([*args, "--quiet", "--out", str(tmp_path / "b")]) == 0
    err = capsys.readouterr().err
    assert "stages" not in err and "writing" not in err
    # --quiet changes what is shown, not what is recorded
    recorded = [(tmp_path / d / "results.json").read_text(encoding="utf-8") for d in "ab"]
    assert '"quiet"' not in recorded[0] and '"quiet"' not in recorded[1]
