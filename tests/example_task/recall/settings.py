"""The recall task's options: each field is a flag of `kbench evaluate recall` and a keyword of
`kbench.evaluate("recall", ...)`, its description the help, its default the default."""

from pydantic import Field

from kbench.evaluate.task import TaskSettings


class RecallSettings(TaskSettings):
    max_new_tokens: int = Field(8, ge=1, description="Tokens the model may write after each prompt.")
