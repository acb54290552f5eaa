"""Pydantic models for every input and output contract (docs/methodology.md §2 and §5).

The JSON Schemas shipped in ``grade_kit/schemas/`` are generated from these models by
:func:`write_json_schemas`; a test fails when a checked-in schema drifts from its model.
"""

from __future__ import annotations

import json
import math
import unicodedata
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from grade_kit.text import tokenize

Dimension = Literal[
    "grounding_accuracy",
    "insight_quality",
    "evidence_linkage",
    "calibration_limitation_handling",
    "consistency",
    "structure_usability",
]
"""A GRADE dimension key, exactly as GRADE names it (docs/methodology.md §1). This Literal is
the one definition every list of dimensions is derived from."""

DIMENSIONS: tuple[Dimension, ...] = get_args(Dimension)
"""The six GRADE dimension keys, in the order of docs/methodology.md §1."""

JudgedDimension = Literal["evidence_linkage", "structure_usability"]
"""The dimensions a judge scores per run (judgement records name one of these)."""

JUDGED_DIMENSIONS: tuple[JudgedDimension, ...] = get_args(JudgedDimension)
"""The judged dimensions, in :data:`DIMENSIONS` order."""

PER_RUN_DIMENSIONS: tuple[Dimension, ...] = tuple(d for d in DIMENSIONS if d != "consistency")
"""The five dimensions scored per run; consistency is scored per (setup, task)."""

PROJECT_WEIGHTS: dict[Dimension, float] = dict(
    zip(DIMENSIONS, (0.35, 0.20, 0.15, 0.15, 0.10, 0.05), strict=True))
"""Project weights of the composite (docs/methodology.md §1)."""

SHORT_LABELS: dict[Dimension, str] = dict(
    zip(DIMENSIONS, ("ground", "insight", "evidence", "calib", "consist", "struct"), strict=True))
"""Short column labels for tables (the keys are the contract; these are only for display)."""

PACK_NAME = r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$"
"""A pack is a plain name, never a path (no ``/``, no leading ``.``)."""

MAX_REPEAT = 1_000_000
"""The highest repeat a run may carry (and R may be): a contract bound, so no count can
overflow and no work depends on how large a repeat is written."""

MAX_TOKENS = 10**15
"""The most tokens a run's usage may report: a contract bound that keeps every count a
64-bit integer (a larger figure is a reject naming the field, not a crash later)."""

WEIGHT_TOLERANCE = 1e-6
"""A task's weights must sum to 1 within this (docs/methodology.md §2)."""


def parse_timestamp(value: str) -> datetime:
    """Parse an ISO 8601 timestamp that must carry a time zone and be representable in UTC.

    Raises:
        ValueError: when the string is not ISO 8601, has no offset (a naive timestamp), or
            falls outside years 1-9999 once converted to UTC.
    """
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise ValueError(f"not an ISO 8601 timestamp: {value[:64]!r}") from exc
    if parsed.tzinfo is None:  # else a fixed offset: fromisoformat makes no other time zone
        raise ValueError(f"naive timestamp (no time zone): {value[:64]!r}")
    if 1 < parsed.year < 9999:  # an offset is under a day: in UTC it is within years 1-9999
        return parsed
    try:
        parsed.astimezone(UTC)
    except OverflowError as exc:
        raise ValueError(f"timestamp out of range in UTC: {value[:64]!r}") from exc
    return parsed


def _aware(value: str) -> str:
    parse_timestamp(value)
    return value


Timestamp = Annotated[str, AfterValidator(_aware)]
"""An ISO 8601 timestamp string with a time zone, kept as given (offset preserved)."""


def _nfc(value: str) -> str:
    return value if value.isascii() else unicodedata.normalize("NFC", value)


Name = Annotated[str, AfterValidator(_nfc)]
"""A name or identifier (setup, task id, run id) in Unicode NFC (docs/methodology.md §2): two
spellings of one name (``modèle`` composed or decomposed) are one name."""


def _has_token(text: str, what: str) -> str:
    if not tokenize(text):
        raise ValueError(f"{what} {text!r} has no token (letters or digits)")
    return text


# --------------------------------------------------------------------------- tasks


class InputError(Exception):
    """An input that cannot be read at all (a missing file or folder, a store or state that
    is not one): part of the contract every layer raises and the CLI reports as one
    ``error:`` line."""


class _In(BaseModel):
    """An input contract: strict, so nothing is coerced at the boundary (docs/methodology.md
    §2): a string or a boolean is never taken as a number, a number never as a string."""

    model_config = ConfigDict(strict=True)


class Claim(_In):
    """A gold insight, required limitation or forbidden claim (docs/methodology.md §2).

    ``patterns`` is a list of alternatives; each alternative is a list of terms; a term is a
    string whose ``|`` separates synonyms. Without patterns the claim's own tokens must appear
    as a contiguous run.
    """

    id: str = Field(min_length=1)
    text: str
    patterns: list[list[str]] | None = None
    calibration: bool = False

    @field_validator("text")
    @classmethod
    def _text_has_token(cls, value: str) -> str:
        return _has_token(value, "claim text")

    @field_validator("patterns")
    @classmethod
    def _patterns_have_tokens(cls, value: list[list[str]] | None) -> list[list[str]] | None:
        if value is None:
            return None
        if not value:
            raise ValueError("patterns is empty: give at least one alternative or omit it")
        for alternative in value:
            if not alternative:
                raise ValueError("a pattern alternative has no term")
            for term in alternative:
                for synonym in term.split("|"):
                    _has_token(synonym, "synonym")
        return value


