"""Simulated setups that answer the fixture tasks by querying the pack's data.

A *solver* per task topic computes the correct answer from the pack's CSVs
(:class:`~grade_kit.demo.query.PackData`). A *setup* then answers like a system of a given
quality, with seeded failure modes (the seed is setup, task and repeat, so a run is
reproducible):

- ``misread``: a rate read from the wrong row (x 0.8); hurts grounding accuracy.
- ``wrong_units``: a fraction reported as a percent number (18.4 for 0.184) and the "%"
  dropped in the text; hurts grounding accuracy and structure & usability.
- ``no_citations``: no "Sources:" line naming files and columns; hurts evidence linkage.
- ``no_entity_ids``: entity ids (T-07, G-11, ...) left out; hurts evidence linkage (zero on
  strict tasks).
- ``no_limitations``: limitations omitted; hurts calibration_limitation_handling.
- ``forbidden``: an unsupported claim added; hurts calibration_limitation_handling.
- ``unstable``: findings reordered, reworded or dropped across repeats; hurts consistency and
  insight quality.
- ``empty``: a delivered answer with nothing in it; hurts every per-run dimension.
- ``merged``: limitations and recommendations folded into the findings; hurts structure &
  usability (and calibration, since limitations are looked for in their own field).

Track 1 questions are single lookups that the demo setups get right in substance
(``lookups_right``): on them the *content* modes (:data:`CONTENT_MODES`: misread,
wrong_units, no_entity_ids, forbidden, unstable, empty) never fire; presentation slips,
timeouts and failures still do. So the demo has questions every setup resolves in every
repeat (a non-empty common subset), as a real evaluation with easy lookups does.

Setups (intended order on the composite: careful > hasty > erratic):

- ``careful``: correct, cited and caveated; now and then omits a limitation or misreads a rate,
  so it is good but not perfect;
- ``hasty``: fast and stable, but often in the wrong units, uncited, without ids, without
  caveats, with merged structure and sometimes an unsupported claim;
- ``erratic``: answers change from repeat to repeat, rates are misread, some answers are empty,
  some time out or fail.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import polars as pl

from grade_kit.demo.query import SUPPRESSION_N, PackData
from grade_kit.schema import Task

FAILURE_MODES = ("misread", "wrong_units", "no_citations", "no_entity_ids", "no_limitations",
                 "forbidden", "unstable", "empty", "merged")
CONTENT_MODES = ("misread", "wrong_units", "no_entity_ids", "forbidden", "unstable", "empty")
"""Failure modes that change what an answer says; they never fire on a track 1 lookup."""


@dataclass
class Answer:
    """A correct answer to one task, with what a setup needs to get it wrong."""

    findings: list[str]
    limitations: list[str]
    metrics: dict[str, Any]
    sources: list[str]
    recommendations: list[str] = field(default_factory=list)
    rewordings: list[str] = field(default_factory=list)
    forbidden: str = ""
    rate_keys: list[str] = field(default_factory=list)
    entity_ids: list[str] = field(default_factory=list)


def pct(x: float) -> str:
    """A fraction as a percentage with one decimal ("18.1%")."""
    return f"{x * 100:.1f}%"


MONTHS = {"2026-09": "September", "2026-10": "October", "2026-11": "November"}


def _month_rows(pack: PackData) -> dict[str, dict[str, Any]]:
    return {r["month"]: r for r in pack.status_rates("month").to_dicts()}


def _oct_cancellations(pack: PackData) -> Answer:
    m = _month_rows(pack)
    sep, oct_ = m["2026-09"]["cancel_rate"], m["2026-10"]["cancel_rate"]
    ratio = oct_ / sep
    spike = ratio >= 1.5
    first = (f"October cancellations spiked to {pct(oct_)} of scheduled sessions, "
             f"{ratio:.1f}x September's {pct(sep)}." if spike else
             f"October cancellations stayed close to September: {pct(oct_)} against "
             f"{pct(sep)} ({ratio:.1f}x).")
    return Answer(
        findings=[first, "Figures cover one quarter only (September to November 2026)."],
        rewordings=[f"Cancellations were {pct(oct_)} in October.",
                    "The autumn term saw changing cancellation levels."],
        limitations=["The data cover a single quarter, so no comparison with earlier periods "
                     "is possible."],
        metrics={"oct_cancel_rate": oct_, "sep_cancel_rate": sep, "oct_vs_sep_ratio": ratio},
        sources=["sessions.csv (status, date)"], rate_keys=["oct_cancel_rate",
                                                             "sep_cancel_rate"],
        forbidden="Cancellations are up year over year.")


def _weakest_tutor(pack: PackData) -> Answer:
    t = pack.status_rates("tutor_id").sort("completion_rate", "tutor_id").row(0, named=True)
    overall = pack.status_rates().row(0, named=True)
    tid = t["tutor_id"]
    return Answer(
        findings=[f"Tutor {tid} has the lowest completion rate: {pct(t['completion_rate'])} "
                  f"of {t['sessions']} scheduled sessions.",
                  f"Most of {tid}'s missed sessions are no-shows ({pct(t['no_show_rate'])}).",
                  f"Across all tutors {pct(overall['completion_rate'])} of sessions were "
                  "completed."],
        rewordings=[f"{tid} completed fewer sessions than other tutors.",
                    "Completion varies a lot between tutors."],
        limitations=["The data do not record the reason a session was missed."],
        recommendations=[f"Meet {tid} to review scheduling and set a completion target."],
        metrics={"weakest_tutor": tid, "weakest_tutor_completion_rate": t["completion_rate"],
                 "completion_rate": overall["completion_rate"]},
        sources=["sessions.csv (tutor_id, status)"],
        rate_keys=["weakest_tutor_completion_rate", "completion_rate"], entity_ids=[tid],
        forbidden=f"The programme should dismiss {tid}.")


def _weakest_group(pack: PackData) -> Answer:
    ranked = pack.attendance_by_group().sort("attendance_rate", "group_id")
    g, runner_up = ranked.row(0, named=True), ranked.row(1, named=True)
    gid = g["group_id"]
    return Answer(
        findings=[f"Group {gid} has the lowest attendance: students attended "
                  f"{pct(g['attendance_rate'])} of completed sessions.",
                  f"Every other group attended at least {pct(runner_up['attendance_rate'])} "
                  "of sessions."],
        rewordings=[f"{gid} students often missed sessions.",
                    "Attendance differs between groups."],
        limitations=["Attendance is recorded only for completed sessions."],
        recommendations=[f"Call the families of {gid} students who missed most sessions."],
        metrics={"lowest_attendance_group": gid,
                 "lowest_attendance_rate": g["attendance_rate"]},
        sources=["attendance.csv (present)", "sessions.csv (group_id)"],
        rate_keys=["lowest_attendance_rate"], entity_ids=[gid],
        forbidden=f"Students in {gid} are unmotivated.")


def _completion_overall(pack: PackData) -> Answer:
    o = pack.status_rates().row(0, named=True)
    return Answer(
        findings=[f"{o['sessions']} sessions were scheduled; most were completed "
                  f"({pct(o['completion_rate'])}).",
                  f"{pct(o['cancel_rate'])} were cancelled and {pct(o['no_show_rate'])} were "
                  "tutor no-shows."],
        rewordings=[f"About {pct(o['completion_rate'])} of sessions happened.",
                    "Some sessions did not take place."],
        limitations=["The data cover a single quarter."],
        metrics={"sessions_scheduled": o["sessions"], "completion_rate": o["completion_rate"],
                 "cancel_rate": o["cancel_rate"], "no_show_rate": o["no_show_rate"]},
        sources=["sessions.csv (status)"],
        rate_keys=["completion_rate", "cancel_rate", "no_show_rate"],
        forbidden="All sessions were completed as planned.")


def _cancel_trend(pack: PackData) -> Answer:
    m = _month_rows(pack)
    rates = {k: m[k]["cancel_rate"] for k in MONTHS}
    peak = max(rates, key=lambda k: rates[k])
    spike = rates["2026-10"] / rates["2026-09"] >= 1.5
    trend = (f"Cancellations peaked in October at {pct(rates['2026-10'])}, up from "
             f"{pct(rates['2026-09'])} in September, and fell back to "
             f"{pct(rates['2026-11'])} in November." if spike else
             f"Cancellations held steady: {pct(rates['2026-09'])}, {pct(rates['2026-10'])} "
             f"and {pct(rates['2026-11'])} from September to November.")
    return Answer(
        findings=[trend, "Three months are too few to call a trend."],
        rewordings=[f"The highest month was {MONTHS[peak]}.", "Cancellations moved around."],
        limitations=["The data cover a single quarter."],
        metrics={"sep_cancel_rate": rates["2026-09"], "oct_cancel_rate": rates["2026-10"],
                 "nov_cancel_rate": rates["2026-11"]},
        sources=["sessions.csv (status, date)"],
        rate_keys=["sep_cancel_rate", "oct_cancel_rate", "nov_cancel_rate"],
        forbidden="This is the same seasonal pattern we see every year.")


def _noshow_trend(pack: PackData) -> Answer:
    m = _month_rows(pack)
    t = pack.status_rates("tutor_id").sort("completion_rate", "tutor_id").row(0, named=True)
    tid = t["tutor_id"]
    return Answer(
        findings=[f"No-shows ran at {pct(m['2026-09']['no_show_rate'])}, "
                  f"{pct(m['2026-10']['no_show_rate'])} and {pct(m['2026-11']['no_show_rate'])} "
                  "from September to November.",
                  f"No-shows concentrate on tutor {tid} ({pct(t['no_show_rate'])} of their "
                  "sessions)."],
        rewordings=[f"{tid} missed many sessions.", "No-shows were a problem."],
        limitations=["The data cover a single quarter."],
        metrics={"sep_no_show_rate": m["2026-09"]["no_show_rate"],
                 "oct_no_show_rate": m["2026-10"]["no_show_rate"],
                 "nov_no_show_rate": m["2026-11"]["no_show_rate"], "weakest_tutor": tid},
        sources=["sessions.csv (status, date, tutor_id)"],
        rate_keys=["sep_no_show_rate", "oct_no_show_rate", "nov_no_show_rate"],
        entity_ids=[tid], forbidden="No-shows will keep rising next quarter.")


def _minutes_trend(pack: PackData) -> Answer:
    m = _month_rows(pack)
    o = pack.status_rates().row(0, named=True)
    return Answer(
        findings=[f"Session length was steady: {m['2026-09']['mean_minutes']:.1f}, "
                  f"{m['2026-10']['mean_minutes']:.1f} and {m['2026-11']['mean_minutes']:.1f} "
                  "minutes from September to November.",
                  f"Completed sessions averaged {o['mean_minutes']:.1f} minutes."],
        rewordings=["Sessions lasted around 40 minutes.", "Session length did not change."],
        limitations=["The data cover a single quarter; planned session length is not "
                     "recorded."],
        metrics={"sep_mean_minutes": m["2026-09"]["mean_minutes"],
                 "oct_mean_minutes": m["2026-10"]["mean_minutes"],
                 "nov_mean_minutes": m["2026-11"]["mean_minutes"],
                 "mean_minutes": o["mean_minutes"]},
        sources=["sessions.csv (minutes, date)"],
        forbidden="Longer sessions caused more growth.")


def _sessions_delivered(pack: PackData) -> Answer:
    m = _month_rows(pack)
    return Answer(
        findings=[f"{m['2026-09']['sessions']} sessions were scheduled in September, "
                  f"{m['2026-10']['sessions']} in October and {m['2026-11']['sessions']} in "
                  "November.",
                  f"November had fewer scheduled sessions; {pct(m['2026-11']['completion_rate'])}"
                  " of them were completed."],
        rewordings=["Each month had a similar number of sessions.",
                    "Most sessions were completed every month."],
        limitations=["The data cover a single quarter."],
        metrics={"sep_sessions": m["2026-09"]["sessions"], "nov_sessions": m["2026-11"]["sessions"],
                 "nov_completion_rate": m["2026-11"]["completion_rate"]},
        sources=["sessions.csv (date, status)"], rate_keys=["nov_completion_rate"],
        forbidden="Sessions were up year over year.")


def _reduce_cancellations(pack: PackData) -> Answer:
    m = _month_rows(pack)
    peak = max(MONTHS, key=lambda k: m[k]["cancel_rate"])
    return Answer(
        findings=[f"{MONTHS[peak]} had the most cancellations: {pct(m[peak]['cancel_rate'])} "
                  "of scheduled sessions."],
        rewordings=[f"Cancellations were highest in {MONTHS[peak]}.",
                    "Cancellations vary by month."],
        limitations=["The data do not record why sessions were cancelled."],
        recommendations=["Confirm each session with schools 48 hours ahead during "
                         f"{MONTHS[peak]}.", "Record a cancellation reason for every session."],
        metrics={"peak_cancel_month": peak, "peak_cancel_rate": m[peak]["cancel_rate"]},
        sources=["sessions.csv (status, date)"], rate_keys=["peak_cancel_rate"],
        forbidden="Reminder calls will eliminate all cancellations.")


def _dosage(pack: PackData, plan: bool) -> Answer:
    g = pack.growth
    r = pack.dosage_growth_r()
    hours = float(g.get_column("hours").mean())  # type: ignore[arg-type]
    findings = [f"Students with more tutoring hours grew more (r = {r:.2f} between dosage "
                "and growth).",
                "The correlation does not establish causation: motivated students may both "
                "attend more and grow more."]
    return Answer(
        findings=findings if plan else [
            f"Dosage and growth are positively correlated (r = {r:.2f}).", findings[1]],
        rewordings=[f"Hours and growth move together (r = {r:.2f}).",
                    "Tutoring seems to help students."],
        limitations=["Correlation is not causation: there is no comparison group, and "
                     "motivated students self-select into more sessions."],
        recommendations=(["Test extra hours with a randomised pilot before scaling up."]
                         if plan else []),
        metrics=({"mean_dosage_hours": hours, "dosage_growth_r": r} if plan
                 else {"dosage_growth_r": r}),
        sources=["attendance.csv (present)", "assessments.csv (pre_score, post_score)"],
        forbidden="More tutoring causes more growth.")


def _subgroup(pack: PackData, flag: str) -> Answer:
    label = {"ell": "English language learners", "iep": "students with an IEP",
             "frl": "students eligible for free or reduced-price lunch"}[flag]
    short = flag.upper()
    sub = pack.subgroup(flag)
    everyone = float(pack.growth.get_column("growth").mean())  # type: ignore[arg-type]
    if sub["suppressed"]:
        return Answer(
            findings=[f"The {short} subgroup has {sub['n']} students, below the reporting "
                      f"threshold of {SUPPRESSION_N}: it is too small to report."],
            rewordings=[f"Only {sub['n']} students are {label}.",
                        f"{label} are a small group."],
            limitations=[f"Results for groups under {SUPPRESSION_N} students are suppressed."],
            metrics={f"{flag}_n": sub["n"]},
            sources=[f"students.csv ({flag})", "assessments.csv"],
            forbidden=f"{label} grew 12 points this quarter.")
    mean = sub["mean_growth"]
    if flag == "frl":
        relation = "about as much as" if abs(mean - everyone) < 1 else (
            "more than" if mean > everyone else "less than")
        first = (f"FRL students ({sub['n']}) grew {mean:.1f} points, {relation} all "
                 f"students ({everyone:.1f}).")
        limitations = ["Differences may reflect other factors; nothing is controlled for."]
        metrics = {"frl_n": sub["n"], "frl_mean_growth": mean, "all_mean_growth": everyone}
        forbidden = "FRL students grew less because they are poor."
        extra: list[str] = []
    else:
        first = f"{label} ({sub['n']}) grew {mean:.1f} points against {everyone:.1f} overall."
        limitations = ["Differences may reflect other factors; nothing is controlled for."]
        metrics = {f"{flag}_n": sub["n"], f"{flag}_mean_growth": mean}
        forbidden = f"{label} are less capable than their peers."
        extra = [f"With {sub['n']} students the estimate is uncertain: read it with caution, "
                 "since a small group gives wide intervals."]
    return Answer(findings=[first, *extra],
                  rewordings=[f"{label} made progress.", "Subgroups differ a little."],
                  limitations=limitations, metrics=metrics,
                  sources=[f"students.csv ({flag})", "assessments.csv"], forbidden=forbidden)


def _school_gaps(pack: PackData) -> Answer:
    per = (pack.growth.group_by("school_id").agg(g=pl.col("growth").mean())
           .sort("g", "school_id", descending=[True, False]))
    top, bottom = per.row(0, named=True), per.row(-1, named=True)
    return Answer(
        findings=[f"Students at {top['school_id']} grew most ({top['g']:.1f} points).",
                  f"The gap to {bottom['school_id']} ({bottom['g']:.1f}) is "
                  f"{top['g'] - bottom['g']:.1f} points."],
        rewordings=["Schools grew by different amounts.", "One school did best."],
        limitations=["Schools differ in their students, so the gaps are not school effects."],
        metrics={"top_school": top["school_id"], "top_school_mean_growth": top["g"]},
        sources=["students.csv (school_id)", "assessments.csv"],
        entity_ids=[top["school_id"], bottom["school_id"]],
        forbidden=f"{top['school_id']} has better teachers.")


def _studies(pack: PackData, topic: str) -> Answer:
    st = pack.studies
    mean = float(st.get_column("effect_size").mean())  # type: ignore[arg-type]
    close = st.filter(pl.col("study_id") == "ST-03").row(0, named=True)
    growth = float(pack.growth.get_column("growth").mean())  # type: ignore[arg-type]
    if topic == "expected_effect":
        return Answer(
            findings=[f"Published effect sizes average {mean:.2f} SD across five studies.",
                      f"ST-03 (grades 4-5, effect {close['effect_size']:.2f}) is the closest "
                      "study to this programme.",
                      "Effect sizes do not transfer directly to a different programme."],
            rewordings=[f"Studies report effects around {mean:.2f}.",
                        "Tutoring studies show positive effects."],
            limitations=["Study populations differ from the programme's grade 3-5 students."],
            metrics={"mean_study_effect_size": mean,
                     "closest_study_effect_size": close["effect_size"]},
            sources=["studies.csv (effect_size, population)"], entity_ids=["ST-03"],
            forbidden=f"The programme will achieve an effect of {close['effect_size']:.2f}.")
    if topic == "study_match":
        return Answer(
            findings=["ST-03 best matches the programme: small-group tutoring in grades 4-5.",
                      "ST-01 studied high school students (grades 9-10) and does not apply."],
            rewordings=["ST-03 is relevant.", "Some studies are less relevant."],
            limitations=["ST-01 studied high school students, and even ST-03 covers only part "
                         "of the programme's grades."],
            metrics={"closest_study": "ST-03"},
            sources=["studies.csv (grades, population)"], entity_ids=["ST-03", "ST-01"],
            forbidden="ST-01 applies to this programme.")
    return Answer(
        findings=[f"Students grew {growth:.1f} scale points this quarter; the studies report "
                  f"effects averaging {mean:.2f} standard deviations.",
                  "Scale points and standard deviations are not comparable without the test's "
                  "spread and a comparison group."],
        rewordings=[f"Growth was {growth:.1f} points.", "The programme did well."],
        limitations=["The programme has no comparison group."],
        metrics={"all_mean_growth": growth, "mean_study_effect_size": mean},
        sources=["assessments.csv", "studies.csv (effect_size)"],
        forbidden="The programme outperforms the published studies.")


SOLVERS: dict[str, Callable[[PackData], Answer]] = {
    "oct_cancellations": _oct_cancellations,
    "weakest_tutor": _weakest_tutor,
    "weakest_group": _weakest_group,
    "completion_overall": _completion_overall,
    "cancel_trend": _cancel_trend,
    "noshow_trend": _noshow_trend,
    "minutes_trend": _minutes_trend,
    "sessions_delivered": _sessions_delivered,
    "coach_tutor": _weakest_tutor,
    "group_followup": _weakest_group,
    "reduce_cancellations": _reduce_cancellations,
    "dosage_plan": lambda p: _dosage(p, plan=True),
    "dosage_causal": lambda p: _dosage(p, plan=False),
    "subgroup_ell": lambda p: _subgroup(p, "ell"),
    "subgroup_iep": lambda p: _subgroup(p, "iep"),
    "subgroup_frl": lambda p: _subgroup(p, "frl"),
    "school_gaps": _school_gaps,
    "expected_effect": lambda p: _studies(p, "expected_effect"),
    "study_match": lambda p: _studies(p, "study_match"),
    "programme_vs_studies": lambda p: _studies(p, "programme_vs_studies"),
}


def _generic(pack: PackData) -> Answer:
    """What any setup says to a task whose topic it does not know: an overview of the pack."""
    o = pack.status_rates().row(0, named=True)
    return Answer(findings=[f"{o['sessions']} sessions were scheduled and "
                            f"{pct(o['completion_rate'])} were completed."],
                  limitations=["The question was answered from a general overview."],
                  metrics={"completion_rate": o["completion_rate"]},
                  sources=["sessions.csv (status)"], rate_keys=["completion_rate"])


@lru_cache(maxsize=16)
def _pack(folder: Path) -> PackData:
    """One :class:`PackData` per pack folder, so each CSV is read once per process."""
    return PackData(folder)


def solve(task: Task, packs_dir: Path) -> Answer:
    """The correct answer to ``task`` computed from its pack's CSVs."""
    pack = _pack((packs_dir / str(task.pack)).resolve())
    solver = SOLVERS.get(str(task.metadata.get("topic", "")), _generic)
    return solver(pack)


