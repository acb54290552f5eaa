"""The notebooks in a real JupyterLab on 127.0.0.1, driven by Playwright in Debian's headless
Chromium as a researcher would: open each notebook, Run All Cells, and look. Every chart has
drawn live, with JupyterLab's own vega (a tooltip shows on hover), no cell failed, the
browser logged no error, and no request left 127.0.0.1 (the machine has no internet; a
chart loading vega from a CDN would draw nothing)."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from grade_kit.standard.blind import STATEMENT, default_key_path
from tests.paths import ROOT

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
NOTEBOOKS = ("scorecard", "timing_and_tools", "compare", "explorer")
TOKEN = "grade-kit-live-test"

pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed"),
    pytest.mark.skipif(shutil.which("jupyter-lab", path=str(Path(sys.executable).parent))
                       is None, reason="JupyterLab is not installed (pip install -e '.[dev]')"),
]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True)
class Lab:
    url: str
    root: Path
    """The folder the server serves (and the kernels run in)."""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """A JupyterLab server on 127.0.0.1 over a copy of the notebooks (the explorer's blind
    grades going to ``blind.jsonl`` beside it), with its own settings, data and runtime
    folders."""
    root = tmp_path_factory.mktemp("lab")
    demo_port = _free_port()
    for name in (*NOTEBOOKS, "blind_grading", "fetch"):
        notebook = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())
        cell = notebook["cells"][1]
        assert "parameters" in cell["metadata"]["tags"]
        if name == "fetch":  # the demo server of this test, one repeat, quick
            cell["source"] = [re.sub(r"^endpoint = .*", f'endpoint = "http://127.0.0.1:'
                                     f'{demo_port}/v1"', line) for line in cell["source"]]
        (root / f"{name}.ipynb").write_text(json.dumps(notebook))
    home = tmp_path_factory.mktemp("jupyter")
    settings = home / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(json.dumps(
        {"fetchNews": "false", "checkForUpdates": False}))
    tracker = home / "settings" / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True)  # every cell in the page, not only those on screen
    (tracker / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    env = {**os.environ, "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
           "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
           "JUPYTER_CONFIG_DIR": str(home / "config")}
    env.pop("GRADE_KIT_OFFLINE_HTML", None)  # a notebook as a person runs it
    port = _free_port()
    demo = subprocess.Popen([sys.executable, "-m", "grade_kit.cli", "demo", "serve", "--port",
                             str(demo_port), "--latency-scale", "0.001"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "jupyter-lab"), "--no-browser", "--allow-root",
         "--ip=127.0.0.1", f"--port={port}", f"--ServerApp.token={TOKEN}",
         f"--ServerApp.root_dir={root}", "--LabApp.news_url=None",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("JupyterLab did not start") from None
                time.sleep(0.5)
        yield Lab(url, root)
    finally:
        for process in (server, demo):
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


def _stop_kernels(lab: str) -> None:
    """End every session (and its kernel), as closing JupyterLab would."""
    with urllib.request.urlopen(f"{lab}/api/sessions?token={TOKEN}", timeout=5) as reply:
        sessions = json.load(reply)
    for session in sessions:
        urllib.request.urlopen(urllib.request.Request(
            f"{lab}/api/sessions/{session['id']}?token={TOKEN}", method="DELETE"), timeout=30)


def _wait_for_kernel(lab: str, path: str) -> None:
    """Until the notebook's kernel has started and is idle (the server's own word)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"{lab}/api/sessions?token={TOKEN}", timeout=5) as reply:
            sessions = json.load(reply)
        if any(s["path"] == path and s["kernel"]["execution_state"] == "idle"
               for s in sessions):
            return
        time.sleep(0.5)
    raise AssertionError(f"{path}: no idle kernel within 120 s")


NO_DATA_CHARTS = {"scorecard": ("charts.frontier_chart",)}
"""Chart cells whose chart has nothing to draw on the demo suite, so show one marked line why
instead: its recorded runs carry no usage, so no cost and no frontier."""


def _charts_in(name: str) -> int:
    """How many charts the notebook draws: one per cell that calls a chart builder, but the
    ones with nothing to draw on the demo suite (:data:`NO_DATA_CHARTS`)."""
    notebook = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())
    sources = ["".join(cell["source"]).lstrip() for cell in notebook["cells"]
               if cell["cell_type"] == "code"]
    return sum(1 for source in sources if source.startswith("charts.")
               and not source.startswith(NO_DATA_CHARTS.get(name, ("-",))))


def _options(select: Any) -> list[str]:
    """The options of a list box as shown (ipywidgets writes their spaces as no-break)."""
    return [o.replace("\u00a0", " ") for o in select.locator("option").all_text_contents()]


