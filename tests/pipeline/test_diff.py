"""This evaluation against an earlier one (docs/methodology.md §5 "Against an earlier
evaluation"), on small hand-computed cases: the flips, the paired tests and their Holm
family, what one side lacks, and the gate's exit codes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import grade_kit as gk
from grade_kit.cli import main
from grade_kit.schema import Grade, InputError
from tests.conftest import make_run, make_task
from tests.paths import REALDATA


def grade(run_id: str, resolved: bool) -> Grade:
    return Grade.model_validate({
        "run_id": run_id, "grader": "hand", "material_error": "no",
        "core_conclusion": "correct" if resolved else "no_gradable_conclusion",
        "request_fulfilment": "full" if resolved else "not_met"})


def evaluation(resolved: dict[str, Sequence[bool]], questions: Sequence[str],
               prompts: dict[str, str] | None = None, **options: Any) -> gk.Evaluation:
    """Each setup's runs of ``questions``, repeat by repeat resolved or not as given (a
    setup missing a question's entry did not run it)."""
    tasks = [make_task(q, prompt=(prompts or {}).get(q, f"question {q}")) for q in questions]
    runs, grades = [], []
    for setup, outcomes in resolved.items():
        for q, per_repeat in zip(questions, outcomes, strict=False):
            for r, ok in enumerate(per_repeat if isinstance(per_repeat, tuple)
                                   else (per_repeat,), start=1):
                run_id = f"{setup}-{q}-{r}"
                runs.append(make_run(run_id, q, r, setup=setup, findings=["a finding"]))
                grades.append(grade(run_id, ok))
    return gk.evaluate(tasks, runs, grades=grades, **options)


QS = [f"q{i:02d}" for i in range(1, 13)]


def test_twelve_regressions_at_one_repeat_are_tested_by_mcnemar_and_holm() -> None:
    """R = 1, 12 questions resolved in the baseline and none in the candidate: 12 discordant
    pairs, exact McNemar p = 2 x 0.5^12 = 2/4096. Each figure's Holm family is that figure
    across the matched setups: one setup, so Holm p = p = 2/4096 (the other figures of the
    page, unresolved at 2/4096 and two at 1, do not weaken it)."""
    before = evaluation({"A": [True] * 12}, QS)
    after = evaluation({"A": [False] * 12}, QS)
    d = gk.diff(before, after)
    row = d.summary.filter((pl.col("metric") == "resolved_rate") & pl.col("k").is_null()).row(
        0, named=True)
    assert (row["baseline"], row["candidate"], row["change"]) == (1.0, 0.0, -1.0)
    assert row["p_value"] == 2 / 4096 and row["p_holm"] == 2 / 4096
    assert row["verdict"] == "regressed" and row["n_questions"] == 12
    assert row["ci_high"] < 0  # the interval agrees with the verdict
    assert d.headline.startswith("1 setup regressed, 0 improved, 0 unchanged")
    flips = d.flips
    assert flips.height == 12 and set(flips.get_column("change")) == {"regressed"}
    first = flips.row(0, named=True)
    assert (first["task_id"], first["baseline_grades"], first["candidate_grades"],
            first["baseline_run_ids"], first["candidate_run_ids"]) == (
        "q01", "resolved", "unresolved", "A-q01-1", "A-q01-1")
    assert d.verdict_counts() == {"regressed": 1, "improved": 0, "unchanged": 0}
    (line,) = d.regressions(0.5)
    assert line.startswith("regression: A -> A: resolved_rate 1.0000 -> 0.0000 (-1.0000")
    assert d.regressions(1.0) == []  # fell by exactly the margin: not more
    assert d.regressions(0.5, alpha=0.0004) == []  # Holm p 0.000488 is not below 0.0004
    answers = d.answers("A-q01-1", "A-q01-1")
    assert answers == ("a finding", "a finding") or all("a finding" in a for a in answers)


