"""A chart as offline HTML: a ``<div>`` and the script that draws a Vega or Vega-Lite spec
into it with ``vegaEmbed``, from the libraries a page inlines once (the report's pages, an
exported notebook). No altair here: exporting a notebook does not import it."""

from __future__ import annotations

import json
import uuid
from typing import Any

VEGA_MIME = "application/vnd.vega.v5+json"
"""How grade_kit's live renderer sends a chart to a front end (a compiled Vega spec)."""

VEGA_LITE_MIMES = ("application/vnd.vegalite.v5+json", "application/vnd.vegalite.v4+json",
                   "application/vnd.vegalite.v6+json")
"""How Altair's own renderers send one (a Vega-Lite spec)."""


def script_safe(spec: dict[str, Any]) -> str:
    """The spec as JSON that cannot close its ``<script>`` element (``<``, ``>`` and ``&``
    escaped), whatever text the data holds."""
    return (json.dumps(spec).replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("&", "\\u0026"))


def vega_embed_html(spec: dict[str, Any]) -> str:
    """A ``<div class="gk-chart">`` and the script that draws ``spec`` (Vega or Vega-Lite:
    vegaEmbed reads which from its ``$schema``) into it as SVG, with tooltips and no action
    menu, once ``window.vegaEmbed`` is defined (the page's inlined libraries); an error goes
    to the console, never to the page."""
    target = f"gk-vis-{uuid.uuid4().hex}"
    script = (f"(function(){{var spec={script_safe(spec)};function go(){{"
              f"if(window.vegaEmbed){{vegaEmbed('#{target}',spec,{{renderer:'svg',"
              f"actions:false}}).catch(function(e){{console.error(e);}});}}"
              f"else{{setTimeout(go,20);}}}}go();}})();")
    return f'<div id="{target}" class="gk-chart"></div><script>{script}</script>'
