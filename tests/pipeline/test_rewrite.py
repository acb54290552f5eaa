"""A scored folder is replaced whole or not at all (docs/methodology.md §6 "Writing"): a
write killed at any step, a full disk or an interrupt leaves a folder that reopens as the
previous evaluation or the new one, never a mix; entries the write does not make are kept.

Each kill is real: a child process writes the new evaluation into the folder holding the
old one and ends itself with ``os._exit`` (no clean-up runs, as under SIGKILL) at its k-th
step that changes the file system (a rename, a replace, a link, an exchange, a removal),
for every k until a write completes."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import grade_kit as gk
from grade_kit import atomic
from grade_kit.schema import InputError
from tests.conftest import make_run, make_task
from tests.paths import ROOT

KILLED = 137


def _evaluation(setups: tuple[str, ...]) -> gk.Evaluation:
    """Two tasks answered by each of ``setups``: the old evaluation has one setup, the new
    one two, so the reopened folder says which it holds."""
    tasks = [make_task("t1"), make_task("t2")]
    runs = [make_run(f"{s}-{t}", t, setup=s, findings=["a finding"])
            for s in setups for t in ("t1", "t2")]
    return gk.evaluate(tasks, runs)


OLD, NEW = ("A",), ("A", "B")


def child(out: str, kill_at: int, exchange: bool) -> None:
    """Write the new evaluation into ``out``, ending the process at its ``kill_at``-th step
    (0: never); print the steps taken when it completes."""
    ev = _evaluation(NEW)
    steps = 0

    def step(function: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            nonlocal steps
            steps += 1
            if steps == kill_at:
                os._exit(KILLED)
            return function(*args, **kwargs)
        return counted

    os.rename, os.replace, os.link = step(os.rename), step(os.replace), step(os.link)
    shutil.rmtree = step(shutil.rmtree)
    atomic.exchange_paths = step(atomic.exchange_paths if exchange else lambda a, b: False)
    ev.write(out)
    print(steps)


def _write_killed(out: Path, kill_at: int, exchange: bool) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "import sys; from tests.pipeline.test_rewrite import child; "
         "child(sys.argv[1], int(sys.argv[2]), sys.argv[3] == '1')",
         str(out), str(kill_at), "1" if exchange else "0"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)


def _holds(out: Path) -> tuple[str, ...]:
    """The setups of the evaluation the folder reopens as (its every file checked)."""
    return tuple(sorted(gk.reopen(out).results.setups))


def _leftovers(out: Path) -> list[str]:
    return sorted(p.name for p in out.parent.iterdir()
                  if p.name.startswith(f".{out.name}."))


@pytest.mark.parametrize("exchange", [True, False], ids=["one exchange", "two renames"])
def test_a_write_killed_at_any_step_leaves_the_old_or_the_new_evaluation(
        tmp_path: Path, exchange: bool) -> None:
    out = tmp_path / "scored"
    seen = []
    kill_at = 1
    while True:
        shutil.rmtree(out, ignore_errors=True)
        _evaluation(OLD).write(out)
        (out / "notes.txt").write_text("mine")  # a file of the user's
        done = _write_killed(out, kill_at, exchange)
        if done.returncode == 0:
            break
        assert done.returncode == KILLED, done.stderr
        held = _holds(out)  # restores a folder renamed aside, then checks every file
        assert held in (OLD, NEW), (kill_at, held)
        assert (out / "notes.txt").read_text() == "mine"
        seen.append(held)
        kill_at += 1
    steps = int(done.stdout.split()[-1])
    assert kill_at == steps + 1  # every step was a kill point
    assert _holds(out) == NEW and (out / "notes.txt").read_text() == "mine"
    # killed before the swap: the old one; after it: the new one, never back
    assert seen == sorted(seen, key=len) and seen[0] == OLD and seen[-1] == NEW
    _evaluation(OLD).write(out)  # the next write clears what the kills left beside
    assert _leftovers(out) == []


def test_a_full_disk_while_writing_keeps_the_old_evaluation(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "scored"
    _evaluation(OLD).write(out)
    before = (out / "results.json").read_bytes()
    new = _evaluation(NEW)

    def full(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pl.DataFrame, "write_parquet", full)
    with pytest.raises(OSError, match="No space left"):
        new.write(out)
    monkeypatch.undo()
    assert (out / "results.json").read_bytes() == before and _holds(out) == OLD
    assert _leftovers(out) == []


def test_a_folder_renamed_aside_is_put_back_before_it_is_read(tmp_path: Path) -> None:
    """The rule for a kill between the two renames, by hand: the folder is missing and its
    previous version waits beside it (``.scored.old-*/scored``)."""
    out = tmp_path / "scored"
    _evaluation(OLD).write(out)
    aside = tmp_path / ".scored.old-x1"
    aside.mkdir()
    os.rename(out, aside / "scored")
    (tmp_path / ".scored.new-x2").mkdir()  # a build that never completed
    assert _holds(out) == OLD
    assert _leftovers(out) == []


def test_a_rewrite_keeps_what_it_does_not_write(tmp_path: Path) -> None:
    out = tmp_path / "scored"
    _evaluation(OLD).write(out)
    (out / "pages").mkdir()
    (out / "pages" / "index.html").write_text("<p>a page</p>")
    (out / "link").symlink_to("/nonexistent")
    written = _evaluation(NEW).write(out)
    assert written["results"] == out.resolve() / "results.json"
    assert json.loads((out / "results.json").read_text())["setups"].keys() == {"A", "B"}
    assert (out / "pages" / "index.html").read_text() == "<p>a page</p>"
    assert os.readlink(out / "link") == "/nonexistent"
    assert _leftovers(out) == []


def test_a_folder_holding_the_current_one_or_a_checkout_is_never_replaced(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder replaced whole must be the outputs' own: ``--out .`` (the folder a shell
    stands in, its cwd gone with the swap) and a project's root are refused, nothing
    written."""
    ev = _evaluation(OLD)
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    with pytest.raises(InputError, match="a git checkout's root"):
        ev.write(project)
    inside = tmp_path / "here" / "deeper"
    inside.mkdir(parents=True)
    monkeypatch.chdir(inside)
    for out in (Path("."), tmp_path / "here"):
        with pytest.raises(InputError, match="the current folder, or a folder"):
            ev.write(out)
    assert sorted(p.name for p in project.iterdir()) == [".git"]
    assert sorted(p.name for p in (tmp_path / "here").iterdir()) == ["deeper"]