def test_repeats_are_tested_by_the_exact_sign_flip_over_questions() -> None:
    """R = 2, three questions resolved 2, 2, 2 times in the baseline and 0, 1, 2 in the
    candidate: d = -2, -1, 0 slots; the sign flips give S in {3, 1, -1, -3} equally, so
    p = P(|S| >= 3) = 1/2. Flips: q01 1 -> 0 and q02 1 -> 0.5 (q03 unchanged)."""
    qs = QS[:3]
    before = evaluation({"A": [(True, True)] * 3}, qs)
    after = evaluation({"A": [(False, False), (True, False), (True, True)]}, qs)
    d = gk.diff(before, after)
    row = d.summary.filter((pl.col("metric") == "resolved_rate") & pl.col("k").is_null()).row(
        0, named=True)
    assert row["p_value"] == 0.5 and row["change"] == pytest.approx(-0.5)
    assert row["verdict"] == "no significant change"
    assert row["ci_low"] < 0 < row["ci_high"]  # no verdict: the interval spans 0
    pass2 = d.summary.filter(pl.col("k") == 2).row(0, named=True)
    assert pass2["metric"] == "pass_hat_k" and pass2["p_value"] == 0.5  # d = -1, -1, 0
    shown = d.flips.select("task_id", "baseline_resolved", "candidate_resolved",
                           "candidate_grades").rows()
    assert shown == [("q01", 1.0, 0.0, "unresolved, unresolved"),
                     ("q02", 1.0, 0.5, "resolved, unresolved")]
    assert d.headline.startswith("0 setups regressed, 0 improved, 1 unchanged")


def test_what_one_side_lacks_is_listed_and_a_changed_question_kept_out() -> None:
    """Baseline q01-q04 by A and B; candidate q02-q05 by A and C, q02 asked another way.
    Paired: q03 and q04 only; q02 changed; q01 baseline only; q05 candidate only. B and C
    are listed apart, or compared when matched."""
    before = evaluation({"A": [True] * 4, "B": [True] * 4}, QS[:4])
    after = evaluation({"A": [False] * 4, "C": [False] * 4}, QS[1:5],
                       prompts={"q02": "question q02, reworded"})
    d = gk.diff(before, after)
    status = dict(d.questions.rows())
    assert status == {"q01": "baseline only", "q02": "changed", "q03": "paired",
                      "q04": "paired", "q05": "candidate only"}
    assert dict(d.question_counts.rows()) == {"baseline only": 1, "candidate only": 1,
                                              "changed": 1, "paired": 2}
    assert d.pairs == [("A", "A")]
    row = d.summary.filter(pl.col("metric") == "resolved_rate").row(0, named=True)
    assert row["n_questions"] == 2  # q03 and q04: the changed q02 is not tested
    said = " | ".join(d.notes)
    for words in ("1 setup(s) only in the baseline, not compared: B",
                  "1 setup(s) only in the candidate, not compared: C",
                  "1 question(s) whose text or gold changed, kept out of the tests: q02",
                  "1 question(s) only in the baseline: q01",
                  "1 question(s) only in the candidate: q05"):
        assert words in said, said
    matched = gk.diff(before, after, match={"B": "C"})
    assert matched.pairs == [("A", "A"), ("B", "C")]
    assert set(matched.setups.get_column("status")) == {"matched"}
    with pytest.raises(InputError, match="baseline setup 'Z'"):
        gk.diff(before, after, match={"Z": "C"})


def test_a_candidate_with_lower_coverage_is_said_first() -> None:
    before = evaluation({"A": [True] * 4}, QS[:4])
    after = evaluation({"A": [True] * 3}, QS[:4])  # q04 not run: 3 of 4 planned slots
    d = gk.diff(before, after)
    assert any("ran fewer of its planned slots (75.0% against 100.0% in the baseline)" in n
               for n in d.notes), d.notes
    assert d.summary.filter(pl.col("metric") == "resolved_rate").row(
        0, named=True)["n_questions"] == 3


def test_nothing_in_common_differing_repeats_and_a_tampered_folder_are_refused(
        tmp_path: Path) -> None:
    before = evaluation({"A": [True] * 2}, QS[:2])
    with pytest.raises(InputError, match="no setup in common"):
        gk.diff(before, evaluation({"B": [True] * 2}, QS[:2]))
    with pytest.raises(InputError, match="no unchanged question in common"):
        gk.diff(before, evaluation({"A": [True] * 2}, QS[2:4]))
    with pytest.raises(InputError, match=r"R = 1 .* R = 2"):
        gk.diff(before, evaluation({"A": [(True, True)] * 2}, QS[:2]))
    folder = tmp_path / "scored"
    before.write(folder)
    results = folder / "results.json"
    results.write_text(results.read_text().replace('"A"', '"B"', 1))
    with pytest.raises(InputError, match=r"results\.json"):
        gk.diff(folder, before)