class GoldFact(_In):
    """A gold fact: ``value`` directly, or ``ground_truth`` as a dotted key into the pack."""

    id: str = Field(min_length=1)
    metric: str = Field(min_length=1)
    value: float | int | str | None = None
    ground_truth: str | None = None
    abs_tol: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    rel_tol: float | None = Field(default=None, ge=0, allow_inf_nan=False)

    @field_validator("value", mode="before")
    @classmethod
    def _value_not_bool(cls, value: object) -> object:
        if isinstance(value, bool):
            raise ValueError("a gold value must be a number or a string, not a boolean")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError("a gold value must be finite")
        return value

    @model_validator(mode="after")
    def _one_source(self) -> GoldFact:
        if (self.value is None) == (self.ground_truth is None):
            raise ValueError("give exactly one of 'value' and 'ground_truth'")
        return self


class Task(_In):
    """One task file (docs/methodology.md §2).

    A GRADE task has ``weights`` (and usually gold facts and claims); a *plain* question has
    none of weights, gold_facts, gold_insights, required_limitations and forbidden_claims,
    counts in the standard's statistics and is left out of GRADE scores. Unknown top-level
    fields are kept (``model_extra``) and reported as warnings by the loader, so a typo such
    as ``gold_fact`` is seen without rejecting other tools' task files.
    """

    model_config = ConfigDict(extra="allow", strict=True)

    task_id: Name = Field(min_length=1)
    track: int | None = Field(default=None, ge=1, le=5)
    pack: str | None = Field(default=None, pattern=PACK_NAME)
    """A plain name (letters, digits, ``.``, ``_``, ``-``; not starting with ``.``), never a
    path: it names a folder under the packs folder."""
    suite: str | None = None
    """The task set this question belongs to (an imported log's eval task or domain). A
    setup's plan covers every task without a suite and every suite the setup ran
    (docs/methodology.md §4 "Rates"); native task files leave it unset."""
    prompt: str
    reference: str | int | float | None = Field(
        default=None, validation_alias=AliasChoices("reference", "reference_answer")
    )
    follow_up: str | None = Field(default=None, min_length=1)
    """The task's one follow-up protocol: the message sent, identically to every setup, when
    an answer only asks the user for more information (docs/methodology.md §4 "Fetching")."""
    weights: dict[Dimension, float] | None = None
    gold_facts: list[GoldFact] = Field(default_factory=list)
    gold_insights: list[Claim] = Field(default_factory=list)
    required_limitations: list[Claim] = Field(default_factory=list)
    forbidden_claims: list[Claim] = Field(default_factory=list)
    evidence: dict[str, Any] = Field(default_factory=dict)
    judge_guidance: dict[str, str] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("weights", mode="before")
    @classmethod
    def _known_weight_keys(cls, value: Any) -> Any:
        if isinstance(value, dict):
            unknown = [k for k in value if k not in DIMENSIONS]
            if unknown:
                raise ValueError(
                    f"unknown weight key(s) {unknown}; the six GRADE dimension keys are "
                    f"{list(DIMENSIONS)}")
        return value

    @property
    def kind(self) -> Literal["grade", "plain"]:
        """``grade`` for a GRADE task, ``plain`` for a plain question."""
        return "plain" if self.weights is None else "grade"

    @model_validator(mode="after")
    def _check_grade_task(self) -> Task:
        gold = (
            self.gold_facts or self.gold_insights or self.required_limitations
            or self.forbidden_claims
        )
        if self.weights is None:
            if gold:
                raise ValueError("a task with gold facts or claims needs 'weights'")
            return self
        if self.track is None or self.pack is None:
            raise ValueError("a GRADE task (one with weights) needs 'track' and 'pack'")
        if any(w < 0 or not math.isfinite(w) for w in self.weights.values()):
            raise ValueError("weights must be finite and non-negative")
        total = math.fsum(self.weights.values())
        if abs(total - 1.0) > WEIGHT_TOLERANCE + 1e-12:  # §4's 1e-12 representation slack
            raise ValueError(
                f"weights of task {self.task_id!r} sum to {total!r}, not 1 (within 1e-6)"
            )
        ids = [c.id for c in self.claims()]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"claim ids repeat within the task: {dupes}")
        fact_ids = [f.id for f in self.gold_facts]
        dupes = sorted({i for i in fact_ids if fact_ids.count(i) > 1})
        if dupes:
            raise ValueError(f"gold fact ids repeat within the task: {dupes}")
        return self

    def claims(self) -> list[Claim]:
        """All claims of the task: insights, limitations, then forbidden claims."""
        return [*self.gold_insights, *self.required_limitations, *self.forbidden_claims]


# --------------------------------------------------------------------------- runs


class ToolCall(_In):
    """One tool call as the source recorded it; how records count as calls is decided per
    call (docs/methodology.md §4 "Tool calls").

    Attributes:
        id: The call's id ("" where the source gives none).
        name: The tool's name.
        arguments: The call's arguments as text (an adapter or a responder turns a JSON
            object into text by :func:`arguments_text`); None where the source records none.
        started: When the call started.
        ended: When it ended.
    """

    id: str
    name: str
    arguments: str | None = None
    started: Timestamp | None = None
    ended: Timestamp | None = None


