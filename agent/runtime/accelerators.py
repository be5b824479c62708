"""One slot per accelerator here: a stage that runs kernels holds one, and its sandboxes see only that one."""

from __future__ import annotations

import contextvars
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# The slot the current stage holds (an index into the visible accelerators); None: no slot, the default device.
current_slot: contextvars.ContextVar[int | None] = contextvars.ContextVar("accelerator_slot", default=None)

# The variable that picks the visible accelerators, per device kind.
VISIBLE_VARIABLE = {"cuda": "CUDA_VISIBLE_DEVICES", "npu": "ASCEND_RT_VISIBLE_DEVICES"}


def count_accelerators() -> int:
    """Count the accelerators this process sees (CUDA GPUs, else Ascend NPUs); 0 when there are none."""
    try:
        import torch
    except ImportError:
        return 0
    if torch.cuda.is_available():
        return int(torch.cuda.device_count())
    npu = getattr(torch, "npu", None)  # torch_npu, imported by whoever needs it, adds torch.npu
    if npu is not None and npu.is_available():
        return int(npu.device_count())
    return 0


def visible_device(kind: str, slot: int) -> dict[str, str]:
    """Return the environment that shows a sandbox only the slot's accelerator (the parent's numbering kept)."""
    variable = VISIBLE_VARIABLE.get(kind)
    if variable is None:
        return {}
    listed = [d.strip() for d in os.environ.get(variable, "").split(",") if d.strip()]
    return {variable: listed[slot] if slot < len(listed) else str(slot)}


class AcceleratorSlots:
    """One accelerator per stage that times or profiles kernels: timing two jobs on one GPU at once makes both wrong.

    On a machine with N GPUs, N jobs measure at once, each on its own; interpreter runs on the CPU hold none. A stage
    that only checks results (accuracy) holds its accelerator shared: up to `max_shared` such stages of different
    jobs run on it together, never while a stage times or profiles there. A stage waiting to time goes first: no
    checking stage joins a device while one waits, so a stream of checks cannot starve the timing.
    """

    def __init__(self, count: int, max_shared: int = 4) -> None:
        self.count = max(1, count)
        self.max_shared = max(1, max_shared)
        self._sharers = [0] * self.count
        self._exclusive = [False] * self.count
        self._waiting_exclusive = 0
        self._ready = threading.Condition()

    @contextmanager
    def hold(self, device: str, *, shared: bool = False) -> Iterator[int | None]:
        """Wait for an accelerator and make it the one this stage's sandboxed runs see; none for the CPU."""
        if device == "cpu":
            yield None
            return
        with self._ready:
            slot = self._take_shared() if shared else self._take_exclusive()
        token = current_slot.set(slot)
        try:
            yield slot
        finally:
            current_slot.reset(token)
            with self._ready:
                if shared:
                    self._sharers[slot] -= 1
                else:
                    self._exclusive[slot] = False
                self._ready.notify_all()

    def _take_exclusive(self) -> int:
        self._waiting_exclusive += 1
        try:
            while True:
                free = [i for i in range(self.count) if not self._exclusive[i] and not self._sharers[i]]
                if free:
                    self._exclusive[free[0]] = True
                    return free[0]
                self._ready.wait()
        finally:
            self._waiting_exclusive -= 1

    def _take_shared(self) -> int:
        while True:
            open_slots = [i for i in range(self.count) if not self._exclusive[i] and self._sharers[i] < self.max_shared]
            if open_slots and not self._waiting_exclusive:
                slot = min(open_slots, key=lambda i: self._sharers[i])  # spread checks over the devices
                self._sharers[slot] += 1
                return slot
            self._ready.wait()

    def free(self) -> int:
        """Count the slots no stage holds now."""
        with self._ready:
            return sum(1 for i in range(self.count) if not self._exclusive[i] and not self._sharers[i])
