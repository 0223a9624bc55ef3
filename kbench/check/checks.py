"""The checks of `kbench check`, each a verdict (pass / warn / fail / skip) with its evidence.

Every check compares values the model gave with values it must give whatever it knows: the same
request again, the same items alone, in another order, the greedy answer against the model's own
log-probs. None of them needs the answers to be right. Thresholds (`Thresholds`, `--threshold
KEY=VALUE`) are kbench's choices, documented in docs/checks.md; no paper sets them."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from kbench.check.measure import Comparison, Pass, compare, ranks, run_pass
from kbench.check.probe import MAX_NEW_TOKENS, STOP, ProbeItem
from kbench.errors import UserError
from kbench.models.interface import Capability

SAMPLE_PROMPTS = 5  # prompts of the seeded-sampling check, two samples each
SAMPLE_TEMPERATURE = 2.0  # as the served probe's: a real sampler leaves the greedy text almost surely
SAMPLE_SEED = 1234


@dataclass(frozen=True)
class Thresholds:
    #: the largest |log-prob difference| between two computations of the same value by one backend
    logprob_tolerance: float = 1e-3
    #: ... between two backends (--against): other kernels, other float orders, maybe another dtype
    agreement_tolerance: float = 1e-2
    #: the fraction of items whose answer or rank may flip before a comparison fails (any flip warns)
    flip_fail: float = 0.05
    #: the fraction of items whose greedy first token may miss the log-probs' argmax before it fails
    argmax_fail: float = 0.05

    @classmethod
    def parse(cls, pairs: list[str]) -> Thresholds:
        known = {f.name for f in fields(cls)}
        values = {}
        for pair in pairs:
            key, sep, text = (part.strip() for part in pair.partition("="))
            if not sep or key not in known:
                raise UserError(f"--threshold {pair!r}: give KEY=VALUE with KEY one of {', '.join(sorted(known))}")
            try:
                values[key] = float(text)
            except ValueError:
                raise UserError(f"--threshold {pair!r}: {text!r} is not a number") from None
            if values[key] < 0:
                raise UserError(f"--threshold {pair!r}: a threshold is >= 0")
        return cls(**values)


def verdict(name: str, group: str, outcome: str, evidence: str, **measured) -> dict:
    return {"name": name, "group": group, "verdict": outcome, "evidence": evidence, "measured": measured}


def _fraction(count: int, n: int) -> float:
    return count / n if n else 0.0


def comparison_check(name: str, group: str, what: str, c: Comparison, tolerance: float, limits: Thresholds) -> dict:
    """fail: more flips than `flip_fail` allows, or a log-prob further than `tolerance`; warn: any flip."""
    flips = max(len(c.answer_flips), len(c.rank_flips))
    if _fraction(flips, c.n) > limits.flip_fail or (c.max_logprob_delta or 0.0) > tolerance:
        outcome = "fail"
    else:
        outcome = "warn" if flips else "pass"
    listed = sorted(set(c.answer_flips) | set(c.rank_flips))
    flipped = f"; flips: {', '.join(listed[:10])}{' ...' if len(listed) > 10 else ''}" if listed else ""
    return verdict(name, group, outcome, f"{what}: {c.summary()}{flipped}", **c.as_dict())


# ---------------------------------------------------------------------- capabilities
def capabilities_check(model, base: Pass | None, error: str | None) -> dict:
    """What the probe's own requests proved, beside what each kbench task needs. fail: a request the
    backend claims to answer failed or came back malformed, or a server accepted `echo` and ignored it
    (lm-eval then scores every log-likelihood task at chance)."""
    info = model.info
    proved, problems = {}, []
    if error is not None:
        problems.append(f"the probe's requests failed: {error}")
    if base is not None:
        proved["generate"] = all(isinstance(a, str) for a in base.answers)
        if base.logprobs is not None:
            proved["loglikelihood"] = all(lp is not None and math.isfinite(lp) for lp in base.logprobs)
        if base.ranks is not None:
            known = [r for r in base.ranks if r is not None]
            proved["ranks"] = bool(known) and all(isinstance(r, int) and r >= 1 for r in known)
    problems += [f"{what}: the answers were malformed" for what, ok in proved.items() if not ok]
    if Capability.WHITE_BOX in info.capabilities:
        layout = model.layout()
        proved["white_box"] = layout.num_layers > 0
    probe = model.describe().get("weights", {}).get("probe") or {}
    if probe.get("echo") in ("ignored", "text_only"):
        problems.append(f"the server accepted `echo` and ignored it (echo: {probe['echo']}): no prompt log-probs")
    warnings = []
    if probe and probe.get("generate") and not probe.get("sampling_varies", True):
        warnings.append("seeded samples at temperature 2 equal the greedy text: the server ignores `temperature`")
    runs, refused = _tasks(model)
    have = ", ".join(sorted(c.value for c in info.capabilities))
    if probe.get("top_logprobs"):  # a served model: the top k its server proved to return
        have += f" (top k = {probe['top_logprobs']})"
    missing = "; ".join(f"no {k}: {v}" for k, v in info.missing)
    evidence = (
        f"offers {have}; chat template {'yes' if info.chat else 'no'}; context length "
        f"{info.context_length or 'not stated'}"
        + (f"; {missing}" if missing else "")
        + f". Tasks it runs: {', '.join(runs) or 'none'}"
        + (f"; refused: {'; '.join(refused)}" if refused else "")
    )
    if problems or warnings:
        evidence = "; ".join(problems + warnings) + ". " + evidence
    outcome = "fail" if problems else "warn" if warnings else "pass"
    return verdict(
        "capabilities",
        "capabilities",
        outcome,
        evidence,
        offered=sorted(c.value for c in info.capabilities),
        proved=proved,
        missing=dict(info.missing),
        chat_template=info.chat,
        context_length=info.context_length,
        tasks_run=runs,
        tasks_refused=refused,
    )


def _tasks(model) -> tuple[list[str], list[str]]:
    """(tasks the model can run with their default settings, "task: why not" for the others)."""
    from kbench.evaluate.task import TASKS
    from kbench.models.interface import require

    runs, refused = [], []
    for name, task_cls in TASKS.items().items():
        try:
            needs = task_cls().needs(task_cls.Settings())
        except Exception:  # a task whose settings have no defaults: its needs depend on them
            continue
        try:
            for who, needed in needs.items():
                require(model, sorted(needed), who)
            runs.append(name)
        except UserError as exc:
            refused.append(f"{name} ({str(exc).split(', which model')[0]})")
    return runs, refused


# ---------------------------------------------------------------------- self-consistency
def greedy_argmax_check(model, items: list[ProbeItem], base: Pass, limits: Thresholds) -> dict:
    """Greedy's first token is the argmax of the next-token log-probs: the rank of the greedy answer's
    first token, asked as a gold, is 1. Catches a server that ignores `temperature: 0` or a parameter
    of the ranking request, and a tokenizer that is not the model's."""
    group = "self-consistency"
    if not ranks(model):
        return verdict("greedy_argmax", group, "skip", "the model gives no ranks")
    # an answer holding U+FFFD decoded part of a character: its text no longer tokenizes into the tokens generated
    asked = [(item, a) for item, a in zip(items, base.answers) if a.strip() and "\ufffd" not in a]
    if not asked:
        return verdict("greedy_argmax", group, "skip", "no greedy answer to rank (empty, or part of a character)")
    got = model.rank_first_token([i.prompt for i, _ in asked], [a for _, a in asked])
    missed = [i.id for (i, _), (rank, _) in zip(asked, got) if rank != 1]
    n = len(asked)
    outcome = "fail" if _fraction(len(missed), n) > limits.argmax_fail else "warn" if missed else "pass"
    listed = f"; not the argmax: {', '.join(missed[:10])}" if missed else ""
    skipped = f"; {len(items) - n} answers not ranked (empty, or part of a character)" if n < len(items) else ""
    return verdict(
        "greedy_argmax",
        group,
        outcome,
        f"greedy's first token is the argmax on {n - len(missed)}/{n} items{listed}{skipped}",
        n=n,
        not_argmax=missed,
    )


