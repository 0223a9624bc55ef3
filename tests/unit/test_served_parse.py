"""The served backend's reading of server answers, on bodies shaped as vLLM, SGLang and llama.cpp
return them (tests/fixtures/served/, see SOURCE.md): the parser and the probe's detection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbench.models.interface import Capability
from kbench.models.served import parse
from kbench.models.served.probe import (
    capabilities,
    echo_covers_prompt,
    echo_verdict,
    generates_nothing,
    missing_reasons,
    prompt_logprobs_cover,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "served"


def body(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text())


@pytest.mark.parametrize("name", ["vllm_completion_echo_logprobs", "sglang_completion_echo_logprobs"])
def test_echo_logprobs_cover_the_prompt(name):
    answer = body(name)
    values = parse.token_logprobs(answer)
    assert values[0] is None and all(isinstance(v, float) for v in values[1:])
    assert echo_covers_prompt(answer, n_prompt=5)
    assert parse.top_logprobs(answer, 5) == {" Paris": values[5]}


def test_llamacpp_ignores_echo():
    """Recorded from llama.cpp's server: `echo` brings back neither the prompt text nor its log-probs."""
    answer = body("llamacpp_completion_echo")
    assert not parse.completion_text(answer).startswith("The capital")  # no prompt text ...
    assert len(parse.token_logprobs(answer)) == 1  # ... and only the generated token's log-prob
    assert not echo_covers_prompt(answer, n_prompt=5) and echo_verdict(answer, n_prompt=5) == "ignored"
    with pytest.raises(parse.BadAnswer):
        parse.prompt_logprobs(body("llamacpp_completion_prompt_logprobs"))  # nor vLLM's prompt_logprobs


def test_llamacpp_chat_layout_logprobs():
    """llama.cpp answers `/v1/completions` `logprobs: 5` in the chat layout (`logprobs.content[]`): each
    generated token's `logprob` and its top 5, keyed by the entries' token ids."""
    answer = body("llamacpp_completion_top5")
    content = answer["choices"][0]["logprobs"]["content"]
    values = parse.token_logprobs(answer)
    assert len(values) == len(content) == 3 and all(isinstance(v, float) and v <= 0 for v in values)
    for position, entry in enumerate(content):
        tops = parse.top_logprobs(answer, position)
        assert len(tops) == 5 and all(parse.token_id(key) is not None for key in tops)
        assert tops[f"token_id:{entry['id']}"] == values[position] == max(tops.values())  # greedy: the top token
    with pytest.raises(parse.BadAnswer):
        parse.top_logprobs(answer, 3)


def test_llamacpp_max_tokens_0_still_generates_a_token():
    answer = body("llamacpp_completion_max_tokens_0")
    assert parse.completion_tokens(answer) == 1 and parse.completion_text(answer) != ""
    assert not generates_nothing(answer)


def test_vllm_prompt_logprobs_carry_ranks():
    answer = body("vllm_completion_prompt_logprobs")
    entries = parse.prompt_logprobs(answer)
    assert entries[0] is None and entries[1][6864] == {"logprob": -9.58, "rank": 240, "decoded_token": " capital"}
    assert prompt_logprobs_cover(answer, [791, 6864, 315, 9822, 374]) == (True, True)
    assert prompt_logprobs_cover(answer, [791, 6864, 315, 9822, 11]) == (False, False)  # a token not there
    assert prompt_logprobs_cover(body("vllm_completion_echo_logprobs"), [1, 2, 3, 4, 5]) == (False, False)


def test_token_id_keys():
    tops = parse.top_logprobs(body("vllm_completion_token_ids"), 0)
    assert {parse.token_id(k) for k in tops} == {12366, 279}
    assert parse.token_id(" Paris") is None and parse.token_id("token_id:x") is None


def test_answers_without_what_was_asked_raise_bad_answer():
    with pytest.raises(parse.BadAnswer):
        parse.token_logprobs(body("vllm_completion_prompt_logprobs"))  # logprobs: null
    with pytest.raises(parse.BadAnswer):
        parse.completion_text({"error": "overloaded"})


