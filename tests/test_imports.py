"""The library's imports run one way, down: no cycle, no module reaching into another's
private names, the statistics below the judges and the reports, fetching and judging apart,
and a public surface stated once whose names no submodule shadows. Read from the source
(every import, at module level, inside a function, or in an ``if TYPE_CHECKING:`` block:
a type-only import is a dependency as much as any other)."""

from __future__ import annotations

import ast
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


def _reaches(start: str, edges: dict[str, set[str]]) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for target in edges[todo.pop()]:
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def test_the_statistics_stand_below_the_judges_the_reports_and_the_pipeline() -> None:
    edges = _edges()
    above = ("grade_kit.judges", "grade_kit.presentation.report", "grade_kit.evaluation",
             "grade_kit.fetching", "grade_kit.presentation.explorer",
             "grade_kit.presentation.charts", "grade_kit.cli")
    for module in (m for m in MODULES if m.startswith("grade_kit.standard")):
        assert [t for t in _reaches(module, edges) if t.startswith(above)] == [], module


def test_fetching_and_judging_do_not_import_each_other() -> None:
    edges = _edges()
    for one, other in (("grade_kit.fetching", "grade_kit.judges"),
                       ("grade_kit.judges", "grade_kit.fetching")):
        for module in (m for m in MODULES if m.startswith(one)):
            assert [t for t in _reaches(module, edges) if t.startswith(other)] == [], module


def test_the_public_surface_is_stated_once_and_no_submodule_shadows_it() -> None:
    source = (PACKAGE / "__init__.py").read_text()
    assert source.count("__all__") == 1
    assert [n for n in gk.__all__ if f"grade_kit.{n}" in MODULES] == []
    assert len(gk.__all__) == len(set(gk.__all__))
    for name in gk.__all__:
        assert getattr(gk, name) is not None, name


def test_scoring_imports_no_http_client_sql_engine_or_pandas() -> None:
    """``grade-kit score`` (the CLI and the package it imports) loads neither aiohttp nor
    duckdb (fetching and the model clients load them when first asked for) nor pandas (a
    pandas frame is made only when asked for): about half a second of every command."""
    import subprocess
    import sys

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
