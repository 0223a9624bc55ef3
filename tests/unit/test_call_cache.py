"""Result-cache keys follow the code that produced an output: a technique whose source changed
gets its outputs recomputed (even when its Intervention key stayed the same), an unchanged rerun
gets them from the cache; `--no-cache` runners compute everything."""

from __future__ import annotations

import importlib
import sys

import pytest

from kbench.evaluate.techniques.base import KeeContext, KeeItem
from kbench.models.loading import load_model
from kbench.models.provenance import _direct_imports, code_hash
from kbench.models.result_cache import ResultCache
from kbench.models.runner import ModelRunner
from tests.fixtures_models import tiny_causal_dir  # noqa: F401

ITEMS = [KeeItem("q1", "What is the capital of France?", ("Paris",)),
         KeeItem("q2", "Where was Dante born?", ("Florence",)),
         KeeItem("q3", "Which country is Toyota from?", ("Japan",))]

# A technique whose logits processor pushes one token up by BOOST. Its Intervention key names
# the technique but not BOOST: the kind of bug a fix to a technique's code repairs.
TECHNIQUE = '''
from kbench.evaluate.techniques.base import Technique, greedy_answers
from kbench.models.runner import Intervention

BOOST = {boost}


class Boosted(Technique):
    family = "decoding"

    def run(self, context, items):
        token = context.runner.tokenizer(" Paris", add_special_tokens=False)["input_ids"][0]

        def boost(input_ids, scores):
            scores = scores.clone()
            scores[:, token] += BOOST
            return scores

        prompts = [context.answer_prompt(i.question) for i in items]
        return greedy_answers(context, prompts, items, Intervention("boosted", logits_processor=boost))
'''


@pytest.fixture(scope="module")
def loaded(tiny_causal_dir):  # noqa: F811
    return load_model(str(tiny_causal_dir))


def _write_technique(folder, boost: float):
    (folder / "kbench_test_boosted.py").write_text(TECHNIQUE.format(boost=boost))
    importlib.invalidate_caches()
    if "kbench_test_boosted" in sys.modules:
        return importlib.reload(sys.modules["kbench_test_boosted"])
    return importlib.import_module("kbench_test_boosted")


def _run(module, loaded, cache, tmp_path):
    """What the KEE evaluation does: run the technique inside `produced_by(code_hash(module))`."""
    runner = ModelRunner(loaded, cache=cache)
    with runner.produced_by(code_hash(module.__name__)):
        outputs = module.Boosted().run(KeeContext(runner=runner, fit_dir=tmp_path / "fits"), ITEMS)
    return [(o.answer, o.gold_rank) for o in outputs], runner.cache_stats()


def test_changed_technique_code_is_recomputed_and_unchanged_code_reused(loaded, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    cache = ResultCache(tmp_path / "results.sqlite")
    module = _write_technique(tmp_path, 0.0)
    plain, stats = _run(module, loaded, cache, tmp_path)
    assert stats["computed"] == len(ITEMS) and stats["hits"] == 0

    again, stats = _run(module, loaded, cache, tmp_path)             # unchanged code: served from the cache
    assert again == plain and stats == {"hits": 3, "computed": 0,
                                        "by_method": {"generate_and_rank": {"hits": 3, "computed": 0}}}

    module = _write_technique(tmp_path, 1000.0)                      # the fix: same Intervention key
    fixed, stats = _run(module, loaded, cache, tmp_path)
    assert stats["computed"] == len(ITEMS) and stats["hits"] == 0
    assert fixed != plain and fixed[0][1] == 1              # " Paris" (q1's gold) is now on top everywhere
    assert all(answer.startswith("Paris") for answer, _ in fixed)


def test_no_cache_runner_computes_every_call(loaded):
    runner = ModelRunner(loaded, cache=None)
    for _ in range(2):
        runner.rank_first_token(["Paris is the capital of"], [" France"])
    assert runner.cache_stats()["computed"] == 2 and runner.cache_stats()["hits"] == 0


def test_technique_code_covers_the_kbench_modules_it_uses():
    """A technique's hash covers its module and the modules that shape its model calls (base,
    fitting, hooks, runner), not the registry, so a new technique does not invalidate others."""
    assert _direct_imports("kbench.evaluate.techniques.caa") == {
        "kbench.evaluate.techniques.base", "kbench.evaluate.techniques.fitting", "kbench.models.hooks",
        "kbench.models.runner"}
    assert _direct_imports("kbench.evaluate.techniques.baseline") == {"kbench.evaluate.techniques.base"}
    assert code_hash("kbench.evaluate.techniques.baseline") != code_hash("kbench.evaluate.techniques.temperature")
