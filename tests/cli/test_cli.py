"""`grade-kit score`, `validate` and `demo` end to end on real files."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from grade_kit.cli import main
from grade_kit.schema import PER_RUN_DIMENSIONS
from tests.paths import EXAMPLE, FIXTURES, REALDATA, ROOT


def test_score_writes_every_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["score", str(EXAMPLE / "tasks"), str(EXAMPLE / "runs.jsonl"),
                 "--judgements", str(EXAMPLE / "judgements.jsonl"), "--out", str(tmp_path)])
    assert code == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert set(results["setups"]) == {"careful", "hasty"}
    careful = results["setups"]["careful"]
    assert set(careful["overall"]["dimensions"]) == {
        "grounding_accuracy", "insight_quality", "evidence_linkage",
        "calibration_limitation_handling", "consistency", "structure_usability"}
    assert careful["overall"]["tasks"] == 4  # the plain question is left out of GRADE
    assert set(careful["tracks"]) == {"1", "3", "4", "5"}
    assert set(careful["tasks"]["t1-oct-cancel"]) == {"composite", "rubric_score",
                                                      "dimensions", "runs"}
    assert careful["overall"]["composite"] > results["setups"]["hasty"]["overall"]["composite"]
    assert [(r["line"], r["field"]) for r in results["rejected"]] == [
        (32, "events.submitted"), (33, "task_id")]
    rejects = (tmp_path / "rejects.jsonl").read_text().splitlines()
    raw_lines = (EXAMPLE / "runs.jsonl").read_text().splitlines()
    assert [json.loads(r)["raw"] for r in rejects] == raw_lines[31:33]
    scores = pl.read_parquet(tmp_path / "scores.parquet")
    assert set(scores.columns) >= {"run_id", "setup", "task_id", "dimension", "score", "method"}
    # written by a streaming sink: one row per run and scored dimension, dimension after
    # dimension, runs in run_scores' order, each with its run's keys
    per_run = pl.read_parquet(tmp_path / "run_scores.parquet").to_dicts()
    expected = [(r["run_id"], r["setup"], r["task_id"], r["repeat"], r["is_primary"], d,
                 r[d], r[f"{d}_method"])
                for d in PER_RUN_DIMENSIONS for r in per_run if r[d] is not None]
    assert scores.rows() == expected and len(expected) > 50
    card = (tmp_path / "scorecard.md").read_text()
    for heading in ("## Leaderboard", "## By track", "## By pack", "## Weakest tasks",
                    "## Rejected input"):
        assert heading in card
    assert "runs.jsonl:32: field 'events.submitted'" in capsys.readouterr().err


def test_strict_turns_rejects_into_an_exit_code(tmp_path: Path) -> None:
    args = ["score", str(EXAMPLE / "tasks"), str(EXAMPLE / "runs.jsonl"), "--out",
            str(tmp_path)]
    assert main(args) == 0
    assert main([*args, "--strict"]) == 1
    assert (tmp_path / "results.json").is_file()  # nothing already computed is lost


def test_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(EXAMPLE / "tasks")]) == 0
    assert "5 tasks valid (1 plain), 0 rejected" in capsys.readouterr().out
    bad = tmp_path / "tasks"
    bad.mkdir()
    (bad / "t.yaml").write_text("task_id: t\ntrack: 9\npack: p\nprompt: q\n"
                                "weights: {calibration_limitation_handling: 1}\n")
    assert main(["validate", str(bad)]) == 1
    assert "t.yaml:2: field 'track'" in capsys.readouterr().err


def test_missing_input_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["score", str(EXAMPLE / "tasks"), str(tmp_path / "nope.jsonl"), "--out",
                 str(tmp_path)])
    assert code == 1
    assert "nope.jsonl: no such file" in capsys.readouterr().err


def test_console_script_demo_fetches_over_http_what_was_recorded(tmp_path: Path) -> None:
    import grade_kit as gk

    exe = Path(sys.executable).parent / "grade-kit"
    done = subprocess.run([str(exe), "demo", "--no-report", "--out", str(tmp_path)],
                          capture_output=True,
                          text=True, check=True, cwd=ROOT)
    assert "runs fetched over HTTP" in done.stdout and "scorecard" in done.stdout
    assert (tmp_path / "scorecard.md").is_file()
    fetched = json.loads((tmp_path / "results.json").read_text())
    recorded = gk.evaluate(ROOT / "fixtures" / "tasks", ROOT / "fixtures" / "runs",
                           judge="rules")
    for setup in ("careful", "hasty"):  # far from the timeout: every status as recorded
        # the recorded runs are a capture of the demo server: same answers, same scores
        assert (fetched["setups"][setup]["overall"]["composite"]
                == recorded.results.setups[setup].overall.composite)
    by_id = {json.loads(line)["run_id"]: json.loads(line)
             for path in (ROOT / "fixtures" / "runs").glob("*.jsonl")
             for line in path.read_text().splitlines()}
    compared = 0
    for path in (tmp_path / "runs").glob("*.jsonl"):
        for line in path.read_text().splitlines():
            run = json.loads(line)
            if run["attempt_of"] is None and run["status"] == "delivered":
                assert run["response"] == by_id[run["run_id"]]["response"]
                compared += 1
    assert compared > 550  # of 600 slots, all but the recorded faults
    runs = [json.loads(line) for line in (tmp_path / "runs" / "careful.jsonl").read_text()
            .splitlines()]
    delivered = [r for r in runs if r["status"] == "delivered"]
    assert all({"submitted", "first_token", "received"} <= set(r["events"]) for r in delivered)
    assert all(r["tool_calls"] for r in delivered)


def test_an_unusable_out_is_one_clear_error(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    args = ["score", str(EXAMPLE / "tasks"), str(EXAMPLE / "runs.jsonl")]
    assert main([*args, "--out", str(blocker)]) == 1
    assert "exists and is not a folder" in capsys.readouterr().err
    assert main([*args, "--out", str(blocker / "sub")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"error: {blocker / 'sub'}: cannot create the output folder" in err
    # /proc refuses new folders even to root: the unusable --out that cannot be skipped
    assert main([*args, "--out", "/proc/grade-kit-cannot-write-here"]) == 1
    err = capsys.readouterr().err
    assert "error: /proc/grade-kit-cannot-write-here: cannot create the output folder" in err


def test_a_symlink_at_an_output_path_is_refused_before_anything_is_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    out.mkdir()
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    (out / "scorecard.md").symlink_to(target)
    assert main(["score", str(EXAMPLE / "tasks"), str(EXAMPLE / "runs.jsonl"), "--out",
                 str(out)]) == 1
    assert "scorecard.md: a symbolic link" in capsys.readouterr().err
    assert target.read_text() == "keep me"
    assert sorted(p.name for p in out.iterdir()) == ["scorecard.md"]  # nothing written


def test_two_runs_into_one_out_leave_one_whole_set(tmp_path: Path) -> None:
    out = tmp_path / "out"
    base = [sys.executable, "-m", "grade_kit.cli", "score", str(EXAMPLE / "tasks"),
            str(EXAMPLE / "runs.jsonl"), "--out", str(out)]
    procs = [subprocess.Popen([*base, "--repeats", str(r)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) for r in (2, 3)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    results = json.loads((out / "results.json").read_text())
    card = (out / "scorecard.md").read_text()
    r = results["plan"]["repeats"]
    assert f"N = questions × {r} repeats" in card  # both files from the same run
    assert not list(out.glob(".*.tmp"))


@pytest.mark.parametrize("args", [["--repeats", "0"], ["--repeats", "x"],
                                  ["--repeats", "2000000"]])
def test_bad_numbers_on_the_command_line_are_usage_errors(
        args: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["score", str(EXAMPLE / "tasks"), str(EXAMPLE / "runs.jsonl"), *args, "--out",
              str(tmp_path)])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "--repeats" in err and "Traceback" not in err


@pytest.mark.parametrize(("args", "meant"), [
    (["score", "T", "R", "--judgments", "j.jsonl", "--out", "o"], "--judgements"),
    (["diff", "a", "b", "--fail-on-regresion", "0.1"], "--fail-on-regression"),
    (["demo", "serve", "--latency-sacle", "2"], "--latency-scale"),
])
def test_a_mistyped_flag_gets_a_suggestion(args: list[str], meant: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 55, item 8: the closest option of the command given, in the usage error."""
    with pytest.raises(SystemExit) as stop:
        main(args)
    assert stop.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("grade-kit: error: unrecognized arguments:")
    assert last.endswith(f"(did you mean {meant}?)"), last


