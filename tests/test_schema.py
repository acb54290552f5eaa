"""The checked-in JSON Schemas are generated from the pydantic models and must not drift."""

from __future__ import annotations

import json

from grade_kit.schema import SCHEMA_DIR, Results, json_schemas


def test_checked_in_schemas_match_the_models() -> None:
    for name, text in json_schemas().items():
        path = SCHEMA_DIR / name
        assert path.is_file(), f"{name} missing: run `make schemas`"
        checked_in = json.loads(path.read_text(encoding="utf-8"))
        assert checked_in == json.loads(text), f"{name} drifted: run `make schemas`"


def test_results_schema_lists_the_design_keys() -> None:
    schema = json.loads((SCHEMA_DIR / "results.schema.json").read_text())
    assert {"setups", "common_subset", "rejected"} <= set(schema["properties"])
    setup = schema["$defs"]["SetupResults"]["properties"]
    assert {"overall", "tracks", "packs", "tasks", "grades", "timing", "tool_calls"} <= set(setup)
    dims = schema["$defs"]["DimensionScores"]["properties"]
    assert set(dims) == {"grounding_accuracy", "insight_quality", "evidence_linkage",
                         "calibration_limitation_handling", "consistency", "structure_usability"}
    assert Results.model_json_schema() == schema
