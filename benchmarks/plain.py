"""A plain row-at-a-time implementation of the rules (docs/methodology.md §3-§5), written
from their wording: no frames, one record at a time, Python's ``json`` and the pydantic
models to read, the one text normaliser (``grade_kit.text``) to match.

It serves twice: ``tests/standard/test_plain.py`` compares ``gk.evaluate`` with it on random and
boundary inputs (bad lines included), figure by figure and bit for bit; and ``make
bench-plain`` (``python -m benchmarks.plain [FOLDER] [--runs N]``) times both on the same
files (``tasks.jsonl``, ``runs.jsonl``, ``judgements.jsonl``, ``grades.jsonl``; by default
the seeded rich input of ``benchmarks/scale.py`` at 100k runs) and lists the figures that
differ: the baseline the issue measures speed against.

Scope: §3 per run, per (setup, task) with consistency, and per track, pack and setup; the
rule grader's records; §4 per setup over all questions and the common subset (plan with R
inferred, grades, rates and Wilson intervals, timing, timeouts and failures, tool calls);
§5 the paired figures of every comparison (not the bootstrap intervals). Reading keeps the
lines the models accept and that repeat no run_id or (setup, task, repeat) slot of a first
attempt (a re-run names its first attempt); the inputs the tests write break no other rule
of docs/methodology.md §2.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from fractions import Fraction
from itertools import combinations
from pathlib import Path
from statistics import median
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from grade_kit.schema import (
    DIMENSIONS,
    PER_RUN_DIMENSIONS,
    PROJECT_WEIGHTS,
    Grade,
    Judgement,
    Run,
    Task,
)
from grade_kit.text import (
    ASKING_PHRASES,
    contains_run,
    normalize,
    normalize_value,
    parse_number,
    tokenize,
)

__all__ = [
    "aggregate_differences",
    "clusters_by_definition",
    "consistency_by_definition",
    "differences",
    "plain_aggregates",
    "plain_rule_grades",
    "plain_scores",
    "plain_standard",
    "ranking_by_definition",
    "read_grades",
    "read_plain",
    "standard_differences",
]

Model = TypeVar("Model", bound=BaseModel)
JUDGED = ("evidence_linkage", "structure_usability")


def _records(path: Path, model: type[Model]) -> Iterator[Model]:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                yield model.model_validate(json.loads(line))
            except (ValueError, ValidationError):
                continue  # a bad line: left out, as the loader rejects it


def read_plain(tasks: Path, runs: Path, judgements: Path | None = None
               ) -> tuple[list[Task], list[Run], list[Judgement]]:
    """The records of three JSONL files, one line at a time."""
    task_list = list(_records(tasks, Task))
    known = {t.task_id for t in task_list}
    run_list: list[Run] = []
    ids: set[str] = set()
    slots: set[tuple[str, str, int]] = set()
    for run in _records(runs, Run):
        slot = (run.setup, run.task_id, run.repeat)
        if run.task_id not in known or run.run_id in ids:
            continue
        if run.attempt_of is None and slot in slots:
            continue
        ids.add(run.run_id)
        if run.attempt_of is None:
            slots.add(slot)
        run_list.append(run)
    judged = list(_records(judgements, Judgement)) if judgements else []
    return task_list, run_list, judged


def read_grades(path: Path) -> list[Grade]:
    """The grade records of a JSONL file, one line at a time."""
    return list(_records(path, Grade))


def _mean(values: Sequence[float | None]) -> float | None:
    """§3 "Arithmetic": fsum / n over the non-null values."""
    present = [v for v in values if v is not None]
    return math.fsum(present) / len(present) if present else None


def _composite(dims: dict[str, float | None], weights: dict[str, float]) -> float | None:
    """§3 "Aggregation": weights over the non-null dimensions, renormalised; both sums added
    left to right in the order of ``weights``."""
    numerator = denominator = 0.0
    for name, weight in weights.items():
        value = dims.get(name)
        if value is not None:
            numerator += weight * value
            denominator += weight
    return numerator / denominator if denominator != 0 else None


def _stated(claim: Any, texts: Sequence[str]) -> bool:
    """§3 "Claim match", deterministic, in any one of ``texts``."""
    for text in texts:
        norm = normalize(text)
        if claim.patterns is None:
            if contains_run(norm, normalize(claim.text)):
                return True
        elif any(all(any(contains_run(norm, normalize(s)) for s in term.split("|"))
                     for term in alternative) for alternative in claim.patterns):
            return True
    return False


def _fact_passes(fact: Any, metrics: dict[str, Any]) -> bool:
    """§3 "Grounding accuracy"."""
    if fact.metric not in metrics:
        return False
    predicted = metrics[fact.metric]
    if isinstance(fact.value, str):
        return isinstance(predicted, str) and (
            normalize_value(predicted) == normalize_value(fact.value))
    number = parse_number(predicted)
    if number is None:
        return False
    gold = float(fact.value)
    diff = abs(number - gold)
    if fact.abs_tol is None and fact.rel_tol is None:
        return diff <= 1e-9 + 1e-12
    return ((fact.abs_tol is not None and diff <= fact.abs_tol + 1e-12)
            or (fact.rel_tol is not None and diff <= fact.rel_tol * abs(gold) + 1e-12))


def _share(found: int, total: int) -> float | None:
    return found / total if total else None


def _run_dimensions(task: Task, run: Run, judged: dict[tuple[str, str], float | None],
                    defines_judged: dict[str, bool]) -> dict[str, float | None]:
    """§3: the five per-run dimensions of one run ("No response" included)."""
    insights = task.gold_insights
    calibration_insights = [c for c in insights if c.calibration]
    defines = {
        "grounding_accuracy": bool(task.gold_facts),
        "insight_quality": bool(insights),
        "calibration_limitation_handling": bool(task.required_limitations
                                                or task.forbidden_claims
                                                or calibration_insights),
        **defines_judged,
    }
    response = run.response if run.status == "delivered" else None
    if response is None:
        return {d: (0.0 if defines[d] else None) for d in PER_RUN_DIMENSIONS}
    findings = response.key_findings
    everything = [*findings, *response.limitations, *response.recommendations, response.text]
    out: dict[str, float | None] = {
        "grounding_accuracy": _share(sum(_fact_passes(f, response.structured_metrics)
                                         for f in task.gold_facts), len(task.gold_facts)),
        "insight_quality": _share(sum(_stated(c, findings) for c in insights), len(insights)),
        "calibration_limitation_handling": _mean([
            _share(sum(_stated(c, response.limitations) for c in task.required_limitations),
                   len(task.required_limitations)),
            _share(sum(not _stated(c, everything) for c in task.forbidden_claims),
                   len(task.forbidden_claims)),
            _share(sum(_stated(c, findings) for c in calibration_insights),
                   len(calibration_insights))]),
    }
    for dimension in JUDGED:
        out[dimension] = judged.get((run.run_id, dimension))
    return out


def _tau_b(x: Sequence[int], y: Sequence[int]) -> float | None:
    concordant = discordant = ties_x = ties_y = 0
    for i, j in combinations(range(len(x)), 2):
        dx, dy = x[i] - x[j], y[i] - y[j]
        ties_x += dx == 0
        ties_y += dy == 0
        concordant += dx * dy > 0
        discordant += dx * dy < 0
    n0 = len(x) * (len(x) - 1) // 2
    denominator = math.sqrt((n0 - ties_x) * (n0 - ties_y))
    return (concordant - discordant) / denominator if denominator else None


def clusters_by_definition(runs: Sequence[Sequence[frozenset[Any]]]) -> list[list[int]]:
    """§3 "Consistency": the greedy clustering exactly as worded. Per run in order, each
    finding's token set joins the first cluster whose first finding has Jaccard >= 0.50
    with it (2 |a ∩ b| >= |a ∪ b|), else opens a new cluster."""
    heads: list[frozenset[Any]] = []
    out = []
    for findings in runs:
        assigned = []
        for tokens in findings:
            for index, head in enumerate(heads):
                if 2 * len(tokens & head) >= len(tokens | head):
                    assigned.append(index)
                    break
            else:
                heads.append(tokens)
                assigned.append(len(heads) - 1)
        out.append(assigned)
    return out


def ranking_by_definition(clusters: Sequence[Sequence[int]]) -> float | None:
    """§3 "Consistency", ranking stability pair by pair as worded: the mean over run pairs
    sharing >= 2 clusters of (tau_b + 1) / 2 over the shared clusters' first positions."""
    firsts = []
    for run in clusters:
        first: dict[int, int] = {}
        for position, cluster in enumerate(run):
            first.setdefault(cluster, position)
        firsts.append(first)
    values = []
    for a, b in combinations(firsts, 2):
        shared = sorted(set(a) & set(b))
        if len(shared) >= 2:
            tau = _tau_b([a[c] for c in shared], [b[c] for c in shared])
            if tau is not None:
                values.append((tau + 1) / 2)
    return _mean(values)


