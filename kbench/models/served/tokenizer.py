"""The served model's tokenizer: a local tokenizer folder (`tokenizer=PATH` in `--model`), else the
server's vLLM-style `/tokenize` + `/detokenize`, else none.

kbench encodes prompts and answers itself (`kbench.models.encoding.PromptEncoder`, the same code
as the in-process backend) and sends token ids, so the tokens scored are the tokens the
in-process backend scores. `ServerTokenizer` offers the part of a transformers tokenizer that
the encoder, the LAMA single-token filter and the templates call: `tokenizer(texts,
add_special_tokens=...)["input_ids"]`, `decode`, `bos_token_id`, and no chat template (give a
local folder for `--prompt chat`). With neither, `NoTokenizer` stands in: whatever needs tokens
stops with one line saying how to give a tokenizer.
"""

from __future__ import annotations

from collections.abc import Sequence

from kbench.errors import UserError


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


class ServerTokenizer:
    """The server's tokenizer over HTTP (one request per text, `concurrency` in flight)."""

    chat_template = None
    mask_token = mask_token_id = None
    pad_token = pad_token_id = None

    def __init__(self, client, model_id: str):
        self.client = client
        self.model_id = model_id
        empty = self._tokenize([""], True)[0]  # what add_special_tokens adds to nothing: the BOS, if any
        self.bos_token_id = empty[0] if len(empty) == 1 else None
        self.eos_token_id = None

    def __call__(self, texts: str | Sequence[str], add_special_tokens: bool = True, **_unused) -> dict:
        if isinstance(texts, str):
            return {"input_ids": self._tokenize([texts], add_special_tokens)[0]}
        return {"input_ids": self._tokenize(list(texts), add_special_tokens)}

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False, **_unused) -> str:
        return self.client.post("/detokenize", {"model": self.model_id, "tokens": [int(i) for i in ids]})["prompt"]

    def _tokenize(self, texts: list[str], add_special_tokens: bool) -> list[list[int]]:
        bodies = [{"model": self.model_id, "prompt": t, "add_special_tokens": add_special_tokens} for t in texts]
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

    decode = apply_chat_template = __call__

    def __bool__(self) -> bool:
        return False
