"""`kbench export lm-eval`: a dataset split as an lm-evaluation-harness task folder.

    OUT/<task>.yaml   the task (lm-eval finds it with `--include_path OUT`)
    OUT/utils.py      loads the documents and scores them; needs no kbench
    OUT/data.jsonl    the documents (`items.export_docs`)
    OUT/README.md     what the task is, with the dataset's construction protocol (docs/protocol.md)

The documents are loaded by utils.py (`custom_dataset`) from beside itself, so the folder can be
copied anywhere; lm-eval's own `data_files` would resolve a relative path against the working
directory.

Extraction datasets are a `generate_until` task: the prompt text as `kbench evaluate extraction`
builds it (`doc_to_text: prompt`, no few-shot or description of lm-eval's own), the prompt form's
stop strings, at most 16 new tokens, greedy. `process_results` strips the answer and reports
`maple_acc` (MAPLE match against gold + aliases) and `exact_match`, with kbench's matching code
copied into utils.py (`standalone`).

LEFT statement datasets are a `multiple_choice` task over the continuations " True" and " False"
(`target_delimiter: ""`, so the scored strings are exactly kbench's), reporting `acc` (margin > 0
means true: kbench's headline `accuracy`, LEFT's per-statement accuracy) and `pair_acc` (kbench's
`pair_choice_accuracy`: within each true/false pair the statement with the higher margin is called true;
the share of pairs called right).

The dataset's protocol block (its `manifest.json` `protocol`) is carried into the task's
`metadata` (`dataset_protocol`: the block itself, or "not recorded") and into README.md.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from kbench import __version__
from kbench.errors import UserError
from kbench.export.items import EXTRACTION, MAX_NEW_TOKENS, TRUEFALSE_ANSWERS, ExportDocs
from kbench.export.standalone import MATCHING_IMPORTS, matching_source, pair_choice_source
from kbench.io import sha256_file, write_jsonl, write_text
from kbench.report.protocols import block_markdown

DATA_FILE = "data.jsonl"
FORMS = ("cloze", "question")  # chat prompts depend on the model's template: lm-eval applies it itself


def task_name(dataset: Path, docs: ExportDocs, prompt: str) -> str:
    parts = ["kbench", dataset.resolve().name, docs.split] + ([prompt] if docs.kind == EXTRACTION else [])
    return re.sub(r"[^a-z0-9_]+", "_", "_".join(parts).lower()).strip("_")


def _q(value) -> str:
    """A YAML scalar: JSON strings and numbers are valid YAML flow scalars."""
    return json.dumps(value)


def _metadata(dataset: Path, docs: ExportDocs, settings: dict) -> str:
    fields = {
        "version": 1.0,
        "kbench_version": __version__,
        "dataset": str(dataset.resolve()),
        "source_file": str(docs.source),
        "source_sha256": sha256_file(docs.source),
        "split": docs.split,
        "items": len(docs.docs),
        **settings,
        "dataset_protocol": docs.protocol.block() if docs.protocol else "not recorded",
    }
    return "metadata:\n" + "".join(f"  {key}: {_q(value)}\n" for key, value in fields.items())


_LOAD_DOCS = '''
DATA = Path(__file__).with_name({data!r})


def load_docs(**_metadata):
    """lm-eval's `custom_dataset` hook (it passes the task metadata, unused): the documents beside
    this file, so the task folder can move."""
    import datasets

    docs = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line]
    return datasets.DatasetDict({{{split!r}: datasets.Dataset.from_list(docs)}})
'''

_EXTRACTION_SCORING = '''

CASE_SENSITIVE = {case_sensitive!r}


def process_results(doc, results):
    """The greedy answer (lm-eval has cut it at the stop strings), stripped, as kbench judges it."""
    prediction = results[0].strip()
    return {{"maple_acc": float(maple_correct(prediction, doc["answers"], case_sensitive=CASE_SENSITIVE)),
            "exact_match": float(exact_match(prediction, doc["answers"], case_sensitive=CASE_SENSITIVE))}}
'''

_TRUEFALSE_SCORING = '''

def process_results(doc, results):
    """results: (log-likelihood, is_greedy) of " True" then " False"; margin = logP(True) - logP(False)."""
    margin = results[0][0] - results[1][0]
    return {"acc": float((margin > 0) == doc["label"]), "pair_acc": (doc["pair_id"], doc["label"], margin)}


def pair_calibrated_accuracy(items):
    """kbench's decision: each pair holds one true and one false statement; the one with the higher
    margin is called true, the other false (a tie calls both false, so the pair is wrong). Removes
    the model's overall bias towards one answer word. The share of pairs called right."""
    pairs = defaultdict(list)
    for pair_id, label, margin in items:
        pairs[pair_id].append((label, margin))
    correct = 0
    for members in pairs.values():
        called_true = pair_choice([margin for _, margin in members])
        correct += all(call == label for call, (label, _) in zip(called_true, members))
    return correct / len(pairs)  # one outcome per pair, as kbench counts it
