"""docs/methodology.md §4 "Cost": hand-computed cases of a run's cost, the per-setup figures,
the frontier, and the real logs' tokens summed by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import grade_kit as gk
from grade_kit.adapters import read_log
from grade_kit.adapters.inspect_ai import read_inspect_log
from grade_kit.frames import EvalData
from grade_kit.reading.prices import read_prices
from grade_kit.schema import InputError, Usage, summed_usage
from grade_kit.standard.cost import cost_frame, dominated, frontier, run_costs
from tests.conftest import make_run, make_task

DATA = Path(__file__).parents[1] / "data"
TWO_MODELS = {"m/a": {"input": 2.5, "output": 10, "input_cache_read": 1.25},
              "m/b": {"input": 0.15, "output": 0.6}}


def usage_run(run_id: str, usage: dict[str, Any] | None, task: str = "t1", repeat: int = 1,
              setup: str = "A", **extra: Any) -> Any:
    return make_run(run_id, task, repeat=repeat, setup=setup, usage=usage, **extra)


def costs_of(runs: list[Any], prices: Any = None) -> pl.DataFrame:
    data = EvalData.from_records([make_task("t1"), make_task("t2")], runs)
    return run_costs(data.runs, data.usage, None if prices is None else read_prices(prices))


def test_a_run_of_two_models_is_priced_per_model_as_inspect_prices_it() -> None:
    run = usage_run("r1", {"models": {
        "m/a": {"input_tokens": 1000, "output_tokens": 500, "input_tokens_cache_read": 200},
        "m/b": {"input_tokens": 100, "output_tokens": 10}}})
    row = costs_of([run], TWO_MODELS).row(0, named=True)
    # (1000 x 2.5 + 500 x 10 + 200 x 1.25 + 100 x 0.15 + 10 x 0.6) / 10^6
    assert row["cost"] == pytest.approx(0.007771, rel=1e-12)
    assert row["cost_basis"] == "computed" and row["unpriced"] is None
    assert row["tokens"] == 1000 + 500 + 200 + 100 + 10  # no total_tokens: the parts
    # b records no cache count: the run's cache total is unknown, never a partial 200
    assert row["input_tokens"] == 1100 and row["input_tokens_cache_read"] is None


def test_a_model_without_a_price_is_named_never_priced_at_zero() -> None:
    runs = [usage_run("r1", {"models": {"m/a": {"input_tokens": 1, "output_tokens": 1},
                                        "m/c": {"input_tokens": 1, "output_tokens": 1}}}),
            usage_run("r2", {"model": "m/b", "input_tokens": 5, "output_tokens": 1,
                             "input_tokens_cache_read": 3}, task="t2"),
            usage_run("r3", {"input_tokens": 5, "output_tokens": 1}, task="t2", repeat=2),
            usage_run("r4", {"model": "m/c", "total_cost": 0.25}, repeat=2)]
    rows = {r["run_id"]: r for r in costs_of(runs, TWO_MODELS).iter_rows(named=True)}
    assert rows["r1"]["cost"] is None and rows["r1"]["unpriced"] == "m/c: no price"
    assert rows["r2"]["cost"] is None
    assert rows["r2"]["unpriced"] == "m/b: no input_cache_read price"
    assert rows["r3"]["unpriced"] == "the run names no model"
    # a cost the log carries is used as logged, whatever the price file says
    assert rows["r4"]["cost"] == 0.25 and rows["r4"]["cost_basis"] == "as logged"
    assert rows["r4"]["tokens"] is None  # no tokens recorded: none, never 0


def test_missing_is_missing_in_every_sum() -> None:
    assert summed_usage([{"input_tokens": 3, "output_tokens": 1}, None]) == {}
    assert summed_usage([{"input_tokens": 3, "output_tokens": 1},
                         {"input_tokens": 2}]) == {"input_tokens": 5}
    assert summed_usage([None, None]) is None
    usage = Usage.model_validate({"models": {"a": {"input_tokens": 3, "output_tokens": 4},
                                             "b": {"input_tokens": 1}}})
    assert usage.input_tokens == 4 and usage.output_tokens is None
    with pytest.raises(ValueError, match=r"not the sum over usage\.models"):
        Usage.model_validate({"models": {"a": {"input_tokens": 3}}, "input_tokens": 4})


def test_cost_per_run_question_and_resolved_question() -> None:
    """R = 2; q1's runs cost 1 and 3 (one resolved), q2's 2 and 2 (none): $2 per run, $4 per
    question, $8 per resolved question."""
    runs = pl.DataFrame({"run_id": ["a", "b", "c", "d"], "tokens": [10, 30, 20, 20],
                         "cost": [1.0, 3.0, 2.0, 2.0]})
    run_cost = runs.with_columns(
        *[pl.lit(None, pl.Int64).alias(n) for n in ("input_tokens", "output_tokens",
                                                    "input_tokens_cache_read",
                                                    "input_tokens_cache_write",
                                                    "reasoning_tokens")],
        cost_basis=pl.lit("as logged"), unpriced=pl.lit(None, pl.String),
        user_cost=pl.lit(None, pl.Float64))
    slots = pl.DataFrame({"setup": ["A"] * 4, "task_id": ["q1", "q1", "q2", "q2"],
                          "run_id": ["a", "b", "c", "d"],
                          "state": ["resolved", "unresolved", "unresolved", "unresolved"]})
    row = cost_frame(run_cost, slots, ["A"]).row(0, named=True)
    assert (row["cost_per_run_mean"], row["cost_per_question"], row["cost_per_resolved"]) \
        == (2.0, 4.0, 8.0)
    assert (row["cost_total"], row["tokens_total"], row["tokens_per_run_mean"]) \
        == (8.0, 80, 20.0)
    assert row["cost_per_run_p50"] == 2.0 and row["cost_per_run_p90"] == 3.0
    # two questions: every resample is (q1, q1), (q1, q2) or (q2, q2); per run the mean is
    # 2 or 2 or 2 (q1's and q2's runs both average 2), so the interval is [2, 2]
    assert (row["cost_per_run_ci_low"], row["cost_per_run_ci_high"]) == (2.0, 2.0)
    # a resample of q2 twice holds no resolved slot: no interval, never an infinite one
    assert row["cost_per_resolved_ci_low"] is None
    assert row["basis"] == "as logged" and row["cost_coverage"] == 1.0


def test_the_frontier_and_its_probability() -> None:
    cost = np.array([1.0, 2.0, 3.0])
    rate = np.array([0.5, 0.8, 0.7])
    assert dominated(cost, rate).tolist() == [False, False, True]  # C is dominated by B
    assert dominated(np.array([1.0, 1.0]), np.array([0.5, 0.5])).tolist() == [False, False]
    # A is cheaper on every question and resolves what B resolves: P = 1 and 0
    questions = [f"q{i}" for i in range(12)]
    plan = pl.DataFrame({"setup": ["A"] * 12 + ["B"] * 12, "task_id": questions * 2})
    resolved = [i % 2 == 0 for i in range(12)]
    slots = pl.DataFrame({
        "setup": ["A"] * 12 + ["B"] * 12, "task_id": questions * 2,
        "run_id": [f"A{i}" for i in range(12)] + [f"B{i}" for i in range(12)],
        "state": ["resolved" if r else "unresolved" for r in resolved] * 2})
    run_cost = pl.DataFrame({"run_id": slots.get_column("run_id"),
                             "cost": [1.0 + i for i in range(12)] + [2.0 + i for i in range(12)]})
    placed = frontier(plan, slots, run_cost, {"A": 0.5, "B": 0.5}, repeats=1)
    assert placed.rows() == [("A", True, 1.0), ("B", False, 0.0)]


def test_price_files_name_the_file_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text("m/a:\n  input: 2.5\n  output: 10\nm/b:\n  input: -1\n  output: 2\n")
    with pytest.raises(InputError, match=r"prices.yaml, line 4: model 'm/b', field input"):
        read_prices(path)
    path.write_text('{"m/a": {"input": 2.5}}')
    with pytest.raises(InputError, match=r"field output: missing required field"):
        read_prices(path)
    path.write_text("m/a: {input: 2.5, output: 10}\n")
    prices = read_prices(path)
    assert prices.models["m/a"].output == 10.0 and prices.models["m/a"].input_cache_read is None
    assert len(prices.sha256) == 64


def test_an_evaluation_without_usage_has_no_cost_and_no_cost_figure() -> None:
    tasks = [make_task("t1"), make_task("t2")]
    runs = [make_run(f"{s}{t}", t, setup=s) for s in "AB" for t in ("t1", "t2")]
    ev = gk.evaluate(tasks, runs)
    assert ev.cost.is_empty()
    assert not {"cost_per_run", "tokens_per_run"} & set(ev.comparisons["metric"].to_list())
    assert ev.results.setups["A"].cost is None


def _hand_sum(samples: list[dict[str, Any]], field: str) -> int:
    return sum(per[field] for s in samples for per in (s.get("model_usage") or {}).values())


@pytest.mark.parametrize("log", sorted((DATA / "realdata/inspect_ai_testlogs").glob("*.json"))
                         + sorted((DATA / "inspect_generated/nl2bash").glob("*.eval")),
                         ids=lambda p: p.name[:40])
def test_inspect_tokens_equal_the_log_summed_by_hand(log: Path) -> None:
    """Every sample's model_usage, summed by hand from the log as written, is the setup's
    token totals; and where the log is complete, Inspect's own header total agrees."""
    header, samples = read_inspect_log(log)
    ev = gk.evaluate(read_log(log))
    row = ev.cost.filter(pl.col("subset") == "all").row(0, named=True)
    for field in ("input_tokens", "output_tokens"):
        assert row[f"{field}_total"] == _hand_sum(samples, field)
        stats = header.get("stats", {}).get("model_usage", {})
        assert row[f"{field}_total"] == sum(m[field] for m in stats.values())
    assert row["tokens_total"] == _hand_sum(samples, "total_tokens")
    assert row["runs_with_cost"] == 0 and "no price file" in row["unpriced"]


