"""Queries over a fixture pack's CSVs: the one place the pack's statistics are computed.

The ground truth (:mod:`grade_kit.demo.truth`) and the simulated setups
(:mod:`grade_kit.demo.setups`) both ask these questions of the CSV files; a test recomputes a
sample of them independently with the ``csv`` module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import polars as pl

SUPPRESSION_N = 10
"""Subgroups with fewer students than this are suppressed: no rate reported or estimated."""


@dataclass(frozen=True)
class PackData:
    """A pack folder, read lazily (every table is loaded once)."""

    folder: Path

    @property
    def name(self) -> str:
        return self.folder.name

    def _read(self, name: str) -> pl.DataFrame:
        return pl.read_csv(self.folder / name, infer_schema_length=0)

    @cached_property
    def sessions(self) -> pl.DataFrame:
        return self._read("sessions.csv").with_columns(
            pl.col("minutes").cast(pl.Int64), month=pl.col("date").str.slice(0, 7))

    @cached_property
    def students(self) -> pl.DataFrame:
        return self._read("students.csv")

    @cached_property
    def studies(self) -> pl.DataFrame:
        return self._read("studies.csv").with_columns(pl.col("effect_size").cast(pl.Float64))

    @cached_property
    def growth(self) -> pl.DataFrame:
        """Per student: growth (post - pre) and dosage hours (minutes attended / 60)."""
        scores = self._read("assessments.csv").select(
            "student_id",
            growth=pl.col("post_score").cast(pl.Float64) - pl.col("pre_score").cast(pl.Float64))
        attended = (self._read("attendance.csv").filter(pl.col("present") == "1")
                    .join(self.sessions.select("session_id", "minutes"), on="session_id")
                    .group_by("student_id").agg(hours=pl.col("minutes").sum() / 60))
        return (self.students.join(scores, on="student_id")
                .join(attended, on="student_id", how="left")
                .with_columns(pl.col("hours").fill_null(0.0)))

    # ------------------------------------------------------------------ sessions

    def status_rates(self, by: str | None = None) -> pl.DataFrame:
        """Sessions and completed/cancelled/no-show shares, overall or by a column."""
        keys = [by] if by else []
        frame = self.sessions.group_by(keys) if keys else self.sessions.select(pl.all())
        aggs = [
            pl.len().alias("sessions"),
            (pl.col("status") == "completed").mean().alias("completion_rate"),
            (pl.col("status") == "cancelled").mean().alias("cancel_rate"),
            (pl.col("status") == "no-show").mean().alias("no_show_rate"),
            pl.col("minutes").filter(pl.col("status") == "completed").mean()
            .alias("mean_minutes"),
        ]
        if keys:
            return frame.agg(aggs).sort(keys)  # type: ignore[union-attr]
        return self.sessions.select(aggs)

    def attendance_by_group(self) -> pl.DataFrame:
        """Per group: share of (completed session, student) pairs attended."""
        return (self._read("attendance.csv").join(
            self.sessions.select("session_id", "group_id"), on="session_id")
            .group_by("group_id").agg(attendance_rate=(pl.col("present") == "1").mean(),
                                      records=pl.len())
            .sort("group_id"))

    # ------------------------------------------------------------------ outcomes

    def subgroup(self, flag: str) -> dict[str, Any]:
        """n and mean growth of students with ``flag == "Y"``; growth null when suppressed."""
        rows = self.growth.filter(pl.col(flag) == "Y")
        n = rows.height
        suppressed = n < SUPPRESSION_N
        mean = None if suppressed else float(rows.get_column("growth").mean())  # type: ignore[arg-type]
        return {"n": n, "suppressed": suppressed, "mean_growth": mean}

    def dosage_growth_r(self) -> float:
        """Pearson r between dosage hours and growth across students."""
        x = self.growth.get_column("hours").to_list()
        y = self.growth.get_column("growth").to_list()
        mx, my = math.fsum(x) / len(x), math.fsum(y) / len(y)
        sxy = math.fsum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
        sxx = math.fsum((a - mx) ** 2 for a in x)
        syy = math.fsum((b - my) ** 2 for b in y)
        return sxy / math.sqrt(sxx * syy)
