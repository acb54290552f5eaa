"""One call from inputs to every number: :func:`evaluate` and the :class:`Evaluation` it returns.

``grade-kit score``, ``grade-kit demo``, the benchmark and the notebooks all go through
:func:`evaluate`; nothing else assembles the pipeline (read -> judge -> flatten -> GRADE
scores -> the standard -> typed results).
"""

from __future__ import annotations

import html
import json
import shutil
import subprocess
import sys
import tempfile
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import cached_property, partial
from pathlib import Path
from typing import Any, Literal, TypeAlias, cast

import pandas as pd
import polars as pl

from grade_kit._gc import gc_paused
from grade_kit._progress import Step, stage_progress
from grade_kit._version import __version__
from grade_kit.adapters import read_logs
from grade_kit.frames import EvalData, in_run_order
from grade_kit.judges import (
    Grader,
    Judge,
    new_grades,
    new_judgements,
    resolve_grader,
    resolve_judge,
)
from grade_kit.judges.model import grading_label
from grade_kit.judges.rule_grader import RULE_GRADER, rule_grades
from grade_kit.presentation.report.files import (
    OUTPUT_FILES,
    folder_lock,
    output_folder,
    refuse_links,
    write_outputs,
)
from grade_kit.presentation.report.results import build_results
from grade_kit.presentation.tables import (
    Absent,
    HeadlineView,
    Table,
    absences,
    cell_text,
    headline_view,
    pending_state,
    provenance_table,
    summary_table,
    table,
)
from grade_kit.reading._fastread import concat_records
from grade_kit.reading.inputs import Inputs, read_inputs
from grade_kit.reading.io import InputError, Records, is_in_memory
from grade_kit.reading.packed import (
    StoreRuns,
    is_store,
    pack,
    partition_data,
    partition_of,
    read_light_frames,
    read_manifest,
    read_store_frame,
    read_task_frames,
    split_by_task,
    store_records,
)
from grade_kit.reading.records import load_grades, load_judgements, run_files
from grade_kit.reading.sniff import log_files
from grade_kit.reading.state import STATE_DIR, read_state, write_state
from grade_kit.schema import (
    DIMENSIONS,
    GRADE_STATES,
    SHORT_LABELS,
    Grade,
    Judgement,
    Provenance,
    Results,
)
from grade_kit.scorers import (
    ClaimJudge,
    GradeScores,
    PartitionScores,
    combine_scores,
    fact_checks,
    grade_scores,
    partition_scores,
    run_composites,
)
from grade_kit.standard import DEFAULT_SEED, StandardResults, standard_results

__all__ = ["Evaluation", "MapPartitions", "RunExplanation", "evaluate", "score_partition"]

MapPartitions: TypeAlias = Callable[[Callable[[Any], Any], Iterable[Any]], Iterable[Any]]
"""A ``map(function, jobs)``: the built-in one, an executor's, or a distributed engine's."""

FrameKind = Literal["polars", "pandas"]
Frame = pl.DataFrame | pd.DataFrame


def _as_kind(frame: pl.DataFrame, kind: FrameKind) -> Frame:
    return frame.to_pandas() if kind == "pandas" else frame


@dataclass(frozen=True)
class RunExplanation:
    """Why one run scored what it did (:meth:`Evaluation.explain`).

    Attributes:
        run: The run's row of :attr:`Evaluation.runs` (scores, composite, grade, timing).
        facts: Each gold fact: gold value, tolerances, reported raw and parsed value, pass.
        claims: Each claim (insight, limitation, forbidden): text, found, the answer item
            that matched or null, the deciding method.
        judgements: Each judgement of the run: dimension, score, judge, reason.
        grade: The grade with its reason and the material-error record (claim, evidence,
            effect), and the grader.
    """

    run: dict[str, Any]
    facts: pl.DataFrame
    claims: pl.DataFrame
    judgements: pl.DataFrame
    grade: dict[str, Any]

    def _lines(self) -> list[str]:
        r = self.run
        lines = [f"run {r['run_id']} · setup {r['setup']} · task {r['task_id']} · repeat "
                 f"{r['repeat']} · {r['status']}" + ("" if r["is_primary"] else
                                                     f" · re-run of {r['attempt_of']}")]
        dims = ", ".join(f"{SHORT_LABELS[d]} {'—' if r[d] is None else f'{r[d]:.3f}'}"
                         for d in DIMENSIONS)
        composite = "—" if r["composite"] is None else f"{r['composite']:.3f}"
        lines.append(f"scores: {dims}; per-run composite {composite}")
        for f in self.facts.iter_rows(named=True):
            mark = "pass" if f["passed"] else "FAIL"
            tol = ", ".join(f"{k} {cell_text(f[k], k)}" for k in ("abs_tol", "rel_tol")
                            if f[k] is not None)
            lines.append(f"  fact {f['fact_id']} [{mark}] {f['metric']}: gold "
                         f"{cell_text(f['gold'], 'gold')}{f' ({tol})' if tol else ''}, "
                         f"reported {f['reported']} (parsed {cell_text(f['parsed'], 'parsed')})")
        for c in self.claims.iter_rows(named=True):
            good = c["found"] != (c["role"] == "forbidden")
            mark = "ok" if good else "MISS" if c["role"] != "forbidden" else "STATED"
            where = (f" in {c['matched_field']}: {c['matched_text']!r}"
                     if c["matched_text"] is not None else "")
            lines.append(f"  {c['role']} {c['claim_id']} [{mark}, {c['method']}] "
                         f"{c['text']!r}{where}")
        for j in self.judgements.iter_rows(named=True):
            lines.append(f"  judged {j['dimension']} = {cell_text(j['score'], 'score')} by "
                         f"{j['judge']}: "
                         f"{j['reason']}")
        g = self.grade
        lines.append(f"  grade {g['grade']}: {g['grade_reason']}"
                     + (f" (claim {g['claim']!r}; evidence {g['evidence']!r}; effect "
                        f"{g['effect']!r})" if g.get("claim") else ""))
        return lines

    def __repr__(self) -> str:
        return "\n".join(self._lines())

    def _repr_html_(self) -> str:
        r = self.run
        title = html.escape(f"run {r['run_id']} · {r['setup']} · {r['task_id']} · "
                            f"repeat {r['repeat']} · {r['status']}")
        parts = [f"<h4>{title}</h4>",
                 table(pl.DataFrame([{d: r[d] for d in (*DIMENSIONS, "composite")}]))
                 ._repr_html_(),
                 "<h5>Gold facts</h5>", table(self.facts.drop("run_id", "task_id"))._repr_html_(),
                 "<h5>Claims</h5>", table(self.claims.drop("run_id", "task_id"))._repr_html_(),
                 "<h5>Judgements</h5>", table(self.judgements)._repr_html_(),
                 "<h5>Grade</h5>", table(pl.DataFrame([self.grade]))._repr_html_()]
        return "".join(parts)


