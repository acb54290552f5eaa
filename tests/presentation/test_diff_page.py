"""diff.html as a reader opens it, in headless Chromium with every request blocked
(docs/methodology.md §5 "Against an earlier evaluation"): two evaluations of 20 setups with
40-plus-character names, written by ``grade-kit diff --out``: the headline first, the
changes chart drawn, the flips listed with both answers on demand, and nothing wider than
the window."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import grade_kit as gk
from grade_kit.cli import main
from tests.specs import CODE_HINTS, twenty_setups

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
def test_diff_html_at_twenty_setups(tmp_path: Path) -> None:
    from tests.devtools import Browser

    folders = []
    for seed, name in ((7, "before"), (8, "after")):
        data = tmp_path / f"data-{name}"
        twenty_setups(data, seed=seed)
        folder = tmp_path / name
        gk.evaluate(data / "tasks.jsonl", data / "runs.jsonl",
                    grades=data / "grades.jsonl").write(folder)
        folders.append(folder)
    out = tmp_path / "diff"
    assert main(["diff", *map(str, folders), "--out", str(out)]) == 0
    d = gk.diff(*folders)
    assert {p.name for p in out.iterdir()} == {"diff.html", "diff.ipynb", "summary.parquet",
                                               "flips.parquet", "questions.parquet",
                                               "setups.parquet"}
    assert CHROMIUM is not None
    browser = Browser(CHROMIUM, tmp_path / "profile")
    try:
        browser.call("Emulation.setDeviceMetricsOverride", width=1400, height=900,
                     deviceScaleFactor=1, mobile=False)
        browser.open(out / "diff.html", settle_s=6.0)
        text = browser.evaluate("document.body.innerText")
        assert d.headline in text
        assert not CODE_HINTS.findall(text)  # no code, no widget instructions
        assert text.index(d.headline) < text.index("Changes: candidate - baseline")
        marks = browser.evaluate("document.querySelectorAll('.gk-chart svg.marks "
                                 "[role=\"graphics-symbol\"]').length")
        assert marks > 0  # the changes chart is drawn, offline
        flips = d.flips_frame
        assert flips.height > 0
        rows = browser.evaluate(
            "Array.from(document.querySelectorAll('details.gk-answers')).length")
        assert rows >= min(flips.height, 200)  # one per repeat of each flip shown
        browser.evaluate("document.querySelector('details.gk-answers').open = true")
        opened = browser.evaluate("document.querySelector('details.gk-answers').innerText")
        assert "baseline" in opened and "candidate" in opened and "answer" in opened
        width = browser.evaluate("document.documentElement.scrollWidth")
        assert width <= 1400, width
        widths = browser.evaluate(
            "Array.from(document.querySelectorAll('.gk-table-wrap, .gk-chart svg, table'))"
            ".map(e => e.getBoundingClientRect().right)")
        assert widths and max(widths) <= 1400, max(widths)
        assert browser.errors() == []
    finally:
        browser.close()
