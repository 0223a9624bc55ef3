"""Forward hooks for interventions on an unmodified transformers decoder model.

Every helper is a context manager: hooks are registered on entry and removed on exit (also on
error), so the model computes exactly what it computed before once the block ends.

    with add_to_residual(model, layer=5, vector=v, multiplier=1.0):    # CAA
        logits = model(**batch).logits
    with shift_heads(model, {12: shifts}):                              # ITI, shifts: (heads, head_dim)
        ...
    with mask_heads(model, {3: [0, 5]}):                                # DeCoRe's masked model
        ...
    with capture_residual(model, [5, 6]) as seen:                       # activation reading, probes
        model(**batch); seen[5]  # (batch, seq, hidden)
    with capture_head_inputs(model, [12], at=(rows, cols)) as seen:     # per-head outputs, at chosen positions
        model(**batch); seen[12] # (positions, heads, head_dim)
    with strongest_sources(model, cols) as seen:                        # DeCoRe: where each head looks (eager)
        model(**batch); seen[0]  # (batch, heads, queries) source columns of block 0

Layout contract: the model exposes its decoder blocks as `model.model.layers` (Llama, Mistral,
Qwen2, Gemma, OLMo, SmolLM) and each block an attention module `self_attn` whose output
projection `o_proj` reads the concatenated per-head outputs (heads × head_dim). Head
interventions act on the input of `o_proj`, which is the per-head attention output before the
heads are mixed; that is where ITI and head masking act in their reference code.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence

from kbench.errors import UserError
from kbench.models.interface import NetworkLayout


def decoder_layers(model):
    """The list of decoder blocks, or a UserError naming the unsupported architecture."""
    inner = getattr(model, "model", None)
    layers = getattr(inner, "layers", None)
    if layers is None or len(layers) == 0 or not hasattr(layers[0], "self_attn"):
        raise UserError(
            f"interventions need a decoder with model.layers[i].self_attn (Llama-style); {type(model).__name__} is not supported"
        )
    return layers


def head_layout(model) -> NetworkLayout:
    config = model.config
    num_heads = config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // num_heads
    return NetworkLayout(len(decoder_layers(model)), num_heads, head_dim, config.hidden_size, config.vocab_size)


def _layer(model, index: int):
    layers = decoder_layers(model)
    if not -len(layers) <= index < len(layers):
        raise UserError(f"layer {index} does not exist; the model has {len(layers)} layers")
    return layers[index]


def _output_projection(model, index: int):
    return _layer(model, index).self_attn.o_proj


@contextlib.contextmanager
def _registered(handles: list) -> Iterator[None]:
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def _hidden_of(output):
    """Decoder blocks return a tensor (transformers >= 5) or a tuple whose first item is it."""
    return output[0] if isinstance(output, tuple) else output


def _with_hidden(output, hidden):
    return (hidden, *output[1:]) if isinstance(output, tuple) else hidden


def _at_positions(base, delta, last_only: bool):
    """base + delta at every position, or at the last position only (delta broadcasts)."""
    if not last_only:
        return base + delta
    out = base.clone()
    out[:, -1] = out[:, -1] + delta
    return out


def add_to_residual(model, layer: int, vector, multiplier: float = 1.0, last_only: bool = False):
    """Add `multiplier * vector` to the residual stream leaving decoder block `layer`, at every
    position, or (`last_only`) at the last position of each forward pass: with a KV cache that
    is the prompt's last token, then each generated token, never the earlier prompt tokens."""

    def hook(_module, _inputs, output):
        hidden = _hidden_of(output)
        delta = (multiplier * vector).to(hidden.device, hidden.dtype)
        return _with_hidden(output, _at_positions(hidden, delta, last_only))

    return _registered([_layer(model, layer).register_forward_hook(hook)])


