"""The notebooks in a real JupyterLab on 127.0.0.1, driven by Playwright in Debian's headless
Chromium as a researcher would: open each notebook, Run All Cells, and look. Every chart has
drawn (an SVG image each), no cell failed, the browser logged no error, and no request left
127.0.0.1 (the machine has no internet; a chart loading vega from a CDN would draw nothing)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
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


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A JupyterLab server on 127.0.0.1 over a copy of the notebooks, with its own settings,
    data and runtime folders; its base URL."""
    root = tmp_path_factory.mktemp("lab")
    for name in NOTEBOOKS:
        shutil.copy(ROOT / "notebooks" / f"{name}.ipynb", root / f"{name}.ipynb")
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
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()


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


def _charts_in(name: str) -> int:
    """How many charts the notebook draws: one per cell that calls a chart builder."""
    notebook = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())
    return sum(1 for cell in notebook["cells"] if cell["cell_type"] == "code"
               and "".join(cell["source"]).lstrip().startswith("charts."))


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_a_notebook_runs_all_and_every_chart_draws_offline(lab: str, name: str) -> None:
    from playwright.sync_api import sync_playwright

    left: list[str] = []
    errors: list[str] = []
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})

            def request(req: Any) -> None:
                if not req.url.startswith(("http://127.0.0.1", "ws://127.0.0.1", "data:",
                                           "blob:")):
                    left.append(req.url)

            page.on("request", request)
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            # a workspace of its own, reset: only this notebook is open
            page.goto(f"{lab}/lab/workspaces/{name}/tree/{name}.ipynb?reset&token={TOKEN}")
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
            _wait_for_kernel(lab, f"{name}.ipynb")
            page.get_by_role("menuitem", name="Run", exact=True).click()
            page.get_by_text("Run All Cells", exact=True).click()
            page.wait_for_function(  # every code cell has run: a number, no star
                """() => { const p = Array.from(document.querySelectorAll(
                     '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputArea-prompt'));
                   return p.length > 0 && p.every(e => /[0-9]/.test(e.innerText)); }""",
                timeout=180_000)
            page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']",
                                   timeout=120_000)
            drawn = page.evaluate("""() => Array.from(document.querySelectorAll(
                '.jp-RenderedSVG svg, .jp-RenderedSVG img, .jp-RenderedImage img'))
                .filter(e => e.getBoundingClientRect().width > 50).length""")
            failed = page.evaluate("""() => document.querySelectorAll(
                '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'
                ).length + Array.from(document.querySelectorAll('.jp-RenderedText'))
                .filter(e => e.innerText.includes('Traceback')).length""")
        finally:
            browser.close()
    assert failed == 0
    assert drawn == _charts_in(name)
    assert errors == []
    assert left == []
