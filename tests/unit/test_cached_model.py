"""CachedModel, the result cache around any LanguageModel: all-or-nothing lookups that keep
resumed calls bit-identical, keys that follow the producing code (a changed technique is
recomputed even when its Intervention key stayed the same), tampered rows recomputed, and a
backend that knows nothing of the cache."""

from __future__ import annotations

import dataclasses
import importlib
import sqlite3
import sys

import pytest
import torch

from kbench.tasks.kee.techniques.base import KeeContext, KeeItem
from kbench.models.cached import CachedModel
from kbench.models.interface import Capability, LanguageModel
from kbench.models.provenance import _direct_imports, code_hash
from kbench.models.result_cache import ResultCache
from kbench.models.interface import Intervention, ModelInfo, SamplingTruncation, Steering
from kbench.models.runner import ModelRunner
from tests.unit.test_runner import GOLDS, PROMPTS, count_forwards


def cached(cache, loaded, **runner_options) -> CachedModel:
    return CachedModel(ModelRunner(loaded, **runner_options), cache)


def test_generate_and_rank_is_cached_as_the_two_methods(tiny_causal, tmp_path):
    cache = ResultCache(tmp_path / "results.sqlite")
    both = cached(cache, tiny_causal).generate_and_rank(PROMPTS, GOLDS, max_new_tokens=5, stop=["\n"])
    with count_forwards(tiny_causal) as shapes:
        model = cached(cache, tiny_causal)
        assert model.rank_first_token(PROMPTS, GOLDS) == [(r, lp) for _, r, lp in both]
        assert model.generate(PROMPTS, max_new_tokens=5, stop=["\n"]) == [t for t, _, _ in both]
        assert model.generate_and_rank(PROMPTS, GOLDS, max_new_tokens=5, stop=["\n"]) == both
    assert shapes == []


class CountingBackend:
    """A second backend, in plain Python: answers are functions of the text, and every call it
    receives is recorded. The wrapper must cache it exactly as it caches the HF runner."""

    info = ModelInfo(name="toy", identity="sha256:toy", kind="tiny_causal", dtype="float32", backend="toy", device="cpu",
                     code="toy-code-1", capabilities=frozenset({Capability.GENERATE, Capability.LOGLIKELIHOOD, Capability.RANK_EXACT}))

    def __init__(self):
        self.calls: list[tuple[str, int]] = []

    def describe(self) -> dict:
        return {"name": self.info.name, "identity": self.info.identity, "kind": self.info.kind, "dtype": self.info.dtype}

    def render(self, prompt):
        return prompt

    def token_ids(self, texts):
        return [[ord(c) for c in t] for t in texts]

    def sequence_start(self):
        return "", "none"

    def rank_first_token(self, prompts, golds, *, candidate_ids=None, intervention=None):
        self.calls.append(("rank_first_token", len(prompts)))
        return [(1 + len(p) % 7, -0.5 * len(g)) for p, g in zip(prompts, golds)]

    def score_answers(self, prompts, answers, *, intervention=None):
        self.calls.append(("score_answers", len(prompts)))
        return [(-1.0 * len(a), [-1.0] * len(a)) for a in answers]

    def generate(self, prompts, max_new_tokens=32, stop=None, *, intervention=None):
        self.calls.append(("generate", len(prompts)))
        return [p[::-1][:max_new_tokens] for p in prompts]

    def generate_and_rank(self, prompts, golds, max_new_tokens=32, stop=None, *, candidate_ids=None, intervention=None):
        self.calls.append(("generate_and_rank", len(prompts)))
        return [(p[::-1][:max_new_tokens], 1 + len(p) % 7, -0.5 * len(g)) for p, g in zip(prompts, golds)]

    def sample(self, prompts, k, temperature, seed, max_new_tokens=32, stop=None, *, intervention=None):
        self.calls.append(("sample", len(prompts)))
        return [[f"{p}:{seed}:{j}" for j in range(k)] for p in prompts]


def test_any_language_model_is_cached_without_knowing_of_the_cache(tmp_path):
    backend = CountingBackend()
    assert isinstance(backend, LanguageModel)
    cache = ResultCache(tmp_path / "results.sqlite")
    model = CachedModel(backend, cache)
    first = [model.score_answers(PROMPTS, GOLDS), model.sample(PROMPTS, 3, 0.7, 1), model.generate_and_rank(PROMPTS, GOLDS, 4)]
    assert [c for c, _ in backend.calls] == ["score_answers", "sample", "generate_and_rank"]
    again = CachedModel(backend, cache)
    second = [again.score_answers(PROMPTS, GOLDS), again.sample(PROMPTS, 3, 0.7, 1), again.generate_and_rank(PROMPTS, GOLDS, 4)]
    assert second == first
    assert again.generate(PROMPTS, 4) == [t for t, _, _ in first[2]]       # served by generate_and_rank's entries
    assert len(backend.calls) == 3 and again.cache_stats()["computed"] == 0
    again.sample(PROMPTS, 3, 0.7, 2)                                           # another seed: other keys
    again.sample(PROMPTS + ["new"], 3, 0.7, 1)                                 # one new item: the whole call goes through
    assert backend.calls[-2:] == [("sample", len(PROMPTS)), ("sample", len(PROMPTS) + 1)]
    with again.produced_by("technique-v2"):                                    # other producing code: other keys
        again.score_answers(PROMPTS, GOLDS)
    backend.info = dataclasses.replace(backend.info, code="toy-code-2")        # a fixed backend: other keys
    again.score_answers(PROMPTS, GOLDS)
    assert [c for c, _ in backend.calls[-2:]] == ["score_answers", "score_answers"]
    assert again.describe() == backend.describe() and again.info is backend.info  # the rest is the model's own


