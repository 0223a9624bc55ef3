"""No file outside `kbench/models/` touches a tokenizer, read from the source with `ast` (nothing is
imported): tasks, stages, the export and the suite build `Prompt` values and call the model's typed
methods (`render`, `token_ids`, `sequence_start`, `special_token_ids`, `ModelInfo`); the backends
own the tokenizer, its chat template and its special tokens.

Flagged: an attribute or name from `FORBIDDEN` (`x.tokenizer`, `x.apply_chat_template(...)`,
`AutoTokenizer`, `PreTrainedTokenizerFast`, `x.all_special_ids`, ...), an import of one, and
`getattr` / `hasattr` naming one as a string.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = ROOT / "kbench" / "models"
FORBIDDEN = {
    "tokenizer",
    "apply_chat_template",
    "chat_template",
    "AutoTokenizer",
    "all_special_ids",
    "all_special_tokens",
    "bos_token",
    "bos_token_id",
    "eos_token",
    "eos_token_id",
    "pad_token",
    "pad_token_id",
    "mask_token",
    "mask_token_id",
    "batch_decode",
    "convert_tokens_to_ids",
}


def _forbidden(name: str) -> bool:
    return name in FORBIDDEN or name.startswith(("PreTrainedTokenizer", "ChatTokenizer"))


def touches(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) for every use of a tokenizer in a module's syntax tree."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _forbidden(node.attr):
            found.append((node.lineno, f".{node.attr}"))
        elif isinstance(node, ast.Name) and _forbidden(node.id):
            found.append((node.lineno, node.id))
        elif isinstance(node, ast.ImportFrom | ast.Import):
            found += [(node.lineno, f"import {a.name}") for a in node.names if _forbidden(a.name.rsplit(".", 1)[-1])]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr"):
            named = _attribute_named(node.args[1]) if len(node.args) > 1 else None
            if named is not None:
                found.append((node.lineno, f"{node.func.id}(..., {named!r})"))
    return found


def _attribute_named(arg: ast.expr) -> str | None:
    """The forbidden attribute a getattr's name argument spells: a string, or an f-string whose
    constant tail is "_token" / "_token_id" (f"{kind}_token")."""
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and _forbidden(arg.value):
        return arg.value
    if isinstance(arg, ast.JoinedStr):
        tail = arg.values[-1] if arg.values else None
        if isinstance(tail, ast.Constant) and str(tail.value).endswith(("_token", "_token_id")):
            return f"f'...{tail.value}'"
    return None


def offenders() -> dict[str, list[tuple[int, str]]]:
    out = {}
    for path in sorted((ROOT / "kbench").rglob("*.py")):
        if ALLOWED in path.parents:
            continue
        hits = touches(ast.parse(path.read_text(), str(path)))
        if hits:
            out[str(path.relative_to(ROOT))] = hits
    return out


def test_no_file_outside_models_touches_a_tokenizer():
    assert offenders() == {}


def test_the_check_sees_each_way_of_reaching_a_tokenizer():
    source = """
from transformers import AutoTokenizer
text = model.tokenizer.apply_chat_template(messages, tokenize=False)
avoid = set(model.special.all_special_ids)
has = getattr(tok, "chat_template", None)
start = getattr(tok, f"{kind}_token", None)
"""
    whats = {what for _, what in touches(ast.parse(source))}
    assert {"import AutoTokenizer", ".tokenizer", ".apply_chat_template", ".all_special_ids"} <= whats
    assert "getattr(..., 'chat_template')" in whats and "getattr(..., \"f'..._token'\")" in whats
    assert touches(ast.parse("row = {'chat_template': info.chat}\nwords = nlp.make_doc(text)")) == []