def arguments_text(value: Any) -> str | None:
    """A source's tool-call arguments as :class:`ToolCall` holds them: text as given; any
    other JSON value (an object, an array, a number) as its JSON text with keys sorted, so
    two records of one call compare equal whatever order their keys came in; None kept."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                      default=str)


class Response(_In):
    """The answer in the response format of docs/methodology.md §2.

    A field given as JSON null is read as absent (an empty list, mapping or text).
    """

    key_findings: list[str] = Field(default_factory=list)
    limitations: list[str] = Field(default_factory=list)
    recommendations: list[str] = Field(default_factory=list)
    structured_metrics: dict[str, Any] = Field(default_factory=dict)
    text: str = ""

    @model_validator(mode="before")
    @classmethod
    def _null_is_absent(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if v is not None}
        return data


RunStatus = Literal["delivered", "timeout", "limit", "failed", "cancelled"]

MAX_WORKING_S = 1e9
"""The most working seconds a run may report (about 31 years): a contract bound."""


class RunLimit(_In):
    """The limit that stopped a run of status ``limit`` (docs/methodology.md §4 "Limits"):
    its type as the source names it (``message``, ``token``, ``time``, ``working``,
    ``cost``, ...) and its value where the source gives one."""

    type: str = Field(min_length=1)
    value: float | None = Field(default=None, ge=0, allow_inf_nan=False)


MAX_COST = 1e9
"""The most dollars one run's logged cost may state: a contract bound."""

Tokens = Annotated[int | None, Field(ge=0, le=MAX_TOKENS)]
Dollars = Annotated[float | None, Field(ge=0, le=MAX_COST, allow_inf_nan=False)]

USAGE_COUNTS = ("input_tokens", "output_tokens", "total_tokens", "input_tokens_cache_read",
                "input_tokens_cache_write", "reasoning_tokens")
"""The token counts of a usage record, as Inspect's ``ModelUsage`` names them."""


class ModelUsage(_In):
    """One model's usage of a run, in the fields of Inspect's ``ModelUsage``
    (docs/methodology.md §4 "Cost"). ``input_tokens`` excludes the cache fields, as in
    Inspect. A field the source did not record is absent, never 0."""

    input_tokens: Tokens = None
    output_tokens: Tokens = None
    total_tokens: Tokens = None
    input_tokens_cache_read: Tokens = None
    input_tokens_cache_write: Tokens = None
    reasoning_tokens: Tokens = None
    """Counted within ``output_tokens`` (as every provider bills them), never added to it."""
    total_cost: Dollars = None
    """Dollars as the source logged them (Inspect's ``total_cost``, tau2's ``agent_cost``)."""


class Usage(ModelUsage):
    """Usage of a run, where the server or log reports it: its totals, the model they are of
    (``model``) or each model's own (``models``: Inspect's ``model_usage``), and the
    simulated user's logged cost (tau-bench's and tau2's ``user_cost``, not the system's).

    With ``models``, a total left out is their sum where every model has the field, and a
    total given must equal that sum."""

    model: str | None = Field(default=None, min_length=1)
    models: dict[str, ModelUsage] = Field(default_factory=dict)
    user_cost: Dollars = None
    """Dollars the simulated user (the benchmark's, not the system's) cost, as logged."""

    @model_validator(mode="after")
    def _totals_of_models(self) -> Usage:
        if not self.models:
            return self
        for name in (*USAGE_COUNTS, "total_cost"):
            parts = [getattr(m, name) for m in self.models.values()]
            if any(part is None for part in parts):
                continue
            whole = math.fsum(parts) if name == "total_cost" else sum(parts)
            given = getattr(self, name)
            if given is None:
                setattr(self, name, whole)
            elif given != whole:
                raise ValueError(f"usage.{name} {given} is not the sum over usage.models "
                                 f"({whole})")
        return self


def summed_usage(parts: Sequence[Mapping[str, Any] | None]) -> dict[str, Any] | None:
    """The usage of one run made of ``parts`` (turns, messages, the two answers of a follow-up),
    each a usage record's fields or None (a part with no usage reported): each count and the
    logged cost is the sum where every part has it, else absent (a part that reported
    nothing makes the whole unknown, never a partial sum, docs/methodology.md §4 "Cost");
    the model where every part names the same one. None when no part has usage."""
    if not parts or all(part is None for part in parts):
        return None
    whole: dict[str, Any] = {}
    for name in (*USAGE_COUNTS, "total_cost"):
        got = [None if part is None else part.get(name) for part in parts]
        values = [v for v in got if isinstance(v, int | float) and not isinstance(v, bool)]
        if len(values) == len(got):
            whole[name] = math.fsum(values) if name == "total_cost" else sum(values)
    models = {None if part is None else part.get("model") for part in parts}
    if len(models) == 1 and None not in models:
        whole["model"] = models.pop()
    return whole