def _edit_heads(model, per_layer: Mapping[int, object], edit):
    layout = head_layout(model)
    handles = []
    for index, payload in per_layer.items():

        def pre_hook(_module, args, payload=payload):
            x = args[0]
            heads = x.view(*x.shape[:-1], layout.num_heads, layout.head_dim)
            return (edit(heads, payload).reshape(x.shape), *args[1:])

        handles.append(_output_projection(model, index).register_forward_pre_hook(pre_hook))
    return _registered(handles)


def shift_heads(model, shifts: Mapping[int, object], last_only: bool = False):
    """Add shifts[layer] (a (num_heads, head_dim) tensor, zero rows for untouched heads) to the
    per-head attention outputs at every position, or at the last one only (as `add_to_residual`)."""
    return _edit_heads(model, shifts, lambda heads, shift: _at_positions(heads, shift.to(heads.device, heads.dtype), last_only))


def mask_heads(model, heads_by_layer: Mapping[int, Sequence[int]]):
    """Zero the outputs of the listed heads (the heads then contribute nothing to o_proj)."""
    import torch

    layout = head_layout(model)

    def masks():
        for index, heads in heads_by_layer.items():
            keep = torch.ones(layout.num_heads, 1)
            keep[list(heads)] = 0.0
            yield index, keep

    return _edit_heads(model, dict(masks()), lambda h, keep: h * keep.to(h.device, h.dtype))


def _picked(x, at):
    """x (batch, seq, ...) at the positions `at` = (rows, cols), or all of x."""
    return x if at is None else x[at[0], at[1]]


@contextlib.contextmanager
def capture_residual(model, layers: Sequence[int], at=None) -> Iterator[dict]:
    """Record the residual stream leaving each listed block: seen[layer] = (batch, seq, hidden),
    or (positions, hidden) at `at` = (row indices, column indices) only, so the whole stream is
    never kept. The last forward pass wins; tensors are detached."""
    seen: dict[int, object] = {}
    handles = []
    for index in layers:

        def hook(_module, _inputs, output, index=index):
            seen[index] = _picked(_hidden_of(output).detach(), at)

        handles.append(_layer(model, index).register_forward_hook(hook))
    with _registered(handles):
        yield seen


@contextlib.contextmanager
def capture_head_inputs(model, layers: Sequence[int], at=None) -> Iterator[dict]:
    """Record the per-head attention outputs (the input of o_proj): seen[layer] =
    (batch, seq, num_heads, head_dim), or (positions, num_heads, head_dim) at `at` (as
    `capture_residual`). The last forward pass wins; tensors are detached."""
    layout = head_layout(model)
    seen: dict[int, object] = {}
    handles = []
    for index in layers:

        def pre_hook(_module, args, index=index):
            x = _picked(args[0].detach(), at)
            seen[index] = x.view(*x.shape[:-1], layout.num_heads, layout.head_dim)

        handles.append(_output_projection(model, index).register_forward_pre_hook(pre_hook))
    with _registered(handles):
        yield seen


@contextlib.contextmanager
def strongest_sources(model, cols) -> Iterator[list]:
    """Record, per decoder block in order, where each head attends most from the query columns
    `cols` ((rows, queries) column indices per row): a (rows, heads, queries) tensor of source
    columns. The weights are reduced inside each block's pass, so the whole stack of attention
    maps is never kept. Needs eager attention, the one kind whose blocks return their weights."""
    import torch

    seen: list = []

    def hook(_module, _inputs, output):
        weights = output[1]  # (rows, heads, seq, seq)
        if weights is None:
            raise UserError(f"{type(model).__name__} returned no attention weights; strongest attention needs eager attention")
        rows = torch.arange(weights.shape[0], device=weights.device)[:, None]
        seen.append(weights[rows, :, cols].argmax(-1).transpose(1, 2))  # (rows, queries, heads) -> (rows, heads, queries)

    handles = [layer.self_attn.register_forward_hook(hook) for layer in decoder_layers(model)]
    with _registered(handles):
        yield seen
