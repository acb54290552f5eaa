"""Tidy frames: the nested JSON flattened once, at load (docs/methodology.md).

This module is the one place where every frame's columns are written down (:data:`COLUMNS`).
Every scorer is then a join, a filter and a group-by over these frames. Each distinct text is
normalised once (``norm`` = its tokens joined by single spaces, :func:`grade_kit.text.normalize`).

Public functions accept a pandas or a polars DataFrame and return the same kind
(:func:`to_polars` / :func:`like`), converting once at the boundary.
"""

from __future__ import annotations

import html
import json
import sys
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime, timedelta
from types import UnionType
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Literal,
    TypeVar,
    Union,
    cast,
    get_args,
    get_origin,
    get_type_hints,
)

import polars as pl
from pydantic import BaseModel

from grade_kit._gc import gc_paused
from grade_kit.schema import (
    DIMENSIONS,
    USAGE_COUNTS,
    Claim,
    GoldFact,
    Grade,
    Judgement,
    ModelUsage,
    Run,
    RunLimit,
    SourceRecord,
    Task,
    ToolCall,
    Usage,
)
from grade_kit.text import normalize, normalize_column, normalize_value, parse_number

if TYPE_CHECKING:  # pandas is imported by whoever passes a pandas frame; never here
    import pandas as pd

Frame = TypeVar("Frame", pl.DataFrame, "pd.DataFrame")

_TS = pl.Datetime("us", "UTC")

_SCALARS: dict[Any, type[pl.DataType]] = {str: pl.String, int: pl.Int64, float: pl.Float64,
                                          bool: pl.Boolean}


def raw_records(records: Sequence[Any]) -> Sequence[Any]:
    """The values behind ``records`` with the models' field names, for code that only reads
    fields: the ``raw`` values of a :class:`LazyRecords` (or of a packed store's runs), else
    ``records`` itself."""
    raw = getattr(records, "raw", None)
    return raw if raw is not None else records

def model_columns(model: type[BaseModel], *names: str,
                  prefix: str = "") -> dict[str, pl.DataType | type[pl.DataType]]:
    """The polars dtype of each named scalar field of ``model`` (all of them when no name is
    given), derived from its annotation: a string, a literal of strings, an integer, a
    float or a boolean, optionally null. The frames' columns that restate a model's fields
    are stated this way, so the model is their one contract; ``prefix`` names the column.

    Raises:
        TypeError: for a field of any other type (a list, a mapping, a model).
    """
    out: dict[str, pl.DataType | type[pl.DataType]] = {}
    for name in names or tuple(model.model_fields):
        annotation = model.model_fields[name].annotation
        arms = [a for a in get_args(annotation) if a is not type(None)] if get_origin(
            annotation) in (Union, UnionType) else [annotation]
        base = arms[0] if len(arms) == 1 else None
        if get_origin(base) is Annotated:  # a checked scalar (a name in NFC): its type
            base = get_args(base)[0]
        if get_origin(base) is Literal and all(isinstance(v, str) for v in get_args(base)):
            base = str
        if base not in _SCALARS:
            raise TypeError(f"{model.__name__}.{name} ({annotation!r}) is not a scalar column")
        out[prefix + name] = _SCALARS[base]
    return out


_RUN_KEYS = model_columns(Run, "run_id", "setup", "task_id", "repeat", "attempt_of", "status",
                          "error")

