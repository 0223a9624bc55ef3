"""What a server actually returns, measured once when the model is opened.

Servers accept parameters they ignore: `transformers serve` takes `echo`, `logprobs` and
`top_logprobs` and returns no log-probs; llama.cpp's server ignores `echo` (no prompt text, no
prompt log-probs come back) and generates one token for `max_tokens: 0`, so a harness that trusts
the fields scores log-likelihood tasks at chance. So the probe sends a few small requests and
looks at the answers:

    generate            a greedy completion comes back
    token_id_prompts    a prompt given as token ids is accepted (kbench tokenizes, the server scores)
    echo                what `echo` + `logprobs` did: "prompt_logprobs" (a log-prob for every prompt
                        token after the first), "text_only" (the prompt text without its log-probs),
                        "ignored" (neither), "refused" (a 4xx), "not_asked" (no token-id prompts)
    echo_prompt_logprobs  echo == "prompt_logprobs"
    prompt_logprobs     vLLM's `prompt_logprobs` returns each prompt token's log-prob
    prompt_logprob_ranks  ... with its rank over the full vocabulary
    top_logprobs        the top log-probs one position is proved to get: the first k of (20, 5) whose
                        answer holds k entries (0: none); top_logprobs_returned: k asked -> entries
                        returned (None: refused), so a server returning fewer than asked is named
    token_id_keys       top log-probs are keyed "token_id:N" (`return_tokens_as_token_ids`, or the
                        `id` of each entry in the chat layout llama.cpp answers in)
    prompt_only         `max_tokens: 0` generates nothing (llama.cpp's server still generates one)
    vocabulary_logprobs how many log-probs `logprobs: -1` returns for one position, keyed by token id
                        (vLLM started with `--max-logprobs -1`: the whole vocabulary; 0: refused), which
                        ranks a gold among any candidate vocabulary (LAMA's common vocabulary)
    prompt_lists        one request holding a list of prompts answers one choice per prompt, by `index`
                        (each with its own prompt log-probs where the server gives them): the backend then
                        sends several items per request (vLLM batches them in one step)
    sampling_varies     seeded samples at temperature 2 differ from the greedy text (`transformers serve`
                        5.24 ignores `temperature` on /v1/completions: its "samples" are greedy)

In chat mode (`api=chat`) only `/v1/chat/completions` is asked: `generate` (a greedy reply comes
back), `sampling_varies`, and `token_limit`: the name the server takes for the reply's token budget
(`max_tokens`; else `max_completion_tokens`, the only one OpenAI's reasoning models accept); the
rest stays false (no log-probs or ranks are offered in chat mode).

Capabilities are what the probe proved (`capabilities`), and `missing_reasons` says for each one
not proved what the server failed to deliver; both go into the model's `describe()` block and so
into results.json, and a refused task names the reason.
"""

from __future__ import annotations

from typing import Any

from kbench.models.interface import Capability
from kbench.models.served import parse

PROBE_TEXT = "The capital of France is"
PROBE_MESSAGES = [{"role": "user", "content": "What is the capital of France?"}]
TOKEN_LIMITS = ("max_tokens", "max_completion_tokens")  # the chat reply's token budget, as servers name it
SAMPLING_SEEDS = (1, 2, 3)  # at temperature 2, eight tokens: a real sampler leaves the greedy text almost surely
TOP_K_ASKED = (20, 5)  # vLLM's default --max-logprobs; a server allowing fewer is asked for 5


def probe_server(client, model_id: str, tokenizer, api: str = "completions") -> dict:
    if api == "chat":
        return probe_chat(client, model_id)
    base = {"model": model_id, "max_tokens": 1, "temperature": 0}
    found: dict[str, Any] = {"generate": _text(client.try_post("/v1/completions", {**base, "prompt": PROBE_TEXT})) is not None}
    found.update(tokenizer=tokenizer is not None, token_id_prompts=False, echo="not_asked", echo_prompt_logprobs=False)
    found.update(prompt_logprobs=False, prompt_logprob_ranks=False, top_logprobs=0, top_logprobs_returned={})
    found.update(token_id_keys=False, prompt_only=False, vocabulary_logprobs=0, prompt_lists=False)
    long = {**base, "prompt": PROBE_TEXT, "max_tokens": 8}
    found["sampling_varies"] = found["generate"] and sampling_varies(client, "/v1/completions", long, parse.completion_text)
    if tokenizer is None or not found["generate"]:
        return found
    ids = tokenizer(PROBE_TEXT, add_special_tokens=True)["input_ids"]
    found["token_id_prompts"] = _text(client.try_post("/v1/completions", {**base, "prompt": ids})) is not None
    if not found["token_id_prompts"]:
        return found
    found["prompt_only"] = generates_nothing(client.try_post("/v1/completions", {**base, "prompt": ids, "max_tokens": 0}))
    echoed = client.try_post("/v1/completions", {**base, "prompt": ids, "echo": True, "logprobs": 1})
    found["echo"] = echo_verdict(echoed, len(ids))
    found["echo_prompt_logprobs"] = found["echo"] == "prompt_logprobs"
    scored = client.try_post("/v1/completions", {**base, "prompt": ids, "prompt_logprobs": 0})
    found["prompt_logprobs"], found["prompt_logprob_ranks"] = prompt_logprobs_cover(scored, ids)
    for k in TOP_K_ASKED:
        asked = {**base, "prompt": ids, "logprobs": k, "return_tokens_as_token_ids": True}
        tops = _or_none(parse.top_logprobs, client.try_post("/v1/completions", asked), 0)
        found["top_logprobs_returned"][str(k)] = None if tops is None else len(tops)
        if tops is not None and len(tops) >= k:  # vLLM adds the sampled token beyond the top k: k + 1
            found["top_logprobs"] = k
            found["token_id_keys"] = all(parse.token_id(key) is not None for key in tops)
            break
    found["vocabulary_logprobs"] = vocabulary_logprobs(client, base, ids, found["top_logprobs"])
    found["prompt_lists"] = prompt_lists(client, base, ids, found["prompt_logprobs"])
    return found


