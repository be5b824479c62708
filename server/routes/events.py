"""Follow a job's progress as a resumable server-sent event stream, woken by the job's own changes."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Annotated

import anyio
from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import StreamingResponse
from sqlalchemy import Engine

from server.deps import BearerDep, EngineDep, JobDep, RedactorDep, SettingsDep
from server.errors import AUTH_ERRORS, INVALID, NOT_FOUND
from server.notify import JobNotifier
from server.redact import Redactor
from server.schemas import FINAL_STATUSES
from server.stream_access import REVOKED, StreamAccess
from storage import crud
from storage.models import JobEvent

router = APIRouter(prefix="/jobs", tags=["events"], responses=AUTH_ERRORS)

HEARTBEAT_S = 10.0  # also the longest a stream waits without a change notice (a writer in another process)
SeqNumber = Annotated[int, Query(ge=0, le=2**31 - 1, description="Send only events after this sequence number.")]


def format_event(event: JobEvent, redactor: Redactor) -> str:
    """Render one event as an SSE message."""
    data = {"seq": event.seq, "stage": event.stage, "message": redactor.text(event.message),
            "created_at": event.created_at.isoformat()}
    stage = " ".join(event.stage.split()) or "progress"
    return f"id: {event.seq}\nevent: {stage}\ndata: {json.dumps(data)}\n\n"


def _poll(engine: Engine, job_id: int, after: int, access: StreamAccess) -> tuple[str | None, list[JobEvent], bool]:
    """Read the job's status, then its new events (in that order, so a final status means nothing is missing), and
    whether the caller's token still admits it."""
    job = crud.get_job(engine, job_id)
    events = crud.list_events(engine, job_id, after=after)
    return (job.status if job else None), events, access.allows(sending=bool(events) or job is None
                                                                 or job.status in FINAL_STATUSES)


async def stream_events(
    request: Request, engine: Engine, notifier: JobNotifier, redactor: Redactor, job_id: int, after: int,
    access: StreamAccess,
) -> AsyncIterator[str]:
    """Yield new events as they are recorded, heartbeats while idle, and `end` once the job is over; an `error`
    event ends it once the caller's token no longer admits it (revoked)."""
    beat = time.monotonic()
    while True:
        seen = notifier.version(job_id)  # before the read: a change during it wakes the wait below at once
        status, events, allowed = await anyio.to_thread.run_sync(_poll, engine, job_id, after, access)
        if not allowed:
            yield REVOKED
            return
        for event in events:
            after = event.seq
            yield format_event(event, redactor)
        if status is None or status in FINAL_STATUSES:
            yield f"event: end\ndata: {json.dumps({'status': status or 'deleted'})}\n\n"
            return
        if events:
            beat = time.monotonic()
        elif time.monotonic() - beat >= HEARTBEAT_S:
            beat = time.monotonic()
            yield ": heartbeat\n\n"
        if await request.is_disconnected():
            return
        await notifier.wait(job_id, seen, timeout=max(0.05, HEARTBEAT_S - (time.monotonic() - beat)))


@router.get("/{job_id}/events", summary="Follow a job's progress", response_class=StreamingResponse,
            responses={200: {"content": {"text/event-stream": {}},
                             "description": "Server-sent events: one per stage message, then `end` with the status."}}
            | NOT_FOUND | INVALID)
def job_events(
    request: Request, job: JobDep, engine: EngineDep, redactor: RedactorDep, settings: SettingsDep,
    credentials: BearerDep, after: SeqNumber = 0,
    last_event_id: Annotated[int | None, Header(ge=0, le=2**31 - 1, alias="Last-Event-ID",
                                                description="Resume after this event (set by EventSource).")] = None,
) -> StreamingResponse:
    """Stream a job's events from the start, or after `Last-Event-ID` / `?after=`; ends once the job is over."""
    assert job.id is not None
    start = last_event_id if last_event_id is not None else after
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    notifier: JobNotifier = request.app.state.notifier
    access = StreamAccess(settings, engine, credentials, job.owner)
    return StreamingResponse(stream_events(request, engine, notifier, redactor, job.id, start, access),
                             media_type="text/event-stream", headers=headers)
