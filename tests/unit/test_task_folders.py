"""One folder per task: outside `kbench/tasks/<name>/` no module imports that task or branches on its
name (`if task == "kee"`). The engine, the report frame, the CLI and the exporters reach a task through
its registry entry. Read from the source with `ast`; docstrings and comments may still mention a task.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "kbench"
TASKS = sorted(p.name for p in (ROOT / "tasks").iterdir() if (p / "__init__.py").is_file())
MODULES = sorted(ROOT.rglob("*.py"))


def _outside(task: str) -> list[Path]:
    return [path for path in MODULES if not path.is_relative_to(ROOT / "tasks" / task)]


def _names_tested(tree: ast.AST) -> set[str]:
    """String constants that a comparison or a `match` tests a task against (an operand or subject
    whose name says "task": `task`, `spec.task`, `run["task"]`, `task_name`). XTEVAL's own item kinds
    ("extraction" probes) are not tasks, so a comparison of anything else is no branch on a task."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_says_task(operand) for operand in operands):
                found |= {value for operand in operands for value in _strings(operand)}
        if isinstance(node, ast.Match) and _says_task(node.subject):
            found |= {c.pattern.value.value for c in node.cases if isinstance(c.pattern, ast.MatchValue)}
    return found


def _says_task(node: ast.AST) -> bool:
    names = [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]
    names += [n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)]
    names += [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return any("task" in name.lower() for name in names)


def _strings(node: ast.AST) -> list[str]:
    elements = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
    return [e.value for e in elements if isinstance(e, ast.Constant) and isinstance(e.value, str)]


def _imported(tree: ast.AST) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
    return found


def test_there_are_tasks_to_check():
    assert {"extraction", "kee", "truefalse", "choice"} <= set(TASKS)


@pytest.mark.parametrize("task", TASKS)
def test_no_module_outside_the_folder_imports_the_task(task):
    package = f"kbench.tasks.{task}"
    offenders = [
        f"{path.relative_to(ROOT.parent)}: imports {name}"
        for path in _outside(task)
        for name in sorted(_imported(ast.parse(path.read_text(), str(path))))
        if name == package or name.startswith(f"{package}.")
    ]
    assert not offenders, "reach the task through its registry entry instead:\n" + "\n".join(offenders)


@pytest.mark.parametrize("task", TASKS)
def test_no_module_outside_the_folder_branches_on_the_task_name(task):
    offenders = [
        str(path.relative_to(ROOT.parent))
        for path in _outside(task)
        if task in _names_tested(ast.parse(path.read_text(), str(path)))
    ]
    assert not offenders, f"compares against {task!r}; ask the task (its registry entry) instead: {offenders}"
