"""Offline HTML scorecards (``grade-kit report``): the parametrised notebooks run with papermill
on a real kernel, exported with nbconvert without code cells or the parameters cells, with the
chart libraries inlined once per page and nothing fetched from the network, plus an
``index.html`` linking them. A page works from a mail attachment.
"""

from __future__ import annotations

import html
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from jupyter_client.manager import AsyncKernelManager

from grade_kit.io import InputError
from grade_kit.report.files import atomic_write
from grade_kit.report.markdown import md_cell

__all__ = ["FOOTER_TAG", "NOTEBOOKS", "NOTEBOOK_DIR", "ReportError", "build_report",
           "default_title", "export_html", "merge_pages"]

NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"
"""The notebooks: ``grade_kit/notebooks``, a link to the checkout's ``notebooks/`` (the one
copy), copied into a wheel as package data, so an installed grade_kit reports too."""

NOTEBOOKS = ("scorecard", "timing_and_tools", "compare", "explorer")
"""The notebooks ``grade-kit report`` runs, in index order."""

TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
TEMPLATE = "grade_kit_offline"


class ReportError(InputError):
    """A notebook failed: names the notebook and the cell."""


@dataclass(frozen=True)
class Page:
    """One exported notebook."""

    name: str
    html: Path
    executed: Path


def _vega_bundle() -> str:
    import vl_convert

    make_bundle = cast(Any, vl_convert.javascript_bundle)  # its stub wants a snippet; the
    bundle: str = make_bundle()  # default (None) is the one that defines window.vegaEmbed
    return bundle.replace("</script", "<\\/script")


def export_html(notebook: Path | Any, out: Path, title: str, bundle: str | None = None) -> Path:
    """Export an executed notebook (a file, or a notebook node) to offline HTML: no input
    cells, no parameters cells, no CDN scripts, the chart libraries inlined once."""
    import nbformat
    from nbconvert import HTMLExporter
    from nbconvert.preprocessors import TagRemovePreprocessor

    nb = (nbformat.read(notebook, as_version=4) if isinstance(notebook, Path)
          else notebook)
    nb.metadata["title"] = title
    # no widget state: widgets need a kernel, so each output's static HTML is exported
    # instead (and no widget manager script is fetched)
    nb.metadata.pop("widgets", None)
    exporter = HTMLExporter(template_name=TEMPLATE, extra_template_basedirs=[str(TEMPLATE_DIR)],
                            exclude_input=True, exclude_input_prompt=True,
                            exclude_output_prompt=True)
    remover = TagRemovePreprocessor(remove_cell_tags={"parameters", "injected-parameters"},
                                    enabled=True)
    exporter.register_preprocessor(remover, enabled=True)
    body, _ = exporter.from_notebook_node(nb, resources={"vega_bundle": bundle or
                                                         _vega_bundle()})
    def write(path: Path) -> None:
        path.write_text(body, encoding="utf-8")

    return atomic_write(out, write)


def default_title(parameters: Mapping[str, Any]) -> str:
    """``grade_kit report: <the runs' (or logs') file names>``, at most three named."""
    given = parameters.get("runs") or parameters.get("tasks") or []
    names = [Path(str(p)).name for p in (given if isinstance(given, list) else [given])]
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return f"grade_kit report: {shown}" if shown else "grade_kit report"


def _portable(value: Any) -> Any:
    """A parameter as a page shows it: an absolute path as its file name (a page that is
    mailed names no folder of the machine that made it)."""
    if isinstance(value, str) and os.path.isabs(value):
        return Path(value).name
    if isinstance(value, list):
        return [_portable(v) for v in value]
    return value


def _index(pages: Sequence[Page], parameters: Mapping[str, Any]) -> str:
    items = "".join(f'<li><a href="{html.escape(p.html.name)}">{html.escape(p.name)}</a></li>'
                    for p in pages)
    params = "".join(f"<tr><td>{html.escape(str(k))}</td>"
                     f"<td>{html.escape(repr(_portable(v)))}</td></tr>"
                     for k, v in parameters.items())
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "style-src 'unsafe-inline'\"><title>grade_kit report</title>"
            "<style>body{font-family:sans-serif;max-width:50em;margin:2em auto}"
            "td{padding:0 1em}</style></head><body><h1>grade_kit report</h1>"
            "<p><a href=\"report.html\"><b>report.html</b></a>: every page in one, with a "
            "table of contents and the provenance: the one to mail (it opens offline from "
            "an attachment).</p><p>Its sections, one page each:</p>"
            f"<ul>{items}</ul><h2>Parameters</h2><table>{params}</table></body></html>\n")


