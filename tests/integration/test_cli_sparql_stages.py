"""Through the real CLI (a subprocess, exit codes and stderr as a user sees them); the miniature LAMA inputs of `tests/lama_miniature.py`."""

from __future__ import annotations

from conftest import run_kbench


def test_wikidata_cli_errors_name_the_file_and_exit_2(lama, tmp_path):
    (lama.aliases).write_text("Q1\tok\nQ2 }\tbad\n", encoding="utf-8")
    done = run_kbench("wikidata", "subset", "--trex-dir", str(lama.trex_dir), "--aliases", str(lama.aliases),
                      "--out", str(tmp_path / "x.nt"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{lama.aliases}:2" in done.stderr and not (tmp_path / "x.nt").exists()

    (tmp_path / "bad.ttl").write_text("<http://a> <http://b> .\n", encoding="utf-8")
    for args in (["import", str(tmp_path / "missing.nt")], ["import", str(tmp_path / "bad.ttl")],
                 ["import", str(lama.aliases)]):
        done = run_kbench("wikidata", *args, "--store", str(tmp_path / "store"))
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert args[1] in done.stderr
