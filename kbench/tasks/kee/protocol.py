"""The protocol block of a KEE run: where this run departs from MAPLE, and where MAPLE is silent and
kbench chose (`kbench.protocol`).

Deviations come from the settings the run used, the model's prompt form and the data it found,
plus each technique's own (`Technique.deviations`, from its parameters and what it fitted). Ids
are stable slugs. MAPLE's defaults give none for the baseline, the temperature baselines,
GenRead, CAA, ITI and Activation Decoding (a chat model, TruthfulQA in the data root, no train
split); RECITE and DeCoRe always give one each at their defaults, since kbench cannot run them as
MAPLE's text says: `recite-sampled-recitations` (MAPLE's 20 runs are greedy, so kbench samples
the recitations) and `decore-synthetic-retrieval-heads` (retrieval heads from a synthetic copy
task, not Wu et al.'s needle-in-a-haystack detection). MAPLE's values, as its text gives them:
K = 20 seed-A samples, a K sweep of 1..30, tau = 0.7 and 1.2, plain temperature sampling,
K new seed-B samples for the temperature baselines' SGR / DGR, CAA fitted in two folds of its
3,254-fact pool, instruction-tuned models.

Interpretations (`kee_interpretations`) are kbench's readings where MAPLE is silent: when K seed-B
samples recover an item (`sgr-recovery-rule`), the case of its matching (`matching-case`), how
a vote groups answers (`vote-grouping`) and which token PRS ranks (`prs-gold-token`). They never
make a run unfaithful; each names the readings kbench did not take.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kbench.evaluate.departures import maple_case, maple_question_form
from kbench.protocol import REFERENCES, Deviation, Interpretation, ProtocolRecord, departures
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
) -> ProtocolRecord:
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
    out += departures(
        ("partition-k", s.k, MAPLE_K, f"K = {MAPLE_K} seed-A samples split base failures into shallow and deep",
         f"K = {s.k}", "SGR, DGR (every technique), the shallow/deep sizes"),
        ("sweep-max", s.sweep_max, MAPLE_SWEEP, f"the ranking's stability is checked at K = 1..{MAPLE_SWEEP}",
         f"K = 1..{s.sweep_max}", "ranking_stability"),
        ("partition-temperatures", sorted(s.temperatures), sorted(MAPLE_TEMPERATURES),
         "the shallow/deep partition at tau = 0.7 and at tau = 1.2", "tau = " + ", ".join(map(str, s.temperatures)),
         "SGR, DGR, ranking_stability"),
    )  # fmt: skip
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
        out.append(maple_question_form("--prompt question" if s.prompt == "question" else "the model has none", "every number"))
    out += _pool_deviations(techniques, pool, fitted)
    for name in techniques:
        out += technique_deviations[name]
    return ProtocolRecord(NAME, REFERENCES["maple"], tuple(out), kee_interpretations(s, sampling, technique_params))


def kee_interpretations(s, sampling: Sequence[str], technique_params: Mapping[str, dict]) -> tuple[Interpretation, ...]:
    """kbench's readings where MAPLE is silent, for the techniques this run has."""
    out = []
    if sampling and s.sgr_recovery == "seed-b":
        out.append(
            Interpretation(
                "sgr-recovery-rule",
                paper="for tau_0.7 and tau_1.2, K new samples are drawn with seed B = 0 and S_m is 'the set of instances "
                "recovered by method m'; when K samples recover an instance is not said",
                kbench="recovered when any of the first K seed-B samples is correct",
                alternatives=(
                    "majority of K: more than half of the first K seed-B samples correct",
                    "one sample: the first seed-B sample correct",
                ),
                effect=f"SGR, DGR and their K-sweep ranking of {', '.join(sampling)}: under any of K a temperature "
                "method's expected SGR is at least the shallow share of its own partition (the same sampler found the "
                "shallow failures with K seed-A samples), which moves MAPLE-21, 22 and 24; SGR / DGR under each reading "
                "are in beyond_sampling.*.readings",
            )
        )
    out.append(maple_case(s.case_sensitive, "every correctness: Acc, Gain, Loss, SGR, DGR, the shallow/deep partition"))
    voting = [*sampling, *(["recite"] if "recite" in technique_params and technique_params["recite"]["runs"] > 1 else [])]
    if voting:
        out.append(
            Interpretation(
                "vote-grouping",
                paper="the final answer is the majority vote over the samples (RECITE: over its runs); how answers are "
                "grouped and ties broken is not said",
                kbench="answers vote together when equal after MAPLE's normalisation; a tie goes to the answer drawn first",
                alternatives=("answers vote as exact strings", "a tie broken at random"),
                effect=f"{', '.join(voting)}: Acc, Gain, Loss",
            )
        )
    if any(n != "baseline" and n not in sampling for n in s.techniques):
        out.append(
            Interpretation(
                "prs-gold-token",
                paper="PRS compares the rank of 'the gold token' under the baseline and the technique",
                kbench="the full-vocabulary rank of the first token of the gold label (not its aliases) as the answer's "
                "continuation",
                alternatives=("the best rank over the gold label and its aliases", "the rank of every gold token, averaged"),
                effect="PRS (improved / tied / worsened) of every technique",
            )
        )
    return tuple(out)