class Browser:
    """One Chromium page on the lab, watching what the page asks for and what it logs."""

    def __init__(self, lab: Lab, driver: Any) -> None:
        self.lab = lab.url
        self.left: list[str] = []
        self.errors: list[str] = []
        self.browser = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        self.page = self.browser.new_page(viewport={"width": 1600, "height": 1000})

        def request(req: Any) -> None:
            if not req.url.startswith(("http://127.0.0.1", "ws://127.0.0.1", "data:",
                                       "blob:")):
                self.left.append(req.url)

        self.page.on("request", request)
        self.page.on("console",
                     lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def open(self, name: str, workspace: str) -> None:
        """The notebook alone in a workspace of its own (reset), its kernel idle."""
        self.page.goto(f"{self.lab}/lab/workspaces/{workspace}/tree/{name}.ipynb?reset"
                       f"&token={TOKEN}")
        self.page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
        _wait_for_kernel(self.lab, f"{name}.ipynb")

    def run_all(self) -> None:
        self.page.get_by_role("menuitem", name="Run", exact=True).click()
        self.page.get_by_text("Run All Cells", exact=True).click()
        self.page.wait_for_function(  # every code cell has run: a number, no star
            """() => { const p = Array.from(document.querySelectorAll(
                 '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputArea-prompt'));
               return p.length > 0 && p.every(e => /[0-9]/.test(e.innerText)); }""",
            timeout=180_000)
        self.page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']",
                                    timeout=120_000)

    def failed_cells(self) -> int:
        return int(self.page.evaluate("""() => document.querySelectorAll(
            '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'
            ).length + Array.from(document.querySelectorAll('.jp-RenderedText'))
            .filter(e => e.innerText.includes('Traceback')).length"""))

    def visible_text(self, selector: str) -> list[str]:
        return list(self.page.evaluate("""(s) => Array.from(document.querySelectorAll(s))
            .filter(e => e.getBoundingClientRect().height > 0).map(e => e.innerText)""",
                                       selector))

    def live_charts(self, at_least: int) -> int:
        """How many charts JupyterLab's vega drew (wider than 50 px), once ``at_least``
        have."""
        self.page.wait_for_function(
            "(n) => document.querySelectorAll('.jp-RenderedVegaCommon5 svg').length >= n",
            arg=at_least, timeout=60_000)
        return int(self.page.evaluate("""() => Array.from(document.querySelectorAll(
            '.jp-RenderedVegaCommon5 svg'))
            .filter(e => e.getBoundingClientRect().width > 50).length"""))

    def save_and_reopen(self, name: str, workspace: str) -> None:
        """File > Save, end the kernel, open the notebook again (no kernel has run it)."""
        self.page.get_by_role("menuitem", name="File", exact=True).click()
        self.page.locator("li[data-command='docmanager:save']").click()
        self.page.wait_for_function(
            "() => !document.querySelector('.lm-TabBar-tab.jp-mod-dirty')")
        _stop_kernels(self.lab)
        self.open(name, workspace)
        time.sleep(2)  # whatever the page would draw or complain about, it has by now


