"""Offline HTML scorecards (``grade-kit report``): the parametrised notebooks run with papermill
on a real kernel, exported with nbconvert without code cells or the parameters cells, with the
chart libraries inlined once per page and nothing fetched from the network, plus an
``index.html`` linking them. A page works from a mail attachment.
"""

from __future__ import annotations

import base64
import hashlib
import html
import os
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from jupyter_client.asynchronous.client import AsyncKernelClient
from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import run_sync

from grade_kit.atomic import atomic_write_text
from grade_kit.cache import cache_dir
from grade_kit.schema import InputError
from grade_kit.text import md_cell
from grade_kit.views.tables import ABSENT_ATTRIBUTE, OFFLINE_ENV

NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"
"""The notebooks: ``grade_kit/notebooks``, a link to the checkout's ``notebooks/`` (the one
copy), copied into a wheel as package data, so an installed grade_kit reports too."""

NOTEBOOKS = ("scorecard", "timing_and_tools", "compare", "explorer")
"""The notebooks ``grade-kit report`` runs, in index order."""

TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
TEMPLATE = "grade_kit_offline"

NOTEBOOK_ONLY_TAG = "notebook-only"
"""Cells tagged so (how to use a widget, where a frame is in code) are for the notebook: a
page leaves them out."""


class ReportError(InputError):
    """A notebook failed: names the notebook and the cell."""


@dataclass(frozen=True)
class Page:
    """One exported notebook."""

    name: str
    html: Path
    executed: Path


def _vega_bundle() -> str:
    """The chart libraries (vega, vega-lite, vega-embed) as one script, inlined in each page.
    vl-convert builds it (1-2 s of CPU); the build is kept in the user's cache folder, one
    file per vl-convert version, and reused (rebuilt when the file is missing or cannot be
    read or does not define ``vegaEmbed``; a cache folder that cannot be written is no
    error)."""
    from importlib.metadata import version

    import vl_convert

    cached = cache_dir() / f"vega-bundle-vl-convert-{version('vl-convert-python')}.js"
    try:
        kept = cached.read_text(encoding="utf-8")
        if "vegaEmbed" in kept:
            return kept
    except (OSError, UnicodeDecodeError):
        pass
    make_bundle = cast(Any, vl_convert.javascript_bundle)  # its stub wants a snippet; the
    bundle: str = make_bundle()  # default (None) is the one that defines window.vegaEmbed
    bundle = bundle.replace("</script", "<\\/script")
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(cached, bundle)
    except OSError:
        pass
    return bundle


def export_html(notebook: Path | Any, out: Path, title: str, bundle: str | None = None,
                page: bool = True) -> Path:
    """Export an executed notebook (a file, or a notebook node) to offline HTML: no input
    cells, no parameters cells, no cell for the notebook only (:data:`NOTEBOOK_ONLY_TAG`), no
    CDN scripts, the chart libraries inlined once; sections
    without data left out (:func:`leave_out_absent`; ``page``: a page of its own, default,
    not ``report.html``)."""
    import nbformat

    nb = leave_out_absent(nbformat.read(notebook, as_version=4) if isinstance(notebook, Path)
                          else notebook, page=page)
    return _offline_page(nb, out, title, bundle, code=False,
                         remove_tags={"parameters", "injected-parameters", NOTEBOOK_ONLY_TAG})


def _offline_page(nb: Any, out: Path, title: str, bundle: str | None, *, code: bool,
                  remove_tags: set[str]) -> Path:
    """``nb`` as one HTML file of the offline template (no CDN script; the chart libraries
    inlined once; a script policy of exactly its own scripts), without widget state (each
    widget's static copy shows) and the cells tagged ``remove_tags``; input cells kept
    when ``code``."""
    from nbconvert import HTMLExporter
    from nbconvert.preprocessors import TagRemovePreprocessor

    nb.metadata["title"] = title
    # no widget state: widgets need a kernel, so each output's static HTML is exported
    # instead (and no widget manager script is fetched)
    nb.metadata.pop("widgets", None)
    exporter = HTMLExporter(template_name=TEMPLATE, extra_template_basedirs=[str(TEMPLATE_DIR)],
                            exclude_input=not code, exclude_input_prompt=not code,
                            exclude_output_prompt=not code)
    remover = TagRemovePreprocessor(remove_cell_tags=remove_tags, enabled=True)
    exporter.register_preprocessor(remover, enabled=True)
    body, _ = exporter.from_notebook_node(nb, resources={"vega_bundle": bundle or
                                                         _vega_bundle()})
    return atomic_write_text(out, script_hashes(body))


