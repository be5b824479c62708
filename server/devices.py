"""The devices this server can run jobs on, found once at start."""

from __future__ import annotations

from agent.runtime.devices import detect


def available_devices() -> dict[str, str]:
    """Map each device kind present here (cuda, npu, cpu) to its name; the CPU, through the interpreter, always."""
    found: dict[str, str] = {}
    for kind in ("cuda", "npu", "cpu"):
        try:
            found[kind] = detect(kind).name
        except RuntimeError:  # not on this machine
            continue
    return found


def describe(devices: dict[str, str]) -> str:
    """List devices for a message: `cuda (NVIDIA H100), cpu (...)`."""
    return ", ".join(f"{kind} ({name})" for kind, name in devices.items())
