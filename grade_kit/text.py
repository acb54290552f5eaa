"""The one text normaliser, tokeniser and number parser that every matcher shares.

docs/methodology.md §3 "Text": Unicode NFKC, then Python's ``str.casefold``; tokens are runs of
digits with an optional decimal part, or runs of letters (``[0-9]+(?:\\.[0-9]+)?|[^\\W\\d_]+``).
Everything else separates tokens. A text is *empty* when it has no token.

The normalised form of a text (``norm``) is its tokens joined by single spaces, so that "a
contiguous run of tokens" becomes a substring test on space-padded ``norm`` strings
(:func:`contains_run`), which vectorises over a frame column.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import polars as pl

from grade_kit._chunks import in_pieces

TOKEN_PATTERN = re.compile(r"[0-9]+(?:\.[0-9]+)?|[^\W\d_]+")
"""docs/methodology.md §3: digits with an optional decimal part, or letters."""

_NUMERIC_STRING = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


@lru_cache(maxsize=1_000_000)
def tokenize(text: str) -> tuple[str, ...]:
    """Tokens of ``text`` after NFKC and casefold (docs/methodology.md §3 "Text").

    Args:
        text: Any string.

    Returns:
        The tokens in order; an empty tuple when the text has none.

    Example:
        >>> tokenize("Oct. cancellations: 18.4% (2.6x Sept)")
        ('oct', 'cancellations', '18.4', '2.6', 'x', 'sept')
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    return tuple(TOKEN_PATTERN.findall(folded))


def normalize(text: str) -> str:
    """The normalised form of ``text``: its tokens joined by single spaces ("" when empty)."""
    return " ".join(tokenize(text))


ASCII_TOKEN_PATTERN = r"[0-9]+(?:\.[0-9]+)?|[a-z]+"
r""":data:`TOKEN_PATTERN` on casefolded ASCII text: NFKC leaves ASCII unchanged, casefold is
ASCII lower-casing there, and ``[^\W\d_]`` is ``[a-z]``; so on ASCII strings this pattern
gives exactly Python's tokens."""


def normalize_column(texts: pl.Series) -> pl.Series:
    """:func:`normalize` of every string of ``texts``, vectorised: ASCII strings (nearly all
    of them) are lower-cased and tokenised by polars with :data:`ASCII_TOKEN_PATTERN`, which
    is the same rule there; every other distinct string goes through :func:`normalize`
    itself. The result equals ``[normalize(t) for t in texts]`` (a property test checks it).

    Args:
        texts: A string series (no nulls).

    Returns:
        The normalised forms, named ``norm``.
    """
    if texts.is_empty():
        return pl.Series("norm", [], dtype=pl.String)
    # In chunks, so that polars tokenises on every thread (docs/scaling.md history).
    frame = in_pieces(pl.DataFrame({"text": texts.cast(pl.String)}))
    fast = pl.col("text").str.to_lowercase().str.extract_all(ASCII_TOKEN_PATTERN).list.join(" ")
    out = frame.select(fast.alias("norm"), non_ascii=pl.col("text").str.contains(r"[^\x00-\x7f]"))
    non_ascii = out.get_column("non_ascii")
    if not non_ascii.any():
        return out.get_column("norm")
    others = frame.get_column("text").filter(non_ascii).unique()
    mapped = pl.DataFrame({"text": others, "slow": [normalize(t) for t in others]},
                          schema={"text": pl.String, "slow": pl.String})
    slow = frame.select("text").join(mapped, on="text", how="left",
                                     maintain_order="left").get_column("slow")
    return out.select(pl.when(pl.col("non_ascii")).then(slow).otherwise(pl.col("norm"))
                      .alias("norm")).get_column("norm")


def padded(norm: str) -> str:
    """``norm`` with a space either side, so a token run is a plain substring test."""
    return f" {norm} "


def contains_run(haystack_norm: str, needle_norm: str) -> bool:
    """Whether the tokens of ``needle_norm`` appear as a contiguous run in ``haystack_norm``.

    Whole tokens only: "2.6" is not found in "12.6". An empty needle is never found.
    """
    if not needle_norm:
        return False
    return padded(needle_norm) in padded(haystack_norm)


def normalize_value(text: str) -> str:
    """String-fact normalisation (docs/methodology.md §3 "Grounding accuracy"): NFKC, strip,
    casefold."""
    return unicodedata.normalize("NFKC", text).strip().casefold()