def test_inspect_costs_from_a_price_file_of_two_models(tmp_path: Path) -> None:
    """The nl2bash and ctf logs (mockllm/gamma and mockllm/alpha) priced by one file: each
    setup's total is its tokens at its model's prices."""
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"mockllm/gamma": {"input": 3, "output": 15},
                                  "mockllm/alpha": {"input": 1, "output": 2}}))
    logs = [*sorted((DATA / "inspect_generated/nl2bash").glob("*.eval")),
            *sorted((DATA / "inspect_generated/ctf").glob("*.eval"))]
    ev = gk.evaluate(read_log(logs), prices=prices)
    rows = {r["setup"]: r for r in ev.cost.filter(pl.col("subset") == "all").iter_rows(
        named=True)}
    assert ev.results.provenance.prices is not None
    assert ev.results.provenance.prices["sha256"] == read_prices(prices).sha256
    checked = 0
    for setup, row in rows.items():
        if row["runs_with_cost"] == 0:
            continue
        price = {"gamma": (3, 15), "alpha": (1, 2), "beta": None}[
            next(k for k in ("gamma", "alpha", "beta") if k in setup)]
        assert price is not None
        expected = (row["input_tokens_total"] * price[0] / 1e6
                    + row["output_tokens_total"] * price[1] / 1e6)
        assert row["runs_with_cost"] == row["runs_with_tokens"]  # every priced run costed
        assert math.isclose(row["cost_total"], expected, rel_tol=1e-12)
        assert row["basis"].startswith("computed from prices ")
        checked += 1
    assert checked >= 2  # gamma's and alpha's setups, each priced at its own model's prices
    beta = [r for s, r in rows.items() if "beta" in s]
    assert beta and beta[0]["runs_with_cost"] == 0
    assert "mockllm/beta: no price" in beta[0]["unpriced"]


