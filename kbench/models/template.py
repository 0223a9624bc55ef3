"""`TemplateModel`: the text contract's public methods, written once for every backend (in the
spirit of lm-eval's `TemplateLM`, whose `loglikelihood` encodes the requests and hands the tokens to
the backend's `_loglikelihood_tokens`).

Each public method of `LanguageModel` does the same three things before any work:
1. the prompts become the backend's inputs (`_inputs`): the rendered text (`render`) for a
   backend whose tokenizer is in this process (Hugging Face, vLLM); a served model keeps the
   `Prompt` values (a chat API posts their messages);
2. the call's intervention is checked (`_checked`): refused by a backend without white-box access,
   carried out on the network by the Hugging Face backend;
3. prompts and golds / answers pair up one to one.
It then calls the backend's own `_rank`, `_score`, `_generate`, `_sample` with the inputs in the
caller's order. `_generate_and_rank` is `_generate` and `_rank` of the same inputs unless the
backend shares the work (the Hugging Face backend ranks from its generation's prefill).

The result cache (`CachedModel`) stands on it too: its inputs are the prompts as given (keyed by
`prompt_key`), the intervention is passed on, and its steps look the call up or hand it to the
wrapped model.

`LanguageModel` (`kbench.models.interface`) stays the public contract: this class is how the
backends meet it, not something a task sees.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kbench.errors import UserError
from kbench.models.interface import Capability, Intervention, Rank, require
from kbench.models.prompt import Prompt


class TemplateModel:
    render: Callable[[Prompt | str], str]  # the backend's (`LanguageModel.render`)

    # ------------------------------------------------------------------ the public methods
    def rank_first_token(
        self,
        prompts: Sequence[Prompt | str],
        golds: Sequence[str],
        *,
        candidate_ids: Sequence[int] | None = None,
        intervention: Intervention | None = None,
    ) -> list[Rank]:
        inputs, checked = self._prepared(prompts, intervention, golds)
        return self._rank(inputs, golds, candidate_ids, checked)

    def score_answers(
        self, prompts: Sequence[Prompt | str], answers: Sequence[str], *, intervention: Intervention | None = None
    ) -> list[tuple[float, list[float]]]:
        inputs, checked = self._prepared(prompts, intervention, answers)
        return self._score(inputs, answers, checked)

    def generate(
        self,
        prompts: Sequence[Prompt | str],
        max_new_tokens: int = 32,
        stop: Sequence[str] | None = None,
        *,
        intervention: Intervention | None = None,
    ) -> list[str]:
        inputs, checked = self._prepared(prompts, intervention)
        return self._generate(inputs, max_new_tokens, list(stop or []), checked)

    def generate_and_rank(
        self,
        prompts: Sequence[Prompt | str],
        golds: Sequence[str],
        max_new_tokens: int = 32,
        stop: Sequence[str] | None = None,
        *,
        candidate_ids: Sequence[int] | None = None,
        intervention: Intervention | None = None,
    ) -> list[tuple[str, int | None, float | None]]:
        inputs, checked = self._prepared(prompts, intervention, golds)
        return self._generate_and_rank(inputs, golds, max_new_tokens, list(stop or []), candidate_ids, checked)

    def sample(
        self,
        prompts: Sequence[Prompt | str],
        k: int,
        temperature: float,
        seed: int,
        max_new_tokens: int = 32,
        stop: Sequence[str] | None = None,
        *,
        intervention: Intervention | None = None,
    ) -> list[list[str]]:
        inputs, checked = self._prepared(prompts, intervention)
        return self._sample(inputs, k, temperature, seed, max_new_tokens, list(stop or []), checked)

    def _prepared(self, prompts: Sequence[Prompt | str], intervention: Intervention | None, paired=None) -> tuple[list, Any]:
        inputs = self._inputs(prompts)
        checked = self._checked(intervention)
        if paired is not None and len(prompts) != len(paired):
            raise UserError(f"got {len(prompts)} prompts but {len(paired)} answers")
        return inputs, checked

    # ------------------------------------------------------------------ what a backend may change
    def _inputs(self, prompts: Sequence[Prompt | str]) -> list:
        """The prompts as the backend reads them: each one's `render`, the text its tokenizer reads."""
        return [self.render(p) for p in prompts]

    def _checked(self, intervention: Intervention | None) -> Any:
        """The intervention the backend carries out; a backend without white-box access refuses any."""
        if intervention is not None:
            require(self, [Capability.WHITE_BOX], f"intervention {intervention.key.split(':')[0]!r}")
        return intervention

    def _generate_and_rank(
        self, inputs: list, golds: Sequence[str], max_new_tokens: int, stop: list[str], candidate_ids, checked
    ) -> list[tuple[str, int | None, float | None]]:
        texts = self._generate(inputs, max_new_tokens, stop, checked)
        ranks = self._rank(inputs, golds, candidate_ids, checked)
        return [(t, r, lp) for t, (r, lp) in zip(texts, ranks)]

    # ------------------------------------------------------------------ what a backend writes
    def _rank(self, inputs: list, golds: Sequence[str], candidate_ids: Sequence[int] | None, checked) -> list[Rank]:
        raise NotImplementedError

    def _score(self, inputs: list, answers: Sequence[str], checked) -> list[tuple[float, list[float]]]:
        raise NotImplementedError

    def _generate(self, inputs: list, max_new_tokens: int, stop: list[str], checked) -> list[str]:
        raise NotImplementedError

    def _sample(
        self, inputs: list, k: int, temperature: float, seed: int, max_new_tokens: int, stop: list[str], checked
    ) -> list[list[str]]:
        raise NotImplementedError