def test_a_lone_path_error_names_its_cause(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    import zipfile

    (tmp_path / "empty").mkdir()
    (tmp_path / "sheet.csv").write_text("alias,core_conclusion\nA-1,correct\n")
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as archive:
        archive.writestr("notes.txt", "not a log")
    cases = {
        tmp_path / "misspelt": "no such file or folder",
        tmp_path / "empty": "an empty folder (no tasks, runs or logs in it)",
        tmp_path / "other.zip": "a zip archive that is not an Inspect log (an .eval holds "
                                "header.json); give Inspect logs (grade-kit import inspect "
                                "LOG... --out DIR), or TASKS and RUNS",
        tmp_path / "sheet.csv": "a CSV file, not tasks, runs or a log; a filled grading sheet "
                                f"goes to grade-kit import-grades {tmp_path / 'sheet.csv'} "
                                "--out GRADES.jsonl",
        EXAMPLE / "tasks": "RUNS is required",
    }
    for path, why in cases.items():
        assert main(["score", str(path), "--out", str(tmp_path / "out" / "deeper")]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"error: {path}: {why}"), err
        assert not (tmp_path / "out").exists()  # a failed command leaves no folder behind


def _command_lines() -> list[str]:
    """Every running process's command line, as text (Linux /proc)."""
    lines = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                lines.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(
                    errors="replace"))
    return lines


