"""`kbench export lm-eval`: a dataset split as an lm-evaluation-harness task folder.

    OUT/<task>.yaml   the task (lm-eval finds it with `--include_path OUT`)
    OUT/utils.py      loads the documents and scores them; needs no kbench
    OUT/data.jsonl    the documents (`items.export_docs`)
    OUT/README.md     what the task is, with the dataset's construction protocol (docs/protocol.md)

The documents are loaded by utils.py (`custom_dataset`) from beside itself, so the folder can be
copied anywhere; lm-eval's own `data_files` would resolve a relative path against the working
directory.

The task's own `export.py` (`items.TaskExport`) gives the output type, requests and metrics of the
YAML and the scoring code of utils.py: what kbench's judgement of its items is, in lm-eval's terms.

The dataset's protocol block (its `manifest.json` `protocol`) is carried into the task's
`metadata` (`dataset_protocol`: the block itself, or "not recorded") and into README.md.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from kbench import __version__
from kbench.errors import UserError
from kbench.export.items import ExportDocs, exporter
from kbench.io import sha256_file, write_jsonl, write_text
from kbench.report.protocols import block_markdown

DATA_FILE = "data.jsonl"


def task_name(dataset: Path, docs: ExportDocs, prompt: str) -> str:
    parts = ["kbench", dataset.resolve().name, docs.split, *exporter(docs.task).lmeval_name_parts(prompt)]
    return re.sub(r"[^a-z0-9_]+", "_", "_".join(parts).lower()).strip("_")


def yaml_scalar(value) -> str:
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
    return "metadata:\n" + "".join(f"  {key}: {yaml_scalar(value)}\n" for key, value in fields.items())


_LOAD_DOCS = '''
DATA = Path(__file__).with_name({data!r})


def load_docs(**_metadata):
    """lm-eval's `custom_dataset` hook (it passes the task metadata, unused): the documents beside
    this file, so the task folder can move."""
    import datasets

    docs = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line]
    return datasets.DatasetDict({{{split!r}: datasets.Dataset.from_list(docs)}})
'''


def utils_source(docs: ExportDocs, case_sensitive: bool) -> str:
    header = (
        f'"""lm-eval task code written by `kbench export lm-eval` (kbench {__version__}) for\n'
        f'{docs.source} ({len(docs.docs)} items). Self-contained: runs without kbench."""\n\n'
        "from __future__ import annotations\n\nimport json\n"
    )
    task = exporter(docs.task)
    imports = "".join(f"{line}\n" for line in sorted({*task.lmeval_imports, "from pathlib import Path"}))
    load = _LOAD_DOCS.format(data=DATA_FILE, split=docs.split)
    return f"{header}{imports}{load}\n\n{task.lmeval_scoring(case_sensitive)}"


def task_yaml(name: str, dataset: Path, docs: ExportDocs, settings: dict) -> str:
    head = (
        f"# Written by `kbench export lm-eval` (kbench {__version__}). Run:\n"
        f"#   lm_eval --model hf --model_args pretrained=MODEL --tasks {name} --include_path THIS_FOLDER\n"
        f"task: {name}\ncustom_dataset: !function utils.load_docs\ntest_split: {docs.split}\n"
        "doc_to_text: prompt\nprocess_results: !function utils.process_results\n"
    )
    body = exporter(docs.task).lmeval_yaml(docs)
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
    exporter(docs.task).check_lmeval(prompt)
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
