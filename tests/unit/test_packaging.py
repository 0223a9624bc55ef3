"""A wheel install carries what the code reads at run time (not only the editable install)."""

import subprocess
import sys
import zipfile

import pytest

from kbench.io import SCHEMA_DIR, load_schema
from tests.conftest import REPO_ROOT


def test_wheel_carries_the_schemas_and_templates(tmp_path):
    from kbench.cards.render import template_dir

    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                            "--wheel-dir", str(tmp_path), str(REPO_ROOT)], capture_output=True, text=True, timeout=300)
    if built.returncode != 0:
        pytest.fail(built.stderr[-2000:])
    (wheel,) = tmp_path.glob("kbench-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    schemas = {p.name for p in SCHEMA_DIR.glob("*.json")}
    assert "question.v1.json" in schemas and "results.kee.v1.json" in schemas
    assert {f"kbench/schemas/{name}" for name in schemas} <= names
    assert "kbench/construct/question_templates.json" in names
    assert "kbench/sources/pinned_sha256.json" in names   # `kbench data fetch` checksums
    cards = {p.name for p in template_dir().glob("*.md")}
    assert "lama.md" in cards and {f"kbench/data_cards/{name}" for name in cards} <= names


def test_top_level_folders_are_the_package_data():
    from kbench.cards.render import template_dir

    assert (REPO_ROOT / "schemas").resolve() == SCHEMA_DIR
    assert (REPO_ROOT / "data_cards").resolve() == template_dir()
    assert load_schema("question.v1.json")["type"] == "object"