def openai_usage(usage: Mapping[str, Any], model: Any = None) -> dict[str, Any]:
    """An OpenAI-style ``usage`` object (``prompt_tokens``, ``completion_tokens``,
    ``total_tokens``, ``prompt_tokens_details.cached_tokens``,
    ``completion_tokens_details.reasoning_tokens``) in :class:`ModelUsage`'s fields, Inspect's
    way: ``input_tokens`` = prompt tokens - cached tokens, the cached ones
    ``input_tokens_cache_read``; a field the object lacks is absent. A value that is not a
    count is passed on as it is, for the run contract to reject with its field."""
    def count(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    prompt = usage.get("prompt_tokens")
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, Mapping) else None
    reasoning = usage.get("completion_tokens_details")
    out = {"input_tokens": (int(prompt) - int(cached)  # type: ignore[arg-type]
                            if count(prompt) and count(cached) else prompt),
           "input_tokens_cache_read": cached,
           "output_tokens": usage.get("completion_tokens"),
           "total_tokens": usage.get("total_tokens"),
           "reasoning_tokens": (reasoning.get("reasoning_tokens")
                                if isinstance(reasoning, Mapping) else None),
           "model": model if isinstance(model, str) and model else None}
    return {k: v for k, v in out.items() if v is not None}


class ModelPrice(_In):
    """One model's prices in dollars per million tokens, in the shape of Inspect's
    ``--model-cost-config`` (docs/methodology.md §4 "Cost"). A cache price left out prices
    no cache token: a run that used that cache has no computed cost (never a price of 0)."""

    input: float = Field(ge=0, allow_inf_nan=False)
    output: float = Field(ge=0, allow_inf_nan=False)
    input_cache_write: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    input_cache_read: float | None = Field(default=None, ge=0, allow_inf_nan=False)


SOURCE_TOTAL_SLACK_S = 0.1
"""How far a run's E2E may exceed its source's own total time for it (``source.total_s``:
Inspect's ``total_time``, tau2's ``duration``, which also cover set-up and scoring) before
the sample is left out of E2E and counted (docs/methodology.md §4 "Timing")."""


class SourceRecord(_In):
    """What an imported run's own source recorded about it (docs/methodology.md §4 "The
    source's own metric", "Timing"): the per-run score of the source's headline metric,
    named as the source names it (Inspect's ``match accuracy``, tau's ``reward``), and the
    source's own total time for the run (Inspect's ``total_time``, tau2's ``duration``)."""

    metric: str | None = Field(default=None, min_length=1)
    score: float | None = Field(default=None, allow_inf_nan=False)
    total_s: float | None = Field(default=None, ge=0, le=MAX_WORKING_S, allow_inf_nan=False)


class Run(_In):
    """One attempt (one JSONL line of a run file, docs/methodology.md §2)."""

    run_id: Name = Field(min_length=1)
    setup: Name = Field(min_length=1)
    task_id: Name = Field(min_length=1)
    repeat: int = Field(ge=1, le=MAX_REPEAT)
    attempt_of: Name | None = None
    status: RunStatus
    error: str | None = None
    limit: RunLimit | None = None
    """The limit that stopped the run: required with status ``limit``, absent otherwise."""
    events: dict[str, Timestamp | None] = Field(default_factory=dict)
    response: Response | None = None
    tool_calls: list[ToolCall] | None = None
    usage: Usage | None = None
    """Token usage and cost where known (docs/methodology.md §4 "Cost"); never scored."""
    working_s: float | None = Field(default=None, ge=0, le=MAX_WORKING_S, allow_inf_nan=False)
    """Seconds the system worked on the run as its source recorded them (Inspect's
    ``working_time``: without waiting on rate limits and queues); its own metric beside E2E
    (docs/methodology.md §4 "Timing")."""
    source: SourceRecord | None = None
    """What an imported run's source recorded: its headline metric's score and its own total
    time (absent for native runs)."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free-form facts about the run (e.g. an imported log's own timings); never scored."""

    @model_validator(mode="after")
    def _status_fields(self) -> Run:
        if self.status == "delivered" and self.response is None:
            raise ValueError("a delivered run needs a 'response'")
        if self.status == "limit" and self.limit is None:
            raise ValueError("a run of status 'limit' needs a 'limit' (its type and value)")
        if self.status != "limit" and self.limit is not None:
            raise ValueError("'limit' is recorded only on a run of status 'limit'")
        return self


class Judgement(_In):
    """A recorded score for one judged dimension of one run."""

    run_id: Name = Field(min_length=1)
    dimension: JudgedDimension
    score: float | None = Field(ge=0.0, le=1.0)
    """Null when the judge had nothing to check (the reason then says why); never a silent 0."""
    judge: str = Field(min_length=1)
    reason: str | None = None
    provenance: dict[str, Any] | None = None
    """Where the verdict came from (a model judge: model, prompt hash, cache hit)."""

    @model_validator(mode="after")
    def _null_needs_reason(self) -> Judgement:
        if self.score is None and not self.reason:
            raise ValueError("a null score needs a reason")
        return self


MODEL_GRADER_PREFIXES = ("llm:", "llm-grader:", "model:")
"""A judge or grader name with one of these prefixes is a model (calibration reports of
model-only grading are labelled an internal consistency review)."""


def material_error_of(core_conclusion: str) -> Literal["yes", "no", "pending"]:
    """A grade's ``material_error`` where the grader states only the core conclusion (a model
    grader, the grading panel): ``yes`` for ``material_error``, ``pending`` for ``pending``,
    else ``no``."""
    if core_conclusion == "material_error":
        return "yes"
    return "pending" if core_conclusion == "pending" else "no"


