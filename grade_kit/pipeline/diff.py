"""This evaluation against an earlier one (docs/methodology.md §5 "Against an earlier
evaluation"): :func:`diff` matches the two evaluations' setups and questions, lists what one
side lacks, and tests each matched setup's change question by question, with the same
paired tests, labels and one-verdict intervals as the comparisons inside one evaluation.
"""

from __future__ import annotations

import hashlib
import html
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from grade_kit.frames import raw_records
from grade_kit.pipeline.evaluation import evaluate, reopen
from grade_kit.pipeline.scored import Evaluation, FrameKind, as_kind
from grade_kit.pipeline.state import STATE_DIR
from grade_kit.reading.inputs import Inputs
from grade_kit.schema import Comparison, InputError, Task
from grade_kit.standard.blind.sheet import answer_text
from grade_kit.standard.clustered import Cluster, cluster_of_tasks
from grade_kit.standard.compare import (
    DEFAULT_SEED,
    METRICS,
    adjust_by_holm,
    better_side,
    compare_pair,
    verdict_intervals,
)
from grade_kit.standard.headline import ALPHA
from grade_kit.views.tables import p_precise

if TYPE_CHECKING:
    import pandas as pd

    Frame = pl.DataFrame | pd.DataFrame

Side = Evaluation | Inputs | Path | str | Sequence[Path | str]
"""One side of a diff: an evaluation, inputs, a scored folder (``grade-kit score --out``,
``ev.write``: reopened, its every file checked), or other tools' logs (evaluated)."""

QUESTION_FIELDS = tuple(name for name in Task.model_fields
                        if name not in ("task_id", "track", "suite", "weights", "metadata"))
"""What a grader sees of a question: the fields its digest covers (:func:`question_digest`);
its id, track, suite, GRADE weights and free metadata are not among them."""

GATED_METRICS = ("resolved_rate", "material_error_rate", "unresolved_rate")
"""The metrics a regression gate can use: those with a paired test and a better side."""

SUMMARY_COLUMNS = {
    "setup": pl.String, "candidate_setup": pl.String, "metric": pl.String, "k": pl.Int64,
    "label": pl.String, "n_questions": pl.Int64, "baseline": pl.Float64,
    "candidate": pl.Float64, "change": pl.Float64, "ci_low": pl.Float64,
    "ci_high": pl.Float64, "ci_level": pl.Float64, "p_value": pl.Float64,
    "p_holm": pl.Float64, "test": pl.String, "verdict": pl.String, "note": pl.String,
}
"""The columns of :attr:`Diff.summary`."""

FLIP_COLUMNS = {
    "setup": pl.String, "candidate_setup": pl.String, "task_id": pl.String,
    "change": pl.String, "baseline_resolved": pl.Float64, "candidate_resolved": pl.Float64,
    "baseline_grades": pl.String, "candidate_grades": pl.String,
    "baseline_run_ids": pl.String, "candidate_run_ids": pl.String,
}
"""The columns of :attr:`Diff.flips`."""


