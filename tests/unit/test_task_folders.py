"""One folder per task: outside `kbench/tasks/<name>/` no module imports that task (absolute or relative
import), branches on its name (`if task == "kee"`), or names one of its metric paths. The engine, the
report frame, the claims frame, the CLI and the exporters reach a task through its registry entry
(a claim's statistic through `kbench.claims.statistics.STATISTICS`, from `kbench/tasks/<name>/claims.py`).
Read from the source with `ast`; docstrings and comments may still mention a task.

A task's metric keys are the top-level properties of its newest results schema
(`kbench/schemas/results.<task>.v<N>.json`, the `metrics` block); the task owns those no other task's
results schema has ("per_technique" is KEE's, "settings" XTEVAL's). Outside its folder, a string
literal (docstrings aside) names a metric path of the task when it is
- a dotted path (not a file name) whose first key the task owns: "settings.iid.gap2",
  "per_technique.recite.gain"; or
- an owned key alone that no other schema of `kbench/schemas` names (a word such as "protocol" or
  "settings" is everyone's), where it is read from a run's metrics (`run.metrics["per_technique"]`,
  `metrics.get("setting")`) or anywhere in the claims frame (`kbench/claims/`, which reads no task's
  metrics at all: a claim's JSON names the path a generic statistic reads).
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "kbench"
TASKS = sorted(p.name for p in (ROOT / "tasks").iterdir() if (p / "__init__.py").is_file())
MODULES = sorted(ROOT.rglob("*.py"))
SCHEMAS = ROOT / "schemas"
CLAIMS_FRAME = ROOT / "claims"
DOTTED = re.compile(r"[A-Za-z_]\w*(\.[\w*]+)+")
FILE_NAME = re.compile(r".*\.(json|jsonl|parquet|csv|md|py|toml|txt|html|png|yaml)")  # "protocol.v2.json": no path


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


def _imported(tree: ast.AST, module: str) -> set[str]:
    """The modules `module` (dotted, "kbench.x.y") imports, relative imports resolved ("from ..kee import
    task" in kbench/tasks/xteval/claims.py imports kbench.tasks.kee.task)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")[: -node.level]
                base = ".".join(parts + ([node.module] if node.module else []))
            found |= {base, *(f"{base}.{alias.name}" for alias in node.names)}
    return found


def _module(path: Path) -> str:
    """The module's dotted name; a package's keeps its "__init__", so that one level up is the package itself."""
    return ".".join(path.relative_to(ROOT.parent).with_suffix("").parts)


def _metric_keys(task: str) -> set[str]:
    """The top-level metric keys of the task's newest results schema (none without one)."""
    versions = sorted(SCHEMAS.glob(f"results.{task}.v*.json"), key=lambda p: int(p.name.split(".v")[1].split(".")[0]))
    return set(json.loads(versions[-1].read_text()).get("properties", {})) if versions else set()


def _property_names(node: object) -> set[str]:
    """Every property name anywhere in a JSON schema."""
    if isinstance(node, list):
        return {name for value in node for name in _property_names(value)}
    if not isinstance(node, dict):
        return set()
    found = set(node["properties"]) if isinstance(node.get("properties"), dict) else set()
    return found | {name for value in node.values() for name in _property_names(value)}


KEYS = {task: _metric_keys(task) for task in TASKS}
OWNED = {task: KEYS[task] - {k for other in TASKS if other != task for k in KEYS[other]} for task in TASKS}
TASK_SCHEMAS = {f"results.{task}." for task in TASKS}
COMMON = {
    name
    for path in SCHEMAS.glob("*.json")
    if not any(path.name.startswith(prefix) for prefix in TASK_SCHEMAS)
    for name in _property_names(json.loads(path.read_text()))
}


def _docstrings(tree: ast.AST) -> set[int]:
    kinds = ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, kinds) and node.body and isinstance(node.body[0], ast.Expr)
    }


def _metrics_reads(tree: ast.AST) -> set[int]:
    """The string constants read as a key of a run's metrics: `x.metrics["key"]`, `metrics.get("key")`."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):
            target, key = node.value, node.slice
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
            target, key = node.func.value, node.args[0]
        else:
            continue
        if isinstance(key, ast.Constant) and ast.unparse(target).split(".")[-1] == "metrics":
            found.add(id(key))
    return found


def metric_paths(path: Path, task: str) -> list[str]:
    """The task's metric paths a module names as strings (the rule of this module's docstring)."""
    tree = ast.parse(path.read_text(), str(path))
    skipped, reads = _docstrings(tree), _metrics_reads(tree)
    bare = OWNED[task] - COMMON
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str) or id(node) in skipped:
            continue
        value = node.value
        if DOTTED.fullmatch(value) and not FILE_NAME.fullmatch(value) and value.split(".")[0] in OWNED[task]:
            found.append(f"{path.relative_to(ROOT.parent)}:{node.lineno}: {value!r}")
        elif value in bare and (id(node) in reads or path.is_relative_to(CLAIMS_FRAME)):
            found.append(f"{path.relative_to(ROOT.parent)}:{node.lineno}: {value!r}")
    return found


def test_there_are_tasks_to_check():
    assert {"extraction", "kee", "truefalse", "choice"} <= set(TASKS)


@pytest.mark.parametrize("task", TASKS)
def test_no_module_outside_the_folder_imports_the_task(task):
    package = f"kbench.tasks.{task}"
    offenders = [
        f"{path.relative_to(ROOT.parent)}: imports {name}"
        for path in _outside(task)
        for name in sorted(_imported(ast.parse(path.read_text(), str(path)), _module(path)))
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


def test_the_metric_keys_are_read_from_the_schemas():
    assert "per_technique" in OWNED["kee"] and "settings" in OWNED["xteval"] and "per_technique" not in COMMON


@pytest.mark.parametrize("task", TASKS)
def test_no_module_outside_the_folder_names_the_task_metric_paths(task):
    offenders = [found for path in _outside(task) for found in metric_paths(path, task)]
    assert not offenders, f"{task}'s metric paths outside its folder; let the task's folder read them:\n" + "\n".join(offenders)
