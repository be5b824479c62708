"""Bearer tokens, the loopback rule, body limits, CORS and crash answers on a live server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from server.security import is_loopback
from tests.server.live import RELU, LiveServer, submit, wait_final

TOKENS = ["s3cret-token", "second-token"]


def test_routes_need_a_right_token_when_tokens_are_set(start_server: Callable[..., LiveServer]) -> None:
    live = start_server(api_tokens=TOKENS)
    with httpx.Client(base_url=live.url) as anonymous:
        for method, path in (("GET", "/jobs"), ("GET", "/jobs/1"), ("POST", "/jobs"), ("GET", "/jobs/1/events"),
                             ("GET", "/jobs/1/artifacts"), ("GET", "/jobs/1/artifacts.zip"), ("GET", "/patterns"),
                             ("POST", "/jobs/1/cancel"), ("GET", "/jobs/1/artifacts/report.json"),
                             ("GET", "/threads"), ("POST", "/threads"), ("GET", "/threads/1"),
                             ("POST", "/threads/1/messages"), ("POST", "/threads/1/messages/1/start")):
            response = anonymous.request(method, path)
            assert response.status_code == 401, (path, response.text)
            assert response.headers["www-authenticate"] == "Bearer"
            assert response.json() == {"detail": "missing bearer token (Authorization: Bearer <token>)"}
        for header in ("Bearer wrong", "Bearer s3cret-token-and-more", "Basic czNjcmV0LXRva2Vu", "s3cret-token"):
            response = anonymous.get("/jobs", headers={"Authorization": header})
            assert response.status_code == 401 and "detail" in response.json(), header
        assert anonymous.get("/healthz").json()["auth"] is True  # the page asks for a token before anything else
        assert anonymous.get("/openapi.json").status_code == 200
        assert anonymous.get("/docs").status_code == 200
    for token in TOKENS:
        with live.client(token=token) as client:
            assert client.get("/jobs").status_code == 200
    with live.client() as client:
        job_id = submit(client, "foo bar")
        assert wait_final(client, job_id)["status"] == "rejected"


def test_bodies_over_the_limit_are_refused(start_server: Callable[..., LiveServer]) -> None:
    live = start_server(max_request_bytes=2000)
    with live.client() as client:
        response = client.post("/jobs", json={"spec": "x" * 3000})
        assert response.status_code == 413
        assert response.json() == {"detail": "request body too large (limit 2000 bytes)"}

        def chunks() -> Iterator[bytes]:  # no Content-Length: the limit applies to what arrives
            yield b'{"spec": "'
            for _ in range(10):
                yield b"x" * 500
            yield b'"}'

        response = client.post("/jobs", content=chunks(), headers={"content-type": "application/json"})
        assert response.status_code == 413 and "too large" in response.json()["detail"]
        # Just under the limit, the body reaches the route (and the spec is checked there).
        response = client.post("/jobs", json={"spec": "foo bar " * 200})
        assert response.status_code == 202
        wait_final(client, response.json()["id"])
        assert client.get("/jobs").json()["total"] == 1


def test_cors_allows_only_the_configured_origins(start_server: Callable[..., LiveServer]) -> None:
    live = start_server(cors_origins=["http://ui.example"], api_tokens=TOKENS)
    with httpx.Client(base_url=live.url) as client:
        preflight = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization"}
        allowed = client.options("/jobs", headers={"Origin": "http://ui.example"} | preflight)
        assert allowed.status_code == 200
        assert allowed.headers["access-control-allow-origin"] == "http://ui.example"
        refused = client.options("/jobs", headers={"Origin": "http://evil.example"} | preflight)
        assert refused.status_code == 400 and "access-control-allow-origin" not in refused.headers
        response = client.get("/healthz", headers={"Origin": "http://ui.example"})
        assert response.headers["access-control-allow-origin"] == "http://ui.example"


def test_a_crash_is_a_500_without_a_stack_trace(live: LiveServer) -> None:
    with live.client() as client:
        wait_final(client, submit(client, "foo bar"))
        engine = create_engine(live.settings.database_url)
        with engine.begin() as connection:  # break the database under the running server
            connection.execute(text("DROP TABLE jobevent"))
            connection.execute(text("DROP TABLE llmcall"))
            connection.execute(text("DROP TABLE round"))
            connection.execute(text("DROP TABLE artifact"))
            connection.execute(text("DROP TABLE job"))
        engine.dispose()
    # A fresh connection for each request: uvicorn closes a connection after an unhandled error, and a request
    # sent on it before the client notices is reset (a race that CI's load exposed).
    with live.client() as client:
        response = client.get("/jobs")
        assert response.status_code == 500
        assert response.json() == {"detail": "internal error"}
    with live.client() as client:
        health = client.get("/healthz")
        assert health.status_code == 503 and health.json()["status"] == "degraded"


@pytest.mark.parametrize(("host", "loopback"), [("127.0.0.1", True), ("127.0.0.2", True), ("::1", True),
                                                 ("[::1]", True), ("localhost", True), ("0.0.0.0", False),
                                                 ("::", False), ("192.168.1.10", False), ("example.com", False)])
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def _kernelgen_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "KERNELGEN_API_TOKENS"}
    return env | {"KERNELGEN_DATABASE_URL": f"sqlite:///{tmp_path / 'kg.db'}", "KERNELGEN_WORK_DIR": str(tmp_path),
                  "KERNELGEN_ARTIFACT_ROOT": str(tmp_path / "jobs"), "COLUMNS": "200"} | extra


def _serve(args: list[str], env: dict[str, str], cwd: Path) -> tuple[subprocess.Popen[str], str]:
    """Start `kernelgen serve ARGS` (its port among them) and wait until /healthz answers on loopback."""
    port = args[args.index("--port") + 1]
    server = subprocess.Popen([sys.executable, "-m", "kernelgen", "serve", *args], env=env, cwd=cwd,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            if httpx.get(f"{url}/healthz").status_code == 200:
                return server, url
        except httpx.TransportError:
            assert server.poll() is None and time.monotonic() < deadline, "kernelgen serve did not start"
            time.sleep(0.2)


def test_serve_refuses_an_open_host_without_tokens(tmp_path: Path) -> None:
    for host_args, extra in ((["--host", "0.0.0.0"], {}), ([], {"KERNELGEN_HOST": "0.0.0.0"}),
                             (["--host", "0.0.0.0"], {"KERNELGEN_API_TOKENS": '[""]'})):
        run = subprocess.run([sys.executable, "-m", "kernelgen", "serve", *host_args], capture_output=True,
                             text=True, env=_kernelgen_env(tmp_path, **extra), cwd=tmp_path, timeout=120)
        assert run.returncode == 2, run.stdout + run.stderr
        assert "refusing to serve on 0.0.0.0" in run.stderr and "KERNELGEN_API_TOKENS" in run.stderr


def test_serve_runs_the_api_on_loopback(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server, url = _serve(["--port", str(port)], _kernelgen_env(tmp_path, KERNELGEN_API_TOKENS='["tok"]'), tmp_path)
    try:
        assert httpx.get(f"{url}/jobs").status_code == 401
        with httpx.Client(base_url=url, headers={"Authorization": "Bearer tok"}, timeout=60) as client:
            job_id = submit(client, RELU)
            assert wait_final(client, job_id)["status"] == "verified"
    finally:
        server.terminate()
        output, _ = server.communicate(timeout=30)
    assert server.returncode in (0, -signal.SIGTERM), output  # uvicorn re-raises the signal after a clean stop
    assert "Application shutdown complete" in output


def test_serve_opens_a_public_host_to_table_users_and_bounds_silent_connections(tmp_path: Path) -> None:
    import socket

    env = _kernelgen_env(tmp_path, KERNELGEN_HEADER_TIMEOUT_S="1")
    added = subprocess.run([sys.executable, "-m", "kernelgen", "users", "add", "alice"], capture_output=True,
                           text=True, env=env, cwd=tmp_path, timeout=120)
    assert added.returncode == 0, added.stderr
    token = added.stdout.strip().split()[-1]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server, url = _serve(["--host", "0.0.0.0", "--port", str(port)], env, tmp_path)
    try:
        assert httpx.get(f"{url}/jobs").status_code == 401
        assert httpx.get(f"{url}/jobs", headers={"Authorization": f"Bearer {token}"}).status_code == 200
        with socket.create_connection(("127.0.0.1", port), timeout=10) as silent:
            started = time.monotonic()
            try:  # the server closes a connection that never sends its headers (KERNELGEN_HEADER_TIMEOUT_S)
                closed = silent.recv(1024) == b""
            except ConnectionResetError:
                closed = True
            assert closed and 0.5 < time.monotonic() - started < 5
    finally:
        server.terminate()
        server.communicate(timeout=30)
