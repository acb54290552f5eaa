"""docs/methodology.md §4 "Grades", "Rates", "Timing", "Tool calls": hand-computed cases."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grade_kit as gk
from grade_kit.frames import EvalData
from grade_kit.schema import Grade, MaterialError
from grade_kit.standard import (
    nearest_rank,
    questions_needed,
    run_grades,
    standard_results,
    summarize,
)
from tests.conftest import make_run, make_task

T0 = "2026-11-02T09:00:00+00:00"


def at(seconds: float, offset: str = "+00:00") -> str:
    """An ISO timestamp ``seconds`` after 09:00:00 UTC, written in ``offset``."""
    from datetime import datetime, timedelta

    base = datetime.fromisoformat(T0) + timedelta(seconds=seconds)
    zone = datetime.fromisoformat(f"2026-01-01T00:00:00{offset}").tzinfo
    return base.astimezone(zone).isoformat()


def grade(run_id: str, core: str = "correct", fulfil: str = "full", err: str = "no",
          **kw: Any) -> Grade:
    return Grade.model_validate({"run_id": run_id, "core_conclusion": core,
                                 "request_fulfilment": fulfil, "material_error": err,
                                 "grader": "g", **kw})


def plain(task_id: str, **fields: Any) -> Any:
    return make_task(task_id, weights=None, track=None, pack=None, **fields)


@pytest.mark.parametrize(
    ("status", "core", "fulfil", "err", "expected"),
    [
        ("timeout", "correct", "full", "no", "unresolved"),  # not delivered first
        ("delivered", "correct", "full", "yes", "material_error"),
        ("delivered", "material_error", "full", "no", "material_error"),
        ("delivered", "pending", "full", "yes", "material_error"),  # error before pending
        ("delivered", "correct", "pending", "no", "pending_verification"),
        ("delivered", "correct", "full", "pending", "pending_verification"),
        ("delivered", "correct", "full", "no", "resolved"),
        ("delivered", "correct", "partial", "no", "partially_resolved"),
        ("delivered", "correct", "not_met", "no", "unresolved"),
        ("delivered", "no_gradable_conclusion", "full", "no", "unresolved"),
    ],
)
def test_grading_order(status: str, core: str, fulfil: str, err: str, expected: str) -> None:
    data = EvalData.from_records([plain("q")], [make_run("r", "q", status=status)],
                                 grades=[grade("r", core, fulfil, err)])
    assert run_grades(data.runs, data.grades)["grade"].item() == expected


def test_no_grade_record_is_pending_and_ungraded() -> None:
    data = EvalData.from_records([plain("q")], [make_run("r", "q"),
                                                make_run("f", "q", repeat=2, status="failed",
                                                         error="HTTP 500")])
    g = run_grades(data.runs, data.grades).sort("run_id")
    assert g["grade"].to_list() == ["unresolved", "pending_verification"]
    assert g["grade_reason"].to_list() == ["failed: HTTP 500", "no grade record"]
    s = standard_results(data).setups["A"].grades.model_dump()
    assert s["ungraded"] == 1


def test_rates_over_n_with_not_run_and_stable_resolution(approx: Any) -> None:
    tasks = [plain("q1"), plain("q2"), plain("q3")]
    runs = [make_run(f"r{t}{r}", f"q{t}", repeat=r) for t in (1, 2) for r in (1, 2)]
    runs.append(make_run("r31", "q3", repeat=1))  # q3 repeat 2 never ran
    grades = [grade("r11"), grade("r12"), grade("r21"), grade("r22", fulfil="partial"),
              grade("r31", err="yes", claim="18.4 for 0.184", evidence="row 7", effect="10x")]
    s = standard_results(EvalData.from_records(tasks, runs, grades=grades))
    g = s.setups["A"].grades.model_dump()
    assert g["N"] == 6 and g["repeats"] == 2
    assert g["counts"] == {"resolved": 3, "partially_resolved": 1, "material_error": 1,
                           "unresolved": 0, "pending_verification": 0, "not_run": 1}
    assert sum(g["counts"].values()) == g["N"]
    assert g["rates"]["resolved"] == approx(0.5)
    assert g["graded_coverage"] == approx(5 / 6)
    assert g["stable_resolution"] == {"count": 1, "questions": 3, "repeats": 2}
    assert g["material_errors"][0]["claim"] == "18.4 for 0.184"
    assert g["material_errors"][0]["effect"] == "10x"


def test_material_errors_share_one_set_of_set_fields_and_stay_apart() -> None:
    """The records hold one shared set of their set fields (all of them; the memory of
    317,000 records, docs/scaling.md), and otherwise behave as records validated one by
    one: the same values, the same fields set, a field set on one changes no other."""
    tasks = [plain("q1")]
    runs = [make_run(f"r{r}", "q1", repeat=r) for r in (1, 2, 3)]
    grades = [grade("r1", err="yes", claim="18.4 for 0.184", evidence="row 7"),
              grade("r2", err="yes", effect="10x"), grade("r3")]
    errors = standard_results(EvalData.from_records(tasks, runs, grades=grades)
                              ).setups["A"].grades.material_errors
    assert [e.run_id for e in errors] == ["r1", "r2"]
    one_by_one = [MaterialError.model_validate(e.model_dump()) for e in errors]
    assert errors == one_by_one
    assert [e.model_fields_set for e in errors] == [e.model_fields_set for e in one_by_one]
    assert errors[0].model_fields_set is errors[1].model_fields_set
    errors[0].claim = "changed"
    assert errors[1].claim is None and one_by_one[0].claim == "18.4 for 0.184"
    assert errors[1].model_fields_set == set(MaterialError.model_fields)


def test_repeats_option_and_single_repeat() -> None:
    data = EvalData.from_records([plain("q")], [make_run("r", "q")], grades=[grade("r")])
    g = standard_results(data).setups["A"].grades.model_dump()
    assert g["stable_resolution"]["count"] is None  # R = 1
    g = standard_results(data, repeats=3).setups["A"].grades.model_dump()
    assert g["N"] == 3 and g["counts"]["not_run"] == 2
    assert g["stable_resolution"]["count"] == 0


def test_reruns_never_count_and_are_listed() -> None:
    runs = [make_run("r1", "q", status="failed"),
            make_run("r1b", "q", attempt_of="r1",
                     events={"submitted": at(0), "received": at(3)})]
    s = standard_results(EvalData.from_records([plain("q")], runs, grades=[grade("r1b")]))
    g = s.setups["A"].grades.model_dump()
    assert g["counts"]["resolved"] == 0 and g["counts"]["unresolved"] == 1
    assert [r.model_dump() for r in s.reruns["A"]] == [
        {"run_id": "r1b", "attempt_of": "r1", "task_id": "q", "repeat": 1, "status": "delivered",
         "grade": "resolved", "e2e_s": 3.0}]
    assert s.setups["A"].timing.model_dump()["e2e_s"]["n"] == 0  # the re-run is not a sample


def test_summary_statistics_by_hand() -> None:
    assert summarize([4.0, 1.0, 3.0, 2.0]).model_dump() == {
        "n": 4, "mean": 2.5, "p50": 2.5, "p90": 4.0, "min": 1.0, "max": 4.0}
    values = [float(v) for v in range(1, 11)]  # ceil(0.9 * 10) = 9th value
    assert summarize(values).p90 == 9.0
    assert summarize([*values, 11.0]).p90 == 10.0  # ceil(9.9) = 10th
    assert summarize([5.0]).p90 == 5.0
    assert summarize([]).model_dump() == {
        "n": 0, "mean": None, "p50": None, "p90": None, "min": None, "max": None}
    # ceil(0.9 * 30) = 27th of 1,1,1,2,2,2,...: the value 9
    assert nearest_rank(sorted([float(v) for v in range(1, 11)] * 3), 0.9) == 9.0


def test_timing_by_hand() -> None:
    runs = [
        make_run("a1", "q1", 1, events={"submitted": at(0), "first_token": at(1),
                                        "received": at(10, "+02:00")}),
        make_run("a2", "q1", 2, events={"submitted": at(0), "received": at(20)}),
        make_run("a3", "q2", 1, events={"submitted": at(0), "first_progress": at(0.5),
                                        "received": at(4)}),
        make_run("a4", "q2", 2, events={"submitted": at(0)}),  # delivered, no received
        make_run("a5", "q3", 1, status="timeout",
                 events={"submitted": at(0), "stopped": at(120)}),
        make_run("a6", "q3", 2, status="cancelled",
                 events={"submitted": at(0), "stopped": at(30)}),
        make_run("a7", "q4", 1, events={"submitted": at(0), "received": at(8),
                                        "platform_created": at(1), "platform_sent": at(6)}),
    ]
    tasks = [plain(f"q{i}") for i in range(1, 5)]
    t = standard_results(EvalData.from_records(tasks, runs)).setups["A"].timing.model_dump()
    assert t["e2e_s"] == {"n": 4, "mean": 10.5, "p50": 9.0, "p90": 20.0, "min": 4.0,
                          "max": 20.0}
    assert t["delivered"] == 5 and t["missing_timestamps"] == 1
    assert t["per_question_median_s"] == {"q1": 15.0, "q2": 4.0, "q4": 8.0}
    assert t["events"]["first_token"]["n"] == 1 and t["events"]["first_token"]["mean"] == 1.0
    assert t["events"]["first_progress"]["n"] == 1
    assert t["platform_e2e_s"]["n"] == 1 and t["platform_e2e_s"]["mean"] == 5.0
    assert "proxy" in t["platform_e2e_s"]["label"]
    assert t["timeouts"]["count"] == 1 and t["timeouts"]["rate"] == 1 / 7  # attempted: 7
    assert t["timeouts"]["waiting_s"]["mean"] == 120.0
    assert t["failures"]["count"] == 1 and t["failures"]["waiting_s"]["max"] == 30.0
    assert t["failures"]["attempted"] == 8 - 1  # q4 repeat 2 was never run


def tool_runs() -> list[Any]:
    """Setup A's runs on q: a records call c1 twice (same id, name and no arguments: 3
    records, 2 calls, 09:00:01 to 09:00:09), b exposes no call, c exposes no tool events, d
    failed after one call."""
    calls = [{"id": "c1", "name": "sql", "started": at(1), "ended": at(2)},
             {"id": "c1", "name": "sql", "started": at(3), "ended": at(4)},  # id reused
             {"id": "c2", "name": "search", "started": at(5), "ended": at(9)}]
    return [make_run("a", "q", 1, tool_calls=calls),
            make_run("b", "q", 2, tool_calls=[]),
            make_run("c", "q", 3, tool_calls=None),
            make_run("d", "q", 4, status="failed", tool_calls=[{"id": "x", "name": "sql"}])]


def test_tool_calls_decided_per_call_with_coverage() -> None:
    data = EvalData.from_records([plain("q")], tool_runs())
    tc = standard_results(data).setups["A"].tool_calls.model_dump()
    assert tc["delivered"] == 3 and tc["runs_exposed"] == 2
    assert tc["coverage"] == 2 / 3
    assert tc["per_run"]["n"] == 2 and tc["per_run"]["mean"] == 1.0  # (2 + 0) / 2
    assert tc["calls"] == 2 and tc["recorded_calls"] == 3
    assert tc["runs_with_duplicate_records"] == 1
    assert tc["by_name"] == {"search": {"calls": 1, "runs": 1}, "sql": {"calls": 1, "runs": 1}}
    assert tc["span_s"]["n"] == 1 and tc["span_s"]["mean"] == 8.0
    assert "reasoning and waiting" in tc["span_s"]["label"]


def test_each_tool_call_record_is_decided_per_call() -> None:
    """§4 "Tool calls", hand-computed: of 8 records, the second repeats the first's id, name
    and arguments (one call recorded twice); the same id with other arguments or another
    name is another call; ids equal to the tool's name and empty ids name no call, so each
    of their records is a call: 7 calls of 8 records."""
    calls = [{"id": "c1", "name": "sql", "arguments": '{"q":1}'},
             {"id": "c1", "name": "sql", "arguments": '{"q":1}'},   # recorded again
             {"id": "c1", "name": "sql", "arguments": '{"q":2}'},   # other arguments
             {"id": "c1", "name": "search", "arguments": '{"q":1}'},  # another tool
             {"id": "bash", "name": "bash"}, {"id": "bash", "name": "bash"},
             {"id": "", "name": "sql"}, {"id": "", "name": "sql"}]
    data = EvalData.from_records([plain("q")], [make_run("a", "q", 1, tool_calls=calls)])
    tc = standard_results(data).setups["A"].tool_calls
    assert (tc.calls, tc.recorded_calls, tc.runs_with_duplicate_records) == (7, 8, 1)
    assert tc.per_run.mean == 7.0 and tc.recorded_per_run.mean == 8.0
    assert {k: v.calls for k, v in tc.by_name.items()} == {"bash": 2, "search": 1, "sql": 4}


def test_a_duplicate_record_in_some_runs_does_not_change_how_others_count() -> None:
    """A fifth of the runs carry an identical duplicate record: every run still counts its
    calls, 2 each (mean 2.0; counting records, as a setup-wide switch did, gave 11 / 5 =
    2.2); the records stay beside (2.2) and the warning says 1 of 5 runs."""
    import grade_kit as gk

    runs = []
    for k in range(1, 6):
        calls = [{"id": f"r{k}-1", "name": "sql", "arguments": '{"q":1}'},
                 {"id": f"r{k}-2", "name": "sql", "arguments": '{"q":2}'}]
        if k == 1:
            calls.append(dict(calls[0]))
        runs.append(make_run(f"r{k}", "q", k, tool_calls=calls))
    ev = gk.evaluate([plain("q")], runs, repeats=5)
    tc = ev.results.setups["A"].tool_calls
    assert (tc.per_run.mean, tc.recorded_per_run.mean) == (2.0, 2.2)
    assert ev.summary.frame.row(0, named=True)["tool_calls_per_run"] == 2.0
    (warned,) = [w for w in ev.warnings.get_column("message") if "more than once" in w]
    assert "1 of 5 runs (20%)" in warned and "10 calls of 11 records" in warned


def test_common_subset_recomputes_each_setup() -> None:
    tasks = [plain("q1"), plain("q2")]
    runs, grades = [], []
    for setup, latency in (("A", 10), ("B", 4)):
        for q in ("q1", "q2"):
            rid = f"{setup}-{q}"
            runs.append(make_run(rid, q, setup=setup,
                                 events={"submitted": at(0), "received": at(latency)}))
            ok = not (setup == "B" and q == "q2")
            grades.append(grade(rid, fulfil="full" if ok else "not_met"))
    s = standard_results(EvalData.from_records(tasks, runs, grades=grades), seed=7)
    assert s.common.tasks == ["q1"]
    assert s.common.setups["B"].grades.N == 1
    assert s.common.setups["B"].grades.counts.resolved == 1
    assert s.common.setups["A"].timing.e2e_s.mean == 10.0
    by_subset = {c.subset: c for c in s.comparisons}
    assert [(c.baseline, c.compared, c.seed) for c in s.comparisons] == [("A", "B", 7)] * 2
    common = by_subset["common"]
    assert common.questions == 1
    figures = {f.metric: f for f in common.figures}
    e2e = figures["e2e_median_s"]
    assert e2e.label == "measured" and e2e.mean_diff_b_minus_a == -6.0
    assert e2e.ci95 is None  # one question: no interval
    assert figures["e2e_seconds_over_plan"].label == "conditional estimate"
    assert figures["e2e_seconds_over_plan"].value == -12.0
    assert figures["questions outside the subset"].label == "untested direction"
    # On all questions both setups ran: q1 (10 vs 4) and q2 (10 vs 4), paired n = 2.
    every = {f.metric: f for f in by_subset["all"].figures}
    assert by_subset["all"].questions == 2
    assert every["e2e_median_s"].n_questions == 2
    assert every["e2e_median_s"].mean_diff_b_minus_a == -6.0
    assert every["e2e_median_s"].ci95 is not None
    assert every["e2e_median_s"].ci95.low == every["e2e_median_s"].ci95.high == -6.0
    assert "questions outside the subset" not in every


def test_bootstrap_is_seeded_and_brackets_the_mean() -> None:
    import numpy as np

    from grade_kit.standard import bootstrap_mean_ci

    diffs = np.array([-5.0, -6.0, -4.0, -7.0, -5.5])
    first = bootstrap_mean_ci(diffs, seed=3)
    assert first == bootstrap_mean_ci(diffs, seed=3)
    assert first is not None and first[0] <= diffs.mean() <= first[1] < 0


# The resamples are gathered in blocks of 2**16 values: the last block short (1000, 131;
# 3000, 2000), one resample a block (70,000).
# Past the cache's budget (issue 56: 2,000 x 40,000 int64 indices were 640 MB, kept) the
# indices are drawn block by block from the same stream: the same figures either way.
@pytest.mark.parametrize("cached", [True, False])
@pytest.mark.parametrize("n, resamples", [(2, 1), (7, 63), (50, 65), (1000, 131),
                                          (3000, 2000), (70_000, 3)])
def test_bootstrap_is_the_plain_percentile_bootstrap(n: int, resamples: int, cached: bool,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    from grade_kit.standard import bootstrap_mean_ci, compare

    if not cached:
        monkeypatch.setattr(compare, "RESAMPLE_CACHE_BYTES", 0)
    compare.forget_resamples()

    rng = np.random.default_rng(n)
    diffs = rng.normal(size=n) * rng.choice([1e-3, 1.0, 1e6], size=n)
    plain_means = diffs[np.random.default_rng(11).integers(0, n, size=(resamples, n))].mean(
        axis=1)
    alpha = (1 - 0.95) / 2  # as computed from the level (0.025000000000000022)
    low, high = np.quantile(plain_means, [alpha, 1 - alpha])
    assert bootstrap_mean_ci(diffs, seed=11, resamples=resamples) == (float(low), float(high))


def test_slots_frame_lists_the_filled_slots_and_counts_the_rest() -> None:
    s = standard_results(EvalData.from_records([plain("q")], [make_run("r", "q", repeat=2)]))
    assert s.slots.select("repeat", "state").to_dicts() == [
        {"repeat": 2, "state": "pending_verification"}]
    assert s.plan_frame.to_dicts() == [{"setup": "A", "task_id": "q"}]
    counts = s.setups["A"].grades.counts
    assert (counts.not_run, counts.pending_verification) == (1, 1)
    assert isinstance(s.graded, pl.DataFrame)


def test_wilson_interval_by_hand_and_against_scipy() -> None:
    from scipy.stats import binomtest

    from grade_kit.standard import wilson_interval

    assert wilson_interval(0, 0) is None
    zero = wilson_interval(0, 10)
    assert zero is not None and zero.low == 0.0
    # z^2 / (n + z^2) with z = 1.959964: 3.841459 / 13.841459
    assert zero.high == pytest.approx(3.841459 / 13.841459, abs=1e-6)
    half = wilson_interval(5, 10)
    assert half is not None
    assert (half.low, half.high) == (pytest.approx(0.236593, abs=1e-6),
                                     pytest.approx(0.763407, abs=1e-6))
    full = wilson_interval(7, 7)
    assert full is not None and full.high == 1.0
    for k, n in ((0, 1), (1, 1), (3, 17), (84, 200), (199, 200), (1, 1000)):
        ours = wilson_interval(k, n)
        ref = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
        assert ours is not None
        assert ours.low == pytest.approx(ref.low, abs=1e-12)
        assert ours.high == pytest.approx(ref.high, abs=1e-12)


def test_every_rate_carries_its_wilson_interval() -> None:
    tasks = [plain("q1"), plain("q2")]
    runs = [make_run("a", "q1"), make_run("b", "q2")]
    s = standard_results(EvalData.from_records(tasks, runs, grades=[grade("a")]))
    g = s.setups["A"].grades
    assert g.N == 2 and g.counts.resolved == 1 and g.counts.pending_verification == 1
    assert set(g.wilson95) == set(g.rates.model_dump())
    ci = g.wilson95["resolved"]
    assert ci is not None and ci.low < 0.5 < ci.high
    assert "not independent" in g.interval_note


def test_suites_plan_each_setup_on_the_task_sets_it_ran() -> None:
    tasks = [plain("a1", suite="alpha"), plain("a2", suite="alpha"), plain("b1", suite="beta"),
             plain("p")]
    runs = [make_run("r1", "a1", setup="A"), make_run("r4", "a2", setup="A"),
            make_run("r2", "b1", setup="B"), make_run("r3", "p", setup="B")]
    s = standard_results(EvalData.from_records(tasks, runs, grades=[grade("r1"), grade("r2")]))
    # A ran suite alpha: planned on a1, a2 and the suite-less p; B on b1 and p.
    a, b = s.setups["A"].grades, s.setups["B"].grades
    assert (a.N, a.counts.resolved, a.counts.pending_verification, a.counts.not_run) == (
        3, 1, 1, 1)
    assert s.plan.unranked == {}  # A ran 2 of 3 slots: over the 50% threshold
    assert (b.N, b.counts.resolved, b.counts.pending_verification, b.counts.not_run) == (2, 1, 1, 0)
    assert s.common.tasks == []  # no task is planned for, and resolved by, both


def test_plan_records_whether_r_was_inferred() -> None:
    data = EvalData.from_records([plain("q")], [make_run("r", "q", repeat=2)])
    inferred = standard_results(data).plan
    assert (inferred.repeats, inferred.inferred) == (2, True)
    given = standard_results(data, repeats=4).plan
    assert (given.repeats, given.inferred) == (4, False)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=7),
                min_size=1, max_size=5))
def test_per_question_median_is_the_median_of_stats(groups: list[list[float]]) -> None:
    from grade_kit.standard import median, per_question_median

    e2e = pl.DataFrame(
        [{"run_id": f"{g}-{i}", "setup": "A", "task_id": f"q{g}", "seconds": v}
         for g, values in enumerate(groups) for i, v in enumerate(values)],
        schema={"run_id": pl.String, "setup": pl.String, "task_id": pl.String,
                "seconds": pl.Float64})
    got = dict(per_question_median(e2e).select("task_id", "e2e_median_s").iter_rows())
    assert got == {f"q{g}": median(values) for g, values in enumerate(groups)}


def test_a_stray_repeat_is_beyond_the_plan_and_costs_nothing() -> None:
    tasks = [plain(f"q{i}") for i in range(20)]
    runs = [make_run(f"r{i}-{k}", f"q{i}", repeat=k) for i in range(20) for k in (1, 2)]
    runs.append(make_run("stray", "q0", repeat=1_000_000))
    s = standard_results(EvalData.from_records(tasks, runs))
    assert (s.plan.repeats, s.plan.inferred) == (2, True)  # 1 of 20 pairs: a stray
    g = s.setups["A"].grades
    assert (g.N, g.beyond_plan, g.counts.not_run) == (40, 1, 0)
    # given explicitly, a large R is counted, not listed: N = 20 x 10^6
    big = standard_results(EvalData.from_records(tasks, runs), repeats=1_000_000)
    assert big.setups["A"].grades.N == 20_000_000
    assert big.setups["A"].grades.counts.not_run == 20_000_000 - 41
    assert big.slots.height == 41


def test_r_is_the_largest_repeat_more_than_five_percent_of_pairs_reach() -> None:
    tasks = [plain(f"q{i}") for i in range(10)]
    # 10 pairs: two reach 4, the rest 2 -> 2 of 10 (20%) reach 4, so R = 4
    runs = [make_run(f"r{i}-{k}", f"q{i}", repeat=k) for i in range(10)
            for k in range(1, (5 if i < 2 else 3))]
    assert standard_results(EvalData.from_records(tasks, runs)).plan.repeats == 4
    with pytest.raises(ValueError, match="repeats must be between 1 and 1,000,000"):
        standard_results(EvalData.from_records(tasks, runs), repeats=0)


def test_events_in_an_impossible_order_are_never_samples() -> None:
    runs = [make_run("ok", "q", 1, events={"submitted": at(0), "received": at(4)}),
            make_run("back", "q", 2, events={"submitted": at(10), "first_token": at(2),
                                             "received": at(3)}),
            make_run("slow", "q", 3, status="timeout",
                     events={"submitted": at(5), "stopped": at(1)})]
    t = standard_results(EvalData.from_records([plain("q")], runs)).setups["A"].timing
    assert t.e2e_s.model_dump() == {"n": 1, "mean": 4.0, "p50": 4.0, "p90": 4.0, "min": 4.0,
                                    "max": 4.0}
    assert (t.delivered, t.missing_timestamps, t.e2e_out_of_order) == (2, 0, 1)
    assert t.events["first_token"].n == 0
    assert t.timeouts.count == 1 and t.timeouts.waiting_s.n == 0
    assert sorted((v.run_id, v.first, v.then, v.seconds) for v in t.out_of_order) == [
        ("back", "submitted", "first_token", -8.0), ("back", "submitted", "received", -7.0),
        ("slow", "submitted", "stopped", -4.0)]
    ev = gk.evaluate([plain("q")], runs)
    assert ev.runs.filter(pl.col("run_id") == "back")["e2e_s"].item() is None


@pytest.mark.parametrize("stamp", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_timestamps_out_of_range_in_utc_reject_the_line(stamp: str) -> None:
    from grade_kit.reading.records import load_runs

    loaded = load_runs([{"run_id": "r", "setup": "A", "task_id": "q", "repeat": 1,
                         "status": "delivered", "response": {},
                         "events": {"submitted": stamp}}])
    (reject,) = loaded.rejected
    assert reject.field == "events.submitted"
    assert "out of range in UTC" in reject.error


def test_extreme_but_valid_instants_give_finite_seconds() -> None:
    runs = [make_run("r", "q", events={"submitted": "0001-01-01T00:00:00+00:00",
                                       "received": "9999-12-31T23:59:59+00:00"})]
    t = standard_results(EvalData.from_records([plain("q")], runs)).setups["A"].timing
    assert t.e2e_s.n == 1 and t.e2e_s.max == pytest.approx(315537897599.0)


def _per_question(values: dict[str, list[float]]) -> pl.DataFrame:
    return pl.DataFrame([{"setup": s, "task_id": f"q{i}", "composite": v}
                         for s, vs in values.items() for i, v in enumerate(vs)],
                        schema={"setup": pl.String, "task_id": pl.String,
                                "composite": pl.Float64})


def test_questions_needed_uses_the_normal_quantiles_scipy_gives() -> None:
    """z = z_(1 - alpha/2) + z_power from the standard library's NormalDist, within 1e-15 of
    scipy's norm.ppf (the oracle) at the default and other levels."""
    from scipy.stats import norm

    from grade_kit.standard.ranking import questions_needed

    for alpha, power in ((0.05, 0.8), (0.01, 0.9), (0.1, 0.95)):
        out = questions_needed(_per_question({"A": [0.0, 0.0, 0.0], "B": [1.0, 2.0, 3.0]}),
                               alpha=alpha, power=power).row(0, named=True)
        z = float(norm.ppf(1 - alpha / 2) + norm.ppf(power))
        assert out["formula"].endswith(f"({z:.4f} x sd / |mean|)^2")
        assert out["questions_needed"] == math.ceil((z * 1.0 / 2.0) ** 2)


