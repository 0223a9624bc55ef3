"""Recipe files: parse the TOML, apply `--set` overrides, validate every stage's parameters.

    [pipeline]
    name = "lama-trex"      # dataset name
    version = "1.0.0"       # dataset version
    seed = 13
    config = "default"      # the dataset config name used by write_dataset
    protocol = "lama-probe" # whose construction procedure it follows (kbench/construct/protocols.py)

    [[stages]]
    stage = "load_lama"     # a registered stage
    id = "load"             # optional; defaults to the stage name (must be unique)
    trex = "data:lama_trex" # the stage's parameters; `data:` paths lie under the data root
                            # (kbench/construct/data_root.py), other relative paths beside the recipe

`--set load_lama.max_per_relation=100` or `--set pipeline.seed=3` overrides a value; the value is
parsed as TOML when it can be (numbers, booleans, arrays) and taken as a string otherwise.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from kbench.construct.data_root import is_data_ref, iter_data_refs, old_style_hint, parse_data_ref
from kbench.construct.protocols import CONSTRUCTION_PROTOCOLS
from kbench.construct.stage import Stage, StageParams, stage_registry
from kbench.errors import InputError, UserError


class PipelineHeader(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    version: str = "0.1.0"
    description: str = ""
    seed: int = 0
    config: str = "default"
    #: The paper whose construction procedure this recipe follows; its stages record the departures.
    protocol: str = "custom"

    @field_validator("protocol")
    @classmethod
    def _known_protocol(cls, v: str) -> str:
        if v not in CONSTRUCTION_PROTOCOLS:
            raise ValueError(f"unknown protocol {v!r}; known: {', '.join(CONSTRUCTION_PROTOCOLS)}")
        return v


@dataclass(frozen=True)
class StageSpec:
    id: str
    stage_cls: type[Stage]
    params: StageParams


@dataclass(frozen=True)
class Recipe:
    path: Path
    header: PipelineHeader
    stages: list[StageSpec]
    raw: dict[str, Any]
    #: (key, value) of every `data:` input, e.g. ("stages[0] (load_lama).trex", "data:lama_trex").
    data_refs: list[tuple[str, str]] = field(default_factory=list)

    def resolved(self) -> dict[str, Any]:
        """The recipe with every default filled in: what the manifest records and the key hashes."""
        return {
            "pipeline": self.header.model_dump(mode="json"),
            "stages": [{"id": s.id, "stage": s.stage_cls.name, "params": s.params.model_dump(mode="json")} for s in self.stages],
        }


def _parse_value(text: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _apply_overrides(path: Path, raw: dict, overrides: list[str]) -> None:
    stages = raw.get("stages", [])
    for item in overrides:
        if "=" not in item:
            raise UserError(f"--set {item!r}: expected KEY=VALUE, e.g. relation_cap.max_per_relation=100")
        key, value = item.split("=", 1)
        scope, _, field = key.strip().partition(".")
        if not field:
            raise UserError(f"--set {key!r}: expected SCOPE.KEY where SCOPE is 'pipeline' or a stage id")
        if scope == "pipeline":
            raw.setdefault("pipeline", {})[field] = _parse_value(value)
            continue
        matches = [s for s in stages if isinstance(s, dict) and s.get("id", s.get("stage")) == scope]
        if not matches:
            ids = ", ".join(str(s.get("id", s.get("stage"))) for s in stages if isinstance(s, dict))
            raise InputError(path, f"--set names unknown stage id {scope!r}; stage ids: {ids}", key=key)
        matches[0][field] = _parse_value(value)


def _first_error(path: Path, where: str, exc: ValidationError, valid: list[str]) -> InputError:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"])
    key = f"{where}.{loc}" if loc else where
    if err["type"] == "extra_forbidden":
        return InputError(path, f"unknown key {loc!r}; valid keys: {', '.join(valid) or '(none)'}", key=key)
    if err["type"] == "missing":
        return InputError(path, f"missing required key {loc!r}", key=key)
    return InputError(path, f"{err['msg']} (got {err.get('input')!r})", key=key)


def _check_paths(path: Path, where: str, entry: dict) -> list[tuple[str, str]]:
    """Validate the `data:` inputs of one stage; refuse pre-`data:` shared-data paths with their new spelling."""
    refs = []
    for name, value in entry.items():
        for key, text in iter_data_refs(value, f"{where}.{name}"):
            try:
                parse_data_ref(text)
            except ValueError as exc:
                raise InputError(path, f"{exc} (got {text!r})", key=key) from None
            refs.append((key, text))
        values = value.values() if isinstance(value, dict) else value if isinstance(value, list) else [value]
        for text in values:
            hint = old_style_hint(text)
            if hint is not None and not is_data_ref(text):
                raise InputError(
                    path,
                    f"{text!r} names the shared data by a relative path; write {hint!r} "
                    "(`data:` paths lie under --data-dir / KBENCH_DATA_DIR)",
                    key=f"{where}.{name}",
                )
    return refs


def load_recipe(path: str | Path, overrides: list[str] | None = None) -> Recipe:
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "recipe file not found")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        located = re.search(r"at line (\d+)", str(exc))
        raise InputError(path, f"invalid TOML: {exc}", line=int(located.group(1)) if located else None) from exc
    except UnicodeDecodeError as exc:
        raise InputError(path, "not UTF-8 text") from exc
    _apply_overrides(path, raw, overrides or [])

    unknown = sorted(set(raw) - {"pipeline", "stages"})
    if unknown:
        raise InputError(path, f"unknown top-level key {unknown[0]!r}; valid keys: pipeline, stages", key=unknown[0])
    if "pipeline" not in raw:
        raise InputError(path, "missing the [pipeline] table", key="pipeline")
    try:
        header = PipelineHeader.model_validate(raw["pipeline"])
    except ValidationError as exc:
        raise _first_error(path, "pipeline", exc, list(PipelineHeader.model_fields)) from exc

    entries = raw.get("stages")
    if not isinstance(entries, list) or not entries:
        raise InputError(path, "a recipe needs at least one [[stages]] entry", key="stages")
    registry = stage_registry()
    specs: list[StageSpec] = []
    seen: set[str] = set()
    data_refs: list[tuple[str, str]] = []
    for i, entry in enumerate(entries):
        where = f"stages[{i}]"
        if not isinstance(entry, dict):
            raise InputError(path, "each stage must be a table", key=where)
        entry = dict(entry)
        name = entry.pop("stage", None)
        if name is None:
            raise InputError(path, "missing key 'stage'", key=where)
        if name not in registry:
            raise InputError(path, f"unknown stage {name!r}; known stages: {', '.join(sorted(registry))}", key=f"{where}.stage")
        stage_id = str(entry.pop("id", name))
        if stage_id in seen:
            raise InputError(path, f"duplicate stage id {stage_id!r}; give repeated stages an `id`", key=f"{where}.id")
        seen.add(stage_id)
        cls = registry[name]
        data_refs += _check_paths(path, f"{where} ({name})", entry)
        try:
            params = cls.Params.model_validate(entry)
        except ValidationError as exc:
            raise _first_error(path, f"{where} ({name})", exc, list(cls.Params.model_fields)) from exc
        specs.append(StageSpec(id=stage_id, stage_cls=cls, params=params))
    return Recipe(path=path.resolve(), header=header, stages=specs, raw=raw, data_refs=data_refs)
