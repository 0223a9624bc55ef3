"""Protocol deviations, and interpretations, that several evaluation tasks make the same way
(`kbench.protocol`).

Each helper is called by the code path that departs (or chooses where the paper is silent), with
what it actually did, and returns the entry (or None when that path kept to the paper): a task
gathers them into its `ProtocolRecord`. MAPLE's extraction and KEE share two: the case handling of its
matching (`maple_case`, an interpretation) and a plain question prompt without the chat template
of MAPLE's instruct models (`maple_question_form`, a deviation).
"""

from __future__ import annotations

from kbench.protocol import Deviation, Interpretation

#: The id of the one deviation that changes only WHICH items a run has, not how an item is scored:
#: the report's paired comparison restricts runs to their shared items, which handles it.
SAMPLE_LIMIT = "sample-limit"


def sample_limit(kept: int, total: int, limit: int | None, seed: int, effect: str) -> Deviation | None:
    """`--limit` kept a seeded sample (None when it kept every item: the sample is the split)."""
    if limit is None or kept >= total:
        return None
    return Deviation(
        id=SAMPLE_LIMIT,
        paper="evaluates every item of the benchmark split",
        kbench=f"a seeded sample of {kept} of the {total} items (--limit {limit}, --seed {seed})",
        effect=f"{effect}: computed over the sample; their intervals cover the sample's items, not the split",
    )


def fewshot(k: int, pool: str, paper: str, effect: str) -> Deviation | None:
    """`--fewshot k` put k solved examples before each item (None at 0: the paper's zero-shot)."""
    if not k:
        return None
    return Deviation(
        id="fewshot",
        paper=paper,
        kbench=f"{k} solved example{'s' if k != 1 else ''} from {pool} before each item (--fewshot {k})",
        effect=effect,
    )


def prompt_form(used: str, paper_forms: tuple[str, ...], paper: str, kbench: str, effect: str) -> Deviation | None:
    """The prompt form (`kbench.evaluate.prompts`), when it is not one the paper's procedure uses."""
    if used in paper_forms:
        return None
    return Deviation(id="prompt-form", paper=paper, kbench=f"--prompt {used}: {kbench}", effect=effect)


def maple_case(case_sensitive: bool, effect: str) -> Interpretation:
    """MAPLE normalises by "removing special characters and whitespace" and says nothing of case."""
    insensitive, sensitive = "case-insensitive (casefolded before matching; the default)", "case kept (--case-sensitive)"
    return Interpretation(
        id="matching-case",
        paper="a prediction is correct after normalisation (removing special characters and whitespace) if it "
        "equals a valid answer or contains one; case is not mentioned",
        kbench=sensitive if case_sensitive else insensitive,
        alternatives=(insensitive if case_sensitive else sensitive,),
        effect=effect,
    )


def maple_question_form(how: str, effect: str) -> Deviation:
    """A plain question prompt where MAPLE's instruct models answer through their chat template."""
    return Deviation(
        id="prompt-question-form",
        paper="instruction-tuned models (OLMo2, Qwen2.5, Llama3 -Instruct) answer MAPLE's short-answer questions "
        "through their chat template",
        kbench=f"plain-text prompts ending in a cue ('Answer:'), no chat template ({how})",
        effect=effect,
    )


def present(*deviations: Deviation | None) -> tuple[Deviation, ...]:
    return tuple(d for d in deviations if d is not None)
