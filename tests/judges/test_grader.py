"""The offline rule grader: each rule of grade_kit.judges.rule_grader, by hand."""

from __future__ import annotations

from typing import Any

import grade_kit as gk
from tests.conftest import make_run, make_task

TASK = make_task(
    gold_facts=[{"id": "f1", "metric": "rate", "value": 0.25, "abs_tol": 0.01},
                {"id": "f2", "metric": "who", "value": "T-07"}],
    gold_insights=[{"id": "i1", "text": "cancellations spiked in October"}],
    forbidden_claims=[{"id": "x1", "text": "tutoring causes growth"}])


def grade_of(**run: Any) -> dict[str, Any]:
    ev = gk.evaluate([TASK], [make_run("r", **run)], grader="rules")
    row = ev.standard.graded.filter(ev.standard.graded["run_id"] == "r").to_dicts()[0]
    return row


def test_everything_right_is_resolved() -> None:
    g = grade_of(findings=["Cancellations spiked in October."],
                 metrics={"rate": 0.255, "who": "t-07"})
    assert (g["core_conclusion"], g["request_fulfilment"], g["material_error"]) == (
        "correct", "full", "no")
    assert g["grade"] == "resolved" and g["grader"] == "rules-grader@1"


def test_a_forbidden_claim_stated_is_a_material_error_naming_the_text() -> None:
    g = grade_of(findings=["Cancellations spiked in October."],
                 recommendations=["Tutoring causes growth, so add sessions."],
                 metrics={"rate": 0.25, "who": "T-07"})
    assert g["grade"] == "material_error"
    assert g["claim"] == "Tutoring causes growth, so add sessions."
    assert g["evidence"] == "forbidden claim x1: the data cannot support it"


def test_a_reported_figure_outside_tolerance_is_a_material_error_with_the_gold() -> None:
    g = grade_of(findings=["Cancellations spiked in October."],
                 metrics={"rate": "18.4%", "who": "T-07"})
    assert g["grade"] == "material_error"
    assert g["claim"] == 'rate = "18.4%"'
    assert g["evidence"] == "gold 0.25 (abs_tol 0.01) (fact f1)"


def test_a_missing_figure_is_incomplete_not_wrong() -> None:
    g = grade_of(findings=["Cancellations spiked in October."], metrics={"who": "T-07"})
    assert (g["core_conclusion"], g["request_fulfilment"]) == ("correct", "partial")
    assert g["grade"] == "partially_resolved"


def test_an_insight_missed_is_partial() -> None:
    g = grade_of(findings=["Something else entirely."], metrics={"rate": 0.25, "who": "T-07"})
    assert g["grade"] == "partially_resolved"


def test_no_findings_is_not_met_and_no_conclusion() -> None:
    g = grade_of(findings=[], text="I could not answer.")
    assert (g["core_conclusion"], g["request_fulfilment"]) == ("no_gradable_conclusion",
                                                               "not_met")
    assert g["grade"] == "unresolved"
    metrics_only = grade_of(findings=[], metrics={"rate": 0.25, "who": "T-07"})
    assert (metrics_only["core_conclusion"], metrics_only["request_fulfilment"]) == (
        "correct", "not_met")


def test_a_recorded_grade_is_never_replaced_and_failed_runs_get_none() -> None:
    runs = [make_run("r1", findings=["x"]), make_run("r2", status="failed", repeat=2)]
    recorded = [{"run_id": "r1", "core_conclusion": "correct", "request_fulfilment": "full",
                 "material_error": "no", "grader": "human"}]
    ev = gk.evaluate([TASK], runs, grades=recorded, grader="rules")
    graded = {r["run_id"]: r for r in ev.standard.graded.to_dicts()}
    assert graded["r1"]["grader"] == "human" and graded["r1"]["grade"] == "resolved"
    assert graded["r2"]["grader"] is None and graded["r2"]["grade"] == "unresolved"
    assert ev.results.provenance.graders == ["human", "rules-grader@1"]


def test_only_asking_the_user_is_unresolved_and_flagged() -> None:
    g = grade_of(findings=[], text="Could you tell me which term you mean?")
    assert g["needs_more_information"] is True
    assert g["grade"] == "unresolved"
    ev = gk.evaluate([TASK], [make_run("r", findings=[], text="Which term? Please clarify.")],
                     grader="rules")
    assert ev.results.setups["A"].grades.needs_more_information == 1


def test_answering_part_then_asking_can_be_partial() -> None:
    g = grade_of(findings=["Cancellations spiked in October.",
                           "Do you mean the autumn or the spring term?"],
                 metrics={"who": "T-07"})
    assert g["needs_more_information"] is True
    assert g["grade"] == "partially_resolved"


def test_a_limitation_about_missing_data_is_not_asking() -> None:
    g = grade_of(findings=["Cancellations spiked in October."],
                 limitations=["Could you trust one quarter? The data cover only that."],
                 metrics={"rate": 0.25, "who": "T-07"})
    assert g["needs_more_information"] is False and g["grade"] == "resolved"
