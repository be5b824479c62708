"""Wrap a sandboxed command in bubblewrap: its own namespaces, an unprivileged uid, a read-only system, rlimits."""

from __future__ import annotations

import contextvars
import functools
import logging
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from agent.runtime import bounds
from agent.runtime.mounts import bind_args

log = logging.getLogger(__name__)

Mode = Literal["root", "userns", "none"]
SANDBOX_UID_INSIDE = 65534  # "nobody" inside the sandbox's user namespace
NAMESPACES = ("--unshare-pid", "--unshare-ipc", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
              "--hostname", "sandbox")
OPT_IN = "KERNELGEN_SANDBOX_ALLOW_UNISOLATED=true"


class SandboxPolicy(BaseModel):
    """How generated code is confined and what it may use (from the settings' KERNELGEN_SANDBOX_*)."""

    bwrap: str = "bwrap"  # the bubblewrap binary
    allow_unisolated: bool = False  # run model-written code without bubblewrap where it cannot start
    uid: int = 65534  # the real uid runs take when the service runs as root
    max_processes: int = 512  # threads count too (torch starts one per core)
    max_open_files: int = 4096
    max_file_mb: int = 4096  # the largest file a run may write
    memory_mb: int | None = 16384  # address space per process on the CPU path (GPU drivers reserve far more)
    tmp_mb: int = 1024  # the private /tmp
    read_only_paths: list[Path] = []  # more folders a run may read (a CUDA or CANN toolkit outside /usr)
    run_memory_mb: int | None = 16384  # resident memory of a run's processes together (where a cgroup holds it)
    run_disk_mb: int | None = 8192  # a run's folder, every file together (agent/runtime/quota.py)
    cgroup: Path | None = None  # where runs' cgroups are made; None: under the service's own (agent/runtime/cgroups.py)
    compile_cache: bool = True  # a job's runs share the kernels they compiled (agent/runtime/compile_cache.py)
    # a job's next run started ahead, torch imported (agent/runtime/warm_start.py); auto: on GPUs and NPUs only
    warm_start: Literal["auto", "on", "off"] = "auto"


class Isolation(BaseModel):
    """Whether bubblewrap starts here, how, and why not."""

    mode: Mode
    reason: str = ""

    @property
    def available(self) -> bool:
        """Tell whether runs are wrapped in bubblewrap."""
        return self.mode != "none"


# The service sets the policy of its own settings for its worker threads; elsewhere (the CLI) the environment's.
current_policy: contextvars.ContextVar[SandboxPolicy | None] = contextvars.ContextVar("sandbox_policy", default=None)


def active_policy() -> SandboxPolicy:
    """Return the policy of this job: the service's, else the one the environment's settings give."""
    return current_policy.get() or _environment_policy()


@functools.cache
def _environment_policy() -> SandboxPolicy:
    from kernelgen.settings import Settings

    return policy_from_settings(Settings())


def policy_from_settings(settings: object) -> SandboxPolicy:
    """Read the KERNELGEN_SANDBOX_* settings into a policy."""
    fields = {name: getattr(settings, f"sandbox_{name}") for name in SandboxPolicy.model_fields
              if hasattr(settings, f"sandbox_{name}")}
    return SandboxPolicy.model_validate(fields)


def probe(policy: SandboxPolicy) -> Isolation:
    """Find out once per policy whether bubblewrap starts here, and in which mode."""
    return _probe(policy.bwrap, policy.uid, tuple(policy.read_only_paths))


@functools.cache
def _probe(bwrap: str, uid: int, extra: tuple[Path, ...]) -> Isolation:
    policy = SandboxPolicy(bwrap=bwrap, uid=uid, read_only_paths=list(extra))
    if shutil.which(bwrap) is None:
        return Isolation(mode="none", reason=f"{bwrap} is not installed (Debian: apt-get install bubblewrap)")
    missing = [tool for tool in ("prlimit", "setpriv") if shutil.which(tool) is None]
    if missing:
        return Isolation(mode="none", reason=f"{' and '.join(missing)} not found (util-linux)")
    modes: list[Mode] = ["root", "userns"] if os.geteuid() == 0 else ["userns"]
    reasons = []
    for mode in modes:
        problem = _try(policy, mode)
        if problem is None:
            return Isolation(mode=mode)
        reasons.append(f"{mode} mode: {problem}")
    return Isolation(mode="none", reason="bubblewrap cannot start here (" + "; ".join(reasons) + ")")


