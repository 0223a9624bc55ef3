"""kbench.sources.download against a real local HTTP server (pytest-httpserver)."""

from __future__ import annotations

import hashlib
import io
import tarfile
import zipfile

import pytest

from kbench.errors import UserError
from kbench.sources.download import fetch, materialize

BODY = b'{"uuid": "u1"}\n'
SHA = hashlib.sha256(BODY).hexdigest()


def test_fetch_verifies_caches_and_reuses(httpserver, tmp_path):
    httpserver.expect_oneshot_request("/P19.jsonl").respond_with_data(BODY)
    path = fetch(httpserver.url_for("/P19.jsonl"), SHA, tmp_path)
    assert path == tmp_path / "downloads" / SHA / "P19.jsonl"
    assert path.read_bytes() == BODY
    # second call: served from the cache (the one-shot handler would fail a second request)
    assert fetch(httpserver.url_for("/P19.jsonl"), SHA, tmp_path) == path
    assert httpserver.log and len(httpserver.log) == 1
    assert httpserver.log[0][0].headers["User-Agent"].startswith("kbench/")


def test_checksum_mismatch_leaves_nothing_behind(httpserver, tmp_path):
    httpserver.expect_request("/P19.jsonl").respond_with_data(b"tampered\n")
    with pytest.raises(UserError, match="checksum mismatch"):
        fetch(httpserver.url_for("/P19.jsonl"), SHA, tmp_path, key="trex")
    folder = tmp_path / "downloads" / SHA
    assert not folder.exists() or list(folder.iterdir()) == []


def test_damaged_cache_entry_is_downloaded_again(httpserver, tmp_path):
    httpserver.expect_request("/P19.jsonl").respond_with_data(BODY)
    cached = tmp_path / "downloads" / SHA / "P19.jsonl"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"corrupt")
    assert fetch(httpserver.url_for("/P19.jsonl"), SHA, tmp_path).read_bytes() == BODY


def test_sha256_is_required_and_checked(tmp_path):
    with pytest.raises(UserError, match="trex_sha256"):
        fetch("http://127.0.0.1:1/x.zip", None, tmp_path, key="trex")
    with pytest.raises(UserError, match="64 hex digits"):
        fetch("http://127.0.0.1:1/x.zip", "abc", tmp_path, key="trex")


def test_http_errors_are_user_errors_and_5xx_is_retried(httpserver, tmp_path):
    httpserver.expect_request("/missing.jsonl").respond_with_data("no", status=404)
    with pytest.raises(UserError, match="HTTP 404"):
        fetch(httpserver.url_for("/missing.jsonl"), SHA, tmp_path)
    httpserver.expect_ordered_request("/flaky.jsonl").respond_with_data("busy", status=503)
    httpserver.expect_ordered_request("/flaky.jsonl").respond_with_data(BODY)
    assert fetch(httpserver.url_for("/flaky.jsonl"), SHA, tmp_path).read_bytes() == BODY


@pytest.mark.parametrize("kind", ["zip", "tar.gz"])
def test_archives_are_unpacked_once(httpserver, tmp_path, kind):
    buf = io.BytesIO()
    if kind == "zip":
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr("data/TREx/P19.jsonl", BODY)
    else:
        with tarfile.open(fileobj=buf, mode="w:gz") as tf:
            info = tarfile.TarInfo("data/TREx/P19.jsonl")
            info.size = len(BODY)
            tf.addfile(info, io.BytesIO(BODY))
    data = buf.getvalue()
    digest = hashlib.sha256(data).hexdigest()
    httpserver.expect_oneshot_request(f"/lama.{kind}").respond_with_data(data)
    root = materialize(httpserver.url_for(f"/lama.{kind}"), digest, tmp_path, key="trex")
    assert (root / "data" / "TREx" / "P19.jsonl").read_bytes() == BODY
    assert materialize(httpserver.url_for(f"/lama.{kind}"), digest, tmp_path, key="trex") == root


def test_zip_member_escaping_the_folder_is_refused(httpserver, tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("../evil.txt", b"x")
    data = buf.getvalue()
    httpserver.expect_request("/evil.zip").respond_with_data(data)
    with pytest.raises(UserError, match="escape"):
        materialize(httpserver.url_for("/evil.zip"), hashlib.sha256(data).hexdigest(), tmp_path, key="trex")
    assert not (tmp_path / "downloads" / "evil.txt").exists()


def test_local_paths_resolve_relative_to_base(tmp_path):
    (tmp_path / "d").mkdir()
    assert materialize("d", None, tmp_path / "cache", key="trex", base=tmp_path) == tmp_path / "d"
    with pytest.raises(UserError, match="does not exist"):
        materialize("nope", None, tmp_path / "cache", key="trex", base=tmp_path)


def _cut(body: bytes, at: int, **headers) -> "Response":
    """A response that announces the whole body but sends only its first `at` bytes, then closes."""
    from werkzeug import Response

    resp = Response(body[:at], headers=headers)
    resp.headers["Content-Length"] = str(len(body))
    return resp


def test_broken_transfer_resumes_with_a_range_request(httpserver, tmp_path):
    from werkzeug import Response

    from kbench.sources.download import download_file

    body = bytes(range(256)) * 40
    httpserver.expect_ordered_request("/big.bin").respond_with_response(_cut(body, 1000, **{"Accept-Ranges": "bytes"}))
    rest = Response(body[1000:], status=206, headers={"Content-Range": f"bytes 1000-{len(body) - 1}/{len(body)}"})
    httpserver.expect_ordered_request("/big.bin", headers={"Range": "bytes=1000-"}).respond_with_response(rest)
    got = download_file(httpserver.url_for("/big.bin"), tmp_path / "big.bin")
    assert got == (hashlib.sha256(body).hexdigest(), len(body))
    assert (tmp_path / "big.bin").read_bytes() == body and len(httpserver.log) == 2


def test_broken_transfer_without_ranges_starts_over(httpserver, tmp_path):
    from kbench.sources.download import download_file

    body = b"x" * 5000
    httpserver.expect_ordered_request("/f.bin").respond_with_response(_cut(body, 1000))
    httpserver.expect_ordered_request("/f.bin").respond_with_data(body)
    assert download_file(httpserver.url_for("/f.bin"), tmp_path / "f.bin") == (hashlib.sha256(body).hexdigest(), 5000)
    assert "Range" not in httpserver.log[1][0].headers
