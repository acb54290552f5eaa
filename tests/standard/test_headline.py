"""The headline (docs/methodology.md §5 "The headline") and one answer to "is it
significant": hand-computed McNemar and Holm figures on a constructed evaluation."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grade_kit as gk
from grade_kit.standard import rank_intervals


def _evaluation(resolved: dict[str, set[int]], questions: int = 20) -> gk.Evaluation:
    tasks = [{"task_id": f"q{i:02d}", "prompt": f"question {i}"} for i in range(questions)]
    runs: list[dict[str, Any]] = []
    grades: list[dict[str, Any]] = []
    for setup, solved in resolved.items():
        for i in range(questions):
            run_id = f"{setup}-{i}"
            runs.append({"run_id": run_id, "setup": setup, "task_id": f"q{i:02d}",
                         "repeat": 1, "status": "delivered", "response": {"text": "x"}})
            ok = i in solved
            grades.append({"run_id": run_id, "grader": "hand",
                           "core_conclusion": "correct" if ok else "incorrect",
                           "request_fulfilment": "full" if ok else "not_met",
                           "material_error": "no"})
    return gk.evaluate(tasks, runs, grades=grades)


def test_the_headline_is_the_adjusted_tests_answer() -> None:
    ev = _evaluation({"A": set(range(20)), "B": set(range(8)), "C": set(range(6))})
    view = ev.headline
    text = repr(view)
    assert text.startswith("A has the highest resolved rate, 1.000 [0.839, 1.000] of N = 20;"
                           " next is B, 0.400")
    # the interval is McNemar's test inverted at its Holm level: p = 2/2^12, p_holm =
    # 2 x 2/2^12 (second of three), so 1 - 0.05 x p / p_holm = 97.5% (brute force of the
    # inversion: tests/standard/test_significance.py)
    assert ("On the 20 questions both ran, the resolved rate of A is higher by 0.600 "
            "(interval [+0.333, +0.875] at 97.5%, the paired test's Holm level) than that of B "
            "(paired test, Holm-adjusted p < 0.001): a significant lead.") in text
    assert "1. A; 2. B, C." in text
    rows = view.table.frame.to_dicts()
    assert [(r["group"], r["setup"]) for r in rows] == [(1, "A"), (2, "B"), (2, "C")]
    # Holm by hand: A-C 3 x 2/2^14; A-B max(that, 2 x 2/2^12) = 4/4096; B-C 0.5
    assert rows[1]["p_holm_vs_best"] == 4 / 4096
    assert rows[2]["p_holm_vs_best"] == pytest.approx(3 * 2 / 2**14, abs=1e-18)
    # one answer: the comparisons table says "better" exactly where the headline's test does
    resolved = {(c.baseline, c.compared): f for c in ev.results.comparisons
                if c.subset == "all" for f in c.figures if f.metric == "resolved_rate"}
    assert resolved[("A", "B")].direction == "B worse than A"
    assert resolved[("A", "C")].direction == "C worse than A"
    assert resolved[("B", "C")].p_holm == 0.5 and resolved[("B", "C")].direction is None


def test_a_lead_the_adjusted_test_does_not_confirm_is_called_a_tie() -> None:
    """5 questions: A resolves 4, B 1 of them: McNemar b = 3, c = 0, p = 2/8 = 0.25."""
    ev = _evaluation({"A": {0, 1, 2, 3}, "B": {0}}, questions=5)
    text = repr(ev.headline)
    assert "Holm-adjusted p 0.25): not significant at the 0.05 level" in text
    assert "1. A, B." in text
    (figure,) = [f for c in ev.results.comparisons if c.subset == "all"
                 for f in c.figures if f.metric == "resolved_rate"]
    assert figure.p_holm == 0.25 and figure.direction is None


def test_one_setup_and_no_ranked_setup() -> None:
    ev = _evaluation({"A": {0}}, questions=5)
    first = "A is the only ranked setup: resolved 0.200 [0.036, 0.624] of N = 5."
    assert repr(ev.headline).splitlines()[0] == first
    assert ev.headline.table is None  # one setup: the sentence, no table of groups
    html = ev.headline._repr_html_()
    assert "<b>A</b> is the only ranked setup" in html
    # one setup that ran 1 of its 5 planned questions: nothing is ranked
    tasks = [{"task_id": f"q{i}", "prompt": "q"} for i in range(5)]
    runs = [{"run_id": "r", "setup": "B", "task_id": "q0", "repeat": 1,
             "status": "delivered", "response": {"text": "x"}}]
    alone = gk.evaluate(tasks, runs)
    assert repr(alone.headline).splitlines() == [
        "No setup is ranked: each ran less than 50% of its planned slots.",
        "Not ranked, coverage below 50% of the planned slots: B."]


def test_a_rank_from_few_questions_has_no_interval() -> None:
    """3 questions (below MIN_RANK_QUESTIONS = 10): ranks by the mean, no interval, and the
    basis says why; 20 questions: intervals."""
    few = _evaluation({"A": {0, 1, 2}, "B": {0}}, questions=3)
    ranks = rank_intervals(few.standard.per_question, "resolved_rate")
    assert ranks.select("setup", "mean", "rank").rows() == [("A", 1.0, 1.0), ("B", 1 / 3, 2.0)]
    assert ranks.get_column("rank_low").null_count() == 2
    assert ranks.get_column("basis").to_list() == [
        "3 paired questions: fewer than 10, no interval (not a separable ranking)"] * 2
    many = _evaluation({"A": set(range(20)), "B": set(range(8))})
    ranks = rank_intervals(many.standard.per_question, "resolved_rate")
    assert "basis" not in ranks.columns
    assert ranks.get_column("rank_low").to_list() == [1.0, 2.0]


def test_setups_over_other_questions_are_never_tied_or_compared() -> None:
    """Two datasets (suites): A and B ran "x", C ran "y" only. C shares no question with A:
    no margin over it, never in A's group; the margin is over B."""
    tasks = [{"task_id": f"{s}{i}", "prompt": "q", "suite": s} for s in "xy" for i in range(5)]
    runs, grades = [], []
    for setup, suite, solved in (("A", "x", 5), ("B", "x", 4), ("C", "y", 5)):
        for i in range(5):
            run_id = f"{setup}-{i}"
            runs.append({"run_id": run_id, "setup": setup, "task_id": f"{suite}{i}",
                         "repeat": 1, "status": "delivered", "response": {"text": "x"}})
            ok = i < solved
            grades.append({"run_id": run_id, "grader": "hand", "material_error": "no",
                           "core_conclusion": "correct" if ok else "incorrect",
                           "request_fulfilment": "full" if ok else "not_met"})
    ev = gk.evaluate(tasks, runs, grades=grades)
    text = repr(ev.headline)
    # A and C both resolve 5/5 = 1.0 (ties by name: A first); B 0.8
    assert text.splitlines()[0].startswith("A has the highest resolved rate, 1.000")
    assert "next is B, 0.800" in text and "C ran none of them" in text
    # McNemar A-B: b = 1, c = 0, p = 1 (one pair tested: Holm 1) -> tied; C alone
    assert "1. A, B; 2. C." in text


