"""grade_kit: defensible numbers from LLM and agent answers.

GRADE scores with a weighted composite, grades with honest denominators, timing and tool-call
statistics, dataframe-native. ``gk.evaluate(tasks, runs, judge="rules")`` is the one call; the
rules it implements are in docs/methodology.md, and each function cites the rule it implements.
Public functions accept pandas or polars frames and return the same kind.
"""

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from grade_kit.adapters import read_inspect, read_tau_bench
    from grade_kit.evaluate import (
        Evaluation,
        RunExplanation,
        evaluate,
        reopen,
        reopen_or_evaluate,
        score_partition,
    )
    from grade_kit.fetch import HTTPAgent, OpenAIChat, PythonCallable, Replay, fetch, fetch_setups
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

__version__ = "0.2.0"

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

# Names are imported when first used (PEP 562): ``import grade_kit`` stays light, and a
# process that needs one module (a reading process, the CLI's --help) does not import them
# all (about 1.3 s).
_EXPORTS: dict[str, str] = {
    "read_inspect": "grade_kit.adapters",
    "read_tau_bench": "grade_kit.adapters",
    "Evaluation": "grade_kit.evaluate",
    "RunExplanation": "grade_kit.evaluate",
    "evaluate": "grade_kit.evaluate",
    "reopen": "grade_kit.evaluate",
    "reopen_or_evaluate": "grade_kit.evaluate",
    "score_partition": "grade_kit.evaluate",
    "HTTPAgent": "grade_kit.fetch",
    "OpenAIChat": "grade_kit.fetch",
    "PythonCallable": "grade_kit.fetch",
    "Replay": "grade_kit.fetch",
    "fetch": "grade_kit.fetch",
    "fetch_setups": "grade_kit.fetch",
    "COLUMNS": "grade_kit.frames",
    "EvalData": "grade_kit.frames",
    "ClaimJudge": "grade_kit.grade",
    "GradeScores": "grade_kit.grade",
    "PartitionScores": "grade_kit.grade",
    "aggregate_scores": "grade_kit.grade",
    "calibration_scores": "grade_kit.grade",
    "claim_matches": "grade_kit.grade",
    "cluster_findings": "grade_kit.grade",
    "combine_scores": "grade_kit.grade",
    "consistency_scores": "grade_kit.grade",
    "fact_checks": "grade_kit.grade",
    "finding_stability": "grade_kit.grade",
    "grade_scores": "grade_kit.grade",
    "grounding_scores": "grade_kit.grade",
    "insight_scores": "grade_kit.grade",
    "judged_scores": "grade_kit.grade",
    "kendall_tau_b": "grade_kit.grade",
    "metric_variance": "grade_kit.grade",
    "partition_scores": "grade_kit.grade",
    "ranking_stability": "grade_kit.grade",
    "run_composites": "grade_kit.grade",
    "run_scores": "grade_kit.grade",
    "task_scores": "grade_kit.grade",
    "Inputs": "grade_kit.inputs",
    "read_inputs": "grade_kit.inputs",
    "Rejected": "grade_kit.io",
    "Grader": "grade_kit.judges",
    "JUDGES": "grade_kit.judges",
    "Judge": "grade_kit.judges",
    "RuleJudge": "grade_kit.judges",
    "CalibrationReview": "grade_kit.judges.calibration",
    "calibration_review": "grade_kit.judges.calibration",
    "RuleGrader": "grade_kit.judges.grader",
    "LLMClaimJudge": "grade_kit.judges.llm",
    "LLMJudge": "grade_kit.judges.llm",
    "LLMGrader": "grade_kit.judges.llm_grader",
    "PairwiseVerdict": "grade_kit.judges.llm_grader",
    "pack": "grade_kit.packed",
    "partition_data": "grade_kit.packed",
    "Claim": "grade_kit.schema",
    "DIMENSIONS": "grade_kit.schema",
    "GRADE_STATES": "grade_kit.schema",
    "GoldFact": "grade_kit.schema",
    "Grade": "grade_kit.schema",
    "Judgement": "grade_kit.schema",
    "PROJECT_WEIGHTS": "grade_kit.schema",
    "Results": "grade_kit.schema",
    "Run": "grade_kit.schema",
    "Task": "grade_kit.schema",
    "bootstrap_mean_ci": "grade_kit.standard",
    "questions_needed": "grade_kit.standard",
    "rank_intervals": "grade_kit.standard",
    "run_grades": "grade_kit.standard",
    "summarize": "grade_kit.standard",
    "wilson_interval": "grade_kit.standard",
    "Table": "grade_kit.tables",
    "table": "grade_kit.tables",
    "normalize": "grade_kit.text",
    "parse_number": "grade_kit.text",
    "tokenize": "grade_kit.text",
}


class _Package(types.ModuleType):
    """This package, keeping its public names for its functions: importing the submodule
    ``grade_kit.evaluate`` (or ``grade_kit.fetch``) would otherwise bind the package's
    ``evaluate`` (``fetch``) to the module, as eager imports never let it."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, types.ModuleType) and name in _EXPORTS:
            return  # the submodule stays reachable as sys.modules["grade_kit.<name>"]
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'grade_kit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
