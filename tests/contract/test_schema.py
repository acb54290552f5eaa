"""The checked-in JSON Schemas are generated from the pydantic models and must not drift."""

from __future__ import annotations

import json

import pytest

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


@pytest.mark.parametrize(("stamp", "valid"), [
    ("0001-01-01T00:00:00+01:00", False),   # 0000-12-31T23:00 in UTC
    ("0001-01-01T00:00:00-01:00", True),    # 01:00 in UTC, year 1
    ("0001-01-01T00:59:59+01:00", False),
    ("0002-01-01T00:00:00+23:59", True),    # the earliest year taken without converting
    ("9998-12-31T23:59:59-23:59", True),    # the latest one
    ("9999-12-31T22:59:59-01:00", True),
    ("9999-12-31T23:00:00-01:00", False),   # 10000-01-01 in UTC
    ("2026-11-02T09:00:00", False),         # naive
])
def test_a_timestamp_must_be_representable_in_utc(stamp: str, valid: bool) -> None:
    """docs/methodology.md §4 "Timing": years 1-9999 once converted to UTC; years 2-9998 always are
    (an offset is under a day), so only years 1 and 9999 are converted to check."""
    from grade_kit.schema import parse_timestamp

    if valid:
        assert parse_timestamp(stamp).isoformat(sep="T") == stamp
    else:
        with pytest.raises(ValueError, match=r"out of range in UTC|naive"):
            parse_timestamp(stamp)


def test_material_error_follows_the_core_conclusion_where_only_that_is_stated() -> None:
    from grade_kit.schema import material_error_of

    assert [material_error_of(c) for c in ("material_error", "pending", "correct",
                                           "no_gradable_conclusion")] == [
        "yes", "pending", "no", "no"]