def logprobs_check(base: Pass, limits: Thresholds) -> dict:
    """Log-probs are finite and <= 0; the gold's first-token log-prob is the same read from the
    ranking request and from the scoring request (the same position, two request shapes)."""
    group = "self-consistency"
    values = [v for field in (base.rank_logprobs, base.first_logprobs, base.logprobs) for v in field or [] if v is not None]
    if not values:
        return verdict("logprobs", group, "skip", "the model gives no log-probs")
    bad = [v for v in values if not math.isfinite(v) or v > 1e-6]
    pairs = [
        (i, a, b)
        for i, a, b in zip(base.ids, base.rank_logprobs or [], base.first_logprobs or [])
        if a is not None and b is not None
    ]
    apart = [i for i, a, b in pairs if abs(a - b) > limits.logprob_tolerance]
    worst = max((abs(a - b) for _, a, b in pairs), default=None)
    problems = []
    if bad:
        problems.append(f"{len(bad)} log-probs not finite or above 0 (e.g. {bad[0]!r})")
    if apart:
        problems.append(
            f"the gold's first-token log-prob differs between ranking and scoring on {len(apart)}/{len(pairs)} items "
            f"(max {worst:.2e}): {', '.join(apart[:10])}"
        )
    evidence = "; ".join(problems) or (
        f"{len(values)} log-probs finite and <= 0"
        + (f"; ranking and scoring agree on {len(pairs)}/{len(pairs)} items (max {worst:.2e})" if pairs else "")
    )
    return verdict(
        "logprobs",
        group,
        "fail" if problems else "pass",
        evidence,
        values=len(values),
        not_finite_or_positive=len(bad),
        ranking_vs_scoring_max_delta=worst,
        ranking_vs_scoring_apart=apart,
    )


