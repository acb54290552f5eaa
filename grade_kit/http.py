"""The HTTP client every responder, judge and grader shares: aiohttp, one keep-alive session
per event loop, one TLS context; every byte read from a peer bounded, redirects never followed,
and the API key never written (docs/methodology.md §4 "Fetching").

aiohttp rather than httpx on this path: fetching 2,000 streamed answers at concurrency 64
from the demo server, the fetch used 4.9 ms of client CPU per request with httpx (after
sharing one TLS context and declaring sniffio) and 3.1 ms with aiohttp, whose bare request
loop costs 1.35 ms; that is what lets a fetch keep 64 requests in flight on one core
(``make bench-fetch``).

Caps on what a peer sends (past one, the reply is cut there and :class:`ReplyTooLarge` says
which): :data:`MAX_HEADER_BYTES` per header line, :data:`MAX_BODY_BYTES` for a whole
non-streamed body (an answer, an error body, a judge's reply), :data:`MAX_LINE_BYTES` per
line of a stream (one server-sent event's line), :data:`MAX_STREAM_BYTES` for a whole
stream; a receipt keeps at most :data:`RECEIPT_BODY_CHARS` characters of body.
"""

from __future__ import annotations

import asyncio
import codecs
import functools
import math
import os
import ssl
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Mapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

import aiohttp

T = TypeVar("T")

TRANSPORT_ERRORS: tuple[type[BaseException], ...] = (aiohttp.ClientConnectionError,
                                                      aiohttp.ClientPayloadError)
"""Errors of the connection or the framing (never of the answer's content)."""

MAX_HEADER_BYTES = 8190
"""The longest header line (and status line) read from a peer; a longer one fails the reply."""
MAX_BODY_BYTES = 1 << 20
"""The most bytes read of a non-streamed body (1 MiB)."""
MAX_LINE_BYTES = 1 << 20
"""The most bytes of one line of a stream (1 MiB)."""
MAX_STREAM_BYTES = 16 << 20
"""The most bytes read of one streamed reply (16 MiB)."""
RECEIPT_BODY_CHARS = 10_000
"""The most characters of body a receipt (and the kept text of a failure) holds."""
REDACTED = "[redacted]"
"""What an API key's value is replaced with in everything grade_kit writes."""

RECEIPT_HEADERS = ("retry-after", "x-request-id", "content-type", "date", "location",
                   "x-ratelimit-limit-requests", "x-ratelimit-remaining-requests",
                   "x-ratelimit-reset-requests", "x-ratelimit-limit-tokens",
                   "x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens")
"""The headers a receipt keeps (rate-limit state, retry hints, request id, date, a
redirect's location)."""


class MissingKeyError(RuntimeError):
    """The environment variable named for the API key is not set."""


def request_headers(api_key_env: str | None) -> dict[str, str]:
    """JSON headers, with ``Authorization: Bearer <key>`` when ``api_key_env`` names an
    environment variable: the key is read at request time and never stored or written.

    Raises:
        MissingKeyError: when the named variable is not set.
    """
    headers = {"Content-Type": "application/json"}
    if api_key_env:
        key = os.environ.get(api_key_env)
        if not key:
            raise MissingKeyError(f"environment variable {api_key_env} is not set")
        headers["Authorization"] = f"Bearer {key}"
    return headers


def secret_values(*api_key_envs: str | None) -> tuple[str, ...]:
    """The values of the named environment variables that are set (the keys to redact)."""
    return tuple(v for v in (os.environ.get(name) for name in api_key_envs if name) if v)


