"""The grading and timing standard (docs/methodology.md §4): grades, rates over honest
denominators with Wilson intervals, stable resolution, the common subset, timing, tool calls,
setup comparisons and blind grading. :func:`standard_results` assembles them."""

from grade_kit.standard.clustered import (
    CLUSTERS,
    Cluster,
    cluster_of_tasks,
    clustered_mean_ci,
    clustered_rates,
)
from grade_kit.standard.compare import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    bootstrap_mean_ci,
    compare_setups,
)
from grade_kit.standard.grade_rates import (
    common_subset,
    grade_frame,
    grade_summaries,
    plan_repeats,
    planned_slots,
    resolved_questions,
    run_grades,
    setup_plan,
)
from grade_kit.standard.ranking import (
    questions_and_repeats,
    questions_needed,
    rank_intervals,
    rank_ranges,
)
from grade_kit.standard.stats import median, nearest_rank, summarize, wilson_interval
from grade_kit.standard.summary import StandardResults, per_question_figures, standard_results
from grade_kit.standard.timing import (
    TimingFrames,
    calls_per_run,
    e2e_frame,
    event_offsets,
    per_question_median,
    timing_frame,
    timing_summaries,
    tool_call_frame,
    tool_call_summaries,
)

__all__ = [
    "CLUSTERS",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "Cluster",
    "StandardResults",
    "TimingFrames",
    "bootstrap_mean_ci",
    "calls_per_run",
    "cluster_of_tasks",
    "clustered_mean_ci",
    "clustered_rates",
    "common_subset",
    "compare_setups",
    "e2e_frame",
    "event_offsets",
    "grade_frame",
    "grade_summaries",
    "median",
    "nearest_rank",
    "per_question_figures",
    "per_question_median",
    "plan_repeats",
    "planned_slots",
    "questions_and_repeats",
    "questions_needed",
    "rank_intervals",
    "rank_ranges",
    "resolved_questions",
    "run_grades",
    "setup_plan",
    "standard_results",
    "summarize",
    "timing_frame",
    "timing_summaries",
    "tool_call_frame",
    "tool_call_summaries",
    "wilson_interval",
]