class Grade(_In):
    """A grader's verdict on one run (at most one per run)."""

    run_id: Name = Field(min_length=1)
    core_conclusion: Literal["correct", "material_error", "no_gradable_conclusion", "pending"]
    request_fulfilment: Literal["full", "partial", "not_met", "pending"]
    material_error: Literal["yes", "no", "pending"]
    claim: str | None = None
    evidence: str | None = None
    effect: str | None = None
    grader: str = Field(min_length=1)
    reason: str | None = None
    needs_more_information: bool | None = None
    """The standard's interaction state, beside the grade: the answer asks the user for more
    information (only asking is unresolved; answering part and then asking can be partial).
    Null when the grader did not say."""
    provenance: dict[str, Any] | None = None
    """Where the record came from (a model grader: model, prompt hashes, cache hits, alias)."""


# --------------------------------------------------------------------------- results
# Every key of results.json is typed below (docs/methodology.md §5 names each figure's rule).

GradeState = Literal["resolved", "partially_resolved", "material_error", "unresolved",
                     "pending_verification", "not_run"]
"""Every state a planned slot can be in; their counts sum to N (docs/methodology.md §4)."""

GRADE_STATES: tuple[GradeState, ...] = get_args(GradeState)
FOUR_GRADES: tuple[GradeState, ...] = GRADE_STATES[:4]
"""The four grades; graded coverage counts these."""

FigureLabel = Literal["measured", "conditional estimate", "untested direction"]
"""How an improvement figure between setups was obtained (docs/methodology.md §5)."""


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Reject(_Out):
    """One rejected input record: where it was, which field, and why."""

    source: str
    line: int | None = None
    field: str | None = None
    error: str


class WarningItem(_Out):
    """Something the user should see that is not a reject: an unknown task field, an inferred
    plan, a composite over fewer than six dimensions."""

    source: str | None = None
    line: int | None = None
    message: str

    def __str__(self) -> str:
        where = "" if self.source is None else (
            f"{self.source}: " if self.line is None else f"{self.source}:{self.line}: ")
        return where + self.message


class DimensionScores(_Out):
    """The six GRADE dimensions; null where a dimension cannot be computed (never 0)."""

    grounding_accuracy: float | None = None
    insight_quality: float | None = None
    evidence_linkage: float | None = None
    calibration_limitation_handling: float | None = None
    consistency: float | None = None
    structure_usability: float | None = None


class Aggregate(_Out):
    """A track, pack or overall aggregate over ``tasks`` GRADE tasks.

    ``dimensions_computed`` counts the non-null dimensions the composite is over;
    ``missing_dimensions`` names the others, so "composite over 4 of 6" is never silent.
    """

    composite: float | None
    dimensions: DimensionScores
    tasks: int
    dimensions_computed: int
    missing_dimensions: list[Dimension]


class TaskScore(_Out):
    """One task's scores for one setup; ``runs`` counts its scored primary runs."""

    composite: float | None
    rubric_score: float | None
    dimensions: DimensionScores
    runs: int


class Summary(_Out):
    """A sample summarised (docs/methodology.md §4 "Timing"): n, mean, P50 (median, mean of
    the middle two), nearest-rank P90, min, max; every statistic null when n = 0."""

    n: int
    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    min: float | None = None
    max: float | None = None


class LabelledSummary(Summary):
    """A summary whose meaning must travel with it (a proxy, a span including waiting)."""

    label: str


class GradeCounts(_Out):
    """Slots per state; the six sum to N."""

    resolved: int
    partially_resolved: int
    material_error: int
    unresolved: int
    pending_verification: int
    not_run: int


class GradeRates(_Out):
    """Each count / N (null when N = 0)."""

    resolved: float | None
    partially_resolved: float | None
    material_error: float | None
    unresolved: float | None
    pending_verification: float | None
    not_run: float | None


class Interval(_Out):
    """A two-sided interval."""

    low: float
    high: float


class StableResolution(_Out):
    """Questions whose R slots are all resolved; ``count`` null when R = 1."""

    count: int | None
    questions: int
    repeats: int


class MaterialError(_Out):
    """A material error as the grader recorded it: the claim, the evidence, the effect."""

    run_id: str
    task_id: str
    repeat: int
    claim: str | None
    evidence: str | None
    effect: str | None
    grader: str | None
    grade_reason: str | None


class ClusteredRate(_Out):
    """How much the repeats of one cluster widen a rate's interval (docs/methodology.md §4
    "Rates"): null design effect and icc where p is 0 or 1."""

    design_effect: float | None
    """SE² clustered (CR0) / the binomial p (1 - p) / N."""
    icc: float | None
    """(design effect - 1) / (mean cluster size - 1); null with clusters of one slot."""
    n_effective: float | None
    """min(N, p (1 - p) / SE²); the clusters when p is 0 or 1: the n Wilson's interval uses."""


class ReliabilityPoint(_Out):
    """pass@k and pass^k at one k with their clustered Wilson intervals
    (docs/methodology.md §4 "Reliability")."""

    k: int
    pass_at_k: float
    pass_at_k_low: float
    pass_at_k_high: float
    pass_hat_k: float
    pass_hat_k_low: float
    pass_hat_k_high: float
    questions: int


