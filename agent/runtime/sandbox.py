"""Run generated (untrusted) code in its own killable process group, inside bubblewrap where it starts."""

from __future__ import annotations

import contextvars
import json
import logging
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agent.runtime import admission, compile_cache, warm_start
from agent.runtime.accelerators import current_slot, visible_device
from agent.runtime.bounds import RunBounds
from agent.runtime.environment import checked, passed, without_secrets
from agent.runtime.isolation import OPT_IN, Mode, SandboxPolicy, active_policy, limits, prepare, probe, wrap

log = logging.getLogger(__name__)

# Who the sandboxed processes of this thread belong to (the service sets the job id), so a cancel
# can kill them; the registry maps an owner to its live process groups.
current_owner: contextvars.ContextVar[int | None] = contextvars.ContextVar("sandbox_owner", default=None)
_live: dict[int, set[subprocess.Popen[str]]] = {}
_live_lock = threading.Lock()

STDERR_KEEP = 20_000  # characters of stderr kept for diagnosis
RESULT_MAX_BYTES = 8 * 2**20  # a result file larger than this is not read
# The run's process group, beside its folder (the run cannot rewrite it there), so a later run can kill it.
PGID_SUFFIX = ".pgid"


class SandboxResult(BaseModel):
    """What came back from one sandboxed run: the JSON result, never parsed prints."""

    # the file's own "pass" | "fail" | "error" | "skipped", or "timeout" | "crashed" | "refused" | "killed" (a bound)
    status: str
    result: dict[str, Any]
    returncode: int | None
    seconds: float
    stdout_tail: str
    stderr_tail: str


