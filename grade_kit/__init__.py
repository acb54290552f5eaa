"""grade_kit: defensible numbers from LLM and agent answers.

GRADE scores with a weighted composite, grades with honest denominators, timing and tool-call
statistics, dataframe-native. ``gk.evaluate(tasks, runs, judge="rules")`` is the one call; the
rules it implements are in docs/methodology.md, and each function cites the rule it implements.
Public functions accept pandas or polars frames and return the same kind. The scorers,
pure functions from frames to frames, are in :mod:`grade_kit.scorers`; the standard's
statistics in :mod:`grade_kit.standard`; the text normaliser in :mod:`grade_kit.text`; a
packed store's map and reduce steps in :mod:`grade_kit.pipeline.partitioned`.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from grade_kit._version import __version__ as __version__
from grade_kit.adapters import read_log
from grade_kit.pipeline.diff import Diff, diff
from grade_kit.pipeline.evaluation import evaluate, reopen, reopen_or_evaluate
from grade_kit.pipeline.scored import Evaluation
from grade_kit.reading.inputs import Inputs, read_inputs
from grade_kit.reading.packed import pack
from grade_kit.schema import Grade, Judgement, Run, Task
from grade_kit.views.tables import table

__all__ = [
    "Diff",
    "Evaluation",
    "Grade",
    "Inputs",
    "Judgement",
    "LLMGrader",
    "LLMJudge",
    "Run",
    "Task",
    "diff",
    "evaluate",
    "fetch",
    "fetch_setups",
    "pack",
    "read_inputs",
    "read_log",
    "reopen",
    "reopen_or_evaluate",
    "table",
]
"""The public surface, kept small (at most 25 names): one evaluation from inputs
(:func:`evaluate`, :func:`reopen`, :func:`read_inputs`, :func:`read_log` for other tools'
logs, :func:`pack` for inputs bigger than memory), one evaluation against an earlier one
(:func:`diff`), answers fetched (:func:`fetch`,
:func:`fetch_setups`; the responders are in :mod:`grade_kit.fetching`), model judges and
graders (the protocols and the rule judge are in :mod:`grade_kit.judges`), the record
contracts, and :func:`table`. The statistics (planning, rank ranges, the standard's frames)
are in :mod:`grade_kit.standard`, the scorers in :mod:`grade_kit.scorers`, the charts in
:mod:`grade_kit.presentation.charts`."""

if TYPE_CHECKING:
    from grade_kit.fetching import fetch, fetch_setups
    from grade_kit.judges.llm import LLMJudge
    from grade_kit.judges.llm_grader import LLMGrader

_ON_FIRST_USE = {"fetch": "grade_kit.fetching", "fetch_setups": "grade_kit.fetching",
                 "LLMJudge": "grade_kit.judges.llm", "LLMGrader": "grade_kit.judges.llm_grader"}
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