def export_notebook(notebook: Path | str, out: Path | str | None = None, *,
                    code: bool = True) -> Path:
    """An executed notebook (saved from JupyterLab, or papermill's output) as one HTML file
    that works offline with its charts interactive: each chart output (grade_kit's Vega
    spec, or a Vega-Lite spec of Altair's own renderers) drawn by the chart libraries
    inlined once, with tooltips and the legend's setup selection; each widget as its static
    copy; nothing asked of the network (no require.js, MathJax or CDN, which
    ``jupyter nbconvert --to html`` asks for and which draws the charts as still images).

    Args:
        notebook: The executed ``.ipynb``.
        out: The HTML file; default the notebook's path with ``.html``.
        code: Keep the code cells (default); False shows outputs and text only.

    Returns:
        The path written (atomically: an interrupted export leaves no partial file).

    Raises:
        InputError: when ``notebook`` is not a notebook file nbformat can read.
    """
    import nbformat

    from grade_kit.presentation.embed import VEGA_LITE_MIMES, VEGA_MIME, vega_embed_html

    path = Path(notebook)
    try:
        nb = nbformat.read(path, as_version=4)
    except (OSError, ValueError, nbformat.reader.NotJSONError) as exc:
        raise InputError(f"{path}: not a notebook that can be read: {exc}") from exc
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            spec = next((data[m] for m in (VEGA_MIME, *VEGA_LITE_MIMES) if m in data), None)
            if isinstance(spec, dict):  # drawn by the inlined libraries, not as an image
                output["data"] = {"text/html": vega_embed_html(spec),
                                  "text/plain": data.get("text/plain", "<chart>")}
    title = next((h[1] for cell in nb.cells if (h := _heading(cell)) and h[0] == 1),
                 path.stem)
    target = Path(out) if out is not None else path.with_suffix(".html")
    return _offline_page(nb, target, title, None, code=code, remove_tags=set())


INLINE_POLICY = "script-src 'unsafe-inline' 'unsafe-eval'"
"""The template's script policy, which :func:`script_hashes` replaces."""
_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>(.*?)</script>", re.S | re.I)


def script_hashes(page: str) -> str:
    """``page`` with its Content-Security-Policy allowing exactly the inline scripts it was
    exported with (each by its SHA-256), instead of any inline script: a script or a
    ``javascript:`` link planted in a page's text can never run. (``'unsafe-eval'`` stays:
    vega compiles its expressions.)"""
    hashes = sorted({"'sha256-" + base64.b64encode(hashlib.sha256(body.encode()).digest())
                     .decode() + "'" for body in _SCRIPT.findall(page)})
    if INLINE_POLICY not in page:
        raise ValueError("the page's template has no script policy to replace")
    return page.replace(INLINE_POLICY, "script-src " + " ".join(hashes) + " 'unsafe-eval'", 1)


def default_title(parameters: Mapping[str, Any]) -> str:
    """What the ``scored`` folder's evaluation is, in one line
    (:func:`~grade_kit.pipeline.state.scored_title`: its suites or packs, setups, questions
    and repeats); ``grade_kit report`` where no scored folder is given or it holds none (the
    notebooks then say why)."""
    from grade_kit.pipeline.state import scored_title

    scored = parameters.get("scored")
    try:
        return scored_title(str(scored)) if scored else "grade_kit report"
    except InputError:
        return "grade_kit report"


def _portable(value: Any) -> Any:
    """A parameter as a page shows it: an absolute path as its file name (a page that is
    mailed names no folder of the machine that made it)."""
    if isinstance(value, str) and os.path.isabs(value):
        return Path(value).name
    if isinstance(value, list):
        return [_portable(v) for v in value]
    return value


