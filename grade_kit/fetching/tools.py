"""The pack's tools an agent loop offers a model: read-only SQL over the pack's CSVs, in a
sandbox (docs/methodology.md §4 "Fetching").

Each table is a CSV of the pack folder, named by its file stem (``sessions.csv`` -> sessions),
loaded once into an in-memory DuckDB database that is then closed to the outside:

- **nothing outside the pack's tables is reachable**: file system access is switched off
  (no ``read_csv('/any/path')``, no ``COPY``, ``ATTACH``, ``glob``), so are extension loading
  and the scan of Python variables, and the configuration is locked so no query can switch
  them back; only one ``SELECT`` statement (``WITH`` included) is run, never a change;
- **every query is bounded**: :data:`MEMORY_LIMIT` of memory on one thread, no spilling to
  disk, :data:`QUERY_SECONDS` of time (then interrupted), :data:`MAX_ROWS` rows returned and
  :data:`MAX_RESULT_CHARS` characters of result; every value is cut inside DuckDB to
  :data:`MAX_VALUE_CHARS` + 1 characters before it reaches Python, and a result holding a
  longer value fails the call (the model is told), never the process;
- **no setting or path of the machine is in a result or an error**: the settings that name a
  folder (the secrets folder, the home, the extension and temporary folders) are set to no
  folder of the machine before the configuration is locked, and every error message has the
  machine's folders (the home, the working folder, the temporary folder, the pack's folder,
  Python's prefix) replaced by ``<folder>`` before the model sees it (:func:`_scrubbed`);
- **a query ends with its run**: :meth:`ToolCall.interrupt` stops it (the fetch calls it
  when the run times out or is cancelled).

A query's result comes back as CSV text; an error comes back as its message (cut to 2,000
characters), so the model can correct itself.
"""

from __future__ import annotations

import csv
import io
import json
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

MAX_ROWS = 200
"""The most rows a query returns to the model."""
MAX_RESULT_CHARS = 20_000
"""The most characters of CSV a query returns to the model."""
MAX_VALUE_CHARS = 2_000
"""The most characters of one value a query returns: each value is cut to one more inside
DuckDB, so no larger value is ever made in Python; a longer one fails the call."""
MEMORY_LIMIT = "256MB"
"""DuckDB's memory limit for the pack's database (every query shares it)."""
QUERY_SECONDS = 10.0
"""How long one query may run before it is interrupted."""

SQL_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "sql",
        "description": "Run one read-only SQL SELECT over the pack's tables (one per CSV file, "
                       "named by its file name without .csv); returns CSV text "
                       f"(at most {MAX_ROWS} rows).",
        "parameters": {"type": "object",
                       "properties": {"query": {"type": "string"}},
                       "required": ["query"]},
    },
}
"""The tool definition sent to an OpenAI-compatible endpoint."""


def _sandbox(folder: Path) -> duckdb.DuckDBPyConnection:
    """An in-memory database holding the folder's CSVs as tables, closed to the outside."""
    con = duckdb.connect(":memory:", config={
        "threads": 1, "memory_limit": MEMORY_LIMIT, "temp_directory": "",
        "secret_directory": "none", "home_directory": "", "extension_directory": "none",
        "allow_persistent_secrets": False,
        "python_enable_replacements": False, "autoinstall_known_extensions": False,
        "autoload_known_extensions": False})
    for path in sorted(folder.glob("*.csv")):
        frame = pl.read_csv(path, infer_schema_length=10_000)
        con.register("_load", frame.to_arrow())
        con.execute(f'CREATE TABLE "{path.stem.replace(chr(34), chr(34) * 2)}" AS '
                    "SELECT * FROM _load")
        con.unregister("_load")
    con.execute("SET enable_external_access = false")
    con.execute("SET allow_community_extensions = false")
    con.execute("SET lock_configuration = true")
    return con


def _machine_folders(pack: Path) -> list[str]:
    """The folders of this machine an error could name, longest first (so a folder inside
    another is replaced whole)."""
    found = {str(p) for p in (Path.home(), Path.cwd(), Path(tempfile.gettempdir()),
                              pack.resolve(), Path(sys.prefix), Path(sys.base_prefix))
             if str(p) not in ("/", "")}
    return sorted(found, key=len, reverse=True)


def _scrubbed(message: str, folders: list[str]) -> str:
    """``message`` with every folder of ``folders`` named as ``<folder>``."""
    for folder in folders:
        message = message.replace(folder, "<folder>")
    return message


