"""Warm starts: the next sandboxed run of a job is already started, torch imported, when the job asks for it.

A GPU job makes six or more sandboxed runs (accuracy, timing, profile, search, each round), and each began with a
Python that imports torch and Triton: about 3 s on an H200's host, half of a short stage. A spare is that process,
started while the job's current run works: in a folder of its own beside the job's runs, under the same bubblewrap
wrapping, limits and cgroup as any run, it imports torch and waits for an order. The run that takes it renames the
spare's folder to its own, writes its files and `go.json` there, and from then on it is an ordinary run: timed,
killed and read the same way. Nothing of one run reaches the next (a spare serves one run and then exits, as any run
does), spares never cross jobs or trust levels, and a job's spares die with it, with a cancel, or after IDLE_S unused.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from agent.runtime.bounds import RunBounds
from agent.runtime.compile_cache import JOB_FOLDER

ORDER = "go.json"
IDLE_S = 300  # a spare nobody took in this long exits by itself
SPARE_PREFIX = ".spare-"

# The spare's program: import what every run imports, wait for the order, become the run. The environment's paths
# were made for the spare's folder; where the folder was renamed under it (no bubblewrap mount holds the old name),
# they are moved to where it now is.
BOOT = f'''
import json, os, runpy, sys, time
started_in, parent = os.getcwd(), os.getppid()
import importlib
import torch
# Triton too. Not torch._dynamo or inductor: their configuration reads the cache folders at import, which would then
# stay the spare's old paths where no mount keeps them (a run without bubblewrap).
for name in ("triton", "triton.language"):
    try:
        importlib.import_module(name)
    except Exception:
        pass
deadline = time.monotonic() + {IDLE_S}
while not os.path.exists({ORDER!r}):
    if time.monotonic() > deadline or os.getppid() != parent:
        sys.exit(0)
    time.sleep(0.005)
with open({ORDER!r}) as handle:
    order = json.load(handle)
here = os.getcwd()
for name, value in list(os.environ.items()):
    if value.startswith(started_in):
        os.environ[name] = here + value[len(started_in):]
os.environ.update(order["env"])
sys.argv = [order["entry"], *order["args"]]
sys.path.insert(0, here)
runpy.run_path(order["entry"], run_name="__main__")
'''


@dataclass
class Spare:
    """A started, waiting process and what it was started with."""

    folder: Path
    process: subprocess.Popen[str]
    bounds: RunBounds


Key = tuple[str, str, bool]  # the job's folder, the device, whether the files run trusted
_spares: dict[Key, Spare] = {}
_lock = threading.Lock()
_names = itertools.count()


def key_of(workdir: Path, device: str, *, trusted: bool, mode: str, launcher: tuple[str, ...]) -> Key | None:
    """Return the spare key of a run, or None for a run that never takes one (not a job's, profiled, the CPU)."""
    if launcher or not JOB_FOLDER.fullmatch(workdir.parent.name):
        return None
    if mode == "off" or (mode == "auto" and device == "cpu"):  # the interpreter's runs are long: import is noise
        return None
    return (str(workdir.parent.resolve()), device, trusted)


def take(key: Key) -> Spare | None:
    """Hand over the key's waiting spare, if it is still alive."""
    with _lock:
        spare = _spares.pop(key, None)
    if spare is not None and spare.process.poll() is not None:
        spare.bounds.close()
        return None
    return spare


def spare_folder(job: Path) -> Path:
    """Return a fresh folder name for a spare of the job (inside the job's folder, removed with it)."""
    return job / f"{SPARE_PREFIX}{os.getpid()}-{next(_names)}"


def offer(key: Key, spare: Spare) -> None:
    """Keep a started spare for the key's next run (one per key: a second is not needed)."""
    with _lock:
        previous = _spares.get(key)
        _spares[key] = spare
    if previous is not None:
        _stop(previous)


def waiting(key: Key) -> bool:
    """Say whether a live spare waits for the key."""
    with _lock:
        spare = _spares.get(key)
    return spare is not None and spare.process.poll() is None


def order(folder: Path, entry: str, args: tuple[str, ...], env: dict[str, str]) -> None:
    """Tell the spare in `folder` what to run: written whole (renamed into place), so it never reads half."""
    partial = folder / f".{ORDER}.partial"
    partial.write_text(json.dumps({"entry": entry, "args": list(args), "env": env}))
    partial.rename(folder / ORDER)


def discard(job: Path) -> list[subprocess.Popen[str]]:
    """Stop the spares of a job that ended; return their processes."""
    prefix = str(job.resolve())
    with _lock:
        keys = [k for k in _spares if k[0] == prefix]
        spares = [_spares.pop(k) for k in keys]
    for spare in spares:
        _stop(spare)
    return [spare.process for spare in spares]


def _stop(spare: Spare) -> None:
    try:
        os.killpg(spare.process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    spare.process.wait()
    spare.bounds.close()
    shutil.rmtree(spare.folder, ignore_errors=True)  # a job whose folders are kept keeps no dead spare's
