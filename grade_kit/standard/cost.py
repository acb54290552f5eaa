"""What each setup cost (docs/methodology.md §4 "Cost"): every run's tokens and dollars (as
logged, or computed from a price file), per setup and subset the tokens and cost per run,
per question and per resolved question with question-clustered bootstrap intervals, and the
cost-accuracy frontier with each setup's probability of being on it from the same resamples.

Nothing here runs when no run records usage: the frames come empty.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from grade_kit.frames import model_columns
from grade_kit.reading.prices import Prices
from grade_kit.schema import USAGE_COUNTS, CostSummary
from grade_kit.standard.compare import DEFAULT_RESAMPLES, DEFAULT_SEED, resample_blocks
from grade_kit.standard.stats import summarize

COUNTS = tuple(name for name in USAGE_COUNTS if name != "total_tokens")
"""The recorded counts a cost row totals (over the runs recording each)."""

RUN_COST_COLUMNS: dict[str, pl.DataType | type[pl.DataType]] = {
    "run_id": pl.String, "tokens": pl.Int64, **{name: pl.Int64 for name in COUNTS},
    "cost": pl.Float64, "cost_basis": pl.String, "unpriced": pl.String,
    "user_cost": pl.Float64,
}
"""The columns of :func:`run_costs`."""

COST_COLUMNS: dict[str, pl.DataType | type[pl.DataType]] = {
    "setup": pl.String, **model_columns(CostSummary)}
"""The columns of a cost frame (``ev.cost`` has ``subset`` after ``setup``): one per field of
:class:`~grade_kit.schema.CostSummary`, its one contract."""

_BLOCK_VALUES = 1 << 16
"""Resampled clusters x figures gathered at once."""

MILLION = 1_000_000


def run_costs(runs: pl.DataFrame, usage: pl.DataFrame,
              prices: Prices | None = None) -> pl.DataFrame:
    """Every run with usage: its tokens, its cost in dollars and where the cost came from
    (docs/methodology.md §4 "Cost").

    A cost the run's source logged (``usage_total_cost``) is used as it is (``cost_basis``
    "as logged"); else, with ``prices``, it is computed per model as Inspect's
    ``compute_model_cost`` does: input x input price / 10^6 + output x output price / 10^6 +
    cache write x its price / 10^6 + cache read x its price / 10^6, summed over the run's
    models ("computed"). Tokens not recorded, a run naming no model, a model without a
    price, or cache tokens without a cache price leave the run without a cost, and
    ``unpriced`` says why: never a price of 0. A run's tokens are its ``total_tokens``, else
    input + output + the cache counts it records, per model, summed over its models
    (null where some model records neither).

    Args:
        runs: The runs frame (its usage columns).
        usage: The usage frame (one row per run and model).
        prices: The price file's prices; default None (logged costs only).

    Returns:
        :data:`RUN_COST_COLUMNS`, one row per run with usage; empty when none has any.
    """
    if usage.is_empty():
        return pl.DataFrame(schema=RUN_COST_COLUMNS)
    with_usage = runs.join(usage.select("run_id").unique(), on="run_id", how="semi")
    recorded = pl.col("input_tokens").is_not_null() & pl.col("output_tokens").is_not_null()
    tokens = pl.coalesce(
        "total_tokens",
        pl.when(recorded).then(pl.col("input_tokens") + pl.col("output_tokens")
                               + pl.col("input_tokens_cache_read").fill_null(0)
                               + pl.col("input_tokens_cache_write").fill_null(0)))
    # a run's tokens: each model's, summed where every model of the run has them
    per_run = usage.select("run_id", t=tokens.cast(pl.Int64)).group_by(
        "run_id", maintain_order=True).agg(
        tokens=pl.when(pl.col("t").null_count() == 0).then(pl.col("t").sum()))
    base = with_usage.select("run_id", *COUNTS, logged=pl.col("usage_total_cost"),
                             user_cost=pl.col("usage_user_cost")).join(
        per_run, on="run_id", how="left", maintain_order="left")
    if prices is None:
        computed = usage.select("run_id", computed=pl.lit(None, pl.Float64),
                                unpriced=_reason(None)).unique("run_id", keep="first",
                                                               maintain_order=True)
    else:
        computed = _computed_costs(usage, prices)
    out = base.join(computed, on="run_id", how="left", maintain_order="left")
    return out.select(
        "run_id", "tokens", *COUNTS,
        cost=pl.coalesce("logged", "computed"),
        cost_basis=pl.when(pl.col("logged").is_not_null()).then(pl.lit("as logged"))
        .when(pl.col("computed").is_not_null()).then(pl.lit("computed")),
        unpriced=pl.when(pl.col("logged").is_null() & pl.col("computed").is_null())
        .then("unpriced"),
        user_cost="user_cost",
    ).cast(pl.Schema(RUN_COST_COLUMNS))


def _reason(prices: Prices | None) -> pl.Expr:
    """Why a usage row has no computed cost (null where it has one)."""
    read, write = pl.col("input_tokens_cache_read"), pl.col("input_tokens_cache_write")
    untold = pl.col("input_tokens").is_null() | pl.col("output_tokens").is_null()
    no_tokens = (pl.when(pl.col("model").is_null()).then(pl.lit("no tokens and no cost logged"))
                 .otherwise(pl.format("{}: no tokens and no cost logged", "model")))
    if prices is None:
        return (pl.when(untold).then(no_tokens)
                .otherwise(pl.lit("no cost logged and no price file")))
    return (pl.when(untold).then(no_tokens)
            .when(pl.col("model").is_null()).then(pl.lit("the run names no model"))
            .when(pl.col("p_input").is_null()).then(pl.format("{}: no price", "model"))
            .when((read.fill_null(0) > 0) & pl.col("p_cache_read").is_null())
            .then(pl.format("{}: no input_cache_read price", "model"))
            .when((write.fill_null(0) > 0) & pl.col("p_cache_write").is_null())
            .then(pl.format("{}: no input_cache_write price", "model")))


def _computed_costs(usage: pl.DataFrame, prices: Prices) -> pl.DataFrame:
    """Per run of ``usage``: its cost from ``prices`` summed over its models, or null with the
    reasons (docs/methodology.md §4 "Cost")."""
    table = pl.DataFrame(
        [(name, p.input, p.output, p.input_cache_write, p.input_cache_read)
         for name, p in prices.models.items()],
        schema={"model": pl.String, "p_input": pl.Float64, "p_output": pl.Float64,
                "p_cache_write": pl.Float64, "p_cache_read": pl.Float64}, orient="row")
    rows = usage.join(table, on="model", how="left", maintain_order="left")
    read, write = pl.col("input_tokens_cache_read"), pl.col("input_tokens_cache_write")
    # Inspect's compute_model_cost, term by term: tokens x price / 10^6, then the sum
    cost = (pl.col("input_tokens") * pl.col("p_input") / MILLION
            + pl.col("output_tokens") * pl.col("p_output") / MILLION
            + write.fill_null(0) * pl.col("p_cache_write").fill_null(0.0) / MILLION
            + read.fill_null(0) * pl.col("p_cache_read").fill_null(0.0) / MILLION)
    reason = _reason(prices)
    priced = rows.select("run_id", reason=reason, part=pl.when(reason.is_null()).then(cost))
    return priced.group_by("run_id", maintain_order=True).agg(
        computed=pl.when(pl.col("reason").null_count() == pl.len())
        .then(pl.col("part").sum()),
        unpriced=pl.col("reason").drop_nulls().unique(maintain_order=True).str.join("; "),
    ).with_columns(unpriced=pl.when(pl.col("computed").is_null()).then("unpriced"))


def resampled_sums(per_cluster: np.ndarray, seed: int = DEFAULT_SEED,
                   resamples: int = DEFAULT_RESAMPLES) -> np.ndarray:
    """Each column of ``per_cluster`` (clusters x k) summed over each bootstrap resample of
    the clusters, drawn as every bootstrap of the standard draws them
    (:func:`~grade_kit.standard.compare.resample_blocks`): resamples x k."""
    n, k = per_cluster.shape
    out = np.empty((resamples, k))
    step = max(1, _BLOCK_VALUES // max(n * k, 1))
    for at, block in zip(range(0, resamples, step),
                         resample_blocks(seed, n, resamples, step), strict=True):
        out[at:at + step] = per_cluster[block].sum(axis=1)
    return out


def ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator where the denominator is positive, else NaN (no figure)."""
    safe = np.where(denominator > 0, denominator, 1.0)
    return np.where(denominator > 0, numerator / safe, np.nan)


