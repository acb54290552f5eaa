"""A store scored on a real Dask cluster (``dask.distributed.LocalCluster``, two worker
processes) through the docs' example code gives the in-memory results figure for figure."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

import grade_kit as gk
from tests.paths import FIXTURES, ROOT

pytest.importorskip("dask.distributed", reason="the dask extra: pip install -e '.[dask]'")


def _example() -> Any:
    spec = importlib.util.spec_from_file_location(
        "dask_cluster", ROOT / "docs" / "examples" / "dask_cluster.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _figures(ev: gk.Evaluation) -> dict[str, Any]:
    data = ev.results.model_dump(mode="json")
    data["provenance"].pop("created_at")
    data["provenance"].pop("arguments")
    return data


def test_a_store_scored_on_a_dask_cluster_equals_the_in_memory_results(
        tmp_path: Path) -> None:
    store = tmp_path / "store"
    gk.pack(FIXTURES / "tasks", FIXTURES / "runs", store, partitions=4, progress=False)
    on_dask = _example().score_on_dask(store, workers=2, grader="rules")
    in_memory = gk.evaluate(FIXTURES / "tasks", FIXTURES / "runs", grader="rules")
    assert _figures(on_dask) == _figures(in_memory)
    assert on_dask.runs_frame.equals(in_memory.runs_frame)
    for name in ("runs", "tasks", "tracks", "packs", "overall"):
        assert getattr(on_dask.scores, name).equals(getattr(in_memory.scores, name)), name
