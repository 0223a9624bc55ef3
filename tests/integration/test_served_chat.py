"""`--model 'openai:URL;api=chat'` through the session's vLLM-like stand-in (tests/servers/vllm_like.py)
serving the tiny random Llama with a ChatML template (tests/fixtures/served/chatml.jinja): the chat
probe; the chat prompt form answered item by item as the in-process backend answers it under the same
template (model calls, `evaluate extraction --prompt chat`, `evaluate kee` baseline and GenRead with
`--prompt auto`); a cloze prompt refused naming `--prompt chat`; a chat-only server opened for
completions told to add `;api=chat`, and its `max_completion_tokens` found by the probe; a run stopped
by a vanished server resumed (byte-identical resumes of the same client and engine code are
test_served_faults.py's); the API key kept out of every file and output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from kbench.errors import UserError
from kbench.evaluate.prompts import build_probes
from kbench.models.interface import Capability, ModelSpec
from kbench.models.cached import open_model
from kbench.models.prompt import Prompt, user
from tests.conftest import run_kbench
from tests.dataset_folders import facts_about
from tests.question_rows import question_row
from tests.servers import fault_proxy, free_port
from tests.servers.fixtures import CHAT_TEMPLATE, SECRET

FACTS = facts_about("France", "Germany", "Italy", "Dante", "Marie Curie", "Toyota")
KEY = {"KBENCH_API_KEY": SECRET}


@pytest.fixture(scope="module")
def chat_folder(tiny_causal_dir, tmp_path_factory) -> Path:
    """The tiny random Llama with the stand-in's chat template, for the in-process side (the tiny
    tokenizer spells ChatML's markers out in bytes: the same tokens on both sides)."""
    from transformers import AutoTokenizer

    folder = tmp_path_factory.mktemp("tiny-chat") / "model"
    shutil.copytree(tiny_causal_dir, folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.chat_template = CHAT_TEMPLATE.read_text()
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def port(standin) -> int:
    return standin[1]


def _chat_model(port: int, options: str = "") -> str:
    return f"openai:http://127.0.0.1:{port}/v1;model=tiny;api=chat{options}"


def test_chat_probe_and_model_calls_agree_with_in_process(port, chat_folder, monkeypatch):
    monkeypatch.setenv("KBENCH_API_KEY", SECRET)
    served = open_model(ModelSpec(name=_chat_model(port), backend="openai"), cache=None)
    local = open_model(ModelSpec(name=str(chat_folder)), cache=None)
    block = served.describe()["weights"]
    assert served.info.capabilities == {Capability.GENERATE}  # no log-probs or ranks in chat mode
    assert served.info.chat and not served.info.prefills_reply  # the server renders the turn: nothing can follow it
    assert block["api"] == "chat" and block["probe"]["generate"] and block["probe"]["sampling_varies"]
    completions = open_model(ModelSpec(name=_chat_model(port).replace("api=chat", "api=completions"), backend="openai"),
                             cache=None)
    assert completions.info.identity != served.info.identity  # the endpoint is part of what the cache keys on
    rows = [question_row(id=f"q{i}", subject=s, object=o, question=f"What is {s} known for?") for i, (_, s, o) in enumerate(FACTS)]
    probes = build_probes(rows, "chat", "causal")
    assert all(p.gold == r["object"] for p, r in zip(probes, rows))  # the bare object after a generation prompt
    stop, prompts = list(probes[0].stop), [p.prompt for p in probes]
    answers = served.generate(prompts, 6, stop)  # the same prompt values: the server's template, and the local one
    assert answers == local.generate(prompts, 6, stop) and any(answers)
    assert json.loads(served.render(prompts[0])) == [m.as_dict() for m in prompts[0].messages]  # what items store
    texts = prompts[:2]
    assert served.sample(texts, 3, 0.8, seed=5, max_new_tokens=3) == served.sample(texts, 3, 0.8, 5, 3)  # seeded: repeats
    with pytest.raises(UserError, match="'loglikelihood'"):
        served.score_answers(texts, [" Paris"] * 2)
    with pytest.raises(UserError, match="api=chat takes the chat prompt form: use --prompt chat"):
        served.generate(["France is in"], 3)
    assert SECRET not in repr(served.inner) + str(block)


def test_a_chat_only_server_opened_for_completions_says_add_api_chat(port, monkeypatch):
    monkeypatch.setenv("KBENCH_API_KEY", SECRET)
    with pytest.raises(UserError, match=r"answered no completion request .*add ;api=chat to --model"):
        open_model(ModelSpec(name=f"openai:http://127.0.0.1:{port}/v1;model=tiny-chat", backend="openai"), cache=None)
    hosted = open_model(ModelSpec(name=_chat_model(port).replace("tiny", "tiny-chat"), backend="openai"), cache=None)
    assert hosted.info.capabilities == {Capability.GENERATE}
    assert hosted.describe()["weights"]["probe"]["token_limit"] == "max_completion_tokens"  # max_tokens was refused
    tiny = open_model(ModelSpec(name=_chat_model(port), backend="openai"), cache=None)
    assert tiny.describe()["weights"]["probe"]["token_limit"] == "max_tokens"
    prompts = [Prompt.chat([user(f"Where is {s}?")]) for _, s, _ in FACTS[:3]]
    assert hosted.generate(prompts, 5, ["\n"]) == tiny.generate(prompts, 5, ["\n"])  # the same budget under its other name


def _items(out: Path) -> pl.DataFrame:
    return pl.read_parquet(out / "items.parquet")


def _no_secret(folder: Path, output: str) -> None:
    assert SECRET not in output
    for path in folder.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def _extraction(facts: Path, model: str, out: Path) -> list[str]:
    return ["evaluate", "extraction", "--dataset", str(facts), "--prompt", "chat", "--max-new-tokens", "4", "--no-cache",
            "--out", str(out), "--model", model]


def test_extraction_chat_stopped_resumed_agrees_with_in_process(port, chat_folder, facts, tmp_path):
    """The served run is stopped by a vanished server (the proxy answers 503 after the probe and a few
    items: exit 2), then resumed; it then agrees with the in-process run item by item."""
    proxy, out = free_port(), tmp_path / "served"
    with fault_proxy(port, proxy, tmp_path / "proxy.log", faults="", every=10**6, fail_after=10):
        stopped = run_kbench(*_extraction(facts, _chat_model(proxy, ";retries=1"), out), env=KEY)
    assert stopped.returncode == 2 and "finished work is kept" in stopped.stderr and "Traceback" not in stopped.stderr
    served = run_kbench(*_extraction(facts, _chat_model(port), out), env=KEY)
    assert served.returncode == 0, served.stderr
    local = run_kbench(*_extraction(facts, str(chat_folder), tmp_path / "local"))
    assert local.returncode == 0, local.stderr
    a, b = _items(out), _items(tmp_path / "local")
    assert a.height == b.height == len(FACTS)
    assert a.select("id", "prediction", "correct", "exact").equals(b.select("id", "prediction", "correct", "exact"))
    assert any(a["prediction"])  # the comparison is of answers, not of empty strings
    # the record holds the messages as a JSON list, not one server's rendering
    assert all(json.loads(p)[0]["role"] == "user" for p in a["prompt"])
    assert a["gold_rank"].is_null().all()  # chat mode ranks nothing: unknown, never guessed
    _no_secret(out, stopped.stdout + stopped.stderr + served.stdout + served.stderr)


def test_a_cloze_prompt_through_api_chat_exits_2_naming_the_flag(port, facts, tmp_path):
    done = run_kbench("evaluate", "extraction", "--dataset", str(facts), "--no-cache", "--out", str(tmp_path / "run"),
                      "--model", _chat_model(port), env=KEY)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "api=chat takes the chat prompt form: use --prompt chat" in done.stderr


def test_kee_chat_agrees_item_by_item(port, chat_folder, facts, tmp_path):
    """`--prompt auto` picks the chat form on both sides; baseline and GenRead are greedy: the same answers."""
    base = ("evaluate", "kee", "--dataset", str(facts), "--techniques", "baseline,genread", "--k", "2", "--sweep-max", "2",
            "--temperatures", "0.7", "--technique-param=genread.document_tokens=8", "--no-cache")
    served = run_kbench(*base, "--model", _chat_model(port), "--out", str(tmp_path / "served"), env=KEY)
    assert served.returncode == 0, served.stderr
    local = run_kbench(*base, "--model", str(chat_folder), "--out", str(tmp_path / "local"))
    assert local.returncode == 0, local.stderr
    ours, theirs = (_items(tmp_path / w).filter(pl.col("technique") != "partition@0.7") for w in ("served", "local"))
    assert ours.height == theirs.height == 2 * len(FACTS)
    assert ours.select("id", "technique", "answer", "correct").equals(theirs.select("id", "technique", "answer", "correct"))
    assert any(ours["answer"])
    _no_secret(tmp_path / "served", served.stdout + served.stderr)


@pytest.mark.parametrize("api, prompt_form, cue", [("chat", "chat", "ends the user turn"), ("completions", "plain", "ends the prompt")])
def test_a_served_judge_asks_every_row_and_records_where_its_cue_went(port, tmp_path, monkeypatch, api, prompt_form, cue):
    """MAPLE's judge steps with a served judge (MAPLE's was gpt-4o-mini, a chat API): the chat API
    cannot take the cue after the turn, so it closes the user turn; every row gets a verdict."""
    from kbench.construct.context import StageContext
    from kbench.construct.stages.judge_domain import JudgeDomain

    monkeypatch.setenv("KBENCH_API_KEY", SECRET)
    rows = pl.DataFrame({"subject": [s for _, s, _ in FACTS], "relation": [r for r, _, _ in FACTS],
                         "relation_label": ["capital" if r == "P36" else "place" for r, _, _ in FACTS],
                         "object": [o for _, _, o in FACTS], "domain": ["geography"] * len(FACTS)})
    ctx = StageContext(recipe_path=tmp_path / "r.toml", run_dir=tmp_path / "run", seed=0, cache_dir=tmp_path / "c",
                       options={"judge_model": f"openai:http://127.0.0.1:{port}/v1;model=tiny;api={api}"})
    out = JudgeDomain(JudgeDomain.Params(max_new_tokens=4), ctx).run(rows.lazy())
    judged = pl.concat([out.kept.collect().select("judge_domain_verdict"), out.rejected.collect().select("judge_domain_verdict")])
    assert judged.height == len(FACTS) and set(judged["judge_domain_verdict"]) <= {"fits", "mismatch", "unparseable"}
    judge = out.details["judge"]
    assert (judge["backend"], judge["prompt_form"], judge["cue"]) == ("openai", prompt_form, cue)
