"""What MAPLE's two LLM-judged construction steps share: the judge model, its prompts' form, verdicts.

MAPLE (Section 3.1, Stage 2) uses an LLM twice ("We used gpt-4o-mini for all LLM-as-a-judge"):
a domain-mismatch filter (`judge_domain`) and a single-answer classification beside the SPARQL
count (`judge_single_answer`). Here the judge is any model behind kbench's model interface
(`open_model(ModelSpec(...))`: the in-process backend, or a served one, `--judge-model
'openai:URL;model=ID'`, MAPLE's gpt-4o-mini with `;api=chat`), asked with greedy decoding, so a
verdict is reproducible and cached in the result cache (a rerun asks the model nothing).

Both stages are off by default: without a model (`model = "..."` in the stage, or `kbench build
--judge-model NAME`, which wins) they pass every row through and record that they did not run.
Each prompt ends in the cue "Verdict (yes or no):" (after the chat template's generation prompt
for chat models), so the reply's first word is the verdict. A served chat API applies the template
itself and cannot take text after the turn (a prefilled reply), so there the cue ends the user
turn instead; `details.judge.cue` records where it went. With a model they add
`<stage>_verdict` to every row; dropped rows go to `rejected/<stage>.parquet` with their verdict
and the judge's words (`<stage>_output`). A reply whose first words hold no verdict is
`unparseable`: dropped with reason `judge_unparseable` (`unparseable = "drop"`, the default: the
check did not pass) or kept (`"keep"`), never a crash.

Protocol (`deviations`): MAPLE's judge is gpt-4o-mini with a prompt the paper does not print, so
a judge that ran always records which model, backend and prompt form it used and that the
wording is kbench's; a judge that did not run records that MAPLE's step was skipped.
"""

from __future__ import annotations

import logging
import re
from typing import Literal, Optional

from pydantic import Field

from kbench.construct.context import StageContext
from kbench.construct.stage import Stage, StageOutput, StageParams, filter_with_reason
from kbench.errors import UserError

LOG = logging.getLogger(__name__)
#: Verdict words are looked for among the reply's first words (after markdown and punctuation).
VERDICT_WINDOW = 4
BATCH = 32
CUE = "Verdict (yes or no)"


class JudgeParams(StageParams):
    model: Optional[str] = None  # off unless set here or with `kbench build --judge-model`
    backend: Optional[str] = None  # None: as `--model` decides it (`openai:...` is served, anything else in-process)
    dtype: str = "float32"
    #: "auto": a chat turn when the model takes one (a chat template: instruct models), else plain text.
    prompt: Literal["auto", "chat", "plain"] = "auto"
    max_new_tokens: int = Field(40, ge=1, le=256)
    unparseable: Literal["drop", "keep"] = "drop"


def judge_model_name(params: JudgeParams, ctx: StageContext) -> str | None:
    return ctx.options.get("judge_model") or params.model


def parse_verdict(text: str, verdicts: dict[str, str]) -> str:
    """The verdict (a value of `verdicts`) named by the first of the reply's first words that is a
    verdict word (a key), else "unparseable"."""
    words = re.findall(r"[a-z]+", text.lower())[:VERDICT_WINDOW]
    return next((verdicts[w] for w in words if w in verdicts), "unparseable")