def test_questions_needed_by_hand() -> None:
    from grade_kit.standard.ranking import questions_needed

    # diffs 1, 2, 3: mean 2, sd 1; z = 1.959964 + 0.841621; n = ceil((2.801585 / 2)^2) = 2
    out = questions_needed(_per_question({"A": [0.0, 0.0, 0.0], "B": [1.0, 2.0, 3.0]}))
    row = out.row(0, named=True)
    assert (row["baseline"], row["compared"], row["questions"]) == ("A", "B", 3)
    assert row["mean_diff"] == 2.0 and row["sd_diff"] == 1.0
    assert row["questions_needed"] == 2 and row["label"] == "conditional estimate"
    same = questions_needed(_per_question({"A": [1.0, 2.0], "B": [1.0, 2.0]})).row(
        0, named=True)
    assert same["mean_diff"] == 0.0 and same["questions_needed"] is None


def test_rank_intervals_separate_or_not() -> None:
    from grade_kit.standard.ranking import rank_intervals

    clear = rank_intervals(_per_question({"A": [0.9] * 10, "B": [0.1] * 10}), seed=1)
    assert clear.select("setup", "rank", "rank_low", "rank_high").rows() == [
        ("A", 1.0, 1.0, 1.0), ("B", 2.0, 2.0, 2.0)]
    tied = rank_intervals(_per_question({"A": [0.5] * 4, "B": [0.5] * 4}))
    assert set(tied.get_column("rank").to_list()) == {1.5}
    rnd = __import__("random").Random(4)
    noisy = rank_intervals(_per_question({"A": [rnd.random() for _ in range(12)],
                                          "B": [rnd.random() for _ in range(12)]}), seed=2)
    assert noisy.get_column("rank_low").min() == 1.0
    assert noisy.get_column("rank_high").max() == 2.0
    assert all(low < high for low, high in zip(noisy["rank_low"], noisy["rank_high"],
                                                strict=True))  # not separable
    assert rank_intervals(_per_question({"A": []})).is_empty()


