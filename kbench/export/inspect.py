"""`kbench export inspect`: a question dataset split as an Inspect (`inspect_ai`) task file.

    FILE.py     the task: dataset, solver (`generate`), scorer (MAPLE match); needs no kbench
    FILE.jsonl  its documents (`items.export_docs`, chat form), read from beside FILE.py

Inspect talks to models in chat messages, so the prompt is kbench's `chat` form: the instruction
and the question as a user turn (few-shot examples as earlier turns), rendered by the model's own
chat template (`kbench evaluate extraction --prompt chat` renders the same messages with the
same template). Generation is greedy (temperature 0; Inspect's `hf/` provider samples unless
given `-M do_sample=false`), at most 16 tokens, with the chat form's stop strings. Inspect's
`hf/` provider stops after the token that completes a stop string but keeps the string, so the
scorer cuts the answer at the first stop string and strips it, as kbench does, before MAPLE
matching against the gold and its aliases (`maple`) and strict exact match (`exact`).

LEFT statement datasets do not export to Inspect: kbench judges them by the log-probabilities of
" True" and " False" after a plain-text prompt, which Inspect's generate-and-score loop has no
counterpart for; export them to lm-eval (`multiple_choice`).

The dataset's protocol block (its `manifest.json` `protocol`, docs/protocol.md) is carried into the
task's `metadata` (`dataset_protocol`: the block, or "not recorded") and, readable, into comments
at the top of the file.
"""

from __future__ import annotations

import re
from pathlib import Path

from kbench import __version__
from kbench.errors import UserError
from kbench.export.items import EXTRACTION, MAX_NEW_TOKENS, ExportDocs, dataset_kind
from kbench.export.standalone import MATCHING_IMPORTS, matching_source
from kbench.io import write_jsonl, write_text
from kbench.report.protocols import block_lines

_TASK_CODE = '''

DATA = Path(__file__).with_name({data!r})
STOP = {stop!r}
MAX_NEW_TOKENS = {max_new_tokens!r}
CASE_SENSITIVE = {case_sensitive!r}
DATASET_PROTOCOL = {dataset_protocol!r}  # how the dataset was built (kbench's protocol block)
_TURNS = {{"user": ChatMessageUser, "assistant": ChatMessageAssistant}}


def record_to_sample(record: dict) -> Sample:
    return Sample(id=record["id"], input=[_TURNS[m["role"]](content=m["content"]) for m in record["messages"]],
                  target=record["answers"],
                  metadata={{key: record[key] for key in ("relation", "relation_label", "subject", "object", "frequency_bin")}})


def kbench_answer(completion: str) -> str:
    """The completion up to the first stop string, stripped: the answer kbench would judge."""
    cuts = [i for i in (completion.find(stop) for stop in STOP) if i >= 0]
    return completion[:min(cuts, default=len(completion))].strip()


@scorer(metrics={{"maple": [accuracy(), stderr()], "exact": [accuracy(), stderr()]}})
def maple_match():
    """MAPLE match (gold + aliases, normalised, substring) and strict exact match, as kbench scores."""

    async def score(state: TaskState, target: Target) -> Score:
        answer = kbench_answer(state.output.completion)
        maple = maple_correct(answer, target.target, case_sensitive=CASE_SENSITIVE)
        exact = exact_match(answer, target.target, case_sensitive=CASE_SENSITIVE)
        return Score(value={{"maple": CORRECT if maple else INCORRECT, "exact": CORRECT if exact else INCORRECT}},
                     answer=answer)

    return score


@task
def {name}() -> Task:
    records = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line]
    return Task(dataset=MemoryDataset([record_to_sample(r) for r in records], name={name!r}),
                solver=generate(), scorer=maple_match(), metadata={{"dataset_protocol": DATASET_PROTOCOL}},
                config=GenerateConfig(max_tokens=MAX_NEW_TOKENS, stop_seqs=STOP, temperature=0.0))
'''

_IMPORTS = """import json
{matching_imports}
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageAssistant, ChatMessageUser, GenerateConfig
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer, stderr
from inspect_ai.solver import TaskState, generate
"""


def task_source(docs: ExportDocs, name: str, data_file: str, case_sensitive: bool) -> str:
    header = (
        f'"""Inspect task written by `kbench export inspect` (kbench {__version__}) for\n'
        f"{docs.source} ({len(docs.docs)} items, split {docs.split}). Self-contained: needs inspect_ai, not kbench.\n\n"
        f'    inspect eval {name}.py --model hf/local -M model_path=MODEL -M do_sample=false\n"""\n\n'
        "from __future__ import annotations\n\n"
    )
    # the dataset's protocol, readable above the code (comments: no escaping to get wrong)
    lines = ["Dataset protocol (how the dataset was built):", *block_lines(docs.protocol)]
    header += "".join(f"# {' '.join(line.splitlines())}\n" for line in lines) + "\n"
    code = _TASK_CODE.format(
        data=data_file,
        stop=docs.docs[0]["stop"],
        max_new_tokens=MAX_NEW_TOKENS,
        case_sensitive=case_sensitive,
        name=name,
        dataset_protocol=docs.protocol.block() if docs.protocol else "not recorded",
    )
    return header + _IMPORTS.format(matching_imports=MATCHING_IMPORTS) + "\n\n" + matching_source() + code


def check_exportable(dataset: Path, config: str | None) -> None:
    """Refuse LEFT statements before their documents are built (see the module docstring)."""
    if dataset.is_dir() and dataset_kind(dataset, config) != EXTRACTION:
        raise UserError(
            f"{dataset}: LEFT statements are judged by answer log-probabilities, which Inspect does not "
            "score; export them with `kbench export lm-eval` (multiple_choice)"
        )


def write_inspect_task(docs: ExportDocs, out: Path, *, case_sensitive: bool = False) -> Path:
    """Write FILE.py and FILE.jsonl (atomically, the task file last); return the task file."""
    if out.suffix != ".py":
        raise UserError(f"--out {out}: give a .py file (Inspect runs `inspect eval FILE.py`)")
    name = out.stem
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise UserError(
            f"--out {out}: the file name is the task's name, so it must be a Python identifier (letters, digits, '_')"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    data = out.with_suffix(".jsonl")
    write_jsonl(data, docs.docs)
    write_text(out, task_source(docs, name, data.name, case_sensitive))
    return out
