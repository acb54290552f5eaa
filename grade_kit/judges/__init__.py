"""Judges for the two judged dimensions. ``rules`` is the offline default
(:mod:`grade_kit.judges.rules`); recorded judgements load through :mod:`grade_kit.io`."""

from grade_kit.judges.rules import rule_judgements

__all__ = ["JUDGES", "rule_judgements"]

JUDGES = {"rules": rule_judgements}
"""Judges selectable with ``grade-kit score --judge NAME``."""
