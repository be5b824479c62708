"""Find the accelerator this machine has, and its datasheet peaks."""

from __future__ import annotations

import os
import platform
from typing import Literal

from pydantic import BaseModel

DeviceKind = Literal["cuda", "npu", "cpu"]

# Datasheet figures: memory bandwidth (GB/s), dense fp32 vector rate and dense 16-bit matrix rate with float32
# accumulation (TFLOP/s; the tensor cores, Ascend's cube unit). Measured copy bandwidth, where a run has one, is the
# ceiling the reports prefer.
PEAKS: dict[str, dict[str, float]] = {
    "H200": {"gbs": 4800.0, "tflops": 67.0, "tensor_tflops": 989.4},
    "H100 PCIe": {"gbs": 2000.0, "tflops": 51.0, "tensor_tflops": 756.0},
    "H100": {"gbs": 3350.0, "tflops": 67.0, "tensor_tflops": 989.4},
    "H20": {"gbs": 4000.0, "tflops": 44.0, "tensor_tflops": 148.0},
    "A100-SXM4-80GB": {"gbs": 2039.0, "tflops": 19.5, "tensor_tflops": 312.0},
    "A100": {"gbs": 1555.0, "tflops": 19.5, "tensor_tflops": 312.0},
    "L40S": {"gbs": 864.0, "tflops": 91.6, "tensor_tflops": 362.0},
    "L4": {"gbs": 300.0, "tflops": 30.3, "tensor_tflops": 121.0},
    "RTX 4090": {"gbs": 1008.0, "tflops": 82.6, "tensor_tflops": 165.2},
    "Ascend910B": {"gbs": 1600.0, "tflops": 94.0, "tensor_tflops": 313.0},
    "910B": {"gbs": 1600.0, "tflops": 94.0, "tensor_tflops": 313.0},
}
# Used for the definition document's roofline when no accelerator is here.
REFERENCE_DEVICE = "H100"


class DeviceInfo(BaseModel):
    """The device a job runs on, with the peaks its roofline uses."""

    kind: DeviceKind
    name: str
    peak_gbs: float | None = None
    peak_tflops: float | None = None
    peak_tensor_tflops: float | None = None  # 16-bit matrix products on the tensor cores
    multiprocessors: int | None = None  # SMs on CUDA; sizes the search space and persistent grids
    memory_bytes: int | None = None  # the device's memory (the host's RAM for the CPU): a spec must fit in it

    @property
    def has_peaks(self) -> bool:
        """Tell whether a roofline can be drawn for this device."""
        return self.peak_gbs is not None and self.peak_tflops is not None


def peaks_for(name: str) -> dict[str, float] | None:
    """Match a device name against the peak table (the most specific key wins)."""
    for key in sorted(PEAKS, key=len, reverse=True):
        if key.lower() in name.lower():
            return PEAKS[key]
    return None


def detect(wanted: str = "auto") -> DeviceInfo:
    """Resolve auto|cuda|npu|cpu to a device that is really here, or raise."""
    import torch

    kind: DeviceKind
    multiprocessors = memory = None
    if wanted in ("auto", "cuda") and torch.cuda.is_available():
        kind, name = "cuda", torch.cuda.get_device_name()
        properties = torch.cuda.get_device_properties(0)
        multiprocessors, memory = properties.multi_processor_count, int(properties.total_memory)
    elif wanted in ("auto", "npu") and _npu_available():
        kind, name = "npu", str(torch.npu.get_device_name())  # type: ignore[attr-defined]
        multiprocessors, memory = _npu_vector_cores(), _npu_memory()
    elif wanted in ("auto", "cpu"):
        kind, name = "cpu", f"CPU ({platform.processor() or platform.machine()}), Triton interpreter"
        memory = _host_memory()
    else:
        raise RuntimeError(f"device {wanted!r} was asked for, but none is available here")
    peaks = peaks_for(name) if kind != "cpu" else None
    return DeviceInfo(
        kind=kind, name=name,
        peak_gbs=peaks["gbs"] if peaks else None,
        peak_tflops=peaks["tflops"] if peaks else None,
        peak_tensor_tflops=peaks["tensor_tflops"] if peaks else None, multiprocessors=multiprocessors,
        memory_bytes=memory,
    )


def _host_memory() -> int | None:
    """Return the machine's physical memory in bytes, where the OS says."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


def _npu_memory() -> int | None:
    """Return the Ascend device's memory through torch_npu (untested here: no NPU)."""
    try:
        import torch

        return int(torch.npu.get_device_properties(0).total_memory)  # type: ignore[attr-defined]
    except Exception:  # an older torch_npu without the property: no memory check
        return None


def _npu_vector_cores() -> int | None:
    """Count Ascend vector cores through triton-ascend's driver (untested here: no NPU)."""
    try:
        import triton

        properties = triton.runtime.driver.active.utils.get_device_properties(0)
        return int(properties.get("num_vectorcore") or properties.get("num_aicore") or 0) or None
    except Exception:  # an older triton-ascend without the property: pruning falls back to the reference
        return None


def _npu_available() -> bool:
    try:
        import torch
        import torch_npu  # noqa: F401

        return bool(torch.npu.is_available())  # type: ignore[attr-defined]
    except ImportError:
        return False
