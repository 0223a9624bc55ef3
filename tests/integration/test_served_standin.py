"""Served models through a vLLM-like stand-in (tests/servers/vllm_like.py) computing with the tiny
random Llama: the probe's findings, item-by-item agreement with the in-process backend (model
calls, `evaluate truefalse`, `evaluate extraction --protocol lama`, `evaluate kee` baseline and GenRead), a llama.cpp-like server refused
for log-likelihood, and the API key kept out of every file and output."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from kbench.errors import UserError
from kbench.models.interface import Capability, LanguageModel, ModelSpec
from kbench.models.cached import open_model
from tests.conftest import run_kbench
from tests.dataset_folders import question_dataset
from tests.fixtures_models import tiny_causal_dir  # noqa: F401
from tests.servers.fixtures import SECRET, standin  # noqa: F401
FACTS = [("P36", "France", "Paris"), ("P36", "Germany", "Berlin"), ("P36", "Italy", "Rome"), ("P36", "Spain", "Madrid"),
         ("P19", "Dante", "Florence"), ("P19", "Marie Curie", "Warsaw"), ("P495", "Toyota", "Japan"),
         ("P495", "Nokia", "Finland")]


@pytest.fixture(scope="module")
def server(standin):
    return standin[0]


@pytest.fixture
def api_key(monkeypatch):
    monkeypatch.setenv("KBENCH_API_KEY", SECRET)
    return {"KBENCH_API_KEY": SECRET}


@pytest.fixture(scope="module")
def facts(tmp_path_factory):
    return question_dataset(tmp_path_factory.mktemp("facts"), [
        {"id": f"q{i}", "relation": r, "subject": s, "object": o, "answers": [o], "prompt_cloze": f"{s} is in"}
        for i, (r, s, o) in enumerate(FACTS)])


def test_probe_and_model_calls_agree_with_in_process(server, tiny_causal_dir, api_key):
    served = open_model(ModelSpec(name=f"openai:{server};model=tiny;revision=r1", backend="openai"), cache=None)
    local = open_model(ModelSpec(name=str(tiny_causal_dir)), cache=None)
    block = served.describe()
    assert isinstance(served.inner, LanguageModel)  # every attribute of the protocol, none reached through
    assert served.capabilities == {Capability.GENERATE, Capability.LOGLIKELIHOOD, Capability.RANK_EXACT, Capability.RANK_TOP_K}
    assert block["weights"]["probe"] == {"generate": True, "token_id_prompts": True, "echo_prompt_logprobs": True,
                                        "prompt_logprobs": True, "prompt_logprob_ranks": True, "top_logprobs": 20,
                                        "token_id_keys": True, "sampling_varies": True}
    assert block["weights"]["tokenizer"] == "server" and block["weights"]["server_model"]["max_model_len"] == 256
    prompts = [f"{s} is in" for _, s, _ in FACTS]
    golds = [f" {o}" for _, _, o in FACTS]
    for (s_sum, s_per), (l_sum, l_per) in zip(served.score_answers(prompts, golds), local.score_answers(prompts, golds)):
        assert s_sum == pytest.approx(l_sum, abs=1e-4) and len(s_per) == len(l_per)
    assert [r for r, _ in served.rank_first_token(prompts, golds)] == [r for r, _ in local.rank_first_token(prompts, golds)]
    assert served.generate(prompts, 4, stop=["."]) == local.generate(prompts, 4, stop=["."])
    # seeded sampling: reproducible, whatever the concurrency
    assert served.sample(prompts[:2], 3, 0.8, seed=5, max_new_tokens=3) == served.sample(prompts[:2], 3, 0.8, 5, 3)
    # the revision tag and the server's facts name the weights; the key is in no record
    other = open_model(ModelSpec(name=f"openai:{server};model=tiny;revision=r2", backend="openai"), cache=None)
    assert other.identity != served.identity
    assert SECRET not in repr(served.inner) + str(block)


def test_echo_scores_and_top_k_ranks_without_prompt_logprobs(server, tiny_causal_dir, api_key):
    served = open_model(ModelSpec(name=f"openai:{server};model=tiny", backend="openai"), cache=None).inner
    local = open_model(ModelSpec(name=str(tiny_causal_dir)), cache=None)
    # as a server with echo + top_logprobs but no prompt_logprobs (SGLang-like)
    served.probe = {**served.probe, "prompt_logprobs": False, "prompt_logprob_ranks": False}
    prompts, golds = [f"{s} is in" for _, s, _ in FACTS], [f" {o}" for _, _, o in FACTS]
    for (s_sum, _), (l_sum, _) in zip(served.score_answers(prompts, golds), local.score_answers(prompts, golds)):
        assert s_sum == pytest.approx(l_sum, abs=1e-4)
    for (rank, logprob), (exact, exact_lp) in zip(served.rank_first_token(prompts, golds), local.rank_first_token(prompts, golds)):
        if exact <= 20:
            assert rank == exact and logprob == pytest.approx(exact_lp, abs=1e-4)
        else:
            assert rank is None and logprob is None  # "> k": never a made-up rank
    with pytest.raises(UserError, match="candidate vocabulary"):
        served.rank_first_token(prompts, golds, candidate_ids=[1, 2, 3])


def test_llamacpp_like_echo_is_detected_and_refused(server, tiny_causal_dir, api_key):
    served = open_model(ModelSpec(name=f"openai:{server};model=tiny-llamacpp;tokenizer={tiny_causal_dir}",
                                  backend="openai"), cache=None)
    assert served.describe()["weights"]["probe"]["echo_prompt_logprobs"] is False
    assert served.capabilities == {Capability.GENERATE}
    with pytest.raises(UserError, match="'loglikelihood'.*backends that have it: hf, openai"):
        served.score_answers(["Paris is the capital of"], [" France"])
    with pytest.raises(UserError, match="'rank_top_k'"):
        served.rank_first_token(["Paris is the capital of"], [" France"])


def test_truefalse_on_a_llamacpp_like_server_exits_2_naming_the_capability(server, tiny_causal_dir, built_left, tmp_path,
                                                                           api_key):
    done = run_kbench("evaluate", "truefalse", "--dataset", str(built_left), "--limit", "2", "--no-cache", "--out",
                      str(tmp_path / "run"), "--model", f"openai:{server};model=tiny-llamacpp;tokenizer={tiny_causal_dir}",
                      env=api_key)
    assert done.returncode == 2 and "'loglikelihood'" in done.stderr and "Traceback" not in done.stderr


def _items(out: Path) -> pl.DataFrame:
    return pl.read_parquet(out / "items.parquet")


def test_truefalse_agrees_item_by_item(server, tiny_causal_dir, built_left, tmp_path, api_key):
    base = ["evaluate", "truefalse", "--dataset", str(built_left), "--limit", "6", "--no-cache"]
    served = run_kbench(*base, "--model", f"openai:{server};model=tiny", "--out", str(tmp_path / "served"), env=api_key)
    assert served.returncode == 0, served.stderr
    local = run_kbench(*base, "--model", str(tiny_causal_dir), "--out", str(tmp_path / "local"))
    assert local.returncode == 0, local.stderr
    a, b = _items(tmp_path / "served"), _items(tmp_path / "local")
    assert a.height == b.height == 6
    decisions = [c for c in a.columns if a[c].dtype == pl.Boolean]
    assert decisions and a.select(decisions).equals(b.select(decisions))
    _no_secret([tmp_path / "served"], served.stdout + served.stderr)


def test_lama_p_at_1_agrees_item_by_item(server, tiny_causal_dir, facts, tmp_path, api_key):
    base = ["evaluate", "extraction", "--dataset", str(facts), "--protocol", "lama"]
    cache = tmp_path / "cache"  # the served run writes its result cache: the key must not reach it
    served = run_kbench(*base, "--model", f"openai:{server};model=tiny", "--out", str(tmp_path / "served"),
                        env={**api_key, "KBENCH_CACHE": str(cache)})
    assert served.returncode == 0, served.stderr
    local = run_kbench(*base, "--no-cache", "--model", str(tiny_causal_dir), "--out", str(tmp_path / "local"))
    assert local.returncode == 0, local.stderr
    a, b = _items(tmp_path / "served"), _items(tmp_path / "local")
    assert a.height == b.height > 0
    assert a["gold_rank"].to_list() == b["gold_rank"].to_list() and a["correct"].to_list() == b["correct"].to_list()
    assert (cache / "results.sqlite").is_file()
    _no_secret([tmp_path / "served", cache], served.stdout + served.stderr)


def test_a_wrong_key_is_one_line_exit_2(server, facts, tmp_path):
    done = run_kbench("evaluate", "extraction", "--dataset", str(facts), "--protocol", "lama", "--no-cache",
                      "--model", f"openai:{server};model=tiny", "--out", str(tmp_path / "run"),
                      env={"KBENCH_API_KEY": "sk-wrong-key-123"})
    assert done.returncode == 2 and "HTTP 401" in done.stderr and "Traceback" not in done.stderr
    assert "sk-wrong-key-123" not in done.stderr + done.stdout


def _no_secret(folders: list[Path], output: str) -> None:
    assert SECRET not in output
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file():
                assert SECRET.encode() not in path.read_bytes(), path


def test_kee_black_box_agrees_item_by_item(server, tiny_causal_dir, facts, tmp_path, api_key):
    """KEE baseline and GenRead (greedy, the same token ids in) agree with in-process; CAA is refused."""
    base = ("evaluate", "kee", "--dataset", str(facts), "--techniques", "baseline,genread", "--k", "2", "--sweep-max", "2",
            "--temperatures", "0.7", "--technique-param=genread.document_tokens=8", "--no-cache")
    served = run_kbench(*base, "--model", f"openai:{server};model=tiny", "--out", str(tmp_path / "served"), env=api_key)
    assert served.returncode == 0, served.stderr
    local = run_kbench(*base, "--model", str(tiny_causal_dir), "--out", str(tmp_path / "local"))
    assert local.returncode == 0, local.stderr
    ours, theirs = (pl.read_parquet(tmp_path / w / "items.parquet").filter(pl.col("technique") != "partition@0.7")
                    for w in ("served", "local"))
    assert ours.select("id", "answer", "correct").equals(theirs.select("id", "answer", "correct"))
    refused = run_kbench("evaluate", "kee", "--dataset", str(facts), "--techniques", "caa", "--model",
                         f"openai:{server};model=tiny", "--out", str(tmp_path / "caa"), env=api_key)
    assert refused.returncode == 2 and "technique caa needs the capability 'white_box'" in refused.stderr
