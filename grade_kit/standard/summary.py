"""The grading and timing standard of one evaluation, assembled (docs/methodology.md §4, §5):
per setup its grades, timing, tool calls and re-runs; the common subset with each setup on
it; and the comparisons of every pair of setups on all questions and on the common subset."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal

import polars as pl

from grade_kit.exact import divide
from grade_kit.frames import EvalData, frames_repr, frames_repr_html
from grade_kit.reading.prices import Prices
from grade_kit.schema import (
    COVERAGE_MIN,
    FOUR_GRADES,
    CommonSubset,
    Comparison,
    CostSummary,
    InputError,
    Plan,
    Rerun,
    SubsetSetup,
)
from grade_kit.standard.clustered import Cluster, cluster_of_tasks, interval_basis
from grade_kit.standard.compare import (
    DEFAULT_SEED,
    adjust_by_holm,
    compare_pair,
    figures_frame,
    forget_resamples,
    verdict_intervals,
)
from grade_kit.standard.cost import COST_COLUMNS, cost_frame, frontier, run_costs
from grade_kit.standard.grade_rates import (
    common_subset,
    grade_frame,
    grade_summaries,
    plan_repeats,
    planned_slots,
    question_states,
    ranked_setups,
    run_grades,
    setup_plan,
)
from grade_kit.standard.reliability import flaky_questions, reliability_frame
from grade_kit.standard.significance import forget_flips
from grade_kit.standard.source import source_metrics_by_setup
from grade_kit.standard.stats import rows_by_setup
from grade_kit.standard.timing import (
    TimingFrames,
    calls_per_run,
    e2e_frame,
    per_question_median,
    timing_frame,
    timing_summaries,
    tool_call_frame,
    tool_call_summaries,
    working_frame,
)

COMMON_RULE = "tasks whose every planned slot is resolved for every ranked setup"

_RATE_COLUMNS = ("_rate", "_ci_low", "_ci_high", "_design_effect", "_icc", "_n_effective")
"""The columns of a grade frame that are rates or their intervals: null for an unranked
setup (its coverage and counts stay)."""


@dataclass(frozen=True, repr=False)
class StandardResults:
    """The standard's frames and typed summaries for one evaluation.

    Attributes:
        graded: Every run's grade (:func:`~grade_kit.standard.grade_rates.run_grades`).
        plan_frame: Every planned (setup, question).
        slots: Every filled planned slot with its state (unfilled ones are counted).
        e2e: E2E seconds of every delivered run carrying both events (re-runs included).
        plan: R, and whether it was given or inferred.
        grades: Per setup and subset (``all``, ``common``), its grades over N
            (:func:`~grade_kit.standard.grade_rates.grade_frame`; ``subset`` after
            ``setup``): what each setup's typed grade summary is built from.
        timing: Per setup and subset, its timing
            (:func:`~grade_kit.standard.timing.timing_frame`'s rows), the same way.
        tool_calls: Per setup and subset, its tool calls
            (:func:`~grade_kit.standard.timing.tool_call_frame`), the same way.
        setups: Per setup, its summaries on all questions.
        reruns: Per setup, its re-runs.
        common: The common subset, with each setup's summaries on it.
        comparisons: Every pair of the compared setups (B against A, alphabetical) on
            ``all`` and ``common``.
        figures: Their figures, one row each
            (:func:`~grade_kit.standard.compare.figures_frame`): what ``ev.comparisons``,
            the tables, the charts and the headline read.
        per_question: Per (setup, task) with a primary run in the plan, for ranked setups
            (coverage at least :data:`~grade_kit.standard.grade_rates.COVERAGE_MIN`): median
            E2E, median working time, mean tool calls per run, GRADE composite; what the
            comparisons and rank intervals pair.
        run_calls: :func:`~grade_kit.standard.timing.calls_per_run` of every run
            that exposes tools (the per-question figures and the runs frame read it).
        compared: The setups compared pair by pair (:func:`compared_setups`).
        reliability: Per setup, subset and k, pass@k and pass^k with intervals
            (:func:`~grade_kit.standard.reliability.reliability_frame`).
        flaky: Per setup, the questions resolved in some of their R slots but not all
            (:func:`~grade_kit.standard.reliability.flaky_questions`).
        run_costs: Every run with usage: its tokens and cost
            (:func:`~grade_kit.standard.cost.run_costs`); empty when none has usage.
        cost: Per setup and subset, its tokens and cost, on all questions with its place on
            the cost-accuracy frontier (:func:`~grade_kit.standard.cost.cost_frame`,
            :func:`~grade_kit.standard.cost.frontier`); empty when no run has usage.
    """

    graded: pl.DataFrame
    plan_frame: pl.DataFrame
    slots: pl.DataFrame
    e2e: pl.DataFrame
    plan: Plan
    grades: pl.DataFrame
    timing: pl.DataFrame
    tool_calls: pl.DataFrame
    setups: dict[str, SubsetSetup]
    reruns: dict[str, list[Rerun]]
    common: CommonSubset
    comparisons: list[Comparison]
    figures: pl.DataFrame
    per_question: pl.DataFrame
    run_calls: pl.DataFrame
    compared: list[str]
    reliability: pl.DataFrame
    flaky: pl.DataFrame
    run_costs: pl.DataFrame
    cost: pl.DataFrame

    def __repr__(self) -> str:
        frames = frames_repr("", vars(self)).strip("()")
        return (f"StandardResults(R = {self.plan.repeats}, {len(self.setups)} setups, "
                f"{self.common.questions} common questions, {len(self.comparisons)} "
                f"comparisons; {frames})")

    def _repr_html_(self) -> str:
        return frames_repr_html(repr(self).split(";")[0] + ")", vars(self))


def per_question_figures(data: EvalData, slots: pl.DataFrame, e2e: pl.DataFrame,
                         task_composites: pl.DataFrame | None,
                         run_calls: pl.DataFrame | None = None,
                         repeats: int | None = None,
                         run_cost: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per (setup, task) over the planned slots that a primary run fills: median E2E, median
    working time, mean tool calls per exposed delivered run, and the task's GRADE
    composite.

    Args:
        data: The evaluation's frames.
        slots: :func:`~grade_kit.standard.grade_rates.planned_slots`.
        e2e: :func:`~grade_kit.standard.timing.e2e_frame`.
        task_composites: Per (setup, task) composites, or None (no composite column).
        run_calls: :func:`~grade_kit.standard.timing.calls_per_run` of every run
            (``data.runs``), when already made; default None (made here).
        repeats: R; when given, each grade's per-question rate too (``resolved_rate``, ...:
            its slots / R); default None.
        run_cost: :func:`~grade_kit.standard.cost.run_costs`; when it has a row, the mean
            tokens and dollars per run of the question's primary runs in the plan that
            record them too (``tokens_per_run``, ``cost_per_run``); default None.

    Returns:
        setup, task_id, e2e_median_s[, working_median_s where some run records working
        time], tool_calls_per_run[, composite], and per grade of the four its slots
        (``resolved_slots``, ...: the question's planned slots a primary run filled with it)
        [and its rate, ``resolved_rate``, ..., with ``repeats``].
    """
    if run_calls is None:
        run_calls = calls_per_run(data.runs, data.tool_calls)
    delivered_calls = run_calls.join(
        data.runs.select("run_id", "status").filter(pl.col("status") == "delivered"),
        on="run_id", how="semi")
    filled = slots.select("setup", "task_id", "run_id")
    per_q = filled.select("setup", "task_id").unique()
    medians = per_question_median(e2e.join(filled.select("run_id"), on="run_id"))
    per_q = per_q.join(medians, on=["setup", "task_id"], how="left")
    working = working_frame(data.runs)
    if working.height:  # a figure only where some source records working time
        per_q = per_q.join(per_question_median(working.join(filled.select("run_id"),
                                                            on="run_id"), "working_median_s"),
                           on=["setup", "task_id"], how="left")
    calls = (filled.join(delivered_calls, on="run_id")
             .group_by("setup", "task_id").agg(tool_calls_per_run=pl.col("calls").mean()))
    per_q = per_q.join(calls, on=["setup", "task_id"], how="left")
    if run_cost is not None and run_cost.height:  # only where some run records usage
        spent = filled.join(run_cost.select("run_id", "tokens", "cost"), on="run_id").group_by(
            "setup", "task_id").agg(tokens_per_run=pl.col("tokens").cast(pl.Float64).mean(),
                                    cost_per_run=pl.col("cost").mean())
        per_q = per_q.join(spent, on=["setup", "task_id"], how="left")
    if task_composites is not None:
        per_q = per_q.join(task_composites.select("setup", "task_id", "composite"),
                           on=["setup", "task_id"], how="left")
    counts = filled.join(slots.select("run_id", "state"), on="run_id").group_by(
        "setup", "task_id").agg(**{f"{g}_slots": (pl.col("state") == g).sum().cast(pl.Int64)
                                   for g in FOUR_GRADES})
    per_q = per_q.join(counts, on=["setup", "task_id"], how="left")
    if repeats is not None:
        per_q = per_q.with_columns(  # IEEE division (a literal divisor: grade_kit.exact)
            divide(per_q, pl.col(f"{g}_slots"), pl.lit(repeats)).alias(f"{g}_rate")
            for g in FOUR_GRADES)
    return per_q.sort("setup", "task_id")


@dataclass(frozen=True)
class _Summaries:
    """A subset's summaries, made for every setup at once: frames, then typed."""

    grades: tuple[pl.DataFrame, pl.DataFrame]
    timing: TimingFrames
    tool_calls: tuple[pl.DataFrame, pl.DataFrame]
    setups: dict[str, SubsetSetup]


def _summaries(data: EvalData, grades: tuple[pl.DataFrame, pl.DataFrame], slots: pl.DataFrame,
               setups: list[str], exclude_channel_overhead: bool,
               reliability: pl.DataFrame, flaky: pl.DataFrame,
               clusters: pl.DataFrame | None) -> _Summaries:
    """Each setup's timing, tool calls and source metrics on the subset of filled ``slots``,
    beside its ``grades`` there (:func:`~grade_kit.standard.grade_rates.grade_frame`) with
    its ``reliability`` and ``flaky`` questions."""
    timing = timing_frame(data.runs, data.events, slots, setups,
                          exclude_channel_overhead=exclude_channel_overhead, clusters=clusters)
    calls = tool_call_frame(data.runs, data.tool_calls, slots, setups, clusters)
    typed_grades = grade_summaries(*grades, reliability=reliability, flaky=flaky)
    typed_calls = tool_call_summaries(*calls)
    typed_timing = timing_summaries(timing, exclude_channel_overhead=exclude_channel_overhead)
    sources = source_metrics_by_setup(data.runs, slots)
    return _Summaries(grades, timing, calls, {s: SubsetSetup(
        grades=typed_grades[s], timing=typed_timing[s], tool_calls=typed_calls[s],
        source_metrics=sources.get(s, {})) for s in setups})


def _reruns(graded: pl.DataFrame, e2e: pl.DataFrame,
            setups: list[str]) -> dict[str, list[Rerun]]:
    """Each setup's re-runs, by task, repeat and run id."""
    rows = graded.filter(~pl.col("is_primary")).join(
        e2e.select("run_id", e2e_s=pl.col("seconds")), on="run_id", how="left")
    listed = rows_by_setup(rows.select(
        "setup", "run_id", "attempt_of", "task_id", "repeat", "status", "grade", "e2e_s",
    ).sort("setup", "task_id", "repeat", "run_id"))
    return {s: [Rerun(**row) for row in listed.get(s, [])] for s in setups}


def _by_subset(frames: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """One frame of per-subset frames, ``subset`` after ``setup``."""
    return pl.concat([frame.insert_column(1, pl.lit(subset).alias("subset"))
                      for subset, frame in frames.items()])


MAX_SETUPS = 1_000
"""The most setups one evaluation summarises: every setup is summarised at once (1,000
setups' statistics take about 1 s here, docs/scaling.md), and the limit keeps one
evaluation's tables and pages bounded; more is refused with one clear error: evaluate them
in groups (docs/methodology.md §4 "Rates")."""

MAX_COMPARED_SETUPS = 20
"""With more setups than this, the pairwise comparisons are made among the this many with
the highest resolved rate only (docs/methodology.md §5): every pair of 5,000 setups would be
12.5 million comparisons."""


class TooManySetups(InputError):
    """More setups than :data:`MAX_SETUPS` in one evaluation (an input too large to
    evaluate at once: the CLI's one ``error:`` line, exit 1)."""


def compared_setups(per_setup: dict[str, SubsetSetup],
                    ranked: list[str] | None = None) -> list[str]:
    """The setups compared pair by pair (alphabetical): the ranked ones (default all; a
    setup below the coverage threshold never is) up to :data:`MAX_COMPARED_SETUPS`, else
    that many with the highest resolved rate on all questions (ties by name)."""
    names = sorted(per_setup if ranked is None else ranked)
    if len(names) <= MAX_COMPARED_SETUPS:
        return names
    ranked = sorted(names, key=lambda s: (-(per_setup[s].grades.rates.resolved or 0.0), s))
    return sorted(ranked[:MAX_COMPARED_SETUPS])


def standard_results(data: EvalData, repeats: int | None = None,
                     task_composites: pl.DataFrame | None = None,
                     seed: int = DEFAULT_SEED, *,
                     exclude_channel_overhead: bool = False,
                     stated_repeats: Mapping[str, int] | None = None,
                     cluster: Cluster = "question",
                     prices: Prices | None = None) -> StandardResults:
    """Grades, rates, timing and tool calls per setup, the common subset and comparisons.

    Args:
        data: The evaluation's frames (runs, events, tool_calls, grades, tasks).
        repeats: R, the planned repeats per task; default inferred (see
            :func:`~grade_kit.standard.grade_rates.plan_repeats`; the plan says so).
        task_composites: Per (setup, task) GRADE composites to compare; default None
            (timing and tool calls only).
        seed: Seed of the comparison bootstrap (recorded with every comparison).
        exclude_channel_overhead: Subtract agent-reported channel overhead from E2E (an
            explicit, labelled option; docs/methodology.md §4 "Timing"); default False.
        stated_repeats: R as the sources state it (what states it -> R), taken when
            ``repeats`` is None and they agree; default None.
        cluster: What the repeats are clustered by in every interval and paired test
            (docs/methodology.md §4 "Clusters"); default every question its own cluster.
        prices: Dollars per million tokens per model, for the runs whose source logged no
            cost (docs/methodology.md §4 "Cost"); default None (logged costs only).
    """
    setups = sorted(set(data.runs.get_column("setup").to_list()))
    if len(setups) > MAX_SETUPS:
        raise TooManySetups(f"{len(setups):,} setups: one evaluation summarises at most "
                            f"{MAX_SETUPS:,}; evaluate them in groups of "
                            "setups (split the run files by setup)")
    plan = plan_repeats(data.runs, repeats, stated_repeats)
    r = plan.repeats
    task_ids = data.tasks.get_column("task_id").to_list()
    graded = run_grades(data.runs, data.grades)
    plan_frame = setup_plan(data.runs, data.tasks)
    slots = planned_slots(graded, plan_frame, r)
    e2e = e2e_frame(data.runs, data.events, exclude_channel_overhead=exclude_channel_overhead)
    clusters = None if cluster == "question" else cluster_of_tasks(data.tasks, cluster)
    basis = interval_basis(cluster, r)
    states = {"all": question_states(plan_frame, slots, r)}
    grades_all = grade_frame(plan_frame, slots, graded, setups, r, clusters, basis,
                             states["all"])
    coverage = dict(grades_all[0].select("setup", "run_coverage").iter_rows())
    ranked = ranked_setups(coverage, setups)
    plan = plan.model_copy(update={
        "coverage_min": COVERAGE_MIN,
        "unranked": {s: coverage.get(s) for s in setups if s not in ranked}})
    is_ranked = pl.col("setup").is_in(pl.Series(ranked, dtype=pl.String).implode())
    # An unranked setup has its coverage and counts, never a rate: its rates over N would
    # be mostly not-run slots read as measured (docs/methodology.md §4 "Coverage").
    grades_all = (grades_all[0].with_columns(
        pl.when(is_ranked).then(pl.col(c)).alias(c) for c in grades_all[0].columns
        if c.endswith(_RATE_COLUMNS)), grades_all[1])
    subset = common_subset(plan_frame.filter(is_ranked), slots.filter(is_ranked), r)
    in_subset = pl.col("task_id").is_in(pl.Series(subset, dtype=pl.String).implode())
    sub_plan = plan_frame.filter(in_subset & is_ranked)
    sub_slots = slots.filter(in_subset & is_ranked)
    # Per subset, every setup at once (frames, then typed); the common subset is the ranked
    # setups' only
    states["common"] = question_states(sub_plan, sub_slots, r)
    grades_common = grade_frame(sub_plan, sub_slots, graded, ranked, r, clusters, basis,
                                states["common"])
    reliability = {name: reliability_frame(frame.filter(is_ranked), r, name, clusters)
                   for name, frame in states.items()}
    flaky = {name: flaky_questions(frame.filter(is_ranked), r)
             for name, frame in states.items()}
    summaries = {name: _summaries(data, grades, on_slots, on_setups, exclude_channel_overhead,
                                  reliability[name], flaky[name], clusters)
                 for name, grades, on_slots, on_setups in (
                     ("all", grades_all, slots, setups),
                     ("common", grades_common, sub_slots, ranked))}
    per_setup = summaries["all"].setups
    reruns = _reruns(graded, e2e, setups)
    run_cost = run_costs(data.runs, data.usage, prices)
    cost = _cost(plan_frame, run_cost, {"all": (slots, setups), "common": (sub_slots, ranked)},
                 {s: per_setup[s].grades.rates.resolved
                  for s in compared_setups(per_setup, ranked)}, r, clusters, seed,
                 prices, {k: v.setups for k, v in summaries.items()})
    common = CommonSubset(
        tasks=subset, questions=len(subset), of_questions=len(task_ids), repeats=r,
        rule=COMMON_RULE, setups=summaries["common"].setups)
    run_calls = calls_per_run(data.runs, data.tool_calls)
    per_question = per_question_figures(data, slots.filter(is_ranked), e2e, task_composites,
                                        run_calls, repeats=r, run_cost=run_cost)
    ran: dict[str, set[str]] = {s: set() for s in setups}
    for setup, tasks in per_question.group_by("setup").agg("task_id").iter_rows():
        ran[setup] = set(tasks)
    compared = compared_setups(per_setup, ranked)
    jobs: list[tuple[str, str, list[str], Literal["all", "common"]]] = []
    for i, a in enumerate(compared):
        for b in compared[i + 1:]:
            jobs.append((a, b, sorted(ran[a] & ran[b]), "all"))
            jobs.append((a, b, subset, "common"))
    # Each comparison is independent, and its bootstrap spends its time in numpy, which
    # releases the GIL: two threads share the work (the same figures, in the same order).
    with ThreadPoolExecutor(max_workers=2) as pool:
        compared_pairs = list(pool.map(
            lambda job: compare_pair(per_question, job[0], job[1], job[2], len(task_ids),
                                     job[3], seed=seed, repeats=r, clusters=clusters), jobs))
    forget_resamples()  # their memory goes to what follows (results, the write)
    forget_flips()
    comparisons = [comparison for comparison, _ in compared_pairs]
    adjust_by_holm(comparisons)
    for comparison, inversions in compared_pairs:
        verdict_intervals(comparison, inversions)
    return StandardResults(
        graded=graded, plan_frame=plan_frame, slots=slots, e2e=e2e, plan=plan,
        grades=_by_subset({k: v.grades[0] for k, v in summaries.items()}),
        timing=_by_subset({k: v.timing.rows for k, v in summaries.items()}),
        tool_calls=_by_subset({k: v.tool_calls[0] for k, v in summaries.items()}),
        setups=per_setup,
        reruns=reruns, common=common,
        comparisons=comparisons, figures=figures_frame(comparisons),
        per_question=per_question, run_calls=run_calls,
        compared=compared, reliability=pl.concat(list(reliability.values())),
        flaky=flaky["all"], run_costs=run_cost, cost=cost)


def _cost(plan_frame: pl.DataFrame, run_cost: pl.DataFrame,
          subsets: Mapping[str, tuple[pl.DataFrame, list[str]]],
          rates: Mapping[str, float | None], repeats: int, clusters: pl.DataFrame | None,
          seed: int, prices: Prices | None,
          typed: Mapping[str, dict[str, SubsetSetup]]) -> pl.DataFrame:
    """Per subset, each setup's tokens and cost, on all questions with its place on the
    frontier of the compared setups (``rates``); each setup's typed summary gets its row.
    Empty, and nothing computed, when no run records usage."""
    if run_cost.is_empty():
        return pl.DataFrame(schema={"setup": pl.String, "subset": pl.String,
                                    **{k: v for k, v in COST_COLUMNS.items() if k != "setup"}})
    frames = {name: cost_frame(run_cost, on_slots, on_setups, clusters, seed, prices=prices)
              for name, (on_slots, on_setups) in subsets.items()}
    placed = frontier(plan_frame, subsets["all"][0], run_cost, rates, repeats, clusters, seed)
    frames["all"] = frames["all"].drop("on_frontier", "p_on_frontier").join(
        placed, on="setup", how="left").select(list(COST_COLUMNS))
    for name, frame in frames.items():
        for row in frame.iter_rows(named=True):
            setup = row.pop("setup")
            if setup in typed[name]:
                typed[name][setup] = typed[name][setup].model_copy(
                    update={"cost": CostSummary.model_validate(row)})
    return _by_subset(frames)
