"""The Markdown scorecard: what a practitioner scans first. Its tables are the ones the
notebooks and the report show (:class:`ScorecardTables`, each rendered by
:meth:`~grade_kit.views.tables.Table.markdown`); the sentences around them and the lists the
pages have no table for (material errors, other timing events, clocks, re-runs) read the
typed :class:`~grade_kit.schema.Results`. Every cell and heading built from input text goes
through :func:`~grade_kit.text.md_cell`, so no setup name, event name or error text can add a
row, a heading or a tag.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from grade_kit.judges import grading_label
from grade_kit.schema import PROJECT_WEIGHTS, SHORT_LABELS, Results
from grade_kit.text import md_cell
from grade_kit.views.tables import Table, rates_interval_basis


@dataclass(frozen=True)
class ScorecardTables:
    """The tables scorecard.md shares with the notebooks and the report, made from the
    evaluation's frames as the pages make them (``gk.table(ev.leaderboard, ...)``)."""

    leaderboard: Table
    tracks: Table
    packs: Table
    weakest: Table
    grades: Table
    timing: Table
    tool_calls: Table
    comparisons: Sequence[Table]
    rejected: Table
    warnings: Table


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """A list the pages have no frame for, as a table: its columns named ``header``, drawn
    by :meth:`~grade_kit.views.tables.Table.markdown` like every other table."""
    frame = pl.DataFrame([list(row) for row in rows], schema=list(header), orient="row",
                         infer_schema_length=None)
    return Table(frame, ordered=True).markdown().split("\n")


MATERIAL_ERRORS_LISTED = 25
"""The material errors the scorecard lists per setup (a page to read, not a dump)."""


def _grade_sections(results: Results, grades: Table) -> list[str]:
    r_ = results.plan.repeats
    plan = ("inferred; pass --repeats to state it" if results.plan.inferred
            else "stated by the source" if results.plan.rule.startswith("stated")
            else "given")
    lines = ["", f"## Grades (N = questions × {r_} repeats; R {plan})", "",
             "Every rate divides by N; the six counts sum to N. Graded coverage = the four "
             "grades / N. Stable resolution = questions resolved in all R repeats. "
             "Each rate with its 95% Wilson interval over its effective sample size "
             f"({rates_interval_basis(results)}: the repeats of one question are not "
             "independent, so N is divided by the design effect). Rows per setup on all "
             "questions, then on the common subset.", "",
             md_cell(grading_label(results.provenance.graders)), "", grades.markdown()]
    total = sum(len(s.grades.material_errors) for s in results.setups.values())
    if total:
        listed = [(name, e) for name, s in results.setups.items()
                  for e in s.grades.material_errors[:MATERIAL_ERRORS_LISTED]]
        lines += ["", "### Material errors", ""]
        if len(listed) < total:
            lines += [f"{total:,} material errors; the first {MATERIAL_ERRORS_LISTED} of each "
                      "setup are listed (every one is in results.json and "
                      "run_grades.parquet).", ""]
        lines += _table(["setup", "task", "repeat", "claim", "evidence", "effect", "grader"],
                        [[n, e.task_id, e.repeat, e.claim, e.evidence, e.effect, e.grader]
                         for n, e in listed])
    return lines


def _timing_sections(results: Results, timing: Table, tool_calls: Table) -> list[str]:
    definitions = sorted({s.timing.e2e_definition for s in results.setups.values()}) or [
        "received − submitted"]
    lines = ["", "## Timing (seconds)", "",
             f"E2E = {md_cell('; '.join(definitions))}, delivered primary runs carrying "
             "both; P90 is nearest-rank. Timeouts, limits (a limit of the source's own, "
             "such as a message limit) and failures are never latency samples: their "
             "waiting time (stopped − submitted) is reported apart. Working time is the "
             "system's own work as the source recorded it, without waiting on rate limits "
             "and queues: its own metric beside E2E.", ""]
    lines.append(timing.markdown())
    rows = []
    for name, s in results.setups.items():
        t = s.timing
        for event, e in t.events.items():
            rows.append([name, f"{event} − submitted", e.n, e.mean, e.p50, e.p90])
        c = t.channel_overhead_s
        if c is not None and c.n:
            rows.append([name, "channel overhead (agent-reported)", c.n, c.mean, c.p50, c.p90])
        if t.platform_e2e_s is not None:
            p = t.platform_e2e_s
            rows.append([name, "platform E2E (proxy)", p.n, p.mean, p.p50, p.p90])
        for kind, stop in (("timeouts", t.timeouts), ("limits", t.limits),
                           ("failures", t.failures)):
            w = stop.waiting_s
            if w.n:
                rows.append([name, f"{kind}: waiting (stopped − submitted)", w.n, w.mean,
                             w.p50, w.p90])
    if rows:
        lines += ["", "Other events, each its own metric with its own n:", ""]
        lines += _table(["setup", "metric", "n", "mean", "P50", "P90"], rows)
    sources = sorted({c for s in results.setups.values() for c in s.timing.clocks})
    if sources:
        lines += ["", "Clocks the E2E samples were read from: " + "; ".join(
            f"{md_cell(c)} ({sum(s.timing.clocks.get(c, 0) for s in results.setups.values())}"
            " samples)" for c in sources) + "."
                  + (" Samples come from more than one clock; compare E2E across them with "
                     "care." if len(sources) > 1 else "")]
        offsets = {c: o for s in results.setups.values()
                   for c, o in s.timing.clock_offsets_s.items() if o is not None}
        if len(sources) > 1:
            lines += ["", "Endpoint clock offset against each clock (the replies' Date "
                      "headers, good to about 1 s; two clocks' skew is the difference of "
                      "their offsets against a shared endpoint): " + "; ".join(
                          f"{md_cell(c)}: " + (f"{offsets[c]:+.1f} s" if c in offsets
                                               else "unmeasured, skew unknown")
                          for c in sources) + "."]
    disorder = [(name, v) for name, s in results.setups.items() for v in s.timing.out_of_order]
    if disorder:
        lines += ["", f"{len(disorder)} event pair(s) in an impossible order, left out of "
                  "their metric (the runs keep their answers and scores):", ""]
        lines += _table(["setup", "run", "task", "pair", "seconds"],
                        [[n, v.run_id, v.task_id, f"{v.then} before {v.first}", v.seconds]
                         for n, v in disorder[:50]])
    lines += ["", "## Tool calls", "",
              "Each record decided per call: one repeating an earlier record's id, name "
              "and arguments is that call again. Coverage = runs exposing tool events / "
              "delivered runs. The span is first-to-last tool event and includes reasoning "
              "and waiting.", ""]
    lines.append(tool_calls.markdown())
    return lines


