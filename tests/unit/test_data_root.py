"""`data:` recipe paths: syntax, the data root's resolution order, clear errors, the manifest."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from kbench.construct.context import StageContext
from kbench.construct.data_root import ENV_VAR, find_data_dir, repository_default
from kbench.construct.recipe import load_recipe
from kbench.construct.runner import run_recipe
from kbench.errors import InputError, UserError

FACTS = [
    {"uuid": f"u{i}", "sub_uri": f"Q{i}", "sub_label": f"Person {i}", "obj_uri": "Q90", "obj_label": "Paris",
     "predicate_id": "P19", "evidences": []}
    for i in range(1, 4)
]
RELATION = {"relation": "P19", "template": "[X] was born in [Y] .", "label": "place of birth"}


def write_data_root(root: Path) -> Path:
    (root / "mini_trex" / "TREx").mkdir(parents=True)
    (root / "mini_trex" / "TREx" / "P19.jsonl").write_text("".join(json.dumps(f) + "\n" for f in FACTS))
    (root / "mini_trex" / "relations.jsonl").write_text(json.dumps(RELATION) + "\n")
    return root


def write_recipe(folder: Path, trex: str = "data:mini_trex") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "recipe.toml"
    path.write_text(f'[pipeline]\nname = "mini"\n\n[[stages]]\nstage = "load_lama"\nid = "load"\ntrex = {json.dumps(trex)}\n')
    return path


@pytest.fixture(autouse=True)
def _no_env_data_dir(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)


def test_recipe_lists_its_data_refs_with_keys(tmp_path):
    recipe = load_recipe(write_recipe(tmp_path))
    assert recipe.data_refs == [("stages[0] (load_lama).trex", "data:mini_trex")]


@pytest.mark.parametrize("bad, reason", [
    ("data:", "needs a path"),
    ("data:../elsewhere", "stay inside the data root"),
    ("data:/etc/passwd", "stay inside the data root"),
    ("data:lama\\\\TREx", "forward slashes"),
])
def test_bad_data_paths_are_located_errors(tmp_path, bad, reason):
    with pytest.raises(InputError, match=reason) as err:
        load_recipe(write_recipe(tmp_path, bad))
    assert err.value.key == "stages[0] (load_lama).trex" and err.value.path.endswith("recipe.toml")


def test_old_shared_data_paths_get_their_new_spelling(tmp_path):
    with pytest.raises(InputError, match="write 'data:lama_trex/TREx'"):
        load_recipe(write_recipe(tmp_path, "../../shared/data/lama_trex/TREx"))


def test_build_resolves_data_paths_under_the_given_root(tmp_path):
    root = write_data_root(tmp_path / "somewhere" / "data")
    result = run_recipe(load_recipe(write_recipe(tmp_path / "r")), tmp_path / "run", data_dir=root)
    assert result.stages[0].rows_out == 3
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["data_dir"] == str(root.resolve())
    assert [i["path"] for i in manifest["inputs"]] == ["data:mini_trex/TREx/P19.jsonl", "data:mini_trex/relations.jsonl"]
    assert all(len(i["sha256"]) == 64 for i in manifest["inputs"])


def test_environment_variable_names_the_root(tmp_path, monkeypatch):
    root = write_data_root(tmp_path / "env-data")
    monkeypatch.setenv(ENV_VAR, str(root))
    assert find_data_dir(None) == (root.resolve(), ENV_VAR)
    assert find_data_dir(tmp_path / "flag")[0] == (tmp_path / "flag").resolve()  # the flag wins
    result = run_recipe(load_recipe(write_recipe(tmp_path / "r")), tmp_path / "run")
    assert result.stages[0].rows_out == 3


def test_the_per_user_folder_comes_after_the_env_and_before_the_checkout_once_it_holds_data(tmp_path, monkeypatch):
    from kbench.construct.data_root import user_data_root

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))  # platformdirs' Linux rule
    user = user_data_root()
    assert user == tmp_path / "xdg" / "kbench"
    user.mkdir(parents=True)
    empty_choice = find_data_dir(None)
    assert empty_choice[0] != user.resolve() and "per-user" not in empty_choice[1]   # empty: not chosen
    write_data_root(user)
    folder, rule = find_data_dir(None)
    assert folder == user.resolve() and "per-user" in rule
    result = run_recipe(load_recipe(write_recipe(tmp_path / "r")), tmp_path / "run")   # `kbench build` finds it
    assert result.stages[0].rows_out == 3
    env_root = write_data_root(tmp_path / "env-data")
    monkeypatch.setenv(ENV_VAR, str(env_root))
    assert find_data_dir(None) == (env_root.resolve(), ENV_VAR)   # the environment still wins


def test_data_root_prints_the_folder_and_the_rule_that_chose_it(tmp_path):
    import os
    import sys

    user = write_data_root(tmp_path / "xdg" / "kbench")
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "xdg")}
    env.pop(ENV_VAR, None)
    shown = subprocess.run([sys.executable, "-m", "kbench", "data", "root"], env=env, capture_output=True, text=True,
                           cwd=tmp_path, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip() == str(user.resolve())
    assert "chosen by: the per-user data folder" in shown.stderr
    flagged = subprocess.run([sys.executable, "-m", "kbench", "data", "root", "--data-dir", str(user)], env=env,
                             capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert flagged.returncode == 0 and "chosen by: --data-dir" in flagged.stderr


def test_default_is_shared_data_beside_the_checkout(tmp_path):
    checkout = tmp_path / "work" / "kbench"
    checkout.mkdir(parents=True)
    (checkout / "pyproject.toml").write_text("[project]\n")
    assert repository_default(checkout) == tmp_path / "work" / "shared" / "data"
    assert repository_default(tmp_path) is None   # not a checkout (an installed wheel): no default


def test_a_clone_of_a_local_checkout_uses_the_data_beside_its_origin(tmp_path):
    """`git clone /work/main /tmp/fresh`: /tmp/shared/data does not exist, /work/shared/data does."""
    origin = tmp_path / "work" / "main"
    origin.mkdir(parents=True)
    (origin / "pyproject.toml").write_text("[project]\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", str(origin)], check=True)
    subprocess.run([*git, "-C", str(origin), "add", "."], check=True)
    subprocess.run([*git, "-C", str(origin), "commit", "-qm", "x"], check=True)
    clone = tmp_path / "elsewhere" / "fresh"
    subprocess.run(["git", "clone", "-q", str(origin), str(clone)], check=True)
    assert repository_default(clone) == tmp_path / "elsewhere" / "shared" / "data"   # the origin has no data either
    write_data_root(tmp_path / "work" / "shared" / "data")
    assert repository_default(clone) == (tmp_path / "work" / "shared" / "data").resolve()
    write_data_root(tmp_path / "elsewhere" / "shared" / "data")
    assert repository_default(clone) == tmp_path / "elsewhere" / "shared" / "data"   # data beside the clone wins


def test_missing_folder_says_how_to_fetch_it(tmp_path):
    root = tmp_path / "empty"
    root.mkdir()
    with pytest.raises(UserError, match=r"lacks mini_trex\. Download with `kbench data fetch mini_trex --to "):
        run_recipe(load_recipe(write_recipe(tmp_path / "r")), tmp_path / "run", data_dir=root)
    with pytest.raises(UserError, match="does not exist. Download the sources into it with `kbench data fetch mini_trex"):
        run_recipe(load_recipe(write_recipe(tmp_path / "r")), tmp_path / "run", data_dir=tmp_path / "nope")
    assert not (tmp_path / "run" / "manifest.json").exists()


def test_context_without_root_refuses_data_paths(tmp_path):
    ctx = StageContext(recipe_path=tmp_path / "r.toml", run_dir=tmp_path / "run", seed=0)
    with pytest.raises(UserError, match="needs a data folder: pass --data-dir"):
        ctx.resolve("data:lama_trex")
    assert ctx.resolve("mappings/x.toml") == tmp_path / "mappings" / "x.toml"  # no prefix: beside the recipe
