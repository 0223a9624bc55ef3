"""`kbench publish` against a local stand-in for the Hub (`hub`, tests/servers/hub.py: pytest-httpserver at
HF_ENDPOINT), which records every request, so the test sees exactly what left the machine.
"""

from __future__ import annotations

import hashlib
import json

from card_folders import make_lama_folder
from conftest import run_kbench

from kbench.io import write_json, write_parquet
from kbench.metrics.uncertainty import proportion
from tests.servers.hub import COMMIT, REPO, TOKEN


def test_publish_dataset_uploads_exactly_the_dry_run_list(hub, tmp_path, shared_data):
    fake, env = hub
    folder = make_lama_folder(tmp_path / "lama", shared_data)
    assert run_kbench("card", str(folder)).returncode == 0
    dry = run_kbench("publish", str(folder), "--repo-id", REPO, "--dry-run", env=env)
    assert dry.returncode == 0, dry.stderr
    assert fake.requests == []  # a dry run talks to nobody

    done = run_kbench("publish", str(folder), "--repo-id", REPO, "--private", env=env)
    assert done.returncode == 0, done.stderr
    assert TOKEN not in done.stdout + done.stderr
    (create,) = fake.by_path("/api/repos/create")
    sent = json.loads(create["body"])
    assert (sent["name"], sent["organization"], sent["type"]) == ("lama-probe", "someone", "dataset")
    assert sent.get("visibility") == "private" or sent.get("private") is True
    uploaded = fake.committed_files()
    assert sorted(uploaded) == dry.stdout.split()
    assert ".kbench/lock" not in uploaded
    assert uploaded["data/default/test.parquet"] == (folder / "data/default/test.parquet").read_bytes()
    fake.assert_token_only_in_authorization()


def test_publish_refuses_files_that_do_not_match_the_manifest(hub, tmp_path, shared_data):
    fake, env = hub
    folder = make_lama_folder(tmp_path / "lama", shared_data)
    assert run_kbench("card", str(folder)).returncode == 0
    (folder / "data" / "default" / "extra.parquet").write_bytes((folder / "data/default/dev.parquet").read_bytes())
    out = run_kbench("publish", str(folder), "--repo-id", REPO, env=env)
    assert out.returncode == 2 and "not listed in the manifest" in out.stderr and "Traceback" not in out.stderr
    assert fake.requests == []


def test_publish_evaluation_run_as_a_results_dataset(hub, tmp_path):
    import polars as pl

    fake, env = hub
    run = tmp_path / "run"
    write_json(run / "results.json", {"schema": "kbench.results.v2", "task": "extraction", "model": {"name": "tiny-llama"},
                                      "headline": {"accuracy": proportion(1, 2)}, "metrics": {}})
    write_parquet(run / "items.parquet", pl.DataFrame({"id": ["a", "b"], "correct": [True, False]}))
    (run / "cache.sqlite").write_bytes(b"local cache, not for the Hub")
    (run / "items.jsonl").write_text('{"id": "a", "correct": true}\n{"id": "b", "correct": false}\n')
    (run / "journal.jsonl").write_text('{"id": "a"}\n')  # the resume journal stays local
    (run / ".kbench").mkdir()
    (run / ".kbench" / "lock").write_text("1")
    out = run_kbench("publish", str(run), "--repo-id", "someone/results", env=env)
    assert out.returncode == 0, out.stderr
    uploaded = fake.committed_files()
    assert sorted(uploaded) == ["README.md", "items.jsonl", "items.parquet", "report/explorer-1.html", "report/index.html",
                                "results.json"]
    assert b"accuracy" in uploaded["report/index.html"]   # the run's HTML report travels with it
    card = uploaded["README.md"].decode()
    assert "config_name: items" in card and "path: items.parquet" in card and "`accuracy`: 0.500 [0.095, 0.905]* (n = 2)" in card
    assert card.count("config_name:") == 1  # the JSONL twin of items.parquet is not a second config
    fake.assert_token_only_in_authorization()


def test_publish_without_token_is_a_clear_error(tmp_path, shared_data):
    folder = make_lama_folder(tmp_path / "lama", shared_data)
    assert run_kbench("card", str(folder)).returncode == 0
    out = run_kbench("publish", str(folder), "--repo-id", REPO,
                     env={"HF_TOKEN": "", "HF_HOME": str(tmp_path / "empty-home"), "HF_ENDPOINT": "http://127.0.0.1:9"})
    assert out.returncode == 2 and "no Hugging Face token" in out.stderr


def test_hub_refusal_is_one_clear_line_without_the_token(hub, tmp_path, shared_data):
    fake, env = hub
    fake.refuse_create = True
    folder = make_lama_folder(tmp_path / "lama", shared_data)
    assert run_kbench("card", str(folder)).returncode == 0
    out = run_kbench("publish", str(folder), "--repo-id", REPO, env=env)
    assert out.returncode == 2 and "publishing to someone/lama-probe failed" in out.stderr
    assert "Traceback" not in out.stderr and TOKEN not in out.stdout + out.stderr
    assert not fake.by_path("/preupload/") and not fake.by_path("/commit/")  # nothing uploaded after the refusal
    fake.assert_token_only_in_authorization()


def test_a_published_benchmark_is_evaluated_by_its_hub_id_with_the_commit_recorded(hub, tmp_path,
                                                                                  tiny_causal_dir):
    from tests.dataset_folders import question_dataset

    fake, env = hub
    folder = question_dataset(tmp_path / "bench", [
        {"id": f"q{i}", "relation": "P36", "subject": s, "object": o, "answers": [o], "prompt_cloze": f"The capital of {s} is"}
        for i, (s, o) in enumerate([("France", "Paris"), ("Germany", "Berlin"), ("Italy", "Rome"), ("Spain", "Madrid")])])
    fake.published = {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}

    out = tmp_path / "run"
    args = ["evaluate", "extraction", "--model", str(tiny_causal_dir), "--limit", "3", "--max-new-tokens", "2"]
    done = run_kbench(*args, "--dataset", f"{REPO}@main", "--out", str(out), env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    block = json.loads((out / "results.json").read_text())["dataset"]
    assert block["hub"] == {"repo_id": REPO, "commit": COMMIT}
    assert block["sha256"] == hashlib.sha256((folder / "data/default/test.parquet").read_bytes()).hexdigest()
    assert f"datasets--{REPO.replace('/', '--')}" in block["path"]   # huggingface_hub's cache
    fake.assert_token_only_in_authorization()

    missing = run_kbench(*args, "--dataset", f"{REPO}@v9", "--out", str(tmp_path / "bad"), env=env, cwd=tmp_path)
    assert missing.returncode == 2 and "no revision 'v9'" in missing.stderr and "Traceback" not in missing.stderr
    assert TOKEN not in missing.stdout + missing.stderr
