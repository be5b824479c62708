"""The FastAPI app: routes, errors, limits and the job service's lifetime."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from fastapi import Depends, FastAPI
from fastapi.middleware.cors import CORSMiddleware

from kernelgen.settings import Settings
from server import errors
from server.batches import recover as recover_batches
from server.deps import get_principal
from server.notify import JobNotifier
from server.principals import check_token_names
from server.redact import Redactor
from server.routes import PUBLIC_ROUTERS, ROUTERS
from server.security import BodyLimitMiddleware, SameOriginMiddleware, is_loopback
from server.service import JobService

DESCRIPTION = """Turn a plain-language operator spec into a verified Triton kernel.

Submit a spec to `POST /jobs`, follow `GET /jobs/{id}/events` (server-sent events) and fetch the files from
`GET /jobs/{id}/artifacts`. Every route but `/healthz` needs `Authorization: Bearer <token>` when the server
has tokens (KERNELGEN_API_TOKENS, or users added with `kernelgen users add`). A token's principal sees and cancels
its own jobs only; an admin sees all."""


def create_app(settings: Settings | None = None, service: JobService | None = None) -> FastAPI:
    """Build the app; the job service starts and stops with it."""
    settings = settings or Settings()
    check_token_names(settings.api_tokens)  # before anything starts: a token named `local` would own its jobs
    job_service = service or JobService(settings)
    notifier = JobNotifier()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        notifier.start()
        await anyio.to_thread.run_sync(job_service.start)
        await anyio.to_thread.run_sync(recover_batches, job_service)  # tasks a restart left unsubmitted
        try:
            yield
        finally:
            notifier.stop()
            await anyio.to_thread.run_sync(job_service.stop)

    app = FastAPI(title="KernelGen", version="0.1.0", description=DESCRIPTION, lifespan=lifespan)
    app.state.settings = settings
    app.state.service = job_service
    app.state.notifier = notifier
    app.state.redactor = Redactor(settings)
    errors.install(app)
    for router in ROUTERS:
        app.include_router(router, dependencies=[Depends(get_principal)])
    for router in PUBLIC_ROUTERS:
        app.include_router(router)
    app.state.api_routes = [route for router in (*ROUTERS, *PUBLIC_ROUTERS) for route in router.routes]  # for `Allow`
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_request_bytes)
    app.add_middleware(SameOriginMiddleware, allowed_origins=settings.cors_origins,
                       loopback_only=is_loopback(settings.host))
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware, allow_origins=settings.cors_origins, allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type", "Last-Event-ID"], expose_headers=["Location"],
        )
    return app
