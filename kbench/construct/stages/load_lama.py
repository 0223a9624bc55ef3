"""Stage `load_lama`: read LAMA facts (T-REx, Google-RE, AutoPrompt train/dev) into one table.

Sources (each optional, at least one): a local folder or an http(s) URL of a .zip / .tar.gz /
.jsonl with its `*_sha256` (see `kbench.sources.download`). Inside a folder the files are found
by their LAMA names, also in subfolders (so LAMA's own `data.zip` works unpacked as is):

  * T-REx: `P<n>.jsonl` files (keys uuid, sub_uri, sub_label, obj_uri, obj_label, evidences);
    templates come from `relations.jsonl` (keys relation, template, label), found in the T-REx
    folder or a folder above it unless `relations_file` names it.
  * Google-RE: `<name>_test.jsonl` for each name in `google_re_relations` (defaults:
    date_of_birth P569, place_of_birth P19, place_of_death P20, with shipped templates, since
    the Google-RE release has no template file). Ids come from `sub_w` / `obj_w` (may be null),
    aliases from `sub_aliases` / `obj_aliases`.
    Relation ids: a Google-RE row's `relation` is `google_re:<name>` (`google_re:place_of_birth`),
    never the Wikidata id. LAMA reports Google-RE apart from T-REx, and every per-relation table
    groups by `relation`, so T-REx's P19 and Google-RE's place of birth (different facts, other
    annotators, other evidence) can never be averaged together by accident. The Wikidata property
    each row corresponds to is in `wikidata_property` (P19 for both), which the Wikidata stages
    (`verify_wikidata`, `single_answer`) query.
  * AutoPrompt: `<P-id>/train.jsonl` and `<P-id>/dev.jsonl`; rows get source
    `autoprompt_train` / `autoprompt_dev` and the preset split `train` / `dev`.

Output columns: id, relation, wikidata_property, relation_label, template, subject, subject_id,
object, object_id, source (`trex`, `google_re`, `autoprompt_train`, `autoprompt_dev`),
evidence_count (len of `evidences`; null for AutoPrompt rows, which have none), subject_aliases,
object_aliases, split (null unless the source presets it).
Every bad line is an `InputError` naming the file and line.
"""

from __future__ import annotations

import re
from functools import cached_property
from itertools import islice
from pathlib import Path
from typing import Any, Optional

from pydantic import Field, field_validator, model_validator

from kbench.construct.stage import Stage, StageOutput, StageParams, register_stage
from kbench.construct.stages._google_re import DEFAULT_GOOGLE_RE, PID, GoogleRERelation, check_template
from kbench.errors import InputError, UserError
from kbench.io import iter_jsonl, stable_hash

QID = re.compile(r"^Q[1-9][0-9]*$")
#: A relation id that is not Wikidata's own: `<source>:<name>` (Google-RE's `google_re:place_of_birth`).
GOOGLE_RE_PREFIX = "google_re:"
GOOGLE_RE_RELATION = re.compile(r"^google_re:[a-z0-9_]+$")
_RELATION_FILE = re.compile(r"^(P[1-9][0-9]*)\.jsonl$")

COLUMNS = {
    "id": "str",
    "relation": "str",
    "wikidata_property": "str",
    "relation_label": "str",
    "template": "str",
    "subject": "str",
    "subject_id": "str",
    "object": "str",
    "object_id": "str",
    "source": "str",
    "evidence_count": "int",
    "subject_aliases": "list",
    "object_aliases": "list",
    "split": "str",
}


