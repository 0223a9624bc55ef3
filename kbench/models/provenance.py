"""Where a model's weights came from (recorded in every results envelope)."""

from __future__ import annotations


def weights_provenance(loaded) -> dict:
    """{"source": what was asked for, "format", ...}; richer details come from the loader."""
    return dict(getattr(loaded, "provenance", None) or {"source": loaded.name})