def test_timing_states_the_clocks_and_warns_when_there_are_several() -> None:
    runs = [make_run("a", "q", 1, events={"submitted": at(0), "received": at(2)},
                     metadata={"clock": {"source": "machine A", "precision": "1 us"}}),
            make_run("b", "q", 2, events={"submitted": at(0), "received": at(3)},
                     metadata={"clock": {"source": "machine B", "precision": "1 ms"}}),
            make_run("c", "q", 3, events={"submitted": at(0), "received": at(4)})]
    ev = gk.evaluate([plain("q")], runs)
    assert ev.results.setups["A"].timing.clocks == {"machine A": 1, "machine B": 1,
                                                    "unrecorded": 1}
    assert any("come from 2 clocks" in w.message for w in ev.results.warnings)
    one = gk.evaluate([plain("q")], runs[:1])
    assert not any("clocks" in w.message for w in one.results.warnings)


def test_channel_overhead_is_its_own_metric_and_leaves_e2e_only_when_asked() -> None:
    from grade_kit.standard.timing import E2E_DEFINITION, E2E_WITHOUT_CHANNEL

    base = "2026-11-30T10:00:00+00:00"

    def at(seconds: float) -> str:
        return f"2026-11-30T10:00:{seconds:09.6f}+00:00"

    runs = [make_run("r1", findings=["x"], events={
                "submitted": base, "received": at(10.0),
                "channel_overhead_started": at(8.0), "channel_overhead_ended": at(9.5)}),
            make_run("r2", task_id="t1", repeat=2, findings=["x"], events={
                "submitted": base, "received": at(4.0)})]
    tasks = [make_task()]
    plain = gk.evaluate(tasks, runs).results.setups["A"].timing
    assert plain.e2e_definition == E2E_DEFINITION
    assert (plain.e2e_s.n, plain.e2e_s.min, plain.e2e_s.max) == (2, 4.0, 10.0)
    assert plain.channel_overhead_s is not None
    assert (plain.channel_overhead_s.n, plain.channel_overhead_s.mean) == (1, 1.5)
    assert "channel_overhead_started" not in plain.events
    without = gk.evaluate(tasks, runs, exclude_channel_overhead=True).results.setups["A"].timing
    assert without.e2e_definition == E2E_WITHOUT_CHANNEL
    # r1: 10.0 - 1.5 = 8.5; r2 reports no overhead and keeps 4.0
    assert (without.e2e_s.n, without.e2e_s.min, without.e2e_s.max) == (2, 4.0, 8.5)


