"""Safe parsing of untrusted text: the one place JSON, YAML and file bytes are read.

Every input file goes through here, so each hostile shape fails the same way, as a
:class:`ParseError` with a message fit for a reject line (docs/methodology.md §6):

- bytes that are not UTF-8 fail only their own line (:func:`read_lines`), kept with the bad
  bytes escaped; a UTF-8 byte-order mark at a file's start is accepted;
- nesting deeper than :data:`MAX_DEPTH` fails before any recursive parser sees it;
- a key repeated in a JSON object or a YAML mapping fails, naming the key;
- YAML is loaded with the safe constructor, and a document whose aliases would expand to more
  than :data:`MAX_YAML_NODES` nodes (an alias bomb) fails in milliseconds, before expansion.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import yaml

MAX_DEPTH = 64
"""The deepest nesting of arrays and objects accepted in one record."""

MAX_YAML_NODES = 100_000
"""The most nodes a YAML document may expand to, counting every alias use in full."""

MAX_LINE_BYTES = 16 * 2**20
"""The longest line of a records file (runs, judgements, grades), in bytes: a longer line is
rejected before it is decoded, and never held whole (docs/methodology.md §6)."""

BOM = "\ufeff"

_SURROGATE = re.compile(r"[\ud800-\udfff]|\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


class ParseError(ValueError):
    """Text that cannot be read as the format it should be; the message names the problem."""


class Undecodable(str):
    """A line that is not read: its bytes are not UTF-8 (the text with the bad bytes
    escaped), or it is longer than :data:`MAX_LINE_BYTES` (its first 200 bytes); and why."""

    error: str


class _OverLong(bytes):
    """The start of a line past :data:`MAX_LINE_BYTES`, and the line's length."""

    size: int


def _bounded_lines(handle: BinaryIO) -> Iterator[bytes]:
    """The lines of ``handle``, none read whole past :data:`MAX_LINE_BYTES`: such a line
    comes back as an :class:`_OverLong` of its first 200 bytes (the rest skipped a MiB at a
    time)."""
    while raw := handle.readline(MAX_LINE_BYTES + 1):
        if len(raw) <= MAX_LINE_BYTES or raw.endswith(b"\n"):
            yield raw
            continue
        size = len(raw)
        while rest := handle.readline(1 << 20):
            size += len(rest)
            if rest.endswith(b"\n"):
                break
        line = _OverLong(raw[:200])
        line.size = size
        yield line


def _decode_line(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = Undecodable(raw.decode("utf-8", errors="backslashreplace"))
        line.error = f"invalid UTF-8 at byte {exc.start + 1} of the line"
        return line


def read_lines(path: Path) -> Iterator[tuple[int, str]]:
    """The non-blank lines of a file, numbered from 1, each decoded on its own.

    A line that is not UTF-8 comes back as :class:`Undecodable` (the others go on); a UTF-8
    byte-order mark at the start of the file is dropped.
    """
    with path.open("rb") as handle:
        yield from numbered_lines(_bounded_lines(handle))


def numbered_lines(raw_lines: Iterable[bytes], first: int = 1) -> Iterator[tuple[int, str]]:
    """:func:`read_lines` of a file's lines given as bytes (each with or without its
    ``\\n``), the first numbered ``first``: a byte-order mark is dropped from line 1 only."""
    for number, raw in enumerate(raw_lines, start=first):
        if isinstance(raw, _OverLong):
            line = Undecodable(raw.decode("utf-8", errors="backslashreplace") + " ...")
            line.error = (f"the line is {raw.size:,} bytes, longer than the "
                          f"{MAX_LINE_BYTES:,} a record may be: not read")
            yield number, line
            continue
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        raw = raw.rstrip(b"\n").rstrip(b"\r")
        if raw.strip():
            yield number, _decode_line(raw)


def read_text(path: Path) -> str:
    """A whole file as UTF-8 text (a byte-order mark dropped).

    Raises:
        ParseError: when the bytes are not UTF-8 (naming the byte).
        OSError: when the file cannot be read.
    """
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParseError(f"invalid UTF-8 at byte {exc.start + 1}") from exc
    return text.removeprefix(BOM)


def _check_depth(text: str, limit: int = MAX_DEPTH) -> None:
    """Fail when brackets outside strings nest deeper than ``limit`` (no recursion)."""
    if text.count("[") + text.count("{") <= limit:
        return
    depth = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                raise ParseError(f"nesting deeper than {limit} levels")
        elif char in "]}":
            depth -= 1


def _no_repeated_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ParseError(f"key {key!r} appears twice in one object")
        out[key] = value
    return out


_STRICT_DECODER = json.JSONDecoder(object_pairs_hook=_no_repeated_keys)
"""One decoder for every line (``json.loads`` with a hook builds a new one per call)."""


def loads_json(text: str) -> Any:
    """Parse JSON, refusing deep nesting and repeated keys.

    Raises:
        ParseError: ``malformed JSON: ...`` with the column, or the nesting or key problem.
    """
    if isinstance(text, Undecodable):
        raise ParseError(text.error)
    _check_depth(text)
    try:
        if text.startswith("\ufeff"):  # as json.loads says it
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)",
                                       text, 0)
        data = _STRICT_DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"malformed JSON: {exc.msg} (column {exc.colno})") from exc
    except ValueError as exc:  # Python's guard on integers of more than 4,300 digits
        raise ParseError(_too_long_number(exc)) from exc
    except RecursionError as exc:  # pragma: no cover - _check_depth stops this first
        raise ParseError(f"nesting deeper than {MAX_DEPTH} levels") from exc
    _check_text(text, data)
    return data