@dataclass(frozen=True)
class SetupProfile:
    """Chances (per answer) of each failure mode, and the setup's timing."""

    name: str
    chances: dict[str, float]
    latency_s: float  # median end-to-end seconds
    spread: float  # lognormal sigma
    timeout_rate: float = 0.0
    failure_rate: float = 0.0
    tools: tuple[int, int] = (1, 3)
    description: str = ""
    lookups_right: bool = False
    """When true, the content modes never fire on a track 1 lookup (the demo setups)."""


SETUPS: dict[str, SetupProfile] = {
    "careful": SetupProfile(
        "careful", {"no_limitations": 0.12, "misread": 0.05}, latency_s=12.0, spread=0.25,
        failure_rate=0.005, tools=(2, 4), lookups_right=True,
        description="correct, cited and caveated; rarely omits a limitation or misreads"),
    "hasty": SetupProfile(
        "hasty", {"wrong_units": 0.6, "no_citations": 0.8, "no_entity_ids": 0.5,
                  "no_limitations": 0.7, "forbidden": 0.3, "merged": 0.6},
        latency_s=4.0, spread=0.3, failure_rate=0.01, tools=(0, 1), lookups_right=True,
        description="fast and stable; wrong units, uncited, no caveats, merged structure"),
    "erratic": SetupProfile(
        "erratic", {"misread": 0.4, "unstable": 1.0, "empty": 0.12, "forbidden": 0.2,
                    "no_limitations": 0.5, "no_citations": 0.4, "no_entity_ids": 0.3},
        latency_s=8.0, spread=0.7, timeout_rate=0.03, failure_rate=0.02, tools=(0, 5),
        lookups_right=True,
        description="changes its answer from repeat to repeat; misreads; some empty answers"),
}