class GradeSummary(_Out):
    """Rates over N = questions x R for one setup (docs/methodology.md §4 "Rates")."""

    N: int
    questions: int
    repeats: int
    counts: GradeCounts
    rates: GradeRates
    wilson95: dict[GradeState, Interval | None]
    """95% Wilson score interval of each rate over its effective size (clustered)."""
    clustered: dict[GradeState, ClusteredRate] = Field(default_factory=dict)
    """Each rate's design effect, icc and effective size."""
    interval_basis: str = ""
    """What the intervals account for: ``clustered by question, R = 3``."""
    interval_note: str
    graded_coverage: float | None
    ungraded: int
    beyond_plan: int
    needs_more_information: int = 0
    """Primary runs in the plan whose grade record says the answer asks the user for more
    information (the interaction state beside the grade; docs/methodology.md §4 "Grades")."""
    stable_resolution: StableResolution
    material_errors: list[MaterialError] = Field(default_factory=list)
    run_coverage: float | None = None
    """Planned slots a primary run filled / N (1 - the not-run rate; null when N = 0): below
    the plan's ``coverage_min`` the setup is not ranked (docs/methodology.md §4 "Coverage")."""
    reliability: list[ReliabilityPoint] = Field(default_factory=list)
    """pass@k and pass^k at k = 1..R (1 and R when R > 20); none without a planned question."""
    flaky_questions: int = 0
    """Questions resolved in some of their R slots but not all."""


class StopSummary(_Out):
    """Timeouts or failures: count and rate over attempted primary runs, and their waiting
    time (stopped - submitted), never a latency sample."""

    count: int
    rate: float | None
    attempted: int
    waiting_s: Summary


class LimitSummary(StopSummary):
    """Runs stopped by a limit of the source's own (docs/methodology.md §4 "Limits"): count
    and rate over attempted primary runs, the count per limit type, and the time to the
    limit (stopped - submitted), never a latency sample."""

    by_type: dict[str, int] = Field(default_factory=dict)


class OrderViolation(_Out):
    """Two events of one run in an impossible order: ``then`` came ``seconds`` (< 0) after
    ``first``. The pair is no sample of any metric; the run keeps its answer and scores."""

    run_id: str
    task_id: str
    first: str
    then: str
    seconds: float


class Timing(_Out):
    """End-to-end timing and every other event of one setup's planned primary runs."""

    e2e_s: Summary
    e2e_mean_ci95: Interval | None = None
    """The E2E mean's 95% normal interval from its clustered standard error (CR0,
    docs/methodology.md §4 "Clusters"); null below 2 clusters."""
    e2e_definition: str = "received - submitted"
    """Which E2E this is: received - submitted, or without the agent-reported channel
    overhead when the explicit option asked for it."""
    channel_overhead_s: Summary | None = None
    """Agent-reported channel overhead (reply cards, link resolution), its own metric."""
    delivered: int
    missing_timestamps: int
    e2e_out_of_order: int
    out_of_order: list[OrderViolation]
    interaction: dict[str, int] = Field(default_factory=dict)
    """Delivered runs labelled ``protocol_follow_up``, ``ad_hoc_follow_up`` or ``resumed``
    (each its own count; their E2E covers the whole interaction)."""
    clocks: dict[str, int] = Field(default_factory=dict)
    """E2E samples per clock they were read from (``unrecorded`` where a run names none)."""
    clock_offsets_s: dict[str, float | None] = Field(default_factory=dict)
    """Per clock: the median offset of the endpoint's clock against it (the replies' ``Date``
    headers, good to about 1 s), None where unmeasured. Two clocks' skew is the difference of
    their offsets against a shared endpoint."""
    per_question_median_s: dict[str, float | None]
    events: dict[str, Summary]
    platform_e2e_s: LabelledSummary | None
    working_s: Summary
    """Working time of delivered runs as their source recorded it (Inspect's
    ``working_time``: the agent's own work, without waiting on rate limits and queues); its
    own metric, never a stand-in for E2E."""
    timeouts: StopSummary
    limits: LimitSummary
    failures: StopSummary
    time_to_outcome_s: LabelledSummary | None = None
    """Over every attempted run that ended with an outcome (delivered or stopped by a limit):
    received or stopped - submitted (docs/methodology.md §4 "Timing"); beside E2E, which
    covers delivered runs only."""
    e2e_beyond_source_total: int = 0
    """Delivered runs left out of E2E because their E2E exceeds the source's own total time
    for the run by more than 0.1 s (a host sleep, a clock jump)."""


class ToolNameCount(_Out):
    """Unique calls of one tool name, and the runs that made them."""

    calls: int
    runs: int


class ToolCalls(_Out):
    """Tool calls of one setup's delivered primary runs, each record decided per call
    (docs/methodology.md §4 "Tool calls"): a record repeating an earlier record's id, name
    and arguments in its run is that call again (counted once); any other record is a call.
    """

    runs_exposed: int
    delivered: int
    coverage: float | None
    per_run: Summary
    """Calls per exposed run (what the standard counts)."""
    per_run_ci95: Interval | None = None
    """Its mean's 95% normal interval from the clustered standard error (CR0)."""
    recorded_per_run: Summary
    """Records per exposed run (a call recorded twice counts twice), beside the calls."""
    calls: int
    recorded_calls: int
    runs_with_duplicate_records: int
    """Exposed runs holding a record that repeats an earlier one (id, name and arguments)."""
    by_name: dict[str, ToolNameCount]
    span_s: LabelledSummary
    attempted_runs_exposed: int = 0
    """Exposed primary runs of every status (delivered, limit, failed, timed out)."""
    attempted_per_run: Summary | None = None
    """Calls per exposed attempted run."""


