"""A local infini-gram index over a corpus folder: exact substring counts and containing documents.

Tokenisation decision: the index is built over raw UTF-8 bytes (`--token_dtype u8`, no
tokenizer). That needs no tokenizer download, works for every script, and makes a count an exact
*byte-substring* count: "Paris" also matches inside "Parisian", and matching is case-sensitive.
Presence checks on entity names want exactly this (is the name anywhere in the corpus?), and the
answer does not depend on a model's vocabulary. A token-level index (the local model tokenizer)
would count whole-token sequences instead; infini-gram's indexer only knows hub tokenizers, so
it is not offered here.

Corpus: a folder of `.jsonl` files (or one `.jsonl` file) whose lines carry a `text` field, as
infini-gram's indexer expects; other fields are ignored.

Cache: `cache_dir/infini_gram/<key>/` where key = sha256 over the corpus files' relative paths and
contents plus `INDEX_VERSION`. The index is built into a sibling temporary folder and renamed into
place when complete, so an interrupted build is never mistaken for an index. All paths passed to
the indexer are absolute (it changes directory while building).

Disk needs (u8): tokenized text ~1 byte per corpus byte; suffix array `ceil(log2(N)/8)` bytes
per byte (4-5 for corpora up to 1 TB); 8 bytes per document of offsets. So ~5-7x the corpus text
size for the final index, and about as much again in temporary files while it is built. The REBEL
sample (3 MB) needs ~15 MB. Memory: `mem_gb` bounds the indexer's batches.

The frequency source `corpus_count` (an entity's frequency = the number of times its name occurs
in the corpus, for `frequency_bin`) is built on it in `kbench/construct/frequency/corpus.py`.

Engine note: the u8 engine's vocabulary size is a byte, so it is opened with vocab_size 255 and
eos id 254; byte 0xFE never occurs in UTF-8, and documents are separated by 0xFF by the indexer.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from kbench.errors import InputError, UserError, require
from kbench.io import sha256_file, stable_hash

INDEX_VERSION = 1


def corpus_files(corpus: Path) -> list[Path]:
    if corpus.is_dir():
        files = sorted(p for p in corpus.rglob("*.jsonl") if p.is_file())
        if not files:
            raise InputError(corpus, "corpus folder holds no .jsonl files")
        return files
    if corpus.is_file() and corpus.suffix == ".jsonl":
        return [corpus]
    raise InputError(corpus, "corpus must be a .jsonl file or a folder of them")


def corpus_key(corpus: Path) -> str:
    files = corpus_files(corpus)
    base = corpus if corpus.is_dir() else corpus.parent
    return stable_hash({"v": INDEX_VERSION, "files": [[str(f.relative_to(base)), sha256_file(f)] for f in files]})[:24]


def _stage_corpus(corpus: Path, folder: Path) -> Path:
    """The indexer reads every `*.json*` under a folder: give it a folder of links to our files only."""
    base = corpus if corpus.is_dir() else corpus.parent
    for f in corpus_files(corpus):
        link = folder / f.relative_to(base)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(f.resolve())
    return folder


def build_index(corpus: Path, cache_dir: Path, *, cpus: int = 1, mem_gb: int = 2) -> Path:
    """The index folder for `corpus`, building it first when the cache has none."""
    require("infini_gram", "corpus presence (infini-gram index)", extra="text", package="infini-gram")
    target = (cache_dir / "infini_gram" / corpus_key(corpus)).resolve()
    if (target / "table.0").exists():
        return target
    work = target.parent / f".{target.name}.building-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    data_dir, save_dir = _stage_corpus(corpus.resolve(), work / "data"), work / "index"
    save_dir.mkdir(parents=True)
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    ulimit = 20000 if hard == resource.RLIM_INFINITY else min(20000, hard)
    cmd = [
        sys.executable,
        "-m",
        "infini_gram.indexing",
        "--data_dir",
        str(data_dir),
        "--save_dir",
        str(save_dir),
        "--token_dtype",
        "u8",
        "--cpus",
        str(cpus),
        "--mem",
        str(mem_gb),
        "--ulimit",
        str(ulimit),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0 or not (save_dir / "table.0").exists():
        tail = (done.stdout + done.stderr)[-1500:]
        shutil.rmtree(work, ignore_errors=True)
        raise UserError(f"building the infini-gram index over {corpus} failed:\n{tail}")
    try:
        os.replace(save_dir, target)
    except OSError:  # another process finished the same index first
        if not (target / "table.0").exists():
            raise
    shutil.rmtree(work, ignore_errors=True)
    return target


class CorpusIndex:
    """Counts over one built index (see `build_index`)."""

    def __init__(self, index_dir: Path):
        from infini_gram.engine import InfiniGramEngine

        self.engine = InfiniGramEngine(index_dir=str(index_dir), eos_token_id=254, vocab_size=255, token_dtype="u8")

    def count(self, text: str) -> int:
        """Occurrences of `text` as a byte substring anywhere in the corpus (0 for empty text)."""
        if not text:
            return 0
        return int(self.engine.count(input_ids=list(text.encode("utf-8")))["count"])

    def documents_containing(self, text: str, limit: int) -> tuple[set[int], bool]:
        """Indexes of documents containing `text`, from at most `limit` occurrences; True if truncated."""
        if not text:
            return set(), False
        found = self.engine.find(input_ids=list(text.encode("utf-8")))
        docs: set[int] = set()
        seen = 0
        for shard, (start, end) in enumerate(found["segment_by_shard"]):
            for rank in range(start, end):
                if seen >= limit:
                    return docs, True
                docs.add(int(self.engine.get_doc_by_rank(s=shard, rank=rank, max_disp_len=1)["doc_ix"]))
                seen += 1
        return docs, False
