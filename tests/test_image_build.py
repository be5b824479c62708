"""The image itself: built and started where a Docker daemon answers, skipped (saying why) where none does.

It builds the CPU variant (compose's cpu profile: the same Dockerfile, a smaller torch) and checks what the image's
pins, user and sandbox promise, running it with the options docs/service.md gives `docker run`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from collections.abc import Iterator

import pytest

from tests.test_container import ROOT, compose, docker_runs, pins, sandbox_options

DOCKER = shutil.which("docker")


def no_daemon() -> str | None:
    """Say why no image can be built here, or return None when a Docker daemon answers."""
    if DOCKER is None:
        return "no docker client here (Debian: apt-get install docker.io, then start its daemon)"
    done = subprocess.run([DOCKER, "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True,
                          timeout=60)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["docker info failed"])[-1]
        return f"no Docker daemon answers here ({last[:200]})"
    return None


@pytest.fixture(scope="module")
def image() -> Iterator[str]:
    """Build the image as compose's cpu profile does; remove it afterwards."""
    reason = no_daemon()
    if reason is not None:
        pytest.skip(f"the image is not built: {reason}")
    tag = f"kernelgen-test:{uuid.uuid4().hex[:8]}"
    args = compose()["services"]["kernelgen-cpu"]["build"]["args"]
    build = [DOCKER or "docker", "build", "-t", tag, *(f"--build-arg={k}={v}" for k, v in args.items()), str(ROOT)]
    subprocess.run(build, check=True, timeout=3000)
    try:
        yield tag
    finally:
        subprocess.run([DOCKER or "docker", "rmi", "-f", tag], capture_output=True, timeout=300)


def docker_run(image: str, *argv: str, entrypoint: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the image once with the sandbox options of docs/service.md's first `docker run`."""
    options = [f"--security-opt={o}" for o in sorted(sandbox_options(docker_runs()[0]))]
    if entrypoint is not None:
        options += ["--entrypoint", entrypoint]
    command = [DOCKER or "docker", "run", "--rm", *options, image, *argv]
    return subprocess.run(command, capture_output=True, text=True, timeout=600)


@pytest.mark.timeout(3600)  # the first build downloads torch
def test_the_image_holds_the_pinned_torch_and_triton_and_runs_as_its_user(image: str) -> None:
    probe = "import json, os, torch, triton; print(json.dumps([torch.__version__, triton.__version__, os.getuid()]))"
    done = docker_run(image, "-c", probe, entrypoint="python")
    assert done.returncode == 0, done.stderr
    torch_version, triton_version, uid = json.loads(done.stdout.strip().splitlines()[-1])
    assert torch_version.split("+")[0] == pins()["torch"] and triton_version == pins()["triton"]
    assert uid == 10001


@pytest.mark.timeout(3600)
def test_bubblewrap_starts_in_the_image_with_the_documented_options(image: str) -> None:
    probe = ("from agent.runtime.isolation import SandboxPolicy, probe; i = probe(SandboxPolicy()); "
             "print(i.mode, i.reason)")
    done = docker_run(image, "-c", probe, entrypoint="python")
    assert done.returncode == 0 and done.stdout.split()[0] == "userns", done.stdout + done.stderr


@pytest.mark.timeout(3600)
def test_the_image_reads_a_spec(image: str) -> None:
    done = docker_run(image, "read", "ReLU on a float32 tensor x of shape [64]")
    assert done.returncode == 0 and "relu" in done.stdout, done.stdout + done.stderr
