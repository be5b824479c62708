"""Run one job through the graph, with its database row."""

from __future__ import annotations

import logging
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from agent.context import JobContext
from agent.generators.offline.dispatch import OfflineGenerator
from agent.graph import build_graph
from agent.llm.client import LlmCall, LlmClient
from agent.llm.config import resolve_llm
from agent.runtime.accelerators import AcceleratorSlots
from agent.runtime.sandbox import stop_spares
from agent.state import JobRequest, JobState
from kernelgen.settings import Settings
from storage import crud
from storage.db import make_engine
from storage.runners import cli_runner, fail_abandoned_cli_jobs

log = logging.getLogger(__name__)

# Each round visits about eight nodes, each repair about four: room for five rounds, five repairs per failing
# version (the settings' cap) and refusals.
RECURSION_LIMIT = 300


def job_context(
    settings: Settings, engine: Engine, report: Callable[[str, str], None], *, job_id: int, llm: str | None,
    **extra: Any,
) -> JobContext:
    """Build a job's run-time context from the settings (the CLI and the service alike)."""
    config = resolve_llm(llm, settings)

    def record(call: LlmCall) -> None:
        crud.record_llm_call(engine, job_id, call.uid, **call.model_dump(exclude={"uid"}))

    return JobContext(
        engine=engine, work_dir=settings.work_dir, accuracy_timeout_s=settings.accuracy_timeout_s,
        performance_timeout_s=settings.performance_timeout_s, profile_timeout_s=settings.profile_timeout_s,
        report=report, llm=LlmClient(config, record) if config is not None else None,
        generator=OfflineGenerator(settings.offline_engines), **extra,
    )


def run_job(request: JobRequest, settings: Settings, report: Callable[[str, str], None],
            accelerators: AcceleratorSlots | None = None) -> JobState:
    """Create the job row, run the graph to the end and return the final state (jobs at once share accelerators)."""
    engine = make_engine(settings.database_url)
    # The command line's own job (a server sharing the database leaves it alone); one a killed command line left
    # unfinished is failed now, the next time a command line runs here.
    fail_abandoned_cli_jobs(engine)
    job_id = crud.create_job(engine, request.spec_text, request.out_dir or request.out_root, runner=cli_runner())
    extra = {"accelerators": accelerators} if accelerators is not None else {}
    context = job_context(settings, engine, report, job_id=job_id, llm=request.llm, **extra)
    initial: dict[str, Any] = {"job_id": job_id, "request": request}
    try:
        final = build_graph().invoke(
            initial, context=context, config={"recursion_limit": RECURSION_LIMIT}  # type: ignore[call-overload]
        )
    except Exception as exc:  # keep the job row truthful, then let the caller report it
        crud.update_job(engine, job_id, status="failed", message=f"{type(exc).__name__}: {exc}")
        raise
    finally:
        remove_work_dir(settings, job_id)
    return final  # type: ignore[return-value]


def work_dir_of(settings: Settings, job_id: int) -> Path:
    """Return the folder a job's sandboxed runs are made in (each stage makes its own under it)."""
    return Path(settings.work_dir) / f"job-{job_id}"


def remove_work_dir(settings: Settings, job_id: int) -> None:
    """Remove a job's sandbox folders once it has ended, unless the settings keep them (KERNELGEN_KEEP_WORK_DIRS)."""
    # What a job produced is in the database and its output folder; the runs' folders hold copies, caches and
    # whatever the generated code wrote, up to a disk quota each, which would otherwise pile up job after job.
    folder = work_dir_of(settings, job_id)
    stop_spares(folder)  # the processes started for runs that will not come (agent/runtime/warm_start.py)
    if settings.keep_work_dirs:
        return
    shutil.rmtree(folder, ignore_errors=True)
    if not folder.exists():
        return
    # A run may leave a folder it made read-only or unreadable (its files then cannot be unlinked, where the service
    # is not root): open the folders up, never following a link, and remove again.
    os.chmod(folder, stat.S_IRWXU)
    for parent, dirs, _ in os.walk(folder):
        for name in dirs:
            path = os.path.join(parent, name)
            if not os.path.islink(path):
                os.chmod(path, stat.S_IRWXU)
    shutil.rmtree(folder, ignore_errors=True)
    if folder.exists():
        log.warning("the work folder of job %s could not be removed: %s", job_id, folder)