@register_stage
class LoadLama(Stage):
    name = "load_lama"
    source = True
    version = 2  # 2: Google-RE rows get relation ids of their own and every row a `wikidata_property`

    class Params(StageParams):
        trex: Optional[str] = None
        trex_sha256: Optional[str] = None
        relations_file: Optional[str] = None
        relations_file_sha256: Optional[str] = None
        google_re: Optional[str] = None
        google_re_sha256: Optional[str] = None
        google_re_relations: dict[str, GoogleRERelation] = Field(default_factory=lambda: dict(DEFAULT_GOOGLE_RE))
        autoprompt: Optional[str] = None
        autoprompt_sha256: Optional[str] = None
        #: Relations to load; None loads every relation found. A Wikidata id (P19) selects every
        #: source's rows of that property (T-REx P19 and google_re:place_of_birth); a
        #: `google_re:<name>` id selects only that Google-RE relation.
        relations: Optional[list[str]] = None
        #: Keep only the first N rows of each file (quick runs).
        max_per_relation: Optional[int] = Field(default=None, ge=1)

        @field_validator("relations")
        @classmethod
        def _pids(cls, v: Optional[list[str]]) -> Optional[list[str]]:
            for rid in v or []:
                if not (PID.match(rid) or GOOGLE_RE_RELATION.match(rid)):
                    raise ValueError(
                        f"not a Wikidata property id (P19) or a Google-RE relation (google_re:place_of_birth): {rid!r}"
                    )
            return v

        @field_validator("google_re_relations")
        @classmethod
        def _names(cls, v: dict[str, GoogleRERelation]) -> dict[str, GoogleRERelation]:
            for name in v:
                if not GOOGLE_RE_RELATION.match(GOOGLE_RE_PREFIX + name):
                    raise ValueError(
                        f"Google-RE relation name {name!r} may only use a-z, 0-9 and _ (it becomes google_re:{name})"
                    )
            return v

        @model_validator(mode="after")
        def _some_source(self):
            if not (self.trex or self.google_re or self.autoprompt):
                raise ValueError("give at least one of trex, google_re, autoprompt")
            return self

    def __init__(self, params, ctx):
        super().__init__(params, ctx)
        self._materialized: dict[str, Path] = {}

    # ---- locating files -------------------------------------------------------------------

    def _local(self, key: str) -> Path | None:
        """The local path of a source parameter (downloaded and verified once per stage run)."""
        location = getattr(self.params, key)
        if location is None:
            return None
        if key not in self._materialized:
            self._materialized[key] = self.ctx.materialize(location, getattr(self.params, f"{key}_sha256"), key=key)
        return self._materialized[key]

    def _wanted(self, relation: str, wikidata_property: str | None = None) -> bool:
        wanted = self.params.relations
        return wanted is None or relation in wanted or wikidata_property in wanted

    @cached_property
    def _trex_files(self) -> list[tuple[str, Path]]:
        root = self._local("trex")
        if root is None:
            return []
        if root.is_file():
            m = _RELATION_FILE.match(root.name)
            if not m:
                raise UserError(f"trex: {root} is not a T-REx relation file named P<n>.jsonl")
            return [(m.group(1), root)] if self._wanted(m.group(1)) else []
        folder = _first_folder(root, lambda d: any(_RELATION_FILE.match(p.name) for p in d.iterdir()))
        if folder is None:
            raise UserError(f"trex: no T-REx relation files (P<n>.jsonl) found in {root}")
        found = [(m.group(1), p) for p in folder.iterdir() if (m := _RELATION_FILE.match(p.name))]
        return sorted((r, p) for r, p in found if self._wanted(r))

    @cached_property
    def _relations_path(self) -> Path | None:
        explicit = self._local("relations_file")
        if explicit is not None:
            return explicit
        if self.params.trex is None and self.params.autoprompt is None:
            return None  # Google-RE alone ships its own templates
        trex_root = self._local("trex")
        if trex_root is not None:
            start = self._trex_files[0][1].parent if self._trex_files else trex_root
            for folder in [start, *start.parents]:
                if (folder / "relations.jsonl").is_file():
                    return folder / "relations.jsonl"
                if folder == trex_root or trex_root not in folder.parents:
                    break
        raise UserError(
            "relations_file: no relations.jsonl found next to the T-REx files; set `relations_file` to LAMA's relations.jsonl"
        )

    @cached_property
    def _google_re_files(self) -> list[tuple[str, Path]]:
        root = self._local("google_re")
        if root is None:
            return []
        names = self.params.google_re_relations

        def candidates(folder: Path) -> list[tuple[str, Path]]:
            out = []
            for name in sorted(names):
                for fname in (f"{name}_test.jsonl", f"{name}.jsonl"):
                    if (folder / fname).is_file():
                        out.append((name, folder / fname))
                        break
            return out

        folder = root if root.is_dir() else root.parent
        folder = _first_folder(folder, lambda d: bool(candidates(d)))
        if folder is None:
            raise UserError(f"google_re: none of {', '.join(f'{n}_test.jsonl' for n in sorted(names))} found in {root}")
        return [(n, p) for n, p in candidates(folder) if self._wanted(GOOGLE_RE_PREFIX + n, names[n].wikidata_property)]

    @cached_property
    def _autoprompt_files(self) -> list[tuple[str, str, Path]]:
        root = self._local("autoprompt")
        if root is None:
            return []

        def splits(folder: Path) -> list[tuple[str, str, Path]]:
            out = []
            for sub in folder.iterdir():
                if sub.is_dir() and PID.match(sub.name):
                    out += [(sub.name, s, sub / f"{s}.jsonl") for s in ("train", "dev") if (sub / f"{s}.jsonl").is_file()]
            return out

        folder = _first_folder(root, lambda d: bool(splits(d))) if root.is_dir() else None
        if folder is None:
            raise UserError(f"autoprompt: no <P-id>/train.jsonl or dev.jsonl found in {root}")
        return sorted((r, s, p) for r, s, p in splits(folder) if self._wanted(r))

    def input_files(self) -> list[Path]:
        files = [p for _, p in self._trex_files]
        if self._relations_path is not None:
            files.append(self._relations_path)
        files += [p for _, p in self._google_re_files]
        files += [p for _, _, p in self._autoprompt_files]
        return files

    # ---- reading ---------------------------------------------------------------------------

    def _templates(self) -> dict[str, dict[str, str]]:
        path = self._relations_path
        if path is None:
            return {}
        templates: dict[str, dict[str, str]] = {}
        for lineno, obj in iter_jsonl(path, required=("relation", "template")):
            relation, template = obj["relation"], obj["template"]
            if not isinstance(relation, str) or not PID.match(relation):
                raise InputError(path, f"'relation' must be a Wikidata property id, got {relation!r}", line=lineno)
            if not isinstance(template, str):
                raise InputError(path, "'template' must be a string", line=lineno)
            if problem := check_template(template):
                raise InputError(path, problem, line=lineno)
            templates[relation] = {"template": template, "label": str(obj.get("label") or relation)}
        return templates

    def deviations(self, details: dict) -> list:
        """The LAMA probe is every T-REx and Google-RE test fact: each thing left out is an entry."""
        from kbench.protocol import Deviation

        p = self.params
        left_out = [
            ("trex-not-loaded", "the T-REx and Google-RE test facts", "T-REx is not loaded", p.trex is None),
            ("google-re-not-loaded", "the T-REx and Google-RE test facts", "Google-RE is not loaded", p.google_re is None),
            ("lama-relations-subset", "every LAMA relation", f"only {', '.join(p.relations or [])}", p.relations is not None),
            ("lama-rows-limited", "every test fact", f"the first {p.max_per_relation} rows of each file", p.max_per_relation),
        ]
        effect = "which LAMA facts are probed, and every mean over them"
        return [Deviation(id=i, paper=f"the LAMA probe: {paper}", kbench=k, effect=effect) for i, paper, k, on in left_out if on]

    def run(self, table) -> StageOutput:
        import polars as pl

        rows: dict[str, list[Any]] = {c: [] for c in COLUMNS}
        templates = self._templates()
        limit = self.params.max_per_relation

        def template_for(relation: str, path: Path) -> dict[str, str]:
            if relation not in templates:
                raise InputError(self._relations_path or path, f"no template for relation {relation} (needed by {path})")
            return templates[relation]

        for relation, path in self._trex_files:
            meta = template_for(relation, path)
            for lineno, obj in islice(iter_jsonl(path, required=("uuid", "sub_uri", "sub_label", "obj_uri", "obj_label")), limit):
                if obj.get("predicate_id", relation) != relation:
                    raise InputError(
                        path, f"predicate_id {obj['predicate_id']!r} does not match the file's relation {relation}", line=lineno
                    )
                _append(
                    rows,
                    path,
                    lineno,
                    id=obj["uuid"],
                    relation=relation,
                    wikidata_property=relation,
                    meta=meta,
                    source="trex",
                    subject=obj["sub_label"],
                    subject_id=obj["sub_uri"],
                    object=obj["obj_label"],
                    object_id=obj["obj_uri"],
                    evidence_count=len(obj.get("evidences") or []),
                )

        for name, path in self._google_re_files:
            spec = self.params.google_re_relations[name]
            meta = {"template": spec.template, "label": spec.label}
            for lineno, obj in islice(iter_jsonl(path, required=("uuid", "sub_label", "obj_label")), limit):
                _append(
                    rows,
                    path,
                    lineno,
                    id=obj["uuid"],
                    relation=GOOGLE_RE_PREFIX + name,
                    wikidata_property=spec.wikidata_property,
                    meta=meta,
                    source="google_re",
                    subject=obj["sub_label"],
                    subject_id=obj.get("sub_w"),
                    object=obj["obj_label"],
                    object_id=obj.get("obj_w"),
                    evidence_count=len(obj.get("evidences") or []),
                    subject_aliases=obj.get("sub_aliases"),
                    object_aliases=obj.get("obj_aliases"),
                )

        for relation, split, path in self._autoprompt_files:
            meta = template_for(relation, path)
            for lineno, obj in islice(iter_jsonl(path, required=("sub_uri", "sub_label", "obj_uri", "obj_label")), limit):
                fact_id = "autoprompt-" + stable_hash([relation, split, obj["sub_uri"], obj["obj_uri"]])[:24]
                _append(
                    rows,
                    path,
                    lineno,
                    id=fact_id,
                    relation=relation,
                    wikidata_property=relation,
                    meta=meta,
                    source=f"autoprompt_{split}",
                    subject=obj["sub_label"],
                    subject_id=obj["sub_uri"],
                    object=obj["obj_label"],
                    object_id=obj["obj_uri"],
                    evidence_count=None,
                    split=split,
                )

        missing = sorted(set(self.params.relations or []) - set(rows["relation"]) - set(rows["wikidata_property"]))
        if missing:
            raise UserError(f"relations: no facts found for {', '.join(missing)} in the given sources")
        schema = {c: {"str": pl.Utf8, "int": pl.Int64, "list": pl.List(pl.Utf8)}[t] for c, t in COLUMNS.items()}
        return StageOutput(kept=pl.DataFrame(rows, schema=schema))


