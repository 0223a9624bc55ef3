"""Nobody let in: remote code stays off, planted tokens never leak, caches hold no pickle,
and two builds never write the same folder at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO_ROOT, run_kbench
from tests.dataset_folders import SMALL_LAMA_BUILD

PLANTED = "hf_PLANTEDsecretTOKENdoNotLeak1234567890"


def test_remote_code_is_not_run_without_the_flag(tmp_path):
    model = tmp_path / "evil-model"
    model.mkdir()
    sentinel = tmp_path / "remote-code-ran"
    (model / "config.json").write_text(json.dumps({
        "model_type": "evil", "architectures": ["EvilForCausalLM"],
        "auto_map": {"AutoConfig": "configuration_evil.EvilConfig", "AutoModelForCausalLM": "modeling_evil.EvilForCausalLM"},
    }))
    payload = f"open({str(sentinel)!r}, 'w').write('ran')\n"
    (model / "configuration_evil.py").write_text(payload)
    (model / "modeling_evil.py").write_text(payload)
    dataset = tmp_path / "no-dataset"
    done = run_kbench("evaluate", "extraction", "--dataset", str(dataset), "--model", str(model), "--out", str(tmp_path / "run"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    from kbench.errors import UserError
    from kbench.models.loading import load_model

    with pytest.raises(UserError):
        load_model(str(model))
    assert not sentinel.exists()


def _files_under(*folders: Path):
    for folder in folders:
        if folder.exists():
            yield from (p for p in folder.rglob("*") if p.is_file())


def test_planted_token_never_appears_in_outputs_logs_or_errors(tmp_path, tiny_causal_dir):
    env = {"HF_TOKEN": PLANTED, "HUGGING_FACE_HUB_TOKEN": PLANTED, "HF_HUB_OFFLINE": "0",
           "HF_ENDPOINT": "http://127.0.0.1:9", "KBENCH_CACHE": str(tmp_path / "cache")}
    out, run = tmp_path / "lama", tmp_path / "ext"
    steps = [
        ("build", *SMALL_LAMA_BUILD, "--out", str(out)),
        ("card", str(out)),
        ("publish", str(out), "--repo-id", "someone/probe", "--dry-run"),
        ("publish", str(out), "--repo-id", "someone/probe"),  # the Hub is unreachable: must fail without the token
        ("evaluate", "extraction", "--dataset", str(out), "--model", str(tiny_causal_dir), "--limit", "4", "--out", str(run)),
        ("report", str(run), "--out", str(tmp_path / "report")),
    ]
    transcript = []
    for args in steps:
        done = run_kbench(*args, env=env)
        transcript.append(done.stdout + done.stderr)
        if args[:2] == ("publish", str(out)) and "--dry-run" not in args:
            assert done.returncode != 0
        else:
            assert done.returncode == 0, (args, done.stderr)
    assert all(PLANTED not in text for text in transcript)
    for path in _files_under(out, run, tmp_path / "report", tmp_path / "cache"):
        assert PLANTED.encode() not in path.read_bytes(), path


def test_caches_and_runs_hold_no_pickle(tmp_path, tiny_causal_dir):
    cache, out, run = tmp_path / "cache", tmp_path / "lama", tmp_path / "ext"
    env = {"KBENCH_CACHE": str(cache), "KBENCH_MODEL_CACHE": str(cache / "models")}
    assert run_kbench("build", *SMALL_LAMA_BUILD, "--out", str(out), env=env).returncode == 0
    done = run_kbench("evaluate", "extraction", "--dataset", str(out), "--model", str(tiny_causal_dir), "--limit", "4",
                      "--out", str(run), env=env)
    assert done.returncode == 0, done.stderr
    from safetensors import safe_open

    checked = 0
    for path in _files_under(cache, out, run):
        assert path.suffix not in {".pkl", ".pickle", ".pt", ".pth", ".bin", ".npy"} or path.suffix == ".npy", path
        head = path.read_bytes()[:2]
        if path.suffix == ".safetensors":
            with safe_open(str(path), "pt"):
                pass
        else:
            assert not (head[:1] == b"\x80" and head[1:2] in {b"\x02", b"\x03", b"\x04", b"\x05"}), f"pickle in {path}"
        checked += 1
    assert checked > 10


def test_two_builds_on_one_folder_never_interleave(tmp_path):
    out = tmp_path / "lama"
    env = {**os.environ, "KBENCH_CACHE": str(tmp_path / "cache")}
    first = subprocess.Popen([sys.executable, "-m", "kbench", "build", *SMALL_LAMA_BUILD, "--out", str(out)],
                             cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lock = out / ".kbench" / "lock"
    deadline = time.monotonic() + 60
    while not (lock.exists() and lock.read_text().strip()):
        assert first.poll() is None and time.monotonic() < deadline, "first build ended before taking the lock"
        time.sleep(0.05)
    second = run_kbench("build", *SMALL_LAMA_BUILD, "--out", str(out), env={"KBENCH_CACHE": str(tmp_path / "cache")})
    _, first_err = first.communicate(timeout=300)
    assert first.returncode == 0, first_err
    assert second.returncode == 2 and "another kbench process" in second.stderr and "Traceback" not in second.stderr
    again = run_kbench("build", *SMALL_LAMA_BUILD, "--out", str(out), env={"KBENCH_CACHE": str(tmp_path / "cache")})
    assert again.returncode == 0 and again.stderr.count("dropped, reused)") == 9  # each stage's progress line


def test_two_evaluations_on_one_run_folder_are_refused(tmp_path):
    from kbench.errors import UserError
    from kbench.evaluate.engine import Processes, RunDirectory

    one = Processes(0, 1, lambda: None)
    with RunDirectory(tmp_path / "run", {"task": "extraction", "model": "m"}, one):
        with pytest.raises(UserError, match="in use"):
            with RunDirectory(tmp_path / "run", {"task": "extraction", "model": "m"}, one):
                pass
