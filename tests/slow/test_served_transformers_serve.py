"""A real `transformers serve` of the converted SmolLM2 folder on 127.0.0.1 (started by Popen,
awaited on /health, stopped by PID): the probe finds a generation-only server (echo, logprobs
and top_logprobs accepted and ignored), greedy extraction answers agree with the in-process
backend item by item, and what the server cannot do is refused naming the capability."""

from __future__ import annotations

import pytest

from kbench.errors import UserError
from kbench.evaluate.prompts import build_prompts
from kbench.models.interface import Capability, ModelSpec, open_model, require
from kbench.models.loading import resolve_source
from tests.question_rows import question_row
from tests.servers import free_port, transformers_serve

pytestmark = pytest.mark.slow

FACTS = [("P36", "France", "Paris"), ("P36", "Germany", "Berlin"), ("P19", "Dante", "Florence"), ("P495", "Toyota", "Japan")]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder, _ = resolve_source("smollm2-135m")  # the packaged GGUF, converted once into $KBENCH_MODEL_CACHE
    port = free_port()
    with transformers_serve(folder, port, tmp_path_factory.mktemp("tserve") / "server.log"):
        yield open_model(ModelSpec(name=f"openai:http://127.0.0.1:{port};concurrency=2", backend="openai"), cache=None)


def test_probe_finds_generation_only(served):
    block = served.describe()["weights"]
    assert served.capabilities == {Capability.GENERATE}
    assert block["probe"]["generate"] and block["tokenizer"] is None  # no /tokenize: text prompts
    assert not any(block["probe"][k] for k in ("echo_prompt_logprobs", "prompt_logprobs", "top_logprobs"))
    with pytest.raises(UserError, match="has no tokenizer .*;tokenizer=FOLDER"):
        served.tokenizer(" Paris", add_special_tokens=False)  # e.g. the LAMA single-token filter
    with pytest.raises(UserError, match="'loglikelihood'"):
        served.score_answers(["The capital of France is"], [" Paris"])
    with pytest.raises(UserError, match="technique caa needs the capability 'white_box'.*backends that have it: hf$"):
        require(served, [Capability.WHITE_BOX], "technique caa")


def test_greedy_extraction_answers_agree_with_in_process(served):
    local = open_model(ModelSpec(name="smollm2-135m"), cache=None)
    rows = [question_row(id=f"q{i}", relation=r, subject=s, object=o, answers=[o]) for i, (r, s, o) in enumerate(FACTS)]
    prompts = build_prompts(rows, "question", local.tokenizer, "causal", 0, [], 0)
    texts, stop = [p.text for p in prompts], list(prompts[0].stop)
    remote, here = served.generate(texts, 8, stop=stop), local.generate(texts, 8, stop=stop)
    assert remote == here  # measured: 4/4 (the server tokenises the same text with the same tokenizer, fp32)
    ranked = served.generate_and_rank(texts[:1], [" Paris"], 8, stop=stop)
    assert ranked == [(here[0], None, None)]  # a generation-only server ranks nothing: unknown, never guessed
