"""Where each source folder under the data root comes from: URLs, checksums, license, layout.

A `Source` is one folder under the data root (`data:<name>/...` in a recipe). It is assembled
from `Download`s: a plain file is saved at `dest`; an archive is unpacked and the members matching
each `(pattern, folder)` of `members` are saved in that folder under their own base name -- this
is where an upstream layout is mapped to the layout the recipes read (e.g. LAMA's `data.zip`
holds `data/TREx/P19.jsonl`, which becomes `lama_trex/TREx/P19.jsonl`).

Checksums: files taken from a git commit are pinned (`pinned_sha256.json`, computed from the
copies in ../shared/data, which come from those commits). Archives and files whose bytes nobody here
has seen (LAMA's data.zip, the full REBEL zip, TruthfulQA.csv) have no pinned checksum; the first download records
it in `kbench-data.lock` beside the data and later downloads must match it.

Licenses are not repeated here: each source names its entry in `kbench.sources.references`, the one
place that also decides the license a built dataset inherits.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from kbench.errors import UserError
from kbench.sources.references import Reference, reference

LAMA_ZIP = "https://dl.fbaipublicfiles.com/LAMA/data.zip"
REBEL_ZIP = "https://huggingface.co/datasets/Babelscape/rebel-dataset/resolve/main/rebel_dataset.zip"
# the commit Hugging Face's truthful_qa loader reads; the CSV's bytes are locked on first download
TRUTHFULQA_CSV = "https://raw.githubusercontent.com/sylinrl/TruthfulQA/013686a06be7a7bde5bf8223943e106c7250123c/TruthfulQA.csv"

#: The 41 LAMA T-REx relations.
LAMA_RELATIONS = (
    "P1001",
    "P101",
    "P103",
    "P106",
    "P108",
    "P127",
    "P1303",
    "P131",
    "P136",
    "P1376",
    "P138",
    "P140",
    "P1412",
    "P159",
    "P17",
    "P176",
    "P178",
    "P19",
    "P190",
    "P20",
    "P264",
    "P27",
    "P276",
    "P279",
    "P30",
    "P31",
    "P36",
    "P361",
    "P364",
    "P37",
    "P39",
    "P407",
    "P413",
    "P449",
    "P463",
    "P47",
    "P495",
    "P527",
    "P530",
    "P740",
    "P937",
)


@cache
def _pinned() -> dict[str, str]:
    return json.loads((Path(__file__).with_name("pinned_sha256.json")).read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Download:
    url: str
    sha256: str | None = None  # None: recorded in kbench-data.lock on first download
    dest: str = ""  # a plain file: its path inside the source folder
    members: tuple[tuple[str, str], ...] = ()  # an archive: (fnmatch pattern on member path, target folder)

    @property
    def is_archive(self) -> bool:
        return bool(self.members)


@dataclass(frozen=True)
class Source:
    name: str  # the folder under the data root
    title: str
    reference_key: str  # kbench.sources.references entry: license, note, citation
    homepage: str
    downloads: tuple[Download, ...] = ()
    layout: str = ""  # how the upstream layout differs from the folder, when it does
    #: Turns the downloaded files in the folder into the layout recipes read (in place), if needed.
    convert: Callable[[Path], None] | None = None

    @property
    def reference(self) -> Reference:
        return reference(self.reference_key)


def _github(repo: str, commit: str, files: dict[str, str]) -> tuple[Download, ...]:
    """Files of one commit (raw.githubusercontent.com), each with its pinned sha256."""
    downloads = []
    for path, dest in files.items():
        url = f"https://raw.githubusercontent.com/{repo}/{commit}/{path}"
        downloads.append(Download(url=url, sha256=_pinned()[url], dest=dest))
    return tuple(downloads)


def _openstax(name: str, title: str, repo: str, commit: str) -> Source:
    """A book: its collection file and modules at the last CC BY commit, converted to JSONL by kbench."""
    from kbench.sources.openstax import SOURCE_DIR, convert_book

    prefix = f"https://raw.githubusercontent.com/{repo}/{commit}/"
    files = {url[len(prefix) :]: f"{SOURCE_DIR}/{url[len(prefix) :]}" for url in _pinned() if url.startswith(prefix)}
    return Source(
        name,
        title,
        "openstax",
        f"https://github.com/{repo}/tree/{commit}",
        _github(repo, commit, files),
        layout="the collection file and the CNXML of every module it lists (collections/, modules/m*/index.cnxml) "
        "are converted to review_mcq.jsonl and paragraphs.jsonl by kbench/sources/openstax.py; the result "
        "is byte-identical to the ../shared/data copy",
        convert=functools.partial(convert_book, commit=commit),
    )


def _catalog() -> list[Source]:
    optiprompt = ("princeton-nlp/OptiPrompt", "9450bc96f28ac3df01337c79be079a2ac3defb5c")
    return [
        Source(
            "lama_trex",
            "LAMA T-REx probe: test facts per relation, templates, common vocabulary",
            "lama",
            "https://github.com/facebookresearch/LAMA",
            (
                Download(LAMA_ZIP, members=(("data/TREx/*.jsonl", "TREx"), ("data/relations.jsonl", ""))),
                *_github(
                    *optiprompt,
                    {
                        "common_vocabs/common_vocab_cased.txt": "common_vocab_cased.txt",
                        "relation_metainfo/LPAQA_relations.jsonl": "prompt_variants/LPAQA_relations.jsonl",
                        "relation_metainfo/AutoPrompt_relations.jsonl": "prompt_variants/AutoPrompt_relations.jsonl",
                    },
                ),
            ),
            layout="data.zip: data/TREx/P*.jsonl -> TREx/, data/relations.jsonl -> relations.jsonl. The archive has "
            "all 41 relations; ../shared/data has 28 (its copy came from git repositories, see its SOURCE.md). "
            "Templates variants and common_vocab_cased.txt come from OptiPrompt (MIT).",
        ),
        Source(
            "lama_google_re",
            "LAMA Google-RE probe: date/place of birth, place of death",
            "lama",
            "https://github.com/facebookresearch/LAMA",
            (Download(LAMA_ZIP, members=(("data/Google_RE/*_test.jsonl", ""),)),),
            layout="data.zip: data/Google_RE/*_test.jsonl -> ./",
        ),
        Source(
            "lama_trex_autoprompt_splits",
            "AutoPrompt train/dev facts for the 41 LAMA T-REx relations",
            "autoprompt",
            "https://github.com/ucinlp/autoprompt",
            _github(
                "ucinlp/autoprompt",
                "965e0909badb1ade47a6fd3c05dad4615355e2e8",
                {
                    f"data/TREx_all/{rel}/{split}.jsonl": f"{rel}/{split}.jsonl"
                    for rel in LAMA_RELATIONS
                    for split in ("train", "dev")
                },
            ),
        ),
        Source(
            "lama_trex_pararel_lms_vocab",
            "LAMA T-REx facts with single-token objects (ParaRel)",
            "lama",
            "https://github.com/yanaiela/pararel",
            _github(
                "yanaiela/pararel",
                "cb5554678457beb5ac163d888f1ce8cf174b3f0b",
                {f"data/trex_lms_vocab/{rel}.jsonl": f"{rel}.jsonl" for rel in LAMA_RELATIONS},
            ),
            layout="ParaRel's files are MIT; the facts are LAMA's (CC BY-NC 4.0).",
        ),
        Source(
            "wikidata_aliases_xfactr",
            "Wikidata English labels and aliases of the LAMA T-REx entities (X-FACTR)",
            "wikidata",
            "https://github.com/jzbjyb/X-FACTR",
            _github("jzbjyb/X-FACTR", "c1938ec7262ebc34ac0b39daff3f446e103e8a87", {"data/alias/TREx/en.txt": "TREx_en.txt"}),
        ),
        Source(
            "rebel_sample",
            "REBEL sample: 1,000 Wikipedia abstracts with entities and Wikidata triples",
            "rebel",
            "https://github.com/Babelscape/rebel",
            _github(
                "Babelscape/rebel",
                "54ea5fd07dafece420c28c6f71f1c6431f42797c",
                {"data/rebel/sample.jsonl": "sample.jsonl", "data/relations_count.tsv": "relations_count.tsv"},
            ),
        ),
        Source(
            "rebel_dataset",
            "The full REBEL dataset (train/val/test, several GB; no recipe reads it yet)",
            "rebel",
            "https://huggingface.co/datasets/Babelscape/rebel-dataset",
            (Download(REBEL_ZIP, members=(("*en_train.jsonl", ""), ("*en_val.jsonl", ""), ("*en_test.jsonl", ""))),),
            layout="rebel_dataset.zip: en_{train,val,test}.jsonl -> ./ (same record format as rebel_sample)",
        ),
        _openstax(
            "openstax_us_history",
            "OpenStax U.S. History: review questions and paragraphs (JSONL)",
            "openstax/osbooks-us-history",
            "046331cfcea0ac1b1a8fd461b3e6aae638845af3",
        ),
        _openstax(
            "openstax_american_government_3e",
            "OpenStax American Government 3e: review questions and paragraphs (JSONL)",
            "openstax/osbooks-american-government",
            "9ca5ca7ddc1ee5fddbd51b15b946ce8feeea5852",
        ),
        Source(
            "truthfulqa",
            "TruthfulQA: 817 questions with true and false reference answers (ITI's probing set)",
            "truthfulqa",
            "https://github.com/sylinrl/TruthfulQA/tree/013686a06be7a7bde5bf8223943e106c7250123c",
            (Download(TRUTHFULQA_CSV, dest="TruthfulQA.csv"),),
            layout="TruthfulQA.csv as in the repository; `kbench evaluate kee` trains ITI's probes on it when present",
        ),
        Source(
            "kola_samples",
            "KoLA knowledge-memorization samples (tasks 1-1, 1-2, 1-3; 5 items each)",
            "kola",
            "https://github.com/THU-KEG/KoLA",
            _github(
                "THU-KEG/KoLA",
                "daf1cf4f36e9d20f6def3e406cabbd5474d3f9c6",
                {
                    f"Sample_Data/{name}": name
                    for name in (
                        "1-1_2_high_freq_ent_sample.json",
                        "1-2_1_low_freq_ent_sample.json",
                        "1-3_r_1_simple_sample_sample.json",
                    )
                },
            ),
        ),
    ]


@cache
def catalog() -> dict[str, Source]:
    return {s.name: s for s in _catalog()}


def source(name: str) -> Source:
    try:
        return catalog()[name]
    except KeyError:
        raise UserError(f"unknown source {name!r}; known: {', '.join(catalog())} (see `kbench data list`)") from None