def test_tau2_costs_as_logged_and_tokens_from_the_agents_calls() -> None:
    folder = DATA / "realdata/tau2_grok_airline_relaxed_task8"
    ev = gk.evaluate(read_log(folder))
    rows = {r["setup"]: r for r in ev.cost.filter(pl.col("subset") == "all").iter_rows(
        named=True)}
    for path in sorted(folder.glob("*.json")):
        sims = json.loads(path.read_text())["simulations"]
        setup = json.loads(path.read_text())["info"]["agent_info"]["llm"]
        row = rows[setup]
        assert math.isclose(row["cost_total"], math.fsum(s["agent_cost"] for s in sims))
        assert math.isclose(row["user_cost_total"], math.fsum(s["user_cost"] for s in sims))
        calls = [m for s in sims for m in s["messages"]
                 if m["role"] == "assistant" and (m.get("usage") or m.get("cost"))]
        assert row["input_tokens_total"] == sum(m["usage"]["prompt_tokens"] for m in calls)
        assert row["output_tokens_total"] == sum(m["usage"]["completion_tokens"] for m in calls)
        assert row["basis"] == "as logged"


def test_tau_bench_shows_no_agent_cost_and_says_so() -> None:
    imported = read_log(DATA / "realdata/tau_bench_gpt4o_airline")
    assert any("never the agent's" in note for note in imported.notes)
    ev = gk.evaluate(imported)
    row = ev.cost.filter(pl.col("subset") == "all").row(0, named=True)
    assert row["runs_with_cost"] == 0 and row["cost_total"] is None
    assert row["runs_with_user_cost"] > 0
