"""ModelRunner on tiny random models, checked against references computed one prompt at a time."""

from __future__ import annotations

import contextlib

import pytest
import torch

import kbench.models.batching as batching_module
from kbench.models import ranking
from kbench.models.loading import load_model
from kbench.models.packing import packing_works
from kbench.models.interface import Intervention, Steering
from kbench.models.runner import ModelRunner
from tests.fixtures_models import TEST_DEVICE

PROMPTS = ["Paris is the capital of", "Marie Curie was born in", "The native language of Pablo Picasso is",
           "Rome is", "Question : What is the capital of France ? Answer :"]
GOLDS = [" France", " Warsaw", " Spanish", " the capital", " Paris"]


@pytest.fixture(scope="module")
def causal(tiny_causal_dir):
    return load_model(str(tiny_causal_dir), device=TEST_DEVICE)


@pytest.fixture(scope="module")
def masked(tiny_masked_dir):
    return load_model(str(tiny_masked_dir), device=TEST_DEVICE)


def _reference_logits(loaded, ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        return loaded.model(input_ids=torch.tensor([ids], device=TEST_DEVICE)).logits[0].float().cpu()


def _reference_rank(loaded, prompt: str, gold: str) -> tuple[int, float]:
    tok = loaded.tokenizer
    ids = tok(prompt)["input_ids"]
    gold_id = tok(prompt + gold)["input_ids"][len(ids)]
    scores = _reference_logits(loaded, ids)[-1]
    return int((scores > scores[gold_id]).sum()) + 1, float(scores.log_softmax(-1)[gold_id])


@contextlib.contextmanager
def count_forwards(loaded):
    """Record (rows, width, tokens that are not padding) of every forward call of the model's
    decoder stack (after the runner's one-off packing check, which is not the call's work)."""
    pad = ModelRunner(loaded).pad_id
    packing_works(loaded.model, pad)
    shapes: list[tuple[int, int, int]] = []

    def record(_module, _args, kwargs):
        ids = kwargs["input_ids"]
        shapes.append((*ids.shape, int((ids != pad).sum())))

    handle = loaded.model.model.register_forward_pre_hook(record, with_kwargs=True)
    try:
        yield shapes
    finally:
        handle.remove()


@pytest.mark.parametrize("rows_per_slice", [None, 2])
def test_ranks_match_unpadded_reference(causal, monkeypatch, rows_per_slice):
    if rows_per_slice:  # rank statistics computed a few rows at a time, as for a large vocabulary
        vocab = causal.model.get_output_embeddings().weight.shape[0]
        monkeypatch.setattr(ranking, "CPU_RANKING_ELEMENTS", rows_per_slice * vocab)
    got = ModelRunner(causal, batch_size=3).rank_first_token(PROMPTS, GOLDS)
    for (rank, logprob), prompt, gold in zip(got, PROMPTS, GOLDS):
        ref_rank, ref_lp = _reference_rank(causal, prompt, gold)
        assert rank == ref_rank
        assert logprob == pytest.approx(ref_lp, abs=1e-4)


def test_batch_size_invariance(causal):
    by_size = {size: ModelRunner(causal, batch_size=size) for size in (1, 2, None)}
    ranks = {size: r.rank_first_token(PROMPTS, GOLDS) for size, r in by_size.items()}
    texts = {size: r.generate(PROMPTS, max_new_tokens=6) for size, r in by_size.items()}
    assert [r for r, _ in ranks[1]] == [r for r, _ in ranks[2]] == [r for r, _ in ranks[None]]
    for a, b in zip(ranks[1], ranks[None]):
        assert a[1] == pytest.approx(b[1], abs=1e-4)
    assert texts[1] == texts[2] == texts[None]


def test_restricted_vocabulary_rank(causal):
    tok = causal.tokenizer
    gold_id = tok(PROMPTS[0] + GOLDS[0])["input_ids"][len(tok(PROMPTS[0])["input_ids"])]
    candidates = [gold_id, 10, 11, 12]
    (rank, _), = ModelRunner(causal).rank_first_token(PROMPTS[:1], GOLDS[:1], candidate_ids=candidates)
    scores = _reference_logits(causal, tok(PROMPTS[0])["input_ids"])[-1]
    assert rank == 1 + sum(int(scores[c] > scores[gold_id]) for c in candidates)


def test_score_answers_match_reference(causal):
    answers = [" France and Germany", " Warsaw", " Spanish .", " the capital of Italy", " Paris"]
    got = ModelRunner(causal, batch_size=2).score_answers(PROMPTS, answers)
    tok = causal.tokenizer
    for (total, per_token), prompt, answer in zip(got, PROMPTS, answers):
        ctx = tok(prompt)["input_ids"]
        whole = tok(prompt + answer)["input_ids"]
        log_probs = _reference_logits(causal, whole).log_softmax(-1)
        ref = [float(log_probs[pos - 1, whole[pos]]) for pos in range(len(ctx), len(whole))]
        assert per_token == pytest.approx(ref, abs=1e-4)
        assert total == pytest.approx(sum(ref), abs=1e-4)


def test_greedy_matches_transformers_generate(causal):
    got = ModelRunner(causal, batch_size=4).generate(PROMPTS, max_new_tokens=8)
    tok = causal.tokenizer
    for text, prompt in zip(got, PROMPTS):
        ids = torch.tensor([tok(prompt)["input_ids"]], device=TEST_DEVICE)
        with torch.no_grad():
            out = causal.model.generate(ids, max_new_tokens=8, do_sample=False, pad_token_id=tok.pad_token_id)
        assert text == tok.decode(out[0, ids.shape[1]:], skip_special_tokens=True)


def test_generate_and_rank_equals_the_two_methods_in_one_pass(causal):
    with count_forwards(causal) as shapes:
        both = ModelRunner(causal).generate_and_rank(PROMPTS, GOLDS, max_new_tokens=5, stop=["\n"])
    assert sum(1 for s in shapes if s[1] > 1) == 1  # a single prefill serves generation and ranking
    separate = ModelRunner(causal, batch_size=2)
    texts = separate.generate(PROMPTS, max_new_tokens=5, stop=["\n"])
    ranks = separate.rank_first_token(PROMPTS, GOLDS)
    assert [t for t, _, _ in both] == texts
    assert [r for _, r, _ in both] == [r for r, _ in ranks]
    for (_, _, lp), (_, ref) in zip(both, ranks):
        assert lp == pytest.approx(ref, abs=1e-4)


def test_stop_strings_cut_each_row(causal):
    runner = ModelRunner(causal)
    free = runner.generate(PROMPTS, max_new_tokens=10)
    stop = free[0][len(free[0]) // 2:][:2]  # a piece of row 0's own output
    assert stop.strip()
    stopped = runner.generate(PROMPTS, max_new_tokens=10, stop=[stop])
    for full, cut in zip(free, stopped):
        assert stop not in cut
        assert cut == (full[:full.find(stop)] if stop in full else full)
    assert len(stopped[0]) < len(free[0])


def test_sampling_reproducible_with_one_prefill_per_prompt(causal):
    runner = ModelRunner(causal, batch_size=8)
    with count_forwards(causal) as shapes:
        first = runner.sample(PROMPTS[:3], k=4, temperature=1.0, seed=42, max_new_tokens=5)
    prompt_tokens = sum(len(causal.tokenizer(p)["input_ids"]) for p in PROMPTS[:3])
    assert shapes[0][2] == prompt_tokens  # one prefill holding each prompt once, not once per sample
    # then at most one row per sample (samples that drew the same tokens share one); finished rows leave
    assert all(shape[1] == 1 and shape[0] <= 12 for shape in shapes[1:])
    assert len(first) == 3 and all(len(row) == 4 for row in first)
    again = ModelRunner(causal, batch_size=1).sample(PROMPTS[:3], k=4, temperature=1.0, seed=42, max_new_tokens=5)
    assert again == first
    alone = runner.sample(PROMPTS[1:2], k=6, temperature=1.0, seed=42, max_new_tokens=5)
    assert alone[0][:4] == first[1]  # per-sample generators: independent of the batch and of k
    other = runner.sample(PROMPTS[:3], k=4, temperature=1.0, seed=0, max_new_tokens=5)
    assert other != first


def test_samples_that_agree_share_one_batch_row(causal):
    """Near-zero temperature: every sample is the greedy answer, so each prompt decodes a single
    row however many samples it has, and the samples equal greedy decoding."""
    runner = ModelRunner(causal, batch_size=8)
    greedy = runner.generate(PROMPTS[:3], max_new_tokens=6)
    with count_forwards(causal) as shapes:
        samples = runner.sample(PROMPTS[:3], k=5, temperature=1e-4, seed=1, max_new_tokens=6)
    assert samples == [[text] * 5 for text in greedy]
    assert all(rows <= 3 for rows, _, _ in shapes)
    # Sharing changes no result: each prompt sampled on its own, one sample per call, agrees.
    mixed = runner.sample(PROMPTS[:3], k=4, temperature=1.5, seed=3, max_new_tokens=6)
    alone = [ModelRunner(causal, batch_size=1).sample([p], k=1, temperature=1.5, seed=3, max_new_tokens=6)[0][0]
             for p in PROMPTS[:3]]
    assert [row[0] for row in mixed] == alone


def test_sample_tokens_draws_exactly_the_tempered_distribution():
    import torch

    from kbench.models.decoding import sample_tokens

    probs = torch.tensor([0.5, 0.0, 0.3, 0.2])
    grid = (torch.arange(1000) + 0.5) / 1000        # evenly spread uniforms: counts are exact
    tokens = sample_tokens(probs.log().expand(1000, 4), 1.0, grid)
    assert torch.bincount(tokens, minlength=4).tolist() == [500, 0, 300, 200]
    # temperature 0.5 squares the probabilities before normalising: [25, 0, 9, 4] / 38
    tokens = sample_tokens(probs.log().expand(3800, 4), 0.5, (torch.arange(3800) + 0.5) / 3800)
    assert torch.bincount(tokens, minlength=4).tolist() == [2500, 0, 900, 400]
    assert sample_tokens(probs.log()[None], 1.0, torch.tensor([0.9999999])).item() == 3   # never past the end
    # The two-level float32 search inverts the exact (float64) distribution over the whole
    # vocabulary: the drawn token's cumulative interval holds the target, up to float32 rounding.
    generator = torch.Generator().manual_seed(0)
    for vocab in (1000, 49152, 50257):   # one block, whole blocks, a padded last block
        scores = torch.randn(64, vocab, generator=generator) * 3
        scores[:, 1] = float("-inf")
        uniforms = torch.rand(64, generator=generator)
        cdf = (scores.double() / 0.7).softmax(-1).cumsum(-1)
        targets = uniforms.double() * cdf[:, -1]
        got = sample_tokens(scores, 0.7, uniforms)
        below = torch.where(got > 0, cdf.gather(1, (got - 1).clamp(min=0)[:, None])[:, 0], 0.0)
        assert ((below - 1e-6 <= targets) & (targets <= cdf.gather(1, got[:, None])[:, 0] + 1e-6)).all()
        assert not (got == 1).any()   # a zero-probability token is never drawn
        direct = torch.searchsorted(cdf, targets[:, None], right=True)[:, 0]
        assert (got == direct).sum() >= 63   # boundary cases within rounding are rare


def test_masked_lm_ranks_at_the_mask(masked):
    prompts = ["Paris is the [MASK] of France .", "Marie Curie was born in [MASK] .", "[MASK] is a company from Japan ."]
    golds = ["capital", "Warsaw", "Toyota"]
    got = ModelRunner(masked, batch_size=2).rank_first_token(prompts, golds)
    tok = masked.tokenizer
    for (rank, logprob), prompt, gold in zip(got, prompts, golds):
        ids = tok(prompt)["input_ids"]
        scores = _reference_logits(masked, ids)[ids.index(tok.mask_token_id)]
        gold_id = tok(gold, add_special_tokens=False)["input_ids"][0]
        assert rank == int((scores > scores[gold_id]).sum()) + 1
        assert logprob == pytest.approx(float(scores.log_softmax(-1)[gold_id]), abs=1e-4)
    with pytest.raises(Exception, match="causal"):
        ModelRunner(masked).generate(prompts)


def test_preallocated_cache_layer_appends_in_place_and_grows_past_its_capacity():
    import torch

    from kbench.models.kv_cache import PreallocatedLayer

    layer = PreallocatedLayer(capacity=3)
    steps = [torch.randn(2, 1, n, 4) for n in (2, 1, 2)]   # the third update needs more room than 3
    for k in steps:
        keys, values = layer.update(k, -k)
    assert torch.equal(keys, torch.cat(steps, dim=-2)) and torch.equal(values, -keys)
    assert layer.get_seq_length() == 5
    layer.batch_select_indices(torch.tensor([1]))
    assert torch.equal(layer.keys, torch.cat(steps, dim=-2)[1:])


def test_cache_rows_split_move_and_grow_in_place():
    """take_rows(sources): row j becomes old row sources[j], whatever the mapping (splits,
    dropped rows, growth past the row room); later updates append to every row."""
    import torch

    from kbench.models.kv_cache import PreallocatedLayer

    layer = PreallocatedLayer(capacity=6)
    first = torch.randn(3, 2, 4, 5)
    layer.update(first, first + 1)
    sources = [2, 0, 0, 1, 2]                    # row 1 is copied twice, rows grow from 3 to 5
    layer.take_rows(sources, row_limit=8)
    assert layer._keys.shape[0] == 8 and torch.equal(layer.keys, first[sources])
    step = torch.randn(5, 2, 1, 5)
    keys, values = layer.update(step, step)
    assert torch.equal(keys, torch.cat([first[sources], step], dim=-2))
    assert torch.equal(values[:, :, :4], first[sources] + 1)
    layer.take_rows([4, 1])                      # two rows survive, in a new order
    assert torch.equal(layer.keys, torch.cat([first[sources], step], dim=-2)[[4, 1]])


def test_next_rows_keep_each_parents_first_branch_in_place():
    from kbench.models.decoding import _next_rows

    # parents 0 and 2 continue, parent 1 finished, parent 2 split in two
    sources, tokens, slot_of = _next_rows([(0, 7), (2, 5), (2, 9)])
    assert slot_of == [0, 2, 1] and sources == [0, 2, 2] and tokens == [7, 9, 5]


def test_prefill_in_several_packed_chunks_decodes_as_one(causal, monkeypatch):
    """Prompts prefilled in separate packed chunks share one left-padded KV cache: the greedy
    answers and first-token ranks are those of each prompt run alone."""
    monkeypatch.setattr(batching_module, "CPU_PACKED_TOKENS", 12)  # a few prompts per chunk
    runner = ModelRunner(causal)
    with count_forwards(causal) as shapes:
        both = runner.generate_and_rank(PROMPTS, GOLDS, max_new_tokens=6)
    assert sum(1 for s in shapes if s[1] > 1) >= 3 and max(s[2] for s in shapes if s[1] > 1) <= 12
    tok = causal.tokenizer
    for (text, rank, logprob), prompt, gold in zip(both, PROMPTS, GOLDS):
        ids = torch.tensor([tok(prompt)["input_ids"]], device=TEST_DEVICE)
        with torch.no_grad():
            out = causal.model.generate(ids, max_new_tokens=6, do_sample=False, pad_token_id=tok.pad_token_id)
        assert text == tok.decode(out[0, ids.shape[1]:], skip_special_tokens=True)
        assert (rank, logprob) == pytest.approx(_reference_rank(causal, prompt, gold), abs=1e-4)
    with count_forwards(causal) as shapes:  # packed ranking cuts its batches by the same token budget
        ranks = ModelRunner(causal).rank_first_token(PROMPTS, GOLDS)
    assert len(shapes) >= 3 and max(tokens for _, _, tokens in shapes) <= 12
    for (rank, logprob), (_, both_rank, both_logprob) in zip(ranks, both):
        assert rank == both_rank and logprob == pytest.approx(both_logprob, abs=1e-4)


def test_models_that_mix_packed_prompts_are_run_padded(tiny_causal_dir):
    """A model that drops the attention mask and position ids lets packed prompts see each
    other: the packing check catches it and the runner pads instead."""
    from transformers import LlamaForCausalLM

    class PackingBlind(LlamaForCausalLM):
        def forward(self, input_ids=None, attention_mask=None, position_ids=None, **kwargs):
            return super().forward(input_ids=input_ids, **kwargs)

    good = ModelRunner(load_model(str(tiny_causal_dir)))
    assert good.packs(None)
    hooked = Intervention("hooked", edits=(Steering(0, torch.zeros(good.layout().hidden_size)),))
    assert not good.packs(good._checked(hooked))
    blind = load_model(str(tiny_causal_dir))
    blind.model.__class__ = PackingBlind
    runner = ModelRunner(blind, batch_size=1)
    assert not runner.packs(None)
    for (rank, logprob), prompt, gold in zip(runner.rank_first_token(PROMPTS, GOLDS), PROMPTS, GOLDS):
        assert (rank, logprob) == pytest.approx(_reference_rank(blind, prompt, gold), abs=1e-4)


def test_empty_answer_is_named_in_the_error(causal):
    from kbench.errors import UserError

    with pytest.raises(UserError, match="answer 1 is empty"):
        ModelRunner(causal).score_answers(PROMPTS[:2], [" France", ""])
