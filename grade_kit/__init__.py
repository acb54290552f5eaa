"""grade_kit: defensible numbers from LLM and agent answers.

GRADE scores with a weighted composite, grades with honest denominators, timing and tool-call
statistics, dataframe-native. See DESIGN.md §4 for every rule; each function cites the rule it
implements. Public functions accept pandas or polars frames and return the same kind.
"""

from grade_kit.evaluate import Evaluation, load_evaluation, score_evaluation
from grade_kit.frames import COLUMNS, EvalData, run_frames, task_frames, verdict_frames
from grade_kit.grade import (
    ClaimJudge,
    GradeScores,
    aggregate_scores,
    calibration_scores,
    claim_matches,
    cluster_findings,
    consistency_scores,
    fact_checks,
    finding_stability,
    grade_scores,
    grounding_scores,
    insight_scores,
    judged_scores,
    kendall_tau_b,
    metric_variance,
    ranking_stability,
    run_scores,
    task_scores,
)
from grade_kit.io import (
    Loaded,
    Rejected,
    load_grades,
    load_judgements,
    load_runs,
    load_tasks,
    write_rejects,
)
from grade_kit.report import build_results, scorecard_markdown, write_outputs
from grade_kit.schema import (
    DIMENSIONS,
    PROJECT_WEIGHTS,
    Claim,
    GoldFact,
    Grade,
    Judgement,
    Results,
    Run,
    Task,
)
from grade_kit.text import normalize, parse_number, tokenize

__version__ = "0.1.0"

__all__ = [
    "COLUMNS",
    "DIMENSIONS",
    "PROJECT_WEIGHTS",
    "Claim",
    "ClaimJudge",
    "EvalData",
    "Evaluation",
    "GoldFact",
    "Grade",
    "GradeScores",
    "Judgement",
    "Loaded",
    "Rejected",
    "Results",
    "Run",
    "Task",
    "aggregate_scores",
    "build_results",
    "calibration_scores",
    "claim_matches",
    "cluster_findings",
    "consistency_scores",
    "fact_checks",
    "finding_stability",
    "grade_scores",
    "grounding_scores",
    "insight_scores",
    "judged_scores",
    "kendall_tau_b",
    "load_evaluation",
    "load_grades",
    "load_judgements",
    "load_runs",
    "load_tasks",
    "metric_variance",
    "normalize",
    "parse_number",
    "ranking_stability",
    "run_frames",
    "run_scores",
    "score_evaluation",
    "scorecard_markdown",
    "task_frames",
    "task_scores",
    "tokenize",
    "verdict_frames",
    "write_outputs",
    "write_rejects",
]
