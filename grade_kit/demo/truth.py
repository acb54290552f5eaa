"""``ground_truth.json`` of a pack, computed from its CSV files (never from the generator's
target constants). Every number is rounded to 6 decimals so the file is byte-stable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from grade_kit.demo.query import SUPPRESSION_N, PackData

DIGITS = 6


def _r(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, DIGITS)
    if isinstance(value, dict):
        return {k: _r(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_r(v) for v in value]
    return value


def _rows(frame: pl.DataFrame, key: str) -> dict[str, dict[str, Any]]:
    return {str(row.pop(key)): row for row in frame.to_dicts()}


def ground_truth(folder: Path) -> dict[str, Any]:
    """Every fact a task can point at, computed from the pack's CSVs."""
    pack = PackData(folder)
    overall = pack.status_rates().to_dicts()[0]
    months = _rows(pack.status_rates("month"), "month")
    tutors = _rows(pack.status_rates("tutor_id"), "tutor_id")
    weakest_tutor = min(tutors, key=lambda t: (tutors[t]["completion_rate"], t))
    groups = _rows(pack.attendance_by_group(), "group_id")
    weakest_group = min(groups, key=lambda g: (groups[g]["attendance_rate"], g))
    growth = pack.growth
    schools = _rows(growth.group_by("school_id").agg(
        n_students=pl.len(), mean_growth=pl.col("growth").mean()).sort("school_id"),
        "school_id")
    studies = _rows(pack.studies.select("study_id", "effect_size", "grades", "population"),
                    "study_id")
    closest = "ST-03"  # the only study of upper-elementary students (grades 4-5)
    leader = max(schools, key=lambda s: (schools[s]["mean_growth"], s))
    truth = {
        "pack": pack.name,
        "quarter": {"start": "2026-09-01", "end": "2026-11-30", "months": sorted(months)},
        "counts": {
            "schools": pl.read_csv(folder / "schools.csv").height,
            "tutors": len(tutors),
            "groups": len(groups),
            "students": pack.students.height,
            "sessions": int(overall["sessions"]),
        },
        "sessions": {
            "completion_rate": overall["completion_rate"],
            "cancel_rate": overall["cancel_rate"],
            "no_show_rate": overall["no_show_rate"],
            "mean_minutes": overall["mean_minutes"],
            "by_month": months,
            "oct_vs_sep_cancel_ratio": months["2026-10"]["cancel_rate"]
            / months["2026-09"]["cancel_rate"],
            "peak_cancel_month": (peak := max(months, key=lambda m: months[m]["cancel_rate"])),
            "peak_cancel_rate": months[peak]["cancel_rate"],
        },
        "tutors": {
            "by_id": tutors,
            "lowest_completion": {"tutor_id": weakest_tutor,
                                  "completion_rate": tutors[weakest_tutor]["completion_rate"]},
        },
        "groups": {
            "by_id": groups,
            "lowest_attendance": {"group_id": weakest_group,
                                  "attendance_rate": groups[weakest_group]["attendance_rate"]},
        },
        "subgroups": {
            "threshold_n": SUPPRESSION_N,
            "all": {"n": growth.height, "mean_growth": growth.get_column("growth").mean()},
            "ell": pack.subgroup("ell"),
            "iep": pack.subgroup("iep"),
            "frl": pack.subgroup("frl"),
        },
        "schools": schools,
        "growth_leader": {"school_id": leader, "mean_growth": schools[leader]["mean_growth"]},
        "dosage": {
            "mean_hours": growth.get_column("hours").mean(),
            "growth_r": pack.dosage_growth_r(),
        },
        "studies": {
            "by_id": studies,
            "mean_effect_size": pack.studies.get_column("effect_size").mean(),
            "closest_population": closest,
            "closest_effect_size": studies[closest]["effect_size"],
        },
    }
    return dict(_r(truth))


def ground_truth_json(folder: Path) -> str:
    """The ground truth as sorted, indented JSON text ending in a newline."""
    return json.dumps(ground_truth(folder), indent=2, sort_keys=True) + "\n"
