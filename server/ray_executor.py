"""Run queued jobs as Ray tasks: one job per task holding one GPU (or NPU, or CPU); the database stays the truth."""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

from kernelgen.settings import Settings
from storage import crud

log = logging.getLogger(__name__)


_services: dict[str, Any] = {}  # one service (engine, checkpointer pool, graph) per worker process and settings


def run_on_worker(settings_json: str, job_id: int) -> str:
    """Run one job in a Ray worker through a service of its own (no executor); return its final status."""
    from server.service import JobService

    service = _services.get(settings_json)
    if service is None:
        service = _services[settings_json] = JobService(Settings.model_validate_json(settings_json))
    service.run_one(job_id)
    job = crud.get_job(service.engine, job_id)
    return job.status if job is not None else "deleted"


class RayExecutor:
    """Submit each job as a Ray task; a task whose worker dies runs again and resumes from the job's checkpoint."""

    def __init__(self, settings: Settings, on_lost: Callable[[int, str], None]) -> None:
        import ray

        address = settings.ray_address or os.environ.get("RAY_ADDRESS") or "auto"
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False, logging_level=logging.WARNING)
        self._ray = ray
        self._settings_json = settings.model_dump_json()
        self._engine_url = settings.database_url
        self._remote = ray.remote(max_retries=settings.ray_max_retries, retry_exceptions=False)(run_on_worker)
        self._refs: dict[int, Any] = {}  # job id -> object ref, in submission order
        self._on_lost = on_lost  # fails a job whose task ended without a final status
        self._lock = threading.Lock()
        self._gpus = ray.cluster_resources().get("GPU", 0)
        self._npus = ray.cluster_resources().get("NPU", 0)
        from storage.db import make_engine

        self._db = make_engine(settings.database_url)

    def devices(self) -> dict[str, str]:
        """Name the accelerator kinds the cluster offers: a job may ask for one the API's own machine lacks."""
        found = {"cuda": f"{self._gpus:g} GPU(s) on the Ray cluster"} if self._gpus else {}
        return found | ({"npu": f"{self._npus:g} NPU(s) on the Ray cluster"} if self._npus else {})

    def _resources(self, job_id: int) -> dict[str, Any]:
        """Ask for the accelerator the job measures on: a GPU, an NPU, or one CPU when the cluster has neither."""
        job = crud.get_job(self._db, job_id)
        device = json.loads(job.options_json or "{}").get("device", "auto") if job else "auto"
        if device == "cuda" or device == "auto" and self._gpus:
            return {"num_gpus": 1, "num_cpus": 1}
        if device == "npu" or device == "auto" and self._npus:
            return {"resources": {"NPU": 1}, "num_cpus": 1}
        return {"num_cpus": 1}

    def submit(self, job_id: int) -> None:
        """Queue a job as a Ray task."""
        with self._lock:
            self._reap()
            if job_id in self._refs:
                return
            self._refs[job_id] = self._remote.options(**self._resources(job_id)).remote(self._settings_json, job_id)

    def withdraw(self, job_id: int) -> bool:
        """Cancel a job's task if it has not started (its row still says queued); False otherwise."""
        with self._lock:
            ref = self._refs.get(job_id)
            job = crud.get_job(self._db, job_id)
            if ref is None or job is None or job.status != "queued":
                return False
            self._ray.cancel(ref, force=False)
            self._refs.pop(job_id, None)
            return True

    def queue_position(self, job_id: int) -> int | None:
        """Return the job's place among this server's jobs that have not started, or None."""
        with self._lock:
            self._reap()
            waiting = [j for j in self._refs if self._status(j) == "queued"]
        return waiting.index(job_id) + 1 if job_id in waiting else None

    def running(self) -> list[int]:
        """List this server's jobs whose task has not finished and whose row says running."""
        with self._lock:
            self._reap()
            return sorted(j for j in self._refs if self._status(j) == "running")

    def shutdown(self) -> None:
        """Let go of the cluster; tasks of this driver stop with it and resume at the next start."""
        with self._lock:
            self._refs.clear()
        self._ray.shutdown()

    def _status(self, job_id: int) -> str | None:
        """Return a job's status as its row says."""
        job = crud.get_job(self._db, job_id)
        return job.status if job is not None else None

    def _reap(self) -> None:
        """Forget the tasks that finished."""
        if not self._refs:
            return
        done, _ = self._ray.wait(list(self._refs.values()), num_returns=len(self._refs), timeout=0)
        finished = set(done)
        for job_id in [j for j, ref in self._refs.items() if ref in finished]:
            ref = self._refs.pop(job_id)
            try:
                self._ray.get(ref)
            except Exception as exc:  # the worker died past its retries, or the job could not start there
                if self._status(job_id) in ("queued", "running"):
                    self._on_lost(job_id, f"its Ray task ended without finishing the job: {type(exc).__name__}: "
                                          f"{str(exc)[:300]}")
