"""`--model vllm:...` without vLLM installed (the project's venv has none): the argument's options, the
dispatch to the "vllm" backend, a white-box technique refused before anything loads, and a missing vLLM
named with its install command. The backend itself runs in tests/slow/test_vllm_backend.py."""

from __future__ import annotations

import pytest

from kbench.errors import UserError
from kbench.models.interface import BACKENDS, Capability
from kbench.models.served.spec import backend_for
from kbench.models.vllm import parse_arg
from tests.conftest import run_kbench
from tests.dataset_folders import question_dataset


def test_arguments_and_dispatch():
    assert parse_arg("vllm:meta-llama/Llama-3.1-8B;tensor_parallel_size=4;gpu_memory_utilization=0.85;enforce_eager=true") == (
        "meta-llama/Llama-3.1-8B", {"tensor_parallel_size": 4, "gpu_memory_utilization": 0.85, "enforce_eager": True})
    assert backend_for("vllm:smollm2-135m") == "vllm" and backend_for("smollm2-135m") == "hf"
    with pytest.raises(UserError, match="unknown vLLM option 'tp'; known: .*tensor_parallel_size"):
        parse_arg("vllm:x;tp=2")
    with pytest.raises(UserError, match="tensor_parallel_size='two' is not a int"):
        parse_arg("vllm:x;tensor_parallel_size=two")
    with pytest.raises(UserError, match="no model after 'vllm:'"):
        parse_arg("vllm:;seed=1")
    declared = BACKENDS.get("vllm").capabilities
    assert Capability.WHITE_BOX not in declared and Capability.TRAIN not in declared and Capability.RANK_EXACT in declared


@pytest.fixture
def facts(tmp_path):
    return question_dataset(tmp_path / "facts", [{"id": "q0", "relation": "P36", "subject": "France", "object": "Paris",
                                                  "answers": ["Paris"]}])


def test_white_box_technique_refused_up_front(facts, tmp_path):
    done = run_kbench("evaluate", "kee", "--dataset", str(facts), "--techniques", "caa", "--model", "vllm:smollm2-135m",
                      "--out", str(tmp_path / "run"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "technique caa needs the capability 'white_box', which model 'vllm:smollm2-135m' (backend vllm) lacks" in done.stderr
    assert "needs the package 'vllm'" not in done.stderr  # refused before the backend was even imported


def test_missing_vllm_is_named_with_its_install_command(facts, tmp_path):
    done = run_kbench("evaluate", "extraction", "--dataset", str(facts), "--model", "vllm:smollm2-135m", "--out",
                      str(tmp_path / "run"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "needs the package 'vllm'. Install it with: pip install 'kbench[vllm]'" in done.stderr