def test_past_four_setups_the_page_lists_each_setups_pair_with_the_best() -> None:
    from grade_kit.presentation import charts
    from grade_kit.views.tables import comparisons_table

    five = _evaluation({name: set(range(k + 1)) for k, name in enumerate("ABCDE")},
                       questions=6)
    order = charts.setup_order(five.grades)
    assert order[0] == "E"  # 5 of 6 resolved
    view = comparisons_table(five.comparisons, "all", order=order)
    pairs = {frozenset(p) for p in view.frame.select("baseline", "compared").rows()}
    assert pairs == {frozenset(("E", s)) for s in "ABCD"}
    assert view.note is not None and view.note.startswith("5 setups: each one's pair with E")
    four = _evaluation({name: set(range(k + 1)) for k, name in enumerate("ABCD")},
                       questions=6)
    every = comparisons_table(four.comparisons, "all", order=charts.setup_order(four.grades))
    assert len({frozenset(p) for p in every.frame.select("baseline", "compared").rows()}) == 6
    assert every.note is None


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 4), st.integers(3, 25), st.integers(0, 2**32 - 1))
def test_every_tested_interval_agrees_with_its_verdict(repeats: int, questions: int,
                                                       seed: int) -> None:
    """§5 "One verdict", end to end on random evaluations (3 setups, R repeats): every tested
    figure's interval excludes 0 exactly when its Holm-adjusted p is below 0.05, and its
    direction is stated exactly then (where the figure has a better side)."""
    import random

    rng = random.Random(seed)
    skill = {"a": rng.random(), "b": rng.random(), "c": rng.random()}
    tasks = [{"task_id": f"q{i:02d}", "prompt": f"question {i}"} for i in range(questions)]
    runs, grades = [], []
    for setup, p in skill.items():
        for i in range(questions):
            for r in range(1, repeats + 1):
                run_id = f"{setup}-{i}-{r}"
                runs.append({"run_id": run_id, "setup": setup, "task_id": f"q{i:02d}",
                             "repeat": r, "status": "delivered", "response": {"text": "x"}})
                ok = rng.random() < p
                grades.append({"run_id": run_id, "grader": "hand",
                               "core_conclusion": "correct" if ok else "incorrect",
                               "request_fulfilment": "full" if ok else "not_met",
                               "material_error": "no"})
    ev = gk.evaluate(tasks, runs, grades=grades, repeats=repeats)
    for comparison in ev.results.comparisons:
        for figure in comparison.figures:
            if figure.p_holm is None:
                continue
            assert figure.ci95 is not None and figure.ci_level is not None
            excludes = figure.ci95.low > 0 or figure.ci95.high < 0
            assert excludes == (figure.p_holm < 0.05), figure
            if figure.metric != "partially_resolved_rate":
                assert (figure.direction is not None) == excludes, figure
