"""The package's public surface: every name of ``__all__`` resolves, on first use."""

from __future__ import annotations

import subprocess
import sys
import types

import pytest

import grade_kit as gk


def test_every_public_name_resolves_and_is_listed() -> None:
    for name in gk.__all__:
        assert getattr(gk, name) is not None, name
    assert set(gk.__all__) <= set(dir(gk))
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        _ = gk.not_a_name


def test_submodules_do_not_shadow_the_functions_named_like_them() -> None:
    import grade_kit.evaluate
    import grade_kit.fetch  # noqa: F401

    assert isinstance(gk.evaluate, types.FunctionType) and gk.evaluate.__name__ == "evaluate"
    assert isinstance(gk.fetch, types.FunctionType) and gk.fetch.__name__ == "fetch"
    assert sys.modules["grade_kit.evaluate"].evaluate is gk.evaluate


def test_a_reading_process_imports_only_what_it_reads_with() -> None:
    # A reading process imports grade_kit._parallel: not pandas, the scoring, the judges
    # or the HTTP clients (they would add about 0.6 s to its start).
    code = ("import sys, grade_kit._parallel; print(sorted(m for m in ('pandas', "
            "'grade_kit.evaluate', 'grade_kit.judges', 'aiohttp', 'httpx') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
