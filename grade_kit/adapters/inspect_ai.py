"""Inspect AI logs (``.eval`` zip or ``.json``) -> tasks, runs and grades.

Mapping (docs/adapters.md): setup = ``eval.model``; task = ``<eval.task>/<sample.id>`` with
the sample's input as prompt and its target as reference; repeat = epoch, and R as the log
states it (``eval.config.epochs``). Timing by the log's own structure: submitted = the
solver's start after set-up, received = the start of scoring after the solver finished (a
score inside the solver is never the end), runner_finished = the solver's end,
model_text_finished = the last solver model event's end; ``working_s`` = the log's working
clock (events' ``working_start``) over the same span, so it excludes scoring as E2E does
(the log's ``total_time`` and ``working_time``, which include it, stay in ``metadata``). A
sample with ``error`` is failed; one stopped by a ``limit`` has status ``limit`` with the
limit's type and value, and is graded by its score like a delivered run. Tool calls come
from ``tool`` events (with timestamps) or, failing those, the assistant messages. Scores: the
first scorer (or the one named) maps C / 1 -> resolved, P / 0 < v < 1 -> partially resolved,
I / 0 -> unresolved; a model-graded scorer makes the grader a model.
"""

from __future__ import annotations

import io
import json
import math
import struct
import zipfile
import zlib
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, cast

import zstandard
from pydantic import ValidationError

from grade_kit.adapters.common import (
    MAX_LOG_BYTES,
    Adapter,
    Imported,
    grade_for_outcome,
    log_json,
    non_negative,
    question_id,
    read_log_json,
    register_adapter,
    whole_number,
)
from grade_kit.reading.io import Rejected, describe_validation_error
from grade_kit.reading.sniff import FileHead
from grade_kit.schema import SOURCE_TOTAL_SLACK_S, Run, Task, arguments_text
from grade_kit.text import brief

MAX_MEMBER = 1 << 29
"""The largest uncompressed zip member read from an ``.eval`` (a decompression-bomb bound;
the members together: :data:`~grade_kit.adapters.common.MAX_LOG_BYTES`)."""


ZSTD = 93
"""The zip compression method of zstd, which current Inspect versions write ``.eval``
members with (Python's zipfile reads stored, deflate, bzip2 and lzma only)."""
_READABLE = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}


def _member(path: Path, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """The bytes of member ``info`` (each member by its own entry: two members of one name
    are two), at most :data:`MAX_MEMBER` of them, checked against the archive's CRC-32: zstd
    members (method 93) decompressed by ``zstandard`` from their raw bytes in the file, the
    others by zipfile."""
    name = info.filename
    if info.flag_bits & 0x1:  # the zip's "encrypted" flag: no Inspect version writes one
        raise ValueError(f"member {name!r} is encrypted (a password-protected zip is not an "
                         "Inspect log)")
    if info.compress_type in _READABLE:
        return archive.read(info)
    if info.compress_type != ZSTD:
        raise ValueError(f"member {name!r} uses zip compression method {info.compress_type}, "
                         "which no Inspect version writes")
    with path.open("rb") as handle:
        handle.seek(info.header_offset)
        local = handle.read(30)
        if len(local) != 30 or local[:4] != b"PK\x03\x04":
            raise ValueError(f"member {name!r}: no local file header where the archive says")
        name_length, extra_length = struct.unpack("<HH", local[26:30])
        handle.seek(info.header_offset + 30 + name_length + extra_length)
        compressed = handle.read(info.compress_size)
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(compressed))
    parts, size = [], 0
    while chunk := reader.read(1 << 20):
        size += len(chunk)
        if size > min(MAX_MEMBER, info.file_size):  # never more than its header declares
            raise ValueError(f"member {name!r} decompresses to more than the "
                             f"{min(MAX_MEMBER, info.file_size):,} bytes its header declares")
        parts.append(chunk)
    data = b"".join(parts)
    if zlib.crc32(data) != info.CRC:
        raise ValueError(f"member {name!r}: its CRC-32 does not match (a corrupt archive)")
    return data


