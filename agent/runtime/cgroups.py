"""A run's memory and process count as a whole: a cgroup v2 group per run, where the host lets the service make one.

Rlimits count per process (address space) or per user (processes), so three forked processes hold three times the
memory limit; a group's memory.max and pids.max count every process and thread of the run together.
"""

from __future__ import annotations

import functools
import logging
import os
import signal
import time
import uuid
from pathlib import Path

log = logging.getLogger(__name__)

CGROUP_FS = Path("/sys/fs/cgroup")
CONTROLLERS = ("memory", "pids")
PREFIX = "kernelgen-run-"


@functools.cache
def find_base(configured: Path | None) -> tuple[Path | None, str]:
    """Return the cgroup folder runs' groups are made in (the configured one, else the service's own), or why not."""
    if not (CGROUP_FS / "cgroup.controllers").is_file():
        return None, f"{CGROUP_FS} is not a cgroup v2 hierarchy"
    base = configured or _own_group()
    if base is None:
        return None, "this process is in no cgroup v2 group"
    try:
        control = base / "cgroup.subtree_control"
        missing = [c for c in CONTROLLERS if c not in control.read_text().split()]
        if missing:  # refused (EBUSY) when processes live in `base` itself: give a delegated, empty group instead
            control.write_text(" ".join(f"+{c}" for c in missing))
        _remove_stale(base)
        probe = base / f"{PREFIX}probe-{os.getpid()}"
        probe.mkdir()
        try:
            usable = all((probe / name).is_file() for name in ("memory.max", "pids.max"))
        finally:
            probe.rmdir()
    except OSError as exc:
        return None, f"no group can be made with memory and pids limits under {base} ({exc.strerror or exc})"
    if not usable:
        return None, f"the memory and pids controllers are not enabled under {base}"
    return base, ""


def _own_group() -> Path | None:
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("0::"):
            return CGROUP_FS / line[3:].strip().lstrip("/")
    return None


def _remove_stale(base: Path) -> None:
    # Groups a killed service left: empty once their processes died with it (a busy one is another service's).
    for stale in base.glob(f"{PREFIX}*"):
        try:
            stale.rmdir()
        except OSError:
            pass


class RunGroup:
    """One run's cgroup: its limits, the launcher that puts the run in it, its OOM kills, and its removal."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls, base: Path, *, memory_bytes: int | None, max_processes: int) -> RunGroup:
        """Make a fresh group under `base` with the run's limits."""
        group = cls(base / f"{PREFIX}{uuid.uuid4().hex[:16]}")
        group.path.mkdir()
        try:
            if memory_bytes:
                (group.path / "memory.max").write_text(str(memory_bytes))
                swap = group.path / "memory.swap.max"
                if swap.is_file():  # else the kernel swaps the run out instead of stopping it at the limit
                    swap.write_text("0")
            (group.path / "pids.max").write_text(str(max_processes))
        except OSError:
            group.remove()
            raise
        return group

    def launcher(self) -> list[str]:
        """Return the prefix that moves the run's first process into the group before it runs the command."""
        # Everything the process then starts (bubblewrap, its children, their threads) is born inside the group.
        return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(self.path / "cgroup.procs")]

    def oom_kills(self) -> int:
        """Count the run's processes the kernel killed for going over memory.max."""
        try:
            for line in (self.path / "memory.events").read_text().splitlines():
                name, _, count = line.partition(" ")
                if name == "oom_kill":
                    return int(count)
        except (OSError, ValueError):
            pass
        return 0

    def kill(self) -> None:
        """Kill every process in the group."""
        try:
            (self.path / "cgroup.kill").write_text("1")  # Linux 5.14+: atomic, even against a fork loop
            return
        except FileNotFoundError:
            pass
        except OSError as exc:
            log.warning("cannot kill cgroup %s: %s", self.path, exc)
        for _ in range(50):  # older kernels: signal what is listed until nothing is
            pids = self._pids()
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def remove(self) -> None:
        """Kill what is left and remove the group (it can go only once empty)."""
        self.kill()
        deadline = time.monotonic() + 5
        while True:
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError as exc:
                if time.monotonic() > deadline:
                    log.warning("cgroup %s not removed: %s", self.path, exc)
                    return
                time.sleep(0.02)

    def _pids(self) -> list[int]:
        try:
            return [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []
