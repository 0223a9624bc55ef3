"""LEFT's within-pair forced choice, a pure function (stdlib only: exported lm-eval tasks copy it
verbatim, `kbench.export.standalone`)."""


def pair_choice(margins: list) -> list:
    """Which statements of one true/false pair are called true: the one with the highest margin
    logP(True) - logP(False); a tie calls none true (so the pair counts as wrong)."""
    best = max(margins)
    winners = [margin == best for margin in margins]
    return [False] * len(margins) if sum(winners) > 1 else winners