def _try(policy: SandboxPolicy, mode: Mode) -> str | None:
    """Run `python -c pass` the way a job's files run; return what went wrong, or None."""
    folder = Path(tempfile.mkdtemp(prefix="kernelgen-probe-"))
    try:
        prepare(folder, policy, mode)
        command = wrap([sys.executable, "-c", "pass"], folder, device="cpu", timeout_s=30, policy=policy, mode=mode)
        done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=60,
                              env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if done.returncode != 0:
        return (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1][:300]
    return None


def prepare(workdir: Path, policy: SandboxPolicy, mode: Mode) -> None:
    """Hand the run's folder to the uid the run takes (root mode), so it can write there and nowhere else."""
    if mode != "root":
        return
    for folder, dirs, files in os.walk(workdir):
        for name in [*dirs, *files, ""]:
            os.chown(os.path.join(folder, name) if name else folder, policy.uid, policy.uid, follow_symlinks=False)


def limits(device: str, timeout_s: float, policy: SandboxPolicy, *, processes: bool = True) -> list[str]:
    """Return the prlimit launcher: CPU time, open files, file size, processes, and address space on the CPU."""
    cpu_s = math.ceil(timeout_s * (os.cpu_count() or 1)) + 60  # every thread's time counts, so the cores' worth
    args = ["prlimit", f"--cpu={cpu_s}", f"--nofile={policy.max_open_files}",
            f"--fsize={policy.max_file_mb * 2**20}", "--core=0"]
    if processes:
        args.append(f"--nproc={policy.max_processes}")
    if device == "cpu" and policy.memory_mb:
        args.append(f"--as={policy.memory_mb * 2**20}")
    return [*args, "--"]


def wrap(
    command: list[str], workdir: Path, *, device: str, timeout_s: float, policy: SandboxPolicy, mode: Mode,
) -> list[str]:
    """Return the command line that runs `command` in `workdir` inside bubblewrap (mode root or userns)."""
    folder = workdir.resolve()
    mounts = bind_args(folder, device, policy.read_only_paths, policy.tmp_mb * 2**20)
    limited = [*limits(device, timeout_s, policy), *command]
    # The outer bubblewrap and every process under it die with their parent (the service's worker).
    common = ["--die-with-parent", "--new-session", "--chdir", str(folder)]
    user = ["--unshare-user", "--uid", str(SANDBOX_UID_INSIDE), "--gid", str(SANDBOX_UID_INSIDE), "--disable-userns"]
    if mode == "userns":
        return [policy.bwrap, *user, *NAMESPACES, *common, *mounts, "--", *limited]
    # As root: bubblewrap builds the file-system with root's reach, then the run drops to a real unprivileged uid
    # (so the process limit holds and root's files stay closed) and enters its own user namespace.
    drop = ["setpriv", f"--reuid={policy.uid}", f"--regid={policy.uid}", "--clear-groups", "--inh-caps=-all",
            "--bounding-set=-all", "--no-new-privs", "--"]
    inner = [policy.bwrap, *user, "--die-with-parent", "--dev-bind", "/", "/", "--chdir", str(folder), "--"]
    return [policy.bwrap, *NAMESPACES, *common, *mounts, "--", *drop, *inner, *limited]


def describe(isolation: Isolation, policy: SandboxPolicy) -> str:
    """Say in one line how generated code is confined here (for the service's start-up log)."""
    if isolation.mode == "root":
        return (f"sandbox: bubblewrap, runs as uid {policy.uid} in their own user, PID, IPC and network namespaces "
                f"(at most {policy.max_processes} processes)")
    if isolation.mode == "userns":
        return "sandbox: bubblewrap, runs in their own user, PID, IPC and network namespaces"
    if policy.allow_unisolated:
        return (f"SANDBOX ISOLATION IS OFF: {isolation.reason}. {OPT_IN} is set, so model-written code and code "
                "specs run with no file-system, network or process boundary. Do not serve untrusted users like this.")
    return (f"sandbox: {isolation.reason}. Model-written code and PyTorch code given as a spec will be refused (set "
            f"{OPT_IN} to run them anyway); offline kernels run in the plain sandbox.")


def log_state(policy: SandboxPolicy) -> Isolation:
    """Probe and log how generated code is confined, loudly when it is not."""
    isolation = probe(policy)
    line = describe(isolation, policy)
    if isolation.available:
        log.info(line)
    else:
        log.warning(line)
    log.info(bounds.describe(policy))
    return isolation