def run_file(
    files: dict[str, str],
    entry: str,
    workdir: Path,
    *,
    device: str,
    timeout_s: float,
    args: tuple[str, ...] = (),
    launcher: tuple[str, ...] = (),
    trusted: bool = False,  # files from the offline templates: only they may run where bubblewrap cannot start
) -> SandboxResult:
    """Write files into a fresh workdir and run `[launcher...] python entry --json result.json` there."""
    if workdir.exists():
        _kill_leftover(workdir)  # a run orphaned by a killed server must not write into the new one
        shutil.rmtree(workdir)
    policy = active_policy()
    isolation = probe(policy)
    if not isolation.available and not trusted and not policy.allow_unisolated:
        _write_files(workdir, files)
        message = (f"untrusted code (model-written, or the PyTorch code a spec gives) is not run without isolation: "
                   f"{isolation.reason}; set {OPT_IN} to run it anyway")
        return SandboxResult(status="refused", result={"message": message}, returncode=None, seconds=0.0,
                             stdout_tail="", stderr_tail="")
    key = warm_start.key_of(workdir, device, trusted=trusted, mode=policy.warm_start, launcher=launcher)
    spare = warm_start.take(key) if key is not None else None
    if spare is not None:  # a process started for this job's next run, torch imported (agent/runtime/warm_start.py)
        spare.folder.rename(workdir)
    _write_files(workdir, files)
    result_path = workdir / "result.json"
    env = _environment(workdir, device, isolated=isolation.available)
    command = [*launcher, sys.executable, entry, "--json", result_path.name, *args]
    if spare is None:
        (workdir / "home").mkdir()
    cache = compile_cache.job_cache(workdir, trusted=trusted, enabled=policy.compile_cache)
    compile_cache.seed(workdir, cache)  # the kernels the job's earlier runs compiled (agent/runtime/compile_cache.py)
    if isolation.available:
        tool = shutil.which(launcher[0]) if launcher else None
        if tool is not None:  # a profiler installed outside /usr (ncu under /opt): its folder is read-only too
            readable = [*policy.read_only_paths, Path(tool).resolve().parent]
            policy = policy.model_copy(update={"read_only_paths": readable})
    elif not trusted:
        log.warning("running model-written %s WITHOUT isolation (%s is set): %s", entry, OPT_IN, isolation.reason)
    command = _confined(command, workdir, device, timeout_s, policy, isolation.available, isolation.mode)
    if spare is not None:
        bounds = spare.bounds
        bounds.workdir = workdir
    else:
        bounds = RunBounds(workdir, policy)  # the run as a whole: memory and processes (a cgroup), its folder's size
        command = [*bounds.launcher(), *command]
    if key is not None and not warm_start.waiting(key):  # started now, it is ready when the job's next run asks
        _start_spare(key, workdir.parent, device, timeout_s, policy, isolation.available, isolation.mode)
    with admission.slot():  # one of the process's bounded sandbox slots (agent/runtime/admission.py)
        started = time.monotonic()
        if spare is not None:
            process = spare.process
            slot = current_slot.get()
            visible = visible_device(device, slot) if slot is not None else {}
            warm_start.order(workdir, entry, ("--json", result_path.name, *args),
                             {k: v for k, v in visible.items() if checked(k, v) is not None})
        else:
            # Output goes to files, not pipes: a process the run leaves behind cannot hold the run open through them.
            with open(workdir / "stdout.txt", "w") as out, open(workdir / "stderr.txt", "w") as err:
                process = subprocess.Popen(
                    command, cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err, text=True,
                    start_new_session=True,  # its own process group, so a timeout kills every child
                )
        _pgid_file(workdir).write_text(str(process.pid))
        owner = current_owner.get()
        if owner is not None:
            with _live_lock:
                _live.setdefault(owner, set()).add(process)
        timed_out = False
        try:
            with bounds.watch(lambda: _kill_group(process)):
                process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            _kill_group(process)  # whatever the run left running (a daemon, a handler) must not outlive it
            process.wait()
            bounds.close()
            if owner is not None:
                with _live_lock:
                    _live.get(owner, set()).discard(process)
    seconds = time.monotonic() - started
    compile_cache.keep(workdir, cache)
    log.info("ran %s in %s: %.2f s", entry, workdir.name, seconds)
    stdout = read_output(workdir / "stdout.txt", STDERR_KEEP)
    stderr = read_output(workdir / "stderr.txt", STDERR_KEEP)
    killed = bounds.verdict(entry)
    if killed is not None:
        return SandboxResult(status="killed", result={"message": killed}, returncode=process.returncode,
                             seconds=seconds, stdout_tail=stdout, stderr_tail=stderr)
    if timed_out:
        return SandboxResult(
            status="timeout", result={"message": f"{entry} ran past {timeout_s:.0f} s and was killed"},
            returncode=None, seconds=seconds, stdout_tail=stdout, stderr_tail=stderr,
        )
    result = _read_result(result_path, stderr)
    status = result.get("status")
    return SandboxResult(
        status=status if status in ("pass", "fail", "error", "skipped") else "crashed",
        result=result,
        returncode=process.returncode, seconds=seconds,
        stdout_tail=stdout, stderr_tail=stderr,
    )


def _write_files(workdir: Path, files: dict[str, str]) -> None:
    workdir.mkdir(parents=True, exist_ok=True)
    for name, source in files.items():
        (workdir / name).write_text(source)


def _confined(command: list[str], folder: Path, device: str, timeout_s: float, policy: SandboxPolicy,
              isolated: bool, mode: Mode) -> list[str]:
    """Wrap a run's command: in bubblewrap (its folder handed to the run's uid), else under prlimit where it is."""
    if isolated:
        prepare(folder, policy, mode)
        return wrap(command, folder, device=device, timeout_s=timeout_s, policy=policy, mode=mode)
    if shutil.which("prlimit"):  # the limits hold without bubblewrap too, but for processes (counted per user)
        return [*limits(device, timeout_s, policy, processes=False), *command]
    return command


