"""Adapters on real third-party logs (tests/data/realdata), through import and score."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import grade_kit as gk
from grade_kit.adapters.inspect_ai import import_inspect
from grade_kit.adapters.tau_bench import import_tau2_bench, import_tau_bench
from grade_kit.cli import main
from tests.paths import REALDATA, ROOT

"""Real third-party logs kept in the repository, each folder with its upstream LICENSE (see
tests/data/realdata/README.md); no test reads anything outside the repository."""
TAU = REALDATA / "tau_bench_gpt4o_airline" / "gpt-4o-airline.json"
TAU2 = REALDATA / "tau2_grok_airline_relaxed_task8"
INSPECT = REALDATA / "inspect_ai_testlogs"


def import_and_score(source: str, paths: list[Path], tmp: Path) -> dict:
    assert main(["import", source, *map(str, paths), "--out", str(tmp / "imp")]) == 0
    for name in ("tasks", "runs", "grades"):
        assert (tmp / "imp" / f"{name}.jsonl").is_file()
    assert main(["score", str(tmp / "imp" / "tasks.jsonl"), str(tmp / "imp" / "runs.jsonl"),
                 "--grades", str(tmp / "imp" / "grades.jsonl"), "--strict",
                 "--out", str(tmp / "out")]) == 0
    return json.loads((tmp / "out" / "results.json").read_text())


def test_tau_bench_gpt4o_airline(tmp_path: Path) -> None:
    results = import_and_score("tau-bench", [TAU], tmp_path)
    g = results["setups"]["gpt-4o"]["grades"]
    assert g["N"] == 200
    assert g["counts"]["resolved"] == 84
    assert g["counts"]["unresolved"] == 116
    assert g["stable_resolution"] == {"count": 10, "questions": 50, "repeats": 4}
    tc = results["setups"]["gpt-4o"]["tool_calls"]
    # 1,164 records; ids repeat within 49 runs (1,091 unique (run, id) pairs), but a
    # repeated id with other arguments is another call: 2 records in 2 runs repeat an
    # earlier one's id, name and arguments, so 1,162 calls (counted by a plain loop over
    # the file's trajectories)
    assert tc["recorded_calls"] == 1164 and tc["calls"] == 1162
    assert tc["runs_with_duplicate_records"] == 2
    timing = results["setups"]["gpt-4o"]["timing"]
    assert timing["e2e_s"]["n"] == 0 and timing["missing_timestamps"] == 200


def test_tau_bench_mapping_details() -> None:
    imported = import_tau_bench(TAU)
    run = imported.runs[0]
    assert (run.setup, run.task_id, run.repeat) == ("gpt-4o", "airline/0", 1)
    assert run.events == {}
    assert all(t.kind == "plain" for t in imported.tasks)
    assert imported.tasks[0].prompt.startswith("You are mia_li_3668")


def test_tau2_bench_two_setups(tmp_path: Path) -> None:
    files = sorted(TAU2.glob("*.json"))
    results = import_and_score("tau-bench", files, tmp_path)
    assert set(results["setups"]) == {"xai/grok-3-mini", "xai/grok-4-fast-reasoning"}
    for setup in results["setups"].values():
        assert setup["grades"]["N"] == 4  # one task x 4 trials
        assert setup["timing"]["e2e_s"]["n"] == 4
        assert setup["tool_calls"]["recorded_calls"] == setup["tool_calls"]["calls"]
    imported = import_tau2_bench(files[0])
    sim = json.loads(files[0].read_text())["simulations"][0]
    run = next(r for r in imported.runs if r.repeat == sim["trial"] + 1)
    assert run.events["submitted"] == sim["start_time"] + "+00:00"
    e2e = results["setups"]["xai/grok-3-mini"]["timing"]["e2e_s"]
    durations = sorted(s["duration"] for s in json.loads(files[0].read_text())["simulations"])
    # end - start agrees with tau2's own duration (a separate clock) to within 10 ms
    assert abs(e2e["max"] - durations[-1]) < 0.01


def test_inspect_logs(tmp_path: Path) -> None:
    files = sorted(p for p in INSPECT.iterdir() if p.suffix in (".eval", ".json"))
    results = import_and_score("inspect", files, tmp_path)
    setups = results["setups"]
    # the two popularity logs of one model (the May log re-runs 3 of the February log's
    # samples) and the security-guide log are one setup: what they evaluate agrees
    assert list(setups) == ["openai/gpt-4o-mini"]
    reruns = setups["openai/gpt-4o-mini"]["reruns"]
    assert sorted(r["task_id"] for r in reruns) == ["popularity/1", "popularity/2",
                                                    "popularity/3"]
    eval_log = import_inspect(files[0])
    assert len(eval_log.runs) == 10 and len(eval_log.grades) == 10
    run = eval_log.runs[0]
    assert run.events["submitted"].endswith("-05:00") and "received" in run.events
    security = import_inspect(INSPECT / "2025-05-12T20-28-26-04-00_security-guide.json")
    assert {g.grader for g in security.grades} == {"model:model_graded_fact"}
    assert all(r.metadata["total_time"] is not None for r in security.runs)


def test_read_inspect_gives_inputs_that_evaluate_takes() -> None:
    import grade_kit as gk

    inputs = gk.read_log(INSPECT, source="inspect")
    assert isinstance(inputs, gk.Inputs) and not inputs.rejected
    ev = gk.evaluate(inputs)
    grades = {(r["setup"], r["subset"]): r for r in ev.grades.to_dicts()}
    # One model, one setup over two datasets: 10 popularity + 3 security-guide questions;
    # the May popularity log re-ran samples 1-3 (its attempts count, the February ones are
    # listed as attempts of them).
    assert set(grades) == {("openai/gpt-4o-mini", "all"), ("openai/gpt-4o-mini", "common")}
    main_setup = grades[("openai/gpt-4o-mini", "all")]
    assert main_setup["N"] == 13 and main_setup["not_run"] == 0
    primary = ev.runs.filter(pl.col("task_id").is_in(["popularity/1", "popularity/2",
                                                      "popularity/3"]) & pl.col("is_primary"))
    assert primary.height == 3 and all(r.startswith("VnKtvCqGnnegLQ7qSBFDzx/")
                                       for r in primary.get_column("run_id").to_list())
    tokens = ev.runs.filter(pl.col("task_id") == "popularity/1").get_column("input_tokens")
    assert tokens.null_count() == 0 and all(t > 0 for t in tokens.to_list())
    merged = [w for w in ev.warnings.get_column("message").to_list() if "logs merged" in w]
    assert len(merged) == 1 and "3 sample(s) run in more than one" in merged[0]


def test_read_tau_bench_gives_the_documented_figures() -> None:
    import grade_kit as gk

    ev = gk.evaluate(gk.read_log(TAU.parent, source="tau-bench"))
    g = ev.results.setups["gpt-4o"].grades
    assert (g.N, g.counts.resolved, g.stable_resolution.count) == (200, 84, 10)


def test_cli_import_writes_the_records_read_gives(tmp_path: Path) -> None:
    import grade_kit as gk

    assert main(["import", "inspect", str(INSPECT), "--out", str(tmp_path)]) == 0
    written = [json.loads(x) for x in (tmp_path / "runs.jsonl").read_text().splitlines()]
    inputs = gk.read_log(INSPECT, source="inspect")
    assert written == [r.model_dump(mode="json") for r in inputs.runs]


def test_a_file_of_the_wrong_kind_is_a_clear_error(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    import grade_kit as gk
    from grade_kit.schema import InputError

    with pytest.raises(InputError, match=r"gpt-4o-airline\.json: cannot read as an Inspect AI "
                                         r"log: an Inspect \.json log is a JSON object"):
        gk.read_log(TAU, source="inspect")
    tau2 = sorted(TAU2.glob("*.json"))[0]
    with pytest.raises(InputError, match="cannot read as an Inspect AI log: no 'eval' header"):
        gk.read_log(tau2, source="inspect")
    with pytest.raises(InputError,
                       match="cannot read as a tau-bench or tau2-bench results file: not a tau2"):
        gk.read_log(INSPECT / "2025-05-12T20-28-13-04-00_popularity.json", source="tau-bench")
    truncated = tmp_path / "cut.eval"
    eval_log = next(INSPECT.glob("*.eval"))
    truncated.write_bytes(eval_log.read_bytes()[:4000])
    with pytest.raises(InputError,
                       match=r"cut\.eval: cannot read as an Inspect AI log: not a readable \.eval"):
        gk.read_log(truncated, source="inspect")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match="folder holds no file that could be an Inspect AI log"):
        gk.read_log(empty, source="inspect")
    assert main(["import", "inspect", str(TAU), "--out", str(tmp_path / "x")]) == 1
    assert "cannot read as an Inspect AI log" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()  # nothing half-imported


def test_a_cancelled_log_is_reported(tmp_path: Path) -> None:
    import grade_kit as gk

    data = json.loads((INSPECT / "2025-05-12T20-28-13-04-00_popularity.json").read_text())
    data["status"] = "cancelled"
    path = tmp_path / "cancelled.json"
    path.write_text(json.dumps(data))
    inputs = gk.read_log(path, source="inspect")
    assert any("status is 'cancelled'" in str(w) for w in inputs.warnings)


def test_a_failed_logs_stderr_is_one_line_in_its_warning(tmp_path: Path) -> None:
    """A log that failed with a tool's stderr (docker compose, 40 lines) is named in one
    warning line: the error's first line and how many lines the log holds besides."""
    import grade_kit as gk

    data = json.loads((INSPECT / "2025-05-12T20-28-13-04-00_popularity.json").read_text())
    stderr = "\n".join(f"#{k} [internal] load metadata for docker.io/library/x" for k in range(40))
    data["status"] = "error"
    data["error"] = {"message": f"RuntimeError: No services started.\n{stderr}",
                     "traceback": "Traceback (most recent call last):\n  ..."}
    path = tmp_path / "failed.json"
    path.write_text(json.dumps(data))
    notes = [str(w.message) for w in gk.read_log(path, source="inspect").warnings
             if "status is" in str(w)]
    assert notes == ["failed.json: the log's status is 'error' (RuntimeError: No services "
                     "started. … (+40 lines)); its 3 samples are imported, and samples it "
                     "never ran are not in it"]


