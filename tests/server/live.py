"""Helpers for the API tests: a real uvicorn server on loopback, a real database, and clients of both."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from kernelgen.settings import Settings
from server.app import create_app
from server.serving import uvicorn_config
from tests.databases import database_url

FINAL = ("verified", "failed", "rejected", "cancelled")
RELU = "ReLU on a float32 tensor x of shape [64, 64]"
# Several shapes and dtypes: the accuracy stage takes a while, so the job is still running when cancelled.
SLOW = "Elementwise add of float32, float16 and bfloat16 tensors x and y of shapes [64, 64], [128, 256], [3, 1000]"


@dataclass
class LiveServer:
    """A running server: its URL, settings, and clients that speak to it."""

    url: str
    settings: Settings

    def client(self, token: str | None = None, timeout: float = 30.0) -> httpx.Client:
        """Open a client for this server, with a bearer token when given (default: the server's first)."""
        token = token if token is not None else (self.settings.api_tokens or [None])[0]
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=timeout)


def _socket() -> socket.socket:
    """Bind a loopback socket on a free port (handed to uvicorn, so no other process can take the port)."""
    # IPPROTO_TCP given, so asyncio sets TCP_NODELAY on accepted connections (with proto 0 it does not, and
    # Nagle's algorithm then holds every response's body for the client's delayed ACK: 40 ms a request).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


@contextmanager
def serve(settings: Settings) -> Iterator[LiveServer]:
    """Run the app under uvicorn in a thread until the block ends."""
    sock = _socket()
    port = sock.getsockname()[1]
    settings = settings.model_copy(update={"port": port})
    config = uvicorn_config(create_app(settings), settings, log_level="warning")  # as `kernelgen serve` runs it
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.05)
    try:
        yield LiveServer(url=f"http://127.0.0.1:{port}", settings=settings)
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


def database(kind: str, tmp_path: Path) -> AbstractContextManager[str]:
    """Give a fresh database URL: a SQLite file, or a private schema of the test PostgreSQL."""
    return database_url(kind, tmp_path)


def submit(client: httpx.Client, spec: str = RELU, **options: Any) -> int:
    """Submit a job and return its id."""
    response = client.post("/jobs", json={"spec": spec, "device": "cpu", **options})
    assert response.status_code == 202, response.text
    return int(response.json()["id"])


def wait_final(client: httpx.Client, job_id: int, timeout: float = 120.0) -> dict[str, Any]:
    """Poll a job until it reaches a final status and return it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job: dict[str, Any] = client.get(f"/jobs/{job_id}").raise_for_status().json()
        if job["status"] in FINAL:
            return job
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} did not finish in {timeout} s")


def wait_status(client: httpx.Client, job_id: int, status: str, timeout: float = 60.0) -> None:
    """Poll a job until it is in a status."""
    deadline = time.monotonic() + timeout
    while client.get(f"/jobs/{job_id}").json()["status"] != status:
        assert time.monotonic() < deadline, f"job {job_id} never reached {status}"
        time.sleep(0.05)


def read_stream(client: httpx.Client, path: str, headers: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Read a whole SSE stream into messages: {id, event, data (parsed JSON)}; comments are dropped."""
    messages: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    with client.stream("GET", path, headers=headers) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if not line:
                if current:
                    messages.append(current)
                current = {}
            elif not line.startswith(":"):
                field, _, value = line.partition(": ")
                current[field] = json.loads(value) if field == "data" else value
    return messages
