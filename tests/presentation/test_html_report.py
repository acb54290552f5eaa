"""`grade-kit report`: notebooks run by papermill on a real kernel, exported to offline HTML;
checked in headless Chromium with every network request blocked."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from grade_kit.cli import main
from grade_kit.presentation.report import NOTEBOOKS
from tests.paths import EXAMPLE, ROOT

HOSTILE = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">"
TITLE = f"{HOSTILE}, tutoring-mini: {HOSTILE}, careful, hasty · 6 questions x 3 repeats"
"""The report's default title: the evil task's suite and the others' pack, the setups."""
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("report")
    runs = [json.loads(line) for line in (EXAMPLE / "runs.jsonl").read_text().splitlines()
            if line.strip()][:31]
    hostile = dict(runs[0], run_id="evil", setup=HOSTILE, repeat=1)
    hostile["response"] = dict(hostile["response"], key_findings=[HOSTILE],
                               limitations=[HOSTILE], recommendations=[HOSTILE],
                               structured_metrics={HOSTILE: HOSTILE}, text=HOSTILE)
    hostile["tool_calls"] = [{"id": HOSTILE, "name": HOSTILE}]
    hostile["metadata"] = {HOSTILE: HOSTILE}
    failed = dict(runs[0], run_id="evil-failed", setup=HOSTILE, repeat=2, status="failed",
                  error=HOSTILE, response=None)
    (tmp / "runs.jsonl").write_text("\n".join(json.dumps(r) for r in [*runs, hostile, failed])
                                    + "\n")
    # every free-text field of a verdict carries the payload too (grader, judge, reasons,
    # the material error's claim, evidence and effect)
    (tmp / "grades.jsonl").write_text(json.dumps({
        "run_id": "evil", "core_conclusion": "material_error", "request_fulfilment": "full",
        "material_error": "yes", "claim": HOSTILE, "evidence": HOSTILE, "effect": HOSTILE,
        "grader": HOSTILE, "reason": HOSTILE}) + "\n")
    (tmp / "judgements.jsonl").write_text(json.dumps({
        "run_id": "evil", "dimension": "evidence_linkage", "score": 0.5, "judge": HOSTILE,
        "reason": HOSTILE}) + "\n")
    # and a task whose every free-text field carries it, answered by a hostile run
    shutil.copytree(EXAMPLE / "tasks", tmp / "tasks")
    (tmp / "tasks" / "evil.json").write_text(json.dumps({
        "task_id": "evil-task", "prompt": HOSTILE, "reference": HOSTILE, "suite": HOSTILE,
        "metadata": {HOSTILE: HOSTILE}}))
    with (tmp / "runs.jsonl").open("a") as handle:
        handle.write(json.dumps(dict(hostile, run_id="evil-plain", task_id="evil-task"))
                     + "\n")
    out = tmp / "html"
    assert main(["report", str(tmp / "tasks"), str(tmp / "runs.jsonl"), "--judge", "rules",
                 "--grader", "rules", "--grades", str(tmp / "grades.jsonl"),
                 "--judgements", str(tmp / "judgements.jsonl"), "--packs",
                 str(EXAMPLE / "packs"), "-p", "weakest", "1", "--out", str(out)]) == 0
    return out


def test_every_notebook_becomes_an_offline_page(report: Path) -> None:
    index = (report / "index.html").read_text()
    for name in NOTEBOOKS:
        assert f'href="{name}.html"' in index
        page = (report / f"{name}.html").read_text()
        assert page.count("window.vegaEmbed=") == 1  # the chart libraries, inlined once
        assert not re.search(r"<script[^>]+src=", page)  # nothing loaded from anywhere
        assert "cdn.jsdelivr" not in page and "require.min.js" not in page
        assert "gk.evaluate(" not in page  # no code cells
        assert "# Parameters" not in page and "injected-parameters" not in page
        assert "Content-Security-Policy" in page


