"""Property-based hostile input: no recipe text or JSONL bytes make kbench crash with a traceback.

Every rejection must be a `UserError` (exit code 2 through the CLI) naming the file, and the
line or key when there is one.
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbench.construct.recipe import load_recipe
from kbench.cli.main import main
from kbench.errors import InputError, UserError
from kbench.io import iter_jsonl

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

toml_scalars = st.one_of(st.integers(-5, 5), st.booleans(), st.text(max_size=8), st.lists(st.integers(0, 3), max_size=3))
stage_names = st.sampled_from(["load_lama", "relation_cap", "frequency_bin", "split", "no_such_stage", "", "write_dataset"])
keys = st.sampled_from(["max_per_relation", "seed", "bogus", "trex_dir", "fractions", "id", "stage", "column"])


def _toml_value(value) -> str:
    return json.dumps(value) if not isinstance(value, bool) else str(value).lower()


@st.composite
def recipes(draw) -> str:
    lines = []
    if draw(st.booleans()):
        lines += ["[pipeline]", f"name = {json.dumps(draw(st.text(max_size=6)))}"]
        if draw(st.booleans()):
            lines.append(f"{draw(st.sampled_from(['seed', 'version', 'nonsense']))} = {_toml_value(draw(toml_scalars))}")
    for _ in range(draw(st.integers(0, 3))):
        lines += ["[[stages]]", f"stage = {json.dumps(draw(stage_names))}"]
        for _ in range(draw(st.integers(0, 2))):
            lines.append(f"{draw(keys)} = {_toml_value(draw(toml_scalars))}")
    if draw(st.booleans()):  # sometimes plain garbage
        lines.insert(draw(st.integers(0, len(lines))), draw(st.text(max_size=12)))
    return "\n".join(lines) + "\n"


def run_cli(args: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            main(args)
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, err.getvalue()


@SETTINGS
@given(text=recipes())
def test_any_recipe_text_is_valid_or_a_located_user_error(tmp_path, text):
    path = tmp_path / "recipe.toml"
    path.write_text(text, encoding="utf-8")
    try:
        load_recipe(path)
    except InputError as exc:
        assert exc.path == str(path)
        assert exc.line is not None or exc.key is not None, str(exc)
    except UserError as exc:
        assert str(path) in str(exc) or "--set" in str(exc)


@SETTINGS
@given(text=recipes())
def test_cli_build_on_hostile_recipe_exits_2_without_traceback(tmp_path, text):
    path = tmp_path / "recipe.toml"
    path.write_text(text, encoding="utf-8")
    try:
        load_recipe(path)
    except UserError:
        code, err = run_cli(["build", str(path), "--out", str(tmp_path / "out")])
        assert code == 2, err
        assert "Traceback" not in err and err.startswith("error: ") and "recipe.toml" in err


@SETTINGS
@given(data=st.lists(st.one_of(st.binary(max_size=30), st.just(b'{"a": 1}'), st.just(b"[1,2]"), st.just(b"")), max_size=6))
def test_jsonl_reader_yields_objects_or_names_file_and_line(tmp_path, data):
    path = tmp_path / "input.jsonl"
    path.write_bytes(b"\n".join(data))
    try:
        rows = list(iter_jsonl(path, required=("a",)))
    except InputError as exc:
        assert exc.path == str(path)
        assert exc.line is not None or "empty" in str(exc)
    else:
        assert rows and all(isinstance(obj, dict) and "a" in obj for _, obj in rows)


def test_unreadable_recipe_path(tmp_path):
    code, err = run_cli(["build", str(tmp_path / "missing.toml")])
    assert code == 2 and "missing.toml" in err and "recipe file not found" in err


@pytest.mark.parametrize("bad", ["not-a-pair", "nodot=1", "unknown_stage.key=1"])
def test_bad_set_overrides(tmp_path, bad):
    recipe = tmp_path / "r.toml"
    recipe.write_text('[pipeline]\nname = "x"\n[[stages]]\nstage = "relation_cap"\n')
    code, err = run_cli(["build", str(recipe), "--set", bad, "--out", str(tmp_path / "o")])
    assert code == 2 and "Traceback" not in err