# ---------------------------------------------------------------------- determinism
def repeat_check(model, items, base: Pass, limits: Thresholds) -> dict:
    """The same requests again give the same answers (a backend that samples where greedy was asked fails)."""
    again = run_pass(model, items)
    return comparison_check(
        "repeat", "determinism", "the same requests twice", compare(base, again), limits.logprob_tolerance, limits
    )


def batch_check(model, items, base: Pass, limits: Thresholds) -> dict:
    """Each item alone (batch size 1) against the backend's own batching."""
    alone = run_pass(model, items, one_by_one=True)
    return comparison_check(
        "batch_size", "determinism", "batch size 1 vs default batching", compare(base, alone), limits.logprob_tolerance, limits
    )


def order_check(model, items, base: Pass, limits: Thresholds) -> dict:
    """The items in reverse order (a server with prefix caching may answer a prompt by what it computed before)."""
    reordered = run_pass(model, items, reverse=True)
    return comparison_check(
        "request_order",
        "determinism",
        "the requests in reverse order",
        compare(base, reordered),
        limits.logprob_tolerance,
        limits,
    )


def seed_check(model, items: list[ProbeItem], base: Pass) -> dict:
    """The same seed gives the same samples; samples that all equal the greedy text warn (the
    temperature is ignored)."""
    group = "determinism"
    chosen = items[:SAMPLE_PROMPTS]
    prompts = [i.prompt for i in chosen]
    draws = [
        model.sample(prompts, 2, SAMPLE_TEMPERATURE, SAMPLE_SEED, max_new_tokens=MAX_NEW_TOKENS, stop=list(STOP))
        for _ in range(2)
    ]
    differ = [i.id for i, a, b in zip(chosen, *draws) if a != b]
    greedy = all(s == g for samples, g in zip(draws[0], base.answers) for s in samples)
    if differ:
        return verdict(
            "seeded_samples",
            group,
            "fail",
            f"the same seed gave other samples on {len(differ)}/{len(chosen)} prompts: {', '.join(differ)}",
            prompts=len(chosen),
            differ=differ,
            greedy=greedy,
        )
    if greedy:
        return verdict(
            "seeded_samples",
            group,
            "warn",
            f"samples at temperature {SAMPLE_TEMPERATURE} all equal the greedy answers: the temperature looks ignored",
            prompts=len(chosen),
            differ=[],
            greedy=True,
        )
    return verdict(
        "seeded_samples",
        group,
        "pass",
        f"the same seed gave the same samples on {len(chosen)}/{len(chosen)} prompts",
        prompts=len(chosen),
        differ=[],
        greedy=False,
    )


# ---------------------------------------------------------------------- chat template
def chat_check(model, items: list[ProbeItem], base: Pass) -> dict:
    """How many greedy answers change when each probe prompt is sent as one user turn through the chat
    template (kbench's choice of a chat form for a cloze prompt). Information, never a failure."""
    from kbench.models.prompt import Prompt, user

    if not model.info.chat:
        return verdict("chat_template", "chat template", "skip", "the model has no chat template")
    chatted = model.generate([Prompt.chat([user(i.prompt)]) for i in items], MAX_NEW_TOKENS, stop=list(STOP))
    changed = [i.id for i, a, b in zip(items, base.answers, chatted) if a.strip() != b.strip()]
    n = len(items)
    return verdict(
        "chat_template",
        "chat template",
        "pass",
        f"{len(changed)}/{n} answers change between the raw prompt and the chat-formatted one",
        n=n,
        changed=changed,
    )