_PARAMETER_LABELS = {"scored": "scored folder"}
"""How the index names a notebook parameter (the others by their own names)."""


def _index(pages: Sequence[Page], parameters: Mapping[str, Any], title: str) -> str:
    """The folder's front page: its title, the page to mail, each page, and what the pages
    were made from (each parameter given, a path by its name beside the pages; the scored
    folder with how to open it again)."""
    items = "".join(f'<li><a href="{html.escape(p.html.name)}">{html.escape(p.name)}</a></li>'
                    for p in pages)
    rows = []
    for key, value in parameters.items():
        if value is None:
            continue
        shown = _portable(value)
        text = ", ".join(map(str, shown)) if isinstance(shown, list) else str(shown)
        cell = html.escape(text)
        if key == "scored":
            cell += (" (open it again, from the folder this page is in, with "
                     f"<code>gk.reopen({html.escape(repr(text))})</code>,"
                     f" or <code>grade-kit report {html.escape(text)} --out DIR</code> for "
                     "new pages)")
        rows.append(f"<tr><td>{html.escape(_PARAMETER_LABELS.get(key, key))}</td>"
                    f"<td>{cell}</td></tr>")
    made_from = f"<h2>Made from</h2><table>{''.join(rows)}</table>" if rows else ""
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            f"style-src 'unsafe-inline'\"><title>{html.escape(title)}</title>"
            "<style>body{font-family:sans-serif;max-width:50em;margin:2em auto}"
            "td{padding:0 1em 0 0;vertical-align:top}td:first-child{white-space:nowrap}"
            "</style></head><body>"
            f"<h1>{html.escape(title)}</h1>"
            "<p><a href=\"report.html\"><b>report.html</b></a>: every page in one, with a "
            "table of contents and the provenance: the one to mail (it opens offline from "
            "an attachment).</p><p>Its sections, one page each:</p>"
            f"<ul>{items}</ul>{made_from}</body></html>\n")


class _QuietClient(AsyncKernelClient):
    """A client of a report's kernel with no heartbeat channel. Its thread makes its socket
    when it gets to run, and makes it again whenever a ping waits over a second (on a busy
    machine): a client stopped meanwhile has destroyed its zmq context, and the thread died
    with a ``ZMQError: Too many open files`` traceback (1 report in 50). Nothing here reads
    the heartbeat: papermill watches the kernel's process."""

    def start_channels(self, shell: bool = True, iopub: bool = True, stdin: bool = True,
                       hb: bool = False, control: bool = True) -> None:
        super().start_channels(shell=shell, iopub=iopub, stdin=stdin, hb=False,
                               control=control)


class _LocalKernelManager(AsyncKernelManager):
    """A kernel reached over IPC sockets in a private temporary folder (mode 0700), never a
    TCP port: nothing else on the machine can read the kernel's traffic, and the kernel has
    no reason to warn that it runs over TCP without encryption. It remembers the clients it
    hands out, so :meth:`close` stops them with the kernel (one kernel runs several
    notebooks, each with its own client)."""

    def __init__(self, **kwargs: Any) -> None:
        folder = tempfile.mkdtemp(prefix="gk-kernel-")
        super().__init__(transport="ipc", ip=os.path.join(folder, "k"),
                         client_class=f"{__name__}._QuietClient", **kwargs)
        self._socket_folder = folder
        self._clients: list[Any] = []

    def client(self, **kwargs: Any) -> Any:
        return self.own(super().client(**kwargs))

    def own(self, client: Any) -> Any:
        """Stop ``client`` in :meth:`close`."""
        self._clients.append(client)
        return client

    def release_clients(self) -> None:
        """Stop the clients handed out so far (their notebooks are done): their sockets are
        closed now, not when the report ends, so a report's open files stay flat however
        many notebooks one kernel runs."""
        for made in self._clients:
            made.stop_channels()
        self._clients.clear()

    def fresh_namespace(self) -> None:
        """Empty the kernel's namespace and restart its cell count between two notebooks: a
        notebook sees nothing the one before it defined (imported modules stay loaded), and a
        failing cell is numbered as in the notebook run alone. The clients of the notebooks
        before it are stopped first (:meth:`release_clients`)."""
        self.release_clients()
        client = self.blocking_client()
        client.start_channels(stdin=False, hb=False, control=False)  # see _QuietClient
        try:
            reply = client.execute_interactive(
                # the reopened evaluation (kept for the next notebook) leaves the garbage
                # collector first, as the imports did (WARM_UP): the reset's collection
                # walks only what the notebook before made
                "import gc\ngc.freeze()\n"
                "get_ipython().run_line_magic('reset', '-f')\n"
                "get_ipython().execution_count = 1", store_history=False, timeout=60,
                output_hook=lambda message: None)
        finally:
            client.stop_channels()
        if reply["content"]["status"] != "ok":
            raise ReportError(f"the kernel could not be reset between notebooks: "
                              f"{reply['content'].get('evalue')}")

    def close(self) -> None:
        """Stop every client and shut the kernel down."""
        self.release_clients()
        if self.has_kernel:
            run_sync(self.shutdown_kernel)(now=True)

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        if not restart:
            shutil.rmtree(self._socket_folder, ignore_errors=True)