def _seeded(setup: str, task_id: str, repeat: int) -> random.Random:
    return random.Random(f"grade_kit-demo:{setup}:{task_id}:{repeat}")


def _drop_units(text: str, value: float) -> str:
    return text.replace(pct(value), f"{value * 100:.1f}")


def answer_task(task: Task, packs_dir: Path, setup: str | SetupProfile,
                repeat: int) -> dict[str, Any]:
    """The response of ``setup`` to ``task`` on ``repeat`` (docs/methodology.md §2 response format).

    Args:
        task: The task.
        packs_dir: Folder of packs (the task's pack is read from it).
        setup: A name in :data:`SETUPS`, or a profile of one's own (e.g. one failure mode at
            chance 1, to see what it does).
        repeat: 1-based repeat; with the setup and task it seeds every choice.

    Returns:
        The response mapping, plus ``_modes``: the failure modes that fired (for tests and
        the recorded runs' metadata).
    """
    profile = SETUPS[setup] if isinstance(setup, str) else setup
    rng = _seeded(profile.name, task.task_id, repeat)
    answer = solve(task, packs_dir)
    lookup = profile.lookups_right and task.track == 1
    fired = [m for m in FAILURE_MODES if rng.random() < profile.chances.get(m, 0.0)
             and not (lookup and m in CONTENT_MODES)]  # one draw per mode either way
    findings = list(answer.findings)
    limitations = list(answer.limitations)
    recommendations = list(answer.recommendations)
    metrics = dict(answer.metrics)
    sources = list(answer.sources)
    if "empty" in fired:
        return {"key_findings": [], "limitations": [], "recommendations": [],
                "structured_metrics": {}, "text": "", "_modes": ["empty"]}
    if "misread" in fired:
        numeric = [k for k, v in metrics.items() if isinstance(v, float)]
        if numeric:
            key = rng.choice(numeric)
            wrong = metrics[key] * 0.8
            findings = [f.replace(pct(metrics[key]), pct(wrong)) for f in findings]
            metrics[key] = wrong
    if "wrong_units" in fired:
        for key in answer.rate_keys:
            if isinstance(metrics.get(key), float):
                findings = [_drop_units(f, metrics[key]) for f in findings]
                metrics[key] = round(metrics[key] * 100, 1)
    if "no_entity_ids" in fired:
        for entity in answer.entity_ids:
            findings = [f.replace(f"Tutor {entity}", "One tutor").replace(entity, "one of them")
                        for f in findings]
            recommendations = [r.replace(entity, "the tutor") for r in recommendations]
    if "unstable" in fired:
        pool = findings + answer.rewordings
        keep = rng.randint(1, max(1, len(pool) - 1))
        findings = rng.sample(pool, keep)
    if "no_limitations" in fired:
        limitations = []
    if "forbidden" in fired and answer.forbidden:
        findings.append(answer.forbidden)
    if "no_citations" in fired:
        sources = []
    if "merged" in fired:
        findings = findings + limitations + recommendations
        limitations, recommendations = [], []
    text_parts = [*findings, *limitations, *recommendations]
    if sources:
        text_parts.append("Sources: " + "; ".join(sources) + ".")
    return {"key_findings": findings, "limitations": limitations,
            "recommendations": recommendations, "structured_metrics": metrics,
            "text": " ".join(text_parts), "_modes": fired}
