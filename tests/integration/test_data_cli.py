"""`kbench data` and `kbench build --data-dir` as a user runs them, from a checkout anywhere.

The download side talks to a local HTTP server standing in for the upstream hosts (`--mirror`);
the build side runs a copy of the repository outside this checkout, where no ../shared/data is.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest

from conftest import REPO_ROOT, run_kbench
from kbench.sources.catalog import source

SMALL = ["--set", 'load.relations=["P19","P20"]', "--set", "load.max_per_relation=40"]


def mirror_path(url: str) -> str:
    parts = urlparse(url)
    return f"/{parts.netloc}{parts.path}"


@pytest.fixture(autouse=True)
def _no_data_env(monkeypatch):
    monkeypatch.delenv("KBENCH_DATA_DIR", raising=False)
    monkeypatch.delenv("KBENCH_DATA_MIRROR", raising=False)


def test_fetch_verifies_and_refuses_a_corrupted_file(httpserver, shared_data, tmp_path):
    for item in source("kola_samples").downloads:
        httpserver.expect_request(mirror_path(item.url)).respond_with_data((shared_data / "kola_samples" / item.dest).read_bytes())
    aliases = source("wikidata_aliases_xfactr").downloads[0]
    good = (shared_data / "wikidata_aliases_xfactr" / "TREx_en.txt").read_bytes()
    httpserver.expect_oneshot_request(mirror_path(aliases.url)).respond_with_data(good)
    mirror = httpserver.url_for("/")

    root = tmp_path / "data"
    done = run_kbench("data", "fetch", "kola_samples", "wikidata_aliases_xfactr", "--to", str(root), "--mirror", mirror)
    assert done.returncode == 0, done.stderr
    assert (root / "wikidata_aliases_xfactr" / "TREx_en.txt").read_bytes() == good
    assert len(list((root / "kola_samples").glob("*.json"))) == 3
    assert f"--data-dir {root}" in done.stderr

    httpserver.expect_request(mirror_path(aliases.url)).respond_with_data(good.replace(b"Earth", b"Mars"))
    other = tmp_path / "other"
    refused = run_kbench("data", "fetch", "wikidata_aliases_xfactr", "--to", str(other), "--mirror", mirror)
    assert refused.returncode == 2
    assert "checksum mismatch" in refused.stderr and "Traceback" not in refused.stderr
    assert list(other.iterdir()) == []   # no folder, no staging leftovers


def test_fetch_without_to_fills_the_per_user_folder_that_build_then_finds(httpserver, shared_data, tmp_path):
    aliases = source("wikidata_aliases_xfactr").downloads[0]
    good = (shared_data / "wikidata_aliases_xfactr" / "TREx_en.txt").read_bytes()
    httpserver.expect_request(mirror_path(aliases.url)).respond_with_data(good)
    env = {"XDG_DATA_HOME": str(tmp_path / "xdg")}   # platformdirs' per-user data folder on Linux
    done = run_kbench("data", "fetch", "wikidata_aliases_xfactr", "--mirror", httpserver.url_for("/"), env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    user = tmp_path / "xdg" / "kbench"
    assert (user / "wikidata_aliases_xfactr" / "TREx_en.txt").read_bytes() == good
    assert "--data-dir" not in done.stderr   # a build finds this folder without the flag
    root = run_kbench("data", "root", env=env, cwd=tmp_path)
    assert root.stdout.strip() == str(user.resolve()) and "per-user" in root.stderr


def test_list_names_sources_and_licenses(shared_data):
    listed = run_kbench("data", "list", "--data-dir", str(shared_data))
    assert listed.returncode == 0, listed.stderr
    for name, license_id in (("lama_trex", "cc-by-nc-4.0"), ("rebel_sample", "cc-by-nc-sa-4.0"),
                             ("wikidata_aliases_xfactr", "cc0-1.0"), ("lama_trex_autoprompt_splits", "apache-2.0")):
        assert name in listed.stdout and license_id in listed.stdout


@pytest.fixture(scope="module")
def repo_copy(tmp_path_factory) -> Path:
    """The repository's files (tracked and new, not ignored) copied where no ../shared/data exists."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO_ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    copy = tmp_path_factory.mktemp("elsewhere") / "kbench"
    for name in filter(None, files):
        src = REPO_ROOT / name
        if src.is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, copy / name)
    assert not (copy.parent / "shared" / "data").exists()
    return copy


def test_copy_outside_checkout_builds_lama_with_data_dir(repo_copy, shared_data, tmp_path):
    env = {"PYTHONPATH": str(repo_copy)}
    where = subprocess.run([sys.executable, "-c", "import kbench; print(kbench.__file__)"], cwd=repo_copy, env={**env, "PATH": ""},
                           capture_output=True, text=True)
    assert where.stdout.strip() == str(repo_copy / "kbench" / "__init__.py")

    # without a data folder: one clear line saying how to get the data and how to point at it
    missing = run_kbench("build", "pipelines/lama-trex.toml", "--out", str(tmp_path / "none"), cwd=repo_copy, env=env)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert "kbench data fetch lama_google_re lama_trex lama_trex_autoprompt_splits wikidata_aliases_xfactr --to DIR" in missing.stderr
    assert "--data-dir DIR" in missing.stderr and "KBENCH_DATA_DIR" in missing.stderr

    out = tmp_path / "lama"
    built = run_kbench("build", "pipelines/lama-trex.toml", "--data-dir", str(shared_data), "--out", str(out),
                       *SMALL, cwd=repo_copy, env=env)
    assert built.returncode == 0, built.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["data_dir"] == str(shared_data)
    assert {i["path"].split("/")[0] for i in manifest["inputs"]} == {
        "data:lama_trex", "data:lama_google_re", "data:lama_trex_autoprompt_splits", "data:wikidata_aliases_xfactr"}
    stats = json.loads((out / "stats.json").read_text())
    assert stats["final_rows"] > 50 and (out / "data" / "default" / "test.parquet").is_file()

    # the environment variable names the same inputs: the rerun reuses every finished stage
    again = run_kbench("build", "pipelines/lama-trex.toml", "--out", str(out), *SMALL,
                       cwd=repo_copy, env={**env, "KBENCH_DATA_DIR": str(shared_data)})
    assert again.returncode == 0, again.stderr
    events = [json.loads(line) for line in (out / ".kbench" / "events.jsonl").read_text().splitlines()]
    assert {e["action"] for e in events[len(stats["stages"]):]} == {"reused"}
