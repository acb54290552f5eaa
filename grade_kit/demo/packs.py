"""Tutoring-programme fixture packs, generated from seed 42 (``grade-kit demo fixtures``).

Each pack is a folder of CSV files (schools, tutors, groups, students, sessions, attendance,
assessments, studies) with a data dictionary, and a ``ground_truth.json`` computed afterwards
*from the CSVs* by :mod:`grade_kit.demo.truth`. Signals built in for tasks to find:

- an October cancellation spike in ``northside`` (about 2.6x September); none in ``riverbend``;
- one tutor with weak completion and one group with weak attendance per pack;
- subgroups both above and below the n < 10 reporting threshold (ELL 7 and IEP 24 students in
  northside; ELL 15 and IEP 6 in riverbend);
- a dosage-growth correlation (about r = 0.4) driven partly by a hidden motivation factor, so it
  does not establish causation;
- published studies whose populations differ from the programme's (grades 3-5).

Regenerating gives byte-identical files: a seeded ``random.Random``, fixed float formatting,
sorted JSON keys and ``\\n`` line endings.
"""

from __future__ import annotations

import csv
import io
import random
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

SEED = 42
QUARTER_START = date(2026, 9, 1)
QUARTER_END = date(2026, 11, 30)


@dataclass(frozen=True)
class PackSpec:
    """What one pack holds and which signals it carries."""

    name: str
    schools: int
    tutors: int
    groups_per_tutor: int
    students_per_group: int
    cancel_rate: dict[int, float]  # month -> share of sessions cancelled
    no_show_rate: float
    weak_tutor: int  # 1-based tutor number with weak completion
    weak_tutor_extra: float  # extra no-show share for the weak tutor
    weak_group: int  # 1-based group number with weak attendance
    ell_n: int
    iep_n: int
    frl_share: float


PACKS: dict[str, PackSpec] = {
    "northside": PackSpec(
        name="northside", schools=3, tutors=8, groups_per_tutor=2, students_per_group=10,
        cancel_rate={9: 0.07, 10: 0.184, 11: 0.08}, no_show_rate=0.05,
        weak_tutor=7, weak_tutor_extra=0.25, weak_group=11,
        ell_n=7, iep_n=24, frl_share=0.55),
    "riverbend": PackSpec(
        name="riverbend", schools=2, tutors=6, groups_per_tutor=2, students_per_group=11,
        cancel_rate={9: 0.09, 10: 0.10, 11: 0.085}, no_show_rate=0.06,
        weak_tutor=3, weak_tutor_extra=0.22, weak_group=8,
        ell_n=15, iep_n=6, frl_share=0.48),
}

SCHOOL_NAMES = ["Alder", "Birch", "Cedar", "Dogwood", "Elm"]
FIRST = ["Ana", "Ben", "Chloe", "Dev", "Eli", "Fatima", "Gus", "Hana", "Ivan", "Jo", "Kai",
         "Lena", "Mo", "Nia", "Omar", "Pia"]
SUBJECTS = ["math", "reading"]

STUDIES = [
    ("ST-01", "High-dosage math tutoring in Chicago high schools", 0.38, "grades 9-10",
     "urban, majority low-income", 3, 2240),
    ("ST-02", "Reading tutoring with paraprofessionals", 0.21, "grades 1-2",
     "rural and suburban", 4, 1180),
    ("ST-03", "Small-group math tutoring, upper elementary", 0.27, "grades 4-5",
     "urban district, one state", 2, 860),
    ("ST-04", "Online volunteer tutoring", 0.07, "grades 6-8",
     "national sample, online", 1, 1530),
    ("ST-05", "Summer tutoring programme", 0.12, "grades 3-8",
     "suburban, summer only", 5, 640),
]

