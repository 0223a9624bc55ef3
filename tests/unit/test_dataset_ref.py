"""What `--dataset` names: a local folder, or a Hub dataset id whose cache folder tells its commit."""

from __future__ import annotations

import pytest

from kbench.dataset import hub_origin, resolve_dataset
from kbench.errors import UserError


def test_a_local_folder_is_used_as_it_is(tmp_path):
    assert resolve_dataset(tmp_path) == tmp_path
    assert hub_origin(tmp_path) is None


def test_a_path_that_is_no_folder_and_no_hub_id_is_one_clear_error(tmp_path):
    with pytest.raises(UserError, match="no such folder, and not a Hub dataset id"):
        resolve_dataset(tmp_path / "runs" / "lamma")


def test_the_hub_cache_folder_names_the_repo_and_the_commit(tmp_path):
    commit = "0123456789abcdef" * 2 + "01234567"
    snapshot = tmp_path / "hub" / "datasets--some-org--lama.probe" / "snapshots" / commit
    assert hub_origin(snapshot) == {"repo_id": "some-org/lama.probe", "commit": commit}
    assert hub_origin(snapshot / "data") is None   # only the snapshot root itself is a published dataset
