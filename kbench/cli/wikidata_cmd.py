"""`kbench wikidata subset` and `kbench wikidata import`: the embedded Wikidata, made by hand.

kbench wikidata subset --lama-dir ../shared/data --out lama.nt
kbench wikidata import lama.nt --store stores/lama
oxigraph serve-read-only --location stores/lama --bind 127.0.0.1:7878   # optional HTTP endpoint
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from kbench.cli.main import app

wikidata_app = typer.Typer(help="Build the embedded, Wikidata-shaped store kbench queries over SPARQL.", no_args_is_help=True)
app.add_typer(wikidata_app, name="wikidata")


@wikidata_app.command("subset")
def subset(
    out: Path = typer.Option(..., "--out", help="The N-Triples file to write (e.g. lama.nt)."),
    lama_dir: Optional[Path] = typer.Option(
        None,
        "--lama-dir",
        help="A folder holding lama_trex/, lama_google_re/, lama_trex_autoprompt_splits/ and "
        "wikidata_aliases_xfactr/ (the layout of ../shared/data); the options below override parts of it.",
    ),
    trex_dir: Optional[Path] = typer.Option(None, "--trex-dir", help="Folder of T-REx P*.jsonl files."),
    relations: Optional[Path] = typer.Option(None, "--relations", help="LAMA relations.jsonl (property labels)."),
    google_re_dir: Optional[Path] = typer.Option(None, "--google-re-dir", help="Folder of Google-RE *.jsonl files."),
    autoprompt_dir: Optional[Path] = typer.Option(None, "--autoprompt-dir", help="Folder of <relation>/{train,dev}.jsonl."),
    aliases: Optional[Path] = typer.Option(None, "--aliases", help="X-FACTR aliases table (qid<TAB>names...)."),
) -> None:
    """Write a Wikidata-shaped N-Triples subset (facts, labels, aliases, properties) from the LAMA inputs."""
    from rich.console import Console

    from kbench.sources.wikidata_store import SubsetInputs, write_lama_subset

    def part(explicit: Optional[Path], relative: str) -> Optional[Path]:
        if explicit is not None:
            return explicit.expanduser()
        if lama_dir is not None and (lama_dir / relative).exists():
            return lama_dir.expanduser() / relative
        return None

    inputs = SubsetInputs(
        trex_dir=part(trex_dir, "lama_trex/TREx"),
        relations=part(relations, "lama_trex/relations.jsonl"),
        google_re_dir=part(google_re_dir, "lama_google_re"),
        autoprompt_dir=part(autoprompt_dir, "lama_trex_autoprompt_splits"),
        aliases=part(aliases, "wikidata_aliases_xfactr/TREx_en.txt"),
    )
    counts = write_lama_subset(inputs, out)
    Console(stderr=True).print(f"wrote {counts['triples']:,} triples about {counts['entities']:,} entities to {out}")


@wikidata_app.command("import")
def import_(
    rdf_file: Path = typer.Argument(..., help="An N-Triples (.nt) or Turtle (.ttl) file."),
    store: Path = typer.Option(..., "--store", help="The store folder to create or add to."),
) -> None:
    """Load N-Triples/Turtle (e.g. a slice of Wikidata's truthy dump) into a pyoxigraph store on disk
    (servable with `oxigraph serve-read-only`); each file's name and sha256 is recorded in the store."""
    from rich.console import Console

    from kbench.sources.wikidata_store import IMPORT_RECORD, import_rdf

    count = import_rdf(rdf_file.expanduser(), store.expanduser())
    Console(stderr=True).print(
        f"{store} now holds {count:,} triples; {rdf_file.name} is recorded in {store / IMPORT_RECORD} "
        f'(a recipe\'s `store = "{store}"` names it as the knowledge source)'
    )