class LlmJudge(Stage):
    """A stage that asks a judge model one question per distinct prompt and drops on its verdict.

    Subclasses set `verdicts` (reply word -> verdict), `drop_verdict` with its `drop_reason`,
    `needed_columns`, and `question(row)`, the prompt body."""

    Params = JudgeParams
    verdicts: dict[str, str] = {}
    drop_verdict = ""
    drop_reason = ""
    needed_columns: tuple[str, ...] = ()
    #: The protocol entry's id prefix and what MAPLE does in this step.
    slug = ""
    paper_step = ""

    def deviations(self, details: dict) -> list:
        from kbench.protocol import Deviation

        paper = f"{self.paper_step}, judged by gpt-4o-mini (prompt not printed)"
        effect = f"which rows are kept (drops {self.drop_reason})"
        judge = details.get("judge")
        if not judge:
            return [Deviation(id=f"{self.slug}-not-run", paper=paper, kbench="not run (no judge model given)", effect=effect)]
        return [
            Deviation(
                id=f"{self.slug}-stand-in",
                paper=paper,
                kbench=f"judge `{judge['model']}` ({judge['backend']}), {judge['prompt_form']} prompt with the cue "
                f"{judge['cue']}, {judge['decoding']} decoding; the prompt wording is kbench's",
                effect=effect,
            )
        ]

    def question(self, row: dict) -> str:  # pragma: no cover - interface
        raise NotImplementedError

    def run_options(self) -> dict:
        name = self.ctx.options.get("judge_model")
        return {"judge_model": name} if name else {}

    def _open(self):
        from kbench.models.cached import open_model
        from kbench.models.interface import ModelSpec
        from kbench.models.served.spec import backend_for

        name = judge_model_name(self.params, self.ctx)
        device = str(self.ctx.options.get("device") or "cpu")
        backend = self.params.backend or backend_for(name)
        return open_model(ModelSpec(name, dtype=self.params.dtype, device=device, backend=backend))

    def _chat(self, info) -> bool:
        """Whether the judge is asked in a chat turn (`ModelInfo.chat`: the model takes one)."""
        if self.params.prompt == "chat" and not info.chat:
            raise UserError(f"{self.name}: prompt = 'chat', but the judge model's tokenizer has no chat template")
        return self.params.prompt == "chat" or (self.params.prompt == "auto" and info.chat)

    def run(self, table) -> StageOutput:
        import polars as pl

        from kbench.evaluate.prompts import question_turn
        from kbench.models.prompt import Prompt
        from kbench.progress import progress

        if judge_model_name(self.params, self.ctx) is None:
            return StageOutput(kept=table, rejected=None, details={"ran": False})
        df = table.collect()
        missing = [c for c in self.needed_columns if c not in df.columns]
        if missing:
            raise UserError(f"{self.name} needs the column(s) {', '.join(missing)}; put it after the stages that add them")
        model = self._open()
        chat = self._chat(model.info)
        # the reply starts after the cue, also in a chat turn: small instruct models then give the verdict word first;
        # a server that renders the turn itself takes no text after it, so there the cue closes the user turn
        prefill = chat and model.info.prefills_reply
        in_turn = f"\n{CUE}:" if chat and not prefill else ""
        after = CUE + ":" if prefill else ""
        rows = df.iter_rows(named=True)
        prompts = [question_turn(self.question(row) + in_turn, CUE, chat).then(after) for row in rows]
        distinct = list(dict.fromkeys(prompts))
        replies: dict[Prompt, str] = {}
        with progress(f"{self.name}: asking {model.info.name}", len(distinct), unit="prompts") as advance:
            for start in range(0, len(distinct), BATCH):
                batch = distinct[start : start + BATCH]
                replies.update(zip(batch, model.generate(batch, self.params.max_new_tokens, ["\n\n"])))
                advance(len(batch))
        stats = model.cache_stats()
        LOG.info("%s: %d distinct prompts, %d answered from the result cache", self.name, len(distinct), stats["hits"])
        outputs = [replies[p].strip() for p in prompts]
        verdict_col, output_col = f"{self.name}_verdict", f"{self.name}_output"
        df = df.with_columns(
            pl.Series(verdict_col, [parse_verdict(o, self.verdicts) for o in outputs], dtype=pl.Utf8),
            pl.Series(output_col, outputs, dtype=pl.Utf8),
        )
        reason = pl.when(pl.col(verdict_col) == self.drop_verdict).then(pl.lit(self.drop_reason))
        if self.params.unparseable == "drop":
            reason = reason.when(pl.col(verdict_col) == "unparseable").then(pl.lit("judge_unparseable"))
        out = filter_with_reason(df.lazy(), reason.otherwise(pl.lit(None, dtype=pl.Utf8)))
        counts = df[verdict_col].value_counts(sort=True).sort(verdict_col)
        details = {
            "ran": True,
            "judge": {
                "model": model.info.name,
                "identity": model.info.identity,
                "backend": model.info.backend,
                "prompt_form": "chat" if chat else "plain",
                "cue": "after the turn" if prefill else ("ends the user turn" if chat else "ends the prompt"),
                "decoding": "greedy",
                "max_new_tokens": self.params.max_new_tokens,
            },
            "verdicts": dict(zip(counts[verdict_col].to_list(), counts["count"].to_list())),
        }
        return StageOutput(kept=out.kept.drop(output_col), rejected=out.rejected, details=details)
