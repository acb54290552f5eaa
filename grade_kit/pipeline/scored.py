"""An evaluation, scored: :class:`Evaluation` (frames for a notebook, typed results for
files, explanations of one run) and :func:`conclude`, the last steps every evaluation ends
with (the standard's statistics, the provenance, the typed results)."""

from __future__ import annotations

import html
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import polars as pl

from grade_kit._progress import Step
from grade_kit._version import __version__
from grade_kit.atomic import folder_lock, replaced_folder
from grade_kit.frames import EvalData, in_run_order, model_columns, to_polars
from grade_kit.judges import grading_label
from grade_kit.pipeline.files import OUTPUT_FILES, output_folder, refuse_links, write_outputs
from grade_kit.pipeline.results import build_results, overall_frame
from grade_kit.pipeline.state import STATE_DIR, write_state
from grade_kit.reading.inputs import Inputs
from grade_kit.reading.packed import (
    partition_of,
    read_manifest,
    read_store_frame,
)
from grade_kit.reading.prices import Prices
from grade_kit.schema import (
    DIMENSIONS,
    GRADE_STATES,
    SHORT_LABELS,
    Provenance,
    Reject,
    Results,
    WarningItem,
)
from grade_kit.scorers import (
    GradeScores,
    fact_checks,
    partition_scores,
    run_composites,
)
from grade_kit.standard import Cluster, StandardResults, standard_results
from grade_kit.views.markdown import ScorecardTables, scorecard_markdown
from grade_kit.views.tables import (
    Absent,
    HeadlineView,
    Table,
    absences,
    cell_text,
    comparisons_table,
    evaluation_title,
    headline_view,
    in_setup_order,
    pending_state,
    provenance_table,
    rejected_table,
    setup_order,
    summary_table,
    table,
    warnings_table,
    where_to_look,
)

FrameKind = Literal["polars", "pandas"]
if TYPE_CHECKING:  # pandas is imported when a pandas frame is asked for, never here
    import pandas as pd

    Frame = pl.DataFrame | pd.DataFrame


