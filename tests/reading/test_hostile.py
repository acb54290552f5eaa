"""Hostile input: every problem is a reject naming its line (and field), or one clear error;
never a traceback, a hang or a changed number for the good records (docs/methodology.md §6)."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grade_kit as gk
from grade_kit.cli import main
from grade_kit.reading.parse import MAX_DEPTH, ParseError, loads_json, loads_yaml
from grade_kit.reading.records import load_runs
from grade_kit.reading.task_files import load_tasks
from tests.paths import EXAMPLE

GOOD_LINES = [line for line in (EXAMPLE / "runs.jsonl").read_text().splitlines()
              if line.strip()][:31]  # the example's last two lines are deliberately bad
GOOD = [json.loads(line) for line in GOOD_LINES]


def run(run_id: str = "r", **fields: Any) -> dict[str, Any]:
    return {"run_id": run_id, "setup": "A", "task_id": "t1-oct-cancel", "repeat": 1,
            "status": "delivered", "response": {"text": "x"}, **fields}


# ---------------------------------------------------------------- encodings and structure


def test_invalid_utf8_rejects_only_its_line(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    bad = json.dumps(run("bad")).encode().replace(b'"x"', b'"\xff\xfe"')
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(run("a")).encode() + b"\n" + bad + b"\n"
                     + json.dumps(run("b", repeat=2)).encode() + b"\n")
    loaded = load_runs(path)
    assert [r.run_id for r in loaded.records] == ["a", "b"]  # the BOM is accepted
    (reject,) = loaded.rejected
    assert reject.line == 2 and "invalid UTF-8 at byte" in reject.error
    assert "\\xff\\xfe" in reject.raw  # kept, with the bad bytes escaped
    assert main(["score", str(EXAMPLE / "tasks"), str(path), "--out",
                 str(tmp_path / "out")]) == 0
    rejects = [json.loads(x) for x in (tmp_path / "out" / "rejects.jsonl").read_text()
               .splitlines()]
    assert any("\\xff" in r["raw"] for r in rejects)


def test_deep_nesting_is_refused_without_recursion() -> None:
    deep = '{"a": ' * 100_000 + "1" + "}" * 100_000
    with pytest.raises(ParseError, match=f"nesting deeper than {MAX_DEPTH} levels"):
        loads_json(deep)
    assert loads_json('{"t": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}')
    with pytest.raises(ParseError, match="nesting deeper"):
        loads_yaml("a: " + "[" * 5_000 + "]" * 5_000)


def test_repeated_keys_are_refused_naming_the_key(tmp_path: Path) -> None:
    with pytest.raises(ParseError, match="key 'status' appears twice"):
        loads_json('{"status": "delivered", "status": "failed"}')
    with pytest.raises(ParseError, match="key 'weights' appears twice"):
        loads_yaml("weights: {}\nweights: {}\n")
    (tmp_path / "t.yaml").write_text("task_id: t\ntask_id: u\nprompt: q\n")
    (reject,) = load_tasks(tmp_path).rejected
    assert "key 'task_id' appears twice" in reject.error


def test_a_yaml_alias_bomb_is_refused_quickly(tmp_path: Path) -> None:
    bomb = "\n".join(
        ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
        + [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]"
           for i in range(8)]
        + ["task_id: t", "prompt: *i"])
    assert len(bomb) < 1_000
    (tmp_path / "bomb.yaml").write_text(bomb)
    loaded = load_tasks(tmp_path)
    (reject,) = loaded.rejected
    assert "alias bomb" in reject.error


def test_task_folders_report_links_and_non_regular_files(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "good.yaml").write_text("task_id: q\nprompt: q\n")
    (tasks / "loop.yaml").symlink_to(tasks / "loop.yaml")
    (tasks / "dangling.yaml").symlink_to(tmp_path / "nowhere.yaml")
    (tasks / "elsewhere").symlink_to(tmp_path)
    os.mkfifo(tasks / "pipe.yaml")
    loaded = load_tasks(tasks)
    assert [t.task_id for t in loaded.records] == ["q"]
    errors = {Path(r.source).name: r.error for r in loaded.rejected}
    assert "loops or points nowhere" in errors["loop.yaml"]
    assert "loops or points nowhere" in errors["dangling.yaml"]
    assert errors["pipe.yaml"] == "not a regular file"
    assert any("linked folder is not followed" in w.message for w in loaded.warnings)


# ---------------------------------------------------------------- strict contracts


@pytest.mark.parametrize(("fields", "field"), [
    ({"repeat": "2"}, "repeat"), ({"repeat": True}, "repeat"), ({"repeat": 2.0}, "repeat"),
    ({"repeat": 10**18}, "repeat"), ({"setup": 7}, "setup"),
    ({"tool_calls": [{"id": 1, "name": "sql"}]}, "tool_calls[0].id"),
])
def test_no_coercion_of_runs(fields: dict[str, Any], field: str) -> None:
    (reject,) = load_runs([run(**fields)]).rejected
    assert reject.field == field


@pytest.mark.parametrize(("record", "field"), [
    ({"score": "0.5"}, "score"), ({"score": True}, "score"), ({"score": float("nan")}, "score"),
])
def test_no_coercion_of_judgements(record: dict[str, Any], field: str) -> None:
    from grade_kit.reading.records import load_judgements

    base = {"run_id": "r", "dimension": "evidence_linkage", "score": 0.5, "judge": "j"}
    (reject,) = load_judgements([{**base, **record}]).rejected
    assert reject.field == field


@pytest.mark.parametrize(("truth", "message"), [
    ("{not json", "ground truth cannot be read: "),
    ('{"a": NaN}', "must be finite"),
    ('{"a": Infinity}', "must be finite"),
    ('{"a": true}', "holds bool"),
    ('{"a": 1, "a": 2}', "appears twice"),
])
def test_a_bad_ground_truth_rejects_its_tasks(tmp_path: Path, truth: str, message: str) -> None:
    (tmp_path / "packs" / "p").mkdir(parents=True)
    (tmp_path / "packs" / "p" / "ground_truth.json").write_text(truth)
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "t.yaml").write_text(
        "task_id: t\ntrack: 1\npack: p\nprompt: q\nweights: {grounding_accuracy: 1}\n"
        "gold_facts: [{id: f, metric: m, ground_truth: a}]\n")
    (reject,) = load_tasks(tmp_path / "tasks").rejected
    assert reject.field == "gold_facts[0].ground_truth"
    assert message in reject.error


def test_a_pack_is_a_plain_name_never_a_path() -> None:
    for pack in ("../etc", "/abs", "a/b", ".hidden", ""):
        loaded = load_tasks([{"task_id": "t", "track": 1, "pack": pack, "prompt": "q",
                              "weights": {"grounding_accuracy": 1.0}}])
        (reject,) = loaded.rejected
        assert reject.field == "pack", pack


# ---------------------------------------------------------------- the fuzz test

MUTATIONS = ("drop", "retype", "nest", "timestamp", "huge", "unicode", "duplicate_key",
             "truncate", "bytes", "empty", "array")
VALUES: list[Any] = [None, True, False, 0, -1, 10**30, 1.5, float("inf"), "", "2", [], {},
                     "\ud800", "x" * 10_000]
STAMPS = ["2026-11-02T09:00:00", "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-12:00",
          "not a time", "2026-13-45T99:00:00+00:00", 1700000000]


def mutate(record: dict[str, Any], kind: str, rnd: random.Random) -> bytes:
    """One hostile line derived from a valid record."""
    rec = json.loads(json.dumps(record))
    rec["run_id"] = f"fuzz-{rnd.randrange(10**9)}"
    rec["setup"] = f"fuzz-{rnd.randrange(10**9)}"  # never an original setup's slot
    keys = [k for k in rec if k not in ("run_id", "setup")]
    key = rnd.choice(keys)
    if kind == "drop":
        rec.pop(key)
    elif kind == "retype":
        rec[key] = rnd.choice(VALUES)
    elif kind == "nest":
        value: Any = rec.get(key)
        for _ in range(rnd.choice([3, 70, 500])):
            value = [value]
        rec[key] = value
    elif kind == "timestamp":
        rec["events"] = {"submitted": rnd.choice(STAMPS), "received": rnd.choice(STAMPS)}
    elif kind == "huge":
        rec["repeat"] = rnd.choice([10**18, 10**6, -5, 0, 2**63])
    elif kind == "unicode":
        rec["response"] = {"text": "\u202e\u0000\ufeff" + "é" * 50, "key_findings": ["\ud83d"]}
    elif kind == "duplicate_key":
        text = json.dumps(rec)
        return (text[:-1] + ', "status": "failed"}').encode()
    elif kind == "truncate":
        text = json.dumps(rec)
        return text[: rnd.randrange(1, len(text))].encode()
    elif kind == "bytes":
        return json.dumps(rec).encode()[:40] + bytes([0xC3, 0x28, 0xFF]) + b"}"
    elif kind == "empty":
        return b"{}"
    elif kind == "array":
        return json.dumps([rec]).encode()
    return json.dumps(rec, allow_nan=True).encode("utf-8", "surrogatepass")


@pytest.fixture(scope="module")
def clean() -> gk.Evaluation:
    return gk.evaluate(EXAMPLE / "tasks", GOOD, repeats=3)


def _original(ev: gk.Evaluation) -> dict[str, Any]:
    out = {}
    for name in ("careful", "hasty"):
        s = ev.results.setups[name]
        out[name] = {"overall": s.overall.model_dump(),
                     "tasks": {k: v.model_dump() for k, v in s.tasks.items()},
                     "grades": s.grades.model_dump(), "timing": s.timing.model_dump(),
                     "tool_calls": s.tool_calls.model_dump()}
    return out


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(kinds=st.lists(st.sampled_from(MUTATIONS), min_size=1, max_size=6),
       seed=st.integers(0, 2**32 - 1))
def test_mutated_records_never_escape_or_change_the_good_ones(
        tmp_path_factory: pytest.TempPathFactory, clean: gk.Evaluation, kinds: list[str],
        seed: int) -> None:
    rnd = random.Random(seed)
    bad_lines = [mutate(rnd.choice(GOOD), kind, rnd) for kind in kinds]
    folder = tmp_path_factory.mktemp("fuzz")
    path = folder / "runs.jsonl"
    lines = [line.encode() for line in GOOD_LINES]
    at = sorted(rnd.sample(range(len(lines) + len(bad_lines)), len(bad_lines)))
    for index, line in zip(at, bad_lines, strict=True):
        lines.insert(index, line)
    path.write_bytes(b"\n".join(line.replace(b"\n", b" ") for line in lines) + b"\n")
    ev = gk.evaluate(EXAMPLE / "tasks", path, repeats=3)  # must not raise
    assert _original(ev) == _original(clean)
    for reject in ev.inputs.rejected:
        assert reject.line is not None and reject.error
    assert len(ev.inputs.runs) + len(ev.inputs.rejected) == len(lines)
    ev.write(folder / "out")  # and writing never fails either


JUDGEMENT = {"run_id": GOOD[0]["run_id"], "dimension": "evidence_linkage", "score": 0.5,
             "judge": "j", "reason": "r"}
GRADE = {"run_id": GOOD[0]["run_id"], "core_conclusion": "correct",
         "request_fulfilment": "full", "material_error": "no", "grader": "g"}
TASK = {"task_id": "t", "track": 1, "pack": "tutoring-mini", "prompt": "q",
        "weights": {"grounding_accuracy": 1.0},
        "gold_facts": [{"id": "f", "metric": "m", "value": 0.5, "abs_tol": 0.01}],
        "gold_insights": [{"id": "i", "text": "alpha beta"}]}


def _mutate_plain(record: dict[str, Any], kind: str, rnd: random.Random,
                  fresh: dict[str, str]) -> bytes:
    rec = json.loads(json.dumps(record))
    rec.update(fresh)
    key = rnd.choice([k for k in rec if k not in fresh])
    if kind == "drop":
        rec.pop(key)
    elif kind in ("retype", "huge"):
        rec[key] = rnd.choice(VALUES)
    elif kind == "nest":
        rec[key] = json.loads("[" * 100 + "1" + "]" * 100)
    elif kind == "duplicate_key":
        return (json.dumps(rec)[:-1] + f', "{key}": null}}').encode()
    elif kind == "truncate":
        text = json.dumps(rec)
        return text[: rnd.randrange(1, len(text))].encode()
    elif kind == "bytes":
        return json.dumps(rec).encode()[:20] + b"\xff\xfe" + b"}"
    elif kind == "array":
        return json.dumps([rec]).encode()
    elif kind == "unicode":
        rec[key] = "\u202e\x00" + "é" * 20
    return json.dumps(rec, allow_nan=True).encode()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(kinds=st.lists(st.sampled_from(MUTATIONS), min_size=1, max_size=4),
       seed=st.integers(0, 2**32 - 1))
def test_mutated_verdicts_and_tasks_never_escape(tmp_path_factory: pytest.TempPathFactory,
                                                 kinds: list[str], seed: int) -> None:
    rnd = random.Random(seed)
    folder = tmp_path_factory.mktemp("fuzz-verdicts")
    good_j = [dict(JUDGEMENT, run_id=r["run_id"]) for r in GOOD[:5]]
    good_g = [dict(GRADE, run_id=r["run_id"]) for r in GOOD[:5]]
    # mutated verdicts name runs that have none, so an accepted one cannot collide
    bad_j = [_mutate_plain(JUDGEMENT, k, rnd, {"run_id": GOOD[10 + i]["run_id"]})
             for i, k in enumerate(kinds)]
    bad_g = [_mutate_plain(GRADE, k, rnd, {"run_id": GOOD[10 + i]["run_id"]})
             for i, k in enumerate(kinds)]
    (folder / "j.jsonl").write_bytes(b"\n".join([*(json.dumps(j).encode() for j in good_j),
                                                 *(b.replace(b"\n", b" ") for b in bad_j)]))
    (folder / "g.jsonl").write_bytes(b"\n".join([*(json.dumps(g).encode() for g in good_g),
                                                 *(b.replace(b"\n", b" ") for b in bad_g)]))
    tasks = folder / "tasks.jsonl"
    good_t = [dict(TASK, task_id=f"good-{i}") for i in range(2)]
    bad_t = [_mutate_plain(TASK, k, rnd, {"task_id": f"fuzz-{i}"}) for i, k in enumerate(kinds)]
    tasks.write_bytes(b"\n".join([*(json.dumps(t).encode() for t in good_t),
                                  *(b.replace(b"\n", b" ") for b in bad_t)]) + b"\n")
    ev = gk.evaluate(EXAMPLE / "tasks", GOOD, judgements=folder / "j.jsonl",
                     grades=folder / "g.jsonl", repeats=3)  # must not raise
    for reject in ev.inputs.rejected:
        assert reject.line is not None and reject.error
    graded = {g.run_id for g in ev.inputs.grades}
    assert {g["run_id"] for g in good_g} <= graded
    judged = {(j.run_id, j.dimension) for j in ev.inputs.judgements}
    assert {(j["run_id"], "evidence_linkage") for j in good_j} <= judged
    loaded = load_tasks(tasks)
    assert {"good-0", "good-1"} <= {t.task_id for t in loaded.records}
    for reject in loaded.rejected:
        assert reject.line is not None and reject.error
    ev.write(folder / "out")
