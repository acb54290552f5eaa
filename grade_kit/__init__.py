"""grade_kit: defensible numbers from LLM and agent answers.

GRADE scores with a weighted composite, grades with honest denominators, timing and tool-call
statistics, dataframe-native. ``gk.evaluate(tasks, runs, judge="rules")`` is the one call; the
rules it implements are in docs/methodology.md, and each function cites the rule it implements.
Public functions accept pandas or polars frames and return the same kind. The scorers,
pure functions from frames to frames, are in :mod:`grade_kit.scorers`; the standard's
statistics in :mod:`grade_kit.standard`; the text normaliser in :mod:`grade_kit.text`; a
packed store's map and reduce steps in :mod:`grade_kit.partitioned`.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from grade_kit._version import __version__ as __version__
from grade_kit.adapters import read_inspect, read_logs, read_tau_bench
from grade_kit.evaluation import evaluate, reopen, reopen_or_evaluate
from grade_kit.judges import JUDGES, Grader, Judge
from grade_kit.judges.calibration_review import calibration_review
from grade_kit.presentation.tables import table
from grade_kit.reading.inputs import Inputs, read_inputs
from grade_kit.reading.packed import pack
from grade_kit.schema import (
    DIMENSIONS,
    GRADE_STATES,
    PROJECT_WEIGHTS,
    Grade,
    Judgement,
    Run,
    Task,
)
from grade_kit.scored import Evaluation
from grade_kit.scorers import ClaimJudge
from grade_kit.standard import (
    questions_and_repeats,
    questions_needed,
    rank_intervals,
    rank_ranges,
)

__all__ = [
    "DIMENSIONS",
    "GRADE_STATES",
    "JUDGES",
    "PROJECT_WEIGHTS",
    "ClaimJudge",
    "Evaluation",
    "Grade",
    "Grader",
    "HTTPAgent",
    "Inputs",
    "Judge",
    "Judgement",
    "LLMClaimJudge",
    "LLMGrader",
    "LLMJudge",
    "OpenAIChat",
    "PythonCallable",
    "Replay",
    "Run",
    "Task",
    "calibration_review",
    "evaluate",
    "fetch",
    "fetch_setups",
    "pack",
    "questions_and_repeats",
    "questions_needed",
    "rank_intervals",
    "rank_ranges",
    "read_inputs",
    "read_inspect",
    "read_logs",
    "read_tau_bench",
    "reopen",
    "reopen_or_evaluate",
    "table",
]

if TYPE_CHECKING:
    from grade_kit.fetching import (
        HTTPAgent,
        OpenAIChat,
        PythonCallable,
        Replay,
        fetch,
        fetch_setups,
    )
    from grade_kit.judges.llm import LLMClaimJudge, LLMJudge
    from grade_kit.judges.llm_grader import LLMGrader

_ON_FIRST_USE = {
    **dict.fromkeys(("HTTPAgent", "OpenAIChat", "PythonCallable", "Replay", "fetch",
                     "fetch_setups"), "grade_kit.fetching"),
    "LLMClaimJudge": "grade_kit.judges.llm", "LLMJudge": "grade_kit.judges.llm",
    "LLMGrader": "grade_kit.judges.llm_grader",
}
"""The names whose modules need an HTTP client or a SQL engine (aiohttp, duckdb), imported
when first asked for, so a command that scores never loads them."""


def __getattr__(name: str) -> Any:
    module = _ON_FIRST_USE.get(name)
    if module is None:
        raise AttributeError(f"module 'grade_kit' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_ON_FIRST_USE})
