"""A local stand-in for the Hugging Face Hub (pytest-httpserver at HF_ENDPOINT), for the `kbench publish` tests.

The server answers the calls huggingface_hub makes for create_repo + upload_folder (repo create,
README metadata validation, preupload, commit) the way the Hub does for small files ("regular" upload mode: contents
inline in the commit) and records every request, so the test sees exactly what left the machine; it serves back what
was published (snapshot_download). tests/conftest.py registers this module as a plugin: a test asks for `hub`.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re

import pytest
from werkzeug import Request, Response

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
    """(the stand-in, the environment that points huggingface_hub at it with the test token)."""
    fake = FakeHub()
    httpserver.expect_request(re.compile(".*")).respond_with_handler(fake.handle)
    env = {"HF_ENDPOINT": httpserver.url_for("").rstrip("/"), "HF_TOKEN": TOKEN, "HF_HUB_DISABLE_TELEMETRY": "1",
           "HF_HUB_DISABLE_PROGRESS_BARS": "1", "HF_HOME": str(tmp_path / "hf-home")}
    return fake, env
