"""The served model's tokenizer: a local tokenizer folder (`tokenizer=PATH` in `--model`), else the
server's `/tokenize` (vLLM's or llama.cpp's dialect, `server_dialect`), else none.

kbench encodes prompts and answers itself (`kbench.models.encoding.PromptEncoder`, the same code
as the in-process backend) and sends token ids, so the tokens scored are the tokens the
in-process backend scores. `ServerTokenizer` offers the part of a transformers tokenizer that
the encoder, the LAMA single-token filter and the templates call: `tokenizer(texts,
add_special_tokens=...)["input_ids"]`, `bos_token_id`, and no chat template (give a
local folder for `--prompt chat`). With neither, `NoTokenizer` stands in: whatever needs tokens
stops with one line saying how to give a tokenizer.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from kbench.errors import UserError

LOG = logging.getLogger(__name__)
#: from this many texts on, say that a local tokenizer would be faster (a common vocabulary is ~21k words)
MANY_TEXTS = 1000


def local_tokenizer(folder: str):
    try:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=False)
    except (OSError, ValueError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise UserError(f"--model ...;tokenizer={folder}: cannot load a tokenizer there: {first}") from None
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    return tokenizer


#: dialect -> the /tokenize body for (model, text, add special tokens); both answer {"tokens": [ids]}
DIALECTS = {
    "vllm": lambda model, text, special: {"model": model, "prompt": text, "add_special_tokens": special},
    "llamacpp": lambda model, text, special: {"content": text, "add_special": special},
}


def server_dialect(client, model_id: str) -> str | None:
    """The dialect in which the server's `/tokenize` turns "a" into token ids (None: in neither).
    An empty list is no answer: llama.cpp answers vLLM's body (no `content`) with {"tokens": []}."""
    for dialect, tokenize in DIALECTS.items():
        answer = client.try_post("/tokenize", tokenize(model_id, "a", False))
        tokens = answer.get("tokens") if isinstance(answer, dict) else None
        if isinstance(tokens, list) and tokens and all(isinstance(t, int) and not isinstance(t, bool) for t in tokens):
            return dialect
    return None


class ServerTokenizer:
    """The server's tokenizer over HTTP (one request per text, `concurrency` in flight)."""

    chat_template = None
    mask_token = mask_token_id = None
    pad_token = pad_token_id = None

    def __init__(self, client, model_id: str, dialect: str = "vllm"):
        self.client = client
        self.model_id = model_id
        self._tokenize_body = DIALECTS[dialect]
        empty = self._tokenize([""], True)[0]  # what add_special_tokens adds to nothing: the BOS, if any
        self.bos_token_id = empty[0] if len(empty) == 1 else None
        self.eos_token_id = None

    def __call__(self, texts: str | Sequence[str], add_special_tokens: bool = True, **_unused) -> dict:
        if isinstance(texts, str):
            return {"input_ids": self._tokenize([texts], add_special_tokens)[0]}
        return {"input_ids": self._tokenize(list(texts), add_special_tokens)}

    def _tokenize(self, texts: list[str], add_special_tokens: bool) -> list[list[int]]:
        if len(texts) >= MANY_TEXTS:  # measured: ~25 s for LAMA's common vocabulary against vLLM on 2 CPU cores
            LOG.warning(
                "tokenising %d texts through the server's /tokenize, one request each; "
                "add ;tokenizer=FOLDER to --model (a local copy of the model's tokenizer) to do it locally",
                len(texts),
            )
        bodies = [self._tokenize_body(self.model_id, t, add_special_tokens) for t in texts]
        return [[int(i) for i in answer["tokens"]] for answer in self.client.post_many("/tokenize", bodies)]


class NoTokenizer:
    """The tokenizer of a served model that has none: text-only prompts work, the rest is refused."""

    chat_template = None
    bos_token_id = eos_token_id = pad_token_id = mask_token = mask_token_id = None

    def __init__(self, model_id: str):
        self.model_id = model_id

    def __call__(self, *_args, **_kwargs):
        raise UserError(
            f"served model {self.model_id!r} has no tokenizer (the server has no /tokenize): "
            "add ;tokenizer=FOLDER to --model (a local copy of the model's tokenizer)"
        )

    def __bool__(self) -> bool:
        return False
