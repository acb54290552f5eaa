"""A minimal Chrome DevTools protocol driver for the browser tests: Debian's headless
Chromium with every name resolving nowhere (no network), a page opened from a file, script
evaluation and real mouse events (to hover chart marks and see their tooltips)."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import websocket


class Browser:
    """One headless Chromium with one page, driven over the DevTools protocol."""

    def __init__(self, chromium: str, profile: Path) -> None:
        self.process = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", f"--user-data-dir={profile}", "--remote-debugging-port=0",
             "--host-resolver-rules=MAP * ~NOTFOUND", "--window-size=1280,2000",
             "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        assert self.process.stderr is not None
        url = None
        deadline = time.monotonic() + 30
        while url is None and time.monotonic() < deadline:
            line = self.process.stderr.readline()
            found = re.search(r"DevTools listening on (ws://\S+)", line)
            url = found.group(1) if found else None
        assert url is not None, "Chromium did not start its DevTools endpoint"
        browser = websocket.create_connection(url, timeout=30, suppress_origin=True)
        self._ids = itertools.count(1)
        self._ws = browser
        self.events: list[dict[str, Any]] = []
        target = self._call("Target.createTarget", url="about:blank")["targetId"]
        session = self._call("Target.attachToTarget", targetId=target, flatten=True)
        self.session = session["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")

    def _call(self, method: str, session: str | None = None, **params: Any) -> Any:
        ident = next(self._ids)
        message: dict[str, Any] = {"id": ident, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        self._ws.send(json.dumps(message))
        while True:
            reply = json.loads(self._ws.recv())
            if reply.get("id") == ident:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def call(self, method: str, **params: Any) -> Any:
        """A DevTools command on the page."""
        return self._call(method, self.session, **params)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression on the page."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True,
                           awaitPromise=True)
        return result.get("result", {}).get("value")

    def open(self, page: Path, settle_s: float = 3.0) -> None:
        """Open a file and wait until loaded and quiet."""
        self.call("Page.navigate", url=page.as_uri())
        deadline = time.monotonic() + 30
        while self.evaluate("document.readyState") != "complete":
            assert time.monotonic() < deadline, "the page did not load"
            time.sleep(0.1)
        time.sleep(settle_s)

    def hover(self, x: float, y: float) -> None:
        """Move the mouse to (x, y) as a person would."""
        self.call("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and failed loads seen so far."""
        self.evaluate("1")  # collect pending events
        out = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                out.append(json.dumps(params.get("exceptionDetails", {}))[:300])
            elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
                out.append(json.dumps(params.get("args", []))[:300])
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                out.append(params["entry"].get("text", "")[:300])
        return out

    def warnings(self) -> list[str]:
        """Console warnings seen so far (Vega's "Infinite extent for field ...", ...)."""
        self.evaluate("1")  # collect pending events
        out = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") == "warning":
                out.append(json.dumps(params.get("args", []))[:300])
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "warning":
                out.append(params["entry"].get("text", "")[:300])
        return out

    def close(self) -> None:
        """Close the connection and the browser."""
        try:
            self._ws.close()
        finally:
            self.process.kill()
            self.process.wait(timeout=10)

    def chart_tooltip(self, index: int, tries: int = 30) -> str | None:
        """Hover the marks of the ``index``-th chart (``.gk-chart``) one after another until
        vega's tooltip shows; its text, or None when no mark shows one."""
        for k in range(tries):
            pos = self.evaluate(f"""(() => {{
              const chart = document.querySelectorAll('.gk-chart')[{index}];
              const items = Array.from(chart.querySelectorAll('svg [role="graphics-symbol"]'))
                .filter(e => {{ const r = e.getBoundingClientRect();
                               return r.width > 0 || r.height > 0; }});
              if (!items.length || {k} >= items.length) return null;
              const e = items[{k}]; e.scrollIntoView({{block: 'center'}});
              const r = e.getBoundingClientRect();
              return [r.left + r.width / 2, r.top + r.height / 2]; }})()""")
            if pos is None:
                return None
            self.hover(pos[0], pos[1])
            time.sleep(0.1)
            text = self.evaluate("""(() => { const t = document.getElementById(
              'vg-tooltip-element'); return t && t.classList.contains('visible')
              ? t.innerText : null; })()""")
            if text:
                return str(text)
            self.hover(0, 0)
        return None
