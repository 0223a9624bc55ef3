"""`Prompt`: what a task asks a model, as a value; the backend renders it.

    Prompt("Alan Turing works in the field of")                     plain text (a completion)
    Prompt.chat([user("Answer ...\\nQuestion: ...")])                  chat turns (instruct models)
    Prompt.chat([user("Is it true? ...")], reply="Verdict:")         ... with the reply's start prefilled

A plain-text prompt is read as written. A chat prompt is system / user / assistant messages (few-shot
examples are earlier user / assistant turns) and an optional start of the assistant's reply (a cue
the answer continues). Backends render it (`render_text`): the Hugging Face and vLLM backends through
the tokenizer's chat template with the generation prompt, the reply's start written after it; a
served chat API (`api=chat`) posts the messages to `/v1/chat/completions`.

Model methods take `Prompt` values or plain strings (a string is a plain-text prompt). `key` is the
prompt's canonical form, what the result cache keys on: the text itself for plain text (so plain
prompts keep the keys they had as strings), else the messages and the reply as a dict.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kbench.errors import UserError

ROLES = ("system", "user", "assistant")
NO_TEMPLATE = "--prompt chat: this model's tokenizer has no chat template; use --prompt question"


@dataclass(frozen=True)
class Message:
    role: str  # one of ROLES
    content: str

    def __post_init__(self) -> None:
        if self.role not in ROLES or not isinstance(self.content, str):
            raise ValueError(f"a chat message is (role: one of {ROLES}, content: text), got ({self.role!r}, {self.content!r})")

    def as_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


def user(content: str) -> Message:
    return Message("user", content)


def assistant(content: str) -> Message:
    return Message("assistant", content)


@dataclass(frozen=True)
class Prompt:
    text: str = ""  # a plain-text prompt, read as written ("" for a chat prompt)
    messages: tuple[Message, ...] = ()  # a chat prompt's turns
    reply: str = ""  # a chat prompt's start of the assistant reply (a cue the answer continues)

    def __post_init__(self) -> None:
        if self.messages and self.text:
            raise ValueError("a prompt is plain text or chat messages, not both")
        if self.reply and not self.messages:
            raise ValueError("only a chat prompt has a reply start; a plain-text prompt holds its cue in `text`")

    @classmethod
    def chat(cls, messages: Iterable[Message], reply: str = "") -> Prompt:
        turns = tuple(messages)
        if not turns:
            raise ValueError("a chat prompt needs at least one message")
        return cls(messages=turns, reply=reply)

    @property
    def is_chat(self) -> bool:
        return bool(self.messages)

    def then(self, more: str) -> Prompt:
        """This prompt continued by `more` (an answer after its prompt): after the text, or after
        the reply's start."""
        if self.is_chat:
            return Prompt(messages=self.messages, reply=self.reply + more)
        return Prompt(self.text + more)

    @property
    def key(self) -> str | dict:
        """The canonical form: the text of a plain prompt, else {"messages": [...], "reply": ...}."""
        if not self.is_chat:
            return self.text
        return {"messages": [m.as_dict() for m in self.messages], "reply": self.reply}

    def messages_json(self) -> str:
        """The chat turns as a JSON list (what items of a served chat model store)."""
        return json.dumps([m.as_dict() for m in self.messages], ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def as_prompt(prompt: Prompt | str) -> Prompt:
    return prompt if isinstance(prompt, Prompt) else Prompt(prompt)


def prompt_key(prompt: Prompt | str) -> str | dict:
    return as_prompt(prompt).key


def render_text(prompt: Prompt | str, tokenizer) -> str:
    """The text a local tokenizer reads for `prompt`: a plain prompt as written; a chat prompt
    through the tokenizer's chat template with the generation prompt, then the reply's start."""
    prompt = as_prompt(prompt)
    if not prompt.is_chat:
        return prompt.text
    if not getattr(tokenizer, "chat_template", None):
        raise UserError(NO_TEMPLATE)
    turns = [m.as_dict() for m in prompt.messages]
    return tokenizer.apply_chat_template(turns, tokenize=False, add_generation_prompt=True) + prompt.reply


def render_texts(prompts: Sequence[Prompt | str], tokenizer) -> list[str]:
    return [render_text(p, tokenizer) for p in prompts]