def test_cache_hits_recompute_nothing(tiny_causal, tmp_path):
    cache = ResultCache(tmp_path / "results.sqlite")
    runner = cached(cache, tiny_causal)
    first = runner.rank_first_token(PROMPTS, GOLDS)
    assert (cache.hits, cache.misses) == (0, len(PROMPTS))
    with count_forwards(tiny_causal) as shapes:
        second = cached(cache, tiny_causal, batch_size=1).rank_first_token(PROMPTS, GOLDS)
    assert shapes == [] and second == first
    assert cache.hits == len(PROMPTS)
    assert runner.cache_stats() == {"hits": 0, "computed": 5, "by_method": {"rank_first_token": {"hits": 0, "computed": 5}}}
    with count_forwards(tiny_causal) as shapes:  # one new prompt: the whole call is computed, as on an empty cache
        runner.rank_first_token(PROMPTS + ["Berlin is the capital of"], GOLDS + [" Germany"])
    assert sum(tokens for _, _, tokens in shapes) == sum(len(tiny_causal.tokenizer(p)["input_ids"]) for p in PROMPTS) + 6


MORE_PROMPTS = PROMPTS + ["Berlin is the capital of", "Toyota is a company from", "Dante was born in"]
MORE_GOLDS = GOLDS + [" Germany", " Japan", " Florence"]


@pytest.mark.parametrize("method", ["rank_first_token", "generate_and_rank"])
def test_partly_cached_call_is_bit_identical_to_a_cold_call(tiny_causal, tmp_path, method):
    """Half the items were cached by other calls, computed in other batches (one prompt per
    pass), so their last bits differ from the full call's: the call ignores them and returns
    exactly what it returns on an empty cache, so a resumed evaluation equals an uninterrupted one."""
    def call(runner, prompts, golds):
        if method == "rank_first_token":
            return runner.rank_first_token(prompts, golds)
        return runner.generate_and_rank(prompts, golds, max_new_tokens=3)

    cold = call(ModelRunner(tiny_causal), MORE_PROMPTS, MORE_GOLDS)
    alone = call(ModelRunner(tiny_causal, batch_size=1), MORE_PROMPTS, MORE_GOLDS)
    assert alone != cold, "one prompt per pass must change some last bits, or this test shows nothing"
    cache = ResultCache(tmp_path / "results.sqlite")
    call(cached(cache, tiny_causal, batch_size=1), MORE_PROMPTS[1::2], MORE_GOLDS[1::2])
    resumed = cached(cache, tiny_causal)
    assert call(resumed, MORE_PROMPTS, MORE_GOLDS) == cold
    assert resumed.cache_stats()["computed"] == len(MORE_PROMPTS)
    again = cached(cache, tiny_causal)   # now every item is cached: the stored values are the full call's
    with count_forwards(tiny_causal) as shapes:
        assert call(again, MORE_PROMPTS, MORE_GOLDS) == cold
    assert shapes == [] and again.cache_stats()["hits"] == len(MORE_PROMPTS)


def test_batches_are_a_function_of_the_call_alone(tiny_causal, tmp_path):
    """On CPU the forward passes of a call (their shapes and contents) do not depend on the
    cache's state or on earlier calls of the runner."""
    def passes(runner):
        with count_forwards(tiny_causal) as shapes:
            runner.generate_and_rank(MORE_PROMPTS, MORE_GOLDS, max_new_tokens=3)
        return shapes

    cache = ResultCache(tmp_path / "results.sqlite")
    fresh = passes(ModelRunner(tiny_causal))
    used = cached(cache, tiny_causal)
    used.generate_and_rank(MORE_PROMPTS[:4], MORE_GOLDS[:4], max_new_tokens=3)
    used.rank_first_token(MORE_PROMPTS, MORE_GOLDS)
    assert passes(used) == fresh


def test_tampered_cache_row_is_recomputed(tiny_causal, tmp_path):
    path = tmp_path / "results.sqlite"
    runner = cached(ResultCache(path), tiny_causal)
    truth = runner.rank_first_token(PROMPTS[:1], GOLDS[:1])
    with sqlite3.connect(path) as db:
        db.execute("UPDATE results SET value = '[1, 0.0]'")
    cache = ResultCache(path)
    with pytest.warns(UserWarning, match="checksum"):
        again = cached(cache, tiny_causal).rank_first_token(PROMPTS[:1], GOLDS[:1])
    assert again == truth and cache.misses == 1


