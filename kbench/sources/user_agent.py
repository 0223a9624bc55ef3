"""The one User-Agent every outside HTTP call of kbench sends (SPARQL, pageviews, downloads).

Wikimedia's policy asks clients for a descriptive agent with a way to reach the operator, so
`KBENCH_CONTACT` (an email address or URL) is added when it is set.
"""

from __future__ import annotations

import os

from kbench import __version__

PROJECT_URL = "https://github.com/kbench/kbench"


def user_agent() -> str:
    import requests

    contact = os.environ.get("KBENCH_CONTACT", "").strip()
    details = "knowledge-probing benchmark builder; " + PROJECT_URL + (f"; contact: {contact}" if contact else "")
    return f"kbench/{__version__} ({details}) python-requests/{requests.__version__}"
