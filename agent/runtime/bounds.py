"""What bounds a run as a whole: its cgroup (memory, processes) where the host has one, and its folder's disk quota."""

from __future__ import annotations

import contextlib
import logging
import shutil
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

from agent.runtime.cgroups import RunGroup, find_base
from agent.runtime.quota import DiskWatch

if TYPE_CHECKING:  # isolation.py logs describe() below at start
    from agent.runtime.isolation import SandboxPolicy

log = logging.getLogger(__name__)

KEPT = ("stdout.txt", "stderr.txt")  # what stays of a folder emptied for going over its quota


def describe(policy: SandboxPolicy) -> str:
    """Say in one line what bounds a run as a whole here (for the service's start-up log)."""
    disk = f"its folder at most {policy.run_disk_mb} MB" if policy.run_disk_mb else "no disk quota"
    base, reason = find_base(policy.cgroup)
    if base is None:
        return (f"sandbox resources: no cgroup for runs ({reason}; KERNELGEN_SANDBOX_CGROUP names a delegated one), "
                f"so only rlimits hold: address space per process on the CPU, processes per uid; {disk}")
    memory = f"{policy.run_memory_mb} MB of memory" if policy.run_memory_mb else "no memory limit"
    return (f"sandbox resources: each run in its own cgroup under {base}, {memory} and {policy.max_processes} "
            f"processes and threads for all its processes together; {disk}")


class RunBounds:
    """Set up one run's bounds, watch them while it runs, say afterwards which one killed it, and clean up."""

    def __init__(self, workdir: Path, policy: SandboxPolicy) -> None:
        self.workdir, self.policy = workdir, policy
        self.group: RunGroup | None = None
        self._watch: DiskWatch | None = None
        self._oom_kills = 0
        base, _ = find_base(policy.cgroup)
        if base is not None:
            try:
                self.group = RunGroup.create(base, memory_bytes=(policy.run_memory_mb or 0) * 2**20,
                                             max_processes=policy.max_processes)
            except OSError as exc:  # the run goes on under its rlimits alone, as where no cgroup can be made
                log.warning("no cgroup for the run in %s: %s", workdir, exc)

    def launcher(self) -> list[str]:
        """Return the command prefix that puts the run in its cgroup (nothing where it has none)."""
        return self.group.launcher() if self.group is not None else []

    def watch(self, kill: Callable[[], None]) -> AbstractContextManager[object]:
        """Measure the run's folder while it runs; call `kill` once it holds more than the quota."""
        if not self.policy.run_disk_mb:
            return contextlib.nullcontext()

        def over() -> None:
            kill()
            if self.group is not None:
                self.group.kill()

        self._watch = DiskWatch(self.workdir, self.policy.run_disk_mb * 2**20, over)
        return self._watch

    def close(self) -> None:
        """Kill whatever of the run is left in its cgroup and remove the group, once the run has ended."""
        if self.group is not None:
            self._oom_kills = self.group.oom_kills()
            self.group.remove()

    def verdict(self, entry: str) -> str | None:
        """Say which bound killed the run, or None; a folder over its quota is emptied (its output files kept)."""
        if self._watch is not None and self._watch.exceeded:
            self._empty()
            return (f"{entry} was killed: {self._watch.reason}, over the run's disk quota of "
                    f"{self.policy.run_disk_mb} MB (KERNELGEN_SANDBOX_RUN_DISK_MB)")
        if self._oom_kills:
            return (f"{entry} was killed: its processes together went over the run's memory limit of "
                    f"{self.policy.run_memory_mb} MB (KERNELGEN_SANDBOX_RUN_MEMORY_MB)")
        return None

    def _empty(self) -> None:
        # The gigabytes it wrote go now, not when the job ends (nor never, where work folders are kept).
        for path in self.workdir.iterdir():
            if path.name in KEPT:
                continue
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