DICTIONARY = [
    ("schools.csv", "school_id", "string", "School identifier (S-01...)"),
    ("schools.csv", "name", "string", "School name"),
    ("schools.csv", "district", "string", "District name"),
    ("tutors.csv", "tutor_id", "string", "Tutor identifier (T-01...)"),
    ("tutors.csv", "name", "string", "Tutor first name"),
    ("tutors.csv", "school_id", "string", "School the tutor works in"),
    ("tutors.csv", "start_month", "string", "Month the tutor started (YYYY-MM)"),
    ("groups.csv", "group_id", "string", "Tutoring group identifier (G-01...)"),
    ("groups.csv", "tutor_id", "string", "Tutor leading the group"),
    ("groups.csv", "school_id", "string", "School of the group"),
    ("groups.csv", "subject", "string", "math or reading"),
    ("groups.csv", "weekday_slots", "string", "Scheduled weekdays"),
    ("students.csv", "student_id", "string", "Student identifier (P-001...)"),
    ("students.csv", "school_id", "string", "School of the student"),
    ("students.csv", "group_id", "string", "Tutoring group of the student"),
    ("students.csv", "grade", "int", "School grade (3-5)"),
    ("students.csv", "ell", "Y/N", "English language learner"),
    ("students.csv", "iep", "Y/N", "Has an individualised education programme"),
    ("students.csv", "frl", "Y/N", "Eligible for free or reduced-price lunch"),
    ("sessions.csv", "session_id", "string", "Session identifier"),
    ("sessions.csv", "group_id", "string", "Group the session was scheduled for"),
    ("sessions.csv", "tutor_id", "string", "Tutor of the session"),
    ("sessions.csv", "date", "date", "Scheduled date (YYYY-MM-DD), Sep-Nov 2026"),
    ("sessions.csv", "status", "string", "completed, cancelled or no-show (tutor absent)"),
    ("sessions.csv", "minutes", "int", "Minutes delivered (0 unless completed)"),
    ("attendance.csv", "session_id", "string", "A completed session"),
    ("attendance.csv", "student_id", "string", "A student of the session's group"),
    ("attendance.csv", "present", "0/1", "Whether the student attended"),
    ("assessments.csv", "student_id", "string", "Student"),
    ("assessments.csv", "pre_score", "float", "Scale score, start of quarter"),
    ("assessments.csv", "post_score", "float", "Scale score, end of quarter"),
    ("studies.csv", "study_id", "string", "Published study identifier (ST-01...)"),
    ("studies.csv", "title", "string", "Study title"),
    ("studies.csv", "effect_size", "float", "Reported effect size (standard deviations)"),
    ("studies.csv", "grades", "string", "Grades studied"),
    ("studies.csv", "population", "string", "Population studied"),
    ("studies.csv", "sessions_per_week", "int", "Dosage in the study"),
    ("studies.csv", "n", "int", "Students in the study"),
]


def _dates() -> list[date]:
    """Scheduled Tuesdays and Thursdays of the quarter."""
    out = []
    day = QUARTER_START
    while day <= QUARTER_END:
        if day.weekday() in (1, 3):
            out.append(day)
        day += timedelta(days=1)
    return out


