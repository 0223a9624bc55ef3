"""kbench's scoring as source text, for task files that must run without kbench.

An exported task scores in the harness's process, where kbench may not be installed. Rather than
keep a second implementation of MAPLE matching or of LEFT's pair choice, the export copies the
functions of `kbench.metrics.matching` and `kbench.metrics.pairs` verbatim (`inspect.getsource`),
so the exported code is kbench's code as of the export, and a change reaches the next export by itself.
"""

from __future__ import annotations

import inspect

from kbench.metrics import matching, pairs

# The functions an exported task calls, with everything they call (stdlib only).
_COPIED = (matching.normalize_for_matching, matching._valid, matching.maple_correct, matching.exact_match)
MATCHING_IMPORTS = "from collections.abc import Sequence"  # what the copied functions need


def matching_source() -> str:
    """Source defining normalize_for_matching, maple_correct and exact_match (after MATCHING_IMPORTS)."""
    body = "\n\n\n".join(inspect.getsource(fn).rstrip() for fn in _COPIED)
    return f"# MAPLE answer matching, copied verbatim from kbench.metrics.matching at export time.\n\n{body}\n"


def pair_choice_source() -> str:
    """Source defining pair_choice (no imports needed)."""
    body = inspect.getsource(pairs.pair_choice).rstrip()
    return f"# LEFT's pair choice, copied verbatim from kbench.metrics.pairs at export time.\n\n{body}\n"
