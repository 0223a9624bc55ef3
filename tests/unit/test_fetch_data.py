"""`kbench data fetch` against a local HTTP server acting as a mirror of the upstream hosts.

Pinned files are served with their real bytes (from ../shared/data); archives without a pinned
checksum (LAMA's data.zip) are built here in the upstream layout from real LAMA lines.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from urllib.parse import urlparse

import pytest
from werkzeug import Response

from kbench.errors import UserError
from kbench.sources.catalog import LAMA_ZIP, catalog, source
from kbench.sources.fetch_data import LOCK_FILE, fetch_sources, mirrored


def mirror_path(url: str) -> str:
    parts = urlparse(url)
    return f"/{parts.netloc}{parts.path}"


def lama_zip(shared_data: Path, *, extra: dict[str, bytes] | None = None, lines: int = 20) -> bytes:
    """data.zip in LAMA's layout: data/TREx/P*.jsonl, data/Google_RE/*_test.jsonl, data/relations.jsonl."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for rel in ("P19", "P20"):
            text = (shared_data / "lama_trex" / "TREx" / f"{rel}.jsonl").read_text(encoding="utf-8")
            zf.writestr(f"data/TREx/{rel}.jsonl", "".join(text.splitlines(keepends=True)[:lines]))
        text = (shared_data / "lama_google_re" / "place_of_birth_test.jsonl").read_text(encoding="utf-8")
        zf.writestr("data/Google_RE/place_of_birth_test.jsonl", "".join(text.splitlines(keepends=True)[:lines]))
        zf.writestr("data/relations.jsonl", (shared_data / "lama_trex" / "relations.jsonl").read_bytes())
        zf.writestr("data/ConceptNet/test.jsonl", "{}\n")  # not mapped by the catalog: ignored
        for name, data in (extra or {}).items():
            zf.writestr(name, data)
    return buf.getvalue()


def serve_pinned(httpserver, shared_data: Path, name: str) -> None:
    """Serve every pinned file of a catalog source with the bytes of its ../shared/data copy."""
    for item in source(name).downloads:
        if not item.is_archive:
            body = (shared_data / name / item.dest).read_bytes()
            httpserver.expect_request(mirror_path(item.url)).respond_with_data(body)


def leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.startswith(".kbench-fetch-"))


@pytest.fixture
def mirror(httpserver) -> str:
    return httpserver.url_for("/").rstrip("/")


def test_catalog_entries_are_complete():
    for src in catalog().values():
        assert src.reference.license, src.name            # every source states its license (sources/references.py)
        assert src.downloads, src.name
        for item in src.downloads:
            assert item.url.startswith("https://") and (item.dest or item.members)
            assert item.sha256 is None or len(item.sha256) == 64
    assert source("lama_trex").reference.license == "cc-by-nc-4.0"
    assert source("rebel_sample").reference.license == "cc-by-nc-sa-4.0"


def test_mirror_url_layout():
    assert mirrored(LAMA_ZIP, "http://127.0.0.1:9/m/") == "http://127.0.0.1:9/m/dl.fbaipublicfiles.com/LAMA/data.zip"
    assert mirrored(LAMA_ZIP, None) == LAMA_ZIP


def test_pinned_files_arrive_verified_in_the_recipe_layout(httpserver, mirror, shared_data, tmp_path):
    serve_pinned(httpserver, shared_data, "lama_trex_autoprompt_splits")
    root = tmp_path / "data"
    written = fetch_sources(["lama_trex_autoprompt_splits"], root, mirror=mirror)
    assert written == [root / "lama_trex_autoprompt_splits"]
    for rel in ("P19", "P1001"):
        for split in ("train", "dev"):
            got = root / "lama_trex_autoprompt_splits" / rel / f"{split}.jsonl"
            assert got.read_bytes() == (shared_data / "lama_trex_autoprompt_splits" / rel / f"{split}.jsonl").read_bytes()
    assert "apache-2.0" in (root / "lama_trex_autoprompt_splits" / "SOURCE.md").read_text()
    assert not (root / LOCK_FILE).exists()      # every checksum was pinned: nothing to record
    assert leftovers(root) == []
    # a folder that is there is kept, not downloaded again
    served = len(httpserver.log)
    assert fetch_sources(["lama_trex_autoprompt_splits"], root, mirror=mirror) == []
    assert len(httpserver.log) == served