def consistency_by_definition(members: Sequence[Run]) -> dict[str, float | None]:
    """§3 "Consistency" for one (setup, task)'s primary runs in repeat order."""
    none = dict.fromkeys(("finding_stability", "ranking_stability", "metric_variance",
                          "consistency"))
    if len(members) < 2:
        return none
    responses = [r.response if r.status == "delivered" else None for r in members]
    top3 = [[frozenset(tokenize(f)) for f in (resp.key_findings if resp else [])
             if tokenize(f)][:3] for resp in responses]
    clusters = clusters_by_definition(top3)
    n_clusters = len({c for run in clusters for c in run})
    out: dict[str, float | None] = dict(none)
    if n_clusters:
        out["finding_stability"] = math.fsum(
            sum(c in run for run in clusters) / len(members) for c in range(n_clusters)
        ) / n_clusters
    out["ranking_stability"] = ranking_by_definition(clusters)
    by_key: dict[str, list[float]] = {}
    for resp in responses:
        for key, value in (resp.structured_metrics if resp else {}).items():
            number = parse_number(value)
            if number is not None:
                by_key.setdefault(key, []).append(number)
    scores = []
    for values in by_key.values():
        if len(values) < 2:
            continue
        if all(v == values[0] for v in values):
            scores.append(1.0)
            continue
        scale = max(abs(v) for v in values)
        xs = [v / scale for v in values] if not 1e-150 < scale < 1e150 else values
        mean = math.fsum(xs) / len(xs)
        std = math.sqrt(math.fsum((x - mean) * (x - mean) for x in xs) / len(xs))
        scores.append((1.0 if std == 0 else 0.0) if mean == 0 else 1.0 / (1.0 + std / abs(mean)))
    out["metric_variance"] = _mean(scores)
    weights = {"finding_stability": 0.5, "ranking_stability": 0.3, "metric_variance": 0.2}
    present = {k: v for k in weights if (v := out[k]) is not None}
    if present:
        out["consistency"] = (math.fsum(weights[k] * v for k, v in present.items())
                              / math.fsum(weights[k] for k in present))
    return out


