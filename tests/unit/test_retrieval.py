"""Open-book retrieval: the gold section paragraph, and MiniLM search with its .npy embedding cache."""

from __future__ import annotations

import numpy as np

from kbench.evaluate.retrieval import EmbeddingIndex, SentenceEmbedder, gold_paragraph

PARAGRAPHS = [
    "The Anasazi carved homes from steep cliffs in the high desert of New Mexico.",
    "The Olmec developed the first writing system in the Western Hemisphere.",
    "Spain established the first colonies in the Americas after 1492.",
]


def test_gold_paragraph_picks_the_largest_word_overlap():
    ids = ["p1", "p2", "p3"]
    assert gold_paragraph(PARAGRAPHS, ids, "Which culture developed the first writing system? Olmec") == ("p2", PARAGRAPHS[1])
    assert gold_paragraph([], [], "anything") == (None, "")
    assert gold_paragraph(PARAGRAPHS, ids, "zzz")[0] == "p1"  # no overlap: the first paragraph, deterministically


def test_minilm_index_finds_the_paragraph_and_caches_embeddings(tmp_path):
    import os

    offline = os.environ.get("HF_HUB_OFFLINE")
    embedder = SentenceEmbedder()   # loads offline from the package folder, without switching the
    assert os.environ.get("HF_HUB_OFFLINE") == offline   # whole process offline (that broke `kbench publish`)
    index = EmbeddingIndex(embedder, ["p1", "p2", "p3"], PARAGRAPHS, tmp_path)
    found = index.top(["Native peoples lived in cliff dwellings.", "Who founded the first American colonies?"])
    assert [f[0] for f in found] == ["p1", "p3"]
    cached = list((tmp_path / "embeddings").glob("*.npy"))
    assert len(cached) == 1
    matrix = np.load(cached[0], allow_pickle=False)  # plain arrays, no pickle
    assert matrix.shape == (3, 384) and np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-4)
    again = EmbeddingIndex(embedder, ["p1", "p2", "p3"], PARAGRAPHS, tmp_path)
    assert np.array_equal(again.matrix, index.matrix)