def test_the_explorer_degrades_to_static_tables(report: Path) -> None:
    page = (report / "explorer.html").read_text()
    assert "the notebook <code>explorer.ipynb</code> filters them" in page
    assert "answers await a grade" not in page  # its own notebook, never a report page
    # no widget view and no widget manager: nothing for the page to fetch or fail on
    assert "widget-view+json" not in page and "html-manager" not in page


def test_a_parameter_changes_the_report(report: Path) -> None:
    page = (report / "scorecard.html").read_text()
    # weakest = 1: one weakest task per setup (careful, hasty, and the hostile setup's)
    weakest = page.split("Weakest tasks", 1)[1].split("<tbody>", 1)[1].split("</tbody>")[0]
    assert weakest.count("<tr>") == 3


def test_model_text_is_escaped_in_every_page(report: Path) -> None:
    for name in NOTEBOOKS:
        page = (report / f"{name}.html").read_text()
        assert "<script>document.title='pwned'</script>" not in page
        assert "<img src=x onerror" not in page


def test_a_failing_cell_names_the_notebook_and_the_cell(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(EXAMPLE / "tasks"), str(EXAMPLE / "runs.jsonl"),
                 "-p", "weakest", "not-a-number", "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert re.search(r"error: scorecard\.ipynb: cell \d+ failed: \w+", err), err
    # a missing input fails before any notebook runs: one line naming the file
    assert main(["report", str(EXAMPLE / "tasks"), str(tmp_path / "missing.jsonl"),
                 "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "missing.jsonl" in err[0] and ".ipynb" not in err[0]


def _notebook(folder: Path, name: str, *sources: str) -> None:
    import nbformat

    cells = [nbformat.v4.new_code_cell("scored = None", metadata={"tags": ["parameters"]}),
             *(nbformat.v4.new_code_cell(source) for source in sources)]
    notebook = nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": {
        "name": "python3", "language": "python", "display_name": "Python 3"}})
    nbformat.write(notebook, folder / f"{name}.ipynb")


def test_notebooks_sharing_a_kernel_see_nothing_of_each_other(tmp_path: Path) -> None:
    """One kernel runs the notebooks one after another: the second sees no name the first
    defined, and its failing cell has the number it has when run alone (parameters 1,
    injected parameters 2, then 3, 4, 5)."""
    from grade_kit.presentation.report import ReportError, ReportKernels, build_report

    _notebook(tmp_path, "first", "leaked = 1", "import math")
    _notebook(tmp_path, "second", "assert 'leaked' not in globals() and 'math' not in globals()",
              "x = 1", "1 / 0")
    out = tmp_path / "out"
    with ReportKernels(("first", "second"), count=1) as kernels:
        assert len(kernels.kernels) == 1
        with pytest.raises(ReportError, match=r"^second\.ipynb: cell 5 failed: "
                                              r"ZeroDivisionError"):
            build_report({"scored": "x"}, out, notebooks=("first", "second"),
                         notebook_dir=tmp_path, kernels=kernels)
    assert not out.exists() and [p.name for p in tmp_path.iterdir() if
                                 p.name.startswith(".out")] == []
    with pytest.raises(ValueError, match="at least 1"):
        ReportKernels(("first",), count=0)


def _section(heading: str | None, *outputs: str) -> list[Any]:
    import nbformat

    cells = [nbformat.v4.new_markdown_cell(f"{heading}\n\nIntro.")] if heading else []
    for out in outputs:
        cell = nbformat.v4.new_code_cell("x")
        cell.outputs = [nbformat.v4.new_output("display_data", data={"text/html": out})]
        cells.append(cell)
    return cells


