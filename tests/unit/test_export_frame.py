"""The export frame finds each task's `export.py` without importing the other tasks (or torch)."""

from __future__ import annotations

import subprocess
import sys


def test_the_frame_lists_the_exports_importing_only_them():
    code = (
        "import sys\n"
        "from kbench.export.items import _exports\n"
        "print(sorted(_exports()), 'torch' in sys.modules, 'kbench.tasks.kee' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["['extraction',", "'truefalse']", "False", "False"]
