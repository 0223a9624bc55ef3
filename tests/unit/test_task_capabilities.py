"""Tasks declare what they need from a model: a generation-only backend (a plain-Python stand-in
for a `transformers serve`-like server) runs extraction with its rank metrics undefined, and is
refused for truefalse, qa, xteval and white-box techniques before any item is read; through the
CLI a model lacking a capability exits with code 2 and one line naming it."""

from __future__ import annotations

import json
from collections.abc import Sequence

import polars as pl
import pytest

import kbench
from kbench.errors import UserError
from kbench.evaluate.engine import validate
from kbench.tasks.extraction.task import UNDEFINED
from kbench.metrics.uncertainty import format_estimate
from kbench.models.interface import Capability, ModelInfo
from kbench.models.prompt import as_prompt
from tests.conftest import run_kbench
from tests.dataset_folders import fact_rows, facts_about, question_dataset

FACTS = facts_about("France", "Germany", "Dante", "Toyota")
ANSWERS = {"France": " Paris.", "Germany": " Bonn", "Dante": " Florence\n", "Toyota": " Japan"}  # the server's answers


class GenerationOnly:
    """A backend that only generates (the `LanguageModel` attributes, no torch, no ranks)."""

    capabilities = frozenset({Capability.GENERATE})

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.info = ModelInfo(name="standin:generation-only", identity="standin:generation-only", kind="causal",
                              dtype="float32", backend="standin", device="cpu", code="standin-v1",
                              capabilities=self.capabilities)
        self.calls: list[str] = []

    def describe(self) -> dict:
        info = self.info
        return {"name": info.name, "identity": info.identity, "kind": info.kind, "dtype": info.dtype, "weights": {}}

    def render(self, prompt) -> str:
        return as_prompt(prompt).text  # plain text only: no chat template

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        return [self.tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]

    def sequence_start(self) -> tuple[str, str]:
        return "", "none"

    def generate(self, prompts, max_new_tokens: int = 32, stop: Sequence[str] | None = None, *, intervention=None):
        self.calls.append("generate")
        out = []
        for prompt in map(self.render, prompts):
            text = next(answer for subject, answer in ANSWERS.items() if subject in prompt)
            for s in stop or ():
                text = text.split(s)[0]
            out.append(text)
        return out

    def rank_first_token(self, *args, **kwargs):
        raise UserError("the stand-in has no ranks")

    generate_and_rank = score_answers = sample = rank_first_token


class TopKRanks(GenerationOnly):
    """A server that also returns its top k first tokens: a gold's rank is known only within them."""

    capabilities = frozenset({Capability.GENERATE, Capability.RANK_TOP_K})
    RANKS = {"France": (1, -0.1), "Germany": (None, None), "Dante": (3, -2.0), "Toyota": (1, -0.5)}  # None: beyond k

    def rank_first_token(self, prompts, golds, *, candidate_ids=None, intervention=None):
        assert candidate_ids is None  # a top-k backend refuses candidates; the task never asks
        self.calls.append("rank_first_token")
        return [next(rank for subject, rank in self.RANKS.items() if subject in p) for p in map(self.render, prompts)]

    def generate_and_rank(self, prompts, golds, max_new_tokens=32, stop=None, *, candidate_ids=None, intervention=None):
        texts = self.generate(prompts, max_new_tokens, stop)
        return [(text, *rank) for text, rank in zip(texts, self.rank_first_token(prompts, golds))]


@pytest.fixture
def standin(tiny_causal_dir):
    from transformers import AutoTokenizer

    return GenerationOnly(AutoTokenizer.from_pretrained(str(tiny_causal_dir)))


@pytest.fixture
def dataset(tmp_path):
    return question_dataset(tmp_path / "ds", fact_rows(FACTS))


def test_extraction_on_a_generation_only_backend_marks_rank_metrics_undefined(standin, dataset, tmp_path):
    results = kbench.evaluate("extraction", dataset=dataset, model=standin, out=tmp_path / "run", stop=["\n"]).results
    validate(results, "results.v2.json")
    validate(results["metrics"], "results.extraction.v2.json")
    assert standin.calls == ["generate"]  # answers come from generate alone, never a rank call
    assert results["model"]["backend"] == "standin" and results["model"]["capabilities"] == ["generate"]
    overall, headline = results["metrics"]["overall"], results["headline"]
    assert results["metrics"]["ranks"] == "none"
    assert overall["maple_accuracy"]["value"] == 0.75 and overall["maple_accuracy"]["n"] == 4  # Bonn is wrong
    for name in ("first_token_p1", "first_token_p1_macro", "mean_gold_logprob"):
        assert overall[name] == {"value": None, "n": 0, "ci_low": None, "ci_high": None, "interval": "none",
                                 "undefined": UNDEFINED["none"]}
    assert headline["first_token_p1_macro"]["undefined"] == UNDEFINED["none"]
    assert format_estimate(headline["first_token_p1_macro"]) == f"undefined ({UNDEFINED['none']})"
    for slice_ in results["metrics"]["per_relation"].values():
        assert slice_["first_token_p1"]["undefined"]
    items = pl.read_parquet(tmp_path / "run" / "items.parquet")
    assert items["gold_rank"].null_count() == items.height == 4 and items["correct"].to_list() == [True, False, True, True]
    from kbench.report.build import build_report

    build_report([tmp_path / "run"], tmp_path / "report")  # the report shows the reason too
    assert f"undefined ({UNDEFINED['none']})" in (tmp_path / "report" / "index.html").read_text()