def _score_packing_a_temporary_store(tmp_path: Path) -> tuple[subprocess.Popen[str], Path]:
    """``grade-kit score`` of the fixtures in a process of its own, through a temporary
    store (the bound set to 0), once it has made the store: the process and the store."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    code = ("import sys, grade_kit.pipeline.evaluation as e; e.STORE_ABOVE_BYTES = 0; "
            "from grade_kit.cli import main; sys.exit(main(sys.argv[1:]))")
    process = subprocess.Popen(
        [sys.executable, "-c", code, "score", str(FIXTURES / "tasks"), str(FIXTURES / "runs"),
         "--out", str(tmp_path / "out"), "--quiet"],
        env={**os.environ, "TMPDIR": str(temp)}, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    announced = process.stderr.readline()  # printed once the store's folder is made
    assert "temporary packed store" in announced, announced
    (store,) = temp.iterdir()
    return process, store


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes from /proc")
def test_a_terminated_score_leaves_no_temporary_store_nor_its_packing_process(
        tmp_path: Path) -> None:
    """SIGTERM while large run files are packed into a temporary store (a scheduler's stop):
    the command exits 143, the store is removed and the process packing it stops. Before,
    Python's default ended the command at once: the store stayed and the packing process
    ran on, orphaned, to the end."""
    process, store = _score_packing_a_temporary_store(tmp_path)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=120) == 128 + signal.SIGTERM
    assert process.stderr is not None
    process.stderr.close()
    assert not store.exists()
    # killed with the command, or (signalled before it could be) gone within a second
    deadline = time.monotonic() + 10
    while [line for line in _command_lines() if str(store) in line]:
        assert time.monotonic() < deadline, "the packing process outlived the command"
        time.sleep(0.1)
    assert not (tmp_path / "out" / "results.json").exists()


def test_an_interrupted_score_exits_130_in_one_line(tmp_path: Path) -> None:
    """SIGINT (Ctrl-C) while a score runs: exit 130, one error line and no traceback, the
    temporary store removed, no results.json."""
    process, store = _score_packing_a_temporary_store(tmp_path)
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=120) == 130
    assert process.stderr is not None
    rest = process.stderr.read().strip().splitlines()
    process.stderr.close()
    assert rest == ["error: interrupted (every file written is whole; the command did not "
                    "finish)"], rest
    assert not store.exists() and not (tmp_path / "out" / "results.json").exists()


def test_an_out_folder_inside_an_input_folder_is_refused(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    """A second run would read the first one's outputs (rejects.jsonl, runs.parquet) as its
    inputs: --out equal to or inside an input folder is one error, and nothing is written."""
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "runs.jsonl").write_text((EXAMPLE / "runs.jsonl").read_text())
    for out in (runs, runs / "scored"):
        assert main(["score", str(EXAMPLE / "tasks"), str(runs), "--out", str(out)]) == 1
        assert "inside the input folder" in capsys.readouterr().err
    assert sorted(p.name for p in runs.iterdir()) == ["runs.jsonl"]
    tasks = tmp_path / "tasks"
    shutil.copytree(EXAMPLE / "tasks", tasks)
    assert main(["judge", str(tasks), str(EXAMPLE / "runs.jsonl"), "--rules", "--out",
                 str(tasks / "judgements.jsonl")]) == 1
    assert "inside the input folder" in capsys.readouterr().err
    # beside the inputs is fine
    assert main(["score", str(EXAMPLE / "tasks"), str(runs), "--out",
                 str(tmp_path / "out")]) == 0


def test_a_setup_mapping_that_names_no_log_is_an_error(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    mapping = tmp_path / "map.json"
    mapping.write_text(json.dumps({"no-such-log.json": "x"}))
    assert main(["import", "tau-bench", str(REALDATA /
                                            "tau_bench_gpt4o_airline"),
                 "--setup-by", str(mapping), "--out", str(tmp_path / "out")]) == 1
    assert "'no-such-log.json'" in capsys.readouterr().err


def test_no_control_character_of_an_input_reaches_the_terminal_or_a_scorecard_raw(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A task id holding ESC (an OSC title sequence), BEL, NUL, a C1 control and U+202E:
    every command's output shows them as escapes, and so does scorecard.md."""
    from grade_kit.text import md_cell

    hostile = "q\x1b]0;pwned\x07\x00\x9b\u202eevil"
    runs = tmp_path / "runs.jsonl"
    runs.write_text(json.dumps({"run_id": "r1", "setup": "s" + hostile, "task_id": hostile,
                                "repeat": 1, "status": "delivered",
                                "response": {"text": "x"}}) + "\n"
                    + (EXAMPLE / "runs.jsonl").read_text(), encoding="utf-8")
    assert main(["score", str(EXAMPLE / "tasks"), str(runs), "--out",
                 str(tmp_path / "out")]) == 0
    captured = capsys.readouterr()
    shown = captured.out + captured.err
    assert "unknown task" in shown and "\\x1b]0;pwned\\x07\\x00\\x9b\\u202eevil" in shown
    for raw in ("\x1b", "\x07", "\x00", "\x9b", "\u202e"):
        assert raw not in shown
    card = (tmp_path / "out" / "scorecard.md").read_text(encoding="utf-8")
    assert not any(raw in card for raw in ("\x1b", "\x07", "\x00", "\x9b", "\u202e"))
    assert md_cell(hostile) == "q\\x1b\\]0;pwned\\x07\\x00\\x9b\\u202eevil"


def test_the_readmes_usage_lines_match_every_commands_options() -> None:
    """Every command (and demo's subcommands) has a usage line in the README's table, and
    the line names exactly the options its --help has."""
    import argparse
    import re

    from grade_kit.cli import build_parser

    def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
                 ) -> dict[tuple[str, ...], argparse.ArgumentParser]:
        found: dict[tuple[str, ...], argparse.ArgumentParser] = {}
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found[(*path, name)] = sub
                    found.update(commands(sub, (*path, name)))
        return found

    every = commands(build_parser())
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = {}
    for line in re.findall(r"^\| `grade-kit ([^`]*)` \|", readme, re.M):
        words = line.split()
        name = tuple(words[:2]) if tuple(words[:2]) in every else (words[0],)
        lines[name] = line
    with_line = {n for n in every if n in lines}
    # a command with subcommands of its own (demo) is covered by theirs
    parents = {n[:-1] for n in every if len(n) > 1}
    assert set(every) - parents - with_line == set(), "commands with no README usage line"
    for name, line in lines.items():
        options = {o for a in every[name]._actions for o in a.option_strings
                   if o not in ("-h", "--help") and not isinstance(
                       a, argparse._SubParsersAction)}
        written = set(re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", line))
        long_or_only = {o for o in options if o.startswith("--")
                        or not any(p.startswith("--") for a in every[name]._actions
                                   if o in a.option_strings for p in a.option_strings)}
        assert written - options == set(), (name, "in the README, not in --help")
        assert long_or_only - written == set(), (name, "in --help, not in the README")