def plain_scores(tasks: Sequence[Task], runs: Sequence[Run], judgements: Sequence[Judgement]
                 ) -> tuple[dict[str, dict[str, Any]], dict[tuple[str, str], dict[str, Any]]]:
    """Per run (by run_id) and per (setup, task): every GRADE figure of §3.

    Returns:
        (runs, tasks): a run's five dimensions, composite and rubric_score; a task's six
        dimensions, composite, rubric_score, runs (primary runs) and the consistency parts.
    """
    by_id = {t.task_id: t for t in tasks if t.kind == "grade"}
    judged: dict[tuple[str, str], float | None] = {}
    for j in judgements:  # a second judgement of a run's dimension is rejected: the first
        judged.setdefault((j.run_id, j.dimension), j.score)
    task_of = {r.run_id: r.task_id for r in runs}
    defines: dict[str, dict[str, bool]] = {t: dict.fromkeys(JUDGED, False) for t in by_id}
    for j in judgements:
        if j.score is not None and task_of.get(j.run_id) in defines:
            defines[task_of[j.run_id]][j.dimension] = True
    per_run: dict[str, dict[str, Any]] = {}
    groups: dict[tuple[str, str], list[Run]] = {}
    for run in runs:
        task = by_id.get(run.task_id)
        if task is None:
            continue
        dims = _run_dimensions(task, run, judged, defines[run.task_id])
        task_weights = task.weights or {}
        per_run[run.run_id] = {
            **dims,
            "composite": _composite(dims, {d: PROJECT_WEIGHTS[d] for d in PER_RUN_DIMENSIONS}),
            "rubric_score": _composite(dims, {d: task_weights.get(d, 0.0)
                                              for d in PER_RUN_DIMENSIONS}),
        }
        if run.attempt_of is None:
            groups.setdefault((run.setup, run.task_id), []).append(run)
    per_task: dict[tuple[str, str], dict[str, Any]] = {}
    for (setup, task_id), members in groups.items():
        members.sort(key=lambda r: r.repeat)
        task_weights = by_id[task_id].weights or {}
        parts = consistency_by_definition(members)
        dims = {d: _mean([per_run[r.run_id][d] for r in members]) for d in PER_RUN_DIMENSIONS}
        dims["consistency"] = parts["consistency"]
        per_task[(setup, task_id)] = {
            **dims, **{k: v for k, v in parts.items() if k != "consistency"},
            "runs": len(members),
            "composite": _composite(dims, {d: PROJECT_WEIGHTS[d] for d in PROJECT_WEIGHTS}),
            "rubric_score": _composite(dims, {d: task_weights.get(d, 0.0) for d in DIMENSIONS}),
        }
    return per_run, per_task


def plain_aggregates(tasks: Sequence[Task], per_task: dict[tuple[str, str], dict[str, Any]]
                     ) -> dict[tuple[str, str, str], dict[str, Any]]:
    """§3 "Aggregation" per (setup, level, key): track and pack dimensions the mean of their
    task dimensions and composite the mean of their task composites; overall (key "") the
    mean over all the setup's GRADE tasks, its composite the project weights on those."""
    by_id = {t.task_id: t for t in tasks}
    members: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for (setup, task_id), figures in sorted(per_task.items()):
        task = by_id[task_id]
        for level, key in (("track", str(task.track)), ("pack", str(task.pack)),
                           ("overall", "")):
            members.setdefault((setup, level, key), []).append(figures)
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for (setup, level, key), group in members.items():
        dims = {d: _mean([f[d] for f in group]) for d in DIMENSIONS}
        composite = (_composite(dims, {d: PROJECT_WEIGHTS[d] for d in PROJECT_WEIGHTS})
                     if level == "overall" else _mean([f["composite"] for f in group]))
        out[(setup, level, key)] = {**dims, "composite": composite, "tasks": len(group)}
    return out


def aggregate_differences(evaluation: Any, plain: dict[tuple[str, str, str], dict[str, Any]]
                          ) -> list[str]:
    """Every track, pack and overall figure of ``evaluation``'s results that is not the
    plain one of :func:`plain_aggregates`."""
    out: list[str] = []
    seen = set()
    for setup, results in evaluation.results.setups.items():
        parts = [("overall", "", results.overall),
                 *(("track", k, v) for k, v in results.tracks.items()),
                 *(("pack", k, v) for k, v in results.packs.items())]
        for level, key, aggregate in parts:
            expected = plain.get((setup, level, key))
            seen.add((setup, level, key))
            if expected is None:
                if aggregate.tasks:
                    out.append(f"{setup} {level} {key!r}: not in the plain aggregates")
                continue
            got = {**aggregate.dimensions.model_dump(), "composite": aggregate.composite,
                   "tasks": aggregate.tasks}
            out.extend(f"{setup} {level} {key!r}: {name} {got[name]!r} != {value!r}"
                       for name, value in expected.items() if got[name] != value)
    out.extend(f"{k}: not in the results" for k in sorted(set(plain) - seen))
    return out