def test_sections_without_data_are_left_out_with_one_line_why() -> None:
    """A section whose every output is a marked sentence is left out; neighbours left out
    for the same reason share one line; a page whose every section is is one line."""
    import nbformat

    from grade_kit.presentation.report import LEFT_OUT_TAG, leave_out_absent
    from grade_kit.views.tables import absent_html

    grade, compare = "No GRADE scores.", "No comparison."
    table_html = "<table><tr><td>1</td></tr></table>"
    cells = [*_section("# Page", table_html), *_section("## A", absent_html(grade, "t")),
             *_section("## B", absent_html(grade), absent_html(grade)),
             *_section("## C", absent_html(grade), table_html),
             *_section("## D", absent_html(compare)), *_section("## E")]
    kept = leave_out_absent(nbformat.v4.new_notebook(cells=cells)).cells
    sources = [c.source for c in kept if c.cell_type == "markdown"]
    assert sources == ["# Page\n\nIntro.", "**A** and **B**: left out. No GRADE scores.",
                       "## C\n\nIntro.", "**D**: left out. No comparison.", "## E\n\nIntro."]
    assert [LEFT_OUT_TAG in c.metadata.get("tags", []) for c in kept if c.source.startswith(
        "**")] == [True, True]
    assert sum(c.cell_type == "code" for c in kept) == 3  # Page's and C's (its sentence kept)
    whole = [*_section("# Comparing", absent_html(compare)), *_section("## X",
                                                                        absent_html(compare))]
    (line,) = leave_out_absent(nbformat.v4.new_notebook(cells=whole)).cells
    assert line.source == "**Comparing**: left out. No comparison."
    # a page of its own keeps its title as its heading
    heading, line = leave_out_absent(nbformat.v4.new_notebook(cells=whole), page=True).cells
    assert (heading.source, line.source) == ("# Comparing",
                                             "**Comparing**: left out. No comparison.")
    untouched = nbformat.v4.new_notebook(cells=_section("# P", table_html))
    assert leave_out_absent(untouched).cells == untouched.cells


def test_the_headline_leaves_out_what_it_has_nothing_to_show(tmp_path: Path) -> None:
    """report.html opens with the headline cells; one whose every output is a marked
    sentence (the significance matrix of one setup) is left out: the sentences say why."""
    import nbformat

    from grade_kit.presentation.report import HEADLINE_TAG, merge_pages
    from grade_kit.views.tables import absent_html

    sentence, matrix = _section(None, "<p>careful is the only ranked setup</p>",
                                absent_html("No comparison.", "Significance"))
    for cell in (sentence, matrix):
        cell.metadata["tags"] = [HEADLINE_TAG]
    page = nbformat.v4.new_notebook(cells=[*_section("# Scorecard", "<table></table>"),
                                           sentence, matrix])
    path = tmp_path / "scorecard.ipynb"
    nbformat.write(page, path)
    merged = merge_pages([path], "t").cells
    shown = [str(c.get("outputs", [{}])[0].get("data", {}).get("text/html", ""))
             for c in merged if c.cell_type == "code"]
    assert shown == ["<p>careful is the only ranked setup</p>", "<table></table>"]