def prompt_lists(client, base: dict, ids: list[int], with_prompt_logprobs: bool) -> bool:
    """Whether a list of two prompts comes back as two choices, one per prompt (with their own prompt
    log-probs, of each prompt's length, where the server gives them)."""
    prompts = [ids, ids[:-1]]
    body = {**base, "prompt": prompts} | ({"prompt_logprobs": 0} if with_prompt_logprobs else {})
    choices = split_choices(client.try_post("/v1/completions", body), len(prompts))
    if choices is None or not all(_or_none(parse.completion_text, c) is not None for c in choices):
        return False
    if not with_prompt_logprobs:
        return True
    return all(len(_or_none(parse.prompt_logprobs, c) or ()) == len(p) for c, p in zip(choices, prompts))


def split_choices(answer: dict | None, n: int) -> list[dict] | None:
    """An answer to n prompts in one request as n one-choice answers, in prompt order (by each choice's
    `index`); None unless it holds exactly one choice for each prompt."""
    choices = answer.get("choices") if isinstance(answer, dict) else None
    if not isinstance(choices, list) or len(choices) != n or not all(isinstance(c, dict) for c in choices):
        return None
    if sorted(c.get("index") for c in choices if isinstance(c.get("index"), int)) != list(range(n)):
        return None
    return [{"choices": [c]} for c in sorted(choices, key=lambda c: c["index"])]


def vocabulary_logprobs(client, base: dict, ids: list[int], top_k: int) -> int:
    """How many token-id-keyed log-probs `logprobs: -1` brings for the next position: more than the top k
    (a server that caps or ignores -1 answers an error or the top k only, and counts as 0)."""
    asked = {**base, "prompt": ids, "logprobs": -1, "return_tokens_as_token_ids": True}
    tops = _or_none(parse.top_logprobs, client.try_post("/v1/completions", asked), 0)
    if not tops or len(tops) <= top_k or not all(parse.token_id(key) is not None for key in tops):
        return 0
    return len(tops)


def probe_chat(client, model_id: str) -> dict:
    found: dict[str, Any] = dict.fromkeys(
        ("token_id_prompts", "echo_prompt_logprobs", "prompt_logprobs", "prompt_logprob_ranks"), False
    )
    found.update(top_logprobs=0, token_id_keys=False, vocabulary_logprobs=0, prompt_lists=False)
    limit = chat_token_limit(client, model_id)
    found.update(generate=limit is not None, token_limit=limit or TOKEN_LIMITS[0])
    long = {"model": model_id, "messages": PROBE_MESSAGES, found["token_limit"]: 8, "temperature": 0}
    found["sampling_varies"] = found["generate"] and sampling_varies(client, "/v1/chat/completions", long, parse.chat_text)
    return found


def chat_token_limit(client, model_id: str) -> str | None:
    """The budget's name with which `/v1/chat/completions` answers a one-token greedy request (None: it answers none)."""
    for limit in TOKEN_LIMITS:
        body = {"model": model_id, "messages": PROBE_MESSAGES, limit: 1, "temperature": 0}
        if _or_none(parse.chat_text, client.try_post("/v1/chat/completions", body)) is not None:
            return limit
    return None


def sampling_varies(client, path: str, greedy_body: dict, read) -> bool:
    """Whether seeded samples come back different from the greedy continuation (a server that
    ignores `temperature` would make every sampled technique greedy without a word)."""
    greedy = _or_none(read, client.try_post(path, greedy_body))
    samples = {_or_none(read, client.try_post(path, {**greedy_body, "temperature": 2.0, "seed": s})) for s in SAMPLING_SEEDS}
    return bool(samples - {greedy, None})


