"""`kbench evaluate truefalse`: LEFT's true/false statements, in three settings.

Input: a dataset folder from `pipelines/left-textbook.toml` (statement rows, schema
`statement.v1.json`; the book text in `corpus/paragraphs.jsonl`).

How a statement is judged. The model reads

    [Passage: <paragraph>\n]Statement: <statement>\nIs this statement true or false?\nAnswer:

and the runner scores the answer forms " True" and " False" (summed log-probabilities);
margin = logP(True) - logP(False). LEFT's statements come in balanced pairs (one true, one
false per question), so the decision is calibrated over the pair: the statement with the
higher margin is called true and the other false (a tie calls both false). This removes the
model's overall bias towards one answer word. `uncalibrated_accuracy` (margin > 0 means true)
is reported beside it.

Settings:
  * `prior`: the statement alone, the model as given;
  * `open-book`: with one paragraph in the prompt (cut to `max_passage_words`): `--retriever gold`
    (the section paragraph sharing most words with the question and its correct option, see
    `retrieval.py`) or `sbert` (MiniLM top-1 over the statement's chapter, queried with the
    statement itself);
  * `closed-book`: the prior prompt on the model after `kbench read` (`--checkpoint`); the base
    model is scored too, and results hold the before -> after accuracy and its delta.

`--limit N` takes the first N statements in dataset order, rounded up to whole pairs (quick runs
then touch few chapters, so sbert embeds few paragraphs). Outputs (`rundir.RunDir`): per-item rows
and `results.json` (schema `results.truefalse.v1.json`); finished pairs are journalled, so a
rerun resumes.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

from kbench.errors import InputError, UserError
from kbench.evaluate.extraction import split_path
from kbench.evaluate.rundir import RunDir
from kbench.io import iter_jsonl, sha256_file

RESULTS_SCHEMA = "results.truefalse.v1.json"
SETTINGS = ("prior", "closed-book", "open-book")
RETRIEVERS = ("gold", "sbert")
ANSWERS = (" True", " False")
CHUNK_PAIRS = 32
CORPUS_FILE = "corpus/paragraphs.jsonl"
NEEDED = ("id", "pair_id", "statement", "label", "book", "chapter", "section", "split", "question",
          "correct_option", "paragraphs", "paragraph_ids")


@dataclass(frozen=True)
class TrueFalseSettings:
    setting: str = "prior"
    retriever: str | None = None
    split: str = "dev"
    config: str | None = None
    limit: int | None = None
    max_passage_words: int = 150


def check_settings(s: TrueFalseSettings, has_checkpoint: bool) -> None:
    if s.setting not in SETTINGS:
        raise UserError(f"unknown --setting {s.setting!r}; choose one of {', '.join(SETTINGS)}")
    if s.setting == "open-book" and s.retriever not in RETRIEVERS:
        raise UserError(f"--setting open-book needs --retriever {' or '.join(RETRIEVERS)}")
    if s.setting != "open-book" and s.retriever is not None:
        raise UserError("--retriever applies to --setting open-book only")
    if (s.setting == "closed-book") != has_checkpoint:
        raise UserError("--checkpoint (a folder written by `kbench read`) goes with --setting closed-book, and only with it")
    if s.limit is not None and s.limit < 1:
        raise UserError(f"--limit must be >= 1, got {s.limit}")


def read_statements(path: Path) -> list[dict]:
    import polars as pl

    try:
        frame = pl.read_parquet(path)
    except Exception as exc:  # polars raises several error types for a damaged file
        raise InputError(path, f"cannot read parquet: {exc}") from exc
    missing = [c for c in NEEDED if c not in frame.columns]
    if missing:
        raise InputError(path, f"missing column(s) {', '.join(missing)}; is this a LEFT dataset (schemas/statement.v1.json)?")
    return frame.to_dicts()


def first_pairs(rows: list[dict], limit: int | None) -> list[list[dict]]:
    """Rows grouped by pair in dataset order; the first pairs that hold `limit` statements."""
    pairs: dict[str, list[dict]] = {}
    for row in rows:
        pairs.setdefault(row["pair_id"], []).append(row)
    for pair_id, pair in pairs.items():
        if sorted(r["label"] for r in pair) != [False, True]:
            raise UserError(f"pair {pair_id!r} does not hold exactly one true and one false statement")
    out, count = [], 0
    for pair in pairs.values():
        if limit is not None and count >= limit:
            break
        out.append(pair)
        count += len(pair)
    return out


def prompt_text(statement: str, passage: str | None, max_words: int) -> str:
    head = ""
    if passage:
        words = passage.split()
        head = "Passage: " + " ".join(words[:max_words]) + (" ..." if len(words) > max_words else "") + "\n"
    return f"{head}Statement: {statement}\nIs this statement true or false?\nAnswer:"


def read_corpus(dataset: Path) -> list[dict]:
    path = dataset / CORPUS_FILE
    if not path.is_file():
        raise UserError(f"{dataset}: no {CORPUS_FILE}; the sbert retriever needs the book text written by load_textbook")
    return [row for _, row in iter_jsonl(path, ("para_id", "book", "chapter", "text"))]


class Contexts:
    """The passage for each statement under the chosen setting/retriever: (paragraph id, text)."""

    def __init__(self, settings: TrueFalseSettings, dataset: Path, cache_dir: Path):
        self.settings = settings
        self.dataset = dataset
        self.cache_dir = cache_dir
        self._indexes: dict[tuple, object] = {}
        self._corpus: dict[tuple, list[dict]] | None = None

    def for_rows(self, rows: list[dict]) -> list[tuple[str | None, str | None]]:
        from kbench.evaluate.retrieval import gold_paragraph

        if self.settings.setting != "open-book":
            return [(None, None)] * len(rows)
        if self.settings.retriever == "gold":
            return [gold_paragraph(r["paragraphs"], r["paragraph_ids"], f"{r['question']} {r['correct_option']}") for r in rows]
        by_chapter: dict[tuple, list[int]] = defaultdict(list)
        for i, row in enumerate(rows):
            by_chapter[(row["book"], row["chapter"])].append(i)
        out: list[tuple[str | None, str | None]] = [(None, None)] * len(rows)
        for (book, chapter), positions in by_chapter.items():  # one embedding call per chapter
            found = self._index(book, chapter).top([rows[i]["statement"] for i in positions])
            for i, (pid, text, _) in zip(positions, found):
                out[i] = (pid, text)
        return out

    def _index(self, book: str, chapter: int):
        from kbench.evaluate.retrieval import EmbeddingIndex, shared_embedder

        key = (book, chapter)
        if key not in self._indexes:
            if self._corpus is None:
                self._corpus = defaultdict(list)
                for para in read_corpus(self.dataset):
                    self._corpus[(para["book"], para["chapter"])].append(para)
            pool = self._corpus.get(key, [])
            if not pool:
                raise UserError(f"{self.dataset / CORPUS_FILE}: no paragraphs for {book!r} chapter {chapter}")
            self._indexes[key] = EmbeddingIndex(shared_embedder(), [p["para_id"] for p in pool], [p["text"] for p in pool], self.cache_dir)
        return self._indexes[key]


def judge_pairs(runner, pairs: list[list[dict]], contexts: list[list[tuple]], max_words: int, prefix: str = "") -> list[dict]:
    """Score every statement of `pairs`; return per-statement rows with calibrated predictions."""
    flat = [(row, ctx) for pair, ctxs in zip(pairs, contexts) for row, ctx in zip(pair, ctxs)]
    prompts = [prompt_text(row["statement"], ctx[1], max_words) for row, ctx in flat]
    scores = runner.score_answers([p for p in prompts for _ in ANSWERS], [a for _ in prompts for a in ANSWERS])
    out, k = [], 0
    for pair in pairs:
        margins = []
        for _ in pair:
            margins.append(scores[2 * k][0] - scores[2 * k + 1][0])
            k += 1
        best = max(margins)
        winners = [m == best for m in margins]
        if sum(winners) > 1:  # a tie calls both statements false
            winners = [False] * len(pair)
        start = k - len(pair)
        for j, row in enumerate(pair):
            i = start + j
            out.append({
                f"{prefix}logprob_true": scores[2 * i][0], f"{prefix}logprob_false": scores[2 * i + 1][0],
                f"{prefix}margin": margins[j], f"{prefix}predicted": winners[j], f"{prefix}correct": winners[j] == row["label"],
                f"{prefix}correct_uncalibrated": (margins[j] > 0) == row["label"],
            })
    return [{"prompt": p, "context_id": ctx[0], **scored} for p, (_, ctx), scored in zip(prompts, flat, out)]


def _summary(rows: list[dict], prefix: str = "") -> dict:
    n = len(rows)
    return {"n": n, "accuracy": sum(r[f"{prefix}correct"] for r in rows) / n if n else 0.0,
            "uncalibrated_accuracy": sum(r[f"{prefix}correct_uncalibrated"] for r in rows) / n if n else 0.0}


def aggregate(items: list[dict], closed_book: bool) -> dict:
    per_book: dict[str, list[dict]] = defaultdict(list)
    for r in items:
        per_book[r["book"]].append(r)
    out = {"overall": _summary(items), "per_book": {b: _summary(rs) for b, rs in sorted(per_book.items())}}
    if closed_book:
        before, after = _summary(items, "before_")["accuracy"], out["overall"]["accuracy"]
        out["before_after"] = {"before_accuracy": before, "after_accuracy": after, "delta": after - before}
    return out


def headline_name(settings: TrueFalseSettings) -> str:
    """The task name a cross-model report (`kbench report standardize`) files this accuracy under."""
    setting = settings.setting + (f"-{settings.retriever}" if settings.retriever else "")
    return f"truefalse:{setting}:{settings.split}:accuracy"


def model_info(loaded) -> dict:
    return {"name": loaded.name, "identity": loaded.identity, "kind": loaded.kind, "dtype": loaded.dtype}


def run_truefalse(runner, dataset: Path, out: Path, settings: TrueFalseSettings, *, cache_dir: Path,
                  base_runner=None, progress=None) -> dict:
    """Evaluate, journal, finalise; return the results dict (also in out/results.json).

    `runner` is the model judged (the checkpoint in closed-book); `base_runner` the model before
    reading (closed-book only). `progress(advance, total)` is called after each chunk of pairs."""
    closed_book = settings.setting == "closed-book"
    check_settings(settings, base_runner is not None)
    path = split_path(dataset, settings.split, settings.config)
    pairs = first_pairs(read_statements(path), settings.limit)
    contexts = Contexts(settings, dataset, cache_dir)
    loaded = runner.loaded
    config = {"model": loaded.identity, "model_name": loaded.name, "dataset_file": sha256_file(path),
              "base_model": base_runner.loaded.identity if base_runner else None, **asdict(settings)}
    started, computed = time.perf_counter(), 0
    total = sum(len(p) for p in pairs)
    with RunDir(out, "truefalse", config) as run:
        done = run.done_ids()
        todo = [pair for pair in pairs if not all(r["id"] in done for r in pair)]
        if progress is not None and done:
            progress(total - sum(len(p) for p in todo), total)
        for start in range(0, len(todo), CHUNK_PAIRS):
            chunk = todo[start:start + CHUNK_PAIRS]
            flat = [r for pair in chunk for r in pair]
            ctx = contexts.for_rows(flat)
            grouped, k = [], 0
            for pair in chunk:
                grouped.append(ctx[k:k + len(pair)])
                k += len(pair)
            judged = judge_pairs(runner, chunk, grouped, settings.max_passage_words)
            before = judge_pairs(base_runner, chunk, grouped, settings.max_passage_words, "before_") if closed_book else None
            rows = []
            for i, row in enumerate(flat):
                item = {k: row[k] for k in ("id", "pair_id", "book", "chapter", "section", "split", "statement", "label")}
                item.update(judged[i])
                if before is not None:
                    item.update({k: v for k, v in before[i].items() if k.startswith("before_")})
                rows.append(item)
            run.append(rows)
            computed += len(rows)
            if progress is not None:
                progress(len(rows), total)
        by_id = {r["id"]: r for r in run.rows()}
        items = [by_id[r["id"]] for pair in pairs for r in pair]
        seconds = time.perf_counter() - started
        summary = aggregate(items, closed_book)
        results = {
            "schema": "results.truefalse.v1", "task": "truefalse",
            "model": model_info(loaded),
            "base_model": model_info(base_runner.loaded) if base_runner else None,
            "dataset": {"path": str(dataset), "file": str(path), "sha256": config["dataset_file"], "split": settings.split},
            "settings": asdict(settings),
            "prompt_template": prompt_text("{statement}", "{passage}" if settings.setting == "open-book" else None, 10**6),
            "answers": list(ANSWERS),
            **summary,
            "headline": {headline_name(settings): summary["overall"]["accuracy"]},
            "timing": {"seconds": round(seconds, 3), "items_computed": computed},
        }
        run.finalize(items, results, RESULTS_SCHEMA)
    return results