class SourceMetric(_Out):
    """The source's own headline metric for one setup (docs/methodology.md §4 "The
    source's own metric"): the mean over questions of each question's mean score over its
    repeats, and its standard error (sample standard deviation over questions / sqrt n;
    null below 2 questions)."""

    name: str
    mean: float | None
    stderr: float | None
    questions: int
    runs: int


class Rerun(_Out):
    """A re-run, listed beside the attempt it repeats (never scored in its place)."""

    run_id: str
    attempt_of: str | None
    task_id: str
    repeat: int
    status: str
    grade: str
    e2e_s: float | None


class CostSummary(_Out):
    """One setup's tokens and dollars on a subset (docs/methodology.md §4 "Cost"), over its
    primary runs in the plan of every status. Intervals are percentile 95% intervals from
    the question-clustered bootstrap; the frontier fields are set on all questions only."""

    runs: int
    """Primary runs in the plan (filled slots)."""
    runs_with_tokens: int
    token_coverage: float | None
    tokens_per_run_mean: float | None = None
    tokens_per_run_ci_low: float | None = None
    tokens_per_run_ci_high: float | None = None
    tokens_per_run_p50: float | None = None
    tokens_per_run_p90: float | None = None
    tokens_total: int | None = None
    input_tokens_total: int | None = None
    """Over the runs recording it, as every total of a count; excludes the cache counts."""
    output_tokens_total: int | None = None
    input_tokens_cache_read_total: int | None = None
    input_tokens_cache_write_total: int | None = None
    reasoning_tokens_total: int | None = None
    """Within the output tokens, never added to them."""
    runs_with_cost: int
    cost_coverage: float | None
    cost_per_run_mean: float | None = None
    cost_per_run_ci_low: float | None = None
    cost_per_run_ci_high: float | None = None
    cost_per_run_p50: float | None = None
    cost_per_run_p90: float | None = None
    cost_total: float | None = None
    questions_with_cost: int = 0
    cost_per_question: float | None = None
    """Total cost / questions with a costed run: what one question's R runs cost."""
    cost_per_question_ci_low: float | None = None
    cost_per_question_ci_high: float | None = None
    resolved_with_cost: int = 0
    cost_per_resolved: float | None = None
    """Total cost / resolved slots among the costed runs (null with none resolved)."""
    cost_per_resolved_ci_low: float | None = None
    cost_per_resolved_ci_high: float | None = None
    basis: str | None = None
    """Where the costs came from: ``as logged``, ``computed from prices <sha256 prefix>``."""
    unpriced: str | None = None
    """Why the runs without a cost have none, with their count (``m: no price (3 runs)``)."""
    runs_with_user_cost: int = 0
    user_cost_total: float | None = None
    """The simulated user's logged dollars (tau-bench, tau2): the benchmark's, not the
    setup's; never in the setup's cost."""
    clusters: int = 0
    """The clusters the intervals resample."""
    on_frontier: bool | None = None
    """Not dominated on (cost per question, resolved rate) by a compared setup."""
    p_on_frontier: float | None = None
    """Share of the bootstrap resamples in which it is on the frontier."""


class SetupResults(_Out):
    """Everything computed for one setup."""

    overall: Aggregate
    tracks: dict[str, Aggregate]
    packs: dict[str, Aggregate]
    tasks: dict[str, TaskScore]
    grades: GradeSummary
    timing: Timing
    tool_calls: ToolCalls
    reruns: list[Rerun] = Field(default_factory=list)
    source_metrics: dict[str, SourceMetric] = Field(default_factory=dict)
    """The source's own headline metric(s), by the name the source gives them."""
    cost: CostSummary | None = None
    """Tokens and dollars, where some run records usage."""


class SubsetSetup(_Out):
    """One setup's grades, timing and tool calls recomputed on a subset of questions."""

    grades: GradeSummary
    timing: Timing
    tool_calls: ToolCalls
    source_metrics: dict[str, SourceMetric] = Field(default_factory=dict)
    """The source's own headline metric(s), by the name the source gives them."""
    cost: CostSummary | None = None
    """Tokens and dollars, where some run records usage."""


class CommonSubset(_Out):
    """Questions whose every planned slot is resolved for every setup, and each setup on it."""

    tasks: list[str]
    questions: int
    of_questions: int
    repeats: int
    rule: str
    setups: dict[str, SubsetSetup]