def test_e2e_without_channel_overhead_is_the_exact_difference() -> None:
    # 531.969375 s E2E, 408.538600 s of overhead: 123.430775 s exactly (subtracting the two
    # rounded figures gives 123.43077500000004); an overhead in an impossible order is none.
    def at(micros: int) -> str:
        return (datetime(2026, 11, 30, 10, tzinfo=UTC) + timedelta(microseconds=micros)
                ).isoformat()

    runs = [make_run("r1", findings=["x"], events={
                "submitted": at(0), "received": at(531_969_375),
                "channel_overhead_started": at(1_000_000),
                "channel_overhead_ended": at(409_538_600)}),
            make_run("r2", repeat=2, findings=["x"], events={
                "submitted": at(0), "received": at(5_000_000),
                "channel_overhead_started": at(3_000_000),
                "channel_overhead_ended": at(2_000_000)})]
    timing = gk.evaluate([make_task()], runs,
                         exclude_channel_overhead=True).results.setups["A"].timing
    assert (timing.e2e_s.n, timing.e2e_s.min, timing.e2e_s.max) == (2, 5.0, 123.430775)


def test_the_scorecard_lists_the_first_material_errors_of_each_setup_and_counts_all() -> None:
    from grade_kit.views.markdown import MATERIAL_ERRORS_LISTED

    runs = [make_run(f"r{r:02d}", "q1", repeat=r) for r in range(1, 31)]
    grades = [grade(f"r{r:02d}", err="yes", claim=f"claim {r:02d}") for r in range(1, 31)]
    ev = gk.evaluate([plain("q1")], runs, grades=grades)
    errors = ev.results.setups["A"].grades.material_errors
    assert len(errors) == 30 and MATERIAL_ERRORS_LISTED == 25
    text = ev.scorecard_markdown()
    assert "30 material errors; the first 25 of each setup are listed" in text
    listed = [e.claim for e in errors[:25]]
    assert all(f"| {claim} |" in text for claim in listed)
    assert not any(f"| {e.claim} |" in text for e in errors[25:])
    few = gk.evaluate([plain("q1")], runs[:3], grades=grades[:3]).scorecard_markdown()
    assert "material errors; the first" not in few and "| claim 03 |" in few


