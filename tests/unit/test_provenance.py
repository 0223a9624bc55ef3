"""Provenance: the environment a result was computed in and where the weights came from."""

from __future__ import annotations

import hashlib
import json
import sys

import numpy as np
import pytest
import torch

from kbench.models.loading import load_model
from kbench.models.provenance import _gguf_facts, environment, weights_provenance


def test_environment_names_packages_device_threads_and_python():
    env = environment("cpu")
    assert torch.__version__.startswith(env["packages"]["torch"])
    assert {"transformers", "accelerate", "kbench", "numpy"} <= set(env["packages"])
    assert env["threads"] == torch.get_num_threads()
    assert env["python"] == ".".join(map(str, sys.version_info[:3]))
    assert env["device"] == "cpu" and env["device_name"]
    json.dumps(env)   # goes into results.json as is


def test_folder_weights_are_named_by_their_sha256(tiny_causal_dir):
    loaded = load_model(str(tiny_causal_dir))
    info = weights_provenance(loaded)
    weights = tiny_causal_dir / "model.safetensors"
    assert info["format"] == "safetensors" and info["file"] == str(weights.resolve())
    assert info["sha256"] == hashlib.sha256(weights.read_bytes()).hexdigest()
    assert info["quantization"] is None and info["dtype"] == "float32"


def test_gguf_quantisation_is_the_type_of_most_weight_tensors(tmp_path):
    """Read from the file's tensor table, as for SmolLM2's Q4_1 file (norms stay F32)."""
    gguf = pytest.importorskip("gguf")
    from gguf.quants import quantize

    path = tmp_path / "tiny.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    rng = np.random.default_rng(0)
    for name in ("blk.0.attn_q.weight", "blk.0.ffn_up.weight"):
        data = quantize(rng.random((4, 64), dtype=np.float32), gguf.GGMLQuantizationType.Q4_1)
        writer.add_tensor(name, data, raw_shape=data.shape, raw_dtype=gguf.GGMLQuantizationType.Q4_1)
    data = quantize(rng.random((8, 64), dtype=np.float32), gguf.GGMLQuantizationType.Q8_0)
    writer.add_tensor("token_embd.weight", data, raw_shape=data.shape, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    for name in ("blk.0.attn_norm.weight", "blk.0.ffn_norm.weight", "output_norm.weight"):
        writer.add_tensor(name, np.ones(64, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    assert _gguf_facts(path) == {"quantization": "Q4_1", "tensor_types": {"Q4_1": 2, "Q8_0": 1, "F32": 3}}