def test_lama_archive_is_mapped_and_its_checksum_recorded(httpserver, mirror, shared_data, tmp_path):
    archive = lama_zip(shared_data)
    httpserver.expect_request(mirror_path(LAMA_ZIP)).respond_with_data(archive)
    serve_pinned(httpserver, shared_data, "lama_trex")
    root = tmp_path / "data"
    fetch_sources(["lama_trex", "lama_google_re"], root, mirror=mirror)

    assert sorted(p.name for p in (root / "lama_trex" / "TREx").iterdir()) == ["P19.jsonl", "P20.jsonl"]
    assert (root / "lama_trex" / "relations.jsonl").read_bytes() == (shared_data / "lama_trex" / "relations.jsonl").read_bytes()
    assert (root / "lama_trex" / "prompt_variants" / "LPAQA_relations.jsonl").is_file()
    assert (root / "lama_trex" / "common_vocab_cased.txt").is_file()
    assert sorted(p.name for p in (root / "lama_google_re").iterdir()) == ["SOURCE.md", "place_of_birth_test.jsonl"]
    assert not (root / "lama_trex" / "ConceptNet").exists()
    # data.zip was downloaded once for both folders; its checksum is now locked
    assert sum(1 for request, _ in httpserver.log if request.path.endswith("/data.zip")) == 1
    lock = json.loads((root / LOCK_FILE).read_text())
    import hashlib
    assert lock["files"][LAMA_ZIP] == {"sha256": hashlib.sha256(archive).hexdigest(), "bytes": len(archive)}


def test_corrupted_download_is_refused_and_leaves_the_old_folder(httpserver, mirror, shared_data, tmp_path):
    root = tmp_path / "data"
    httpserver.expect_ordered_request(mirror_path(LAMA_ZIP)).respond_with_data(lama_zip(shared_data))
    fetch_sources(["lama_google_re"], root, mirror=mirror)
    before = {p.name: p.read_bytes() for p in (root / "lama_google_re").iterdir()}
    lock_before = (root / LOCK_FILE).read_bytes()

    # the same URL now serves other bytes: the recorded checksum refuses them
    httpserver.expect_ordered_request(mirror_path(LAMA_ZIP)).respond_with_data(lama_zip(shared_data, lines=5))
    with pytest.raises(UserError, match=rf"checksum mismatch .* \(recorded in {root / LOCK_FILE}\)"):
        fetch_sources(["lama_google_re"], root, mirror=mirror, force=True)
    assert {p.name: p.read_bytes() for p in (root / "lama_google_re").iterdir()} == before
    assert (root / LOCK_FILE).read_bytes() == lock_before
    assert leftovers(root) == []


def test_corrupted_pinned_file_leaves_nothing(httpserver, mirror, tmp_path):
    item = source("wikidata_aliases_xfactr").downloads[0]
    httpserver.expect_request(mirror_path(item.url)).respond_with_data(b"Q2\tEarth\n")
    root = tmp_path / "data"
    with pytest.raises(UserError, match=r"checksum mismatch .*pinned in kbench's catalog"):
        fetch_sources(["wikidata_aliases_xfactr"], root, mirror=mirror)
    assert sorted(p.name for p in root.iterdir()) == []


def test_truncated_transfer_is_an_error(httpserver, mirror, shared_data, tmp_path):
    item = source("wikidata_aliases_xfactr").downloads[0]
    body = (shared_data / "wikidata_aliases_xfactr" / "TREx_en.txt").read_bytes()
    # the server promises the whole file and closes the connection after a part of it
    short = Response(body[:1000])
    short.headers["Content-Length"] = str(len(body))
    httpserver.expect_request(mirror_path(item.url)).respond_with_response(short)
    root = tmp_path / "data"
    with pytest.raises(UserError, match=r"download failed after 3 attempts \(truncated: "):
        fetch_sources(["wikidata_aliases_xfactr"], root, mirror=mirror)
    assert sorted(p.name for p in root.iterdir()) == []


