"""Submit, list, inspect and cancel jobs."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Response, status

from agent.llm.config import LlmConfigError, resolve_llm
from agent.state import JobRequest
from server.deps import EngineDep, JobDep, ServiceDep, SettingsDep
from server.errors import AUTH_ERRORS, CONFLICT, INPUT_ERRORS, INVALID, NOT_FOUND
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
    launch_config,
)
from storage import crud

router = APIRouter(prefix="/jobs", tags=["jobs"], responses=AUTH_ERRORS)


@router.post("", status_code=status.HTTP_202_ACCEPTED, response_model=JobAccepted, summary="Submit a job",
             responses=INPUT_ERRORS)
def submit_job(body: JobCreate, response: Response, service: ServiceDep, settings: SettingsDep) -> JobAccepted:
    """Queue a job for an operator spec; follow it at the returned links."""
    size = len(body.spec.encode())
    if size > settings.max_spec_bytes:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT,
                            f"spec: {size} bytes is more than the limit of {settings.max_spec_bytes} bytes")
    try:
        resolve_llm(body.llm, settings)  # asking for an LLM the server does not have fails now, not in the queue
    except LlmConfigError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, f"llm: {exc}") from None
    request = JobRequest(
        spec_text=body.spec, device=body.device, rounds=body.rounds, target_speedup=body.target_speedup,
        initial_config=launch_config(body.initial_config) if body.initial_config else None, llm=body.llm,
    )
    job_id = service.submit(request)
    links = JobLinks.of(job_id)
    response.headers["Location"] = links.self
    return JobAccepted(id=job_id, status="queued", links=links)


@router.get("", response_model=JobsPublic, summary="List jobs", responses=INVALID)
def list_jobs(
    engine: EngineDep,
    status: Annotated[JobStatus | None, Query(description="Only jobs in this status.")] = None,
    offset: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> JobsPublic:
    """Return a page of jobs, newest first."""
    rows, total = crud.list_jobs(engine, status=status, offset=offset, limit=limit)
    items = [JobPublic.model_validate(row, from_attributes=True) for row in rows]
    return JobsPublic(items=items, total=total, offset=offset, limit=limit)


@router.get("/{job_id}", response_model=JobDetail, summary="Get a job", responses=NOT_FOUND | INVALID)
def get_job(job: JobDep, engine: EngineDep, service: ServiceDep) -> JobDetail:
    """Return a job with its stage, queue position, rounds and error."""
    assert job.id is not None
    rounds = [RoundPublic.of(row) for row in crud.list_rounds(engine, job.id)]
    job_status, position = service.live_status(job)
    return JobDetail.model_validate(job.model_dump() | {
        "status": job_status, "queue_position": position, "rounds": rounds, "links": JobLinks.of(job.id),
        "llm_usage": crud.llm_usage(engine, job.id),
        "error": (job.message or "failed") if job_status == "failed" else None,
    })


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
