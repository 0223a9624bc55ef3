"""Offline validation of a dataset card: what the Hub and `datasets` need to read it.

`huggingface_hub.DatasetCard.validate` asks the Hub over the network; this check runs offline and
is stricter where kbench can be: the YAML must parse into `DatasetCardData`, the required metadata
must be present, the license must be an id the Hub knows, and every `configs` data file must exist
in the folder (otherwise `datasets.load_dataset(DIR)` fails on the user's machine, not here).
"""

from __future__ import annotations

from pathlib import Path

from kbench.errors import InputError

REQUIRED = ("license", "language", "pretty_name", "task_categories", "size_categories", "source_datasets", "configs")
SIZE_CATEGORIES = {"n<1K", "1K<n<10K", "10K<n<100K", "100K<n<1M", "1M<n<10M", "10M<n<100M", "100M<n<1B", "n>1B"}
# The Hub's license ids that kbench cards may carry (the Hub knows more; these are the ones we can reason about).
HUB_LICENSES = {
    "cc0-1.0",
    "mit",
    "apache-2.0",
    "cc-by-4.0",
    "cc-by-sa-4.0",
    "gpl-3.0",
    "cc-by-nc-4.0",
    "cc-by-nc-sa-4.0",
    "cc-by-nd-4.0",
    "cc-by-nc-nd-4.0",
    "other",
    "unknown",
}


def validate_card(text: str, root: Path, *, where: Path | None = None) -> None:
    """Raise `InputError` naming the first problem; return None for a valid card."""
    from huggingface_hub import DatasetCard

    where = where or root / "README.md"
    try:
        card = DatasetCard(text)
    except Exception as exc:  # huggingface_hub raises ValueError or yaml errors for a broken header
        raise InputError(where, f"not a valid dataset card: {exc}") from exc
    data = card.data.to_dict()
    missing = [k for k in REQUIRED if not data.get(k)]
    if missing:
        raise InputError(where, f"card metadata lacks {', '.join(missing)}", key=missing[0])
    if data["license"] not in HUB_LICENSES:
        raise InputError(where, f"license {data['license']!r} is not a Hub license id", key="license")
    sizes = data["size_categories"] if isinstance(data["size_categories"], list) else [data["size_categories"]]
    if not set(sizes) <= SIZE_CATEGORIES:
        raise InputError(where, f"size_categories {sizes} not among {sorted(SIZE_CATEGORIES)}", key="size_categories")
    if not card.text.strip():
        raise InputError(where, "the card has metadata but no text")
    for i, config in enumerate(data["configs"]):
        if not isinstance(config, dict) or "config_name" not in config or "data_files" not in config:
            raise InputError(where, "each config needs config_name and data_files", key=f"configs[{i}]")
        for entry in config["data_files"]:
            paths = entry.get("path") if isinstance(entry, dict) else entry
            for rel in [paths] if isinstance(paths, str) else paths or []:
                if not (root / rel).is_file():
                    raise InputError(
                        where,
                        f"config {config['config_name']!r} lists {rel}, which does not exist",
                        key=f"configs[{i}].data_files",
                    )