'''


def utils_source(docs: ExportDocs, case_sensitive: bool) -> str:
    header = (
        f'"""lm-eval task code written by `kbench export lm-eval` (kbench {__version__}) for\n'
        f'{docs.source} ({len(docs.docs)} items). Self-contained: runs without kbench."""\n\n'
        "from __future__ import annotations\n\nimport json\n"
    )
    load = _LOAD_DOCS.format(data=DATA_FILE, split=docs.split)
    if docs.kind == EXTRACTION:
        return (
            f"{header}{MATCHING_IMPORTS}\nfrom pathlib import Path\n{load}\n\n{matching_source()}"
            + _EXTRACTION_SCORING.format(case_sensitive=case_sensitive)
        )
    imports = "from collections import defaultdict\nfrom pathlib import Path\n"
    return f"{header}{imports}{load}\n\n{pair_choice_source()}" + _TRUEFALSE_SCORING


def task_yaml(name: str, dataset: Path, docs: ExportDocs, settings: dict) -> str:
    head = (
        f"# Written by `kbench export lm-eval` (kbench {__version__}). Run:\n"
        f"#   lm_eval --model hf --model_args pretrained=MODEL --tasks {name} --include_path THIS_FOLDER\n"
        f"task: {name}\ncustom_dataset: !function utils.load_docs\ntest_split: {docs.split}\n"
        "doc_to_text: prompt\nprocess_results: !function utils.process_results\n"
    )
    if docs.kind == EXTRACTION:
        stop = docs.docs[0]["stop"]
        body = (
            "output_type: generate_until\ndoc_to_target: object\ngeneration_kwargs:\n"
            f"  until: {_q(stop)}\n  max_gen_toks: {MAX_NEW_TOKENS}\n  do_sample: false\n  temperature: 0.0\n"
            "metric_list:\n  - metric: maple_acc\n    aggregation: mean\n    higher_is_better: true\n"
            "  - metric: exact_match\n    aggregation: mean\n    higher_is_better: true\n"
        )
    else:
        body = (
            f'output_type: multiple_choice\ndoc_to_choice: {_q(TRUEFALSE_ANSWERS)}\ntarget_delimiter: ""\n'
            "doc_to_target: gold\nmetric_list:\n  - metric: acc\n    aggregation: mean\n    higher_is_better: true\n"
            "  - metric: pair_acc\n    aggregation: !function utils.pair_calibrated_accuracy\n    higher_is_better: true\n"
        )
    return head + body + _metadata(dataset, docs, settings)


def write_lmeval_task(
    dataset: Path,
    docs: ExportDocs,
    out: Path,
    *,
    prompt: str,
    name: str | None = None,
    case_sensitive: bool = False,
    settings: dict | None = None,
) -> Path:
    """Write the task folder; return the YAML path. Files are written atomically, the YAML last."""
    if docs.kind == EXTRACTION and prompt not in FORMS:
        raise UserError(
            f"--prompt {prompt}: lm-eval export takes {' or '.join(FORMS)} (for a chat model, export "
            "--prompt question or use `kbench export inspect`, which applies the model's chat template)"
        )
    name = name or task_name(dataset, docs, prompt)
    if not re.fullmatch(r"[A-Za-z0-9_\-]+", name):
        raise UserError(f"--name {name!r}: use letters, digits, '_' and '-' only")
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out}: exists and is not a folder")
    stale = [p.name for p in out.glob("*.yaml") if p.name != f"{name}.yaml"] if out.is_dir() else []
    if stale:
        raise UserError(
            f"--out {out} already holds other tasks ({', '.join(stale)}); "
            "export each task to its own folder (lm-eval's --include_path searches subfolders)"
        )
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / DATA_FILE, docs.docs)
    write_text(out / "utils.py", utils_source(docs, case_sensitive))
    write_text(out / "README.md", readme(name, dataset, docs))
    yaml_path = out / f"{name}.yaml"
    write_text(yaml_path, task_yaml(name, dataset, docs, settings or {}))
    return yaml_path


def readme(name: str, dataset: Path, docs: ExportDocs) -> str:
    return (
        f"# {name}\n\nAn lm-evaluation-harness task written by `kbench export lm-eval` (kbench {__version__}) from "
        f"the dataset `{dataset.resolve().name}` (split {docs.split}, {len(docs.docs)} items).\n\n"
        + block_markdown(docs.protocol, "## Dataset protocol (how the dataset was built)")
    )