def plain_rule_grades(tasks: Sequence[Task], runs: Sequence[Run],
                      recorded: Sequence[Grade]) -> list[Grade]:
    """§4 "The rule grader" as worded: a record for every delivered run of a GRADE task that
    has none recorded. Material error when a forbidden claim is stated (in a finding,
    limitation, recommendation or the text) or a gold fact's metric is reported, parses (a
    number for a numeric fact, a string for a string fact) and fails; no gradable conclusion
    without a non-empty finding or a metric; otherwise correct. Fulfilment: not met without a
    non-empty finding, full when every gold fact passes and every gold insight is found,
    partial otherwise. Needs more information: a finding or the text contains an asking
    phrase as a run of normalised tokens."""
    by_id = {t.task_id: t for t in tasks if t.kind == "grade"}
    have = {g.run_id for g in recorded}
    out = []
    for run in runs:
        task = by_id.get(run.task_id)
        response = run.response
        if task is None or run.status != "delivered" or response is None or run.run_id in have:
            continue
        metrics = response.structured_metrics
        everything = [*response.key_findings, *response.limitations, *response.recommendations,
                      response.text]
        wrong_fact = any(
            f.metric in metrics and not _fact_passes(f, metrics)
            and (isinstance(metrics[f.metric], str) if isinstance(f.value, str)
                 else parse_number(metrics[f.metric]) is not None)
            for f in task.gold_facts)
        error = wrong_fact or any(_stated(c, everything) for c in task.forbidden_claims)
        finding = any(normalize(f) for f in response.key_findings)
        core = ("material_error" if error else
                "no_gradable_conclusion" if not finding and not metrics else "correct")
        complete = (all(_fact_passes(f, metrics) for f in task.gold_facts)
                    and all(_stated(c, response.key_findings) for c in task.gold_insights))
        asks = any(contains_run(normalize(text), normalize(phrase))
                   for text in [*response.key_findings, response.text]
                   for phrase in ASKING_PHRASES)
        out.append(Grade(run_id=run.run_id, core_conclusion=core,
                         request_fulfilment=("not_met" if not finding else
                                             "full" if complete else "partial"),
                         material_error="yes" if error else "no", grader="rules-grader@1",
                         needs_more_information=asks))
    return out


def _summary(values: Sequence[float]) -> dict[str, Any]:
    """§4 "Timing": n, mean (fsum / n), P50 (mean of the middle two), nearest-rank P90 (the
    ceil(0.9 n)-th sorted value, exactly), min, max; all null but n when n = 0."""
    ordered = sorted(values)
    n = len(ordered)
    if not n:
        return {"n": 0, "mean": None, "p50": None, "p90": None, "min": None, "max": None}
    middle = ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2
    rank = math.ceil(Fraction(9, 10) * n)
    return {"n": n, "mean": math.fsum(ordered) / n, "p50": middle, "p90": ordered[rank - 1],
            "min": ordered[0], "max": ordered[-1]}


def _wilson(k: int, per_question: Sequence[int], repeats: int,
            z: float = 1.959963984540054) -> tuple[float, float] | None:
    """§4 "Rates": over n = the effective size, min(N, p(1−p) / SE²) with SE² = Σ_q (s_q −
    pR)² / N² (clustered by question; Q when p is 0 or 1 or Q < 2, N when SE² is 0),
    (p + z²/2n ± z √(p(1−p)/n + z²/4n²)) / (1 + z²/n), as one fraction, with exactly 0 at
    k = 0 and 1 at k = N. (Compared within 1e-12: the library divides the centre and the
    half-width apart and makes n in integers, which can differ in the last places.)"""
    total = len(per_question) * repeats
    if total == 0:
        return None
    p = k / total
    se2 = math.fsum((s - p * repeats) ** 2 for s in per_question) / total ** 2
    n = (len(per_question) if k in (0, total) or len(per_question) < 2 else total
         if se2 == 0 else min(total, p * (1 - p) / se2))
    root = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    low = (p + z * z / (2 * n) - root) / (1 + z * z / n)
    high = (p + z * z / (2 * n) + root) / (1 + z * z / n)
    return (0.0 if k == 0 else max(0.0, low), 1.0 if k == total else min(1.0, high))


def _grade(run: Run, record: Grade | None) -> str:
    """§4 "Grades", in the rule's order."""
    if run.status != "delivered":
        return "unresolved"
    if record is None:
        return "pending_verification"
    if record.material_error == "yes" or record.core_conclusion == "material_error":
        return "material_error"
    if "pending" in (record.core_conclusion, record.request_fulfilment, record.material_error):
        return "pending_verification"
    if record.core_conclusion == "correct" and record.request_fulfilment == "full":
        return "resolved"
    if record.core_conclusion == "correct" and record.request_fulfilment == "partial":
        return "partially_resolved"
    return "unresolved"


