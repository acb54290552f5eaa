"""The fast path of the record loaders: typed msgspec decoding that accepts a line only when
the pydantic models would accept it with the same values (docs/methodology.md §6).

A line of runs, judgements or grades is first tried here. :func:`decode_fast` returns a
light struct (no pydantic object, no cyclic-GC tracking) when the line is certainly valid,
and None otherwise; a None sends the line down the reference path
(:func:`grade_kit.reading.parse.loads_json` and the pydantic model), which either accepts it or
names the file, line and field of the problem. So the fast path never decides a reject, and
it accepts a line only when every check of the reference path holds:

- the same JSON: msgspec is stricter than Python's decoder (no ``NaN``, ``Infinity`` or
  out-of-range numbers; those lines take the reference path);
- no key repeated in any object: a colon outside a string is always a key's, so when the
  line holds no ``\\u`` escape the re-encoded value has as many colons as the line exactly
  when no key was dropped as a repeat;
- no nesting deeper than :data:`~grade_kit.reading.parse.MAX_DEPTH`, no lone surrogate, no
  byte-order mark;
- the models' own rules: each struct is derived from its pydantic model by
  :func:`struct_of` (types, lengths and bounds, literals, defaults; the models' validators
  run on the struct), so the contract is stated once, in :mod:`grade_kit.schema`.
  ``tests/reading/test_fastread.py`` checks on random and hostile records that both paths accept
  the same lines with the same values.

The structs carry the models' field names and defaults, so code that only reads fields works
on either; :class:`LazyRecords` hands out validated pydantic models, built on first access.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from types import UnionType
from typing import (
    Annotated,
    Any,
    Generic,
    Literal,
    TypeVar,
    Union,
    cast,
    get_args,
    get_origin,
    overload,
)

import msgspec
from pydantic import AfterValidator, AllowInfNan, BaseModel

from grade_kit.frames import raw_records
from grade_kit.reading.parse import MAX_DEPTH

_CONSTRAINTS = {"Ge": "ge", "Le": "le", "Gt": "gt", "Lt": "lt", "MinLen": "min_length",
                "MaxLen": "max_length"}
"""pydantic's field constraints (annotated_types) by class name, as msgspec.Meta keywords."""

Check = Callable[[Any], None]


def _constrained(tp: Any, metadata: Sequence[Any]) -> tuple[Any, list[Check]]:
    """``tp`` with pydantic field ``metadata`` as msgspec constraints, and the checks msgspec
    cannot state (an AfterValidator's function)."""
    constraints: dict[str, Any] = {}
    checks: list[Check] = []
    for meta in metadata:
        name = type(meta).__name__
        if name in _CONSTRAINTS:
            constraints[_CONSTRAINTS[name]] = getattr(meta, _CONSTRAINTS[name])
        elif isinstance(meta, AfterValidator):
            checks.append(_unchanged(meta.func))  # type: ignore[arg-type]
        elif not isinstance(meta, AllowInfNan):  # msgspec never decodes NaN or infinity
            raise TypeError(f"no msgspec form for the field constraint {meta!r}")
    return (Annotated[tp, msgspec.Meta(**constraints)] if constraints else tp), checks


def _unchanged(validate: Callable[[Any], Any]) -> Check:
    """An AfterValidator as a fast-path check: the value passes when the validator accepts
    it unchanged; one it would change (a name made NFC) is a doubt, and the reference path
    gives the model's value."""
    def check(value: Any) -> None:
        if validate(value) != value:
            raise ValueError("the model would change this value")
    return check


def _each(check: Check) -> Check:
    def each(values: Any) -> None:
        for value in (values.values() if isinstance(values, dict) else values):
            check(value)
    return each


def _unless_none(check: Check, value: Any) -> None:
    if value is not None:
        check(value)