COLUMNS: dict[str, dict[str, pl.DataType | type[pl.DataType]]] = {
    # one row per task
    "tasks": {**model_columns(Task, "task_id", "track", "pack", "suite"), "kind": pl.String,
              **model_columns(Task, "prompt"), "n_facts": pl.Int64, "n_insights": pl.Int64,
              "n_limitations": pl.Int64, "n_forbidden": pl.Int64, "n_calibration": pl.Int64},
    # one row per (GRADE task, dimension): the task's rubric weights, absent keys weigh 0
    "weights": {"task_id": pl.String, "dimension": pl.String, "weight": pl.Float64},
    # one row per gold fact; gold_num for numeric facts, gold_str/gold_key for string facts
    "facts": {"task_id": pl.String, "fact_id": pl.String,
              **model_columns(GoldFact, "metric"), "gold_num": pl.Float64,
              "gold_str": pl.String, "gold_key": pl.String,
              **model_columns(GoldFact, "abs_tol", "rel_tol")},
    # one row per claim; role is insight, limitation or forbidden
    "claims": {"task_id": pl.String, "claim_id": pl.String, "role": pl.String,
               "calibration": pl.Boolean, **model_columns(Claim, "text"), "norm": pl.String},
    # one row per synonym of a claim's pattern term (a claim without patterns: one row, its norm)
    "claim_terms": {"task_id": pl.String, "claim_id": pl.String, "alternative": pl.Int64,
                    "term": pl.Int64, "synonym": pl.String},
    # one row per attempt
    "runs": {**_RUN_KEYS, "is_primary": pl.Boolean, "has_response": pl.Boolean,
             "tools_exposed": pl.Boolean, "clock": pl.String,
             "endpoint_offset_s": pl.Float64, **model_columns(Usage, *USAGE_COUNTS),
             **model_columns(Usage, "model", "total_cost", "user_cost", prefix="usage_"),
             "follow_up": pl.String, "resumed": pl.Boolean,
             **model_columns(RunLimit, prefix="limit_"), **model_columns(Run, "working_s"),
             **model_columns(SourceRecord, prefix="source_"), "line": pl.Int64},
    # one row per answer item; field is finding, limitation, recommendation or text
    "items": {"run_id": pl.String, "field": pl.String, "position": pl.Int64,
              "text": pl.String, "norm": pl.String},
    # one row per reported structured metric; raw is the value as JSON
    "metrics": {"run_id": pl.String, "key": pl.String, "raw": pl.String, "num": pl.Float64,
                "str": pl.String, "str_key": pl.String},
    # one row per event timestamp: at is its instant in UTC (the run record keeps it as given)
    "events": {"run_id": pl.String, "event": pl.String, "at": _TS},
    # one row per tool call record (a call may be recorded twice: counting decides per call)
    "tool_calls": {"run_id": pl.String, "call_id": pl.String,
                   **model_columns(ToolCall, "name", "arguments"), "started": _TS, "ended": _TS},
    # one row per (run, model) of a run with usage: each model's own (Inspect's model_usage),
    # else the run's totals with the model they are of (null where the run names none)
    "usage": {"run_id": pl.String, "model": pl.String,
              **model_columns(ModelUsage, *USAGE_COUNTS)},
    # one row per recorded judgement
    "judgements": {**model_columns(Judgement, "run_id", "dimension", "score", "judge",
                                   "reason"), "method": pl.String},
    # one row per grade: every field of the record but its provenance
    "grades": model_columns(Grade, *(n for n in Grade.model_fields if n != "provenance")),
    # one row per (run, dimension) score; method says what decided it
    "scores": {"run_id": pl.String, "dimension": pl.String, "score": pl.Float64,
               "method": pl.String},
}
"""The column contract of every frame, by frame name."""


FOLLOW_UP_KINDS = ("protocol", "ad_hoc")


def interaction_labels(interaction: object) -> tuple[str | None, bool]:
    """A run's interaction labels from ``metadata.interaction`` (docs/methodology.md §4
    "Fetching"): the follow-up kind (``protocol``: the task's one follow-up message;
    ``ad_hoc``: any other follow-up) or None, and whether the run was resumed."""
    if not isinstance(interaction, dict):
        return None, False
    kind = interaction.get("follow_up")
    return (kind if kind in FOLLOW_UP_KINDS else None), interaction.get("resumed") is True


def frame_fields(holder: type) -> list[str]:
    """The fields of the dataclass ``holder`` that hold a polars DataFrame, in their order:
    what a bundle of frames (such as the GRADE scores) writes and reads back, stated once,
    by its own annotations."""
    hints = get_type_hints(holder)
    return [f.name for f in fields(holder) if hints[f.name] is pl.DataFrame]


def _frame(name: str, rows: dict[str, list[Any]]) -> pl.DataFrame:
    """The frame ``name`` from column lists; timestamp columns may hold epoch microseconds
    (:func:`instant_us`), which is how polars stores them."""
    schema = COLUMNS[name]
    if not any(dtype == _TS for dtype in schema.values()):
        return pl.DataFrame(rows, schema=schema)
    staged = {k: (pl.Int64 if v == _TS else v) for k, v in schema.items()}
    return pl.DataFrame(rows, schema=staged).cast({k: _TS for k, v in schema.items()
                                                   if v == _TS})


