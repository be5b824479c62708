"""Jobs on a real local Ray cluster: a 12-task batch verifies through 2 workers, survives a killed worker, agrees
with the local executor."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.databases import POSTGRES_URL, database_url
from tests.server.subprocess_server import Server, environment

ray = pytest.importorskip("ray")
# Twelve distinct small tasks: every one verifies in the interpreter in a few seconds.
SPECS = [f"ReLU on a float32 tensor x of shape [{8 + i}, {16 + 3 * i}]" for i in range(6)] + [
    f"sigmoid of x [{4 + i}, {32 + i}] float32" for i in range(6)]


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def _head(gpus: int) -> Iterator[str]:
    """Start a Ray head on 127.0.0.1 with two worker slots and `gpus` logical GPUs; stop it afterwards."""
    if shutil.which("ray") is None:
        pytest.skip("the ray command is not installed")
    port = _free_port()
    env = os.environ | {"PYTHONPATH": str(Path(__file__).resolve().parents[2]), "RAY_USAGE_STATS_ENABLED": "0"}
    started = subprocess.run(
        ["ray", "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}", "--num-cpus=2",
         f"--num-gpus={gpus}", "--include-dashboard=false", "--disable-usage-stats"],
        env=env, capture_output=True, text=True, timeout=120)
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run(["ray", "stop", "--force"], capture_output=True, timeout=60)


@pytest.fixture
def ray_head() -> Iterator[str]:
    """A Ray head with two CPU worker slots and no GPU."""
    with _head(gpus=0) as address:
        yield address


def _run_batch(server: Server, kill_worker: bool = False) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    batch_id = server.post("/batches", {"specs": SPECS, "device": "cpu"})["id"]
    killed = not kill_worker
    deadline = time.monotonic() + 600
    while (batch := server.get(f"/batches/{batch_id}"))["status"] != "done":
        assert time.monotonic() < deadline, batch
        if not killed and batch["counts"]["verified"] >= 3 and batch["counts"]["running"]:
            killed = _kill_a_busy_worker()
        time.sleep(0.3)
    assert killed, "no Ray worker was running a job to kill"
    jobs = [server.get(f"/jobs/{t['job_id']}") for t in batch["tasks"]]
    return batch, jobs


def _kill_a_busy_worker() -> bool:
    """SIGKILL one Ray worker process that is running a job (its title names the task's function)."""
    listing = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    busy = [int(line.split()[0]) for line in listing.splitlines() if "ray::run_on_worker" in line]
    if not busy:
        return False
    os.kill(busy[0], signal.SIGKILL)
    return True


@pytest.mark.skipif(not POSTGRES_URL, reason="several processes write the job database: PostgreSQL "
                                             "(KERNELGEN_TEST_POSTGRES_URL, which .ci/run sets)")
def test_a_batch_on_ray_survives_a_killed_worker_and_matches_the_local_executor(
    ray_head: str, tmp_path: Path,
) -> None:
    with database_url("postgresql", tmp_path) as url:
        env = environment(tmp_path, url) | {"KERNELGEN_EXECUTOR": "ray", "KERNELGEN_RAY_ADDRESS": ray_head}
        server = Server(env)
        try:
            batch, jobs = _run_batch(server, kill_worker=True)
            events = {job["id"]: server.get(f"/jobs/{job['id']}")["rounds"] for job in jobs}
        finally:
            server.stop()
    assert batch["counts"]["verified"] == len(SPECS), batch["counts"]
    assert len({job["id"] for job in jobs}) == len(SPECS)  # one job per task
    for job_id, rounds in events.items():
        indexes = [r["index"] for r in rounds]
        assert indexes == sorted(set(indexes)), (job_id, indexes)  # no round recorded twice
    (tmp_path / "local").mkdir(exist_ok=True)
    with database_url("postgresql", tmp_path / "local") as url:
        local = Server(environment(tmp_path / "local", url) | {"KERNELGEN_CONCURRENCY": "2"})
        try:
            local_batch, _ = _run_batch(local)
        finally:
            local.stop()
    assert [t["status"] for t in local_batch["tasks"]] == [t["status"] for t in batch["tasks"]]


def test_a_job_may_ask_for_a_gpu_the_cluster_has_though_this_machine_has_none(tmp_path: Path) -> None:
    with _head(gpus=1) as address, database_url("sqlite", tmp_path) as url:
        server = Server(environment(tmp_path, url) | {"KERNELGEN_EXECUTOR": "ray", "KERNELGEN_RAY_ADDRESS": address})
        try:
            accepted = server.post("/jobs", {"spec": SPECS[0], "device": "cuda"})
            deadline = time.monotonic() + 300
            while (job := server.get(f"/jobs/{accepted['id']}"))["status"] not in ("verified", "failed", "rejected"):
                assert time.monotonic() < deadline, job
                time.sleep(0.3)
        finally:
            server.stop()
    # The GPU is only declared: the worker that holds it finds no CUDA device, and the job says so.
    assert job["status"] == "failed" and "cuda" in job["message"].lower(), job
