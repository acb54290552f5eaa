"""results.json, the Markdown scorecard, per-run Parquet and the rejects file (DESIGN.md §5)."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from grade_kit.evaluate import Evaluation
from grade_kit.grade import GradeScores, long_scores
from grade_kit.io import Rejected, write_rejects
from grade_kit.schema import (
    DIMENSIONS,
    PROJECT_WEIGHTS,
    SHORT_LABELS,
    Aggregate,
    DimensionScores,
    Results,
    SetupResults,
    TaskScore,
)
from grade_kit.standard import GRADE_STATES, StandardResults

__all__ = ["build_results", "scorecard_markdown", "write_outputs"]

SHORT = SHORT_LABELS


def _clean(value: Any) -> float | None:
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _dims(row: dict[str, Any]) -> DimensionScores:
    return DimensionScores(**{d: _clean(row.get(d)) for d in DIMENSIONS})


def _aggregate(row: dict[str, Any]) -> Aggregate:
    return Aggregate(composite=_clean(row["composite"]), dimensions=_dims(row),
                     tasks=int(row["tasks"]))


def build_results(scores: GradeScores, setups: Sequence[str],
                  rejected: Sequence[Rejected] = (),
                  standard: StandardResults | None = None) -> Results:
    """Assemble results.json from the scored frames.

    Args:
        scores: The GRADE frames (:func:`grade_kit.grade.grade_scores`).
        setups: Every setup seen in the runs (a setup with no GRADE task still gets an entry,
            with null dimensions and ``tasks: 0``).
        rejected: Everything rejected while loading.
        standard: The grading and timing standard's results; default None leaves
            grades, timing, tool_calls and common_subset null.
    """
    out: dict[str, SetupResults] = {}
    for setup in sorted(setups):
        overall_rows = scores.overall.filter(pl.col("setup") == setup).to_dicts()
        overall = (_aggregate(overall_rows[0]) if overall_rows
                   else Aggregate(composite=None, dimensions=DimensionScores(), tasks=0))
        tracks = {str(r["track"]): _aggregate(r)
                  for r in scores.tracks.filter(pl.col("setup") == setup).to_dicts()}
        packs = {str(r["pack"]): _aggregate(r)
                 for r in scores.packs.filter(pl.col("setup") == setup).to_dicts()}
        tasks = {
            str(r["task_id"]): TaskScore(composite=_clean(r["composite"]),
                                         rubric_score=_clean(r["rubric_score"]),
                                         dimensions=_dims(r), runs=int(r["runs"]))
            for r in scores.tasks.filter(pl.col("setup") == setup).to_dicts()
        }
        extra: dict[str, Any] = {}
        if standard is not None and setup in standard.setups:
            extra = standard.setups[setup]
        out[setup] = SetupResults(overall=overall, tracks=tracks, packs=packs, tasks=tasks,
                                  **extra)
    return Results(setups=out, rejected=[r.as_reject() for r in rejected],
                   common_subset=None if standard is None else standard.common,
                   comparisons=[] if standard is None else standard.comparisons)


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(_fmt(v) for v in row) + " |" for row in rows]
    return lines


def _dim_row(agg: Aggregate) -> list[Any]:
    d = agg.dimensions.model_dump()
    return [agg.composite, *[d[k] for k in DIMENSIONS], agg.tasks]


def _pct(count: int, rate: float | None) -> str:
    return f"{count} ({rate:.1%})" if rate is not None else f"{count}"


def _standard_sections(results: Results, standard: StandardResults) -> list[str]:
    lines = ["", f"## Grades (N = questions × {standard.repeats} repeats)", "",
             "Every rate divides by N; the six counts sum to N. Graded coverage = the four "
             "grades / N. Stable resolution = questions resolved in all R repeats.", ""]
    rows = []
    for name, s in results.setups.items():
        g = s.grades or {}
        c, r = g["counts"], g["rates"]
        stable = g["stable_resolution"]
        rows.append([name, g["N"], *[_pct(c[k], r[k]) for k in GRADE_STATES],
                     g["graded_coverage"],
                     "—" if stable["count"] is None else f"{stable['count']}/{stable['questions']}",
                     g["ungraded"]])
    lines += _table(["setup", "N", "resolved", "partial", "material error", "unresolved",
                     "pending", "not run", "graded coverage", "stable", "ungraded"], rows)
    errors = [(name, e) for name, s in results.setups.items()
              for e in (s.grades or {}).get("material_errors", [])]
    if errors:
        lines += ["", "### Material errors", ""]
        lines += _table(["setup", "task", "repeat", "claim", "evidence", "effect", "grader"],
                        [[n, e["task_id"], e["repeat"], e["claim"], e["evidence"], e["effect"],
                          e["grader"]] for n, e in errors])
    lines += ["", "## Timing (seconds)", "",
              "E2E = received − submitted, delivered primary runs carrying both; P90 is "
              "nearest-rank. Timeouts and failures are never latency samples: their waiting "
              "time (stopped − submitted) is reported apart.", ""]
    rows = []
    for name, s in results.setups.items():
        t = s.timing or {}
        e = t["e2e_s"]
        rows.append([name, e["n"], e["mean"], e["p50"], e["p90"], e["min"], e["max"],
                     t["missing_timestamps"], _pct(t["timeouts"]["count"], t["timeouts"]["rate"]),
                     _pct(t["failures"]["count"], t["failures"]["rate"])])
    lines += _table(["setup", "n", "mean", "P50", "P90", "min", "max", "no timestamps",
                     "timeouts", "failures"], rows)
    rows = []
    for name, s in results.setups.items():
        t = s.timing or {}
        for event, e in t["events"].items():
            rows.append([name, f"{event} − submitted", e["n"], e["mean"], e["p50"], e["p90"]])
        if t.get("platform_e2e_s"):
            p = t["platform_e2e_s"]
            rows.append([name, "platform E2E (proxy)", p["n"], p["mean"], p["p50"], p["p90"]])
        for kind in ("timeouts", "failures"):
            w = t[kind]["waiting_s"]
            if w["n"]:
                rows.append([name, f"{kind}: waiting (stopped − submitted)", w["n"], w["mean"],
                             w["p50"], w["p90"]])
    if rows:
        lines += ["", "Other events, each its own metric with its own n:", ""]
        lines += _table(["setup", "metric", "n", "mean", "P50", "P90"], rows)
    lines += ["", "## Tool calls", "",
              "Counted by unique call id per run. Coverage = runs exposing tool events / "
              "delivered runs. The span is first-to-last tool event and includes reasoning "
              "and waiting.", ""]
    rows = []
    for name, s in results.setups.items():
        tc = s.tool_calls or {}
        pr = tc["per_run"]
        rows.append([name, f"{tc['runs_exposed']}/{tc['delivered']}", tc["coverage"], pr["mean"],
                     pr["p50"], pr["p90"], pr["max"], tc["unique_calls"], tc["recorded_calls"],
                     tc["runs_with_repeated_ids"], tc["span_s"]["p50"]])
    lines += _table(["setup", "exposed", "coverage", "mean/run", "P50", "P90", "max",
                     "unique ids", "recorded", "runs reusing ids", "span P50"], rows)
    common = results.common_subset or {}
    lines += ["", "## Common subset", "",
              f"{common['questions']} of {common['of_questions']} questions resolved in every "
              f"slot by every setup. Each setup's grades and timing on it:", ""]
    rows = []
    for name, c in common["setups"].items():
        g, e = c["grades"], c["timing"]["e2e_s"]
        rows.append([name, g["N"], g["counts"]["resolved"], e["n"], e["mean"], e["p50"],
                     e["p90"]])
    lines += _table(["setup", "N", "resolved", "E2E n", "E2E mean", "P50", "P90"], rows)
    if results.comparisons:
        lines += ["", "## Comparisons (B − A on the common subset)", ""]
        rows = []
        for comp in results.comparisons:
            for f in comp["figures"]:
                if f["label"] == "measured":
                    ci = f["ci95"]
                    what = (f"{f['mean_diff_b_minus_a']:.4g}"
                            + ("" if ci is None else f" [{ci[0]:.4g}, {ci[1]:.4g}]")
                            + f", n = {f['n_questions']}")
                elif f["label"] == "conditional estimate":
                    what = f"{f['value']:.4g} = {f['formula']}; assumes {f['assumptions']}"
                else:
                    what = f["statement"]
                rows.append([f"{comp['compared']} vs {comp['baseline']}", f["metric"],
                             f["label"], what.replace("|", "\\|")])
        lines += _table(["comparison", "figure", "label", "value (95% bootstrap CI)"], rows)
        lines.append(f"\nBootstrap: {results.comparisons[0]['resamples']} resamples of "
                     f"questions, seed {results.comparisons[0]['seed']}.")
    reruns = [(name, r) for name, s in results.setups.items() for r in s.reruns]
    if reruns:
        lines += ["", "## Re-runs (listed beside the attempt they repeat, never scored in its "
                  "place)", ""]
        lines += _table(["setup", "re-run", "repeats", "task", "repeat", "status", "grade",
                         "E2E s"],
                        [[n, r["run_id"], r["attempt_of"], r["task_id"], r["repeat"],
                          r["status"], r["grade"], r["e2e_s"]] for n, r in reruns])
    return lines


def scorecard_markdown(results: Results, scores: GradeScores, evaluation: Evaluation,
                       weakest: int = 5, rejects_file: str = "rejects.jsonl",
                       standard: StandardResults | None = None) -> str:
    """A scorecard a practitioner can scan: the leaderboard, per-track and per-pack tables,
    the weakest tasks per setup, and every rejected input.

    Args:
        results: The results being written.
        scores: The GRADE frames behind them.
        evaluation: The loaded evaluation (for counts, sources and warnings).
        weakest: How many weakest tasks to list per setup; default 5.
        rejects_file: Name of the rejects file to point to.
    """
    dims_header = [SHORT[d] for d in DIMENSIONS]
    lines = ["# GRADE scorecard", ""]
    n_grade = sum(1 for t in evaluation.tasks if t.kind == "grade")
    primary = sum(1 for r in evaluation.runs if r.attempt_of is None)
    lines += [
        f"- Inputs: {', '.join(f'{k} `{v}`' for k, v in evaluation.sources.items())}",
        f"- {len(evaluation.tasks)} tasks loaded ({n_grade} GRADE, "
        f"{len(evaluation.tasks) - n_grade} plain); {len(evaluation.runs)} runs loaded "
        f"({primary} primary, {len(evaluation.runs) - primary} re-runs, never scored in place "
        f"of the attempt they repeat); {len(evaluation.judgements)} judgements.",
        f"- **{len(results.rejected)} input records rejected** (see below and "
        f"`{rejects_file}`).",
        "- Composite = project weights "
        + ", ".join(f"{SHORT[d]} {w:.2f}" for d, w in PROJECT_WEIGHTS.items())
        + ", renormalised over the dimensions that could be computed. "
        "— marks a dimension that cannot be computed (never counted as 0).",
        "",
        "## Leaderboard (overall)",
        "",
    ]
    ranked = sorted(results.setups.items(),
                    key=lambda kv: -1.0 if kv[1].overall.composite is None
                    else -kv[1].overall.composite)
    lines += _table(["setup", "composite", *dims_header, "tasks"],
                    [[name, *_dim_row(s.overall)] for name, s in ranked
                     if s.overall.composite is not None] +
                    [[name, *_dim_row(s.overall)] for name, s in ranked
                     if s.overall.composite is None])
    for title, attr in (("track", "tracks"), ("pack", "packs")):
        lines += ["", f"## By {title}", ""]
        rows = []
        for name, s in ranked:
            for key, agg in sorted(getattr(s, attr).items()):
                rows.append([name, key, *_dim_row(agg)])
        lines += _table(["setup", title, "composite", *dims_header, "tasks"], rows)
    lines += ["", f"## Weakest tasks (lowest composite, {weakest} per setup)", ""]
    rows = []
    for name, _ in ranked:
        per_setup = (scores.tasks.filter(pl.col("setup") == name)
                     .filter(pl.col("composite").is_not_null())
                     .sort("composite", "task_id").head(weakest))
        for r in per_setup.to_dicts():
            present: dict[str, float] = {d: float(r[d]) for d in DIMENSIONS
                                         if r[d] is not None}
            low = min(present, key=lambda d: present[d]) if present else ""
            rows.append([name, r["task_id"], r["track"], r["composite"], r["rubric_score"],
                         f"{SHORT[low]} {present[low]:.3f}" if low else "—", r["runs"]])
    lines += _table(["setup", "task", "track", "composite", "rubric", "weakest dimension",
                     "runs"], rows)
    if standard is not None:
        lines += _standard_sections(results, standard)
    lines += ["", "## Rejected input", ""]
    if not results.rejected:
        lines.append("None: every record loaded.")
    else:
        shown = results.rejected[:50]
        lines += _table(["source", "line", "field", "error"],
                        [[Path(r.source).name, r.line, r.field, r.error.replace("|", "\\|")]
                         for r in shown])
        if len(results.rejected) > len(shown):
            lines.append(f"\n… and {len(results.rejected) - len(shown)} more in "
                         f"`{rejects_file}`.")
    if evaluation.warnings:
        lines += ["", "## Warnings", ""] + [f"- {w}" for w in evaluation.warnings]
    return "\n".join(lines) + "\n"


def write_outputs(out_dir: Path | str, evaluation: Evaluation, scores: GradeScores,
                  standard: StandardResults | None = None) -> dict[str, Path]:
    """Write results.json, scorecard.md, scores.parquet (per-run, long), run_scores.parquet
    (per-run, wide) and rejects.jsonl under ``out_dir``.

    Returns:
        The written paths by name.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    setups = sorted(set(evaluation.data.runs.get_column("setup").to_list()))
    results = build_results(scores, setups, evaluation.rejected, standard)
    paths = {
        "results": out / "results.json",
        "scorecard": out / "scorecard.md",
        "scores": out / "scores.parquet",
        "run_scores": out / "run_scores.parquet",
        "rejects": out / "rejects.jsonl",
    }
    paths["results"].write_text(
        json.dumps(results.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n",
        encoding="utf-8")
    paths["scorecard"].write_text(
        scorecard_markdown(results, scores, evaluation, rejects_file=paths["rejects"].name,
                           standard=standard),
        encoding="utf-8")
    per_run = scores.runs
    long = long_scores(per_run).join(
        per_run.select("run_id", "setup", "task_id", "repeat", "is_primary"), on="run_id")
    long.select("run_id", "setup", "task_id", "repeat", "is_primary", "dimension", "score",
                "method").write_parquet(paths["scores"])
    per_run.write_parquet(paths["run_scores"])
    if standard is not None:
        paths["run_grades"] = out / "run_grades.parquet"
        standard.graded.write_parquet(paths["run_grades"])
    write_rejects(paths["rejects"], evaluation.rejected)
    return paths