def as_kind(frame: pl.DataFrame, kind: FrameKind) -> Frame:
    """``frame`` as the kind of frame an evaluation hands out (polars as it is, or pandas)."""
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
    - :attr:`grades`, :attr:`timing`, :attr:`tool_calls`, :attr:`cost`: one row per setup and
      subset (``all``, ``common``), every denominator a column;
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
        calls = self.standard.run_calls.select("run_id", tool_calls=pl.col("calls"))
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
                                ("tool calls", calls, "run_id"),
                                ("costs", self.standard.run_costs.select(
                                    "run_id", "tokens", "cost", "cost_basis"), "run_id")):
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
            "input_tokens", "output_tokens", "tokens", "cost", "cost_basis",
        )

    @cached_property
    def _summary_order(self) -> dict[str, int]:
        """Each setup's place in the summary (ranked setups by resolved rate first): the
        grades, timing and tool-call frames list their setups in the same order."""
        names = self.summary.frame.get_column("setup").to_list() \
            if self.results.setups else []
        return {str(name): k for k, name in enumerate(names)}

    def _in_summary_order(self, frame: pl.DataFrame) -> pl.DataFrame:
        """Rows per setup and subset: ``all`` first, each in the summary's order."""
        order = self._summary_order
        return frame.sort(pl.col("subset") != "all", pl.col("setup").replace_strict(
            order, default=len(order), return_dtype=pl.Int64), maintain_order=True)

    @cached_property
    def _frames(self) -> dict[str, pl.DataFrame]:
        grades = self._in_summary_order(self.standard.grades)
        leaderboard = overall_frame(self.scores.overall, list(self.results.setups))
        if grades.height:
            rates = grades.filter(pl.col("subset") == "all").select(
                "setup", "N", *[f"{s}_rate" for s in GRADE_STATES], "graded_coverage")
            leaderboard = leaderboard.join(rates, on="setup", how="left")
        leaderboard = leaderboard.sort(["composite", "setup"], descending=[True, False],
                                       nulls_last=True)
        rejected = pl.DataFrame([r.as_reject().model_dump() for r in self.inputs.rejected],
                                schema=model_columns(Reject))
        warnings = pl.DataFrame([w.model_dump() for w in self.results.warnings],
                                schema=model_columns(WarningItem))
        return {"leaderboard": leaderboard, "grades": grades,
                "timing": self._in_summary_order(self.standard.timing.select(
                    "setup", "subset", "attempted", "delivered", "missing_timestamps",
                    pl.col("^e2e_(n|mean|p50|p90|min|max)$"),
                    pl.col("^e2e_mean_(ci_low|ci_high)$"), pl.col("^working_.*$"),
                    "timeouts", "timeout_rate", "limits", "limit_rate", "limit_types",
                    "failures", "failure_rate", "e2e_beyond_source_total",
                    pl.col("^outcome_.*$"))),
                "tool_calls": self._in_summary_order(self.standard.tool_calls.select(
                    "setup", "subset", "delivered", "runs_exposed", "coverage",
                    pl.col("^per_run_.*$"), "recorded_per_run_mean", "calls",
                    "recorded_calls", "runs_with_duplicate_records",
                    "attempted_runs_exposed", "attempted_per_run_mean",
                    span_p50_s="span_s_p50")),
                "cost": self._in_summary_order(self.standard.cost),
                "comparisons": self.standard.figures,
                "rejected": rejected, "warnings": warnings}

    # ------------------------------------------------------------------ frames (public)

    @property
    def headline(self) -> HeadlineView:
        """The answer first (:func:`~grade_kit.views.tables.headline_view`,
        docs/methodology.md §5 "The headline"): the best setup on the resolved rate, its margin
        over the next with the interval and Holm-adjusted p, the statistically tied groups,
        and one compact table; the same tests, family and subset as ``comparisons``."""
        return headline_view(self.results, self.standard.grades, self.standard.figures,
                             self.standard.reliability, self.standard.compared)

    @cached_property
    def summary(self) -> Table:
        """One row per setup, best resolved rate first, formatted for reading
        (:func:`grade_kit.views.tables.summary_table`): N, the resolved rate with its 95%
        interval, the other grades, timing, tool calls and GRADE scores where they exist.
        Made once (a table's frame is never changed)."""
        return summary_table(self.results, self.standard.grades, self.standard.timing,
                             self.standard.tool_calls,
                             overall_frame(self.scores.overall, list(self.results.setups)))

    @property
    def provenance(self) -> Table:
        """What made these figures, formatted
        (:func:`~grade_kit.views.tables.provenance_table`):
        version, time, each input by name and SHA-256, R, seeds, judges and graders."""
        return provenance_table(self.results)

    @property
    def absent(self) -> Absent:
        """Why a kind of figure does not exist here (:class:`grade_kit.views.tables.Absent`:
        ``grade``, ``timing``, ``comparison``, ``tool_calls``, each a sentence or None): what
        a table shows instead (``gk.table(ev.leaderboard, absent=ev.absent.grade)``) and why
        ``grade-kit report`` leaves a section out."""
        return absences(self.results)

    @property
    def title(self) -> str:
        """What this evaluation is, in one line (:func:`~grade_kit.views.tables.evaluation_title`):
        the tasks' suites (else packs), the setups, the questions and repeats; a report's
        default title."""
        tasks = self.data.tasks
        return evaluation_title(self.results, tasks.select(
            pl.coalesce("suite", "pack")).to_series().to_list() if tasks.height else [])

    @property
    def setup_order(self) -> list[str]:
        """The setups as the summary lists them (ranked by resolved rate on all questions,
        best first, ties by name; setups not ranked last): every per-setup frame and chart
        of the evaluation keeps this order."""
        return setup_order(self._frames["grades"])

    def _in_setup_order(self, frame: pl.DataFrame) -> pl.DataFrame:
        """``frame``'s rows by setup in :attr:`setup_order`
        (:func:`~grade_kit.views.tables.in_setup_order`)."""
        return in_setup_order(frame, self.setup_order)

    @property
    def leaderboard(self) -> Frame:
        """One row per setup, best composite first (see the class docstring)."""
        return as_kind(self._frames["leaderboard"], self.kind)

    @property
    def tasks(self) -> Frame:
        """Per (setup, GRADE task): six dimensions, composite, rubric score, runs; setups in
        the summary's order (:attr:`setup_order`)."""
        return as_kind(self._in_setup_order(self.scores.tasks), self.kind)

    @property
    def tracks(self) -> Frame:
        """Per (setup, track): dimension means, composite mean, tasks; setups in the
        summary's order."""
        return as_kind(self._in_setup_order(self.scores.tracks), self.kind)

    @property
    def packs(self) -> Frame:
        """Per (setup, pack): dimension means, composite mean, tasks; setups in the
        summary's order."""
        return as_kind(self._in_setup_order(self.scores.packs), self.kind)

    @property
    def runs(self) -> Frame:
        """One row per run: ids, status (with the limit's type and value for a run stopped
        by a limit), six dimensions (consistency: its task's, on primary runs), per-run
        composite and rubric score, grade and reason, E2E seconds, working seconds (where
        the source records them), tool calls (decided per call, docs/methodology.md §4 "Tool
        calls"; null when the run exposed no tool events), tokens where known."""
        return as_kind(self.runs_frame, self.kind)

    @property
    def grades(self) -> Frame:
        """Per setup and subset: N, questions, repeats, each state's count, rate, 95%
        Wilson interval over its effective size (clustered) with its design effect, icc and
        n_effective, the interval basis, graded coverage, ungraded, beyond plan, stable
        resolutions."""
        return as_kind(self._frames["grades"], self.kind)

    @property
    def reliability(self) -> Frame:
        """Per setup, subset and k = 1..R: pass_at_k and pass_hat_k with their clustered
        Wilson intervals (``_low``, ``_high``) and the questions (docs/methodology.md §4
        "Reliability"): pass^1 is the resolved rate, pass^R the stable-resolution rate;
        setups in the summary's order."""
        return as_kind(self._in_setup_order(self.standard.reliability), self.kind)

    @property
    def flaky(self) -> Frame:
        """Per setup, the questions resolved in some of their R slots but not all, with the
        share resolved; setups in the summary's order."""
        return as_kind(self._in_setup_order(self.standard.flaky), self.kind)

    @property
    def timing(self) -> Frame:
        """Per setup and subset: attempted, delivered, E2E n/mean/P50/P90/min/max and the
        mean's clustered 95% interval (``e2e_mean_ci_low``/``_high``), runs without
        timestamps, working time n/mean/P50/P90/min/max (where the source records
        it), timeouts, limits (with their types) and failures with their rates."""
        return as_kind(self._frames["timing"], self.kind)

    @property
    def tool_calls(self) -> Frame:
        """Per setup and subset: delivered, exposed, coverage, calls per run
        (n/mean/P50/P90/min/max, the mean's clustered 95% interval) and records per run
        (mean) side by side, calls and records in all, runs holding a call recorded twice,
        calls per attempted run, span P50 (docs/methodology.md §4 "Tool calls")."""
        return as_kind(self._frames["tool_calls"], self.kind)

    @property
    def cost(self) -> Frame:
        """Per setup and subset: tokens and dollars per run (mean with its question-clustered
        bootstrap interval, P50, P90, total), per question and per resolved question (with
        intervals), the coverage of runs with tokens and with a cost, where the costs came
        from (``basis``: as logged, or computed from the price file's digest), the runs with
        no cost and why (``unpriced``), and on all questions the setup's place on the
        cost-accuracy frontier with the share of resamples it holds it in (docs/methodology.md
        §4 "Cost"). No row when no run records usage."""
        return as_kind(self._frames["cost"], self.kind)

    @property
    def comparisons(self) -> Frame:
        """One row per setup pair, subset and figure: label, paired n, means, difference,
        95% bootstrap interval, direction, value, and for each grade rate (``resolved_rate``,
        ...) the paired test's p-value, its Holm adjustment across the pairs and the test's
        name; formula or statement."""
        return as_kind(self._frames["comparisons"], self.kind)

    @property
    def rejected(self) -> Frame:
        """Every rejected input record: source, line, field, error."""
        return as_kind(self._frames["rejected"], self.kind)

    @property
    def warnings(self) -> Frame:
        """Every warning: source, line, message."""
        return as_kind(self._frames["warnings"], self.kind)

    # ------------------------------------------------------------------ the rest

    @property
    def grading_note(self) -> str:
        """Who graded, labelled an internal consistency review when every grader is a model
        (:func:`~grade_kit.judges.grading_label`)."""
        return grading_label(self.results.provenance.graders)

    def weakest_tasks(self, n: int = 5) -> Frame:
        """The ``n`` GRADE tasks with the lowest composite per setup (ties by task id), the
        rows of :attr:`tasks` (setups in the summary's order); tasks without a composite are
        left out."""
        frame = (self.scores.tasks.filter(pl.col("composite").is_not_null())
                 .sort("setup", "composite", "task_id")
                 .group_by("setup", maintain_order=True).head(n))
        return as_kind(self._in_setup_order(frame), self.kind)

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
                  ("items", "metrics", "events", "tool_calls", "usage", "judgements",
                   "grades")}
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

    def scorecard_markdown(self, weakest: int = 5) -> str:
        """scorecard.md's text: the tables the notebooks and the report show (the
        leaderboard, tracks, packs, the ``weakest`` tasks per setup, grades, timing, tool
        calls, comparisons, rejects and warnings, each as ``gk.table`` makes it), with the
        sentences and lists of the typed results around them
        (:func:`~grade_kit.views.markdown.scorecard_markdown`)."""
        frames, absent = self._frames, self.absent
        order = list(self._summary_order)
        tables = ScorecardTables(
            leaderboard=table(frames["leaderboard"], absent=absent.grade),
            tracks=table(self.scores.tracks, absent=absent.grade),
            packs=table(self.scores.packs, absent=absent.grade),
            weakest=table(to_polars(self.weakest_tasks(weakest)), absent=absent.grade),
            grades=table(frames["grades"]),
            timing=table(frames["timing"], absent=absent.timing),
            tool_calls=table(frames["tool_calls"], absent=absent.tool_calls),
            comparisons=[comparisons_table(frames["comparisons"], subset, order,
                                           absent=absent.comparison)
                         for subset in ("all", "common")],
            rejected=rejected_table(frames["rejected"], self.results),
            warnings=warnings_table(frames["warnings"], self.results))
        return scorecard_markdown(self.results, tables, weakest=weakest,
                                  rejects_file=OUTPUT_FILES["rejects"])

    def write(self, out_dir: Path | str) -> dict[str, Path]:
        """Write results.json, scorecard.md, the Parquet frames and rejects.jsonl under
        ``out_dir``: exactly the files of ``grade-kit score``; and the evaluation's state
        (``evaluation/``; for an evaluation of a packed store, a copy of the store), from
        which :func:`reopen` gives this evaluation back without scoring again. The folder is
        replaced whole (:func:`~grade_kit.atomic.replaced_folder`): it holds the previous
        evaluation until the new one is complete, and other entries in it are kept.

        Returns:
            The written paths by name.
        """
        out = output_folder(out_dir, create=False).resolve()
        refuse_links(out, [*OUTPUT_FILES.values(), STATE_DIR])
        # the outputs and the state that vouches for them, built whole beside the folder and
        # swapped in: a kill or a full disk leaves the previous evaluation as it was
        with folder_lock(out), replaced_folder(out) as stage:
            written = write_outputs(stage, self.results, self.scorecard_markdown,
                                    self.scores.runs, self.standard.graded,
                                    lambda: self.runs_frame, self.inputs.rejected)
            written["state"] = write_state(stage, self.inputs, self.data, self.scores,
                                           self.standard, self.kind, outputs=written)
        return {name: out / path.relative_to(stage) for name, path in written.items()}

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
            parts.append(f"<p>{count} warning{'' if count == 1 else 's'}: " + where_to_look(
                "<code>.warnings</code> lists them.", "the Warnings table lists them.")
                + "</p>")
        if self.inputs.rejected:
            parts.append(f"<p>{len(self.inputs.rejected)} input records rejected: "
                         + where_to_look("see <code>.rejected</code>.",
                                         "the Rejected input table lists them.") + "</p>")
        return "".join(parts)


def conclude(inputs: Inputs, data: EvalData, scores: GradeScores, frames: FrameKind,
              repeats: int | None, seed: int, exclude_channel_overhead: bool, step: Step, *,
              arguments: dict[str, Any], judges: list[str],
              graders: list[str], cluster: Cluster = "question",
              prices: Prices | None = None) -> Evaluation:
    """The last steps of every evaluation: the standard's statistics, the provenance and
    the typed results."""
    step("standard statistics")
    standard = standard_results(data, repeats, scores.tasks, seed=seed,
                                exclude_channel_overhead=exclude_channel_overhead,
                                stated_repeats=inputs.stated_repeats, cluster=cluster,
                                prices=prices)
    provenance = Provenance(
        grade_kit_version=__version__, created_at=datetime.now(UTC).isoformat(),
        inputs=inputs.files, arguments=arguments, seeds={"comparison_bootstrap": seed},
        judges=judges, graders=graders,
        prices=None if prices is None else prices.provenance())
    step("results")
    results = build_results(scores, standard, inputs.rejected, inputs.warnings, provenance)
    return Evaluation(inputs, data, scores, standard, results, frames)