def echo_covers_prompt(answer: dict | None, n_prompt: int) -> bool:
    """Whether an `echo` + `logprobs` answer holds a log-prob for every prompt token after the first."""
    values = _or_none(parse.token_logprobs, answer)
    return bool(values and len(values) > n_prompt and all(isinstance(v, (int, float)) for v in values[1:n_prompt]))


def echo_verdict(answer: dict | None, n_prompt: int) -> str:
    """What `echo` did to an answer for the probe text (see the module's table)."""
    if answer is None:
        return "refused"
    if echo_covers_prompt(answer, n_prompt):
        return "prompt_logprobs"
    text = _text(answer)
    return "text_only" if text is not None and text.startswith(PROBE_TEXT) else "ignored"


def generates_nothing(answer: dict | None) -> bool:
    """Whether a `max_tokens: 0` answer holds no generated token (its usage says 0, its text is empty)."""
    return answer is not None and _text(answer) == "" and parse.completion_tokens(answer) == 0


def prompt_logprobs_cover(answer: dict | None, ids: list[int]) -> tuple[bool, bool]:
    """(every prompt token after the first has its `prompt_logprobs` entry, each with its rank)."""
    entries = _or_none(parse.prompt_logprobs, answer)
    if not entries or len(entries) != len(ids) or not all(e is not None and t in e for e, t in zip(entries[1:], ids[1:])):
        return False, False
    return True, all(isinstance(e[t].get("rank"), int) for e, t in zip(entries[1:], ids[1:]))


def capabilities(found: dict) -> frozenset[Capability]:
    have = {Capability.GENERATE} if found["generate"] else set()
    if found["echo_prompt_logprobs"] or found["prompt_logprobs"]:
        have.add(Capability.LOGLIKELIHOOD)
    if found["prompt_logprob_ranks"]:
        have.add(Capability.RANK_EXACT)
    if found["prompt_logprob_ranks"] or (found["top_logprobs"] and found["token_id_keys"]):
        have.add(Capability.RANK_TOP_K)
    return frozenset(have)


def missing_reasons(found: dict) -> dict[str, str]:
    """{capability: what the server failed to deliver} for each log-prob capability the probe did
    not prove (chat mode: none is asked)."""
    have = capabilities(found)
    if "token_limit" in found:
        return {c.value: "chat mode (api=chat) offers generation only" for c in _LOGPROB_CAPABILITIES if c not in have}
    common = _common_gap(found)
    reasons = {}
    if Capability.LOGLIKELIHOOD not in have:
        reasons[Capability.LOGLIKELIHOOD.value] = common or f"{ECHO_GAPS[found['echo']]}, and no vLLM `prompt_logprobs`"
    if Capability.RANK_EXACT not in have:
        reasons[Capability.RANK_EXACT.value] = common or "no vLLM `prompt_logprobs` with ranks over the full vocabulary"
    if Capability.RANK_TOP_K not in have:
        reasons[Capability.RANK_TOP_K.value] = common or _top_k_gap(found)
    return reasons


_LOGPROB_CAPABILITIES = (Capability.LOGLIKELIHOOD, Capability.RANK_EXACT, Capability.RANK_TOP_K)
ECHO_GAPS = {
    "ignored": "the server ignored `echo`: no prompt text and no prompt log-probs came back "
    "(llama.cpp's server does not implement echo)",
    "text_only": "`echo` returned the prompt text without its log-probs",
    "refused": "the server refused `echo` with `logprobs`",
    "prompt_logprobs": "`echo` returned the prompt log-probs",
}


def _common_gap(found: dict) -> str | None:
    if not found["generate"]:
        return "the server answered no completion request"
    if not found["tokenizer"]:
        return "no tokenizer (no /tokenize in vLLM's or llama.cpp's form): add ;tokenizer=FOLDER to --model"
    if not found["token_id_prompts"]:
        return "the server refused a prompt given as token ids"
    return None


def _top_k_gap(found: dict) -> str:
    asked = found["top_logprobs_returned"]
    if found["top_logprobs"] and not found["token_id_keys"]:
        return "its top log-probs name tokens by text only, not by id (no `return_tokens_as_token_ids`)"
    said = "; ".join(f"asked for {k}, {'refused' if n is None else f'got {n}'}" for k, n in asked.items())
    return f"the server returned fewer top log-probs than asked ({said})"


def _text(answer):
    return _or_none(parse.completion_text, answer)


def _or_none(read, answer, *args):
    if answer is None:
        return None
    try:
        return read(answer, *args)
    except (parse.BadAnswer, TypeError, ValueError, AttributeError):
        return None
