"""What kbench knows about each upstream source and paper: license, Hub id, citation.

A `Reference` with a `license` is a data source: a dataset built from it inherits its license.
One without is a paper whose method the dataset follows: it is cited, it imposes no license.
Licenses are recorded as the sources state them (see each folder's SOURCE.md in the shared data).

`detect_sources` finds the data sources of a build from the input files its manifest lists,
so a card names what was actually read, not what a recipe usually reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from kbench.errors import UserError


@dataclass(frozen=True)
class Reference:
    key: str
    title: str
    bibtex: str
    license: str | None = None  # a Hub license id; None for a method paper
    hub_source: str | None = None  # the `source_datasets` entry ("extended|<hub id>")
    note: str = ""  # what a user must know about the license or the copy


_REFERENCES = [
    Reference(
        "lama",
        "LAMA (Petroni et al., 2019)",
        license="cc-by-nc-4.0",
        hub_source="extended|facebook/lama",
        note='The LAMA repository states: "LAMA is licensed under the CC-BY-NC 4.0 license."',
        bibtex="""@inproceedings{petroni2019language,
  title = {Language Models as Knowledge Bases?},
  author = {Petroni, Fabio and Rockt{\\"a}schel, Tim and Riedel, Sebastian and Lewis, Patrick and Bakhtin, Anton and Wu, Yuxiang and Miller, Alexander},
  booktitle = {Proceedings of EMNLP-IJCNLP 2019},
  year = {2019}
}""",
    ),
    Reference(
        "trex",
        "T-REx (Elsahar et al., 2018)",
        bibtex="""@inproceedings{elsahar2018trex,
  title = {T-REx: A Large Scale Alignment of Natural Language with Knowledge Base Triples},
  author = {Elsahar, Hady and Vougiouklis, Pavlos and Remaci, Arslen and Gravier, Christophe and Hare, Jonathon and Laforest, Frederique and Simperl, Elena},
  booktitle = {Proceedings of LREC 2018},
  year = {2018}
}""",
    ),
    Reference(
        "autoprompt",
        "AutoPrompt train/dev splits (Shin et al., 2020)",
        license="apache-2.0",
        note="The commit the splits come from has no LICENSE file; the repository's current LICENSE is Apache 2.0.",
        bibtex="""@inproceedings{shin2020autoprompt,
  title = {AutoPrompt: Eliciting Knowledge from Language Models with Automatically Generated Prompts},
  author = {Shin, Taylor and Razeghi, Yasaman and Logan IV, Robert L. and Wallace, Eric and Singh, Sameer},
  booktitle = {Proceedings of EMNLP 2020},
  year = {2020}
}""",
    ),
    Reference(
        "rebel",
        "REBEL (Huguet Cabot and Navigli, 2021)",
        license="cc-by-nc-sa-4.0",
        hub_source="extended|Babelscape/rebel-dataset",
        note="The REBEL repository states CC BY-NC-SA 4.0 (non-commercial, share alike).",
        bibtex="""@inproceedings{huguetcabot2021rebel,
  title = {REBEL: Relation Extraction By End-to-end Language generation},
  author = {Huguet Cabot, Pere-Llu{\\'i}s and Navigli, Roberto},
  booktitle = {Findings of the Association for Computational Linguistics: EMNLP 2021},
  year = {2021}
}""",
    ),
    Reference(
        "wikidata",
        "Wikidata labels and aliases",
        license="cc0-1.0",
        note="Wikidata's structured data is CC0. The alias list was collected by X-FACTR, whose repository states no license.",
        bibtex="""@article{vrandecic2014wikidata,
  title = {Wikidata: A Free Collaborative Knowledgebase},
  author = {Vrande{\\v{c}}i{\\'c}, Denny and Kr{\\"o}tzsch, Markus},
  journal = {Communications of the ACM},
  year = {2014}
}""",
    ),
    Reference(
        "openstax",
        "OpenStax textbooks (American Government 3e, U.S. History)",
        license="cc-by-4.0",
        note="Taken from the last CC BY 4.0 commits of the OpenStax book repositories; later editions are CC BY-NC-SA. "
        "Attribution to OpenStax (Rice University) is required.",
        bibtex="""@book{openstax,
  title = {American Government 3e; U.S. History},
  author = {{OpenStax}},
  publisher = {OpenStax, Rice University},
  note = {Licensed under CC BY 4.0, https://openstax.org}
}""",
    ),
    Reference(
        "kola",
        "KoLA (Yu et al., 2023)",
        license="gpl-3.0",
        note="The KoLA repository README states GPLv3.",
        bibtex="""@article{yu2023kola,
  title = {KoLA: Carefully Benchmarking World Knowledge of Large Language Models},
  author = {Yu, Jifan and others},
  journal = {arXiv preprint arXiv:2306.09296},
  year = {2023}
}""",
    ),
    Reference(
        "truthfulqa",
        "TruthfulQA (Lin et al., 2022)",
        license="apache-2.0",
        note="The TruthfulQA repository (sylinrl/TruthfulQA) is licensed under the Apache License 2.0. kbench reads it "
        "only to train ITI's probes (Li et al., 2023; MAPLE, Appendix B); no built dataset contains it.",
        bibtex="""@inproceedings{lin2022truthfulqa,
  title = {TruthfulQA: Measuring How Models Mimic Human Falsehoods},
  author = {Lin, Stephanie and Hilton, Jacob and Evans, Owain},
  booktitle = {Proceedings of ACL 2022},
  year = {2022}
}""",
    ),
    Reference(
        "maple",
        "MAPLE",
        bibtex="""@misc{maple,
  title = {MAPLE: A Multi-Axis Parametric Knowledge Extraction Lens for LLM Evaluation},
  note = {authors and venue as given in the paper}
}""",
    ),
    Reference(
        "xteval",
        "XTEVAL (Kazemnejad et al., 2023)",
        bibtex="""@inproceedings{kazemnejad2023measuring,
  title = {Measuring the Knowledge Acquisition-Utilization Gap in Pretrained Language Models},
  author = {Kazemnejad, Amirhossein and Rezagholizadeh, Mehdi and Parthasarathi, Prasanna and Chandar, Sarath},
  booktitle = {Findings of the Association for Computational Linguistics: EMNLP 2023},
  year = {2023}
}""",
    ),
    Reference(
        "left",
        "LEFT (Ciosici et al., 2021)",
        bibtex="""@inproceedings{ciosici2021perhaps,
  title = {Perhaps PTLMs Should Go to School -- A Task to Assess Open Book and Closed Book QA},
  author = {Ciosici, Manuel and others},
  booktitle = {Proceedings of EMNLP 2021},
  year = {2021}
}""",
    ),
    Reference(
        "evolvingqa",
        "EvolvingQA (Kim et al., 2023)",
        bibtex="""@article{kim2023carpe,
  title = {Carpe Diem: On the Evaluation of World Knowledge in Lifelong Language Models},
  author = {Kim, Yujin and others},
  journal = {arXiv preprint arXiv:2311.08106},
  year = {2023}
}""",
    ),
]

REFERENCES: dict[str, Reference] = {r.key: r for r in _REFERENCES}

# Substrings of an input file's path that identify the source it came from. The first match wins,
# so the more specific names come first (the AutoPrompt splits also contain "lama_trex").
_PATH_MARKERS = (
    ("autoprompt", ("autoprompt",)),
    ("rebel", ("rebel",)),
    ("openstax", ("openstax",)),
    ("kola", ("kola",)),
    ("wikidata", ("xfactr", "alias")),
    ("lama", ("lama", "trex", "google_re")),
)


def reference(key: str) -> Reference:
    try:
        return REFERENCES[key]
    except KeyError:
        raise UserError(f"unknown source {key!r}; known: {', '.join(REFERENCES)}") from None


def detect_sources(input_paths: list[str]) -> list[str]:
    """Source keys for the input files of a build, in first-seen order."""
    found: list[str] = []
    for path in input_paths:
        lowered = path.lower()
        for key, markers in _PATH_MARKERS:
            if any(m in lowered for m in markers):
                if key not in found:
                    found.append(key)
                break
    return found