def redact(value: T, secrets: Iterable[str]) -> T:
    """``value`` with every occurrence of each secret replaced by :data:`REDACTED`, in every
    string it holds (mapping keys included), however deep: what grade_kit writes of a peer's
    reply (receipt, headers, body, answer, verdict, cache entry) never holds the key, even
    when the peer echoes it."""
    words = sorted({s for s in secrets if s}, key=len, reverse=True)
    if not words:
        return value

    def clean(item: Any) -> Any:
        if isinstance(item, str):
            for word in words:
                if word in item:
                    item = item.replace(word, REDACTED)
            return item
        if isinstance(item, dict):
            return {clean(k): clean(v) for k, v in item.items()}
        if isinstance(item, list | tuple):
            return type(item)(clean(v) for v in item)
        return item

    out: T = clean(value)
    return out


def check_whole(name: str, value: object, low: int) -> None:
    """Refuse an option that is not a whole number of at least ``low`` (a bool is not).

    Raises:
        ValueError: naming the option and what it must be.
    """
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise ValueError(f"{name} must be a whole number of at least {low}, not {value!r}")


def check_positive(name: str, value: object) -> None:
    """Refuse an option that is not a finite number above 0 (a timeout, a rate).

    Raises:
        ValueError: naming the option and what it must be.
    """
    if (not isinstance(value, int | float) or isinstance(value, bool)
            or not math.isfinite(value) or value <= 0):
        raise ValueError(f"{name} must be a finite number above 0, not {value!r}")