class _LocalKernelManager(AsyncKernelManager):
    """A kernel reached over IPC sockets in a private temporary folder (mode 0700), never a
    TCP port: nothing else on the machine can read the kernel's traffic, and the kernel has
    no reason to warn that it runs over TCP without encryption."""

    def __init__(self, **kwargs: Any) -> None:
        folder = tempfile.mkdtemp(prefix="gk-kernel-")
        super().__init__(transport="ipc", ip=os.path.join(folder, "k"), **kwargs)
        self._socket_folder = folder

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        if not restart:
            shutil.rmtree(self._socket_folder, ignore_errors=True)


def build_report(parameters: Mapping[str, Any], out_dir: Path | str, *,
                 notebooks: Sequence[str] = NOTEBOOKS,
                 notebook_dir: Path = NOTEBOOK_DIR, title: str | None = None) -> Path:
    """Run each notebook with papermill on the ``python3`` kernel and export it.

    Args:
        parameters: Injected into every notebook's ``parameters`` cell (paths should be
            absolute: the kernel runs in this process's working folder).
        out_dir: Where ``<name>.ipynb`` (executed), ``<name>.html`` and ``index.html`` go.
        notebooks: Which notebooks; default all of :data:`NOTEBOOKS`.
        notebook_dir: Where they are; default the checkout's ``notebooks/``.
        title: The title of ``report.html``; default from the inputs' file names
            (:func:`default_title`).

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
        _build(parameters, out, notebooks, notebook_dir.resolve(),
               title or default_title(parameters))
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise
    final.mkdir(exist_ok=True)
    for made in sorted(out.iterdir()):
        os.replace(made, final / made.name)
    out.rmdir()
    return final / "index.html"


FOOTER_TAG = "footer"
"""Cells tagged so (the provenance) go to the end of ``report.html``."""


def _anchor(heading: str) -> str:
    """The id nbconvert gives a Markdown heading (its text, spaces as ``-``)."""
    return heading.strip().replace(" ", "-")


def merge_pages(executed: Sequence[Path], title: str) -> Any:
    """One notebook of the executed notebooks, for ``report.html``: a title and a table of
    contents linking each notebook's section, the notebooks in order, and the cells tagged
    :data:`FOOTER_TAG` (the provenance) last."""
    import nbformat

    parts = [nbformat.read(path, as_version=4) for path in executed]
    body: list[Any] = []
    footer: list[Any] = []
    toc: list[str] = []
    for nb in parts:
        for cell in nb.cells:
            tags = cell.get("metadata", {}).get("tags", [])
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
    head = nbformat.v4.new_markdown_cell(
        f"# {md_cell(title)}\n\n**Contents**\n\n" + "\n".join(toc))
    merged = nbformat.v4.new_notebook(cells=[head, *body, *footer])
    merged.metadata = parts[0].metadata if parts else {}
    return merged


def _build(parameters: Mapping[str, Any], out: Path, notebooks: Sequence[str],
           notebook_dir: Path, title: str) -> Path:
    """:func:`build_report` into ``out``."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    bundle = _vega_bundle()
    previous = os.environ.get("GRADE_KIT_OFFLINE_HTML")
    os.environ["GRADE_KIT_OFFLINE_HTML"] = "1"  # the kernel renders charts for the page
    def run(name: str) -> Page:
        source = notebook_dir / f"{name}.ipynb"
        if not source.is_file():
            raise ReportError(f"{source}: no such notebook")
        executed = out / f"{name}.ipynb"
        try:
            # no ``cwd``: papermill would chdir this whole process, from four threads at
            # once (every path the notebooks get is absolute)
            papermill.execute_notebook(str(source), str(executed), parameters=dict(parameters),
                                       kernel_name="python3", progress_bar=False,
                                       log_output=False,
                                       kernel_manager_class=_LocalKernelManager)
        except PapermillExecutionError as exc:
            raise ReportError(f"{source.name}: cell {exc.exec_count} failed: {exc.ename}: "
                              f"{exc.evalue}") from exc
        page = export_html(executed, out / f"{name}.html", name.replace("_", " "), bundle)
        return Page(name, page, executed)

    try:  # one kernel per notebook, at once
        with ThreadPoolExecutor(max_workers=max(1, len(notebooks))) as pool:
            pages = list(pool.map(run, notebooks))
    finally:
        if previous is None:
            os.environ.pop("GRADE_KIT_OFFLINE_HTML", None)
        else:
            os.environ["GRADE_KIT_OFFLINE_HTML"] = previous
    merged = merge_pages([p.executed for p in pages], title)
    export_html(merged, out / "report.html", title, bundle)
    text = _index(pages, parameters)

    def write(path: Path) -> None:
        path.write_text(text, encoding="utf-8")

    return atomic_write(out / "index.html", write)
