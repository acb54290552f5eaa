"""The Markdown scorecard: what a practitioner scans first. It reads only the typed
:class:`~grade_kit.schema.Results`; every cell and heading built from input text goes through
:func:`md_cell`, so no setup name, event name or error text can add a row, a heading or a tag.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from grade_kit.judges import grading_label
from grade_kit.schema import (
    DIMENSIONS,
    GRADE_STATES,
    PROJECT_WEIGHTS,
    SHORT_LABELS,
    Aggregate,
    Figure,
    Results,
)
from grade_kit.text import md_cell
from grade_kit.views.tables import level_text, p_text, rates_interval_basis


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(md_cell(h) for h in header) + " |",
             "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(md_cell(v) for v in row) + " |" for row in rows]
    return lines


def _dim_row(agg: Aggregate) -> list[Any]:
    d = agg.dimensions.model_dump()
    return [agg.composite, f"{agg.dimensions_computed} of {len(DIMENSIONS)}",
            *[d[k] for k in DIMENSIONS], agg.tasks]


def _pct(count: int, rate: float | None) -> str:
    return f"{count} ({rate:.1%})" if rate is not None else f"{count}"


MATERIAL_ERRORS_LISTED = 25
"""The material errors the scorecard lists per setup (a page to read, not a dump)."""


def _grade_sections(results: Results) -> list[str]:
    r_ = results.plan.repeats
    plan = ("inferred; pass --repeats to state it" if results.plan.inferred
            else "stated by the source" if results.plan.rule.startswith("stated")
            else "given")
    lines = ["", f"## Grades (N = questions × {r_} repeats; R {plan})", "",
             "Every rate divides by N; the six counts sum to N. Graded coverage = the four "
             "grades / N. Stable resolution = questions resolved in all R repeats. "
             "Resolved rate with its 95% Wilson interval over its effective sample size "
             f"({rates_interval_basis(results)}: the repeats of one question are not "
             "independent, so N is divided by the design effect, `deff`).", "",
             md_cell(grading_label(results.provenance.graders)), ""]
    rows = []
    for name, s in results.setups.items():
        g = s.grades
        c, r = g.counts.model_dump(), g.rates.model_dump()
        ci = g.wilson95.get("resolved")
        stable = g.stable_resolution
        deff = g.clustered.get("resolved")
        rows.append([name, g.N, *[_pct(c[k], r[k]) for k in GRADE_STATES],
                     "—" if ci is None else f"[{ci.low:.3f}, {ci.high:.3f}]",
                     "—" if deff is None or deff.design_effect is None
                     else f"{deff.design_effect:.2f}",
                     g.graded_coverage,
                     "—" if stable.count is None else f"{stable.count}/{stable.questions}",
                     g.ungraded, g.needs_more_information])
    lines += _table(["setup", "N", "resolved", "partial", "material error", "unresolved",
                     "pending", "not run", "resolved 95% CI", "deff", "graded coverage", "stable",
                     "ungraded", "asks for more information"], rows)
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


def _timing_sections(results: Results) -> list[str]:
    definitions = sorted({s.timing.e2e_definition for s in results.setups.values()}) or [
        "received − submitted"]
    lines = ["", "## Timing (seconds)", "",
             f"E2E = {md_cell('; '.join(definitions))}, delivered primary runs carrying "
             "both; P90 is nearest-rank. Timeouts, limits (a limit of the source's own, "
             "such as a message limit) and failures are never latency samples: their "
             "waiting time (stopped − submitted) is reported apart.", ""]
    rows = []
    for name, s in results.setups.items():
        t = s.timing
        e = t.e2e_s
        limits = _pct(t.limits.count, t.limits.rate) + (
            f" ({', '.join(f'{k} {n}' for k, n in t.limits.by_type.items())})"
            if t.limits.by_type else "")
        rows.append([name, e.n, e.mean, e.p50, e.p90, e.min, e.max, t.missing_timestamps,
                     t.e2e_out_of_order, _pct(t.timeouts.count, t.timeouts.rate), limits,
                     _pct(t.failures.count, t.failures.rate)])
    lines += _table(["setup", "n", "mean", "P50", "P90", "min", "max", "no timestamps",
                     "out of order", "timeouts", "limits", "failures"], rows)
    working = [[name, s.timing.working_s.n, s.timing.working_s.mean, s.timing.working_s.p50,
                s.timing.working_s.p90, s.timing.e2e_s.p50]
               for name, s in results.setups.items() if s.timing.working_s.n]
    if working:
        lines += ["", "Working time (seconds) as the source recorded it: the system's own "
                  "work, without waiting on rate limits and queues; its own metric beside "
                  "E2E:", ""]
        lines += _table(["setup", "n", "mean", "P50", "P90", "E2E P50"], working)
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
              "Counted by unique call id per run. Coverage = runs exposing tool events / "
              "delivered runs. The span is first-to-last tool event and includes reasoning "
              "and waiting.", ""]
    rows = []
    for name, s in results.setups.items():
        tc = s.tool_calls
        pr = tc.per_run
        rows.append([name, f"{tc.runs_exposed}/{tc.delivered}", tc.coverage, pr.mean, pr.p50,
                     pr.p90, pr.max, tc.recorded_per_run.mean, tc.unique_calls,
                     tc.recorded_calls, tc.runs_with_repeated_ids, tc.span_s.p50])
    lines += _table(["setup", "exposed", "coverage", "unique/run", "P50", "P90", "max",
                     "recorded/run", "unique ids", "recorded", "runs reusing ids", "span P50"],
                    rows)
    return lines


def _figure_text(f: Figure) -> str:
    if f.label == "measured":
        ci = f.ci95
        return (f"{f.mean_diff_b_minus_a:.4g}"
                + ("" if ci is None else f" [{ci.low:.4g}, {ci.high:.4g}]")
                + ("" if ci is None or f.ci_level in (None, 0.95)
                   else f" at {level_text(f.ci_level)}")
                + f", n = {f.n_questions}")
    if f.label == "conditional estimate":
        return f"{f.value:.4g} = {f.formula}; assumes {f.assumptions}"
    return f.statement or ""


def _comparison_sections(results: Results) -> list[str]:
    common = results.common_subset
    lines = ["", "## Common subset", "",
             f"{common.questions} of {common.of_questions} questions resolved in every "
             "slot by every setup. Each setup's grades and timing on it:", ""]
    rows = []
    for name, c in common.setups.items():
        g, e = c.grades, c.timing.e2e_s
        rows.append([name, g.N, g.counts.resolved, e.n, e.mean, e.p50, e.p90])
    lines += _table(["setup", "N", "resolved", "E2E n", "E2E mean", "P50", "P90"], rows)
    if results.comparisons:
        lines += ["", "## Comparisons (B − A)", "",
                  "On **all** questions (paired over the questions both setups ran) and on "
                  "the **common** subset; n is the number of paired questions.", ""]
        rows = [[f"{comp.compared} vs {comp.baseline}", comp.subset, comp.questions,
                 f.metric if f.k is None else f"pass^{f.k}", f.label, _figure_text(f),
                 f.direction or "—", p_text(f.p_value), p_text(f.p_holm)]
                for comp in results.comparisons for f in comp.figures]
        lines += _table(["comparison", "subset", "questions", "figure", "label",
                         "value [interval]", "direction", "p", "p (Holm)"], rows)
        first = results.comparisons[0]
        lines.append(f"\nGrade rates and pass^k: p from a paired test on per-question "
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


def scorecard_markdown(results: Results, weakest: int = 5,
                       rejects_file: str = "rejects.jsonl") -> str:
    """A scorecard a practitioner can scan: the leaderboard, per-track and per-pack tables,
    the weakest tasks per setup, the grading and timing standard, every rejected input and
    every warning.

    Args:
        results: The results being written.
        weakest: How many weakest tasks to list per setup; default 5.
        rejects_file: Name of the rejects file to point to; default ``rejects.jsonl``.
    """
    dims_header = [SHORT_LABELS[d] for d in DIMENSIONS]
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
        "- Composite = project weights "
        + ", ".join(f"{SHORT_LABELS[d]} {w:.2f}" for d, w in PROJECT_WEIGHTS.items())
        + ", renormalised over the dimensions that could be computed (the *over* column). "
        "— marks a dimension that cannot be computed (never counted as 0).",
        "",
        "## Leaderboard (overall)",
        "",
    ]
    ranked = sorted(results.setups.items(),
                    key=lambda kv: (kv[1].overall.composite is None,
                                    -(kv[1].overall.composite or 0.0), kv[0]))
    lines += _table(["setup", "composite", "over", *dims_header, "tasks"],
                    [[name, *_dim_row(s.overall)] for name, s in ranked])
    for title, attr in (("track", "tracks"), ("pack", "packs")):
        lines += ["", f"## By {title}", ""]
        rows = [[name, key, *_dim_row(agg)] for name, s in ranked
                for key, agg in sorted(getattr(s, attr).items())]
        lines += _table(["setup", title, "composite", "over", *dims_header, "tasks"], rows)
    lines += ["", f"## Weakest tasks (lowest composite, {weakest} per setup)", ""]
    rows = []
    for name, s in ranked:
        scored = sorted(((t.composite, tid, t) for tid, t in s.tasks.items()
                         if t.composite is not None), key=lambda x: (x[0], x[1]))
        for composite, tid, t in scored[:weakest]:
            values = t.dimensions.model_dump()
            present = {d: values[d] for d in DIMENSIONS if values[d] is not None}
            weakest_dim = "—"
            if present:
                low = min(present, key=lambda d: present[d])
                weakest_dim = f"{SHORT_LABELS[low]} {present[low]:.3f}"
            rows.append([name, tid, composite, t.rubric_score, weakest_dim, t.runs])
    lines += _table(["setup", "task", "composite", "rubric", "weakest dimension", "runs"], rows)
    lines += _grade_sections(results)
    lines += _timing_sections(results)
    lines += _comparison_sections(results)
    lines += ["", "## Rejected input", ""]
    if not results.rejected:
        lines.append("None: every record loaded.")
    else:
        shown = results.rejected[:50]
        lines += _table(["source", "line", "field", "error"],
                        [[Path(r.source).name, r.line, r.field, r.error] for r in shown])
        if len(results.rejected) > len(shown):
            lines.append(f"\n… and {len(results.rejected) - len(shown)} more in "
                         f"`{rejects_file}`.")
    if results.warnings:
        lines += ["", "## Warnings", ""] + [f"- {md_cell(str(w))}" for w in results.warnings]
    return "\n".join(lines) + "\n"