def percentile_ci(values: np.ndarray) -> tuple[float | None, float | None]:
    """The percentile 95% interval of resampled figures; none when a resample has none (the
    figure is undefined in it: no resolved slot, no costed run drawn)."""
    if values.size == 0 or np.isnan(values).any():
        return None, None
    low, high = np.quantile(values, [0.025, 0.975])
    return float(low), float(high)


_PER_CLUSTER = ("cost", "costed", "tokens", "tokened", "questions", "resolved")


def cost_frame(run_cost: pl.DataFrame, slots: pl.DataFrame, setups: Sequence[str],
               clusters: pl.DataFrame | None = None, seed: int = DEFAULT_SEED,
               resamples: int = DEFAULT_RESAMPLES,
               prices: Prices | None = None) -> pl.DataFrame:
    """Each setup's tokens and cost on the filled planned ``slots`` of one subset
    (docs/methodology.md §4 "Cost"): over its primary runs in the plan of every status (a
    failed or limited run spent tokens too).

    Per run: tokens and cost summarised (n, mean, P50, nearest-rank P90) with their totals;
    cost per question = total cost / questions with a costed run; cost per resolved question
    = total cost / resolved slots among the costed runs (null with none resolved). Each has
    a percentile 95% interval from 2,000 seeded bootstrap resamples of the setup's clusters
    (questions by default), the ratio of sums recomputed per resample (the mean per run is
    Σ cost / costed runs of the drawn clusters); none below 2 clusters or where some
    resample leaves the ratio undefined.

    Args:
        run_cost: :func:`run_costs`.
        slots: setup, task_id, run_id, state of the subset's filled planned slots.
        setups: The setups summarised (one with no usage on the subset gets no row).
        clusters: task_id, cluster; default None (each question its own).
        seed: The bootstrap's seed (the comparisons').
        resamples: Bootstrap resamples.
        prices: The prices computed costs used (the basis names their digest).

    Returns:
        :data:`COST_COLUMNS`, one row per setup with usage (sorted by setup).
    """
    if run_cost.is_empty():
        return pl.DataFrame(schema=COST_COLUMNS)
    wanted = pl.Series(list(setups), dtype=pl.String).implode()
    in_plan = slots.filter(pl.col("setup").is_in(wanted))
    joined = in_plan.join(run_cost, on="run_id", how="inner")
    if joined.is_empty():
        return pl.DataFrame(schema=COST_COLUMNS)
    runs_per_setup = dict(in_plan.group_by("setup").len().iter_rows())
    unit = _with_clusters(joined, clusters)
    rows = [_setup_row(str(setup), frame, runs_per_setup[setup], seed, resamples, prices)
            for (setup,), frame in sorted(unit.partition_by("setup", as_dict=True).items())]
    return pl.DataFrame(rows, schema=COST_COLUMNS, orient="row")


