"""The FastAPI app: routes, errors, limits and the job service's lifetime."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from fastapi import Depends, FastAPI
from fastapi.middleware.cors import CORSMiddleware

from kernelgen.settings import Settings
from server import errors
from server.deps import require_token
from server.routes import PUBLIC_ROUTERS, ROUTERS
from server.security import BodyLimitMiddleware
from server.service import JobService

DESCRIPTION = """Turn a plain-language operator spec into a verified Triton kernel.

Submit a spec to `POST /jobs`, follow `GET /jobs/{id}/events` (server-sent events) and fetch the files from
`GET /jobs/{id}/artifacts`. Every route but `/healthz` needs `Authorization: Bearer <token>` when the server
has tokens (KERNELGEN_API_TOKENS)."""


def create_app(settings: Settings | None = None, service: JobService | None = None) -> FastAPI:
    """Build the app; the job service starts and stops with it."""
    settings = settings or Settings()
    job_service = service or JobService(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await anyio.to_thread.run_sync(job_service.start)
        try:
            yield
        finally:
            await anyio.to_thread.run_sync(job_service.stop)

    app = FastAPI(title="KernelGen", version="0.1.0", description=DESCRIPTION, lifespan=lifespan)
    app.state.settings = settings
    app.state.service = job_service
    errors.install(app)
    for router in ROUTERS:
        app.include_router(router, dependencies=[Depends(require_token)])
    for router in PUBLIC_ROUTERS:
        app.include_router(router)
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_request_bytes)
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware, allow_origins=settings.cors_origins, allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type", "Last-Event-ID"], expose_headers=["Location"],
        )
    return app
