"""Admission of requests that may run code: a sandbox slot up front, else 429 at once; the work off the request pool.

A read traces a code spec in the sandbox for up to minutes. Run in the request thread pool, 40 of them starved
every other route (`/healthz` and `GET /jobs` timed out). Here a read takes one of the process's sandbox slots
(agent/runtime/admission.py) before it starts, or is answered 429 with `Retry-After`; admitted, it runs in a
thread limited by its own CapacityLimiter, under its own deadline (504 past it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
from fastapi import HTTPException, Request, status

from agent.runtime.admission import SLOTS, current_principal, holding
from server.errors import ErrorPublic

T = TypeVar("T")

BUSY: dict[int | str, dict[str, Any]] = {
    429: {"model": ErrorPublic, "description": "Every sandbox slot (of the server, or of this caller) is busy; "
                                               "retry after `Retry-After` seconds"},
    504: {"model": ErrorPublic, "description": "The read ran past KERNELGEN_READ_DEADLINE_S"},
}


def _threads(request: Request) -> anyio.CapacityLimiter:
    """Return the app's own thread limiter for admitted work (made in the event loop, on first use)."""
    limiter: anyio.CapacityLimiter | None = getattr(request.app.state, "admitted_threads", None)
    if limiter is None:
        # Admission already bounds the work to SLOTS.total at once; the limiter keeps it out of the default pool.
        limiter = anyio.CapacityLimiter(SLOTS.total)
        request.app.state.admitted_threads = limiter
    return limiter


async def run_admitted(request: Request, principal: str, deadline_s: float, work: Callable[[], T]) -> T:
    """Run `work` in a thread holding one sandbox slot of `principal`; 429 when none is free, 504 past the deadline."""
    if not SLOTS.try_acquire(principal):
        raise HTTPException(status.HTTP_429_TOO_MANY_REQUESTS,
                            f"every sandbox slot is busy ({SLOTS.busy} of {SLOTS.total} in all, "
                            f"{SLOTS.held_by(principal)} of {SLOTS.per_principal} yours); retry later",
                            headers={"Retry-After": str(SLOTS.retry_after())})
    # The slot is given back when the work ends, not when the request does: a read abandoned at its deadline
    # still holds it while its sandbox runs. Work that never started (cancelled while queued) gives it back here.
    lock, state = threading.Lock(), {"started": False, "abandoned": False}

    def run() -> T:
        with lock:
            if state["abandoned"]:
                raise RuntimeError("abandoned before it started")
            state["started"] = True
        token = current_principal.set(principal)
        try:
            with holding(principal):
                return work()
        finally:
            current_principal.reset(token)

    try:
        with anyio.fail_after(deadline_s):
            return await anyio.to_thread.run_sync(run, limiter=_threads(request), abandon_on_cancel=True)
    except TimeoutError:
        raise HTTPException(status.HTTP_504_GATEWAY_TIMEOUT,
                            f"the read ran past {deadline_s:.0f} s (KERNELGEN_READ_DEADLINE_S)") from None
    finally:
        with lock:
            if not state["started"]:
                state["abandoned"] = True
                SLOTS.release(principal)
