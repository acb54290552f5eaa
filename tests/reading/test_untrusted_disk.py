"""Trust nothing on disk (docs/methodology.md §6): a scored folder is checked whole before
anything of it is read; an interrupted write never opens as a mix of two evaluations;
outputs never follow planted symbolic links; no input at all is one line, not an empty
page. Every case uses real files and, where it says so, real processes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import grade_kit as gk
from grade_kit.cli import main
from grade_kit.pipeline.state import STATE_VERSION
from grade_kit.schema import InputError
from tests.paths import DATA, EXAMPLE, REALDATA, ROOT


@pytest.fixture()
def scored(tmp_path: Path) -> Path:
    folder = tmp_path / "scored"
    gk.evaluate(EXAMPLE / "tasks", EXAMPLE / "runs.jsonl",
                judgements=EXAMPLE / "judgements.jsonl").write(folder)
    return folder


def test_a_truncated_frame_is_named_before_anything_is_read(scored: Path) -> None:
    frame = scored / "evaluation" / "data-runs.parquet"
    frame.write_bytes(frame.read_bytes()[:100])
    with pytest.raises(InputError, match=r"data-runs\.parquet: not the file this evaluation "
                                         r"wrote"):
        gk.reopen(scored)


@pytest.mark.parametrize(("text", "message"), [
    ("{not json", r"state\.json: not a state file \(not JSON"),
    (f'{{"version": {STATE_VERSION}, "frames": "polars"}}',
     r"state\.json: field 'counts': Field required"),
])
def test_a_garbage_state_file_is_named(scored: Path, text: str, message: str) -> None:
    (scored / "evaluation" / "state.json").write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=message):
        gk.reopen(scored)


def test_a_state_pointing_outside_the_folder_is_refused(scored: Path, tmp_path: Path) -> None:
    """Even a state whose own digest was made again to match (a forged file, not an edit)."""
    from grade_kit.pipeline.state import _own_digest

    path = scored / "evaluation" / "state.json"
    state = json.loads(path.read_text(encoding="utf-8"))
    state["store"] = "../../elsewhere"
    path.write_text(json.dumps(state), encoding="utf-8")
    with pytest.raises(InputError, match=r"state\.json: field 'store'"):
        gk.reopen(scored)
    state["store"] = None
    state["sha256"]["../../etc/passwd"] = "0" * 64
    state["own_sha256"] = _own_digest(state)
    path.write_text(json.dumps(state), encoding="utf-8")
    with pytest.raises(InputError, match=r"names '\.\./\.\./etc/passwd', a path outside"):
        gk.reopen(scored)


@pytest.mark.parametrize("edit", ["rejects emptied", "a prompt changed", "a note added"])
def test_an_edited_state_file_is_refused(scored: Path, edit: str) -> None:
    """state.json's own fields are checked like every file it vouches for: an edit made
    after the write reopens as an error naming it, never as the edited evaluation."""
    path = scored / "evaluation" / "state.json"
    state = json.loads(path.read_text(encoding="utf-8"))
    assert state["rejected"] and state["tasks"]
    if edit == "rejects emptied":
        state["rejected"] = []
    elif edit == "a prompt changed":
        state["tasks"][0]["prompt"] = "another question"
    else:
        state["notes"].append("added")
    path.write_text(json.dumps(state), encoding="utf-8")
    with pytest.raises(InputError, match=r"state\.json: its fields are not the ones this "
                                         r"evaluation wrote"):
        gk.reopen(scored)


def test_a_symbolic_link_anywhere_in_the_state_is_refused(scored: Path, tmp_path: Path) -> None:
    extra = tmp_path / "elsewhere.parquet"
    extra.write_bytes(b"x")
    (scored / "evaluation" / "extra.parquet").symlink_to(extra)
    with pytest.raises(InputError, match=r"extra\.parquet: a symbolic link in a scored "
                                         r"folder"):
        gk.reopen(scored)


def test_edited_results_are_refused(scored: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = scored / "results.json"
    results = json.loads(path.read_text(encoding="utf-8"))
    first = next(iter(results["setups"].values()))
    first["grades"]["counts"]["resolved"] += 1
    path.write_text(json.dumps(results), encoding="utf-8")
    with pytest.raises(InputError, match=r"results\.json: not the file this evaluation wrote"):
        gk.reopen(scored)
    # the report refuses it in one line before any kernel starts
    assert main(["report", str(scored), "--out", str(scored.parent / "pages")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "results.json" in err[0]
    assert not (scored.parent / "pages" / "report.html").exists()


def test_an_interrupted_write_never_opens_as_a_mix(tmp_path: Path) -> None:
    """A real `grade-kit score` into a folder holding another evaluation, SIGKILLed at
    points across its run: every time, the folder reopens as the old evaluation or the new
    one, or is refused in one line; never a mix."""
    folder = tmp_path / "out"
    old = gk.evaluate(EXAMPLE / "tasks", EXAMPLE / "runs.jsonl")
    new = gk.evaluate(EXAMPLE / "tasks", EXAMPLE / "runs.jsonl",
                      judgements=EXAMPLE / "judgements.jsonl")
    assert old.results.setups != new.results.setups
    command = [sys.executable, "-m", "grade_kit.cli", "score", str(EXAMPLE / "tasks"),
               str(EXAMPLE / "runs.jsonl"), "--judgements", str(EXAMPLE / "judgements.jsonl"),
               "--out", str(folder), "--quiet"]
    start = time.monotonic()
    subprocess.run(command, check=True, capture_output=True)
    took = time.monotonic() - start
    outcomes = []
    for k in range(8):
        old.write(folder)
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        time.sleep(took * (0.45 + 0.08 * k))
        process.send_signal(signal.SIGKILL)
        process.wait()
        try:
            again = gk.reopen(folder)
        except InputError as exc:
            assert "\n" not in str(exc)
            outcomes.append("refused")
            continue
        assert again.results.setups in (old.results.setups, new.results.setups)
        outcomes.append("old" if again.results.setups == old.results.setups else "new")
    assert len(outcomes) == 8  # each kill point opened as old or new, or was refused


def test_a_mix_of_two_evaluations_is_refused(scored: Path, tmp_path: Path) -> None:
    """What a write killed between its files would leave: the other evaluation's
    results.json (or one of its frames) beside this one's state."""
    other = tmp_path / "other"
    gk.evaluate(EXAMPLE / "tasks", EXAMPLE / "runs.jsonl").write(other)
    for name in ("results.json", "evaluation/scores-runs.parquet"):
        saved = (scored / name).read_bytes()
        (scored / name).write_bytes((other / name).read_bytes())
        with pytest.raises(InputError, match=rf"{name.split('/')[-1]}: not the file this "
                                             "evaluation wrote"):
            gk.reopen(scored)
        (scored / name).write_bytes(saved)
    gk.reopen(scored)  # whole again


