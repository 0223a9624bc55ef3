"""The row types of `kbench.records` and the record schemas they stand for agree: the same keys,
the same required ones, the same basic types. A schema changed without its type (or the other way
round) fails here."""

from __future__ import annotations

import functools
import json
import operator
from importlib import resources
from typing import Any, Literal, get_type_hints

import pytest

from kbench.records import SCHEMAS, Question

BASIC: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "null": type(None)}


def _schema(name: str) -> dict:
    return json.loads(resources.files("kbench.schemas").joinpath(name).read_text(encoding="utf-8"))


def _python_type(prop: dict) -> Any:
    """The Python type a JSON schema property stands for (enums as Literal)."""
    if "enum" in prop:
        values = tuple(v for v in prop["enum"] if v is not None)
        return Literal[values] | None if None in prop["enum"] else Literal[values]
    kinds = prop["type"] if isinstance(prop["type"], list) else [prop["type"]]
    parts = [list[_python_type(prop["items"])] if kind == "array" else BASIC[kind] for kind in kinds]
    return functools.reduce(operator.or_, parts)


def disagreements(schema: dict, row_type: type) -> list[str]:
    hints = get_type_hints(row_type)
    required, properties = set(schema["required"]), schema["properties"]
    out = [f"{key}: in the type, not the schema" for key in hints.keys() - properties.keys()]
    out += [f"{key}: in the schema, not the type" for key in properties.keys() - hints.keys()]
    for key in hints.keys() & properties.keys():
        if (key in required) != (key in row_type.__required_keys__):  # type: ignore[attr-defined]
            out.append(f"{key}: required in {'the schema' if key in required else 'the type'} only")
        if hints[key] != _python_type(properties[key]):
            out.append(f"{key}: {hints[key]} in the type, {_python_type(properties[key])} in the schema")
    return sorted(out)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_each_record_type_agrees_with_its_schema(name):
    assert disagreements(_schema(name), SCHEMAS[name]) == []


def test_every_record_schema_has_a_type():
    files = {p.name for p in resources.files("kbench.schemas").iterdir() if p.name.endswith(".json")}
    records = {f for f in files if not f.startswith(("results.", "protocol.", "check."))}  # documents, not rows
    assert records == set(SCHEMAS)


def test_a_drifted_schema_is_caught():
    schema = _schema("question.v1.json")
    schema["properties"]["frequency"] = {"type": "integer"}
    schema["required"] = [k for k in schema["required"] if k != "source"]
    schema["properties"]["popularity"] = {"type": "number"}
    assert disagreements(schema, Question) == [
        "frequency: float | None in the type, <class 'int'> in the schema",
        "popularity: in the schema, not the type",
        "source: required in the type only",
    ]