def _is_pandas(frame: object) -> bool:
    """Whether ``frame`` is a pandas DataFrame (without importing pandas: a caller holding
    one has imported it already)."""
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(frame, pandas.DataFrame)


def to_polars(frame: pl.DataFrame | pd.DataFrame) -> pl.DataFrame:
    """A polars view of ``frame`` (pandas is converted once)."""
    if isinstance(frame, pl.DataFrame):
        return frame
    if _is_pandas(frame):
        return pl.from_pandas(frame)
    raise TypeError(f"expected a pandas or polars DataFrame, got {type(frame).__name__}")


def like(result: pl.DataFrame, template: Frame) -> Frame:
    """``result`` as the same kind of frame as ``template`` (pandas in, pandas out)."""
    out: Any = result.to_pandas() if _is_pandas(template) else result
    return cast(Frame, out)


def in_run_order(per_run: pl.DataFrame) -> pl.DataFrame:
    """Per-run rows by setup, task and repeat, each slot's primary run first, then its
    re-runs by run_id: a total order, so the rows come out the same however they were
    computed or split."""
    return per_run.sort("setup", "task_id", "repeat", "is_primary", "run_id",
                        descending=[False, False, False, True, False])


# --------------------------------------------------------------------------- tasks


def task_frames(tasks: Sequence[Task]) -> dict[str, pl.DataFrame]:
    """Flatten tasks into the ``tasks``, ``weights``, ``facts``, ``claims`` and ``claim_terms``
    frames (see :data:`COLUMNS`)."""
    t: dict[str, list[Any]] = {k: [] for k in COLUMNS["tasks"]}
    w: dict[str, list[Any]] = {k: [] for k in COLUMNS["weights"]}
    f: dict[str, list[Any]] = {k: [] for k in COLUMNS["facts"]}
    c: dict[str, list[Any]] = {k: [] for k in COLUMNS["claims"]}
    ct: dict[str, list[Any]] = {k: [] for k in COLUMNS["claim_terms"]}
    for task in tasks:
        for name in ("task_id", "track", "pack", "suite", "kind", "prompt"):
            t[name].append(getattr(task, name))
        t["n_facts"].append(len(task.gold_facts))
        t["n_insights"].append(len(task.gold_insights))
        t["n_limitations"].append(len(task.required_limitations))
        t["n_forbidden"].append(len(task.forbidden_claims))
        t["n_calibration"].append(sum(1 for c_ in task.gold_insights if c_.calibration))
        if task.weights is not None:
            for dim in DIMENSIONS:
                w["task_id"].append(task.task_id)
                w["dimension"].append(dim)
                w["weight"].append(float(task.weights.get(dim, 0.0)))
        for fact in task.gold_facts:
            is_str = isinstance(fact.value, str)
            f["task_id"].append(task.task_id)
            f["fact_id"].append(fact.id)
            f["metric"].append(fact.metric)
            f["gold_num"].append(None if is_str else float(fact.value))  # type: ignore[arg-type]
            f["gold_str"].append(fact.value if is_str else None)
            f["gold_key"].append(normalize_value(fact.value) if isinstance(fact.value, str)
                                 else None)
            f["abs_tol"].append(fact.abs_tol)
            f["rel_tol"].append(fact.rel_tol)
        roles = (("insight", task.gold_insights), ("limitation", task.required_limitations),
                 ("forbidden", task.forbidden_claims))
        for role, claims in roles:
            for claim in claims:
                c["task_id"].append(task.task_id)
                c["claim_id"].append(claim.id)
                c["role"].append(role)
                c["calibration"].append(claim.calibration)
                c["text"].append(claim.text)
                c["norm"].append(normalize(claim.text))
                alternatives = claim.patterns or [[claim.text]]
                for a, alternative in enumerate(alternatives):
                    for term_index, term in enumerate(alternative):
                        synonyms = term.split("|") if claim.patterns else [term]
                        for synonym in synonyms:
                            ct["task_id"].append(task.task_id)
                            ct["claim_id"].append(claim.id)
                            ct["alternative"].append(a)
                            ct["term"].append(term_index)
                            ct["synonym"].append(normalize(synonym))
    return {
        "tasks": _frame("tasks", t),
        "weights": _frame("weights", w),
        "facts": _frame("facts", f),
        "claims": _frame("claims", c),
        "claim_terms": _frame("claim_terms", ct),
    }


