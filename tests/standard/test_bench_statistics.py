"""The 10M-run statistics of ``make bench-scale`` follow the standard's rules: checked
against the one implementation (grade_kit.standard.stats.summarize and the grade counts) on
a small runs table."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from benchmarks.scale import statistics_from_parquet, write_runs_table
from grade_kit.standard.stats import summarize


def test_the_parquet_statistics_equal_the_standards(tmp_path: Path) -> None:
    path = tmp_path / "runs.parquet"
    write_runs_table(path, 20_000)
    table = statistics_from_parquet(path)
    runs = pl.read_parquet(path)
    assert table.height == 10
    for row in table.iter_rows(named=True):
        mine = runs.filter(pl.col("setup") == row["setup"])
        delivered = mine.filter(pl.col("status") == "delivered")
        e2e = summarize(delivered.get_column("e2e_s").drop_nulls().to_list())
        assert (row["e2e_n"], row["e2e_mean"], row["e2e_p50"], row["e2e_p90"]) == (
            e2e.n, e2e.mean, e2e.p50, e2e.p90)  # bit for bit
        assert row["N"] == mine.get_column("task_id").n_unique() * 5 == 2_000
        assert row["resolved"] == mine.filter(pl.col("grade") == "resolved").height
        assert row["resolved_rate"] == row["resolved"] / 2_000
        assert row["timeout"] == mine.filter(pl.col("status") == "timeout").height
        assert row["not_run"] == 0