def _with_clusters(frame: pl.DataFrame, clusters: pl.DataFrame | None) -> pl.DataFrame:
    """``frame`` with each row's ``cluster``: its question's, or its task id."""
    if clusters is None:
        return frame.with_columns(cluster=pl.col("task_id"))
    return frame.join(clusters, on="task_id", how="left").with_columns(
        pl.col("cluster").fill_null(pl.col("task_id")))


def _per_cluster(frame: pl.DataFrame) -> pl.DataFrame:
    """Per cluster: total cost and costed runs, total tokens and runs with tokens, questions
    with a costed run, resolved slots among the costed runs (the bootstrap's sums)."""
    has_cost = pl.col("cost").is_not_null()
    return frame.group_by("cluster").agg(
        cost=pl.col("cost").sum(), costed=has_cost.sum(),
        tokens=pl.col("tokens").sum().cast(pl.Float64),
        tokened=pl.col("tokens").is_not_null().sum(),
        questions=pl.col("task_id").filter(has_cost).n_unique(),
        resolved=(has_cost & (pl.col("state") == "resolved")).sum(),
    ).sort("cluster")


def _setup_row(setup: str, frame: pl.DataFrame, runs: int, seed: int, resamples: int,
               prices: Prices | None) -> tuple[object, ...]:
    """One setup's :class:`~grade_kit.schema.CostSummary` on a subset, as a row."""
    costed = frame.filter(pl.col("cost").is_not_null())
    costs = costed.get_column("cost").to_list()
    tokens = frame.get_column("tokens").drop_nulls().to_list()
    cost_total = math.fsum(costs) if costs else None
    questions = costed.get_column("task_id").n_unique()
    resolved = int((costed.get_column("state") == "resolved").sum())
    per_cluster = _per_cluster(frame)
    ci: dict[str, tuple[float | None, float | None]] = {}
    if per_cluster.height >= 2:
        sums = resampled_sums(per_cluster.select(_PER_CLUSTER).cast(pl.Float64).to_numpy(),
                              seed, resamples)
        c = dict(zip(_PER_CLUSTER, sums.T, strict=True))
        ci = {"tokens_per_run": percentile_ci(ratio(c["tokens"], c["tokened"]))
              if tokens else (None, None),
              "cost_per_run": percentile_ci(ratio(c["cost"], c["costed"]))
              if costs else (None, None),
              "cost_per_question": percentile_ci(ratio(c["cost"], c["questions"]))
              if costs else (None, None),
              "cost_per_resolved": percentile_ci(ratio(c["cost"], c["resolved"]))
              if resolved else (None, None)}
    by_basis = dict(costed.get_column("cost_basis").value_counts().iter_rows())
    basis = " and ".join(
        (name if name == "as logged" or prices is None
         else f"computed from prices {prices.sha256[:12]}")
        + ("" if len(by_basis) == 1 else f" ({by_basis[name]:,} runs)")
        for name in ("as logged", "computed") if name in by_basis) or None
    unpriced = "; ".join(
        f"{why} ({n:,} run{'s' if n != 1 else ''})" for why, n in
        frame.filter(pl.col("unpriced").is_not_null()).group_by("unpriced").len()
        .sort("unpriced").iter_rows()) or None
    user = frame.get_column("user_cost").drop_nulls().to_list()
    totals = {f"{name}_total": (int(frame.get_column(name).sum())
                                if frame.get_column(name).null_count() < frame.height else None)
              for name in COUNTS}
    tok, dol = summarize(tokens), summarize(costs)
    fields: dict[str, object] = {
        "runs": runs, "runs_with_tokens": len(tokens),
        "token_coverage": len(tokens) / runs if runs else None,
        "tokens_per_run_mean": tok.mean, "tokens_per_run_p50": tok.p50,
        "tokens_per_run_p90": tok.p90, "tokens_total": sum(tokens) if tokens else None,
        **totals,
        "runs_with_cost": len(costs), "cost_coverage": len(costs) / runs if runs else None,
        "cost_per_run_mean": dol.mean, "cost_per_run_p50": dol.p50, "cost_per_run_p90": dol.p90,
        "cost_total": cost_total, "questions_with_cost": questions,
        "cost_per_question": None if cost_total is None else cost_total / questions,
        "resolved_with_cost": resolved,
        "cost_per_resolved": None if cost_total is None or not resolved
        else cost_total / resolved,
        "basis": basis, "unpriced": unpriced, "runs_with_user_cost": len(user),
        "user_cost_total": math.fsum(user) if user else None,
        "clusters": per_cluster.height,
    }
    for name, (low, high) in ci.items():
        fields[f"{name}_ci_low"], fields[f"{name}_ci_high"] = low, high
    summary = CostSummary.model_validate(fields)
    return (setup, *(getattr(summary, name) for name in CostSummary.model_fields))


