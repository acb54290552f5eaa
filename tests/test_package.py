"""The package's public surface: every name of ``__all__`` resolves, on first use."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

import grade_kit as gk

ROOT = Path(__file__).resolve().parents[1]


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


def test_an_installed_wheel_writes_the_html_report(tmp_path: Path) -> None:
    """The wheel carries the notebooks (grade_kit/notebooks, a link to notebooks/) and the
    report's template: installed outside any checkout, `grade-kit demo` writes report.html.
    (The wheel is installed alone with --target; its dependencies come from this venv.)"""
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                    str(wheels), str(ROOT)], check=True, capture_output=True, timeout=300)
    (wheel,) = wheels.glob("grade_kit-*.whl")
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(site), str(wheel)], check=True, capture_output=True, timeout=300)
    run = tmp_path / "elsewhere"
    run.mkdir()
    code = ("import grade_kit, sys; print(grade_kit.__file__); from grade_kit.cli import main;"
            " sys.exit(main(['demo', '--recorded', '--out', 'out']))")
    done = subprocess.run([sys.executable, "-P", "-c", code], cwd=run, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(site)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[0].startswith(str(site))  # the installed copy ran
    assert (run / "out" / "html" / "report.html").is_file()
    assert "the report to mail" in done.stdout
