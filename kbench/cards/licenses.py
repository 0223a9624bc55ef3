"""License identifiers (the Hub's ids) and the ordering used to refuse weaker licenses.

A license is modelled by the conditions it places on a re-user. A derived dataset must keep every
condition of every source it was built from, so license A may stand in for sources S1..Sn only
when conditions(A) ⊇ conditions(S1) ∪ ... ∪ conditions(Sn). This is a partial order: CC BY-NC and
CC BY-SA are incomparable, and both sit below CC BY-NC-SA.

    cc0-1.0 < mit = apache-2.0 = cc-by-4.0 < cc-by-nc-4.0, cc-by-sa-4.0 < cc-by-nc-sa-4.0
                                         cc-by-nd-4.0 < cc-by-nc-nd-4.0

Copyleft software licenses (GPL) count as share-alike. An id not in the table ("other", a typo)
cannot be compared and is refused unless the user forces it.
"""

from __future__ import annotations

from kbench.errors import UserError

ATTRIBUTION = "attribution"
NON_COMMERCIAL = "non-commercial"
SHARE_ALIKE = "share-alike"
NO_DERIVATIVES = "no-derivatives"

CONDITIONS: dict[str, frozenset[str]] = {
    "cc0-1.0": frozenset(),
    "mit": frozenset({ATTRIBUTION}),
    "apache-2.0": frozenset({ATTRIBUTION}),
    "cc-by-4.0": frozenset({ATTRIBUTION}),
    "cc-by-sa-4.0": frozenset({ATTRIBUTION, SHARE_ALIKE}),
    "gpl-3.0": frozenset({ATTRIBUTION, SHARE_ALIKE}),
    "cc-by-nc-4.0": frozenset({ATTRIBUTION, NON_COMMERCIAL}),
    "cc-by-nc-sa-4.0": frozenset({ATTRIBUTION, NON_COMMERCIAL, SHARE_ALIKE}),
    "cc-by-nd-4.0": frozenset({ATTRIBUTION, NO_DERIVATIVES}),
    "cc-by-nc-nd-4.0": frozenset({ATTRIBUTION, NON_COMMERCIAL, NO_DERIVATIVES}),
}

#: Plain-language names used in the card text.
NAMES = {
    "cc0-1.0": "CC0 1.0 (public domain dedication)",
    "mit": "MIT",
    "apache-2.0": "Apache 2.0",
    "cc-by-4.0": "CC BY 4.0",
    "cc-by-sa-4.0": "CC BY-SA 4.0",
    "gpl-3.0": "GPL 3.0",
    "cc-by-nc-4.0": "CC BY-NC 4.0 (non-commercial use only)",
    "cc-by-nc-sa-4.0": "CC BY-NC-SA 4.0 (non-commercial use only, share alike)",
    "cc-by-nd-4.0": "CC BY-ND 4.0",
    "cc-by-nc-nd-4.0": "CC BY-NC-ND 4.0",
}

# The Creative Commons licenses, in the order tried when naming the license for a set of
# conditions (data is best described by a data license, not a software one).
_DATA_LICENSES = ("cc0-1.0", "cc-by-4.0", "cc-by-sa-4.0", "cc-by-nc-4.0", "cc-by-nc-sa-4.0", "cc-by-nd-4.0", "cc-by-nc-nd-4.0")


def conditions(license_id: str) -> frozenset[str]:
    try:
        return CONDITIONS[license_id]
    except KeyError:
        raise UserError(f"unknown license {license_id!r}; known: {', '.join(CONDITIONS)}") from None


def inherited_license(source_licenses: list[str]) -> str:
    """The least restrictive data license that keeps every condition of every source license."""
    needed = frozenset().union(*(conditions(lic) for lic in source_licenses)) if source_licenses else frozenset()
    for candidate in _DATA_LICENSES:
        if CONDITIONS[candidate] >= needed:
            return candidate
    raise UserError(
        f"no single license keeps all source conditions ({', '.join(sorted(needed))}); "
        "the sources cannot be combined into one dataset"
    )


def check_license_choice(chosen: str, source_licenses: list[str], *, force: bool) -> None:
    """Refuse `chosen` when it drops a condition some source imposes, unless `force`."""
    if force:
        return
    if chosen not in CONDITIONS:
        raise UserError(
            f"license {chosen!r} cannot be compared with the sources' licenses "
            f"({', '.join(sorted(set(source_licenses)))}); known: {', '.join(CONDITIONS)}. "
            "Use --force if you have checked it yourself."
        )
    needed = frozenset().union(*(conditions(lic) for lic in source_licenses)) if source_licenses else frozenset()
    missing = needed - CONDITIONS[chosen]
    if missing:
        raise UserError(
            f"license {chosen!r} is less restrictive than the sources "
            f"({', '.join(sorted(set(source_licenses)))}): it drops {', '.join(sorted(missing))}. "
            f"Use {inherited_license(source_licenses)!r} or stricter, or --force if you hold other rights."
        )


def display_name(license_id: str) -> str:
    return NAMES.get(license_id, license_id)
