"""Disk full and read-only output directories: a clear error, exit code 2, previous outputs untouched.

The output directory is a real small tmpfs mounted for the test (root only; skipped elsewhere),
so the failures are the kernel's own ENOSPC / EROFS, not simulated ones.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from conftest import run_kbench
from tests.dataset_folders import SMALL_LAMA_BUILD



@pytest.fixture
def tmpfs(tmp_path):
    mounted: list[Path] = []

    def mount(size: str) -> Path:
        target = tmp_path / f"mnt{len(mounted)}"
        target.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(target)], capture_output=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
        mounted.append(target)
        return target

    yield mount
    for target in mounted:
        subprocess.run(["umount", "-l", str(target)], capture_output=True)


def snapshot(folder: Path) -> dict[str, str]:
    """The user-visible outputs (the hidden .kbench/ work area is the runner's to manage)."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and ".kbench" not in p.parts}


def test_read_only_output_exit_2_and_previous_outputs_untouched(tmpfs):
    out = tmpfs("64m") / "lama"
    first = run_kbench("build", *SMALL_LAMA_BUILD, "--out", str(out))
    assert first.returncode == 0, first.stderr
    before = snapshot(out)
    subprocess.run(["mount", "-o", "remount,ro", str(out.parent)], check=True)
    again = run_kbench("build", *SMALL_LAMA_BUILD, "--out", str(out), "--set", "cap.max_per_relation=5")
    assert again.returncode == 2, again.stderr
    assert "Traceback" not in again.stderr and "error:" in again.stderr and str(out) in again.stderr
    assert snapshot(out) == before


def test_disk_full_exit_2_and_previous_outputs_untouched(tmpfs):
    mount = tmpfs("3m")
    out = mount / "lama"
    first = run_kbench("build", *SMALL_LAMA_BUILD, "--out", str(out))
    assert first.returncode == 0, first.stderr
    before = snapshot(out)
    filler = mount / "filler"
    subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=4k"], capture_output=True)  # fills the disk
    again = run_kbench("build", *SMALL_LAMA_BUILD, "--out", str(out), "--set", "cap.max_per_relation=5")
    assert again.returncode == 2, again.stderr
    assert "Traceback" not in again.stderr and "space" in again.stderr.lower()
    assert snapshot(out) == before
    filler.unlink()
    # With space again, the same command completes and resumes the stages before the change.
    third = run_kbench("build", *SMALL_LAMA_BUILD, "--out", str(out), "--set", "cap.max_per_relation=5")
    assert third.returncode == 0, third.stderr
    assert "reused" in third.stderr


def test_disk_full_in_a_chunked_stage_exit_2(tmpfs, tmp_path, shared_data):
    """The same through a row-wise stage's chunk writer: the aliases file is given by another path
    (a link to the same table), so `attach_aliases` is the first stage to recompute and write."""
    mount = tmpfs("3m")
    out = mount / "lama"
    assert run_kbench("build", *SMALL_LAMA_BUILD, "--out", str(out)).returncode == 0
    before = snapshot(out)
    aliases = tmp_path / "aliases.txt"
    aliases.symlink_to(shared_data / "wikidata_aliases_xfactr" / "TREx_en.txt")
    subprocess.run(["dd", "if=/dev/zero", f"of={mount / 'filler'}", "bs=4k"], capture_output=True)
    again = run_kbench("build", *SMALL_LAMA_BUILD, "--out", str(out), "--set", f'aliases.aliases_file="{aliases}"')
    assert again.returncode == 2, again.stderr
    assert "Traceback" not in again.stderr and "space" in again.stderr.lower()
    assert snapshot(out) == before
