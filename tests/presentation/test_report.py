"""The Markdown scorecard: every cell and heading built from input text is escaped."""

from __future__ import annotations

import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

import grade_kit as gk
from grade_kit.atomic import indented_json
from grade_kit.text import md_cell
from tests.conftest import make_run, make_task

HOSTILE = "evil | x\n# Heading <script>alert(1)</script> `code` \\"


def test_md_cell_escapes_pipes_breaks_and_html() -> None:
    assert md_cell("a|b") == "a\\|b"
    assert md_cell("a\nb\r\tc") == "a b  c"
    assert md_cell("<b>&</b>") == "&lt;b&gt;&amp;&lt;/b&gt;"
    assert md_cell("`x` \\") == "\\`x\\` \\\\"
    assert md_cell(None) == "—" and md_cell(float("nan")) == "—"
    assert md_cell(0.12345) == "0.123" and md_cell(3) == "3" and md_cell(True) == "true"


def test_no_input_can_add_a_row_a_heading_or_a_tag() -> None:
    task = make_task(required_limitations=[{"id": "l", "text": "single quarter"}])
    runs = [make_run("r1", setup=HOSTILE, findings=["x"],
                     events={"submitted": "2026-11-02T09:00:00+00:00",
                             HOSTILE.replace("\n", " "): "2026-11-02T09:00:03+00:00",
                             "received": "2026-11-02T09:00:05+00:00"}),
            make_run("r2", setup="plain", status="failed", error=HOSTILE)]
    grade = {"run_id": "r1", "core_conclusion": "material_error", "request_fulfilment": "full",
             "material_error": "yes", "claim": HOSTILE, "evidence": "e | f", "effect": "g",
             "grader": HOSTILE}
    ev = gk.evaluate([task], runs, grades=[grade], judge="rules")
    card = ev.scorecard_markdown()
    assert "<script>" not in card
    assert not re.search(r"^# Heading", card, re.MULTILINE)
    headings = [line for line in card.splitlines() if line.startswith("#")]
    assert all("Heading" not in h for h in headings)
    # every table row has as many cells as its header: no input added a column or a row
    blocks: list[list[str]] = [[]]
    for line in card.splitlines():
        if line.startswith("|"):
            blocks[-1].append(line)
        elif blocks[-1]:
            blocks.append([])
    tables = [b for b in blocks if b]
    assert len(tables) >= 8
    for table in tables:
        widths = {len(re.split(r"(?<!\\)\|", row)) for row in table}
        assert len(widths) == 1, table
    assert "evil \\| x # Heading &lt;script&gt;" in card


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-10**30, 10**30)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30)


@settings(max_examples=500, deadline=None)
@given(_JSON_VALUES)
def test_indented_json_is_json_dumps_with_an_indent(value: object) -> None:
    assert indented_json(value) == json.dumps(value, indent=2, ensure_ascii=False)


def test_indented_json_edge_values() -> None:
    for value in ({}, [], {"a": [[]], "b": {}}, 1e-05, -0.0, 1e300, "é\u2028\"\\", {"\ud800": 1},
                  [0.1, 10**40, None, True]):
        assert indented_json(value) == json.dumps(value, indent=2, ensure_ascii=False)


def _one_piece(model: object) -> str:
    from pydantic import BaseModel

    assert isinstance(model, BaseModel)
    return indented_json(model.model_dump(mode="json")) + "\n"


def test_results_json_written_in_pieces_is_the_one_piece_text() -> None:
    from grade_kit.atomic import indented_model_pieces

    task = make_task(required_limitations=[{"id": "l", "text": "single quarter"}])
    runs = [make_run("r1", setup="b é", findings=["x"]),
            make_run("r2", setup="a\u2028\"", findings=["y"]),
            make_run("r3", setup="a\u2028\"", status="failed", error="\ud800 lone")]
    grade = {"run_id": "r1", "core_conclusion": "material_error", "request_fulfilment": "full",
             "material_error": "yes", "claim": "c", "evidence": "e", "effect": "f",
             "grader": "g"}
    results = gk.evaluate([task], runs, grades=[grade], judge="rules").results
    assert len(results.setups) == 2
    text = "".join(indented_model_pieces(results))
    assert text == _one_piece(results)
    assert json.loads(text) == results.model_dump(mode="json")
    # a model with no mapping, an empty mapping, and no field at all
    from grade_kit.schema import Interval, Reject

    for model in (Interval(low=0.1, high=1e-7), Reject(source="s", line=None, field="f",
                                                        error="e"),
                  results.model_copy(update={"setups": {}})):
        assert "".join(indented_model_pieces(model)) == _one_piece(model)

    from pydantic import BaseModel

    class Empty(BaseModel):
        pass

    assert "".join(indented_model_pieces(Empty())) == _one_piece(Empty()) == "{}\n"


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab |<>&\\\n\r\t`é\u2028") | st.characters()))
def test_md_cell_of_any_text_is_its_escaped_translation(text: str) -> None:
    from grade_kit.text import _ESCAPES

    assert md_cell(text) == text.translate(_ESCAPES)