def read_inspect_log(path: Path | str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header (``eval``, ``results``...) and samples of an Inspect ``.eval`` or ``.json``."""
    header, samples, _ = _read_log(Path(path))
    return header, samples


def _read_log(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]], list[str]]:
    """:func:`read_inspect_log`, with where each sample is: ``member samples/<name>.json``
    in a ``.eval`` (two members of one name are two samples), ``samples[i]`` in a ``.json``."""
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
                infos = archive.infolist()
                head = next(i for i in infos if i.filename == header_name)
                wanted = [head, *sorted((i for i in infos if i.filename.startswith("samples/")
                                         and i.filename.endswith(".json")),
                                        key=lambda i: i.filename)]  # stable: archive order
                too_big = [i.filename for i in wanted if i.file_size > MAX_MEMBER]
                if too_big:
                    raise ValueError(f"member(s) larger than {MAX_MEMBER:,} bytes "
                                     f"uncompressed: {too_big[:3]}")
                total = sum(i.file_size for i in wanted)
                if total > MAX_LOG_BYTES:
                    raise ValueError(f"its members hold {total:,} bytes uncompressed, more "
                                     f"than the {MAX_LOG_BYTES:,} one log may hold")
                header = log_json(_member(path, archive, head), header_name)
                samples = [log_json(_member(path, archive, i), i.filename) for i in wanted[1:]]
                where = [f"member {i.filename}" for i in wanted[1:]]
        except (zipfile.BadZipFile, zstandard.ZstdError) as exc:
            raise ValueError(f"not a readable .eval (zip) file: {exc}") from exc
    else:
        data = read_log_json(path)
        if not isinstance(data, dict):
            raise ValueError("an Inspect .json log is a JSON object with an 'eval' header")
        header, samples = data, list(data.get("samples") or [])
        where = [f"samples[{k}]" for k in range(len(samples))]
    if not isinstance(header, dict) or not isinstance(header.get("eval"), dict):
        raise ValueError("no 'eval' header: not an Inspect log")
    if not all(isinstance(s, dict) for s in samples):
        raise ValueError("a sample is not a JSON object")
    return header, samples, where


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


def _instant(event: dict[str, Any]) -> datetime | None:
    try:
        return datetime.fromisoformat(str(event.get("timestamp")))
    except ValueError:
        return None


def _begins(event: dict[str, Any], kinds: tuple[str, ...]) -> bool:
    """A span or step of one of ``kinds`` begins (spans: Inspect 0.3.7x on; steps: before)."""
    if event.get("event") == "span_begin":
        return event.get("type") in kinds
    return (event.get("event") == "step" and event.get("action") == "begin"
            and event.get("type") in kinds)


def _phases(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The events that bound the sample's solver and scoring phases, by the log's own
    structure (docs/adapters.md "Inspect timing"):

    - ``start``: the solvers span's begin; else the first solver span or step; else the last
      ``sample_init`` (the one after sandbox set-up); else the first event.
    - ``solver_end``: the solvers span's end; else the last end of a solver span or step.
    - ``scoring``: the scorers span's begin; else the first scorer span or step at or after
      the solver's end; else the first ``score`` event not marked intermediate at or after
      it. A score inside the solver (an agent scoring its own submissions) is never it.
    """
    out: dict[str, dict[str, Any]] = {}
    spans = {e.get("id"): e.get("type") for e in events if e.get("event") == "span_begin"}
    solvers = next((e for e in events if _begins(e, ("solvers",))), None)
    solver = next((e for e in events if _begins(e, ("solver",))), None)
    inits = [e for e in events if e.get("event") == "sample_init"]
    start = solvers or solver or (inits[-1] if inits else None) or events[0]
    out["start"] = start
    if solvers is not None:
        ends = [e for e in events if e.get("event") == "span_end"
                and e.get("id") == solvers.get("id")]
    else:
        ends = [e for e in events
                if (e.get("event") == "span_end" and spans.get(e.get("id")) == "solver")
                or (e.get("event") == "step" and e.get("action") == "end"
                    and e.get("type") == "solver")]
    if ends:
        out["solver_end"] = ends[-1]
    floor = _instant(ends[-1]) if ends else None

    def after_solver(event: dict[str, Any]) -> bool:
        at = _instant(event)
        return floor is None or (at is not None and at >= floor)

    scoring = (next((e for e in events if _begins(e, ("scorers",))), None)
               or next((e for e in events if _begins(e, ("scorer",)) and after_solver(e)),
                       None)
               or next((e for e in events if e.get("event") == "score"
                        and e.get("intermediate") is not True and after_solver(e)), None))
    if scoring is not None:
        out["scoring"] = scoring
    return out


def _working(start: dict[str, Any], end: dict[str, Any] | None) -> float | None:
    """The working clock between two events (their ``working_start``): the agent's own
    work over exactly E2E's span, without waiting on rate limits and queues. None when
    either lacks it, or the start is no solver event (the set-up's events carry another
    clock)."""
    if end is None or not _begins(start, ("solvers", "solver")):
        return None
    a, b = non_negative(start.get("working_start")), non_negative(end.get("working_start"))
    if a is None or b is None or b < a:
        return None
    return round(b - a, 6)  # to the microsecond


def _timing(sample: dict[str, Any]) -> tuple[dict[str, str | None], float | None]:
    """The run's events: submitted (the solver's start, after set-up), received (the start
    of scoring after the solver finished), runner_finished (the solver's end) and
    model_text_finished (the last solver model event's end); and its working seconds over
    the same span (:func:`_working`)."""
    events = [e for e in sample.get("events") or []
              if isinstance(e, dict) and e.get("timestamp") and _instant(e) is not None]
    if not events:
        return {}, None
    phases = _phases(events)
    out: dict[str, str | None] = {"submitted": phases["start"]["timestamp"]}
    end = phases.get("scoring") or phases.get("solver_end")
    if "scoring" in phases:
        out["received"] = phases["scoring"]["timestamp"]
    if end is not None:
        bound = _instant(end)
        assert bound is not None
        finished = [e["completed"] for e in events if e.get("event") == "model"
                    and e.get("completed") and _instant(e) is not None
                    and cast(datetime, _instant(e)) <= bound]
        if finished:
            out["model_text_finished"] = finished[-1]
        out["runner_finished"] = (phases["solver_end"]["timestamp"]
                                  if "solver_end" in phases else None)
    return out, _working(phases["start"], phases.get("scoring"))


def _tool_calls(sample: dict[str, Any]) -> list[dict[str, Any]]:
    """The sample's tool calls, with their arguments: from its ``tool`` events, else from
    its assistant messages (an id the log does not give is "")."""
    tool_events = [e for e in sample.get("events") or [] if e.get("event") == "tool"]
    if tool_events:
        return [{"id": _call_id(e.get("id")), "name": str(e.get("function") or "?"),
                 "arguments": arguments_text(e.get("arguments")),
                 "started": e.get("timestamp"), "ended": e.get("completed")}
                for e in tool_events]
    return [{"id": _call_id(call.get("id")), "name": str(call.get("function") or "?"),
             "arguments": arguments_text(call.get("arguments"))}
            for message in sample.get("messages") or [] if message.get("role") == "assistant"
            for call in message.get("tool_calls") or []]


def _call_id(value: Any) -> str:
    return "" if value is None else str(value)


def _usage(sample: dict[str, Any]) -> dict[str, Any] | None:
    """The sample's usage as Inspect writes it (docs/methodology.md §4 "Cost"): each model's
    ``model_usage`` entry as given, a null field absent (never 0), with the run's totals their
    sums where every model has the field (:class:`~grade_kit.schema.Usage`); the model named
    when there is one. None when the sample records no usage (an empty ``model_usage``: an
    errored sample). A value that is not a count reaches the run contract, which names it."""
    usage = sample.get("model_usage")
    if not isinstance(usage, dict) or not usage:
        return None
    models = {str(name): ({k: v for k, v in per.items() if v is not None}
                          if isinstance(per, dict) else per)
              for name, per in usage.items()}
    return {"models": models, **({"model": next(iter(models))} if len(models) == 1 else {})}


SCORE_VALUES = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}
"""Inspect's letter scores as numbers (its ``value_to_float``: correct, partial, incorrect,
no answer)."""