def dominated(cost: np.ndarray, rate: np.ndarray) -> np.ndarray:
    """Per point (along the last axis) whether another point is at most as costly and at
    least as accurate, and better on one of them (docs/methodology.md §4 "The frontier").
    NaN points dominate nothing; a NaN point is reported dominated (it has no place)."""
    c_s, c_t = cost[..., :, None], cost[..., None, :]
    r_s, r_t = rate[..., :, None], rate[..., None, :]
    beats = (c_t <= c_s) & (r_t >= r_s) & ((c_t < c_s) | (r_t > r_s))
    out: np.ndarray = beats.any(axis=-1) | np.isnan(cost) | np.isnan(rate)
    return out


def frontier(plan: pl.DataFrame, slots: pl.DataFrame, run_cost: pl.DataFrame,
             rates: Mapping[str, float | None], repeats: int,
             clusters: pl.DataFrame | None = None, seed: int = DEFAULT_SEED,
             resamples: int = DEFAULT_RESAMPLES) -> pl.DataFrame:
    """The cost-accuracy frontier of the compared setups on all questions
    (docs/methodology.md §4 "The frontier"): each setup's point (cost per question, resolved
    rate over N), whether no other setup dominates it, and the share of bootstrap resamples
    in which none does. A resample draws clusters from every setup's planned clusters
    together (the same draw for every setup); in it a setup's cost per question is its
    drawn clusters' total cost / questions with a costed run, its resolved rate their
    resolved slots / planned slots (R x planned questions).

    Args:
        plan: setup, task_id of every planned question of the setups compared.
        slots: setup, task_id, run_id, state of their filled planned slots.
        run_cost: :func:`run_costs`.
        rates: Each compared setup's resolved rate (the standard's; None: not ranked).
        repeats: R.
        clusters: task_id, cluster; default None (each question its own).
        seed: The bootstrap's seed (the comparisons').
        resamples: Bootstrap resamples.

    Returns:
        setup, on_frontier, p_on_frontier: one row per setup with a cost per question and
        a rate; empty with none.
    """
    schema = {"setup": pl.String, "on_frontier": pl.Boolean, "p_on_frontier": pl.Float64}
    names = sorted(s for s, r in rates.items() if r is not None)
    wanted = pl.Series(names, dtype=pl.String).implode()
    priced = _with_clusters(slots.filter(pl.col("setup").is_in(wanted))
                            .join(run_cost.filter(pl.col("cost").is_not_null()),
                                  on="run_id", how="inner"), clusters)
    names = sorted(set(priced.get_column("setup").to_list()))
    if not names:
        return pl.DataFrame(schema=schema)
    wanted = pl.Series(names, dtype=pl.String).implode()
    planned = _with_clusters(plan.filter(pl.col("setup").is_in(wanted)), clusters)
    resolved = _with_clusters(slots.filter(pl.col("setup").is_in(wanted)
                                           & (pl.col("state") == "resolved")), clusters)
    keys = planned.select("cluster").unique().sort("cluster")
    parts = {
        "cost": priced.group_by("setup", "cluster").agg(v=pl.col("cost").sum()),
        "questions": priced.group_by("setup", "cluster").agg(
            v=pl.col("task_id").n_unique().cast(pl.Float64)),
        "resolved": resolved.group_by("setup", "cluster").agg(v=pl.len().cast(pl.Float64)),
        "slots": planned.group_by("setup", "cluster").agg(
            v=(pl.len() * repeats).cast(pl.Float64)),
    }
    columns = []
    for name in names:
        for part in parts.values():
            column = keys.join(part.filter(pl.col("setup") == name).drop("setup"),
                               on="cluster", how="left").get_column("v").fill_null(0.0)
            columns.append(column.to_numpy())
    table = np.column_stack(columns)  # clusters x (setups x 4)
    point_cost = ratio(table[:, 0::4].sum(axis=0), table[:, 1::4].sum(axis=0))
    point_rate = np.array([rates[name] for name in names], dtype=float)
    on = ~dominated(point_cost, point_rate)
    share: list[float | None] = [None] * len(names)
    if keys.height >= 2:
        sums = resampled_sums(table, seed, resamples)
        cost = ratio(sums[:, 0::4], sums[:, 1::4])
        rate = ratio(sums[:, 2::4], sums[:, 3::4])
        share = (~dominated(cost, rate)).mean(axis=0).tolist()
    return pl.DataFrame({"setup": names, "on_frontier": on.tolist(), "p_on_frontier": share},
                        schema=schema)