def test_the_chart_libraries_are_built_once_and_kept(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The inlined chart script is kept in the cache folder and reused; a damaged copy is
    rebuilt, and a cache folder that cannot be written is no error."""
    from grade_kit.presentation import report as report_html

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    bundle = report_html._vega_bundle()
    kept = list((tmp_path / "cache" / "grade_kit").glob("vega-bundle-*.js"))
    assert len(kept) == 1 and kept[0].read_text() == bundle and "vegaEmbed" in bundle
    assert "</script" not in bundle
    kept[0].write_text("truncated")
    assert report_html._vega_bundle() == bundle and kept[0].read_text() == bundle
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))  # not a folder
    assert report_html._vega_bundle() == bundle


def test_the_report_scores_once_and_reads_a_scored_folder(tmp_path: Path) -> None:
    """The notebooks show the one evaluation the command made (kept as scored/), and a
    scored folder reports as it is, without its inputs."""
    assert main(["report", str(EXAMPLE / "tasks"), str(EXAMPLE / "runs.jsonl"),
                 "--judge", "rules", "--out", str(tmp_path / "a")]) == 0
    scored = tmp_path / "a" / "scored"
    assert (scored / "results.json").is_file() and (scored / "evaluation").is_dir()
    executed = json.loads((tmp_path / "a" / "scorecard.ipynb").read_text())
    params = executed["metadata"]["papermill"]["parameters"]
    assert set(params) == {"scored"}  # the notebooks reopen it: no input is read again
    assert main(["report", str(scored), "--out", str(tmp_path / "b")]) == 0
    summary = re.search(r"Summary: one row per setup.*?</table>",
                        (tmp_path / "b" / "scorecard.html").read_text(), re.S)
    first = re.search(r"Summary: one row per setup.*?</table>",
                      (tmp_path / "a" / "scorecard.html").read_text(), re.S)
    assert summary and first and summary.group(0) == first.group(0)


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_charts_render_in_chromium_offline_and_hostile_text_stays_inert(
        report: Path, tmp_path: Path, name: str) -> None:
    done = subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}",
         "--host-resolver-rules=MAP * ~NOTFOUND", "--virtual-time-budget=15000",
         "--enable-logging=stderr", "--v=0", "--dump-dom",
         (report / f"{name}.html").as_uri()],
        capture_output=True, text=True, timeout=120)
    dom = done.stdout
    charts = (report / f"{name}.html").read_text().count('class="gk-chart"')
    rendered = len(re.findall(r'<svg[^>]*class="marks"', dom))
    assert rendered == charts and (charts >= 1 or name == "explorer"), (charts, rendered)
    assert "<title>pwned</title>" not in dom and "pwned</title>" not in dom
    console = [line for line in done.stderr.splitlines() if "CONSOLE" in line]
    assert not [line for line in console if "Uncaught" in line or "Error" in line], console


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_chart_shows_its_tooltip_on_hover_with_the_network_blocked(
        report: Path, tmp_path: Path, name: str) -> None:
    from tests.devtools import Browser

    assert CHROMIUM is not None
    browser = Browser(CHROMIUM, tmp_path / "profile")
    try:
        browser.open(report / f"{name}.html")
        charts = browser.evaluate("document.querySelectorAll('.gk-chart').length")
        drawn = browser.evaluate("document.querySelectorAll('.gk-chart svg.marks').length")
        assert drawn == charts and (charts >= 1 or name == "explorer")
        for index in range(charts):
            text = browser.chart_tooltip(index)
            assert text and text.strip(), f"{name}: chart {index} shows no tooltip"
        assert browser.evaluate("document.title") != "pwned"
        assert browser.errors() == []
    finally:
        browser.close()


def test_a_relative_out_folder_works(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["report", str(EXAMPLE / "tasks"), str(EXAMPLE / "runs.jsonl"), "--out",
                 "reports/html"]) == 0
    assert (tmp_path / "reports" / "html" / "index.html").is_file()


def test_the_fetch_notebook_fetches_from_a_real_server(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from another folder with its default tasks and packs (the demo suite's)."""
    import papermill

    from grade_kit.demo.server import DemoServer
    from grade_kit.reading.task_files import load_tasks

    fixtures = ROOT / "fixtures"
    tasks = load_tasks(fixtures / "tasks", fixtures / "packs").records
    secret = "sk-test-NOTEBOOK-9876543210"
    monkeypatch.setenv("GK_NB_KEY", secret)  # the kernel inherits it; the files must not
    server = DemoServer(tasks, fixtures / "packs", latency_scale=0.01).start()
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "hasty.jsonl").write_text(json.dumps(  # one slot failed before
        {"run_id": "seeded-failure", "setup": "hasty", "task_id": tasks[0].task_id,
         "repeat": 1, "status": "failed", "error": "seeded"}) + "\n")
    try:
        papermill.execute_notebook(
            str(ROOT / "notebooks" / "fetch.ipynb"), str(tmp_path / "fetch.ipynb"),
            parameters={"endpoint": server.url, "models": ["hasty"], "repeats": 1,
                        "api_key_env": "GK_NB_KEY",
                        "timeout_s": server.timeout_s, "out": str(tmp_path / "runs")},
            kernel_name="python3", cwd=str(tmp_path), progress_bar=False)
        first = [json.loads(x) for x in (tmp_path / "runs" / "hasty.jsonl").read_text()
                 .splitlines()]
        failed = {r["run_id"] for r in first if r["status"] != "delivered"}
        assert "seeded-failure" in failed  # a resumed fetch left the failed slot as it was
        papermill.execute_notebook(  # again, re-running what failed: each once, linked
            str(ROOT / "notebooks" / "fetch.ipynb"), str(tmp_path / "again.ipynb"),
            parameters={"endpoint": server.url, "models": ["hasty"], "repeats": 1,
                        "api_key_env": "GK_NB_KEY", "rerun_failed": True,
                        "timeout_s": server.timeout_s, "out": str(tmp_path / "runs")},
            kernel_name="python3", cwd=str(tmp_path), progress_bar=False)
    finally:
        server.stop()
    lines = (tmp_path / "runs" / "hasty.jsonl").read_text().splitlines()
    assert sorted(json.loads(x)["attempt_of"] for x in lines[len(first):]) == sorted(failed)
    assert len({json.loads(x)["task_id"] for x in lines}) == 40
    assert "hasty: 40 slots planned" in (tmp_path / "fetch.ipynb").read_text()
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