def score_number(value: Any) -> float | None:
    """A score value as Inspect counts it in its metrics (``value_to_float``): C 1, P 0.5,
    I and N 0, a boolean 1 or 0, a number as it is; None for a value that has no number (a
    dict, a list, other text), which has no grade either (:func:`_outcome`): a value is in
    the source's metric exactly when it is graded. A number written as text and a
    non-finite number are rejected first (:func:`_score_problem`)."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        return SCORE_VALUES.get(value.strip().upper())
    return None


def _score_problem(value: Any) -> str | None:
    """Why a sample's score value is rejected (the sample's question stays planned, its slot
    not run), or None: a number that is not finite, and a number written as text (``"1"``),
    which the source's metric would count and no grade could map."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"score {value!r} is not a finite number"
    if isinstance(value, str) and value.strip().upper() not in SCORE_VALUES:
        try:
            float(value)
        except ValueError:
            return None
        return (f"score {value!r} is a number written as text: neither graded nor counted "
                "(a score is a number, a boolean or one of the letters C, P, I, N)")
    return None


def _outcome(value: Any) -> str | None:
    if isinstance(value, str):
        return {"C": "resolved", "P": "partial", "I": "unresolved",
                "N": "unresolved"}.get(value.strip().upper())
    if isinstance(value, bool):
        return "resolved" if value else "unresolved"
    if isinstance(value, int | float):
        return "resolved" if value >= 1 else ("partial" if value > 0 else "unresolved")
    return None


