"""Reading Vega-Lite specs in the tests: the setup colours a chart (or a page) uses."""

from __future__ import annotations

from typing import Any


def colour_maps(spec: Any) -> list[dict[str, str]]:
    """label -> colour of every setup colour scale in ``spec`` (layers, facets and
    concatenations included)."""
    found: list[dict[str, str]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            colour = node.get("encoding", {}).get("color", {})
            scale = colour.get("scale", {}) if isinstance(colour, dict) else {}
            if isinstance(colour, dict) and colour.get("field") == "label" and "domain" in scale:
                found.append(dict(zip(scale["domain"], scale["range"], strict=True)))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(spec)
    return found


def one_colour_each(maps: list[dict[str, str]]) -> dict[str, str]:
    """The one label -> colour map all of ``maps`` agree on (an assertion error where a
    setup changes colour between them)."""
    merged: dict[str, str] = {}
    for m in maps:
        for label, colour in m.items():
            assert merged.setdefault(label, colour) == colour, (label, colour)
    return merged