def test_fetch_progress_is_one_line_per_setup_in_the_saved_notebook(tmp_path: Path) -> None:
    """Three setups fetched at once: each bar is one output line of its own, updated in
    place (no ESC[A cursor movement, which a notebook prints as it is); the saved notebook
    and its HTML keep each finished bar as one line of text."""
    import papermill
    from nbconvert import HTMLExporter

    from grade_kit.demo.server import DemoServer
    from grade_kit.reading.task_files import load_tasks

    fixtures = ROOT / "fixtures"
    tasks = load_tasks(fixtures / "tasks", fixtures / "packs").records
    server = DemoServer(tasks, fixtures / "packs", latency_scale=0.01).start()
    setups = ["careful", "hasty", "erratic"]
    try:
        papermill.execute_notebook(
            str(ROOT / "notebooks" / "fetch.ipynb"), str(tmp_path / "fetch.ipynb"),
            parameters={"endpoint": server.url, "models": setups, "repeats": 1,
                        "timeout_s": server.timeout_s, "out": str(tmp_path / "runs")},
            kernel_name="python3", cwd=str(tmp_path), progress_bar=False)
    finally:
        server.stop()
    saved = (tmp_path / "fetch.ipynb").read_text()
    assert "\\u001b" not in saved and "\x1b" not in saved  # no escape code anywhere
    notebook = json.loads(saved)
    fetched = next(c for c in notebook["cells"] if "gk.fetch_setups" in "".join(c["source"]))
    bars = ["".join(o["data"]["text/plain"]) for o in fetched["outputs"]
            if o["output_type"] == "display_data" and "fetch " in "".join(
                o.get("data", {}).get("text/plain", ""))]
    assert sorted(b.split(":")[0] for b in bars) == sorted(f"fetch {s}" for s in setups)
    assert all("100%" in b and "40/40" in b and "\n" not in b for b in bars), bars
    assert not any("fetch " in "".join(o.get("text", "")) for o in fetched["outputs"]
                   if o["output_type"] == "stream")  # no stream of bar states beside them
    page, _ = HTMLExporter().from_filename(str(tmp_path / "fetch.ipynb"))
    assert sum(page.count(f"fetch {s}: 100%") for s in setups) == 3


def test_a_notebook_runs_on_its_defaults_from_any_folder(tmp_path: Path) -> None:
    """`papermill notebooks/scorecard.ipynb out.ipynb` from another folder, no parameter:
    the notebook shows the demo suite and its recorded runs, found from the package, and
    its charts as SVG images."""
    import papermill

    papermill.execute_notebook(str(ROOT / "notebooks" / "scorecard.ipynb"),
                               str(tmp_path / "out.ipynb"), kernel_name="python3",
                               cwd=str(tmp_path), progress_bar=False)
    text = (tmp_path / "out.ipynb").read_text()
    assert "Evaluation(3 setups, 40 tasks, 600 runs" in text
    # its charts draw without the network: SVG images, no script from a CDN
    assert "image/svg+xml" in text and "cdn.jsdelivr" not in text and "vega@" not in text