def test_grade_frame_summarises_every_setup_at_once() -> None:
    """§4 "Rates", hand-computed: A and B planned on q1 and q2 with R = 2, C on nothing."""
    from grade_kit.standard import grade_frame, grade_summaries, wilson_interval
    from grade_kit.standard.grade_rates import planned_slots, setup_plan

    runs = [make_run("a-q1-1", "q1", 1, "A"), make_run("a-q1-2", "q1", 2, "A"),
            make_run("a-q2-1", "q2", 1, "A"), make_run("a-q2-2", "q2", 2, "A"),
            make_run("a-q1-3", "q1", 3, "A"),  # beyond R
            make_run("b-q1-1", "q1", 1, "B"), make_run("b-q2-1", "q2", 1, "B",
                                                       status="timeout")]
    grades = [grade("a-q1-1"), grade("a-q1-2"), grade("a-q1-3"),
              grade("a-q2-1", "material_error", err="yes", claim="x"),
              grade("b-q1-1", fulfil="partial", needs_more_information=True)]
    data = EvalData.from_records([plain("q1"), plain("q2")], runs, grades=grades)
    graded = run_grades(data.runs, data.grades)
    plan = setup_plan(data.runs, data.tasks)
    slots = planned_slots(graded, plan, 2)
    rows, errors = grade_frame(plan, slots, graded, ["A", "B", "C"], 2)
    by = {row["setup"]: row for row in rows.iter_rows(named=True)}
    a, b, c = by["A"], by["B"], by["C"]
    assert (a["N"], a["questions"], a["repeats"]) == (4, 2, 2)
    assert [a[s] for s in ("resolved", "partially_resolved", "material_error", "unresolved",
                           "pending_verification", "not_run")] == [2, 0, 1, 0, 1, 0]
    assert (a["resolved_rate"], a["material_error_rate"], a["not_run_rate"]) == (0.5, 0.25, 0.0)
    assert (a["graded_coverage"], a["run_coverage"]) == (0.75, 1.0)
    assert (a["ungraded"], a["beyond_plan"], a["needs_more_information"],
            a["stable_resolved"]) == (1, 1, 0, 1)
    # clustered (§4 "Rates"): q1 2 of 2, q2 0 of 2 resolved: SE² = (1 + 1) / 16, design
    # effect 2, n_effective 2, so Wilson's interval of 1/2 over 2 (not over N = 4)
    ci = wilson_interval(1, 2)
    assert ci is not None and (a["resolved_ci_low"], a["resolved_ci_high"]) == (ci.low, ci.high)
    assert (a["resolved_design_effect"], a["resolved_icc"], a["resolved_n_effective"]) == (
        2.0, 1.0, 2.0)
    assert a["interval_basis"] == "clustered by question, R = 2"
    assert [b[s] for s in ("resolved", "partially_resolved", "material_error", "unresolved",
                           "pending_verification", "not_run")] == [0, 1, 0, 1, 0, 2]
    assert (b["graded_coverage"], b["run_coverage"], b["needs_more_information"],
            b["stable_resolved"], b["ungraded"]) == (0.5, 0.5, 1, 0, 0)
    assert (c["N"], c["resolved"], c["not_run"], c["stable_resolved"]) == (0, 0, 0, 0)
    assert c["resolved_rate"] is None and c["resolved_ci_low"] is None
    assert c["graded_coverage"] is None and c["run_coverage"] is None
    assert errors.select("setup", "run_id", "claim").rows() == [("A", "a-q2-1", "x")]
    typed = grade_summaries(rows, errors)
    assert typed["A"].material_errors[0].run_id == "a-q2-1"
    alone = grade_frame(plan.filter(pl.col("setup") == "A"), slots.filter(pl.col("setup") == "A"),
                        graded, ["A"], 2)
    assert grade_summaries(*alone)["A"] == typed["A"]  # a setup summarised alone: the same
    assert all(sum(s.counts.model_dump().values()) == s.N for s in typed.values())
    # with R = 1 stable resolution is not measured
    once = grade_frame(plan, planned_slots(graded, plan, 1), graded, ["A"], 1)[0]
    assert once.get_column("stable_resolved").to_list() == [None]


