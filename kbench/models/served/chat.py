"""The chat prompt form through `/v1/chat/completions` (`--model 'openai:URL;api=chat'`).

A chat `Prompt` (`kbench.models.prompt`) is posted as its `messages`; the server applies its own chat
template with its tokenizer. Items store the messages as a JSON list (`Prompt.messages_json`). A
plain-text prompt (the cloze or question form) is refused with one line naming `--prompt chat`; so is a
prompt whose reply is prefilled (text after the turn), which a chat request cannot carry.
"""

from __future__ import annotations

from kbench.errors import UserError
from kbench.models.prompt import Prompt, as_prompt

NOT_CHAT = "api=chat takes the chat prompt form: use --prompt chat (this prompt is plain text: {start!r})"


def messages_of(prompt: Prompt | str) -> list[dict]:
    """The messages a chat request posts for `prompt`; `UserError` for any other prompt."""
    prompt = as_prompt(prompt)
    if not prompt.is_chat:
        raise UserError(NOT_CHAT.format(start=prompt.text[:40]))
    if prompt.reply:  # e.g. a cue that prefills the reply: a chat request cannot carry it
        raise UserError(
            f"api=chat: the prompt adds {prompt.reply[:40]!r} after the chat turn, which /v1/chat/completions cannot "
            "send; use the default api=completions with ;tokenizer=FOLDER (kbench then renders the chat template)"
        )
    return [m.as_dict() for m in prompt.messages]
