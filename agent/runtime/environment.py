"""Build the environment of a sandboxed run: named variables with checked values, never one that looks secret."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path

# A name with one of these in it is never passed, whatever its prefix and even if it is listed below: a leaked
# NVIDIA_API_KEY or CONDA_TOKEN is read by the run's code and can come back in its error messages.
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)
MAX_VALUE = 8192  # characters; nothing a run needs is longer

_DEVICE = r"(?:\d+|(?:GPU|MIG)-[0-9A-Za-z/-]+)"  # an index or a UUID, the forms CUDA and the NPU runtime accept
_DEVICES = re.compile(rf"(?:{_DEVICE}(?:,{_DEVICE})*)?")  # empty: no device at all, which is a choice too
_LOCALE = re.compile(r"[A-Za-z0-9_.@-]+")
_ZONE = re.compile(r":?[A-Za-z0-9_/+.-]+")


def _path(value: str) -> str | None:
    return value if Path(value).is_absolute() and ":" not in value else None


def _paths(value: str) -> str | None:
    # Empty and relative entries are dropped: they would resolve inside the run's folder, which the run writes.
    kept = [p for p in value.split(":") if p and Path(p).is_absolute()]
    return ":".join(kept) or None


def _matching(pattern: re.Pattern[str]) -> Callable[[str], str | None]:
    return lambda value: value if pattern.fullmatch(value) else None


def _one_of(*words: str) -> Callable[[str], str | None]:
    return lambda value: value if value in words else None


_count = _matching(re.compile(r"\d{1,4}"))
_devices = _matching(_DEVICES)
_locale = _matching(_LOCALE)
_flag = _one_of("0", "1")

# Every variable a run may get from the service's environment, and what its value must look like.
ALLOWED: dict[str, Callable[[str], str | None]] = {
    "PATH": _paths, "PYTHONPATH": _paths, "LD_LIBRARY_PATH": _paths, "VIRTUAL_ENV": _path, "CONDA_PREFIX": _path,
    "PYTHONPYCACHEPREFIX": _path,  # bytecode compiled ahead of the runs (which write none)
    "LANG": _locale, "LC_ALL": _locale, "LC_CTYPE": _locale, "TZ": _matching(_ZONE),
    "OMP_NUM_THREADS": _count, "MKL_NUM_THREADS": _count, "OPENBLAS_NUM_THREADS": _count,
    # device selection
    "CUDA_VISIBLE_DEVICES": _devices, "ASCEND_RT_VISIBLE_DEVICES": _devices, "ASCEND_VISIBLE_DEVICES": _devices,
    "NVIDIA_VISIBLE_DEVICES": lambda v: v if v in ("all", "none", "void") else _devices(v),
    "CUDA_DEVICE_ORDER": _one_of("PCI_BUS_ID", "FASTEST_FIRST"),
    "CUDA_MODULE_LOADING": _one_of("LAZY", "EAGER"), "CUDA_LAUNCH_BLOCKING": _flag,
    # NVLink multicast stays off where the host turns it off: a program using it can take shared GPUs down
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": _flag, "NCCL_NVLS_ENABLE": _flag, "NVSHMEM_DISABLE_NVLS": _flag,
    # where CUDA, Triton's tools and Ascend's CANN are
    "CUDA_HOME": _path, "CUDA_PATH": _path, "CUDA_ROOT": _path,
    "TRITON_PTXAS_PATH": _path, "TRITON_CUOBJDUMP_PATH": _path, "TRITON_NVDISASM_PATH": _path,
    "TRITON_LIBCUDA_PATH": _path,
    "ASCEND_HOME_PATH": _path, "ASCEND_TOOLKIT_HOME": _path, "ASCEND_OPP_PATH": _path, "ASCEND_AICPU_PATH": _path,
    "TOOLCHAIN_HOME": _path, "ATB_HOME_PATH": _path, "ASDOPS_HOME_PATH": _path,
}


def checked(name: str, value: str) -> str | None:
    """Return the value a run may get for this variable, or None when the name or the value is not allowed."""
    check = ALLOWED.get(name)
    if check is None or SECRET_NAME.search(name) or len(value) > MAX_VALUE:
        return None
    if any(ord(c) < 32 or ord(c) == 127 for c in value):  # a newline or an escape is never a path or a number
        return None
    return check(value)


def passed(source: Mapping[str, str] | None = None) -> dict[str, str]:
    """Return the variables of `source` (the service's environment) that a run may see, with checked values."""
    env = os.environ if source is None else source
    kept = {name: checked(name, value) for name, value in env.items()}
    return {name: value for name, value in kept.items() if value is not None}


def without_secrets(env: Mapping[str, str]) -> dict[str, str]:
    """Drop every variable whose name looks like a secret (the last guard, over what the service adds too)."""
    return {name: value for name, value in env.items() if not SECRET_NAME.search(name)}