def test_an_eval_with_members_outside_the_archive_is_refused(tmp_path: Path) -> None:
    import zipfile

    import grade_kit as gk
    from grade_kit.schema import InputError

    source = next(INSPECT.glob("*.eval"))
    evil = tmp_path / "evil.eval"
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(evil, "w") as dst:
        for name in src.namelist():
            dst.writestr(name, src.read(name))
        dst.writestr("../escape.json", "{}")
    with pytest.raises(InputError, match=r"member name\(s\) outside the archive"):
        gk.read_log(evil, source="inspect")


def test_tau2_limits_and_stated_trials(tmp_path: Path) -> None:
    """A simulation that ends at max_steps is a limit (type steps, value info.max_steps = 200),
    graded by its reward; R is the file's info.num_trials (4), stated, not inferred."""
    import grade_kit as gk

    source = sorted(TAU2.glob("*.json"))[0]
    data = json.loads(source.read_text(encoding="utf-8"))
    sim = data["simulations"][0]
    sim["termination_reason"] = "max_steps"
    reward = float(sim["reward_info"]["reward"])
    path = tmp_path / "tau2.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    imported = import_tau2_bench(path)
    run = next(r for r in imported.runs if r.repeat == sim["trial"] + 1)
    assert run.status == "limit" and run.limit is not None
    assert (run.limit.type, run.limit.value, run.error) == ("steps", 200.0, None)
    assert "stopped" in run.events and "received" not in run.events
    assert [g.run_id for g in imported.grades].count(run.run_id) == 1
    ev = gk.evaluate(gk.read_log(path, source="tau-bench"))
    assert (ev.results.plan.repeats, ev.results.plan.inferred) == (4, False)
    assert "info.num_trials" in ev.results.plan.rule
    timing = ev.results.setups[run.setup].timing
    assert (timing.limits.count, timing.limits.by_type, timing.e2e_s.n) == (1, {"steps": 1}, 3)
    row = ev.runs.filter(pl.col("run_id") == run.run_id).row(0, named=True)
    assert row["grade"] == ("resolved" if reward >= 1 else "unresolved")


