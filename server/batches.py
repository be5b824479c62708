"""Run batches on the job service: each task an ordinary job; progress, cancel and recovery after a restart."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from itertools import pairwise
from typing import Any

from sqlalchemy import Engine

from agent.state import JobRequest
from server.service import FINAL_STATUSES, JobService
from storage import batches, crud
from storage.models import Batch, BatchTask, Job

log = logging.getLogger(__name__)
ETA_SAMPLE = 20  # finished tasks whose run time the estimate averages


def submit_batch(service: JobService, owner: str | None, name: str, source: str, tasks: list[tuple[str, str]],
                 options: dict[str, Any]) -> int:
    """Record a batch and its tasks, then queue one job per task; return the batch id."""
    batch_id = batches.create_batch(service.engine, owner, name, source, json.dumps(options), tasks)
    submit_tasks(service, batch_id)
    return batch_id


def submit_tasks(service: JobService, batch_id: int) -> None:
    """Queue a job for each task of the batch that has none (all of them, or those a restart left behind)."""
    batch = batches.get_batch(service.engine, batch_id)
    if batch is None or batch.cancel_requested:
        return
    options = json.loads(batch.options_json or "{}")
    for task in batches.list_tasks(service.engine, batch_id):
        current = batches.get_batch(service.engine, batch_id)
        if current is None or current.cancel_requested:  # a cancel that came while the tasks were being queued
            return
        if task.job_id is None:  # linked in the job's own transaction: a kill never leaves a job the batch lacks
            assert task.id is not None
            service.submit(JobRequest(spec_text=task.spec_text, **options), owner=batch.owner, task_id=task.id)


def recover(service: JobService) -> None:
    """Queue the tasks a restart interrupted before their job was submitted."""
    for batch_id in dict.fromkeys(task.batch_id for task in batches.unsubmitted(service.engine)):
        log.info("batch %s: submitting the tasks left unsubmitted by a restart", batch_id)
        submit_tasks(service, batch_id)


def cancel_batch(service: JobService, batch: Batch) -> int:
    """Cancel every unfinished task of a batch; return how many were cancelled."""
    assert batch.id is not None
    batches.request_cancel(service.engine, batch.id)
    cancelled = 0
    for task in batches.list_tasks(service.engine, batch.id):
        job = crud.get_job(service.engine, task.job_id) if task.job_id is not None else None
        if job is not None and job.status not in FINAL_STATUSES and service.cancel(task.job_id or 0):
            cancelled += 1
    return cancelled


def task_rows(service: JobService, tasks: list[BatchTask]) -> list[tuple[BatchTask, Job | None, str]]:
    """Pair each task with its job and the job's live status (queued for a task not yet submitted)."""
    rows = []
    for task in tasks:
        job = crud.get_job(service.engine, task.job_id) if task.job_id is not None else None
        status = service.live_status(job)[0] if job is not None else "queued"
        rows.append((task, job, status))
    return rows


def progress(service: JobService, batch: Batch) -> dict[str, Any]:
    """Return the batch's counts per status, its status, and an estimate of the time left."""
    assert batch.id is not None
    rows = task_rows(service, batches.list_tasks(service.engine, batch.id))
    counts = {status: 0 for status in ("queued", "running", *FINAL_STATUSES)}
    if batch.cancel_requested:  # a task never submitted before the cancel will not be
        rows = [(task, job, "cancelled" if job is None else status) for task, job, status in rows]
    for _, _, status in rows:
        counts[status] = counts.get(status, 0) + 1
    finished = [job for _, job, status in rows if job is not None and status in FINAL_STATUSES]
    left = sum(1 for _, _, status in rows if status not in FINAL_STATUSES)
    eta = None
    if finished and left:  # the last finished tasks' mean run time (not their wait), over the jobs run at once
        times = [t for t in (run_seconds(service.engine, job) for job in finished[-ETA_SAMPLE:]) if t is not None]
        if times:
            eta = round(sum(times) / len(times) * left / max(1, service.concurrency), 1)
    status = "cancelled" if batch.cancel_requested and left == 0 and counts["cancelled"] else (
        "done" if left == 0 else "running" if counts["running"] or finished else "queued")
    return {"status": status, "total": len(rows), "counts": counts, "eta_s": eta,
            "tasks": [{"index": t.index, "title": t.title, "job_id": t.job_id, "status": s,
                       "op": j.op_name if j else None, "stage": j.stage if j else ""} for t, j, s in rows]}


def run_seconds(engine: Engine, job: Job) -> float | None:
    """Return how long a finished job ran: from its first event after the queue to its last change, less downtime."""
    assert job.id is not None
    events = crud.list_events(engine, job.id)
    started = next((e.created_at for e in events if e.stage != "queued"), None)
    if started is None and not events:
        started = job.created_at  # the command line's jobs record no events: they start when they are created
    if started is None:
        return None
    seconds = (aware(job.updated_at) - aware(started)).total_seconds()
    # While the service was down the job did not run: from its last event before a restart to the restart. (The
    # stage that the stop cut runs again after it, so its lost part is not the job's time either.)
    for before, restart in pairwise(events):
        if restart.stage == "restart" and aware(before.created_at) >= aware(started):
            seconds -= (aware(restart.created_at) - aware(before.created_at)).total_seconds()
    return max(0.0, seconds)


def aware(moment: datetime) -> datetime:
    """Treat a naive time (SQLite drops the zone) as UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
