"""The loaders' fast path (grade_kit/reading/_fastread.py) against the reference path (strict
JSON and the pydantic models, one line at a time): on thousands of random lines, valid and hostile,
both accept the same lines with the same values and reject the rest with the same messages,
and the frames built from either are equal."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import msgspec
import pytest
from pydantic import BaseModel

from grade_kit.frames import run_frames, verdict_frames
from grade_kit.reading import io as gk_io
from grade_kit.reading._fastread import (
    LazyRecords,
    decode_fast,
    raw_records,
    struct_of,
)
from grade_kit.reading.io import Loaded
from grade_kit.reading.parse import ParseError, loads_json
from grade_kit.reading.records import load_grades, load_judgements, load_runs
from grade_kit.schema import Grade, Judgement, Response, Run, Task, ToolCall, Usage

FastRun, FastJudgement, FastGrade = struct_of(Run), struct_of(Judgement), struct_of(Grade)

TASKS = [f"t{i}" for i in range(6)]
WORDS = ("rate", "rose", "October", "tutor", "T-07", "élève", "データ", "a:b", 'say "hi"',
         "back\\slash", "tab\there", "emoji 🎉", "x" * 30)


def _timestamp(rng: random.Random) -> Any:
    return rng.choice([
        "2026-11-02T09:00:00+00:00", "2026-11-02T09:00:01.5+02:00", "2026-11-02T09:00:00Z",
        "2026-11-02T09:00:00.123456-05:30", "2026-11-02 09:00:00+00:00",
        "2026-11-02T09:00:00",  # naive
        "2026-13-02T09:00:00+00:00", "yesterday", "0001-01-01T00:00:00+01:00",  # bad
        "9999-12-31T23:59:59-01:00", None, 5, "",
    ])


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(12 if depth < 3 else 8)
    return [
        lambda: rng.randint(-5, 10**6), lambda: rng.random(), lambda: rng.choice(WORDS),
        lambda: None, lambda: rng.choice([True, False]), lambda: 10**30,
        lambda: rng.choice([0.184, "18.4%", "7", 1e-7, -0.0, 1e16, 123456789.123]),
        lambda: "",
        lambda: {rng.choice(WORDS): _value(rng, depth + 1) for _ in range(rng.randint(0, 3))},
        lambda: [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))],
        lambda: {"k": _value(rng, depth + 1)}, lambda: [[[1]]],
    ][kind]()


def _run(rng: random.Random, i: int) -> dict[str, Any]:
    status = rng.choice(["delivered"] * 6 + ["timeout", "limit", "failed", "cancelled"])
    record: dict[str, Any] = {
        "run_id": f"r{i}", "setup": rng.choice(["a", "b", "c"]), "task_id": rng.choice(TASKS),
        "repeat": rng.randint(1, 400), "status": status,
        "events": {"submitted": "2026-11-02T09:00:00+00:00",
                   "received": "2026-11-02T09:00:07.25+00:00"},
    }
    if rng.random() < 0.2:
        record["attempt_of"] = f"r{rng.randrange(max(i, 1))}"
    elif rng.random() < 0.5:
        record["attempt_of"] = None
    if rng.random() < 0.3:
        record["error"] = rng.choice([None, "timed out", ""])
    if status == "delivered" or rng.random() < 0.2:
        record["response"] = {
            "key_findings": [" ".join(rng.sample(WORDS, 3)) for _ in range(rng.randint(0, 4))],
            "limitations": [rng.choice(WORDS)] * rng.randint(0, 2),
            "recommendations": [] if rng.random() < 0.5 else None,
            "structured_metrics": {f"m{k}": _value(rng) for k in range(rng.randint(0, 6))},
            "text": rng.choice(["", "An answer.", None, "Réponse: 18,4 %"]),
        }
        if rng.random() < 0.3:
            del record["response"][rng.choice(list(record["response"]))]
    if rng.random() < 0.7:
        record["tool_calls"] = [
            {"id": f"c{k % 2}", "name": rng.choice(["sql", "python"]),
             "started": "2026-11-02T09:00:01+00:00",
             "ended": _timestamp(rng) if rng.random() < 0.3 else "2026-11-02T09:00:02Z"}
            for k in range(rng.randint(0, 3))]
    elif rng.random() < 0.5:
        record["tool_calls"] = None
    if rng.random() < 0.4:
        record["usage"] = {"input_tokens": rng.choice([0, 12, None, -1, True, 1.0, 10**20]),
                           "output_tokens": 5}
    if rng.random() < 0.5:
        record["metadata"] = {"clock": {"source": rng.choice(["x", "", None]),
                                        "endpoint_offset_s": _value(rng)},
                              "interaction": {"follow_up": rng.choice(["protocol", "ad_hoc",
                                                                       "other", None]),
                                              "resumed": rng.choice([True, False, 1])},
                              "extra": _value(rng)}
    if status == "limit" or rng.random() < 0.02:
        record["limit"] = rng.choice([
            {"type": "message", "value": 30}, {"type": "time", "value": 1.5},
            {"type": "token"}] * 4 + [
            {"type": "", "value": 1}, {"type": "cost", "value": -1},
            {"type": "working", "value": True}, None, "message"])
    if rng.random() < 0.2:
        record["working_s"] = rng.choice([0, 66.2, -0.0, None, 12] * 3
                                         + [-1, 1e10, True, "5", 2**70])
    if rng.random() < 0.1:
        record["unknown_field"] = _value(rng)
    return record


def _mutate(rng: random.Random, record: dict[str, Any]) -> dict[str, Any]:
    """A field given a wrong or hostile value."""
    field = rng.choice(list(record))
    record[field] = rng.choice([None, "", "x", 0, -1, 1.0, True, [], {}, 10**30,
                                1_000_001, {"a": 1}, ["r0"], "delivered"])
    if rng.random() < 0.3 and isinstance(record.get("events"), dict):
        record["events"][rng.choice(["submitted", "received", "first_token"])] = (
            _timestamp(rng))
    return record


def _line(rng: random.Random, record: Any) -> str:
    """The record as a JSON line, sometimes pretty, escaped, or broken at the text level."""
    text = json.dumps(record, ensure_ascii=rng.random() < 0.2,
                      separators=rng.choice([(",", ":"), (", ", ": "), (" , ", " : ")]))
    roll = rng.random()
    if roll < 0.03 and text.startswith("{") and len(text) > 2:
        return text[:-1] + ', "run_id": "again"}'  # a key repeated at the top
    if roll < 0.06 and '"events": {' in text:
        return text.replace('"events": {', '"events": {"submitted": "2026-11-02T09:00:00Z", ',
                            1)  # a key repeated inside an object
    if roll < 0.08:
        return text.replace('"', "'", 1)  # malformed
    if roll < 0.10:
        return text[: rng.randrange(1, max(2, len(text)))]  # cut
    if roll < 0.12 and text.startswith("{"):
        return '{"metadata": ' + "[" * 70 + "]" * 70 + ", " + text[1:]  # too deep
    if roll < 0.14 and text.startswith("{"):
        return '{"metadata": {"x": "\\ud800"}, ' + text[1:]  # a lone surrogate
    if roll < 0.16 and text.startswith("{"):
        return '{"metadata": {"x": NaN, "y": 1e400}, ' + text[1:]
    if roll < 0.18 and text.startswith("{"):
        return '{"metadata": {"\\u0061": 1, "a": 2}, ' + text[1:]  # escaped repeated key
    if roll < 0.19:
        return rng.choice(["[]", "7", "null", '"run"', "\ufeff{}"])
    return text


def _run_lines(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        record = _run(rng, i)
        if rng.random() < 0.25:
            record = _mutate(rng, record)
        out.append(_line(rng, record))
    return out


def _reference(monkeypatch: pytest.MonkeyPatch, load: Any, *args: Any) -> Loaded[Any]:
    """``load(*args)`` with the fast path switched off: every line takes the reference path."""
    with monkeypatch.context() as patch:
        patch.setattr(gk_io, "decode_fast", lambda text, struct: None)
        return load(*args)


def _same(fast: Loaded[Any], slow: Loaded[Any]) -> None:
    assert [r.message() for r in fast.rejected] == [r.message() for r in slow.rejected]
    assert [r.raw for r in fast.rejected] == [r.raw for r in slow.rejected]
    assert fast.lines == slow.lines and fast.sources == slow.sources
    assert isinstance(fast.records, LazyRecords)
    assert [m.model_dump() for m in fast.records] == [m.model_dump() for m in slow.records]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_runs_fast_path_equals_reference_path(tmp_path: Path, seed: int,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    lines = _run_lines(seed, 1500)
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tasks = [Task(task_id=t, prompt="q") for t in TASKS[:-1]]  # one task id is unknown
    fast = load_runs(path, tasks)
    slow = _reference(monkeypatch, load_runs, path, tasks)
    # the mix is hostile enough to matter: both paths taken, many lines of each outcome
    structs = sum(isinstance(r, FastRun) for r in raw_records(fast.records))
    assert structs > 300 and len(fast.rejected) > 300
    frames_fast = run_frames(fast.records, fast.lines)  # built from the structs
    _same(fast, slow)
    frames_slow = run_frames(slow.records, slow.lines)
    for name, frame in frames_fast.items():
        assert frame.equals(frames_slow[name], null_equal=True), name


def test_in_memory_runs_take_the_same_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(9)
    records = [_run(rng, i) for i in range(300)]
    _same(load_runs(records), _reference(monkeypatch, load_runs, records))


def _verdict_lines(seed: int, n: int) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    judged, graded = [], []
    for i in range(n):
        judgement: dict[str, Any] = {
            "run_id": f"r{rng.randrange(n)}",  # a repeated (run, dimension) is a reject
            "dimension": rng.choice(["evidence_linkage", "structure_usability"] * 4
                                    + ["consistency"]),
            "score": rng.choice([0, 1, 0.5, 0.25, 0.75, 1.0, None, 1.5, -0.1, True, "0.5"]),
            "judge": rng.choice(["j"] * 6 + [""]),
        }
        if rng.random() < 0.5:
            judgement["reason"] = rng.choice([None, "", "nothing to check"])
        if rng.random() < 0.2:
            judgement["provenance"] = rng.choice([None, {"model": "m"}, [], "x"])
        judged.append(_line(rng, judgement))
        grade: dict[str, Any] = {
            "run_id": f"r{i}",
            "core_conclusion": rng.choice(["correct", "material_error", "pending", "wrong"]),
            "request_fulfilment": rng.choice(["full", "partial", "not_met", "pending"]),
            "material_error": rng.choice(["yes", "no", "pending", True]),
            "grader": rng.choice(["g"] * 6 + ["", None]),
        }
        for optional in ("claim", "evidence", "effect", "reason"):
            if rng.random() < 0.3:
                grade[optional] = rng.choice([None, "x", 3])
        if rng.random() < 0.3:
            grade["needs_more_information"] = rng.choice([None, True, False, 1, "yes"])
        graded.append(_line(rng, grade))
    return judged, graded


@pytest.mark.parametrize("seed", [4, 5])
def test_verdicts_fast_path_equals_reference_path(tmp_path: Path, seed: int,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    judged, graded = _verdict_lines(seed, 1500)
    j_path, g_path = tmp_path / "judgements.jsonl", tmp_path / "grades.jsonl"
    j_path.write_text("\n".join(judged) + "\n", encoding="utf-8")
    g_path.write_text("\n".join(graded) + "\n", encoding="utf-8")
    runs = [type("R", (), {"run_id": f"r{i}"})() for i in range(0, 1500, 2)]
    fast_j = load_judgements(j_path, runs)  # type: ignore[arg-type]
    fast_g = load_grades(g_path, runs)  # type: ignore[arg-type]
    frames_fast = verdict_frames(fast_j.records, fast_g.records)
    slow_j = _reference(monkeypatch, load_judgements, j_path, runs)
    slow_g = _reference(monkeypatch, load_grades, g_path, runs)
    assert len(fast_j.records) > 100 and len(fast_g.records) > 100
    _same(fast_j, slow_j)
    _same(fast_g, slow_g)
    frames_slow = verdict_frames(slow_j.records, slow_g.records)
    for name, frame in frames_fast.items():
        assert frame.equals(frames_slow[name], null_equal=True), name


@pytest.mark.parametrize("text", [
    '{"a": 1, "a": 2}',                 # repeated key
    '{"a": {"b": 1, "b": 1}}',          # repeated inner key
    '{"\\u0061": 1}',                   # an escape: left to the reference path
    '{"a": NaN}', '{"a": 1e400}',       # Python's JSON reads these; msgspec does not
    "[1]", "1",                         # not an object
])
def test_decode_fast_leaves_doubtful_lines_to_the_reference_path(text: str) -> None:
    assert decode_fast(text, FastMetadataOnly) is None


def _reference_model(model: type[BaseModel], text: str) -> BaseModel | None:
    try:
        data = loads_json(text)
        return model.model_validate(data) if isinstance(data, dict) else None
    except (ParseError, ValueError):
        return None


class FastMetadataOnly(msgspec.Struct):
    """A struct every object above would fit (its one field is optional, others ignored)."""

    a: Any = None


def test_colons_inside_strings_do_not_hide_a_repeated_key() -> None:
    ok = ('{"run_id": "a:b", "setup": ":::", "task_id": "t", "repeat": 1, '
          '"status": "failed", "metadata": {"k:": ":v"}}')
    assert decode_fast(ok, FastRun) is not None
    repeated = ok.replace('"k:": ":v"', '"k:": ":v", "k:": 2')
    assert decode_fast(repeated, FastRun) is None


def test_lazy_records_build_each_model_once() -> None:
    struct = decode_fast('{"run_id": "a", "setup": "s", "task_id": "t", "repeat": 1, '
                         '"status": "delivered", "response": {"key_findings": null}}', FastRun)
    assert struct is not None and struct.response is not None
    assert struct.response.key_findings == []  # null is read as absent, as the model does
    lazy = LazyRecords(Run, [struct])
    first = lazy[0]
    assert isinstance(first, Run) and lazy[0] is first and lazy[-1] is first
    assert first.response is not None and first.response.key_findings == []
    assert lazy == [first] and len(lazy) == 1 and lazy[:1] == [first]
    with pytest.raises(IndexError):
        lazy[1]


@pytest.mark.parametrize(("struct", "model"), [
    (FastRun, Run), (struct_of(Response), Response), (struct_of(ToolCall), ToolCall),
    (struct_of(Usage), Usage), (FastJudgement, Judgement), (FastGrade, Grade)])
def test_each_struct_mirrors_its_model(struct: type[msgspec.Struct],
                                       model: type[BaseModel]) -> None:
    """A field added to a model and not to its struct would be dropped by the fast path:
    the same field names, the same required fields, derived once per model."""
    assert struct_of(model) is struct
    fields = {f.name: f for f in msgspec.structs.fields(struct)}
    assert list(fields) == list(model.model_fields)
    required = {name for name, f in fields.items() if f.required}
    assert required == {n for n, f in model.model_fields.items() if f.is_required()}


def test_a_derived_struct_states_the_models_rules() -> None:
    """Constraints, literals, nested models, AfterValidators inside containers, the model's
    own after-validators and null-is-absent, each seen rejecting or defaulting."""
    run = struct_of(Run)
    good = {"run_id": "r", "setup": "s", "task_id": "t", "repeat": 1, "status": "timeout"}
    assert msgspec.convert(good, run).events == {}
    for bad in ({"repeat": 0}, {"run_id": ""}, {"status": "done"},
                {"events": {"submitted": "2026-01-01T00:00:00"}},  # naive timestamp
                {"tool_calls": [{"id": "a", "name": "x", "started": "yesterday"}]},
                {"status": "delivered"},  # the model's after-validator: needs a response
                {"usage": {"input_tokens": -1}}, {"working_s": -0.5}):
        with pytest.raises(msgspec.ValidationError):
            msgspec.convert({**good, **bad}, run)
    answer = msgspec.convert({"key_findings": None, "text": None}, struct_of(Response))
    assert answer.key_findings == [] and answer.text == ""  # type: ignore[attr-defined]
    with pytest.raises(msgspec.ValidationError, match="null score"):
        msgspec.convert({"run_id": "r", "dimension": "evidence_linkage", "score": None,
                         "judge": "j"}, FastJudgement)


def test_a_model_rule_without_a_struct_form_fails_at_derivation() -> None:
    """A validator the derivation does not know stops it (so it cannot be skipped)."""
    from pydantic import field_validator

    class Odd(BaseModel):
        name: str

        @field_validator("name")
        @classmethod
        def _upper(cls, value: str) -> str:
            return value.upper()

    class Patterned(BaseModel):
        name: str = __import__("pydantic").Field(pattern="^a")

    for model in (Odd, Patterned):
        with pytest.raises(TypeError, match=r"msgspec|struct"):
            struct_of(model)
