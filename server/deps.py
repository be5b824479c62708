"""Request dependencies: the settings, the job service, its database and the bearer check."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Path, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy import Engine

from kernelgen.settings import Settings
from server.security import active_tokens, check_bearer
from server.service import JobService
from storage import crud
from storage.models import Job

bearer = HTTPBearer(auto_error=False, description="One of the tokens in KERNELGEN_API_TOKENS.")


def get_settings(request: Request) -> Settings:
    """Return the app's settings."""
    settings: Settings = request.app.state.settings
    return settings


def get_service(request: Request) -> JobService:
    """Return the app's job service."""
    service: JobService = request.app.state.service
    return service


def get_engine(service: Annotated[JobService, Depends(get_service)]) -> Engine:
    """Return the job database's engine."""
    return service.engine


SettingsDep = Annotated[Settings, Depends(get_settings)]
ServiceDep = Annotated[JobService, Depends(get_service)]
EngineDep = Annotated[Engine, Depends(get_engine)]


def require_token(
    settings: SettingsDep, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
) -> None:
    """Reject the request unless it carries a configured bearer token."""
    check_bearer(credentials, active_tokens(settings.api_tokens))


JobId = Annotated[int, Path(ge=1, le=2**31 - 1, description="The job's id.")]  # an INTEGER column in PostgreSQL


def get_job(job_id: JobId, engine: EngineDep) -> Job:
    """Return the job in the path, or 404."""
    job = crud.get_job(engine, job_id)
    if job is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"job {job_id} not found")
    return job


JobDep = Annotated[Job, Depends(get_job)]