def parse_number(value: object) -> float | None:
    """Parse a reported metric as a number (docs/methodology.md §3 "Grounding accuracy").

    JSON numbers count (booleans do not); NaN and infinities are unparsable. Strings count when
    they are numeric after stripping blanks and dropping thousands commas; a trailing ``%``
    divides by 100 ("18.4%" -> 0.184).

    Args:
        value: A decoded JSON value.

    Returns:
        The number as a float, or None when it cannot be parsed.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError:
            return None
        return number if math.isfinite(number) else None
    if not isinstance(value, str):
        return None
    text = unicodedata.normalize("NFKC", value).strip().replace(",", "")
    scale = 1.0
    if text.endswith("%"):
        text = text[:-1].rstrip()
        scale = 100.0
    if not _NUMERIC_STRING.fullmatch(text):
        return None
    number = float(text)
    if not math.isfinite(number):
        return None
    return number / scale


ASKING_PHRASES: tuple[str, ...] = (
    "could you", "can you", "would you", "do you mean", "did you mean", "do you want",
    "please provide", "please clarify", "please specify", "please confirm", "please share",
    "please let me know", "let me know which", "i need more information",
    "need more information from you", "which one do you",
)
"""Phrases that ask the user for more information (rule 5), matched as token runs."""

_ASKING = [padded(normalize(p)) for p in ASKING_PHRASES]


def only_asks(response: Mapping[str, Any]) -> bool:
    """Whether an answer (a response mapping) only asks the user for more information: no
    non-empty key finding, and its text or a finding contains an asking phrase (rule 5).
    The fetch layer sends a task's follow-up protocol message then; the rule grader grades
    such an answer by :func:`asks_for_more_information` on its normalised texts."""
    findings = [str(f) for f in response.get("key_findings") or []]
    if any(normalize(f) for f in findings):
        return False
    texts = [*findings, str(response.get("text") or "")]
    return any(p in padded(normalize(t)) for t in texts for p in _ASKING)


def asks_for_more_information(norms: pl.Expr) -> pl.Expr:
    """Whether a normalised text (``norm``) contains one of :data:`ASKING_PHRASES`."""
    padded_norm = pl.lit(" ") + norms + pl.lit(" ")
    return pl.any_horizontal([padded_norm.str.contains(p, literal=True) for p in _ASKING])


BRIEF_CHARS = 200
"""How much of a foreign text (a log's error, a tool's stderr) :func:`brief` keeps."""


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
"""A Python object's address in its ``repr`` (``<Future at 0x7f3a1c2b ...>``)."""


def brief(text: str, limit: int = BRIEF_CHARS) -> str:
    r"""A foreign text as one line for a page or a warning: its first non-blank line, cut at
    ``limit`` characters (default :data:`BRIEF_CHARS`), and what was left out (``… (+12
    lines)``). A text of one line within the limit comes back as it is; the full text stays
    where it was read from (the run record, the log).

    A line break written as the two characters ``\n`` (a message that went through
    ``repr``) is a line break, and a Python object's address (``<Future at 0x7f3a...>``) is
    left out: neither tells a reader anything.

    >>> brief("RuntimeError: no services started\nstderr: pull access denied\nexit 1")
    'RuntimeError: no services started … (+2 lines)'
    >>> brief("RetryError(<Future at 0x7f3a1c2b state=finished raised APIError>)\\nretry 3")
    'RetryError(<Future state=finished raised APIError>) … (+1 line)'
    """
    text = _ADDRESS.sub("", text.replace("\\n", "\n"))
    kept = [line.strip() for line in text.splitlines() if line.strip()]
    if not kept:
        return text.strip()
    first, rest = kept[0], len(kept) - 1
    left = []
    if len(first) > limit:
        head = first[:limit]
        if first[limit] != " " and " " in head:  # not within a word
            head = head.rsplit(" ", 1)[0]
        left.append(f"+{len(first) - len(head):,} characters")
        first = head
    if rest:
        left.append(f"+{rest:,} line{'' if rest == 1 else 's'}")
    return f"{first} … ({', '.join(left)})" if left else first


_INVISIBLE = {code: (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
              for code in (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0), 0x061C, 0x200E,
                           0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))}
"""Characters that change how text shows rather than show (C0 and C1 controls, DEL, the
bidirectional marks, embeddings, overrides and isolates), each as its escape: NUL, BEL, ESC
(ANSI and OSC sequences) and U+202E never reach a terminal or a Markdown file raw."""

_VISIBLE = str.maketrans({k: v for k, v in _INVISIBLE.items() if chr(k) not in "\t\n\r"})


def visible(text: str) -> str:
    """``text`` with every control and bidirectional character but tab, line feed and
    carriage return written as its escape (``\\x1b``, ``\\u202e``): what a command prints
    (:func:`grade_kit.cli.main` passes all its output through it)."""
    return text.translate(_VISIBLE)


_ESCAPES = str.maketrans({**_INVISIBLE, "|": "\\|", "<": "&lt;", ">": "&gt;", "&": "&amp;",
                          "\\": "\\\\", "\n": " ", "\r": " ", "\t": " ", "`": "\\`",
                          "[": "\\[", "]": "\\]"})


def md_cell(value: Any, digits: int = 3) -> str:
    """A value as one safe Markdown table cell: numbers to ``digits`` places, null as —,
    text with ``|``, backslash, backtick, brackets (no link or image can be made) and HTML
    escaped and line breaks made spaces."""
    if type(value) is str:
        return value.translate(_ESCAPES)
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    if isinstance(value, int):
        return str(value)
    return str(value).translate(_ESCAPES)