# --------------------------------------------------------------------------- runs

_FIELDS = (("finding", "key_findings"), ("limitation", "limitations"),
           ("recommendation", "recommendations"))


RUN_FIELDS: dict[str, str] = {
    "run_id": "run_id", "setup": "setup", "task_id": "task_id", "repeat": "repeat",
    "attempt_of": "attempt_of", "status": "status", "error": "error",
    **{name: f"usage.{name}" for name in USAGE_COUNTS},
    "usage_model": "usage.model", "usage_total_cost": "usage.total_cost",
    "usage_user_cost": "usage.user_cost",
    "limit_type": "limit.type", "limit_value": "limit.value", "working_s": "working_s",
    "source_metric": "source.metric", "source_score": "source.score",
    "source_total_s": "source.total_s",
}
"""The ``runs`` frame's columns that restate a field of the run record, by its path (a
missing parent gives null); their dtypes are the fields' (:func:`model_columns`, tied by a
test). The other columns of ``runs`` are computed (:func:`run_frames`)."""


def _path_values(records: Sequence[Any], path: str) -> list[Any]:
    """The value at ``path`` (``field`` or ``field.subfield``) of every record, None where
    the parent is absent."""
    first, _, rest = path.partition(".")
    if not rest:
        return [getattr(record, first) for record in records]
    return [None if (parent := getattr(record, first)) is None else getattr(parent, rest)
            for record in records]


RUN_FRAMES = ("runs", "items", "metrics", "events", "tool_calls", "usage")
"""The frames flattened from run records (see :data:`COLUMNS`)."""

def run_frames(runs: Sequence[Run],
               lines: Sequence[int | None] | None = None) -> dict[str, pl.DataFrame]:
    """Flatten run records into ``runs``, ``items``, ``metrics``, ``events`` and
    ``tool_calls`` frames (see :data:`COLUMNS`). Each distinct text is normalised once.

    Only a delivered run's response is flattened (``has_response``): a response carried by a
    timed-out or failed run is kept in its record but never scored.

    Args:
        runs: The run records, in order.
        lines: Each record's line in its file (the ``runs`` frame's ``line``); None: null.
    """
    runs = raw_records(runs)  # field reads only: no model is built for a loaded run
    # The columns that restate a field, one column at a time (RUN_FIELDS); those computed
    # from the metadata and the answer, and the other frames, in one pass over the runs.
    r: dict[str, list[Any]] = {k: [] for k in _RUN_COMPUTED}
    it: dict[str, list[Any]] = {k: [] for k in COLUMNS["items"] if k != "norm"}
    m: dict[str, list[Any]] = {k: [] for k in COLUMNS["metrics"]}
    ev: dict[str, list[Any]] = {k: [] for k in COLUMNS["events"]}
    tc: dict[str, list[Any]] = {k: [] for k in COLUMNS["tool_calls"]}
    us: dict[str, list[Any]] = {k: [] for k in COLUMNS["usage"]}
    with gc_paused(), ThreadPoolExecutor(max_workers=1) as pool:
        _flatten_runs(runs, r, it, m, ev, tc)
        _flatten_usage(runs, us)
        items = pl.DataFrame(it, schema={k: v for k, v in COLUMNS["items"].items()
                                         if k != "norm"})
        # The texts are normalised by polars on a second thread while the other columns,
        # in Python, are made here.
        norm = pool.submit(normalize_column, items.get_column("text"))
        r.update({column: _path_values(runs, path) for column, path in RUN_FIELDS.items()})
        r["is_primary"] = [attempt is None for attempt in r["attempt_of"]]
        r["tools_exposed"] = [run.tool_calls is not None for run in runs]
        r["line"] = list(lines) if lines is not None else [None] * len(runs)
        frames = {"runs": _frame("runs", r), "metrics": _frame("metrics", m),
                  "events": _frame("events", ev), "tool_calls": _frame("tool_calls", tc),
                  "usage": _frame("usage", us)}
        items = items.with_columns(norm.result()).select(list(COLUMNS["items"]))
    return {name: items if name == "items" else frames[name] for name in RUN_FRAMES}


