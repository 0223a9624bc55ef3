"""The documentation site's hand-kept parts stay honest: the benchmarks page is what the bench scripts recorded,
and every page the site's nav names exists (the generated ones are written by docs/gen_pages.py at build time;
`mkdocs build --strict` in .ci/run checks links and docstrings)."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.conftest import REPO_ROOT


def test_the_benchmarks_page_is_what_the_bench_scripts_recorded():
    done = subprocess.run(
        [sys.executable, "bench/collect.py", "--check"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    page = (REPO_ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert "## `bench/stream_memory.py`" in page  # at least one script records its runs
    assert "## Not recorded yet" in page  # the others are named


def test_every_page_of_the_nav_exists_or_is_generated():
    nav = re.findall(r":\s*([\w./-]+\.md)\s*$|^\s*-\s*([\w./-]+\.md)\s*$", (REPO_ROOT / "mkdocs.yml").read_text(), re.MULTILINE)
    pages = [a or b for a, b in nav]
    generated = {p for p in pages if p.startswith("reference/")}
    assert len(pages) > 20 and generated == {
        "reference/tasks/index.md",
        "reference/recipes/index.md",
        "reference/cli.md",
        "reference/api.md",
    }
    assert not [p for p in pages if p not in generated and not (REPO_ROOT / "docs" / p).is_file()]
    gen = (REPO_ROOT / "docs" / "gen_pages.py").read_text()
    assert all(f'"{p}"' in gen for p in generated)


def _generator():
    """docs/gen_pages.py, imported as a module (mkdocs-gen-files runs it as a script)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_pages", REPO_ROOT / "docs" / "gen_pages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_task_page_lists_every_setting_with_its_default():
    from kbench.evaluate.task import TASKS

    gen = _generator()
    for name, task in TASKS.items().items():
        page = gen.task_page(name, task)
        for field, info in task.Settings.model_fields.items():
            row = next((line for line in page.splitlines() if line.startswith(f"| `{field}") or f".{field}` |" in line), None)
            assert row is not None, f"{name}: setting {field} missing from its page"
        assert "## Command-line flags" in page


def test_every_recipe_page_lists_its_stages_and_the_cli_page_every_command():
    from kbench.construct.recipe_names import packaged_recipes

    gen = _generator()
    for recipe in packaged_recipes():
        page = gen.recipe_page(recipe)
        assert page.count("\n## ") == recipe.path.read_text().count("[[stages]]"), recipe.name
    cli = gen.cli_page()
    for command in ("## `kbench build`", "## `kbench suite run`", "## `kbench evaluate extraction`", "## `kbench version`"):
        assert command in cli
    assert "[[models]]" in cli  # the help texts unescaped for markdown