def test_truncated_archive_is_not_recorded(httpserver, mirror, shared_data, tmp_path):
    archive = lama_zip(shared_data)
    httpserver.expect_request(mirror_path(LAMA_ZIP)).respond_with_data(archive[: len(archive) // 2])
    root = tmp_path / "data"
    with pytest.raises(UserError, match="not a valid archive .*truncated or damaged"):
        fetch_sources(["lama_google_re"], root, mirror=mirror)
    assert sorted(p.name for p in root.iterdir()) == []   # no folder, no lock with a bad checksum


def test_archive_members_cannot_escape(httpserver, mirror, shared_data, tmp_path):
    archive = lama_zip(shared_data, extra={"data/Google_RE/../../../evil_test.jsonl": b"{}\n"})
    httpserver.expect_request(mirror_path(LAMA_ZIP)).respond_with_data(archive)
    root = tmp_path / "data"
    with pytest.raises(UserError, match="points outside the archive"):
        fetch_sources(["lama_google_re"], root, mirror=mirror)
    assert sorted(p.name for p in root.iterdir()) == []
    assert not list(tmp_path.rglob("evil_test.jsonl"))


def test_changed_upstream_layout_is_named(httpserver, mirror, tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("LAMA/TREx/P19.jsonl", "{}\n")
    httpserver.expect_request(mirror_path(LAMA_ZIP)).respond_with_data(buf.getvalue())
    with pytest.raises(UserError, match="no archive member matches 'data/Google_RE/\\*_test.jsonl'"):
        fetch_sources(["lama_google_re"], tmp_path / "data", mirror=mirror)


def test_unknown_names_are_refused_before_anything_is_written(tmp_path):
    with pytest.raises(UserError, match="unknown source 'lama'; known: lama_trex"):
        fetch_sources(["lama"], tmp_path / "data")
    assert not (tmp_path / "data").exists()


def test_truthfulqa_csv_is_fetched_locked_and_read_as_itis_probing_set(httpserver, mirror, tmp_path):
    """The catalog's TruthfulQA entry against a local server serving a small CSV in the real file's format."""
    import hashlib

    from kbench.tasks.kee.techniques.truthfulqa import read_probing_set
    from kbench.sources.catalog import TRUTHFULQA_CSV

    body = (Path(__file__).resolve().parents[1] / "fixtures" / "truthfulqa" / "TruthfulQA.csv").read_bytes()
    httpserver.expect_request(mirror_path(TRUTHFULQA_CSV)).respond_with_data(body)
    root = tmp_path / "data"
    assert fetch_sources(["truthfulqa"], root, mirror=mirror) == [root / "truthfulqa"]
    got = root / "truthfulqa" / "TruthfulQA.csv"
    assert got.read_bytes() == body
    assert "apache-2.0" in (root / "truthfulqa" / "SOURCE.md").read_text()
    assert "/013686a06be7a7bde5bf8223943e106c7250123c/" in TRUTHFULQA_CSV   # a pinned commit, not a branch
    lock = json.loads((root / LOCK_FILE).read_text())   # no checksum could be pinned offline: the first download locks it
    assert lock["files"][TRUTHFULQA_CSV] == {"sha256": hashlib.sha256(body).hexdigest(), "bytes": len(body)}
    probing = read_probing_set(got)
    assert len(probing.questions) == 6 and probing.sha256 == hashlib.sha256(body).hexdigest()
    question, true, false = probing.questions[2]
    assert question == "What is the capital of Australia?"
    assert true == ("The capital of Australia is Canberra", "Canberra", "Canberra is the capital")   # Best Answer first, once
    assert false == ("The capital of Australia is Sydney", "The capital of Australia is Melbourne")
    build, select = probing.split(0.2)
    assert len(select) == 1 and len(build) == 5 and not {q for q, _, _ in build} & {q for q, _, _ in select}
    true_texts, false_texts = probing.statements(select)
    assert all(t.startswith("Q: ") and " A: " in t for t in true_texts + false_texts)
    # a changed upstream file is refused against the lock
    httpserver.clear()
    httpserver.expect_request(mirror_path(TRUTHFULQA_CSV)).respond_with_data(body + b"x")
    with pytest.raises(UserError, match="checksum mismatch"):
        fetch_sources(["truthfulqa"], root, mirror=mirror, force=True)
    assert got.read_bytes() == body


def test_truthfulqa_csv_problems_name_the_file_and_line(tmp_path):
    from kbench.errors import InputError
    from kbench.tasks.kee.techniques.truthfulqa import read_probing_set

    bad = tmp_path / "TruthfulQA.csv"
    bad.write_text("Type,Question,Best Answer\nx,q,a\n")
    with pytest.raises(InputError, match=r"TruthfulQA.csv: not TruthfulQA's CSV: missing column\(s\) Category"):
        read_probing_set(bad)
    header = "Type,Category,Question,Best Answer,Correct Answers,Incorrect Answers,Source\n"
    bad.write_text(header + "A,B,Why?,Because,Because,Not so,src\nA,B,What?,That,That,,src\n")
    with pytest.raises(InputError, match=r"TruthfulQA.csv:3: a question needs"):
        read_probing_set(bad)