def _truncated_draws(s, sampling: Sequence[str], technique_params: Mapping[str, dict]) -> list[str]:
    """One phrase per draw that truncates the distribution: the partition's, each baseline's."""

    def scheme(top_k, top_p) -> str | None:
        parts = ([f"top-k {top_k}"] if top_k is not None else []) + ([f"top-p {top_p}"] if top_p < 1.0 else [])
        return " and ".join(parts) or None

    draws = [("the partition's seed-A samples", scheme(s.top_k, s.top_p))]
    draws += [(name, scheme(technique_params[name]["top_k"], technique_params[name]["top_p"])) for name in sampling]
    return [f"{how} on {what}" for what, how in draws if how]


def _pool_deviations(techniques: Sequence[str], pool: tuple[str, int, int] | None, fitted) -> list[Deviation]:
    """Where CAA (and ITI with benchmark probes) fit on other facts than MAPLE's: two folds of fewer
    evaluated items than its pool (the fold sizes are in the fit records), or a split of the dataset."""
    users = [n for n in ("caa", "iti") if n in techniques and (n == "caa" or _benchmark_probes(fitted.get(n, ())))]
    if not users:
        return []
    touched = ", ".join(users) + ": every number"
    maple = f"CAA fits in two folds of MAPLE's {MAPLE_POOL}-fact pool (every fact before corpus filtering), each fact "
    if pool is None:
        folds = next(([r["pool"] for r in fitted[n] if "pool" in r] for n in users if fitted.get(n)), [])
        if not folds or sum(folds) == MAPLE_POOL:
            return []
        return [
            Deviation(
                "fit-pool-folds",
                paper=maple + "answered with the other fold's vector and layer",
                kbench=f"no train or dev split: two folds of the {sum(folds)} evaluated items themselves "
                f"({' and '.join(map(str, folds))} facts), each answered with the other fold's vector and layer",
                effect=touched + " (fewer contrast pairs: a noisier vector and layer choice)",
            )
        ]
    split, available, used = pool
    out = [
        Deviation(
            "fit-pool-split",
            paper=maple + "answered with the other fold's vector and layer",
            kbench=f"{', '.join(users)} fitted once on the dataset's {split} split and applied to every evaluated item",
            effect=touched,
        )
    ]
    if used != MAPLE_POOL:
        why = "--fit-pool-limit" if used < available else "the whole split, smaller than MAPLE's pool"
        out.append(
            Deviation(
                "fit-pool-limit",
                paper=f"the fitting pool holds {MAPLE_POOL} facts",
                kbench=f"{used} of the {split} split's {available} items ({why})",
                effect=touched,
            )
        )
    return out


def _benchmark_probes(records: Sequence[dict]) -> bool:
    return any(r.get("probe_source") != "truthfulqa" for r in records)