def _metric_name(header: dict[str, Any], scorer: str) -> str | None:
    """The source's headline metric of ``scorer`` as the log names it: ``<scorer>
    accuracy`` where the log reports accuracy, else ``<scorer> mean`` (or the first metric
    it reports other than ``stderr``); None where the log reports none (a cancelled log: the
    name another log of the setup gives the scorer is taken, :func:`~grade_kit.adapters.
    common.one_source_metric_per_scorer`)."""
    for entry in (header.get("results") or {}).get("scores") or []:
        if isinstance(entry, dict) and entry.get("name") == scorer:
            names = [str(k) for k in (entry.get("metrics") or {}) if k != "stderr"]
            for preferred in ("accuracy", "mean"):
                if preferred in names:
                    return f"{scorer} {preferred}"
            if names:
                return f"{scorer} {names[0]}"
    return None


OPERATIONAL_CONFIG = frozenset({
    "max_connections", "max_retries", "timeout", "attempt_timeout", "batch", "cache",
    "cache_prompt", "max_samples", "max_tasks", "max_subprocesses", "max_sandboxes",
    "log_samples", "log_images", "log_buffer", "log_shared", "log_realtime", "score_display",
    "fail_on_error", "retry_on_error", "sandbox_cleanup", "limit", "sample_id", "epochs",
    "epochs_reducer", "continue_on_fail", "debug_errors", "token_limit_total"})
"""Settings that say how a log was run, not what it evaluates: they never split a setup
(docs/adapters.md "Setups and questions")."""


UNNAMED_DATASET = "(no dataset name)"
"""The suite of the questions of logs that name no dataset (planned together, docs/
methodology.md §4 "Rates")."""