WARM_UP = ("import sys\nsys.modules.setdefault('rfc3987_syntax', None)\n"
           "import gc, grade_kit.presentation.charts, grade_kit.pipeline.evaluation, "
           "grade_kit.presentation.explorer, "
           "grade_kit.views.tables, grade_kit.presentation.report\ngc.freeze()")
"""What a report's kernel runs as it starts: the notebooks' first cells' imports, then
``gc.freeze()``. Before them, ``rfc3987_syntax`` is marked absent: jsonschema (under
altair) imports it where it is installed (JupyterLab brings it) only to check the ``iri``
formats no chart spec uses, and it builds a grammar as it loads, 0.8-0.9 s of the 1.7-1.9 s
these imports take; the kernel boots beside the scoring, on the same two cores. Then
``gc.freeze()``, so the garbage collector no longer walks the imported modules' objects
(they live as long as the kernel). Each full collection, in a reopen or in the namespace
reset between two notebooks, walks only what the notebooks made: on a 100k-run evaluation
a reopen fell from 1.2 s to 0.8 s and a reset from 0.5 s to 0.2 s (docs/scaling.md)."""


class ReportKernels:
    """The kernels a report's notebooks run on, started when made, so they boot and import
    grade_kit while the caller is still busy (``grade-kit report`` makes them before it
    scores). One kernel per two cores, at least one and at most one per notebook: the
    other core scores and exports (on 2 cores, one kernel made a 100k-run report 1-2 s
    faster than two). The notebooks are dealt round-robin over the kernels; those of one
    kernel run one after another in an emptied namespace
    (:meth:`_LocalKernelManager.fresh_namespace`), sharing its imports and the reopened
    evaluation (:func:`~grade_kit.pipeline.evaluation.reopen_or_evaluate`); the kernels run at once.
    A context manager: leaving it shuts every kernel down.

    Args:
        notebooks: The notebooks to run; default all of :data:`NOTEBOOKS`.
        count: How many kernels; default one per two cores (as above).

    Raises:
        ValueError: when ``count`` is below 1.
    """

    def __init__(self, notebooks: Sequence[str] = NOTEBOOKS, count: int | None = None) -> None:
        self.notebooks = tuple(notebooks)
        if count is not None and count < 1:
            raise ValueError(f"count must be at least 1, not {count}")
        count = count or max(1, (os.cpu_count() or 2) // 2)
        count = min(count, max(1, len(self.notebooks)))
        self.groups = [list(self.notebooks[k::count]) for k in range(count)]
        # the kernels render charts for an offline page (grade_kit.presentation.charts reads this)
        env = {**os.environ, OFFLINE_ENV: "1"}
        self.kernels: list[_LocalKernelManager] = []
        try:
            for _ in self.groups:
                kernel = _LocalKernelManager(kernel_name="python3")
                self.kernels.append(kernel)
                run_sync(kernel.start_kernel)(env=env)
                warm = kernel.blocking_client()
                kernel.own(warm)
                # sent, not awaited: the imports run meanwhile (no heartbeat: _QuietClient)
                warm.start_channels(stdin=False, hb=False, control=False)
                warm.execute(WARM_UP, silent=True, store_history=False)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Shut every kernel down."""
        for kernel in self.kernels:
            kernel.close()

    def __enter__(self) -> ReportKernels:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def report_entries(notebooks: Sequence[str] = NOTEBOOKS) -> list[str]:
    """What :func:`build_report` writes into its folder: each notebook executed and as a
    page, ``index.html`` and ``report.html``."""
    return [*(f"{name}{suffix}" for name in notebooks for suffix in (".ipynb", ".html")),
            "index.html", "report.html"]


def build_report(parameters: Mapping[str, Any], out_dir: Path | str, *,
                 notebooks: Sequence[str] = NOTEBOOKS,
                 notebook_dir: Path = NOTEBOOK_DIR, title: str | None = None,
                 kernels: ReportKernels | None = None) -> Path:
    """Run each notebook with papermill on a ``python3`` kernel and export it.

    Args:
        parameters: Injected into every notebook's ``parameters`` cell (paths should be
            absolute: the kernel runs in this process's working folder).
        out_dir: Where ``<name>.ipynb`` (executed), ``<name>.html`` and ``index.html`` go.
        notebooks: Which notebooks; default all of :data:`NOTEBOOKS`.
        notebook_dir: Where they are; default the checkout's ``notebooks/``.
        title: The title of ``report.html``; default from the inputs' file names
            (:func:`default_title`).
        kernels: Kernels started ahead for ``notebooks`` (the caller shuts them down);
            default: started here, one per core, and shut down at the end.

    Returns:
        The path of ``index.html``; ``report.html`` (every page in one, with a table of
        contents: the one to mail) is beside it.

    Raises:
        ReportError: naming the notebook and the failing cell (``out_dir`` is then left as
            it was).
    """
    final = Path(out_dir).resolve()
    final.parent.mkdir(parents=True, exist_ok=True)
    # Every page is made in a staging folder beside ``final`` and moved in only when all
    # succeeded: a failing report leaves no partial pages (nor stale ones mixed with new).
    out = Path(tempfile.mkdtemp(prefix=f".{final.name}.partial-", dir=final.parent))
    try:
        if kernels is None:
            with ReportKernels(notebooks) as started:
                _build(parameters, out, started, notebook_dir.resolve(),
                       title or default_title(parameters))
        else:
            if kernels.notebooks != tuple(notebooks):
                raise ValueError(f"the kernels were started for {kernels.notebooks}, not "
                                 f"{tuple(notebooks)}")
            _build(parameters, out, kernels, notebook_dir.resolve(),
                   title or default_title(parameters))
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise
    final.mkdir(exist_ok=True)
    for made in sorted(out.iterdir()):
        os.replace(made, final / made.name)
    out.rmdir()
    return final / "index.html"


def build_page(notebook: str, parameters: Mapping[str, Any], out: Path, title: str, *,
               notebook_dir: Path = NOTEBOOK_DIR) -> Path:
    """Run one notebook with papermill on a fresh ``python3`` kernel (a report's, which draws
    charts for an offline page) and export it to the offline page ``out`` (the executed
    notebook beside it, ``<out stem>.ipynb``), as ``grade-kit diff`` does with
    ``diff.ipynb``.

    Raises:
        ReportError: naming the notebook and the failing cell (``out`` is then not
            written).
    """
    import papermill
    from papermill.exceptions import PapermillExecutionError

    source = notebook_dir / f"{notebook}.ipynb"
    executed = out.with_suffix(".ipynb")
    try:
        with ReportKernels((notebook,), count=1) as kernels:  # charts drawn for offline
            papermill.execute_notebook(str(source), str(executed), parameters=dict(parameters),
                                       kernel_name="python3", progress_bar=False,
                                       log_output=False, km=kernels.kernels[0])
    except PapermillExecutionError as exc:
        raise ReportError(f"{source.name}: cell {exc.exec_count} failed: {exc.ename}: "
                          f"{exc.evalue}") from exc
    return export_html(executed, out, title)


FOOTER_TAG = "footer"
"""Cells tagged so (the provenance) go to the end of ``report.html``."""
HEADLINE_TAG = "headline"
"""Cells tagged so (the answer: ``ev.headline`` and its significance matrix) open
``report.html``, before its table of contents."""
IN_HEADLINE_TAG = "in-headline"
"""Cells tagged so show what the headline already shows (the significance matrix in its
notebook): kept on their own page, left out of ``report.html``, which shows it once."""


def _anchor(heading: str) -> str:
    """The id nbconvert gives a Markdown heading (its text, spaces as ``-``)."""
    return heading.strip().replace(" ", "-")


_ABSENT_REASON = re.compile(ABSENT_ATTRIBUTE + r'="([^"]*)"')


def _heading(cell: Any) -> tuple[int, str] | None:
    """A Markdown cell's heading (level 1 or 2, its text), or None."""
    if cell.cell_type != "markdown":
        return None
    first = cell.source.lstrip().split("\n", 1)[0]
    for level, mark in ((1, "# "), (2, "## ")):
        if first.startswith(mark):
            return level, first[len(mark):].strip()
    return None


def _absence(cells: Sequence[Any]) -> str | None:
    """Why a section's data does not exist: the reason of its outputs when every output of
    its code cells is a marked sentence (:func:`~grade_kit.views.tables.absent_html`),
    else None (a section with no output at all is not absent)."""
    reasons = []
    for cell in cells:
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if output.get("output_type") not in ("display_data", "execute_result"):
                continue
            found = _ABSENT_REASON.search(str(output.get("data", {}).get("text/html", "")))
            if found is None:
                return None
            reasons.append(html.unescape(found.group(1)))
    return reasons[0] if reasons else None


def _left_out(headings: Sequence[str], reason: str) -> Any:
    import nbformat

    names = [f"**{md_cell(h)}**" for h in headings]
    named = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return nbformat.v4.new_markdown_cell(f"{named}: left out. {md_cell(reason)}",
                                         metadata={"tags": [LEFT_OUT_TAG]})


LEFT_OUT_TAG = "left-out"
"""Tags the line that stands for the sections a page left out."""


def leave_out_absent(nb: Any, page: bool = False) -> Any:
    """The notebook with each section whose data does not exist left out, one line saying
    why in its place: a section (a level-2 heading and the cells up to the next heading) is
    left out when every output of its cells is a marked sentence (``gk.table(...,
    absent=...)``, a chart's note); neighbouring sections left out for the same reason share
    one line. When every section of the notebook is left out, so is the notebook, under its
    title: one line in ``report.html``; with ``page`` (a page of its own), its title as the
    page's heading, then the line saying why. Sections with data are kept as they are (an
    absent output among them keeps its sentence)."""
    sections: list[list[Any]] = [[]]
    for cell in nb.cells:
        if _heading(cell) is not None:
            sections.append([])
        sections[-1].append(cell)
    sections = [s for s in sections if s]
    reasons = [_absence(s) for s in sections]
    present = [s for s, r in zip(sections, reasons, strict=True)
               if r is None and any(c.get("outputs") for c in s)]
    kept: list[Any] = []
    if not present and any(reasons):
        title = next((h[1] for s in sections if (h := _heading(s[0])) and h[0] == 1), "")
        first = next(r for r in reasons if r)
        kept = [_left_out([title or "This page"], first)]
        if page and title:
            import nbformat

            kept.insert(0, nbformat.v4.new_markdown_cell(f"# {md_cell(title)}"))
    else:
        pending: list[str] = []
        pending_reason = ""
        for section, reason in zip(sections, reasons, strict=True):
            heading = _heading(section[0])
            if reason is not None and heading is not None and heading[0] == 2:
                if pending and reason != pending_reason:
                    kept.append(_left_out(pending, pending_reason))
                    pending = []
                pending.append(heading[1])
                pending_reason = reason
                continue
            if pending:
                kept.append(_left_out(pending, pending_reason))
                pending = []
            kept.extend(section)
        if pending:
            kept.append(_left_out(pending, pending_reason))
    out = nb.copy()
    out.cells = kept
    return out


def merge_pages(executed: Sequence[Path], title: str) -> Any:
    """One notebook of the executed notebooks, for ``report.html``: a title, the cells
    tagged :data:`HEADLINE_TAG` (the answer: sentences, one table, the significance
    matrix; one with nothing to show, such as the matrix of one setup, is left out: the
    sentences say why), a table of contents linking each notebook's section, the notebooks in order,
    and the cells tagged :data:`FOOTER_TAG` (the provenance) last."""
    import nbformat

    parts = [leave_out_absent(nbformat.read(path, as_version=4)) for path in executed]
    body: list[Any] = []
    footer: list[Any] = []
    first: list[Any] = []
    toc: list[str] = []
    for nb in parts:
        for cell in nb.cells:
            tags = cell.get("metadata", {}).get("tags", [])
            if HEADLINE_TAG in tags:
                if _absence([cell]) is None:  # the headline's sentences say what is absent
                    first.append(cell)
                continue
            if IN_HEADLINE_TAG in tags:
                continue
            if FOOTER_TAG in tags:
                footer.append(cell)
                continue
            body.append(cell)
            if cell.cell_type == "markdown":
                for line in cell.source.splitlines():
                    if line.startswith(("# ", "## ")) and not line.startswith("## Parameters"):
                        level = 0 if line.startswith("# ") else 1
                        heading = line.lstrip("#").strip()
                        toc.append(f"{'    ' * level}- [{heading}](#{_anchor(heading)})")
    for cell in footer:
        for line in cell.get("source", "").splitlines() if cell.cell_type == "markdown" else ():
            if line.startswith("## "):
                toc.append(f"- [{line[3:].strip()}](#{_anchor(line[3:])})")
    head = nbformat.v4.new_markdown_cell(f"# {md_cell(title)}")
    contents = nbformat.v4.new_markdown_cell("**Contents**\n\n" + "\n".join(toc))
    merged = nbformat.v4.new_notebook(cells=[head, *first, contents, *body, *footer])
    merged.metadata = parts[0].metadata if parts else {}
    return merged


def _build(parameters: Mapping[str, Any], out: Path, kernels: ReportKernels,
           notebook_dir: Path, title: str) -> Path:
    """:func:`build_report` into ``out``."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    notebooks = kernels.notebooks
    for name in notebooks:
        if not (notebook_dir / f"{name}.ipynb").is_file():
            raise ReportError(f"{notebook_dir / f'{name}.ipynb'}: no such notebook")

    exports = ThreadPoolExecutor(max_workers=1)  # a page exported while its kernel goes on

    def export(name: str, executed: Path) -> Page:
        page = export_html(executed, out / f"{name}.html", name.replace("_", " "),
                           bundle.result())
        return Page(name, page, executed)

    def run(kernel: _LocalKernelManager, group: list[str]) -> list[Future[Page]]:
        pages = []
        for i, name in enumerate(group):
            if i:
                kernel.fresh_namespace()
            source = notebook_dir / f"{name}.ipynb"
            executed = out / f"{name}.ipynb"
            try:
                # no ``cwd``: papermill would chdir this whole process, from several
                # threads at once (every path the notebooks get is absolute)
                papermill.execute_notebook(str(source), str(executed),
                                           parameters=dict(parameters),
                                           kernel_name="python3", progress_bar=False,
                                           log_output=False, km=kernel)
            except PapermillExecutionError as exc:
                raise ReportError(f"{source.name}: cell {exc.exec_count} failed: "
                                  f"{exc.ename}: {exc.evalue}") from exc
            pages.append(exports.submit(export, name, executed))
        return pages

    with exports, ThreadPoolExecutor(max_workers=len(kernels.groups)) as pool:
        bundle = exports.submit(_vega_bundle)  # while the kernels run the notebooks
        made = {p.name: p for group in pool.map(run, kernels.kernels, kernels.groups)
                for p in (page.result() for page in group)}
    pages = [made[name] for name in notebooks]
    merged = merge_pages([p.executed for p in pages], title)
    export_html(merged, out / "report.html", title, bundle.result(), page=False)
    return atomic_write_text(out / "index.html", _index(pages, parameters, title))
