"""Half-open and idle connections are closed within their bounds, so they cannot pile up on the server."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

from tests.server.live import LiveServer

HEADER_TIMEOUT_S = 1.0
SLACK_S = 2.0  # scheduling on a loaded two-core machine


def _connect(live: LiveServer) -> socket.socket:
    host, port = live.url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    return sock


def _seconds_until_closed(sock: socket.socket) -> float:
    """Read until the server closes the connection (answers included); return how long that took."""
    started = time.monotonic()
    while sock.recv(65536):
        pass
    return time.monotonic() - started


def test_half_a_request_is_closed_after_the_header_timeout(start_server: Callable[..., LiveServer]) -> None:
    live = start_server(header_timeout_s=HEADER_TIMEOUT_S)
    half_open = [_connect(live) for _ in range(20)]
    for sock in half_open:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")  # the headers never end
    waited = [_seconds_until_closed(sock) for sock in half_open]
    print(f"half-open connections closed after {max(waited):.2f} s at most (bound {HEADER_TIMEOUT_S} s)")
    assert max(waited) < HEADER_TIMEOUT_S + SLACK_S
    silent = _connect(live)  # connected, then nothing at all
    assert _seconds_until_closed(silent) < HEADER_TIMEOUT_S + SLACK_S
    with live.client() as client:
        assert client.get("/healthz").json()["status"] == "ok"


def test_a_kept_alive_connection_is_closed_when_idle_or_when_its_next_request_stalls(
    start_server: Callable[..., LiveServer],
) -> None:
    live = start_server(header_timeout_s=HEADER_TIMEOUT_S, keep_alive_timeout_s=1)
    request = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    idle = _connect(live)
    idle.sendall(request)
    assert idle.recv(65536).startswith(b"HTTP/1.1 200")
    assert _seconds_until_closed(idle) < 1 + SLACK_S
    stalled = _connect(live)
    stalled.sendall(request)
    assert stalled.recv(65536).startswith(b"HTTP/1.1 200")
    stalled.sendall(request[:20])  # the second request starts, and stops
    assert _seconds_until_closed(stalled) < HEADER_TIMEOUT_S + SLACK_S
    slow_but_complete = _connect(live)  # a request whose headers come in pieces, within the bound, is served
    for piece in (request[:10], request[10:30], request[30:]):
        slow_but_complete.sendall(piece)
        time.sleep(HEADER_TIMEOUT_S / 5)
    assert slow_but_complete.recv(65536).startswith(b"HTTP/1.1 200")
    slow_but_complete.close()
