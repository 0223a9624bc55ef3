"""The chat prompt form through `/v1/chat/completions` (`--model 'openai:URL;api=chat'`).

The tasks build the chat form by handing messages to the model's tokenizer
(`tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)`,
`kbench.evaluate.prompts`). In chat mode the chat template is the server's, so the served model's
tokenizer is a `ChatTokenizer`: its `apply_chat_template` writes the messages as one marked JSON
line, which the backend reads back (`messages_of`) and posts as `messages`:

    <kbench-chat/v1>[{"role":"user","content":"Answer the question ...\\nWhat is the capital of France?"}]

The line is deterministic (sorted keys, no spaces) and says what it is, so it is what the result
cache keys on: a cache entry holds the messages, not one server's rendering of them. A prompt that
is not such a line (the cloze or question form) is refused with one line naming `--prompt chat`; so is
text added after the line (a prefilled reply), which a chat request cannot carry.
"""

from __future__ import annotations

import json

from kbench.errors import UserError

CHAT_MARK = "<kbench-chat/v1>"
ROLES = ("system", "user", "assistant")
NOT_CHAT = "api=chat takes the chat prompt form: use --prompt chat (this prompt is plain text: {start!r})"


def render(messages) -> str:
    """The marked JSON line of `messages` (a list of {"role", "content"})."""
    return CHAT_MARK + json.dumps(_checked(messages), ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def messages_of(prompt: str) -> list[dict]:
    """The messages a `render` line holds; `UserError` for any other prompt."""
    if not isinstance(prompt, str) or not prompt.startswith(CHAT_MARK):
        raise UserError(NOT_CHAT.format(start=str(prompt)[:40]))
    body = prompt[len(CHAT_MARK) :]
    try:
        messages, end = json.JSONDecoder().raw_decode(body)
        messages = _checked(messages)
    except ValueError:
        raise UserError(NOT_CHAT.format(start=prompt[:40])) from None
    if body[end:]:  # e.g. a cue that prefills the reply (an LLM-judge stage): a chat request cannot carry it
        raise UserError(
            f"api=chat: the prompt adds {body[end:][:40]!r} after the chat turn, which /v1/chat/completions cannot "
            "send; use the default api=completions with ;tokenizer=FOLDER (kbench then renders the chat template)"
        )
    return messages


def _checked(messages) -> list[dict]:
    if not isinstance(messages, list) or not messages:
        raise ValueError("a chat prompt is a non-empty list of messages")
    out = []
    for m in messages:
        if not isinstance(m, dict) or m.get("role") not in ROLES or not isinstance(m.get("content"), str):
            raise ValueError(f"a chat message is {{'role': one of {ROLES}, 'content': text}}, got {str(m)[:80]}")
        out.append({"role": m["role"], "content": m["content"]})
    return out


class ChatTokenizer:
    """The tokenizer of a served model in chat mode: the chat template is the server's (truthy
    `chat_template`, `apply_chat_template` -> `render`); tokens come from the wrapped local, server
    or missing tokenizer (`inner`), so the LAMA single-token filter still works where one is known."""

    chat_template = "the server's (/v1/chat/completions)"
    prefills_reply = False  # text after the rendered turn cannot be sent: prompt builders put cues inside the turn

    def __init__(self, inner):
        self.inner = inner

    def apply_chat_template(self, messages, tokenize: bool = True, add_generation_prompt: bool = False, **options) -> str:
        if tokenize or not add_generation_prompt or options.get("continue_final_message"):
            raise UserError(
                "api=chat: the server applies the chat template and answers a new assistant turn; "
                "only the rendered prompt with its generation prompt can be sent"
            )
        return render(messages)

    def __call__(self, *args, **kwargs):
        return self.inner(*args, **kwargs)

    def decode(self, *args, **kwargs):
        return self.inner.decode(*args, **kwargs)

    def __getattr__(self, name: str):
        # the rest of a tokenizer's surface (bos_token_id, eos_token_id, ...): the wrapped tokenizer's
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)