def run_sync(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run the coroutine ``make()`` from synchronous code, also inside a running event loop
    (Jupyter's): it then runs on its own loop in a worker thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    result: dict[str, Any] = {}

    def work() -> None:
        try:
            result["value"] = asyncio.run(make())
        except BaseException as exc:  # re-raised in the caller's thread
            result["error"] = exc

    thread = threading.Thread(target=work, name="grade-kit-async")
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    value: T = result["value"]
    return value


class ReplyTooLarge(ValueError):
    """A peer sent more than a cap allows; ``kept`` is what was read before the cap."""

    def __init__(self, message: str, kept: str) -> None:
        super().__init__(message)
        self.kept = kept


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One verifying TLS context for every session (loading the CA store costs ~30 ms)."""
    return ssl.create_default_context()


class Sessions:
    """One keep-alive :class:`aiohttp.ClientSession` per event loop (a notebook's loop and
    the worker loops of :func:`run_sync` each get their own)."""

    def __init__(self) -> None:
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop,
                                                 aiohttp.ClientSession] = (
            weakref.WeakKeyDictionary())

    def get(self) -> aiohttp.ClientSession:
        """This loop's session (created on first use)."""
        loop = asyncio.get_running_loop()
        session = self._by_loop.get(loop)
        if session is None or session.closed:
            connector = aiohttp.TCPConnector(limit=0, ssl=_tls_context())
            session = aiohttp.ClientSession(
                connector=connector, timeout=aiohttp.ClientTimeout(total=None),
                auto_decompress=True, trust_env=True, max_line_size=MAX_HEADER_BYTES,
                max_field_size=MAX_HEADER_BYTES)
            self._by_loop[loop] = session
        return session

    async def aclose(self) -> None:
        """Close this loop's session (the fetch calls it when done)."""
        loop = asyncio.get_running_loop()
        session = self._by_loop.pop(loop, None)
        if session is not None and not session.closed:
            await session.close()


class Reply:
    """A streamed reply: status, headers, and its body as text lines or all at once, each
    read within its cap (:class:`ReplyTooLarge` past it)."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response
        self.status = response.status
        self.headers: Mapping[str, str] = response.headers
        self.received_any = False
        """Whether any body byte arrived (a transport error after that is never retried)."""
        self.raw: list[str] = []
        """The first :data:`RECEIPT_BODY_CHARS` characters of the body as read (for a
        receipt of a malformed or cut stream)."""
        self._raw_chars = 0

    def _keep(self, text: str) -> None:
        if self._raw_chars < RECEIPT_BODY_CHARS:
            piece = text[:RECEIPT_BODY_CHARS - self._raw_chars]
            self.raw.append(piece)
            self._raw_chars += len(piece)

    @property
    def head(self) -> str:
        """The first characters of the body read so far (at most a receipt's)."""
        return "".join(self.raw)

    async def text(self, limit: int = MAX_BODY_BYTES) -> str:
        """The whole body, decoded as UTF-8 (undecodable bytes replaced).

        Raises:
            ReplyTooLarge: after ``limit`` bytes (the connection is closed, not drained).
        """
        parts: list[bytes] = []
        size = 0
        async for data in self._response.content.iter_chunked(64 * 1024):
            self.received_any = True
            size += len(data)
            if size > limit:
                parts.append(data[:max(0, limit - (size - len(data)))])
                kept = b"".join(parts).decode("utf-8", "replace")
                self._keep(kept)
                self._response.close()
                raise ReplyTooLarge(f"the reply body is larger than {limit:,} bytes",
                                    kept[:RECEIPT_BODY_CHARS])
            parts.append(data)
        text = b"".join(parts).decode("utf-8", "replace")
        self._keep(text)
        return text

    async def lines(self, max_line: int = MAX_LINE_BYTES,
                    max_total: int = MAX_STREAM_BYTES) -> AsyncIterator[str]:
        """The body's lines as they arrive (``\r\n`` or ``\n``; UTF-8 split across reads
        decoded whole), each at most ``max_line`` bytes, all at most ``max_total``.

        Raises:
            ReplyTooLarge: past either cap (the connection is closed, not drained).
        """
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        pending = ""
        total = 0
        async for data in self._response.content.iter_any():
            self.received_any = True
            total += len(data)
            text = decoder.decode(data)
            self._keep(text)
            if total > max_total:
                self._response.close()
                raise ReplyTooLarge(f"the stream is larger than {max_total:,} bytes",
                                    self.head)
            pending += text
            if "\n" not in pending:
                if len(pending) > max_line:
                    self._response.close()
                    raise ReplyTooLarge(f"a stream line is longer than {max_line:,} bytes",
                                        self.head)
                continue
            *complete, pending = pending.split("\n")
            for line in complete:
                if len(line) > max_line:
                    self._response.close()
                    raise ReplyTooLarge(f"a stream line is longer than {max_line:,} bytes",
                                        self.head)
                yield line.removesuffix("\r")
        pending += decoder.decode(b"", final=True)
        if pending:
            yield pending.removesuffix("\r")


@asynccontextmanager
async def post(session: aiohttp.ClientSession, url: str, *, json: Any,
               headers: Mapping[str, str]) -> AsyncIterator[Reply]:
    """POST ``json`` and stream the reply. A redirect is never followed: its 3xx reply is
    the reply (the prompt is never re-sent elsewhere, nor turned into a GET)."""
    async with session.post(url, json=json, headers=dict(headers),
                            allow_redirects=False) as response:
        yield Reply(response)


def endpoint_offset(headers: Mapping[str, str]) -> float | None:
    """The endpoint's clock minus ours, in seconds, from a reply's ``Date`` header (whole
    seconds, so the estimate is good to about 1 s); None without a readable header."""
    header = headers.get("date") or headers.get("Date")
    if not header:
        return None
    try:
        theirs = parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return None
    if theirs.tzinfo is None:
        return None
    return (theirs - datetime.now(UTC)).total_seconds()


def receipt(status: int | None, headers: Mapping[str, str], raw: str,
            why: str | None = None) -> dict[str, Any]:
    """The original receipt of a refusal or failure: status, the headers that matter (each
    value cut to 1,000 characters), the body's first :data:`RECEIPT_BODY_CHARS` characters,
    and, when given, why the reply failed."""
    out: dict[str, Any] = {
        "status": status, "body": raw[:RECEIPT_BODY_CHARS],
        "headers": {k: v[:1_000] for k, v in headers.items()
                    if k.lower() in RECEIPT_HEADERS}}
    if why is not None:
        out["failure"] = why
    return out
