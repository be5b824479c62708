"""Every error as JSON `{"detail": "..."}`: HTTP errors, invalid input and crashes alike."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match, Route

log = logging.getLogger(__name__)


class ErrorPublic(BaseModel):
    """What went wrong, in one sentence."""

    detail: str


def _responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """Declare error responses for OpenAPI."""
    described = {
        400: "Malformed request (e.g. a bad artifact name)",
        401: "Missing or wrong bearer token",
        404: "No such job or artifact",
        409: "The job already finished",
        413: "Request body too large",
        422: "Invalid input",
    }
    return {code: {"model": ErrorPublic, "description": described[code]} for code in codes}


AUTH_ERRORS = _responses(401)
NOT_FOUND = _responses(404)
# A body that is not UTF-8 JSON text is refused with 400 by FastAPI before validation.
INPUT_ERRORS = _responses(413, 422) | {400: {"model": ErrorPublic, "description": "The body is not JSON text in UTF-8"}}
INVALID = _responses(422)
CONFLICT = _responses(409)
BAD_NAME = _responses(400)


def describe_validation(exc: RequestValidationError) -> str:
    """Summarize validation errors as `field: message; ...`."""
    parts = []
    for error in exc.errors():
        location = [str(part) for part in error.get("loc", ()) if part not in ("body",)]
        where = ".".join(location) or "body"
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid input"


async def http_error(request: Request, exc: Exception) -> JSONResponse:
    """Render an HTTP error as JSON; a 405 lists every method of the path, not only one route's."""
    assert isinstance(exc, StarletteHTTPException)
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        headers["Allow"] = ", ".join(sorted(allowed_methods(request)))
    return JSONResponse({"detail": str(exc.detail)}, status_code=exc.status_code, headers=headers)


def allowed_methods(request: Request) -> set[str]:
    """Return the methods the app's routes accept on the request's path."""
    methods: set[str] = set()
    for route in [*getattr(request.app.state, "api_routes", []), *request.app.router.routes]:
        if isinstance(route, Route) and route.methods and route.matches(request.scope)[0] != Match.NONE:
            methods |= route.methods
    return methods


async def validation_error(request: Request, exc: Exception) -> JSONResponse:
    """Render invalid input as a 422 JSON error."""
    assert isinstance(exc, RequestValidationError)
    return JSONResponse({"detail": describe_validation(exc)}, status_code=422)


async def internal_error(request: Request, exc: Exception) -> JSONResponse:
    """Log a crash and answer 500 without a stack trace."""
    log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return JSONResponse({"detail": "internal error"}, status_code=500)


def install(app: FastAPI) -> None:
    """Register the JSON error handlers on an app."""
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(Exception, internal_error)
