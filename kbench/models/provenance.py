"""What produced a result: the software, the machine, the weights and the code.

    environment("cpu")          -> {"packages": {"torch": "2.13.0", ...}, "device": "cpu",
                                    "device_name": "AMD EPYC 7B13", "threads": 2, "python": "3.11.9", ...}
    weights_provenance(loaded)  -> {"file": ".../SmolLM2-135M-Instruct.Q4_1.gguf", "sha256": "b179...",
                                    "format": "gguf", "quantization": "Q4_1", "dequantized_to": "float32", ...}
    code_hash("kbench.tasks.kee.techniques.caa")   -> sha256 of the module and the kbench modules it uses
    RUNNER_MODULES, cache_versions()              -> what the result cache keys on besides its inputs

The result cache keys every entry by `cache_versions()` and by the source of the code that
computed it (`code_hash`), so a fix in a technique, in decoding or in prompt encoding, or a new
torch, never reuses outputs of the old code. Code is hashed as source text: a change to a
comment invalidates too, which costs a recomputation but never a wrong result.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import importlib.util
import json
import platform
import subprocess
from pathlib import Path
from typing import Any

from kbench.io import atomic_path, stable_hash

# The modules that turn the runner's inputs into its outputs (rank_first_token, generate, ...).
RUNNER_MODULES = (
    "kbench.models.runner",
    "kbench.models.template",
    "kbench.models.batching",
    "kbench.models.decoding",
    "kbench.models.encoding",
    "kbench.models.packing",
    "kbench.models.kv_cache",
    "kbench.models.ranking",
    "kbench.models.padding",
    "kbench.models.interventions",
    "kbench.models.hooks",
    "kbench.models.whitebox",
    "kbench.models.shared_prefix",
    "kbench.models.tree_packing",
)
PACKAGES = ("kbench", "torch", "transformers", "accelerate", "tokenizers", "safetensors", "gguf", "numpy")
# Modules whose imports a technique's code hash follows: the code that shapes model calls.
# Utilities (kbench.io, kbench.errors) and package __init__ files (the technique registry) are
# left out, so registering a new technique does not invalidate every other technique's results.
_FOLLOWED = ("kbench.evaluate.", "kbench.models.", "kbench.tasks.")
_PROVENANCE_FILE = "kbench-provenance.json"


def package_versions() -> dict[str, str | None]:
    """Installed versions of the packages that shape results (None: not installed)."""
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


@functools.lru_cache(maxsize=1)
def cache_versions() -> dict[str, str | None]:
    """The versions every result-cache key includes: kbench, torch and transformers."""
    versions = package_versions()
    return {name: versions[name] for name in ("kbench", "torch", "transformers")}


def environment(device: Any = "cpu") -> dict[str, Any]:
    """Packages, device, torch's thread count, Python and OS: what a rerun must match to be
    bit-identical (float sums depend on the kernels, hence on the device, threads and torch).
    `device`: "cpu", "cuda:0", a torch.device, or a model runner (its `.device`)."""
    import torch

    device = str(getattr(device, "device", device))

    return {
        "packages": package_versions(),
        "kbench_commit": _git_commit(),
        "device": device,
        "device_name": _device_name(device),
        "threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def _device_name(device: str) -> str:
    import torch

    if device.startswith("cuda") and torch.cuda.is_available():
        return torch.cuda.get_device_name(torch.device(device))
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git_commit() -> str | None:
    """The commit of a source checkout of kbench, "+dirty" with uncommitted changes; None when
    kbench is installed from a wheel."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


# ---------------------------------------------------------------------------- code
def _source(module_name: str) -> str:
    spec = importlib.util.find_spec(module_name)
    if spec is None or spec.origin is None:
        raise ValueError(f"no source for module {module_name}")
    return Path(spec.origin).read_text(encoding="utf-8")


def source_hash(module_names) -> str:
    """sha256 over the source text of the named modules (in the given order)."""
    return stable_hash([[name, _source(name)] for name in module_names])


def code_hash(module_name: str) -> str:
    """sha256 of a module's source and of the kbench modules it imports directly from
    kbench.evaluate.*, kbench.models.* and kbench.tasks.* (a technique: its module, `base`, `fitting`, `hooks`).
    Read from disk at each call (a few ms), so it is the code on disk now."""
    return source_hash([module_name, *sorted(_direct_imports(module_name))])


