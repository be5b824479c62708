"""Submit, list, inspect and cancel jobs."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Response, status

from agent.generators.config_rules import config_from_label
from agent.llm.config import LlmConfigError, resolve_llm
from agent.reader import split_tasks
from agent.reading import Reading
from agent.state import JobRequest
from server.deps import EngineDep, JobDep, PrincipalDep, RedactorDep, ServiceDep, SettingsDep, check_spec_size
from server.devices import describe
from server.errors import AUTH_ERRORS, CONFLICT, INPUT_ERRORS, INVALID, NOT_FOUND
from server.redact import Redactor
from server.schemas import (
    FINAL_STATUSES,
    JobAccepted,
    JobCancelled,
    JobCreate,
    JobDetail,
    JobLinks,
    JobPublic,
    JobsPublic,
    JobStatus,
    RoundPublic,
)
from storage import crud
from storage.models import Job

router = APIRouter(prefix="/jobs", tags=["jobs"], responses=AUTH_ERRORS)


@router.post("", status_code=status.HTTP_202_ACCEPTED, response_model=JobAccepted, summary="Submit a job",
             responses=INPUT_ERRORS)
def submit_job(
    body: JobCreate, response: Response, service: ServiceDep, settings: SettingsDep, principal: PrincipalDep,
) -> JobAccepted:
    """Queue a job for one operator spec; follow it at the returned links."""
    check_spec_size(body.spec, settings)
    tasks = len(split_tasks(body.spec))
    if tasks > 1:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT,
                            f"spec: the text holds {tasks} tasks (a task book); send one task per job, or use the "
                            "CLI's `kernelgen run --file`")
    if body.device != "auto" and body.device not in service.devices:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT,
                            f"device: {body.device} is not available on this server; it has "
                            f"{describe(service.devices)} (or ask for auto)")
    try:
        resolve_llm(body.llm, settings)  # asking for an LLM the server does not have fails now, not in the queue
    except LlmConfigError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, f"llm: {exc}") from None
    request = JobRequest(
        spec_text=body.spec, device=body.device, rounds=body.rounds, target_speedup=body.target_speedup,
        initial_config=config_from_label(body.initial_config) if body.initial_config else None, llm=body.llm,
    )
    job_id = service.submit(request, owner=principal.name)
    links = JobLinks.of(job_id)
    response.headers["Location"] = links.self
    return JobAccepted(id=job_id, status="queued", links=links)


@router.get("", response_model=JobsPublic, summary="List jobs", responses=INVALID)
def list_jobs(
    engine: EngineDep,
    principal: PrincipalDep,
    redactor: RedactorDep,
    status: Annotated[JobStatus | None, Query(description="Only jobs in this status.")] = None,
    offset: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> JobsPublic:
    """Return a page of the caller's jobs (an admin's: every job), newest first."""
    owner = None if principal.admin else principal.name
    rows, total = crud.list_jobs(engine, status=status, owner=owner, offset=offset, limit=limit)
    items = [JobPublic.model_validate(public_job(row, redactor)) for row in rows]
    return JobsPublic(items=items, total=total, offset=offset, limit=limit)


@router.get("/{job_id}", response_model=JobDetail, summary="Get a job", responses=NOT_FOUND | INVALID)
def get_job(job: JobDep, engine: EngineDep, service: ServiceDep, redactor: RedactorDep) -> JobDetail:
    """Return a job with its stage, queue position, rounds and error."""
    assert job.id is not None
    rounds = [redactor.value(RoundPublic.of(row).model_dump()) for row in crud.list_rounds(engine, job.id)]
    job_status, position = service.live_status(job)
    return JobDetail.model_validate(public_job(job, redactor) | {
        "status": job_status, "queue_position": position, "rounds": rounds, "links": JobLinks.of(job.id),
        "llm_usage": crud.llm_usage(engine, job.id),
        "error": redactor.text(job.message or job_status) if job_status in ("failed", "rejected") else None,
    } | _understood(job, redactor))


@router.post("/{job_id}/cancel", status_code=status.HTTP_202_ACCEPTED, response_model=JobCancelled,
             summary="Cancel a job", responses=NOT_FOUND | CONFLICT | INVALID)
def cancel_job(job: JobDep, engine: EngineDep, service: ServiceDep) -> JobCancelled:
    """Cancel a queued job at once, or stop a running one; 409 if it already finished."""
    assert job.id is not None
    if job.status in FINAL_STATUSES or not service.cancel(job.id):
        current = crud.get_job(engine, job.id)
        raise HTTPException(status.HTTP_409_CONFLICT,
                            f"job {job.id} already finished ({current.status if current else job.status})")
    current = crud.get_job(engine, job.id)
    return JobCancelled(id=job.id, status=current.status if current else "cancelled")  # type: ignore[arg-type]


def _understood(job: Job, redactor: Redactor) -> dict[str, Any]:
    """Return the job's reading (kept with its spec once read) and its rendered block."""
    try:  # only the reading: validating the whole spec would infer every case's shapes on each request
        stored = json.loads(job.spec_json).get("reading") if job.spec_json else None
        reading = Reading.model_validate(stored) if stored else None
    except ValueError:  # a spec stored by an older version: no reading to show
        reading = None
    if reading is None:
        return {"understood": None, "reading": None}
    return {"understood": redactor.text(reading.render()), "reading": redactor.value(reading.model_dump(mode="json"))}


def public_job(job: Job, redactor: Redactor) -> dict[str, Any]:
    """Return a job's public fields, without the server's paths (its folder is not in the options either)."""
    try:
        options = json.loads(job.options_json or "{}")
    except ValueError:
        options = {}
    kept = {k: v for k, v in options.items() if k not in ("out_dir", "out_root")} if isinstance(options, dict) else {}
    fields = job.model_dump(exclude={"out_dir"}) | {"options_json": json.dumps(kept)}
    return redactor.value(fields) | {"spec_text": job.spec_text}  # the spec is the client's own text
