"""Tiny randomly initialised models with local tokenizers, for fast tests that need no hub.

`tiny_causal_dir` / `tiny_masked_dir` build (once per session, ~1 s) a 4-layer Llama and a
2-layer BERT with tokenizers trained on a short inline corpus, and save them with
`save_pretrained`, so tests load them exactly as users load a model folder
(`load_model(str(path))`, `kbench evaluate ... --model PATH`). Weights are seeded, so every
session builds the same models.

tests/conftest.py registers this module as a plugin, so every test can ask for the fixtures by name,
without importing them. `tiny_causal` is the tiny Llama loaded once per module; `cached_model(loaded,
cache_file)` wraps a loaded model as a task sees it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

#: where the model-interface tests load the tiny models: "cpu" here; bench/gpu_check.sh sets "cuda"
TEST_DEVICE = os.environ.get("KBENCH_TEST_DEVICE", "cpu")

CORPUS = [
    "Paris is the capital of France . Berlin is the capital of Germany .",
    "Rome is the capital of Italy . Madrid is the capital of Spain .",
    "Marie Curie was born in Warsaw . Albert Einstein was born in Ulm .",
    "The native language of Pablo Picasso is Spanish . Dante was born in Florence .",
    "Question : What is the capital of France ? Answer : Paris",
    "Toyota is a company from Japan . Nokia is a company from Finland .",
    "the a an of in is was born capital language company from Question Answer",
]


def _train_bpe(vocab_size: int = 400):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<|endoftext|>", "<|pad|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS * 4, trainer)
    return tok


def _train_wordpiece(vocab_size: int = 300):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok.train_from_iterator(CORPUS * 4, trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=specials))
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    from tokenizers import decoders

    tok.decoder = decoders.WordPiece()
    return tok


def _save_seeded(model_class, config, tokenizer, folder: Path, seed: int = 0) -> Path:
    """`model_class(config)` with weights drawn after `torch.manual_seed(seed)` (the same models every session),
    saved with its tokenizer as a user's model folder."""
    import torch

    torch.manual_seed(seed)
    model_class(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def build_tiny_causal(folder: Path, seed: int = 0, layers: int = 4) -> Path:
    """`seed` draws other weights and `layers` gives another size (second models, for tests that compare models)."""
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast(tokenizer_object=_train_bpe(), eos_token="<|endoftext|>", pad_token="<|pad|>")
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
                         num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=256,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                         bos_token_id=None, tie_word_embeddings=False)
    return _save_seeded(LlamaForCausalLM, config, tokenizer, folder, seed)


def build_tiny_masked(folder: Path) -> Path:
    from transformers import BertConfig, BertForMaskedLM, PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast(tokenizer_object=_train_wordpiece(), unk_token="[UNK]", pad_token="[PAD]",
                                        cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                        num_attention_heads=2, max_position_embeddings=128, pad_token_id=tokenizer.pad_token_id)
    return _save_seeded(BertForMaskedLM, config, tokenizer, folder)


@pytest.fixture(scope="session")
def tiny_causal_dir(tmp_path_factory) -> Path:
    return build_tiny_causal(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="session")
def tiny_masked_dir(tmp_path_factory) -> Path:
    return build_tiny_masked(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture(scope="module")
def tiny_causal(tiny_causal_dir):
    """The tiny Llama loaded as a user's model folder is (`load_model`), once per test module, on TEST_DEVICE."""
    from kbench.models.loading import load_model

    return load_model(str(tiny_causal_dir), device=TEST_DEVICE)


def cached_model(loaded, cache_file: Path | None = None, **runner_options):
    """The model as a task's context holds it: the Hugging Face backend over `loaded` (`ModelRunner`
    options: batch_size, ...) inside the result cache at `cache_file` (None: no cache)."""
    from kbench.models.cached import CachedModel
    from kbench.models.result_cache import ResultCache
    from kbench.models.runner import ModelRunner

    return CachedModel(ModelRunner(loaded, **runner_options), ResultCache(cache_file) if cache_file else None)


def build_tiny_roberta(folder: Path) -> Path:
    """A RoBERTa-shaped masked LM with a byte-level BPE tokenizer: a word after a space is its own
    token with the space marker ("ĠParis"), and the mask absorbs the space before it (lstrip)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast, RobertaConfig, RobertaForMaskedLM

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    trainer = trainers.BpeTrainer(vocab_size=500, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS * 4, trainer)
    tok.post_processor = processors.RobertaProcessing(("</s>", tok.token_to_id("</s>")), ("<s>", tok.token_to_id("<s>")))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", sep_token="</s>",
                                        cls_token="<s>", unk_token="<unk>", pad_token="<pad>",
                                        mask_token=AddedToken("<mask>", lstrip=True, rstrip=False))
    config = RobertaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                           num_attention_heads=2, max_position_embeddings=130, pad_token_id=tokenizer.pad_token_id,
                           bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    return _save_seeded(RobertaForMaskedLM, config, tokenizer, folder)


@pytest.fixture(scope="session")
def tiny_roberta_dir(tmp_path_factory) -> Path:
    return build_tiny_roberta(tmp_path_factory.mktemp("tiny-roberta"))


#: The one sentence `tiny_rebel` knows, and the REBEL string it was trained to emit for it.
REBEL_SENTENCE = "Trinity Peninsula is part of Graham Land in Antarctica ."
REBEL_TARGET = "<triplet> Trinity Peninsula <subj> Graham Land <obj> part of <subj> Antarctica <obj> continent"


@pytest.fixture(scope="module")
def tiny_rebel(tmp_path_factory):
    """A tiny BART with REBEL's special tokens, trained for a few steps to emit REBEL_TARGET for REBEL_SENTENCE."""
    torch = pytest.importorskip("torch")
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import BartConfig, BartForConditionalGeneration, PreTrainedTokenizerFast

    special = ["<pad>", "<s>", "</s>", "<unk>", "<triplet>", "<subj>", "<obj>"]
    words = sorted((set(REBEL_SENTENCE.split()) | set(REBEL_TARGET.split()) | {"It", "is", "cold"}) - set(special))
    vocab = {t: i for i, t in enumerate(special + words)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.post_processor = processors.TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 1), ("</s>", 2)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>",
                                        unk_token="<unk>", additional_special_tokens=["<triplet>", "<subj>", "<obj>"])
    config = BartConfig(vocab_size=len(vocab), d_model=16, encoder_layers=1, decoder_layers=1,
                        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32,
                        max_position_embeddings=48, pad_token_id=0, bos_token_id=1, eos_token_id=2,
                        decoder_start_token_id=2)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = BartForConditionalGeneration(config)
    x, y = tokenizer([REBEL_SENTENCE], return_tensors="pt"), tokenizer([REBEL_TARGET], return_tensors="pt").input_ids
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-2)
    for _ in range(60):
        model(**x, labels=y).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    torch.set_num_threads(threads)
    folder = tmp_path_factory.mktemp("tiny-rebel")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
