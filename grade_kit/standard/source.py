"""The source's own headline metric (docs/methodology.md §4 "The source's own metric"): an
imported log's per-run score as its source counts it (Inspect's accuracy or mean over its
score values, tau's reward), summarised per setup beside the resolved rate."""

from __future__ import annotations

import math
import statistics

import polars as pl

from grade_kit.schema import SourceMetric


def source_metrics_by_setup(runs: pl.DataFrame, slots: pl.DataFrame
                         ) -> dict[str, dict[str, SourceMetric]]:
    """Per setup, per metric name: the source's headline metric over the primary runs that
    fill ``slots`` (a setup's planned slots, or a subset's) and carry a source score.

    Each question's score is the mean over its repeats (Inspect's default epoch reducer);
    the figure is the mean over questions (``math.fsum`` / n), its standard error the
    sample standard deviation over questions / sqrt(n) (null below 2 questions: one
    question has no spread to estimate). A run without a score (failed, or a score with no
    number) is not in it; ``runs`` counts those that are. A setup with no score is absent.
    """
    mine = runs.join(slots.select("run_id"), on="run_id", how="semi").filter(
        pl.col("source_score").is_not_null() & pl.col("source_metric").is_not_null())
    per_question = (mine.group_by("setup", "source_metric", "task_id")
                    .agg(pl.col("source_score")).sort("setup", "source_metric", "task_id"))
    out: dict[str, dict[str, SourceMetric]] = {}
    for (setup, name), frame in per_question.partition_by(
            "setup", "source_metric", as_dict=True, maintain_order=True).items():
        scores = frame.get_column("source_score").to_list()
        means = [math.fsum(s) / len(s) for s in scores]
        n = len(means)
        out.setdefault(str(setup), {})[str(name)] = SourceMetric(
            name=str(name), mean=math.fsum(means) / n,
            stderr=statistics.stdev(means) / math.sqrt(n) if n >= 2 else None,
            questions=n, runs=sum(len(s) for s in scores))
    return out
