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
    """One accelerator per stage that runs kernels: timing two jobs on one GPU at once makes both numbers wrong.

    On a machine with N GPUs, N jobs measure at once, each on its own; interpreter runs on the CPU hold none.
    """

    def __init__(self, count: int) -> None:
        self.count = max(1, count)
        self._free = list(range(self.count))
        self._ready = threading.Condition()

    @contextmanager
    def hold(self, device: str) -> Iterator[int | None]:
        """Wait for a free accelerator and make it the one this stage's sandboxed runs see; none for the CPU."""
        if device == "cpu":
            yield None
            return
        with self._ready:
            while not self._free:
                self._ready.wait()
            slot = self._free.pop(0)
        token = current_slot.set(slot)
        try:
            yield slot
        finally:
            current_slot.reset(token)
            with self._ready:
                self._free.append(slot)
                self._free.sort()
                self._ready.notify()

    def free(self) -> int:
        """Count the slots no stage holds now."""
        with self._ready:
            return len(self._free)
