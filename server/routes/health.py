"""Liveness and load, without a token."""

from __future__ import annotations

import logging

from fastapi import APIRouter, Response, status
from sqlalchemy import text

from server.deps import EngineDep, SettingsDep
from server.principals import auth_required
from server.schemas import HealthPublic
from storage import crud

router = APIRouter(tags=["health"])
log = logging.getLogger(__name__)


@router.get("/healthz", response_model=HealthPublic, summary="Check the service",
            responses={503: {"model": HealthPublic, "description": "The database does not answer."}})
def healthz(engine: EngineDep, settings: SettingsDep, response: Response) -> HealthPublic:
    """Report whether the database answers, how many jobs are queued and running, and whether tokens are needed."""
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
        queued = crud.list_jobs(engine, status="queued", limit=1)[1]
        running = crud.list_jobs(engine, status="running", limit=1)[1]
    except Exception:
        log.exception("health check: the database does not answer")
        response.status_code = status.HTTP_503_SERVICE_UNAVAILABLE
        return HealthPublic(status="degraded", database="unavailable", queue=0, running=0, auth=True)
    return HealthPublic(status="ok", database="ok", queue=queued, running=running,
                        auth=auth_required(settings, engine))
