"""Outputs of an evaluation: the typed results (results.json), the Markdown scorecard, and the
files ``grade-kit score`` writes. Each job has its own module."""

from grade_kit.presentation.report.files import write_outputs
from grade_kit.presentation.report.markdown import md_cell, scorecard_markdown
from grade_kit.presentation.report.results import build_results, missing_dimension_warnings

__all__ = [
    "build_results",
    "md_cell",
    "missing_dimension_warnings",
    "scorecard_markdown",
    "write_outputs",
]
