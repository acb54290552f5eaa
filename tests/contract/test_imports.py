"""The library's imports run one way, down: the layers of pyproject.toml's import contract
(import-linter), no cycle, no module reaching into another's private names, fetching and
judging apart, and a small public surface stated once whose names no submodule shadows. Read
from the source (every import, at module level, inside a function, or in an
``if TYPE_CHECKING:`` block: a type-only import is a dependency as much as any other)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import grade_kit as gk

PACKAGE = Path(gk.__file__).parent


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def _imports(name: str) -> list[tuple[str, str | None]]:
    """(module imported, name taken from it or None) for every import of ``name``."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.extend((alias.name, None) for alias in node.names
                         if alias.name.startswith("grade_kit"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target.startswith("grade_kit"):
                for alias in node.names:
                    if f"{target}.{alias.name}" in MODULES:  # a submodule
                        found.append((f"{target}.{alias.name}", None))
                    else:
                        found.append((target, alias.name))
    return found


def _edges() -> dict[str, set[str]]:
    return {name: {target for target, _ in _imports(name) if target in MODULES
                   and target != name} for name in MODULES}


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in sorted(edges[module]):
            if target not in index:
                connect(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(edges):
        if module not in index:
            connect(module)
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_imports_itself_back() -> None:
    assert _cycles(_edges()) == []


def test_no_module_takes_another_modules_private_names() -> None:
    taken = [(name, target, what) for name in MODULES for target, what in _imports(name)
             if what is not None and what.startswith("_") and not what.startswith("__")]
    assert taken == []


def test_no_module_imports_the_package_itself() -> None:
    # its names are for users; inside, each comes from the module that defines it
    assert [name for name in MODULES if name != "grade_kit"
            and "grade_kit" in {target for target, _ in _imports(name)}] == []


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """import-linter's contracts of ``root``'s pyproject.toml over its package."""
    return subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import "
                           "lint_imports; sys.exit(lint_imports(no_cache=True, no_logo=True))"],
                          cwd=root, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(root)})


def test_the_layers_run_one_way_down() -> None:
    """The import contract of pyproject.toml: cli > presentation, review > pipeline > views,
    demo > judges > scorers, standard > adapters, fetching > reading > frames > schema > the
    small helpers; every module of the package in a layer, type-only imports counted, and
    fetching apart from judging."""
    done = _lint_imports(PACKAGE.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 kept, 0 broken" in done.stdout


def test_the_contract_catches_an_import_that_runs_back_up(tmp_path: Path) -> None:
    package = tmp_path / "layered"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "high.py").write_text("X = 1\n")
    (package / "low.py").write_text("def f() -> int:\n    from layered.high import X\n"
                                    "    return X\n")  # inside a function: still counted
    (tmp_path / "pyproject.toml").write_text(
        '[tool.importlinter]\nroot_package = "layered"\n\n'
        '[[tool.importlinter.contracts]]\nname = "down"\ntype = "layers"\n'
        'containers = ["layered"]\nlayers = ["high", "low"]\n')
    done = _lint_imports(tmp_path)
    assert done.returncode == 1
    assert "layered.low -> layered.high" in done.stdout


def test_the_public_surface_is_stated_once_and_no_submodule_shadows_it() -> None:
    source = (PACKAGE / "__init__.py").read_text()
    assert source.count("__all__") == 1
    assert [n for n in gk.__all__ if f"grade_kit.{n}" in MODULES] == []
    assert len(gk.__all__) == len(set(gk.__all__))
    for name in gk.__all__:
        assert getattr(gk, name) is not None, name


def test_the_surface_is_small_and_only_package_faces_state_one() -> None:
    """At most 25 public names, and ``__all__`` only in a package's ``__init__`` (a module's
    names are reached through its package's face or by their module)."""
    assert len(gk.__all__) <= 25
    stated = [name for name, path in MODULES.items()
              if path.name != "__init__.py" and "__all__" in {
                  t.id for node in ast.walk(ast.parse(path.read_text()))
                  if isinstance(node, ast.Assign) for t in node.targets
                  if isinstance(t, ast.Name)}]
    assert stated == []


def test_scoring_imports_no_http_client_sql_engine_or_pandas() -> None:
    """``grade-kit score`` (the CLI and the package it imports) loads neither aiohttp nor
    duckdb (fetching and the model clients load them when first asked for) nor pandas (a
    pandas frame is made only when asked for): about half a second of every command."""
    code = ("import sys, grade_kit, grade_kit.cli; "
            "print(sorted(m for m in ('aiohttp', 'duckdb', 'pandas') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"
    # and every public name still resolves, the deferred ones to their modules' objects
    from grade_kit.fetching import fetch
    from grade_kit.judges.llm_grader import LLMGrader

    assert gk.fetch is fetch and gk.LLMGrader is LLMGrader
    assert {"fetch", "LLMGrader", "evaluate"} <= set(dir(gk))
