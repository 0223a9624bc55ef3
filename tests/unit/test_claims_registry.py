"""The claim-statistics registry: every statistic a packaged claim set names is registered, and a
statistic lives in the folder of the task whose cells it reads (`kbench/tasks/<name>/claims.py`) or,
reading no task's knowledge, in the claims frame; an unknown name is a UserError naming the known ones."""

from __future__ import annotations

import pytest

from kbench.claims.sets import claim_sets
from kbench.claims.statistics import STATISTICS
from kbench.errors import UserError


def test_every_claim_names_a_registered_statistic_in_its_task_folder_or_the_frame():
    claims = [c for chosen in claim_sets().values() for c in chosen.tested]
    assert claims
    for claim in claims:
        home = STATISTICS.get(claim.statistic).measure.__module__
        assert home in (f"kbench.tasks.{claim.task}.claims", "kbench.claims.statistics"), (claim.label, home)


def test_every_statistic_sizes_its_cells_for_the_plan():
    unplanned = [name for name, entry in STATISTICS.items().items() if entry.design is None]
    assert not unplanned


def test_an_unknown_statistic_names_the_known_ones():
    with pytest.raises(UserError, match="unknown claim statistic 'no_such'; known: .*technique_above"):
        STATISTICS.get("no_such")