def test_a_failing_report_leaves_no_page_behind(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    assert main(["report", str(EXAMPLE / "tasks"), str(EXAMPLE / "runs.jsonl"),
                 "-p", "weakest", "not-a-number", "--out", str(out)]) == 1
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no staging folder left
    new = tmp_path / "new"  # a report into a folder that did not exist: none is left
    assert main(["report", str(EXAMPLE / "tasks"), str(EXAMPLE / "runs.jsonl"),
                 "-p", "weakest", "not-a-number", "--out", str(new)]) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_the_index_names_no_local_folder(report: Path) -> None:
    index = (report / "index.html").read_text()
    assert str(ROOT) not in index and str(report.parent) not in index
    # the scored folder by the name it has beside the pages (never a staging folder's),
    # and how to open it again
    assert ("<td>scored folder</td><td>scored (open it again, from the folder this page is "
            "in, with <code>gk.reopen(&#x27;scored&#x27;)</code>") in index
    # the title says what the evaluation is (each task's suite, else its pack; the setups;
    # questions x R), not which files held it
    assert f"<h1>{html.escape(TITLE)}</h1>" in index


def test_report_html_is_one_page_to_mail(report: Path) -> None:
    """Every section in one page: a title, a table of contents whose every link lands on a
    heading, the provenance last, no folder of this machine, nothing loaded from anywhere."""
    page = (report / "report.html").read_text()
    ids = set(re.findall(r'id="([^"]+)"', page))
    links = re.findall(r'href="#([^"]+)"', page)
    targets = [link for link in links if link not in ("",)]
    assert {"Scorecard", "Timing-and-tool-calls", "Comparing-setups", "Explorer",
            "Provenance"} <= set(targets)
    assert all(t in ids for t in targets)
    assert page.index('id="Provenance"') > page.index('id="Explorer"')  # the footer is last
    assert f"<title>{html.escape(TITLE, quote=False)}</title>" in page and "sha256" in page
    assert str(report.parent) not in page and str(ROOT) not in page
    assert not re.search(r"<script[^>]+src=", page) and page.count("window.vegaEmbed=") == 1
    assert 'href="report.html"' in (report / "index.html").read_text()


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
def test_report_html_draws_every_chart_offline(report: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}",
         "--host-resolver-rules=MAP * ~NOTFOUND", "--virtual-time-budget=20000",
         "--dump-dom", (report / "report.html").as_uri()],
        capture_output=True, text=True, timeout=180)
    charts = (report / "report.html").read_text().count('class="gk-chart"')
    rendered = len(re.findall(r'<svg[^>]*class="marks"', done.stdout))
    assert charts >= 8 and rendered == charts
    assert "pwned</title>" not in done.stdout