def _flatten_usage(runs: Sequence[Any], us: dict[str, list[Any]]) -> None:
    """Append the ``usage`` rows of every run with usage: one per model of ``usage.models``,
    else one of the run's totals with ``usage.model`` (docs/methodology.md §4 "Cost")."""
    for run in runs:
        usage = run.usage
        if usage is None:
            continue
        parts = list(usage.models.items()) if usage.models else [(usage.model, usage)]
        for model, part in parts:
            us["run_id"].append(run.run_id)
            us["model"].append(model)
            for name in USAGE_COUNTS:
                us[name].append(getattr(part, name))


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def instant_us(raw: str) -> int:
    """A validated timestamp (:data:`grade_kit.schema.Timestamp`) as microseconds since the
    Unix epoch in UTC: the value polars stores for it as ``Datetime("us", "UTC")``."""
    return (datetime.fromisoformat(raw) - _EPOCH) // _MICROSECOND


def _metric_columns(value: Any) -> tuple[str, float | None, str | None, str | None]:
    """(raw JSON, number, string, string key) of a reported metric value."""
    is_str = isinstance(value, str)
    return (json.dumps(value, ensure_ascii=False), parse_number(value), value if is_str else None,
            normalize_value(value) if is_str else None)


_RUN_COMPUTED = ("has_response", "clock", "endpoint_offset_s", "follow_up", "resumed")
"""The ``runs`` columns :func:`_flatten_runs` computes from the answer and the metadata."""


def _flatten_runs(runs: Sequence[Any], r: dict[str, list[Any]], it: dict[str, list[Any]],
                  m: dict[str, list[Any]], ev: dict[str, list[Any]],
                  tc: dict[str, list[Any]]) -> None:
    """Append every run's computed ``runs`` columns (:data:`_RUN_COMPUTED`) and its rows of
    the other frames to the column lists (timestamps as epoch microseconds)."""
    # Metric values repeat (every run that reports the right figure reports the same one):
    # each distinct string, integer and float is parsed once, in a table of its own type
    # (1 == 1.0 == True as keys). A float zero is never looked up: 0.0 == -0.0, and their
    # raw texts differ.
    seen: dict[type, dict[Any, tuple[str, float | None, str | None, str | None]]] = {
        str: {}, int: {}, float: {}}
    for run in runs:
        rid = run.run_id
        answered = run.status == "delivered" and run.response is not None
        r["has_response"].append(answered)
        metadata = run.metadata
        clock = metadata.get("clock") if metadata else None
        if isinstance(clock, dict):
            source = clock.get("source")
            offset = clock.get("endpoint_offset_s")
            r["clock"].append(str(source) if source else None)
            # a JSON number only (no bool, no string); None when it has no finite float
            r["endpoint_offset_s"].append(
                parse_number(offset) if isinstance(offset, int | float) else None)
        else:
            r["clock"].append(None)
            r["endpoint_offset_s"].append(None)
        follow_up, resumed = (interaction_labels(metadata.get("interaction")) if metadata
                              else (None, False))
        r["follow_up"].append(follow_up)
        r["resumed"].append(resumed)
        if answered:
            resp = run.response
            for field_name, attr in _FIELDS:
                texts = getattr(resp, attr)
                if texts:
                    n = len(texts)
                    it["run_id"].extend([rid] * n)
                    it["field"].extend([field_name] * n)
                    it["position"].extend(range(n))
                    it["text"].extend(texts)
            it["run_id"].append(rid)
            it["field"].append("text")
            it["position"].append(0)
            it["text"].append(resp.text)
            for key, value in resp.structured_metrics.items():
                table = seen.get(type(value))
                if table is not None and (value or type(value) is not float):
                    columns = table.get(value)
                    if columns is None:
                        columns = table[value] = _metric_columns(value)
                else:
                    columns = _metric_columns(value)
                m["run_id"].append(rid)
                m["key"].append(key)
                m["raw"].append(columns[0])
                m["num"].append(columns[1])
                m["str"].append(columns[2])
                m["str_key"].append(columns[3])
        for event, raw in run.events.items():
            if raw is None:
                continue
            ev["run_id"].append(rid)
            ev["event"].append(event)
            ev["at"].append(instant_us(raw))
        for call in run.tool_calls or ():
            tc["run_id"].append(rid)
            tc["call_id"].append(call.id)
            tc["name"].append(call.name)
            tc["arguments"].append(call.arguments)
            tc["started"].append(None if call.started is None else instant_us(call.started))
            tc["ended"].append(None if call.ended is None else instant_us(call.ended))


