"""kbench's answer matching as source text, for task files that must run without kbench.

An exported task scores in the harness's process, where kbench may not be installed. Rather than
keep a second implementation of MAPLE matching, the export copies the functions of
`kbench.metrics.matching` verbatim (`inspect.getsource`), so the exported code is kbench's
code as of the export, and a change to matching reaches the next export by itself.
"""

from __future__ import annotations

import inspect

from kbench.metrics import matching

# The functions an exported task calls, with everything they call (stdlib only).
_COPIED = (matching.normalize_for_matching, matching._valid, matching.maple_correct, matching.exact_match)
MATCHING_IMPORTS = "from collections.abc import Sequence"  # what the copied functions need


def matching_source() -> str:
    """Source defining normalize_for_matching, maple_correct and exact_match (after MATCHING_IMPORTS)."""
    body = "\n\n\n".join(inspect.getsource(fn).rstrip() for fn in _COPIED)
    return f"# MAPLE answer matching, copied verbatim from kbench.metrics.matching at export time.\n\n{body}\n"
