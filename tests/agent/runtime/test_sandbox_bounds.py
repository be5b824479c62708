"""A run is bounded as a whole: its folder by a disk quota, its processes' memory and count by a cgroup (where one is
made here: KERNELGEN_TEST_CGROUP names a delegated cgroup v2 folder; without one those tests are skipped)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.runtime.cgroups import PREFIX, find_base
from agent.runtime.isolation import SandboxPolicy, current_policy
from agent.runtime.quota import folder_bytes
from agent.runtime.sandbox import SandboxResult, run_file

CGROUP = Path(os.environ["KERNELGEN_TEST_CGROUP"]) if os.environ.get("KERNELGEN_TEST_CGROUP") else None
RESULT = 'json.dump(r, open(sys.argv[sys.argv.index("--json") + 1], "w"))\n'


def _bounded(**limits: object) -> Iterator[SandboxPolicy]:
    policy = SandboxPolicy(cgroup=CGROUP, **limits)  # type: ignore[arg-type]
    token = current_policy.set(policy)
    yield policy
    current_policy.reset(token)


@pytest.fixture
def disk_quota() -> Iterator[SandboxPolicy]:
    """A 16 MB quota for the run's folder (each file may be far larger)."""
    yield from _bounded(run_disk_mb=16)


@pytest.fixture
def cgroup() -> Iterator[SandboxPolicy]:
    """A run memory of 256 MB and 32 processes, in a cgroup: skipped where none can be made."""
    base, reason = find_base(CGROUP)
    if base is None:
        pytest.skip(f"no cgroup for runs here: {reason}")
    yield from _bounded(run_memory_mb=256, max_processes=32)


def _run(tmp_path: Path, body: str, timeout_s: float = 60) -> SandboxResult:
    source = "import json, os, sys, time\nr = {'status': 'pass'}\n" + body + RESULT
    return run_file({"probe.py": source}, "probe.py", tmp_path / "w", device="cpu", timeout_s=timeout_s,
                    trusted=True)  # our own file: it runs here with or without bubblewrap


WRITES_FOREVER = """
chunk = b"x" * 2**20
for i in range(10**6):
    with open(f"part-{i}.bin", "wb") as f:
        f.write(chunk)
    print("wrote", i, flush=True)
"""


def test_a_run_writing_past_its_disk_quota_is_killed_and_its_files_removed(
    tmp_path: Path, disk_quota: SandboxPolicy,
) -> None:
    started = time.monotonic()
    result = _run(tmp_path, WRITES_FOREVER)
    assert result.status == "killed", result
    message = result.result["message"]
    assert "disk quota of 16 MB" in message and "KERNELGEN_SANDBOX_RUN_DISK_MB" in message
    assert time.monotonic() - started < 30
    assert "wrote 16" in result.stdout_tail  # it got past the quota (files of 1 MB, well under the per-file limit)
    assert folder_bytes(tmp_path / "w") < 2**20  # what it wrote is gone; its output files stay


def test_a_run_that_ends_before_its_folder_is_measured_is_still_caught(
    tmp_path: Path, disk_quota: SandboxPolicy,
) -> None:
    result = _run(tmp_path, 'for n in (1, 2):\n    open(f"big-{n}.bin", "wb").write(b"x" * 12 * 2**20)\n')
    assert result.status == "killed"  # two files of 12 MB: each under any per-file limit, together over 16 MB
    assert not list((tmp_path / "w").glob("big-*"))


def test_a_run_under_its_quota_passes(tmp_path: Path, disk_quota: SandboxPolicy) -> None:
    result = _run(tmp_path, 'open("small.bin", "wb").write(b"x" * 4 * 2**20)\n')
    assert result.status == "pass", result
    assert (tmp_path / "w" / "small.bin").stat().st_size == 4 * 2**20


FORKS_THAT_EACH_HOLD = """
children = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        held = bytearray(160 * 2**20)  # touched: resident, not only reserved
        time.sleep(2)
        os._exit(0)
    children.append(pid)
r["exits"] = [os.waitpid(pid, 0)[1] for pid in children]
"""


def test_forked_processes_share_one_memory_limit(tmp_path: Path, cgroup: SandboxPolicy) -> None:
    result = _run(tmp_path, FORKS_THAT_EACH_HOLD)  # 3 x 160 MB: each under 256 MB, together over it
    assert result.status == "killed", result
    assert "memory limit of 256 MB" in result.result["message"]


FORKS_UNTIL_REFUSED = """
children = 0
try:
    for _ in range(200):
        if os.fork() == 0:
            time.sleep(10)
            os._exit(0)
        children += 1
except OSError as exc:
    r["refused"] = str(exc)
r["children"] = children
"""


def test_a_run_starts_at_most_its_process_limit_and_its_cgroup_goes(tmp_path: Path, cgroup: SandboxPolicy) -> None:
    base, _ = find_base(CGROUP)
    assert base is not None
    result = _run(tmp_path, FORKS_UNTIL_REFUSED)
    assert result.status == "pass", result
    assert "refused" in result.result and result.result["children"] < 32
    assert not list(base.glob(f"{PREFIX}*"))  # the run's group, and its sleeping children, are gone