def verdict_frames(
    judgements: Sequence[Judgement] = (), grades: Sequence[Grade] = ()
) -> dict[str, pl.DataFrame]:
    """The ``judgements`` and ``grades`` frames (see :data:`COLUMNS`)."""
    judgements = raw_records(judgements)
    grades = raw_records(grades)
    j = _frame("judgements", {
        **{k: [getattr(x, k) for x in judgements] for k in COLUMNS["judgements"] if k != "method"},
        "method": [f"judge:{x.judge}" for x in judgements]})
    g = _frame("grades", {k: [getattr(x, k) for x in grades] for k in COLUMNS["grades"]})
    return {"judgements": j, "grades": g}


def frames_repr(name: str, frames: dict[str, pl.DataFrame]) -> str:
    """``Name(frame: rows x cols, ...)``: a short repr for a bundle of frames."""
    parts = ", ".join(f"{k}: {v.height}x{v.width}" for k, v in frames.items()
                      if isinstance(v, pl.DataFrame))
    return f"{name}({parts})"


def frames_repr_html(name: str, frames: dict[str, pl.DataFrame]) -> str:
    """An HTML table of a bundle of frames: each frame's name, rows and columns."""
    rows = "".join(f"<tr><td>{html.escape(k)}</td><td>{v.height:,}</td><td>"
                   f"{html.escape(', '.join(v.columns))}</td></tr>"
                   for k, v in frames.items() if isinstance(v, pl.DataFrame))
    return (f"<p><b>{html.escape(name)}</b></p><table><thead><tr><th>frame</th><th>rows</th>"
            f"<th>columns</th></tr></thead><tbody>{rows}</tbody></table>")


@dataclass(repr=False)
class EvalData:
    """All frames of one evaluation: tasks, runs and verdicts, flattened (see :data:`COLUMNS`).

    Build it with the loaders (:mod:`grade_kit.reading.records`) and :meth:`from_records`, or
    directly from frames; every scorer reads only the frames it needs.
    """

    tasks: pl.DataFrame
    weights: pl.DataFrame
    facts: pl.DataFrame
    claims: pl.DataFrame
    claim_terms: pl.DataFrame
    runs: pl.DataFrame
    items: pl.DataFrame
    metrics: pl.DataFrame
    events: pl.DataFrame
    tool_calls: pl.DataFrame
    usage: pl.DataFrame
    judgements: pl.DataFrame
    grades: pl.DataFrame
    extra: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return frames_repr("EvalData", vars(self))

    def _repr_html_(self) -> str:
        return frames_repr_html("EvalData", vars(self))

    @classmethod
    def from_frames(cls, frames: Mapping[str, pl.DataFrame],
                    extra: dict[str, Any] | None = None) -> EvalData:
        """From one frame per frame field (:func:`frame_fields`: each a name of
        :data:`COLUMNS`), each as given."""
        names = frame_fields(cls)
        missing = sorted(set(names) - set(frames))
        if missing:
            raise ValueError(f"frames missing: {missing}")
        return cls(**{name: frames[name] for name in names}, extra=dict(extra or {}))

    @classmethod
    def from_records(
        cls,
        tasks: Sequence[Task],
        runs: Sequence[Run],
        judgements: Sequence[Judgement] = (),
        grades: Sequence[Grade] = (),
        run_lines: Sequence[int | None] | None = None,
    ) -> EvalData:
        """Flatten validated records into frames."""
        frames = {**task_frames(tasks), **run_frames(runs, run_lines),
                  **verdict_frames(judgements, grades)}
        return cls(**frames)  # type: ignore[arg-type]
