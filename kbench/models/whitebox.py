"""The Hugging Face backend's white-box methods (`WhiteBoxModel`): layout, activations, attention.

Mixed into `ModelRunner`, so they share its tokenisation and its batching: `activations` cuts
the texts into the runner's batches (longest first, a token budget per pass, halved on
out-of-memory) and reads them from packed rows (several texts per row, no padding:
`kbench.models.packing`) where the network packs, else from left-padded rows. The capture
hooks gather only the texts' last positions, so a pass never keeps a whole residual stream.
"""

from __future__ import annotations

from collections.abc import Sequence

from kbench.errors import UserError
from kbench.models import hooks
from kbench.models.interface import ACTIVATION_SITES, NetworkLayout
from kbench.models.packing import last_token_logits, pack
from kbench.models.padding import pad_left

_CAPTURE = {"residual": hooks.capture_residual, "heads": hooks.capture_head_inputs}


class WhiteBoxMethods:
    """Needs from its host: network, pad_id, device, encoder, torch, packs(), _computed()."""

    def layout(self) -> NetworkLayout:
        return hooks.head_layout(self.network)

    def activations(self, texts: Sequence[str], site: str, layers: Sequence[int]):
        """[texts, len(layers), ...] float32 activations at each text's last token (see `WhiteBoxModel`)."""
        if site not in ACTIVATION_SITES:
            raise UserError(f"unknown activation site {site!r}; choose one of {', '.join(ACTIVATION_SITES)}")
        layers = list(layers)
        encoded = self.encoder.encode(texts)
        packed = self.packs(None)

        def compute(batch: list[int]) -> list:
            seqs = [encoded[i] for i in batch]
            if packed:
                packed_rows = pack(self.network, seqs, self.pad_id, self.device)
                at = (
                    self.torch.tensor([row for row, _, _ in packed_rows.spans], device=self.device),
                    self.torch.tensor([start + n - 1 for _, start, n in packed_rows.spans], device=self.device),
                )
                with _CAPTURE[site](self.network, layers, at=at) as seen:
                    last_token_logits(self.network, packed_rows)
            else:
                input_ids, mask, positions = pad_left(seqs, self.pad_id, self.device)
                at = (
                    self.torch.arange(len(seqs), device=self.device),
                    self.torch.full((len(seqs),), input_ids.shape[1] - 1, device=self.device),
                )
                with _CAPTURE[site](self.network, layers, at=at) as seen:
                    self.forward(input_ids, mask, positions)
            stacked = self.torch.stack([seen[layer] for layer in layers], 1).float().cpu()  # (batch, layers, ...)
            return list(stacked)

        values = self._computed(list(texts), [len(e) for e in encoded], compute, packed=packed)
        return self.torch.stack(values) if values else self.torch.zeros((0, len(layers)))

    def strongest_attention(self, sequences: Sequence[Sequence[int]], queries: Sequence[int]):
        """[sequences, layers, heads, queries] argmax source position of each head's attention
        from each query; each sequence runs alone with eager attention (the only kind that
        returns its weights)."""
        torch, network = self.torch, self.network
        queries = torch.tensor(list(queries))
        out = []
        previous = network.config._attn_implementation
        network.set_attn_implementation("eager")
        try:
            with torch.inference_mode():
                for sequence in sequences:
                    ids = torch.tensor([list(sequence)], device=self.device)
                    attentions = network(input_ids=ids, output_attentions=True, use_cache=False).attentions
                    # per layer (1, heads, seq, seq) -> (heads, queries) argmax over sources
                    out.append(torch.stack([a[0][:, queries].argmax(-1).cpu() for a in attentions]))
        finally:
            network.set_attn_implementation(previous)
        return torch.stack(out) if out else torch.zeros((0, 0, 0, len(queries)), dtype=torch.long)