def test_outputs_never_follow_a_planted_link(scored: Path, tmp_path: Path) -> None:
    target = tmp_path / "victim.json"
    target.write_text("mine", encoding="utf-8")
    out = tmp_path / "links"
    out.mkdir()
    os.symlink(target, out / "results.json")
    ev = gk.evaluate(EXAMPLE / "tasks", EXAMPLE / "runs.jsonl")
    with pytest.raises(InputError, match=r"results\.json: a symbolic link"):
        ev.write(out)
    assert target.read_text(encoding="utf-8") == "mine"
    assert sorted(p.name for p in out.iterdir()) == ["results.json"]  # nothing written
    pages = tmp_path / "pages"
    pages.mkdir()
    os.symlink(target, pages / "report.html")
    assert main(["report", str(scored), "--out", str(pages)]) == 1
    assert target.read_text(encoding="utf-8") == "mine"
    assert sorted(p.name for p in pages.iterdir()) == ["report.html"]
    assert not list(tmp_path.glob(".scored-*"))


def test_no_run_at_all_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = tmp_path / "runs.jsonl"
    runs.write_text('{"bad": 1}\nnot json\n', encoding="utf-8")
    for command in ("score", "report"):
        assert main([command, str(EXAMPLE / "tasks"), str(runs), "--out",
                     str(tmp_path / command)]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1] == (f"error: {runs}: nothing to evaluate: all 2 run records were "
                           f"rejected (first: {runs}:1: field 'run_id': missing required "
                           "field (and 4 more: setup, task_id, repeat))")
        assert not (tmp_path / command / "results.json").exists()