class Figure(_Out):
    """One comparison figure with its label; which fields are set depends on the label."""

    metric: str
    label: FigureLabel
    meaning: str | None = None
    n_questions: int | None = None
    mean_a: float | None = None
    mean_b: float | None = None
    mean_diff_b_minus_a: float | None = None
    ci95: Interval | None = None
    """The figure's interval: a 95% bootstrap interval over questions for a figure with no
    test; for a tested figure the shifts its own test does not reject at its Holm level
    (``ci_level``), so it excludes 0 exactly when ``p_holm`` < 0.05 (docs/methodology.md §5
    "One verdict")."""
    ci_level: float | None = None
    """The interval's confidence level: 0.95, or for a tested figure 1 - 0.05 / its Holm
    multiplier (p_holm / p, from their log10)."""
    ci_basis: str | None = None
    """How the interval was made."""
    k: int | None = None
    """For pass^k: the k."""
    ci_excludes_zero: bool | None = None
    direction: str | None = None
    value: float | None = None
    formula: str | None = None
    assumptions: str | None = None
    statement: str | None = None
    p_value: float | None = None
    """A grade rate's paired test, two-sided (docs/methodology.md §5 "Significance"); never
    0 nor below 2.2e-308 (``log10_p`` says how far below)."""
    p_holm: float | None = None
    """``p_value`` adjusted by Holm across the setup pairs of its figure and subset."""
    log10_p: float | None = None
    """log10 of the test's p, exact where ``p_value`` is floored (below 2.2e-308)."""
    log10_p_holm: float | None = None
    """log10 of the Holm-adjusted p; the Holm multiplier is 10^(log10_p_holm - log10_p)."""
    test: str | None = None
    """Which test gave ``p_value`` (exact McNemar, or the sign-flip permutation test)."""


class Comparison(_Out):
    """Setup ``compared`` (B) against ``baseline`` (A) on one subset of questions."""

    baseline: str
    compared: str
    subset: Literal["all", "common"]
    questions: int
    """Questions paired: both setups ran them (``all``), or the common subset (``common``)."""
    seed: int
    resamples: int
    figures: list[Figure]


COVERAGE_MIN = 0.5
"""A setup whose primary runs fill less than this share of its planned slots is not ranked:
shown with its coverage first, and left out of the common subset, the comparisons, the Holm
family and every ranking (docs/methodology.md §4 "Coverage")."""


class Plan(_Out):
    """R, the planned repeats per question, and whether it was given or inferred."""

    repeats: int
    inferred: bool
    rule: str
    coverage_min: float = COVERAGE_MIN
    """A setup whose primary runs fill less than this share of its planned slots is not
    ranked (docs/methodology.md §4 "Coverage")."""
    unranked: dict[str, float | None] = Field(default_factory=dict)
    """The setups below ``coverage_min``, each with its coverage: shown, never ranked,
    compared or in the common subset."""


class InputFile(_Out):
    """One input as read: where, its SHA-256, records accepted and rejected."""

    kind: str
    path: str
    sha256: str | None
    records: int
    rejected: int


class Provenance(_Out):
    """What produced these results."""

    grade_kit_version: str
    created_at: str
    inputs: list[InputFile]
    arguments: dict[str, Any]
    seeds: dict[str, int]
    judges: list[str]
    graders: list[str]
    prices: dict[str, Any] | None = None
    """The price file computed costs came from: its source, SHA-256 and models."""


class Results(_Out):
    """The whole of results.json (docs/methodology.md §5)."""

    schema_version: str = "2"
    generated_by: str = "grade_kit"
    plan: Plan
    setups: dict[str, SetupResults]
    common_subset: CommonSubset
    comparisons: list[Comparison] = Field(default_factory=list)
    rejected: list[Reject] = Field(default_factory=list)
    warnings: list[WarningItem] = Field(default_factory=list)
    provenance: Provenance

    def _summary(self) -> str:
        return (f"{len(self.setups)} setups, R = {self.plan.repeats}"
                f"{' (inferred)' if self.plan.inferred else ''}, "
                f"{self.common_subset.questions} of {self.common_subset.of_questions} questions "
                f"in the common subset, {len(self.comparisons)} comparisons, "
                f"{len(self.rejected)} rejected, {len(self.warnings)} warnings")

    def __repr__(self) -> str:
        return f"Results({self._summary()}; .model_dump() for everything)"

    def _repr_html_(self) -> str:
        import html

        rows = "".join(
            f"<tr><td>{html.escape(name)}</td><td>"
            f"{'—' if s.overall.composite is None else f'{s.overall.composite:.3f}'}</td>"
            f"<td>{s.overall.dimensions_computed} of {len(DIMENSIONS)}</td>"
            f"<td>{s.grades.N}</td><td>{s.grades.counts.resolved}</td></tr>"
            for name, s in self.setups.items())
        return (f"<p><b>Results</b>: {html.escape(self._summary())}</p><table><thead><tr>"
                "<th>setup</th><th>composite</th><th>over</th><th>N</th><th>resolved</th>"
                f"</tr></thead><tbody>{rows}</tbody></table>")


_SCHEMAS: dict[str, type[BaseModel]] = {
    "task.schema.json": Task,
    "run.schema.json": Run,
    "judgement.schema.json": Judgement,
    "grade.schema.json": Grade,
    "results.schema.json": Results,
}

SCHEMA_DIR = Path(__file__).parent / "schemas"


def json_schemas() -> dict[str, str]:
    """The JSON Schema text of every contract, keyed by file name."""
    return {
        name: json.dumps(model.model_json_schema(), indent=2, sort_keys=True) + "\n"
        for name, model in _SCHEMAS.items()
    }


def write_json_schemas(directory: Path = SCHEMA_DIR) -> list[Path]:
    """Write the JSON Schemas generated from the models (default: ``grade_kit/schemas``)."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in json_schemas().items():
        path = directory / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