def _csv(header: list[str], rows: list[list[object]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


def _assign(rng: random.Random, ids: list[str], k: int) -> set[str]:
    return set(rng.sample(ids, k))


def build_pack(spec: PackSpec, seed: int = SEED) -> dict[str, str]:
    """The pack's CSV files as text, by file name."""
    rng = random.Random(f"{seed}:{spec.name}")
    files: dict[str, str] = {}
    schools = [f"S-{i:02d}" for i in range(1, spec.schools + 1)]
    files["schools.csv"] = _csv(["school_id", "name", "district"], [
        [s, f"{SCHOOL_NAMES[i]} Elementary", f"{spec.name.title()} District"]
        for i, s in enumerate(schools)])
    tutors = [f"T-{i:02d}" for i in range(1, spec.tutors + 1)]
    tutor_school = {t: schools[i % len(schools)] for i, t in enumerate(tutors)}
    files["tutors.csv"] = _csv(["tutor_id", "name", "school_id", "start_month"], [
        [t, FIRST[i % len(FIRST)], tutor_school[t], rng.choice(["2025-08", "2026-01", "2026-08"])]
        for i, t in enumerate(tutors)])
    groups: list[tuple[str, str]] = []
    for t in tutors:
        for _ in range(spec.groups_per_tutor):
            groups.append((f"G-{len(groups) + 1:02d}", t))
    files["groups.csv"] = _csv(["group_id", "tutor_id", "school_id", "subject", "weekday_slots"],
                               [[g, t, tutor_school[t], SUBJECTS[i % 2], "Tue;Thu"]
                                for i, (g, t) in enumerate(groups)])
    # students
    students: list[str] = []
    student_group: dict[str, str] = {}
    for g, _t in groups:
        for _ in range(spec.students_per_group):
            sid = f"P-{len(students) + 1:03d}"
            students.append(sid)
            student_group[sid] = g
    ell = _assign(rng, students, spec.ell_n)
    iep = _assign(rng, students, spec.iep_n)
    frl = _assign(rng, students, round(spec.frl_share * len(students)))
    group_tutor = dict(groups)
    files["students.csv"] = _csv(
        ["student_id", "school_id", "group_id", "grade", "ell", "iep", "frl"],
        [[s, tutor_school[group_tutor[student_group[s]]], student_group[s], rng.randint(3, 5),
          "Y" if s in ell else "N", "Y" if s in iep else "N", "Y" if s in frl else "N"]
         for s in students])
    # sessions: exact counts per month so the built-in rates hold
    weak_tutor = tutors[spec.weak_tutor - 1]
    weak_group = groups[spec.weak_group - 1][0]
    session_rows: list[list[object]] = []
    by_month: dict[int, list[int]] = {}
    dates = _dates()
    for g, t in groups:
        for d in dates:
            session_rows.append([f"{g}-{d.isoformat()}", g, t, d.isoformat(), "completed", 0])
            by_month.setdefault(d.month, []).append(len(session_rows) - 1)
    for month, indexes in by_month.items():
        normal = [i for i in indexes if session_rows[i][2] != weak_tutor]
        weak = [i for i in indexes if session_rows[i][2] == weak_tutor]
        for pool, extra in ((normal, 0.0), (weak, spec.weak_tutor_extra)):
            n_cancel = round(spec.cancel_rate[month] * len(pool))
            n_noshow = round((spec.no_show_rate + extra) * len(pool))
            picked = rng.sample(pool, n_cancel + n_noshow)
            for i in picked[:n_cancel]:
                session_rows[i][4] = "cancelled"
            for i in picked[n_cancel:]:
                session_rows[i][4] = "no-show"
    for row in session_rows:
        if row[4] == "completed":
            row[5] = rng.choice([30, 35, 40, 40, 45, 45])
    files["sessions.csv"] = _csv(["session_id", "group_id", "tutor_id", "date", "status",
                                  "minutes"], session_rows)
    # attendance: a hidden motivation factor drives both attendance and growth
    motivation = {s: rng.gauss(0.0, 1.0) for s in students}
    propensity = {}
    for s in students:
        base = 0.82 + 0.06 * motivation[s]
        if student_group[s] == weak_group:
            base -= 0.3
        propensity[s] = min(0.99, max(0.2, base))
    attended_minutes = dict.fromkeys(students, 0)
    attendance_rows: list[list[object]] = []
    members: dict[str, list[str]] = {}
    for s in students:
        members.setdefault(student_group[s], []).append(s)
    for row in session_rows:
        if row[4] != "completed":
            continue
        for s in members[str(row[1])]:
            present = 1 if rng.random() < propensity[s] else 0
            attendance_rows.append([row[0], s, present])
            if present:
                attended_minutes[s] += int(str(row[5]))
    files["attendance.csv"] = _csv(["session_id", "student_id", "present"], attendance_rows)
    assessment_rows: list[list[object]] = []
    for s in students:
        pre = rng.gauss(480.0, 35.0)
        hours = attended_minutes[s] / 60
        growth = 4.0 + 0.45 * hours + 3.0 * motivation[s] + rng.gauss(0.0, 4.0)
        assessment_rows.append([s, f"{pre:.1f}", f"{pre + growth:.1f}"])
    files["assessments.csv"] = _csv(["student_id", "pre_score", "post_score"], assessment_rows)
    files["studies.csv"] = _csv(
        ["study_id", "title", "effect_size", "grades", "population", "sessions_per_week", "n"],
        [[sid, title, f"{es:.2f}", grades, pop, spw, n]
         for sid, title, es, grades, pop, spw, n in STUDIES])
    files["data_dictionary.csv"] = _csv(["file", "column", "type", "meaning"],
                                        [list(row) for row in DICTIONARY])
    return files


def write_pack(spec: PackSpec, out_dir: Path, seed: int = SEED) -> Path:
    """Write one pack's CSVs and ground truth under ``out_dir/<name>/``."""
    from grade_kit.demo.truth import ground_truth_json

    folder = out_dir / spec.name
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in build_pack(spec, seed).items():
        (folder / name).write_bytes(text.encode("utf-8"))
    (folder / "ground_truth.json").write_bytes(ground_truth_json(folder).encode("utf-8"))
    return folder


def generate_packs(out_dir: Path | str, seed: int = SEED) -> list[Path]:
    """Write every pack of :data:`PACKS` under ``out_dir`` (default ``fixtures/packs``)."""
    out = Path(out_dir)
    return [write_pack(spec, out, seed) for spec in PACKS.values()]