def _direct_imports(module_name: str) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(_source(module_name))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from kbench.models import hooks` imports the module kbench.models.hooks
            names = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
        else:
            continue
        for name in names:
            if name != module_name and name.startswith(_FOLLOWED) and _is_plain_module(name):
                found.add(name)
    return found


def _is_plain_module(name: str) -> bool:
    """A module file, not a package __init__ and not a name inside a module."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    return spec is not None and spec.origin is not None and spec.submodule_search_locations is None


# ---------------------------------------------------------------------------- weights
def weights_provenance(loaded) -> dict[str, Any]:
    """Where a LoadedModel's weights came from: the file (or folder files) and its sha256, the
    format, the GGUF quantisation and the dtype it was de-quantised to. Computed once per
    weights file and kept next to the converted model (`kbench-provenance.json`)."""
    origin = Path(loaded.origin) if loaded.origin else None
    if origin is None or not origin.exists():  # a hub id: transformers' own cache holds the files
        return {
            "file": None,
            "source": loaded.origin or loaded.name,
            "sha256": None,
            "format": "hub",
            "revision": getattr(loaded.model.config, "_commit_hash", None),
            "quantization": None,
            "dequantized_to": None,
            "dtype": loaded.dtype,
        }
    if origin.suffix == ".gguf":
        folder = Path(loaded.folder)
        info = _memoised(folder, lambda: {**_gguf_facts(origin), "dequantized_to": _stored_dtype(folder)})
        sha256 = json.loads((folder / "kbench-converted.json").read_text())["gguf_sha256"]
        return {
            "file": str(origin),
            "sha256": sha256,
            "format": "gguf",
            "quantization": info["quantization"],
            "tensor_types": info["tensor_types"],
            "dequantized_to": info["dequantized_to"],
            "converted_folder": loaded.folder,
            "dtype": loaded.dtype,
        }
    from kbench.models.loading import _memo_sha256

    files = sorted(f for f in origin.iterdir() if f.suffix in {".safetensors", ".bin"})
    hashes = {f.name: _memo_sha256(f) for f in files}
    kind = "safetensors" if any(f.suffix == ".safetensors" for f in files) else "pytorch"
    return {
        "file": str(files[0]) if len(files) == 1 else str(origin),
        "sha256": next(iter(hashes.values())) if len(hashes) == 1 else None,
        "files_sha256": hashes,
        "format": kind,
        "quantization": getattr(getattr(loaded.model.config, "quantization_config", None), "quant_method", None),
        "dequantized_to": None,
        "dtype": loaded.dtype,
    }


def _memoised(folder: Path, compute) -> dict:
    path = folder / _PROVENANCE_FILE
    if path.exists():
        return json.loads(path.read_text())
    info = compute()
    try:
        with atomic_path(path) as tmp:
            tmp.write_text(json.dumps(info, indent=2, sort_keys=True))
    except OSError:  # a read-only model cache: recompute next time
        pass
    return info


def _stored_dtype(folder: Path) -> str:
    """The dtype(s) of the tensors in a converted folder's safetensors files, read from their
    headers (8-byte length, then JSON): what transformers de-quantised the GGUF to."""
    names = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}
    dtypes = set()
    for path in sorted(folder.glob("*.safetensors")):
        with open(path, "rb") as fh:
            header = json.loads(fh.read(int.from_bytes(fh.read(8), "little")))
        dtypes |= {entry["dtype"] for name, entry in header.items() if name != "__metadata__"}
    return "+".join(sorted(names.get(d, d) for d in dtypes))


def _gguf_facts(path: Path) -> dict:
    """The GGUF's tensor types, counted, and its quantisation: the type of most weight tensors
    (SmolLM2's file: Q4_1 for every projection, Q8_0 for the embeddings, F32 for the norms)."""
    from gguf import GGUFReader

    counts: dict[str, int] = {}
    elements: dict[str, int] = {}
    for tensor in GGUFReader(path).tensors:
        kind = tensor.tensor_type.name
        counts[kind] = counts.get(kind, 0) + 1
        elements[kind] = elements.get(kind, 0) + int(tensor.n_elements)
    quantized = {k: n for k, n in counts.items() if k not in ("F32", "F16", "BF16")}
    main = max(quantized, key=lambda k: (quantized[k], elements[k])) if quantized else max(elements, key=lambda k: elements[k])
    return {"quantization": main, "tensor_types": counts}