def _calls(run: Run) -> list[Any]:
    """§4 "Tool calls": the run's records that are calls: all but a record repeating an
    earlier one's id, name and arguments; an id that is empty or the tool's name names no
    call, so its every record is one."""
    seen: set[tuple[str, str, str | None]] = set()
    out = []
    for call in run.tool_calls or ():
        key = (call.id, call.name, call.arguments)
        if call.id in ("", call.name) or key not in seen:
            out.append(call)
        seen.add(key)
    return out


def _seconds(later: str, earlier: str) -> float:
    """(later - earlier) in seconds, as ``timedelta.total_seconds()``."""
    return (datetime.fromisoformat(later) - datetime.fromisoformat(earlier)).total_seconds()


STANDARD_EVENTS = ("submitted", "received", "stopped", "platform_created", "platform_sent",
                   "channel_overhead_started", "channel_overhead_ended")
"""Events with a metric of their own in §4 "Timing"; every other event is event - submitted."""

STATES = ("resolved", "partially_resolved", "material_error", "unresolved",
          "pending_verification", "not_run")


def plain_standard(tasks: Sequence[Task], runs: Sequence[Run], grades: Sequence[Grade],
                   setups: Sequence[str] | None = None,
                   composites: dict[tuple[str, str], float | None] | None = None,
                   repeats: int | None = None) -> dict[str, Any]:
    """§4 for every setup, over all questions and over the common subset: the plan, grade
    counts and rates over N, graded coverage, stable resolution, E2E, timeouts and failures
    over attempted primary runs, and tool calls (each decided per call) per exposed
    delivered run.

    A setup is planned on every task without a suite and on every task of each suite it
    has a primary run in; R is ``repeats`` when given, else inferred.
    """
    records: dict[str, Grade] = {}
    for record in grades:  # a second grade of a run is rejected: the first stands
        records.setdefault(record.run_id, record)
    primary = [r for r in runs if r.attempt_of is None]
    highest: dict[tuple[str, str], int] = {}
    for run in primary:
        key = (run.setup, run.task_id)
        highest[key] = max(highest.get(key, 0), run.repeat)
    reached = sorted(highest.values(), reverse=True)
    if repeats is None:
        repeats = reached[len(reached) // 20] if reached else 1  # the (floor(0.05 P) + 1)-th
    questions = sorted(t.task_id for t in tasks)
    names = sorted(setups if setups is not None else {r.setup for r in runs})
    suite_of = {t.task_id: t.suite for t in tasks}
    ran_suites = {(r.setup, suite_of[r.task_id]) for r in primary
                  if suite_of.get(r.task_id) is not None}
    planned = {setup: [t for t in questions if suite_of[t] is None
                       or (setup, suite_of[t]) in ran_suites] for setup in names}
    slot = {(r.setup, r.task_id, r.repeat): r for r in primary}
    graded = {r.run_id: _grade(r, records.get(r.run_id)) for r in primary}

    def setup_figures(setup: str, chosen: Sequence[str]) -> dict[str, Any]:
        n = len(chosen) * repeats
        counts = dict.fromkeys(STATES, 0)
        per_question: dict[str, list[int]] = {state: [] for state in STATES}
        in_plan = []
        for task_id in chosen:
            own = dict.fromkeys(STATES, 0)
            for repeat in range(1, repeats + 1):
                run = slot.get((setup, task_id, repeat))
                state = "not_run" if run is None else graded[run.run_id]
                counts[state] += 1
                own[state] += 1
                if run is not None:
                    in_plan.append(run)
            for state in STATES:
                per_question[state].append(own[state])
        stable = None
        if repeats > 1:
            stable = sum(all((r := slot.get((setup, t, k))) is not None
                             and graded[r.run_id] == "resolved" for k in range(1, repeats + 1))
                         for t in chosen)
        delivered = [r for r in in_plan if r.status == "delivered"]
        e2e = []
        by_question: dict[str, list[float]] = {}
        others: dict[str, list[float]] = {}
        missing = 0
        for run in delivered:
            submitted, received = run.events.get("submitted"), run.events.get("received")
            if submitted is None or received is None:
                missing += 1
            elif (seconds := _seconds(received, submitted)) >= 0:
                e2e.append(seconds)
                by_question.setdefault(run.task_id, []).append(seconds)
            for name, at in run.events.items():  # every other event: its own metric
                if (submitted is not None and at is not None and name not in STANDARD_EVENTS
                        and (seconds := _seconds(at, submitted)) >= 0):
                    others.setdefault(name, []).append(seconds)

        def waiting(statuses: Sequence[str]) -> dict[str, Any]:
            stopped = [r for r in in_plan if r.status in statuses]
            samples = [seconds for r in stopped
                       if (start := r.events.get("submitted")) is not None
                       and (end := r.events.get("stopped")) is not None
                       and (seconds := _seconds(end, start)) >= 0]
            return {"count": len(stopped), "attempted": len(in_plan),
                    "rate": len(stopped) / len(in_plan) if in_plan else None,
                    "waiting_s": _summary(samples)}

        exposed = [r for r in delivered if r.tool_calls is not None]
        per_run = [len(_calls(r)) for r in exposed]
        names: dict[str, list[str]] = {}
        spans = []
        for run in exposed:
            for call in _calls(run):
                names.setdefault(call.name, []).append(run.run_id)
            starts = [c.started for c in run.tool_calls or () if c.started is not None]
            ends = [c.ended or c.started for c in run.tool_calls or ()
                    if (c.ended or c.started) is not None]
            if starts and ends:
                spans.append(_seconds(max(ends, key=datetime.fromisoformat),
                                      min(starts, key=datetime.fromisoformat)))
        return {
            "N": n, "questions": len(chosen), "repeats": repeats, "counts": counts,
            "rates": {k: (v / n if n else None) for k, v in counts.items()},
            "wilson95": {k: _wilson(v, per_question[k], repeats) for k, v in counts.items()},
            "graded_coverage": (sum(counts[k] for k in STATES[:4]) / n) if n else None,
            "ungraded": sum(r.status == "delivered" and r.run_id not in records
                            for r in in_plan),
            "beyond_plan": sum(r.setup == setup and r.repeat > repeats and r.task_id in chosen
                               for r in primary),
            "needs_more_information": sum(
                bool((g := records.get(r.run_id)) and g.needs_more_information)
                for r in in_plan),
            "stable_resolution": stable,
            "e2e_s": _summary(e2e), "delivered": len(delivered), "missing_timestamps": missing,
            "per_question_median_s": {t: _summary(v)["p50"]
                                      for t, v in sorted(by_question.items())},
            "events": {k: _summary(v) for k, v in sorted(others.items())},
            "timeouts": waiting(["timeout"]), "failures": waiting(["failed", "cancelled"]),
            "tool_calls": {"runs_exposed": len(exposed), "delivered": len(delivered),
                           "coverage": len(exposed) / len(delivered) if delivered else None,
                           "per_run": _summary([float(k) for k in per_run]),
                           "calls": sum(per_run),
                           "recorded_calls": sum(len(r.tool_calls or ()) for r in exposed),
                           "runs_with_duplicate_records": sum(
                               len(r.tool_calls or ()) > k
                               for r, k in zip(exposed, per_run, strict=True)),
                           "by_name": {n: {"calls": len(v), "runs": len(set(v))}
                                       for n, v in sorted(names.items())},
                           "span_s": _summary(spans)},
        }

    # §4 "Coverage": a setup filling less than half its planned slots is not ranked
    ranked = [setup for setup in names if planned[setup] and sum(
        (setup, t, k) in slot for t in planned[setup] for k in range(1, repeats + 1))
        >= 0.5 * len(planned[setup]) * repeats]
    common = [t for t in questions if ranked and all(  # no ranked setup: no common subset
        t in planned[setup] and (r := slot.get((setup, t, k))) is not None
        and graded[r.run_id] == "resolved" for setup in ranked for k in range(1, repeats + 1))]
    per_question: dict[tuple[str, str], dict[str, float | None]] = {}
    for setup in ranked:  # §5: per question over its filled planned slots
        for task_id in planned[setup]:
            filled = [r for k in range(1, repeats + 1)
                      if (r := slot.get((setup, task_id, k))) is not None]
            if not filled:
                continue
            seconds = [x for r in filled if r.status == "delivered"
                       and (start := r.events.get("submitted")) is not None
                       and (end := r.events.get("received")) is not None
                       and (x := _seconds(end, start)) >= 0]
            calls = [len(_calls(r)) for r in filled
                     if r.status == "delivered" and r.tool_calls is not None]
            per_question[(setup, task_id)] = {
                "e2e_median_s": _summary(seconds)["p50"],
                "tool_calls_per_run": sum(calls) / len(calls) if calls else None,
                "composite": (composites or {}).get((setup, task_id))}
    comparisons = {}
    for i, a in enumerate(ranked):
        for b in ranked[i + 1:]:
            ran = sorted(t for t in questions
                         if (a, t) in per_question and (b, t) in per_question)
            for subset, chosen in (("all", ran), ("common", common)):
                figures = {}
                for metric in ("e2e_median_s", "tool_calls_per_run", "composite"):
                    pairs = [(per_question[(a, t)][metric], per_question[(b, t)][metric])
                             for t in chosen if (a, t) in per_question and (b, t) in per_question]
                    pairs = [(x, y) for x, y in pairs if x is not None and y is not None]
                    if not pairs:
                        figures[metric] = None
                        continue
                    n = len(pairs)
                    figures[metric] = {
                        "n_questions": n, "mean_a": math.fsum(x for x, _ in pairs) / n,
                        "mean_b": math.fsum(y for _, y in pairs) / n,
                        "mean_diff_b_minus_a": math.fsum(y - x for x, y in pairs) / n}
                comparisons[(a, b, subset)] = {"questions": len(chosen), "figures": figures}
    per_run = {}  # the runs table's own columns: every run, re-runs included
    for run in runs:
        start, end = run.events.get("submitted"), run.events.get("received")
        seconds = (_seconds(end, start) if run.status == "delivered" and start is not None
                   and end is not None else None)
        per_run[run.run_id] = {
            "grade": _grade(run, records.get(run.run_id)),
            "e2e_s": seconds if seconds is not None and seconds >= 0 else None,
            "tool_calls": len(_calls(run)) if run.tool_calls is not None else None}
    everything = {setup: setup_figures(setup, planned[setup]) for setup in names}
    for setup in set(names) - set(ranked):  # §4 "Coverage": counts, never a rate
        figures = everything[setup]
        figures["rates"] = dict.fromkeys(figures["rates"])
        figures["wilson95"] = dict.fromkeys(figures["wilson95"])
    return {"repeats": repeats, "common": common, "comparisons": comparisons,
            "runs": per_run, "all": everything,
            "subset": {setup: setup_figures(setup, common) for setup in ranked}}


def standard_differences(evaluation: Any, plain: dict[str, Any]) -> list[str]:
    """Every figure of ``evaluation``'s results (all questions and the common subset) that
    is not the plain one of :func:`plain_standard`, as messages."""
    out: list[str] = []
    for row in evaluation.runs_frame.iter_rows(named=True):
        expected = plain["runs"].get(row["run_id"])
        got = {k: row[k] for k in ("grade", "e2e_s", "tool_calls")}
        if expected != got:
            out.append(f"run {row['run_id']}: {got} != {expected}")
    results = evaluation.results
    seen = set()
    for comparison in results.comparisons:
        key = (comparison.baseline, comparison.compared, comparison.subset)
        seen.add(key)
        expected = plain["comparisons"].get(key)
        if expected is None:
            out.append(f"comparison {key}: not in the plain comparisons")
            continue
        if comparison.questions != expected["questions"]:
            out.append(f"comparison {key}: questions {comparison.questions} != "
                       f"{expected['questions']}")
        measured = {f.metric: f for f in comparison.figures if f.label == "measured"}
        for metric, figures in expected["figures"].items():
            figure = measured.get(metric)
            got = None if figure is None else {k: getattr(figure, k) for k in (
                "n_questions", "mean_a", "mean_b", "mean_diff_b_minus_a")}
            if got != figures:
                out.append(f"comparison {key} {metric}: {got} != {figures}")
    out.extend(f"comparison {k}: missing" for k in sorted(set(plain["comparisons"]) - seen))
    got_common = results.common_subset.tasks if results.common_subset else []
    if list(got_common) != plain["common"]:
        out.append(f"common subset {got_common} != {plain['common']}")
    for part in ("all", "subset"):
        for setup, expected in plain[part].items():
            if part == "all":
                mine = results.setups.get(setup)
            else:
                mine = results.common_subset.setups.get(setup) if results.common_subset else None
            if mine is None:
                out.append(f"{part} {setup}: missing")
                continue
            g, t, c = mine.grades, mine.timing, mine.tool_calls
            got = {
                "N": g.N, "questions": g.questions, "repeats": g.repeats,
                "counts": g.counts.model_dump(), "rates": g.rates.model_dump(),
                "graded_coverage": g.graded_coverage, "ungraded": g.ungraded,
                "beyond_plan": g.beyond_plan, "stable_resolution": g.stable_resolution.count,
                "needs_more_information": g.needs_more_information,
                "e2e_s": t.e2e_s.model_dump(), "delivered": t.delivered,
                "missing_timestamps": t.missing_timestamps,
                "per_question_median_s": dict(sorted(t.per_question_median_s.items())),
                "events": {k: v.model_dump() for k, v in sorted(t.events.items())},
                "timeouts": t.timeouts.model_dump(), "failures": t.failures.model_dump(),
                "tool_calls": {"runs_exposed": c.runs_exposed, "delivered": c.delivered,
                               "coverage": c.coverage, "per_run": c.per_run.model_dump(),
                               "calls": c.calls,
                               "recorded_calls": c.recorded_calls,
                               "runs_with_duplicate_records": c.runs_with_duplicate_records,
                               "by_name": {k: v.model_dump() for k, v in sorted(c.by_name.items())},
                               "span_s": {k: v for k, v in c.span_s.model_dump().items()
                                          if k != "label"}},
            }
            for state, interval in expected["wilson95"].items():
                mine_interval = g.wilson95.get(state)
                pair = None if mine_interval is None else (mine_interval.low, mine_interval.high)
                if (pair is None) != (interval is None) or (pair is not None and any(
                        abs(a - b) > 1e-12 for a, b in zip(pair, interval, strict=True))):
                    out.append(f"{part} {setup}: wilson95 {state} {pair} != {interval}")
            out.extend(f"{part} {setup}: {key} {got[key]!r} != {expected[key]!r}"
                       for key in expected if key != "wilson95" and got[key] != expected[key])
    return out


def differences(evaluation: Any, per_run: dict[str, dict[str, Any]],
                per_task: dict[tuple[str, str], dict[str, Any]]) -> list[str]:
    """Every GRADE figure of ``evaluation`` (a :class:`grade_kit.Evaluation`) that is not
    bit for bit the plain one, as messages; runs and tasks present on one side only too."""
    out: list[str] = []
    runs = evaluation.runs_frame
    columns = [*PER_RUN_DIMENSIONS, "composite", "rubric_score"]
    grade_tasks = {t.task_id for t in evaluation.inputs.tasks if t.kind == "grade"}
    seen = set()
    for row in runs.iter_rows(named=True):
        expected = per_run.get(row["run_id"])
        if expected is None:
            expected = {c: None for c in columns}
            if row["task_id"] in grade_tasks:
                out.append(f"run {row['run_id']}: scored, but the plain reader left it out")
        seen.add(row["run_id"])
        out.extend(f"run {row['run_id']}: {c} {row[c]!r} != {expected[c]!r}"
                   for c in columns if row[c] != expected[c])
    out.extend(f"run {run_id}: not scored" for run_id in sorted(set(per_run) - seen))
    task_columns = ["runs", *DIMENSIONS, "composite", "rubric_score"]
    keys = set()
    for row in evaluation.scores.tasks.join(
            evaluation.scores.consistency.drop("runs", "consistency"),
            on=["setup", "task_id"], how="left").iter_rows(named=True):
        key = (row["setup"], row["task_id"])
        keys.add(key)
        expected = per_task.get(key)
        if expected is None:
            out.append(f"task {key}: not in the plain scores")
            continue
        out.extend(f"task {key}: {c} {row[c]!r} != {expected[c]!r}"
                   for c in (*task_columns, "finding_stability", "ranking_stability",
                             "metric_variance") if row[c] != expected[c])
    out.extend(f"task {key}: not scored" for key in sorted(set(per_task) - keys))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, nargs="?",
                        help="with tasks.jsonl, runs.jsonl, judgements.jsonl; default: the "
                             "seeded rich input of benchmarks/scale.py, written to a "
                             "temporary folder")
    parser.add_argument("--runs", type=int, default=100_000,
                        help="runs of the generated input (default 100,000)")
    parser.add_argument("--shape", choices=("rich", "per-task", "both"), default="both",
                        help="the generated input's shape: every task on one shared "
                             "vocabulary (rich), each task with words, claims and patterns of "
                             "its own (per-task), or one after the other (default)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="timings of each implementation, each in a fresh process, the "
                             "two alternating (default 3; the medians are compared)")
    parser.add_argument("--time", choices=("plain", "ours"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.time is not None:  # one timing, in this fresh process (see _compare)
        print(_timed(_run_plain if args.time == "plain" else _run_ours, args.folder))
        return
    if args.folder is not None:
        _compare(args.folder, args.rounds)
        return
    from benchmarks.scale import write_inputs

    for shape in ("rich", "per-task") if args.shape == "both" else (args.shape,):
        with tempfile.TemporaryDirectory() as tmp:
            print(f"{args.runs:,} runs, {shape} shape:", flush=True)
            write_inputs(Path(tmp), args.runs, per_task=shape == "per-task")
            _compare(Path(tmp), args.rounds)


def _paths(folder: Path) -> dict[str, Path]:
    return {name: folder / f"{name}.jsonl"
            for name in ("tasks", "runs", "judgements", "grades")}


def _run_plain(folder: Path) -> tuple[Any, ...]:
    """The plain implementation on ``folder``'s files: its runs and every figure it makes."""
    paths = _paths(folder)
    tasks, runs, judgements = read_plain(paths["tasks"], paths["runs"], paths["judgements"])
    per_run, per_task = plain_scores(tasks, runs, judgements)
    aggregates = plain_aggregates(tasks, per_task)
    standard = plain_standard(tasks, runs, read_grades(paths["grades"]),
                              composites={k: v["composite"] for k, v in per_task.items()})
    return runs, per_run, per_task, aggregates, standard


def _run_ours(folder: Path) -> Any:
    import grade_kit as gk

    paths = _paths(folder)
    return gk.evaluate(paths["tasks"], paths["runs"], judgements=paths["judgements"],
                       grades=paths["grades"])


def _timed(run: Callable[[Path], Any], folder: Path) -> float:
    """``run(folder)``'s wall time (grade_kit is imported already: this module imports it)."""
    started = time.perf_counter()
    run(folder)
    return time.perf_counter() - started


def _compare(folder: Path, rounds: int) -> None:
    """Time both implementations ``rounds`` times, each in a fresh process (one left alive
    in the same process slows the other: in one test, ``gk.evaluate`` run after the plain
    implementation took 26 s against 19 s alone), alternating which goes first; then
    compare their figures once."""
    timings: dict[str, list[float]] = {"plain": [], "ours": []}
    for round_ in range(rounds):
        for which in ("plain", "ours") if round_ % 2 == 0 else ("ours", "plain"):
            done = subprocess.run([sys.executable, "-m", "benchmarks.plain", str(folder),
                                   "--time", which], check=True, capture_output=True,
                                  text=True, cwd=Path(__file__).resolve().parent.parent)
            timings[which].append(float(done.stdout.split()[-1]))
    plain_s, ours_s = median(timings["plain"]), median(timings["ours"])
    runs, per_run, per_task, aggregates, standard = _run_plain(folder)
    evaluation = _run_ours(folder)

    def listed(seconds: list[float]) -> str:
        return ", ".join(f"{s:.1f}" for s in seconds)

    print(f"plain row-at-a-time (GRADE, aggregation, the standard and comparisons), "
          f"{len(runs):,} runs: median {plain_s:.1f} s ({listed(timings['plain'])}); "
          f"gk.evaluate: median {ours_s:.1f} s ({listed(timings['ours'])}); "
          f"x{plain_s / ours_s:.2f} (each timing in a fresh process; gk.evaluate also "
          f"computes bootstrap intervals, clocks, out-of-order lists and the typed results)")
    found = [*differences(evaluation, per_run, per_task),
             *aggregate_differences(evaluation, aggregates),
             *standard_differences(evaluation, standard)]
    print(f"figures that differ: {len(found)}", *found[:20], sep="\n  ")


if __name__ == "__main__":
    main()