def test_one_setup_against_another_of_the_same_evaluation() -> None:
    ev = evaluation({"old": [True] * 12, "new": [False] * 12}, QS)
    d = gk.diff(ev, ev, match={"old": "new"})
    assert d.pairs == [("old", "new")]
    assert d.setups.select("setup", "candidate_setup", "status").rows() == [
        ("old", "new", "matched"), ("new", None, "not matched"), (None, "old", "not matched")]
    assert not any("only in the" in n for n in d.notes)  # both are in both: not "only"
    assert any(n.startswith("2 setup(s) on both sides that match= pairs with another")
               for n in d.notes), d.notes
    row = d.summary.filter((pl.col("setup") == "old") & (pl.col("metric") == "resolved_rate")
                           ).row(0, named=True)
    assert row["candidate_setup"] == "new" and row["verdict"] == "regressed"


def test_the_gate_exits_1_on_a_regression_and_0_otherwise(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, cand = tmp_path / "base", tmp_path / "cand"
    evaluation({"A": [True] * 12, "B": [True] * 12}, QS).write(base)
    evaluation({"A": [False] * 12, "B": [True] * 12}, QS).write(cand)
    capsys.readouterr()
    assert main(["diff", str(base), str(cand), "--fail-on-regression", "0.5"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert [line for line in out if line.startswith("regression:")] == [
        "regression: A -> A: resolved_rate 1.0000 -> 0.0000 (-1.0000, margin 0.5) over 12 "
        "paired questions, Holm p 0.000977 < 0.05"]  # 2 x 2/4096: A and B, resolved rate
    assert out[0].startswith("diff: base -> cand: 1 setup regressed, 0 improved, 1 unchanged")
    assert main(["diff", str(base), str(cand), "--fail-on-regression", "1"]) == 0
    assert main(["diff", str(cand), str(base), "--fail-on-regression", "0"]) == 0  # improved
    assert main(["diff", str(base), str(cand)]) == 0  # no gate asked for
    for bad in (["--fail-on-regression", "-0.1"], ["--fail-on-regression", "x"],
                ["--fail-on-regression", "0.1", "--metric", "composite"],
                ["--fail-on-regression", "0.1", "--alpha", "1"]):
        with pytest.raises(SystemExit) as exit_:
            main(["diff", str(base), str(cand), *bad])
        assert exit_.value.code == 2
    assert main(["diff", str(base), str(tmp_path / "missing")]) == 1


def test_the_gate_sees_an_eighteen_point_fall_on_the_real_tau_bench_log(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The real tau-bench gpt-4o airline log (50 questions x 4 trials, resolved 84/200 =
    0.42) against a copy where the 10 questions it resolved every trial lose every trial and
    one it never resolved gains all four: 0.24 (48/200). Per question d = -4 (ten) and +4
    (one); the sign flips give S = 4 (2k - 11), k of 11 signs kept, and |S| >= 36 exactly
    when k <= 1 or k >= 10: p = (1 + 11 + 11 + 1) / 2^11 = 24/2048 = 0.01171875. The gate's
    family is the resolved rate across the one matched setup, so Holm p = p < 0.05: exit 1,
    however many other figures the page tests (unresolved, partial, material, pass^2..4)."""
    import json

    source = REALDATA / "tau_bench_gpt4o_airline" / "gpt-4o-airline.json"
    records = json.loads(source.read_text(encoding="utf-8"))
    by_task: dict[Any, list[float]] = {}
    for record in records:
        by_task.setdefault(record["task_id"], []).append(record["reward"])
    always = [t for t, rewards in by_task.items() if all(r == 1 for r in rewards)]
    never = sorted(t for t, rewards in by_task.items() if all(r == 0 for r in rewards))
    assert len(always) == 10 and len(never) == 14
    for record in records:
        if record["task_id"] in always:
            record["reward"] = 0.0
        elif record["task_id"] == never[0]:
            record["reward"] = 1.0
    (tmp_path / "base").mkdir()
    (tmp_path / "cand").mkdir()
    (tmp_path / "base" / source.name).write_bytes(source.read_bytes())
    (tmp_path / "cand" / source.name).write_text(json.dumps(records), encoding="utf-8")
    d = gk.diff(tmp_path / "base" / source.name, tmp_path / "cand" / source.name)
    row = d.summary.filter((pl.col("metric") == "resolved_rate") & pl.col("k").is_null()).row(
        0, named=True)
    assert (row["baseline"], row["candidate"]) == (0.42, 0.24)
    assert row["p_value"] == 24 / 2048 and row["p_holm"] == 24 / 2048
    assert row["verdict"] == "regressed" and row["ci_high"] < 0
    capsys.readouterr()
    assert main(["diff", str(tmp_path / "base" / source.name),
                 str(tmp_path / "cand" / source.name), "--fail-on-regression", "0.05"]) == 1
    out = capsys.readouterr().out
    assert "Holm p 0.0117 < 0.05" in out
    assert out.startswith(f"diff: base/{source.name} -> cand/{source.name}: ")  # told apart


def test_clustered_by_pack_the_tests_flip_packs() -> None:
    """R = 1, four questions in two packs, resolved before and not after. By question: 4
    discordant questions, McNemar p = 2/16. By pack: units d = -2, -2, S in {4, 0, 0, -4},
    p = P(|S| >= 4) = 1/2."""
    tasks = [make_task(q, pack=pack, prompt=f"question {q}")
             for q, pack in (("q1", "p1"), ("q2", "p1"), ("q3", "p2"), ("q4", "p2"))]

    def scored(ok: bool) -> gk.Evaluation:
        runs = [make_run(f"A-{t.task_id}", t.task_id, findings=["x"]) for t in tasks]
        return gk.evaluate(tasks, runs, grades=[grade(r.run_id, ok) for r in runs])

    before, after = scored(True), scored(False)

    def p_value(**options: Any) -> float:
        summary = gk.diff(before, after, **options).summary
        return float(summary.filter(pl.col("metric") == "resolved_rate")
                     .get_column("p_value").item())

    assert p_value() == 2 / 16
    assert p_value(cluster="pack") == 0.5


def costed(dollars: dict[str, float]) -> gk.Evaluation:
    """Twelve questions, R = 1, all resolved; each setup's runs cost its logged dollars."""
    tasks = [make_task(q, prompt=f"question {q}") for q in QS]
    runs = [make_run(f"{s}-{q}", q, 1, setup=s, findings=["a finding"],
                     usage={"model": "m", "total_cost": cost})
            for s, cost in dollars.items() for q in QS]
    return gk.evaluate(tasks, runs, grades=[grade(r.run_id, True) for r in runs])


def test_the_cost_gate_fires_on_a_measured_rise_past_the_ratio(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A's runs go from $0.01 to $0.02 on all 12 questions (x2, every resample +0.01), B's
    stay at $0.01: --fail-on-cost-increase 1.5 names A and exits 1; 2 does not (x2 is not
    more than x2)."""
    base, cand = tmp_path / "base", tmp_path / "cand"
    costed({"A": 0.01, "B": 0.01}).write(base)
    costed({"A": 0.02, "B": 0.01}).write(cand)
    capsys.readouterr()
    assert main(["diff", str(base), str(cand), "--fail-on-cost-increase", "1.5"]) == 1
    lines = [line for line in capsys.readouterr().out.splitlines()
             if line.startswith("cost increase:")]
    assert lines == ["cost increase: A -> A: $0.01 -> $0.02 per run (x2 > x1.5) over 12 "
                     "paired questions, 95% interval of the change [+0.01, +0.01]"]
    assert main(["diff", str(base), str(cand), "--fail-on-cost-increase", "2"]) == 0
    assert main(["diff", str(cand), str(base), "--fail-on-cost-increase", "1"]) == 0
    with pytest.raises(SystemExit) as exit_:
        main(["diff", str(base), str(cand), "--fail-on-cost-increase", "0.9"])
    assert exit_.value.code == 2
    d = gk.diff(base, cand)
    row = d.summary.filter((pl.col("metric") == "cost_per_run")
                           & (pl.col("setup") == "A")).row(0, named=True)
    assert (row["baseline"], row["candidate"]) == (0.01, 0.02)
    assert row["verdict"] != "no clear change"
