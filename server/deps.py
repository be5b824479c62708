"""Request dependencies: the settings, the job service, its database, the caller and the caller's jobs."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Path, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy import Engine

from kernelgen.settings import Settings
from server.principals import Principal, authenticate
from server.redact import Redactor
from server.service import JobService
from storage import crud
from storage.models import Job


def check_spec_size(spec: str, settings: Settings) -> None:
    """Refuse (422) a spec longer than KERNELGEN_MAX_SPEC_BYTES, before anything reads it."""
    size = len(spec.encode())
    if size > settings.max_spec_bytes:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT,
                            f"spec: {size} bytes is more than the limit of {settings.max_spec_bytes} bytes")


bearer = HTTPBearer(auto_error=False, description="A token of KERNELGEN_API_TOKENS or of `kernelgen users add`.")


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


def get_redactor(request: Request) -> Redactor:
    """Return what keeps server paths out of answers."""
    redactor: Redactor = request.app.state.redactor
    return redactor


SettingsDep = Annotated[Settings, Depends(get_settings)]
ServiceDep = Annotated[JobService, Depends(get_service)]
EngineDep = Annotated[Engine, Depends(get_engine)]
RedactorDep = Annotated[Redactor, Depends(get_redactor)]


BearerDep = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]


def get_principal(settings: SettingsDep, engine: EngineDep, credentials: BearerDep) -> Principal:
    """Return who is asking; 401 unless the request carries a known token (when tokens are required)."""
    return authenticate(settings, engine, credentials)


PrincipalDep = Annotated[Principal, Depends(get_principal)]
JobId = Annotated[int, Path(ge=1, le=2**31 - 1, description="The job's id.")]  # an INTEGER column in PostgreSQL


def get_job(job_id: JobId, engine: EngineDep, principal: PrincipalDep) -> Job:
    """Return the job in the path if the caller may see it; 404 otherwise (another's job is not said to exist)."""
    job = crud.get_job(engine, job_id)
    if job is None or not principal.owns(job.owner):
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"job {job_id} not found")
    return job


JobDep = Annotated[Job, Depends(get_job)]
