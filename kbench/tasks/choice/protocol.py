"""The choice task's protocol record: lm-pub-quiz's BEAR probe, and where a run departs from it.

The procedure (Wiland, Ploner and Akbik 2024; lm-pub-quiz 0.3.3's defaults): BEAR's relations,
templates and curated answer spaces; each statement scored by the sum of its tokens'
log-likelihoods after the start token; every instance of every relation. Each entry below is
made where the run departs, from the settings, the data and the model it found.
"""

from __future__ import annotations

from kbench.protocol import REFERENCES, Deviation, ProtocolRecord

NAME = "bear-choice"


def choice_protocol(settings, sources: list[str], spaces_from_file: bool, start_kind: str) -> ProtocolRecord:
    deviations = []
    other = [s for s in sources if s != "bear"]
    if other:
        deviations.append(
            Deviation(
                id="not-bear-data",
                paper="BEAR's relations, with its templates and its instances",
                kbench=f"the dataset's own relations and templates (sources: {', '.join(other)})",
                effect="accuracy and P@k measure other facts with other templates: not comparable with BEAR's figures",
            )
        )
    if not spaces_from_file:
        deviations.append(
            Deviation(
                id="answer-space-from-split",
                paper="each relation's curated answer space (BEAR's metadata), balanced over the instances",
                kbench="each relation's answer space = the distinct objects of its items in the evaluated split",
                effect="chance level and difficulty follow the split's object counts; accuracy is not BEAR's",
            )
        )
    if settings.score == "answer":
        deviations.append(
            Deviation(
                id="answer-tokens-only",
                paper="the whole statement's tokens are scored",
                kbench="only the candidate's tokens are scored (given the text before it)",
                effect="rankings, accuracy and P@k: the template after the candidate no longer counts",
            )
        )
    if settings.reduction != "sum":
        deviations.append(
            Deviation(
                id=f"{settings.reduction}-reduction",
                paper="a statement's score is the sum of its token log-likelihoods",
                kbench=f"a statement's score is the {settings.reduction} of its token log-likelihoods",
                effect="rankings, accuracy and P@k: long candidates are no longer penalised per token",
            )
        )
    if settings.limit is not None:
        deviations.append(
            Deviation(
                id="instance-sample",
                paper="every instance of every relation",
                kbench=f"a seeded sample of {settings.limit} items (seed {settings.seed})",
                effect="accuracy and P@k carry the sample's wider intervals",
            )
        )
    if start_kind != "bos":
        deviations.append(
            Deviation(
                id=f"start-token-{start_kind}",
                paper="each statement follows the model's BOS token, so its first token is scored",
                kbench="the model has no BOS token: statements follow its EOS token"
                if start_kind == "eos"
                else "the model names no BOS or EOS text: statements start as its tokeniser encodes them",
                effect="every statement's score (its first token's log-likelihood)",
            )
        )
    return ProtocolRecord(NAME, REFERENCES["bear"], tuple(deviations))
