"""The offline rule judge: every criterion, strict zero, null with a reason, recorded wins."""

from __future__ import annotations

from typing import Any

import pytest

from grade_kit.judges.rules import JUDGE, evidence_linkage, rule_judgements, structure_usability
from tests.conftest import judgement, make_run, make_task, score, task_row

SPEC = {"sources": ["sessions.csv", "tutors.csv"], "columns": ["tutor_id", "status"],
        "entity_ids": "T-", "rates": True}


def ev(spec: dict[str, Any], **run: Any) -> tuple[float | None, str]:
    return evidence_linkage(make_task(evidence=spec), make_run("r", **run))


def test_evidence_criteria_by_hand() -> None:
    full = ev(SPEC, findings=["T-07 completed 61.5% of sessions."],
              text="Sources: sessions.csv (tutor_id, status); tutors.csv")
    assert full == (1.0, "all criteria met")
    # one of two sources, one of two columns, id and rate present: (0.5 + 0.5 + 1 + 1) / 4
    half = ev(SPEC, findings=["T-07 completed 61.5% of sessions."],
              text="Sources: sessions.csv (status)")
    assert half[0] == pytest.approx(0.75)
    assert half[1] == "short on: columns, sources"
    no_id = ev(SPEC, findings=["One tutor completed 61.5%."],
               text="Sources: sessions.csv, tutors.csv (tutor_id, status)")
    assert no_id[0] == pytest.approx(0.75)
    assert ev({"rates": True}, findings=["Growth was 8.4 points."])[0] == 1.0
    assert ev({"rates": True}, findings=["Growth was strong."])[0] == 0.0
    assert ev({"columns": ["pre_score"]}, findings=["x"], text="pre score column")[0] == 1.0
    assert ev({"entity_ids": "T-"}, findings=["ST-07 is a study"])[0] == 0.0  # not a T- id


def test_strict_gives_zero_without_ids_or_rates() -> None:
    strict = {**SPEC, "strict": True}
    assert ev(strict, findings=["One tutor is weakest at 61.5%."],
              text="sessions.csv tutors.csv tutor_id status") == (0.0, "strict: entity_ids missing")
    assert ev(strict, findings=["T-07 is weakest."],
              text="sessions.csv tutors.csv tutor_id status")[0] == 0.0


def test_empty_spec_is_null_with_reason() -> None:
    task = make_task(gold_insights=[{"id": "i", "text": "alpha"}], evidence={})
    js = rule_judgements([task], [make_run("r1", findings=["alpha"]),
                                  make_run("r2", repeat=2, status="failed")])
    evidence = [j for j in js if j.dimension == "evidence_linkage"]
    assert len(evidence) == 1 and evidence[0].score is None
    assert evidence[0].reason == "the evidence spec names no sources, columns, entity ids or rates"
    row = task_row(score([task], [make_run("r1", findings=["alpha"]),
                                  make_run("r2", repeat=2, status="failed")], js))
    assert row["evidence_linkage"] is None  # null, never a silent 0 (not even for the failure)
    assert row["structure_usability"] == 0.5  # r1 1.0, failed r2 0


def su(track: int = 1, requires_limitations: bool = True, **run: Any) -> tuple[float, str]:
    fields: dict[str, Any] = {"track": track}
    if requires_limitations:
        fields["required_limitations"] = [{"id": "l", "text": "single quarter"}]
    return structure_usability(make_task(**fields), make_run("r", **run))


def test_structure_criteria_by_hand() -> None:
    good = su(findings=["Cancellations were 18.1% in October."], limitations=["One quarter."],
              metrics={"oct_cancel_rate": 0.181})
    assert good == (1.0, "all criteria met")
    # findings, limitations_apart, units, ratios, scannable: units fails -> 4/5
    bad_units = su(findings=["Cancellations were 18.1 in October."],
                   limitations=["One quarter."], metrics={"oct_cancel_rate": 18.1})
    assert bad_units == (pytest.approx(0.8), "failed: units")
    assert su(findings=["Up 180% of the time"], limitations=["x"])[1] == "failed: units"
    merged = su(findings=["Rates fell.", "Only one quarter of data."])
    assert merged == (pytest.approx(0.8), "failed: limitations_apart")
    ratio = su(findings=["October was 260% of September."], limitations=["x"],
               metrics={"oct_vs_sep_ratio": 2.6})
    assert ratio[1] == "failed: ratios, units"  # 260% is also over 100
    long = su(findings=["word " * 46], limitations=["x"])
    assert long[1] == "failed: scannable"
    assert su(limitations=["x"])[1] == "failed: findings, scannable"
    assert su(requires_limitations=False, findings=["Fine."])[0] == 1.0  # none required


def test_track3_keeps_recommendations_apart() -> None:
    ok = su(track=3, findings=["T-07 is weakest."], limitations=["x"],
            recommendations=["Meet T-07."])
    assert ok[0] == 1.0
    folded = su(track=3, findings=["T-07 is weakest.", "The coordinator should meet T-07."],
                limitations=["x"])
    assert folded[1] == "failed: recommendations_apart"


def test_judgements_name_the_judge_and_recorded_ones_win() -> None:
    from grade_kit.pipeline.evaluation import evaluate

    task = make_task(evidence={"rates": True}, required_limitations=[{"id": "l", "text": "x"}])
    runs = [make_run("r1", findings=["18.1%"], limitations=["x"])]
    recorded = [judgement("r1", "evidence_linkage", 0.25)]
    evaluation = evaluate([task], runs, judgements=recorded, judge="rules")
    by_dim = {j.dimension: j for j in evaluation.inputs.judgements}
    assert by_dim["evidence_linkage"].score == 0.25 and by_dim["evidence_linkage"].judge == "test"
    assert by_dim["structure_usability"].judge == JUDGE == "rules@1"
    assert evaluation.data.judgements.height == 2
    assert evaluation.results.provenance.judges == ["rules@1", "test"]


def test_an_unknown_judge_is_a_clear_error() -> None:
    import pytest

    from grade_kit.pipeline.evaluation import evaluate

    with pytest.raises(ValueError, match="unknown judge 'llm'; choose from"):
        evaluate([make_task()], [make_run("r1")], judge="llm")
    with pytest.raises(ValueError, match="not int"):
        evaluate([make_task()], [make_run("r1")], judge=3)  # type: ignore[arg-type]


def test_every_model_verdict_is_read_by_one_rule() -> None:
    """A judge's, a grader's and a pairwise answer go through read_answer: a failed request,
    an answer that is not one JSON object, a verdict naming no answer or another one, each
    with its reason; a fenced JSON object naming its answer is read."""
    from grade_kit.judges.model import Asked, read_answer

    def asked(answer: str | None, error: str | None = None) -> Asked:
        return Asked("k", answer, error, False)

    assert read_answer(asked(None, "TimeoutError: "), "judge") == (
        None, "the judge could not be asked (TimeoutError: )")
    assert read_answer(asked("[1]"), "grader") == (
        None, "the grader's answer is not a JSON object ('[1]')")
    assert read_answer(asked('{"a": 1}'), "grader", "A-1") == (
        None, "not used: the verdict does not name the answer it scored (expected A-1)")
    assert read_answer(asked('{"answer": "A-2"}'), "grader", "A-1") == (
        None, "not used: the verdict names answer 'A-2', not A-1")
    assert read_answer(asked('```json\n{"answer": "A-1", "x": 2}\n```'), "judge", "A-1") == (
        {"answer": "A-1", "x": 2}, None)
    assert read_answer(asked('{"better": "first"}'), "grader") == ({"better": "first"}, None)
