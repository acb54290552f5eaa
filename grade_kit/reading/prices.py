"""Price files: dollars per million tokens per model, in the shape of Inspect's
``--model-cost-config`` (docs/methodology.md §4 "Cost"), read as YAML (JSON is YAML).

A price file maps each model name to its prices::

    openai/gpt-4o:
      input: 2.50
      output: 10.00
      input_cache_write: 0
      input_cache_read: 1.25

Prices are an input, never built in: a model the file does not name has no computed cost.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from grade_kit.reading.io import describe_validation_error
from grade_kit.reading.parse import ParseError, loads_yaml
from grade_kit.schema import InputError, ModelPrice

MAX_PRICE_FILE_BYTES = 16 * 2**20
"""The largest price file read (a few thousand models is well under 1 MB)."""


@dataclass(frozen=True)
class Prices:
    """The prices of one price file: per model, its :class:`~grade_kit.schema.ModelPrice`.

    Attributes:
        models: Model name -> prices, as the file names them.
        source: Where they came from: the file's path, or ``<prices>`` for a mapping.
        sha256: The SHA-256 of the file's bytes (of the mapping's canonical JSON when given
            in memory): the provenance of every computed cost.
    """

    models: dict[str, ModelPrice]
    source: str
    sha256: str

    def provenance(self) -> dict[str, Any]:
        """What results.json records of these prices (``provenance.prices``)."""
        return {"source": self.source, "sha256": self.sha256, "models": sorted(self.models)}


def _lines_of_models(text: str) -> dict[str, int]:
    """The line (from 1) where each top-level model name is written, where it can be found."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return {}
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {str(key.value): key.start_mark.line + 1 for key, _ in node.value
            if isinstance(key, yaml.ScalarNode)}


def read_prices(source: Path | str | Mapping[str, Any] | Prices) -> Prices:
    """Read a price file (YAML or JSON) or a mapping of the same shape.

    Args:
        source: A path, a mapping ``{model: {input, output, input_cache_write,
            input_cache_read}}`` ($ per million tokens), or :class:`Prices` (returned as is).

    Raises:
        InputError: naming the file, the line of the model and the field of the first
            problem (a price that is not a number >= 0, a missing ``input`` or ``output``,
            a file that is not a mapping of models).
    """
    if isinstance(source, Prices):
        return source
    if isinstance(source, Mapping):
        data: Any = dict(source)
        where = "<prices>"
        digest = hashlib.sha256(json.dumps(data, sort_keys=True, default=str)
                                .encode("utf-8")).hexdigest()
        lines: dict[str, int] = {}
    else:
        path = Path(source)
        where = str(path)
        try:
            raw = path.read_bytes() if path.stat().st_size <= MAX_PRICE_FILE_BYTES else None
        except OSError as exc:
            raise InputError(f"{where}: the price file cannot be read: {exc.strerror}") from exc
        if raw is None:
            raise InputError(f"{where}: a price file is at most "
                             f"{MAX_PRICE_FILE_BYTES // 2**20} MiB")
        digest = hashlib.sha256(raw).hexdigest()
        try:
            text = raw.decode("utf-8")
            data = loads_yaml(text)
        except UnicodeDecodeError as exc:
            raise InputError(f"{where}: a price file is UTF-8 text") from exc
        except ParseError as exc:
            raise InputError(f"{where}: {exc}") from exc
        lines = _lines_of_models(text)
    if not isinstance(data, dict) or not data:
        raise InputError(f"{where}: a price file maps each model to its prices "
                         "(input, output, input_cache_write, input_cache_read: $ per million "
                         "tokens)")
    models: dict[str, ModelPrice] = {}
    for name, prices in data.items():
        line = f", line {lines[str(name)]}" if str(name) in lines else ""
        if not isinstance(name, str) or not name:
            raise InputError(f"{where}{line}: a model name is text, not {name!r}")
        try:
            models[name] = ModelPrice.model_validate(prices)
        except ValidationError as exc:
            field, message = describe_validation_error(exc)
            raise InputError(f"{where}{line}: model {name!r}"
                             f"{'' if field is None else f', field {field}'}: {message}"
                             ) from exc
    return Prices(models=models, source=where, sha256=digest)
