"""Calibration pairs of the blind sheet: does a grader give two forms of one answer the same
grade? When every grader is a model, the report is an internal consistency review."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from grade_kit.frames import run_frames, verdict_frames
from grade_kit.schema import MODEL_GRADER_PREFIXES, Grade, Run
from grade_kit.standard.grade_rates import run_grades


def _verdict(grade: Grade) -> str:
    """The grade that the grading order gives a delivered run with this record."""
    run = Run.model_validate({"run_id": "x", "setup": "-", "task_id": "-", "repeat": 1,
                              "status": "delivered", "response": {}})
    runs = run_frames([run])["runs"]
    frame = verdict_frames(grades=[grade.model_copy(update={"run_id": "x"})])["grades"]
    return str(run_grades(runs, frame).get_column("grade").item())


def pair_verdicts(key: dict[str, Any], graded: dict[str, Grade]) -> list[dict[str, Any]]:
    """Per calibration pair: the graders, both derived grades, the fields that differ, and
    ``agree`` / ``disagree`` / ``not graded in both forms``."""
    rows = []
    for pair in key["pairs"]:
        a, b = pair["aliases"]
        if a not in graded or b not in graded:
            rows.append({**pair, "status": "not graded in both forms"})
            continue
        ga, gb = graded[a], graded[b]
        fields = [f for f in ("core_conclusion", "request_fulfilment", "material_error")
                  if getattr(ga, f) != getattr(gb, f)]
        va, vb = _verdict(ga), _verdict(gb)
        rows.append({**pair, "graders": sorted({ga.grader, gb.grader}),
                     "verdicts": [va, vb], "differing_fields": fields,
                     "status": "agree" if va == vb and not fields else "disagree"})
    return rows


def calibration_report(calibration: Sequence[dict[str, Any]],
                       model_graders: Sequence[str] = ()) -> str:
    """Markdown report of the calibration pairs.

    Titled *Internal consistency review* when every grader of the graded pairs is a model
    (named in ``model_graders``, or named with a model prefix such as ``model:``,
    ``llm:`` or ``llm-grader:``), else *Grader calibration check*.
    """
    graders = {g for row in calibration for g in row.get("graders", [])}
    models_only = bool(graders) and all(g.startswith(MODEL_GRADER_PREFIXES)
                                        or g in model_graders for g in graders)
    title = "Internal consistency review" if models_only else "Grader calibration check"
    lines = [f"# {title}", ""]
    if models_only:
        lines += ["Every grader of these pairs is a model: this checks the model grader "
                  "against itself, not against human judgement.", ""]
    done = [r for r in calibration if r["status"] != "not graded in both forms"]
    disagree = [r for r in done if r["status"] == "disagree"]
    lines.append(f"{len(calibration)} pairs of answers carrying the same facts in two forms; "
                 f"{len(done)} graded in both forms; {len(disagree)} disagree.")
    lines.append("")
    if calibration:
        lines += ["| form pair | run | aliases | graders | verdicts | differing fields | "
                  "status |", "|---|---|---|---|---|---|---|"]
        for r in calibration:
            lines.append(
                f"| {r['pair_form']} | {r['run_id']} | {' / '.join(r['aliases'])} | "
                f"{', '.join(r.get('graders', [])) or '—'} | "
                f"{' / '.join(r.get('verdicts', [])) or '—'} | "
                f"{', '.join(r.get('differing_fields', [])) or '—'} | {r['status']} |")
    return "\n".join(lines) + "\n"