def test_per_question_rates_are_divided_exactly() -> None:
    """§4 "Rates": question q<k> has k of R = 5 slots resolved, its rate is k / 5 as Python
    divides (polars divides a column by a literal as k x (1/5): 3 -> 0.6000000000000001);
    rank intervals and questions needed read this column."""
    runs, grades = [], []
    for k in range(6):
        for repeat in range(1, 6):
            run_id = f"q{k}-{repeat}"
            runs.append(make_run(run_id, f"q{k}", repeat))
            grades.append(grade(run_id) if repeat <= k else grade(run_id, fulfil="not_met"))
    data = EvalData.from_records([plain(f"q{k}") for k in range(6)], runs, grades=grades)
    per_question = standard_results(data, repeats=5).per_question.sort("task_id")
    assert per_question.get_column("resolved_rate").to_list() == [k / 5 for k in range(6)]
    assert per_question.get_column("unresolved_rate").to_list() == [
        (5 - k) / 5 for k in range(6)]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcd"),
                          st.one_of(st.none(), st.integers(-5, 5).map(float),
                                    st.floats(-1e6, 1e6, allow_nan=False))),
                max_size=40))
def test_summary_frame_is_summarize_per_group(samples: list[tuple[str, float | None]]) -> None:
    """§4 "Timing": the summary of every group at once equals summarize of each group (a
    group with only nulls, or none at all, has n = 0)."""
    from grade_kit.standard.stats import summary_frame, summary_of

    frame = pl.DataFrame(samples, schema={"g": pl.String, "x": pl.Float64}, orient="row")
    groups = pl.DataFrame({"g": ["d", "c", "b", "a", "z"]})
    out = summary_frame(frame, ["g"], "x", groups=groups, prefix="e_")
    assert out.get_column("g").to_list() == ["d", "c", "b", "a", "z"]
    for row in out.iter_rows(named=True):
        values = [x for g, x in samples if g == row["g"] and x is not None]
        assert summary_of(row, "e_") == summarize(values)


