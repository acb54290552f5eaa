"""grade_kit: defensible numbers from LLM and agent answers.

GRADE scores with a weighted composite, grades with honest denominators, timing and tool-call
statistics, dataframe-native. ``gk.evaluate(tasks, runs, judge="rules")`` is the one call; the
rules it implements are in docs/methodology.md, and each function cites the rule it implements.
Public functions accept pandas or polars frames and return the same kind.
"""

from grade_kit._version import __version__ as __version__
from grade_kit.adapters import read_inspect, read_tau_bench
from grade_kit.evaluation import (
    Evaluation,
    RunExplanation,
    evaluate,
    reopen,
    reopen_or_evaluate,
    score_partition,
)
from grade_kit.fetching import HTTPAgent, OpenAIChat, PythonCallable, Replay, fetch, fetch_setups
from grade_kit.frames import COLUMNS, EvalData
from grade_kit.grade import (
    ClaimJudge,
    GradeScores,
    PartitionScores,
    aggregate_scores,
    calibration_scores,
    claim_matches,
    cluster_findings,
    combine_scores,
    consistency_scores,
    fact_checks,
    finding_stability,
    grade_scores,
    grounding_scores,
    insight_scores,
    judged_scores,
    kendall_tau_b,
    metric_variance,
    partition_scores,
    ranking_stability,
    run_composites,
    run_scores,
    task_scores,
)
from grade_kit.inputs import Inputs, read_inputs
from grade_kit.io import Rejected
from grade_kit.judges import JUDGES, Grader, Judge, RuleJudge
from grade_kit.judges.calibration import CalibrationReview, calibration_review
from grade_kit.judges.grader import RuleGrader
from grade_kit.judges.llm import LLMClaimJudge, LLMJudge
from grade_kit.judges.llm_grader import LLMGrader, PairwiseVerdict
from grade_kit.packed import pack, partition_data
from grade_kit.schema import (
    DIMENSIONS,
    GRADE_STATES,
    PROJECT_WEIGHTS,
    Claim,
    GoldFact,
    Grade,
    Judgement,
    Results,
    Run,
    Task,
)
from grade_kit.standard import (
    bootstrap_mean_ci,
    questions_needed,
    rank_intervals,
    run_grades,
    summarize,
    wilson_interval,
)
from grade_kit.tables import Table, table
from grade_kit.text import normalize, parse_number, tokenize

__all__ = [
    "COLUMNS",
    "DIMENSIONS",
    "GRADE_STATES",
    "JUDGES",
    "PROJECT_WEIGHTS",
    "CalibrationReview",
    "Claim",
    "ClaimJudge",
    "EvalData",
    "Evaluation",
    "GoldFact",
    "Grade",
    "GradeScores",
    "Grader",
    "HTTPAgent",
    "Inputs",
    "Judge",
    "Judgement",
    "LLMClaimJudge",
    "LLMGrader",
    "LLMJudge",
    "OpenAIChat",
    "PairwiseVerdict",
    "PartitionScores",
    "PythonCallable",
    "Rejected",
    "Replay",
    "Results",
    "RuleGrader",
    "RuleJudge",
    "Run",
    "RunExplanation",
    "Table",
    "Task",
    "aggregate_scores",
    "bootstrap_mean_ci",
    "calibration_review",
    "calibration_scores",
    "claim_matches",
    "cluster_findings",
    "combine_scores",
    "consistency_scores",
    "evaluate",
    "fact_checks",
    "fetch",
    "fetch_setups",
    "finding_stability",
    "grade_scores",
    "grounding_scores",
    "insight_scores",
    "judged_scores",
    "kendall_tau_b",
    "metric_variance",
    "normalize",
    "pack",
    "parse_number",
    "partition_data",
    "partition_scores",
    "questions_needed",
    "rank_intervals",
    "ranking_stability",
    "read_inputs",
    "read_inspect",
    "read_tau_bench",
    "reopen",
    "reopen_or_evaluate",
    "run_composites",
    "run_grades",
    "run_scores",
    "score_partition",
    "summarize",
    "table",
    "task_scores",
    "tokenize",
    "wilson_interval",
]
