"""The offline rule judge (the default judge): evidence linkage and structure & usability.

Deterministic; every criterion below is a pass (1) or fail (0) and a dimension's score is the
mean of the criteria that apply. Judgements carry ``judge = "rules@<version>"`` and a reason
naming the criteria that failed, like any other judgement.

Evidence linkage, from the task's ``evidence`` spec:

- ``sources``: share of the named source files mentioned anywhere in the answer;
- ``columns``: share of the named columns mentioned (whole tokens, so ``pre_score`` matches
  "pre_score" and "pre score");
- ``entity_ids`` (an id prefix such as ``"T-"``): an id of that form (``T-07``) appears in the
  findings or recommendations;
- ``rates: true``: a numeric figure (a percentage such as 18.1%, or a decimal such as 0.18 or
  8.4 points) appears in the findings;
- ``strict: true`` (track 3): the score is 0 when a required entity id or rate is missing.

A spec with none of these gives the judge nothing to check: the score is null, with that reason.

Structure & usability:

- ``findings``: at least one non-empty key finding;
- ``limitations_apart``: the task requires limitations and the answer lists them in their own
  field (not folded into the findings);
- ``recommendations_apart`` (track 3): recommendations in their own field, and no finding that
  is itself a recommendation ("should", "recommend");
- ``units``: every percentage is at most 100, and every ``*_rate`` structured metric is a
  fraction in [0, 1] (percent vs fraction kept straight);
- ``ratios``: a ``*_ratio`` metric is not written as a percentage in the text (a ratio of 2.6
  is "2.6x", not "260%": ratios and percentage points kept apart);
- ``scannable``: one to seven findings, each at most 45 words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from grade_kit.schema import Judgement, Run, Task
from grade_kit.text import contains_run, normalize, parse_number

VERSION = "1"
JUDGE = f"rules@{VERSION}"

_PERCENT = re.compile(r"(\d+(?:\.\d+)?)\s*%")
_FIGURE = re.compile(r"\d+(?:\.\d+)?\s*%|\d+\.\d+")
_RECOMMEND = re.compile(r"\b(should|recommend|recommended|we suggest)\b", re.IGNORECASE)
MAX_FINDINGS = 7
MAX_WORDS = 45


def _all_text(run: Run) -> str:
    r = run.response
    if r is None:
        return ""
    return "\n".join([*r.key_findings, *r.limitations, *r.recommendations, r.text])


def evidence_linkage(task: Task, run: Run) -> tuple[float | None, str]:
    """(score, reason) for one delivered run; score None when the spec has nothing to check."""
    spec = task.evidence
    response = run.response
    assert response is not None
    everything = _all_text(run).casefold()
    norm_all = normalize(_all_text(run))
    findings_text = "\n".join([*response.key_findings, *response.recommendations])
    checks: dict[str, float] = {}
    sources = [str(s) for s in spec.get("sources") or []]
    if sources:
        checks["sources"] = sum(s.casefold() in everything for s in sources) / len(sources)
    columns = [str(c) for c in spec.get("columns") or []]
    if columns:
        checks["columns"] = sum(contains_run(norm_all, normalize(c)) for c in columns) / len(
            columns)
    prefix = spec.get("entity_ids")
    if isinstance(prefix, str) and prefix:
        pattern = re.compile(rf"(?<![A-Za-z]){re.escape(prefix)}\d+", re.IGNORECASE)
        checks["entity_ids"] = 1.0 if pattern.search(findings_text) else 0.0
    if spec.get("rates"):
        checks["rates"] = 1.0 if _FIGURE.search("\n".join(response.key_findings)) else 0.0
    if not checks:
        return None, "the evidence spec names no sources, columns, entity ids or rates"
    failed = sorted(k for k, v in checks.items() if v < 1)
    if spec.get("strict") and (checks.get("entity_ids") == 0 or checks.get("rates") == 0):
        return 0.0, "strict: " + ", ".join(k for k in ("entity_ids", "rates")
                                           if checks.get(k) == 0) + " missing"
    score = sum(checks.values()) / len(checks)
    return score, "all criteria met" if not failed else "short on: " + ", ".join(failed)


def structure_usability(task: Task, run: Run) -> tuple[float, str]:
    """(score, reason) for one delivered run."""
    response = run.response
    assert response is not None
    findings = [f for f in response.key_findings if normalize(f)]
    checks: dict[str, bool] = {"findings": bool(findings)}
    if task.required_limitations:
        checks["limitations_apart"] = bool([x for x in response.limitations if normalize(x)])
    if task.track == 3:
        checks["recommendations_apart"] = (
            bool([x for x in response.recommendations if normalize(x)])
            and not any(_RECOMMEND.search(f) for f in findings))
    text = _all_text(run)
    percents_ok = all(float(p) <= 100 for p in _PERCENT.findall(text))
    rates_ok = all(
        (n := parse_number(v)) is None or 0.0 <= n <= 1.0
        for k, v in response.structured_metrics.items() if k.endswith("_rate"))
    checks["units"] = percents_ok and rates_ok
    ratios = [parse_number(v) for k, v in response.structured_metrics.items()
              if k.endswith("_ratio")]
    as_percent = [f"{r * 100:.0f}%" for r in ratios if r is not None]
    checks["ratios"] = not any(p in text for p in as_percent)
    checks["scannable"] = (1 <= len(findings) <= MAX_FINDINGS
                           and all(len(f.split()) <= MAX_WORDS for f in findings))
    failed = sorted(k for k, ok in checks.items() if not ok)
    score = sum(checks.values()) / len(checks)
    return score, "all criteria met" if not failed else "failed: " + ", ".join(failed)


def rule_judgements(tasks: Sequence[Task], runs: Sequence[Run]) -> list[Judgement]:
    """Judgements of both judged dimensions for every delivered run of a GRADE task.

    Runs without a response get none (the scorer gives them 0 where the task defines the
    dimension).
    """
    by_id = {t.task_id: t for t in tasks if t.kind == "grade"}
    out = []
    for run in runs:
        task = by_id.get(run.task_id)
        if task is None or run.status != "delivered" or run.response is None:
            continue
        ev_score, ev_reason = evidence_linkage(task, run)
        su_score, su_reason = structure_usability(task, run)
        out.append(Judgement(run_id=run.run_id, dimension="evidence_linkage", score=ev_score,
                             judge=JUDGE, reason=ev_reason))
        out.append(Judgement(run_id=run.run_id, dimension="structure_usability",
                             score=su_score, judge=JUDGE, reason=su_reason))
    return out
