"""The offline rule grader (``rules-grader@1``): a grade record for every delivered run of a
GRADE task, derived deterministically from the GRADE checks (docs/methodology.md §4 "The rule
grader"). The grading order of §4 "Grades" then turns each record into a grade.

Rules, in order:

1. **Material error** (``material_error: yes``, core ``material_error``): a forbidden claim is
   stated (the record's claim is the answer text that states it, its evidence the claim the
   data cannot support), or a gold fact's metric is reported, parses, and is outside its
   tolerance (claim: the metric and the reported value; evidence: the gold value and
   tolerance). A missing or unparsable metric is not a material error: it is incompleteness.
   The first error in task order is the record's claim; the reason lists them all.
2. **No gradable conclusion** (core ``no_gradable_conclusion``): no non-empty key finding and
   no structured metric.
3. Otherwise the core conclusion is ``correct``.
4. **Request fulfilment**: ``not_met`` without a non-empty key finding; ``full`` when every gold
   fact passes and every gold insight is found; ``partial`` otherwise.
5. **Needs more information** (the interaction state beside the grade): true when a key
   finding or the answer's text asks the user something, that is contains one of
   :data:`~grade_kit.text.ASKING_PHRASES` as a run of normalised tokens
   (docs/methodology.md §3 "Text"); limitations and recommendations are not read (they may
   rightly say data are missing).
   Only asking (no finding) is therefore ``not_met``, so unresolved; answering part and then
   asking can be partial.

A run with a recorded grade record keeps it (a person's grade is never replaced).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from grade_kit.frames import COLUMNS
from grade_kit.schema import Grade, Run, Task
from grade_kit.text import asks_for_more_information

RULE_GRADER = "rules-grader@1"

def _tolerance(row: dict[str, object]) -> str:
    parts = [f"{k} {row[k]}" for k in ("abs_tol", "rel_tol") if row.get(k) is not None]
    return f" ({', '.join(parts)})" if parts else " (exact)"


def rule_grades(runs: pl.DataFrame, items: pl.DataFrame, metrics: pl.DataFrame,
                matches: pl.DataFrame, checks: pl.DataFrame,
                recorded: pl.DataFrame) -> pl.DataFrame:
    """Grade records (the ``grades`` frame's columns) for every delivered run of a GRADE task
    that has no recorded grade record.

    Args:
        runs: The runs of GRADE tasks (``has_response`` tells delivered answers).
        items: Answer items (for the findings).
        metrics: Reported metrics.
        matches: :func:`grade_kit.scorers.claim_matches` of those runs.
        checks: :func:`grade_kit.scorers.fact_checks` of those runs.
        recorded: The recorded grades frame (its runs are left alone).
    """
    todo = (runs.filter(pl.col("has_response"))
            .join(recorded.select("run_id"), on="run_id", how="anti")
            .select("run_id").get_column("run_id").to_list())
    if not todo:
        return pl.DataFrame(schema=COLUMNS["grades"])
    wanted = pl.col("run_id").is_in(pl.Series(todo, dtype=pl.String).implode())
    findings = dict(items.filter(wanted & (pl.col("field") == "finding") & (pl.col("norm") != ""))
                    .group_by("run_id").len().iter_rows())
    reported = set(metrics.filter(wanted).get_column("run_id").to_list())
    asking = set(items.filter(wanted & pl.col("field").is_in(["finding", "text"])
                              & asks_for_more_information(pl.col("norm")))
                 .get_column("run_id").to_list())
    errors: dict[str, list[tuple[str, str, str]]] = {}
    for row in (matches.filter(wanted & (pl.col("role") == "forbidden") & pl.col("found"))
                .sort("run_id", "claim_id").iter_rows(named=True)):
        stated = row.get("matched_text") or "(stated in the answer)"
        errors.setdefault(row["run_id"], []).append((
            str(stated), f"forbidden claim {row['claim_id']}: the data cannot support it",
            "states a conclusion the data do not support"))
    wrong = checks.filter(wanted & pl.col("parsed").is_not_null() & ~pl.col("passed"))
    for row in wrong.sort("run_id", "fact_id").iter_rows(named=True):
        errors.setdefault(row["run_id"], []).append((
            f"{row['metric']} = {row['reported']}",
            f"gold {row['gold']}{_tolerance(row)} (fact {row['fact_id']})",
            "a reported figure is outside its tolerance"))
    facts_ok = dict(checks.filter(wanted).group_by("run_id")
                    .agg(pl.col("passed").all()).iter_rows())
    insights_ok = dict(matches.filter(wanted & (pl.col("role") == "insight"))
                       .group_by("run_id").agg(pl.col("found").all()).iter_rows())
    rows = []
    for run_id in todo:
        found = findings.get(run_id, 0)
        errs = errors.get(run_id, [])
        if errs:
            core, material = "material_error", "yes"
        elif not found and run_id not in reported:
            core, material = "no_gradable_conclusion", "no"
        else:
            core, material = "correct", "no"
        complete = facts_ok.get(run_id, True) and insights_ok.get(run_id, True)
        fulfil = "not_met" if not found else ("full" if complete else "partial")
        facts_word = "all" if facts_ok.get(run_id, True) else "not all"
        insights_word = "all" if insights_ok.get(run_id, True) else "not all"
        reason = (f"{found} finding(s); gold facts {facts_word} within tolerance; gold "
                  f"insights {insights_word} found")
        if errs:
            reason += "; material error(s): " + "; ".join(f"{c} ({e})" for c, e, _ in errs)
        first = errs[0] if errs else (None, None, None)
        rows.append({"run_id": run_id, "core_conclusion": core, "request_fulfilment": fulfil,
                     "material_error": material, "claim": first[0], "evidence": first[1],
                     "effect": first[2], "grader": RULE_GRADER, "reason": reason,
                     "needs_more_information": run_id in asking})
    return pl.DataFrame(rows, schema=COLUMNS["grades"])


class RuleGrader:
    """The rule grader as a :class:`~grade_kit.judges.Grader` object: grade records for the
    delivered runs of GRADE tasks, by exactly the rules above (``gk.evaluate(grader=
    "rules")`` applies the same rules on the frames it already has)."""

    name = RULE_GRADER

    def __call__(self, tasks: Sequence[Task], runs: Sequence[Run]) -> list[Grade]:
        from grade_kit.frames import EvalData
        from grade_kit.scorers import fact_checks, grade_scores

        data = EvalData.from_records(tasks, runs, [], [], None)
        scores = grade_scores(data, None)
        grade_runs = data.runs.join(scores.runs.select("run_id"), on="run_id", how="semi")
        checks = fact_checks(data.facts, grade_runs, data.metrics)
        assert isinstance(checks, pl.DataFrame)
        frame = rule_grades(grade_runs, data.items, data.metrics, scores.matches, checks,
                            data.grades)
        return [Grade.model_validate({k: v for k, v in row.items() if v is not None})
                for row in frame.iter_rows(named=True)]

    def __repr__(self) -> str:
        return f"RuleGrader({self.name!r})"
