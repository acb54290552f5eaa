"""The package's public surface: every name of ``__all__`` resolves, on first use."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

import grade_kit as gk
from tests.paths import ROOT


def test_every_public_name_resolves_and_is_listed() -> None:
    for name in gk.__all__:
        assert getattr(gk, name) is not None, name
    assert set(gk.__all__) <= set(dir(gk))
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        _ = gk.not_a_name


def test_submodules_do_not_shadow_the_functions_named_like_them() -> None:

    assert isinstance(gk.evaluate, types.FunctionType) and gk.evaluate.__name__ == "evaluate"
    assert isinstance(gk.fetch, types.FunctionType) and gk.fetch.__name__ == "fetch"
    assert sys.modules["grade_kit.pipeline.evaluation"].evaluate is gk.evaluate


def test_an_installed_wheel_writes_the_html_report(tmp_path: Path) -> None:
    """The wheel carries the notebooks (grade_kit/notebooks, a link to notebooks/) and the
    report's template: installed in a fresh venv, outside any checkout, `grade-kit demo`
    builds the demo's fixtures in the cache folder and writes report.html, and
    `grade-kit demo serve` starts. (The fresh venv sees this venv's site-packages through
    a .pth line, and their Jupyter data folder, for the dependencies; its grade_kit is the
    wheel's.)"""
    import site
    import sysconfig

    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                    str(wheels), str(ROOT)], check=True, capture_output=True, timeout=300)
    (wheel,) = wheels.glob("grade_kit-*.whl")
    fresh = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(fresh)], check=True,
                   timeout=120)
    python = fresh / "bin" / "python"
    fresh_site = Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True, capture_output=True, text=True).stdout.strip())
    deps = [p for p in {sysconfig.get_path("purelib"), *site.getsitepackages()}
            if Path(p).is_dir()]
    (fresh_site / "dependencies.pth").write_text("\n".join(deps) + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
                    "--no-deps", str(wheel)], check=True, capture_output=True, timeout=300)
    run = tmp_path / "elsewhere"
    run.mkdir()
    # nbconvert's own templates are data files of its install, in this venv's share/jupyter
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "JUPYTER_PATH": str(Path(sys.prefix) / "share" / "jupyter")}
    env.pop("PYTHONPATH", None)
    where = subprocess.run([str(python), "-P", "-c", "import grade_kit; print(grade_kit.__file__)"],
                           cwd=run, capture_output=True, text=True, env=env, check=True)
    assert where.stdout.startswith(str(fresh_site))  # the installed copy runs
    done = subprocess.run([str(fresh / "bin" / "grade-kit"), "demo", "--recorded", "--out",
                           "out"], cwd=run, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (run / "out" / "html" / "report.html").is_file()
    assert "the report to mail" in done.stdout
    built = list((tmp_path / "cache" / "grade_kit").glob("fixtures-*"))
    assert len(built) == 1 and len(list((built[0] / "runs").glob("*.jsonl"))) == 3
    server = subprocess.Popen([str(fresh / "bin" / "grade-kit"), "demo", "serve", "--port", "0"],
                              cwd=run, stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert server.stdout is not None
        assert server.stdout.readline().startswith("demo-server: http://127.0.0.1:")
    finally:
        server.terminate()
        server.wait(timeout=30)