def _setting(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def log_identity(header: dict[str, Any], path: Path, datasets: Mapping[str, str] | None = None
                 ) -> tuple[str, str | None, dict[str, str]]:
    """(model, dataset, variant) of one Inspect log: the model; the dataset its sample ids
    belong to (``datasets`` looked up by the log's task name, then by its file name; else
    ``eval.dataset.name``; None where the log names none); and what may tell two setups of
    one model apart: the task, its arguments, the solver and its arguments, the plan's
    steps, and the generation settings that change answers (operational ones, such as
    ``max_connections`` or ``limit``, never do)."""
    ev = header.get("eval") or {}
    task = str(ev.get("task") or path.stem)
    dataset = ev.get("dataset")
    named = dataset.get("name") if isinstance(dataset, dict) else None
    given = datasets or {}
    questions = given.get(task) or given.get(path.name) or (str(named) if named else None)
    variant = {"task": task}
    for key in ("task_args", "solver", "solver_args", "model_args"):
        if ev.get(key):
            variant[key] = _setting(ev[key])
    plan = header.get("plan") if isinstance(header.get("plan"), dict) else {}
    steps = plan.get("steps") if plan else None
    if steps:
        variant["plan"] = _setting(steps)
    settings: dict[str, Any] = {}
    for source in (plan.get("config") if plan else None, ev.get("model_generate_config")):
        if isinstance(source, dict):
            settings.update({k: v for k, v in source.items()
                             if k not in OPERATIONAL_CONFIG and v is not None})
    for key, value in sorted(settings.items()):
        variant[key] = _setting(value)
    return str(ev.get("model") or path.stem), questions, variant


def _limit(sample: dict[str, Any]) -> dict[str, Any] | None:
    """The sample's ``limit`` (``{type, limit}``) as a run's ``limit`` (type and value)."""
    limit = sample.get("limit")
    if not limit:
        return None
    if isinstance(limit, dict):
        value = limit.get("limit")
        return {"type": str(limit.get("type") or "unknown"), "value": non_negative(value)}
    return {"type": str(limit), "value": None}


def _stated_epochs(header: dict[str, Any]) -> int | None:
    """R as the log states it: ``eval.config.epochs`` (absent in logs that left the
    default; then R is inferred)."""
    config = (header.get("eval") or {}).get("config") or {}
    epochs = whole_number(config.get("epochs")) if isinstance(config, dict) else None
    return epochs if epochs is not None and epochs >= 1 else None


def import_inspect(path: Path | str, setup: str | None = None, scorer: str | None = None,
                   datasets: Mapping[str, str] | None = None) -> Imported:
    """Convert one Inspect log.

    Its runs' setup is the log's model (or ``setup``); :func:`~grade_kit.adapters.common.
    name_setups` later names setups by what the logs evaluate. A question is the sample's id
    within its dataset (:func:`~grade_kit.adapters.common.question_id`), so two tasks over
    one dataset ask the same questions; a log that names no dataset keys its questions by
    sample id alone, so they are the questions of every such log that has those ids.

    Args:
        path: A ``.eval`` or ``.json`` log.
        setup: Setup name; default the log's ``eval.model``.
        scorer: The score to grade by; default the sample's first score.
        datasets: The dataset a log's samples belong to, by the log's task name or file
            name; default None: ``eval.dataset.name``, else none.
    """
    path = Path(path)
    header, samples, where = _read_log(path)
    ev = header.get("eval") or {}
    model, questions, variant = log_identity(header, path, datasets)
    created = ev.get("created")
    out = Imported(label=path.name, model=model, variant=variant, fixed_setup=bool(setup),
                   questions=questions,
                   created=str(created) if created else None, notes=[
        "Inspect logs: submitted = the solver's start after set-up, received = the start of "
        "scoring after the solver finished (intermediate scores inside the solver are not "
        "the end); working_s = the working clock (working_start) over the same span; the "
        "log's total_time and working_time (both with set-up or scoring) kept",
        "Inspect logs: scores C/1 -> resolved, P -> partially resolved, I/0 -> unresolved "
        "(no material error is claimed); a run stopped by a limit is graded by its score",
    ])
    setup = setup or model
    epochs = _stated_epochs(header)
    if epochs is not None:
        out.stated_repeats[f"{path.name} (Inspect eval.config.epochs)"] = epochs
    status = header.get("status")
    if status in ("cancelled", "error"):
        err = header.get("error") or {}
        message = err.get("message") if isinstance(err, dict) else err
        out.notes.append(f"{path.name}: the log's status is {status!r}"
                         + (f" ({brief(str(message))})" if message else "")
                         + f"; its {len(samples)} samples are imported, and samples it never "
                         "ran are not in it")
    tasks: dict[str, Task] = {}
    inconsistent: list[str] = []
    log_id = ev.get("eval_id") or ev.get("run_id") or path.stem

    def reject(index: int, field: str, why: str, sample: dict[str, Any]) -> None:
        out.rejected.append(Rejected(str(path), None, f"{where[index]}.{field}", why,
                                     json.dumps({"id": sample.get("id"),
                                                 "epoch": sample.get("epoch")},
                                                default=str)))

    first: dict[tuple[str, int], int] = {}  # (sample id, epoch) -> the sample kept

    for index, sample in enumerate(samples):
        task_id = question_id(questions, sample.get("id"))
        if task_id not in tasks:  # the question stays planned whatever its sample holds
            target = sample.get("target")
            reference = target if isinstance(target, str) else json.dumps(target)
            tasks[task_id] = Task(task_id=task_id, prompt=_prompt(sample.get("input")),
                                  reference=reference.strip() or None,
                                  suite=questions or UNNAMED_DATASET,
                                  metadata={"source": "inspect", "task": variant["task"],
                                            "dataset": questions})
        raw_epoch = sample.get("epoch", 1)
        epoch = whole_number(raw_epoch)
        if epoch is None or epoch < 1:
            reject(index, "epoch", f"epoch {raw_epoch!r} is not a whole number >= 1", sample)
            continue
        key = (json.dumps(sample.get("id"), default=str), epoch)
        if key in first:  # one attempt per (sample, epoch): never merged, never replaced
            reject(index, "id", f"sample {sample.get('id')!r} epoch {epoch} again (first at "
                   f"{where[first[key]]}, which is kept)", sample)
            continue
        first[key] = index
        scores = sample.get("scores") or {}
        name = scorer if scorer in scores else next(iter(scores), None)
        value = (scores[name].get("value") if name is not None
                 and isinstance(scores[name], dict) else None)
        problem = _score_problem(value)
        if problem is not None:
            reject(index, f"scores.{name}.value", problem, sample)
            continue
        run_id = f"{log_id}/{task_id}/epoch-{epoch}"
        error = sample.get("error")
        limit = _limit(sample)
        status = "failed" if error else ("limit" if limit else "delivered")
        try:
            events, working = _timing(sample)
        except TypeError:  # Python cannot order a naive time against an aware one
            reject(index, "events", "its event times mix naive and time-zone-aware "
                   "timestamps: they cannot be ordered", sample)
            continue
        if status != "delivered":
            events["stopped"] = events.pop("received", None) or events.get("runner_finished")
        choices = (sample.get("output") or {}).get("choices") or []
        answer = _text(choices[0].get("message", {}).get("content")) if choices else ""
        total = non_negative(sample.get("total_time"))
        scored = None if status == "failed" or name is None else score_number(value)
        metric = None if scored is None else _metric_name(header, str(name))
        try:
            run = Run.model_validate({
                "run_id": run_id, "setup": setup, "task_id": task_id, "repeat": epoch,
                "status": status,
                "error": None if not error else str(error.get("message", error)
                                                    if isinstance(error, dict) else error),
                "limit": limit if status == "limit" else None,
                "events": events,
                "response": {"text": answer} if status != "failed" else None,
                "tool_calls": _tool_calls(sample),
                "usage": _usage(sample),
                "working_s": working,
                "source": {"metric": (metric or f"{name} mean") if scored is not None
                           else None, "score": scored, "total_s": total},
                "metadata": {"source": "inspect", "log": path.name,
                             "scorer": None if scored is None else str(name),
                             "metric_named_by_log": metric is not None,
                             "sample_uuid": (str(sample["uuid"]) if sample.get("uuid") is not None
                                             else None),
                             "clock": {"source": "the Inspect runner's event timestamps",
                                       "precision": "as logged"},
                             "total_time": total,
                             # model_usage again, by role (the grader's, ...): kept as
                             # written, never added to the usage it restates
                             "role_usage": sample.get("role_usage") or None,
                             "working_time": non_negative(sample.get("working_time"))},
            })
        except ValidationError as exc:  # one line naming the sample and the field
            field, why = describe_validation_error(exc)
            reject(index, field or "sample", why, sample)
            continue
        out.runs.append(run)
        if status == "delivered" and total is not None and "received" in events:
            e2e = (datetime.fromisoformat(str(events["received"]))
                   - datetime.fromisoformat(str(events["submitted"]))).total_seconds()
            if e2e > total + SOURCE_TOTAL_SLACK_S:
                inconsistent.append(f"{task_id} epoch {epoch} (E2E {e2e:.3f} s > total_time "
                                    f"{total:.3f} s)")
        last_model = events.get("model_text_finished")
        if (status == "delivered" and last_model and events.get("received")
                and datetime.fromisoformat(last_model)
                > datetime.fromisoformat(str(events["received"]))):
            inconsistent.append(f"{task_id} epoch {epoch} (received before the solver's last "
                                "model call ended)")
        if status != "failed" and name is not None:
            outcome = _outcome(value)
            if outcome is not None:
                grader = f"model:{name}" if "model_graded" in name else f"inspect:{name}"
                out.grades.append(grade_for_outcome(run_id, outcome, grader,
                                                    f"{name} = {value!r}"))
            else:
                out.notes.append(f"{path.name}: sample {task_id} epoch {epoch}: score "
                                 f"{value!r} has no grade mapping; left ungraded")
    if inconsistent:
        out.notes.append(f"{path.name}: {len(inconsistent)} run(s) whose events disagree with "
                         "the log's own figures (E2E above total_time, which includes set-up "
                         f"and scoring, by more than {SOURCE_TOTAL_SLACK_S} s: left out of E2E, "
                         "counted under e2e_beyond_source_total; or received before the "
                         "solver's last model call ended): "
                         + "; ".join(inconsistent[:10])
                         + (" ..." if len(inconsistent) > 10 else ""))
    out.tasks = list(tasks.values())
    return out


def _is_inspect_log(head: FileHead) -> bool:
    """An ``.eval`` zip (it holds ``header.json`` or ``_journal/start.json``), or a ``.json``
    log: one document whose head has ``"eval"`` and ``"version"`` keys (on one line: an
    object with an ``eval`` object and a ``version``)."""
    if head.zip_names is not None:
        return bool(head.zip_names & {"header.json", "_journal/start.json"})
    if head.record is not None:
        return (head.alone and isinstance(head.record.get("eval"), dict)
                and "version" in head.record)
    return (head.document and head.text.startswith("{") and '"eval"' in head.text
            and '"version"' in head.text)


register_adapter(Adapter(
    name="inspect", describes="an Inspect AI log", suffixes=(".eval", ".json"),
    recognises=_is_inspect_log,
    read=lambda path, setup, options: import_inspect(path, setup, options.get("scorer"),
                                                     options.get("datasets"))))
