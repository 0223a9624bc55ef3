"""`kbench publish` against a local stand-in for the Hub (pytest-httpserver at HF_ENDPOINT).

The server answers the calls huggingface_hub makes for create_repo + upload_folder (repo create,
README metadata validation, preupload, commit) the way the Hub does for small files ("regular" upload mode: contents
inline in the commit) and records every request, so the test sees exactly what left the machine.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
import pytest
from card_folders import make_lama_folder
from conftest import run_kbench
from werkzeug import Request, Response

from kbench.io import write_json, write_parquet
from tests.fixtures_models import tiny_causal_dir  # noqa: F401
from kbench.metrics.uncertainty import proportion

TOKEN = "hf_kbenchTestTokenThatMustNeverLeak0042"
REPO = "someone/lama-probe"


COMMIT = "a" * 40  # the commit every upload to the stand-in creates


class FakeHub:
    def __init__(self):
        self.requests: list[dict] = []
        self.refuse_create = False  # answer repo creation as the Hub does for a token without write access
        self.published: dict[str, bytes] = {}  # repo path -> bytes, served back as dataset REPO at COMMIT

    def handle(self, request: Request) -> Response:
        body = request.get_data()
        if request.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        self.requests.append({"method": request.method, "path": request.path, "url": request.url,
                              "headers": dict(request.headers), "body": body})
        path = request.path
        if path == "/api/repos/create" and self.refuse_create:
            return Response(json.dumps({"error": "You don't have the rights to create a dataset under this namespace"}),
                            status=403, content_type="application/json")
        if path == "/api/repos/create":
            return _json({"url": f"{request.host_url}datasets/{REPO}", "name": REPO})
        if path == "/api/validate-yaml":  # the Hub checks README.md metadata before the upload
            assert json.loads(body)["repoType"] == "dataset"
            return _json({"errors": [], "warnings": []})
        if re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/preupload/main", path):
            files = json.loads(body)["files"]
            return _json({"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False, "oid": None}
                                    for f in files]})
        served = self.serve(request, path)
        if served is not None:
            return served
        if re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/commit/main", path):
            return _json({"commitUrl": f"{request.host_url}datasets/{REPO}/commit/{'a' * 40}",
                          "commitOid": "a" * 40, "pullRequestUrl": None})
        return Response(json.dumps({"error": f"unexpected {request.method} {path}"}), status=404,
                        content_type="application/json")

    def serve(self, request: Request, path: str) -> Response | None:
        """The download side (snapshot_download): revision info, the file tree, the files."""
        revision = re.fullmatch(rf"/api/datasets/{REPO}/revision/(.+)", path)
        if revision and revision[1] not in ("main", COMMIT):
            return Response(json.dumps({"error": "Invalid rev id"}), status=404, content_type="application/json",
                            headers={"X-Error-Code": "RevisionNotFound"})
        if revision:
            return _json({"id": REPO, "sha": COMMIT, "siblings": [{"rfilename": p} for p in sorted(self.published)]})
        if re.fullmatch(rf"/api/datasets/{REPO}/tree/{COMMIT}(/.*)?", path):
            return _json([{"type": "file", "path": p, "size": len(b), "oid": hashlib.sha1(b).hexdigest()}
                          for p, b in sorted(self.published.items())])
        resolved = re.fullmatch(rf"/datasets/{REPO}/resolve/{COMMIT}/(.+)", path)
        if resolved and resolved[1] in self.published:
            body = self.published[resolved[1]]
            headers = {"X-Repo-Commit": COMMIT, "ETag": f'"{hashlib.sha1(body).hexdigest()}"'}
            # werkzeug answers HEAD with this Content-Length and no body
            return Response(body, status=200, headers=headers, content_type="application/octet-stream")
        return None

    def by_path(self, suffix: str) -> list[dict]:
        return [r for r in self.requests if r["path"].endswith(suffix) or suffix in r["path"]]

    def committed_files(self) -> dict[str, bytes]:
        (commit,) = self.by_path("/commit/main")
        files = {}
        for line in commit["body"].decode().splitlines():
            item = json.loads(line)
            if item["key"] == "file":
                files[item["value"]["path"]] = base64.b64decode(item["value"]["content"])
        return files

    def assert_token_only_in_authorization(self):
        assert self.requests
        for r in self.requests:
            assert r["headers"].get("Authorization") == f"Bearer {TOKEN}", r["path"]
            others = {k: v for k, v in r["headers"].items() if k != "Authorization"}
            assert TOKEN not in json.dumps(others) and TOKEN not in r["url"]
            assert TOKEN.encode() not in r["body"]


def _json(obj) -> Response:
    return Response(json.dumps(obj), status=200, content_type="application/json")


@pytest.fixture
def hub(httpserver, tmp_path):
    fake = FakeHub()
    httpserver.expect_request(re.compile(".*")).respond_with_handler(fake.handle)
    env = {"HF_ENDPOINT": httpserver.url_for("").rstrip("/"), "HF_TOKEN": TOKEN, "HF_HUB_DISABLE_TELEMETRY": "1",
           "HF_HUB_DISABLE_PROGRESS_BARS": "1", "HF_HOME": str(tmp_path / "hf-home")}
    return fake, env


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
                                                                                  tiny_causal_dir):  # noqa: F811
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
