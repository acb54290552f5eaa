"""Inspect AI logs (``.eval`` zip or ``.json``) -> tasks, runs and grades.

Mapping: setup = ``eval.model``; task = ``<eval.task>/<sample.id>`` with the sample's input as
prompt and its target as reference; repeat = epoch. submitted = the sample's first event
(``sample_init`` or its span); received = the start of scoring (the first scorer span/step),
when the answer was ready; ``model_text_finished`` = the last solver model event's
``completed``; the log's own ``total_time``/``working_time`` are kept in ``metadata``.
A sample with ``error`` is failed; one stopped by a ``limit`` is a timeout. Tool calls come
from ``tool`` events (with timestamps) or, failing those, the assistant messages.
Scores: the first scorer (or the one named) maps C / 1 -> resolved, P / 0 < v < 1 -> partially
resolved, I / 0 -> unresolved; a model-graded scorer makes the grader a model.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

from grade_kit.adapters.common import Imported, grade_for_outcome
from grade_kit.schema import Run, Task

__all__ = ["MAX_MEMBER", "import_inspect", "read_inspect_log"]

MAX_MEMBER = 1 << 30
"""The largest uncompressed zip member read from an ``.eval`` (a decompression-bomb bound)."""


def read_inspect_log(path: Path | str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header (``eval``, ``results``...) and samples of an Inspect ``.eval`` or ``.json``."""
    path = Path(path)
    if path.suffix == ".eval" or zipfile.is_zipfile(path):
        try:
            with zipfile.ZipFile(path) as archive:
                names = archive.namelist()
                header_name = next((n for n in ("header.json", "_journal/start.json")
                                    if n in names), None)
                if header_name is None:
                    raise ValueError("a zip without header.json or _journal/start.json is "
                                     "not an Inspect .eval log")
                outside = [n for n in names if ".." in n.split("/") or n.startswith("/")]
                if outside:
                    raise ValueError(f"member name(s) outside the archive: {outside[:3]}")
                too_big = [i.filename for i in archive.infolist() if i.file_size > MAX_MEMBER]
                if too_big:
                    raise ValueError(f"member(s) larger than {MAX_MEMBER:,} bytes "
                                     f"uncompressed: {too_big[:3]}")
                header = json.loads(archive.read(header_name))
                samples = [json.loads(archive.read(n)) for n in sorted(names)
                           if n.startswith("samples/") and n.endswith(".json")]
        except zipfile.BadZipFile as exc:
            raise ValueError(f"not a readable .eval (zip) file: {exc}") from exc
    else:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError("an Inspect .json log is a JSON object with an 'eval' header")
        header, samples = data, list(data.get("samples") or [])
    if not isinstance(header, dict) or not isinstance(header.get("eval"), dict):
        raise ValueError("no 'eval' header: not an Inspect log")
    if not all(isinstance(s, dict) for s in samples):
        raise ValueError("a sample is not a JSON object")
    return header, samples


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content
                         if isinstance(part, dict) and part.get("type", "text") == "text")
    return ""


def _prompt(sample_input: Any) -> str:
    if isinstance(sample_input, str):
        return sample_input
    if isinstance(sample_input, list):
        return "\n".join(_text(m.get("content")) for m in sample_input if isinstance(m, dict))
    return json.dumps(sample_input)


def _is_scoring_start(event: dict[str, Any]) -> bool:
    kind = event.get("event")
    if kind == "span_begin" and event.get("type") in ("scorer", "scorers"):
        return True
    if kind == "step" and event.get("action") == "begin" and event.get("type") == "scorer":
        return True
    return kind == "score"


def _events(sample: dict[str, Any]) -> dict[str, str | None]:
    events = [e for e in sample.get("events") or [] if e.get("timestamp")]
    if not events:
        return {}
    out: dict[str, str | None] = {"submitted": events[0]["timestamp"]}
    scoring = next((e for e in events if _is_scoring_start(e)), None)
    if scoring is not None:
        out["received"] = scoring["timestamp"]
        solver_models = [e for e in events if e.get("event") == "model"
                         and e["timestamp"] < scoring["timestamp"] and e.get("completed")]
        if solver_models:
            out["model_text_finished"] = solver_models[-1]["completed"]
    return out


def _tool_calls(sample: dict[str, Any]) -> list[dict[str, Any]]:
    tool_events = [e for e in sample.get("events") or [] if e.get("event") == "tool"]
    if tool_events:
        return [{"id": str(e.get("id")), "name": str(e.get("function") or "?"),
                 "started": e.get("timestamp"), "ended": e.get("completed")}
                for e in tool_events]
    return [{"id": str(call.get("id")), "name": str(call.get("function") or "?")}
            for message in sample.get("messages") or [] if message.get("role") == "assistant"
            for call in message.get("tool_calls") or []]


