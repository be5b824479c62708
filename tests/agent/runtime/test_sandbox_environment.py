"""A sandboxed run gets a built environment: named variables with checked values, nothing that looks secret."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from agent.reader.code import find_code, read_code
from agent.reader.errors import SpecQuestion
from agent.runtime.sandbox import run_file

pytestmark = pytest.mark.bubblewrap  # each test runs untrusted code

DUMPS_THE_ENVIRONMENT = '''
import json, os, sys
json.dump({"status": "pass", "env": dict(os.environ)}, open(sys.argv[sys.argv.index("--json") + 1], "w"))
'''
# Names the old prefix filter (LC_, CUDA_, NVIDIA_, NCCL_, ASCEND_, NPU_, CONDA_ ...) passed to every run.
PLANTED = ("NVIDIA_API_KEY", "CUDA_SECRET_TOKEN", "LC_SECRET", "CONDA_TOKEN", "NCCL_AUTH_PASSWORD", "NPU_PASSWD",
           "ASCEND_CREDENTIALS", "ATB_KEY")


def _environment_of_a_run(tmp_path: Path) -> dict[str, str]:
    result = run_file({"env.py": DUMPS_THE_ENVIRONMENT}, "env.py", tmp_path / "w", device="cpu", timeout_s=60)
    assert result.status == "pass", result.stderr_tail
    env: dict[str, str] = result.result["env"]
    return env


def test_no_secret_looking_variable_reaches_a_run_whatever_its_prefix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    values = {name: f"planted-{uuid.uuid4().hex}" for name in PLANTED}
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    env = _environment_of_a_run(tmp_path)
    assert not set(PLANTED) & set(env)
    dumped = json.dumps(env)
    assert not [value for value in values.values() if value in dumped]
    assert {"PATH", "HOME", "KERNELGEN_DEVICE", "TRITON_CACHE_DIR"} <= set(env)


def test_only_listed_variables_with_well_formed_values_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.setenv("CUDA_HOME", "relative/cuda")  # a path that would resolve inside the run's own folder
    monkeypatch.setenv("TRITON_PTXAS_PATH", "/usr/bin/ptxas\nLD_PRELOAD=/tmp/evil.so")
    monkeypatch.setenv("ASCEND_RT_VISIBLE_DEVICES", "0;touch /tmp/x")
    monkeypatch.setenv("NCCL_DEBUG", "INFO")  # a prefix the old filter passed; no run needs it
    monkeypatch.setenv("PYTHONPATH", f"relative:{tmp_path}")
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "0")  # the host keeps NVLink multicast off: runs must keep it off too
    monkeypatch.setenv("NVSHMEM_DISABLE_NVLS", "1")
    env = _environment_of_a_run(tmp_path)
    assert env["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert env["NCCL_NVLS_ENABLE"] == "0" and env["NVSHMEM_DISABLE_NVLS"] == "1"
    assert env["OMP_NUM_THREADS"] == "2" and env["LANG"] == "C.UTF-8"
    assert not {"CUDA_HOME", "TRITON_PTXAS_PATH", "ASCEND_RT_VISIBLE_DEVICES", "NCCL_DEBUG"} & set(env)
    assert env["PYTHONPATH"] == str(tmp_path)  # the relative entry is dropped, the absolute one kept


def test_code_given_as_a_spec_reads_no_secret_while_it_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = f"planted-{uuid.uuid4().hex}"
    monkeypatch.setenv("NVIDIA_API_KEY", secret)
    source = ("import os\nraise RuntimeError('seen ' + os.environ.get('NVIDIA_API_KEY', 'nothing'))\n\n"
              "def f(x):\n    return x.relu()\n")
    code = find_code(f"```python\n{source}```")
    assert code is not None
    with pytest.raises(SpecQuestion) as raised:
        read_code(code, work_dir=tmp_path / "read", declared={"x": ([4], "float32")}, timeout_s=60)
    assert "seen nothing" in str(raised.value) and secret not in str(raised.value)
