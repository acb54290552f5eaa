"""docs/methodology.md §3 "Claim match", "Insight quality" and "Calibration"."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grade_kit.frames import EvalData
from grade_kit.scorers import claim_matches, insight_scores
from grade_kit.text import contains_run, normalize
from tests.conftest import make_run, make_task, run_row, score, task_row


def found(claim: dict[str, Any], role: str = "gold_insights", **run: Any) -> bool:
    task = make_task(**{role: [claim]})
    data = EvalData.from_records([task], [make_run("r", **run)])
    m = claim_matches(data.claims, data.claim_terms, data.runs, data.items)
    return bool(m["found"].item())


def test_without_patterns_tokens_must_be_a_contiguous_run() -> None:
    claim = {"id": "c", "text": "October cancellations spiked"}
    assert found(claim, findings=["In OCTOBER, cancellations spiked sharply."])
    assert not found(claim, findings=["October cancellations clearly spiked"])
    assert not found(claim, findings=["October", "cancellations spiked"])  # one finding


def test_whole_tokens_only() -> None:
    assert not found({"id": "c", "text": "2.6"}, findings=["ratio 12.6"])
    assert found({"id": "c", "text": "2.6"}, findings=["ratio 2.6x"])


def test_patterns_with_synonyms_and_alternatives() -> None:
    claim = {"id": "c", "text": "October spike",
             "patterns": [["october|oct", "spike|jump|rose"], ["autumn peak"]]}
    assert found(claim, findings=["Cancellations rose in Oct."])  # order free, synonyms
    assert found(claim, findings=["An autumn peak in cancellations"])  # second alternative
    assert not found(claim, findings=["October was quiet"])  # one term missing
    assert not found(claim, findings=["Oct was quiet", "a jump in November"])  # split terms


def test_a_term_found_many_times_still_counts_once() -> None:
    """Every occurrence of a synonym is a hit; an alternative needs each of its terms, so
    one term found three times (or by two of its synonyms) does not stand for two terms."""
    claim = {"id": "c", "text": "x", "patterns": [["october|oct", "spike|jump"]]}
    assert not found(claim, findings=["October, oct and October again"])
    assert not found(claim, findings=["oct oct oct jumps"])  # "jumps" is not "jump"
    assert found(claim, findings=["oct oct oct jump jump spike"])


def test_multi_token_synonym_is_a_contiguous_run() -> None:
    claim = {"id": "c", "text": "x", "patterns": [["year over year|yoy"]]}
    assert found(claim, role="forbidden_claims", findings=["Up year over year"])
    assert found(claim, role="forbidden_claims", findings=["Up YoY"])
    assert not found(claim, role="forbidden_claims", findings=["year after year over"])


def test_unicode_case_folding_in_claims() -> None:
    assert found({"id": "c", "text": "STRASSE"}, findings=["die Straße"])


@pytest.mark.parametrize(
    ("role", "where", "expected"),
    [
        ("gold_insights", "findings", True),
        ("gold_insights", "limitations", False),
        ("gold_insights", "text", False),
        ("required_limitations", "limitations", True),
        ("required_limitations", "findings", False),
        ("forbidden_claims", "findings", True),
        ("forbidden_claims", "limitations", True),
        ("forbidden_claims", "recommendations", True),
        ("forbidden_claims", "text", True),
    ],
)
def test_targets_by_role(role: str, where: str, expected: bool) -> None:
    value: Any = "the spike" if where == "text" else ["the spike"]
    assert found({"id": "c", "text": "spike"}, role=role, **{where: value}) is expected


def test_empty_findings_match_nothing() -> None:
    assert not found({"id": "c", "text": "spike"}, findings=["", "  ", "--"])


def test_insight_quality_share_and_failed_run(approx: Any) -> None:
    task = make_task(gold_insights=[{"id": "a", "text": "alpha"}, {"id": "b", "text": "beta"},
                                    {"id": "c", "text": "gamma"}])
    scores = score([task], [make_run("r1", findings=["alpha", "beta gamma"]),
                            make_run("r2", repeat=2, findings=["alpha"]),
                            make_run("r3", repeat=3, status="failed")])
    assert run_row(scores, "r1")["insight_quality"] == approx(1.0)
    assert run_row(scores, "r2")["insight_quality"] == approx(1 / 3)
    assert run_row(scores, "r3")["insight_quality"] == 0.0
    assert task_row(scores)["insight_quality"] == approx(4 / 9)


def test_calibration_mean_of_non_null_shares(approx: Any) -> None:
    task = make_task(
        gold_insights=[{"id": "i1", "text": "alpha"},
                       {"id": "i2", "text": "one quarter", "calibration": True}],
        required_limitations=[{"id": "l1", "text": "single quarter"},
                              {"id": "l2", "text": "small sample"}],
        forbidden_claims=[{"id": "x1", "text": "year over year"}, {"id": "x2", "text": "causes"}],
    )
    runs = [
        # limitations 1/2, forbidden absent 1/2 (x1 in text), calibration insight 1/1
        make_run("r1", findings=["one quarter only"], limitations=["single quarter"],
                 text="up year over year"),
        # limitations 0, forbidden absent 1, calibration insight 0
        make_run("r2", repeat=2, findings=["alpha"]),
    ]
    scores = score([task], runs)
    assert run_row(scores, "r1")["calibration_limitation_handling"] == approx((0.5 + 0.5 + 1.0) / 3)
    assert run_row(scores, "r2")["calibration_limitation_handling"] == approx((0 + 1 + 0) / 3)


def test_calibration_is_the_exactly_summed_mean_of_its_shares() -> None:
    # Shares 1/12 (limitations found), 1/11 (forbidden claims absent) and 1/10 (calibration
    # insights found): fsum / 3 = 0.0914141414141414, where adding left to right gives
    # 0.09141414141414143 (docs/methodology.md §3 "Arithmetic": every mean is fsum / n).
    words = [f"z{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(33)]  # 33 tokens
    task = make_task(
        gold_insights=[{"id": f"i{i}", "text": words[i], "calibration": True}
                       for i in range(10)],
        required_limitations=[{"id": f"l{i}", "text": words[10 + i]} for i in range(12)],
        forbidden_claims=[{"id": f"x{i}", "text": words[22 + i]} for i in range(11)],
    )
    run = make_run("r1", findings=[words[0], *words[22:32]], limitations=[words[10]])
    got = run_row(score([task], [run]), "r1")
    assert (got["limitations_found"], got["forbidden_absent"],
            got["calibration_insights_found"]) == (1 / 12, 1 / 11, 1 / 10)
    assert got["calibration_limitation_handling"] == 0.0914141414141414
    assert got["calibration_limitation_handling"] == math.fsum([1 / 12, 1 / 11, 1 / 10]) / 3


def test_calibration_components_null_when_undefined(approx: Any) -> None:
    only_forbidden = make_task(forbidden_claims=[{"id": "x", "text": "causes"}])
    scores = score([only_forbidden], [make_run("r1", findings=["dosage causes growth"]),
                                      make_run("r2", repeat=2, findings=["fine"]),
                                      make_run("r3", repeat=3, status="cancelled")])
    assert run_row(scores, "r1")["calibration_limitation_handling"] == 0.0
    assert run_row(scores, "r2")["calibration_limitation_handling"] == 1.0
    # no response: 0, not "nothing said"
    assert run_row(scores, "r3")["calibration_limitation_handling"] == 0.0
    assert task_row(scores)["calibration_limitation_handling"] == approx(1 / 3)
    nothing = make_task(gold_insights=[{"id": "i", "text": "alpha"}])
    scores = score([nothing], [make_run("r1", findings=["alpha"]),
                               make_run("r2", repeat=2, status="failed")])
    assert run_row(scores, "r2")["calibration_limitation_handling"] is None
    assert task_row(scores)["calibration_limitation_handling"] is None


class RecordingJudge:
    name = "stub-llm"

    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.asked: list[tuple[str, Sequence[str]]] = []

    def __call__(self, claim: str, targets: Sequence[str]) -> bool:
        self.asked.append((claim, list(targets)))
        return self.answer


def test_fallback_judge_only_asked_about_misses_and_recorded() -> None:
    task = make_task(gold_insights=[{"id": "a", "text": "alpha"}, {"id": "b", "text": "beta"}])
    data = EvalData.from_records([task], [make_run("r", findings=["alpha", "b-e-t-a"])])
    judge = RecordingJudge(True)
    m = claim_matches(data.claims, data.claim_terms, data.runs, data.items, claim_judge=judge)
    rows = {r["claim_id"]: r for r in m.to_dicts()}
    assert rows["a"]["method"] == "deterministic" and rows["a"]["found"]
    assert rows["b"]["method"] == "judge:stub-llm" and rows["b"]["found"]
    assert judge.asked == [("beta", ["alpha", "b-e-t-a"])]


_TOKENS = ["a", "b", "ab", "oct", "october", "2.6", "12.6", "rose", "a b"]


@settings(max_examples=150, deadline=None)
@given(
    claims=st.lists(st.lists(st.lists(st.lists(st.sampled_from(_TOKENS), min_size=1,
                                               max_size=3), min_size=1, max_size=3),
                             min_size=1, max_size=2), min_size=1, max_size=3),
    findings=st.lists(st.lists(st.sampled_from(_TOKENS), max_size=6), max_size=4),
)
def test_set_wise_match_equals_the_one_text_at_a_time_rule(
        claims: list[list[list[list[str]]]], findings: list[list[str]]) -> None:
    """The Aho-Corasick match against the rule read literally: a claim is found when some
    alternative has every term present in one finding, a term when one of its synonyms is a
    contiguous token run of it (overlapping and nested synonyms included)."""
    patterns = [[["|".join(synonyms) for synonyms in alternative] for alternative in claim]
                for claim in claims]
    task = make_task(gold_insights=[{"id": f"c{i}", "text": "x", "patterns": p}
                                    for i, p in enumerate(patterns)])
    texts = [" ".join(tokens) for tokens in findings]
    data = EvalData.from_records([task], [make_run("r", findings=texts)])
    got = dict(claim_matches(data.claims, data.claim_terms, data.runs, data.items)
               .select("claim_id", "found").iter_rows())
    for i, claim in enumerate(patterns):
        expected = any(
            all(any(contains_run(normalize(text), normalize(synonym))
                    for synonym in term.split("|")) for term in alternative)
            for text in texts for alternative in claim)
        assert got[f"c{i}"] is expected


def test_a_share_names_every_method_that_decided_it() -> None:
    task = make_task(gold_insights=[{"id": "a", "text": "alpha"}, {"id": "b", "text": "beta"}])
    runs = [make_run("r1", findings=["alpha", "b-e-t-a"]),
            make_run("r2", repeat=2, findings=["alpha", "beta"])]
    data = EvalData.from_records([task], runs)
    judged = claim_matches(data.claims, data.claim_terms, data.runs, data.items,
                           claim_judge=RecordingJudge(True))
    shares = {r["run_id"]: r for r in insight_scores(judged, data.runs, data.tasks).to_dicts()}
    assert shares["r1"]["insight_quality_method"] == "deterministic+judge:stub-llm"
    assert shares["r2"]["insight_quality_method"] == "deterministic"
    plain = claim_matches(data.claims, data.claim_terms, data.runs, data.items)
    shares = {r["run_id"]: r for r in insight_scores(plain, data.runs, data.tasks).to_dicts()}
    assert shares["r1"] == {"run_id": "r1", "insight_quality": 0.5,
                            "insight_quality_method": "deterministic"}
    assert shares["r2"]["insight_quality"] == 1.0


@settings(max_examples=100, deadline=None)
@given(
    tasks=st.lists(st.tuples(
        st.lists(st.lists(st.lists(st.lists(st.sampled_from(_TOKENS), min_size=1,
                                            max_size=3), min_size=1, max_size=2),
                          min_size=1, max_size=2), min_size=1, max_size=2),
        st.lists(st.lists(st.sampled_from(_TOKENS), max_size=6), max_size=3)),
        min_size=1, max_size=4),
)
def test_claims_of_many_tasks_match_as_the_rule(
        tasks: list[tuple[list[list[list[list[str]]]], list[list[str]]]]) -> None:
    """Several tasks, each with claims of its own, searched in one pass: every decision is
    still the rule's, read one text at a time (a synonym of another task's claim never
    counts)."""
    task_records, runs, expected = [], [], {}
    for t, (claims, findings) in enumerate(tasks):
        patterns = [[["|".join(synonyms) for synonyms in alternative] for alternative in claim]
                    for claim in claims]
        task_records.append(make_task(f"t{t}", gold_insights=[
            {"id": f"c{i}", "text": "x", "patterns": p} for i, p in enumerate(patterns)]))
        texts = [" ".join(tokens) for tokens in findings]
        runs.append(make_run(f"r{t}", f"t{t}", findings=texts))
        for i, claim in enumerate(patterns):
            expected[(f"r{t}", f"c{i}")] = any(
                all(any(contains_run(normalize(text), normalize(synonym))
                        for synonym in term.split("|")) for term in alternative)
                for text in texts for alternative in claim)
    data = EvalData.from_records(task_records, runs)
    got = claim_matches(data.claims, data.claim_terms, data.runs, data.items)
    assert {(r, c): f for r, c, f in got.select("run_id", "claim_id", "found").iter_rows()} \
        == expected


def test_answered_items_are_the_join_in_item_order() -> None:
    """The items of answered runs of tasks with claims, each with its task's code, as
    joining on run_id gives them: items of one run apart from each other, a run not
    answered, a task without claims and a run_id listed twice included."""
    import polars as pl

    from grade_kit.scorers.claims import _answered_items

    items = pl.DataFrame({"run_id": ["a", "a", "b", "c", "a", "d", "d", "e"]})
    answered = pl.DataFrame({"run_id": ["a", "c", "d", "e", "d"],
                             "task_id": ["t1", "t2", "t1", "t9", "t2"]})
    tasks = pl.DataFrame({"task_id": ["t1", "t2"]}).with_row_index("task")
    got = _answered_items(items, answered, tasks)
    # b is not answered, e's task has no claims, d is answered twice (t1 and t2)
    assert got.sort("item", "task").rows() == [
        (0, 0), (1, 0), (3, 1), (4, 0), (5, 0), (5, 1), (6, 0), (6, 1)]
    once = _answered_items(items, answered.head(4), tasks)
    assert once.rows() == [(0, 0), (1, 0), (3, 1), (4, 0), (5, 0), (6, 0)]  # in item order
    assert _answered_items(items.head(0), answered, tasks).height == 0


def test_in_pieces_keeps_the_frame_and_cuts_it() -> None:
    import polars as pl

    from grade_kit._chunks import in_pieces

    frame = pl.DataFrame({"x": list(range(100)), "s": [str(i) for i in range(100)]})
    cut = in_pieces(frame, 8)
    assert cut.equals(frame) and cut.n_chunks() == 8
    assert in_pieces(frame.head(5), 8).n_chunks() == 1  # too small to be worth cutting
    assert in_pieces(frame.head(0)).equals(frame.head(0))


def test_calibration_methods_are_the_sorted_distinct_methods_of_each_run() -> None:
    import polars as pl

    from grade_kit.scorers.calibration import _joined_methods

    frame = pl.DataFrame({
        "a": [None, "deterministic", "judge:x", "judge:x", None, "deterministic"],
        "b": [None, None, "deterministic", "judge:x", "judge:é", None],
        "c": [None, "judge:x", "judge:x", None, "judge:e", "judge:x"],
    }, schema={"a": pl.String, "b": pl.String, "c": pl.String})
    assert _joined_methods(frame, ["a", "b", "c"]).to_list() == [
        "", "deterministic+judge:x", "deterministic+judge:x", "judge:x", "judge:e+judge:é",
        "deterministic+judge:x"]
    assert _joined_methods(frame.head(0), ["a", "b", "c"]).to_list() == []


def test_claims_without_terms_match_nothing() -> None:
    """Frames given directly may hold claims whose terms are missing: nothing is found for
    them (not an error)."""
    import polars as pl

    tasks = [make_task("t0", gold_insights=[{"id": "c", "text": "alpha"}]),
             make_task("t1", gold_insights=[{"id": "d", "text": "x",
                                             "patterns": [["beta|gamma"]]}])]
    runs = [make_run("r0", "t0", findings=["alpha"]), make_run("r1", "t1", findings=["gamma"])]
    data = EvalData.from_records(tasks, runs)
    only_t1 = data.claim_terms.filter(pl.col("task_id") == "t1")
    got = claim_matches(data.claims, only_t1, data.runs, data.items)
    alone = claim_matches(data.claims, only_t1, data.runs.filter(pl.col("run_id") == "r0"),
                          data.items)
    assert sorted(got.select("run_id", "found").rows()) == [("r0", False), ("r1", True)]
    assert alone.select("run_id", "found").rows() == [("r0", False)]


def test_a_tie_in_field_and_position_reports_the_earlier_item() -> None:
    """Frames given directly may hold two items of a run at the same field and position:
    the one earlier in ``items`` is reported, every time."""
    import polars as pl

    data = EvalData.from_records([make_task("t0", gold_insights=[{"id": "c", "text": "alpha"}])],
                                 [make_run("r0", "t0", findings=["x"])])
    items = pl.DataFrame({"run_id": ["r0", "r0"], "field": ["finding", "finding"],
                          "position": [0, 0], "text": ["Alpha two", "Alpha one"],
                          "norm": ["alpha two", "alpha one"]})
    for order in (items, items.reverse()):
        got = claim_matches(data.claims, data.claim_terms, data.runs, order)
        assert got.get_column("matched_text").to_list() == [order.item(0, "text")]
