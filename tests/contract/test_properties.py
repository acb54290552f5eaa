"""Property tests: every score stays in [0, 1] or is null, whatever the answers."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from grade_kit.schema import DIMENSIONS
from tests.conftest import judgement, make_run, make_task, score

WORDS = ["alpha", "beta", "october", "spike", "2.6", "12.6", "18.4%", "quarter", "single", ""]
text = st.lists(st.sampled_from(WORDS), max_size=5).map(" ".join)
value = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 10),
                  st.sampled_from(["18.4%", "1,234", "abc", "T-07", "", "nan"]), st.booleans(),
                  st.none())
run_answer = st.fixed_dictionaries({
    "findings": st.lists(text, max_size=4),
    "limitations": st.lists(text, max_size=2),
    "metrics": st.dictionaries(st.sampled_from(["m", "n", "s"]), value, max_size=3),
    "status": st.sampled_from(["delivered", "delivered", "delivered", "failed", "timeout"]),
    "judged": st.one_of(st.none(), st.floats(0, 1)),
})


@settings(max_examples=80, deadline=None)
@given(answers=st.lists(run_answer, min_size=1, max_size=5))
def test_scores_stay_in_unit_interval(answers: list[dict[str, Any]]) -> None:
    task = make_task(
        gold_facts=[{"id": "f1", "metric": "m", "value": 0.184, "abs_tol": 0.005},
                    {"id": "f2", "metric": "s", "value": "T-07"}],
        gold_insights=[{"id": "i1", "text": "october spike"},
                       {"id": "i2", "text": "single quarter", "calibration": True}],
        required_limitations=[{"id": "l1", "text": "quarter"}],
        forbidden_claims=[{"id": "x1", "text": "12.6"}],
    )
    runs, js = [], []
    for i, a in enumerate(answers, start=1):
        runs.append(make_run(f"r{i}", repeat=i, findings=a["findings"],
                             limitations=a["limitations"], metrics=a["metrics"],
                             status=a["status"]))
        if a["judged"] is not None:
            js.append(judgement(f"r{i}", "evidence_linkage", a["judged"]))
    scores = score([task], runs, js)
    for frame in (scores.runs, scores.tasks, scores.tracks, scores.packs, scores.overall):
        for dim in DIMENSIONS:
            if dim in frame.columns:
                for v in frame[dim].to_list():
                    assert v is None or 0.0 <= v <= 1.0, (dim, v)
    for col in ("composite", "rubric_score"):
        for v in scores.tasks[col].to_list():
            assert v is None or 0.0 <= v <= 1.0 + 1e-12
