"""The fast path of the record loaders: typed msgspec decoding that accepts a line only when
the pydantic models would accept it with the same values (docs/methodology.md §6).

A line of runs, judgements or grades is first tried here. :func:`decode_fast` returns a
light struct (no pydantic object, no cyclic-GC tracking) when the line is certainly valid,
and None otherwise; a None sends the line down the reference path
(:func:`grade_kit.parse.loads_json` and the pydantic model), which either accepts it or
names the file, line and field of the problem. So the fast path never decides a reject, and
it accepts a line only when every check of the reference path holds:

- the same JSON: msgspec is stricter than Python's decoder (no ``NaN``, ``Infinity`` or
  out-of-range numbers; those lines take the reference path);
- no key repeated in any object: a colon outside a string is always a key's, so when the
  line holds no ``\\u`` escape the re-encoded value has as many colons as the line exactly
  when no key was dropped as a repeat;
- no nesting deeper than :data:`~grade_kit.parse.MAX_DEPTH`, no lone surrogate, no
  byte-order mark;
- the models' own rules, restated as struct types below and in ``__post_init__`` (strict
  types, lengths and bounds, literals, time zones on timestamps, a response on a delivered
  run, a reason for a null score). ``tests/test_fastread.py`` checks on random and hostile
  records that both paths accept the same lines with the same values.

The structs carry the models' field names and defaults, so code that only reads fields works
on either; :class:`LazyRecords` hands out validated pydantic models, built on first access.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from typing import Annotated, Any, Generic, Literal, TypeVar, cast, overload

import msgspec
from pydantic import BaseModel

from grade_kit.parse import MAX_DEPTH
from grade_kit.schema import MAX_REPEAT, MAX_TOKENS, MAX_WORKING_S, parse_timestamp

__all__ = ["FastGrade", "FastJudgement", "FastRun", "LazyRecords", "LazySequence",
           "ModelSequence", "concat_records", "decode_fast", "raw_records", "select_records"]

NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]
Count = Annotated[int, msgspec.Meta(ge=0, le=MAX_TOKENS)]


def _check_timestamp(value: str | None) -> None:
    if value is not None:
        parse_timestamp(value)


class FastToolCall(msgspec.Struct, gc=False):
    """:class:`grade_kit.schema.ToolCall`."""

    id: str
    name: str
    started: str | None = None
    ended: str | None = None

    def __post_init__(self) -> None:
        _check_timestamp(self.started)
        _check_timestamp(self.ended)


class FastResponse(msgspec.Struct, gc=False):
    """:class:`grade_kit.schema.Response` (a null field is read as absent)."""

    key_findings: list[str] | None = msgspec.field(default_factory=list)
    limitations: list[str] | None = msgspec.field(default_factory=list)
    recommendations: list[str] | None = msgspec.field(default_factory=list)
    structured_metrics: dict[str, Any] | None = msgspec.field(default_factory=dict)
    text: str | None = ""

    def __post_init__(self) -> None:
        if self.key_findings is None:
            self.key_findings = []
        if self.limitations is None:
            self.limitations = []
        if self.recommendations is None:
            self.recommendations = []
        if self.structured_metrics is None:
            self.structured_metrics = {}
        if self.text is None:
            self.text = ""


class FastUsage(msgspec.Struct, gc=False):
    """:class:`grade_kit.schema.Usage`."""

    input_tokens: Count | None = None
    output_tokens: Count | None = None


class FastRunLimit(msgspec.Struct, gc=False):
    """:class:`grade_kit.schema.RunLimit`."""

    type: NonEmpty
    value: Annotated[float, msgspec.Meta(ge=0)] | None = None


class FastRun(msgspec.Struct, gc=False):
    """:class:`grade_kit.schema.Run`."""

    run_id: NonEmpty
    setup: NonEmpty
    task_id: NonEmpty
    repeat: Annotated[int, msgspec.Meta(ge=1, le=MAX_REPEAT)]
    status: Literal["delivered", "timeout", "limit", "failed", "cancelled"]
    attempt_of: str | None = None
    error: str | None = None
    limit: FastRunLimit | None = None
    events: dict[str, str | None] = msgspec.field(default_factory=dict)
    response: FastResponse | None = None
    tool_calls: list[FastToolCall] | None = None
    usage: FastUsage | None = None
    working_s: Annotated[float, msgspec.Meta(ge=0, le=MAX_WORKING_S)] | None = None
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)

    def __post_init__(self) -> None:
        for value in self.events.values():
            _check_timestamp(value)
        if self.status == "delivered" and self.response is None:
            raise ValueError("a delivered run needs a 'response'")
        if (self.status == "limit") != (self.limit is not None):
            raise ValueError("a 'limit' goes with status 'limit', and only with it")


class FastJudgement(msgspec.Struct, gc=False):
    """:class:`grade_kit.schema.Judgement`."""

    run_id: NonEmpty
    dimension: Literal["evidence_linkage", "structure_usability"]
    score: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] | None
    judge: NonEmpty
    reason: str | None = None
    provenance: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.score is None and not self.reason:
            raise ValueError("a null score needs a reason")


class FastGrade(msgspec.Struct, gc=False):
    """:class:`grade_kit.schema.Grade`."""

    run_id: NonEmpty
    core_conclusion: Literal["correct", "material_error", "no_gradable_conclusion", "pending"]
    request_fulfilment: Literal["full", "partial", "not_met", "pending"]
    material_error: Literal["yes", "no", "pending"]
    grader: NonEmpty
    claim: str | None = None
    evidence: str | None = None
    effect: str | None = None
    reason: str | None = None
    needs_more_information: bool | None = None
    provenance: dict[str, Any] | None = None


_PLAIN = msgspec.json.Decoder()
_ENCODE = msgspec.json.Encoder().encode
_SURROGATE = re.compile(r"[\ud800-\udfff]")
Struct = TypeVar("Struct", bound=msgspec.Struct)


_DOUBT = (msgspec.MsgspecError, RecursionError, ValueError, OverflowError, TypeError)
"""What msgspec raises on a line the fast path leaves to the reference path."""


def _no_key_repeated(colons: int, data: Any) -> bool:
    """Whether JSON text holding ``colons`` colons, without ``\\u`` escapes, decoded to
    ``data`` with no key dropped as a repeat: a colon outside a string is always a key's, so
    re-encoded, ``data`` holds as many colons exactly when none was dropped."""
    return colons == _ENCODE(data).count(b":")


def decode_fast(text: str, struct: type[Struct]) -> Struct | None:
    """``text`` as ``struct`` when the reference path would surely accept it with the same
    values, else None (then the reference path decides, and names any problem)."""
    if ("\\u" in text or text.count("[") + text.count("{") > MAX_DEPTH
            or (not text.isascii() and _SURROGATE.search(text))):
        return None
    try:
        data = _PLAIN.decode(text)
        if type(data) is not dict or not _no_key_repeated(text.count(":"), data):
            return None  # not an object, or a key was repeated (see the module's docstring)
        return msgspec.convert(data, struct)
    except _DOUBT:
        return None  # any doubt: the reference path decides, and names the problem


_TYPED: dict[type[msgspec.Struct], msgspec.json.Decoder[Any]] = {}


Model = TypeVar("Model", bound=BaseModel)
Item = TypeVar("Item")


class LazySequence(Sequence[Item], Generic[Item]):
    """A sequence whose items are made on demand: a subclass gives ``__len__`` and
    ``_item_at`` (an index already checked to be in range); indexing, slicing and iteration
    are done here once for all."""

    def _item_at(self, index: int) -> Item:
        raise NotImplementedError

    @overload
    def __getitem__(self, index: int) -> Item: ...

    @overload
    def __getitem__(self, index: slice) -> list[Item]: ...

    def __getitem__(self, index: int | slice) -> Item | list[Item]:
        if isinstance(index, slice):
            return [self._item_at(i) for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"{type(self).__name__} index out of range")
        return self._item_at(index)

    def __iter__(self) -> Iterator[Item]:
        for index in range(len(self)):
            yield self._item_at(index)


class ModelSequence(LazySequence[Model]):
    """A sequence of pydantic models built on demand (:class:`LazySequence`)."""


class LazyRecords(ModelSequence[Model]):
    """Validated records, each built as its pydantic model only when first asked for.

    Holds decoded structs (see :func:`decode_fast`) and models side by side; indexing or
    iterating returns models (built once, then kept). :func:`raw_records` gives the stored
    values themselves, for code that reads fields only (the frames are built from them).
    """

    def __init__(self, model: type[Model], items: list[Any]) -> None:
        self._model = model
        self._items = items

    def __len__(self) -> int:
        return len(self._items)

    def _item_at(self, index: int) -> Model:
        item = self._items[index]
        if not isinstance(item, BaseModel):
            item = self._model.model_validate(msgspec.to_builtins(item))
            self._items[index] = item
        return cast(Model, item)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"LazyRecords({self._model.__name__} x {len(self._items)})"

    @property
    def raw(self) -> list[Any]:
        """The stored values: structs not yet asked for, models already built."""
        return self._items


def concat_records(model: type[Model], *parts: Sequence[Model]) -> LazyRecords[Model]:
    """``parts`` one after another, without building the models of loaded records."""
    return LazyRecords(model, [item for part in parts for item in raw_records(part)])


def select_records(records: Sequence[Model], keep: Callable[[Any], bool]) -> list[Model]:
    """The records for which ``keep`` (reading fields only) is true, as models; only those
    are built."""
    raw = getattr(records, "raw", None)
    if raw is None:
        return [record for record in records if keep(record)]
    return [records[i] for i, item in enumerate(raw) if keep(item)]


def raw_records(records: Sequence[Any]) -> Sequence[Any]:
    """The values behind ``records`` with the models' field names, for code that only reads
    fields: the ``raw`` values of a :class:`LazyRecords` (or of a packed store's runs), else
    ``records`` itself."""
    raw = getattr(records, "raw", None)
    return raw if raw is not None else records