class Evaluation:
    """An evaluation, scored: frames for a notebook, typed results for files.

    Frames are polars unless :func:`evaluate` was given ``frames="pandas"``. Column contracts:

    - :attr:`leaderboard`: one row per setup, best composite first: composite,
      ``dimensions_computed`` (the composite is over these), the six dimensions, tasks, N and
      every grade rate, graded coverage;
    - :attr:`tasks`, :attr:`tracks`, :attr:`packs`: the GRADE aggregates;
    - :attr:`runs`: one row per run (primary and re-runs, ``is_primary``);
    - :attr:`grades`, :attr:`timing`, :attr:`tool_calls`: one row per setup and subset
      (``all``, ``common``), every denominator a column;
    - :attr:`comparisons`: one row per setup pair, subset and figure, with its label;
    - :attr:`rejected`, :attr:`warnings`.
    """

    def __init__(self, inputs: Inputs, data: EvalData, scores: GradeScores,
                 standard: StandardResults, results: Results, kind: FrameKind) -> None:
        self.inputs = inputs
        self.data = data
        self.scores = scores
        self.standard = standard
        self.results = results
        self.kind: FrameKind = kind

    # ------------------------------------------------------------------ frames (polars)

    @cached_property
    def runs_frame(self) -> pl.DataFrame:
        """:attr:`runs` as polars, whatever ``frames`` was."""
        d = self.data
        per_run = self.scores.runs
        composites = run_composites(per_run, d.weights)
        assert isinstance(composites, pl.DataFrame)
        consistency = self.scores.consistency.select("setup", "task_id", "consistency")
        graded = self.standard.graded.select("run_id", "grade", "grade_reason")
        e2e = self.standard.e2e.select("run_id", e2e_s=pl.col("seconds"))
        calls = self.standard.unique_calls.select("run_id", tool_calls=pl.col("unique"))
        dims = [c for c in DIMENSIONS if c != "consistency"]
        runs = in_run_order(d.runs)
        # Each other frame's columns lined up with the sorted runs by a join of the keys
        # alone, then all set side by side: every column is gathered once (joining the
        # frames one after another copied the growing frame at each join: 0.6 GB more at
        # the peak at 1M runs, docs/scaling.md).
        keys = runs.select("run_id", "setup", "task_id", "is_primary")
        lined_up = []
        for name, other, on in (("tasks", d.tasks.select("task_id", "track", "pack"), "task_id"),
                                ("run scores", per_run.select("run_id", *dims), "run_id"),
                                ("consistency", consistency, ["setup", "task_id"]),
                                ("composites", composites, "run_id"),
                                ("run grades", graded, "run_id"), ("E2E", e2e, "run_id"),
                                ("tool calls", calls, "run_id")):
            piece = keys.join(other, on=on, how="left", maintain_order="left")
            if piece.height != runs.height:  # loaded inputs never repeat these keys
                raise ValueError(f"the runs frame cannot be made: {name} repeat a key "
                                 f"({on}) of the runs")
            lined_up.append(piece.drop(keys.columns))
        out = pl.concat([runs, *lined_up], how="horizontal").with_columns(
            consistency=pl.when(pl.col("is_primary")).then(pl.col("consistency")))
        return out.select(
            "run_id", "setup", "task_id", "track", "pack", "repeat", "is_primary", "attempt_of",
            "status", "limit_type", "limit_value", "error", *DIMENSIONS, "composite",
            "rubric_score", "grade", "grade_reason", "e2e_s", "working_s", "tool_calls",
            "input_tokens", "output_tokens",
        )

    @cached_property
    def _summary_order(self) -> dict[str, int]:
        """Each setup's place in the summary (ranked setups by resolved rate first): the
        grades, timing and tool-call frames list their setups in the same order."""
        names = summary_table(self.results).frame.get_column("setup").to_list() \
            if self.results.setups else []
        return {str(name): k for k, name in enumerate(names)}

    def _standard_rows(self, part: str) -> pl.DataFrame:
        rows: list[dict[str, Any]] = []
        subsets = [("all", {n: (s.grades, s.timing, s.tool_calls)
                            for n, s in self.results.setups.items()}),
                   ("common", {n: (s.grades, s.timing, s.tool_calls)
                               for n, s in self.results.common_subset.setups.items()})]
        order = self._summary_order
        for subset, per_setup in subsets:
            for setup in sorted(per_setup, key=lambda name: order.get(name, len(order))):
                g, t, tc = per_setup[setup]
                row: dict[str, Any] = {"setup": setup, "subset": subset}
                if part == "grades":
                    counts, rates = g.counts.model_dump(), g.rates.model_dump()
                    row.update(N=g.N, questions=g.questions, repeats=g.repeats)
                    for state in GRADE_STATES:
                        ci = g.wilson95.get(state)
                        row[state] = counts[state]
                        row[f"{state}_rate"] = rates[state]
                        row[f"{state}_ci_low"] = None if ci is None else ci.low
                        row[f"{state}_ci_high"] = None if ci is None else ci.high
                    row.update(run_coverage=g.run_coverage,
                               graded_coverage=g.graded_coverage, ungraded=g.ungraded,
                               beyond_plan=g.beyond_plan,
                               needs_more_information=g.needs_more_information,
                               stable_resolved=g.stable_resolution.count)
                elif part == "timing":
                    row.update(attempted=t.timeouts.attempted, delivered=t.delivered,
                               missing_timestamps=t.missing_timestamps,
                               **{f"e2e_{k}": v for k, v in t.e2e_s.model_dump().items()},
                               **{f"working_{k}": v
                                  for k, v in t.working_s.model_dump().items()},
                               timeouts=t.timeouts.count, timeout_rate=t.timeouts.rate,
                               limits=t.limits.count, limit_rate=t.limits.rate,
                               limit_types=", ".join(f"{k} {n}" for k, n
                                                     in t.limits.by_type.items()) or None,
                               failures=t.failures.count, failure_rate=t.failures.rate,
                               e2e_beyond_source_total=t.e2e_beyond_source_total,
                               **({f"outcome_{k}": v for k, v in
                                   t.time_to_outcome_s.model_dump().items() if k != "label"}
                                  if t.time_to_outcome_s is not None else {}))
                else:
                    row.update(delivered=tc.delivered, runs_exposed=tc.runs_exposed,
                               coverage=tc.coverage,
                               **{f"per_run_{k}": v for k, v in tc.per_run.model_dump().items()},
                               recorded_per_run_mean=tc.recorded_per_run.mean,
                               unique_calls=tc.unique_calls, recorded_calls=tc.recorded_calls,
                               runs_with_repeated_ids=tc.runs_with_repeated_ids,
                               headline_per_run_mean=(tc.headline_per_run or tc.per_run).mean,
                               headline_basis=tc.headline_basis,
                               attempted_runs_exposed=tc.attempted_runs_exposed,
                               attempted_per_run_mean=(tc.attempted_per_run.mean
                                                       if tc.attempted_per_run else None),
                               span_p50_s=tc.span_s.p50)
                rows.append(row)
        return pl.DataFrame(rows, infer_schema_length=None) if rows else pl.DataFrame(
            schema={"setup": pl.String, "subset": pl.String})

    @cached_property
    def _frames(self) -> dict[str, pl.DataFrame]:
        grades = self._standard_rows("grades")
        lb_rows = []
        for setup, s in self.results.setups.items():
            o = s.overall
            lb_rows.append({"setup": setup, "composite": o.composite,
                            "dimensions_computed": o.dimensions_computed,
                            **o.dimensions.model_dump(), "tasks": o.tasks})
        leaderboard = pl.DataFrame(lb_rows, schema={
            "setup": pl.String, "composite": pl.Float64, "dimensions_computed": pl.Int64,
            **dict.fromkeys(DIMENSIONS, pl.Float64), "tasks": pl.Int64})
        if grades.height:
            rates = grades.filter(pl.col("subset") == "all").select(
                "setup", "N", *[f"{s}_rate" for s in GRADE_STATES], "graded_coverage")
            leaderboard = leaderboard.join(rates, on="setup", how="left")
        leaderboard = leaderboard.sort(["composite", "setup"], descending=[True, False],
                                       nulls_last=True)
        comparisons = pl.DataFrame([
            {"baseline": c.baseline, "compared": c.compared, "subset": c.subset,
             "questions": c.questions, "metric": f.metric, "label": f.label,
             "n_questions": f.n_questions, "mean_a": f.mean_a, "mean_b": f.mean_b,
             "mean_diff_b_minus_a": f.mean_diff_b_minus_a,
             "ci_low": None if f.ci95 is None else f.ci95.low,
             "ci_high": None if f.ci95 is None else f.ci95.high,
             "direction": f.direction, "value": f.value, "p_value": f.p_value,
             "p_holm": f.p_holm, "test": f.test,
             "note": f.formula or f.statement}
            for c in self.results.comparisons for f in c.figures
        ], schema={"baseline": pl.String, "compared": pl.String, "subset": pl.String,
                   "questions": pl.Int64, "metric": pl.String, "label": pl.String,
                   "n_questions": pl.Int64, "mean_a": pl.Float64, "mean_b": pl.Float64,
                   "mean_diff_b_minus_a": pl.Float64, "ci_low": pl.Float64,
                   "ci_high": pl.Float64, "direction": pl.String, "value": pl.Float64,
                   "p_value": pl.Float64, "p_holm": pl.Float64, "test": pl.String,
                   "note": pl.String})
        rejected = pl.DataFrame(
            [{"source": r.source, "line": r.line, "field": r.field, "error": r.error}
             for r in self.inputs.rejected],
            schema={"source": pl.String, "line": pl.Int64, "field": pl.String,
                    "error": pl.String})
        warnings = pl.DataFrame(
            [w.model_dump() for w in self.results.warnings],
            schema={"source": pl.String, "line": pl.Int64, "message": pl.String})
        return {"leaderboard": leaderboard, "grades": grades,
                "timing": self._standard_rows("timing"),
                "tool_calls": self._standard_rows("tool_calls"), "comparisons": comparisons,
                "rejected": rejected, "warnings": warnings}

    # ------------------------------------------------------------------ frames (public)

    @property
    def headline(self) -> HeadlineView:
        """The answer first (:func:`~grade_kit.presentation.tables.headline_view`,
        docs/methodology.md §5
        "The headline"): the best setup on the resolved rate, its margin over the next with
        the interval and Holm-adjusted p, the statistically tied groups, and one compact
        table; the same tests, family and subset as ``comparisons``."""
        return headline_view(self.results, self.standard.compared)

    @property
    def summary(self) -> Table:
        """One row per setup, best resolved rate first, formatted for reading
        (:func:`grade_kit.presentation.tables.summary_table`): N, the resolved rate with its 95%
        interval, the other grades, timing, tool calls and GRADE scores where they exist."""
        return summary_table(self.results)

    @property
    def provenance(self) -> Table:
        """What made these figures, formatted
        (:func:`~grade_kit.presentation.tables.provenance_table`):
        version, time, each input by name and SHA-256, R, seeds, judges and graders."""
        return provenance_table(self.results)

    @property
    def absent(self) -> Absent:
        """Why a kind of figure does not exist here (:class:`grade_kit.presentation.tables.Absent`:
        ``grade``, ``timing``, ``comparison``, ``tool_calls``, each a sentence or None): what
        a table shows instead (``gk.table(ev.leaderboard, absent=ev.absent.grade)``) and why
        ``grade-kit report`` leaves a section out."""
        return absences(self.results)

    @property
    def leaderboard(self) -> Frame:
        """One row per setup, best composite first (see the class docstring)."""
        return _as_kind(self._frames["leaderboard"], self.kind)

    @property
    def tasks(self) -> Frame:
        """Per (setup, GRADE task): six dimensions, composite, rubric score, runs."""
        return _as_kind(self.scores.tasks, self.kind)

    @property
    def tracks(self) -> Frame:
        """Per (setup, track): dimension means, composite mean, tasks."""
        return _as_kind(self.scores.tracks, self.kind)

    @property
    def packs(self) -> Frame:
        """Per (setup, pack): dimension means, composite mean, tasks."""
        return _as_kind(self.scores.packs, self.kind)

    @property
    def runs(self) -> Frame:
        """One row per run: ids, status (with the limit's type and value for a run stopped
        by a limit), six dimensions (consistency: its task's, on primary runs), per-run
        composite and rubric score, grade and reason, E2E seconds, working seconds (where
        the source records them), unique tool calls (null when the run exposed no tool
        events), tokens where known."""
        return _as_kind(self.runs_frame, self.kind)

    @property
    def grades(self) -> Frame:
        """Per setup and subset: N, questions, repeats, each state's count, rate and 95%
        Wilson interval, graded coverage, ungraded, beyond plan, stable resolutions."""
        return _as_kind(self._frames["grades"], self.kind)

    @property
    def timing(self) -> Frame:
        """Per setup and subset: attempted, delivered, E2E n/mean/P50/P90/min/max, runs
        without timestamps, working time n/mean/P50/P90/min/max (where the source records
        it), timeouts, limits (with their types) and failures with their rates."""
        return _as_kind(self._frames["timing"], self.kind)

    @property
    def tool_calls(self) -> Frame:
        """Per setup and subset: delivered, exposed, coverage, unique calls per run
        (n/mean/P50/P90/min/max) and recorded calls per run (mean) side by side, unique and
        recorded calls, runs reusing ids, span P50."""
        return _as_kind(self._frames["tool_calls"], self.kind)

    @property
    def comparisons(self) -> Frame:
        """One row per setup pair, subset and figure: label, paired n, means, difference,
        95% bootstrap interval, direction, value, and for each grade rate (``resolved_rate``,
        ...) the paired test's p-value, its Holm adjustment across the pairs and the test's
        name; formula or statement."""
        return _as_kind(self._frames["comparisons"], self.kind)

    @property
    def rejected(self) -> Frame:
        """Every rejected input record: source, line, field, error."""
        return _as_kind(self._frames["rejected"], self.kind)

    @property
    def warnings(self) -> Frame:
        """Every warning: source, line, message."""
        return _as_kind(self._frames["warnings"], self.kind)

    # ------------------------------------------------------------------ the rest

    @property
    def grading_note(self) -> str:
        """Who graded, labelled an internal consistency review when every grader is a model
        (:func:`~grade_kit.judges.model.grading_label`)."""
        return grading_label(self.results.provenance.graders)

    def weakest_tasks(self, n: int = 5) -> Frame:
        """The ``n`` GRADE tasks with the lowest composite per setup (ties by task id), the
        rows of :attr:`tasks`; tasks without a composite are left out."""
        frame = (self.scores.tasks.filter(pl.col("composite").is_not_null())
                 .sort("setup", "composite", "task_id")
                 .group_by("setup", maintain_order=True).head(n))
        return _as_kind(frame, self.kind)

    def _answer_frames(self, one: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
        """The metrics and claim matches of the one run in ``one``: from memory, or for an
        evaluation of a packed store, read back from the run's partition and matched again
        (the same deterministic rule, so the same decisions, with the matched text)."""
        d = self.data
        run_id = one.get_column("run_id").item()
        store = d.extra.get("store")
        if store is None:
            return (d.metrics.filter(pl.col("run_id") == run_id),
                    self.scores.matches.filter(pl.col("run_id") == run_id))
        partition = partition_of(one.get_column("task_id").item(),
                                 int(read_manifest(store)["partitions"]))
        frames = {name: read_store_frame(store, name, partition)
                  .filter(pl.col("run_id") == run_id) for name in
                  ("items", "metrics", "events", "tool_calls", "judgements", "grades")}
        mini = EvalData.from_frames({**{k: getattr(d, k) for k in
                                        ("tasks", "weights", "facts", "claims", "claim_terms")},
                                     **frames, "runs": one})
        return frames["metrics"], partition_scores(mini).matches

    def explain(self, run_id: str) -> RunExplanation:
        """Why run ``run_id`` scored what it did: its gold facts, claims, judgements and grade.

        Raises:
            KeyError: when no loaded run has that id.
        """
        row = self.runs_frame.filter(pl.col("run_id") == run_id)
        if row.is_empty():
            raise KeyError(f"no run {run_id!r} in this evaluation")
        d = self.data
        one = d.runs.filter(pl.col("run_id") == run_id)
        metrics, matches = self._answer_frames(one)
        facts = fact_checks(d.facts, one, metrics)
        assert isinstance(facts, pl.DataFrame)
        claims = (matches
                  .join(d.claims.select("task_id", "claim_id", "text"),
                        on=["task_id", "claim_id"], how="left")
                  .select("run_id", "task_id", "claim_id", "role", "calibration", "text",
                          "found", "method", "matched_field", "matched_text"))
        judgements = d.judgements.filter(pl.col("run_id") == run_id).select(
            "dimension", "score", "judge", "reason")
        grade = self.standard.graded.filter(pl.col("run_id") == run_id).select(
            "grade", "grade_reason", "core_conclusion", "request_fulfilment",
            "material_error", "claim", "evidence", "effect", "grader").to_dicts()[0]
        return RunExplanation(run=row.to_dicts()[0], facts=facts, claims=claims,
                              judgements=judgements, grade=grade)

    def write(self, out_dir: Path | str) -> dict[str, Path]:
        """Write results.json, scorecard.md, the Parquet frames and rejects.jsonl under
        ``out_dir``: exactly the files of ``grade-kit score``; and the evaluation's state
        (``evaluation/``; for an evaluation of a packed store, a copy of the store), from
        which :func:`reopen` gives this evaluation back without scoring again.

        Returns:
            The written paths by name.
        """
        out = output_folder(out_dir)
        refuse_links(out, [*OUTPUT_FILES.values(), STATE_DIR])
        with folder_lock(out):  # the outputs and the state that vouches for them, together
            written = write_outputs(out, self.results, self.scores.runs, self.standard.graded,
                                    lambda: self.runs_frame, self.inputs.rejected,
                                    locked=True)
            state = write_state(out, self.inputs, self.data, self.scores, self.standard,
                                self.kind, outputs=written)
        return {**written, "state": state}

    def _summary(self) -> str:
        def count(n: int, noun: str) -> str:
            return f"{n} {noun}{'' if n == 1 else 's'}"

        return (f"{count(len(self.results.setups), 'setup')}, "
                f"{count(len(self.inputs.tasks), 'task')}, {count(len(self.inputs.runs), 'run')}, "
                f"R = {self.results.plan.repeats}"
                f"{' (inferred)' if self.results.plan.inferred else ''}, "
                f"{len(self.inputs.rejected)} rejected, "
                f"{count(len(self.results.warnings), 'warning')}")

    def __repr__(self) -> str:
        lines = [f"Evaluation({self._summary()})"]
        pending = pending_state(self.results)
        if pending:
            lines.append(f"  {pending}")
        for row in self._frames["leaderboard"].head(10).iter_rows(named=True):
            comp = "—" if row["composite"] is None else f"{row['composite']:.3f}"
            lines.append(f"  {row['setup']}: composite {comp} over "
                         f"{row['dimensions_computed']} of {len(DIMENSIONS)} dimensions, "
                         f"{row['tasks']} tasks")
        if len(self.results.setups) > 10:
            lines.append(f"  … {len(self.results.setups) - 10} more setups")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        pending = pending_state(self.results)
        parts = [f"<p><b>Evaluation</b>: {html.escape(self._summary())}</p>",
                 f"<p><b>{html.escape(pending)}</b></p>" if pending else "",
                 self.summary._repr_html_()]
        if self.results.warnings:  # listed once, by .warnings (the scorecard's own section)
            count = len(self.results.warnings)
            parts.append(f"<p>{count} warning{'' if count == 1 else 's'}: "
                         "<code>.warnings</code> lists them.</p>")
        if self.inputs.rejected:
            parts.append(f"<p>{len(self.inputs.rejected)} input records rejected: see "
                         "<code>.rejected</code>.</p>")
        return "".join(parts)


def reopen(folder: Path | str, *, frames: FrameKind | None = None) -> Evaluation:
    """The evaluation ``ev.write(folder)`` (or ``grade-kit score --out folder``) wrote, read
    back from its Parquet and JSON files without scoring again: the same frames, results
    and explanations (the run records are read only when something asks for them).

    Args:
        folder: An output folder of ``ev.write`` or ``grade-kit score``.
        frames: ``"polars"`` or ``"pandas"``; default the kind the evaluation had.

    Raises:
        InputError: when ``folder`` holds no evaluation state.
    """
    inputs, data, scores, standard, results, kind = read_state(folder)
    chosen = frames or kind
    if chosen not in ("polars", "pandas"):
        raise ValueError(f"frames must be 'polars' or 'pandas', not {chosen!r}")
    return Evaluation(inputs, data, scores, standard, results, cast(FrameKind, chosen))


_LAST_REOPENED: dict[str, Any] = {}
"""The evaluation :func:`reopen_or_evaluate` reopened last, and which writing of which folder."""


def _written(folder: Path) -> tuple[str, ...]:
    """Which writing of a scored folder: its path, and its state's and results' identity
    (inode, size and modification time: ``ev.write`` replaces both files)."""
    marks = [str(folder.resolve())]
    for path in (folder / STATE_DIR / "state.json", folder / "results.json"):
        try:
            stat = path.stat()
        except OSError:
            return ()  # nothing to remember: reopen says what is missing
        marks.append(f"{stat.st_ino}:{stat.st_size}:{stat.st_mtime_ns}")
    return tuple(marks)


def reopen_or_evaluate(scored: Path | str | None, tasks: Records | Inputs | None = None,
                       runs: Records | None = None, **options: Any) -> Evaluation:
    """What a notebook shows: the scored folder ``scored`` reopened (:func:`reopen`; ``grade-kit
    report`` scores once and passes it), or, without one, :func:`evaluate` of ``tasks`` and
    ``runs`` with ``options`` (a notebook opened on its own); with neither, the demo suite and
    its recorded runs (:func:`~grade_kit.demo.demo_fixtures`: the same wherever the notebook
    runs from).

    The same unchanged scored folder asked for again in one process is the same
    :class:`Evaluation`, not read again (a kernel that runs several of ``grade-kit report``'s
    notebooks reads it once); a folder written again since is read again.

    Raises:
        ValueError: with runs but no tasks.
    """
    if scored:
        key = _written(Path(scored))
        if _LAST_REOPENED.get("key") != key:
            _LAST_REOPENED.clear()
            _LAST_REOPENED.update(key=key, evaluation=reopen(scored))
        return cast(Evaluation, _LAST_REOPENED["evaluation"])
    if tasks is None:
        if runs is not None:
            raise ValueError("give the tasks of these runs (or a scored folder)")
        from grade_kit.demo import demo_fixtures

        fixtures = demo_fixtures()
        tasks, runs = fixtures / "tasks", fixtures / "runs"
    return evaluate(tasks, runs, **options)


def _inputs(tasks: Records | Inputs, runs: Records | None, judgements: Records | None,
            grades: Records | None, packs: Path | str | None) -> Inputs:
    if isinstance(tasks, Inputs):
        if runs is not None:
            raise ValueError("pass either one Inputs value or tasks and runs, not both")
        out = tasks
        if judgements is not None:
            loaded_j = load_judgements(judgements, out.runs)
            out = replace(out, judgements=concat_records(Judgement, out.judgements,
                                                         loaded_j.records),
                          rejected=[*out.rejected, *loaded_j.rejected])
        if grades is not None:
            loaded_g = load_grades(grades, out.runs)
            out = replace(out, grades=concat_records(Grade, out.grades, loaded_g.records),
                          rejected=[*out.rejected, *loaded_g.rejected])
        return out
    if runs is None:
        try:  # Inspect or tau-bench logs given where tasks go (files or folders)
            logs = None if is_in_memory(tasks) else log_files(
                cast(Path | str | Sequence[Path | str], tasks))
        except ValueError as exc:
            raise InputError(str(exc)) from exc
        if logs is None:
            raise ValueError("runs are required (or pass one Inputs value, or other tools' "
                             "logs, as the first argument)")
        return _inputs(read_logs(*logs), None, judgements, grades, packs)
    return read_inputs(tasks, runs, judgements=judgements, grades=grades, packs=packs)


STORE_STAGES = ("read store", "GRADE scores", "standard statistics", "results")
"""The stages of :func:`evaluate` on a packed store, as its progress bar names them."""


def evaluate(
    tasks: Records | Inputs,
    runs: Records | None = None,
    *,
    judgements: Records | None = None,
    grades: Records | None = None,
    judge: str | Judge | None = None,
    grader: str | Grader | None = None,
    claim_judge: ClaimJudge | None = None,
    repeats: int | None = None,
    packs: Path | str | None = None,
    frames: FrameKind = "polars",
    seed: int = DEFAULT_SEED,
    arguments: dict[str, Any] | None = None,
    exclude_channel_overhead: bool = False,
    map_partitions: MapPartitions | None = None,
    progress: bool = False,
) -> Evaluation:
    """Read, judge and score an evaluation: GRADE scores, grades, timing, tool calls,
    comparisons, with every reject and warning (docs/methodology.md).

    Args:
        tasks: Folder of task files, a tasks JSONL file, task records, or one
            :class:`~grade_kit.reading.inputs.Inputs` value (then leave ``runs`` out).
        runs: Run JSONL file(s) or folder(s), or run records.
        judgements: Recorded judgements (files or records); default None.
        grades: Grade records (files or records); default None (every run ungraded).
        judge: ``"rules"`` (the offline rule judge) or a :class:`~grade_kit.judges.Judge`
            that fills the judged dimensions of every run with no recorded judgement (a
            recorded judgement always wins); default None (judged dimensions come only from
            recorded judgements, and a composite over fewer than six dimensions is warned).
        grader: ``"rules"`` (the offline rule grader, :mod:`grade_kit.judges.rule_grader`) writes
            a grade record for every delivered run of a GRADE task that has none recorded,
            or a :class:`~grade_kit.judges.Grader` (such as
            :class:`~grade_kit.judges.llm_grader.LLMGrader`) asked about every delivered run
            that has none recorded (a recorded one always wins); default None (runs without
            a record stay ``pending_verification``).
        claim_judge: Asked only about claims the deterministic match missed; default None.
        repeats: R, the planned repeats per question; default the R the sources state (an
            Inspect log's epochs, a tau2 file's trials) when they agree, else inferred (the
            largest repeat more than 5% of (setup, task) pairs reach; results say so).
        packs: Folder of packs for ``ground_truth`` keys; default found next to ``tasks``.
        frames: ``"polars"`` (default) or ``"pandas"``: the kind of every frame returned.
        seed: Seed of the comparison bootstrap; default 20261130.
        arguments: Recorded in the results' provenance (the CLI passes its arguments).
        exclude_channel_overhead: Subtract the channel overhead an agent reports (reply
            cards, link resolution) from E2E; default False (E2E = received - submitted).
            Every timing summary says which E2E it is (``e2e_definition``).
        map_partitions: How the GRADE map step runs: a ``map(function, jobs)`` such as
            ``ProcessPoolExecutor().map`` or a distributed engine's (docs/scaling.md). A
            store's partitions, or in-memory inputs split the same way by task (16 parts),
            are scored by it, then combined; the results are the same. Default None (a
            store: one partition after another; in memory: one pass).
        progress: Show a progress bar over the stages (reading, judging and grading when
            asked, GRADE scores, the standard's statistics, the typed results), each named
            as it runs: on stderr, or a widget in Jupyter. Default False (``grade-kit
            score`` shows it unless ``--quiet``).

    Returns:
        The :class:`Evaluation`.

    Example:
        >>> import grade_kit as gk
        >>> ev = gk.evaluate("fixtures/tasks", "fixtures/runs", judge="rules")
        >>> ev.leaderboard.select("setup", "composite")  # doctest: +SKIP
    """
    if frames not in ("polars", "pandas"):
        raise ValueError(f"frames must be 'polars' or 'pandas', not {frames!r}")
    resolve_grader(grader)
    if arguments is None and is_store(tasks):  # what the provenance records of this call
        arguments = {"store": str(Path(cast(Path | str, tasks))), "grader": grader,
                     "repeats": repeats, "frames": frames, "seed": seed,
                     "exclude_channel_overhead": exclude_channel_overhead}
    elif arguments is None:
        arguments = {
            "judge": None if judge is None else resolve_judge(judge).name,
            "grader": grader if grader is None or isinstance(grader, str) else grader.name,
            "claim_judge": None if claim_judge is None else claim_judge.name,
            "repeats": repeats, "packs": None if packs is None else str(packs),
            "frames": frames, "seed": seed,
            "exclude_channel_overhead": exclude_channel_overhead}
    if is_store(runs):
        raise ValueError("a packed store holds its tasks: pass it alone, gk.evaluate(store)")
    if is_store(tasks):
        if runs is not None or judgements is not None or grades is not None:
            raise ValueError("a packed store holds its runs, judgements and grades: pass it "
                             "alone, gk.evaluate(store)")
        if judge is not None or claim_judge is not None or not (
                grader is None or grader == "rules"):
            raise ValueError(
                "a packed store is scored from the judgements and grades packed into it (and "
                "grader='rules'): judge or grade the runs first (grade-kit judge / grade), "
                "then pack their output with the runs")
        with gc_paused(), stage_progress(STORE_STAGES, progress) as step:
            return _evaluate_store(Path(cast(Path | str, tasks)), grader, repeats, frames,
                                   seed, arguments, exclude_channel_overhead, map_partitions,
                                   step)
    size = _run_bytes(runs)
    if size > STORE_ABOVE_BYTES and judge is None and claim_judge is None and (
            grader is None or grader == "rules"):
        return _evaluate_through_store(
            cast(Records, tasks), cast(Records, runs), size, judgements, grades, packs,
            grader, repeats, frames, seed, exclude_channel_overhead, map_partitions, progress,
            arguments)
    with gc_paused():  # the pipeline builds many small objects; see grade_kit._gc
        return _evaluate(tasks, runs, judgements, grades, judge, grader, claim_judge, repeats,
                         packs, frames, seed, arguments, exclude_channel_overhead,
                         map_partitions, progress)


STORE_ABOVE_BYTES = 512 * 1024**2
"""Run files larger than this in total (about 290,000 rich runs) are scored through a
temporary packed store, one partition at a time, which bounds memory (docs/scaling.md
"The memory bound"); the results are the same."""


def _run_bytes(runs: Records | None) -> int:
    """The total size of the run files given, 0 for in-memory records or none."""
    if runs is None or isinstance(runs, Inputs) or is_in_memory(runs):
        return 0
    try:
        files = run_files(cast(Path | str, runs))
    except InputError:
        return 0  # the reader says what is wrong, in its words
    return sum(path.stat().st_size for path in files if path.is_file())


_PACK_APART = """
import contextlib, json, sys
from grade_kit.reading.io import InputError
from grade_kit.reading.packed import pack
arguments = json.loads(sys.argv[1])
try:
    with contextlib.redirect_stdout(sys.stderr):  # its lines per chunk, when asked for
        pack(**arguments)
except Exception as error:
    print(json.dumps({"error": type(error).__name__, "message": str(error),
                      "input": isinstance(error, InputError)}))
    sys.exit(1)
"""


def _pack_apart(tasks: Records, runs: Records, store: Path, judgements: Records | None,
                grades: Records | None, packs: Path | str | None, progress: bool) -> None:
    """:func:`~grade_kit.reading.packed.pack` in a fresh Python process when every input is a path
    (so what packing held is not left in this one; a subprocess, not multiprocessing, so
    a script without a ``__main__`` guard works too), else here. With ``progress``, its
    line per chunk goes to stderr."""
    given = {"tasks": tasks, "runs": runs, "judgements": judgements, "grades": grades}
    if any(is_in_memory(value) for value in given.values() if value is not None):
        pack(tasks, runs, store, judgements=judgements, grades=grades, packs=packs,
             progress=progress)
        return

    def plain(value: Records | Path | str | None) -> str | list[str] | None:
        if value is None or isinstance(value, str | Path):
            return None if value is None else str(value)
        return [str(path) for path in cast(Sequence[Path | str], value)]

    arguments = {**{name: plain(value) for name, value in given.items()},
                 "out": str(store), "packs": plain(packs), "progress": progress}
    done = subprocess.run([sys.executable, "-c", _PACK_APART, json.dumps(arguments)],
                          stdout=subprocess.PIPE, stderr=None if progress else subprocess.PIPE,
                          text=True, check=False)
    if done.returncode == 0:
        return
    lines = done.stdout.strip().splitlines()
    failure = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else None
    if failure is None:
        raise RuntimeError(f"packing the runs into a temporary store failed: "
                           f"{(done.stderr or 'see above').strip()[-2000:]}")
    if failure["input"]:
        raise InputError(failure["message"])
    raise RuntimeError(f"packing the runs into a temporary store failed: "
                       f"{failure['error']}: {failure['message']}")


def _evaluate_through_store(tasks: Records, runs: Records, size: int,
                            judgements: Records | None, grades: Records | None,
                            packs: Path | str | None, grader: str | None,
                            repeats: int | None, frames: FrameKind, seed: int,
                            exclude_channel_overhead: bool,
                            map_partitions: MapPartitions | None, progress: bool,
                            arguments: dict[str, Any]) -> Evaluation:
    """:func:`evaluate` of run files too big for one pass in memory: packed into a
    temporary store (removed when the evaluation is), then scored as a store."""
    folder = Path(tempfile.mkdtemp(prefix="grade-kit-store-"))
    print(f"grade_kit: {size / 1e9:.2f} GB of runs: scoring them through a temporary packed "
          f"store in {folder}, one partition at a time, to bound memory (docs/scaling.md)",
          file=sys.stderr, flush=True)
    try:
        _pack_apart(tasks, runs, folder / "store", judgements, grades, packs, progress)
        with gc_paused(), stage_progress(STORE_STAGES, progress) as step:
            evaluation = _evaluate_store(folder / "store", grader, repeats, frames, seed,
                                         arguments, exclude_channel_overhead, map_partitions,
                                         step)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    weakref.finalize(evaluation, shutil.rmtree, folder, ignore_errors=True)
    return evaluation


def _rule_grade_records(data: EvalData, per_run: pl.DataFrame,
                        matches: pl.DataFrame) -> pl.DataFrame:
    """The rule grader's records for every scored run of ``data`` that has none recorded."""
    grade_runs = data.runs.join(per_run.select("run_id"), on="run_id", how="semi")
    checks = fact_checks(data.facts, grade_runs, data.metrics)
    assert isinstance(checks, pl.DataFrame)
    return rule_grades(grade_runs, data.items, data.metrics, matches, checks, data.grades)


def score_partition(job: tuple[str, int, bool]) -> tuple[PartitionScores, pl.DataFrame | None]:
    """The map step of :func:`evaluate` on a packed store, for one partition: its
    :func:`~grade_kit.scorers.partition_scores` (the matched answer text left on disk, which
    :meth:`Evaluation.explain` reads back for one run) and, when asked, the rule grader's
    records. A module-level function of plain arguments, so any executor can run it.

    Args:
        job: (store folder, partition, whether to run the rule grader).
    """
    store, partition, rules = job
    data = partition_data(store, partition)
    scored = partition_scores(data)
    graded = _rule_grade_records(data, scored.runs, scored.matches) if rules else None
    return PartitionScores(
        runs=scored.runs, consistency=scored.consistency,
        matches=scored.matches.with_columns(matched_text=pl.lit(None, pl.String))), graded


def _evaluate_store(store: Path, grader: str | None, repeats: int | None, frames: FrameKind,
                    seed: int, arguments: dict[str, Any],
                    exclude_channel_overhead: bool,
                    map_partitions: MapPartitions | None = None,
                    step: Step = lambda _: None) -> Evaluation:
    """:func:`evaluate` on a packed store (docs/scaling.md): GRADE scores one partition at a
    time (a task's runs never span two), then the reduce over tasks, tracks, packs and setups
    and the standard's statistics over the per-run frames, which are read whole."""
    step("read store")
    manifest = read_manifest(store)
    tf = read_task_frames(store)
    whole = read_light_frames(store)
    jobs = [(str(store), k, grader == "rules") for k in range(int(manifest["partitions"]))]
    step("GRADE scores")
    parts: list[PartitionScores] = []
    rule_records: list[pl.DataFrame] = []
    for scored, rules in (map_partitions or map)(score_partition, jobs):
        parts.append(scored)
        if rules is not None:
            rule_records.append(rules)
    scores = combine_scores(parts, tf["tasks"], tf["weights"])
    graders = sorted(set(whole["grades"].get_column("grader").unique().to_list()))
    if grader == "rules":
        whole["grades"] = pl.concat([whole["grades"], *rule_records], how="vertical")
        graders.append(RULE_GRADER)
    data = EvalData.from_frames({**tf, **whole}, extra={"store": str(store)})
    inputs = Inputs(runs=StoreRuns(store, manifest), **store_records(store, manifest))
    return _conclude(
        inputs, data, scores, frames, repeats, seed, exclude_channel_overhead, step,
        arguments=dict(arguments),
        judges=sorted(set(whole["judgements"].get_column("judge").unique().to_list())),
        graders=graders)


def _conclude(inputs: Inputs, data: EvalData, scores: GradeScores, frames: FrameKind,
              repeats: int | None, seed: int, exclude_channel_overhead: bool, step: Step, *,
              arguments: dict[str, Any], judges: list[str],
              graders: list[str]) -> Evaluation:
    """The last steps of every evaluation: the standard's statistics, the provenance and
    the typed results."""
    step("standard statistics")
    standard = standard_results(data, repeats, scores.tasks, seed=seed,
                                exclude_channel_overhead=exclude_channel_overhead,
                                stated_repeats=inputs.stated_repeats)
    provenance = Provenance(
        grade_kit_version=__version__, created_at=datetime.now(UTC).isoformat(),
        inputs=inputs.files, arguments=arguments, seeds={"comparison_bootstrap": seed},
        judges=judges, graders=graders)
    step("results")
    results = build_results(scores, standard, inputs.rejected, inputs.warnings, provenance)
    return Evaluation(inputs, data, scores, standard, results, frames)


def _evaluate(tasks: Records | Inputs, runs: Records | None, judgements: Records | None,
              grades: Records | None, judge: str | Judge | None,
              grader: str | Grader | None,
              claim_judge: ClaimJudge | None, repeats: int | None,
              packs: Path | str | None, frames: FrameKind, seed: int,
              arguments: dict[str, Any],
              exclude_channel_overhead: bool = False,
              map_partitions: MapPartitions | None = None,
              progress: bool = False) -> Evaluation:
    # Each optional stage is decided once, here: for the bar's count and for the work.
    model_grader = None if grader is None or isinstance(grader, str) else grader
    rules = grader == "rules"
    stages = ["read", *(["judge"] if judge is not None else []),
              *(["grade"] if model_grader is not None else []),
              "flatten", "GRADE scores", *(["rule grades"] if rules else []),
              "standard statistics", "results"]
    with stage_progress(stages, progress) as step:
        step("read")
        inputs = _inputs(tasks, runs, judgements, grades, packs)
        judges_used: list[str] = []
        if judge is not None:
            step("judge")
            chosen = resolve_judge(judge)
            inputs = replace(inputs, judgements=concat_records(
                Judgement, inputs.judgements, new_judgements(chosen, inputs)))
            judges_used.append(chosen.name)
        graders_used: list[str] = []
        if model_grader is not None:
            step("grade")
            inputs = replace(inputs, grades=concat_records(
                Grade, inputs.grades, new_grades(model_grader, inputs)))
            graders_used.append(model_grader.name)
        step("flatten")
        data = EvalData.from_records(inputs.tasks, inputs.runs, inputs.judgements, inputs.grades,
                                     inputs.run_lines)
        step("GRADE scores")
        if map_partitions is None:
            scores = grade_scores(data, claim_judge)
        else:  # the same map and reduce as a store's, over parts split by task in memory
            scores = combine_scores(
                list(map_partitions(partial(partition_scores, claim_judge=claim_judge),
                                    split_by_task(data))), data.tasks, data.weights)
        recorded_graders = set(data.grades.get_column("grader").unique().to_list())
        graders = [*graders_used, *sorted(recorded_graders - set(graders_used))]
        if rules:
            step("rule grades")
            rule_records = _rule_grade_records(data, scores.runs, scores.matches)
            data = replace(data, grades=pl.concat([data.grades, rule_records], how="vertical"))
            graders.append(RULE_GRADER)
        recorded_judges = sorted(set(data.judgements.get_column("judge").unique().to_list())
                                 - set(judges_used))
        return _conclude(
            inputs, data, scores, frames, repeats, seed, exclude_channel_overhead, step,
            arguments=dict(arguments), judges=[*judges_used, *recorded_judges]
            + ([f"claim_judge:{claim_judge.name}"] if claim_judge is not None else []),
            graders=graders)