@pytest.mark.parametrize("protocol", ["maple", "lama"])
def test_top_k_ranks_keep_p_at_1_exact_and_leave_the_log_prob_undefined(standin, dataset, tmp_path, protocol):
    model = TopKRanks(standin.tokenizer)
    results = kbench.evaluate("extraction", dataset=dataset, model=model, out=tmp_path / "run", stop=["\n"], protocol=protocol).results
    validate(results, "results.v2.json")
    validate(results["metrics"], "results.extraction.v2.json")
    overall = results["metrics"]["overall"]
    assert results["metrics"]["ranks"] == "top_k"
    kept = {r["id"]: r for r in pl.read_parquet(tmp_path / "run" / "items.parquet").to_dicts()}
    # rank 1 is always within the top k: P@1 counts the hits exactly, an unknown rank is a miss
    hits = sum(r["gold_rank"] == 1 for r in kept.values())
    assert overall["first_token_p1"]["value"] == hits / len(kept) and overall["first_token_p1"]["n"] == len(kept)
    assert overall["mean_gold_logprob"]["undefined"] == UNDEFINED["top_k"]
    if protocol == "maple":  # every fact kept; Germany's gold is beyond the server's top k
        assert kept["q1"]["gold_rank"] is None and kept["q1"]["gold_logprob"] is None and hits == 2
        assert overall["maple_accuracy"]["value"] == 0.75


@pytest.mark.parametrize(("task", "settings", "capability"), [
    ("truefalse", {}, "loglikelihood"),
    ("qa", {}, "loglikelihood"),
    ("xteval", {}, "rank_exact"),
    ("extraction", {"protocol": "lama"}, "rank_top_k"),
    ("extraction", {"protocol": "lama", "common_vocab": "vocab.txt"}, "rank_exact"),
])
def test_refused_before_any_item_is_read(standin, tmp_path, task, settings, capability):
    empty = tmp_path / "empty-dataset"  # the check comes first: the (empty) folder is never read
    empty.mkdir()
    with pytest.raises(UserError) as raised:
        kbench.evaluate(task, dataset=empty, model=standin, out=tmp_path / "run", **settings)
    message = str(raised.value)
    assert f"task {task}" in message and f"capability {capability!r}" in message and "backends that have it: hf" in message
    assert "\n" not in message and not (tmp_path / "run" / "journal.jsonl").exists()


def test_kee_refuses_a_technique_whose_needs_the_model_lacks(standin, tmp_path):
    # baseline only generates, which the stand-in does; caa needs white-box access
    with pytest.raises(UserError, match="technique caa needs the capability 'white_box'"):
        kbench.evaluate("kee", dataset=tmp_path, model=standin, out=tmp_path / "run", techniques=("baseline", "caa"))


def test_cli_refuses_a_masked_lm_for_truefalse_with_exit_2(tiny_masked_dir, dataset, tmp_path):
    done = run_kbench("evaluate", "truefalse", "--dataset", str(dataset), "--model", str(tiny_masked_dir),
                      "--out", str(tmp_path / "run"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "task truefalse needs the capability 'loglikelihood'" in lines[0] and "(backend hf)" in lines[0]
    assert not (tmp_path / "run" / "journal.jsonl").exists()


def test_results_record_the_capabilities_of_an_in_process_model(tiny_causal_dir, dataset, tmp_path):
    from kbench.models.loading import load_model
    from kbench.models.runner import ModelRunner

    opened = ModelRunner(load_model(str(tiny_causal_dir)))
    results = kbench.evaluate("extraction", dataset=dataset, model=opened, out=tmp_path / "run", max_new_tokens=2).results
    assert results["model"]["backend"] == "hf"
    assert results["model"]["capabilities"] == sorted(c.value for c in Capability)
    assert results["metrics"]["ranks"] == "exact" and results["headline"]["first_token_p1_macro"]["value"] is not None
    assert json.loads((tmp_path / "run" / "results.json").read_text())["model"] == results["model"]


def test_a_task_keeps_its_plan_state_off_self(standin, dataset, tmp_path):
    from kbench.evaluate.engine import evaluate
    from kbench.tasks.extraction.task import Extraction, ExtractionPlan, ExtractionSettings
    from kbench.evaluate.task import RunContext

    task = Extraction()
    ctx = RunContext(settings=ExtractionSettings(stop=("\n",)), dataset=dataset, model=standin, run_dir=tmp_path / "run")
    plan = task.plan(ctx)
    assert isinstance(plan.state, ExtractionPlan) and len(plan.state.rows) == 4 and plan.state.ranks == "none"
    first = evaluate(task, ctx)
    again = evaluate(task, RunContext(settings=ctx.settings, dataset=dataset, model=standin, run_dir=tmp_path / "again"))
    assert vars(task) == {}  # nothing carried between plan, score and aggregate, or between runs
    assert first["headline"] == again["headline"]
