"""A real uvicorn server in its own process, which a test may kill with SIGKILL and start again."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """A real uvicorn process serving the app on loopback."""

    def __init__(self, env: dict[str, str]) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "server.app:create_app", "--factory", "--host", "127.0.0.1",
             "--port", str(self.port), "--log-level", "warning"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                self.get("/healthz")
                return
            except OSError as exc:
                if self.process.poll() is not None:
                    output = self.process.stderr.read() if self.process.stderr else ""
                    raise RuntimeError(f"server exited: {output}") from exc
                time.sleep(0.2)
        raise RuntimeError("server did not come up in 60 s")

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.url + path, timeout=10) as response:
            return json.loads(response.read())

    def post(self, path: str, body: dict[str, Any]) -> Any:
        request = urllib.request.Request(self.url + path, data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.kill()


def environment(tmp_path: Path, database_url: str) -> dict[str, str]:
    """Return the environment of a server process: its database, folders, one job at a time, the CPU."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELGEN_")}
    env.update(
        KERNELGEN_DATABASE_URL=database_url, KERNELGEN_WORK_DIR=str(tmp_path / "work"),
        KERNELGEN_ARTIFACT_ROOT=str(tmp_path / "jobs"), KERNELGEN_CONCURRENCY="1", KERNELGEN_DEVICE="cpu",
        TRITON_INTERPRET="1", PYTHONPATH=str(ROOT),
    )
    return env