@contextmanager
def _ran(lab: Lab, name: str) -> Iterator[Browser]:
    """A browser on the notebook ``name`` after Run All (in a workspace of its name), closed
    on leaving; what it saw (``errors``, ``left``) stays readable after."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        seen = Browser(lab, driver)
        try:
            seen.open(name, name)
            seen.run_all()
            yield seen
        finally:
            seen.browser.close()


@pytest.mark.parametrize("name", [n for n in NOTEBOOKS if n != "explorer"])
def test_a_notebook_runs_all_and_every_chart_draws_offline(lab: Lab, name: str) -> None:
    with _ran(lab, name) as seen:
        drawn = seen.live_charts(_charts_in(name))
        static = seen.page.locator(".jp-RenderedSVG, .jp-RenderedImage").count()
        failed = seen.failed_cells()
        tip = _tooltip_of_first_mark(seen.page)
        # saved and opened again with no kernel: every chart draws live again
        seen.save_and_reopen(name, f"{name}-reopened")
        again = seen.live_charts(_charts_in(name))
    assert failed == 0
    assert drawn == _charts_in(name) == again  # every chart live (vega), none an image
    assert static == 0
    # hovering a mark shows its tooltip: named fields, and a figure among them
    assert re.search(r"^\w[\w ]*:", tip, re.M) and re.search(r"[0-9]", tip), tip
    assert seen.errors == []
    assert seen.left == []


def _tooltip_of_first_mark(page: Any) -> str:
    """Hover the first drawn mark (a bar, a point, a line) of the first live chart whose
    marks carry a tooltip, and read the tooltip it shows."""
    marks = page.locator(".jp-RenderedVegaCommon5 svg g.mark-rect.role-mark path, "
                         ".jp-RenderedVegaCommon5 svg g.mark-symbol.role-mark path")
    for k in range(min(marks.count(), 40)):
        mark = marks.nth(k)
        box = mark.bounding_box()
        if not box or box["width"] < 2 or box["height"] < 2:
            continue
        mark.scroll_into_view_if_needed()
        box = mark.bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        try:
            page.wait_for_selector("#vg-tooltip-element.visible", timeout=2_000)
        except Exception:  # a mark without a tooltip: the next one
            continue
        return str(page.locator("#vg-tooltip-element").inner_text())
    return ""


def test_the_explorer_filters_shows_runs_and_reopens_static(lab: Lab) -> None:
    """Run All; choose a filter (the list and the other filters follow); click a run and
    step to the next with the arrow key (its details follow); turn the page; save, stop the
    kernel, open again: the widget's static copy shows and no "model not found"."""
    with _ran(lab, "explorer") as seen:
        page = seen.page
        assert seen.failed_cells() == 0
        count = page.locator(".gk-explorer-count")
        assert count.inner_text().startswith("600 of 600 runs")
        setup = page.locator(".widget-dropdown:has(> label:text-is('setup')) select")
        label = _options(setup)[1]  # "careful 200"
        chosen, runs = label.rsplit(" ", 1)
        setup.select_option(index=1)
        page.wait_for_function("""(n) => document.querySelector('.gk-explorer-count')
            .innerText.startsWith(n + ' of 600 runs')""", arg=runs)
        grade = page.locator(".widget-dropdown:has(> label:text-is('grade')) select")
        offered = sum(int(t.rsplit(" ", 1)[1]) for t in
                      _options(grade)[1:])
        assert offered == int(runs)  # the grade filter counts only this setup's runs
        listed = page.locator(".gk-run-list select")
        options = _options(listed)
        assert len(options) == 20 and all(chosen in o for o in options)
        listed.select_option(index=3)
        third = options[3].split()[0]
        page.wait_for_function("""(id) => document.querySelector('.gk-run-detail')
            .innerText.includes('Answer of run ' + id)""", arg=third)
        listed.focus()
        page.keyboard.press("ArrowDown")
        fourth = options[4].split()[0]
        page.wait_for_function("""(id) => document.querySelector('.gk-run-detail')
            .innerText.includes('Answer of run ' + id)""", arg=fourth)
        # at 1,200 px, and at 1,500 px with the file browser open, the details stay beside
        # the list (never below it)
        beside = []
        for width, browser_open in ((1200, False), (1500, True)):
            page.set_viewport_size({"width": width, "height": 1000})
            if browser_open:
                page.keyboard.press("Control+b")
                page.wait_for_selector("#filebrowser", state="visible")
            time.sleep(0.5)
            run_list = page.locator(".gk-run-list").bounding_box()
            detail = page.locator(".gk-run-detail").bounding_box()
            beside.append(detail["x"] >= run_list["x"] + run_list["width"] - 1
                          and detail["y"] < run_list["y"] + run_list["height"])
        assert beside == [True, True]
        page.set_viewport_size({"width": 1600, "height": 1000})
        page.get_by_role("button", name="next ▶").click()
        page.get_by_text(f"runs 21–40 of {int(runs)}").wait_for()
        before_reopening = list(seen.errors)
        seen.save_and_reopen("explorer", "reopened")
        page.wait_for_function("""() => !Array.from(document.querySelectorAll(
            '.jp-OutputArea-output')).some(e => e.innerText.includes('Loading widget'))""",
                               timeout=60_000)
        time.sleep(1)
        missing = [t for t in seen.visible_text(".jp-OutputArea-output")
                   if "model not found" in t]
        static = seen.visible_text("[data-gk-static]")
    assert missing == []
    assert len(static) == 1 and "explorer.ipynb filters them" in static[0]
    assert before_reopening == []
    # opened again, the widget manager logs the view whose model went with the kernel (the
    # page shows the static copy): nothing else
    reopened = seen.errors[len(before_reopening):]
    assert len(reopened) == 1 and all(e.startswith("Error: widget model not found")
                                      for e in reopened), reopened
    assert seen.left == []


