"""Triton's compile cache, carried from one sandboxed run of a job to the next.

Each run gets a fresh folder, and Triton's cache was inside it: the accuracy test, the timing, the profile and every
search of a job compiled the same kernels again (a second or more each on a GPU). The job keeps one cache beside its
runs, `job-N/.compile-cache/<trust>/`; a run starts from a copy of it, and what a run compiled is added back after
it ends. A copy, not a mount or links, so the run's folder stays the only place it writes (its disk quota counts the
copy) and no run can change what another reads. Caches never cross jobs, and a run of model-written files
(untrusted) never feeds the cache the offline files' runs read: each trust level has its own.
"""

from __future__ import annotations

import logging
import re
import shutil
from pathlib import Path

log = logging.getLogger(__name__)

RUN_CACHE = ".triton-cache"  # the run's TRITON_CACHE_DIR, inside its folder
JOB_FOLDER = re.compile(r"job-\d+")  # runs of a job live in work_dir/job-N/<stage folder>
CACHE_MB = 512  # past this the job's cache takes nothing more (a run starts from what it holds)


def job_cache(workdir: Path, *, trusted: bool, enabled: bool = True) -> Path | None:
    """Return the job's cache for a run in `workdir`, or None for a run that is not a job's (a read, a check)."""
    if not enabled:
        return None
    job = workdir.parent
    if not JOB_FOLDER.fullmatch(job.name):
        return None
    return job / ".compile-cache" / ("trusted" if trusted else "untrusted")


def seed(workdir: Path, cache: Path | None) -> None:
    """Start the run's Triton cache from the job's."""
    if cache is None or not cache.is_dir():
        return
    # Entries still being added (".name.partial") are left out.
    shutil.copytree(cache, workdir / RUN_CACHE, symlinks=True, dirs_exist_ok=True,
                    ignore=lambda _folder, names: [n for n in names if n.startswith(".")])


def keep(workdir: Path, cache: Path | None) -> None:
    """Add the kernels this run compiled to the job's cache: folders of regular files only, never over one it holds."""
    source = workdir / RUN_CACHE
    if cache is None or not source.is_dir() or source.is_symlink():
        return
    try:
        held = _size(cache) if cache.is_dir() else 0
        for entry in source.iterdir():  # Triton's entries are folders named by a hash of what they compile
            target = cache / entry.name
            if target.exists() or entry.is_symlink() or not entry.is_dir():
                continue
            files = list(entry.iterdir())
            if not files or any(f.is_symlink() or not f.is_file() for f in files):  # not what Triton writes
                continue
            size = sum(f.stat().st_size for f in files)
            if held + size > CACHE_MB * 2**20:
                return
            partial = cache / f".{entry.name}.partial"  # renamed into place whole: a later run never sees half
            partial.mkdir(parents=True, exist_ok=True)
            for file in files:
                shutil.copyfile(file, partial / file.name, follow_symlinks=False)
            partial.rename(target)
            held += size
    except OSError as exc:  # a cache that cannot be kept costs time, never the run
        log.warning("the compile cache of %s was not kept: %s", workdir.parent.name, exc)


def _size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and not f.is_symlink())
