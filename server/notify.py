"""Wake a job's event streams when the job changes, instead of each stream polling the database."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import anyio

from storage import signals

log = logging.getLogger(__name__)


class JobNotifier:
    """Carry the storage layer's change notices (from any thread) to waiters on the app's event loop."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._versions: dict[int, int] = {}  # changes seen per job, so a change between a read and a wait counts
        self._waiters: dict[int, set[asyncio.Future[None]]] = {}

    def start(self) -> None:
        """Listen for changes; call from the event loop the streams run on."""
        self._loop = asyncio.get_running_loop()
        self._unsubscribe = signals.subscribe(self._changed)

    def stop(self) -> None:
        """Stop listening and release every waiter."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        for job_id in list(self._waiters):
            self._wake(job_id)

    def version(self, job_id: int) -> int:
        """Return how many changes of the job were seen so far (read it before reading the database)."""
        return self._versions.get(job_id, 0)

    async def wait(self, job_id: int, seen: int, timeout: float) -> None:
        """Return once the job changed after version `seen`, or after `timeout` seconds."""
        if self._versions.get(job_id, 0) != seen:
            return
        if self._loop is None:  # not started (an app without its lifespan): fall back to a slow poll
            await anyio.sleep(min(timeout, 1.0))
            return
        waiter: asyncio.Future[None] = self._loop.create_future()
        self._waiters.setdefault(job_id, set()).add(waiter)
        try:
            with anyio.move_on_after(timeout):
                await waiter
        finally:
            waiting = self._waiters.get(job_id)
            if waiting is not None:
                waiting.discard(waiter)
                if not waiting:
                    del self._waiters[job_id]

    def _changed(self, job_id: int) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            loop.call_soon_threadsafe(self._wake, job_id)
        except RuntimeError:  # the loop closed meanwhile: nobody is waiting any more
            pass

    def _wake(self, job_id: int) -> None:
        self._versions[job_id] = self._versions.get(job_id, 0) + 1
        for waiter in self._waiters.pop(job_id, set()):
            if not waiter.done():
                waiter.set_result(None)
