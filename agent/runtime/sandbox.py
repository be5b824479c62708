"""Run generated (untrusted) code in its own killable process group."""

from __future__ import annotations

import contextvars
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

log = logging.getLogger(__name__)

# Who the sandboxed processes of this thread belong to (the service sets the job id), so a cancel
# can kill them; the registry maps an owner to its live process groups.
current_owner: contextvars.ContextVar[int | None] = contextvars.ContextVar("sandbox_owner", default=None)
_live: dict[int, set[subprocess.Popen[str]]] = {}
_live_lock = threading.Lock()

STDERR_KEEP = 20_000  # characters of stderr kept for diagnosis
PGID_FILE = ".sandbox-pgid"  # the run's process group, so a later run in the same folder can kill it


class SandboxResult(BaseModel):
    """What came back from one sandboxed run: the JSON result, never parsed prints."""

    status: str  # the file's own "pass" | "fail" | "error" | "skipped", or "timeout" | "crashed"
    result: dict[str, Any]
    returncode: int | None
    seconds: float
    stdout_tail: str
    stderr_tail: str


def run_file(
    files: dict[str, str],
    entry: str,
    workdir: Path,
    *,
    device: str,
    timeout_s: float,
    args: tuple[str, ...] = (),
    launcher: tuple[str, ...] = (),
) -> SandboxResult:
    """Write files into a fresh workdir and run `[launcher...] python entry --json result.json` there."""
    if workdir.exists():
        _kill_leftover(workdir)  # a run orphaned by a killed server must not write into the new one
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    for name, source in files.items():
        (workdir / name).write_text(source)
    result_path = workdir / "result.json"
    env = _environment(workdir, device)
    command = [*launcher, sys.executable, entry, "--json", result_path.name, *args]
    started = time.monotonic()
    # Output goes to files, not pipes: a process the run leaves behind cannot hold the run open through them.
    with open(workdir / "stdout.txt", "w") as out, open(workdir / "stderr.txt", "w") as err:
        process = subprocess.Popen(
            command, cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err, text=True,
            start_new_session=True,  # its own process group, so a timeout kills every child
        )
    (workdir / PGID_FILE).write_text(str(process.pid))
    owner = current_owner.get()
    if owner is not None:
        with _live_lock:
            _live.setdefault(owner, set()).add(process)
    timed_out = False
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        _kill_group(process)  # whatever the run left running (a daemon, a handler) must not outlive it
        process.wait()
        if owner is not None:
            with _live_lock:
                _live.get(owner, set()).discard(process)
    seconds = time.monotonic() - started
    stdout = (workdir / "stdout.txt").read_text(errors="replace")
    stderr = (workdir / "stderr.txt").read_text(errors="replace")
    if timed_out:
        return SandboxResult(
            status="timeout", result={"message": f"{entry} ran past {timeout_s:.0f} s and was killed"},
            returncode=None, seconds=seconds, stdout_tail=stdout[-STDERR_KEEP:], stderr_tail=stderr[-STDERR_KEEP:],
        )
    result = _read_result(result_path, stderr)
    status = result.get("status")
    return SandboxResult(
        status=status if status in ("pass", "fail", "error", "skipped") else "crashed",
        result=result,
        returncode=process.returncode, seconds=seconds,
        stdout_tail=stdout[-STDERR_KEEP:], stderr_tail=stderr[-STDERR_KEEP:],
    )


_PASSED = frozenset({"PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TMPDIR", "PYTHONPATH", "VIRTUAL_ENV",
                     "LD_LIBRARY_PATH", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "TORCH_SYMM_MEM_DISABLE_MULTICAST"})
_PASSED_PREFIXES = ("LC_", "CUDA_", "NVIDIA_", "NCCL_", "NVSHMEM_", "ASCEND_", "NPU_", "ASDOPS_", "ATB_", "CONDA_")


def kill_owned(owner: int) -> int:
    """Kill every live sandboxed process group of an owner (a cancelled job); return how many."""
    with _live_lock:
        processes = list(_live.get(owner, ()))
    for process in processes:
        _kill_group(process)
    return len(processes)


def _environment(workdir: Path, device: str) -> dict[str, str]:
    # Only what running torch and Triton needs: generated code never sees API keys or database URLs.
    env = {k: v for k, v in os.environ.items() if k in _PASSED or k.startswith(_PASSED_PREFIXES)}
    env["TRITON_CACHE_DIR"] = str(workdir / ".triton-cache")
    env["KERNELGEN_DEVICE"] = device
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
    return env


def _kill_leftover(workdir: Path) -> None:
    try:
        os.killpg(int((workdir / PGID_FILE).read_text()), signal.SIGKILL)
    except (OSError, ValueError):
        pass  # no record, or the group is gone already


def _kill_group(process: subprocess.Popen[str]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _read_result(path: Path, stderr: str) -> dict[str, Any]:
    if not path.exists():
        last = stderr.strip().splitlines()[-1:] or ["no output"]
        return {"message": f"no result file was written: {last[0]}"}
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        return {"message": f"the result file is not JSON: {exc}"}
    return data if isinstance(data, dict) else {"message": "the result file is not a JSON object"}