def _usage(sample: dict[str, Any]) -> dict[str, int] | None:
    """Input and output tokens summed over the sample's models (``model_usage``)."""
    usage = sample.get("model_usage")
    if not isinstance(usage, dict) or not usage:
        return None
    totals = {"input_tokens": 0, "output_tokens": 0}
    for per_model in usage.values():
        if isinstance(per_model, dict):
            for key in totals:
                value = per_model.get(key)
                if isinstance(value, int) and not isinstance(value, bool):
                    totals[key] += value
    return totals


def _outcome(value: Any) -> str | None:
    if isinstance(value, str):
        return {"C": "resolved", "P": "partial", "I": "unresolved"}.get(value.upper())
    if isinstance(value, bool):
        return "resolved" if value else "unresolved"
    if isinstance(value, int | float):
        return "resolved" if value >= 1 else ("partial" if value > 0 else "unresolved")
    return None


def import_inspect(path: Path | str, setup: str | None = None,
                   scorer: str | None = None) -> Imported:
    """Convert one Inspect log.

    Args:
        path: A ``.eval`` or ``.json`` log.
        setup: Setup name; default the log's ``eval.model``.
        scorer: The score to grade by; default the sample's first score.
    """
    path = Path(path)
    header, samples = read_inspect_log(path)
    ev = header.get("eval") or {}
    setup = setup or str(ev.get("model") or path.stem)
    task_name = str(ev.get("task") or path.stem)
    out = Imported(label=path.name, notes=[
        f"{path.name}: submitted = first sample event, received = start of scoring; "
        "total_time and working_time kept in run metadata",
        f"{path.name}: scores C/1 -> resolved, P -> partially resolved, I/0 -> unresolved "
        "(no material error is claimed)",
    ])
    status = header.get("status")
    if status in ("cancelled", "error"):
        err = header.get("error") or {}
        message = err.get("message") if isinstance(err, dict) else err
        out.notes.append(f"{path.name}: the log's status is {status!r}"
                         + (f" ({message})" if message else "")
                         + f"; its {len(samples)} samples are imported, and samples it never "
                         "ran are not in it")
    tasks: dict[str, Task] = {}
    for sample in samples:
        task_id = f"{task_name}/{sample.get('id')}"
        if task_id not in tasks:
            target = sample.get("target")
            reference = target if isinstance(target, str) else json.dumps(target)
            tasks[task_id] = Task(task_id=task_id, prompt=_prompt(sample.get("input")),
                                  reference=reference.strip() or None, suite=task_name,
                                  metadata={"source": "inspect", "task": task_name})
        epoch = int(sample.get("epoch") or 1)
        run_id = f"{ev.get('run_id') or ev.get('eval_id') or path.stem}/{task_id}/epoch-{epoch}"
        error = sample.get("error")
        limit = sample.get("limit")
        status = "failed" if error else ("timeout" if limit else "delivered")
        events = _events(sample)
        if status != "delivered" and "received" in events:
            events["stopped"] = events.pop("received")
        choices = (sample.get("output") or {}).get("choices") or []
        answer = _text(choices[0].get("message", {}).get("content")) if choices else ""
        run = Run.model_validate({
            "run_id": run_id, "setup": setup, "task_id": task_id, "repeat": epoch,
            "status": status,
            "error": None if not error else str(error.get("message", error)
                                                if isinstance(error, dict) else error),
            "events": events,
            "response": {"text": answer} if status == "delivered" else None,
            "tool_calls": _tool_calls(sample),
            "usage": _usage(sample),
            "metadata": {"source": "inspect",
                         "clock": {"source": "the Inspect runner's event timestamps",
                                   "precision": "as logged"},
                         "total_time": sample.get("total_time"),
                         "working_time": sample.get("working_time"),
                         "limit": limit},
        })
        out.runs.append(run)
        scores = sample.get("scores") or {}
        name = scorer if scorer in scores else next(iter(scores), None)
        if status == "delivered" and name is not None:
            value = scores[name].get("value") if isinstance(scores[name], dict) else None
            outcome = _outcome(value)
            if outcome is not None:
                grader = f"model:{name}" if "model_graded" in name else f"inspect:{name}"
                out.grades.append(grade_for_outcome(run_id, outcome, grader,
                                                    f"{name} = {value!r}"))
            else:
                out.notes.append(f"{path.name}: sample {task_id} epoch {epoch}: score "
                                 f"{value!r} has no grade mapping; left ungraded")
    out.tasks = list(tasks.values())
    return out
