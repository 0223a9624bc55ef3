"""`kbench read` on a tiny random Llama: trains, saves a loadable checkpoint, resumes by epoch."""

from __future__ import annotations

import json

import pytest
import torch

from kbench.errors import UserError
from kbench.models.loading import load_model
from kbench.read import ReadSettings, read_text

PARAGRAPHS = [
    {"text": "Paris is the capital of France . Berlin is the capital of Germany .", "split": "dev"},
    {"text": "Rome is the capital of Italy . Madrid is the capital of Spain .", "split": "dev"},
    {"text": "Marie Curie was born in Warsaw . Albert Einstein was born in Ulm .", "split": "test"},
] * 4


@pytest.fixture
def text_file(tmp_path):
    path = tmp_path / "paragraphs.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in PARAGRAPHS))
    return path


def _settings(model, text, out, **kw):
    return ReadSettings(model=str(model), text=str(text), out=str(out), **{"seq_len": 16, "batch_size": 2, "lr": 1e-3, **kw})


def test_read_trains_and_saves_a_loadable_checkpoint(tiny_causal_dir, text_file, tmp_path, caplog):
    out = tmp_path / "ckpt"
    with caplog.at_level("INFO"):
        record = read_text(_settings(tiny_causal_dir, text_file, out, max_steps=3))
    assert record["steps"] == 3 and len(record["epoch_losses"]) == 1
    logged = [r.getMessage() for r in caplog.records]  # progress (kbench.progress) and the epoch's milestone
    assert "reading paragraphs.jsonl: 0/3 steps" in logged and any(m.startswith("reading paragraphs.jsonl: 3/3 steps in") for m in logged)
    assert any(m.startswith("epoch 1: mean loss") and "(step 3 of 3)" in m for m in logged)
    assert (out / "read.json").is_file() and (out / "model.safetensors").is_file()
    assert not list(out.rglob("*.bin")) and not list(out.rglob("*.pt"))  # no pickle anywhere
    before, after = load_model(str(tiny_causal_dir)), load_model(str(out))
    assert before.identity != after.identity
    changed = [not torch.equal(a, b) for a, b in zip(before.model.parameters(), after.model.parameters())]
    assert any(changed)


def test_read_resumes_after_the_last_epoch(tiny_causal_dir, text_file, tmp_path):
    out = tmp_path / "ckpt"
    first = read_text(_settings(tiny_causal_dir, text_file, out, epochs=1))
    again = read_text(_settings(tiny_causal_dir, text_file, out, epochs=1))
    assert again["steps"] == first["steps"] and again["epoch_losses"] == first["epoch_losses"]  # nothing recomputed
    with pytest.raises(UserError, match="other settings"):
        read_text(_settings(tiny_causal_dir, text_file, out, epochs=1, lr=5e-4))
    # two epochs in one go equal one epoch, then a second epoch resumed from the saved state
    whole = read_text(_settings(tiny_causal_dir, text_file, tmp_path / "two", epochs=2))
    resumed = read_text(_settings(tiny_causal_dir, text_file, out, epochs=2))
    assert whole["steps"] == resumed["steps"] == 2 * first["steps"]
    assert resumed["epoch_losses"] == pytest.approx(whole["epoch_losses"], rel=1e-4)
    a, b = load_model(str(tmp_path / "two")).model, load_model(str(out)).model
    assert all(torch.allclose(x, y, atol=1e-5) for x, y in zip(a.parameters(), b.parameters()))


def test_read_filters_jsonl_lines_and_rejects_bad_input(tiny_causal_dir, text_file, tmp_path):
    record = read_text(_settings(tiny_causal_dir, text_file, tmp_path / "dev", only={"split": "dev"}))
    everything = read_text(_settings(tiny_causal_dir, text_file, tmp_path / "all"))
    assert record["blocks"] < everything["blocks"]
    with pytest.raises(UserError, match="no text"):
        read_text(_settings(tiny_causal_dir, text_file, tmp_path / "none", only={"split": "nope"}))
    with pytest.raises(UserError, match="no such file"):
        read_text(_settings(tiny_causal_dir, tmp_path / "missing", tmp_path / "x"))
