"""Generated code is contained by bubblewrap: what it may read, write, reach and start, and how much it may use."""

from __future__ import annotations

import json
import logging
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.runtime import mounts
from agent.runtime.isolation import SandboxPolicy, current_policy
from agent.runtime.sandbox import SandboxResult, run_file
from tests.processes import new_marker, processes_with, wait_gone

RESULT = 'json.dump(r, open(sys.argv[sys.argv.index("--json") + 1], "w"))\n'
# Every test here is about bubblewrap: skipped, saying why, where it cannot start (CI installs it); those marked
# needed=False (the refusal without it, the bind arguments) run anyway.
pytestmark = pytest.mark.bubblewrap


@pytest.fixture
def policy() -> Iterator[SandboxPolicy]:
    """Run with tight limits, so the resource tests finish in seconds on a small machine."""
    tight = SandboxPolicy(max_processes=32, memory_mb=1024, max_file_mb=8, tmp_mb=16)
    token = current_policy.set(tight)
    yield tight
    current_policy.reset(token)


def _run(tmp_path: Path, body: str, timeout_s: float = 60, **options: object) -> SandboxResult:
    source = "import errno, json, os, sys\nr = {'status': 'pass'}\n" + body + RESULT
    return run_file({"probe.py": source}, "probe.py", tmp_path / "w", device="cpu", timeout_s=timeout_s,
                    **options)  # type: ignore[arg-type]


def test_it_writes_only_its_own_folder_and_a_private_tmp(tmp_path: Path) -> None:
    outside = [tmp_path / "outside.txt", Path("/usr/kernelgen-probe"), Path.home() / "kernelgen-probe",
               Path("/etc/kernelgen-probe")]
    body = f"""
for path in {[str(p) for p in outside]!r} + ["/tmp/private.txt", "mine.txt"]:
    try:
        open(path, "w").write("x")
        r[path] = "written"
    except OSError as exc:
        r[path] = errno.errorcode[exc.errno]
"""
    result = _run(tmp_path, body)
    assert result.status == "pass", result.stderr_tail
    for path in outside:
        assert result.result[str(path)] in ("EROFS", "EACCES", "ENOENT"), result.result
        assert not path.exists()
    assert result.result["/tmp/private.txt"] == "written" and not Path("/tmp/private.txt").exists()
    assert (tmp_path / "w" / "mine.txt").read_text() == "x"


def test_it_cannot_read_secrets_of_the_host(tmp_path: Path) -> None:
    secret = tmp_path / "kg.db"
    secret.write_text("the job database")
    env_file = tmp_path / ".env"
    env_file.write_text("KERNELGEN_API_TOKENS=secret")
    targets = [str(secret), str(env_file), str(Path.home() / ".ssh"), "/etc/shadow", str(Path.cwd() / "pyproject.toml")]
    body = f"""
for path in {targets!r}:
    try:
        r[path] = os.listdir(path) if os.path.isdir(path) else open(path).read()
    except OSError as exc:
        r[path] = errno.errorcode[exc.errno]
"""
    result = _run(tmp_path, body)
    assert result.status == "pass", result.stderr_tail
    assert all(result.result[t] in ("ENOENT", "EACCES") for t in targets), result.result


def test_it_reaches_no_network_not_even_loopback(tmp_path: Path) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    body = f"""
import socket
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2)
    r["loopback"] = "connected"
except OSError as exc:
    r["loopback"] = type(exc).__name__
r["interfaces"] = sorted(name for _, name in socket.if_nameindex())
"""
    result = _run(tmp_path, body)
    assert result.result["loopback"] == "ConnectionRefusedError" and result.result["interfaces"] == ["lo"]
    with pytest.raises(TimeoutError):
        listener.accept()
    listener.close()


def test_it_runs_unprivileged_and_sees_only_its_own_processes(tmp_path: Path) -> None:
    body = """
r["uid"] = os.getuid()
r["caps"] = [line.split()[1] for line in open("/proc/self/status") if line.startswith("CapEff")][0]
r["pids"] = [p for p in os.listdir("/proc") if p.isdigit()]
import ctypes
r["userns"] = ctypes.CDLL(None, use_errno=True).unshare(0x10000000)  # CLONE_NEWUSER
"""
    result = _run(tmp_path, body)
    assert result.status == "pass", result.stderr_tail
    assert result.result["uid"] == 65534 and int(result.result["caps"], 16) == 0
    assert len(result.result["pids"]) <= 4  # bubblewrap's init, the wrappers that exec'd into Python, and itself
    assert result.result["userns"] == -1  # no nested user namespace


def test_no_process_outlives_the_run_even_in_a_new_session(tmp_path: Path) -> None:
    marker = new_marker()
    body = f"""
import subprocess
subprocess.Popen(["setsid", "sh", "-c", "sleep 240; touch /tmp/late # {marker}"], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    os.execv("/bin/sleep", ["sleep", "240", "{marker}"])
"""
    result = _run(tmp_path, body)
    assert result.status == "pass", result.stderr_tail
    assert not wait_gone(marker, timeout=2.0)