def test_report_at_20_setups_x_3_repeats(tmp_path: Path) -> None:
    """Issue: `grade-kit report` failed at 12 and 20 setups (200 questions x 3 repeats), a
    rounding-noise difference turned into ~1e37 questions; and every page states one
    answer per pair."""
    import random

    rng = random.Random(7)
    tasks = [{"task_id": f"q{i:03d}", "prompt": f"question {i}"} for i in range(200)]
    (tmp_path / "tasks.jsonl").write_text("\n".join(json.dumps(t) for t in tasks) + "\n")
    runs, grades = [], []
    for s in range(20):
        skill = 0.2 + 0.03 * s
        for i in range(200):
            easy = rng.random()
            for r in (1, 2, 3):
                run_id = f"s{s:02d}-{i}-{r}"
                runs.append({"run_id": run_id, "setup": f"setup-{s:02d}",
                             "task_id": f"q{i:03d}", "repeat": r, "status": "delivered",
                             "response": {"text": "x"}})
                ok = rng.random() < (skill + easy) / 2
                grades.append({"run_id": run_id, "grader": "hand",
                               "core_conclusion": "correct" if ok else "incorrect",
                               "request_fulfilment": "full" if ok else "not_met",
                               "material_error": "no"})
    (tmp_path / "runs.jsonl").write_text("\n".join(json.dumps(r) for r in runs) + "\n")
    (tmp_path / "grades.jsonl").write_text("\n".join(json.dumps(g) for g in grades) + "\n")
    out = tmp_path / "html"
    assert main(["report", str(tmp_path / "tasks.jsonl"), str(tmp_path / "runs.jsonl"),
                 "--grades", str(tmp_path / "grades.jsonl"), "--out", str(out)]) == 0
    assert (out / "report.html").is_file() and (out / "compare.html").is_file()
    results = json.loads((out / "scored" / "results.json").read_text())
    tested = [f for c in results["comparisons"] for f in c["figures"]
              if f.get("p_holm") is not None]
    assert len(tested) >= 190 * 6  # 190 pairs on all questions: 4 grades, pass^2, pass^3
    for figure in tested:  # one verdict: the interval excludes 0 iff a direction is stated
        ci = figure["ci95"]
        excludes = ci["low"] > 0 or ci["high"] < 0
        assert excludes == (figure["p_holm"] < 0.05), figure
        if figure["metric"] in ("resolved_rate", "material_error_rate", "unresolved_rate",
                                "pass_hat_k"):
            assert excludes == (figure["direction"] is not None), figure


def test_a_report_says_its_rejected_lines_on_the_terminal(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 55, item 8: a rejected line is said where the command runs (its file, line
    and why), not only on a page."""
    lines = (EXAMPLE / "runs.jsonl").read_text().splitlines()[:6]
    runs = tmp_path / "runs.jsonl"
    runs.write_text("\n".join([*lines, "{not json"]) + "\n")
    assert main(["report", str(EXAMPLE / "tasks"), str(runs), "--out",
                 str(tmp_path / "out")]) == 0
    said = [line for line in capsys.readouterr().err.splitlines()
            if line.startswith("rejected:")]
    assert len(said) == 1 and f"{runs}:7" in said[0], said


def test_export_draws_each_chart_from_its_spec_and_asks_no_cdn(tmp_path: Path) -> None:
    import nbformat

    from grade_kit.presentation.embed import VEGA_MIME
    from grade_kit.presentation.report import export_notebook
    from grade_kit.schema import InputError

    spec = {"$schema": "https://vega.github.io/schema/vega/v5.json", "marks": [],
            "description": "</script><script>alert(1)</script>"}
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# My evaluation"),
        nbformat.v4.new_code_cell("charts.something()", outputs=[nbformat.v4.new_output(
            "display_data", data={VEGA_MIME: spec, "image/svg+xml": "<svg>still</svg>",
                                  "text/plain": "<chart: x>"})])])
    source = tmp_path / "nb.ipynb"
    nbformat.write(nb, source)
    page = export_notebook(source).read_text()
    assert (tmp_path / "nb.html").is_file()
    code = '<span class="n">something</span>'  # the code cell, highlighted
    assert "<title>My evaluation</title>" in page and code in page
    assert "vegaEmbed('#gk-vis-" in page and "<svg>still</svg>" not in page
    assert "alert(1)</script>" not in page  # the spec cannot close its script
    assert "require.min.js" not in page and "mathjax" not in page.lower()
    assert not re.search(r"<script[^>]+src=", page)
    bare = export_notebook(source, tmp_path / "bare.html", code=False).read_text()
    assert code not in bare
    (tmp_path / "bad.ipynb").write_text("not json")
    with pytest.raises(InputError, match=r"bad\.ipynb: not a notebook"):
        export_notebook(tmp_path / "bad.ipynb")


def test_each_page_says_what_it_holds_before_its_first_figure(report: Path) -> None:
    """A section's intro comes right under its heading, before the evaluation's one-line
    summary and the first table (it sat below them when the intro became a code cell)."""
    page = (report / "scorecard.html").read_text()
    intro = page.index("four grades over honest denominators")
    assert intro < page.index("<b>Evaluation</b>:")
    assert intro < page.index('<table class="gk-table"')
