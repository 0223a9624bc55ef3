"""`TemplateModel`: the public methods render, check and pair once, then hand the backend's own steps
the rendered inputs (a plain-Python backend, no model)."""

from __future__ import annotations

import pytest

from kbench.errors import UserError
from kbench.models.interface import Capability, Intervention, LanguageModel, ModelInfo
from kbench.models.prompt import Prompt, as_prompt, user
from kbench.models.template import TemplateModel


class Echo(TemplateModel):
    """Renders a prompt as "R:" + its text (a chat prompt: its last message); every step records what it got."""

    info = ModelInfo(name="echo", identity="sha256:echo", kind="causal", dtype="float32", backend="echo", device="cpu",
                     code="echo", capabilities=frozenset({Capability.GENERATE, Capability.RANK_EXACT}))

    def __init__(self):
        self.steps: list[tuple] = []

    def describe(self) -> dict:
        return {"name": "echo"}

    def render(self, prompt) -> str:
        p = as_prompt(prompt)
        return "R:" + (p.messages[-1].content if p.messages else p.text)

    def token_ids(self, texts):
        return [[len(t)] for t in texts]

    def sequence_start(self):
        return "", "none"

    def _generate(self, inputs, max_new_tokens, stop, checked):
        self.steps.append(("generate", inputs, max_new_tokens, stop, checked))
        return [f"{text}+" for text in inputs]

    def _rank(self, inputs, golds, candidate_ids, checked):
        self.steps.append(("rank", inputs, list(golds), candidate_ids, checked))
        return [(len(text), -1.0) for text in inputs]


def test_the_steps_get_rendered_inputs_and_a_list_of_stop_strings():
    model = Echo()
    assert isinstance(model, LanguageModel)
    assert model.generate(["a", Prompt.chat([user("b")])], 4) == ["R:a+", "R:b+"]
    assert model.generate_and_rank(["a"], [" x"], 2, stop=("\n",)) == [("R:a+", 3, -1.0)]
    assert model.steps == [
        ("generate", ["R:a", "R:b"], 4, [], None),
        ("generate", ["R:a"], 2, ["\n"], None),  # generate_and_rank: the backend's two steps on the same inputs
        ("rank", ["R:a"], [" x"], None, None),
    ]


def test_unpaired_golds_and_interventions_are_refused_before_any_step():
    model = Echo()
    with pytest.raises(UserError, match="got 2 prompts but 1 answers"):
        model.rank_first_token(["a", "b"], [" x"])
    with pytest.raises(UserError, match="white_box"):
        model.generate(["a"], intervention=Intervention(key="caa:layer=3"))
    assert model.steps == []