def _comparison_sections(results: Results, comparisons: Sequence[Table]) -> list[str]:
    common = results.common_subset
    lines = ["", "## Common subset", "",
             f"{common.questions} of {common.of_questions} questions resolved in every "
             "slot by every setup: each setup's grades, timing and tool calls on it are the "
             "tables' rows of subset common above."]
    if results.comparisons:
        lines += ["", "## Comparisons (compared − baseline)", "",
                  "On **all** questions (paired over the questions both setups ran) and on "
                  "the **common** subset; each row is a figure of one pair, the compared "
                  "setup minus the baseline.", ""]
        for table in comparisons:
            lines += [table.markdown(), ""]
        first = results.comparisons[0]
        lines.append(f"Grade rates and pass^k: p from a paired test on per-question "
                     "outcomes (exact McNemar when R = 1, the sign-flip permutation test when "
                     "R > 1), two-sided, Holm-adjusted across the setup pairs of each figure, "
                     "subset and k; a direction only when the Holm-adjusted p < 0.05, and the "
                     "interval is that test inverted at its Holm level (the level given), so "
                     "it excludes 0 exactly then. Times, composite and tool calls: 95% "
                     f"bootstrap interval, {first.resamples} resamples of questions, seed "
                     f"{first.seed}.")
    reruns = [(name, r) for name, s in results.setups.items() for r in s.reruns]
    if reruns:
        lines += ["", "## Re-runs (listed beside the attempt they repeat, never scored in its "
                  "place)", ""]
        lines += _table(["setup", "re-run", "repeats", "task", "repeat", "status", "grade",
                         "E2E s"],
                        [[n, r.run_id, r.attempt_of, r.task_id, r.repeat, r.status, r.grade,
                          r.e2e_s] for n, r in reruns])
    return lines


def scorecard_markdown(results: Results, tables: ScorecardTables, weakest: int = 5,
                       rejects_file: str = "rejects.jsonl") -> str:
    """A scorecard a practitioner can scan: the leaderboard, per-track and per-pack tables,
    the weakest tasks per setup, the grading and timing standard, every rejected input and
    every warning; its tables are the pages' (``tables``).

    Args:
        results: The results being written (the sentences and the lists around the tables).
        tables: The tables it shares with the notebooks and the report.
        weakest: How many weakest tasks per setup ``tables.weakest`` holds; default 5.
        rejects_file: Name of the rejects file to point to; default ``rejects.jsonl``.
    """
    prov = results.provenance
    counts = {kind: sum(f.records for f in prov.inputs if f.kind == kind)
              for kind in ("tasks", "runs", "judgements", "grades")}
    lines = ["# Scorecard", ""]
    lines += [
        "- Inputs: " + ", ".join(f"{md_cell(f.kind)} {md_cell(f.path)} ({f.records})"
                                 for f in prov.inputs[:12])
        + (f", … {len(prov.inputs) - 12} more" if len(prov.inputs) > 12 else ""),
        f"- {counts['tasks']} tasks, {counts['runs']} runs, {counts['judgements']} recorded "
        f"judgements, {counts['grades']} grade records loaded"
        + (f"; judges: {md_cell(', '.join(prov.judges))}" if prov.judges else "") + ".",
        f"- **{len(results.rejected)} input records rejected** (see below and "
        f"`{rejects_file}`).",
        "",
    ]
    if tables.leaderboard.absent is not None:  # said once, not under four headings
        lines += ["## GRADE scores", "", md_cell(tables.leaderboard.absent)]
    else:
        lines += ["## Leaderboard (overall)", "",
                  "Composite = project weights "
                  + ", ".join(f"{SHORT_LABELS[d]} {w:.2f}" for d, w in PROJECT_WEIGHTS.items())
                  + ", renormalised over the dimensions that could be computed (dimensions "
                  "computed); — marks a dimension that cannot be computed (never counted as "
                  "0).", "", tables.leaderboard.markdown()]
        for title, table in (("track", tables.tracks), ("pack", tables.packs)):
            lines += ["", f"## By {title}", "", table.markdown()]
        lines += ["", f"## Weakest tasks (lowest composite, {weakest} per setup)", "",
                  tables.weakest.markdown()]
    lines += _grade_sections(results, tables.grades)
    lines += _timing_sections(results, tables.timing, tables.tool_calls)
    lines += _comparison_sections(results, tables.comparisons)
    lines += ["", "## Rejected input", "", tables.rejected.markdown()]
    lines += ["", "## Warnings", "", tables.warnings.markdown()]
    return "\n".join(lines) + "\n"