def test_interventions_change_outputs_and_cache_keys(tiny_causal, tmp_path):
    cache = ResultCache(tmp_path / "results.sqlite")
    runner = cached(cache, tiny_causal)
    runner.rank_first_token(PROMPTS, GOLDS)
    layout = runner.layout()
    golds = [" France"] * len(PROMPTS)
    top1 = Intervention("top-1", logits=SamplingTruncation(1.0, top_k=1))  # every gold but the top token ranks 2
    truncated = runner.rank_first_token(PROMPTS, golds, intervention=top1)
    assert {r for r, _ in truncated} <= {1, 2}
    assert runner.rank_first_token(PROMPTS, golds) != truncated

    steer = Intervention("steer", edits=(Steering(layout.num_layers - 1, torch.full((layout.hidden_size,), 5.0), last_only=False),))
    steered = runner.generate(PROMPTS, max_new_tokens=4, intervention=steer)
    assert steered != runner.generate(PROMPTS, max_new_tokens=4)
    assert cache.misses == 5 * len(PROMPTS) - 1  # each variant got its own keys; (PROMPTS[0], France) was cached


ITEMS = [KeeItem("q1", "What is the capital of France?", ("Paris",)),
         KeeItem("q2", "Where was Dante born?", ("Florence",)),
         KeeItem("q3", "Which country is Toyota from?", ("Japan",))]

# A technique that truncates the scores to the TOP_K best tokens. Its Intervention key names
# the technique but not TOP_K: the kind of bug a fix to a technique's code repairs.
TECHNIQUE = '''
from kbench.tasks.kee.techniques.base import Technique, greedy_answers
from kbench.models.interface import Intervention, SamplingTruncation

TOP_K = {top_k}


class Boosted(Technique):
    family = "decoding"

    def run(self, context, items):
        prompts = [context.answer_prompt(i.question) for i in items]
        truncation = Intervention("boosted", logits=SamplingTruncation(1.0, top_k=TOP_K))
        return greedy_answers(context, prompts, items, truncation)
'''


def _write_technique(folder, top_k: int | None):
    (folder / "kbench_test_boosted.py").write_text(TECHNIQUE.format(top_k=top_k))
    importlib.invalidate_caches()
    if "kbench_test_boosted" in sys.modules:
        return importlib.reload(sys.modules["kbench_test_boosted"])
    return importlib.import_module("kbench_test_boosted")


def _run(module, loaded, cache, tmp_path):
    """What the KEE evaluation does: run the technique inside `produced_by(code_hash(module))`."""
    runner = cached(cache, loaded)
    with runner.produced_by(code_hash(module.__name__)):
        outputs = module.Boosted().run(KeeContext(model=runner, fit_dir=tmp_path / "fits"), ITEMS)
    return [(o.answer, o.gold_rank) for o in outputs], runner.cache_stats()


def test_changed_technique_code_is_recomputed_and_unchanged_code_reused(tiny_causal, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    cache = ResultCache(tmp_path / "results.sqlite")
    module = _write_technique(tmp_path, None)
    plain, stats = _run(module, tiny_causal, cache, tmp_path)
    assert stats["computed"] == len(ITEMS) and stats["hits"] == 0

    again, stats = _run(module, tiny_causal, cache, tmp_path)             # unchanged code: served from the cache
    assert again == plain and stats == {"hits": 3, "computed": 0,
                                        "by_method": {"generate_and_rank": {"hits": 3, "computed": 0}}}

    module = _write_technique(tmp_path, 1)                           # the fix: same Intervention key
    fixed, stats = _run(module, tiny_causal, cache, tmp_path)
    assert stats["computed"] == len(ITEMS) and stats["hits"] == 0
    assert fixed != plain and {rank for _, rank in fixed} <= {1, 2}    # top-1 truncation: a gold ranks 1 or 2


def test_without_a_store_every_call_is_computed_and_counted(tiny_causal):
    runner = cached(None, tiny_causal)
    for _ in range(2):
        runner.rank_first_token(["Paris is the capital of"], [" France"])
    assert runner.cache_stats()["computed"] == 2 and runner.cache_stats()["hits"] == 0


def test_technique_code_covers_the_kbench_modules_it_uses():
    """A technique's hash covers its module and the modules that shape its model calls (base,
    fitting, the Intervention's interface; the backend's own modules are in its `code`), not the
    registry, so a new technique does not invalidate others."""
    assert _direct_imports("kbench.tasks.kee.techniques.caa") == {
        "kbench.tasks.kee.techniques.base", "kbench.tasks.kee.techniques.fitting", "kbench.models.interface"}
    assert _direct_imports("kbench.tasks.kee.techniques.baseline") == {"kbench.tasks.kee.techniques.base"}
    assert code_hash("kbench.tasks.kee.techniques.baseline") != code_hash("kbench.tasks.kee.techniques.temperature")
