"""Fixture packs, ground truth, the task suite and the simulated setups (issue: fixtures)."""

from __future__ import annotations

import csv
import filecmp
import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from grade_kit.cli import main
from grade_kit.demo import build_fixtures
from grade_kit.reading.task_files import load_tasks
from tests.paths import FIXTURES


def same_tree(a: Path, b: Path) -> bool:
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.diff_files or cmp.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    return not mismatch and not errors and all(same_tree(a / d, b / d) for d in cmp.common_dirs)


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fixtures")
    build_fixtures(root)
    return root


def test_regeneration_is_byte_identical_to_the_checked_in_fixtures(
        regenerated: Path, tmp_path: Path) -> None:
    assert main(["demo", "fixtures", "--out", str(tmp_path / "a")]) == 0
    assert main(["demo", "fixtures", "--out", str(tmp_path / "b")]) == 0
    assert same_tree(tmp_path / "a", tmp_path / "b")
    assert same_tree(tmp_path / "a", FIXTURES / "packs")
    for part in ("packs", "tasks", "runs"):
        assert same_tree(regenerated / part, FIXTURES / part), part


def read(pack: str, name: str) -> list[dict[str, str]]:
    with (FIXTURES / "packs" / pack / name).open(newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize("pack", ["northside", "riverbend"])
def test_ground_truth_recomputed_independently(pack: str) -> None:
    truth = json.loads((FIXTURES / "packs" / pack / "ground_truth.json").read_text())
    sessions = read(pack, "sessions.csv")
    by_month: dict[str, list[str]] = defaultdict(list)
    for s in sessions:
        by_month[s["date"][:7]].append(s["status"])
    for month, statuses in by_month.items():
        rate = statuses.count("cancelled") / len(statuses)
        assert truth["sessions"]["by_month"][month]["cancel_rate"] == pytest.approx(rate, abs=1e-6)
    by_tutor: dict[str, list[str]] = defaultdict(list)
    for s in sessions:
        by_tutor[s["tutor_id"]].append(s["status"])
    completion = {t: v.count("completed") / len(v) for t, v in by_tutor.items()}
    weakest = min(completion, key=lambda t: (completion[t], t))
    assert truth["tutors"]["lowest_completion"] == {
        "tutor_id": weakest, "completion_rate": pytest.approx(completion[weakest], abs=1e-6)}
    group_of = {s["session_id"]: s["group_id"] for s in sessions}
    present: dict[str, list[int]] = defaultdict(list)
    for a in read(pack, "attendance.csv"):
        present[group_of[a["session_id"]]].append(int(a["present"]))
    attendance = {g: sum(v) / len(v) for g, v in present.items()}
    low = min(attendance, key=lambda g: (attendance[g], g))
    assert truth["groups"]["lowest_attendance"]["group_id"] == low
    students = read(pack, "students.csv")
    for flag in ("ell", "iep", "frl"):
        n = sum(1 for s in students if s[flag] == "Y")
        assert truth["subgroups"][flag]["n"] == n
        assert truth["subgroups"][flag]["suppressed"] == (n < 10)
        assert (truth["subgroups"][flag]["mean_growth"] is None) == (n < 10)
    minutes = {s["session_id"]: int(s["minutes"]) for s in sessions}
    hours: dict[str, float] = defaultdict(float)
    for a in read(pack, "attendance.csv"):
        if a["present"] == "1":
            hours[a["student_id"]] += minutes[a["session_id"]] / 60
    scores = {r["student_id"]: float(r["post_score"]) - float(r["pre_score"])
              for r in read(pack, "assessments.csv")}
    ids = sorted(scores)
    r = statistics.correlation([hours[i] for i in ids], [scores[i] for i in ids])
    assert truth["dosage"]["growth_r"] == pytest.approx(r, abs=1e-6)


def test_built_in_signals() -> None:
    north = json.loads((FIXTURES / "packs" / "northside" / "ground_truth.json").read_text())
    river = json.loads((FIXTURES / "packs" / "riverbend" / "ground_truth.json").read_text())
    assert 2.4 <= north["sessions"]["oct_vs_sep_cancel_ratio"] <= 2.8  # about 2.6x
    assert river["sessions"]["oct_vs_sep_cancel_ratio"] < 1.5
    for truth in (north, river):
        subs = truth["subgroups"]
        assert {subs["ell"]["suppressed"], subs["iep"]["suppressed"]} == {True, False}
        assert 0.2 < truth["dosage"]["growth_r"] < 0.6
        assert truth["tutors"]["lowest_completion"]["completion_rate"] < 0.7
        assert truth["sessions"]["completion_rate"] > 0.75
    dictionary = read("northside", "data_dictionary.csv")
    for name in ("schools", "tutors", "groups", "students", "sessions", "attendance",
                 "assessments", "studies"):
        header = (FIXTURES / "packs" / "northside" / f"{name}.csv").read_text().splitlines()[0]
        documented = {d["column"] for d in dictionary if d["file"] == f"{name}.csv"}
        assert set(header.split(",")) == documented, name


def test_task_suite() -> None:
    loaded = load_tasks(FIXTURES / "tasks")
    assert not loaded.rejected and not loaded.warnings
    tasks = loaded.records
    counts: dict[tuple[str, int], int] = defaultdict(int)
    for t in tasks:
        counts[(str(t.pack), int(t.track or 0))] += 1
        assert t.weights is not None
        assert abs(sum(t.weights.values()) - 1) <= 1e-6
        assert t.gold_facts and t.gold_insights and t.required_limitations
        assert t.forbidden_claims and t.evidence and t.judge_guidance
        if t.track == 1:
            assert 0.40 <= t.weights["grounding_accuracy"] <= 0.45
        if t.track == 4:
            assert 0.20 <= t.weights["calibration_limitation_handling"] <= 0.25
        if t.track == 3:
            assert t.evidence.get("strict") is True
    assert len(tasks) >= 40
    assert all(counts[(p, k)] >= 4 for p in ("northside", "riverbend") for k in range(1, 6))
    assert any(c.calibration for t in tasks for c in t.gold_insights)
    raw = (FIXTURES / "tasks" / "northside" / "northside-t1-oct-cancellations.yaml").read_text()
    assert "ground_truth: sessions.by_month.2026-10.cancel_rate" in raw


@pytest.fixture(scope="module")
def demo_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("demo")
    assert main(["score", str(FIXTURES / "tasks"), str(FIXTURES / "runs"), "--judge", "rules",
                 "--strict", "--out", str(out)]) == 0
    return dict(json.loads((out / "results.json").read_text()))


def test_setups_rank_in_their_intended_order(demo_results: dict[str, Any]) -> None:
    overall = {s: v["overall"] for s, v in demo_results["setups"].items()}
    assert overall["careful"]["composite"] > overall["hasty"]["composite"] > \
        overall["erratic"]["composite"]
    assert overall["careful"]["composite"] < 1.0  # careful is not perfect
    for setup in overall.values():
        assert all(v is not None for v in setup["dimensions"].values())
        assert setup["tasks"] == 40


def test_a_notebook_fetches_the_demo_suite_when_given_no_tasks(tmp_path: Path) -> None:
    from grade_kit.demo import tasks_or_demo

    fixtures = FIXTURES
    assert tasks_or_demo(None, None) == (fixtures / "tasks", fixtures / "packs")
    assert tasks_or_demo(None, tmp_path) == (fixtures / "tasks", tmp_path)
    assert tasks_or_demo(tmp_path / "t", None) == (tmp_path / "t", None)  # no tool
