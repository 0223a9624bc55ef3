"""A sequence-to-sequence model that writes text for text (REBEL's triplet linearisations), loaded
with its tokenizer; the construction stage `extract_rebel` sees only `generate`.

    writer = Seq2SeqWriter.load("Babelscape/rebel-large", revision=None, trust_remote_code=False, device="auto")
    writer.generate(["Paris is the capital of France."], max_input_tokens=256, max_new_tokens=256, num_beams=3)
"""

from __future__ import annotations

from collections.abc import Sequence

from kbench.errors import UserError, require


class Seq2SeqWriter:
    def __init__(self, tokenizer, network, device: str):
        self._tokenizer = tokenizer
        self._network = network
        self.device = device

    @classmethod
    def load(cls, source: str, revision: str | None, trust_remote_code: bool, device: str) -> Seq2SeqWriter:
        """The model of `source` (a local folder or a Hub id) in eval mode on `device` ("auto": CUDA when present)."""
        torch = require("torch", "REBEL extraction", extra="models")
        transformers = require("transformers", "REBEL extraction", extra="models")
        kwargs = {"revision": revision, "trust_remote_code": trust_remote_code}
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(source, **kwargs)
            network = transformers.AutoModelForSeq2SeqLM.from_pretrained(source, **kwargs)
        except OSError as exc:
            raise UserError(f"cannot load the REBEL model {source!r}: {exc}") from exc
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        return cls(tokenizer, network.to(device).eval(), device)

    def generate(self, texts: Sequence[str], max_input_tokens: int, max_new_tokens: int, num_beams: int) -> list[str]:
        """Beam search (length penalty 0, as in the REBEL README) on each text, cut to `max_input_tokens`;
        the outputs decoded with their special tokens kept (REBEL's markers are special tokens)."""
        import torch

        inputs = self._tokenizer(list(texts), max_length=max_input_tokens, truncation=True, padding=True, return_tensors="pt").to(
            self.device
        )
        with torch.inference_mode():
            out = self._network.generate(
                **inputs, max_new_tokens=max_new_tokens, num_beams=num_beams, length_penalty=0.0, do_sample=False
            )
        return self._tokenizer.batch_decode(out, skip_special_tokens=False)