def question_digest(task: Task) -> str:
    """The SHA-256 of what a grader sees of ``task`` (:data:`QUESTION_FIELDS`, as canonical
    JSON): two evaluations ask the same question only when their tasks of one id agree on
    it."""
    seen = task.model_dump(mode="json", include=set(QUESTION_FIELDS))
    text = json.dumps(seen, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _side(side: Side, kind: FrameKind | None) -> tuple[Evaluation, str]:
    """The evaluation a side names, and its label (its folder or file name)."""
    if isinstance(side, Evaluation):
        return side, "in memory"
    if isinstance(side, Inputs):
        return evaluate(side, frames=kind or "polars"), "inputs"
    paths = [side] if isinstance(side, str | Path) else list(side)
    label = ", ".join(Path(p).name for p in paths)
    if len(paths) == 1 and (Path(paths[0]) / STATE_DIR / "state.json").is_file():
        return reopen(paths[0], frames=kind), label
    if len(paths) == 1 and Path(paths[0]).is_dir() and not any(Path(paths[0]).iterdir()):
        raise InputError(f"{paths[0]}: an empty folder, neither a scored folder nor logs")
    return evaluate(paths, frames=kind or "polars"), label


def _pairs(a: Evaluation, b: Evaluation,
           match: Mapping[str, str] | None) -> tuple[list[tuple[str, str]], list[str], list[str]]:
    """Matched (baseline, candidate) setups: those of one name, and ``match``'s pairs; and
    the setups of each side left unmatched."""
    left, right = list(a.results.setups), list(b.results.setups)
    given = dict(match or {})
    unknown = ([f"baseline setup {k!r}" for k in given if k not in left]
               + [f"candidate setup {v!r}" for v in given.values() if v not in right])
    if unknown:
        raise InputError(f"--match names {', '.join(unknown)}, not in its evaluation "
                         f"(baseline: {', '.join(left[:10])}; candidate: "
                         f"{', '.join(right[:10])})")
    pairs = list(given.items())
    paired_right = set(given.values())
    pairs += [(name, name) for name in left if name not in given and name in right
              and name not in paired_right]
    pairs.sort()
    only_a = [n for n in left if n not in {p[0] for p in pairs}]
    only_b = [n for n in right if n not in {p[1] for p in pairs}]
    return pairs, only_a, only_b


def _verdict(metric: str, label: str, p_holm: float | None, direction: str | None,
             change: float | None) -> str:
    """improved, regressed, changed (no better side), no significant change (a test that
    does not reject), no clear change (an interval over 0), or the figure's label."""
    if label != "measured":
        return label
    better = METRICS[metric][1] if metric in METRICS else better_side(metric)
    if direction is None:
        return "no significant change" if p_holm is not None else "no clear change"
    if better is None or change is None:
        return "changed"
    return "improved" if (change > 0) == (better == "higher") else "regressed"


def _grades_text(slots: pl.DataFrame) -> pl.DataFrame:
    """Per (setup, task_id): its slots' grades by repeat (``resolved, unresolved``) and
    run ids."""
    return (slots.sort("setup", "task_id", "repeat").group_by("setup", "task_id",
                                                              maintain_order=True)
            .agg(grades=pl.col("state").str.join(", "), run_ids=pl.col("run_id").str.join(", ")))


@dataclass(frozen=True)
class Diff:
    """Two evaluations compared question by question (:func:`diff`).

    Attributes:
        baseline: The earlier evaluation.
        candidate: The later one.
        baseline_label: What the baseline was read from (a folder or file name).
        candidate_label: What the candidate was read from.
        pairs: The matched (baseline setup, candidate setup) pairs, in order.
        repeats: R, the same on both sides.
        comparisons: Each pair's :class:`~grade_kit.schema.Comparison` (``baseline`` is the
            baseline's setup, ``compared`` the candidate's; every p-value Holm-adjusted
            across all the pairs' tested figures).
        notes: What is said before any figure: setups and questions on one side only,
            questions that changed, a candidate with lower coverage.
        kind: The kind of frame handed out (the baseline's).
    """

    baseline: Evaluation
    candidate: Evaluation
    baseline_label: str
    candidate_label: str
    pairs: list[tuple[str, str]]
    repeats: int
    comparisons: list[Comparison]
    notes: list[str]
    summary_frame: pl.DataFrame
    flips_frame: pl.DataFrame
    questions_frame: pl.DataFrame
    setups_frame: pl.DataFrame
    kind: FrameKind

    @property
    def summary(self) -> Frame:
        """One row per matched setup and figure (:data:`SUMMARY_COLUMNS`): the baseline's
        and the candidate's value on the paired questions, the change (candidate - baseline)
        with its interval, p and Holm p where tested, the label and the verdict
        (``improved``, ``regressed``, ``no significant change``, ``no clear change`` for an
        untested interval over 0, or the figure's label)."""
        return as_kind(self.summary_frame, self.kind)

    @property
    def flips(self) -> Frame:
        """One row per matched setup and paired question whose resolved share changed
        (:data:`FLIP_COLUMNS`): ``regressed`` or ``improved``, both shares, each side's
        grades by repeat and run ids."""
        return as_kind(self.flips_frame, self.kind)

    @property
    def questions(self) -> Frame:
        """Every question of either side: task_id and ``status``, one of ``paired`` (the
        same question on both sides), ``changed`` (its text or gold differs: kept out of
        the tests), ``baseline only`` and ``candidate only``."""
        return as_kind(self.questions_frame, self.kind)

    @property
    def question_counts(self) -> Frame:
        """How many questions have each status of :attr:`questions` (status, questions)."""
        return as_kind(self.questions_frame.group_by("status").agg(questions=pl.len())
                       .sort("status"), self.kind)

    @property
    def setups(self) -> Frame:
        """Every setup of either side: setup, candidate_setup, status (``matched``,
        ``baseline only``, ``candidate only``, ``not matched`` (on both sides, but ``match``
        pairs it with another), ``not compared``), both run coverages and the verdict on
        the resolved rate."""
        return as_kind(self.setups_frame, self.kind)

    def verdict_counts(self, metric: str = "resolved_rate") -> dict[str, int]:
        """How many matched setups ``metric`` (k none) says regressed, improved, or neither
        (``unchanged``: no significant change, or not tested)."""
        rows = self.summary_frame.filter((pl.col("metric") == metric) & pl.col("k").is_null())
        counts = {"regressed": 0, "improved": 0, "unchanged": 0}
        for verdict in rows.get_column("verdict").to_list():
            counts[verdict if verdict in ("regressed", "improved") else "unchanged"] += 1
        return counts

    @property
    def headline(self) -> str:
        """The answer in one line: how many matched setups regressed, improved and did not
        change on the resolved rate (Holm-adjusted paired tests at 0.05), over how many
        paired questions."""
        counts = self.verdict_counts()
        paired = int((self.questions_frame.get_column("status") == "paired").sum())
        return (f"{counts['regressed']} setup{'s' * (counts['regressed'] != 1)} regressed, "
                f"{counts['improved']} improved, {counts['unchanged']} unchanged on the "
                f"resolved rate ({len(self.pairs)} matched, {paired} paired questions, R = "
                f"{self.repeats}; paired tests, each figure Holm-adjusted across the "
                f"matched setups, at {ALPHA})")

    def regressions(self, margin: float, metric: str = "resolved_rate",
                    alpha: float = ALPHA) -> list[str]:
        """One line per matched setup whose ``metric`` got worse by more than ``margin``
        with Holm p below ``alpha`` (the gate of ``grade-kit diff --fail-on-regression``).

        Raises:
            ValueError: when ``metric`` has no paired test or no better side
                (:data:`GATED_METRICS`), or ``margin`` is negative or not finite.
        """
        if metric not in GATED_METRICS:
            raise ValueError(f"--metric {metric}: one of {', '.join(GATED_METRICS)}")
        if not math.isfinite(margin) or margin < 0:
            raise ValueError(f"margin {margin}: a finite number >= 0")
        sign = 1.0 if better_side(metric) == "higher" else -1.0
        out = []
        rows = self.summary_frame.filter((pl.col("metric") == metric) & pl.col("k").is_null()
                                         & pl.col("p_holm").is_not_null())
        for row in rows.iter_rows(named=True):
            worse = -sign * row["change"]
            if worse > margin and row["p_holm"] < alpha:
                out.append(f"regression: {row['setup']} -> {row['candidate_setup']}: "
                           f"{metric} {row['baseline']:.4f} -> {row['candidate']:.4f} "
                           f"({row['change']:+.4f}, margin {margin:g}) over "
                           f"{row['n_questions']} paired questions, Holm p "
                           f"{p_precise(row['p_holm'])} < {alpha:g}")
        return out

    def cost_increases(self, ratio: float) -> list[str]:
        """One line per matched setup whose dollars per run rose more than ``ratio`` times
        (candidate / baseline over the paired questions' per-question means) with the
        increase measured: its 95% bootstrap interval above 0 (the gate of ``grade-kit diff
        --fail-on-cost-increase``, docs/methodology.md §5 "Against an earlier evaluation").
        A setup without costs on both sides is never a line: the summary says so.

        Raises:
            ValueError: when ``ratio`` is below 1 or not finite.
        """
        if not math.isfinite(ratio) or ratio < 1:
            raise ValueError(f"ratio {ratio}: a finite number >= 1 (1.1: more than 10% dearer)")
        out = []
        rows = self.summary_frame.filter((pl.col("metric") == "cost_per_run")
                                         & (pl.col("label") == "measured"))
        for row in rows.iter_rows(named=True):
            before, after, low = row["baseline"], row["candidate"], row["ci_low"]
            if before is None or after is None or low is None or low <= 0:
                continue
            times = math.inf if before == 0 else after / before
            if times > ratio:
                out.append(f"cost increase: {row['setup']} -> {row['candidate_setup']}: "
                           f"${before:.6g} -> ${after:.6g} per run (x{times:.3g} > "
                           f"x{ratio:g}) over {row['n_questions']} paired questions, 95% "
                           f"interval of the change [{low:+.6g}, {row['ci_high']:+.6g}]")
        return out

    @cached_property
    def _flipped_runs(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The runs of the flips by id, each side's records read once as they are held (no
        model built for the others)."""
        out: tuple[dict[str, Any], dict[str, Any]] = ({}, {})
        for side, ev, column in ((0, self.baseline, "baseline_run_ids"),
                                 (1, self.candidate, "candidate_run_ids")):
            wanted = {rid for ids in self.flips_frame.get_column(column).to_list()
                      for rid in (ids or "").split(", ")}
            out[side].update((r.run_id, r) for r in raw_records(ev.inputs.runs)
                             if r.run_id in wanted)
        return out

    def answers(self, baseline_run_id: str, candidate_run_id: str) -> tuple[str, str]:
        """The two answers of a flip as a grader reads them ("" where none was
        delivered, or the run is not one of the flips')."""
        found = self._flipped_runs
        texts = [answer_text(run) if (run := runs.get(rid)) is not None else ""
                 for runs, rid in zip(found, (baseline_run_id, candidate_run_id), strict=True)]
        return texts[0], texts[1]

    def __repr__(self) -> str:
        return "\n".join([f"Diff({self.baseline_label} -> {self.candidate_label})",
                          f"  {self.headline}", *(f"  note: {n}" for n in self.notes)])

    def _repr_html_(self) -> str:
        """The headline, then what is said before any figure (every text escaped)."""
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
        return (f"<p>Baseline <b>{html.escape(self.baseline_label)}</b>, candidate "
                f"<b>{html.escape(self.candidate_label)}</b>.</p>"
                f"<p><b>{html.escape(self.headline)}</b></p>"
                + (f"<p>Before any figure:</p><ul>{notes}</ul>" if notes else ""))


def diff(baseline: Side, candidate: Side, *, match: Mapping[str, str] | None = None,
         cluster: Cluster = "question", frames: FrameKind | None = None,
         seed: int = DEFAULT_SEED) -> Diff:
    """Compare ``candidate`` with ``baseline`` question by question (docs/methodology.md §5
    "Against an earlier evaluation").

    Setups are matched by name, and ``match`` pairs differently named ones (one setup
    against another of the same evaluation too). Questions are matched by id; a question
    whose text or gold changed (:func:`question_digest`) is listed apart and kept out of the
    tests, and questions and setups on one side only are listed, never dropped silently.
    Each matched pair is compared on the questions both ran, as two setups of one
    evaluation are (each grade rate and pass^k with its exact paired test, E2E, tool calls
    and the composite with their bootstrap intervals); each tested figure (and k) is one
    Holm family across the matched pairs, so the gate on one figure is never weakened by
    the page testing others.

    Args:
        baseline: The earlier evaluation (:data:`Side`).
        candidate: The later one.
        match: Baseline setup name -> candidate setup name, for pairs named differently;
            default None (setups of one name only).
        cluster: The unit the paired tests flip (docs/methodology.md §4 "Rates"):
            ``question`` (default), or ``track`` or ``pack`` (the baseline's tasks say which
            question is in which), as ``gk.evaluate(cluster=...)``.
        frames: The kind of frame handed out; default the baseline's.
        seed: The seed of the bootstrap intervals and of a Monte Carlo test.

    Raises:
        InputError: when a scored folder fails its integrity check (naming the file), the
            two sides have no matched setup or no paired question, their R differ, or
            ``match`` names a setup its side lacks.
    """
    a, a_label = _side(baseline, frames)
    b, b_label = _side(candidate, frames or a.kind)
    if a_label == b_label and isinstance(baseline, str | Path) and isinstance(
            candidate, str | Path):  # two of one name (a log and its rerun): with their folders
        a_label, b_label = (f"{Path(s).resolve().parent.name}/{Path(s).name}"
                            for s in (baseline, candidate))
    kind = frames or a.kind
    r_a, r_b = a.results.plan.repeats, b.results.plan.repeats
    if r_a != r_b:
        raise InputError(f"the baseline plans R = {r_a} repeats per question and the "
                         f"candidate R = {r_b}: per-question shares would not pair; score "
                         "both with the same --repeats")
    pairs, only_a, only_b = _pairs(a, b, match)
    digests_a = {t.task_id: question_digest(t) for t in a.inputs.tasks}
    digests_b = {t.task_id: question_digest(t) for t in b.inputs.tasks}
    status = {**{q: "baseline only" for q in digests_a if q not in digests_b},
              **{q: "candidate only" for q in digests_b if q not in digests_a},
              **{q: "paired" if digests_a[q] == digests_b[q] else "changed"
                 for q in digests_a if q in digests_b}}
    paired = sorted(q for q, s in status.items() if s == "paired")
    if not pairs or not paired:
        raise InputError(
            "the two evaluations have no "
            + ("setup" if not pairs else "unchanged question") + " in common (baseline "
            f"setups: {', '.join(list(a.results.setups)[:10])}; candidate setups: "
            f"{', '.join(list(b.results.setups)[:10])}; {len(digests_a)} and "
            f"{len(digests_b)} questions, {len(paired)} the same); pair setups with match=")
    notes = _side_notes(status, [n for n in only_a if n not in b.results.setups],
                        [n for n in only_b if n not in a.results.setups],
                        [n for n in only_a if n in b.results.setups]
                        + [n for n in only_b if n in a.results.setups and n not in only_a])
    unranked_a, unranked_b = a.results.plan.unranked, b.results.plan.unranked
    compared: list[tuple[str, str]] = []
    setup_rows: list[dict[str, Any]] = []
    for x, y in pairs:
        cov_a = a.results.setups[x].grades.run_coverage
        cov_b = b.results.setups[y].grades.run_coverage
        row = {"setup": x, "candidate_setup": y, "status": "matched",
               "baseline_coverage": cov_a, "candidate_coverage": cov_b}
        if x in unranked_a or y in unranked_b:
            row["status"] = "not compared"
            notes.append(f"{x} -> {y}: not compared, its run coverage is below the ranking "
                         f"threshold (baseline {_share(cov_a)}, candidate {_share(cov_b)})")
        else:
            compared.append((x, y))
            if cov_a is not None and cov_b is not None and cov_b < cov_a:
                notes.append(f"{x} -> {y}: the candidate ran fewer of its planned slots "
                             f"({_share(cov_b)} against {_share(cov_a)} in the baseline); the "
                             "figures pair only the questions both ran")
        setup_rows.append(row)
    setup_rows += [{"setup": n, "candidate_setup": None,
                    "status": "not matched" if n in b.results.setups else "baseline only"}
                   for n in only_a]
    setup_rows += [{"setup": None, "candidate_setup": n,
                    "status": "not matched" if n in a.results.setups else "candidate only"}
                   for n in only_b]
    clusters = (None if cluster == "question" else cluster_of_tasks(a.data.tasks, cluster)
                .filter(pl.col("task_id").is_in(pl.Series(paired, dtype=pl.String).implode())))
    comparisons, inversions = [], []
    for x, y in compared:
        per_question = pl.concat([
            a.standard.per_question.filter(pl.col("setup") == x).with_columns(
                setup=pl.lit("baseline")),
            b.standard.per_question.filter(pl.col("setup") == y).with_columns(
                setup=pl.lit("candidate"))], how="diagonal_relaxed")
        comparison, found = compare_pair(per_question, "baseline", "candidate", paired,
                                         len(paired), "all", seed=seed, repeats=r_a,
                                         clusters=clusters)
        comparison.baseline, comparison.compared = x, y
        comparisons.append(comparison)
        inversions.append(found)
    adjust_by_holm(comparisons)
    for comparison, found in zip(comparisons, inversions, strict=True):
        verdict_intervals(comparison, found)
    summary = _summary(comparisons)
    verdicts = {(r["setup"], r["candidate_setup"]): r["verdict"] for r in summary.filter(
        (pl.col("metric") == "resolved_rate") & pl.col("k").is_null()).iter_rows(named=True)}
    for row in setup_rows:
        row["verdict"] = verdicts.get((row["setup"], row["candidate_setup"]))
    return Diff(
        baseline=a, candidate=b, baseline_label=a_label, candidate_label=b_label,
        pairs=pairs, repeats=r_a, comparisons=comparisons, notes=notes,
        summary_frame=summary, flips_frame=_flips(a, b, compared, paired, r_a),
        questions_frame=pl.DataFrame(
            {"task_id": sorted(status), "status": [status[q] for q in sorted(status)]},
            schema={"task_id": pl.String, "status": pl.String}),
        setups_frame=pl.DataFrame(setup_rows, schema={
            "setup": pl.String, "candidate_setup": pl.String, "status": pl.String,
            "baseline_coverage": pl.Float64, "candidate_coverage": pl.Float64,
            "verdict": pl.String}),
        kind=kind)


def _share(value: float | None) -> str:
    return "no planned slot" if value is None else f"{value:.1%}"


def _side_notes(status: Mapping[str, str], only_a: Sequence[str], only_b: Sequence[str],
                unmatched: Sequence[str]) -> list[str]:
    """What one side lacks, and the setups ``match`` left unpaired, said before any
    figure."""
    notes = []
    for what, names in (("setup(s) only in the baseline", only_a),
                        ("setup(s) only in the candidate", only_b),
                        ("setup(s) on both sides that match= pairs with another",
                         unmatched)):
        if names:
            notes.append(f"{len(names)} {what}, not compared: {', '.join(names[:10])}"
                         + (" ..." if len(names) > 10 else ""))
    for kind, what in (("changed", "question(s) whose text or gold changed, kept out of the "
                                   "tests"),
                       ("baseline only", "question(s) only in the baseline"),
                       ("candidate only", "question(s) only in the candidate")):
        ids = sorted(q for q, s in status.items() if s == kind)
        if ids:
            notes.append(f"{len(ids)} {what}: {', '.join(ids[:10])}"
                         + (" ..." if len(ids) > 10 else ""))
    return notes


def _summary(comparisons: Sequence[Comparison]) -> pl.DataFrame:
    rows = []
    for c in comparisons:
        for f in c.figures:
            rows.append({
                "setup": c.baseline, "candidate_setup": c.compared, "metric": f.metric,
                "k": f.k, "label": f.label, "n_questions": f.n_questions,
                "baseline": f.mean_a, "candidate": f.mean_b,
                "change": f.mean_diff_b_minus_a if f.label == "measured" else f.value,
                "ci_low": None if f.ci95 is None else f.ci95.low,
                "ci_high": None if f.ci95 is None else f.ci95.high,
                "ci_level": f.ci_level, "p_value": f.p_value, "p_holm": f.p_holm,
                "test": f.test,
                "verdict": _verdict(f.metric, f.label, f.p_holm, f.direction,
                                    f.mean_diff_b_minus_a),
                "note": f.formula or f.statement})
    return pl.DataFrame(rows, schema=SUMMARY_COLUMNS)


def _flips(a: Evaluation, b: Evaluation, compared: Sequence[tuple[str, str]],
           paired: Sequence[str], repeats: int) -> pl.DataFrame:
    """Per matched pair, the paired questions whose resolved share changed."""
    wanted = pl.Series(list(paired), dtype=pl.String).implode()
    frames = []
    for x, y in compared:
        sides = []
        for ev, name, prefix in ((a, x, "baseline"), (b, y, "candidate")):
            shares = (ev.standard.per_question.filter((pl.col("setup") == name)
                                                      & pl.col("task_id").is_in(wanted))
                      .select("task_id", (pl.col("resolved_slots") / repeats)
                              .alias(f"{prefix}_resolved")))
            texts = _grades_text(ev.standard.slots.filter(pl.col("setup") == name)).select(
                "task_id", pl.col("grades").alias(f"{prefix}_grades"),
                pl.col("run_ids").alias(f"{prefix}_run_ids"))
            sides.append(shares.join(texts, on="task_id", how="left"))
        both = sides[0].join(sides[1], on="task_id", how="inner").filter(
            pl.col("candidate_resolved") != pl.col("baseline_resolved"))
        frames.append(both.with_columns(
            setup=pl.lit(x), candidate_setup=pl.lit(y),
            change=pl.when(pl.col("candidate_resolved") < pl.col("baseline_resolved"))
            .then(pl.lit("regressed")).otherwise(pl.lit("improved"))))
    out = pl.concat([f.select(list(FLIP_COLUMNS)) for f in frames]) if frames else None
    if out is None:
        return pl.DataFrame(schema=FLIP_COLUMNS)
    return out.sort("setup", "change", "task_id", descending=[False, True, False])