class ToolCall:
    """One call of a pack's tool, to run in a worker thread (:meth:`run`) and to stop from
    another (:meth:`interrupt`: the fetch stops it when its run ends)."""

    def __init__(self, tools: PackTools, name: str, arguments: str) -> None:
        self.tools, self.name, self.arguments = tools, name, arguments
        self._cursor: duckdb.DuckDBPyConnection | None = None
        self._stopped = False
        self._lock = threading.Lock()

    def interrupt(self) -> None:
        """Stop the query if it is under way, or before it starts."""
        with self._lock:
            self._stopped = True
            if self._cursor is not None:
                self._cursor.interrupt()

    def run(self) -> str:
        """The result (or error) as text."""
        try:
            args = json.loads(self.arguments or "{}")
        except json.JSONDecodeError as exc:
            return f"error: arguments are not JSON: {exc.msg}"
        if (self.name != "sql" or not isinstance(args, dict)
                or not isinstance(args.get("query"), str)):
            return f"error: unknown tool or arguments: {self.name}({self.arguments[:200]})"
        query = args["query"]
        try:
            statements = duckdb.extract_statements(query)
        except duckdb.Error as exc:
            return self.tools.error_text(exc)
        if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
            return "error: only one read-only SELECT statement is run"
        # Every value cut inside DuckDB (one character over the bound, to tell a longer one)
        # and at most MAX_ROWS rows: nothing larger is ever made in Python. The query keeps
        # lines of its own (a trailing comment ends at its line).
        body = statements[0].query.strip().rstrip(";").rstrip()
        bounded = (f"SELECT left(CAST(COLUMNS(*) AS VARCHAR), {MAX_VALUE_CHARS + 1}) FROM (\n"
                   f"{body}\n) AS _query LIMIT {MAX_ROWS}")
        with self._lock:
            if self._stopped:
                return "error: the run ended before the query started"
            cursor = self._cursor = self.tools.cursor()
        timer = threading.Timer(self.tools.query_seconds, cursor.interrupt)
        timer.start()
        try:
            cursor.execute(bounded)
            names = [d[0] for d in cursor.description or []]
            rows = cursor.fetchmany(MAX_ROWS)
        except duckdb.InterruptException:
            return (f"error: the query was stopped (over {self.tools.query_seconds:g} s, or "
                    "its run ended)")
        except duckdb.Error as exc:  # the model sees the error and may try again
            return self.tools.error_text(exc)
        finally:
            timer.cancel()
            with self._lock:
                self._cursor = None
            cursor.close()
        for row in rows:
            for name, value in zip(names, row, strict=True):
                if isinstance(value, str) and len(value) > MAX_VALUE_CHARS:
                    return (f"error: a value of column {name!r} is longer than "
                            f"{MAX_VALUE_CHARS:,} characters; select less of it")
        return _csv(names, rows)[:MAX_RESULT_CHARS]


class PackTools:
    """Tools over one pack folder (a sandboxed database, made on first use and shared by
    every call).

    Args:
        folder: The pack folder.
        query_seconds: How long one query may run; default :data:`QUERY_SECONDS`.
    """

    def __init__(self, folder: Path | str, *, query_seconds: float = QUERY_SECONDS) -> None:
        self.folder = Path(folder)
        self.query_seconds = query_seconds
        self._db: duckdb.DuckDBPyConnection | None = None
        self._lock = threading.Lock()
        self._folders = _machine_folders(self.folder)

    def error_text(self, exc: BaseException) -> str:
        """What the model is told of a failed query: the error's kind and message, no folder
        of this machine named (:func:`_scrubbed`), at most 2,000 characters."""
        return _scrubbed(f"error: {type(exc).__name__}: {exc}", self._folders)[:2_000]

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A cursor of the pack's database (made on first use)."""
        with self._lock:  # read the CSVs once, however many calls arrive together
            if self._db is None:
                self._db = _sandbox(self.folder)
            return self._db.cursor()

    def prepare(self, name: str, arguments: str) -> ToolCall:
        """A call of tool ``name`` with its JSON ``arguments``, not yet run."""
        return ToolCall(self, name, arguments)

    def call(self, name: str, arguments: str) -> str:
        """Run tool ``name`` with its JSON ``arguments``; the result (or error) as text."""
        return self.prepare(name, arguments).run()


def _csv(names: list[str], rows: list[tuple[Any, ...]]) -> str:
    """Rows as CSV text with a header (null as empty)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(names)
    writer.writerows(["" if v is None else v for v in row] for row in rows)
    return out.getvalue()