def test_tool_call_frame_counts_every_setup_by_one_rule() -> None:
    """§4 "Tool calls", hand-computed: A records one call twice (counted once), B records two
    calls, C has no run."""
    from grade_kit.standard import tool_call_frame, tool_call_summaries
    from grade_kit.standard.grade_rates import planned_slots, setup_plan

    runs = [*tool_runs(), make_run("e", "q", 1, setup="B", tool_calls=[
        {"id": "k1", "name": "sql", "started": at(0)}, {"id": "k2", "name": "sql"}])]
    data = EvalData.from_records([plain("q")], runs)
    plan = setup_plan(data.runs, data.tasks)
    slots = planned_slots(run_grades(data.runs, data.grades), plan, 4)
    rows, by_name = tool_call_frame(data.runs, data.tool_calls, slots, ["A", "B", "C"])
    by = {row["setup"]: row for row in rows.iter_rows(named=True)}
    a, b, c = by["A"], by["B"], by["C"]
    assert (a["delivered"], a["runs_exposed"], a["coverage"]) == (3, 2, 2 / 3)
    assert (a["calls"], a["recorded_calls"], a["runs_with_duplicate_records"]) == (2, 3, 1)
    assert (a["per_run_n"], a["per_run_mean"], a["recorded_per_run_mean"]) == (2, 1.0, 1.5)
    # exposed runs of every status (a, b and the failed d): 2, 0, 1 calls
    assert (a["attempted_runs_exposed"], a["attempted_per_run_n"],
            a["attempted_per_run_mean"], a["attempted_per_run_p50"],
            a["attempted_per_run_p90"]) == (3, 3, 1.0, 1.0, 2.0)
    assert (a["span_s_n"], a["span_s_mean"]) == (1, 8.0)  # 09:00:01 to 09:00:09
    assert (b["per_run_mean"], b["recorded_per_run_mean"], b["coverage"]) == (2.0, 2.0, 1.0)
    assert (b["span_s_n"], b["span_s_mean"]) == (1, 0.0)  # started and last both at 0
    assert (c["delivered"], c["runs_exposed"], c["per_run_n"], c["span_s_n"]) == (0, 0, 0, 0)
    assert c["coverage"] is None and c["per_run_mean"] is None
    assert by_name.rows() == [("A", "search", 1, 1), ("A", "sql", 1, 1), ("B", "sql", 2, 1)]
    typed = tool_call_summaries(rows, by_name)
    assert typed["B"].by_name["sql"].calls == 2 and typed["C"].by_name == {}
    assert typed["A"].span_s.label.startswith("first-to-last")


def test_timing_frame_keeps_each_setups_samples_apart() -> None:
    """§4 "Timing", "Limits", hand-computed: A has one E2E of 10 s and a timeout; B a run
    stopped by a token limit after 5 s and one received before it was submitted; C none."""
    from grade_kit.standard import timing_frame, timing_summaries
    from grade_kit.standard.grade_rates import planned_slots, setup_plan

    runs = [make_run("a1", "q", 1, events={"submitted": at(0), "received": at(10)}),
            make_run("a2", "q", 2, status="timeout",
                     events={"submitted": at(0), "stopped": at(30)}),
            make_run("b1", "q", 1, setup="B", status="limit",
                     limit={"type": "token", "value": 100.0},
                     events={"submitted": at(0), "stopped": at(5)}),
            make_run("b2", "q", 2, setup="B", events={"submitted": at(4), "received": at(1)})]
    data = EvalData.from_records([plain("q")], runs)
    slots = planned_slots(run_grades(data.runs, data.grades),
                          setup_plan(data.runs, data.tasks), 2)
    frames = timing_frame(data.runs, data.events, slots, ["A", "B", "C"])
    by = {row["setup"]: row for row in frames.rows.iter_rows(named=True)}
    a, b, c = by["A"], by["B"], by["C"]
    assert (a["attempted"], a["delivered"], a["e2e_n"], a["e2e_mean"]) == (2, 1, 1, 10.0)
    assert (a["timeouts"], a["timeout_rate"], a["timeouts_waiting_mean"]) == (1, 0.5, 30.0)
    assert (a["limits"], a["limit_types"], a["outcome_n"]) == (0, None, 1)
    assert (b["e2e_n"], b["e2e_out_of_order"], b["missing_timestamps"]) == (0, 1, 0)
    assert (b["limits"], b["limit_rate"], b["limit_types"]) == (1, 0.5, "token 1")
    assert (b["outcome_n"], b["outcome_mean"]) == (1, 5.0)  # the limit run's stop only
    assert (c["attempted"], c["timeout_rate"], c["e2e_n"]) == (0, None, 0)
    assert frames.out_of_order.select("setup", "run_id", "seconds").rows() == [
        ("B", "b2", -3.0)]
    typed = timing_summaries(frames)
    assert typed["B"].limits.by_type == {"token": 1} and typed["A"].limits.by_type == {}
    assert [v.run_id for v in typed["B"].out_of_order] == ["b2"] and not typed["A"].out_of_order
    assert typed["A"].per_question_median_s == {"q": 10.0}
    assert typed["B"].per_question_median_s == {} and typed["C"].timeouts.rate is None


