"""Sandbox slots: how many sandboxed runs may go at once, in the whole process and per principal.

Every sandboxed run starts a Python that imports torch (about 225 MB, seconds of CPU) and may run for minutes, so
the process holds a bounded pool of slots. A request (`POST /read`, a chat message) takes its slot up front and is
refused at once when none is free (`try_acquire`); a job's run waits for one (`slot`): the job queue is the
admission for jobs, and their runs still count in the global bound.
"""

from __future__ import annotations

import contextvars
import math
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

# Who the current request or run is for (the API sets it); None for a job's runs and the CLI: global bound only.
current_principal: contextvars.ContextVar[str | None] = contextvars.ContextVar("sandbox_principal", default=None)
# Set while this context already holds a slot (a read took one for its whole request): its runs take no other.
_holding: contextvars.ContextVar[bool] = contextvars.ContextVar("sandbox_slot_held", default=False)


def cpu_count() -> int:
    """Return the CPUs this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def default_total() -> int:
    """Return the global bound when none is set: one run per CPU, at least four (jobs and reads share them)."""
    return max(4, cpu_count())


class SandboxSlots:
    """A counting limiter with a global bound and a per-principal bound."""

    def __init__(self, total: int = 0, per_principal: int = 0) -> None:
        self._cond = threading.Condition()
        self._busy = 0
        self._by_principal: dict[str, int] = {}
        self._waiting = 0  # jobs waiting for a slot: a new request does not jump ahead of them
        self._mean_s = 5.0  # how long a slot is held, on average (for Retry-After)
        self.configure(total, per_principal)

    def configure(self, total: int = 0, per_principal: int = 0) -> None:
        """Set the bounds (0: derived from the CPU count); slots held now stay held."""
        with self._cond:
            self.total = total or default_total()
            self.per_principal = min(per_principal or max(1, self.total // 2), self.total)
            self._cond.notify_all()

    @property
    def busy(self) -> int:
        """Return how many slots are held now."""
        return self._busy

    def held_by(self, principal: str) -> int:
        """Return how many slots a principal holds now."""
        return self._by_principal.get(principal, 0)

    def try_acquire(self, principal: str | None) -> bool:
        """Take a slot if one is free for this principal now; never wait."""
        with self._cond:
            if not self._free(principal) or self._waiting:
                return False
            self._take(principal)
            return True

    def acquire(self, principal: str | None = None) -> None:
        """Take a slot, waiting as long as it takes (a job's run: its queue already admitted it)."""
        with self._cond:
            self._waiting += 1
            try:
                self._cond.wait_for(lambda: self._free(principal))
            finally:
                self._waiting -= 1
            self._take(principal)

    def release(self, principal: str | None, held_s: float | None = None) -> None:
        """Give a slot back; held_s (how long it was held) feeds the Retry-After estimate."""
        with self._cond:
            self._busy -= 1
            if principal is not None:
                left = self._by_principal.get(principal, 1) - 1
                if left:
                    self._by_principal[principal] = left
                else:
                    self._by_principal.pop(principal, None)
            if held_s is not None:
                self._mean_s = 0.8 * self._mean_s + 0.2 * held_s
            self._cond.notify_all()

    def retry_after(self) -> int:
        """Return the seconds a refused caller should wait: about how long a slot is held, 1 to 60."""
        return min(60, max(1, math.ceil(self._mean_s)))

    def _free(self, principal: str | None) -> bool:
        if self._busy >= self.total:
            return False
        return principal is None or self._by_principal.get(principal, 0) < self.per_principal

    def _take(self, principal: str | None) -> None:
        self._busy += 1
        if principal is not None:
            self._by_principal[principal] = self._by_principal.get(principal, 0) + 1


SLOTS = SandboxSlots()  # the process's pool; the service sets its bounds from the settings (configure)


@contextmanager
def holding(principal: str | None) -> Iterator[None]:
    """Mark this context as holding the slot `principal` took (try_acquire); give it back at the end."""
    token = _holding.set(True)
    started = time.monotonic()
    try:
        yield
    finally:
        _holding.reset(token)
        SLOTS.release(principal, time.monotonic() - started)


@contextmanager
def slot() -> Iterator[None]:
    """Hold a slot around one sandboxed run: none more when the context holds one already, else wait for one."""
    if _holding.get():
        yield
        return
    principal = current_principal.get()
    SLOTS.acquire(principal)
    with holding(principal):
        yield
