"""The latest check of each model, kept where every later command finds it.

`kbench check` also writes its report to `$KBENCH_CACHE/checks/<identity>.json`, keyed by the
model's identity (`ModelInfo.identity`: weights, tokenizer and dtype; for a served model the
server's model entry, revision and tokenizer source), so a run of the same model finds it whatever
spec string named it. `kbench evaluate` and `kbench suite run` put its summary into the run's model
block (`summary`), and refuse a served model whose latest check failed self-consistency for a task
that reads log-probs or ranks (`refuse_inconsistent`), as the served probe refuses a server that
ignores `echo`. Only a served model is refused (#41): an in-process model's log-probs and answers
are computed by kbench itself from one forward pass."""

from __future__ import annotations

from pathlib import Path

from kbench.errors import UserError
from kbench.models.interface import Capability

SELF_CONSISTENCY = ("greedy_argmax", "logprobs")
LOGPROB_CAPABILITIES = frozenset({Capability.LOGLIKELIHOOD, Capability.RANK_EXACT, Capability.RANK_TOP_K})


def _path(identity: str) -> Path:
    from kbench.paths import default_cache_dir

    return default_cache_dir() / "checks" / f"{identity}.json"


def record_latest(report: dict, identity: str) -> Path:
    from kbench.io import write_json

    path = _path(identity)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, report)
    return path


def summary(identity: str) -> dict | None:
    """{created, model, failed, verdicts, path} of the latest check of this identity; None: never checked."""
    import json

    path = _path(identity)
    if not path.is_file():
        return None
    try:
        report = json.loads(path.read_text())
        verdicts = {c["name"]: c["verdict"] for c in report["checks"]}
        return {
            "created": report["created"],
            "model": report["model"],
            "failed": report["failed"],
            "verdicts": verdicts,
            "path": str(path),
        }
    except (ValueError, KeyError, TypeError):  # a report of another schema version: as if never checked
        return None


def refuse_inconsistent(model, needed, who: str) -> None:
    """A served model whose latest check failed self-consistency may not run `who` when it reads log-probs or ranks."""
    if model.info.backend != "openai" or not LOGPROB_CAPABILITIES & {Capability(c) for c in needed}:
        return
    latest = summary(model.info.identity)
    failed = [name for name in SELF_CONSISTENCY if latest and name in latest["failed"]]
    if failed:
        raise UserError(
            f"{who} reads log-probs or ranks, and the latest `kbench check` of model {model.info.name!r} "
            f"({latest['created']}) failed self-consistency ({', '.join(failed)}): its server's log-probs "
            f"contradict its own answers; see {latest['path']}, fix the server and rerun `kbench check`"
        )
