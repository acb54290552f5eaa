"""Reading Vega-Lite specs in the tests: the setup colours a chart (or a page) uses; and
the many-setup inputs the page tests read."""

from __future__ import annotations

import json
import random
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

CODE_HINTS = re.compile(r"\bev\.[a-z_]+|\bd\.(?:flips|summary|questions)\b|<code>\.[a-z_]+"
                        r"</code>|arrow keys|click it")
"""What a page must not say (issue 55, item 6): code a notebook reader types, or how to
use a widget the page does not have."""


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


def twenty_setups(folder: Path, seed: int = 7) -> list[str]:
    """20 setups with 40-plus-character names (vendor/model-family-NN-instruct-date), 30
    plain questions x 2 repeats, timestamps, tool calls and grade records (``seed``: another
    seed, other latencies, calls and grades of the same runs), written as tasks.jsonl,
    runs.jsonl and grades.jsonl under ``folder``."""
    rng = random.Random(seed)
    vendors = ["anthropic", "openai", "google", "meta-llama", "mistralai"]
    names = [f"{vendors[i % 5]}/model-family-{i:02d}-instruct-2026-01-{i % 28 + 1:02d}"
             for i in range(20)]
    base = datetime(2026, 1, 1, tzinfo=UTC)
    folder.mkdir(parents=True)
    tasks = [json.dumps({"task_id": f"q{q:02d}", "prompt": f"question {q}"}) for q in range(30)]
    runs, grades = [], []
    for k, name in enumerate(names):
        for q in range(30):
            for r in (1, 2):
                run_id = f"{k}-{q}-{r}"
                t0 = base + timedelta(seconds=rng.random() * 1000)
                calls = [{"id": f"c{j}", "name": rng.choice(["sql", "search", "python"])}
                         for j in range(rng.randint(0, 6))]
                runs.append(json.dumps({
                    "run_id": run_id, "setup": name, "task_id": f"q{q:02d}", "repeat": r,
                    "status": "delivered", "response": {"text": "answer"}, "tool_calls": calls,
                    "events": {"submitted": t0.isoformat(), "received": (t0 + timedelta(
                        seconds=rng.lognormvariate(1 + k * 0.05, 0.5))).isoformat()}}))
                ok = rng.random() < 0.2 + 0.035 * k
                grades.append(json.dumps({
                    "run_id": run_id, "grader": "synthetic", "material_error": "no",
                    "core_conclusion": "correct" if ok else "no_gradable_conclusion",
                    "request_fulfilment": "full" if ok else "not_met"}))
    for name, lines in (("tasks", tasks), ("runs", runs), ("grades", grades)):
        (folder / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return names