def test_blind_grading_shows_no_key_renders_its_menus_and_resumes_in_order(lab: Lab) -> None:
    """The blind notebook as a grader uses it: Run All; the menus show their placeholder;
    nothing on the page names a setup or a run; one grade saved (aliases only on disk, the
    key apart); the kernel restarted and Run All again: the panel resumes at the next answer
    of the same order, its progress counted from the file."""
    sheet = lab.root / "blind_grades.csv"
    key_path = default_key_path(sheet)  # outside the served folder, in the keys folder
    assert lab.root not in key_path.parents
    with _ran(lab, "blind_grading") as seen:
        page = seen.page
        assert seen.failed_cells() == 0
        core = page.locator(".widget-dropdown:has(> label:text-is('core')) select")
        shown = core.evaluate("s => s.options[s.selectedIndex].text")
        first = page.locator(".jupyter-widgets h4").first.inner_text()
        text = page.locator(".jp-Notebook").inner_text()
        key = json.loads(key_path.read_text())
        order = list(key["aliases"])
        assert first.startswith(f"Answer {order[0]}: 0 of {len(order)} graded")
        core.select_option(label="correct")
        page.locator(".widget-dropdown:has(> label:text-is('fulfilment')) select"
                     ).select_option(label="full")
        page.get_by_role("button", name="Save grade").click()
        page.get_by_text(f"Answer {order[1]}: 1 of {len(order)} graded").wait_for()
        on_disk = sheet.read_text()
        _stop_kernels(lab.url)  # a restart: a new kernel, the same file
        seen.open("blind_grading", "blind-again")
        seen.run_all()
        resumed = page.locator(".jupyter-widgets h4").first.inner_text()
    assert shown.replace("\u00a0", " ") == "— choose —"  # (ipywidgets: no-break spaces)
    runs = {entry["run_id"] for entry in key["aliases"].values()}
    for secret in (*runs, "careful", "hasty", "erratic"):  # the demo's run ids and setups
        assert secret not in text and secret not in on_disk
    lines = on_disk.splitlines()
    assert on_disk.count(order[0]) == 1 and lines[0] == f'"{STATEMENT}"'
    assert lines[1].startswith("row,sheet,alias") and not (lab.root / "blind_grades.key.json"
                                                           ).exists()
    assert resumed.startswith(f"Answer {order[1]}: 1 of {len(order)} graded (0 saved here")
    assert seen.errors == [] and seen.left == []


def test_fetch_reopens_with_its_bars_as_text_and_no_widget_error(lab: Lab) -> None:
    """fetch.ipynb against the demo server: Run All, save, open again without a kernel: each
    setup's finished progress bar is text, and nothing says "model not found" or "Loading
    widget"."""
    with _ran(lab, "fetch") as seen:
        failed = seen.failed_cells()
        seen.save_and_reopen("fetch", "fetch-reopened")
        outputs = "\n".join(seen.visible_text(".jp-OutputArea-output"))
    assert failed == 0
    for setup in ("careful", "hasty", "erratic"):  # one line each, updated in place
        assert len(re.findall(rf"fetch {setup}: 100%.*\|", outputs)) == 1, outputs[:2000]
    assert "\x1b" not in outputs and "[A" not in outputs
    assert "model not found" not in outputs and "Loading widget" not in outputs
    assert seen.errors == [] and seen.left == []


def test_an_exported_notebook_shows_a_tooltip_on_hover_offline(lab: Lab) -> None:
    """Issue 55, item 10: a notebook run and saved in JupyterLab, exported with
    ``grade-kit export``, opened from disk with every request off the file refused: each
    chart draws from its spec (none an image), a hovered mark shows vega's tooltip, and
    the page asks the network for nothing (nbconvert's own export asks a CDN for require.js
    and MathJax and draws still images)."""
    from playwright.sync_api import sync_playwright

    from grade_kit.cli import main

    with _ran(lab, "timing_and_tools") as seen:
        assert seen.failed_cells() == 0
        seen.save_and_reopen("timing_and_tools", "timing-export")
    exported = lab.root / "timing_and_tools.html"
    assert main(["export", str(lab.root / "timing_and_tools.ipynb"), "--out",
                 str(exported)]) == 0
    asked: list[str] = []
    errors: list[str] = []
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("request", lambda r: None if r.url.startswith(("file:", "data:"))
                    else asked.append(r.url))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.route("**/*", lambda route: route.continue_()
                       if route.request.url.startswith(("file:", "data:")) else route.abort())
            page.goto(exported.as_uri())
            page.wait_for_function(
                "(n) => document.querySelectorAll('.gk-chart svg').length >= n",
                arg=_charts_in("timing_and_tools"), timeout=30_000)
            images = page.locator(".jp-RenderedSVG, .jp-RenderedImage").count()
            marks = page.locator(".gk-chart svg [role='graphics-symbol']")
            tip = ""
            for k in range(min(marks.count(), 40)):
                mark = marks.nth(k)
                mark.scroll_into_view_if_needed()
                box = mark.bounding_box()
                if not box or box["width"] < 1 or box["height"] < 1:
                    continue
                page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
                try:
                    page.wait_for_selector("#vg-tooltip-element.visible", timeout=1_500)
                except Exception:  # a mark without a tooltip: the next one
                    continue
                tip = page.locator("#vg-tooltip-element").inner_text()
                break
        finally:
            browser.close()
    assert images == 0  # every chart drawn from its spec, none a still image
    # vega's tooltip: a table of the mark's named fields, a figure among them
    assert re.search(r"^setup\s*$", tip, re.M) and re.search(r"[0-9]", tip), tip
    assert asked == [] and errors == []
