"""The served backend against a real llama.cpp server's answers, replayed: every exchange kbench had
with `llama-server` while opening SmolLM2 and answering a few calls was recorded once
(tests/fixtures/served/SOURCE.md) and is answered again by tests/servers/replay.py on 127.0.0.1,
started and stopped by each test. A request the recording never saw fails the test.

- The probe's verdicts on llama.cpp: generation, token-id prompts, its own `/tokenize` dialect, the
  chat log-prob layout keyed by token id (20 top log-probs: ranks within the top 20), `echo` ignored,
  no `prompt_logprobs`, `max_tokens: 0` generating a token.
- A call needing prompt log-probs is refused naming the missing echo; `max_tokens: 0` is never sent.
- A server that claims top log-probs and returns fewer than asked (derived from the recording by
  cutting its lists) is named in the error, at the probe and after it, never ranked as "unknown".
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from kbench.errors import UserError
from kbench.models.interface import Capability, require
from kbench.models.served.backend import ServedModel
from kbench.models.served.client import ServedClient
from kbench.models.served.spec import ServedSpec
from tests.servers.replay import Replay

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "served"
RECORDING = json.loads((FIXTURES / "llamacpp_exchanges.json").read_text())
PROMPTS = ["The capital of France is", "The capital of Germany is", "Dante was born in", "Toyota is a company from"]
GOLDS = [" Paris", " Berlin", " Florence", " Japan"]  # scripts/record_llamacpp_bodies.py asked these


def open_served(replay: Replay) -> ServedModel:
    spec = ServedSpec.from_arg(f"openai:{replay.url}")
    return ServedModel(spec, ServedClient(spec.urls, None, concurrency=spec.concurrency, retries=0))  # as recorded


@pytest.fixture
def recorded():
    with Replay(RECORDING["exchanges"]) as replay:
        yield replay
    assert not replay.unmatched, f"requests the recording never saw: {replay.unmatched[:3]}"


def test_probe_verdicts_on_llamacpp(recorded):
    served = open_served(recorded)
    assert served.tokenizer_source == "server:llamacpp"  # llama.cpp's /tokenize ({"content": ...})
    assert served.probe == {
        "generate": True, "tokenizer": True, "token_id_prompts": True, "echo": "ignored", "echo_prompt_logprobs": False,
        "prompt_logprobs": False, "prompt_logprob_ranks": False, "top_logprobs": 20, "top_logprobs_returned": {"20": 20},
        "token_id_keys": True, "prompt_only": False, "sampling_varies": True,
        "vocabulary_logprobs": 0, "prompt_lists": True,  # `logprobs: -1` answered with no log-probs; a prompt list, one choice each
    }
    assert served.info.capabilities == {Capability.GENERATE, Capability.RANK_TOP_K}
    assert {c for c, _ in served.info.missing} == {"loglikelihood", "rank_exact"}
    assert served.describe()["weights"]["missing"] == dict(served.info.missing)


def test_prompt_logprobs_refused_naming_the_missing_echo(recorded):
    served = open_served(recorded)
    reason = r"lacks: the server ignored `echo`: no prompt text and no prompt log-probs came back \(llama.cpp's server"
    with pytest.raises(UserError, match=rf"'loglikelihood'.*{reason}.*; backends that have it: hf, openai"):
        served.score_answers(PROMPTS[:1], GOLDS[:1])
    with pytest.raises(UserError, match=rf"task truefalse needs the capability 'loglikelihood'.*{reason}"):
        require(served, [Capability.LOGLIKELIHOOD], "task truefalse")


def test_generation_and_top_k_ranks_from_the_chat_layout(recorded):
    served = open_served(recorded)
    asked = recorded.asked
    assert served.generate(PROMPTS, 0) == [""] * 4 and served.sample(PROMPTS, 2, 0.7, 1, 0) == [["", ""]] * 4
    assert recorded.asked == asked  # `max_tokens: 0` is never sent: llama.cpp would generate a token
    texts = served.generate(PROMPTS, 8, stop=["\n"])
    assert texts[0].startswith(" Paris")
    ranks = served.rank_first_token(PROMPTS, GOLDS)
    assert ranks[0][0] == 1 and ranks[0][1] == pytest.approx(-0.2484, abs=5e-4)  # SERVING: Q4_1 " Paris" -0.2484
    assert all(rank is None or 1 <= rank <= 20 for rank, _ in ranks)


def _cut_top_logprobs(exchanges: list[dict], keep: int, only=lambda body: True) -> list[dict]:
    """The recording as a server would answer that returns at most `keep` top log-probs per position."""
    cut = copy.deepcopy(exchanges)
    for exchange in cut:
        choices = exchange["answer"].get("choices") if isinstance(exchange["answer"], dict) else None
        logprobs = choices[0].get("logprobs") if choices else None
        if isinstance(logprobs, dict) and only(exchange["body"] or {}):
            for entry in logprobs.get("content") or []:
                entry["top_logprobs"] = entry["top_logprobs"][:keep]
    return cut


def test_fewer_top_logprobs_than_asked_is_named_by_the_probe():
    with Replay(_cut_top_logprobs(RECORDING["exchanges"], 3)) as replay:
        served = open_served(replay)
    assert served.probe["top_logprobs"] == 0 and served.probe["top_logprobs_returned"] == {"20": 3, "5": 3}
    assert Capability.RANK_TOP_K not in served.info.capabilities
    said = r"fewer top log-probs than asked \(asked for 20, got 3; asked for 5, got 3\)"
    with pytest.raises(UserError, match=rf"'rank_top_k'.*{said}"):
        served.rank_first_token(PROMPTS, GOLDS)


def test_fewer_top_logprobs_after_the_probe_is_an_error_not_unknown_ranks():
    probe_ids = next(e["body"]["prompt"] for e in RECORDING["exchanges"] if (e["body"] or {}).get("echo"))
    later = _cut_top_logprobs(RECORDING["exchanges"], 3, only=lambda body: body.get("prompt") != probe_ids)
    with Replay(later) as replay:
        served = open_served(replay)
        assert served.probe["top_logprobs"] == 20
        with pytest.raises(UserError, match="asked for 20 top log-probs, the server returned 3"):
            served.rank_first_token(PROMPTS, GOLDS)
