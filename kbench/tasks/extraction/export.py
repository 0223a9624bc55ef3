"""`kbench export` of question datasets (`schemas/question.v1.json`), judged as this task judges them.

Documents: the prompt of `prompts.build_probes` for the same seeded `--limit` sample (so an exported
task and a kbench run see the same facts), its stop strings, the gold and its aliases. The chat form
travels as its messages, not as one model's rendering: a harness applies its model's chat template.

lm-eval: a `generate_until` task: the prompt text as kbench builds it (`doc_to_text: prompt`, no
few-shot or description of lm-eval's own), the prompt form's stop strings, at most 16 new tokens,
greedy. `process_results` strips the answer and reports `maple_acc` (MAPLE match against gold +
aliases) and `exact_match`, with kbench's matching code copied into utils.py (`standalone`). Chat
prompts depend on the model's template, so lm-eval takes the cloze and question forms only.

Inspect talks to models in chat messages, so its task uses the `chat` form: the instruction and the
question as a user turn (few-shot examples as earlier turns), rendered by the model's own chat
template (`--prompt chat` renders the same messages with the same template). Generation is greedy
(temperature 0; Inspect's `hf/` provider samples unless given `-M do_sample=false`), at most 16
tokens, with the chat form's stop strings. Inspect's `hf/` provider stops after the token that
completes a stop string but keeps the string, so the scorer cuts the answer at the first stop string
and strips it, as kbench does, before MAPLE matching against the gold and its aliases (`maple`) and
strict exact match (`exact`). The dataset's protocol block is in the task's `metadata` and,
readable, in comments at the top of the file.
"""

from __future__ import annotations

from pathlib import Path

from kbench import __version__
from kbench.dataset import read_rows, seeded_sample, split_path
from kbench.errors import UserError
from kbench.evaluate.prompts import build_probes
from kbench.export.items import EXPORTS, ExportDocs, ExportSpec
from kbench.export.lmeval import yaml_scalar
from kbench.export.standalone import MATCHING_IMPORTS, matching_source
from kbench.report.protocols import block_lines
from kbench.tasks.extraction.task import ExtractionSettings

MAX_NEW_TOKENS = ExtractionSettings().max_new_tokens
LMEVAL_FORMS = ("cloze", "question")

_LMEVAL_SCORING = '''

CASE_SENSITIVE = {case_sensitive!r}


def process_results(doc, results):
    """The greedy answer (lm-eval has cut it at the stop strings), stripped, as kbench judges it."""
    prediction = results[0].strip()
    return {{"maple_acc": float(maple_correct(prediction, doc["answers"], case_sensitive=CASE_SENSITIVE)),
            "exact_match": float(exact_match(prediction, doc["answers"], case_sensitive=CASE_SENSITIVE))}}
'''

_INSPECT_IMPORTS = """import json
{matching_imports}
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageAssistant, ChatMessageUser, GenerateConfig
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer, stderr
from inspect_ai.solver import TaskState, generate
"""

_INSPECT_CODE = '''

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


@EXPORTS.register("extraction")
class ExtractionExport:
    columns = frozenset({"prompt_cloze", "question", "answers"})
    rows = "question rows (schemas/question.v1.json)"
    default_split = "test"
    lmeval_imports: tuple[str, ...] = (MATCHING_IMPORTS,)
    inspect_refusal: str | None = None

    def docs(self, path: Path, dataset: Path, spec: ExportSpec) -> list[dict]:
        rows = seeded_sample(read_rows(path), spec.limit, spec.seed)
        train_rows = read_rows(split_path(dataset, "train", spec.config)) if spec.fewshot else []
        probes = build_probes(rows, spec.prompt, "causal", spec.fewshot, train_rows, spec.seed)
        docs = []
        for row, probe in zip(rows, probes):
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

    def lmeval_name_parts(self, prompt: str) -> list[str]:
        return [prompt]

    def check_lmeval(self, prompt: str) -> None:
        if prompt not in LMEVAL_FORMS:
            raise UserError(
                f"--prompt {prompt}: lm-eval export takes {' or '.join(LMEVAL_FORMS)} (for a chat model, export "
                "--prompt question or use `kbench export inspect`, which applies the model's chat template)"
            )

    def lmeval_scoring(self, case_sensitive: bool) -> str:
        return matching_source() + _LMEVAL_SCORING.format(case_sensitive=case_sensitive)

    def lmeval_yaml(self, docs: ExportDocs) -> str:
        return (
            "output_type: generate_until\ndoc_to_target: object\ngeneration_kwargs:\n"
            f"  until: {yaml_scalar(docs.docs[0]['stop'])}\n  max_gen_toks: {MAX_NEW_TOKENS}\n  do_sample: false\n"
            "  temperature: 0.0\n"
            "metric_list:\n  - metric: maple_acc\n    aggregation: mean\n    higher_is_better: true\n"
            "  - metric: exact_match\n    aggregation: mean\n    higher_is_better: true\n"
        )

    def inspect_source(self, docs: ExportDocs, name: str, data_file: str, case_sensitive: bool) -> str:
        header = (
            f'"""Inspect task written by `kbench export inspect` (kbench {__version__}) for\n'
            f"{docs.source} ({len(docs.docs)} items, split {docs.split}). Self-contained: needs inspect_ai, not kbench.\n\n"
            f'    inspect eval {name}.py --model hf/local -M model_path=MODEL -M do_sample=false\n"""\n\n'
            "from __future__ import annotations\n\n"
        )
        # the dataset's protocol, readable above the code (comments: no escaping to get wrong)
        lines = ["Dataset protocol (how the dataset was built):", *block_lines(docs.protocol)]
        header += "".join(f"# {' '.join(line.splitlines())}\n" for line in lines) + "\n"
        code = _INSPECT_CODE.format(
            data=data_file,
            stop=docs.docs[0]["stop"],
            max_new_tokens=MAX_NEW_TOKENS,
            case_sensitive=case_sensitive,
            name=name,
            dataset_protocol=docs.protocol.block() if docs.protocol else "not recorded",
        )
        return header + _INSPECT_IMPORTS.format(matching_imports=MATCHING_IMPORTS) + "\n\n" + matching_source() + code