def test_questions_needed_says_no_difference_for_rounding_noise() -> None:
    """§5 "Planning": a difference within the rounding of its figures is no difference,
    never a huge count (it overflowed an Int64 column at 12 and 20 setups)."""
    noisy = pl.DataFrame({"setup": ["a"] * 3 + ["b"] * 3, "task_id": ["1", "2", "3"] * 2,
                          "resolved_rate": [0.1, 0.2, 0.3, 0.1, 0.2, 0.30000000000000004]})
    row = questions_needed(noisy, "resolved_rate").row(0, named=True)
    assert row["questions_needed"] is None and row["verdict"].startswith("no difference")
    real = noisy.with_columns(resolved_rate=pl.Series([0.1, 0.2, 0.3, 0.1, 0.2, 0.4]))
    row = questions_needed(real, "resolved_rate").row(0, named=True)
    # mean 1/30, sd = sqrt(((1/30)^2 x 2 + (2/30)^2) / 2) = 0.0577; (2.8016 x 0.0577 x 30)^2
    assert row["questions_needed"] == 24 and row["verdict"] is None


def test_questions_needed_weighs_questions_against_repeats_by_hand() -> None:
    """§5 "Planning": 4 paired questions measured at R = 2; A's slots 2, 0, 1, 1, B's 2, 2,
    1, 2. Differences 0, 1, 0, 0.5: mean 0.375, sd² = 0.6875 / 3. Within: w_A = (0 + 0 +
    0.5 + 0.5) / 4 = 0.25, w_B = 0.125; between = sd² - 0.375 / 2 = 1/24. At R = 1 the spread
    is 1/24 + 0.375, at R = 4 it is 1/24 + 0.09375."""
    from statistics import NormalDist

    per_question = pl.DataFrame({
        "setup": ["a"] * 4 + ["b"] * 4, "task_id": ["1", "2", "3", "4"] * 2,
        "resolved_slots": [2, 0, 1, 1, 2, 2, 1, 2],
        "resolved_rate": [1.0, 0.0, 0.5, 0.5, 1.0, 1.0, 0.5, 1.0]})
    plan = questions_needed(per_question, "resolved_rate", repeats=(1, 4))
    z = NormalDist().inv_cdf(0.975) + NormalDist().inv_cdf(0.8)
    rows = {r["repeats"]: r for r in plan.iter_rows(named=True)}
    for r, variance in ((1, 1 / 24 + 0.375), (4, 1 / 24 + 0.09375)):
        assert rows[r]["sd_at_repeats"] == pytest.approx(math.sqrt(variance), abs=1e-12)
        needed = math.ceil(z * z * variance / 0.375**2)
        assert (rows[r]["questions_needed"], rows[r]["runs"]) == (needed, 2 * needed * r)
    assert (rows[1]["questions_needed"], rows[4]["questions_needed"]) == (24, 8)
    with pytest.raises(ValueError, match="grade rate"):
        questions_needed(per_question.rename({"resolved_rate": "composite"}), "composite",
                            repeats=(1,))
    one = questions_needed(per_question.with_columns(
        resolved_slots=pl.col("resolved_rate").round().cast(pl.Int64)), "resolved_rate",
        repeats=(2,), measured_repeats=1)
    assert one.get_column("verdict").to_list() == [
        "measured at R = 1: the repeats' share of the spread is unknown"]
    single = questions_needed(per_question.filter(pl.col("task_id") == "1"),
                                 "resolved_rate")
    assert single.get_column("verdict").to_list() == ["1 paired question: no spread to plan from"]


def test_an_unranked_setup_has_its_coverage_and_counts_never_a_rate() -> None:
    """§4 "Coverage": B ran 1 of 10 questions (R = 1), below half its planned slots. Its
    grades row keeps N 10, resolved 0, not run 9 and coverage 0.1, but no rate, interval or
    design effect; it has no common-subset row and no reliability (A resolved 6 of 10; the
    common subset is A's 6)."""
    questions = [plain(f"q{i}") for i in range(10)]
    runs = [make_run(f"a{i}", f"q{i}", setup="A") for i in range(10)]
    runs.append(make_run("b0", "q0", setup="B"))
    grades = [grade(f"a{i}", "correct" if i < 6 else "no_gradable_conclusion",
                    "full" if i < 6 else "not_met") for i in range(10)]
    grades.append(grade("b0", "no_gradable_conclusion", "not_met"))
    ev = gk.evaluate(questions, runs, grades=grades, repeats=1)
    rows = {(r["setup"], r["subset"]): r for r in ev.grades.iter_rows(named=True)}
    b = rows[("B", "all")]
    assert (b["N"], b["resolved"], b["not_run"], b["run_coverage"]) == (10, 0, 9, 0.1)
    assert all(b[c] is None for c in b if c.endswith(
        ("_rate", "_ci_low", "_ci_high", "_design_effect", "_icc", "_n_effective")))
    assert rows[("A", "all")]["resolved_rate"] == 0.6
    assert ("B", "common") not in rows and rows[("A", "common")]["N"] == 6
    assert set(ev.reliability.get_column("setup").to_list()) == {"A"}
    assert set(ev.results.common_subset.setups) == {"A"}
    assert ev.results.setups["B"].grades.rates.resolved is None
    assert ev.results.setups["B"].grades.wilson95["resolved"] is None
