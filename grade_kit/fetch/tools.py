"""The pack's tools an agent loop offers a model: SQL over the pack's CSVs (polars' SQL engine).

Each table is a CSV of the pack folder, named by its file stem (``sessions.csv`` -> sessions).
A query's result comes back as CSV text (at most :data:`MAX_ROWS` rows); an error comes back as
its message, so the model can correct itself. Nothing outside the pack folder is read.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import polars as pl

__all__ = ["MAX_ROWS", "SQL_TOOL", "PackTools"]

MAX_ROWS = 200

SQL_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "sql",
        "description": "Run one SQL query over the pack's tables (one per CSV file, named by "
                       "its file name without .csv); returns CSV text.",
        "parameters": {"type": "object",
                       "properties": {"query": {"type": "string"}},
                       "required": ["query"]},
    },
}
"""The tool definition sent to an OpenAI-compatible endpoint."""


class PackTools:
    """Tools over one pack folder."""

    def __init__(self, folder: Path | str) -> None:
        self.folder = Path(folder)
        self._context: pl.SQLContext[Any] | None = None
        self._lock = threading.Lock()

    def _sql_context(self) -> pl.SQLContext[Any]:
        with self._lock:  # read the CSVs once, however many calls arrive together
            if self._context is None:
                frames = {p.stem: pl.read_csv(p, infer_schema_length=10_000)
                          for p in sorted(self.folder.glob("*.csv"))}
                self._context = pl.SQLContext(frames=frames, eager=True)
            return self._context

    def call(self, name: str, arguments: str) -> str:
        """Run tool ``name`` with its JSON ``arguments``; the result (or error) as text."""
        try:
            args = json.loads(arguments or "{}")
        except json.JSONDecodeError as exc:
            return f"error: arguments are not JSON: {exc.msg}"
        if name != "sql" or not isinstance(args, dict) or not isinstance(args.get("query"), str):
            return f"error: unknown tool or arguments: {name}({arguments[:200]})"
        try:
            result = self._sql_context().execute(args["query"], eager=True)
        except Exception as exc:  # the model sees the error and may try again
            return f"error: {type(exc).__name__}: {exc}"[:2_000]
        return str(result.head(MAX_ROWS).write_csv())
