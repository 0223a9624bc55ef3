"""`ServedModel`: the `LanguageModel` of a model behind OpenAI-compatible servers (backend "openai").

    model = open_model(ModelSpec(name="openai:http://127.0.0.1:8000/v1", backend="openai"))
    model.info.capabilities -> what the probe proved, e.g. {generate} for `transformers serve`,
                               {generate, loglikelihood, rank_exact, rank_top_k} for vLLM

Every method sends one `/v1/completions` request per item (at most `concurrency` in flight,
answers in input order), greedy at temperature 0; where the probe proved that a list of prompts is
answered one choice per prompt (vLLM), items asking the same parameters share a request (`_post`):

* `generate`: the prompt as token ids where the server takes them (the ids the in-process
  backend would feed, `PromptEncoder`), else as text; `stop` sent and also cut client-side
  (servers differ on returning the stop string).
* `sample`: k requests per prompt, each with its own `seed` drawn from (seed, prompt, j), so
  samples do not depend on batching or concurrency; they differ from the in-process backend's
  (another random generator), and are reproducible only where the server honours `seed`.
* `score_answers`: prompt + answer as ids, read back through vLLM's `prompt_logprobs` or else
  `echo` + `logprobs`, at the answer's positions.
* `rank_first_token`: prompt + the gold's first token through `prompt_logprobs`, whose entries
  carry the exact rank over the full vocabulary (RANK_EXACT); else the top-k `logprobs` of the
  next position (RANK_TOP_K: rank None when the gold is not among them). A candidate
  vocabulary (LAMA's common vocabulary) is ranked from the whole vocabulary's log-probs of the
  next position (`logprobs: -1`, vLLM under `--max-logprobs -1`), where the probe proved them;
  elsewhere it is refused (a top k does not hold every candidate's score).

Prompts are `Prompt` values (`kbench.models.prompt`): plain text is sent as written; a chat prompt is
rendered through the local tokenizer's chat template (`;tokenizer=FOLDER`). With `api=chat`
(`chat.py`) `generate` / `sample` post a chat prompt's messages to `/v1/chat/completions` (the
server's chat template, its tokenizer); nothing else is offered there. Any other prompt is refused
naming `--prompt chat`.

A model whose server proved a capability missing raises `UserError` naming it, as `require` does.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

from kbench.errors import UserError
from kbench.io import stable_hash
from kbench.models.encoding import PromptEncoder
from kbench.models.info import sequence_start, template_sha256
from kbench.models.interface import Capability, ModelInfo, register_backend, require
from kbench.models.prompt import Prompt, as_prompt, render_text
from kbench.models.provenance import source_hash
from kbench.models.served import chat, parse
from kbench.models.served.client import ServedClient
from kbench.models.served.probe import capabilities, chat_token_limit, missing_reasons, probe_server, split_choices
from kbench.models.served.spec import ServedSpec, api_key, redact_url
from kbench.models.served.tokenizer import NoTokenizer, ServerTokenizer, local_tokenizer, server_dialect

LOG = logging.getLogger(__name__)

#: The source that shapes outputs (the result cache's `code`): this package and the encoder it shares with `hf`.
MODULES = [f"kbench.models.served.{m}" for m in ("backend", "chat", "client", "parse", "probe", "spec", "tokenizer")]
MODULES.append("kbench.models.encoding")
#: What `/v1/models` says that identifies the weights (not `created`: vLLM sets it to the start time).
IDENTIFYING_FIELDS = ("id", "root", "parent", "max_model_len", "owned_by")
CHAT_PATH = "/v1/chat/completions"
PROMPTS_PER_REQUEST = 32  # items in one request, where the probe proved prompt lists (vLLM: one engine step)


class ServedModel:
    def __init__(self, spec: ServedSpec, client: ServedClient):
        self.spec = spec
        self.client = client
        listed = _listed_models(client)
        self.model_id = spec.model or _only_model(listed, client)
        entry = next((m for m in listed if m.get("id") == self.model_id), None)
        if entry is None:
            raise UserError(
                f"--model: {self.model_id!r} is not served at {', '.join(redact_url(u) for u in spec.urls)} "
                f"(served: {', '.join(str(m.get('id')) for m in listed) or 'none'})"
            )
        self.server_model = {k: entry[k] for k in IDENTIFYING_FIELDS if k in entry}
        self.chat = spec.api == "chat"
        self.tokens, self.tokenizer_source = self._tokenizer()  # the token ids kbench computes itself
        self.encoder = PromptEncoder(self.tokens, "causal") if self.tokens else None
        self.probe = probe_server(client, self.model_id, self.tokens or None, spec.api)
        found = capabilities(self.probe)
        if Capability.GENERATE not in found:
            raise UserError(self._no_generation())
        template = None if self.chat else template_sha256(self.tokens)
        self.info = ModelInfo(
            name=f"openai:{self.model_id}",
            identity=stable_hash(["openai", self.server_model, spec.revision, self.tokenizer_source, spec.api]),
            kind="causal",
            dtype="served",  # the server's business; part of what `revision` names
            backend="openai",
            device="server",  # outputs come from the server; the envelope's environment names it so
            code=source_hash(MODULES),
            capabilities=found,
            chat=self.chat or template is not None,
            chat_template_sha256=template,
            prefills_reply=template is not None,  # a server-rendered turn takes no text after it
            revision=spec.revision or None,
            missing=tuple(sorted(missing_reasons(self.probe).items())),  # named by `require` when a task is refused
        )
        self._warned_greedy_samples = False

    def _tokenizer(self):
        if self.spec.tokenizer:
            return local_tokenizer(self.spec.tokenizer), f"local:{self.spec.tokenizer}"
        dialect = server_dialect(self.client, self.model_id)
        if dialect is None:
            return NoTokenizer(self.model_id), None
        return ServerTokenizer(self.client, self.model_id, dialect), "server" if dialect == "vllm" else f"server:{dialect}"

    def _no_generation(self) -> str:
        if self.chat:
            return f"served model {self.model_id!r}: the server answered no chat request ({CHAT_PATH})"
        hint = ""
        if chat_token_limit(self.client, self.model_id):  # a chat-only server (or hosted chat API)
            hint = f"; it answers {CHAT_PATH}: add ;api=chat to --model (and use --prompt chat)"
        return f"served model {self.model_id!r}: the server answered no completion request (/v1/completions){hint}"

    def close(self) -> None:
        self.client.close()

    def describe(self) -> dict:
        info = self.info
        return {
            "name": info.name,
            "identity": info.identity,
            "kind": info.kind,
            "dtype": info.dtype,
            "backend": info.backend,
            "weights": {  # what the envelope's `weights` provenance is for a served model: the server's word
                "source": "openai-compatible server",
                **self.spec.describe(),
                "model": self.model_id,
                "server_model": self.server_model,
                "tokenizer": self.tokenizer_source,
                "probe": self.probe,
                "capabilities": sorted(c.value for c in info.capabilities),
                "missing": dict(info.missing),
            },
        }

    def __repr__(self) -> str:
        return f"ServedModel({self.model_id!r} at {[redact_url(u) for u in self.spec.urls]})"

    def render(self, prompt: Prompt | str) -> str:
        if self.chat:
            chat.messages_of(prompt)  # refuses what a chat request cannot carry
            return as_prompt(prompt).messages_json()
        return render_text(prompt, self.tokens)

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        return self.tokens(list(texts), add_special_tokens=False)["input_ids"] if texts else []

    def sequence_start(self) -> tuple[str, str]:
        return sequence_start(self.tokens)

    # ------------------------------------------------------------------ generation
    def generate(
        self, prompts: Sequence[Prompt | str], max_new_tokens: int = 32, stop: Sequence[str] | None = None, *, intervention=None
    ) -> list[str]:
        self._plain(intervention)
        if max_new_tokens == 0:  # not asked: llama.cpp's server generates a token for `max_tokens: 0`
            return [""] * len(prompts)
        params = {"max_tokens": max_new_tokens, "stop": list(stop or []) or None}
        return [texts[0] for texts in self._generated(prompts, [[params]] * len(prompts), stop)]

    def sample(
        self,
        prompts: Sequence[Prompt | str],
        k: int,
        temperature: float,
        seed: int,
        max_new_tokens: int = 32,
        stop: Sequence[str] | None = None,
        *,
        intervention=None,
    ) -> list[list[str]]:
        self._plain(intervention)
        if max_new_tokens == 0:  # as in `generate`
            return [[""] * k for _ in prompts]
        if not self.probe["sampling_varies"] and not self._warned_greedy_samples:
            self._warned_greedy_samples = True  # once per model, not once per call (KEE samples in every unit)
            LOG.warning(
                "the server's seeded samples equalled its greedy text in the probe (it ignores temperature): "
                "sampled techniques and KEE's shallow/deep partition get greedy answers (probe recorded in results.json)"
            )
        base = {"max_tokens": max_new_tokens, "stop": list(stop or []) or None, "temperature": temperature, "top_p": 1.0}
        params = [[{**base, "seed": int(stable_hash([seed, self.render(p), j])[:8], 16)} for j in range(k)] for p in prompts]
        return self._generated(prompts, params, stop)

    # ------------------------------------------------------------------ log-probs and ranks
    def score_answers(
        self, prompts: Sequence[Prompt | str], answers: Sequence[str], *, intervention=None
    ) -> list[tuple[float, list[float]]]:
        self._plain(intervention)
        require(self, [Capability.LOGLIKELIHOOD], "score_answers (continuation log-likelihood)")
        _same_length(prompts, answers)
        pairs = self.encoder.continuations(self._texts(prompts), answers)
        if self.probe["prompt_logprobs"]:
            answered = self._post([self._body(c + a, prompt_logprobs=0) for c, a in pairs])

            def read(answer, c, a):
                entries = parse.prompt_logprobs(answer)
                return [float(entries[len(c) + i][t]["logprob"]) for i, t in enumerate(a)]
        else:
            answered = self._post([self._body(c + a, echo=True, logprobs=1) for c, a in pairs])

            def read(answer, c, a):
                return [float(v) for v in parse.token_logprobs(answer)[len(c) : len(c) + len(a)]]

        per = [self._read(read, answer, c, a) for answer, (c, a) in zip(answered, pairs)]
        return [(sum(p), p) for p in per]

    def rank_first_token(
        self,
        prompts: Sequence[Prompt | str],
        golds: Sequence[str],
        *,
        candidate_ids: Sequence[int] | None = None,
        intervention=None,
    ) -> list[tuple[int | None, float | None]]:
        self._plain(intervention)
        require(self, [Capability.RANK_TOP_K], "rank_first_token (first-token ranks)")
        _same_length(prompts, golds)
        if candidate_ids is not None:
            return self._rank_among(prompts, golds, candidate_ids)
        items = self.encoder.rank_items(self._texts(prompts), golds)
        if self.probe["prompt_logprob_ranks"]:
            answered = self._post([self._body([*ids, gold], prompt_logprobs=0) for ids, _, gold in items])
            out = []
            for (_, _, gold), answer in zip(items, answered):
                entry = self._read(parse.prompt_logprobs, answer)[-1][gold]
                out.append((int(entry["rank"]), float(entry["logprob"])))
            return out
        k = self.probe["top_logprobs"]
        answered = self._post([self._body(ids, logprobs=k, return_tokens_as_token_ids=True) for ids, _, _ in items])
        return [_rank_in_top(self._top_k(a, k), gold) for (_, _, gold), a in zip(items, answered)]

    def _rank_among(self, prompts: Sequence[Prompt | str], golds: Sequence[str], candidate_ids: Sequence[int]):
        """Ranks over `candidate_ids` from the next position's log-prob of every token (`logprobs: -1`)."""
        if not self.probe.get("vocabulary_logprobs"):
            raise UserError(
                f"served model {self.model_id!r}: ranks over a candidate vocabulary (--common-vocab) need every "
                "candidate's score, which this server does not return for `logprobs: -1` (vLLM does when started "
                "with --max-logprobs -1); rank over the full vocabulary instead"
            )
        items = self.encoder.rank_items(self._texts(prompts), golds)
        bodies = [self._body(ids, logprobs=-1, return_tokens_as_token_ids=True) for ids, _, _ in items]
        out = []
        for (_, _, gold), answer in zip(items, self._post(bodies)):
            scores = {parse.token_id(key): lp for key, lp in self._read(parse.top_logprobs, answer, 0).items()}
            missing = [c for c in (gold, *candidate_ids) if c not in scores]
            if missing:
                raise UserError(f"served model {self.model_id!r}: `logprobs: -1` lacks token ids {missing[:5]}")
            out.append((1 + sum(scores[c] > scores[gold] for c in set(candidate_ids)), float(scores[gold])))
        return out

    def generate_and_rank(
        self,
        prompts: Sequence[Prompt | str],
        golds: Sequence[str],
        max_new_tokens: int = 32,
        stop: Sequence[str] | None = None,
        *,
        candidate_ids: Sequence[int] | None = None,
        intervention=None,
    ) -> list[tuple[str, int | None, float | None]]:
        """Two requests per item (a server cannot rank and generate in one): the rank is None
        ("unknown") on a server that ranks nothing, so a generation-only server still answers."""
        texts = self.generate(prompts, max_new_tokens, stop, intervention=intervention)
        if Capability.RANK_TOP_K not in self.info.capabilities:
            return [(t, None, None) for t in texts]
        ranks = self.rank_first_token(prompts, golds, candidate_ids=candidate_ids, intervention=intervention)
        return [(t, r, lp) for t, (r, lp) in zip(texts, ranks)]

    # ------------------------------------------------------------------ requests
    def _generated(self, prompts: Sequence[Prompt | str], params: Sequence[Sequence[dict]], stop) -> list[list[str]]:
        """One generation request per params dict of each prompt (all in flight together), the
        texts cut at the stop strings: `/v1/chat/completions` with the prompt's messages in chat
        mode (every prompt checked before any request), else `/v1/completions`."""
        if self.chat:
            limit = self.probe["token_limit"]  # the budget's name this server takes
            bodies = [
                self._chat_body(chat.messages_of(p), **{limit if k == "max_tokens" else k: v for k, v in q.items()})
                for p, qs in zip(prompts, params)
                for q in qs
            ]
            answers, read = self.client.post_many(CHAT_PATH, bodies), parse.chat_text
        else:
            bodies = [self._body(p, **q) for p, qs in zip(self._prompts(prompts), params) for q in qs]
            answers, read = self._post(bodies), parse.completion_text
        texts = iter(parse.cut_at_stop(self._read(read, a), stop) for a in answers)
        return [[next(texts) for _ in qs] for qs in params]

    def _prompts(self, prompts: Sequence[Prompt | str]) -> list:
        """What a completion request sends: token ids where the server takes them, else the text."""
        texts = self._texts(prompts)
        if self.encoder is not None and self.probe["token_id_prompts"]:
            return self.encoder.encode(texts)
        return texts

    def _texts(self, prompts: Sequence[Prompt | str]) -> list[str]:
        """The text of each prompt for a completion request (a chat prompt through the local template)."""
        return [render_text(p, self.tokens) for p in prompts]

    def _body(self, prompt, **params) -> dict:
        body = {"model": self.model_id, "prompt": prompt, "max_tokens": 1, "temperature": 0}
        return body | {k: v for k, v in params.items() if v is not None}

    def _chat_body(self, messages: list[dict], **params) -> dict:
        body = {"model": self.model_id, "messages": messages, "temperature": 0}
        return body | {k: v for k, v in params.items() if v is not None}

    def _post(self, bodies: list[dict]) -> list[dict]:
        """One answer per body. Where the probe proved prompt lists, bodies that differ only in their prompt go
        several to a request (enough requests to fill `concurrency`, at most PROMPTS_PER_REQUEST prompts each):
        a batching server computes them in one step, and the client makes fewer round trips."""
        if not self.probe.get("prompt_lists") or len(bodies) < 2:
            return self.client.post_many("/v1/completions", bodies)
        alike: dict[str, list[int]] = {}
        for i, body in enumerate(bodies):
            alike.setdefault(json.dumps({k: v for k, v in body.items() if k != "prompt"}, sort_keys=True), []).append(i)
        size = max(1, min(PROMPTS_PER_REQUEST, -(-len(bodies) // self.client.concurrency)))
        groups = [same[j : j + size] for same in alike.values() for j in range(0, len(same), size)]
        merged = [{**bodies[group[0]], "prompt": [bodies[i]["prompt"] for i in group]} for group in groups]
        out: list[dict] = [{}] * len(bodies)
        for group, answer in zip(groups, self.client.post_many("/v1/completions", merged)):
            split = split_choices(answer, len(group))
            if split is None:
                raise UserError(f"served model {self.model_id!r}: {len(group)} prompts in one request got no choice each")
            for i, one in zip(group, split):
                out[i] = one
        return out

    def _read(self, read, answer, *args):
        try:
            return read(answer, *args)
        except (parse.BadAnswer, KeyError, IndexError, TypeError, ValueError) as exc:
            raise UserError(f"served model {self.model_id!r}: an answer lacks what the probe saw ({exc})") from None

    def _top_k(self, answer: dict, k: int) -> dict[str, float]:
        """The top log-probs of the first generated position, at least the k the probe proved: a
        shorter list would turn ranks beyond it into "unknown" without a word."""
        tops = self._read(parse.top_logprobs, answer, 0)
        if len(tops) < k:
            raise UserError(f"served model {self.model_id!r}: asked for {k} top log-probs, the server returned {len(tops)}")
        return tops

    def _plain(self, intervention) -> None:
        if intervention is not None:
            require(self, [Capability.WHITE_BOX], f"intervention {intervention.key.split(':')[0]!r}")


def _rank_in_top(tops: dict[str, float], gold: int) -> tuple[int | None, float | None]:
    by_id = {parse.token_id(key): lp for key, lp in tops.items()}
    if gold not in by_id:
        return None, None
    return 1 + sum(lp > by_id[gold] for lp in by_id.values()), by_id[gold]


def _listed_models(client: ServedClient) -> list[dict]:
    listed = client.get("/v1/models")
    data = listed.get("data") if isinstance(listed, dict) else None
    if not isinstance(data, list):
        raise UserError(f"server {redact_url(client.urls[0])}: /v1/models answered no model list")
    return [m for m in data if isinstance(m, dict)]


def _only_model(listed: list[dict], client: ServedClient) -> str:
    if len(listed) != 1:
        ids = ", ".join(str(m.get("id")) for m in listed) or "none"
        raise UserError(f"server {redact_url(client.urls[0])} serves {ids}: name one with --model 'openai:URL;model=ID'")
    return str(listed[0]["id"])


def _same_length(prompts: Sequence[Prompt | str], others: Sequence[str]) -> None:
    if len(prompts) != len(others):
        raise UserError(f"got {len(prompts)} prompts but {len(others)} answers")


# what a server can prove in its probe: never white-box access or training
@register_backend("openai", {Capability.GENERATE, Capability.LOGLIKELIHOOD, Capability.RANK_EXACT, Capability.RANK_TOP_K})
def open_served_model(spec) -> ServedModel:
    """The served backend: `spec.name` is the `--model openai:...` argument (`ServedSpec`)."""
    served = ServedSpec.from_arg(spec.name)
    client = ServedClient(served.urls, api_key(), concurrency=served.concurrency, timeout=served.timeout, retries=served.retries)
    return ServedModel(served, client)
