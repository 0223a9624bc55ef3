"""The house's import rules, read from the source with `ast` (nothing is imported):

- no import circle between modules;
- no import from a lower layer into a higher one (`LAYERS`, lowest first): the engine never reaches
  into a task, `models` never imports `tasks` or `evaluate`, `metrics` never imports `report`.

Every import counts, at module level or inside a function (a lazy import is still a dependency),
except under `if TYPE_CHECKING:` (annotations only). A plug-in a registry finds (`importlib`) is not an
import: that is how the engine and the report frame reach the tasks. A task's command line (`kbench/tasks/<name>/cli.py`)
belongs to the cli layer: it lives beside its task but sits on top of the house; its export (`export.py`) to the
export layer, for the same reason.
"""

from __future__ import annotations

import ast
import fnmatch
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Lowest first; a module imports only from its own layer and the layers below. A module takes the
#: layer of the most specific pattern (fnmatch on dotted names) matching it or a package above it.
LAYERS: list[tuple[str, ...]] = [
    ("kbench", "kbench.errors", "kbench.io", "kbench.registry", "kbench.protocol", "kbench.records"),
    ("kbench.paths", "kbench.progress", "kbench.logs", "kbench.dataset"),
    # prompts are values (`Prompt`, the forms that build them): the judges of a build and
    # the tasks build them, the backends render them
    ("kbench.metrics", "kbench.models.prompt", "kbench.evaluate.prompts"),
    ("kbench.models",),
    ("kbench.sources",),
    ("kbench.construct",),
    # the engine and what tasks share: Task and its hooks, retrieval, departures; the latest `kbench check` it reads
    ("kbench.evaluate", "kbench.check.latest"),
    ("kbench.report",),  # the report frame: it reaches a task through TASKS, never by import
    ("kbench.tasks",),
    ("kbench.cards", "kbench.export", "kbench.tasks.*.export", "kbench.read"),
    ("kbench.api", "kbench.check"),  # `kbench check` probes a model as the tasks do, beside the API
    # many models x many tasks through the API, and the papers' claims over them (a task's statistics beside it)
    ("kbench.suite", "kbench.claims", "kbench.tasks.*.claims"),
    ("kbench.cli", "kbench.tasks.*.cli", "kbench.__main__"),
]


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted((ROOT / "kbench").rglob("*.py")):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def _type_checking_only(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(tree: ast.AST):
    """Every Import/ImportFrom node, skipping the bodies of `if TYPE_CHECKING:`."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        if _type_checking_only(node):
            yield from (n for child in node.orelse for n in _imports(ast.Module(body=[child], type_ignores=[])))
            continue
        yield from _imports(node)


def import_graph() -> dict[str, set[str]]:
    """module -> the kbench modules it imports (`from a import b` names a.b when b is a module)."""
    known = modules()
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in _imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
            graph[name] |= {t for t in targets if t in known and t != name}
    return graph


def layer(module: str) -> int:
    """The module's layer: the most specific pattern matching it or a package above it (the bare
    `kbench` package only itself)."""
    prefixes = [".".join(module.split(".")[:n]) for n in range(2, module.count(".") + 2)] or [module]
    matches = [
        (pattern.count("."), index)
        for index, patterns in enumerate(LAYERS)
        for pattern in patterns
        if any(fnmatch.fnmatchcase(prefix, pattern) for prefix in prefixes)
    ]
    if not matches:
        raise AssertionError(f"{module}: in no layer of LAYERS; add its package there")
    return max(matches)[1]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circles():
    circles = cycles(import_graph())
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)


def test_no_import_runs_against_the_layers():
    upward = sorted(
        f"{source} (layer {layer(source)}) imports {target} (layer {layer(target)})"
        for source, targets in import_graph().items()
        for target in targets
        if layer(target) > layer(source)
    )
    assert not upward, "imports against the layer order:\n" + "\n".join(upward)


@pytest.mark.parametrize(
    ("module", "expected"),
    [
        ("kbench.errors", "kbench.errors"),
        ("kbench.tasks.kee.techniques.caa", "kbench.tasks"),
        ("kbench.tasks.kee.cli", "kbench.cli"),
        ("kbench.evaluate.prompts", "kbench.metrics"),
    ],
)
def test_modules_take_the_most_specific_layer(module, expected):
    assert layer(module) == layer(expected)


def test_the_graph_sees_lazy_imports_and_skips_type_checking_blocks(tmp_path):
    tree = ast.parse(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a\nelse:\n    import b\ndef f():\n    import c\n"
    )
    assert sorted(alias.name for node in _imports(tree) for alias in node.names) == ["TYPE_CHECKING", "b", "c"]