def test_a_log_nested_too_deep_is_one_line(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    source = REALDATA / "inspect_ai_testlogs"
    data = (source / "2025-05-12T20-28-13-04-00_popularity.json").read_text(encoding="utf-8")
    deep = tmp_path / "deep.json"
    deep.write_text(data.replace('"samples": [', '"deep": ' + "[" * 200_000 + "]" * 200_000
                                 + ', "samples": [', 1), encoding="utf-8")
    assert main(["score", str(deep), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {deep}: cannot read as an Inspect AI log: the log: JSON nested "
                   "deeper than the decoder allows (about 1,000 levels)"]


def test_a_log_larger_than_the_bound_is_refused(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The bounds on a log's total bytes (.eval members together, a .json file), lowered
    here so a small real log crosses them: refused naming the file, before it is parsed."""
    from grade_kit.adapters import common, inspect_ai

    log = next((DATA / "inspect_generated" / "ctf").glob("*.eval"))
    monkeypatch.setattr(inspect_ai, "MAX_LOG_BYTES", 20_000)
    with pytest.raises(InputError, match=rf"{log.name}: cannot read as an Inspect AI log: its "
                                         r"members hold [\d,]+ bytes uncompressed, more than "
                                         r"the 20,000 one log may hold"):
        gk.read_log(log, source="inspect")
    monkeypatch.setattr(inspect_ai, "MAX_MEMBER", 1_000)
    monkeypatch.setattr(inspect_ai, "MAX_LOG_BYTES", 1 << 30)
    with pytest.raises(InputError, match=r"member\(s\) larger than 1,000 bytes"):
        gk.read_log(log, source="inspect")
    monkeypatch.setattr(common, "MAX_LOG_BYTES", 1_000)
    tau = REALDATA / "tau_bench_gpt4o_airline"
    with pytest.raises(InputError, match=r"more than the 1,000 one log may hold"):
        gk.read_log(tau, source="tau-bench")


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
def test_a_planted_title_or_script_never_runs(tmp_path: Path) -> None:
    """A --title with a javascript: link and markup is text; the page's policy lets only
    the scripts it was exported with run, so a script planted into the file later does
    not, while every chart still draws."""
    from tests.devtools import Browser

    title = "[click](javascript:alert(1)) <img src=x onerror=alert(2)>"
    out = tmp_path / "pages"
    logs = DATA / "inspect_generated" / "ctf"
    assert main(["report", str(logs), "--out", str(out), "--title", title]) == 0
    page = out / "report.html"
    text = page.read_text(encoding="utf-8")
    end = text.index('http-equiv="Content-Security-Policy"')
    policy = text[text.rindex("<meta", 0, end):end]
    assert "script-src 'sha256-" in policy and "'unsafe-inline'" not in policy.split(
        "style-src")[0]
    planted = tmp_path / "planted.html"
    head, _, tail = text.rpartition("</body>")
    planted.write_text(head + "<script>window.planted = 1</script><a id='plantedlink' "
                       "href='javascript:window.clicked=1'>x</a></body>" + tail,
                       encoding="utf-8")
    browser = Browser(str(CHROMIUM), tmp_path / "profile")
    try:
        browser.open(planted, settle_s=5.0)
        assert browser.evaluate("typeof window.planted") == "undefined"
        browser.evaluate("document.getElementById('plantedlink').click()")
        assert browser.evaluate("typeof window.clicked") == "undefined"
        heading = browser.evaluate("document.querySelector('h1').innerText")
        assert heading.startswith("[click](javascript:alert(1)) <img src=x onerror=alert(2)>")
        links = browser.evaluate("Array.from(document.querySelectorAll('a'))"
                                 ".filter(a => a.href.startsWith('javascript:')).length")
        hrefs = browser.evaluate("Array.from(document.querySelectorAll('a'))"
                                 ".filter(a => a.href.startsWith('javascript:'))"
                                 ".map(a => a.outerHTML.slice(0, 200))")
        assert links == 1, hrefs  # the planted one only (and it did not run)
        charts = browser.evaluate("document.querySelectorAll('.gk-chart').length")
        drawn = browser.evaluate("document.querySelectorAll('.gk-chart svg.marks').length")
        assert charts > 0 and drawn == charts
    finally:
        browser.close()


def test_a_second_writer_of_a_store_is_refused(tmp_path: Path) -> None:
    """One writer per run store: while one holds it, a real `grade-kit fetch` into the same
    store exits 1 naming the lock, before it asks anything or writes a line."""
    from grade_kit.fetching import RunStore

    store = tmp_path / "runs.jsonl"
    held = RunStore.open(store)
    try:
        second = subprocess.run(
            [sys.executable, "-m", "grade_kit.cli", "fetch", str(ROOT / "fixtures" / "tasks"),
             "--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--out", str(store)],
            capture_output=True, text=True, timeout=120, check=False)
        assert second.returncode == 1
        assert second.stderr.strip().splitlines() == [
            f"error: {store}: another writer holds this store (its lock); wait for it to "
            "finish, or write to another store"]
        assert not store.exists() or store.read_bytes() == b""
    finally:
        held.close()
    RunStore.open(store).close()  # free again once the first writer let go


def test_a_report_under_a_low_open_files_limit_prints_no_traceback(tmp_path: Path) -> None:
    """A real `grade-kit report` started with a soft limit of 64 open files (macOS starts at
    256): it raises its own soft limit for its kernels, and stops each notebook's kernel
    clients when the notebook is done; it ends with one line and no traceback."""
    import resource

    def low_limit() -> None:
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))

    done = subprocess.run(
        [sys.executable, "-m", "grade_kit.cli", "report", str(EXAMPLE / "tasks"),
         str(EXAMPLE / "runs.jsonl"), "--out", str(tmp_path / "pages")],
        capture_output=True, text=True, timeout=600, check=False, preexec_fn=low_limit)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "ZMQError" not in done.stderr
    assert (tmp_path / "pages" / "report.html").is_file()


def test_a_store_scored_folder_passes_the_checks_and_reports(tmp_path: Path) -> None:
    """A folder scored from a packed store keeps its runs in its store copy (no runs file):
    the whole-folder check passes it and the report is made."""
    store, scored = tmp_path / "store", tmp_path / "scored"
    assert main(["pack", str(EXAMPLE / "tasks"), str(EXAMPLE / "runs.jsonl"), "--out",
                 str(store)]) == 0
    assert main(["score", str(store), "--out", str(scored), "--quiet"]) == 0
    from grade_kit.pipeline.state import verify_state

    assert verify_state(scored).store == "store"
    assert main(["report", str(scored), "--out", str(tmp_path / "pages")]) == 0
    assert (tmp_path / "pages" / "report.html").is_file()


def test_a_state_file_past_its_bound_is_refused_unread(scored: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """state.json's size is checked before a byte of it is parsed: one past
    MAX_STATE_BYTES is one error naming it, one at the bound is read."""
    from grade_kit.pipeline import state

    size = (scored / "evaluation" / "state.json").stat().st_size
    monkeypatch.setattr(state, "MAX_STATE_BYTES", size - 1)
    with pytest.raises(InputError, match=rf"state\.json: {size:,} bytes, more than the "):
        gk.reopen(scored)
    monkeypatch.setattr(state, "MAX_STATE_BYTES", size)
    gk.reopen(scored)  # at the bound: read
