"""The protocol block of a KEE run: where this run departs from MAPLE (`kbench.protocol`).

Entries come from the settings the run used, the model's prompt form and the data it found,
plus each technique's own (`Technique.deviations`, from its parameters and what it fitted). Ids
are stable slugs; MAPLE's defaults give none (every technique at its MAPLE setting, a chat model,
TruthfulQA in the data root, no train split). MAPLE's values, as its text gives them:
K = 20 seed-A samples, a K sweep of 1..30, tau = 0.7 and 1.2, plain temperature sampling,
K new seed-B samples for the temperature baselines' SGR / DGR, CAA fitted in two folds of its
3,254-fact pool, instruction-tuned models.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kbench.protocol import REFERENCES, Deviation, Protocol
from kbench.tasks.kee.techniques import TECHNIQUES

NAME = "maple-kee"
MAPLE_K, MAPLE_SWEEP, MAPLE_TEMPERATURES, MAPLE_POOL = 20, 30, (0.7, 1.2), 3254


def kee_protocol(
    settings,
    chat: bool,
    pool: tuple[str, int, int] | None,
    technique_params: Mapping[str, dict],
    technique_deviations: Mapping[str, Sequence[Deviation]],
    fitted: Mapping[str, Sequence[dict]],
) -> Protocol:
    """The run's block. `pool`: (split, items in it, items fitted on) when CAA / ITI fit on a
    train or dev split (None: two folds of the evaluated items)."""
    s = settings
    techniques = list(s.techniques)
    sampling = [n for n in techniques if TECHNIQUES.get(n)[0].family == "sampling"]
    out: list[Deviation] = []
    if s.sgr_recovery == "majority-vote" and sampling:
        out.append(
            Deviation(
                "sgr-majority-vote",
                paper="for tau_0.7 and tau_1.2, K new samples are drawn with seed B = 0 for SGR / DGR at each K (when they "
                "recover an item is not said: an interpretation, sgr-recovery-rule)",
                kbench="no new samples: an item counts as recovered when the 10-sample majority vote is correct, the same "
                "at every K (--sgr-recovery majority-vote)",
                effect=f"SGR, DGR and their K-sweep ranking of {', '.join(sampling)}",
            )
        )
    if s.k != MAPLE_K:
        out.append(
            Deviation(
                "partition-k",
                paper=f"K = {MAPLE_K} seed-A samples split base failures into shallow and deep",
                kbench=f"K = {s.k}",
                effect="SGR, DGR (every technique), the shallow/deep sizes",
            )
        )
    if s.sweep_max != MAPLE_SWEEP:
        out.append(
            Deviation(
                "sweep-max",
                paper=f"the ranking's stability is checked at K = 1..{MAPLE_SWEEP}",
                kbench=f"K = 1..{s.sweep_max}",
                effect="ranking_stability",
            )
        )
    if sorted(s.temperatures) != sorted(MAPLE_TEMPERATURES):
        out.append(
            Deviation(
                "partition-temperatures",
                paper="the shallow/deep partition at tau = 0.7 and at tau = 1.2",
                kbench="tau = " + ", ".join(map(str, s.temperatures)),
                effect="SGR, DGR, ranking_stability",
            )
        )
    truncated = _truncated_draws(s, sampling, technique_params)
    if truncated:
        out.append(
            Deviation(
                "sampling-truncation",
                paper="plain temperature sampling (no top-k or top-p truncation is named)",
                kbench="; ".join(truncated),
                effect="SGR, DGR (the partition), " + ", ".join(sampling) if sampling else "SGR, DGR (the partition)",
            )
        )
    if not chat:
        out.append(
            Deviation(
                "prompt-question-form",
                paper="instruction-tuned models (OLMo2, Qwen2.5, Llama3 -Instruct) answer MAPLE's prompts",
                kbench="plain-text prompts ending in a cue ('Answer:'), no chat template"
                + (" (--prompt question)" if s.prompt == "question" else " (the model has none)"),
                effect="every number",
            )
        )
    out += _pool_deviations(techniques, pool, fitted)
    for name in techniques:
        out += technique_deviations[name]
    return Protocol(NAME, REFERENCES["maple"], tuple(out))


def _truncated_draws(s, sampling: Sequence[str], technique_params: Mapping[str, dict]) -> list[str]:
    """One phrase per draw that truncates the distribution: the partition's, each baseline's."""

    def scheme(top_k, top_p) -> str | None:
        parts = ([f"top-k {top_k}"] if top_k is not None else []) + ([f"top-p {top_p}"] if top_p < 1.0 else [])
        return " and ".join(parts) or None

    draws = [("the partition's seed-A samples", scheme(s.top_k, s.top_p))]
    draws += [(name, scheme(technique_params[name]["top_k"], technique_params[name]["top_p"])) for name in sampling]
    return [f"{how} on {what}" for what, how in draws if how]


def _pool_deviations(techniques: Sequence[str], pool: tuple[str, int, int] | None, fitted) -> list[Deviation]:
    """CAA (and ITI with benchmark probes) fit on a split of the dataset instead of two folds."""
    users = [n for n in ("caa", "iti") if n in techniques and (n == "caa" or _benchmark_probes(fitted.get(n, ())))]
    if pool is None or not users:
        return []
    split, available, used = pool
    out = [
        Deviation(
            "fit-pool-split",
            paper=f"CAA fits in two folds of MAPLE's {MAPLE_POOL}-fact pool, each fact answered with the other fold's "
            "vector and layer",
            kbench=f"{', '.join(users)} fitted once on the dataset's {split} split and applied to every evaluated item",
            effect=", ".join(users) + ": every number",
        )
    ]
    if used < available and used != MAPLE_POOL:
        out.append(
            Deviation(
                "fit-pool-limit",
                paper=f"the fitting pool holds {MAPLE_POOL} facts",
                kbench=f"{used} of the {split} split's {available} items (--fit-pool-limit)",
                effect=", ".join(users) + ": every number",
            )
        )
    return out


def _benchmark_probes(records: Sequence[dict]) -> bool:
    return any(r.get("probe_source") != "truthfulqa" for r in records)