def test_stop_strings_are_cut_client_side():
    # `transformers serve` returns " Paris.\n" for stop ["\n"]
    assert parse.cut_at_stop(" Paris.\n", ["\n"]) == " Paris."
    assert parse.cut_at_stop(" Paris. Rome", [".", " Rome"]) == " Paris"
    assert parse.cut_at_stop(" Paris", None) == " Paris"


def test_capabilities_are_what_the_probe_proved():
    nothing = {"generate": True, "token_id_prompts": False, "echo_prompt_logprobs": False, "prompt_logprobs": False,
               "prompt_logprob_ranks": False, "top_logprobs": 0, "token_id_keys": False}
    assert capabilities(nothing) == {Capability.GENERATE}  # transformers serve
    sglang = {**nothing, "token_id_prompts": True, "echo_prompt_logprobs": True, "top_logprobs": 5}
    assert capabilities(sglang) == {Capability.GENERATE, Capability.LOGLIKELIHOOD}  # top-k keyed by text: no ranks
    vllm = {**sglang, "prompt_logprobs": True, "prompt_logprob_ranks": True, "token_id_keys": True}
    assert capabilities(vllm) == {Capability.GENERATE, Capability.LOGLIKELIHOOD, Capability.RANK_EXACT,
                                  Capability.RANK_TOP_K}


def test_echoed_top_logprobs_hold_the_prompt_token_beyond_the_top_k():
    """vLLM lists the prompt token beside the top k when it is not among them (k + 1 entries), and
    log-probs tie: a rank read from such a list counts only the strictly higher entries, as the
    in-process backend's rank does, and the echoed token's log-prob is the token_logprobs value."""
    from kbench.models.served.backend import _rank_in_top

    answer = body("vllm_completion_echo_top5")
    values = parse.token_logprobs(answer)
    assert echo_covers_prompt(answer, n_prompt=5)
    tokens = answer["choices"][0]["logprobs"]["tokens"]
    for position in range(1, 6):
        tops = parse.top_logprobs(answer, position)
        assert tops[tokens[position]] == values[position] and len(tops) in (5, 6)
    beyond = parse.top_logprobs(answer, 3)  # " France" at -6.04 is outside the top 5: listed as a sixth entry
    assert len(beyond) == 6 and max(beyond.values()) > beyond[" France"]
    tied = {f"token_id:{i}": lp for i, lp in enumerate(parse.top_logprobs(answer, 2).values())}  # " of" and " city" tie
    assert _rank_in_top(tied, 0) == (1, -1.4453125) and _rank_in_top(tied, 1) == (1, -1.4453125)
    assert _rank_in_top(tied, 2) == (3, -1.8203125) and _rank_in_top(tied, 99) == (None, None)


def test_missing_reasons_say_what_the_server_failed_to_deliver():
    no_tokenizer = {"generate": True, "tokenizer": False, "token_id_prompts": False, "echo": "not_asked",
                    "echo_prompt_logprobs": False, "prompt_logprobs": False, "prompt_logprob_ranks": False, "top_logprobs": 0,
                    "top_logprobs_returned": {}, "token_id_keys": False}
    reasons = missing_reasons(no_tokenizer)  # transformers serve: no /tokenize
    assert set(reasons) == {"loglikelihood", "rank_exact", "rank_top_k"} and ";tokenizer=FOLDER" in reasons["loglikelihood"]
    text_keys = {**no_tokenizer, "tokenizer": True, "token_id_prompts": True, "echo": "text_only", "top_logprobs": 5,
                 "top_logprobs_returned": {"20": None, "5": 5}}
    reasons = missing_reasons(text_keys)
    assert reasons["loglikelihood"] == "`echo` returned the prompt text without its log-probs, and no vLLM `prompt_logprobs`"
    assert "by text only" in reasons["rank_top_k"]
    assert missing_reasons({**no_tokenizer, "token_limit": "max_tokens"})["loglikelihood"].startswith("chat mode")
