"""Open event streams wait for their job's own notices: 500 of them leave `GET /jobs` fast and all wake at once."""

from __future__ import annotations

import resource
import socket
import statistics
import time
from collections.abc import Callable

import pytest

from storage import crud
from storage.db import make_engine
from tests.server.live import LiveServer

STREAMS = 500
SAMPLES = 200


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def _time_list(live: LiveServer) -> list[float]:
    """Time `GET /jobs` SAMPLES times on one kept-alive connection; return milliseconds."""
    times = []
    with live.client() as client:
        for _ in range(SAMPLES):
            started = time.perf_counter()
            assert client.get("/jobs").status_code == 200
            times.append((time.perf_counter() - started) * 1000)
    return times


def _read_until(sock: socket.socket, needle: bytes, deadline: float) -> bytes:
    seen = b""
    while needle not in seen:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        chunk = sock.recv(65536)
        if not chunk:
            break
        seen += chunk
    return seen


@pytest.mark.slow_on_postgresql
def test_500_open_streams_leave_the_job_list_fast(start_server: Callable[..., LiveServer]) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 4 * STREAMS:  # both ends of every stream live in this process
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8 * STREAMS), hard))
    live = start_server()
    engine = make_engine(live.settings.database_url)
    job_id = crud.create_job(engine, "a job that waits", "", status="running")  # no worker: only notices move it
    crud.add_event(engine, job_id, "queued", "waiting")
    idle = _time_list(live)

    host, port = live.url.removeprefix("http://").split(":")
    request = f"GET /jobs/{job_id}/events HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()
    streams = []
    started = time.monotonic()
    for _ in range(STREAMS):
        sock = socket.create_connection((host, int(port)), timeout=30)
        sock.sendall(request)
        streams.append(sock)
    deadline = time.monotonic() + 60
    assert all(b"event: queued" in _read_until(s, b"event: queued", deadline) for s in streams)
    opened = time.monotonic() - started

    busy = _time_list(live)
    crud.add_event(engine, job_id, "accuracy", "news for every stream")
    noticed = time.monotonic()
    deadline = noticed + 30
    assert all(b"event: accuracy" in _read_until(s, b"event: accuracy", deadline) for s in streams)
    woken = time.monotonic() - noticed
    crud.update_job(engine, job_id, status="cancelled")
    deadline = time.monotonic() + 30
    assert all(b"event: end" in _read_until(s, b"event: end", deadline) for s in streams)
    for sock in streams:
        sock.close()
    engine.dispose()
    print(f"\n{STREAMS} event streams open in {opened:.1f} s; GET /jobs over {SAMPLES} calls, ms: "
          f"idle p50 {statistics.median(idle):.1f} p95 {_percentile(idle, 0.95):.1f}; "
          f"with the streams open p50 {statistics.median(busy):.1f} p95 {_percentile(busy, 0.95):.1f} "
          f"max {max(busy):.1f}; one event reached all {STREAMS} streams in {woken * 1000:.0f} ms")
