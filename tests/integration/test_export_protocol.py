"""`kbench export lm-eval|inspect` carry the dataset's construction protocol (its manifest.json
`protocol` block, docs/protocol.md) into the exported task's metadata and README; a manifest
without one exports as "not recorded"; a malformed one exits 2 naming the manifest and key."""

from __future__ import annotations

import json
import shutil

from kbench.protocol import Deviation, ProtocolRecord
from tests.conftest import run_kbench
from tests.integration.test_export_cli import lmeval_task, load_module

BUILT = ProtocolRecord(
    "maple-construction",
    "MAPLE",
    (Deviation("frequency-from-evidence", "bins by Wikipedia pageviews", "bins by evidence counts", "head-tail gaps"),),
)


def _with_block(built_lama, tmp_path, block) -> object:
    dataset = tmp_path / "lama"
    shutil.copytree(built_lama, dataset)  # the session's built dataset stays as it is
    manifest = json.loads((dataset / "manifest.json").read_text())
    manifest.pop("protocol", None)
    if block is not None:
        manifest["protocol"] = block
    (dataset / "manifest.json").write_text(json.dumps(manifest))
    return dataset


def test_exports_carry_the_dataset_protocol(built_lama, tmp_path):
    dataset = _with_block(built_lama, tmp_path, BUILT.block())
    out = tmp_path / "lm"
    proc = run_kbench("export", "lm-eval", str(dataset), "--out", str(out), "--limit", "3")
    assert proc.returncode == 0, proc.stderr
    task = lmeval_task(out, "kbench_lama_test_cloze")
    assert task.config.metadata["dataset_protocol"] == BUILT.block()
    readme = (out / "README.md").read_text()
    assert "**1 deviation from maple-construction** (MAPLE)" in readme
    assert "| frequency-from-evidence | bins by Wikipedia pageviews | bins by evidence counts | head-tail gaps |" in readme

    path = tmp_path / "kbench_lama_plain.py"
    proc = run_kbench("export", "inspect", str(dataset), "--out", str(path), "--limit", "3")
    assert proc.returncode == 0, proc.stderr
    assert "# 1 deviation from maple-construction" in path.read_text()
    exported = load_module(path, "kbench_lama_plain").kbench_lama_plain()
    assert exported.metadata["dataset_protocol"] == BUILT.block()


def test_a_dataset_without_a_block_exports_as_not_recorded(built_lama, tmp_path):
    dataset = _with_block(built_lama, tmp_path, None)
    out = tmp_path / "lm"
    assert run_kbench("export", "lm-eval", str(dataset), "--out", str(out), "--limit", "3").returncode == 0
    assert lmeval_task(out, "kbench_lama_test_cloze").config.metadata["dataset_protocol"] == "not recorded"
    assert "Protocol not recorded" in (out / "README.md").read_text()


def test_a_malformed_block_exits_2(built_lama, tmp_path):
    dataset = _with_block(built_lama, tmp_path, {**BUILT.block(), "deviations": "none"})
    proc = run_kbench("export", "lm-eval", str(dataset), "--out", str(tmp_path / "lm"), "--limit", "3")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"{dataset / 'manifest.json'}: protocol.deviations" in proc.stderr
    assert not (tmp_path / "lm").exists()
