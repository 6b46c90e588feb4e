"""The package's import graph: no cycles (function-level imports count, imports under
``if TYPE_CHECKING:`` do not), and each function-level import says why it is deferred."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

import pytest_elizon_eval

ROOT = Path(pytest_elizon_eval.__file__).parent


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _scan(tree: ast.AST) -> tuple[list[ast.Import | ast.ImportFrom],
                                  list[ast.Import | ast.ImportFrom]]:
    """The tree's import statements, and those of them inside a function (at any depth), in
    one walk; imports under an ``if TYPE_CHECKING:`` (never run, so never a cycle) left out
    of both."""
    everywhere: list[ast.Import | ast.ImportFrom] = []
    in_functions: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST, in_function: bool, typing_only: bool) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)) and not typing_only:
            everywhere.append(node)
            if in_function:
                in_functions.append(node)
        in_function = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        guarded = isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for name, value in ast.iter_fields(node):
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.AST):
                    visit(child, in_function, typing_only or (guarded and name == "body"))

    visit(tree, False, False)
    return everywhere, in_functions


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The package's modules an import statement loads."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in MODULES]
    if not node.level:
        base = node.module or ""
    else:
        package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
        parts = package.split(".")
        parts = parts[: len(parts) - (node.level - 1)]
        base = ".".join([*parts, *([node.module] if node.module else [])])
    subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in MODULES]
    return ([base] if base in MODULES and len(subs) < len(node.names) else []) + subs


def _imports(module: str, tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    yield from _scan(tree)[0]


@functools.cache
def _source(module: str) -> tuple[str, ast.Module]:
    """The module's text and syntax tree, read once for every test here."""
    text = MODULES[module].read_text(encoding="utf-8")
    return text, ast.parse(text)


def _graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for module in MODULES:
        tree = _source(module)[1]
        edges[module] = {t for node in _imports(module, tree) for t in _targets(module, node)
                         if t != module}
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles() -> None:
    assert _cycles(_graph()) == []


def test_the_cycle_finder_sees_a_function_level_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]


def _function_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    yield from _scan(tree)[1]


def _unexplained(source: str, tree: ast.AST | None = None) -> list[int]:
    """Lines of function-level imports with no comment on their lines or on the line above;
    imports that directly follow one another share the comment above the first. (``tree``:
    the source's, when already parsed.)"""
    lines = source.splitlines()
    nodes = sorted(_function_imports(tree or ast.parse(source)), key=lambda n: n.lineno)
    explained: dict[int, bool] = {}  # end line -> explained
    bad = []
    for node in nodes:
        own = any("#" in lines[i - 1] for i in range(node.lineno, (node.end_lineno or 0) + 1))
        above = node.lineno - 1
        ok = (own or (above >= 1 and lines[above - 1].lstrip().startswith("#"))
              or explained.get(above, False))
        explained[node.end_lineno or node.lineno] = ok
        if not ok:
            bad.append(node.lineno)
    return bad


@pytest.mark.parametrize("module", sorted(MODULES))
def test_each_function_level_import_says_why(module: str) -> None:
    assert _unexplained(*_source(module)) == []


def test_an_import_without_a_reason_is_found() -> None:
    source = ("def f():\n"
              "    # deferred: rarely needed\n"
              "    import csv\n"
              "    import json\n"
              "\n"
              "    import re\n"
              "    import io  # deferred: rarely needed\n")
    assert _unexplained(source) == [6]