def _first_folder(root: Path, accept) -> Path | None:
    """`root` or the first of its subfolders (sorted, breadth first) that `accept` says holds the files."""
    queue = [root]
    while queue:
        folder = queue.pop(0)
        if accept(folder):
            return folder
        queue += sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    return None


def _append(
    rows: dict[str, list],
    path: Path,
    lineno: int,
    *,
    meta: dict[str, str],
    subject_aliases: Any = None,
    object_aliases: Any = None,
    split: str | None = None,
    **values,
) -> None:
    """Validate one fact and append it to the column lists (errors name file and line)."""
    for key in ("id", "subject", "object"):
        if not isinstance(values[key], str) or not values[key].strip():
            raise InputError(path, f"'{key}' must be a non-empty string, got {values[key]!r}", line=lineno)
    for key in ("subject_id", "object_id"):
        if values[key] is not None and not (isinstance(values[key], str) and QID.match(values[key])):
            raise InputError(path, f"{key} {values[key]!r} is not a Wikidata item id (Q<digits>)", line=lineno)
    subject_aliases = [] if subject_aliases is None else subject_aliases
    object_aliases = [] if object_aliases is None else object_aliases
    for key, aliases in (("subject_aliases", subject_aliases), ("object_aliases", object_aliases)):
        if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
            raise InputError(path, f"{key} must be a list of strings", line=lineno)
    rows["template"].append(meta["template"])
    rows["relation_label"].append(meta["label"])
    rows["subject_aliases"].append(sorted(set(subject_aliases) - {values["subject"]}))
    rows["object_aliases"].append(sorted(set(object_aliases) - {values["object"]}))
    rows["split"].append(split)
    for key, value in values.items():
        rows[key].append(value)
