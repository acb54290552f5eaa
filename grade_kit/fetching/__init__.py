"""Fetching answers: responders behind one interface, a crash-safe run store, and the fetch
that fills every planned slot of a setup, timed as the standard says."""

from grade_kit.fetching.responders import (
    RESPONSE_FORMAT_INSTRUCTION,
    Answer,
    AnswerFailed,
    HTTPAgent,
    OpenAIChat,
    PythonCallable,
    Replay,
    Responder,
    build_prompt,
    parse_answer,
)
from grade_kit.fetching.run import (
    DEFAULT_CONCURRENCY,
    DEFAULT_TIMEOUT_S,
    FetchReport,
    fetch,
    fetch_async,
    fetch_setups,
)
from grade_kit.fetching.store import RunStore
from grade_kit.fetching.tools import SQL_TOOL, PackTools

__all__ = [
    "DEFAULT_CONCURRENCY",
    "DEFAULT_TIMEOUT_S",
    "RESPONSE_FORMAT_INSTRUCTION",
    "SQL_TOOL",
    "Answer",
    "AnswerFailed",
    "FetchReport",
    "HTTPAgent",
    "OpenAIChat",
    "PackTools",
    "PythonCallable",
    "Replay",
    "Responder",
    "RunStore",
    "build_prompt",
    "fetch",
    "fetch_async",
    "fetch_setups",
    "parse_answer",
]
