"""Recall: does the model complete a fact's cloze prompt with the fact's object?"""

from kbench.dataset import open_split, seeded_sample
from kbench.evaluate.task import TASKS, Plan, RunContext, Summary, Task, Unit, chunks
from kbench.metrics.uncertainty import proportion_of
from kbench.protocol import ProtocolRecord
from kbench.tasks.recall.settings import RecallSettings


@TASKS.register()
class Recall(Task):
    """Complete each fact's cloze prompt greedily; an item is correct when the completion starts with
    one of its answers. Rerunning the same command resumes where it stopped."""

    Settings = RecallSettings

    def plan(self, ctx: RunContext) -> Plan:
        s = ctx.settings
        split = open_split(ctx.dataset, s.split, s.config, schema="question.v1.json")
        rows = seeded_sample(split.rows, s.limit, s.seed)
        return Plan(units=chunks(rows, 16), dataset=split.describe())

    def score(self, ctx: RunContext, state: None, unit: Unit) -> list[dict]:
        prompts = [row["prompt_cloze"] for row in unit.items]
        outputs = ctx.model.generate(prompts, max_new_tokens=ctx.settings.max_new_tokens, stop=["\n"])
        return [
            {"id": row["id"], "output": output, "correct": any(output.strip().startswith(a) for a in row["answers"])}
            for row, output in zip(unit.items, outputs)
        ]

    def aggregate(self, ctx: RunContext, state: None, rows: list[dict]) -> Summary:
        accuracy = proportion_of([row["correct"] for row in rows])
        protocol = ProtocolRecord("kbench-recall", "docs/adding-a-task.md")  # no paper: kbench's own procedure
        return Summary(headline={"accuracy": accuracy}, metrics={"accuracy": accuracy}, protocol=protocol)