def test_no_process_outlives_the_service_killed_mid_run(tmp_path: Path) -> None:
    marker = new_marker()
    hangs = f"import os, subprocess, time\nsubprocess.Popen(['sleep', '240', '{marker}'])\ntime.sleep(240)\n"
    service = (f"from pathlib import Path\nfrom agent.runtime.sandbox import run_file\n"
               f"run_file({{'hang.py': {hangs!r}}}, 'hang.py', Path({str(tmp_path / 'w')!r}), device='cpu', "
               f"timeout_s=300)\n")
    process = subprocess.Popen([sys.executable, "-c", service], cwd=Path(__file__).parents[3])
    deadline = time.monotonic() + 60
    while not processes_with(marker):
        assert time.monotonic() < deadline and process.poll() is None, "the sandboxed run never started"
        time.sleep(0.1)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not wait_gone(marker, timeout=5.0), "a sandboxed process outlived the service"


def test_unbounded_allocation_fails_inside_the_run(tmp_path: Path, policy: SandboxPolicy) -> None:
    body = "blocks = []\nwhile True:\n    blocks.append(bytearray(64 * 2**20))\n"
    started = time.monotonic()
    result = _run(tmp_path, body)
    assert result.status == "crashed" and "MemoryError" in result.stderr_tail
    assert time.monotonic() - started < 30


def test_a_fork_bomb_hits_the_process_limit_and_leaves_nothing(tmp_path: Path, policy: SandboxPolicy) -> None:
    marker = new_marker()
    body = f"""
import time
children = 0
sys.argv.append("{marker}")
for _ in range(500):
    try:
        if os.fork() == 0:
            time.sleep(240)
            os._exit(0)
        children += 1
    except OSError as exc:
        r["stopped"] = errno.errorcode[exc.errno]
        break
r["children"] = children
"""
    result = _run(tmp_path, body)
    assert result.status == "pass", result.stderr_tail
    assert result.result["stopped"] == "EAGAIN" and result.result["children"] < policy.max_processes
    assert not wait_gone(marker, timeout=3.0)


def test_file_size_and_tmp_are_bounded(tmp_path: Path, policy: SandboxPolicy) -> None:
    body = """
for path in ("big.bin", "/tmp/big.bin"):
    try:
        with open(path, "wb") as f:
            for _ in range(64):
                f.write(bytes(2**20))
        r[path] = "written"
    except OSError as exc:
        r[path] = errno.errorcode[exc.errno]
"""
    result = _run(tmp_path, body)
    assert result.result == {"status": "pass", "big.bin": "EFBIG", "/tmp/big.bin": "EFBIG"}
    assert (tmp_path / "w" / "big.bin").stat().st_size <= policy.max_file_mb * 2**20


def test_a_result_file_linked_to_a_secret_is_not_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text('{"status": "pass", "secret": "hunter2"}')
    body = f"""
os.symlink({str(secret)!r}, sys.argv[sys.argv.index("--json") + 1])
os.unlink("stderr.txt"); os.symlink({str(secret)!r}, "stderr.txt")
sys.exit(0)
"""
    result = run_file({"probe.py": "import os, sys\n" + body}, "probe.py", tmp_path / "w", device="cpu",
                      timeout_s=60)
    assert result.status == "crashed" and "hunter2" not in json.dumps(result.model_dump())


@pytest.mark.bubblewrap(needed=False)
def test_without_bubblewrap_model_code_is_refused_and_offline_code_runs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    token = current_policy.set(SandboxPolicy(bwrap=str(tmp_path / "no-bwrap")))
    try:
        refused = _run(tmp_path, "")
        assert refused.status == "refused" and "KERNELGEN_SANDBOX_ALLOW_UNISOLATED" in refused.result["message"]
        assert not (tmp_path / "w" / "result.json").exists()
        assert _run(tmp_path, "", trusted=True).status == "pass"
    finally:
        current_policy.reset(token)
    token = current_policy.set(SandboxPolicy(bwrap=str(tmp_path / "no-bwrap"), allow_unisolated=True))
    try:
        with caplog.at_level(logging.WARNING, logger="agent.runtime.sandbox"):
            assert _run(tmp_path, "").status == "pass"
        assert "WITHOUT isolation" in caplog.text
    finally:
        current_policy.reset(token)


@pytest.mark.bubblewrap(needed=False)  # reads bubblewrap's arguments; nothing runs
def test_gpu_device_nodes_are_bound_only_into_gpu_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(mounts.DEVICE_NODES, "cuda", ("/dev/nul*",))  # this machine has no GPU node to bind
    cuda = mounts.bind_args(tmp_path, "cuda", [], 2**20)
    cpu = mounts.bind_args(tmp_path, "cpu", [], 2**20)
    assert "/dev/null" in cuda[cuda.index("--dev-bind") + 1:] and "--dev-bind" not in cpu
    assert str(tmp_path.resolve()) == cpu[-1] and cpu[-3] == "--bind"  # the folder is the one writable bind