def _too_long_number(exc: ValueError) -> str:
    """The reject of a number Python will not read (an integer of more than
    ``sys.get_int_max_str_digits()`` digits, 4,300 by default)."""
    return (f"a number too long to read (more than {sys.get_int_max_str_digits():,} digits)"
            if "digits" in str(exc) else f"unreadable value: {exc}")


def _check_text(text: str | None, data: Any) -> None:
    """Fail when parsed strings hold a lone surrogate (an unpaired ``\\ud800``-``\\udfff``):
    it is not text and could not be written out again."""
    # an ASCII line can hold a surrogate only as a JSON escape, so an ASCII line without any
    # backslash-u escape needs no search (str.isascii is a flag lookup in CPython)
    if text is None or (("\\u" in text or not text.isascii()) and _SURROGATE.search(text)):
        try:
            json.dumps(data, ensure_ascii=False, default=str).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ParseError("a string holds a lone surrogate (\\ud800-\\udfff), which is "
                             "not text") from exc


class _StrictLoader(yaml.SafeLoader):
    """The safe loader, refusing repeated mapping keys."""

    def construct_mapping(self, node: yaml.MappingNode,
                          deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)
            try:
                repeated = key in seen
                seen.add(key)
            except TypeError:
                continue  # an unhashable key: the constructor rejects it below
            if repeated:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} appears twice in one mapping",
                    key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


def _expanded_size(root: yaml.Node, limit: int) -> int:
    """Nodes the document expands to, every alias counted in full; stops past ``limit``.

    Iterative and memoised by node identity, so the work is linear in the composed graph
    however many times an anchor is reused.
    """
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    depth_of: dict[int, int] = {id(root): 1}
    while stack:
        node, done = stack.pop()
        key = id(node)
        if key in sizes:
            continue
        children: list[yaml.Node] = []
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [part for pair in node.value for part in pair]
        if done or not children:
            total = 1 + sum(sizes[id(c)] for c in children)
            if total > limit:
                raise ParseError(f"YAML expands to more than {limit:,} nodes "
                                 "(an alias bomb?)")
            sizes[key] = total
            continue
        depth = depth_of[key]
        if depth > MAX_DEPTH:
            raise ParseError(f"nesting deeper than {MAX_DEPTH} levels")
        stack.append((node, True))
        for child in children:
            if id(child) not in sizes:
                depth_of.setdefault(id(child), depth + 1)
                stack.append((child, False))
    return sizes[id(root)]


def loads_yaml(text: str) -> Any:
    """Parse one YAML document safely: no arbitrary objects, no repeated keys, no alias bomb,
    no nesting deeper than :data:`MAX_DEPTH`.

    Raises:
        ParseError: ``malformed YAML: ...``, or the key, size or nesting problem.
    """
    loader = _StrictLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded_size(node, MAX_YAML_NODES)
        data = loader.construct_document(node)
        _check_text(None, data)  # YAML escapes differ from JSON's: always check
        return data
    except yaml.YAMLError as exc:
        raise ParseError(f"malformed YAML: {exc}") from exc
    except ValueError as exc:  # Python's guard on integers of more than 4,300 digits
        raise ParseError(_too_long_number(exc)) from exc
    except RecursionError as exc:
        raise ParseError(f"nesting deeper than {MAX_DEPTH} levels") from exc
    finally:
        loader.dispose()
