"""Through the real CLI (a subprocess, exit codes and stderr as a user sees them); the card folder and its fixture from `tests/card_folders.py`."""

from __future__ import annotations

from card_folders import front_matter
from conftest import run_kbench


def test_cli_card_refuses_weaker_license_without_traceback(lama_dir):
    weaker = run_kbench("card", str(lama_dir), "--license", "cc-by-4.0")
    assert weaker.returncode == 2 and "less restrictive" in weaker.stderr and "Traceback" not in weaker.stderr
    forced = run_kbench("card", str(lama_dir), "--license", "cc-by-4.0", "--force")
    assert forced.returncode == 0, forced.stderr
    assert front_matter(lama_dir / "README.md")["license"] == "cc-by-4.0"


def test_cli_card_then_dry_run_lists_files_and_prints_no_token(lama_dir):
    secret = "hf_notarealtokenbutsecret123456"
    assert run_kbench("card", str(lama_dir)).returncode == 0
    out = run_kbench("publish", str(lama_dir), "--repo-id", "someone/lama-probe", "--dry-run", env={"HF_TOKEN": secret})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["README.md", "data/default/dev.parquet", "data/default/test.parquet",
                                  "manifest.json", "rejected/frequency_bin.parquet", "stats.json"]
    assert secret not in out.stdout + out.stderr