def test_score_reads_other_tools_logs_directly_with_the_imported_figures(
        tmp_path: Path) -> None:
    """grade-kit score LOG... gives what import + score give (the same setups, grades,
    timing, tool calls and comparisons), for Inspect (files and a folder) and tau-bench."""
    cases = {"inspect": [INSPECT], "tau-bench": [TAU]}
    for source, paths in cases.items():
        imported = import_and_score(source, paths, tmp_path / source)
        assert main(["score", *map(str, paths), "--quiet", "--strict",
                     "--out", str(tmp_path / source / "direct")]) == 0
        direct = json.loads((tmp_path / source / "direct" / "results.json").read_text())
        for key in ("setups", "common_subset", "comparisons", "rejected"):
            assert direct[key] == imported[key], (source, key)
    ev = __import__("grade_kit").evaluate(sorted(INSPECT.glob("*.json")))  # two files
    assert len(ev.results.setups) == 1 and len(ev.inputs.tasks) == 6


@pytest.mark.parametrize("kind", ["inspect .eval", "zip", "html", "binary"])
def test_a_file_that_is_not_jsonl_given_as_runs_is_one_error_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str) -> None:
    import zipfile

    if kind == "inspect .eval":
        path = next(INSPECT.glob("*.eval"))
        hint = f"grade-kit score {path} --out DIR"
    else:
        path = tmp_path / "runs.jsonl"
        if kind == "zip":
            with zipfile.ZipFile(path, "w") as archive:
                archive.writestr("data.bin", b"\x00" * 1000 + b'{"run_id": "r"}\n' * 7000)
        elif kind == "html":
            path.write_text("<!DOCTYPE html>\n<html><body>Sign in</body></html>\n")
        else:
            path.write_bytes(bytes(range(256)) * 64)
        hint = {"zip": "a zip archive", "html": "an HTML page", "binary": "binary data"}[kind]
    code = main(["score", str(ROOT / "fixtures" / "tasks"), str(path), "--quiet",
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1, err
    assert err[0].startswith(f"error: {path}: not a JSONL file of records") and hint in err[0]
    assert not (tmp_path / "out" / "rejects.jsonl").exists()


@pytest.mark.parametrize("first", ['["an", "array", {"task_id": 1, "reward": 0}]',
                                   '{"eval": "broken', "plain text, not JSON", '{"simulations'])
def test_a_jsonl_file_with_a_broken_first_line_is_still_read_line_by_line(
        tmp_path: Path, first: str) -> None:
    """Only a whole JSON document is taken for a log: a JSONL file whose first line is
    broken (whatever keys it mentions) keeps its good lines, the first rejected."""
    import grade_kit as gk

    good = {"run_id": "r1", "setup": "s", "task_id": "q", "repeat": 1,
            "status": "delivered", "response": {"text": "x"}}
    path = tmp_path / "runs.jsonl"
    path.write_text(first + "\n" + json.dumps(good) + "\n")
    inputs = gk.read_inputs([{"task_id": "q", "prompt": "?"}], path)
    assert [r.run_id for r in inputs.runs] == ["r1"]
    assert [r.line for r in inputs.rejected] == [1]


def test_the_provenance_names_each_log_read_with_its_hash() -> None:
    """A report of other tools' logs says which files made it: each log by name with its
    SHA-256 and the runs it gave (the converted records have no file of their own)."""
    import hashlib

    from grade_kit.views.tables import provenance_table

    logs = sorted((REALDATA / "tau2_grok_airline_relaxed_task8").glob("*.json"))
    ev = gk.evaluate(logs)
    read = [f for f in ev.results.provenance.inputs if f.kind == "tau-bench log"]
    assert [(Path(f.path).name, f.sha256) for f in read] == [
        (p.name, hashlib.sha256(p.read_bytes()).hexdigest()) for p in logs]
    assert sum(f.records for f in read) == len(ev.inputs.runs)
    shown = provenance_table(ev.results).frame.get_column("value").to_list()
    assert any(v.startswith(logs[0].name + " (sha256 " + read[0].sha256[:12]) for v in shown)
    assert not any(str(REALDATA) in v for v in shown)
    assert any(v.startswith("<runs> (no file: records given") for v in shown)


def _runs_by_slot(inputs: gk.Inputs) -> dict[tuple[str, int], list[str]]:
    slots: dict[tuple[str, int], list[str]] = {}
    for run in inputs.runs:
        slots.setdefault((run.task_id, run.repeat), []).append(run.run_id)
    return slots


def test_a_repeated_sample_is_rejected_not_merged(tmp_path: Path) -> None:
    """One (sample id, epoch) twice in an Inspect log, with another score: the first is kept,
    the second rejected by file, place, id and epoch; the question keeps its grade."""
    data = json.loads((INSPECT / "2025-05-12T20-28-13-04-00_popularity.json").read_text())
    again = json.loads(json.dumps(data["samples"][0]))  # sample 1, epoch 1, scored C
    again["scores"]["match"]["value"] = "I"
    data["samples"].append(again)
    path = tmp_path / "twice.json"
    path.write_text(json.dumps(data))
    inputs = gk.read_log(path, source="inspect")
    slots = _runs_by_slot(inputs)
    assert len(inputs.runs) == 3 and all(len(ids) == 1 for ids in slots.values())
    (reject,) = inputs.rejected
    assert (reject.source, reject.field) == (str(path), "samples[3].id")
    assert "sample 1 epoch 1 again (first at samples[0], which is kept)" in reject.error
    ev = gk.evaluate(inputs)
    first = next(r.run_id for r in inputs.runs if r.task_id.endswith("/1"))
    assert ev.runs.filter(pl.col("run_id") == first).item(0, "grade") == "resolved"


def test_two_members_of_one_name_in_an_eval_are_two_samples_the_second_rejected(
        tmp_path: Path) -> None:
    import warnings
    import zipfile

    from grade_kit.adapters.inspect_ai import read_inspect_log

    source = next(INSPECT.glob("*.eval"))
    header, samples = read_inspect_log(source)
    path = tmp_path / "twice.eval"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # zipfile warns of the duplicate name
        archive.writestr("header.json", json.dumps(header))
        name = f"samples/{samples[0]['id']}_epoch_{samples[0].get('epoch', 1)}.json"
        archive.writestr(name, json.dumps(samples[0]))
        changed = json.loads(json.dumps(samples[0]))
        changed["scores"] = {k: {**v, "value": "I" if v.get("value") == "C" else "C"}
                             for k, v in changed["scores"].items()}
        archive.writestr(name, json.dumps(changed))
    inputs = gk.read_log(path, source="inspect")
    assert len(inputs.runs) == 1
    (reject,) = inputs.rejected
    assert reject.field == f"member {name}.id" and "which is kept" in reject.error


def test_a_repeated_trial_is_rejected_not_merged(tmp_path: Path) -> None:
    records = json.loads(TAU.read_text())
    again = dict(records[0], reward=1.0 - records[0]["reward"])
    path = tmp_path / "twice.json"
    path.write_text(json.dumps([*records, again]))
    inputs = gk.read_log(path, source="tau-bench")
    assert len(inputs.runs) == len(records)
    assert all(len(ids) == 1 for ids in _runs_by_slot(inputs).values())
    (reject,) = inputs.rejected
    assert reject.field == f"[{len(records)}].task_id" and "(first at [0], which is kept)" in \
        reject.error
    tau2 = json.loads(next(TAU2.glob("*.json")).read_text())
    tau2["simulations"].append(json.loads(json.dumps(tau2["simulations"][1])))
    path2 = tmp_path / "twice2.json"
    path2.write_text(json.dumps(tau2))
    inputs2 = gk.read_log(path2, source="tau-bench")
    (reject2,) = inputs2.rejected
    n = len(tau2["simulations"]) - 1
    assert reject2.field == f"simulations[{n}].task_id"
    assert "(first at simulations[1], which is kept)" in reject2.error


def _popularity(tmp_path: Path, values: dict[int, object]) -> Path:
    """The real 3-sample Inspect log (C, C, I) with some samples' scores replaced."""
    data = json.loads((INSPECT / "2025-05-12T20-28-13-04-00_popularity.json").read_text())
    for index, value in values.items():
        data["samples"][index]["scores"]["match"]["value"] = value
    path = tmp_path / "changed.json"
    path.write_text(json.dumps(data, allow_nan=True))
    return path


def test_a_rejected_sample_stays_a_planned_slot_not_run(tmp_path: Path) -> None:
    """The plan never shrinks: a sample rejected for its score keeps its question, whose
    slot is counted not run (N = 3 questions x R 1, not 2), with the reject named."""
    ev = gk.evaluate(gk.read_log(_popularity(tmp_path, {2: float("nan")}), source="inspect"))
    grades = ev.grades.filter(pl.col("subset") == "all").row(0, named=True)
    assert (grades["N"], grades["not_run"], grades["resolved"]) == (3, 1, 2)
    assert [r["field"] for r in ev.rejected.iter_rows(named=True)] == [
        "samples[2].scores.match.value"]


def test_a_number_written_as_text_is_neither_graded_nor_counted(tmp_path: Path) -> None:
    """A score "0" is rejected in both the grade and the source's metric (which Inspect's
    value_to_float would count as 0); "N" (no answer) is graded unresolved and counted 0.
    Samples: "0", "N", I -> the metric over the two kept: (0 + 0) / 2."""
    inputs = gk.read_log(_popularity(tmp_path, {0: "0", 1: "N"}), source="inspect")
    (reject,) = inputs.rejected
    assert reject.field == "samples[0].scores.match.value" and "written as text" in \
        reject.error
    ev = gk.evaluate(inputs)
    grades = ev.grades.filter(pl.col("subset") == "all").row(0, named=True)
    assert (grades["N"], grades["unresolved"], grades["not_run"]) == (3, 2, 1)
    (metric,) = ev.results.setups[next(iter(ev.results.setups))].source_metrics.values()
    assert (metric.mean, metric.questions) == (0.0, 2)


def test_a_rejected_trial_keeps_its_question_planned(tmp_path: Path) -> None:
    records = json.loads(TAU.read_text())
    extra = [dict(records[0], task_id=999, trial=t, reward="x") for t in range(4)]
    path = tmp_path / "extra.json"
    path.write_text(json.dumps([*records, *extra]))
    ev = gk.evaluate(gk.read_log(path, source="tau-bench"))
    grades = ev.grades.filter(pl.col("subset") == "all").row(0, named=True)
    assert (grades["N"], grades["not_run"]) == (204, 4)  # 51 questions x R 4
    assert ev.rejected.height == 4


def test_a_setup_has_one_source_metric_per_scorer(tmp_path: Path) -> None:
    """One model's two logs of one task: one reports "match accuracy", the other was cut off
    before its results (no name). One figure over all 6 questions, named as the log names
    it: (C, C, I) and (C, I, I) -> 3 / 6, not 2/3 over 3 beside 1/3 over 3."""
    data = json.loads((INSPECT / "2025-05-12T20-28-13-04-00_popularity.json").read_text())
    (tmp_path / "a.json").write_text(json.dumps(data))
    cut = json.loads(json.dumps(data))
    cut.pop("results")
    for sample, value in zip(cut["samples"], ("C", "I", "I"), strict=True):
        sample["id"] += 10
        sample["scores"]["match"]["value"] = value
    cut["eval"]["dataset"]["sample_ids"] = [s["id"] for s in cut["samples"]]
    (tmp_path / "b.json").write_text(json.dumps(cut))
    ev = gk.evaluate(gk.read_log(tmp_path, source="inspect"))
    (setup,) = ev.results.setups.values()
    assert list(setup.source_metrics) == ["match accuracy"]
    metric = setup.source_metrics["match accuracy"]
    assert (metric.mean, metric.questions) == (0.5, 6)


def test_an_encrypted_eval_member_is_one_error_naming_it(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    """A .eval whose sample member carries the zip's encrypted flag: one error line naming
    the file and the member, never "internal error (RuntimeError ...)"."""
    import zipfile

    from grade_kit.adapters.inspect_ai import read_inspect_log

    header, samples = read_inspect_log(next(INSPECT.glob("*.eval")))
    path = tmp_path / "locked.eval"
    name = "samples/1_epoch_1.json"
    with zipfile.ZipFile(path, "w") as archive:  # stored: the member's bytes as written
        archive.writestr("header.json", json.dumps(header))
        archive.writestr(name, json.dumps(samples[0]))
    data = bytearray(path.read_bytes())
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):  # local, central
        at = -1
        while (at := data.find(signature, at + 1)) >= 0:
            start = at + (30 if signature == b"PK\x03\x04" else 46)
            if data[start:start + len(name)] == name.encode():
                data[at + offset] |= 0x1  # the "encrypted" flag bit
    path.write_bytes(bytes(data))
    assert main(["score", str(path), "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "internal error" not in err[0]
    assert "locked.eval" in err[0] and f"member '{name}' is encrypted" in err[0]


@pytest.mark.parametrize(("mode", "field", "says"), [
    ("some naive", "samples[0].events", "mix naive and time-zone-aware timestamps"),
    ("all naive", "samples[0].events.submitted", "naive timestamp (no time zone)"),
])
def test_a_sample_with_unreadable_times_is_one_reject_naming_it(
        tmp_path: Path, mode: str, field: str, says: str) -> None:
    """Naive times in one sample (some or all of its events): that sample is rejected in
    one line naming the file, the sample and the field; the log's other samples go on, and
    its question stays planned (it refused the whole log, or gave a pydantic dump)."""
    data = json.loads((INSPECT / "2025-05-12T20-28-13-04-00_popularity.json").read_text())
    for k, event in enumerate(data["samples"][0].get("events") or []):
        if event.get("timestamp") and (mode == "all naive" or k % 2):
            event["timestamp"] = event["timestamp"][:26]  # the offset dropped
    path = tmp_path / "naive.json"
    path.write_text(json.dumps(data))
    inputs = gk.read_log(path, source="inspect")
    (reject,) = inputs.rejected
    assert reject.field == field and says in reject.error and "\n" not in reject.message()
    assert len(inputs.runs) == 2 and len(inputs.tasks) == 3
