"""Hostile HTTP peers on 127.0.0.1 for the tests: a real socket server whose replies are raw
bytes written by a test's coroutine, so a peer can send what no well-behaved server would
(oversized headers, endless bodies, broken streams, redirects)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def _kernel_max(name: str, fallback: int) -> int:
    """The largest buffer the kernel may grow a TCP socket's ``name`` (``tcp_rmem`` or
    ``tcp_wmem``) to by autotuning: the third field of its ``/proc`` setting."""
    try:
        return int(Path("/proc/sys/net/ipv4", name).read_text().split()[2])
    except (OSError, IndexError, ValueError):
        return fallback


BUFFERED = _kernel_max("tcp_rmem", 64 << 20) + _kernel_max("tcp_wmem", 64 << 20) + (1 << 20)
"""Bytes a peer can push into socket buffers before it sees that a client stopped reading:
the client's receive buffer and the peer's send buffer at their kernel maxima (this
machine's facts: 36 MiB on this one), plus a MiB of pieces in
flight. A client that reads a body whole is still caught: its peer sends gigabytes."""


Reply = Callable[["Request", asyncio.StreamWriter], Awaitable[None]]
"""Writes one reply (status line, headers, body) for a request."""


@dataclass
class Request:
    """One request a peer received: its path, headers (lower-case names) and JSON body."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    index: int


@dataclass
class Peer:
    """A running peer: its base URL, every request it got, and bytes it managed to send."""

    url: str
    requests: list[Request] = field(default_factory=list)
    sent: list[int] = field(default_factory=list)


def head(status: int, headers: dict[str, str] | None = None,
         content_type: str = "application/json") -> bytes:
    """A status line and headers (no Content-Length: the body ends when the connection
    closes, unless a header says otherwise)."""
    lines = [f"HTTP/1.1 {status} X", f"Content-Type: {content_type}", "Connection: close",
             *(f"{k}: {v}" for k, v in (headers or {}).items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def sse(*chunks: Any, done: bool = True) -> bytes:
    """Server-sent ``data:`` events of the given chunks (JSON unless bytes or str)."""
    out = b""
    for chunk in chunks:
        data = chunk if isinstance(chunk, bytes) else (
            chunk.encode() if isinstance(chunk, str) else json.dumps(chunk).encode())
        out += b"data: " + data + b"\n\n"
    return out + (b"data: [DONE]\n\n" if done else b"")


def delta(content: str | None = None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    """A chat-completions chunk with one choice's delta."""
    d: dict[str, Any] = {} if content is None else {"content": content}
    d.update(extra)
    return {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [{"index": 0, "delta": d, "finish_reason": finish}]}


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str, dict[str, str], Any]:
    first = (await reader.readline()).decode("latin-1").split()
    headers: dict[str, str] = {}
    while True:
        line = (await reader.readline()).decode("latin-1")
        if line in ("\r\n", "\n", ""):
            break
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    raw = await reader.readexactly(int(headers.get("content-length", "0") or 0))
    try:
        body = json.loads(raw) if raw else None
    except ValueError:
        body = raw
    return (first[0] if first else ""), (first[1] if len(first) > 1 else ""), headers, body


@contextmanager
def peer(reply: Reply) -> Iterator[Peer]:
    """Serve ``reply`` on a free port of 127.0.0.1 in a background thread."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    state: dict[str, Any] = {}

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            method, path, headers, body = await _read_request(reader)
            request = Request(method, path, headers, body, len(state["peer"].requests))
            state["peer"].requests.append(request)
            await reply(request, writer)
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def start() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        state["server"] = server
        state["peer"] = Peer(url=f"http://127.0.0.1:{port}/v1")
        ready.set()

    thread = threading.Thread(target=lambda: (loop.run_until_complete(start()),
                                              loop.run_forever()), daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield state["peer"]
    finally:
        loop.call_soon_threadsafe(state["server"].close)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


async def endless(writer: asyncio.StreamWriter, piece: bytes, sent: list[int]) -> None:
    """Write ``piece`` until the client goes away; the bytes that went out are appended to
    ``sent`` (what a bounded client let through)."""
    total = 0
    try:
        while total < 4 << 30:
            writer.write(piece)
            await writer.drain()
            total += len(piece)
    except (ConnectionError, RuntimeError):
        pass
    finally:
        sent.append(total)
