"""KEE on a second backend written here as a plain Python class (no torch, no network): the
black-box baseline runs through the real engine, with PRS marked undefined because the backend
has no exact ranks; a white-box technique is refused before any work, naming the capability."""

from __future__ import annotations

import json

import polars as pl
import pytest

from kbench.errors import UserError
from kbench.evaluate.engine import evaluate
from kbench.tasks.kee.task import KeeSettings, KnowledgeElicitation
from kbench.evaluate.task import RunContext
from kbench.models.interface import Capability, LanguageModel, ModelInfo
from kbench.models.prompt import as_prompt
from tests.dataset_folders import facts_about
from tests.question_rows import question_row

FACTS = facts_about("France", "Germany", "Italy", "Spain")


class EchoBackend:
    """Generates only: the answer is the capital it finds in the prompt's question, else "Ulm"."""

    info = ModelInfo(name="echo", identity="sha256:echo", kind="causal", dtype="float32", backend="echo", device="cpu",
                     code="echo-1", capabilities=frozenset({Capability.GENERATE}))

    def __init__(self):
        self.calls: list[str] = []

    def describe(self) -> dict:
        info = self.info
        return {"name": info.name, "identity": info.identity, "kind": info.kind, "dtype": info.dtype, "weights": {"source": "test"}}

    def render(self, prompt) -> str:
        return as_prompt(prompt).text  # plain text only: no chat template (`info.chat` is false)

    def token_ids(self, texts):
        raise AssertionError("KEE never asks for token ids")

    sequence_start = token_ids

    def _answer(self, prompt) -> str:
        capital = {country: city for _, country, city in FACTS}
        text = self.render(prompt)
        return next((f" {capital[c]}\n" for c in capital if c in text and c != "Spain"), " Ulm\n")

    def generate(self, prompts, max_new_tokens=32, stop=None, *, intervention=None):
        self.calls.append("generate")
        return [self._answer(p).split("\n")[0] for p in prompts]

    def sample(self, prompts, k, temperature, seed, max_new_tokens=32, stop=None, *, intervention=None):
        self.calls.append("sample")
        return [[self._answer(p).split("\n")[0]] * k for p in prompts]

    def rank_first_token(self, *args, **kwargs):
        raise AssertionError("a backend without rank capabilities is never asked for ranks")

    score_answers = generate_and_rank = rank_first_token


def _dataset(root):
    rows = [question_row(id=f"f{n}", relation="P36", subject=country, object=city, question=f"What is the capital of {country}?")
            for n, (_, country, city) in enumerate(FACTS)]
    (root / "data" / "default").mkdir(parents=True)
    pl.DataFrame(rows).write_parquet(root / "data" / "default" / "test.parquet")
    return root


def _run(tmp_path, backend, techniques):
    settings = KeeSettings(techniques=techniques, k=2, sweep_max=2, temperatures=(0.7,))
    ctx = RunContext(settings=settings, dataset=_dataset(tmp_path / "data"), model=backend, run_dir=tmp_path / "run")
    return evaluate(KnowledgeElicitation(), ctx)


def test_a_plain_python_backend_runs_the_kee_baseline_without_ranks(tmp_path):
    backend = EchoBackend()
    assert isinstance(backend, LanguageModel)
    results = _run(tmp_path, backend, ("baseline",))
    baseline = results["metrics"]["per_technique"]["baseline"]
    assert baseline["accuracy"]["value"] == 0.75          # Spain's capital is answered "Ulm"
    assert baseline["prs"]["n"] == 0 and "rank_exact" in baseline["prs"]["undefined"]
    rows = pl.read_parquet(tmp_path / "run" / "items.parquet").filter(pl.col("technique") == "baseline")
    assert rows["gold_rank"].to_list() == [None] * 4 and json.loads(rows["detail"][0]) == {}
    assert set(backend.calls) == {"generate", "sample"}


@pytest.mark.parametrize("technique", ["caa", "iti", "decore", "activation_decoding"])
def test_a_white_box_technique_is_refused_before_any_work(tmp_path, technique):
    backend = EchoBackend()
    with pytest.raises(UserError, match=f"technique {technique} needs the capability 'white_box'.*backends that have it: hf"):
        _run(tmp_path, backend, ("baseline", technique))
    assert backend.calls == [] and not (tmp_path / "run" / "items.parquet").exists()