def _struct_type(tp: Any, metadata: Sequence[Any] = ()) -> tuple[Any, list[Check]]:
    """The msgspec type of a pydantic annotation (field ``metadata`` applies to its non-null
    arm, as in pydantic), and the checks of what the type cannot state."""
    origin, args = get_origin(tp), get_args(tp)
    if origin is Annotated:
        return _struct_type(args[0], [*tp.__metadata__, *metadata])
    if origin in (Union, UnionType):
        arms = [a for a in args if a is not type(None)]
        if len(arms) != 1 or len(args) != 2:
            raise TypeError(f"no msgspec form for the union {tp!r}")
        inner, checks = _struct_type(arms[0], metadata)
        return inner | None, [partial(_unless_none, check) for check in checks]
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        if metadata:
            raise TypeError(f"no msgspec form for constraints on a model: {metadata!r}")
        return struct_of(tp), []
    if origin in (list, dict):
        inner, checks = _struct_type(args[-1])
        shaped = list[inner] if origin is list else dict[args[0], inner]  # type: ignore[valid-type]
        constrained, own = _constrained(shaped, metadata)
        return constrained, [*map(_each, checks), *own]
    if tp in (str, int, float, bool, Any) or origin is Literal:
        return _constrained(tp, metadata)
    raise TypeError(f"no msgspec form for the type {tp!r}")


_STRUCTS: dict[type[BaseModel], type[msgspec.Struct]] = {}


def struct_of(model: type[BaseModel]) -> type[msgspec.Struct]:
    """The msgspec struct of an input model, derived from it (docs/methodology.md §6): the
    same field names, types, constraints and defaults; its ``__post_init__`` runs the
    checks msgspec cannot state (an ``AfterValidator``, the model's own ``after``
    validators, called on the struct) and, for a model whose ``_null_is_absent`` validator
    reads a JSON null as absent, gives such a field its default. Any other validator is a
    TypeError here, at import: the fast path cannot silently accept what the model rejects.
    """
    if model in _STRUCTS:
        return _STRUCTS[model]
    decorators = model.__pydantic_decorators__
    before = {n for n, d in decorators.model_validators.items() if d.info.mode == "before"}
    after = [d.func for d in decorators.model_validators.values() if d.info.mode == "after"]
    if (before - {"_null_is_absent"} or decorators.field_validators or decorators.validators
            or decorators.root_validators
            or any(d.info.mode not in ("before", "after")
                   for d in decorators.model_validators.values())):
        raise TypeError(f"{model.__name__} has a validator no msgspec struct can restate")
    null_is_absent = bool(before)
    fields: list[tuple[str, Any, Any]] = []
    checks: list[tuple[str, Check]] = []
    defaults: list[tuple[str, Callable[[], Any]]] = []
    for name, info in model.model_fields.items():
        tp, field_checks = _struct_type(info.annotation, info.metadata)
        checks.extend((name, check) for check in field_checks)
        if info.is_required():
            fields.append((name, tp, msgspec.NODEFAULT))
            continue
        factory = info.default_factory or (lambda default=info.default: default)
        if null_is_absent:
            tp = tp | None
            defaults.append((name, cast(Callable[[], Any], factory)))
        default = (msgspec.field(default_factory=info.default_factory)  # type: ignore[arg-type]
                   if info.default_factory else msgspec.field(default=info.default))
        fields.append((name, tp, default))

    def __post_init__(self: Any) -> None:
        for name, factory in defaults:
            if getattr(self, name) is None:
                setattr(self, name, factory())
        for name, check in checks:
            check(getattr(self, name))
        for validate in after:
            validate(self)

    namespace: dict[str, Any] = {
        "__doc__": f":class:`{model.__module__}.{model.__name__}`, derived by struct_of."}
    if defaults or checks or after:
        namespace["__post_init__"] = __post_init__
    struct = msgspec.defstruct(model.__name__, fields, module=__name__, kw_only=True,
                               gc=False, namespace=namespace)
    _STRUCTS[model] = struct
    return struct


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


Model = TypeVar("Model", bound=BaseModel)


class LazyRecords(Sequence[Model], Generic[Model]):
    """Validated records, each built as its pydantic model only when first asked for.

    Holds decoded structs (see :func:`decode_fast`) and models side by side; indexing or
    iterating returns models (built once, then kept). :func:`raw_records` gives the stored
    values themselves, for code that reads fields only (the frames are built from them). A
    subclass may hold its records elsewhere: it gives ``__len__``, ``_item_at`` (an index
    already checked to be in range) and ``raw``.
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

    @overload
    def __getitem__(self, index: int) -> Model: ...

    @overload
    def __getitem__(self, index: slice) -> list[Model]: ...

    def __getitem__(self, index: int | slice) -> Model | list[Model]:
        if isinstance(index, slice):
            return [self._item_at(i) for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"{type(self).__name__} index out of range")
        return self._item_at(index)

    def __iter__(self) -> Iterator[Model]:
        for index in range(len(self)):
            yield self._item_at(index)

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
