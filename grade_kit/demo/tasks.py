"""The fixture task suite: four tasks per track per pack, written as YAML task files.

Gold facts point into the pack's ``ground_truth.json`` (``ground_truth: dotted.key``); insight
patterns that name an entity (the weakest tutor, the suppressed subgroup) read it from that file.
Rubric weights follow each track's emphasis (:data:`TRACK_WEIGHTS`). ``metadata.topic`` tells
the simulated setups which analysis a task asks for.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import yaml

TRACK_WEIGHTS: dict[int, dict[str, float]] = {
    1: {"grounding_accuracy": 0.42, "insight_quality": 0.15, "evidence_linkage": 0.15,
        "calibration_limitation_handling": 0.10, "consistency": 0.10, "structure_usability": 0.08},
    2: {"grounding_accuracy": 0.30, "insight_quality": 0.25, "evidence_linkage": 0.10,
        "calibration_limitation_handling": 0.15, "consistency": 0.10, "structure_usability": 0.10},
    3: {"grounding_accuracy": 0.25, "insight_quality": 0.20, "evidence_linkage": 0.25,
        "calibration_limitation_handling": 0.10, "consistency": 0.10, "structure_usability": 0.10},
    4: {"grounding_accuracy": 0.20, "insight_quality": 0.20, "evidence_linkage": 0.15,
        "calibration_limitation_handling": 0.25, "consistency": 0.10, "structure_usability": 0.10},
    5: {"grounding_accuracy": 0.20, "insight_quality": 0.25, "evidence_linkage": 0.15,
        "calibration_limitation_handling": 0.20, "consistency": 0.10, "structure_usability": 0.10},
}
"""Track 1 leans on grounding (0.42), track 3 on evidence (0.25), track 4 on calibration
(0.25), tracks 2 and 5 on insight (0.25)."""

FORMAT = ("Answer as JSON with key_findings (at most five short sentences), limitations, "
          "recommendations (track 3 only), structured_metrics (the keys named below, rates as "
          "fractions between 0 and 1) and text.")

SINGLE_QUARTER = {"id": "l-quarter", "text": "the data cover a single quarter",
                  "patterns": [["single|one|only", "quarter"]]}
NO_YOY = {"id": "x-yoy", "text": "year over year comparison",
          "patterns": [["year over year|yoy|last year|every year|each year"]]}
NOT_CAUSAL = {"id": "i-not-causal", "text": "the correlation does not show causation",
              "calibration": True,
              "patterns": [["not|no|cannot", "causation|causal|cause|prove"]]}
CAUSAL_CLAIM = {"id": "x-causal", "text": "more tutoring causes more growth",
                "patterns": [["causes|caused|drives|guarantees", "growth|gains|scores"]]}
FIRE = {"id": "x-fire", "text": "dismiss the tutor",
        "patterns": [["fire|dismiss|terminate|replace the tutor"]]}
BLAME = {"id": "x-blame", "text": "students do not care",
         "patterns": [["lazy|unmotivated|do not care|don't care"]]}


REASON_NOT_RECORDED = {"id": "l-reason", "text": "the data do not record why sessions were missed",
                       "patterns": [["not|no|without", "reason|reasons|why|cause"]]}
COMPLETED_ONLY = {"id": "l-completed", "text": "attendance is recorded for completed sessions only",
                  "patterns": [["only|just", "completed"]]}


def _weakest_tutor_facts() -> list[dict[str, Any]]:
    return [_fact("f-tutor", "weakest_tutor", "tutors.lowest_completion.tutor_id"),
            _fact("f-rate", "weakest_tutor_completion_rate",
                  "tutors.lowest_completion.completion_rate", abs_tol=0.01)]


def _weakest_group_facts() -> list[dict[str, Any]]:
    return [_fact("f-group", "lowest_attendance_group", "groups.lowest_attendance.group_id"),
            _fact("f-rate", "lowest_attendance_rate", "groups.lowest_attendance.attendance_rate",
                  abs_tol=0.01)]


def _lowest(claim_id: str, entity: str, what: str, words: str) -> dict[str, Any]:
    return {"id": claim_id, "text": f"{entity} has the lowest {what}",
            "patterns": [[_term(entity), words]]}


def _fact(fid: str, metric: str, key: str, **tol: float) -> dict[str, Any]:
    return {"id": fid, "metric": metric, "ground_truth": key, **tol}


def _task(pack: str, track: int, slug: str, topic: str, prompt: str, metrics: list[str],
          facts: list[dict[str, Any]], insights: list[dict[str, Any]],
          limitations: list[dict[str, Any]], forbidden: list[dict[str, Any]],
          evidence: dict[str, Any], guidance: str) -> dict[str, Any]:
    return {
        "task_id": f"{pack}-t{track}-{slug}",
        "track": track,
        "pack": pack,
        "prompt": (f"Data: the {pack} tutoring programme's pack of CSV files.\n{prompt}\n\n"
                   f"{FORMAT} structured_metrics keys: {', '.join(metrics)}."),
        "weights": TRACK_WEIGHTS[track],
        "gold_facts": facts,
        "gold_insights": insights,
        "required_limitations": limitations,
        "forbidden_claims": forbidden,
        "evidence": evidence,
        "judge_guidance": {"evidence_linkage": guidance,
                           "structure_usability": "Findings, limitations and "
                           "recommendations kept apart; rates as fractions or with %."},
        "metadata": {"topic": topic},
    }


def _term(entity_id: str) -> str:
    return entity_id  # normalised at match time: "T-07" matches the tokens "t 07"


def task_suite(pack: str, truth: dict[str, Any]) -> list[dict[str, Any]]:
    """The 20 tasks (4 per track) of one pack, as task-file mappings."""
    tutor = truth["tutors"]["lowest_completion"]["tutor_id"]
    group = truth["groups"]["lowest_attendance"]["group_id"]
    spike = truth["sessions"]["oct_vs_sep_cancel_ratio"] >= 1.5
    top_school = truth["growth_leader"]["school_id"]
    peak_month = truth["sessions"]["peak_cancel_month"]
    peak_name = date.fromisoformat(f"{peak_month}-01").strftime("%B")
    sess = {"sources": ["sessions.csv"], "columns": ["status", "date"], "rates": True}
    out: list[dict[str, Any]] = []

    # ---------------------------------------------------------------- track 1
    oct_insight = ({"id": "i-oct", "text": "October cancellations spiked",
                    "patterns": [["october|oct", "spike|spiked|jump|jumped|rose|higher"]]}
                   if spike else
                   {"id": "i-oct", "text": "October cancellations stayed close to September",
                    "patterns": [["cancel|cancellation|cancellations|cancelled",
                                  "flat|stable|steady|similar|close"]]})
    out.append(_task(
        pack, 1, "oct-cancellations", "oct_cancellations",
        "What share of scheduled tutoring sessions were cancelled in October 2026, and how "
        "does that compare with September?",
        ["oct_cancel_rate", "sep_cancel_rate", "oct_vs_sep_ratio"],
        [_fact("f-oct", "oct_cancel_rate", "sessions.by_month.2026-10.cancel_rate",
               abs_tol=0.005),
         _fact("f-sep", "sep_cancel_rate", "sessions.by_month.2026-09.cancel_rate",
               abs_tol=0.005),
         _fact("f-ratio", "oct_vs_sep_ratio", "sessions.oct_vs_sep_cancel_ratio", rel_tol=0.05)],
        [oct_insight, {"id": "i-scope", "text": "figures cover one quarter only",
                       "calibration": True, "patterns": [["single|one|only", "quarter"]]}],
        [SINGLE_QUARTER], [NO_YOY], sess, "Cite sessions.csv with its status and date columns."))
    out.append(_task(
        pack, 1, "weakest-tutor", "weakest_tutor",
        "Which tutor had the lowest session completion rate this quarter, and what was it?",
        ["weakest_tutor", "weakest_tutor_completion_rate"],
        _weakest_tutor_facts(),
        [_lowest("i-tutor", tutor, "completion", "lowest|weakest|worst|poorest")],
        [dict(REASON_NOT_RECORDED)],
        [FIRE], {**sess, "columns": ["tutor_id", "status"], "entity_ids": "T-"},
        "Name the tutor id and cite sessions.csv (tutor_id, status)."))
    out.append(_task(
        pack, 1, "attendance-group", "weakest_group",
        "Which tutoring group had the lowest student attendance, and what was its rate?",
        ["lowest_attendance_group", "lowest_attendance_rate"],
        _weakest_group_facts(),
        [_lowest("i-group", group, "attendance", "lowest|weakest|worst|poorest")],
        [dict(COMPLETED_ONLY)],
        [BLAME], {"sources": ["attendance.csv"], "columns": ["present"], "rates": True,
                  "entity_ids": "G-"}, "Name the group id and cite attendance.csv."))
    out.append(_task(
        pack, 1, "completion-overall", "completion_overall",
        "How many tutoring sessions were scheduled this quarter, and what share were completed, "
        "cancelled and missed (no-show)?",
        ["sessions_scheduled", "completion_rate", "cancel_rate", "no_show_rate"],
        [_fact("f-n", "sessions_scheduled", "counts.sessions"),
         _fact("f-done", "completion_rate", "sessions.completion_rate", abs_tol=0.005),
         _fact("f-cancel", "cancel_rate", "sessions.cancel_rate", abs_tol=0.005),
         _fact("f-noshow", "no_show_rate", "sessions.no_show_rate", abs_tol=0.005)],
        [{"id": "i-most", "text": "most scheduled sessions were completed",
          "patterns": [["most|majority|four in five", "completed|held|delivered"]]}],
        [SINGLE_QUARTER],
        [{"id": "x-all", "text": "every session was completed",
          "patterns": [["every session|all sessions", "completed|held"]]}],
        sess, "Cite sessions.csv (status)."))

    # ---------------------------------------------------------------- track 2
    trend_insight = ({"id": "i-peak", "text": "cancellations peaked in October",
                      "patterns": [["october|oct", "peak|peaked|spike|highest"]]}
                     if spike else
                     {"id": "i-peak", "text": "cancellations held steady across the months",
                      "patterns": [["steady|stable|flat|similar"]]})
    out.append(_task(
        pack, 2, "cancel-trend", "cancel_trend",
        "Describe the month-by-month cancellation rate from September to November 2026.",
        ["sep_cancel_rate", "oct_cancel_rate", "nov_cancel_rate"],
        [_fact(f"f-{m}", f"{m}_cancel_rate", f"sessions.by_month.2026-{n}.cancel_rate",
               abs_tol=0.005) for m, n in (("sep", "09"), ("oct", "10"), ("nov", "11"))],
        [trend_insight, {"id": "i-three", "text": "three months are too few to call a trend",
                         "calibration": True,
                         "patterns": [["three|3", "months", "too few|not enough|short"]]}],
        [SINGLE_QUARTER], [NO_YOY], sess, "Cite sessions.csv (status, date)."))
    out.append(_task(
        pack, 2, "noshow-trend", "noshow_trend",
        "How did tutor no-shows develop over the quarter, and where were they concentrated?",
        ["sep_no_show_rate", "oct_no_show_rate", "nov_no_show_rate", "weakest_tutor"],
        [_fact(f"f-{m}", f"{m}_no_show_rate", f"sessions.by_month.2026-{n}.no_show_rate",
               abs_tol=0.005) for m, n in (("sep", "09"), ("oct", "10"), ("nov", "11"))]
        + [_fact("f-tutor", "weakest_tutor", "tutors.lowest_completion.tutor_id")],
        [{"id": "i-concentrated", "text": f"no-shows concentrate on {tutor}",
          "patterns": [[_term(tutor), "no show|no shows|absent|absences|missed"]]}],
        [SINGLE_QUARTER],
        [{"id": "x-forecast", "text": "no-shows will keep rising",
          "patterns": [["will keep|will continue|will rise"]]}],
        {**sess, "entity_ids": "T-"}, "Cite sessions.csv (status, date, tutor_id)."))
    out.append(_task(
        pack, 2, "minutes-trend", "minutes_trend",
        "How long were completed sessions, month by month?",
        ["sep_mean_minutes", "oct_mean_minutes", "nov_mean_minutes", "mean_minutes"],
        [_fact(f"f-{m}", f"{m}_mean_minutes", f"sessions.by_month.2026-{n}.mean_minutes",
               abs_tol=0.5) for m, n in (("sep", "09"), ("oct", "10"), ("nov", "11"))]
        + [_fact("f-all", "mean_minutes", "sessions.mean_minutes", abs_tol=0.5)],
        [{"id": "i-steady", "text": "session length was steady",
          "patterns": [["length|minutes|duration|long", "steady|stable|similar|consistent"]]}],
        [SINGLE_QUARTER],
        [{"id": "x-cause", "text": "longer sessions caused more growth",
          "patterns": [["longer", "caused|causes|drive"]]}],
        {"sources": ["sessions.csv"], "columns": ["minutes", "date"], "rates": False},
        "Cite sessions.csv (minutes, date)."))
    out.append(_task(
        pack, 2, "sessions-delivered", "sessions_delivered",
        "How many sessions were scheduled each month, and what share were completed?",
        ["sep_sessions", "nov_sessions", "nov_completion_rate"],
        [_fact("f-sep", "sep_sessions", "sessions.by_month.2026-09.sessions"),
         _fact("f-nov", "nov_sessions", "sessions.by_month.2026-11.sessions"),
         _fact("f-nov-done", "nov_completion_rate", "sessions.by_month.2026-11.completion_rate",
               abs_tol=0.005)],
        [{"id": "i-nov", "text": "November had fewer scheduled sessions",
          "patterns": [["november|nov", "fewer|less|lower"]]}],
        [SINGLE_QUARTER], [NO_YOY], sess, "Cite sessions.csv (date, status)."))

    # ---------------------------------------------------------------- track 3
    strict = {"strict": True, "rates": True}
    out.append(_task(
        pack, 3, "coach-tutor", "coach_tutor",
        "Which tutor most needs coaching support on session completion, and what should the "
        "programme coordinator do?",
        ["weakest_tutor", "weakest_tutor_completion_rate", "completion_rate"],
        [*_weakest_tutor_facts(),
         _fact("f-all", "completion_rate", "sessions.completion_rate", abs_tol=0.005)],
        [_lowest("i-tutor", tutor, "completion", "lowest|weakest|worst|below")],
        [dict(REASON_NOT_RECORDED)],
        [FIRE], {**strict, "sources": ["sessions.csv"], "columns": ["tutor_id", "status"],
                 "entity_ids": "T-"},
        "Strict: name the tutor id and the completion rate; cite sessions.csv."))
    out.append(_task(
        pack, 3, "group-followup", "group_followup",
        "Which tutoring group should the coordinator follow up on for attendance, and how?",
        ["lowest_attendance_group", "lowest_attendance_rate"],
        _weakest_group_facts(),
        [_lowest("i-group", group, "attendance", "lowest|weakest|worst|below")],
        [dict(COMPLETED_ONLY)],
        [BLAME], {**strict, "sources": ["attendance.csv"], "columns": ["present"],
                  "entity_ids": "G-"},
        "Strict: name the group id and its attendance rate; cite attendance.csv."))
    out.append(_task(
        pack, 3, "reduce-cancellations", "reduce_cancellations",
        "In which month were cancellations highest, and what should the programme do to reduce "
        "them next quarter?",
        ["peak_cancel_month", "peak_cancel_rate"],
        [_fact("f-month", "peak_cancel_month", "sessions.peak_cancel_month"),
         _fact("f-rate", "peak_cancel_rate", "sessions.peak_cancel_rate", abs_tol=0.005)],
        [{"id": "i-month", "text": f"{peak_name} had the most cancellations",
          "patterns": [[f"{peak_name.lower()}|{peak_name[:3].lower()}|{peak_month}",
                        "highest|most|peak|peaked"]]}],
        [{"id": "l-reason", "text": "cancellation reasons are not recorded",
          "patterns": [["not|no|without", "reason|reasons|why"]]}],
        [{"id": "x-guarantee", "text": "this will eliminate cancellations",
          "patterns": [["guarantee|guarantees|will eliminate|eliminate all"]]}],
        {**strict, "sources": ["sessions.csv"], "columns": ["status", "date"]},
        "Strict: name the month and its cancellation rate; cite sessions.csv."))
    out.append(_task(
        pack, 3, "dosage-plan", "dosage_plan",
        "Should the programme give students more tutoring hours? Base the recommendation on the "
        "dosage and growth data.",
        ["mean_dosage_hours", "dosage_growth_r"],
        [_fact("f-hours", "mean_dosage_hours", "dosage.mean_hours", abs_tol=0.1),
         _fact("f-r", "dosage_growth_r", "dosage.growth_r", abs_tol=0.01)],
        [{"id": "i-more", "text": "students with more hours grew more",
          "patterns": [["more", "hours|dosage|sessions", "grew|growth|gains"]]}, NOT_CAUSAL],
        [{"id": "l-corr", "text": "correlation is not causation",
          "patterns": [["correlation|association", "not|no", "causation|cause|causal"]]}],
        [CAUSAL_CLAIM], {**strict, "sources": ["attendance.csv", "assessments.csv"],
                         "columns": ["present", "pre_score", "post_score"]},
        "Strict: cite attendance and assessments with the correlation."))

    # ---------------------------------------------------------------- track 4
    for slug, flag, label, syn in (("ell", "ell", "English language learners",
                                    "ell|english language learners|english learners"),
                                   ("iep", "iep", "students with an IEP",
                                    "iep|ieps|students with an iep")):
        sub = truth["subgroups"][flag]
        suppressed = sub["suppressed"]
        facts = [_fact("f-n", f"{flag}_n", f"subgroups.{flag}.n")]
        if not suppressed:
            facts.append(_fact("f-growth", f"{flag}_mean_growth",
                               f"subgroups.{flag}.mean_growth", abs_tol=0.1))
        insights: list[dict[str, Any]]
        limitations: list[dict[str, Any]]
        forbidden: list[dict[str, Any]]
        insights = ([{"id": "i-small", "text": "the subgroup is too small to report",
                      "calibration": True,
                      "patterns": [["too small|suppressed|below the reporting threshold|"
                                    "fewer than 10|under 10"]]}]
                    if suppressed else
                    [{"id": "i-growth", "text": f"{label} grew this quarter",
                      "patterns": [[syn, "grew|growth|gain|gained"]]},
                     {"id": "i-uncertain", "text": "a small subgroup gives wide uncertainty",
                      "calibration": True, "patterns": [["small", "uncertain|uncertainty|"
                                                         "caution|wide"]]}])
        limitations = ([{"id": "l-suppress", "text": "groups under 10 students are suppressed",
                         "patterns": [["suppress|suppressed|not reported|withheld"]]}]
                       if suppressed else
                       [{"id": "l-other", "text": "differences may reflect other factors",
                         "patterns": [["other factors|confound|confounding|not controlled"]]}])
        forbidden = ([{"id": "x-rate", "text": f"a growth figure for {label}",
                       "patterns": [[syn, "grew|improved by|gained|gain of"]]}]
                     if suppressed else
                     [{"id": "x-capable", "text": f"{label} are less capable",
                       "patterns": [["less capable|less able|cannot learn"]]}])
        out.append(_task(
            pack, 4, f"{slug}-growth", f"subgroup_{flag}",
            f"How did {label} grow this quarter compared with all students? Respect the "
            "programme's n < 10 reporting rule.",
            [m["metric"] for m in facts],
            facts, insights, limitations, forbidden,
            {"sources": ["students.csv", "assessments.csv"], "columns": [flag],
             "rates": not suppressed},
            f"Cite students.csv ({flag}) and assessments.csv."))
    out.append(_task(
        pack, 4, "frl-growth", "subgroup_frl",
        "How did students eligible for free or reduced-price lunch grow compared with all "
        "students?",
        ["frl_n", "frl_mean_growth", "all_mean_growth"],
        [_fact("f-n", "frl_n", "subgroups.frl.n"),
         _fact("f-growth", "frl_mean_growth", "subgroups.frl.mean_growth", abs_tol=0.1),
         _fact("f-all", "all_mean_growth", "subgroups.all.mean_growth", abs_tol=0.1)],
        [{"id": "i-compare", "text": "FRL students grew about as much as all students",
          "patterns": [["frl|free or reduced", "similar|about as much|comparable|close|"
                        "more than|less than"]]}],
        [{"id": "l-other", "text": "differences may reflect other factors",
          "patterns": [["other factors|confound|confounding|not controlled"]]}],
        [{"id": "x-poverty", "text": "because they are poor",
          "patterns": [["because they are poor|due to poverty"]]}],
        {"sources": ["students.csv", "assessments.csv"], "columns": ["frl"], "rates": True},
        "Cite students.csv (frl) and assessments.csv."))
    out.append(_task(
        pack, 4, "school-gaps", "school_gaps",
        "Which school's students grew most this quarter, and how large are the gaps between "
        "schools?",
        ["top_school", "top_school_mean_growth"],
        [_fact("f-school", "top_school", "growth_leader.school_id"),
         _fact("f-growth", "top_school_mean_growth", "growth_leader.mean_growth",
               abs_tol=0.1)],
        [{"id": "i-top", "text": f"{top_school} grew most",
          "patterns": [[_term(top_school), "most|highest|largest|top"]]}],
        [{"id": "l-intake", "text": "schools differ in their students",
          "patterns": [["differ|different", "students|intake|population|populations"]]}],
        [{"id": "x-better", "text": "the school has better teachers",
          "patterns": [["better teachers|better school|best school"]]}],
        {"sources": ["students.csv", "assessments.csv"], "columns": ["school_id"],
         "entity_ids": "S-", "rates": True}, "Name the school ids."))

    # ---------------------------------------------------------------- track 5
    out.append(_task(
        pack, 5, "dosage-causal", "dosage_causal",
        "Does more tutoring cause more growth in this programme?",
        ["dosage_growth_r"],
        [_fact("f-r", "dosage_growth_r", "dosage.growth_r", abs_tol=0.01)],
        [{"id": "i-corr", "text": "dosage and growth are positively correlated",
          "patterns": [["correlated|correlation|associated|association",
                        "positive|positively|moderate|weak"]]}, NOT_CAUSAL],
        [{"id": "l-selection", "text": "motivated students may attend more",
          "patterns": [["motivated|motivation|self selection|selection"]]}],
        [CAUSAL_CLAIM], {"sources": ["attendance.csv", "assessments.csv"], "rates": True},
        "Cite attendance.csv and assessments.csv."))
    out.append(_task(
        pack, 5, "expected-effect", "expected_effect",
        "Based on the published studies, what effect size could this programme expect?",
        ["mean_study_effect_size", "closest_study_effect_size"],
        [_fact("f-mean", "mean_study_effect_size", "studies.mean_effect_size", abs_tol=0.01),
         _fact("f-close", "closest_study_effect_size", "studies.closest_effect_size",
               abs_tol=0.01)],
        [{"id": "i-closest", "text": "ST-03 is the closest study",
          "patterns": [["st 03", "closest|best|most similar|matches"]]},
         {"id": "i-transfer", "text": "effect sizes do not transfer directly",
          "calibration": True,
          "patterns": [["not|cannot|do not", "transfer|apply|generalise|generalize"]]}],
        [{"id": "l-populations", "text": "study populations differ from the programme",
          "patterns": [["population|populations|grades", "differ|different|differs"]]}],
        [{"id": "x-promise", "text": "the programme will achieve the study's effect",
          "patterns": [["will achieve|will raise scores|guaranteed"]]}],
        {"sources": ["studies.csv"], "columns": ["effect_size", "population"],
         "entity_ids": "ST-", "rates": False}, "Name study ids; cite studies.csv."))
    out.append(_task(
        pack, 5, "study-match", "study_match",
        "Which published study best matches this programme's students (grades 3-5), and which "
        "does not apply?",
        ["closest_study"],
        [_fact("f-study", "closest_study", "studies.closest_population")],
        [{"id": "i-match", "text": "ST-03 best matches the programme",
          "patterns": [["st 03", "closest|best|most similar|matches"]]}],
        [{"id": "l-st01", "text": "ST-01 studied high school students",
          "patterns": [["st 01", "high school|grades 9"]]}],
        [{"id": "x-st01", "text": "ST-01 applies to this programme",
          "patterns": [["st 01", "applies|matches best|best match"]]}],
        {"sources": ["studies.csv"], "columns": ["grades", "population"], "entity_ids": "ST-",
         "rates": False}, "Name study ids; cite studies.csv (grades, population)."))
    out.append(_task(
        pack, 5, "programme-vs-studies", "programme_vs_studies",
        "How does this programme's growth compare with the effects in the published studies?",
        ["all_mean_growth", "mean_study_effect_size"],
        [_fact("f-growth", "all_mean_growth", "subgroups.all.mean_growth", abs_tol=0.1),
         _fact("f-mean", "mean_study_effect_size", "studies.mean_effect_size", abs_tol=0.01)],
        [{"id": "i-units", "text": "scale points and standard deviations are not comparable",
          "calibration": True,
          "patterns": [["scale points|points", "standard deviation|standard deviations|sd"]]}],
        [{"id": "l-control", "text": "the programme has no comparison group",
          "patterns": [["no|without", "control|comparison"]]}],
        [{"id": "x-outperform", "text": "the programme outperforms the studies",
          "patterns": [["outperforms|outperformed|better than", "studies|study"]]}],
        {"sources": ["assessments.csv", "studies.csv"], "rates": False},
        "Cite assessments.csv and studies.csv."))
    return out


def write_task_suite(packs_dir: Path, out_dir: Path) -> list[Path]:
    """Write every pack's tasks as ``out_dir/<pack>/<task_id>.yaml``."""
    written = []
    for folder in sorted(p for p in packs_dir.iterdir() if p.is_dir()):
        truth = json.loads((folder / "ground_truth.json").read_text(encoding="utf-8"))
        target = out_dir / folder.name
        target.mkdir(parents=True, exist_ok=True)
        for task in task_suite(folder.name, truth):
            path = target / f"{task['task_id']}.yaml"
            path.write_text(yaml.safe_dump(task, sort_keys=False, allow_unicode=True,
                                           width=100), encoding="utf-8")
            written.append(path)
    return written
