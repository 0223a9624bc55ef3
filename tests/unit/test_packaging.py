"""A wheel install carries what the code reads at run time (not only the editable install)."""

import subprocess
import sys
import zipfile

import pytest

from kbench.io import SCHEMA_DIR, load_schema
from tests.conftest import REPO_ROOT, clean_source_copy


def test_wheel_carries_the_schemas_and_templates(tmp_path):
    from kbench.cards.render import template_dir

    source = clean_source_copy(tmp_path / "source")  # not the checkout: its ignored build/lib/ could ship stale modules
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                            "--wheel-dir", str(tmp_path), str(source)], capture_output=True, text=True, timeout=300)
    if built.returncode != 0:
        pytest.fail(built.stderr[-2000:])
    (wheel,) = tmp_path.glob("kbench-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    own = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", "kbench/*.py"], cwd=REPO_ROOT,
                         capture_output=True, text=True, check=True).stdout.split()
    assert {n for n in names if n.endswith(".py")} == {n for n in own if (REPO_ROOT / n).is_file()}  # no more, no less
    schemas = {p.name for p in SCHEMA_DIR.glob("*.json")}
    assert "question.v1.json" in schemas and "results.kee.v1.json" in schemas
    assert {f"kbench/schemas/{name}" for name in schemas} <= names
    assert "kbench/construct/question_templates.json" in names
    assert "kbench/sources/pinned_sha256.json" in names   # `kbench data fetch` checksums
    cards = {p.name for p in template_dir().glob("*.md")}
    assert "lama.md" in cards and {f"kbench/data_cards/{name}" for name in cards} <= names
    recipes = {p.relative_to(REPO_ROOT / "pipelines").as_posix() for p in (REPO_ROOT / "pipelines").rglob("*.toml")}
    assert {"lama.toml", "mappings/maple-domains.toml"} <= recipes
    assert {f"kbench/recipes/{name}" for name in recipes} <= names   # `kbench build lama` from a wheel


def test_top_level_folders_are_the_package_data():
    from kbench.cards.render import template_dir

    assert (REPO_ROOT / "schemas").resolve() == SCHEMA_DIR
    assert (REPO_ROOT / "data_cards").resolve() == template_dir()
    assert load_schema("question.v1.json")["type"] == "object"


def test_recipes_are_the_pipelines_folder_and_addressable_by_name(tmp_path):
    from kbench.construct.recipe_names import RECIPE_DIR, packaged_recipes, resolve_recipe
    from kbench.errors import UserError

    assert RECIPE_DIR == (REPO_ROOT / "pipelines").resolve()   # one place to edit them
    names = [r.name for r in packaged_recipes()]
    assert names == sorted(["evolving", "lama", "lama-trex", "left-textbook", "maple-wiki"])
    assert all(r.description for r in packaged_recipes())
    assert resolve_recipe("maple-wiki") == RECIPE_DIR / "maple-wiki.toml"
    own = tmp_path / "lama"   # a file of that name wins over the packaged recipe
    own.write_text("[pipeline]\n")
    assert resolve_recipe(own) == own
    with pytest.raises(UserError, match="packaged: evolving, lama, lama-trex"):
        resolve_recipe("lamma")
    with pytest.raises(UserError, match="recipe file not found"):
        resolve_recipe(tmp_path / "missing.toml")


def test_kbench_recipes_lists_one_line_each():
    listed = subprocess.run([sys.executable, "-m", "kbench", "recipes"], capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["evolving", "lama", "lama-trex", "left-textbook", "maple-wiki"]
    assert "LAMA" in lines[1]
