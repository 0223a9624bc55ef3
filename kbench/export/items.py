"""A dataset split as the documents of an exported task, prompted exactly as `kbench evaluate` does.

Two kinds of dataset export:

* `extraction` - question rows (`schemas/question.v1.json`), judged as `kbench evaluate
  extraction` judges them: a greedy answer to the prompt of `prompts.build_prompts`, cut at its
  stop strings, MAPLE-matched against the gold and its aliases. The sample is the same seeded
  `--limit` sample, so an exported task and a kbench run see the same facts.
* `truefalse`  - LEFT statement rows (`schemas/statement.v1.json`), judged as `kbench evaluate
  truefalse --setting prior` judges them: the log-probabilities of the answers " True" and
  " False" after the statement prompt. `--limit` takes the first whole pairs, as kbench does.

The documents carry everything a harness needs (prompt, stop strings, answers, label, pair) and
what a reader wants to see beside a score (relation, subject, book). The dataset's construction
protocol (`manifest.json` `protocol`, docs/protocol.md) travels with them: None when the manifest
records none ("not recorded"), a `UserError` naming the manifest and key when it is malformed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kbench.dataset import read_rows, seeded_sample, split_path
from kbench.errors import InputError, UserError
from kbench.evaluate.prompts import build_prompts
from kbench.evaluate.prompts import truefalse_prompt as prompt_text
from kbench.io import read_json
from kbench.protocol import Protocol, read_protocol
from kbench.tasks.extraction.task import ExtractionSettings
from kbench.tasks.truefalse.task import ANSWERS, first_pairs

EXTRACTION, TRUEFALSE = "extraction", "truefalse"
DEFAULT_SPLIT = {EXTRACTION: "test", TRUEFALSE: "dev"}  # as `kbench evaluate extraction|truefalse`
MAX_NEW_TOKENS = ExtractionSettings().max_new_tokens
TRUEFALSE_ANSWERS = list(ANSWERS)


@dataclass(frozen=True)
class ExportSpec:
    split: str | None = None  # None: the split `kbench evaluate` reads by default
    config: str | None = None
    prompt: str = "cloze"
    fewshot: int = 0
    limit: int | None = None
    seed: int = 0


@dataclass(frozen=True)
class ExportDocs:
    kind: str  # EXTRACTION or TRUEFALSE
    split: str
    source: Path  # the parquet file the documents come from
    docs: list[dict]
    protocol: Protocol | None = None  # how the dataset was built (None: not recorded)


def dataset_protocol(dataset: Path) -> Protocol | None:
    """The construction protocol a built dataset's manifest records (None: no manifest or no block)."""
    manifest = dataset / "manifest.json"
    if not manifest.is_file():
        return None
    document = read_json(manifest)
    if not isinstance(document, dict):
        raise InputError(manifest, "expected a JSON object")
    return read_protocol(document, str(manifest))


def dataset_kind(dataset: Path, config: str | None) -> str:
    import polars as pl

    data = dataset / "data"
    files = sorted(data.glob(f"{config or '*'}/*.parquet")) if data.is_dir() else []
    if not files:
        split_path(dataset, "test", config)  # raises the precise error (not a dataset, unknown config)
    try:
        columns = pl.read_parquet_schema(files[0]).keys()
    except Exception as exc:  # polars raises several error types for a damaged file
        raise InputError(files[0], f"cannot read parquet: {exc}") from exc
    if {"statement", "pair_id", "label"} <= set(columns):
        return TRUEFALSE
    if {"prompt_cloze", "question", "answers"} <= set(columns):
        return EXTRACTION
    raise InputError(
        files[0],
        "neither question rows (schemas/question.v1.json) nor LEFT statements "
        "(schemas/statement.v1.json); only these datasets export",
    )


def _extraction_docs(path: Path, dataset: Path, spec: ExportSpec) -> list[dict]:
    rows = seeded_sample(read_rows(path), spec.limit, spec.seed)
    train_rows = read_rows(split_path(dataset, "train", spec.config)) if spec.fewshot else []
    prompts = build_prompts(rows, spec.prompt, "causal", spec.fewshot, train_rows, spec.seed)
    docs = []
    for row, probe in zip(rows, prompts):
        # the chat form as its messages, not as one model's rendering: a harness applies its model's chat template
        prompt = probe.prompt
        text = {"messages": [m.as_dict() for m in prompt.messages]} if prompt.is_chat else {"prompt": prompt.text}
        docs.append(
            {
                "id": row["id"],
                "relation": row["relation"],
                "relation_label": row.get("relation_label") or "",
                "subject": row["subject"],
                "object": row["object"],
                "answers": list(row["answers"]),
                "frequency_bin": row.get("frequency_bin"),
                **text,
                "stop": list(probe.stop),
            }
        )
    return docs


def _truefalse_docs(path: Path, spec: ExportSpec) -> list[dict]:
    if spec.prompt != "cloze" or spec.fewshot:
        raise UserError(
            "a LEFT statement dataset has one prompt form (the prior-setting statement prompt); drop --prompt and --fewshot"
        )
    docs = []
    for pair in first_pairs(read_rows(path, "statement.v1.json"), spec.limit):
        for row in pair:
            docs.append(
                {
                    "id": row["id"],
                    "pair_id": row["pair_id"],
                    "book": row["book"],
                    "chapter": row["chapter"],
                    "statement": row["statement"],
                    "label": bool(row["label"]),
                    "prompt": prompt_text(row["statement"], None, 0),
                    "gold": TRUEFALSE_ANSWERS.index(" True" if row["label"] else " False"),
                }
            )
    return docs


def export_docs(dataset: Path, spec: ExportSpec) -> ExportDocs:
    """The documents of `spec.split` (default: the split `kbench evaluate` reads) of `dataset`."""
    if not dataset.is_dir():
        raise UserError(f"{dataset} is not a folder; give a dataset folder built by `kbench build`")
    kind = dataset_kind(dataset, spec.config)
    split = spec.split or DEFAULT_SPLIT[kind]
    path = split_path(dataset, split, spec.config)
    docs = _extraction_docs(path, dataset, spec) if kind == EXTRACTION else _truefalse_docs(path, spec)
    if not docs:
        raise UserError(f"{path}: the split is empty; nothing to export")
    return ExportDocs(kind, split, path, docs, dataset_protocol(dataset))
