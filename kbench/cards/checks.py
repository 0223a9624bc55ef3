"""What a dataset's Wikidata checks ran against, and whether its LLM judges ran: the card's first lines.

A check against a store written from the build's own inputs verifies nothing the inputs did not
already say: a (subject, relation) pair looks single-answer because the input holds one object for
it. So the card says so in its first lines ("checked against the inputs only"), and `kbench card`
refuses a card that calls such a dataset "verified against Wikidata" (`check_claims`). Only an
imported Wikidata dump or subset, or the live Wikidata endpoint, earns that phrase.

Both come from stats.json: each Wikidata stage records `details.knowledge_source`
(`kbench.construct.stages._wikidata_common.knowledge_source`), each LLM judge `details.judge`.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from kbench.cards.folder import DatasetFolder
from kbench.errors import InputError

#: The checks whose source decides whether the dataset may say "verified against Wikidata".
VERIFYING_STAGES = {"verify_wikidata": "existence", "single_answer": "single answer"}
CHECK_NAMES = {**VERIFYING_STAGES, "domain_taxonomy": "domain classes"}
JUDGE_STAGES = {"judge_domain": "domain-mismatch judge", "judge_single_answer": "single-answer classification"}
CLAIM = "verified against wikidata"


def _stages(folder: DatasetFolder, names) -> list[dict]:
    return [s for s in folder.stats.get("stages") or [] if s.get("stage") in names]


def inputs_only(folder: DatasetFolder) -> bool:
    """Whether an existence or single-answer check ran against a store built from the inputs."""
    return any(_source(s).get("kind") == "inputs" for s in _stages(folder, VERIFYING_STAGES))


def _source(stage: dict) -> dict:
    return (stage.get("details") or {}).get("knowledge_source", {})


def _is_wikidata(source: dict) -> bool:
    if source.get("kind") == "import":
        return True
    host = urlsplit(source.get("url", "")).hostname or ""
    return source.get("kind") == "endpoint" and (host == "wikidata.org" or host.endswith(".wikidata.org"))


def _source_text(source: dict) -> str:
    if not source:
        return "not recorded (built before kbench recorded knowledge sources)"
    if source.get("kind") == "endpoint":
        return f"{source['description']} `{source.get('url', '?')}`"
    files = ", ".join(f"`{f['file']}` (sha256 `{f['sha256'][:12]}…`)" for f in source.get("files") or [])
    return f"{source['description']}: {files or 'no files recorded'}"


def render_checks(folder: DatasetFolder, family: str) -> str:
    """The card's first lines: the knowledge-source verdict, one line per check, the judges."""
    checks = _stages(folder, CHECK_NAMES)
    judges = [s for s in _stages(folder, JUDGE_STAGES) if (s.get("details") or {}).get("judge")]
    if not checks and not judges and family != "maple-wiki":
        return ""
    sources = [_source(s) for s in _stages(folder, VERIFYING_STAGES)]
    if inputs_only(folder):
        lead = (
            "**Checked against the inputs only.** The existence and single-answer checks below ran against a "
            "store kbench built from this build's own inputs, not against Wikidata: a pair looks single-answer "
            "because the inputs hold one object for it, and an entity missing from Wikidata goes unnoticed."
        )
    elif sources and all(_is_wikidata(s) for s in sources):
        lead = "**Verified against Wikidata**, as each check below says (an imported dump or subset, or the live endpoint)."
    elif sources:
        lead = "**Checked against the stores named below**, which are not known to hold Wikidata."
    else:
        lead = "No existence or single-answer check ran."
    lines = [lead, ""]
    for s in checks:
        lines.append(f"- `{s['id']}` ({CHECK_NAMES[s['stage']]}): {_source_text(_source(s))}")
    if judges:
        for s in judges:
            judge = (s.get("details") or {}).get("judge", {})
            lines.append(
                f"- `{s['id']}` ({JUDGE_STAGES[s['stage']]}): ran with model `{judge.get('model', '?')}` "
                f"(identity `{str(judge.get('identity', '?'))[:16]}…`, backend {judge.get('backend', '?')}, "
                f"{judge.get('prompt_form', '?')} prompt, cue {judge.get('cue', '?')}, greedy decoding)"
            )
    else:
        lines.append("- MAPLE's LLM-judged steps (domain-mismatch judge, single-answer classification): not run (off by default)")
    return "\n".join(lines)


def check_claims(text: str, folder: DatasetFolder) -> None:
    """Refuse a card that says "verified against Wikidata" about a dataset checked against its inputs."""
    if inputs_only(folder) and CLAIM in " ".join(text.lower().split()):
        raise InputError(
            folder.root / "README.md",
            "the card says 'verified against Wikidata', but its existence or single-answer checks ran against "
            "a store built from the inputs (stats.json knowledge_source); import a Wikidata dump or use --sparql-endpoint",
        )