def _start_spare(key: warm_start.Key, job: Path, device: str, timeout_s: float, policy: SandboxPolicy,
                 isolated: bool, mode: Mode) -> None:
    """Start a waiting process for the job's next run, wrapped and bounded as the run itself will be."""
    folder = warm_start.spare_folder(job)
    (folder / "home").mkdir(parents=True)
    token = current_slot.set(None)  # the run that takes it names its accelerator in the order
    try:
        env = _environment(folder, device, isolated=isolated)
    finally:
        current_slot.reset(token)
    command = _confined([sys.executable, "-c", warm_start.BOOT], folder, device, timeout_s, policy, isolated, mode)
    bounds = RunBounds(folder, policy)
    with open(folder / "stdout.txt", "w") as out, open(folder / "stderr.txt", "w") as err:
        process = subprocess.Popen([*bounds.launcher(), *command], cwd=folder, env=env, stdin=subprocess.DEVNULL,
                                   stdout=out, stderr=err, text=True, start_new_session=True)
    owner = current_owner.get()
    if owner is not None:  # a cancel kills it with the job's runs
        with _live_lock:
            _live.setdefault(owner, set()).add(process)
    warm_start.offer(key, warm_start.Spare(folder=folder, process=process, bounds=bounds))


def stop_spares(job: Path) -> int:
    """Stop the waiting processes of a job that ended (agent/runtime/warm_start.py); return how many."""
    stopped = warm_start.discard(job)
    with _live_lock:
        for processes in _live.values():
            processes.difference_update(stopped)
    return len(stopped)


def read_output(path: Path, keep: int) -> str:
    """Read the last `keep` bytes of a file a run wrote, refusing links, pipes and devices it may have put there."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            return ""
        handle.seek(max(0, info.st_size - keep))
        return handle.read(keep).decode(errors="replace")


def kill_owned(owner: int) -> int:
    """Kill every live sandboxed process group of an owner (a cancelled job); return how many."""
    with _live_lock:
        processes = list(_live.get(owner, ()))
    for process in processes:
        _kill_group(process)
    return len(processes)


def _environment(workdir: Path, device: str, *, isolated: bool) -> dict[str, str]:
    # Only the named variables running torch and Triton needs (agent/runtime/environment.py): generated code never
    # sees API keys or database URLs. Home and caches are inside the run's folder, the only place it may write.
    env = passed()
    folder = str(workdir.resolve())
    env |= {"HOME": f"{folder}/home", "XDG_CACHE_HOME": f"{folder}/home/.cache", "USER": "sandbox",
            "LOGNAME": "sandbox", "TORCHINDUCTOR_CACHE_DIR": f"{folder}/home/.inductor"}
    if isolated:
        env["TMPDIR"] = "/tmp"  # private to the run
    env["TRITON_CACHE_DIR"] = str(workdir / compile_cache.RUN_CACHE)
    env["KERNELGEN_DEVICE"] = device
    slot = current_slot.get()
    if slot is not None:  # the stage holds one accelerator of several: the run sees that one alone
        env |= {k: v for k, v in visible_device(device, slot).items() if checked(k, v) is not None}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
    return without_secrets(env)


def _pgid_file(workdir: Path) -> Path:
    return workdir.parent / f".{workdir.name}{PGID_SUFFIX}"


def _kill_leftover(workdir: Path) -> None:
    try:
        os.killpg(int(_pgid_file(workdir).read_text()), signal.SIGKILL)
    except (OSError, ValueError):
        pass  # no record, or the group is gone already


def _kill_group(process: subprocess.Popen[str]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _crash_line(stderr: str) -> str:
    """Return the error a crash ended with: the last unindented line that is not a traceback's header."""
    # Processes that share stderr (a fork bomb's children) interleave their tracebacks: the very last line may be
    # one of another traceback's frames, which names no error.
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    errors = [line for line in lines if not line[:1].isspace() and not line.startswith("Traceback (")]
    return (errors or lines or ["no output"])[-1].strip()


def _read_result(path: Path, stderr: str) -> dict[str, Any]:
    text = read_output(path, RESULT_MAX_BYTES + 1)
    if not text:
        return {"message": f"no result file was written: {_crash_line(stderr)}"}
    if len(text) > RESULT_MAX_BYTES:
        return {"message": f"the result file is larger than {RESULT_MAX_BYTES} bytes"}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return {"message": f"the result file is not JSON: {exc}"}
    return data if isinstance(data, dict) else {"message": "the result file is not a JSON object"}
