"""Run the app under uvicorn with timeouts for idle and half-open connections."""

from __future__ import annotations

import asyncio
import logging

import uvicorn
from fastapi import FastAPI
from uvicorn.protocols.http.h11_impl import H11Protocol, RequestResponseCycle

from kernelgen.settings import Settings

log = logging.getLogger(__name__)


# uvicorn times out idle kept-alive connections only: a client that sends half a request would hold its
# connection (and a file descriptor) for as long as it likes.
class HeaderTimeoutProtocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol that closes a connection whose request headers do not all arrive in time."""

    header_timeout_s = 10.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Start the clock for the first request's headers."""
        super().connection_made(transport)
        self._header_timer: asyncio.TimerHandle | None = None
        self._last_cycle: RequestResponseCycle | None = None
        self._arm()

    def data_received(self, data: bytes) -> None:
        """Stop the clock once a request's headers are complete."""
        super().data_received(data)
        self._stop_if_started()

    def on_response_complete(self) -> None:
        """Start the clock again for the next request on this connection (unless one already began)."""
        super().on_response_complete()
        if not self._stop_if_started() and not self.transport.is_closing():
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        """Drop the clock with the connection."""
        self._disarm()
        super().connection_lost(exc)

    def _stop_if_started(self) -> bool:
        if self.cycle is not None and self.cycle is not self._last_cycle:
            self._last_cycle = self.cycle
            self._disarm()
            return True
        return False

    def _arm(self) -> None:
        self._disarm()
        self._header_timer = self.loop.call_later(self.header_timeout_s, self._expire)

    def _disarm(self) -> None:
        timer = getattr(self, "_header_timer", None)
        if timer is not None:
            timer.cancel()
            self._header_timer = None

    def _expire(self) -> None:
        self._header_timer = None
        if not self.transport.is_closing():
            log.debug("closing %s: no complete request within %.0f s", self.client, self.header_timeout_s)
            self.transport.close()


def uvicorn_config(app: FastAPI, settings: Settings, **options: object) -> uvicorn.Config:
    """Return the uvicorn configuration the service runs with: its address, protocol and timeouts."""
    protocol = type("ServiceHeaderTimeout", (HeaderTimeoutProtocol,), {"header_timeout_s": settings.header_timeout_s})
    values: dict[str, object] = {"host": settings.host, "port": settings.port, "log_level": "info",
                                 "timeout_graceful_shutdown": 5} | options
    return uvicorn.Config(app, http=protocol, timeout_keep_alive=settings.keep_alive_timeout_s,
                          **values)  # type: ignore[arg-type]


def serve(app: FastAPI, settings: Settings) -> None:
    """Serve the app until interrupted (what `kernelgen serve` runs)."""
    uvicorn.Server(uvicorn_config(app, settings)).run()
